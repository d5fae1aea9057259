//! Where the log bench's stores live: a temporary directory (under
//! `--dir`, else the system's), a fresh numbered directory per measurement
//! so that no run sees another's files, and how many bytes a store takes
//! on disk (the report's disk use).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The bench's temporary directory, removed when dropped.
pub(super) struct Scratch {
    /// The directory itself.
    pub(super) root: PathBuf,
    _temp: Option<tempfile::TempDir>,
    next: usize,
}

impl Scratch {
    /// A temporary directory in `dir` (created if need be), or in the
    /// system's temporary directory.
    pub(super) fn new(dir: Option<&Path>) -> anyhow::Result<Self> {
        match dir {
            Some(d) => {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
                let temp = tempfile::Builder::new().prefix("engram-bench-").tempdir_in(d)?;
                Ok(Scratch { root: temp.path().to_owned(), _temp: Some(temp), next: 0 })
            }
            None => {
                let temp = tempfile::Builder::new().prefix("engram-bench-").tempdir()?;
                Ok(Scratch { root: temp.path().to_owned(), _temp: Some(temp), next: 0 })
            }
        }
    }

    /// A fresh, empty directory.
    pub(super) fn fresh(&mut self, what: &str) -> anyhow::Result<PathBuf> {
        self.next += 1;
        let dir = self.root.join(format!("{:03}-{what}", self.next));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }
}

/// Removes a measurement's directory (best effort).
pub(super) fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// Total size of the files under `path` (or of `path` itself).
pub fn disk_bytes(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if meta.is_dir() {
        std::fs::read_dir(path).map(|rd| rd.flatten().map(|e| disk_bytes(&e.path())).sum()).unwrap_or(0)
    } else {
        meta.len()
    }
}

/// Size of the SQLite database at `db` with its `-wal` and `-shm` files.
pub(super) fn sqlite_files_bytes(db: &Path) -> u64 {
    let mut total = disk_bytes(db);
    for suffix in ["-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        total += disk_bytes(Path::new(&p));
    }
    total
}
