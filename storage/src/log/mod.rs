//! The sled event log: one writer thread, group commit, segments, an id
//! index, and reads and subscriptions from any `seq`.
//!
//! Layout of the sled database (`<data dir>/log.sled`):
//!
//! | tree   | key                    | value                                   |
//! |--------|------------------------|-----------------------------------------|
//! | `log`  | first `seq` (u64 BE)   | a segment: frames of consecutive events |
//! | `ids`  | id bucket (ms, 6 B + depth) | entries: id (16 B), `seq` (u64 BE), or split |
//! | `meta` | `format`               | log format version (u32 BE)             |
//!
//! Alongside, `<data dir>/log.wal/` holds the write-ahead files ([`crate::wal`]).
//!
//! Appenders hand batches to the writer over a crossbeam channel. The writer
//! takes everything queued (group commit), assigns positions, skips ids
//! already present, writes the group as one record to the write-ahead file,
//! makes it durable according to the [`Durability`](crate::Durability) policy (one
//! `fdatasync`), makes it visible (head, pending ids), acknowledges,
//! publishes it to subscribers, and hands it to the applier thread, which
//! writes the records it gathers into sled (two atomic batches: segments,
//! then ids; the index is re-derived for the tail at open if a crash came
//! between them) and runs the checkpoints that retire write-ahead files.
//! Readers of the trees wait for the applier to reach the head.

mod applier;
mod iter;
mod open;
mod shared;
mod writer;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Sender};
use engram_events::codec::binary;
use engram_events::codec::binary::FrameView;
use engram_events::{Envelope, EventId, EventKind, Seq};

use crate::error::LogError;
use crate::event_log::{AppendOutcome, AppendTicket, EventLog};
use crate::follow::FollowServer;
use crate::id_index;
use crate::local_db::LocalDb;
use crate::lock::DataDirLock;
use crate::segment;
use crate::subscription::{Backlog, Filter, Subscription};
use iter::{misplaced, TreeBacklog};
use shared::{Shared, WriterMsg};
use writer::Writer;

pub use iter::LogIter;
pub use open::LOG_FORMAT;
pub use shared::{LogConfig, DEFAULT_CACHE_BYTES, DEFERRED_FLUSH};

/// The embedded event log on sled. Cheap to share behind an `Arc`; dropping
/// the last handle stops the writer after it has flushed.
pub struct SledLog {
    shared: Arc<Shared>,
    /// The writer's state: the writer thread's, or, when it is idle, that
    /// of a caller committing its own durable append (see
    /// [`SledLog::commit_here`]).
    state: Arc<Mutex<Writer>>,
    tx: Option<Sender<WriterMsg>>,
    writer: Option<JoinHandle<()>>,
    subscriber_buffer: usize,
    tail_fault: Option<String>,
    follow: Option<FollowServer>,
    _lock: DataDirLock,
}

