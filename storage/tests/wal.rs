//! The write-ahead files through the public API: what a crash leaves in
//! them is re-applied at open, a torn last record is dropped (and what sled
//! wrote of it removed), damage is refused and repaired. The crashes are
//! made by hand: the files as a kill leaves them, restored after a close.

use std::path::Path;

use engram_events::payloads::{SessionEndReason, SessionEnded};
use engram_events::{ActorKind, Envelope, Seq, SessionId};
use engram_storage::data_dir::WAL_DIR;
use engram_storage::wal;
use engram_storage::{AppendOutcome, EventLog, LogConfig, LogError, SledLog};

fn event(i: u32) -> Envelope {
    Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
        .with_session(SessionId::new(format!("s-{i}")))
}

fn batch(range: std::ops::Range<u32>) -> Vec<Envelope> {
    range.map(event).collect()
}

/// Copies every file of `from` into a fresh `to`.
fn copy_files(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_files(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Opens `dir`, runs `f`, and closes the log leaving the write-ahead files
/// as they were when `f` returned — as a kill then would — while sled's
/// files hold what the close made durable.
fn run_and_kill(dir: &Path, f: impl FnOnce(&SledLog)) {
    let log = SledLog::open(dir, LogConfig::default()).unwrap();
    f(&log);
    let kept = dir.parent().unwrap().join("wal.kept");
    copy_files(&dir.join(WAL_DIR), &kept);
    drop(log);
    std::fs::remove_dir_all(dir.join(WAL_DIR)).unwrap();
    std::fs::rename(&kept, dir.join(WAL_DIR)).unwrap();
}

/// [`run_and_kill`], with sled's files put back as they were before `f`:
/// the write-ahead files are then the only copy of what `f` appended.
fn run_and_kill_behind_sled(dir: &Path, f: impl FnOnce(&SledLog)) {
    let sled_then = dir.parent().unwrap().join("sled.then");
    copy_files(&dir.join("log.sled"), &sled_then);
    run_and_kill(dir, f);
    std::fs::remove_dir_all(dir.join("log.sled")).unwrap();
    std::fs::rename(&sled_then, dir.join("log.sled")).unwrap();
}

fn the_wal_file(dir: &Path) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(dir.join(WAL_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "spare.wal")
        .collect();
    files.sort();
    files.pop().unwrap()
}

/// A repair's steps that derive nothing again, with `outdated`.
fn steps<'a>(outdated: &'a dyn Fn(&Path) -> std::io::Result<()>) -> engram_storage::repair::RepairSteps<'a> {
    engram_storage::repair::RepairSteps { rederive: &|_, _| Ok(Vec::new()), outdated }
}

fn read_all(log: &SledLog) -> Vec<Envelope> {
    log.read_from(Seq::FIRST).map(Result::unwrap).collect()
}

#[test]
fn records_sled_never_got_are_applied_at_open() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    // sled as the last checkpoint left it: three events.
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    log.append(batch(0..3)).unwrap();
    drop(log);
    // Two more group commits, in the write-ahead files only.
    let mut written = Vec::new();
    run_and_kill_behind_sled(&dir, |log| {
        log.append(batch(3..8)).unwrap();
        log.append(batch(8..40)).unwrap();
        written = read_all(log);
    });

    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(log.head(), Seq(40));
    assert_eq!(read_all(&log), written);
    for env in &written {
        assert_eq!(log.seq_of(env.id).unwrap(), Some(env.seq), "indexed");
    }
    assert!(engram_storage::verify::verify(&log, |_| {}).ok());
    assert_eq!(log.append(vec![event(40)]).unwrap()[0].seq(), Seq(41));
    drop(log);
    // Checkpointed at open and close: nothing left to re-apply.
    let recovered = wal::recover(&dir.join(WAL_DIR)).unwrap();
    assert!(recovered.records.is_empty());
    assert_eq!(recovered.end, Some(Seq(41)));
}

