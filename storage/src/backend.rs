//! Opening a data dir's log on whichever backend it is configured for
//! (`[storage]` in `engram.toml`: [`StorageSection`]): the factory the rest
//! of engram opens logs through, so that the [`EventLog`] trait itself
//! knows no implementation.
//!
//! What is opened is an [`OpenLog`]: the log to append to and read (any
//! backend, as `Arc<dyn EventLog>`), and the sled log in the data dir —
//! the log itself for the embedded backend, the local copy of the stream
//! for a remote one. The sled log's database also holds what the data dir
//! keeps beside the events (projections, caches, checkpoints: the
//! `engram-local-state` crate), and its records are what `engram verify`
//! and `stats` read.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::durability::Durability;
use crate::error::LogError;
use crate::event_log::EventLog;
use crate::local_db::LocalDb;
use crate::log::{LogConfig, SledLog};

/// `[storage]`: where the log is and how durable an acknowledgement is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSection {
    /// `durable` (fsync before acknowledging) or `relaxed` (the sled log;
    /// a JetStream log is acknowledged by the server, see
    /// `docs/distributed.md`).
    pub durability: String,
    /// For `relaxed`: flush at least this often.
    pub flush_every_ms: u64,
    /// `sled` (the embedded log, the default) or `jetstream` (a NATS
    /// JetStream stream several runtimes share; the data dir keeps a local
    /// copy beside its projections).
    pub backend: StorageBackend,
    /// For `jetstream`: the server, or servers comma-separated.
    pub nats_url: String,
    /// For `jetstream`: the stream's name (its subject is `<stream>.events`).
    pub stream: String,
    /// For `jetstream`: replicas of the stream when engram creates it (3 on
    /// a cluster).
    pub replicas: usize,
    /// For `jetstream`: the environment variable holding the credentials
    /// (a token, `user:password`, or a `.creds` file's contents); empty:
    /// none. Secrets stay out of the file and the log.
    pub credentials_env: String,
    /// sled's page cache, MiB: what of the log and the data dir's database
    /// (projections, the embedding memo) stays in memory. The cache fills
    /// as the log grows, then stays at this size
    /// ([`crate::log::LogConfig::cache_bytes`]).
    pub cache_mb: u64,
    /// For `jetstream`: publish packs of the log's events (1 024 to a
    /// message, in the stream `PACKS_<stream>`) and fetch from them, so
    /// that a new device catches up on a long log fast. On by default.
    pub packs: bool,
    /// Most rows of the embedding memo (`(model, text) → vector`, on disk
    /// beside the log; read through the page cache): past this the least
    /// recently used go.
    pub embedding_cache_rows: usize,
}

/// `[storage] backend`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// The embedded sled log.
    #[default]
    Sled,
    /// A NATS JetStream stream.
    Jetstream,
}

/// `[storage] nats_url` by default (`jetstream::JetStreamConfig`'s too).
const DEFAULT_NATS_URL: &str = "nats://127.0.0.1:4222";

/// `[storage] stream` by default.
const DEFAULT_STREAM: &str = "engram";

impl Default for StorageSection {
    fn default() -> Self {
        StorageSection {
            durability: "durable".into(),
            flush_every_ms: 100,
            backend: StorageBackend::Sled,
            nats_url: DEFAULT_NATS_URL.to_owned(),
            stream: DEFAULT_STREAM.to_owned(),
            replicas: 1,
            credentials_env: String::new(),
            cache_mb: crate::log::DEFAULT_CACHE_BYTES >> 20,
            packs: true,
            embedding_cache_rows: 10_000,
        }
    }
}

impl StorageSection {
    /// `cache_mb` in bytes (at least 1 MiB).
    pub fn cache_bytes(&self) -> u64 {
        self.cache_mb.clamp(1, u64::MAX >> 20) << 20
    }

    /// `durability` as a policy.
    pub fn durability(&self) -> Result<Durability, String> {
        match self.durability.as_str() {
            "relaxed" => Ok(Durability::Relaxed { flush_every_ms: self.flush_every_ms }),
            "durable" => Ok(Durability::Durable),
            other => Err(format!("[storage] durability = {other:?}: expected \"durable\" or \"relaxed\"")),
        }
    }

