//! [`SnapshotsBeside`]: the actors' snapshots folded while `engram import`
//! is still converting its file, from the envelopes it is about to append.
//!
//! [`RuntimeBuilder::prepare_snapshots`](super::RuntimeBuilder::prepare_snapshots)
//! after an import reads the whole import back from the log and folds it:
//! measured on a year-long file (557 k events), a quarter of the command's
//! CPU, on the command's critical path, with the folded states held on top
//! of what the append left in memory. Beside the import, the same fold
//! runs while the file is converted and appended, on a core of its own,
//! and each state is encoded and dropped as soon as the conversion ends.
//!
//! Rules, each next to what it keeps true:
//!
//! 1. **The fold is of the log, or it is not saved.** Each envelope gets
//!    the seq it will have if the log takes every converted event, in
//!    order, after the head it had before the import. After the append,
//!    [`SnapshotsBeside::finish`] saves only if the import appended exactly
//!    what was converted and the head moved by exactly that much (an event
//!    the log already held, or another device's appends on a shared
//!    stream, break it); otherwise it says so, and the caller folds from
//!    the log as before. What was folded is then byte for byte what a fold
//!    of the log would be (the log assigns the seq and nothing else; the
//!    envelopes are the ones the append pass writes —
//!    `actors/tests/prepare_snapshots.rs` compares the two).
//! 2. **Nothing is read until something is converted**: an import that
//!    appends nothing (the file was imported before) reads no history.
//! 3. **The history before the import is folded first**, from the log, from
//!    the oldest snapshot among the owners up to the head the import
//!    started from.
//! 4. **Checkpoints are set after the append**, as for the fold after it:
//!    an actor new to the data dir gets its checkpoint at the new head
//!    then, never before (an import that fails half-way leaves the
//!    checkpoints as they were).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use engram_events::{Envelope, EventKind, Seq};
use engram_learning::import::ImportObserver;
use engram_local_state::snapshot::SnapshotError;

use super::prepare::{self, Owner, Prepared, CHUNK};
use crate::bus::Bus;
use crate::error::RuntimeError;
use crate::roles::listener::Listener;
use crate::shell::RoleFactory;

/// Chunks of converted events queued for the fold: when the fold falls
/// behind, the conversion waits rather than holding the import in memory.
const QUEUED_CHUNKS: usize = 2;

/// The actors' snapshots folding beside an import's conversion (see the
/// module docs); made by
/// [`RuntimeBuilder::prepare_snapshots_beside`](super::RuntimeBuilder::prepare_snapshots_beside).
/// It is the import's [`ImportObserver`]. Dropped without
/// [`finish`](Self::finish), it stops and saves nothing.
pub struct SnapshotsBeside {
    bus: Arc<Bus>,
    /// The head before the import.
    before: Seq,
    /// Events converted so far.
    converted: u64,
    /// The kinds any owner folds (`None`: all): the others are dropped
    /// here, on the thread that made them.
    kinds: Option<Vec<EventKind>>,
    chunk: Vec<Envelope>,
    tx: Option<Sender<Vec<Envelope>>>,
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Option<Folded>, RuntimeError>>>,
}

