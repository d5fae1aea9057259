//! [`RuntimeBuilder::prepare_snapshots`](super::RuntimeBuilder::prepare_snapshots):
//! every actor's warm-up, without the actors. Each role is built by the
//! factory the runtime would build it with and restored from its snapshot
//! as a shell restores it ([`crate::shell`]); then one pass over the log
//! hands each record, decoded once, to every owner that wants its kind
//! and has not folded it yet; last, each owner saves its state where its
//! warm-up would have saved it (a role at its checkpoint, the listener at
//! the head) when as much of the log has passed since its last snapshot.
//! What is written is what a start would write, byte for byte
//! (`actors/tests/prepare_snapshots.rs` checks it).

use std::sync::Arc;

use engram_events::{Envelope, EventKind, Seq};
use engram_local_state::snapshot::{SnapshotError, SnapshotWriter};

use crate::bus::Bus;
use crate::error::RuntimeError;
use crate::roles::listener::{self, Listener};
use crate::shell::{self, Restored, Role, RoleFactory};

/// What [`RuntimeBuilder::prepare_snapshots`](super::RuntimeBuilder::prepare_snapshots) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The owners whose state was folded: every actor and the listener.
    pub owners: usize,
    /// The snapshots saved (an owner whose snapshot is recent saves none).
    pub saved: usize,
    /// Records read from the log (each decoded once, whoever wants it).
    pub events_read: u64,
}

/// One owner's state during the pass.
enum State {
    Role(Box<dyn Role>),
    Listener(Box<Listener>),
}

/// An owner of a snapshot and the stretch of the log it folds.
pub(super) struct Owner {
    name: &'static str,
    /// The kinds it wants (`None`: all).
    kinds: Option<Vec<EventKind>>,
    /// Restored up to here (0: folds from seq 1).
    from: Seq,
    /// Folds up to here.
    to: Seq,
    state: State,
}

impl Owner {
    /// Where its fold starts (the seq its snapshot was restored at).
    pub(super) fn from(&self) -> Seq {
        self.from
    }

    /// The kinds it wants (`None`: all).
    pub(super) fn kinds(&self) -> &Option<Vec<EventKind>> {
        &self.kinds
    }

    fn wants(&self, env: &Envelope) -> bool {
        self.from < env.seq && env.seq <= self.to && shell::wants(self.kinds.as_deref(), env)
    }

    fn observe(&mut self, env: &Envelope) {
        match &mut self.state {
            State::Role(role) => role.observe(env),
            State::Listener(l) => l.fold(env),
        }
    }

    /// The owner's name, where its fold started, and its snapshot's
    /// version and body (what [`Owner::finish`] would save, as bytes):
    /// the state itself is dropped here.
    pub(super) fn into_body(self) -> (&'static str, Seq, u32, Result<Vec<u8>, SnapshotError>) {
        let mut w = SnapshotWriter::new();
        let version = match &self.state {
            State::Role(role) => {
                role.save(&mut w);
                role.snapshot_version()
            }
            State::Listener(l) => {
                l.save(&mut w);
                listener::SNAPSHOT_VERSION
            }
        };
        (self.name, self.from, version, w.finish())
    }

    /// Saves the state as the warm-up would; whether a snapshot was saved.
    fn finish(self, bus: &Bus) -> bool {
        match self.state {
            State::Role(role) => {
                let due = self.to > self.from && bus.snapshot_due_at_rest(self.from, self.to);
                due && bus
                    .save_snapshot(self.name, role.snapshot_version(), self.to, |w: &mut SnapshotWriter| role.save(w))
            }
            State::Listener(mut l) => l.warmed_up(self.from, self.to),
        }
    }
}