#[test]
fn a_torn_last_record_is_dropped_and_what_sled_wrote_of_it_removed() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let mut first = Vec::new();
    run_and_kill(&dir, |log| {
        log.append(batch(0..3)).unwrap();
        first = read_all(log);
        log.append(batch(3..60)).unwrap();
    });
    // The second record cut short, as a power loss can leave it, while
    // sled (whose buffers went to disk on their own) holds all of it.
    let file = the_wal_file(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    let end = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
    bytes[end - 100..].fill(0);
    std::fs::write(&file, &bytes).unwrap();

    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(log.head(), Seq(3), "the batch is all or nothing");
    assert_eq!(read_all(&log), first);
    assert_eq!(log.seq_of(event(5).id).unwrap(), None);
    assert!(engram_storage::verify::verify(&log, |_| {}).ok());
    // The positions go on from the prefix, and the torn batch can be
    // appended again.
    let again = log.append(batch(3..60)).unwrap();
    assert_eq!(again[0].seq(), Seq(4));
    assert!(again.iter().all(|o| o.is_new()));
    assert!(engram_storage::verify::verify(&log, |_| {}).ok());
}

#[test]
fn damage_in_the_write_ahead_files_is_refused_and_repaired() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    drop(SledLog::open(&dir, LogConfig::default()).unwrap());
    let mut written = Vec::new();
    // sled as it was before them: the write-ahead file is the only copy.
    run_and_kill_behind_sled(&dir, |log| {
        log.append(batch(0..10)).unwrap();
        log.append(batch(10..20)).unwrap();
        written = read_all(log);
    });
    // One byte flipped inside the first record, a sound record after it.
    let file = the_wal_file(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[32 + 8 + 12 + 30] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();

    let err = SledLog::open(&dir, LogConfig::default()).err().expect("refused");
    assert!(matches!(err, LogError::WalDamaged { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(".wal") && text.contains("byte 32") && text.contains("engram repair"), "{text}");
    assert_eq!(std::fs::read(&file).unwrap(), bytes, "nothing written to the files");

    let report = engram_storage::repair::salvage(&dir, &steps(&|_| Ok(()))).unwrap();
    assert_eq!(report.lost, vec![(1, 1)], "{report:?}");
    assert_eq!(report.salvaged, 19);
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    let read = read_all(&log);
    assert_eq!(read.iter().map(|e| e.id).collect::<Vec<_>>(), written[1..].iter().map(|e| e.id).collect::<Vec<_>>());
    assert!(engram_storage::verify::verify(&log, |_| {}).ok());
}

/// A log whose write-ahead file holds a damaged record: `salvage` finds
/// record 1 lost and the other 19. Returns the events written.
fn damaged_in_the_wal(dir: &Path) -> Vec<Envelope> {
    drop(SledLog::open(dir, LogConfig::default()).unwrap());
    let mut written = Vec::new();
    run_and_kill_behind_sled(dir, |log| {
        log.append(batch(0..10)).unwrap();
        log.append(batch(10..20)).unwrap();
        written = read_all(log);
    });
    let file = the_wal_file(dir);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[32 + 8 + 12 + 30] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    written
}

#[test]
fn a_repair_stopped_while_installing_its_log_is_finished_by_the_next_with_its_report() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let written = damaged_in_the_wal(&dir);
    // Stopped after the new log moved in, before the repair was over.
    let stopped = engram_storage::repair::salvage(&dir, &steps(&|_| Err(std::io::Error::other("killed"))));
    assert!(stopped.is_err());
    assert!(engram_storage::repair::pending(&dir));
    // Nothing opens (or creates) a log in the meantime.
    let err = SledLog::open(&dir, LogConfig::default()).err().expect("refused while a repair is pending");
    assert!(matches!(err, LogError::RepairInterrupted { .. }), "{err}");
    assert!(err.to_string().contains("run `engram repair`"), "{err}");
    // The next repair installs, and reports what the first one found.
    let report = engram_storage::repair::salvage(&dir, &steps(&|_| Ok(()))).unwrap();
    assert_eq!((report.lost.clone(), report.salvaged), (vec![(1, 1)], 19), "{report:?}");
    assert!(!engram_storage::repair::pending(&dir));
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    let ids = |events: &[Envelope]| events.iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(&read_all(&log)), ids(&written[1..]));
    assert!(engram_storage::verify::verify(&log, |_| {}).ok());
}

