//! `engram repair`: salvages every readable event of a damaged log into a
//! fresh one, in place, keeping the damaged files aside.
//!
//! | step | what |
//! |---|---|
//! | 1 | read the old log with sled, going around damaged records ([`crate::log::LogIter`] resynchronises on the next frame that checks out); if sled cannot open it at all (a damaged snapshot, `conf`, a deleted file — or sled panics), **scan its files raw** for frames: every frame carries its own seq and CRC, so the events can be found without sled's structures |
//! | 2 | name what is lost: the runs of seqs no readable frame holds, and — when the old id index still reads — the ids it had at those seqs |
//! | 3 | append the salvaged events, in seq order, to a new log in `DIR/.repair/new/` (ids kept; seqs renumbered gap-free from the first loss on) |
//! | 4 | move the new log into `DIR/log.sled` (and its write-ahead files into `DIR/log.wal`) |
//!
//! Before sled reads its copy, damaged messages in the part sled replays
//! at open are given the checksum their bytes have
//! ([`crate::sled_recovery::disarm`]): sled would otherwise cut the log at
//! the first of them.
//!
//! The raw scan reads the write-ahead files too ([`crate::wal`]): they hold
//! whole frames of what sled had not made durable yet.
//!
//! Before step 1 the damaged log (and its write-ahead files) is moved to
//! `DIR/damaged-<UTC time>/` and
//! never written again: sled reads a copy of it (its recovery may write),
//! the raw scan reads the original.
//!
//! The new log has no projection trees, checkpoints or caches: projections
//! rebuild from it on the next read, and the runtime's actors, new to it,
//! start at its head (history is folded, not acted on). An interrupted
//! repair is finished by running it again: with the new log complete it is
//! moved in; otherwise the repair starts over from the copy put aside.
//!
//! Re-deriving lost events that were derived (a `day.activated`, a
//! `pattern.recorded`) is the assistant's logic, not the log's: the CLI does
//! it after [`salvage`], with [`RepairReport::lost_ids`] as the list of ids
//! worth re-creating.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use engram_events::codec::binary;
use engram_events::{Envelope, EventId, Seq};

use crate::data_dir::{LOG_DIR, REPAIRING_MARK, REPAIR_STAGING};
use crate::error::LogError;
use crate::event_log::EventLog;
use crate::log::{LogConfig, SledLog};

/// Events appended to the new log per batch.
const BATCH: usize = 4096;

/// What a repair did.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RepairReport {
    /// How the old log was read: `"sled"`, or `"raw scan"` when sled could
    /// not open it.
    pub read_with: String,
    /// Why sled could not be used, when it could not.
    pub sled_error: Option<String>,
    /// Events written to the new log.
    pub salvaged: u64,
    /// Distinct seqs the raw scan of the files found.
    pub raw_frames: u64,
    /// The old log's head, as far as could be told.
    pub old_head: u64,
    /// Runs of old seqs that could not be read, `(first, last)`.
    pub lost: Vec<(u64, u64)>,
    /// The ids the old id index had at lost seqs (empty when the index
    /// could not be read).
    pub lost_ids: Vec<String>,
    /// The first seq whose event now has another position (`None`: none
    /// moved).
    pub renumbered_from: Option<u64>,
    /// Where the damaged files are now.
    pub aside: PathBuf,
    /// The ids among `lost_ids` derived again from their causes (and
    /// appended after the salvaged events).
    pub rederived: Vec<String>,
}

impl RepairReport {
    /// Number of old seqs lost.
    pub fn lost_records(&self) -> u64 {
        self.lost.iter().map(|(a, b)| b - a + 1).sum()
    }
}

/// See [`RepairSteps::rederive`].
pub type Rederive<'a> = dyn Fn(&dyn EventLog, &RepairReport) -> Result<Vec<Envelope>, LogError> + 'a;

