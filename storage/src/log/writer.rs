//! The writer: takes everything queued (group commit), assigns positions,
//! skips ids already present, writes the group to the write-ahead file,
//! makes it durable under the policy, acknowledges, publishes it to
//! subscribers and hands it to the applier.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use engram_events::{Envelope, EventId, Seq};

use super::applier::{applier, make_sled_durable, ApplyMsg, Record};
use super::shared::{Ack, LogConfig, Shared, WriterMsg, DEFERRED_FLUSH};
use crate::durability::{Durability, Syncer};
use crate::error::LogError;
use crate::event_log::AppendOutcome;
use crate::segment::SegmentBuilder;
use crate::wal;
use crate::wal::Wal;

pub(super) struct Writer {
    pub(super) shared: Arc<Shared>,
    pub(super) config: LogConfig,
    /// `None` when the log opened unable to take appends.
    pub(super) wal: Option<Wal>,
    pub(super) wal_dir: PathBuf,
    /// Records for the applier, and checkpoints after them.
    pub(super) apply: Option<Sender<ApplyMsg>>,
    pub(super) applier: Option<JoinHandle<Syncer>>,
    /// Why appends are refused after a failed write: the write-ahead file
    /// and sled can no longer be trusted to agree until the log is reopened.
    pub(super) poisoned: Option<String>,
    pub(super) rx: Receiver<WriterMsg>,
    /// Since when records written under a policy that acknowledged them
    /// before their fsync wait for one.
    pub(super) dirty_since: Option<Instant>,
    /// Closed: the log is being dropped.
    pub(super) closed: bool,
    /// A [`WriterMsg::Tick`] taken off the channel by a group committed on
    /// a caller's thread: the writer thread never saw it, and may be
    /// asleep with no timer, so the caller sends it again
    /// (`SledLog::on_idle_writer`).
    pub(super) tick_taken: bool,
}

/// Records the applier may fall behind the writer by before the writer
/// waits for it: bounds the memory of a relaxed import outrunning sled.
pub(super) const APPLY_QUEUE: usize = 256;

impl Writer {
    pub(super) fn new(
        shared: Arc<Shared>,
        config: LogConfig,
        syncer: Syncer,
        wal: Option<Wal>,
        wal_dir: PathBuf,
        rx: Receiver<WriterMsg>,
        hurry: Receiver<()>,
    ) -> Result<Writer, LogError> {
        let (tx, apply_rx) = bounded(APPLY_QUEUE);
        let applier = {
            let shared = shared.clone();
            let dir = wal_dir.clone();
            std::thread::Builder::new()
                .name("engram-log-apply".into())
                .spawn(move || applier(&shared, syncer, &dir, &apply_rx, &hurry))
                .map_err(|e| LogError::io(&wal_dir, e))?
        };
        Ok(Writer {
            shared,
            config,
            wal,
            wal_dir,
            apply: Some(tx),
            applier: Some(applier),
            poisoned: None,
            rx,
            dirty_since: None,
            closed: false,
            tick_taken: false,
        })
    }

    /// Acknowledge-before-fsync interval of the relaxed policy.
    pub(super) fn relaxed_interval(&self) -> Option<Duration> {
        match self.config.durability {
            Durability::Durable => None,
            Durability::Relaxed { flush_every_ms } => Some(Duration::from_millis(flush_every_ms.max(1))),
        }
    }

    /// How long after the first unsynced record the fsync comes on its own:
    /// the relaxed interval, or, for deferred appends under the durable
    /// policy, [`DEFERRED_FLUSH`].
    pub(super) fn flush_interval(&self) -> Duration {
        self.relaxed_interval().unwrap_or(DEFERRED_FLUSH)
    }

    /// How long the writer thread may sleep before an fsync is due.
    pub(super) fn next_flush_in(&self) -> Option<Duration> {
        self.dirty_since.map(|since| self.flush_interval().saturating_sub(since.elapsed()))
    }

    /// The fsync that came due while nobody appended.
    pub(super) fn flush_if_due(&mut self) {
        if self.next_flush_in().is_some_and(|d| d.is_zero()) {
            if let Err(e) = self.make_durable() {
                tracing::error!("periodic flush failed: {e}");
            }
            self.dirty_since = None;
        }
    }

