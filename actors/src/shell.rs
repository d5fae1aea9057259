//! The shell every deriving actor runs in: an actix actor that feeds the
//! log to a [`Role`], appends what the role derives, keeps the role's
//! checkpoint, and survives the role's panics.
//!
//! * **Order.** The role sees every event of the log once, in `seq` order.
//!   Events arrive from a subscription; a gap (after a restart, or a
//!   subscriber that fell behind) is filled from the log itself.
//! * **Warm-up.** A role starts empty, restores its snapshot when it has a
//!   usable one ([`engram_local_state::snapshot`]), and *observes* (folds
//!   without deriving) the rest of the log up to its checkpoint, then
//!   *handles* what follows.
//! * **Snapshots.** The shell saves the role's state every
//!   `[runtime] snapshot_every` events ([`Bus::snapshot_due`]), after a long warm-up and
//!   at shutdown — only when that state is exactly the fold of the log up
//!   to the position: every event the role derived has come back from the
//!   log, and was folded with the `seq` the log gave it.
//! * **Exactly once.** Derived events carry ids derived from their cause
//!   ([`engram_events::derived`]), so handling an event twice —
//!   a checkpoint that lagged behind a crash — appends nothing new.
//! * **Supervision.** A panic in a role is caught, the actor stops and
//!   actix's [`actix::Supervisor`] restarts it: the role is
//!   rebuilt from its checkpoint and handles the failed event again. An
//!   event that fails [`MAX_ATTEMPTS`] times is skipped with an error in
//!   the log of the process (a poison event must not wedge the runtime).

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use engram_events::{Envelope, EventId, EventKind, Seq};
use engram_local_state::snapshot::{SnapshotError, SnapshotReader, SnapshotWriter};
use engram_storage::LogError;

use crate::bus::Bus;

/// How often one event may make a role panic before it is skipped.
pub const MAX_ATTEMPTS: u32 = 3;

/// Pause before an actor whose append failed restarts and tries again.
pub const APPEND_RETRY_PAUSE: Duration = Duration::from_millis(500);

/// One actor's logic, run inside a [`Shell`].
pub trait Role: Send + 'static {
    /// Folds an event without deriving anything (warm-up up to the
    /// checkpoint).
    fn observe(&mut self, env: &Envelope);

    /// Folds an event and returns what it derives, to be appended.
    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope>;

    /// The kinds of event the role folds or reacts to (`None`: all). The
    /// shell shows it nothing else, so an actor is not woken for the other
    /// events of a turn.
    fn kinds(&self) -> Option<Vec<EventKind>> {
        None
    }

    /// Whether what the role derives must be durable before it is
    /// acknowledged. Most derivations are deterministic functions of
    /// durable events and are derived again, with the same ids, after a
    /// crash: they are appended deferred and made durable by the next
    /// durable append. The reply loop's batch (tools have run, the host is
    /// answered) is durable, which also makes its turn's earlier events so.
    fn durable(&self) -> bool {
        false
    }

    /// The version of the state [`Role::save`] writes (rule 5 of
    /// [`engram_local_state::snapshot`]). 0, the default: the role keeps no
    /// snapshot and folds the log from seq 1 at every start.
    fn snapshot_version(&self) -> u32 {
        0
    }

    /// Writes what [`Role::observe`] has folded — nothing a role caches
    /// while handling (a built index, a memo), which a fold from seq 1
    /// would not have either.
    fn save(&self, _w: &mut SnapshotWriter) {}

    /// Restores what [`Role::save`] wrote, into a role fresh from its
    /// factory.
    fn restore(&mut self, _r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        Err(SnapshotError::Stale("the role keeps no snapshot".into()))
    }

    /// The number of entries in each structure the role keeps in memory,
    /// by name (`turns`, `fast_path.l1_rows`, …): what a soak measures to
    /// tell what grows with use ([`crate::Runtime::sizes`]). Empty by
    /// default.
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        Vec::new()
    }
}

/// Whether a role of `kinds` (`None`: all) wants `env`.
pub(crate) fn wants(kinds: Option<&[EventKind]>, env: &Envelope) -> bool {
    kinds.is_none_or(|k| k.contains(&env.kind()))
}

