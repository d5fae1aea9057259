//! The local copy of the stream (rule 2): a sled log at the stream's
//! positions, which the follower (`super::follower`) keeps current.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engram_events::codec::binary;
use engram_events::{Envelope, EventId, Seq};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{foreign, PACK_EVENTS};
use crate::error::LogError;
use crate::event_log::{AppendOutcome, EventLog};
use crate::log::SledLog;

/// How long a wait for the copy to reach a position may go without the
/// copy moving at all before it fails (the stream is big: a catch-up of a
/// long log goes on as long as it moves).
pub(super) const CATCH_UP_STALL: Duration = Duration::from_secs(30);

/// An event read from the stream, at its stream sequence.
pub(super) struct Incoming {
    pub(super) seq: Seq,
    pub(super) event: Envelope,
    /// Messages of its batch still to come after it.
    pub(super) batch_left: u64,
}

/// The data dir's [`SledLog`], holding a prefix of the stream.
pub(super) struct Replica {
    local: Arc<SledLog>,
    /// Serialises [`Replica::apply`]; holds whether the copy's last event
    /// is inside an unfinished batch (rule 4).
    open_batch: Mutex<bool>,
    /// The copy's head, for waiters.
    head: watch::Sender<Seq>,
    /// Complete pack ranges the copy holds (head / [`PACK_EVENTS`]): the
    /// packer wakes once a range, not once an append.
    complete: watch::Sender<u64>,
    /// Why the follower stopped for good, if it did.
    failed: Mutex<Option<String>>,
}

impl Replica {
    pub(super) fn new(local: Arc<SledLog>) -> Self {
        let head = watch::Sender::new(local.head());
        let complete = watch::Sender::new(local.head().0 / PACK_EVENTS);
        Replica { local, open_batch: Mutex::new(false), head, complete, failed: Mutex::new(None) }
    }

    /// The local copy.
    pub(super) fn local(&self) -> &Arc<SledLog> {
        &self.local
    }

