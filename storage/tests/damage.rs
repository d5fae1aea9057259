//! A damaged record is found by `verify` with its seq, is reported by a
//! replay as one error naming it, and costs only itself: the records
//! before and after it read as they were.

use engram_events::codec::binary::{self, FRAME_HEADER_LEN};
use engram_events::payloads::{SessionEndReason, SessionEnded};
use engram_events::{ActorKind, Envelope, Seq, SessionId};
use engram_storage::verify::verify;
use engram_storage::{EventLog, LogConfig, LogError, SledLog};

fn event(i: u32) -> Envelope {
    Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
        .with_session(SessionId::new(format!("s-{i}")))
}

/// Flips one byte in the body of the `nth` frame of the segment starting at
/// `segment_first`; returns the seq of that frame.
/// sled opened directly, waiting for its file lock: the log closed a
/// moment ago may still hold it while its flusher thread winds down.
fn open_raw(path: std::path::PathBuf) -> sled::Db {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match sled::open(&path) {
            Ok(db) => return db,
            Err(e) if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
}

fn damage(dir: &std::path::Path, segment_first: Seq, nth: usize) -> Seq {
    let db = open_raw(dir.join("log.sled"));
    let tree = db.open_tree("log").unwrap();
    let key = segment_first.0.to_be_bytes();
    let mut bytes = tree.get(key).unwrap().expect("segment").to_vec();
    let mut offset = 0;
    let mut rest = &bytes[..];
    for _ in 0..nth {
        let (frame, tail) = binary::split_frame(rest).unwrap();
        offset += frame.bytes.len();
        rest = tail;
    }
    bytes[offset + FRAME_HEADER_LEN + 3] ^= 0x5a;
    tree.insert(key, bytes).unwrap();
    db.flush().unwrap();
    Seq(segment_first.0 + nth as u64)
}

#[test]
fn a_damaged_record_is_reported_and_the_rest_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let segments: Vec<Seq> = {
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        log.append((0..600).map(event).collect()).unwrap();
        log.segments().map(|s| s.unwrap().0).collect()
    };
    assert!(segments.len() >= 4, "several segments: {segments:?}");
    let bad = damage(dir.path(), segments[2], 3);

    let log = SledLog::open(dir.path(), LogConfig::default()).expect("a damaged middle record does not stop open");
    let report = verify(&log, |_| {});
    assert!(!report.ok());
    assert_eq!(report.first_bad_seq(), Some(bad));
    assert!(report.faults[0].to_string().contains(&format!("seq {bad}")), "{}", report.faults[0]);
    assert!(report.faults[0].to_string().contains("CRC"), "{}", report.faults[0]);
    // Later segments are still checked.
    assert!(report.events >= 600 - (segments[3].0 - segments[2].0), "{}", report.events);

    // Replay: every record but the damaged one, and one error naming it.
    let mut replayed = Vec::new();
    let mut errors = Vec::new();
    for env in log.read_from(Seq(1)) {
        match env {
            Ok(e) => replayed.push(e.seq.0),
            Err(e) => errors.push(e),
        }
    }
    assert_eq!(replayed, (1..=600).filter(|s| *s != bad.0).collect::<Vec<_>>());
    match errors.as_slice() {
        [LogError::Lost { first, last, .. }] => assert_eq!((*first, *last), (bad, bad)),
        other => panic!("expected one lost record, got {other:?}"),
    }
    // Data after the damaged segment is intact.
    let after: Vec<u64> = log.read_from(segments[3]).map(|e| e.unwrap().seq.0).collect();
    assert_eq!(after, (segments[3].0..=600).collect::<Vec<_>>());
    // And appends still work (the tail is healthy).
    assert_eq!(log.append(vec![event(9999)]).unwrap()[0].seq(), Seq(601));
}

#[test]
fn a_damaged_last_segment_refuses_appends_but_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let last = {
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        log.append((0..50).map(event).collect()).unwrap();
        log.segments().last().unwrap().unwrap().0
    };
    let bad = damage(dir.path(), last, 0);
    let log = SledLog::open(dir.path(), LogConfig::default()).expect("opens for verify and replay");
    assert_eq!(verify(&log, |_| {}).first_bad_seq(), Some(bad));
    let err = log.append(vec![event(1)]).unwrap_err();
    assert!(err.to_string().contains("engram verify"), "{err}");
}

#[test]
fn ids_lost_between_the_two_batches_of_a_commit_are_reindexed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let events: Vec<Envelope> = (0..300).map(event).collect();
    {
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        log.append(events[..200].to_vec()).unwrap();
        log.append(events[200..].to_vec()).unwrap();
    }
    // A crash after the last commit's segments but before its index batch.
    {
        let db = open_raw(dir.path().join("log.sled"));
        // The buckets as they were before that batch (storage/src/id_index.rs:
        // entries of 24 bytes, the id first).
        let lost: std::collections::HashSet<[u8; 16]> = events[200..].iter().map(|e| e.id.0 .0.to_be_bytes()).collect();
        let ids = db.open_tree("ids").unwrap();
        for (key, bucket) in ids.iter().map(Result::unwrap) {
            let kept: Vec<u8> = bucket.chunks(24).filter(|e| !lost.contains(&e[..16])).flatten().copied().collect();
            if kept.is_empty() {
                ids.remove(key).unwrap();
            } else {
                ids.insert(key, kept).unwrap();
            }
        }
        db.flush().unwrap();
    }
    let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
    assert!(verify(&log, |_| {}).ok());
    assert_eq!(log.seq_of(events[250].id).unwrap(), Some(Seq(251)));
    // Still idempotent for those ids.
    assert_eq!(log.append(vec![events[299].clone()]).unwrap()[0], engram_storage::AppendOutcome::Existing(Seq(300)));
}

#[test]
fn a_creation_cut_between_sleds_two_conf_writes_opens_as_new() {
    // sled writes `conf` as its parameters, then their CRC; a kill between
    // the two, before anything was stored, used to leave a data dir no
    // command could open ("Read corrupted data").
    let made = tempfile::tempdir().unwrap();
    drop(SledLog::open(made.path(), LogConfig::default()).unwrap());
    let conf = std::fs::read(made.path().join("log.sled").join("conf")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("log.sled")).unwrap();
    std::fs::write(dir.path().join("log.sled").join("conf"), &conf[..conf.len() - 4]).unwrap();
    std::fs::write(dir.path().join("log.sled").join("db"), b"").unwrap();
    let log = SledLog::open(dir.path(), LogConfig::default()).expect("opens as a new log");
    assert_eq!(log.append(vec![event(1)]).unwrap()[0].seq(), Seq(1));
}