impl SledLog {
    /// The data dir.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Iterates the raw segments, `(first seq, bytes)`, from the start.
    pub fn segments(&self) -> impl Iterator<Item = Result<(Seq, sled::IVec), LogError>> + '_ {
        self.segments_from(Seq(0))
    }

    /// Iterates the raw segments whose first `seq` is at or after `from`.
    pub fn segments_from(&self, from: Seq) -> impl Iterator<Item = Result<(Seq, sled::IVec), LogError>> + '_ {
        let caught_up = self.shared.caught_up().err().map(Err);
        caught_up.into_iter().chain(self.shared.log.range(segment::key(from)..).map(|r| {
            let (k, v) = r?;
            let seq = segment::seq_of_key(&k).ok_or_else(|| LogError::Inconsistent {
                seq: Seq(0),
                what: format!("segment key of {} bytes", k.len()),
            })?;
            Ok((seq, v))
        }))
    }

    /// The data dir's database, shared with what the data dir keeps
    /// beside the log.
    pub fn local_db(&self) -> &LocalDb {
        &self.shared.local
    }

    /// The zero-copy replay: calls `f` with a validated, in-place view of
    /// every record from `from` on (CRC checked, archives validated, nothing
    /// deserialised). Returns the number of records visited. Stops at the
    /// first corrupt record with an error naming its seq.
    pub fn for_each_view(
        &self,
        from: Seq,
        mut f: impl FnMut(FrameView<'_>) -> Result<(), LogError>,
    ) -> Result<u64, LogError> {
        self.shared.caught_up()?;
        let from = Seq(from.0.max(1));
        let start = self.segment_holding(from)?;
        let mut visited = 0u64;
        for entry in self.shared.log.range(start..) {
            let (k, v) = entry?;
            let first = segment::seq_of_key(&k)
                .ok_or_else(|| LogError::Inconsistent { seq: from, what: "bad segment key".to_owned() })?;
            let mut seq = first;
            for frame in binary::frames(&v) {
                let frame = frame.map_err(|source| LogError::Corrupt { seq, source })?;
                // The view validates the header once and carries the seq.
                let view = frame.view().map_err(|source| LogError::Corrupt { seq, source })?;
                if view.seq() != seq {
                    return Err(misplaced(view.seq(), seq));
                }
                if seq >= from {
                    f(view)?;
                    visited += 1;
                }
                seq = seq.next();
            }
        }
        Ok(visited)
    }

    /// The key of the segment holding `from` (the last one starting at or
    /// before it), or `from`'s own key when none does.
    fn segment_holding(&self, from: Seq) -> Result<sled::IVec, LogError> {
        Ok(self
            .shared
            .log
            .range(..=segment::key(from))
            .next_back()
            .transpose()?
            .map(|(k, _)| k)
            .unwrap_or_else(|| sled::IVec::from(&segment::key(from))))
    }

    /// Appends to `out` the frames of the events at `from..=to`, back to
    /// back, as the log stores them (length and CRC checked, positions
    /// checked, nothing decoded): the JetStream copy's packs are these
    /// bytes. Returns how many frames it copied (fewer than asked when the
    /// log ends before `to`).
    #[cfg(feature = "jetstream")]
    pub(crate) fn frames_between(&self, from: Seq, to: Seq, out: &mut Vec<u8>) -> Result<u64, LogError> {
        self.shared.caught_up()?;
        let from = Seq(from.0.max(1));
        let mut copied = 0u64;
        for entry in self.shared.log.range(self.segment_holding(from)?..) {
            let (k, v) = entry?;
            let first = segment::seq_of_key(&k)
                .ok_or_else(|| LogError::Inconsistent { seq: from, what: "bad segment key".to_owned() })?;
            if first > to {
                break;
            }
            segment::for_each_frame(first, &v, |seq, frame| {
                if (from..=to).contains(&seq) {
                    out.extend_from_slice(frame.bytes);
                    copied += 1;
                }
                Ok(())
            })?;
        }
        Ok(copied)
    }

    /// Number of entries in the id index (equals the number of events in a
    /// healthy log).
    pub fn indexed_ids(&self) -> Result<u64, LogError> {
        self.shared.caught_up()?;
        id_index::count(&self.shared.ids)
    }

    /// The `seq` the id index records for `id`.
    pub fn indexed_seq(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        self.shared.caught_up()?;
        id_index::get(&self.shared.ids, id)
    }

    /// [`EventLog::append`] for the JetStream log's copy (relaxed, one
    /// append per acknowledged publish or fetched chunk): its caller waits
    /// for the outcome at once, so it commits on the caller's thread when
    /// the writer is idle ([`SledLog::append_waiting`]).
    #[cfg(feature = "jetstream")]
    pub(crate) fn append_here(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        self.append_waiting(events, true)
    }

    /// Appends frames another copy of this log stores — the events at
    /// `first..`, back to back, each CRC-checked by the caller, with their
    /// ids — as they are, on the caller's thread: the JetStream copy's
    /// packs, without decoding and encoding each event. `Ok(false)`, with
    /// nothing written, when they cannot go in so (the writer busy, `first`
    /// not the next position, an id held already or twice): the caller
    /// appends them decoded.
    #[cfg(feature = "jetstream")]
    pub(crate) fn append_frames_here(&self, first: Seq, frames: &[u8], ids: &[EventId]) -> Result<bool, LogError> {
        self.appendable()?;
        self.on_idle_writer(|writer| writer.commit_frames(first, frames, ids)).unwrap_or(Ok(false))
    }

    /// [`EventLog::seq_of`] of many ids at once: each index bucket read
    /// once, not once per id (the JetStream copy checks every chunk it
    /// applies so). Returns the ids the log holds.
    #[cfg(feature = "jetstream")]
    pub(crate) fn seq_of_many(&self, ids: &[EventId]) -> Result<crate::id_index::IdMap<Seq>, LogError> {
        self.shared.seq_of_many(ids)
    }

    /// Wakes the writer thread to read its fsync timer again. Not counted
    /// in flight: a tick orders nothing, so the next caller may still
    /// commit on its own thread before the writer has woken for it (rule
    /// of `on_idle_writer`: only appends and flushes go first).
    fn tick(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(WriterMsg::Tick);
        }
    }

    /// Hands `msg` to the writer thread.
    fn send(&self, msg: WriterMsg) -> Result<(), LogError> {
        let tx = self.tx.as_ref().ok_or(LogError::WriterStopped)?;
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        tx.send(msg).map_err(|_| {
            self.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            LogError::WriterStopped
        })
    }

    /// Commits `msg` on the caller's thread when the writer is idle —
    /// nothing in flight to it, its state free — under either policy:
    /// a lone appender then pays its own commit (and, durable, its fsync)
    /// and nothing else, not two thread hops to the writer and back
    /// (≈ 10–30 µs of a ≈ 130 µs durable append here, most of a relaxed
    /// or deferred one). Otherwise gives the message back, for the writer
    /// thread (group commit: it takes all the appends that queued
    /// meanwhile at once).
    fn commit_here(&self, msg: WriterMsg) -> Result<(), WriterMsg> {
        let mut msg = Some(msg);
        let done = self.on_idle_writer(|writer| {
            // Counted as a message sent to the writer: `Writer::group`
            // takes it off the count for every message it takes.
            self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
            writer.group(msg.take().expect("taken once"));
        });
        match done {
            Some(()) => Ok(()),
            None => Err(msg.take().expect("not taken")),
        }
    }

    /// An append whose caller waits for its acknowledgement at once
    /// ([`EventLog::append`], [`EventLog::append_deferred`]): committed on
    /// the caller's thread when the writer is idle ([`SledLog::commit_here`]),
    /// else by the writer thread. `durable: false`: acknowledged once
    /// committed, made durable by the next durable append or the timer,
    /// as a deferred append always was — only the thread differs.
    fn append_waiting(&self, events: Vec<Envelope>, durable: bool) -> Result<Vec<AppendOutcome>, LogError> {
        self.appendable()?;
        let (ack, rx) = bounded(1);
        let msg = WriterMsg::Append { events, ack, durable };
        if let Err(msg) = self.commit_here(msg) {
            self.send(msg)?;
        }
        AppendTicket::new(rx).wait()
    }

    /// Runs `f` with the writer's state on the caller's thread when the
    /// writer is idle — nothing in flight to it, its state free, not
    /// closed — and tells the writer's timer about a record left
    /// unsynced; `None` otherwise. The one protocol both ways of
    /// committing on the caller's thread keep ([`SledLog::commit_here`],
    /// `append_frames_here`).
    fn on_idle_writer<T>(&self, f: impl FnOnce(&mut Writer) -> T) -> Option<T> {
        if self.shared.in_flight.load(Ordering::Acquire) != 0 {
            return None;
        }
        let mut writer = self.state.try_lock().ok()?;
        // Checked again under the lock: a message sent since is ahead.
        if writer.closed || self.shared.in_flight.load(Ordering::Acquire) != 0 {
            return None;
        }
        let was_dirty = writer.dirty_since.is_some();
        let out = f(&mut writer);
        let unsynced = writer.dirty_since.is_some();
        let tick_taken = std::mem::take(&mut writer.tick_taken);
        drop(writer);
        if unsynced && (!was_dirty || tick_taken) {
            // A record it did not sync (relaxed, or deferred): the writer's
            // timer does. A timer already running (the log was unsynced
            // before) needs no telling — the writer thread reads when the
            // fsync is due each time it wakes — unless the tick that
            // started it was taken off the channel here, by this group,
            // before the writer thread woke for it: then it is sent again.
            self.tick();
        }
        Some(out)
    }

    /// Refuses appends to a log whose tail could not be recovered at open.
    fn appendable(&self) -> Result<(), LogError> {
        match &self.tail_fault {
            Some(fault) => Err(LogError::Inconsistent { seq: Seq(0), what: format!("{fault}; run `engram verify`") }),
            None => Ok(()),
        }
    }

    /// Hands a batch to the writer thread.
    fn queue(&self, events: Vec<Envelope>, durable: bool) -> Result<AppendTicket, LogError> {
        self.appendable()?;
        let (ack, rx) = bounded(1);
        self.send(WriterMsg::Append { events, ack, durable })?;
        Ok(AppendTicket::new(rx))
    }
}

