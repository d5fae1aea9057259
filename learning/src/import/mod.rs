//! `engram import`: turn records or envelopes, JSON Lines, auto-detected.
//!
//! It opens nothing: the caller opens the input — a file, a FIFO, standard
//! input ([`ImportSource::open`], in storage) or bytes it holds — and each
//! pass below reads it again from the start, the same bytes each time.
//!
//! Import is all or nothing on bad input. Nothing is appended until both
//! of these have passed:
//!
//! 1. **validate** ([`validate`], in `validation.rs`): every line parses
//!    and keeps to the limits of [`turn_record::limits`] (range checks on
//!    every number and time, sizes of every string); `(session, turn)` is
//!    unique in the file;
//! 2. **against the log** (the start of [`run`]; [`Plan::check_log`], in
//!    `log_check.rs`): no record adds a turn to a session the log has
//!    ended, or takes a `(session, turn)` the log holds as another turn —
//!    the rule `engram run` keeps for live turns.
//!
//! Each bad line is reported as `FILE:LINE: FIELD: what is wrong`. Then
//! each record is turned into its events, through the reactors
//! (`conversion.rs`), and the events go to the log in file order, in
//! pipelined batches (`pipeline.rs`): the file is converted on the
//! caller's thread while the log's writer commits the batches before
//! (measured, 40 000 turn records: converting everything into a scratch
//! file first, then appending it, left one core idle for most of the
//! command; see `docs/performance.md`).
//!
//! Ids are derived from the records, so the log dedupes a second import of
//! the same file (nothing is appended) and an import killed half-way and run
//! again appends exactly what is missing: batches commit in order, so the log
//! always holds a prefix of the file's events. A panic in the conversion (a
//! bug: nothing that passed 1 should) leaves the same prefix, up to the
//! record before it, and is reported at its line.

mod conversion;
mod lines;
mod log_check;
mod pipeline;
pub mod turn_events;
pub mod turn_record;
mod validation;

pub use validation::validate;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use engram_events::{Envelope, EventId, Seq, SessionId};

use crate::fast_path::MultiToolConfig;
use crate::patterns::PatternSection;
use crate::projections::{ActiveDays, CanonicalQueries, PatternOutcomes, Pipelines};
use crate::reactors::{DayReactor, FastPathReactor, PatternReactor, Reactor};
use engram_local_state::projector::Projector;
use engram_storage::LogError;
use engram_storage::{EventLog, ImportSource, ImportSourceError};

/// What kind of lines a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// DESIGN's turn records.
    TurnRecords,
    /// Envelopes as `engram export` writes them.
    Envelopes,
}

/// One bad line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// The field, or `-` for the line as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// Why an import did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file has no records.
    #[error("{path}: empty file: nothing to import")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Some lines are invalid; nothing was imported.
    #[error("{}", render_invalid(.path, .errors, *.total))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Every error of the first bad lines (at most [`MAX_REPORTED`] lines).
        errors: Vec<LineError>,
        /// How many bad lines in all.
        total: usize,
    },
    /// Appending failed part-way; what was appended stays (and a rerun
    /// completes it).
    #[error(transparent)]
    Log(#[from] LogError),
}

impl From<ImportSourceError> for ImportError {
    fn from(e: ImportSourceError) -> Self {
        ImportError::Read { path: e.path, source: e.source }
    }
}

fn render_invalid(path: &Path, errors: &[LineError], total: usize) -> String {
    let mut out = String::new();
    for e in errors {
        out.push_str(&format!("{}:{}: {}: {}\n", path.display(), e.line, e.field, e.message));
    }
    let listed = errors.iter().map(|e| e.line).collect::<std::collections::BTreeSet<_>>().len();
    if total > listed {
        out.push_str(&format!("… and {} more invalid lines\n", total - listed));
    }
    out.push_str(&format!("{}: {total} invalid line(s); nothing imported", path.display()));
    out
}

/// How many bad lines an error lists (with every error of each).
pub const MAX_REPORTED: usize = 20;

/// What an import did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportStats {
    /// Turns with at least one newly appended event (turn-record files), or
    /// newly appended `turn.completed` events (envelope files).
    pub imported_turns: u64,
    /// Turns whose events were all present already (turn records), or
    /// envelopes already present (envelope files).
    pub skipped_existing: u64,
    /// Events appended.
    pub events_appended: u64,
}

/// The validated shape of a file, from the first pass.
#[derive(Debug)]
pub struct Plan {
    path: PathBuf,
    /// Turn records or envelopes.
    pub format: Format,
    /// Non-blank lines.
    pub records: usize,
    /// Per session: the line of its last record and its number of records.
    sessions: HashMap<SessionId, (usize, u32)>,
    /// Per `(session, turn)`: its line and the id its first event will
    /// have (what checking against the log needs; what a record says is
    /// digested only for the turns the log holds, see [`Plan::check_log`]).
    turns: HashMap<(SessionId, u32), (usize, EventId)>,
    /// What every pass reads: the same bytes each time.
    source: ImportSource,
}

