//! Reading the `log` tree: in order from any position, around damage,
//! and as a subscription's backlog.

use std::collections::HashSet;
use std::sync::Arc;

use engram_events::codec::binary;
use engram_events::{Envelope, EventKind, Seq};

use super::shared::Shared;
use crate::error::LogError;
use crate::segment;
use crate::subscription::Backlog;

/// Reads envelopes from the `log` tree in order, from any position,
/// decoding one frame per step straight out of the segment (no buffering).
///
/// Damage costs the damaged records, not the rest: a frame that fails its
/// CRC (or whose header no longer frames it) yields one
/// [`LogError::Lost`] naming the unreadable seqs, and reading goes on at
/// the next frame that checks out — found by scanning the segment for a
/// frame whose CRC matches (a false match has odds of 2⁻³²), or at the
/// next segment. A segment missing between two others is reported the same
/// way. Only an error of sled itself ends the iteration.
pub struct LogIter {
    pub(super) segments: sled::Iter,
    pub(super) from: Seq,
    /// Kind codes to decode; other records are checked but not decoded.
    pub(super) kinds: Option<Arc<HashSet<u16>>>,
    /// The segment being read, the offset of its next frame, and that
    /// frame's expected seq.
    pub(super) current: Option<(sled::IVec, usize, Seq)>,
    /// The seq the next segment should start at (`None` before the first).
    pub(super) next_segment: Option<Seq>,
    /// The first seq of a damaged run whose end is not known yet, and what
    /// was wrong with it.
    pub(super) lost: Option<(Seq, String)>,
    /// The log's head when reading began, if known: where a damaged run at
    /// the very end stops.
    pub(super) head: Option<Seq>,
    pub(super) failed: bool,
}

/// What one step of a [`LogIter`] found.
#[allow(clippy::large_enum_variant, reason = "unpacked at once; boxing would allocate per event replayed")]
pub(super) enum Step {
    /// A wanted envelope.
    Event(Envelope),
    /// Unreadable records.
    Lost(LogError),
    /// The end.
    End,
}

impl LogIter {
    pub(super) fn new(log: sled::Tree, from: Seq) -> Self {
        let from = Seq(from.0.max(1));
        // Start at the segment containing `from`: the last key <= from.
        let start = log
            .range(..=segment::key(from))
            .next_back()
            .and_then(|r| r.ok())
            .map(|(k, _)| k)
            .unwrap_or_else(|| sled::IVec::from(&segment::key(from)));
        LogIter {
            segments: log.range(start..),
            from,
            kinds: None,
            current: None,
            next_segment: None,
            lost: None,
            head: None,
            failed: false,
        }
    }

    /// Every record of `log`, for [`crate::repair`] (which reads a log it
    /// has not opened as a [`SledLog`]).
    pub(crate) fn for_repair(log: sled::Tree) -> Self {
        LogIter::new(log, Seq::FIRST)
    }

    pub(super) fn with_head(mut self, head: Seq) -> Self {
        self.head = Some(head);
        self
    }

    pub(super) fn with_kinds(mut self, kinds: &[EventKind]) -> Self {
        self.kinds = Some(Arc::new(kinds.iter().map(|k| k.code()).collect()));
        self
    }

    /// A run of lost records `first..next`, if it has any at or after `from`.
    pub(super) fn lost_until(&self, first: Seq, what: String, next: Seq) -> Option<LogError> {
        let first = first.max(self.from);
        (first < next).then(|| LogError::Lost { first, last: Seq(next.0 - 1), what })
    }