    /// One group commit: `first`, then everything queued behind it (up to
    /// `max_batch_events`), committed, fsynced as the policy says,
    /// acknowledged and published.
    pub(super) fn group(&mut self, first: WriterMsg) {
        let mut appends = Vec::new();
        let mut flushes = Vec::new();
        let mut queued = 0usize;
        let mut any_durable = false;
        let mut tick_taken = false;
        // Returns whether `msg` was counted in flight (a tick is not).
        let mut take = |msg: WriterMsg, queued: &mut usize| match msg {
            WriterMsg::Append { events, ack, durable } => {
                *queued += events.len();
                any_durable |= durable;
                appends.push((events, ack));
                1
            }
            WriterMsg::Flush { ack } => {
                flushes.push(ack);
                1
            }
            WriterMsg::Tick => {
                tick_taken = true;
                0
            }
        };
        let mut taken = take(first, &mut queued);
        while queued < self.config.max_batch_events {
            match self.rx.try_recv() {
                Ok(msg) => taken += take(msg, &mut queued),
                Err(_) => break,
            }
        }
        self.tick_taken |= tick_taken;
        let relaxed = self.relaxed_interval().is_some();
        let mut dirty_since = self.dirty_since;
        let committed = self.commit(&mut appends, |written| {
            // A durable append waits for the fsync; so does a durable
            // append of events already present, deferred a moment ago.
            let sync = !relaxed && any_durable && (written || dirty_since.is_some());
            if sync {
                dirty_since = None;
            } else if written {
                dirty_since.get_or_insert_with(Instant::now);
            }
            sync
        });
        self.dirty_since = dirty_since;
        let flush_result = if flushes.is_empty() {
            Ok(())
        } else {
            self.dirty_since = None;
            self.make_durable()
        };
        match committed {
            Ok(written) => {
                // The events written move on to the subscribers, if any (an
                // event marked existing was not written: its seq is
                // another's). The head moved in `commit`, before this.
                let publish = written && self.shared.hub.has_subscribers();
                let mut fresh = Vec::new();
                for (events, ack) in appends.drain(..) {
                    let _ = ack.send(Ok(outcomes_of(&events)));
                    if publish {
                        fresh.extend(events.into_iter().filter(|e| e.seq.0 & EXISTING_BIT == 0));
                    }
                }
                if publish {
                    self.shared.hub.publish(fresh.into());
                }
            }
            Err(e) => {
                let msg = e.to_string();
                tracing::error!("append failed: {msg}");
                for (_, ack) in appends.drain(..) {
                    let _ = ack.send(Err(LogError::Transaction(msg.clone())));
                }
            }
        }
        for ack in flushes {
            let _ = ack.send(flush_result.as_ref().map(|_| ()).map_err(|e| LogError::Transaction(e.to_string())));
        }
        // Only now: a caller that sees no message in flight may commit on
        // its own thread, after everything taken here.
        self.shared.in_flight.fetch_sub(taken, Ordering::AcqRel);
    }

    /// Makes every record written so far durable: one `fdatasync` of the
    /// write-ahead file (sled's own flush is the applier's, at checkpoints).
    pub(super) fn make_durable(&mut self) -> Result<(), LogError> {
        if let Some(why) = &self.poisoned {
            return Err(LogError::Transaction(why.clone()));
        }
        match self.wal.as_mut().map(Wal::sync) {
            Some(Err(e)) => Err(self.poison(e)),
            _ => Ok(()),
        }
    }

    /// After a failed write or fsync what reached the file is unknown (and
    /// a failed fsync may have dropped dirty pages): no more appends until
    /// the log is reopened and recovered from its files.
    pub(super) fn poison(&mut self, e: LogError) -> LogError {
        let why = format!("{e}; no more appends until the log is reopened");
        tracing::error!("{why}");
        self.poisoned = Some(why.clone());
        LogError::Transaction(why)
    }

