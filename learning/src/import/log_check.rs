//! Rule 2 of the module docs: the file's turns against the log's, before
//! anything is appended — a turn the log holds with other content, a turn
//! taking the place of another, a turn added to a session the log has
//! ended. Apart from the conversion: it reads the log (and the file again,
//! for the turns the log holds only) and appends nothing.

use std::collections::{BTreeMap, HashMap, HashSet};

use engram_events::{codec, Event, EventKind, Seq, SessionId, TurnId};
use engram_storage::EventLog;

use super::lines::lines_of;
use super::turn_record::{self, FieldError};
use super::{turn_events, ImportError, LineError, Plan, MAX_REPORTED};

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
