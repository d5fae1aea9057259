//! # engram-local-state
//!
//! What a data dir keeps beside its log: state that is not the log's, but
//! lives next to it, in the data dir's database (`engram_storage`'s
//! [`LocalDb`]) and files. Each piece has a typed API here, so that nothing
//! above this crate touches sled:
//!
//! | piece | where | rebuilt from the log? |
//! |---|---|---|
//! | [`projector`] — projections' rows and checkpoints, catch-up, rebuild, digests | `projection.<name>` trees | yes, bit for bit |
//! | [`checkpoints`] — each actor's last handled `seq` | `projection.actor_checkpoints` | no: an actor new to a data dir starts at its head |
//! | [`snapshot`] — an actor's folded state at a `seq` | `DIR/snapshots/<owner>.snap` | a cache: folded again when unusable |
//! | [`embedding_cache`] — the bounded memo `(model, text) → vector` | `cache.embeddings` | no: recomputed when missing |
//! | [`origin`] — on a shared log, the turns and sessions spoken to this device | `device.origin` | no: only this device knows it |
//!
//! And [`heap_bytes`]: what a table held in memory costs on the heap,
//! counted from its contents (what `engram bench soak` sets beside RSS) —
//! beside the tables it counts, not in the crates that decide with them.
//!
//! The log engine (`engram-storage`) knows none of this: it hands out the
//! database ([`LocalDb`]) and never reads these trees. The assistant's own
//! projections and what the actors fold are `engram-learning`'s and
//! `engram-actors`'.

#![warn(missing_docs)]

pub mod checkpoints;
pub mod embedding_cache;
pub mod heap_bytes;
pub mod origin;
pub mod projector;
pub mod snapshot;

pub use checkpoints::ActorCheckpoints;
pub use embedding_cache::{CacheCaps, EmbeddingCache};
pub use engram_storage::local_db::LocalDb;
pub use origin::Origins;
pub use projector::{Projection, Projector};
pub use snapshot::{Snapshot, SnapshotDir, SnapshotError, SnapshotReader, SnapshotWriter};
