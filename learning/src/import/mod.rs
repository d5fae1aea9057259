//! `engram import`: turn records or envelopes, JSON Lines, auto-detected.
//!
//! It opens nothing: the caller opens the input — a file, a FIFO, standard
//! input ([`ImportSource::open`], in storage) or bytes it holds — and each
//! pass below reads it again from the start, the same bytes each time.
//!
//! Import is all or nothing on bad input. Nothing is appended until both
//! of these have passed:
//!
//! 1. **validate** ([`validate`]): every line parses and keeps to the
//!    limits of [`turn_record::limits`] (range checks on every number and
//!    time, sizes of every string); `(session, turn)` is unique in the file;
//! 2. **against the log** (the start of [`run`]): no record adds a turn to
//!    a session the log has ended, or takes a `(session, turn)` the log
//!    holds as another turn — the rule `engram run` keeps for live turns.
//!
//! Each bad line is reported as `FILE:LINE: FIELD: what is wrong`. Then
//! each record is turned into its events, through the reactors, and the
//! events go to the log in file order, in pipelined batches: the file is
//! converted on the caller's thread while the log's writer commits the
//! batches before (measured, 40 000 turn records: converting everything
//! into a scratch file first, then appending it, left one core idle for
//! most of the command; see `docs/performance.md`).
//!
//! Ids are derived from the records, so the log dedupes a second import of
//! the same file (nothing is appended) and an import killed half-way and run
//! again appends exactly what is missing: batches commit in order, so the log
//! always holds a prefix of the file's events. A panic in the conversion (a
//! bug: nothing that passed 1 should) leaves the same prefix, up to the
//! record before it, and is reported at its line.

pub mod turn_events;
pub mod turn_record;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::io::{BufRead, Read};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use engram_events::{codec, Envelope, Event, EventId, EventKind, Seq, SessionId, TurnId};

use crate::fast_path::MultiToolConfig;
use crate::patterns::PatternSection;
use crate::projections::{ActiveDays, CanonicalQueries, PatternOutcomes, Pipelines};
use crate::reactors::{self, DayReactor, FastPathReactor, PatternReactor, Reactor};
use engram_local_state::projector::Projector;
use engram_storage::LogError;
use engram_storage::{AppendTicket, EventLog, ImportSource, ImportSourceError};
use turn_record::FieldError;

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

/// The lines of `source` from the start (each pass reads again; see
/// [`ImportSource`] for why every pass reads the same bytes).
fn lines_of<'a>(source: &'a ImportSource, path: &Path) -> Lines<Box<dyn BufRead + 'a>> {
    Lines::new(source.reader(), path)
}

/// A line's number and its text, or why it cannot be read.
type NumberedLine<'a> = (usize, Result<&'a str, LineError>);

/// The lines of an import file, read one at a time (a file is never held
/// in memory whole): 1-based numbers, blank lines skipped, a line that is
/// not UTF-8 or longer than [`turn_record::limits::MAX_LINE_BYTES`]
/// reported as a line error — and a long line is skipped without being
/// held either.
struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    line: usize,
    path: PathBuf,
}

impl<R: BufRead> Lines<R> {
    fn new(reader: R, path: &Path) -> Self {
        Lines { reader, buf: Vec::new(), line: 0, path: path.to_owned() }
    }