/// What a repair asks of the assistant's side, which the log does not
/// know: the two steps that depend on what events mean and on what the
/// data dir keeps beside the log.
pub struct RepairSteps<'a> {
    /// Given the new log (salvaged, not yet complete) and what was lost:
    /// the events to derive again among the lost, which are appended to the
    /// new log before it is marked complete — so a repair stopped after
    /// that point never has to derive them again, and one stopped before
    /// derives them with the rest.
    pub rederive: &'a Rederive<'a>,
    /// Removes what the data dir keeps outside the log's database that was
    /// folded from the old log (the actors' snapshots: the salvage may
    /// have changed positions). It runs once the new log is in place,
    /// before the data dir's lock is released, so nothing can read the
    /// new log together with state of the old one.
    pub outdated: &'a dyn Fn(&Path) -> std::io::Result<()>,
}

/// Salvages the log of `dir` (see the module docs). The caller must not
/// hold the data dir open. A repair stopped anywhere (a kill, a full disk)
/// is finished by the next call, with the same result and report.
pub fn salvage(dir: &Path, steps: &RepairSteps<'_>) -> Result<RepairReport, LogError> {
    let outdated = steps.outdated;
    crate::data_dir::guard(dir)?;
    let lock = crate::lock::DataDirLock::acquire(dir)?;
    let staging = dir.join(REPAIR_STAGING);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |e| LogError::io(&path, e)
    };
    if staging.join("new").join(COMPLETE).exists() {
        // Stopped after the new log was complete: only its installation is
        // left, and the report it was complete with says what it did.
        let report = std::fs::read(staging.join("new").join(REPORT))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<RepairReport>(&bytes).ok())
            .unwrap_or_else(|| RepairReport {
                read_with: "an interrupted repair, finished".into(),
                ..Default::default()
            });
        return install(dir, &staging, report, lock, outdated);
    }
    // Where the damaged log is (aside, untouched from here on). A repair
    // that stopped before its new log was complete starts again from the
    // copy it put aside.
    let aside = damaged_log_aside(dir)?;
    // The write-ahead files go aside with the store (a repair interrupted
    // between the two moves finishes the second here).
    let wal_dir = dir.join(crate::data_dir::WAL_DIR);
    if wal_dir.exists() && !aside.join(crate::data_dir::WAL_DIR).exists() {
        std::fs::rename(&wal_dir, aside.join(crate::data_dir::WAL_DIR)).map_err(io(&wal_dir))?;
    }
    let source = aside.join("log.sled");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    // Every frame in the damaged files, whatever sled makes of them: what
    // fills the gaps sled leaves (or everything, when sled cannot open).
    // The write-ahead files hold whole frames too: what sled never got.
    let raw = RawIndex::scan(&[source.clone(), aside.join(crate::data_dir::WAL_DIR)])?;
    // sled may write to a log it opens (its recovery): it gets a copy.
    let copy = staging.join("old.sled");
    crate::data_dir::copy_tree(&source, &copy).map_err(io(&copy))?;
    // sled would cut the copy at a damaged message in what it replays:
    // accepted as it is, its records are read, the damaged one gone around.
    crate::sled_recovery::disarm(&copy).map_err(io(&copy))?;
    let mut report =
        RepairReport { aside: aside.clone(), raw_frames: raw.frames.len() as u64, ..RepairReport::default() };
    let relaxed = LogConfig { durability: crate::Durability::Relaxed { flush_every_ms: 1000 }, ..LogConfig::default() };
    let new = SledLog::open(&staging.join("new"), relaxed)?;
    let mut writer = Writer {
        log: &new,
        raw: &raw,
        batch: Vec::with_capacity(BATCH),
        next_old: Seq::FIRST,
        from_raw: 0,
        report: &mut report,
    };
    let sled_read = read_with_sled(&copy, &mut writer);
    writer.fill_to_end()?;
    writer.finish()?;
    let again = (steps.rederive)(&new, writer.report)?;
    writer.report.rederived = again.iter().map(|e| e.id.to_string()).collect();
    if !again.is_empty() {
        new.append(again)?;
    }
    let from_raw = writer.from_raw;
    report.read_with = match (&sled_read, from_raw) {
        (Ok(()), 0) => "sled".into(),
        (Ok(()), n) => format!("sled, and a raw scan of its files for {n} records sled could not give"),
        (Err(_), _) => "a raw scan of the log's files (sled could not read them)".into(),
    };
    report.sled_error = sled_read.err();
    new.flush()?;
    drop(new);
    // The report first, then the mark that the new log is complete: a
    // repair stopped from here on only installs it, and says what this
    // one found (the lost ids the CLI derives again among them).
    let json = serde_json::to_vec(&report).map_err(|e| LogError::io(&staging, std::io::Error::other(e)))?;
    std::fs::write(staging.join("new").join(REPORT), json).map_err(io(&staging))?;
    std::fs::write(staging.join("new").join(COMPLETE), b"").map_err(io(&staging))?;
    let _ = std::fs::remove_file(aside.join(REPAIRING_MARK));
    install(dir, &staging, report, lock, outdated)
}