    /// The group commit: assigns positions, writes the record to the
    /// write-ahead file, fsyncs it when `sync_needed(a record was written)`
    /// says so, makes it visible, and hands it to the applier. Each
    /// request's events are replaced by their outcome-carrying copies;
    /// returns the newly appended envelopes for subscribers.
    pub(super) fn commit(
        &mut self,
        appends: &mut [(Vec<Envelope>, Ack)],
        sync_needed: impl FnOnce(bool) -> bool,
    ) -> Result<bool, LogError> {
        if let Some(why) = self.poisoned.clone().or_else(|| self.shared.applied.failure()) {
            return Err(LogError::Transaction(why));
        }
        let prepared = self.prepare(appends)?;
        self.write_record(prepared, sync_needed)
    }

    /// Writes a prepared record (if any) to the write-ahead file, fsyncs
    /// when `sync_needed(a record was written)` says so, makes it visible
    /// and hands it to the applier: the part of a group commit after the
    /// positions are assigned, shared with [`Writer::commit_frames`].
    fn write_record(
        &mut self,
        prepared: Option<Record>,
        sync_needed: impl FnOnce(bool) -> bool,
    ) -> Result<bool, LogError> {
        let sync = sync_needed(prepared.is_some());
        if let Some(record) = &prepared {
            let Some(wal) = self.wal.as_mut() else { return Err(LogError::WriterStopped) };
            if let Err(e) = wal.append(&record.segments) {
                return Err(self.poison(e));
            }
        }
        if sync {
            self.make_durable()?;
        }
        let Some(record) = prepared else { return Ok(false) };
        // Visible from here: readers find the ids among the pending ones,
        // and wait for the applier before reading the trees.
        {
            let mut pending = self.shared.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.extend(record.index.iter().copied());
        }
        let last = record.last;
        let Some(apply) = &self.apply else { return Err(LogError::WriterStopped) };
        apply.send(ApplyMsg::Record(record)).map_err(|_| LogError::WriterStopped)?;
        // After the send: a reader that sees this head and hurries the
        // applier finds the record already queued.
        self.shared.head.store(last.0, Ordering::Release);
        let wal = self.wal.as_mut().expect("written above");
        if wal.len() >= wal::WAL_FILE_BYTES {
            // Rule 3: the closed file is synced before the next starts.
            match wal.rotate(last) {
                Ok(closed) => {
                    let _ = apply.send(ApplyMsg::Checkpoint(closed));
                }
                Err(e) => return Err(self.poison(e)),
            }
        }
        Ok(true)
    }

    /// Positions, duplicates and segments of a group commit.
    pub(super) fn prepare(&self, appends: &mut [(Vec<Envelope>, Ack)]) -> Result<Option<Record>, LogError> {
        let head = Seq(self.shared.head.load(Ordering::Acquire));
        let mut next = head.next();
        // Every id of the group looked up at once: each bucket is read
        // once, not once per event (a turn's events share a bucket).
        let ids: Vec<EventId> = appends.iter().flat_map(|(events, _)| events.iter().map(|e| e.id)).collect();
        let mut known = self.shared.seq_of_many(&ids)?;
        let mut builder = SegmentBuilder::new(self.config.segment_bytes);
        let mut index = Vec::new();
        let mut fresh = 0usize;
        for (events, _) in appends.iter_mut() {
            for env in events.iter_mut() {
                let existing = known.get(&env.id).copied();
                match existing {
                    Some(seq) => {
                        // Marked as existing: seq set, but not re-appended.
                        env.seq = Seq(seq.0 | EXISTING_BIT);
                    }
                    None => {
                        env.seq = next;
                        known.insert(env.id, next);
                        builder.push(env);
                        index.push((env.id, next));
                        fresh += 1;
                        next = next.next();
                    }
                }
            }
        }
        if fresh == 0 {
            return Ok(None);
        }
        Ok(Some(Record { segments: builder.finish(), index, last: Seq(next.0 - 1) }))
    }