impl EventLog for SledLog {
    fn submit(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        // The writer thread commits it: the caller has more to do before
        // it waits (an import converts its next batch meanwhile).
        self.queue(events, true)
    }

    fn append(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        // The caller waits at once: when the writer is idle, committing
        // here saves the two thread hops (see `commit_here`).
        self.append_waiting(events, true)
    }

    fn submit_deferred(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        self.queue(events, false)
    }

    fn append_deferred(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        // An actor's derivations: the actor waits at once, so the same
        // saving as `append`'s, without the fsync.
        self.append_waiting(events, false)
    }

    fn head(&self) -> Seq {
        Seq(self.shared.head.load(Ordering::Acquire))
    }

    fn read_from(&self, from: Seq) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        if let Err(e) = self.shared.caught_up() {
            return Box::new(std::iter::once(Err(e)));
        }
        Box::new(LogIter::new(self.shared.log.clone(), from).with_head(self.head()))
    }

    fn read_kinds(
        &self,
        from: Seq,
        kinds: &[EventKind],
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        if let Err(e) = self.shared.caught_up() {
            return Box::new(std::iter::once(Err(e)));
        }
        // Records of other kinds are CRC-checked but never decoded.
        Box::new(LogIter::new(self.shared.log.clone(), from).with_head(self.head()).with_kinds(kinds))
    }

    fn subscribe(&self, from: Seq, filter: Filter) -> Result<Subscription, LogError> {
        let backlog: Arc<dyn Backlog> = Arc::new(TreeBacklog(self.shared.clone()));
        Ok(Subscription::new(self.shared.hub.clone(), backlog, from, filter, self.subscriber_buffer))
    }

    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        self.shared.seq_of(id)
    }

    fn flush(&self) -> Result<(), LogError> {
        let (ack, rx) = bounded(1);
        self.send(WriterMsg::Flush { ack })?;
        rx.recv().map_err(|_| LogError::WriterStopped)?
    }
}