#[test]
fn a_repair_stopped_before_its_log_was_complete_starts_again_from_the_log_it_put_aside() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let written = damaged_in_the_wal(&dir);
    // As a kill leaves it right after the damaged log went aside, with a
    // half-built new log in the staging dir.
    let aside = dir.join("damaged-20261126T000000.000Z");
    std::fs::create_dir(&aside).unwrap();
    std::fs::write(aside.join(engram_storage::data_dir::REPAIRING_MARK), "").unwrap();
    std::fs::rename(dir.join("log.sled"), aside.join("log.sled")).unwrap();
    std::fs::create_dir_all(dir.join(".repair/new/log.sled")).unwrap();
    assert!(matches!(SledLog::open(&dir, LogConfig::default()), Err(LogError::RepairInterrupted { .. })));
    assert!(!dir.join("log.sled").exists(), "no new log in its place");
    let report = engram_storage::repair::salvage(&dir, &steps(&|_| Ok(()))).unwrap();
    assert_eq!((report.lost.clone(), report.salvaged), (vec![(1, 1)], 19), "{report:?}");
    assert_eq!(report.aside, aside);
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(
        read_all(&log).iter().map(|e| e.id).collect::<Vec<_>>(),
        written[1..].iter().map(|e| e.id).collect::<Vec<_>>()
    );
}

#[test]
fn a_deleted_store_file_is_damage_and_repair_salvages_what_the_write_ahead_file_holds() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    drop(SledLog::open(&dir, LogConfig::default()).unwrap());
    // Ten events sled holds, ten more in the write-ahead file only.
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    log.append(batch(0..10)).unwrap();
    drop(log);
    let mut written = Vec::new();
    run_and_kill_behind_sled(&dir, |log| {
        log.append(batch(10..20)).unwrap();
        written = read_all(log);
    });
    assert_eq!(written.len(), 20);
    std::fs::remove_file(dir.join("log.sled/db")).unwrap();
    let err = SledLog::open(&dir, LogConfig::default()).err().expect("damage, not a new empty log");
    assert!(matches!(err, LogError::Unopenable { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("db is missing") && text.contains("engram repair"), "{text}");
    assert!(!dir.join("log.sled/db").exists(), "nothing written in its place");
    // An emptied one is the same.
    std::fs::write(dir.join("log.sled/db"), b"").unwrap();
    let err = SledLog::open(&dir, LogConfig::default()).err().expect("damage");
    assert!(err.to_string().contains("db is empty"), "{err}");
    std::fs::remove_file(dir.join("log.sled/db")).unwrap();

    let report = engram_storage::repair::salvage(&dir, &steps(&|_| Ok(()))).unwrap();
    assert_eq!(report.lost, vec![(1, 10)], "what only sled held is lost, named: {report:?}");
    assert_eq!(report.salvaged, 10, "the write-ahead file's ten are salvaged");
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    let ids: Vec<_> = read_all(&log).iter().map(|e| e.id).collect();
    assert_eq!(ids, written[10..].iter().map(|e| e.id).collect::<Vec<_>>());
    assert!(engram_storage::verify::verify(&log, |_| {}).ok());
}

#[test]
fn a_format_1_log_opens_and_is_upgraded() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    log.append(batch(0..5)).unwrap();
    drop(log);
    // What an engram before the write-ahead files left: no `log.wal`.
    std::fs::remove_dir_all(dir.join(WAL_DIR)).unwrap();
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(log.head(), Seq(5));
    log.append(batch(5..7)).unwrap();
    assert_eq!(read_all(&log).len(), 7);
    drop(log);
    assert_eq!(wal::recover(&dir.join(WAL_DIR)).unwrap().end, Some(Seq(7)));
}

