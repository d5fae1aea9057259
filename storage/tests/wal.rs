//! The write-ahead files through the public API: what a crash leaves in
//! them is re-applied at open, a torn last record is dropped (and what sled
//! wrote of it removed), damage is refused and repaired. The crashes are
//! made by hand: the files as a kill leaves them, restored after a close.

use std::path::Path;

use engram_events::payloads::{SessionEndReason, SessionEnded};
use engram_events::{ActorKind, Envelope, Seq, SessionId};
use engram_storage::wal::{self, WAL_DIR};
use engram_storage::{EventLog, LogConfig, LogError, SledLog};

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

    let report = engram_storage::repair::salvage(&dir).unwrap();
    assert_eq!(report.lost, vec![(1, 1)], "{report:?}");
    assert_eq!(report.salvaged, 19);
    let log = SledLog::open(&dir, LogConfig::default()).unwrap();
    let read = read_all(&log);
    assert_eq!(read.iter().map(|e| e.id).collect::<Vec<_>>(), written[1..].iter().map(|e| e.id).collect::<Vec<_>>());
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