/// Builds a role from scratch (at start and after every restart).
pub type RoleFactory = Box<dyn Fn() -> Box<dyn Role> + Send>;

/// Progress of one actor, shared with the runtime (for draining at shutdown
/// and for statistics).
#[derive(Default, Debug)]
pub struct ShellStatus {
    /// Last `seq` handled.
    pub position: AtomicU64,
    /// Last `seq` the actor's subscription has passed (handed on or not).
    pub seen: AtomicU64,
    /// Last `seq` handed on to the actor.
    pub forwarded: AtomicU64,
    /// Panics caught.
    pub panics: AtomicU64,
    /// Restarts done.
    pub restarts: AtomicU64,
    /// The seq of the snapshot the last warm-up restored (0: it folded the
    /// log from seq 1).
    pub restored: AtomicU64,
    /// Whether the actor has handled everything up to the head it found at
    /// its last (re)start: until then it is not settled, whatever the
    /// counters above say.
    pub caught_up: AtomicBool,
}

impl ShellStatus {
    /// The status of an actor whose dispatcher starts after `head`:
    /// everything up to it counts as seen (it is the actor's catch-up's to
    /// handle), so a runtime that has had no event since it started is
    /// settled once the catch-ups are done, not never.
    pub fn dispatching_after(head: Seq) -> ShellStatus {
        let s = ShellStatus::default();
        s.seen.store(head.0, Ordering::Release);
        s
    }

    /// Whether the actor has handled everything it wants up to `head`:
    /// caught up since its start, its subscription past `head`, and nothing
    /// handed on that it has not handled.
    pub fn settled_at(&self, head: Seq) -> bool {
        self.caught_up.load(Ordering::Acquire)
            && self.seen.load(Ordering::Acquire) >= head.0
            && self.position.load(Ordering::Acquire) >= self.forwarded.load(Ordering::Acquire)
    }

    /// Events of the log up to `head` the actor has not handled: `head`
    /// minus the last seq it handled, or minus the last its subscription
    /// passed once it has handled all it was handed (events it does not
    /// want are no work of its) — the `engram_subscription_lag_events`
    /// gauge's measure, read on demand. Work in its mailbox shows here: an
    /// actor slower than the input has a lag that grows with the turns.
    pub fn lag_at(&self, head: Seq) -> u64 {
        let position = self.position.load(Ordering::SeqCst);
        let handled = if self.forwarded.load(Ordering::SeqCst) <= position {
            self.seen.load(Ordering::SeqCst).max(position)
        } else {
            position
        };
        head.0.saturating_sub(handled)
    }
}

/// A role as its warm-up starts: built, its snapshot restored if it has a
/// usable one.
pub(crate) struct Restored {
    /// The role, holding the fold up to `from`.
    pub role: Box<dyn Role>,
    /// The seq of the snapshot restored (0: none; the role is empty).
    pub from: Seq,
    /// The actor's checkpoint: the warm-up observes up to it.
    pub checkpoint: Seq,
}

/// Builds `name`'s role with `factory` and restores its snapshot if it has
/// a usable one ([`Bus::restore_snapshot`]); the start of every warm-up,
/// the shell's and [`crate::RuntimeBuilder::prepare_snapshots`]'.
pub(crate) fn restore(bus: &Bus, name: &str, factory: &RoleFactory) -> Result<Restored, LogError> {
    let checkpoint = bus.checkpoint(name)?;
    let mut role = factory();
    let version = role.snapshot_version();
    let restored = bus.restore_snapshot(name, version, checkpoint, |r| role.restore(r));
    if restored.is_none() {
        // Whatever a failed restore left half-read goes.
        role = factory();
    }
    Ok(Restored { role, from: restored.unwrap_or(Seq(0)), checkpoint })
}