/// Rewrites `dir`'s id index the way a format-2 engram kept it (every
/// millisecond split 16 ways: 7-byte keys) and marks the log format 2.
fn downgrade_index_to_format_2(dir: &Path) {
    let db = sled::open(dir.join("log.sled")).unwrap();
    let ids = db.open_tree("ids").unwrap();
    let mut entries: Vec<Vec<u8>> = Vec::new();
    for item in ids.iter() {
        let (_, v) = item.unwrap();
        entries.extend(v.chunks_exact(24).map(<[u8]>::to_vec));
    }
    ids.clear().unwrap();
    let mut buckets: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = Default::default();
    for e in entries {
        let mut key = e[..6].to_vec();
        key.push(e[6] >> 4);
        buckets.entry(key).or_default().extend_from_slice(&e);
    }
    for (k, v) in buckets {
        ids.insert(k, v).unwrap();
    }
    db.open_tree("meta").unwrap().insert("format", &2u32.to_be_bytes()).unwrap();
    db.flush().unwrap();
}

fn format_of(dir: &Path) -> (u32, bool) {
    let db = sled::open(dir.join("log.sled")).unwrap();
    let meta = db.open_tree("meta").unwrap();
    let v = meta.get("format").unwrap().unwrap();
    (u32::from_be_bytes(v.as_ref().try_into().unwrap()), meta.contains_key("rebuilding_ids").unwrap())
}

/// A format-2 log (16-way buckets) opens as format 3: its index is rebuilt,
/// so every id is found at its seq and appending the same events again
/// appends nothing. So is a log whose upgrade a crash interrupted (the
/// mark left, the index half rebuilt).
#[test]
fn a_format_2_log_is_upgraded_and_keeps_every_id() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let written = batch(0..300);
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    log.append(written.clone()).unwrap();
    drop(log);
    assert_eq!(format_of(&dir), (3, false));
    downgrade_index_to_format_2(&dir);

    let check = |dir: &Path| {
        let log = SledLog::open(dir, LogConfig::default()).unwrap();
        for (i, env) in written.iter().enumerate() {
            assert_eq!(log.seq_of(env.id).unwrap(), Some(Seq(i as u64 + 1)), "event {i}");
        }
        let again = log.append(written.clone()).unwrap();
        assert!(again.iter().all(|o| matches!(o, AppendOutcome::Existing(_))), "re-appended: {again:?}");
        assert_eq!(log.head(), Seq(300));
        drop(log);
        assert_eq!(format_of(dir), (3, false), "upgraded, no rebuild pending");
    };
    check(&dir);

    // A crash in the middle of the rebuild: the mark is there, half the
    // index is gone.
    {
        let db = sled::open(dir.join("log.sled")).unwrap();
        db.open_tree("meta").unwrap().insert("rebuilding_ids", &[]).unwrap();
        let ids = db.open_tree("ids").unwrap();
        let keys: Vec<_> = ids.iter().keys().map(Result::unwrap).collect();
        for k in keys.iter().step_by(2) {
            ids.remove(k).unwrap();
        }
        db.flush().unwrap();
    }
    check(&dir);
}

/// sled takes the snapshot file whose name sorts last for its newest — an
/// unfinished `snap.*.generating` a crash or a full disk left (often empty)
/// among them — and would refuse the database as corrupt from then on.
#[test]
fn a_snapshot_sled_did_not_finish_does_not_make_the_log_unopenable() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    log.append(batch(0..10)).unwrap();
    drop(log);
    std::fs::write(dir.join("log.sled/snap.FFFFFFFFFFFFFFF0.generating"), b"").unwrap();
    let log = SledLog::open(&dir, LogConfig::default()).expect("opens");
    assert_eq!(read_all(&log).len(), 10);
    assert!(!dir.join("log.sled/snap.FFFFFFFFFFFFFFF0.generating").exists());
}
