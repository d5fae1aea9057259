//! The data dir: where it is, and that it stays its owner's.
//!
//! **Where.** Precedence, first match wins: an explicit directory (the
//! CLI's global `--data DIR`, a host's own choice), the `ENGRAM_DATA`
//! environment variable, `$XDG_DATA_HOME/engram`, `~/.local/share/engram`
//! ([`resolve`]).
//!
//! **Owner-only.** //! A data dir holds every utterance, tool argument and reply the assistant
//! has seen, so nobody but its owner may list or read it. It is created
//! with mode `0700`, and a dir that already exists but is open to the group
//! or to others (created by hand, by an older engram, or under a loose
//! umask) is tightened when engram opens it, with a warning saying so.

use std::io;
use std::path::{Path, PathBuf};

/// The environment variable naming the data dir.
pub const ENV_VAR: &str = "ENGRAM_DATA";

/// Resolves the data dir (see the module docs).
pub fn resolve(explicit: Option<PathBuf>) -> PathBuf {
    resolve_with(explicit, |k| std::env::var_os(k))
}

fn resolve_with(explicit: Option<PathBuf>, env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
    if let Some(dir) = explicit {
        return dir;
    }
    if let Some(dir) = non_empty(ENV_VAR) {
        return dir.into();
    }
    if let Some(xdg) = non_empty("XDG_DATA_HOME") {
        return PathBuf::from(xdg).join("engram");
    }
    let home = non_empty("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/engram")
}

/// Copies the tree at `from` to `to` (files and dirs only, a link is not
/// followed), each dir created owner-only: how `engram repair` keeps a copy
/// of what it salvages from, and how tests take a data dir's twin.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    create_private_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Creates `path` (and any missing parents) with mode `0700`, or tightens
/// an existing dir that is group- or world-accessible to owner-only.
///
/// Parents created here are `0700` too; existing parents are left alone
/// (they are the user's, e.g. `~/.local/share`). On non-unix platforms the
/// dir is only created: permissions there are ACLs, not mode bits.
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, "not a directory: a file is there"));
    }
    if !path.is_dir() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(path)?;
    }
    #[cfg(unix)]
    tighten(path)?;
    Ok(())
}

/// The log's sled database, inside the data dir ([`crate::log`]).
pub const LOG_DIR: &str = "log.sled";

/// The directory of the write-ahead files, inside the data dir
/// ([`crate::wal`]).
pub const WAL_DIR: &str = "log.wal";

/// Whether `e` says the disk is full (or the user's quota is).
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
}

/// Where `engram repair` builds the new log before it takes the old one's
/// place ([`crate::repair`]).
pub const REPAIR_STAGING: &str = ".repair";

/// The mark in a damaged log put aside (`damaged-<time>/`) whose repair
/// has not finished.
pub const REPAIRING_MARK: &str = "REPAIRING";

/// Whether a repair of `dir` was interrupted: its staging dir is there, or
/// a damaged log put aside is still marked. Until `engram repair` finishes
/// it, the log must not be opened — it is not where it belongs, and a log
/// created in its place would be taken for it.
pub fn repair_pending(dir: &Path) -> bool {
    dir.join(REPAIR_STAGING).exists() || !interrupted_repairs(dir).is_empty()
}

/// The damaged logs put aside whose repair has not finished, oldest first.
pub fn interrupted_repairs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(REPAIRING_MARK).exists() && p.join(LOG_DIR).is_dir())
        .collect();
    found.sort();
    found
}

/// The entries of a data dir engram writes: each must be the user's own
/// and not a symbolic link.
const ENTRIES: &[&str] = &["engram.lock", "engram.sock", LOG_DIR, WAL_DIR];