    /// Commits frames another copy of the same log stores — the events at
    /// `first..`, back to back, CRC-checked by the caller — as they are:
    /// no decode, no encode (the JetStream copy's packs). `Ok(false)`, with
    /// nothing written, when they cannot go in as they are: `first` is not
    /// the next position, or an id is held already or twice (the caller
    /// then decodes them and appends them the usual way). Relaxed: the
    /// fsync comes with the policy's timer. Subscribers, if any, get the
    /// decoded events.
    #[cfg(feature = "jetstream")]
    pub(super) fn commit_frames(&mut self, first: Seq, frames: &[u8], ids: &[EventId]) -> Result<bool, LogError> {
        if let Some(why) = self.poisoned.clone().or_else(|| self.shared.applied.failure()) {
            return Err(LogError::Transaction(why));
        }
        let head = Seq(self.shared.head.load(Ordering::Acquire));
        let distinct: crate::id_index::IdSet = ids.iter().copied().collect();
        if first != head.next() || ids.is_empty() || distinct.len() != ids.len() {
            return Ok(false);
        }
        if !self.shared.seq_of_many(ids)?.is_empty() {
            return Ok(false);
        }
        let segments = crate::segment::split_frames(first, frames, self.config.segment_bytes)?;
        let index: Vec<(EventId, Seq)> = ids.iter().enumerate().map(|(k, id)| (*id, Seq(first.0 + k as u64))).collect();
        let last = Seq(first.0 + ids.len() as u64 - 1);
        let relaxed = self.relaxed_interval().is_some();
        let mut dirty_since = self.dirty_since;
        self.write_record(Some(Record { segments, index, last }), |_| {
            dirty_since.get_or_insert_with(Instant::now);
            !relaxed
        })?;
        self.dirty_since = if relaxed { dirty_since } else { None };
        if self.shared.hub.has_subscribers() {
            let events = engram_events::codec::binary::frames(frames).map(|f| f.and_then(|f| f.decode()));
            match events.collect::<Result<Vec<Envelope>, _>>() {
                Ok(events) => self.shared.hub.publish(events.into()),
                // Committed: a subscriber reads them from the log, and
                // meets the error there, with its seq.
                Err(e) => tracing::error!(first = %first, error = %e, "frames committed that do not decode"),
            }
        }
        Ok(true)
    }

    /// On close: everything durable in sled, and the write-ahead files
    /// replaced by an empty one, so the next open has nothing to re-apply.
    pub(super) fn close(&mut self) {
        self.closed = true;
        if let Err(e) = self.make_durable() {
            tracing::error!("final flush failed: {e}");
        }
        self.apply.take();
        let _ = self.shared.hurry.try_send(());
        let Some(mut syncer) = self.applier.take().and_then(|h| h.join().ok()) else { return };
        if self.poisoned.is_some() || self.shared.applied.failure().is_some() {
            return; // the files stay: the next open recovers from them
        }
        let Some(wal) = self.wal.as_mut() else { return };
        let head = Seq(self.shared.head.load(Ordering::Acquire));
        let result = make_sled_durable(&self.shared.db, &mut syncer)
            .and_then(|_| wal.rotate(head))
            .and_then(|closed| wal::remove_up_to(&self.wal_dir, closed));
        if let Err(e) = result {
            tracing::error!("final checkpoint failed (the write-ahead log keeps every event): {e}");
        }
    }
}

/// The writer thread: commits what is sent to it, and the fsyncs that come
/// due under the relaxed policy or after deferred appends; closes the
/// writer when the log is dropped.
pub(super) fn writer_thread(state: &Mutex<Writer>, rx: &Receiver<WriterMsg>) {
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let wait = lock().next_flush_in();
        let msg = match wait {
            Some(wait) => match rx.recv_timeout(wait) {
                Ok(msg) => Some(msg),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            },
            None => match rx.recv() {
                Ok(msg) => Some(msg),
                Err(_) => break,
            },
        };
        let mut writer = lock();
        writer.flush_if_due();
        match msg {
            // A tick only makes the loop read the fsync timer again.
            None | Some(WriterMsg::Tick) => {}
            Some(msg) => {
                writer.group(msg);
                // This thread reads the timer as it loops: a tick it took
                // needs no resending.
                writer.tick_taken = false;
            }
        }
    }
    lock().close();
}

/// High bit marking an event the writer found already in the log (its seq is
/// the existing position). Positions never come near 2^63.
pub(super) const EXISTING_BIT: u64 = 1 << 63;

pub(super) fn outcomes_of(events: &[Envelope]) -> Vec<AppendOutcome> {
    events
        .iter()
        .map(|e| {
            if e.seq.0 & EXISTING_BIT != 0 {
                AppendOutcome::Existing(Seq(e.seq.0 & !EXISTING_BIT))
            } else {
                AppendOutcome::Appended(e.seq)
            }
        })
        .collect()
}
