//! # engram-storage
//!
//! Everything engram keeps on disk, on sled:
//!
//! * [`log`] — the event log: one writer thread fed over a crossbeam
//!   channel, group commit, segments of packed frames, an id index that
//!   makes appends idempotent, and the fsync that makes "acknowledged" mean
//!   durable ([`durability`]).
//! * [`subscription`] — backlog-then-live streams with no gap and no
//!   duplicate, that never slow the writer down.
//! * [`follow`] — the owner of a data dir streams it to followers in other
//!   processes (`engram replay --follow`) over a Unix socket.
//! * [`backend`] — the [`EventLog`] trait the rest of engram programs
//!   against; sled is the embedded default.
//! * [`import`] — turn-record and envelope importers (validation first,
//!   deterministic ids, idempotent and resumable).
//! * [`projection`] — the projection framework (pure folds, persisted rows
//!   and checkpoints, catch-up, rebuild, digests); [`projections`] — the
//!   projections themselves.
//! * [`config`] — `engram.toml` with `ENGRAM_*` overrides.
//! * [`data_dir`] — the data dir is created and kept owner-only.
//! * [`intent`] — the rule-based intent judge (wake words, stop phrases,
//!   hot window), the listener's fallback when no LLM judge is configured.
//! * [`memory`] — the offline summariser and graph fact extractor, the
//!   fallbacks of seed 002 #9 and #10.
//! * [`embedding_cache`] — the bounded memo of `(model, text) → vector`.
//! * [`fastpath`] — the fast path's rules: normalisation, the L0 table,
//!   the argument extractor, the false-replay gate.
//! * [`patterns`] — the pattern store's math: fingerprints, similarity,
//!   outcome accumulators, the K-NN index, recommendations.
//! * [`reactors`] — events derived from events (day activation, …), one
//!   code path for the live actors and the importer.
//! * [`vector`] — nearest neighbours by cosine over embedding vectors:
//!   a vectorised exact scan below ~3,000 rows, an HNSW graph above,
//!   tombstoned deletes, one-file dump/load, and the `.fvecs` reader.
//! * [`verify`] — CRC, position and index checks over the whole log.

pub mod backend;
pub mod config;
pub mod data_dir;
pub mod durability;
pub mod embedding_cache;
pub mod error;
pub mod fastpath;
pub mod features;
pub mod follow;
pub mod import;
pub mod intent;
pub mod lock;
pub mod log;
pub mod memory;
pub mod patterns;
pub mod projection;
pub mod projections;
pub mod reactors;
pub mod segment;
pub mod subscription;
pub mod vector;
pub mod verify;

pub use backend::{AppendOutcome, AppendTicket, EventLog};
pub use durability::Durability;
pub use error::LogError;
pub use log::{LogConfig, SledLog};
pub use subscription::{Filter, Subscription};