/// The damaged log, put aside in `DIR/damaged-<time>/` (marked while its
/// repair is not over): the one an interrupted repair put there, else the
/// data dir's `log.sled`, moved there now.
fn damaged_log_aside(dir: &Path) -> Result<PathBuf, LogError> {
    let log_dir = dir.join(LOG_DIR);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |e| LogError::io(&path, e)
    };
    if let Some(aside) = crate::data_dir::interrupted_repairs(dir).pop() {
        if log_dir.exists() {
            // Only an engram older than the refusal at open could have made
            // a log here since: kept, beside, never salvaged instead of the
            // one put aside.
            let beside = dir.join(format!("superseded-{}", stamp()));
            crate::data_dir::create_private_dir(&beside).map_err(io(&beside))?;
            std::fs::rename(&log_dir, beside.join(LOG_DIR)).map_err(io(&log_dir))?;
            tracing::warn!(
                "{}: a log made after a repair was interrupted, kept in {}",
                log_dir.display(),
                beside.display()
            );
        }
        return Ok(aside);
    }
    if !log_dir.exists() {
        return Err(LogError::io(&log_dir, std::io::Error::new(std::io::ErrorKind::NotFound, "no log to repair")));
    }
    let aside = dir.join(format!("damaged-{}", stamp()));
    crate::data_dir::create_private_dir(&aside).map_err(io(&aside))?;
    std::fs::write(aside.join(REPAIRING_MARK), b"").map_err(io(&aside))?;
    std::fs::rename(&log_dir, aside.join(LOG_DIR)).map_err(io(&log_dir))?;
    Ok(aside)
}

/// A UTC time stamp for the name of a dir put aside.
fn stamp() -> String {
    engram_events::chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string()
}

/// Whether a repair of `dir` was interrupted (a run of `engram repair`
/// finishes it, whatever state the log seems to be in).
pub fn pending(dir: &Path) -> bool {
    crate::data_dir::repair_pending(dir)
}

/// Marks a new log that is complete and only waits to be moved in.
const COMPLETE: &str = "COMPLETE";
/// Beside [`COMPLETE`]: the report of the repair that made the new log.
const REPORT: &str = "REPORT.json";

/// The last step: the new log into the data dir's `log.sled`.
fn install(
    dir: &Path,
    staging: &Path,
    report: RepairReport,
    lock: crate::lock::DataDirLock,
    outdated: &dyn Fn(&Path) -> std::io::Result<()>,
) -> Result<RepairReport, LogError> {
    let log_dir = dir.join(LOG_DIR);
    let new_log = staging.join("new").join(LOG_DIR);
    if new_log.exists() {
        // (Gone when a repair stopped after this move: it is in place.)
        std::fs::rename(&new_log, &log_dir).map_err(|e| LogError::io(&log_dir, e))?;
    }
    // The new log's write-ahead files (one empty file after its close).
    let wal_dir = dir.join(crate::data_dir::WAL_DIR);
    let new_wal = staging.join("new").join(crate::data_dir::WAL_DIR);
    if new_wal.exists() {
        if wal_dir.exists() {
            // Left by a repair interrupted after this move: the new log's.
            std::fs::remove_dir_all(&wal_dir).map_err(|e| LogError::io(&wal_dir, e))?;
        }
        std::fs::rename(&new_wal, &wal_dir).map_err(|e| LogError::io(&wal_dir, e))?;
    }
    // What was folded from the old log, whose positions the salvage may
    // have changed (the actors' snapshots): the next start folds the new
    // one.
    outdated(dir).map_err(|e| LogError::io(dir, e))?;
    let _ = std::fs::remove_dir_all(staging);
    drop(lock);
    Ok(report)
}

