//! Snapshots against a real log: one is used only while the log still has,
//! at its `seq`, the event it was folded up to, and only up to its owner's
//! checkpoint (rule 2 of `engram_local_state::snapshot`).

use engram_events::payloads::{SessionEndReason, SessionEnded};
use engram_events::{ActorKind, Envelope, Seq, SessionId};
use engram_local_state::snapshot::{SnapshotDir, SnapshotError};
use engram_storage::{EventLog, LogConfig, SledLog};

fn event(i: u32) -> Envelope {
    Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
        .with_session(SessionId::new(format!("s-{i}")))
}

fn log_of(dir: &std::path::Path, n: u32) -> SledLog {
    let log = SledLog::open(dir, LogConfig::default()).unwrap();
    log.append((1..=n).map(event).collect()).unwrap();
    log
}

#[test]
fn a_snapshot_is_used_only_for_the_log_and_the_checkpoint_it_was_saved_for() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_of(dir.path(), 10);
    let snaps = SnapshotDir::new(dir.path());
    assert!(snaps.load(&log, "a", 1, Seq(10)).unwrap().is_none(), "none saved yet");
    snaps.save(&log, "a", 1, Seq(7), b"state at 7").unwrap();

    let loaded = snaps.load(&log, "a", 1, Seq(10)).unwrap().unwrap();
    assert_eq!((loaded.seq, loaded.body()), (Seq(7), &b"state at 7"[..]));
    // The owner's checkpoint behind the snapshot: it holds events the owner
    // has not handled.
    assert!(matches!(snaps.load(&log, "a", 1, Seq(6)), Err(SnapshotError::Stale(_))));
    // Another version of the owner's state.
    assert!(matches!(snaps.load(&log, "a", 2, Seq(10)), Err(SnapshotError::Stale(_))));
    // Saved again: the new one replaces the old, whole.
    snaps.save(&log, "a", 1, Seq(9), b"state at 9").unwrap();
    assert_eq!(snaps.load(&log, "a", 1, Seq(10)).unwrap().unwrap().seq, Seq(9));
    assert!(!snaps.path("a").with_extension("snap.tmp").exists());
    drop(log);

    // Another log of the same length (a re-import, a repaired copy): other
    // events at seq 9, so the snapshot describes another history.
    let other = tempfile::tempdir().unwrap();
    let other_log = log_of(other.path(), 10);
    std::fs::create_dir_all(other.path().join("snapshots")).unwrap();
    std::fs::copy(snaps.path("a"), SnapshotDir::new(other.path()).path("a")).unwrap();
    let err = SnapshotDir::new(other.path()).load(&other_log, "a", 1, Seq(10)).unwrap_err();
    assert!(matches!(err, SnapshotError::Stale(ref what) if what.contains("the log has")), "{err}");

    // A log cut back behind the snapshot (a power loss took its tail).
    let short = tempfile::tempdir().unwrap();
    let short_log = log_of(short.path(), 5);
    std::fs::create_dir_all(short.path().join("snapshots")).unwrap();
    std::fs::copy(snaps.path("a"), SnapshotDir::new(short.path()).path("a")).unwrap();
    assert!(SnapshotDir::new(short.path()).load(&short_log, "a", 1, Seq(10)).is_err());
}

#[test]
fn a_torn_or_damaged_file_is_refused_and_remove_all_clears_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_of(dir.path(), 3);
    let snaps = SnapshotDir::new(dir.path());
    snaps.save(&log, "a", 1, Seq(3), &[5u8; 100]).unwrap();
    let whole = std::fs::read(snaps.path("a")).unwrap();
    for cut in [0, 10, whole.len() / 2, whole.len() - 1] {
        std::fs::write(snaps.path("a"), &whole[..cut]).unwrap();
        assert!(matches!(snaps.load(&log, "a", 1, Seq(3)), Err(SnapshotError::Damaged(_))), "cut at {cut}");
    }
    let mut flipped = whole.clone();
    flipped[whole.len() - 10] ^= 0x40;
    std::fs::write(snaps.path("a"), &flipped).unwrap();
    assert!(matches!(snaps.load(&log, "a", 1, Seq(3)), Err(SnapshotError::Damaged(_))));
    // Nothing is saved for seq 0 (an owner that has folded nothing).
    snaps.save(&log, "b", 1, Seq(0), b"x").unwrap();
    assert!(!snaps.path("b").exists());
    snaps.remove_all().unwrap();
    assert!(snaps.load(&log, "a", 1, Seq(3)).unwrap().is_none());
    snaps.remove_all().unwrap();
}

/// A link planted where the snapshots go is refused, never followed: the
/// dir it points to gets nothing and keeps its mode.
#[cfg(unix)]
#[test]
fn a_planted_link_is_not_followed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = log_of(dir.path(), 3);
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("snapshots")).unwrap();
    let snaps = SnapshotDir::new(dir.path());
    assert!(matches!(snaps.save(&log, "a", 1, Seq(3), b"state"), Err(SnapshotError::Damaged(_))));
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    let mode = std::fs::metadata(elsewhere.path()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
}
