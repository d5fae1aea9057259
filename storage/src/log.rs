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
//! Alongside, `<data dir>/log.wal/` holds the write-ahead files ([`wal`]).
//!
//! Appenders hand batches to the writer over a crossbeam channel. The writer
//! takes everything queued (group commit), assigns positions, skips ids
//! already present, writes the group as one record to the write-ahead file,
//! makes it durable according to the [`Durability`] policy (one
//! `fdatasync`), makes it visible (head, pending ids), acknowledges,
//! publishes it to subscribers, and hands it to the applier thread, which
//! writes the records it gathers into sled (two atomic batches: segments,
//! then ids; the index is re-derived for the tail at open if a crash came
//! between them) and runs the checkpoints that retire write-ahead files.
//! Readers of the trees wait for the applier to reach the head.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use engram_events::codec::binary::{self, FrameView};
use engram_events::{Envelope, EventId, EventKind, Seq};

use crate::backend::{AppendOutcome, AppendTicket, EventLog};
use crate::durability::{Durability, Syncer};
use crate::error::LogError;
use crate::follow::{self, FollowServer};
use crate::id_index;
use crate::lock::DataDirLock;
use crate::segment::{self, SegmentBuilder, SEGMENT_TARGET_BYTES};
use crate::subscription::{Backlog, Filter, Hub, Subscription};
use crate::wal::{self, Wal};

/// The log format this build writes and reads.
/// Format 2 added the write-ahead files (`log.wal/`), which an engram of
/// format 1 would not read (it is refused such a log), and keeps the id
/// index in buckets ([`id_index`]). Format 3 keeps one bucket per
/// millisecond, split only where it is crowded, where format 2 split every
/// millisecond 16 ways; an engram of format 2 would not find ids in it.
/// A log of an older format is upgraded at open: its id index is rebuilt
/// from the segments.
pub const LOG_FORMAT: u32 = 3;

/// The `meta` key present while an upgrade rebuilds the id index: a crash
/// in the middle leaves it, and the next open rebuilds again.
const REBUILDING_IDS: &str = "rebuilding_ids";

/// Under the durable policy, how long a deferred append waits for a
/// durable one (or a flush) before the writer flushes it on its own.
pub const DEFERRED_FLUSH: Duration = Duration::from_millis(20);

/// Tuning for [`SledLog`]; the defaults are what engram ships.
#[derive(Clone, Debug)]
pub struct LogConfig {
    /// When appends are acknowledged.
    pub durability: Durability,
    /// Segment size target in bytes.
    pub segment_bytes: usize,
    /// Live buffer per subscriber, in committed batches.
    pub subscriber_buffer: usize,
    /// Most events one group commit takes from the queue.
    pub max_batch_events: usize,
    /// sled's page cache, in bytes. sled's own default (1 GiB) lets a
    /// process grow with the log it writes (an import of a million events
    /// would keep most of them cached); the log is read sequentially
    /// (replay, catch-up) or by id, neither of which needs the whole tree
    /// in memory.
    pub cache_bytes: u64,
}

/// [`LogConfig::cache_bytes`] by default: 64 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            durability: Durability::Durable,
            segment_bytes: SEGMENT_TARGET_BYTES,
            subscriber_buffer: 1024,
            max_batch_events: 16_384,
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

/// Where the writer sends a batch's outcomes.
type Ack = Sender<Result<Vec<AppendOutcome>, LogError>>;

enum WriterMsg {
    /// `durable: false`: acknowledge once committed (see
    /// [`EventLog::submit_deferred`]).
    Append {
        events: Vec<Envelope>,
        ack: Ack,
        durable: bool,
    },
    Flush {
        ack: Sender<Result<(), LogError>>,
    },
    /// Wakes the writer thread to look at its fsync timer (after a caller
    /// committed on its own thread and left records unsynced).
    Tick,
}

struct Shared {
    dir: PathBuf,
    db: sled::Db,
    log: sled::Tree,
    ids: sled::Tree,
    /// The last acknowledged position.
    head: AtomicU64,
    /// The last position sled holds.
    applied: Applied,
    /// Ids acknowledged but not applied to sled yet.
    pending: Mutex<HashMap<EventId, Seq>>,
    /// Tells the applier a reader waits for it.
    hurry: Sender<()>,
    /// Messages sent to the writer and not yet committed: a caller commits
    /// on its own thread only when there are none, so that batches stay in
    /// submission order.
    in_flight: AtomicUsize,
    hub: Arc<Hub>,
}