    /// The log this section chooses; the credentials are read from their
    /// variable here.
    pub fn backend(&self) -> Result<LogBackend, String> {
        Ok(match self.backend {
            StorageBackend::Sled => LogBackend::Sled,
            #[cfg(not(feature = "jetstream"))]
            StorageBackend::Jetstream => {
                return Err(
                    "[storage] backend = \"jetstream\": this engram was built without the `jetstream` feature".into()
                )
            }
            #[cfg(feature = "jetstream")]
            StorageBackend::Jetstream => {
                if self.stream.is_empty() || self.stream.contains(['.', ' ', '*', '>']) {
                    return Err(format!(
                        "[storage] stream = {:?}: a JetStream stream name, without dots, spaces or wildcards",
                        self.stream
                    ));
                }
                let credentials = match self.credentials_env.trim() {
                    "" => None,
                    var => Some(
                        crate::jetstream::Credentials::from_env(var)
                            .map_err(|e| format!("[storage] credentials_env: {e}"))?,
                    ),
                };
                LogBackend::JetStream(crate::jetstream::JetStreamConfig {
                    url: self.nats_url.clone(),
                    stream: self.stream.clone(),
                    replicas: self.replicas.max(1),
                    credentials,
                    packs: self.packs,
                    ..crate::jetstream::JetStreamConfig::default()
                })
            }
        })
    }
}

/// Which log a data dir runs on: what `[storage] backend` chooses.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum LogBackend {
    /// The embedded sled log (the default).
    #[default]
    Sled,
    /// A NATS JetStream stream, with its local copy in the data dir.
    #[cfg(feature = "jetstream")]
    JetStream(crate::jetstream::JetStreamConfig),
}

impl LogBackend {
    /// Opens the log in `dir` (taking the data dir's lock).
    pub fn open(&self, dir: &Path, config: LogConfig) -> Result<OpenLog, LogError> {
        match self {
            LogBackend::Sled => Ok(OpenLog::from_sled(SledLog::open(dir, config)?)),
            #[cfg(feature = "jetstream")]
            LogBackend::JetStream(js) => {
                let log = Arc::new(crate::jetstream::JetStreamLog::open(dir, config, js.clone())?);
                let sled = log.copy().clone();
                Ok(OpenLog { log, sled, _kept: None })
            }
        }
    }

    /// For reading only: the log as [`LogBackend::open`] gives it, opened
    /// on a copy of its files so that the data dir keeps every byte it had,
    /// and a note for stderr when what is read is not that (`None`: it is).
    ///
    /// Rules, each for a reason:
    ///
    /// 1. **A reader changes no byte of the data dir.** sled has no
    ///    read-only mode: every open writes a new snapshot (`snap.*`) and
    ///    the end of its log, and the log's write-ahead files rotate. So the
    ///    log's files (`log.sled`, `log.wal`) are copied to the system's
    ///    temporary directory (`$TMPDIR`), the data dir locked meanwhile so
    ///    that nothing changes under the copy, and the copy is opened (and
    ///    removed when the [`OpenLog`] is dropped). Whatever the reader
    ///    writes — a projection's snapshot, an embedding cached — goes to
    ///    the copy.
    /// 2. **The copy costs a read of the log's files**, no more: `std::fs::copy`
    ///    uses `copy_file_range`, a reflink where the file system has them.
    ///    Measured: 0.45 s a GB (median of three on a 2-core machine, from
    ///    the page cache; docs/log.md).
    /// 3. **A copy that cannot be made** (the temporary directory full or
    ///    unwritable) is no reason to fail: the log is opened in place, with
    ///    a note saying that sled will rewrite its snapshot.
    /// 4. **A JetStream log** is copied the same way, then opened with its
    ///    server, which brings the copy up to the stream's head; a server
    ///    that cannot be reached leaves the copy as the data dir had it
    ///    (`jetstream::OfflineCopy`), with a note saying so: a laptop away
    ///    from its server still shows what it knows.
    pub fn open_for_reading(&self, dir: &Path, config: LogConfig) -> Result<(OpenLog, Option<String>), LogError> {
        let config = LogConfig { serve_followers: false, ..config };
        let lock = crate::lock::DataDirLock::acquire(dir)?;
        let copied = read_copy(dir);
        drop(lock);
        let tmp = match copied {
            Ok(tmp) => tmp,
            Err(e) => {
                let (log, note) = self.open_offline(dir, config)?;
                let why = format!(
                    "cannot copy the log to read it ({e}); reading it in place, where sled rewrites its snapshot"
                );
                return Ok((log, Some(note.map_or(why.clone(), |n| format!("{why}; {n}")))));
            }
        };
        let (log, note) = self.open_offline(tmp.path(), config)?;
        Ok((OpenLog { _kept: Some(Arc::new(tmp)), ..log }, note))
    }

