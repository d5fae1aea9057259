//! The sled event log: one writer thread, group commit, segments, an id
//! index, and reads and subscriptions from any `seq`.
//!
//! Layout of the sled database (`<data dir>/log.sled`):
//!
//! | tree   | key                    | value                                   |
//! |--------|------------------------|-----------------------------------------|
//! | `log`  | first `seq` (u64 BE)   | a segment: frames of consecutive events |
//! | `ids`  | event id (ULID, 16 B)  | its `seq` (u64 BE)                      |
//! | `meta` | `format`               | log format version (u32 BE)             |
//!
//! Appenders hand batches to the writer over a crossbeam channel. The writer
//! takes everything queued (group commit), assigns positions, skips ids
//! already present, writes the segments and then the index entries (two
//! atomic sled batches; the index is re-derived for the tail at open if a
//! crash came between them), makes them durable according to the [`Durability`] policy,
//! acknowledges, and only then publishes them to subscribers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use engram_events::codec::binary::{self, FrameView};
use engram_events::{Envelope, EventId, EventKind, Seq};

use crate::backend::{AppendOutcome, AppendTicket, EventLog};
use crate::durability::{Durability, Syncer};
use crate::error::LogError;
use crate::follow::{self, FollowServer};
use crate::lock::DataDirLock;
use crate::segment::{self, SegmentBuilder, SEGMENT_TARGET_BYTES};
use crate::subscription::{Backlog, Filter, Hub, Subscription};

/// The log format this build writes and reads.
pub const LOG_FORMAT: u32 = 1;

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
}

struct Shared {
    dir: PathBuf,
    db: sled::Db,
    log: sled::Tree,
    ids: sled::Tree,
    head: AtomicU64,
    hub: Arc<Hub>,
}

/// The embedded event log on sled. Cheap to share behind an `Arc`; dropping
/// the last handle stops the writer after it has flushed.
pub struct SledLog {
    shared: Arc<Shared>,
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
        match meta.get("format")? {
            Some(v) => {
                let found = u32::from_be_bytes(v.as_ref().try_into().unwrap_or([0xff; 4]));
                if found > LOG_FORMAT {
                    return Err(LogError::FormatTooNew { path: dir.to_owned(), found, supported: LOG_FORMAT });
                }
            }
            None => {
                meta.insert("format", &LOG_FORMAT.to_be_bytes())?;
            }
        }
        let log = db.open_tree("log")?;
        let ids = db.open_tree("ids")?;
        let (head, tail_fault) = match recover_head(&log).and_then(|head| reindex_tail(&log, &ids).map(|_| head)) {
            Ok(head) => (head, None),
            Err(e) => {
                tracing::error!("{e}; appends are refused until the log is repaired");
                (Seq(0), Some(e.to_string()))
            }
        };
        let mut syncer = Syncer::new(&sled_dir)?;
        db.flush()?;
        syncer.sync()?;
        let shared = Arc::new(Shared {
            dir: dir.to_owned(),
            db,
            log,
            ids,
            head: AtomicU64::new(head.0),
            hub: Arc::new(Hub::default()),
        });
        let (tx, rx) = unbounded();
        let writer = {
            let shared = shared.clone();
            let config = config.clone();
            std::thread::Builder::new()
                .name("engram-log-writer".into())
                .spawn(move || Writer { shared, config, syncer, rx }.run())
                .map_err(|e| LogError::io(dir, e))?
        };
        let follow = {
            let hub = shared.hub.clone();
            let tree = shared.log.clone();
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
        self.shared.log.range(segment::key(from)..).map(|r| {
            let (k, v) = r?;
            let seq = segment::seq_of_key(&k).ok_or_else(|| LogError::Inconsistent {
                seq: Seq(0),
                what: format!("segment key of {} bytes", k.len()),
            })?;
            Ok((seq, v))
        })
    }

    /// The sled tree holding projection `name`'s rows and checkpoint.
    pub fn projection_tree(&self, name: &str) -> Result<sled::Tree, LogError> {
        Ok(self.shared.db.open_tree(format!("projection.{name}"))?)
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
    pub fn indexed_ids(&self) -> usize {
        self.shared.ids.len()
    }

    /// The `seq` the id index records for `id`.
    pub fn indexed_seq(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        seq_of(&self.shared.ids, id)
    }

    /// Bytes sled reports for the database (its own accounting).
    pub fn sled_size_on_disk(&self) -> Result<u64, LogError> {
        Ok(self.shared.db.size_on_disk()?)
    }

    fn sender(&self) -> Result<&Sender<WriterMsg>, LogError> {
        self.tx.as_ref().ok_or(LogError::WriterStopped)
    }
}

impl EventLog for SledLog {
    fn submit(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        if let Some(fault) = &self.tail_fault {
            return Err(LogError::Inconsistent { seq: Seq(0), what: format!("{fault}; run `engram verify`") });
        }
        let (ack, rx) = bounded(1);
        self.sender()?.send(WriterMsg::Append { events, ack, durable: true }).map_err(|_| LogError::WriterStopped)?;
        Ok(AppendTicket::new(rx))
    }

