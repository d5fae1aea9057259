//! Reactors: the logic that derives events from events, as pure functions
//! of their state and the event — the one code path both the live actors
//! and `engram import` run.
//!
//! A reactor folds every event it is shown ([`Reactor::observe`]) and, for
//! events it is asked to react to ([`Reactor::react`]), returns the events
//! they cause. Derived events name their cause (`causation`) and carry ids
//! derived from it, so deriving twice from the same event appends nothing
//! new: derivation is idempotent by causation id.

pub mod days;
pub mod fastpath;
pub mod graph;
pub mod judge;
pub mod patterns;
pub mod summariser;

use engram_events::{ActorKind, Envelope, Event, EventId, EventKind};

pub use days::DayReactor;
pub use fastpath::FastPathReactor;
pub use graph::GraphReactor;
pub use judge::JudgeReactor;
pub use patterns::PatternReactor;
pub use summariser::SummaryReactor;

/// Derives events from events.
pub trait Reactor: Send {
    /// Stable name, for logs and checkpoints.
    fn name(&self) -> &'static str;

    /// Folds an event without deriving anything (warm-up from the log).
    fn observe(&mut self, env: &Envelope);

    /// Folds an event and returns the events it causes.
    fn react(&mut self, env: &Envelope) -> Vec<Envelope>;
}

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

/// Runs `reactors` over `events`, inserting each derived event right after
/// its cause (and reacting to derived events in turn).
pub fn derive_all(events: Vec<Envelope>, reactors: &mut [Box<dyn Reactor>]) -> Vec<Envelope> {
    let mut out = Vec::with_capacity(events.len() + 2);
    let mut stack: Vec<Envelope> = events.into_iter().rev().collect();
    while let Some(env) = stack.pop() {
        let mut caused = Vec::new();
        for r in reactors.iter_mut() {
            caused.extend(r.react(&env));
        }
        out.push(env);
        stack.extend(caused.into_iter().rev());
    }
    out
}