/// Checks a data dir before engram uses it, and tightens what it finds:
///
/// 1. the dir itself, `engram.lock`, `engram.sock`, `log.sled`, `log.wal` and everything in them must be
///    owned by this process's user — another user's file in a private dir
///    is a planted one;
/// 2. none of those may be a symbolic link: `log.sled` linked to a
///    world-writable dir would put the log there, `engram.lock` linked to
///    any file would have it overwritten with a pid (the dir itself may be
///    a link: that is the user's own choice of where the data lives);
/// 3. files are made `0600` and dirs `0700`, whatever the umask they were
///    created under (sled's files, the socket, the lock).
///
/// Called when the log is opened (before the lock is taken, and again
/// after sled has created its files).
pub fn guard(dir: &Path) -> Result<(), crate::LogError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        let unsafe_entry = |path: &Path, why: String| crate::LogError::Unsafe { path: path.to_owned(), why };
        let meta = std::fs::metadata(dir).map_err(|e| crate::LogError::io(dir, e))?;
        if meta.uid() != me {
            return Err(unsafe_entry(dir, format!("owned by uid {}, not by you (uid {me})", meta.uid())));
        }
        let mut paths: Vec<std::path::PathBuf> = ENTRIES.iter().map(|e| dir.join(e)).collect();
        for below in [LOG_DIR, WAL_DIR] {
            let below = dir.join(below);
            if std::fs::symlink_metadata(&below).is_ok_and(|m| m.is_dir()) {
                entries_below(&below, &mut paths).map_err(|e| crate::LogError::io(&below, e))?;
            }
        }
        for path in paths {
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.file_type().is_symlink() {
                return Err(unsafe_entry(&path, "a symbolic link inside the data dir".into()));
            }
            if meta.uid() != me {
                return Err(unsafe_entry(&path, format!("owned by uid {}, not by you (uid {me})", meta.uid())));
            }
            let want = if meta.is_dir() { 0o700 } else { 0o600 };
            set_mode(&path, &meta, want).map_err(|e| crate::LogError::io(&path, e))?;
        }
    }
    Ok(())
}

/// Every entry below `dir` (not following links), depth first: what the
/// guard checks in `log.sled`, and what `engram repair` scans.
pub(crate) fn entries_below(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            entries_below(&path, out)?;
        }
        out.push(path);
    }
    Ok(())
}

/// Clears the group and other bits of `path` (keeping the owner's, which
/// engram does not widen).
#[cfg(unix)]
fn set_mode(path: &Path, meta: &std::fs::Metadata, want: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    let tight = mode & want;
    if mode != tight {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(tight))?;
    }
    Ok(())
}

/// Drops the group and other bits of an existing dir, if any are set.
#[cfg(unix)]
fn tighten(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        let tight = mode & 0o700;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(tight))?;
        tracing::warn!(
            dir = %path.display(),
            from = format_args!("{mode:o}"),
            to = format_args!("{tight:o}"),
            "data dir was accessible to other users; tightened to owner-only"
        );
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_nested_dirs_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/data");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700, "created parents are private too");
        // Idempotent.
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn tightens_an_open_dir_and_keeps_owner_bits() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert_eq!(mode(&dir), 0o775);
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        // An owner-only dir with fewer owner bits is left as it is.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o500);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn a_file_in_the_way_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("data");
        std::fs::write(&file, b"x").unwrap();
        assert!(create_private_dir(&file).is_err());
    }
}

#[cfg(test)]
mod resolve_tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)], explicit: Option<&str>) -> PathBuf {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        resolve_with(explicit.map(PathBuf::from), |k| map.get(k).map(Into::into))
    }

    #[test]
    fn precedence() {
        let all = [("ENGRAM_DATA", "/env"), ("XDG_DATA_HOME", "/xdg"), ("HOME", "/home/u")];
        assert_eq!(with(&all, Some("/flag")), PathBuf::from("/flag"));
        assert_eq!(with(&all, None), PathBuf::from("/env"));
        assert_eq!(with(&all[1..], None), PathBuf::from("/xdg/engram"));
        assert_eq!(with(&all[2..], None), PathBuf::from("/home/u/.local/share/engram"));
        assert_eq!(with(&[("ENGRAM_DATA", ""), ("HOME", "/h")], None), PathBuf::from("/h/.local/share/engram"));
    }
}