impl Drop for SledLog {
    fn drop(&mut self) {
        // Closing the channel ends the writer loop after a final flush.
        self.tx.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        // Followers drain what was committed, then their streams end.
        self.follow.take();
        self.shared.hub.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durability::Durability;
    use crossbeam_channel::Receiver;
    use engram_events::payloads::{SessionEndReason, SessionEnded};
    use engram_events::ActorKind;

    fn event(i: u32) -> Envelope {
        Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
    }

    fn durable(i: u32) -> (WriterMsg, Receiver<Result<Vec<AppendOutcome>, LogError>>) {
        let (ack, rx) = bounded(1);
        (WriterMsg::Append { events: vec![event(i)], ack, durable: true }, rx)
    }

    /// Commits `msg` here once the writer thread lets go of its state: it
    /// takes the lock for a moment as it starts and loops, and a test that
    /// met that moment would fail by chance.
    fn commit_here_when_idle(log: &SledLog, mut msg: WriterMsg) -> bool {
        for _ in 0..1000 {
            match log.commit_here(msg) {
                Ok(()) => return true,
                Err(back) => msg = back,
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        false
    }

    /// An append commits on the caller's thread only when the writer is
    /// idle, under either policy: with a message in flight to the writer
    /// (sent, not committed yet) it would commit ahead of it.
    #[test]
    fn the_caller_commits_only_when_nothing_is_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        let (msg, rx) = durable(1);
        assert!(commit_here_when_idle(&log, msg), "idle: committed here");
        assert_eq!(rx.try_recv().unwrap().unwrap(), vec![AppendOutcome::Appended(Seq(1))], "acknowledged at once");
        log.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        assert!(log.commit_here(durable(2).0).is_err(), "a message in flight goes first");
        log.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        let held = log.state.lock().unwrap();
        assert!(log.commit_here(durable(3).0).is_err(), "the writer busy: its group takes it");
        drop(held);
        drop(log);
        let relaxed = LogConfig { durability: Durability::Relaxed { flush_every_ms: 10 }, ..LogConfig::default() };
        let log = SledLog::open(dir.path(), relaxed).unwrap();
        let (msg, rx) = durable(4);
        assert!(commit_here_when_idle(&log, msg), "relaxed and idle: committed here too");
        assert_eq!(rx.try_recv().unwrap().unwrap(), vec![AppendOutcome::Appended(Seq(2))]);
    }

    /// A deferred append committed on the caller's thread leaves its record
    /// unsynced and ticks the writer thread's timer; the tick is not
    /// counted in flight, so the next caller commits on its own thread
    /// too — and may take the tick off the channel before the writer
    /// thread wakes for it (`Writer::group` drains the channel). The
    /// timer must still make every such record durable on its own:
    /// each round commits two deferred appends back to back, as a turn's
    /// derivations do, then waits for the fsync. It failed one round in
    /// a few before a swallowed tick was sent again.
    #[test]
    fn deferred_appends_committed_here_are_synced_by_the_timer() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        for round in 0..40u32 {
            for i in 0..2 {
                let (ack, rx) = bounded(1);
                let deferred = WriterMsg::Append { events: vec![event(round * 2 + i)], ack, durable: false };
                if let Err(msg) = log.commit_here(deferred) {
                    log.send(msg).unwrap();
                }
                assert!(matches!(rx.recv().unwrap().unwrap()[..], [AppendOutcome::Appended(_)]));
            }
            assert_eq!(log.shared.in_flight.load(Ordering::Acquire), 0, "a tick is never in flight");
            // The writer thread's timer syncs them within DEFERRED_FLUSH;
            // 5 s is the bound of a loaded machine, not an expectation.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while log.state.lock().unwrap().dirty_since.is_some() {
                assert!(
                    std::time::Instant::now() < until,
                    "round {round}: the timer never synced the deferred records"
                );
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}
