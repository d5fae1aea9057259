//! The conversion of a checked file's records into their events, in file
//! order: turn records through the reactors, envelopes as they are, and a
//! turn a stopped import cut short derived again as the first import
//! derived it. Apart from [`super::run_beside`], which runs it beside the
//! append pipeline and reports a panic in it.

use std::collections::HashMap;

use engram_events::{codec, Envelope, EventKind, Seq, SessionId};
use engram_local_state::projector::Projector;
use engram_storage::EventLog;

use super::lines::lines_of;
use super::pipeline::Group;
use super::{turn_events, turn_record, Format, ImportError, LineError, Plan};
use crate::reactors::{self, Reactor};

/// The reactors as they were with the log folded up to `seq` (and no
/// further): what derives a turn a stopped import cut short again, exactly
/// as the first import derived it.
pub(super) fn reactors_before(
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
pub(super) struct Conversion<'a> {
    pub(super) plan: &'a Plan,
    pub(super) log: &'a dyn EventLog,
    /// Warmed up from the log's projections.
    pub(super) reactors: &'a mut [Box<dyn Reactor>],
    /// The reactors as of a seq (see [`reactors_before`]).
    pub(super) before: &'a dyn Fn(Seq) -> Result<Vec<Box<dyn Reactor>>, ImportError>,
    /// The line the conversion is at (for a panic's report).
    pub(super) line: &'a std::cell::Cell<usize>,
}

type Sink<'s> = dyn FnMut(Vec<Envelope>, Group) -> Result<(), ImportError> + 's;

impl Conversion<'_> {
    /// Turns the file's lines into groups of events, in file order, and
    /// hands each to `sink`. Returns how many turn records were skipped
    /// because the log holds them already.
    pub(super) fn run(&mut self, sink: &mut Sink<'_>) -> Result<u64, ImportError> {
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