/// An owner's snapshot, encoded: its name, the seq its fold started from,
/// its version and body.
type Body = (&'static str, Seq, u32, Result<Vec<u8>, SnapshotError>);

/// What the fold leaves: every owner's body, and the records it folded.
struct Folded {
    bodies: Vec<Body>,
    events_read: u64,
}

impl SnapshotsBeside {
    /// Restores every owner (the listener and one role per factory) and
    /// starts the folding thread, which waits for the first converted
    /// events (rule 2).
    pub(super) fn start(
        bus: Arc<Bus>,
        listener: (Listener, Seq),
        factories: Vec<(&'static str, RoleFactory)>,
    ) -> Result<SnapshotsBeside, RuntimeError> {
        let before = bus.head();
        // Each folds to the end of the import; how far that is, is known
        // after the append (rule 4).
        let owners = prepare::owners(&bus, listener, &factories, |_| Seq(u64::MAX), Seq(u64::MAX))?;
        let kinds = prepare::union_of_kinds(owners.iter().map(Owner::kinds));
        let (tx, rx) = crossbeam_channel::bounded::<Vec<Envelope>>(QUEUED_CHUNKS);
        let cancel = Arc::new(AtomicBool::new(false));
        let (fold_bus, stop) = (bus.clone(), cancel.clone());
        let thread = std::thread::Builder::new()
            .name("engram-snapshot-beside".into())
            .spawn(move || fold(&fold_bus, owners, before, rx, &stop))
            .map_err(RuntimeError::Thread)?;
        Ok(SnapshotsBeside {
            bus,
            before,
            converted: 0,
            kinds,
            chunk: Vec::with_capacity(CHUNK),
            tx: Some(tx),
            cancel,
            thread: Some(thread),
        })
    }

    fn send_chunk(&mut self) {
        if self.chunk.is_empty() {
            return;
        }
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK));
        // A fold that stopped (it panicked) is reported by `finish`.
        if self.tx.as_ref().is_some_and(|tx| tx.send(chunk).is_err()) {
            self.tx = None;
        }
    }

    /// Saves the snapshots if the log holds exactly what was folded (rule
    /// 1): `appended` is the number of events the import appended. `None`:
    /// it does not (or nothing was folded); the caller folds from the log
    /// ([`RuntimeBuilder::prepare_snapshots`](super::RuntimeBuilder::prepare_snapshots)).
    pub fn finish(mut self, appended: u64) -> Result<Option<Prepared>, RuntimeError> {
        self.send_chunk();
        self.tx = None;
        let folded = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(folded)) => folded?,
            Some(Err(_)) => return Err(RuntimeError::ActorFailed("snapshot fold")),
            None => None,
        };
        let head = self.bus.head();
        let Some(folded) = folded else { return Ok(None) };
        if appended != self.converted || head.0 != self.before.0 + self.converted {
            tracing::debug!(
                appended,
                converted = self.converted,
                "the log is not what the fold beside the import assumed"
            );
            return Ok(None);
        }
        for (name, ..) in &folded.bodies {
            let to = match *name {
                crate::roles::listener::SNAPSHOT_NAME => head,
                _ => self.bus.start_checkpoint(name, head)?,
            };
            if to != head {
                // An actor with work left (the import checks before it
                // starts, so only a race with a start gets here).
                return Ok(None);
            }
        }
        let owners = folded.bodies.len();
        let mut saved = 0;
        for (name, from, version, body) in folded.bodies {
            let due = head > from && self.bus.snapshot_due_at_rest(from, head);
            saved += usize::from(due && self.bus.save_snapshot_body(name, version, head, body));
        }
        self.bus.flush_checkpoints()?;
        Ok(Some(Prepared { owners, saved, events_read: folded.events_read }))
    }
}

impl ImportObserver for SnapshotsBeside {
    /// Copies what an owner folds (the log takes the events themselves).
    fn converted(&mut self, events: &[Envelope]) {
        for env in events {
            self.converted += 1;
            if crate::shell::wants(self.kinds.as_deref(), env) {
                let mut env = env.clone();
                env.seq = Seq(self.before.0 + self.converted);
                self.chunk.push(env);
            }
        }
        if self.chunk.len() >= CHUNK {
            self.send_chunk();
        }
    }

    /// The last chunk goes, and the channel closes: the fold ends and its
    /// states are encoded and dropped while the last batches commit.
    fn conversion_done(&mut self) {
        self.send_chunk();
        self.tx = None;
    }
}

impl Drop for SnapshotsBeside {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The folding thread: the history before the import from the log (rule
/// 3), then the converted events as they come; each owner's state encoded
/// at the end. `None`: nothing was converted, or the import was dropped.
fn fold(
    bus: &Bus,
    mut owners: Vec<Owner>,
    before: Seq,
    rx: crossbeam_channel::Receiver<Vec<Envelope>>,
    cancel: &AtomicBool,
) -> Result<Option<Folded>, RuntimeError> {
    let Ok(first) = rx.recv() else { return Ok(None) };
    let from = owners.iter().map(Owner::from).min().unwrap_or(before);
    let kinds = prepare::union_of_kinds(owners.iter().map(Owner::kinds));
    let events_read = prepare::lanes(&mut owners, |send| {
        // A dropped import stops the fold at its next chunk, history or not.
        let send = |chunk: Vec<Envelope>| !cancel.load(Ordering::Relaxed) && send(chunk);
        let mut read =
            if from < before { prepare::read_chunks(bus, from.next(), before, kinds.as_deref(), &send)? } else { 0 };
        for chunk in std::iter::once(first).chain(rx.iter()) {
            read += chunk.len() as u64;
            if !send(chunk) {
                break;
            }
        }
        Ok(read)
    })?;
    if cancel.load(Ordering::Relaxed) {
        return Ok(None);
    }
    Ok(Some(Folded { bodies: owners.into_iter().map(Owner::into_body).collect(), events_read }))
}
