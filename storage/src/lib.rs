//! # engram-storage
//!
//! The event log: what makes engram's one log durable, ordered and
//! replayable, on sled or on a shared JetStream stream. It knows events
//! (from `engram-events`) but nothing of what they mean to the assistant,
//! nor what the data dir keeps beside the log (projections, snapshots,
//! checkpoints: `engram-local-state`).
//!
//! * [`log`] — the event log on sled: one writer thread fed over a
//!   crossbeam channel, group commit, segments of packed frames
//!   ([`segment`]), an id index that makes appends idempotent, and the
//!   write-ahead file whose one `fdatasync` per group commit makes
//!   "acknowledged" mean durable ([`wal`]), and the checkpoint that makes
//!   sled durable behind it ([`durability`]).
//! * [`subscription`] — backlog-then-live streams with no gap and no
//!   duplicate, that never slow the writer down.
//! * [`follow`] — the owner of a data dir streams it to followers in other
//!   processes (`engram replay --follow`) over a Unix socket.
//! * [`event_log`] — the [`EventLog`] trait the rest of engram programs
//!   against, knowing none of its implementations; [`backend`] opens
//!   whichever a data dir is configured for: sled, the embedded default, or
//!   `jetstream` (feature `jetstream`), the log shared by several runtimes
//!   on a NATS JetStream stream.
//! * [`local_db`] — the data dir's database, which the log shares with
//!   what is kept beside it.
//! * [`lock`] — one process per data dir.
//! * [`verify`] — CRC, position and index checks over the whole log;
//!   [`repair`] — a damaged log's every readable event, salvaged into a
//!   sound one; [`sled_recovery`] — a damaged record in the part of the
//!   log sled replays at open is found before sled would cut the log at it.
//! * [`data_dir`] — where the data dir is, and that it stays owner-only.
//! * [`import_source`] — the file, FIFO or standard input `engram import`
//!   reads, opened here so the import itself opens nothing.

#![warn(missing_docs)]

pub mod backend;
pub mod data_dir;
pub mod durability;
pub mod error;
pub mod event_log;
pub mod follow;
pub mod id_index;
pub mod import_source;
#[cfg(feature = "jetstream")]
pub mod jetstream;
pub mod local_db;
pub mod lock;
pub mod log;
pub mod repair;
pub mod segment;
pub mod sled_recovery;
pub mod subscription;
pub mod verify;
pub mod wal;

pub use backend::{LogBackend, OpenLog, StorageBackend, StorageSection};
pub use durability::Durability;
pub use error::LogError;
pub use event_log::{AppendOutcome, AppendTicket, EventLog};
pub use import_source::{ImportSource, ImportSourceError};
#[cfg(feature = "jetstream")]
pub use jetstream::{JetStreamConfig, JetStreamLog};
pub use local_db::LocalDb;
pub use log::{LogConfig, SledLog};
pub use subscription::{Filter, Subscription};