/// The actix actor around a role.
pub struct Shell {
    name: &'static str,
    bus: Arc<Bus>,
    factory: RoleFactory,
    role: Option<Box<dyn Role>>,
    position: Seq,
    /// The event that last made the role panic, and how often.
    failing: Option<(Seq, u32)>,
    /// Events the role derived and has folded already: when they come back
    /// from the log they are skipped, so the role decides from its own
    /// effects at once (as `derive_all` does in import), never twice.
    folded: HashSet<EventId>,
    /// The kinds the role wants (`None`: all).
    kinds: Option<Vec<EventKind>>,
    /// Whether everything in the log up to the first live delivery has been
    /// handled since the last (re)start: until then a delivery may be
    /// ahead of the log read, and the gap is filled from the log.
    caught_up: bool,
    status: Arc<ShellStatus>,
    /// The seq of the last snapshot restored, saved or tried.
    snapshot_at: Seq,
}

/// Events for the actor, in `seq` order: those of one committed batch it
/// wants, in one message, so an actor wakes once per batch rather than
/// once per event ([`crate::dispatch`], rule 5).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Deliver(pub Vec<Envelope>);

/// Save the role's state as a snapshot at `upto`, the log's head, which
/// the runtime has seen every actor settle at ([`crate::Runtime::shutdown`]),
/// if the actor has folded enough since its last
/// ([`Bus::snapshot_due_at_rest`]);
/// `done` is told once the actor has saved it, or decided not to.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SaveSnapshot {
    /// The head every actor has handled all it wants up to.
    pub upto: Seq,
    /// Dropped (or sent to) when done.
    pub done: crossbeam_channel::Sender<()>,
}

/// Report the number of entries in each structure the actor keeps in
/// memory ([`Role::sizes`], and the shell's own), prefixed with the
/// actor's name.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Sizes {
    /// Sent the sizes.
    pub done: crossbeam_channel::Sender<Vec<(String, usize)>>,
}

/// Handle everything in the log after the position (at start and restart).
#[derive(Message)]
#[rtype(result = "()")]
struct CatchUp;

impl Shell {
    /// A shell named `name` (its checkpoint key) running roles made by
    /// `factory`, which want `kinds` (the roles' [`Role::kinds`]).
    pub fn new(
        name: &'static str,
        bus: Arc<Bus>,
        factory: RoleFactory,
        kinds: Option<Vec<EventKind>>,
        status: Arc<ShellStatus>,
    ) -> Shell {
        Shell {
            name,
            bus,
            factory,
            role: None,
            position: Seq(0),
            failing: None,
            folded: HashSet::new(),
            kinds,
            caught_up: false,
            status,
            snapshot_at: Seq(0),
        }
    }

    /// Builds the role, restores its snapshot if it has a usable one, and
    /// folds the rest of the log up to the checkpoint into it. A long fold
    /// (no snapshot, or an old one) is saved as a snapshot at once, so the
    /// next start does not pay it again.
    fn warm_up(&mut self) -> Result<(), LogError> {
        let Restored { mut role, from, checkpoint } = restore(&self.bus, self.name, &self.factory)?;
        for env in self.bus.read_range_of(from.next(), checkpoint, self.kinds.as_deref()) {
            role.observe(&env?);
        }
        self.snapshot_at = from;
        self.status.restored.store(from.0, Ordering::Release);
        self.role = Some(role);
        self.position = checkpoint;
        self.status.position.store(checkpoint.0, Ordering::Release);
        if self.bus.snapshot_due_at_rest(from, checkpoint) {
            self.save_snapshot();
        }
        Ok(())
    }

    /// Saves the role's state as its snapshot at the position, when that
    /// state is exactly the fold of the log up to it (rule 3 of
    /// [`engram_local_state::snapshot`]): every event the role derived and
    /// folded ahead of the log has come back and been skipped.
    fn save_snapshot(&mut self) {
        let Some(role) = self.role.as_ref() else { return };
        if !self.folded.is_empty() || self.position <= self.snapshot_at {
            return;
        }
        self.bus.save_snapshot(self.name, role.snapshot_version(), self.position, |w| role.save(w));
        // Tried once per stretch, saved or not: a failing disk is not
        // hammered on every event.
        self.snapshot_at = self.position;
    }

