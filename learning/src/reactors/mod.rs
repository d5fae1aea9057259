//! Reactors: the logic that derives events from events, as pure functions
//! of their state and the event — the one code path both the live actors
//! and `engram import` run.
//!
//! A reactor folds every event it is shown ([`Reactor::observe`]) and, for
//! events it is asked to react to ([`Reactor::react`]), returns the events
//! they cause. Derived events are built with [`engram_events::derived`]:
//! they name their cause (`causation`) and carry ids derived from it, so
//! deriving twice from the same event appends nothing new — derivation is
//! idempotent by causation id.

pub mod days;
pub mod fast_path;
pub mod graph_facts;
pub mod patterns;
pub mod summaries;
pub mod verdicts;

use engram_events::Envelope;

pub use days::DayReactor;
pub use fast_path::FastPathReactor;
pub use graph_facts::GraphReactor;
pub use patterns::PatternReactor;
pub use summaries::SummaryReactor;
pub use verdicts::JudgeReactor;

/// Derives events from events.
pub trait Reactor: Send {
    /// Stable name, for logs and checkpoints.
    fn name(&self) -> &'static str;

    /// Folds an event without deriving anything (warm-up from the log).
    fn observe(&mut self, env: &Envelope);

    /// Folds an event and returns the events it causes.
    fn react(&mut self, env: &Envelope) -> Vec<Envelope>;

    /// Entries per structure the reactor holds, by name (what a soak
    /// watches); empty by default.
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        Vec::new()
    }
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

/// The derived events of `log` that `wanted` names and the log lacks:
/// what `engram repair` re-creates after losing records. Every event of the
/// log is shown to `reactors` in order (reacted to, so they derive as they
/// did); a derived event is kept when its id is wanted and not in the log,
/// and is then shown to the reactors too, as it would have been. Derived
/// ids come from their cause, so what is re-created is the event that was
/// lost, not a look-alike.
pub fn rederive(
    log: &dyn engram_storage::EventLog,
    reactors: &mut [Box<dyn Reactor>],
    wanted: &std::collections::HashSet<engram_events::EventId>,
) -> Result<Vec<Envelope>, engram_storage::LogError> {
    let mut out = Vec::new();
    if wanted.is_empty() {
        return Ok(out);
    }
    for env in log.read_from(engram_events::Seq::FIRST) {
        let env = env?;
        let mut derived: Vec<Envelope> = Vec::new();
        for r in reactors.iter_mut() {
            derived.extend(r.react(&env));
        }
        for d in derived {
            if wanted.contains(&d.id) && log.seq_of(d.id)?.is_none() && !out.iter().any(|o: &Envelope| o.id == d.id) {
                for r in reactors.iter_mut() {
                    r.observe(&d);
                }
                out.push(d);
            }
        }
    }
    Ok(out)
}
