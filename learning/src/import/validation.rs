//! Pass 1, rule 1 of the module docs: the input's format detected from
//! its first line, then every line parsed and held to the limits, with
//! `(session, turn)` unique in the file. Apart from the passes that read
//! the log: this one needs nothing but the file.

use std::collections::HashMap;
use std::path::Path;

use engram_events::{codec, EventId, SessionId};
use engram_storage::ImportSource;

use super::lines::lines_of;
use super::turn_record::{self, FieldError};
use super::{turn_events, Format, ImportError, LineError, Plan, MAX_REPORTED};

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

fn envelope_field_error(e: engram_events::DecodeError) -> FieldError {
    match e {
        engram_events::DecodeError::Field { field, message } => FieldError { field, message },
        engram_events::DecodeError::UnknownKindName(k) => {
            FieldError { field: "kind".into(), message: format!("unknown event kind {k:?}") }
        }
        other => FieldError { field: "-".into(), message: other.to_string() },
    }
}
