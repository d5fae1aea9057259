//! Log segments: each value of the `log` tree packs the frames of
//! consecutive events, keyed by the big-endian `seq` of its first event.
//!
//! One key per event makes sled iterate at ≈ 1.7 M records/s; packing a
//! group-commit batch into segments of a few KiB amortises the per-key cost
//! over dozens of events, which is what makes replay outrun SQLite. Segments
//! stay below [`SEGMENT_TARGET_BYTES`] so that sled's leaf pages (≤ 17
//! entries) stay under its blob threshold (segment size / 4 ≈ 128 KiB) and
//! are written inline in its log.

use engram_events::codec::binary::{self, RawFrame, FORMAT_VERSION};
use engram_events::{Envelope, Seq};

use crate::error::LogError;

/// A segment is closed once it reaches this many bytes (one oversized
/// event still makes a segment of its own).
pub const SEGMENT_TARGET_BYTES: usize = 6 * 1024;

/// The `log` tree key of the segment starting at `seq`.
pub fn key(seq: Seq) -> [u8; 8] {
    seq.0.to_be_bytes()
}

/// The first `seq` of the segment stored under `key`.
pub fn seq_of_key(key: &[u8]) -> Option<Seq> {
    <[u8; 8]>::try_from(key).ok().map(|b| Seq(u64::from_be_bytes(b)))
}

/// Builds segments from frames, closing each at the target size.
#[derive(Default)]
pub struct SegmentBuilder {
    target: usize,
    current: Option<(Seq, Vec<u8>)>,
    done: Vec<(Seq, Vec<u8>)>,
}

impl SegmentBuilder {
    /// A builder closing segments at `target` bytes.
    pub fn new(target: usize) -> Self {
        SegmentBuilder { target, current: None, done: Vec::new() }
    }

    /// Appends the frame of `env` (whose `seq` is assigned).
    pub fn push(&mut self, env: &Envelope) {
        let (_, buf) = self.current.get_or_insert_with(|| (env.seq, Vec::with_capacity(self.target + 512)));
        binary::encode_into(env, buf);
        if buf.len() >= self.target {
            self.done.push(self.current.take().expect("just inserted"));
        }
    }

    /// The finished segments, `(first seq, bytes)`, in order.
    pub fn finish(mut self) -> Vec<(Seq, Vec<u8>)> {
        if let Some(cur) = self.current.take() {
            self.done.push(cur);
        }
        self.done
    }
}

/// Visits the frames of one segment, checking that their positions run
/// `first, first + 1, …`. Returns the seq after the last frame.
pub fn for_each_frame<'a>(
    first: Seq,
    bytes: &'a [u8],
    mut f: impl FnMut(Seq, RawFrame<'a>) -> Result<(), LogError>,
) -> Result<Seq, LogError> {
    let mut expected = first;
    for frame in binary::frames(bytes) {
        let frame = frame.map_err(|source| LogError::Corrupt { seq: expected, source })?;
        let seq = frame.seq().map_err(|source| LogError::Corrupt { seq: expected, source })?;
        if seq != expected {
            return Err(LogError::Inconsistent {
                seq: expected,
                what: format!("record carries seq {seq}, expected {expected}"),
            });
        }
        f(seq, frame)?;
        expected = expected.next();
    }
    if expected == first {
        return Err(LogError::Inconsistent { seq: first, what: "empty segment".to_owned() });
    }
    Ok(expected)
}

/// Every frame in `bytes` that checks out (CRC) and decodes, with its seq
/// and offset, in file order: what the raw scan finds in one file. Bytes
/// between frames (sled's own structures, damage) are skipped a byte at a
/// time; a frame found is skipped whole.
pub fn find_frames(bytes: &[u8]) -> Vec<(Seq, usize)> {
    let mut found = Vec::new();
    let mut p = 0;
    while p < bytes.len() {
        if bytes[p] == FORMAT_VERSION {
            if let Ok((frame, rest)) = binary::split_frame(&bytes[p..]) {
                if let (Ok(seq), Ok(_)) = (frame.seq(), frame.decode()) {
                    found.push((seq, p));
                    p = bytes.len() - rest.len();
                    continue;
                }
            }
        }
        p += 1;
    }
    found
}
