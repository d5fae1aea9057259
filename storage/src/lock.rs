//! The data-dir lock: one process owns a data dir at a time.
//!
//! sled would also refuse a second opener, but with an opaque I/O error; an
//! advisory lock on `engram.lock` taken *before* sled is opened turns that
//! into a clear "data dir in use" naming the holder, and never blocks.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::error::LogError;

/// Holds the exclusive lock until dropped.
#[derive(Debug)]
pub struct DataDirLock {
    file: File,
    path: PathBuf,
}

impl DataDirLock {
    /// Takes the lock on `dir/engram.lock` without waiting.
    pub fn acquire(dir: &Path) -> Result<Self, LogError> {
        let path = dir.join("engram.lock");
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Owner-only whatever the umask; never through a link (the data
            // dir's guard refuses one first; this closes the gap after it).
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let mut file = options.open(&path).map_err(|e| LogError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(LogError::DataDirInUse {
                    path,
                    holder: if holder.is_empty() { "another process".to_owned() } else { holder.to_owned() },
                });
            }
            Err(TryLockError::Error(e)) => return Err(LogError::io(&path, e)),
        }
        let me = format!("pid {}", std::process::id());
        let write = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(me.as_bytes()));
        match write {
            // The pid only names the holder in another opener's error: on a
            // full disk the lock is held without it, so that what only
            // reads still can.
            Err(e) if crate::data_dir::is_disk_full(&e) => {
                tracing::debug!("{}: no space to write the pid; the lock is held without it", path.display())
            }
            other => other.map_err(|e| LogError::io(&path, e))?,
        }
        Ok(DataDirLock { file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DataDirLock {
    /// Empties the lock file while still holding the lock (closing the
    /// file releases it), so that no dead pid is left naming a holder.
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}