/// The pass (see the module docs): `listener` restored up to its seq, one
/// role per factory. Every actor new to the data dir gets its checkpoint at
/// the head first, as [`super::Runtime`]'s launch gives it.
pub(super) fn fold(
    bus: &Bus,
    listener: (Listener, Seq),
    factories: Vec<(&'static str, RoleFactory)>,
) -> Result<Prepared, RuntimeError> {
    let head = bus.head();
    for (name, _) in &factories {
        bus.start_checkpoint(name, head)?;
    }
    let mut owners = owners(bus, listener, &factories, |checkpoint| checkpoint, head)?;
    let events_read = pass(bus, &mut owners)?;
    let count = owners.len();
    let saved = owners.into_iter().map(|o| usize::from(o.finish(bus))).sum();
    bus.flush_checkpoints()?;
    Ok(Prepared { owners: count, saved, events_read })
}

/// Every owner, restored: one role per factory, folding up to `to(its
/// checkpoint)`, and the listener, folding up to `listener_to`.
pub(super) fn owners(
    bus: &Bus,
    listener: (Listener, Seq),
    factories: &[(&'static str, RoleFactory)],
    to: impl Fn(Seq) -> Seq,
    listener_to: Seq,
) -> Result<Vec<Owner>, RuntimeError> {
    let mut owners = Vec::with_capacity(factories.len() + 1);
    for (name, factory) in factories {
        let kinds = factory().kinds();
        let Restored { role, from, checkpoint } = shell::restore(bus, name, factory)?;
        owners.push(Owner { name, kinds, from, to: to(checkpoint), state: State::Role(role) });
    }
    let (l, from) = listener;
    owners.push(Owner {
        name: listener::SNAPSHOT_NAME,
        kinds: Some(listener::FOLDED_KINDS.to_vec()),
        from,
        to: listener_to,
        state: State::Listener(Box::new(l)),
    });
    Ok(owners)
}

/// Events per chunk handed from the reading thread to the folding ones.
pub(super) const CHUNK: usize = 4096;

/// Threads that fold, each for its share of the owners, while this one
/// reads and decodes.
const LANES: usize = 2;

/// Reads the stretch of the log any owner has left to fold, once, and
/// hands each record to the owners that want it (see [`lanes`]). Returns
/// the records read.
fn pass(bus: &Bus, owners: &mut [Owner]) -> Result<u64, RuntimeError> {
    let folding = || owners.iter().filter(|o| o.to > o.from);
    let (Some(from), Some(to)) = (folding().map(|o| o.from).min(), folding().map(|o| o.to).max()) else {
        return Ok(0);
    };
    let kinds = union_of_kinds(folding().map(|o| &o.kinds));
    lanes(owners, |send| read_chunks(bus, from.next(), to, kinds.as_deref(), send))
}

/// The kinds any of `kinds` wants (`None`: all).
pub(super) fn union_of_kinds<'a>(kinds: impl Iterator<Item = &'a Option<Vec<EventKind>>>) -> Option<Vec<EventKind>> {
    let mut all: Option<Vec<EventKind>> = Some(Vec::new());
    for k in kinds {
        match (&mut all, k) {
            (Some(all), Some(k)) => all.extend(k.iter().filter(|k| !all.contains(k)).copied().collect::<Vec<_>>()),
            _ => all = None,
        }
    }
    all
}

/// Folds what `source` sends (chunks of records in `seq` order) into the
/// owners: `source` runs on this thread and [`LANES`] threads fold, each
/// for every [`LANES`]th owner (the router and the pattern store, which
/// fold the same pattern store, fall in different lanes). Each owner sees
/// its records in `seq` order. Returns what `source` returns.
pub(super) fn lanes(
    owners: &mut [Owner],
    source: impl FnOnce(&dyn Fn(Vec<Envelope>) -> bool) -> Result<u64, RuntimeError>,
) -> Result<u64, RuntimeError> {
    let mut lanes: Vec<Vec<&mut Owner>> = (0..LANES).map(|_| Vec::new()).collect();
    for (i, o) in owners.iter_mut().enumerate() {
        lanes[i % LANES].push(o);
    }
    std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(LANES);
        let mut folders = Vec::with_capacity(LANES);
        for mut lane in lanes {
            let (tx, rx) = crossbeam_channel::bounded::<Arc<Vec<Envelope>>>(2);
            senders.push(tx);
            let folder = move || {
                for chunk in rx {
                    for env in chunk.iter() {
                        for o in lane.iter_mut().filter(|o| o.wants(env)) {
                            o.observe(env);
                        }
                    }
                }
            };
            let thread = std::thread::Builder::new().name("engram-snapshot-fold".into());
            folders.push(thread.spawn_scoped(scope, folder).map_err(RuntimeError::Thread)?);
        }
        // A lane that stopped (a fold panicked) is reported by its join.
        let send = |chunk: Vec<Envelope>| {
            let chunk = Arc::new(chunk);
            senders.iter().all(|l| l.send(chunk.clone()).is_ok())
        };
        let read = source(&send);
        drop(senders);
        let mut failed = false;
        for f in folders {
            failed |= f.join().is_err();
        }
        if failed {
            return Err(RuntimeError::ActorFailed("snapshot fold"));
        }
        read
    })
}

/// Reads `from..=to`'s records of `kinds` and sends them, in chunks of
/// [`CHUNK`], with `send` (which says whether to go on). Returns the
/// records read.
pub(super) fn read_chunks(
    bus: &Bus,
    from: Seq,
    to: Seq,
    kinds: Option<&[EventKind]>,
    send: &dyn Fn(Vec<Envelope>) -> bool,
) -> Result<u64, RuntimeError> {
    let mut read = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK);
    for env in bus.read_range_of(from, to, kinds) {
        chunk.push(env?);
        read += 1;
        if chunk.len() == CHUNK && !send(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK))) {
            return Ok(read);
        }
    }
    if !chunk.is_empty() {
        send(chunk);
    }
    Ok(read)
}
