//! `engram verify`: every record's CRC and archive, gap-free positions,
//! segment keys that match their first record, an id index that points
//! at the right place, and write-ahead files that read whole and match the
//! store.

use engram_events::Seq;

use crate::error::LogError;
use crate::log::SledLog;
use crate::segment;

/// What a full check of the log found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Records that decoded and checked out.
    pub events: u64,
    /// Segments read.
    pub segments: u64,
    /// Payload bytes (frames) read.
    pub bytes: u64,
    /// Segments of the write-ahead files checked against the store.
    pub wal_segments: u64,
    /// Every fault, in log order (the first one is the one to fix first).
    pub faults: Vec<LogError>,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.faults.is_empty()
    }

    /// The position of the first fault that has one.
    pub fn first_bad_seq(&self) -> Option<Seq> {
        self.faults.iter().find_map(|f| match f {
            LogError::Corrupt { seq, .. } | LogError::Inconsistent { seq, .. } => Some(*seq),
            _ => None,
        })
    }
}

/// Most faults kept in a report; a badly damaged log would otherwise list
/// every record.
const MAX_FAULTS: usize = 100;

/// "Wherever the next segment starts" (positions start at 1).
const UNKNOWN: Seq = Seq(0);

/// Checks the whole log. `progress` is called with the number of records
/// checked so far, once per segment.
pub fn verify(log: &SledLog, mut progress: impl FnMut(u64)) -> VerifyReport {
    let mut report = VerifyReport::default();
    let mut expected = Seq::FIRST;
    let fault = |report: &mut VerifyReport, e: LogError| {
        if report.faults.len() < MAX_FAULTS {
            report.faults.push(e);
        }
    };
    for entry in log.segments() {
        let (first, bytes) = match entry {
            Ok(x) => x,
            Err(e) => {
                fault(&mut report, e);
                break;
            }
        };
        report.segments += 1;
        report.bytes += bytes.len() as u64;
        // After a damaged segment, the next one's key says where it starts.
        if expected != UNKNOWN && first != expected {
            fault(
                &mut report,
                LogError::Inconsistent {
                    seq: expected,
                    what: if first > expected {
                        format!("gap: next segment starts at seq {first}")
                    } else {
                        format!("overlap: segment starts at seq {first}")
                    },
                },
            );
        }
        let mut events = 0u64;
        let walked = segment::for_each_frame(first, &bytes, |seq, frame| {
            let env = frame.decode().map_err(|source| LogError::Corrupt { seq, source })?;
            match log.indexed_seq(env.id)? {
                Some(s) if s == seq => {}
                other => {
                    return Err(LogError::Inconsistent {
                        seq,
                        what: format!(
                            "id index maps event {} to {}",
                            env.id,
                            other.map_or("nothing".to_owned(), |s| format!("seq {s}"))
                        ),
                    })
                }
            }
            events += 1;
            Ok(())
        });
        report.events += events;
        match walked {
            Ok(end) => expected = end,
            Err(e) => {
                fault(&mut report, e);
                expected = UNKNOWN;
            }
        }
        progress(report.events);
    }
    // The write-ahead files (`wal`): every record whole and chained, and
    // each of its segments in the store byte for byte (the open applied
    // them; a checkpoint deletes them once the store has them durably).
    match crate::wal::recover(&log.dir().join(crate::data_dir::WAL_DIR)) {
        Ok(recovered) => {
            for (first, frames) in recovered.records.iter().flatten() {
                report.wal_segments += 1;
                match log.segments_from(*first).next().transpose() {
                    Ok(Some((seq, bytes))) if seq == *first && bytes.as_ref() == frames.as_slice() => {}
                    _ => {
                        let what = "the write-ahead log's segment is not the store's".to_owned();
                        fault(&mut report, LogError::Inconsistent { seq: *first, what });
                    }
                }
            }
        }
        Err(e) => fault(&mut report, e),
    }
    let indexed = match log.indexed_ids() {
        Ok(n) => n,
        Err(e) => {
            fault(&mut report, e);
            return report;
        }
    };
    if report.faults.is_empty() && indexed != report.events {
        let what = format!("id index has {indexed} entries for {} records", report.events);
        fault(&mut report, LogError::Inconsistent { seq: expected, what });
    }
    report
}
