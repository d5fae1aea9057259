//! What "acknowledged" means, and the fsyncs that make it true.
//!
//! An append is durable once its group commit's record is in a write-ahead
//! file that has been `fdatasync`ed ([`crate::wal`]); sled gets the record
//! after that, and is made durable only at checkpoints, before the
//! write-ahead files it makes redundant are deleted. sled 0.34's `flush()`
//! writes its log with `sync_file_range`, which pushes data pages to the
//! device but neither flushes the drive cache nor writes the file's
//! metadata, and it never fsyncs the separate files it writes for large
//! values (`blobs/`). So at a checkpoint, after sled's flush, `Syncer::sync`
//! `fdatasync`s the `db` file, fsyncs every blob file it has not synced yet,
//! and fsyncs the directories whose entries changed.
//!
//! * A **process crash** (`kill -9`, panic, OOM kill) loses nothing
//!   acknowledged, under either policy: the record was handed to the kernel
//!   before the acknowledgement.
//! * A **power loss or kernel crash** loses nothing acknowledged under
//!   [`Durability::Durable`]; under [`Durability::Relaxed`] it loses at most
//!   the events of the last `flush_every_ms`.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::LogError;

/// When an append is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Acknowledge after the batch's write-ahead record is fsynced.
    /// Concurrent appenders share one fsync (group commit). The default.
    #[default]
    Durable,
    /// Acknowledge once the batch's write-ahead record is written (in the
    /// kernel); fsync every `flush_every_ms`. Faster; a power loss may lose
    /// that window.
    Relaxed {
        /// Flush interval.
        flush_every_ms: u64,
    },
}

/// fsyncs what sled's flush leaves unsynced (at checkpoints).
pub(crate) struct Syncer {
    db_file: File,
    db_path: PathBuf,
    dir: PathBuf,
    blobs: PathBuf,
    synced_blobs: HashSet<std::ffi::OsString>,
    dir_synced: bool,
}

impl Syncer {
    pub(crate) fn new(sled_dir: &Path) -> Result<Self, LogError> {
        let db_path = sled_dir.join("db");
        let db_file = File::open(&db_path).map_err(|e| LogError::io(&db_path, e))?;
        Ok(Syncer {
            db_file,
            db_path,
            dir: sled_dir.to_owned(),
            blobs: sled_dir.join("blobs"),
            synced_blobs: HashSet::new(),
            dir_synced: false,
        })
    }

    /// Makes everything sled has flushed durable.
    pub(crate) fn sync(&mut self) -> Result<(), LogError> {
        self.db_file.sync_data().map_err(|e| LogError::io(&self.db_path, e))?;
        let mut new_entries = false;
        if let Ok(entries) = std::fs::read_dir(&self.blobs) {
            let mut present = HashSet::new();
            for entry in entries.flatten() {
                let name = entry.file_name();
                if !self.synced_blobs.contains(&name) {
                    let path = entry.path();
                    // A blob sled already deleted needs no sync.
                    if let Ok(f) = File::open(&path) {
                        f.sync_all().map_err(|e| LogError::io(&path, e))?;
                    }
                    new_entries = true;
                }
                present.insert(name);
            }
            self.synced_blobs = present;
            if new_entries {
                sync_dir(&self.blobs)?;
            }
        }
        if !self.dir_synced {
            sync_dir(&self.dir)?;
            if let Some(parent) = self.dir.parent() {
                sync_dir(parent)?;
            }
            self.dir_synced = true;
        }
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| LogError::io(dir, e))
}