/// The reactors an import runs — day activation, fast-path learning
/// (configured by `[multi_tool_fast_path]`), pattern recording (by
/// `[pattern]`) — warmed up from `projector`'s projections (empty ones:
/// fresh reactors). The judge, summariser and graph reactors only run
/// live. `engram repair` derives lost events again with the same set.
pub fn reactors(
    projector: &Projector,
    multi_tool: &MultiToolConfig,
    pattern: &PatternSection,
) -> Vec<Box<dyn Reactor>> {
    let active = projector.get::<ActiveDays>("active_days").cloned().unwrap_or_default();
    let patterns = projector.get::<PatternOutcomes>("pattern_outcomes").cloned().unwrap_or_default();
    let canonical = projector.get::<CanonicalQueries>("canonical_queries").cloned().unwrap_or_default();
    let pipelines = projector.get::<Pipelines>("pipelines").cloned().unwrap_or_default();
    let utc = chrono::FixedOffset::east_opt(0).expect("UTC");
    vec![
        Box::new(DayReactor::from_projection(&active)),
        Box::new(FastPathReactor::new(canonical, pipelines, &active, multi_tool.clone(), utc)),
        Box::new(PatternReactor::new(patterns, pattern.config(), pattern.caps())),
    ]
}

/// Checks the file against the log (step 2 of the module docs), then
/// converts its records and appends their events through `log`, in
/// pipelined batches, as it goes. Turn records also go through reactors —
/// `reactors()` makes a set warmed up from the log's projections — which
/// insert the events the live runtime would derive (day activations, …)
/// right after their causes; envelope files are taken as they are.
/// `progress` is called with the number of records converted.
pub fn run(
    plan: &Plan,
    log: &dyn EventLog,
    projector: &Projector,
    reactors: impl Fn(&Projector) -> Vec<Box<dyn Reactor>>,
    progress: impl FnMut(usize),
) -> Result<ImportStats, ImportError> {
    run_beside(plan, log, projector, reactors, &mut (), progress)
}

/// Sees an import's events as [`run_beside`] converts them: each group in
/// file order, as it goes to the log (no seq yet), then the conversion's
/// end. `engram import` folds the actors' snapshots here, on another core,
/// while the file is still being converted and appended — with the seqs
/// the events will have if the log takes them all (which the folder
/// checks after the append).
pub trait ImportObserver {
    /// A group of converted events, in the order they are appended.
    fn converted(&mut self, events: &[Envelope]);
    /// The whole file was converted (and handed to the log).
    fn conversion_done(&mut self) {}
}

/// Nobody watching.
impl ImportObserver for () {
    fn converted(&mut self, _: &[Envelope]) {}
}

impl<T: ImportObserver> ImportObserver for Option<T> {
    fn converted(&mut self, events: &[Envelope]) {
        if let Some(o) = self {
            o.converted(events);
        }
    }

    fn conversion_done(&mut self) {
        if let Some(o) = self {
            o.conversion_done();
        }
    }
}