    fn submit_deferred(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        if let Some(fault) = &self.tail_fault {
            return Err(LogError::Inconsistent { seq: Seq(0), what: format!("{fault}; run `engram verify`") });
        }
        let (ack, rx) = bounded(1);
        self.sender()?.send(WriterMsg::Append { events, ack, durable: false }).map_err(|_| LogError::WriterStopped)?;
        Ok(AppendTicket::new(rx))
    }

    fn head(&self) -> Seq {
        Seq(self.shared.head.load(Ordering::Acquire))
    }

    fn read_from(&self, from: Seq) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        Box::new(LogIter::new(self.shared.log.clone(), from).with_head(self.head()))
    }

    fn read_kinds(
        &self,
        from: Seq,
        kinds: &[EventKind],
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        // Records of other kinds are CRC-checked but never decoded.
        Box::new(LogIter::new(self.shared.log.clone(), from).with_head(self.head()).with_kinds(kinds))
    }

    fn subscribe(&self, from: Seq, filter: Filter) -> Result<Subscription, LogError> {
        let backlog: Arc<dyn Backlog> = Arc::new(TreeBacklog(self.shared.log.clone()));
        Ok(Subscription::new(self.shared.hub.clone(), backlog, from, filter, self.subscriber_buffer))
    }

    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        seq_of(&self.shared.ids, id)
    }

    fn flush(&self) -> Result<(), LogError> {
        let (ack, rx) = bounded(1);
        self.sender()?.send(WriterMsg::Flush { ack }).map_err(|_| LogError::WriterStopped)?;
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

/// Whether an I/O error sled reports at open is about the files' content
/// (damage) rather than the file system (permissions, space, a lock).
fn is_damage(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof)
}

fn seq_of(ids: &sled::Tree, id: EventId) -> Result<Option<Seq>, LogError> {
    Ok(ids.get(id.0 .0.to_be_bytes())?.map(|v| Seq(u64::from_be_bytes(v.as_ref().try_into().unwrap_or([0; 8])))))
}

/// The last `seq` in the log, from its last segment.
fn recover_head(log: &sled::Tree) -> Result<Seq, LogError> {
    let Some((k, v)) = log.last()? else { return Ok(Seq(0)) };
    let first = segment::seq_of_key(&k)
        .ok_or_else(|| LogError::Inconsistent { seq: Seq(0), what: "bad segment key".to_owned() })?;
    let end = segment::for_each_frame(first, &v, |_, _| Ok(()))?;
    Ok(Seq(end.0 - 1))
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
            if seq_of(ids, env.id)?.is_none() {
                missing.push((env.id.0 .0.to_be_bytes(), seq.0.to_be_bytes()));
            }
            Ok(())
        })?;
        if missing.is_empty() {
            break;
        }
        added += missing.len();
        let mut batch = sled::Batch::default();
        for (id, seq) in missing {
            batch.insert(&id, &seq);
        }
        ids.apply_batch(batch)?;
    }
    if added > 0 {
        tracing::warn!("re-indexed {added} event ids written just before a crash");
    }
    Ok(added)
}

struct Writer {
    shared: Arc<Shared>,
    config: LogConfig,
    syncer: Syncer,
    rx: Receiver<WriterMsg>,
}