    /// The next non-blank line, or `None` at the end of the file.
    fn next_line(&mut self) -> Result<Option<NumberedLine<'_>>, ImportError> {
        let max = turn_record::limits::MAX_LINE_BYTES;
        let read_error = |path: &Path, source| ImportError::Read { path: path.to_owned(), source };
        loop {
            self.buf.clear();
            let n = (&mut self.reader)
                .take(max as u64 + 2)
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| read_error(&self.path, e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let ended = self.buf.last() == Some(&b'\n');
            if ended {
                self.buf.pop();
            }
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            if self.buf.len() > max {
                let mut len = self.buf.len();
                if !ended {
                    // Skip the rest of the line, a bounded chunk at a time.
                    loop {
                        self.buf.clear();
                        let n = (&mut self.reader)
                            .take(64 * 1024)
                            .read_until(b'\n', &mut self.buf)
                            .map_err(|e| read_error(&self.path, e))?;
                        len += n;
                        if n == 0 || self.buf.last() == Some(&b'\n') {
                            break;
                        }
                    }
                }
                let message = format!("longer than {max} bytes ({len})");
                return Ok(Some((self.line, Err(LineError { line: self.line, field: "-".into(), message }))));
            }
            if std::str::from_utf8(&self.buf).is_ok_and(|s| s.trim().is_empty()) {
                continue;
            }
            let line = self.line;
            return Ok(Some(match std::str::from_utf8(&self.buf) {
                Ok(s) => (line, Ok(s)),
                Err(e) => (line, Err(LineError { line, field: "-".into(), message: format!("not UTF-8 text ({e})") })),
            }));
        }
    }
}

/// Envelope lines have `kind` and `payload`; anything else is a turn record.
fn detect(first_line: &str) -> Format {
    match serde_json::from_str::<serde_json::Value>(first_line) {
        Ok(serde_json::Value::Object(o)) if o.contains_key("kind") && o.contains_key("payload") => Format::Envelopes,
        _ => Format::TurnRecords,
    }
}

/// Pass 1: validates the whole input, a line at a time, keeping only
/// what the uniqueness checks need; `path` names the input in errors.
/// `source` is what the caller opened ([`ImportSource::open`]: a file, a
/// FIFO, standard input) or bytes it holds; the later passes read it
/// again. Any invalid line fails the import.
pub fn validate(path: &Path, source: ImportSource) -> Result<Plan, ImportError> {
    let mut lines = lines_of(&source, path);
    let mut errors = Vec::new();
    let mut total_bad = 0usize;
    let mut format = None;
    let mut records = 0usize;
    let mut sessions: HashMap<SessionId, (usize, u32)> = HashMap::new();
    let mut seen_turns: HashMap<(SessionId, u32), (usize, EventId)> = HashMap::new();
    while let Some((line, text)) = lines.next_line()? {
        records += 1;
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                total_bad += 1;
                if total_bad <= MAX_REPORTED {
                    errors.push(e);
                }
                continue;
            }
        };
        let format = *format.get_or_insert_with(|| detect(text));
        let line_errors: Vec<FieldError> = match format {
            Format::Envelopes => match codec::json::from_line(text) {
                Ok(_) => Vec::new(),
                Err(e) => vec![envelope_field_error(e)],
            },
            Format::TurnRecords => match turn_record::parse_line(text) {
                Ok(r) => {
                    let key = (r.session.clone(), r.turn);
                    if let Some((first, _)) = seen_turns.insert(key, (line, turn_events::utterance_id(&r))) {
                        vec![FieldError {
                            field: "turn".into(),
                            message: format!("turn {} of session {:?} already at line {first}", r.turn, r.session.0),
                        }]
                    } else {
                        let entry = sessions.entry(r.session).or_insert((line, 0));
                        *entry = (line, entry.1 + 1);
                        Vec::new()
                    }
                }
                Err(errs) => errs,
            },
        };
        if !line_errors.is_empty() {
            total_bad += 1;
            if total_bad <= MAX_REPORTED {
                for e in line_errors {
                    errors.push(LineError { line, field: e.field, message: e.message });
                }
            }
        }
    }
    drop(lines);
    if records == 0 {
        return Err(ImportError::Empty { path: path.to_owned() });
    }
    if total_bad > 0 {
        return Err(ImportError::Invalid { path: path.to_owned(), errors, total: total_bad });
    }
    Ok(Plan {
        path: path.to_owned(),
        format: format.unwrap_or(Format::TurnRecords),
        records,
        sessions,
        turns: seen_turns,
        source,
    })
}