/// Every frame found in a log's files by scanning their bytes: its seq and
/// where it is (file, offset); the first copy of each seq wins.
struct RawIndex {
    files: Vec<PathBuf>,
    frames: BTreeMap<u64, (usize, usize)>,
    cache: std::cell::RefCell<Option<(usize, Vec<u8>)>>,
}

impl RawIndex {
    fn scan(dirs: &[PathBuf]) -> Result<RawIndex, LogError> {
        let mut entries = Vec::new();
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            crate::data_dir::entries_below(dir, &mut entries).map_err(|e| LogError::io(dir, e))?;
        }
        let mut files: Vec<PathBuf> =
            entries.into_iter().filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())).collect();
        files.sort();
        let mut frames: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
        for (i, path) in files.iter().enumerate() {
            let bytes = std::fs::read(path).map_err(|e| LogError::io(path, e))?;
            for (seq, offset) in crate::segment::find_frames(&bytes) {
                frames.entry(seq.0).or_insert((i, offset));
            }
        }
        Ok(RawIndex { files, frames, cache: std::cell::RefCell::new(None) })
    }

    /// The event the scan found at `seq`, if any.
    fn get(&self, seq: u64) -> Result<Option<Envelope>, LogError> {
        let Some(&(file, offset)) = self.frames.get(&seq) else { return Ok(None) };
        let mut cache = self.cache.borrow_mut();
        if cache.as_ref().is_none_or(|(f, _)| *f != file) {
            let path = &self.files[file];
            *cache = Some((file, std::fs::read(path).map_err(|e| LogError::io(path, e))?));
        }
        let bytes = &cache.as_ref().expect("just read").1;
        Ok(binary::split_frame(&bytes[offset..]).ok().and_then(|(frame, _)| frame.decode().ok()))
    }

    /// The highest seq found.
    fn last(&self) -> Option<u64> {
        self.frames.keys().next_back().copied()
    }
}
/// Appends salvaged events in old-seq order, filling what sled could not
/// give from the raw scan, noting what neither has.
struct Writer<'a> {
    log: &'a SledLog,
    raw: &'a RawIndex,
    batch: Vec<Envelope>,
    /// The old seq the next salvaged event should have.
    next_old: Seq,
    /// Events taken from the raw scan.
    from_raw: u64,
    report: &'a mut RepairReport,
}

