//! What the log itself records: a message on a shared stream that no
//! engram wrote.

payload! {
    /// `stream.message_skipped`: at this position, the shared JetStream
    /// stream holds a message that is not an engram event of its own — a
    /// stranger published on the stream's subject (bytes that are no frame,
    /// a frame of another position, a copy of an event the stream holds
    /// elsewhere). Every device records this same event at this position
    /// (its id is derived from the position and the message's bytes) and
    /// goes on: positions stay the stream's, and no device is stopped by
    /// what another program wrote. Every fold ignores it.
    pub struct StreamMessageSkipped {
        /// Why the message is not engram's.
        pub reason: String,
        /// The message's size in bytes.
        pub payload_bytes: u64,
        /// BLAKE3 of the message's bytes, hex: what `engram verify`
        /// compares the stream's message with.
        pub payload_blake3: String,
    }
}