    /// [`LogBackend::open`], and for a JetStream log whose server cannot be
    /// reached, its local copy read-only with a note saying so.
    fn open_offline(&self, dir: &Path, config: LogConfig) -> Result<(OpenLog, Option<String>), LogError> {
        match (self, self.open(dir, config.clone())) {
            #[cfg(feature = "jetstream")]
            (LogBackend::JetStream(js), Err(unreachable @ LogError::Remote { .. })) => {
                let copy = Arc::new(crate::jetstream::OfflineCopy::open(dir, config, js.clone())?);
                let note = format!("{unreachable}; reading {}", copy.describe());
                let sled = copy.copy().clone();
                Ok((OpenLog { log: copy, sled, _kept: None }, Some(note)))
            }
            (_, opened) => opened.map(|log| (log, None)),
        }
    }
}

/// A copy of the log's files in `dir` (its database and write-ahead files)
/// in a new temporary directory, removed when dropped. The caller holds
/// the data dir's lock, so that nothing changes under the copy.
fn read_copy(dir: &Path) -> Result<tempfile::TempDir, LogError> {
    let tmp = tempfile::Builder::new().prefix("engram-read-").tempdir().map_err(|e| LogError::io(dir, e))?;
    for entry in [crate::data_dir::LOG_DIR, crate::data_dir::WAL_DIR] {
        let from = dir.join(entry);
        if from.exists() {
            let to = tmp.path().join(entry);
            crate::data_dir::copy_tree(&from, &to).map_err(|e| LogError::io(&to, e))?;
        }
    }
    Ok(tmp)
}

/// A data dir's log, opened by [`LogBackend::open`]: dereferences to the
/// log (append and read through it, whatever the backend), and holds the
/// data dir's sled log beside it ([`OpenLog::records`]).
#[derive(Clone)]
pub struct OpenLog {
    log: Arc<dyn EventLog>,
    sled: Arc<SledLog>,
    /// What must live as long as the log (the temporary directory of a
    /// copy read instead of the log).
    _kept: Option<Arc<tempfile::TempDir>>,
}

impl OpenLog {
    /// A sled log of its own: the embedded backend.
    pub fn from_sled(log: SledLog) -> OpenLog {
        let sled = Arc::new(log);
        OpenLog { log: sled.clone(), sled, _kept: None }
    }

    /// The log, to hand to whatever appends or reads (an actor, a
    /// projection's catch-up): any backend.
    pub fn log(&self) -> &Arc<dyn EventLog> {
        &self.log
    }

    /// The data dir's sled log: the log itself for the embedded backend,
    /// the local copy of the stream for a remote one. `engram verify` and
    /// `stats` read its records. Appending to it directly would bypass a
    /// remote backend: append through the log.
    pub fn records(&self) -> &SledLog {
        &self.sled
    }

    /// The data dir's database, where what it keeps beside the events
    /// lives.
    pub fn local_db(&self) -> &LocalDb {
        self.sled.local_db()
    }
}

impl Deref for OpenLog {
    type Target = dyn EventLog;

    fn deref(&self) -> &(dyn EventLog + 'static) {
        &*self.log
    }
}

#[cfg(all(test, feature = "jetstream"))]
mod tests {
    use super::*;

    #[test]
    fn the_sections_defaults_are_the_backends() {
        let js = crate::jetstream::JetStreamConfig::default();
        let section = StorageSection::default();
        assert_eq!((section.nats_url, section.stream, section.replicas), (js.url, js.stream, js.replicas));
    }
}
