//! A hostile data dir: links planted inside it are refused, naming the
//! path, and nothing is written through them; files and dirs found open to
//! others are made owner-only.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use engram_storage::{LogConfig, LogError, SledLog};

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_linked_log_is_refused_and_nothing_is_written_through_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let elsewhere = tmp.path().join("world-writable");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    symlink(&elsewhere, data.join("log.sled")).unwrap();
    let e = SledLog::open(&data, LogConfig::default()).err().expect("refused");
    assert!(matches!(e, LogError::Unsafe { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("log.sled") && msg.contains("symbolic link"), "{msg}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written through the link");
}

#[test]
fn a_linked_lock_file_is_refused_and_its_target_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    symlink(&victim, data.join("engram.lock")).unwrap();
    let e = SledLog::open(&data, LogConfig::default()).err().expect("refused").to_string();
    assert!(e.contains("engram.lock") && e.contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn entries_open_to_others_are_made_owner_only() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    drop(SledLog::open(&data, LogConfig::default()).unwrap());
    // Open everything up, as a umask of 000 would have created it.
    let mut all = vec![data.join("engram.lock")];
    for e in std::fs::read_dir(data.join("log.sled")).unwrap() {
        all.push(e.unwrap().path());
    }
    all.push(data.join("log.sled"));
    for p in &all {
        let open = if p.is_dir() { 0o777 } else { 0o666 };
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(open)).unwrap();
    }
    let log = SledLog::open(&data, LogConfig { serve_followers: true, ..LogConfig::default() }).unwrap();
    for p in &all {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(p), want, "{}", p.display());
    }
    assert_eq!(mode(&data.join("engram.sock")), 0o600);
    drop(log);
}

#[test]
fn an_entry_another_user_owns_is_refused() {
    // Only root can give a file away; elsewhere there is nothing to plant.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to chown");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let lock = data.join("engram.lock");
    std::fs::write(&lock, "").unwrap();
    std::os::unix::fs::chown(&lock, Some(65534), Some(65534)).unwrap();
    let e = SledLog::open(&data, LogConfig::default()).err().expect("refused").to_string();
    assert!(e.contains("engram.lock") && e.contains("owned by uid 65534"), "{e}");
}
