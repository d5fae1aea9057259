//! Derived events: the rule that an event caused by another takes its id
//! from its cause.
//!
//! An actor (or `engram import`) that derives events from an event — a
//! verdict from a turn, a pattern from a session's end, a day from the
//! first utterance of the day — builds them with [`derived`]: causation =
//! the cause's id, time = the cause's time, session and turn = the
//! cause's, and an id hashed from the cause's id, the derived kind and an
//! ordinal. Deriving twice from the same event therefore gives the same
//! ids, and the log, idempotent by id, appends nothing the second time:
//! that is what makes derivation safe to repeat after a crash and imports
//! deterministic. [`derived_id`] is the same id without the event, for an
//! actor whose work is not a pure function (the planner, the reply loop)
//! to ask the log whether it did it already.

use crate::{ActorKind, Envelope, Event, EventId, EventKind};

/// A derived event: caused by `cause`, at its time, with an id derived from
/// the cause's id, the derived kind and `ordinal` (for several events of one
/// kind from one cause).
pub fn derived(cause: &Envelope, actor: ActorKind, event: impl Into<Event>, ordinal: u32) -> Envelope {
    let event = event.into();
    let id = derived_id(cause, event.kind(), ordinal);
    let mut env = Envelope::at(id, cause.at, actor, event).caused_by(cause.id);
    env.session = cause.session.clone();
    env.turn = cause.turn;
    env
}

/// The id [`derived`] gives an event of `kind` caused by `cause`: how an
/// actor finds out, without building the event, whether it derived it
/// already.
pub fn derived_id(cause: &Envelope, kind: EventKind, ordinal: u32) -> EventId {
    EventId::derive(
        cause.at,
        &[b"derived", &cause.id.0 .0.to_be_bytes(), kind.name().as_bytes(), &ordinal.to_be_bytes()],
    )
}
