//! # engram-storage
//!
//! The event log engine and the projection framework: what makes engram's
//! one log durable, ordered and replayable, and what turns it into tables
//! that can be dropped and rebuilt bit for bit. It knows events (from
//! `engram-events`) but nothing of what they mean to the assistant — the
//! assistant's own projections, reactors and rules are `engram-learning`.
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
//! * [`backend`] — the [`EventLog`] trait the rest of engram programs
//!   against; sled is the embedded default, [`jetstream`] the log shared by
//!   several runtimes on a NATS JetStream stream.
//! * [`lock`] — one process per data dir.
//! * [`verify`] — CRC, position and index checks over the whole log;
//!   [`repair`] — a damaged log's every readable event, salvaged into a
//!   sound one; [`sled_recovery`] — a damaged record in the part of the
//!   log sled replays at open is found before sled would cut the log at it.
//! * [`projector`] — the projection framework: pure folds, persisted rows
//!   and checkpoints, catch-up, rebuild, digests.
//! * [`embedding_cache`] — the bounded memo of `(model, text) → vector`
//!   that rebuilds and restarts read instead of running the model again.
//! * [`data_dir`] — where the data dir is, and that it stays owner-only.

pub mod backend;
pub mod data_dir;
pub mod durability;
pub mod embedding_cache;
pub mod error;
pub mod follow;
pub mod id_index;
pub mod jetstream;
pub mod lock;
pub mod log;
pub mod projector;
pub mod repair;
pub mod segment;
pub mod sled_recovery;
pub mod snapshot;
pub mod subscription;
pub mod verify;
pub mod wal;

pub use backend::{AppendOutcome, AppendTicket, EventLog, LogBackend};
pub use durability::Durability;
pub use error::LogError;
pub use jetstream::{JetStreamConfig, JetStreamLog};
pub use log::{LogConfig, SledLog};
pub use subscription::{Filter, Subscription};