/// [`run`], with `observer` shown the events as they are converted
/// ([`ImportObserver`]).
///
/// The conversion and the append overlap: a record's events go to the log
/// in the batch being filled while the writer commits the batches before
/// it. A panic in the conversion (a bug: nothing that passed validation
/// should) stops the import at that record, after the batches already
/// handed to the log have committed: the log then holds the file's events
/// up to the record before it — what an import killed there leaves, which
/// a rerun completes — and the panic is reported at its line.
pub fn run_beside(
    plan: &Plan,
    log: &dyn EventLog,
    projector: &Projector,
    reactors: impl Fn(&Projector) -> Vec<Box<dyn Reactor>>,
    observer: &mut dyn ImportObserver,
    mut progress: impl FnMut(usize),
) -> Result<ImportStats, ImportError> {
    plan.check_log(log)?;
    let mut stats = ImportStats::default();
    let mut pipeline = pipeline::Pipeline {
        log,
        in_flight: VecDeque::new(),
        batch: Vec::with_capacity(pipeline::BATCH),
        groups: Vec::new(),
    };
    let line = std::cell::Cell::new(0usize);
    let mut done = 0usize;
    let converted = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let mut warm = reactors(projector);
        let before = |seq: Seq| conversion::reactors_before(log, seq, &reactors);
        let mut sink = |events: Vec<Envelope>, group: pipeline::Group| {
            observer.converted(&events);
            pipeline.push(events, group, &mut stats)?;
            done += 1;
            if done.is_multiple_of(256) {
                progress(done);
            }
            Ok(())
        };
        let mut conversion = conversion::Conversion { plan, log, reactors: &mut warm, before: &before, line: &line };
        conversion.run(&mut sink)
    }));
    match converted {
        Ok(result) => {
            let skipped = result?;
            observer.conversion_done();
            pipeline.finish(&mut stats)?;
            stats.skipped_existing += skipped;
            progress(done + skipped as usize);
            Ok(stats)
        }
        Err(panic) => {
            // Every record before this one commits: a prefix of the file's
            // events, whole groups, as a kill between records would leave.
            let settled = pipeline.finish(&mut stats);
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            let kept = match settled {
                Ok(()) => format!("{} event(s) of the records before it were imported", stats.events_appended),
                Err(e) => format!("appending the records before it failed too ({e})"),
            };
            Err(ImportError::Invalid {
                path: plan.path.clone(),
                errors: vec![LineError {
                    line: line.get(),
                    field: "-".into(),
                    message: format!(
                        "this record cannot be converted (an engram bug: {what}); please report it. {kept}; \
                         nothing from this record on"
                    ),
                }],
                total: 1,
            })
        }
    }
}
impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::TurnRecords => "turn records",
            Format::Envelopes => "envelopes",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::codec;
    use engram_storage::{LogConfig, SledLog};

    fn record(session: &str, turn: u32, text: &str) -> String {
        serde_json::json!({
            "session": session, "turn": turn, "at": format!("2026-11-23T10:0{turn}:00Z"), "text": text,
            "steps": [], "model": "m1", "cost_usd": "0.01"
        })
        .to_string()
    }

    fn validate_text(text: &str) -> Result<Plan, ImportError> {
        validate(Path::new("turns.jsonl"), ImportSource::bytes(text))
    }

    fn import(log: &SledLog, text: &str) -> Result<ImportStats, ImportError> {
        let plan = validate_text(text)?;
        run(&plan, log, &Projector::in_memory(Vec::new()), |_| Vec::new(), |_| {})
    }

    #[test]
    fn blank_lines_and_crlf_are_not_records_and_the_format_is_detected() {
        let text = format!("\n{}\r\n   \n{}\n", record("s-1", 1, "hi"), record("s-1", 2, "again"));
        let plan = validate_text(&text).unwrap();
        assert_eq!((plan.format, plan.records), (Format::TurnRecords, 2));
        let env = Envelope::new(
            engram_events::ActorKind::Listener,
            engram_events::payloads::DayActivated { day: "2026-11-23".into(), rank: 1 },
        );
        let plan = validate_text(&format!("{}\n", codec::json::to_line(&env))).unwrap();
        assert_eq!((plan.format, plan.records), (Format::Envelopes, 1));
    }

    #[test]
    fn bad_lines_are_named_and_counted_past_the_ones_listed() {
        assert!(matches!(validate_text("\n \n"), Err(ImportError::Empty { .. })));
        let dup = format!("{}\n{}\n", record("s-1", 1, "a"), record("s-1", 1, "b"));
        let e = validate_text(&dup).unwrap_err().to_string();
        assert!(e.contains("turns.jsonl:2: turn: turn 1 of session \"s-1\" already at line 1"), "{e}");
        let mut bytes = record("s-1", 1, "a").into_bytes();
        bytes.extend_from_slice(b"\n\xff\xfe\n");
        let e = validate(Path::new("t"), ImportSource::bytes(bytes)).unwrap_err().to_string();
        assert!(e.contains("t:2: -: not UTF-8 text"), "{e}");
        let many: String = (0..MAX_REPORTED + 5).map(|_| "not json\n").collect();
        let e = validate_text(&many).unwrap_err().to_string();
        assert!(e.contains("… and 5 more invalid lines") && e.contains("25 invalid line(s); nothing imported"), "{e}");
    }

    /// Step 2: the same records again add nothing; a record that says
    /// something else for a turn the log holds is refused, naming the seq,
    /// and nothing of its file is appended.
    #[test]
    fn a_second_import_adds_nothing_and_a_conflict_appends_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        let text = format!("{}\n{}\n", record("s-1", 1, "lights on"), record("s-1", 2, "lights off"));
        let first = import(&log, &text).unwrap();
        assert_eq!((first.imported_turns, first.skipped_existing), (2, 0));
        let head = log.head();
        let again = import(&log, &text).unwrap();
        assert_eq!((again.imported_turns, again.skipped_existing, again.events_appended), (0, 2, 0));
        let other = format!("{}\n{}\n", record("s-1", 2, "lights OFF"), record("s-2", 1, "new"));
        let e = import(&log, &other).unwrap_err().to_string();
        assert!(e.contains("turns.jsonl:1: turn: turn 2 of session \"s-1\" is already in the log (seq "), "{e}");
        assert_eq!(log.head(), head, "nothing appended");
    }
}