impl Writer<'_> {
    /// One event sled read (its `seq` is its old position).
    fn push(&mut self, env: Envelope) -> Result<(), LogError> {
        if env.seq < self.next_old {
            return Ok(()); // a copy of one already taken
        }
        self.fill_until(env.seq)?;
        self.take(env)
    }

    /// Every seq before `until` not taken yet: from the raw scan, else lost.
    fn fill_until(&mut self, until: Seq) -> Result<(), LogError> {
        while self.next_old < until {
            let seq = self.next_old;
            match self.raw.get(seq.0)? {
                Some(env) => {
                    self.from_raw += 1;
                    self.take(env)?;
                }
                None => {
                    match self.report.lost.last_mut() {
                        Some((_, end)) if *end + 1 == seq.0 => *end = seq.0,
                        _ => self.report.lost.push((seq.0, seq.0)),
                    }
                    self.next_old = seq.next();
                }
            }
        }
        Ok(())
    }

    /// What the raw scan found past everything sled gave.
    fn fill_to_end(&mut self) -> Result<(), LogError> {
        if let Some(last) = self.raw.last() {
            self.fill_until(Seq(last + 1))?;
        }
        Ok(())
    }

    fn take(&mut self, env: Envelope) -> Result<(), LogError> {
        let old = env.seq;
        self.next_old = old.next();
        self.report.old_head = self.report.old_head.max(old.0);
        let new_seq = self.report.salvaged + 1;
        if new_seq != old.0 && self.report.renumbered_from.is_none() {
            self.report.renumbered_from = Some(old.0);
        }
        self.report.salvaged += 1;
        self.batch.push(env);
        if self.batch.len() >= BATCH {
            self.log.append(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), LogError> {
        if !self.batch.is_empty() {
            self.log.append(std::mem::take(&mut self.batch))?;
        }
        Ok(())
    }
}

/// How long sled may go without giving the next record of the copy before
/// the repair stops waiting for it (a damaged page can send sled's
/// recovery into a loop) and takes the rest from the raw scan.
const SLED_STALL: std::time::Duration = std::time::Duration::from_secs(20);

/// What the thread reading the copy with sled sends.
enum FromSled {
    /// The next readable event.
    Event(Box<Envelope>),
    /// sled could not open or read the log's structure (why).
    Failed(String),
    /// The old id index, as far as it reads: `(seq, id)`.
    Index(Vec<(u64, EventId)>),
}

/// Step 1 with sled: `Err` (with why) when sled cannot open or read the
/// log's structure, or stops answering; damaged records themselves are
/// gone around. sled runs on a thread of its own, so a sled that hangs on
/// a damaged page costs [`SLED_STALL`], not the repair.
fn read_with_sled(old: &Path, writer: &mut Writer<'_>) -> Result<(), String> {
    let (tx, rx) = crossbeam_channel::bounded::<FromSled>(4096);
    let copy = old.to_owned();
    std::thread::Builder::new()
        .name("repair-sled".into())
        .spawn(move || sled_reader(&copy, &tx))
        .map_err(|e| format!("cannot start a thread for sled: {e}"))?;
    let mut read = Ok(());
    let mut index: Vec<(u64, EventId)> = Vec::new();
    loop {
        match rx.recv_timeout(SLED_STALL) {
            Ok(FromSled::Event(env)) => writer.push(*env).map_err(|e| e.to_string())?,
            Ok(FromSled::Failed(why)) => read = Err(why),
            Ok(FromSled::Index(i)) => index = i,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                read = Err(format!("sled stopped answering ({} s without a record)", SLED_STALL.as_secs()));
                break;
            }
        }
    }
    // The old id index says how far the log went — damage at the very end
    // leaves no later record to say so — and the ids of what is lost.
    let end = index.iter().map(|(seq, _)| *seq).chain(writer.raw.last()).max().unwrap_or(0);
    writer.fill_until(Seq(end + 1)).map_err(|e| e.to_string())?;
    let lost = &writer.report.lost;
    let mut lost_ids: Vec<String> = index
        .iter()
        .filter(|(seq, _)| lost.iter().any(|(a, b)| (*a..=*b).contains(seq)))
        .map(|(_, id)| id.to_string())
        .collect();
    lost_ids.sort();
    writer.report.lost_ids = lost_ids;
    read
}

/// The sled side of [`read_with_sled`]: every readable event of the log at
/// `old`, in order, then its id index; panics inside sled are caught and
/// sent as failures.
fn sled_reader(old: &Path, tx: &crossbeam_channel::Sender<FromSled>) {
    let opened = std::panic::catch_unwind(|| sled::Config::new().path(old).open());
    let db = match opened {
        Ok(Ok(db)) => db,
        Ok(Err(e)) => return drop(tx.send(FromSled::Failed(format!("sled: {e}")))),
        Err(panic) => {
            return drop(tx.send(FromSled::Failed(format!("sled panicked: {}", LogError::panic_text(panic.as_ref())))))
        }
    };
    let read = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let log = db.open_tree("log").map_err(|e| format!("sled: {e}"))?;
        for item in crate::log::LogIter::for_repair(log) {
            match item {
                Ok(env) => {
                    if tx.send(FromSled::Event(Box::new(env))).is_err() {
                        return Ok(()); // the repair stopped listening
                    }
                }
                // A gap: filled from the raw scan, or noted as lost, when
                // the next event (or the end) comes.
                Err(e) if e.is_record_damage() => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }))
    .unwrap_or_else(|panic| Err(format!("sled panicked: {}", LogError::panic_text(panic.as_ref()))));
    if let Err(why) = read {
        let _ = tx.send(FromSled::Failed(why));
    }
    // The old id index, read as far as it reads (its pages are not the
    // log's).
    let mut index: Vec<(u64, EventId)> = Vec::new();
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let Ok(ids) = db.open_tree("ids") else { return };
        for (id, seq) in crate::id_index::all(&ids).map_while(Result::ok) {
            index.push((seq.0, id));
        }
    }));
    let _ = tx.send(FromSled::Index(index));
}