    /// The next wanted envelope or run of lost records.
    pub(super) fn step(&mut self) -> Result<Step, LogError> {
        loop {
            let Some((bytes, offset, expected)) = &mut self.current else {
                let Some(entry) = self.segments.next() else {
                    // Damage at the very end: its extent is unknown past the
                    // last segment, so it is named from its first seq on.
                    return Ok(match self.lost.take() {
                        Some((first, what)) => {
                            let last = self.head.unwrap_or(first).max(first);
                            self.lost_until(first, what, last.next()).map_or(Step::End, Step::Lost)
                        }
                        None => Step::End,
                    });
                };
                let (k, v) = entry?;
                let first = segment::seq_of_key(&k)
                    .ok_or_else(|| LogError::Inconsistent { seq: self.from, what: "bad segment key".to_owned() })?;
                let expected_first = self.next_segment.replace(first);
                self.current = (!v.is_empty()).then_some((v, 0, first));
                // A damaged run that ended with its segment, or a segment
                // missing between two others.
                let gap = match (self.lost.take(), expected_first) {
                    (Some((from, what)), _) => self.lost_until(from, what, first),
                    (None, Some(want)) if want < first => {
                        self.lost_until(want, "no segment holds them".to_owned(), first)
                    }
                    _ => None,
                };
                if let Some(e) = gap {
                    return Ok(Step::Lost(e));
                }
                continue;
            };
            if *offset >= bytes.len() {
                self.next_segment = Some(*expected);
                self.current = None;
                continue;
            }
            let seq = *expected;
            let (frame, rest) = match binary::split_frame(&bytes[*offset..]) {
                Ok(split) => split,
                Err(source) => {
                    // Resynchronise on the next frame that checks out.
                    let what = source.to_string();
                    let found = (*offset + 1..bytes.len()).find_map(|p| {
                        let (frame, _) = binary::split_frame(&bytes[p..]).ok()?;
                        frame.seq().ok().filter(|s| *s > seq).map(|s| (p, s))
                    });
                    match found {
                        Some((p, next)) => {
                            *offset = p;
                            *expected = next;
                            if let Some(e) = self.lost_until(seq, what, next) {
                                return Ok(Step::Lost(e));
                            }
                        }
                        None => {
                            // The rest of the segment is lost; the next
                            // segment's first seq says how much.
                            self.lost = Some((seq, what));
                            self.current = None;
                            self.next_segment = None;
                        }
                    }
                    continue;
                }
            };
            *offset = bytes.len() - rest.len();
            *expected = seq.next();
            let wanted = seq >= self.from && self.kinds.as_ref().is_none_or(|k| k.contains(&frame.kind_code));
            if wanted {
                // A frame whose CRC holds but that does not decode costs
                // itself only: its boundaries are sound. Its header is
                // validated once, by the decode, which also gives the seq.
                let env = match frame.decode() {
                    Ok(env) => env,
                    Err(source) => return Ok(Step::Lost(LogError::Corrupt { seq, source })),
                };
                if env.seq != seq {
                    return Err(misplaced(env.seq, seq));
                }
                return Ok(Step::Event(env));
            }
            // Skipped by kind: its header alone is read, for the seq.
            let found = frame.seq().map_err(|source| LogError::Corrupt { seq, source })?;
            if found != seq {
                return Err(misplaced(found, seq));
            }
        }
    }
}

pub(super) fn misplaced(found: Seq, expected: Seq) -> LogError {
    LogError::Inconsistent { seq: expected, what: format!("record carries seq {found}, expected {expected}") }
}

impl Iterator for LogIter {
    type Item = Result<Envelope, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(Step::Event(env)) => Some(Ok(env)),
            Ok(Step::Lost(e)) => Some(Err(e)),
            Ok(Step::End) => None,
            Err(e) => {
                // sled's own errors, and a record that checks out but is
                // out of place: nothing after it can be trusted.
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// A subscription's backlog: the trees, once sled holds everything
/// acknowledged (events published before the subscriber registered must
/// come from here).
pub(super) struct TreeBacklog(pub(super) Arc<Shared>);

impl Backlog for TreeBacklog {
    fn read_chunk(&self, from: Seq, max: usize, out: &mut Vec<Envelope>) -> Result<(), LogError> {
        self.0.caught_up()?;
        for env in LogIter::new(self.0.log.clone(), from).take(max) {
            out.push(env?);
        }
        Ok(())
    }
}