    /// Whether the copy ends inside a batch another writer is still
    /// publishing.
    pub(super) fn ends_in_open_batch(&self) -> bool {
        *self.open_batch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends events read from the stream, or published by this process
    /// and acknowledged, at their stream positions. Those the copy already
    /// has are skipped (the follower and the publisher both bring the
    /// publisher's own events); anything but the next positions in order is
    /// refused, and so is an event whose id the copy already holds
    /// elsewhere — the stream would then hold it twice, which rule 3 never
    /// does, so another program published on the subject.
    pub(super) fn apply(&self, incoming: Vec<Incoming>) -> Result<(), LogError> {
        let mut open_batch = self.open_batch.lock().unwrap_or_else(|p| p.into_inner());
        let head = self.local.head();
        // What the copy has is at the front (a consumer recreated a little
        // behind): dropped in place, the rest not moved when none is.
        let mut incoming = incoming;
        let held_already = incoming.iter().take_while(|i| i.seq <= head).count();
        incoming.drain(..held_already);
        let Some(last) = incoming.last() else { return Ok(()) };
        let (last_seq, last_left) = (last.seq, last.batch_left);
        let mut due = head;
        for i in &incoming {
            due = due.next();
            if i.seq != due {
                return Err(LogError::Inconsistent {
                    seq: due,
                    what: format!("the stream delivered seq {} where seq {due} was due", i.seq),
                });
            }
        }
        // Rule 6: a copy of an event the stream holds elsewhere (another
        // program published it again) is recorded as skipped here.
        let ids: Vec<engram_events::EventId> = incoming.iter().map(|i| i.event.id).collect();
        let held = self.local.seq_of_many(&ids)?;
        let mut seen = crate::id_index::IdSet::with_capacity_and_hasher(incoming.len(), Default::default());
        let mut events = Vec::with_capacity(incoming.len());
        for i in incoming {
            let again = !seen.insert(i.event.id) || held.contains_key(&i.event.id);
            events.push(match again {
                false => i.event,
                true => {
                    let why = format!("a copy of event {}, which the stream holds before", i.event.id);
                    foreign::skipped(i.seq, i.event.at, &binary::encode(&i.event), why)
                }
            });
        }
        let positions: Vec<(Seq, engram_events::EventId)> =
            events.iter().enumerate().map(|(k, e)| (Seq(head.0 + 1 + k as u64), e.id)).collect();
        let outcomes = self.local.append_here(events)?;
        for ((seq, id), outcome) in positions.into_iter().zip(outcomes) {
            if outcome != AppendOutcome::Appended(seq) {
                return Err(LogError::Inconsistent {
                    seq,
                    what: format!(
                        "the stream holds event {id} here and at seq {} too: something other than engram \
                         published on the stream's subject",
                        outcome.seq()
                    ),
                });
            }
        }
        *open_batch = last_left > 0;
        self.advanced(last_seq);
        Ok(())
    }

    /// Appends a pack's frames — the events at `first..`, CRC-checked and
    /// at their positions, with their ids — as they are (`packs`); `Ok(false)`
    /// with nothing written when they cannot go in so (they start elsewhere
    /// than the copy's next position, an id is held already, the writer is
    /// busy): the caller applies them decoded, through [`Replica::apply`].
    pub(super) fn apply_frames(&self, first: Seq, frames: &[u8], ids: &[EventId]) -> Result<bool, LogError> {
        let mut open_batch = self.open_batch.lock().unwrap_or_else(|p| p.into_inner());
        if !self.local.append_frames_here(first, frames, ids)? {
            return Ok(false);
        }
        // Packs never end the copy (packs rule 4): what follows them comes
        // from the stream with its batch header.
        *open_batch = false;
        self.advanced(Seq(first.0 + ids.len() as u64 - 1));
        Ok(true)
    }

    /// Tells waiters and the packer the copy's new head.
    fn advanced(&self, head: Seq) {
        self.head.send_replace(head);
        self.complete.send_if_modified(|complete| {
            let now = head.0 / PACK_EVENTS;
            std::mem::replace(complete, now) != now
        });
    }

    /// How many complete pack ranges the copy holds, as it grows (the
    /// packer packs each range as it completes).
    pub(super) fn complete_ranges(&self) -> watch::Receiver<u64> {
        self.complete.subscribe()
    }

    /// Waits for an [`Replica::apply`] running on a task of its own (the
    /// follower writes one chunk while it reads the next); `false` when
    /// following must stop for good — the copy failed (recorded by
    /// [`Replica::fail`]) or the log is closing.
    pub(super) async fn settle(&self, writing: JoinHandle<Result<(), LogError>>) -> bool {
        match writing.await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                self.fail(&e);
                false
            }
            // The log is closing: its runtime cancels the task, which is
            // no failure of the copy.
            Err(e) if e.is_cancelled() => false,
            Err(e) => {
                self.fail(&LogError::Inconsistent {
                    seq: self.local.head().next(),
                    what: format!("applying the stream's events panicked: {e}"),
                });
                false
            }
        }
    }

    /// Records why the follower stopped, and wakes every waiter.
    pub(super) fn fail(&self, error: &LogError) {
        tracing::error!(%error, "the local copy of the stream stopped following it");
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
        self.head.send_modify(|_| {});
    }

    /// The follower's failure, if it stopped.
    pub(super) fn failure(&self) -> Option<LogError> {
        let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        failed.as_ref().map(|what| LogError::Inconsistent { seq: self.local.head().next(), what: what.clone() })
    }

    /// Waits until the copy holds `seq`; fails when it has not moved for
    /// `stall`, or the follower stopped.
    pub(super) async fn wait_for(&self, seq: Seq, stall: Duration) -> Result<(), LogError> {
        self.wait_for_reporting(seq, stall, &|_| {}).await
    }

    /// [`Replica::wait_for`], telling `report` the copy's head as it moves.
    pub(super) async fn wait_for_reporting(
        &self,
        seq: Seq,
        stall: Duration,
        report: &(dyn Fn(Seq) + Sync),
    ) -> Result<(), LogError> {
        let mut rx = self.head.subscribe();
        loop {
            let head = *rx.borrow_and_update();
            report(head.min(seq));
            if head >= seq {
                return Ok(());
            }
            if let Some(e) = self.failure() {
                return Err(e);
            }
            match tokio::time::timeout(stall, rx.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => return Err(LogError::WriterStopped),
                Err(_) => {
                    return Err(LogError::Remote {
                        url: String::new(),
                        what: format!(
                            "the local copy stays at seq {} for {stall:?}, waiting for seq {seq}: the stream cannot be read",
                            self.local.head()
                        ),
                    })
                }
            }
        }
    }

    /// Waits, for at most `limit`, while the copy ends inside another
    /// writer's batch (rule 4). Returns whether the copy moved meanwhile.
    pub(super) async fn wait_batch_closed(&self, limit: Duration) -> bool {
        let start = self.local.head();
        let deadline = tokio::time::Instant::now() + limit;
        let mut rx = self.head.subscribe();
        while self.ends_in_open_batch() {
            if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
                tracing::warn!(seq = %self.local.head(), "a batch at the end of the stream stays unfinished; its writer is presumed gone");
                break;
            }
        }
        self.local.head() != start
    }
}