    /// Handles `env` (the next event after the position). `Err(())`: the
    /// role panicked and the actor must restart.
    fn step(&mut self, env: &Envelope) -> Result<(), ()> {
        if self.folded.remove(&env.id) {
            self.advance(env.seq);
            return Ok(());
        }
        let Some(role) = self.role.as_mut() else { return Err(()) };
        if !self.bus.acts_on(env) {
            // Another runtime's turn on a shared log: its owner derives
            // what follows from it; this one folds what it sees.
            role.observe(env);
            self.advance(env.seq);
            return Ok(());
        }
        let bus = &self.bus;
        match std::panic::catch_unwind(AssertUnwindSafe(|| role.handle(env, bus))) {
            Ok(derived) => {
                let appended = if role.durable() {
                    self.bus.append(derived.clone())
                } else {
                    self.bus.append_deferred(derived.clone())
                };
                let outcomes = match appended {
                    Ok(outcomes) => outcomes,
                    Err(e) => {
                        // The log refused (disk full, closed): stay at this
                        // event and let the supervisor try again.
                        tracing::error!(actor = self.name, seq = env.seq.0, "append failed: {e}; retrying");
                        // Not the event's fault: it is never skipped for this,
                        // but the retries are spaced so a full disk is not
                        // hammered.
                        std::thread::sleep(APPEND_RETRY_PAUSE);
                        return Err(());
                    }
                };
                // Folded now, with the positions the log gave them, exactly
                // as a fold from the log would see them (a row that keeps
                // its first `seq` keeps the real one).
                for (mut d, outcome) in derived.into_iter().zip(outcomes) {
                    d.seq = outcome.seq();
                    role.observe(&d);
                    // Only what will come back (the kinds the role wants,
                    // after this event) is remembered, so the set does not
                    // grow with the rest and empties again — which a
                    // snapshot waits for.
                    if d.seq > env.seq && wants(self.kinds.as_deref(), &d) {
                        self.folded.insert(d.id);
                    }
                }
                self.advance(env.seq);
                Ok(())
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                self.status.panics.fetch_add(1, Ordering::Relaxed);
                let attempts = match self.failing {
                    Some((seq, n)) if seq == env.seq => n + 1,
                    _ => 1,
                };
                self.failing = Some((env.seq, attempts));
                if attempts >= MAX_ATTEMPTS {
                    tracing::error!(
                        actor = self.name,
                        seq = env.seq.0,
                        kind = %env.kind().name(),
                        "panicked {attempts} times on this event ({what}); skipping it"
                    );
                    self.advance(env.seq);
                } else {
                    tracing::error!(actor = self.name, seq = env.seq.0, "panicked ({what}); restarting");
                }
                Err(())
            }
        }
    }

    fn set_caught_up(&mut self, caught_up: bool) {
        self.caught_up = caught_up;
        self.status.caught_up.store(caught_up, Ordering::Release);
    }

    fn advance(&mut self, seq: Seq) {
        self.position = seq;
        // The checkpoint is written before the position is published: once
        // the position shows the actor settled, `Runtime::shutdown` sets
        // its checkpoint to the head, and a write of this seq landing after
        // that would move the checkpoint back (a data dir left so had an
        // actor behind the head, and the next import's fold beside it
        // rightly saved nothing).
        if let Err(e) = self.bus.set_checkpoint(self.name, seq) {
            tracing::warn!(actor = self.name, "checkpoint not written: {e}");
        }
        self.status.position.store(seq.0, Ordering::SeqCst);
        if let Some(m) = self.bus.observer() {
            // Events the subscription passed without handing them on are
            // no work of this actor's once it has handled all it was handed
            // (the dispatcher's `passed_idle` is the other half).
            m.lag(self.name, self.status.lag_at(self.bus.head()));
        }
        if self.bus.snapshot_due(self.snapshot_at, seq) {
            self.save_snapshot();
        }
    }

    /// Handles the log from the position up to `to` (inclusive): the kinds
    /// the role wants, read from the log (records of other kinds are
    /// skipped without being decoded) and passed.
    fn fill(&mut self, to: Seq, ctx: &mut Context<Self>) -> Result<(), ()> {
        let from = self.position.next();
        if from > to {
            return Ok(());
        }
        let bus = self.bus.clone();
        let kinds = self.kinds.clone();
        for env in bus.read_range_of(from, to, kinds.as_deref()) {
            let env = match env {
                Ok(env) => env,
                Err(e) => {
                    tracing::error!(actor = self.name, "cannot read the log from seq {}: {e}", from.0);
                    ctx.stop();
                    return Err(());
                }
            };
            if self.step(&env).is_err() {
                ctx.stop();
                return Err(());
            }
        }
        self.position = self.position.max(to);
        self.status.position.store(self.position.0, Ordering::Release);
        Ok(())
    }
}