impl Shared {
    /// Where `id` is: among the pending appends, else in sled's index (an
    /// id leaves the pending ones only once sled has it).
    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        if let Some(&seq) = self.pending.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
            return Ok(Some(seq));
        }
        id_index::get(&self.ids, id)
    }

    /// [`Shared::seq_of`] of many ids at once (the writer's check of a
    /// group commit): the pending ones under one lock, the rest with one
    /// read per index bucket. Returns the ids found.
    fn seq_of_many(&self, ids: &[EventId]) -> Result<HashMap<EventId, Seq>, LogError> {
        let mut found = HashMap::with_capacity(ids.len());
        let mut rest = Vec::with_capacity(ids.len());
        {
            let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            for id in ids {
                match pending.get(id) {
                    Some(&seq) => {
                        found.insert(*id, seq);
                    }
                    None => rest.push(*id),
                }
            }
        }
        id_index::get_many(&self.ids, &rest, &mut found)?;
        Ok(found)
    }

    /// Waits until sled holds every acknowledged event.
    fn caught_up(&self) -> Result<(), LogError> {
        self.applied.wait_for(Seq(self.head.load(Ordering::Acquire)), &self.hurry)
    }
}

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
    /// Opens (creating if needed) the log in `dir`, taking the data-dir lock.
    pub fn open(dir: &Path, config: LogConfig) -> Result<Self, LogError> {
        crate::data_dir::create_private_dir(dir).map_err(|e| LogError::io(dir, e))?;
        crate::data_dir::guard(dir)?;
        let lock = DataDirLock::acquire(dir)?;
        let sled_dir = dir.join("log.sled");
        let db = open_sled(&sled_dir, config.cache_bytes)?;
        // sled has created its files under whatever umask the process has.
        crate::data_dir::guard(dir)?;
        let meta = db.open_tree("meta")?;
        let on_disk = match meta.get("format")? {
            Some(v) => {
                let found = u32::from_be_bytes(v.as_ref().try_into().unwrap_or([0xff; 4]));
                if found > LOG_FORMAT {
                    return Err(LogError::FormatTooNew { path: dir.to_owned(), found, supported: LOG_FORMAT });
                }
                found
            }
            None => {
                meta.insert("format", &LOG_FORMAT.to_be_bytes())?;
                LOG_FORMAT
            }
        };
        let log = db.open_tree("log")?;
        let ids = db.open_tree("ids")?;
        if on_disk < 3 || meta.contains_key(REBUILDING_IDS)? {
            // Format 1 kept one index key per id, format 2 buckets of
            // another layout. The new format is recorded first (an older
            // engram must not read the new layout), with the mark that
            // the rebuild is under way; sled recovers a prefix of its
            // writes, so a crash leaves the mark if it left any of it.
            // A pause of seconds on a long log, once: say why.
            tracing::warn!(
                "{}: upgrading the log from format {on_disk} to {LOG_FORMAT}: rebuilding its id index from the \
                 segments, once (≈ 7 s per million events)",
                dir.display()
            );
            meta.insert(REBUILDING_IDS, &[])?;
            meta.insert("format", &LOG_FORMAT.to_be_bytes())?;
            rebuild_id_index(&log, &ids)?;
            meta.remove(REBUILDING_IDS)?;
        }
        // Rule 6 of the write-ahead log: damage in its files refuses the
        // open, as damage sled would cut at does.
        let wal_dir = dir.join(wal::WAL_DIR);
        let recovered = wal::recover(&wal_dir)?;
        let recovery = recover_head(&log)
            .and_then(|stored| apply_wal(&log, &ids, &recovered, stored))
            .and_then(|head| reindex_tail(&log, &ids).map(|_| head));
        let (head, tail_fault) = match recovery {
            Ok(head) => (head, None),
            Err(e) => {
                tracing::error!("{e}; appends are refused until the log is repaired");
                (Seq(0), Some(e.to_string()))
            }
        };
        let mut syncer = Syncer::new(&sled_dir)?;
        db.flush()?;
        syncer.sync()?;
        // sled now holds every record durably: start a new write-ahead file
        // after the head and drop the old ones (rule 4). A log that cannot
        // take appends keeps its files as they are, for `engram repair`.
        let wal = match &tail_fault {
            Some(_) => None,
            None => {
                let generation = recovered.last_generation.map_or(1, |g| g + 1);
                let wal = Wal::create(&wal_dir, generation, head)?;
                wal::remove_up_to(&wal_dir, generation - 1)?;
                if on_disk != LOG_FORMAT {
                    // From here on an older engram, blind to the
                    // write-ahead files, must not open this log.
                    meta.insert("format", &LOG_FORMAT.to_be_bytes())?;
                    db.flush()?;
                    syncer.sync()?;
                }
                Some(wal)
            }
        };
        let (hurry_tx, hurry_rx) = bounded(1);
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            db,
            log,
            ids,
            head: AtomicU64::new(head.0),
            applied: Applied::new(head),
            pending: Mutex::new(HashMap::new()),
            hurry: hurry_tx,
            in_flight: AtomicUsize::new(0),
            hub: Arc::new(Hub::default()),
        });
        let (tx, rx) = unbounded();
        let state = Arc::new(Mutex::new(Writer::new(
            shared.clone(),
            config.clone(),
            syncer,
            wal,
            wal_dir,
            rx.clone(),
            hurry_rx,
        )?));
        let writer = {
            let state = state.clone();
            std::thread::Builder::new()
                .name("engram-log-writer".into())
                .spawn(move || writer_thread(&state, &rx))
                .map_err(|e| LogError::io(dir, e))?
        };
        let follow = {
            let hub = shared.hub.clone();
            let tree = shared.clone();
            let capacity = config.subscriber_buffer;
            let serve = move |from| {
                let backlog: Arc<dyn Backlog> = Arc::new(TreeBacklog(tree.clone()));
                Some(Subscription::new(hub.clone(), backlog, from, Filter::all(), capacity))
            };
            FollowServer::start(dir, serve)
                .map_err(|e| tracing::warn!("not serving followers on {}: {e}", follow::socket_path(dir).display()))
                .ok()
        };
        Ok(SledLog {
            shared,
            state,
            tx: Some(tx),
            writer: Some(writer),
            subscriber_buffer: config.subscriber_buffer,
            tail_fault,
            follow,
            _lock: lock,
        })
    }

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

    /// The sled tree holding projection `name`'s rows and checkpoint.
    pub fn projection_tree(&self, name: &str) -> Result<sled::Tree, LogError> {
        Ok(self.shared.db.open_tree(format!("projection.{name}"))?)
    }

    /// A sled tree of this data dir's own state, which the log does not
    /// hold and no rebuild recreates (on a shared log: which turns were
    /// spoken to this runtime).
    pub fn device_tree(&self, name: &str) -> Result<sled::Tree, LogError> {
        Ok(self.shared.db.open_tree(format!("device.{name}"))?)
    }

    /// The sled tree of the bounded embedding cache (a memo, not a
    /// projection: it is never rebuilt from the log).
    pub fn cache_tree(&self, name: &str) -> Result<sled::Tree, LogError> {
        Ok(self.shared.db.open_tree(format!("cache.{name}"))?)
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
        let start = self
            .shared
            .log
            .range(..=segment::key(from))
            .next_back()
            .transpose()?
            .map(|(k, _)| k)
            .unwrap_or_else(|| sled::IVec::from(&segment::key(from)));
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

    /// Bytes sled reports for the database (its own accounting).
    pub fn sled_size_on_disk(&self) -> Result<u64, LogError> {
        Ok(self.shared.db.size_on_disk()?)
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

    /// Commits a durable append on the caller's thread when the writer is
    /// idle — nothing in flight to it, its state free — under the durable
    /// policy: a lone appender then pays its fsync and nothing else, not
    /// two thread hops (≈ 10–30 µs of a ≈ 130 µs append here). Otherwise
    /// gives the message back, for the writer thread (group commit: it
    /// takes all the appends that queued meanwhile at once).
    fn commit_here(&self, msg: WriterMsg) -> Result<(), WriterMsg> {
        if self.shared.in_flight.load(Ordering::Acquire) != 0 {
            return Err(msg);
        }
        let Ok(mut writer) = self.state.try_lock() else { return Err(msg) };
        // Checked again under the lock: a message sent since is ahead.
        if writer.closed || writer.relaxed_interval().is_some() || self.shared.in_flight.load(Ordering::Acquire) != 0 {
            return Err(msg);
        }
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        writer.group(msg);
        let unsynced = writer.dirty_since.is_some();
        drop(writer);
        if unsynced {
            // Deferred appends it did not sync: the writer's timer does.
            let _ = self.send(WriterMsg::Tick);
        }
        Ok(())
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
        self.appendable()?;
        // The caller waits at once: when the writer is idle, committing
        // here saves the two thread hops (see `commit_here`).
        let (ack, rx) = bounded(1);
        let msg = WriterMsg::Append { events, ack, durable: true };
        if let Err(msg) = self.commit_here(msg) {
            self.send(msg)?;
        }
        AppendTicket::new(rx).wait()
    }

    fn submit_deferred(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        self.queue(events, false)
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

    fn local(&self) -> &SledLog {
        self
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

/// How long [`SledLog::open`] waits for sled's own file lock.
const SLED_LOCK_WAIT: Duration = Duration::from_secs(3);

/// Opens the sled database. The caller holds the data-dir lock, so no
/// other engram holds sled's file lock; if it is busy, a database closed a
/// moment ago (in this process, or by one that just exited) has not
/// released it yet — its flusher thread winds down — and it is waited for.
/// Opens sled, waiting briefly for its file lock. Anything else sled says
/// at open — or a panic inside it, which damaged files can cause — is
/// [`LogError::Unopenable`], naming `engram repair`.
fn open_sled(dir: &Path, cache_bytes: u64) -> Result<sled::Db, LogError> {
    forget_interrupted_creation(dir).map_err(|e| LogError::io(dir, e))?;
    // sled's recovery would cut the log at a damaged record in what it
    // replays, on disk: refuse first, with the files as they are.
    if let Some(damage) = crate::sled_recovery::find_damage(dir).map_err(|e| LogError::io(dir, e))? {
        return Err(LogError::Unopenable { path: dir.to_owned(), what: damage.to_string() });
    }
    let deadline = Instant::now() + SLED_LOCK_WAIT;
    loop {
        let open = || sled::Config::new().path(dir).mode(sled::Mode::LowSpace).cache_capacity(cache_bytes).open();
        let what = match std::panic::catch_unwind(open) {
            Ok(Ok(db)) => return Ok(db),
            Ok(Err(e)) if e.to_string().contains("could not acquire lock") && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Ok(Err(sled::Error::Io(e))) if !is_damage(&e) => return Err(LogError::io(dir, e)),
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("sled panicked: {}", LogError::panic_text(panic.as_ref())),
        };
        return Err(LogError::Unopenable { path: dir.to_owned(), what });
    }
}

/// sled writes its `conf` at creation in two `write`s (the parameters, then
/// their CRC) and refuses a `conf` a kill cut between them as corrupt. With
/// no `db` bytes yet nothing was ever stored (a log is flushed at open,
/// before its first append), so such leftovers — `conf`, snapshots — are
/// removed and sled creates the database again.
fn forget_interrupted_creation(dir: &Path) -> std::io::Result<()> {
    let db_bytes = match std::fs::metadata(dir.join("db")) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    if db_bytes > 0 {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == "conf" || name.starts_with("snap.") {
            tracing::warn!("{}: left by a creation a crash interrupted; sled creates it again", entry.path().display());
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Whether an I/O error sled reports at open is about the files' content
/// (damage) rather than the file system (permissions, space, a lock).
fn is_damage(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof)
}

/// The last `seq` in the log, from its last segment.
fn recover_head(log: &sled::Tree) -> Result<Seq, LogError> {
    let Some((k, v)) = log.last()? else { return Ok(Seq(0)) };
    let first = segment::seq_of_key(&k)
        .ok_or_else(|| LogError::Inconsistent { seq: Seq(0), what: "bad segment key".to_owned() })?;
    let end = segment::for_each_frame(first, &v, |_, _| Ok(()))?;
    Ok(Seq(end.0 - 1))
}

/// Rule 5 of the write-ahead log: applies every record of `recovered` to
/// sled again (the same keys get the same bytes) and removes what sled
/// holds past the last whole record. `stored` is sled's own head. Returns
/// the log's head.
fn apply_wal(log: &sled::Tree, ids: &sled::Tree, recovered: &wal::Recovered, stored: Seq) -> Result<Seq, LogError> {
    let (Some(base), Some(end)) = (recovered.base, recovered.end) else {
        return Ok(stored); // no write-ahead files yet (a new or format-1 log)
    };
    if stored < base {
        return Err(LogError::Inconsistent {
            seq: stored.next(),
            what: format!(
                "the store ends at seq {stored} but the write-ahead log starts after seq {base}: \
                 the files between are missing"
            ),
        });
    }
    let mut index = Vec::new();
    for (first, bytes) in recovered.records.iter().flatten() {
        segment::for_each_frame(*first, bytes, |seq, frame| {
            let view = frame.view().map_err(|source| LogError::Corrupt { seq, source })?;
            index.push((view.id(), seq));
            Ok(())
        })?;
    }
    let applied = index.len();
    write_to_sled(log, ids, recovered.records.iter().flatten(), index.into_iter())?;
    if applied > 0 && end > stored {
        tracing::info!("applied {} events from the write-ahead log (seq {} to {end})", end.0 - stored.0, stored.next());
    }
    if let Some((path, offset)) = &recovered.torn {
        tracing::warn!(
            "{}: dropped a record cut short at byte {offset} (a write a crash interrupted; never acknowledged)",
            path.display()
        );
    }
    if stored > end {
        let removed = trim_after(log, ids, end)?;
        tracing::warn!(
            "removed {removed} events past seq {end}: sled had written them, but the write-ahead record that \
             carried them was cut short (a power loss), so none was acknowledged as durable"
        );
    }
    Ok(end)
}

/// Removes every segment after `end`, and the ids of their events.
/// Segments never span two group commits, so `end` (a record's last seq)
/// is always a segment boundary.
fn trim_after(log: &sled::Tree, ids: &sled::Tree, end: Seq) -> Result<u64, LogError> {
    let mut segments = sled::Batch::default();
    let mut index = Vec::new();
    for entry in log.range(segment::key(end.next())..) {
        let (key, bytes) = entry?;
        // A frame that does not read has no id to remove.
        readable_ids(&bytes, &mut index);
        segments.remove(key);
    }
    let removed = index.len() as u64;
    // The ids first: an index entry never points past the segments.
    id_index::remove_all(ids, index.into_iter())?;
    log.apply_batch(segments)?;
    Ok(removed)
}

/// The `(id, seq)` of every frame of a segment that reads, skipping the
/// ones that do not: for trimming and re-indexing, which go around damage
/// (`engram verify` names it).
fn readable_ids(segment: &[u8], out: &mut Vec<(EventId, Seq)>) {
    out.extend(binary::frames(segment).filter_map(|f| f.and_then(|f| f.view()).ok()).map(|v| (v.id(), v.seq())));
}

/// Builds the id index again from every record (the upgrade from format
/// 1). Unreadable records are left out: `engram verify` names them.
fn rebuild_id_index(log: &sled::Tree, ids: &sled::Tree) -> Result<(), LogError> {
    ids.clear()?;
    let mut chunk = Vec::new();
    for entry in log.iter() {
        let (_, bytes) = entry?;
        readable_ids(&bytes, &mut chunk);
        if chunk.len() >= 1 << 16 {
            id_index::insert_all(ids, chunk.drain(..))?;
        }
    }
    id_index::insert_all(ids, chunk.into_iter())?;
    tracing::info!("rebuilt the id index in its format-{LOG_FORMAT} layout");
    Ok(())
}

/// Indexes the ids of the last segments if a crash came between a commit's
/// segment batch and its index batch. Walks back from the last segment and
/// stops at the first one whose records are all indexed. Returns the number
/// of ids added.
fn reindex_tail(log: &sled::Tree, ids: &sled::Tree) -> Result<usize, LogError> {
    let mut added = 0;
    for entry in log.iter().rev() {
        let (k, v) = entry?;
        let first = segment::seq_of_key(&k)
            .ok_or_else(|| LogError::Inconsistent { seq: Seq(0), what: "bad segment key".to_owned() })?;
        let mut missing = Vec::new();
        segment::for_each_frame(first, &v, |seq, frame| {
            let env = frame.decode().map_err(|source| LogError::Corrupt { seq, source })?;
            if id_index::get(ids, env.id)?.is_none() {
                missing.push((env.id, seq));
            }
            Ok(())
        })?;
        if missing.is_empty() {
            break;
        }
        added += missing.len();
        id_index::insert_all(ids, missing.into_iter())?;
    }
    if added > 0 {
        tracing::warn!("re-indexed {added} event ids written just before a crash");
    }
    Ok(added)
}

struct Writer {
    shared: Arc<Shared>,
    config: LogConfig,
    /// `None` when the log opened unable to take appends.
    wal: Option<Wal>,
    wal_dir: PathBuf,
    /// Records for the applier, and checkpoints after them.
    apply: Option<Sender<ApplyMsg>>,
    applier: Option<JoinHandle<Syncer>>,
    /// Why appends are refused after a failed write: the write-ahead file
    /// and sled can no longer be trusted to agree until the log is reopened.
    poisoned: Option<String>,
    rx: Receiver<WriterMsg>,
    /// Since when records written under a policy that acknowledged them
    /// before their fsync wait for one.
    dirty_since: Option<Instant>,
    /// Closed: the log is being dropped.
    closed: bool,
}

/// A group commit, written to the write-ahead file, for sled.
struct Record {
    segments: Vec<(Seq, Vec<u8>)>,
    index: Vec<(EventId, Seq)>,
    last: Seq,
}

/// What the writer hands the applier, in order.
enum ApplyMsg {
    /// Apply a record to sled.
    Record(Record),
    /// Make sled durable, then delete the write-ahead files up to this
    /// generation (every record in them came before).
    Checkpoint(u64),
}

/// Records the applier may fall behind the writer by before the writer
/// waits for it: bounds the memory of a relaxed import outrunning sled.
const APPLY_QUEUE: usize = 256;

impl Writer {
    fn new(
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
        })
    }

    /// Acknowledge-before-fsync interval of the relaxed policy.
    fn relaxed_interval(&self) -> Option<Duration> {
        match self.config.durability {
            Durability::Durable => None,
            Durability::Relaxed { flush_every_ms } => Some(Duration::from_millis(flush_every_ms.max(1))),
        }
    }

    /// How long after the first unsynced record the fsync comes on its own:
    /// the relaxed interval, or, for deferred appends under the durable
    /// policy, [`DEFERRED_FLUSH`].
    fn flush_interval(&self) -> Duration {
        self.relaxed_interval().unwrap_or(DEFERRED_FLUSH)
    }

    /// How long the writer thread may sleep before an fsync is due.
    fn next_flush_in(&self) -> Option<Duration> {
        self.dirty_since.map(|since| self.flush_interval().saturating_sub(since.elapsed()))
    }

    /// The fsync that came due while nobody appended.
    fn flush_if_due(&mut self) {
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
    fn group(&mut self, first: WriterMsg) {
        let mut appends = Vec::new();
        let mut flushes = Vec::new();
        let mut queued = 0usize;
        let mut any_durable = false;
        let mut take = |msg: WriterMsg, queued: &mut usize| match msg {
            WriterMsg::Append { events, ack, durable } => {
                *queued += events.len();
                any_durable |= durable;
                appends.push((events, ack));
            }
            WriterMsg::Flush { ack } => flushes.push(ack),
            WriterMsg::Tick => {}
        };
        take(first, &mut queued);
        let mut taken = 1;
        while queued < self.config.max_batch_events {
            match self.rx.try_recv() {
                Ok(msg) => {
                    take(msg, &mut queued);
                    taken += 1;
                }
                Err(_) => break,
            }
        }
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
                // The events written move on to the subscribers (an event
                // marked existing was not written: its seq is another's).
                let mut fresh = Vec::new();
                for (events, ack) in appends.drain(..) {
                    let _ = ack.send(Ok(outcomes_of(&events)));
                    if written {
                        fresh.extend(events.into_iter().filter(|e| e.seq.0 & EXISTING_BIT == 0));
                    }
                }
                if written {
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
    fn make_durable(&mut self) -> Result<(), LogError> {
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
    fn poison(&mut self, e: LogError) -> LogError {
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
    fn commit(
        &mut self,
        appends: &mut [(Vec<Envelope>, Ack)],
        sync_needed: impl FnOnce(bool) -> bool,
    ) -> Result<bool, LogError> {
        if let Some(why) = self.poisoned.clone().or_else(|| self.shared.applied.failure()) {
            return Err(LogError::Transaction(why));
        }
        let prepared = self.prepare(appends)?;
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
    fn prepare(&self, appends: &mut [(Vec<Envelope>, Ack)]) -> Result<Option<Record>, LogError> {
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

    /// On close: everything durable in sled, and the write-ahead files
    /// replaced by an empty one, so the next open has nothing to re-apply.
    fn close(&mut self) {
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

/// Writes segments, then their ids, into sled as two atomic batches.
/// sled recovers its log as batches, so after a crash the index can only
/// lag the segments, never lead them (`reindex_tail` repairs the lag), and
/// no segment is ever half there. (sled's recovery of plain inserts, cut by
/// a crash among its concurrently written buffers, can leave its page table
/// with a hole it then panics on; its batches are recovered whole or not
/// at all.)
fn write_to_sled<'a>(
    log: &sled::Tree,
    ids: &sled::Tree,
    segments: impl Iterator<Item = &'a (Seq, Vec<u8>)>,
    index: impl Iterator<Item = (EventId, Seq)>,
) -> Result<(), LogError> {
    let mut log_batch = sled::Batch::default();
    for (first, bytes) in segments {
        log_batch.insert(&segment::key(*first), bytes.as_slice());
    }
    log.apply_batch(log_batch)?;
    id_index::insert_all(ids, index)
}

/// The writer thread: commits what is sent to it, and the fsyncs that come
/// due under the relaxed policy or after deferred appends; closes the
/// writer when the log is dropped.
fn writer_thread(state: &Mutex<Writer>, rx: &Receiver<WriterMsg>) {
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
        if let Some(msg) = msg {
            writer.group(msg);
        }
    }
    lock().close();
}

/// sled flushed and fsynced: after this, write-ahead files holding only
/// records applied before it may go (rule 4).
fn make_sled_durable(db: &sled::Db, syncer: &mut Syncer) -> Result<(), LogError> {
    db.flush()?;
    syncer.sync()
}

/// Most records the applier writes to sled in one pair of batches.
const APPLY_RECORDS: usize = 1024;

/// How long the applier gathers records before writing them to sled,
/// unless a reader is waiting. Measured with one durable appender: applying
/// each record as it came put sled's IO-buffer writes between consecutive
/// write-ahead fsyncs and halved the rate.
const APPLY_DELAY: Duration = Duration::from_millis(10);

/// The applier thread: applies the writer's records to sled, all those
/// that come within [`APPLY_DELAY`] of the first in one pair of batches —
/// sled's atomic batch costs two IO-buffer rolls (`pwrite` +
/// `sync_file_range`) whatever its size, and here they are paid off the
/// appenders' path, rarely, so their I/O does not queue up with the
/// write-ahead fsyncs — at once when a reader is waiting (`hurry`); and
/// runs the checkpoints
/// (sled flushed and fsynced, then the write-ahead files up to a
/// generation deleted). A failed checkpoint leaves the files for the next
/// one, or the next open; a failed apply stops appends (the files keep
/// every event).
fn applier(
    shared: &Shared,
    mut syncer: Syncer,
    wal_dir: &Path,
    rx: &Receiver<ApplyMsg>,
    hurry: &Receiver<()>,
) -> Syncer {
    // A reader is waiting for what is queued: apply it without delay.
    let mut hurried = false;
    loop {
        let first = crossbeam_channel::select! {
            recv(rx) -> msg => match msg {
                Ok(msg) => msg,
                Err(_) => break,
            },
            recv(hurry) -> _ => {
                hurried = true;
                continue;
            }
        };
        let mut records = Vec::new();
        let mut checkpoint = None;
        match first {
            ApplyMsg::Record(r) => records.push(r),
            ApplyMsg::Checkpoint(generation) => checkpoint = Some(generation),
        }
        // Gather for APPLY_DELAY — asleep, not woken by each record: a
        // wake-up per record costs the appender on two cores — unless a
        // reader (or the writer closing) hurries it.
        if checkpoint.is_none() && !hurried {
            crossbeam_channel::select! {
                recv(hurry) -> _ => {}
                default(APPLY_DELAY) => {}
            }
        }
        // Then everything queued, up to a checkpoint (which must follow
        // the records before it, and no later one).
        while checkpoint.is_none() && records.len() < APPLY_RECORDS {
            match rx.try_recv() {
                Ok(ApplyMsg::Record(r)) => records.push(r),
                Ok(ApplyMsg::Checkpoint(generation)) => checkpoint = Some(generation),
                Err(_) => break,
            }
        }
        hurried = false;
        if shared.applied.failure().is_some() {
            continue;
        }
        if let Some(last) = records.last().map(|r| r.last) {
            let segments = records.iter().flat_map(|r| r.segments.iter());
            let index = records.iter().flat_map(|r| r.index.iter().copied());
            match write_to_sled(&shared.log, &shared.ids, segments, index) {
                Ok(()) => {
                    let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
                    for (id, _) in records.iter().flat_map(|r| r.index.iter()) {
                        pending.remove(id);
                    }
                    drop(pending);
                    shared.applied.advance(last);
                }
                Err(e) => {
                    let why = format!("applying appended events to sled failed: {e}; reopen the log");
                    tracing::error!("{why}");
                    shared.applied.fail(why);
                    continue;
                }
            }
        }
        if let Some(generation) = checkpoint {
            if let Err(e) =
                make_sled_durable(&shared.db, &mut syncer).and_then(|_| wal::remove_up_to(wal_dir, generation))
            {
                tracing::error!("checkpoint failed (the write-ahead files stay until one succeeds): {e}");
            }
        }
    }
    syncer
}

/// How far sled has caught up with the acknowledged head: readers of the
/// trees wait for it, so an acknowledged append is read back at once.
struct Applied {
    state: Mutex<(Seq, Option<String>)>,
    changed: Condvar,
}

impl Applied {
    fn new(head: Seq) -> Self {
        Applied { state: Mutex::new((head, None)), changed: Condvar::new() }
    }

    /// Waits until sled holds everything up to `seq`, hurrying the
    /// applier (through `hurry`) if it is not there yet.
    fn wait_for(&self, seq: Seq, hurry: &Sender<()>) -> Result<(), LogError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.0 < seq {
            let _ = hurry.try_send(());
        }
        while state.0 < seq && state.1.is_none() {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        match &state.1 {
            Some(why) => Err(LogError::Transaction(why.clone())),
            None => Ok(()),
        }
    }

    fn advance(&self, seq: Seq) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = seq;
        self.changed.notify_all();
    }

    fn fail(&self, why: String) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(why);
        self.changed.notify_all();
    }

    fn failure(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }
}

/// High bit marking an event the writer found already in the log (its seq is
/// the existing position). Positions never come near 2^63.
const EXISTING_BIT: u64 = 1 << 63;

fn outcomes_of(events: &[Envelope]) -> Vec<AppendOutcome> {
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

/// Reads envelopes from the `log` tree in order, from any position,
/// decoding one frame per step straight out of the segment (no buffering).
///
/// Damage costs the damaged records, not the rest: a frame that fails its
/// CRC (or whose header no longer frames it) yields one
/// [`LogError::Lost`] naming the unreadable seqs, and reading goes on at
/// the next frame that checks out — found by scanning the segment for a
/// frame whose CRC matches (a false match has odds of 2⁻³²), or at the
/// next segment. A segment missing between two others is reported the same
/// way. Only an error of sled itself ends the iteration.
pub struct LogIter {
    segments: sled::Iter,
    from: Seq,
    /// Kind codes to decode; other records are checked but not decoded.
    kinds: Option<Arc<HashSet<u16>>>,
    /// The segment being read, the offset of its next frame, and that
    /// frame's expected seq.
    current: Option<(sled::IVec, usize, Seq)>,
    /// The seq the next segment should start at (`None` before the first).
    next_segment: Option<Seq>,
    /// The first seq of a damaged run whose end is not known yet, and what
    /// was wrong with it.
    lost: Option<(Seq, String)>,
    /// The log's head when reading began, if known: where a damaged run at
    /// the very end stops.
    head: Option<Seq>,
    failed: bool,
}

/// What one step of a [`LogIter`] found.
#[allow(clippy::large_enum_variant, reason = "unpacked at once; boxing would allocate per event replayed")]
enum Step {
    /// A wanted envelope.
    Event(Envelope),
    /// Unreadable records.
    Lost(LogError),
    /// The end.
    End,
}

impl LogIter {
    fn new(log: sled::Tree, from: Seq) -> Self {
        let from = Seq(from.0.max(1));
        // Start at the segment containing `from`: the last key <= from.
        let start = log
            .range(..=segment::key(from))
            .next_back()
            .and_then(|r| r.ok())
            .map(|(k, _)| k)
            .unwrap_or_else(|| sled::IVec::from(&segment::key(from)));
        LogIter {
            segments: log.range(start..),
            from,
            kinds: None,
            current: None,
            next_segment: None,
            lost: None,
            head: None,
            failed: false,
        }
    }

    /// Every record of `log`, for [`crate::repair`] (which reads a log it
    /// has not opened as a [`SledLog`]).
    pub(crate) fn for_repair(log: sled::Tree) -> Self {
        LogIter::new(log, Seq::FIRST)
    }

    fn with_head(mut self, head: Seq) -> Self {
        self.head = Some(head);
        self
    }

    fn with_kinds(mut self, kinds: &[EventKind]) -> Self {
        self.kinds = Some(Arc::new(kinds.iter().map(|k| k.code()).collect()));
        self
    }

    /// A run of lost records `first..next`, if it has any at or after `from`.
    fn lost_until(&self, first: Seq, what: String, next: Seq) -> Option<LogError> {
        let first = first.max(self.from);
        (first < next).then(|| LogError::Lost { first, last: Seq(next.0 - 1), what })
    }

    /// The next wanted envelope or run of lost records.
    fn step(&mut self) -> Result<Step, LogError> {
        loop {
            let Some((bytes, offset, expected)) = &mut self.current else {
                let Some(entry) = self.segments.next() else {
                    // Damage at the very end: its extent is unknown past the
                    // last segment, so it is named from its first seq on.
                    return Ok(match self.lost.take() {
                        Some((first, what)) => {
                            let last = self.head.unwrap_or(first).max(first);
                            self.lost_until(first, what, last.next()).map_or(Step::End, Step::Lost)
                        }
                        None => Step::End,
                    });
                };
                let (k, v) = entry?;
                let first = segment::seq_of_key(&k)
                    .ok_or_else(|| LogError::Inconsistent { seq: self.from, what: "bad segment key".to_owned() })?;
                let expected_first = self.next_segment.replace(first);
                self.current = (!v.is_empty()).then_some((v, 0, first));
                // A damaged run that ended with its segment, or a segment
                // missing between two others.
                let gap = match (self.lost.take(), expected_first) {
                    (Some((from, what)), _) => self.lost_until(from, what, first),
                    (None, Some(want)) if want < first => {
                        self.lost_until(want, "no segment holds them".to_owned(), first)
                    }
                    _ => None,
                };
                if let Some(e) = gap {
                    return Ok(Step::Lost(e));
                }
                continue;
            };
            if *offset >= bytes.len() {
                self.next_segment = Some(*expected);
                self.current = None;
                continue;
            }
            let seq = *expected;
            let (frame, rest) = match binary::split_frame(&bytes[*offset..]) {
                Ok(split) => split,
                Err(source) => {
                    // Resynchronise on the next frame that checks out.
                    let what = source.to_string();
                    let found = (*offset + 1..bytes.len()).find_map(|p| {
                        let (frame, _) = binary::split_frame(&bytes[p..]).ok()?;
                        frame.seq().ok().filter(|s| *s > seq).map(|s| (p, s))
                    });
                    match found {
                        Some((p, next)) => {
                            *offset = p;
                            *expected = next;
                            if let Some(e) = self.lost_until(seq, what, next) {
                                return Ok(Step::Lost(e));
                            }
                        }
                        None => {
                            // The rest of the segment is lost; the next
                            // segment's first seq says how much.
                            self.lost = Some((seq, what));
                            self.current = None;
                            self.next_segment = None;
                        }
                    }
                    continue;
                }
            };
            *offset = bytes.len() - rest.len();
            *expected = seq.next();
            let wanted = seq >= self.from && self.kinds.as_ref().is_none_or(|k| k.contains(&frame.kind_code));
            if wanted {
                // A frame whose CRC holds but that does not decode costs
                // itself only: its boundaries are sound. Its header is
                // validated once, by the decode, which also gives the seq.
                let env = match frame.decode() {
                    Ok(env) => env,
                    Err(source) => return Ok(Step::Lost(LogError::Corrupt { seq, source })),
                };
                if env.seq != seq {
                    return Err(misplaced(env.seq, seq));
                }
                return Ok(Step::Event(env));
            }
            // Skipped by kind: its header alone is read, for the seq.
            let found = frame.seq().map_err(|source| LogError::Corrupt { seq, source })?;
            if found != seq {
                return Err(misplaced(found, seq));
            }
        }
    }
}

fn misplaced(found: Seq, expected: Seq) -> LogError {
    LogError::Inconsistent { seq: expected, what: format!("record carries seq {found}, expected {expected}") }
}

impl Iterator for LogIter {
    type Item = Result<Envelope, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(Step::Event(env)) => Some(Ok(env)),
            Ok(Step::Lost(e)) => Some(Err(e)),
            Ok(Step::End) => None,
            Err(e) => {
                // sled's own errors, and a record that checks out but is
                // out of place: nothing after it can be trusted.
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// A subscription's backlog: the trees, once sled holds everything
/// acknowledged (events published before the subscriber registered must
/// come from here).
struct TreeBacklog(Arc<Shared>);

impl Backlog for TreeBacklog {
    fn read_chunk(&self, from: Seq, max: usize, out: &mut Vec<Envelope>) -> Result<(), LogError> {
        self.0.caught_up()?;
        for env in LogIter::new(self.0.log.clone(), from).take(max) {
            out.push(env?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::{SessionEndReason, SessionEnded};
    use engram_events::ActorKind;

    fn event(i: u32) -> Envelope {
        Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
    }

    fn durable(i: u32) -> (WriterMsg, Receiver<Result<Vec<AppendOutcome>, LogError>>) {
        let (ack, rx) = bounded(1);
        (WriterMsg::Append { events: vec![event(i)], ack, durable: true }, rx)
    }

    /// A durable append commits on the caller's thread only when the writer
    /// is idle under the durable policy: with a message in flight to the
    /// writer (sent, not committed yet) it would commit ahead of it.
    #[test]
    fn the_caller_commits_only_when_nothing_is_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        let (msg, rx) = durable(1);
        assert!(log.commit_here(msg).is_ok(), "idle: committed here");
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
        assert!(log.commit_here(durable(4).0).is_err(), "relaxed: the writer thread pipelines");
    }
}
