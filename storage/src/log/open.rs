//! Opening the sled log: the format check and upgrade, recovery of the
//! head from sled and the write-ahead files, and the threads it starts.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded};
use engram_events::codec::binary;
use engram_events::{EventId, Seq};

use super::applier::write_to_sled;
use super::iter::TreeBacklog;
use super::shared::{Applied, LogConfig, Shared};
use super::writer::{writer_thread, Writer};
use super::SledLog;
use crate::durability::Syncer;
use crate::error::LogError;
use crate::follow::{self, FollowServer};
use crate::id_index;
use crate::local_db::LocalDb;
use crate::lock::DataDirLock;
use crate::subscription::{Backlog, Filter, Hub, Subscription};
use crate::wal::Wal;
use crate::{segment, wal};

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
pub(super) const REBUILDING_IDS: &str = "rebuilding_ids";

impl SledLog {
    /// Opens (creating if needed) the log in `dir`, taking the data-dir lock.
    pub fn open(dir: &Path, config: LogConfig) -> Result<Self, LogError> {
        // The log of a data dir whose repair was interrupted is aside, not
        // here: opening one here would create a new, empty log in its
        // place (and a second repair would salvage that one).
        if crate::data_dir::repair_pending(dir) {
            return Err(LogError::RepairInterrupted { dir: dir.to_owned() });
        }
        crate::data_dir::create_private_dir(dir).map_err(|e| LogError::io(dir, e))?;
        crate::data_dir::guard(dir)?;
        let lock = DataDirLock::acquire(dir)?;
        let sled_dir = dir.join("log.sled");
        let db = open_sled(&sled_dir, config.cache_bytes)?;
        // sled has created its files under whatever umask the process has.
        crate::data_dir::guard(dir)?;
        let meta = db.open_tree("meta")?;
        let on_disk = stored_format(&meta, dir)?;
        let log = db.open_tree("log")?;
        let ids = db.open_tree("ids")?;
        upgrade_id_index(&meta, &log, &ids, on_disk, dir)?;
        // Rule 6 of the write-ahead log: damage in its files refuses the
        // open, as damage sled would cut at does.
        let wal_dir = dir.join(crate::data_dir::WAL_DIR);
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
            local: LocalDb::new(db.clone(), dir.to_owned()),
            db,
            log,
            ids,
            head: AtomicU64::new(head.0),
            applied: Applied::new(head),
            pending: Mutex::new(Default::default()),
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
        let follow =
            if config.serve_followers { serve_followers(dir, &shared, config.subscriber_buffer) } else { None };
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
}

/// The format `meta` records (recording this build's in a new log), or
/// [`LogError::FormatTooNew`].
fn stored_format(meta: &sled::Tree, dir: &Path) -> Result<u32, LogError> {
    Ok(match meta.get("format")? {
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
    })
}

/// Rebuilds the id index from the segments when the log is of an older
/// format, or when a rebuild was interrupted.
fn upgrade_id_index(
    meta: &sled::Tree,
    log: &sled::Tree,
    ids: &sled::Tree,
    on_disk: u32,
    dir: &Path,
) -> Result<(), LogError> {
    if on_disk >= 3 && !meta.contains_key(REBUILDING_IDS)? {
        return Ok(());
    }
    // Format 1 kept one index key per id, format 2 buckets of another
    // layout. The new format is recorded first (an older engram must not
    // read the new layout), with the mark that the rebuild is under way;
    // sled recovers a prefix of its writes, so a crash leaves the mark if
    // it left any of it. A pause of seconds on a long log, once: say why.
    tracing::warn!(
        "{}: upgrading the log from format {on_disk} to {LOG_FORMAT}: rebuilding its id index from the \
         segments, once (≈ 7 s per million events)",
        dir.display()
    );
    meta.insert(REBUILDING_IDS, &[])?;
    meta.insert("format", &LOG_FORMAT.to_be_bytes())?;
    rebuild_id_index(log, ids)?;
    meta.remove(REBUILDING_IDS)?;
    Ok(())
}

/// Serves the log to followers in other processes on the data dir's
/// socket ([`LogConfig::serve_followers`]); a socket that cannot be served
/// is a warning, not a failure to open.
fn serve_followers(dir: &Path, shared: &Arc<Shared>, capacity: usize) -> Option<FollowServer> {
    let hub = shared.hub.clone();
    let tree = shared.clone();
    let serve = move |from| {
        let backlog: Arc<dyn Backlog> = Arc::new(TreeBacklog(tree.clone()));
        Some(Subscription::new(hub.clone(), backlog, from, Filter::all(), capacity))
    };
    FollowServer::start(dir, serve)
        .map_err(|e| tracing::warn!("not serving followers on {}: {e}", follow::socket_path(dir).display()))
        .ok()
}

/// How long [`SledLog::open`] waits for sled's own file lock.
pub(super) const SLED_LOCK_WAIT: Duration = Duration::from_secs(3);

/// Opens the sled database. The caller holds the data-dir lock, so no
/// other engram holds sled's file lock; if it is busy, a database closed a
/// moment ago (in this process, or by one that just exited) has not
/// released it yet — its threads wind down, maybe still writing — and it
/// is waited for, before the files are walked for damage. Anything else
/// sled says at open — or a panic inside it, which damaged files can
/// cause — is [`LogError::Unopenable`], naming `engram repair`.
pub(super) fn open_sled(dir: &Path, cache_bytes: u64) -> Result<sled::Db, LogError> {
    forget_interrupted_creation(dir)?;
    remove_unfinished_snapshots(dir).map_err(|e| LogError::io(dir, e))?;
    let deadline = Instant::now() + SLED_LOCK_WAIT;
    // A database closed a moment ago may still be writing (sled's last
    // segment writes and snapshot run on its own threads, which hold the
    // `db` file's lock until they end): its files are walked once it is
    // quiet, or a write in flight reads as damage.
    wait_for_sled_lock(dir, deadline);
    // sled's recovery would cut the log at a damaged record in what it
    // replays, on disk: refuse first, with the files as they are.
    if let Some(damage) = crate::sled_recovery::find_damage(dir).map_err(|e| LogError::io(dir, e))? {
        return Err(LogError::Unopenable { path: dir.to_owned(), what: damage.to_string() });
    }
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

/// Waits, until `deadline`, for sled's lock on `dir/db` (an exclusive
/// `flock`, which sled takes at open and drops when its last thread lets go
/// of the file) to be free, and releases it at once. Returns at once when
/// there is no `db` yet; past the deadline it returns anyway, and sled's own
/// open names the lock.
fn wait_for_sled_lock(dir: &Path, deadline: Instant) {
    let Ok(db) = std::fs::File::open(dir.join("db")) else { return };
    while let Err(std::fs::TryLockError::WouldBlock) = db.try_lock() {
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = db.unlock();
}

/// sled writes its `conf` at creation in two `write`s (the parameters, then
/// their CRC) and refuses a `conf` a kill cut between them as corrupt. With
/// no `db` bytes yet nothing was ever stored (a log is flushed at open,
/// before its first append), so such leftovers — `conf`, snapshots — are
/// removed and sled creates the database again.
///
/// Unless the log was created whole once: its write-ahead files are made
/// at the end of the first open. Then a `db` that is missing or empty is
/// damage (a deleted or truncated file), and sled must not make a new,
/// empty database in its place — the open is refused, naming it, and
/// `engram repair` salvages what the write-ahead files and the rest hold.
pub(super) fn forget_interrupted_creation(dir: &Path) -> Result<(), LogError> {
    let db_bytes = match std::fs::metadata(dir.join("db")) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(LogError::io(dir, e)),
    };
    if db_bytes > 0 {
        return Ok(());
    }
    let wal_dir = dir.parent().map(|data| data.join(crate::data_dir::WAL_DIR));
    let written = wal_dir.as_deref().and_then(|w| std::fs::read_dir(w).ok()).is_some_and(|mut e| e.next().is_some());
    if written {
        let state = if dir.join("db").exists() { "empty" } else { "missing" };
        let what = format!(
            "its store file db is {state}, while {} holds the write-ahead files of a log that was written",
            crate::data_dir::WAL_DIR
        );
        return Err(LogError::Unopenable { path: dir.to_owned(), what });
    }
    remove_creation_leftovers(dir).map_err(|e| LogError::io(dir, e))
}

/// sled writes a snapshot to `snap.<lsn>.generating` and renames it when
/// whole; one a crash or a full disk cut short (often empty) is left. sled
/// 0.34 takes the name that sorts last for its newest snapshot — which such
/// a file is — and refuses the database as corrupt from then on, however
/// sound the rest. It is never a finished snapshot (the one before it is
/// still there until the rename), so it is removed before sled looks.
fn remove_unfinished_snapshots(dir: &Path) -> std::io::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            tracing::warn!("{}: a snapshot sled did not finish; removed", entry.path().display());
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Removes what an interrupted creation left in `dir` (`conf`,
/// snapshots).
fn remove_creation_leftovers(dir: &Path) -> std::io::Result<()> {
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
pub(super) fn is_damage(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof)
}

/// The last `seq` in the log, from its last segment.
pub(super) fn recover_head(log: &sled::Tree) -> Result<Seq, LogError> {
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
pub(super) fn apply_wal(
    log: &sled::Tree,
    ids: &sled::Tree,
    recovered: &wal::Recovered,
    stored: Seq,
) -> Result<Seq, LogError> {
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
pub(super) fn trim_after(log: &sled::Tree, ids: &sled::Tree, end: Seq) -> Result<u64, LogError> {
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
pub(super) fn readable_ids(segment: &[u8], out: &mut Vec<(EventId, Seq)>) {
    out.extend(binary::frames(segment).filter_map(|f| f.and_then(|f| f.view()).ok()).map(|v| (v.id(), v.seq())));
}

/// Builds the id index again from every record (the upgrade from format
/// 1). Unreadable records are left out: `engram verify` names them.
pub(super) fn rebuild_id_index(log: &sled::Tree, ids: &sled::Tree) -> Result<(), LogError> {
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
pub(super) fn reindex_tail(log: &sled::Tree, ids: &sled::Tree) -> Result<usize, LogError> {
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
