//! Storage errors.

use std::path::PathBuf;

use engram_events::{DecodeError, Seq};

/// Why a log operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// Another process (or another handle in this one) has the data dir open.
    #[error("data dir in use: {path} is locked by {holder} (close it, or pass another --data DIR)")]
    DataDirInUse {
        /// The lock file.
        path: PathBuf,
        /// Who holds it, as recorded in the lock file.
        holder: String,
    },
    /// A record failed its CRC or could not be decoded.
    #[error("corrupt record at seq {seq}: {source}; `engram repair` salvages every other record")]
    Corrupt {
        /// The log position of the bad record.
        seq: Seq,
        /// What is wrong with it.
        #[source]
        source: DecodeError,
    },
    /// Records that cannot be read: a frame that fails its CRC, or a run of
    /// them whose lengths are damaged, up to the next record that reads. The
    /// records before and after are intact.
    #[error("{}: damaged, cannot be read ({what}); `engram repair` salvages every other record", seqs(*.first, *.last))]
    Lost {
        /// The first unreadable position.
        first: Seq,
        /// The last.
        last: Seq,
        /// What was wrong with the first of them.
        what: String,
    },
    /// The log's structure is wrong (a gap, a segment key that does not
    /// match its first record, an index entry pointing nowhere).
    #[error("log inconsistent at seq {seq}: {what}")]
    Inconsistent {
        /// Where.
        seq: Seq,
        /// What.
        what: String,
    },
    /// The data dir was written by a newer engram.
    #[error("{path}: log format {found} is newer than this engram supports ({supported})")]
    FormatTooNew {
        /// The data dir.
        path: PathBuf,
        /// Format found on disk.
        found: u32,
        /// Newest format this build reads.
        supported: u32,
    },
    /// A projection could not be loaded or rebuilt.
    #[error("projection {name}: {what}")]
    Projection {
        /// The projection.
        name: &'static str,
        /// What went wrong.
        what: String,
    },
    /// Something in the data dir is not safe to use: a symbolic link (which
    /// would send the log, the lock or the socket elsewhere), or an entry
    /// another user owns.
    #[error("{path}: {why}; engram does not use it (remove it, or pass another --data DIR)")]
    Unsafe {
        /// The entry.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A repair of the data dir was interrupted: its log is not where it
    /// belongs until `engram repair` finishes it, and nothing may open (or
    /// create) one in its place.
    #[error("{dir}: a repair was interrupted: run `engram repair` to finish it")]
    RepairInterrupted {
        /// The data dir.
        dir: PathBuf,
    },
    /// sled could not open the log (a damaged `conf`, snapshot or page),
    /// or panicked trying.
    #[error("{path}: sled cannot open the log ({what}); `engram repair` salvages its events from the files")]
    Unopenable {
        /// The sled dir.
        path: PathBuf,
        /// What sled said.
        what: String,
    },
    /// A write-ahead file holds a record that fails its check with a sound
    /// one after it (or in a file that is not the last): damage, not a
    /// write a crash cut short. See [`crate::wal`].
    #[error("{path}: the write-ahead log is damaged at byte {offset} ({what}); `engram repair` salvages its events")]
    WalDamaged {
        /// The file.
        path: PathBuf,
        /// Where the bad record starts.
        offset: u64,
        /// What is wrong with it.
        what: String,
    },
    /// The NATS server could not be reached, or did not acknowledge in
    /// time (`crate::jetstream`, feature `jetstream`).
    #[error("NATS server {url}: {what}")]
    Remote {
        /// The server's URL (empty when the failure is not the
        /// connection's).
        url: String,
        /// What failed.
        what: String,
    },
    /// The JetStream stream cannot hold engram's log as it is (it has gaps,
    /// other subjects, or is not what the data dir's copy says).
    #[error("JetStream stream {stream} {what}")]
    Stream {
        /// The stream's name.
        stream: String,
        /// What is wrong with it.
        what: String,
    },
    /// The writer thread is gone (the log was closed or it panicked).
    #[error("the log writer has stopped")]
    WriterStopped,
    /// sled failed.
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    /// A sled transaction failed.
    #[error("sled transaction: {0}")]
    Transaction(String),
    /// A file-system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// `seq 7` or `seqs 7..=9`.
fn seqs(first: Seq, last: Seq) -> String {
    if first == last {
        format!("seq {first}")
    } else {
        format!("seqs {first}..={last}")
    }
}

impl LogError {
    /// Whether this is damage to records a reader can go around (records
    /// that cannot be read, the ones before and after intact) rather than a
    /// failure of the log itself: what read commands, projection catch-up
    /// and `engram repair` skip, naming it.
    pub fn is_record_damage(&self) -> bool {
        matches!(self, LogError::Lost { .. } | LogError::Corrupt { .. })
    }

    /// What a caught panic said (its `&str` or `String` payload).
    pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic".to_owned())
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LogError::Io { path: path.into(), source }
    }
}
