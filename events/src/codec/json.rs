//! JSON Lines: one envelope per line, fields in a fixed order, so the same
//! envelopes always print the same bytes.
//!
//! ```json
//! {"id":"01JD…","seq":7,"at":"2026-11-20T09:15:02.000000Z","session":"s-001",
//!  "turn":"01JD…","causation":null,"actor":"importer","kind":"turn.completed",
//!  "v":1,"payload":{…}}
//! ```
//!
//! Timestamps are RFC 3339 in UTC with exactly six fractional digits; money is
//! a decimal string. Unknown fields are rejected, at the envelope and in every
//! payload.

use chrono::{DateTime, SecondsFormat, SubsecRound, Utc};
use serde::{Deserialize, Serialize};

use crate::codec::{upcast, DecodeError};
use crate::envelope::{ActorKind, Envelope};
use crate::event::{Event, EventKind};
use crate::ids::{EventId, Seq, SessionId, TurnId};

#[derive(Serialize)]
struct EnvelopeOut<'a> {
    id: EventId,
    seq: Seq,
    at: String,
    session: &'a Option<SessionId>,
    turn: Option<TurnId>,
    causation: Option<EventId>,
    actor: ActorKind,
    kind: &'static str,
    v: u16,
    payload: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeIn {
    id: EventId,
    #[serde(default)]
    seq: Seq,
    at: DateTime<Utc>,
    #[serde(default)]
    session: Option<SessionId>,
    #[serde(default)]
    turn: Option<TurnId>,
    #[serde(default)]
    causation: Option<EventId>,
    actor: ActorKind,
    kind: String,
    v: Option<u16>,
    payload: serde_json::Value,
}

/// Formats a timestamp the way the JSON codec writes it.
pub fn format_time(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn to_out(env: &Envelope) -> EnvelopeOut<'_> {
    let kind = env.kind();
    EnvelopeOut {
        id: env.id,
        seq: env.seq,
        at: format_time(&env.at),
        session: &env.session,
        turn: env.turn,
        causation: env.causation,
        actor: env.actor,
        kind: kind.name(),
        v: kind.schema_version(),
        payload: env.event.payload_to_json().expect("payloads always serialise"),
    }
}

/// A payload alone as a JSON value (what `payload` holds in a line).
pub fn payload_to_value(event: &Event) -> serde_json::Value {
    event.payload_to_json().expect("payloads always serialise")
}

/// The envelope as a JSON value.
pub fn to_value(env: &Envelope) -> serde_json::Value {
    serde_json::to_value(to_out(env)).expect("envelopes always serialise")
}

/// The envelope as one JSON line (no trailing newline), envelope fields in
/// the documented order, payload fields sorted.
pub fn to_line(env: &Envelope) -> String {
    serde_json::to_string(&to_out(env)).expect("envelopes always serialise")
}

/// Parses one JSON line into an envelope, upcasting older payload versions.
/// Errors name the offending field (`payload.score`).
pub fn from_line(line: &str) -> Result<Envelope, DecodeError> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| DecodeError::Json(e.to_string()))?;
    from_value(value)
}

/// Parses a JSON value into an envelope (see [`from_line`]).
pub fn from_value(value: serde_json::Value) -> Result<Envelope, DecodeError> {
    let raw: EnvelopeIn = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        DecodeError::Field { field: path, message: e.into_inner().to_string() }
    })?;
    let kind = EventKind::from_name(&raw.kind).ok_or_else(|| DecodeError::UnknownKindName(raw.kind.clone()))?;
    let version = raw.v.unwrap_or_else(|| kind.schema_version());
    let event = if version == kind.schema_version() {
        payload_from_value(kind, raw.payload)?
    } else {
        upcast::from_json(kind, version, raw.payload)?
    };
    Ok(Envelope {
        id: raw.id,
        seq: raw.seq,
        at: raw.at.trunc_subsecs(6),
        session: raw.session,
        turn: raw.turn,
        causation: raw.causation,
        actor: raw.actor,
        event,
    })
}

fn payload_from_value(kind: EventKind, payload: serde_json::Value) -> Result<Event, DecodeError> {
    Event::payload_from_json(kind, payload).map_err(DecodeError::payload_field)
}