/// What a turn record says, as the log keeps it: digests of the payloads
/// of its `utterance.received` and `turn.completed`. A record whose first
/// event the log holds (same session, turn and time: the same derived id)
/// is the same record imported before only when these match too; one that
/// says something else is a conflict, never silently "already present".
#[derive(Clone, Debug, PartialEq, Eq)]
struct TurnContent {
    utterance: blake3::Hash,
    completed: blake3::Hash,
}

impl TurnContent {
    fn of_record(r: &turn_record::TurnRecord) -> TurnContent {
        let events = turn_events::turn_events(r, false);
        let find = |kind: EventKind| {
            events.iter().find(|e| e.kind() == kind).map(|e| TurnContent::digest(&e.event)).expect("every turn has it")
        };
        TurnContent { utterance: find(EventKind::UtteranceReceived), completed: find(EventKind::TurnCompleted) }
    }

    fn digest(event: &Event) -> blake3::Hash {
        blake3::hash(codec::json::payload_to_value(event).to_string().as_bytes())
    }
}

/// An event of the log for one of the file's turns, digested (see
/// [`Plan::check_log`]).
enum Held<'a> {
    /// Its `utterance.received`, with the id the file's record derives.
    Utterance { line: usize, turn: Option<TurnId>, digest: blake3::Hash, seq: Seq, number: u32, session: &'a SessionId },
    /// The `turn.completed` of a turn held above.
    Completed { turn: TurnId, digest: blake3::Hash, seq: Seq, session: &'a SessionId },
}

impl Plan {
    /// What the records on `lines` say, digested: read again from the
    /// file, for the turns the log holds already only (none when the log
    /// holds none of the file: an import into a new data dir digests
    /// nothing).
    fn contents_of(&self, lines: &HashSet<usize>) -> Result<HashMap<usize, TurnContent>, ImportError> {
        let mut contents = HashMap::with_capacity(lines.len());
        if lines.is_empty() {
            return Ok(contents);
        }
        let mut reader = lines_of(&self.source, &self.path);
        while let Some((line, text)) = reader.next_line()? {
            if !lines.contains(&line) {
                continue;
            }
            // Pass 1 validated the line; one that no longer parses is a
            // file changed under the import, which the conversion reports.
            if let Ok(r) = text.map_err(drop).and_then(|t| turn_record::parse_line(t).map_err(drop)) {
                contents.insert(line, TurnContent::of_record(&r));
            }
        }
        Ok(contents)
    }

    /// The conflicts among `held` (the log's events of the file's turns,
    /// in log order): a turn the log holds with other content than the
    /// file's record, each recorded once per line in `errors`. The records'
    /// digests are made here, for those lines only.
    fn conflicts(&self, held: &[Held<'_>], errors: &mut BTreeMap<usize, FieldError>) -> Result<(), ImportError> {
        let lines: HashSet<usize> =
            held.iter().filter_map(|h| if let Held::Utterance { line, .. } = h { Some(*line) } else { None }).collect();
        let contents = self.contents_of(&lines)?;
        // The turns of the file the log holds already, by turn id: their
        // line and number, and what the file says of them.
        let mut present: HashMap<TurnId, (usize, u32, &TurnContent)> = HashMap::new();
        for h in held {
            match h {
                Held::Utterance { line, turn, digest, seq, number, session } => {
                    let Some(content) = contents.get(line) else { continue };
                    if content.utterance == *digest {
                        present.extend(turn.map(|t| (t, (*line, *number, content))));
                        continue;
                    }
                    errors.entry(*line).or_insert_with(|| {
                        let (session, seq) = (session.as_str(), seq.0);
                        let message = format!(
                            "turn {number} of session {session:?} is already in the log (seq {seq}) with other \
                             content (its text differs)"
                        );
                        FieldError { field: "turn".into(), message }
                    });
                }
                Held::Completed { turn, digest, seq, session } => {
                    let Some(&(line, number, content)) = present.get(turn) else { continue };
                    if content.completed != *digest {
                        errors.entry(line).or_insert_with(|| FieldError {
                            field: "turn".into(),
                            message: format!(
                                "turn {} of session {:?} is already in the log (seq {}) with other content (its steps, \
                                 model, cost or times differ)",
                                number,
                                session.as_str(),
                                seq.0
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Step 2 (see the module docs): the file's turns against the log's.
    /// A record whose first event the log already holds is the same record
    /// imported before (ids are derived), and passes.
    pub fn check_log(&self, log: &dyn EventLog) -> Result<(), ImportError> {
        if self.turns.is_empty() {
            return Ok(());
        }
        let mut errors: BTreeMap<usize, FieldError> = BTreeMap::new();
        let mut ended: HashMap<&SessionId, Seq> = HashMap::new();
        // The log's events of the file's turns, in log order, digested;
        // the records' own digests are made after, for those lines only.
        let mut held: Vec<Held> = Vec::new();
        let mut held_turns: HashSet<TurnId> = HashSet::new();
        let kinds = [EventKind::UtteranceReceived, EventKind::TurnCompleted, EventKind::SessionEnded];
        for env in log.read_kinds(Seq::FIRST, &kinds) {
            let env = env?;
            let Some(session) = env.session.as_ref() else { continue };
            let Some((session, _)) = self.sessions.get_key_value(session) else { continue };
            match &env.event {
                Event::UtteranceReceived(u) => {
                    let Some(&(line, id)) = self.turns.get(&(session.clone(), u.turn_number)) else { continue };
                    if id != env.id {
                        errors.entry(line).or_insert_with(|| {
                            let (turn, session, seq) = (u.turn_number, session.as_str(), env.seq.0);
                            let message = format!(
                                "turn {turn} of session {session:?} is already in the log (seq {seq}) as another turn"
                            );
                            FieldError { field: "turn".into(), message }
                        });
                        continue;
                    }
                    held_turns.extend(env.turn);
                    let (turn, digest) = (env.turn, TurnContent::digest(&env.event));
                    held.push(Held::Utterance { line, turn, digest, seq: env.seq, number: u.turn_number, session });
                }
                Event::TurnCompleted(_) => {
                    let Some(turn) = env.turn.filter(|t| held_turns.contains(t)) else { continue };
                    held.push(Held::Completed { turn, digest: TurnContent::digest(&env.event), seq: env.seq, session });
                }
                Event::SessionEnded(_) => {
                    ended.entry(session).or_insert(env.seq);
                }
                _ => {}
            }
        }
        self.conflicts(&held, &mut errors)?;
        if !ended.is_empty() {
            for ((session, _), &(line, id)) in &self.turns {
                let Some(seq) = ended.get(session) else { continue };
                if errors.contains_key(&line) || log.seq_of(id)?.is_some() {
                    continue;
                }
                errors.insert(
                    line,
                    FieldError {
                        field: "session".into(),
                        message: format!(
                            "session {:?} ended in the log at seq {}; it takes no more turns",
                            session.as_str(),
                            seq.0
                        ),
                    },
                );
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        let total = errors.len();
        let errors = errors
            .into_iter()
            .take(MAX_REPORTED)
            .map(|(line, e)| LineError { line, field: e.field, message: e.message })
            .collect();
        Err(ImportError::Invalid { path: self.path.clone(), errors, total })
    }
}

fn envelope_field_error(e: engram_events::DecodeError) -> FieldError {
    match e {
        engram_events::DecodeError::Field { field, message } => FieldError { field, message },
        engram_events::DecodeError::UnknownKindName(k) => {
            FieldError { field: "kind".into(), message: format!("unknown event kind {k:?}") }
        }
        other => FieldError { field: "-".into(), message: other.to_string() },
    }
}

/// Events per submitted batch.
const BATCH: usize = 2048;
/// Batches in flight at once (the writer commits them in order).
const IN_FLIGHT: usize = 4;

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
    let mut pipeline =
        Pipeline { log, in_flight: VecDeque::new(), batch: Vec::with_capacity(BATCH), groups: Vec::new() };
    let line = std::cell::Cell::new(0usize);
    let mut done = 0usize;
    let converted = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let mut warm = reactors(projector);
        let before = |seq: Seq| reactors_before(log, seq, &reactors);
        let mut sink = |events: Vec<Envelope>, group: Group| {
            observer.converted(&events);
            pipeline.push(events, group, &mut stats)?;
            done += 1;
            if done.is_multiple_of(256) {
                progress(done);
            }
            Ok(())
        };
        let mut conversion = Conversion { plan, log, reactors: &mut warm, before: &before, line: &line };
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

/// The reactors as they were with the log folded up to `seq` (and no
/// further): what derives a turn a stopped import cut short again, exactly
/// as the first import derived it.
fn reactors_before(
    log: &dyn EventLog,
    seq: Seq,
    reactors: &dyn Fn(&Projector) -> Vec<Box<dyn Reactor>>,
) -> Result<Vec<Box<dyn Reactor>>, ImportError> {
    let mut projector = Projector::in_memory(crate::projections::all());
    for env in log.read_from(Seq::FIRST) {
        let env = env?;
        if env.seq > seq {
            break;
        }
        projector.apply(&env);
    }
    Ok(reactors(&projector))
}

/// The conversion of the file's lines into groups of events.
struct Conversion<'a> {
    plan: &'a Plan,
    log: &'a dyn EventLog,
    /// Warmed up from the log's projections.
    reactors: &'a mut [Box<dyn Reactor>],
    /// The reactors as of a seq (see [`reactors_before`]).
    before: &'a dyn Fn(Seq) -> Result<Vec<Box<dyn Reactor>>, ImportError>,
    /// The line the conversion is at (for a panic's report).
    line: &'a std::cell::Cell<usize>,
}

type Sink<'s> = dyn FnMut(Vec<Envelope>, Group) -> Result<(), ImportError> + 's;

impl Conversion<'_> {
    /// Turns the file's lines into groups of events, in file order, and
    /// hands each to `sink`. Returns how many turn records were skipped
    /// because the log holds them already.
    fn run(&mut self, sink: &mut Sink<'_>) -> Result<u64, ImportError> {
        let plan = self.plan;
        let mut tool_history: HashMap<SessionId, bool> = HashMap::new();
        let mut skipped = 0u64;
        let last_present = self.last_present_line()?;
        let mut lines = lines_of(&plan.source, &plan.path);
        while let Some((line, text)) = lines.next_line()? {
            self.line.set(line);
            // Pass 1 validated every line; a failure here means the file changed.
            let changed = |what: String| ImportError::Invalid {
                path: plan.path.clone(),
                errors: vec![LineError {
                    line,
                    field: "-".into(),
                    message: format!("{what} (file changed during import?)"),
                }],
                total: 1,
            };
            let text = text.map_err(|e| changed(e.message))?;
            match plan.format {
                Format::Envelopes => {
                    let env = codec::json::from_line(text).map_err(|e| changed(e.to_string()))?;
                    let is_turn = env.kind() == EventKind::TurnCompleted;
                    sink(vec![env], Group::Envelope { is_turn })?;
                }
                Format::TurnRecords => {
                    let r = turn_record::parse_line(text)
                        .map_err(|e| changed(e.into_iter().map(|f| format!("{}: {}", f.field, f.message)).collect()))?;
                    let history = tool_history.entry(r.session.clone()).or_insert(false);
                    let mut events = turn_events::turn_events(&r, *history);
                    *history |= !r.steps.is_empty();
                    if let Some(&(last_line, turns)) = plan.sessions.get(&r.session) {
                        if last_line == line {
                            events.push(turn_events::session_ended(&r.session, turns, turn_events::turn_end(&r)));
                        }
                    }
                    // Past the last line the log holds a turn of, no turn
                    // is in the log: no lookup (an import into a new data
                    // dir makes none).
                    let present = match last_present {
                        Some(last) if line <= last => self.log.seq_of(events[0].id)?,
                        _ => None,
                    };
                    match present {
                        None => sink(reactors::derive_all(events, self.reactors), Group::Turn)?,
                        Some(first) if Some(line) == last_present => match self.finish_cut_turn(events, first)? {
                            Some(rest) => sink(rest, Group::Turn)?,
                            None => skipped += 1,
                        },
                        // In the log, whole: the reactors' state (warmed up
                        // from the projections) holds its effects already;
                        // feeding it again would fold it twice.
                        Some(_) => skipped += 1,
                    }
                }
            }
        }
        Ok(skipped)
    }

    /// The line of the file's last turn whose first event the log holds:
    /// the one a stopped import may have left in part. A turn is appended
    /// in one batch, which the sled log stores whole or not at all; a
    /// shared JetStream stream stores a prefix of a batch its writer was
    /// killed in (`docs/distributed.md`), so the last turn an import got
    /// into the log may lack its end. Every turn before it is whole: the
    /// log holds a prefix of what the import appended, in file order.
    fn last_present_line(&self) -> Result<Option<usize>, ImportError> {
        if self.log.head() == Seq(0) {
            return Ok(None);
        }
        let mut last = None;
        for &(line, id) in self.plan.turns.values() {
            if last.is_none_or(|l| line > l) && self.log.seq_of(id)?.is_some() {
                last = Some(line);
            }
        }
        Ok(last)
    }

    /// A turn whose first event is in the log at `first`: derived again by
    /// the reactors as they were before it (so exactly as the first import
    /// derived it), and, when the log lacks part of it, the whole group —
    /// the log skips the ids it holds — with the warm reactors folding what
    /// was missing. `None`: the log holds all of it.
    fn finish_cut_turn(&mut self, events: Vec<Envelope>, first: Seq) -> Result<Option<Vec<Envelope>>, ImportError> {
        let mut before = (self.before)(Seq(first.0 - 1))?;
        let group = reactors::derive_all(events, &mut before);
        let mut missing = false;
        for env in &group {
            if self.log.seq_of(env.id)?.is_none() {
                missing = true;
                for r in self.reactors.iter_mut() {
                    r.observe(env);
                }
            }
        }
        Ok(missing.then_some(group))
    }
}

/// How a group of events counts in [`ImportStats`].
#[derive(Clone, Copy, Debug)]
enum Group {
    Turn,
    Envelope { is_turn: bool },
}

struct Pipeline<'a> {
    log: &'a dyn EventLog,
    in_flight: VecDeque<(AppendTicket, Vec<(Group, usize)>)>,
    batch: Vec<Envelope>,
    groups: Vec<(Group, usize)>,
}

impl Pipeline<'_> {
    fn push(&mut self, events: Vec<Envelope>, group: Group, stats: &mut ImportStats) -> Result<(), ImportError> {
        self.groups.push((group, events.len()));
        self.batch.extend(events);
        if self.batch.len() >= BATCH {
            self.submit(stats)?;
        }
        Ok(())
    }

    fn submit(&mut self, stats: &mut ImportStats) -> Result<(), ImportError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let ticket = self.log.submit(batch)?;
        self.in_flight.push_back((ticket, std::mem::take(&mut self.groups)));
        while self.in_flight.len() >= IN_FLIGHT {
            self.settle_one(stats)?;
        }
        Ok(())
    }

    fn settle_one(&mut self, stats: &mut ImportStats) -> Result<(), ImportError> {
        let Some((ticket, groups)) = self.in_flight.pop_front() else { return Ok(()) };
        let outcomes = ticket.wait()?;
        let mut i = 0;
        for (group, n) in groups {
            let new = outcomes[i..i + n].iter().filter(|o| o.is_new()).count() as u64;
            i += n;
            stats.events_appended += new;
            match group {
                Group::Turn if new > 0 => stats.imported_turns += 1,
                Group::Turn => stats.skipped_existing += 1,
                Group::Envelope { is_turn } if new > 0 => stats.imported_turns += is_turn as u64,
                Group::Envelope { .. } => stats.skipped_existing += 1,
            }
        }
        Ok(())
    }

    fn finish(&mut self, stats: &mut ImportStats) -> Result<(), ImportError> {
        self.submit(stats)?;
        while !self.in_flight.is_empty() {
            self.settle_one(stats)?;
        }
        Ok(())
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
