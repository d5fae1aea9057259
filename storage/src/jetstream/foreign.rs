//! Rule 6: a message on the stream that no engram wrote — bytes that are no
//! frame, a frame that names another position, a copy of an event the
//! stream holds elsewhere — is recorded at its position as a
//! `stream.message_skipped` event, the same on every device (its id is
//! derived from the position and the message's bytes), with a warning
//! naming the stream sequence. Positions stay the stream's, and what
//! another program published stops no device; every fold ignores it, and
//! `engram verify` compares it with the message by the bytes' hash.

use engram_events::chrono::{DateTime, Utc};
use engram_events::payloads::StreamMessageSkipped;
use engram_events::{ActorKind, Envelope, Event, EventId, Seq};

/// The event a device records at `seq` for a foreign message with these
/// bytes, published at `at`.
pub(super) fn skipped(seq: Seq, at: DateTime<Utc>, payload: &[u8], reason: String) -> Envelope {
    let hash = blake3::hash(payload);
    tracing::warn!(stream_seq = seq.0, bytes = payload.len(), "skipping a message no engram wrote: {reason}");
    let id = EventId::derive(at, &[b"stream.message_skipped", &seq.0.to_be_bytes(), hash.as_bytes()]);
    let event =
        StreamMessageSkipped { reason, payload_bytes: payload.len() as u64, payload_blake3: hash.to_hex().to_string() };
    Envelope::at(id, at, ActorKind::Log, event)
}

/// Whether `ours` is the record of a skipped message with these bytes
/// (`None`: it is no such record).
pub(super) fn stands_for(ours: &Envelope, payload: &[u8]) -> Option<bool> {
    match &ours.event {
        Event::StreamMessageSkipped(s) => Some(s.payload_blake3 == blake3::hash(payload).to_hex().as_str()),
        _ => None,
    }
}

/// Why a message that decodes is foreign at `seq`, if it is: a frame of
/// another position.
pub(super) fn misplaced(event: &Envelope, seq: Seq) -> Option<String> {
    (event.seq != seq && event.seq != Seq(0)).then(|| format!("a frame of seq {}, at seq {seq}", event.seq))
}