impl Actor for Shell {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Err(e) = self.warm_up() {
            tracing::error!(actor = self.name, "warm-up failed: {e}");
            ctx.stop();
            return;
        }
        ctx.notify(CatchUp);
    }
}

impl Supervised for Shell {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.status.restarts.fetch_add(1, Ordering::Relaxed);
        self.role = None;
        self.folded.clear();
        self.set_caught_up(false);
    }
}

impl Handler<CatchUp> for Shell {
    type Result = ();

    fn handle(&mut self, _: CatchUp, ctx: &mut Context<Self>) {
        let head = self.bus.head();
        if self.fill(head, ctx).is_ok() {
            self.set_caught_up(true);
        }
    }
}

impl Handler<SaveSnapshot> for Shell {
    type Result = ();

    fn handle(&mut self, msg: SaveSnapshot, _ctx: &mut Context<Self>) {
        // Settled: everything up to `upto` that the actor wants was handed
        // on and handled, so its state is the fold up to `upto` — unless an
        // event slipped in since, which `seen` and `forwarded` show.
        let settled = self.status.settled_at(msg.upto) && self.position <= msg.upto;
        if settled && self.bus.snapshot_due_at_rest(self.snapshot_at, msg.upto) {
            // The checkpoint moves with the position: a snapshot folded past
            // the actor's checkpoint is stale at the next start (the events
            // in between were of kinds it does not want, so nothing is lost
            // either way, but the snapshot would not be used).
            self.position = msg.upto;
            self.status.position.store(msg.upto.0, Ordering::Release);
            if let Err(e) = self.bus.set_checkpoint(self.name, msg.upto) {
                tracing::warn!(actor = self.name, "checkpoint not written: {e}; the snapshot is not saved");
                let _ = msg.done.send(());
                return;
            }
            self.save_snapshot();
        }
        let _ = msg.done.send(());
    }
}

impl Handler<Sizes> for Shell {
    type Result = ();

    fn handle(&mut self, msg: Sizes, _ctx: &mut Context<Self>) {
        let mut sizes = vec![(format!("{}.folded", self.name), self.folded.len())];
        if let Some(role) = &self.role {
            sizes.extend(role.sizes().into_iter().map(|(what, n)| (format!("{}.{what}", self.name), n)));
        }
        let _ = msg.done.send(sizes);
    }
}

impl Handler<Deliver> for Shell {
    type Result = ();

    fn handle(&mut self, Deliver(events): Deliver, ctx: &mut Context<Self>) {
        for env in events {
            if self.role.is_none() {
                return;
            }
            if env.seq <= self.position {
                continue;
            }
            // The subscription has no gaps; only before the catch-up has run
            // can a delivery be ahead of what was read from the log.
            if !self.caught_up {
                if self.fill(Seq(env.seq.0 - 1), ctx).is_err() {
                    return;
                }
                self.set_caught_up(true);
            }
            if self.step(&env).is_err() {
                // The rest of the batch is read from the log by the
                // restarted actor's catch-up.
                ctx.stop();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An actor with events in its mailbox lags by the head minus what it
    /// handled; one that handled all it was handed lags by nothing, however
    /// far the head moved with events it does not want.
    #[test]
    fn lag_counts_work_handed_on_not_events_passed() {
        let s = ShellStatus::dispatching_after(Seq(0));
        s.forwarded.store(10, Ordering::SeqCst);
        s.seen.store(12, Ordering::SeqCst);
        s.position.store(7, Ordering::SeqCst);
        assert_eq!(s.lag_at(Seq(12)), 5);
        s.position.store(10, Ordering::SeqCst);
        assert_eq!(s.lag_at(Seq(12)), 0);
        assert_eq!(s.lag_at(Seq(15)), 3, "the subscription has not passed 13–15 yet");
    }
}