impl Writer {
    fn run(mut self) {
        let relaxed_interval = match self.config.durability {
            Durability::Durable => None,
            Durability::Relaxed { flush_every_ms } => Some(Duration::from_millis(flush_every_ms.max(1))),
        };
        // Deferred appends under the durable policy are flushed by the next
        // durable one, or after this long.
        let flush_interval = Some(relaxed_interval.unwrap_or(DEFERRED_FLUSH));
        let mut dirty_since: Option<Instant> = None;
        loop {
            let first = match (flush_interval, dirty_since) {
                (Some(interval), Some(since)) => {
                    let wait = interval.saturating_sub(since.elapsed());
                    match self.rx.recv_timeout(wait) {
                        Ok(msg) => Some(msg),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                _ => match self.rx.recv() {
                    Ok(msg) => Some(msg),
                    Err(_) => break,
                },
            };
            if let (Some(interval), Some(since)) = (flush_interval, dirty_since) {
                if since.elapsed() >= interval {
                    if let Err(e) = self.make_durable() {
                        tracing::error!("periodic flush failed: {e}");
                    }
                    dirty_since = None;
                }
            }
            let Some(first) = first else { continue };
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
            };
            take(first, &mut queued);
            while queued < self.config.max_batch_events {
                match self.rx.try_recv() {
                    Ok(msg) => take(msg, &mut queued),
                    Err(_) => break,
                }
            }
            let committed = self.commit(&mut appends);
            let durable = match (&committed, relaxed_interval) {
                // A flush also makes every deferred append before it durable
                // (and a durable append of events already present, deferred
                // a moment ago, must wait for it too).
                (Ok(batch), None) if any_durable && (batch.is_some() || dirty_since.is_some()) => {
                    dirty_since = None;
                    self.make_durable()
                }
                (Ok(Some(_)), _) => {
                    dirty_since.get_or_insert_with(Instant::now);
                    Ok(())
                }
                _ => Ok(()),
            };
            let flush_result = if flushes.is_empty() {
                Ok(())
            } else {
                dirty_since = None;
                self.make_durable()
            };
            match (committed, durable) {
                (Ok(batch), Ok(())) => {
                    for (events, ack) in appends.drain(..) {
                        let _ = ack.send(Ok(outcomes_of(&events)));
                    }
                    if let Some(batch) = batch {
                        self.shared.hub.publish(batch);
                    }
                }
                (Err(e), _) | (Ok(_), Err(e)) => {
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
        }
        if let Err(e) = self.make_durable() {
            tracing::error!("final flush failed: {e}");
        }
    }

    fn make_durable(&mut self) -> Result<(), LogError> {
        self.shared.db.flush()?;
        self.syncer.sync()
    }

    /// Assigns positions, writes segments and index entries atomically.
    /// Each request's events are replaced by their outcome-carrying copies;
    /// returns the newly appended envelopes for subscribers.
    fn commit(&mut self, appends: &mut [(Vec<Envelope>, Ack)]) -> Result<Option<Arc<[Envelope]>>, LogError> {
        let head = Seq(self.shared.head.load(Ordering::Acquire));
        let mut next = head.next();
        let mut in_batch: HashMap<EventId, Seq> = HashMap::new();
        let mut builder = SegmentBuilder::new(self.config.segment_bytes);
        let mut index: Vec<([u8; 16], [u8; 8])> = Vec::new();
        let mut fresh = Vec::new();
        for (events, _) in appends.iter_mut() {
            for env in events.iter_mut() {
                let existing = match in_batch.get(&env.id) {
                    Some(&seq) => Some(seq),
                    None => seq_of(&self.shared.ids, env.id)?,
                };
                match existing {
                    Some(seq) => {
                        // Marked as existing: seq set, but not re-appended.
                        env.seq = Seq(seq.0 | EXISTING_BIT);
                    }
                    None => {
                        env.seq = next;
                        in_batch.insert(env.id, next);
                        builder.push(env);
                        index.push((env.id.0 .0.to_be_bytes(), next.0.to_be_bytes()));
                        fresh.push(env.clone());
                        next = next.next();
                    }
                }
            }
        }
        if fresh.is_empty() {
            return Ok(None);
        }
        let segments = builder.finish();
        // Two atomic batches, segments first: sled recovers a prefix of its
        // (single, ordered) log, so after a crash the index can only lag the
        // segments, never lead them; `reindex_tail` repairs the lag at open.
        // One transaction over both trees would make sled roll its IO
        // buffer twice per commit, halving durable append throughput.
        let mut log_batch = sled::Batch::default();
        for (first, bytes) in &segments {
            log_batch.insert(&segment::key(*first), bytes.as_slice());
        }
        self.shared.log.apply_batch(log_batch)?;
        let mut id_batch = sled::Batch::default();
        for (id, seq) in &index {
            id_batch.insert(id, seq);
        }
        self.shared.ids.apply_batch(id_batch)?;
        self.shared.head.store(next.0 - 1, Ordering::Release);
        Ok(Some(fresh.into()))
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
            let found = frame.seq().map_err(|source| LogError::Corrupt { seq, source })?;
            if found != seq {
                return Err(misplaced(found, seq));
            }
            if wanted {
                // A frame whose CRC holds but that does not decode costs
                // itself only: its boundaries are sound.
                let env = match frame.decode() {
                    Ok(env) => env,
                    Err(source) => return Ok(Step::Lost(LogError::Corrupt { seq, source })),
                };
                if env.seq != seq {
                    return Err(misplaced(env.seq, seq));
                }
                return Ok(Step::Event(env));
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

struct TreeBacklog(sled::Tree);

impl Backlog for TreeBacklog {
    fn read_chunk(&self, from: Seq, max: usize, out: &mut Vec<Envelope>) -> Result<(), LogError> {
        for env in LogIter::new(self.0.clone(), from).take(max) {
            out.push(env?);
        }
        Ok(())
    }
}
