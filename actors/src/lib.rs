//! engram's actor runtime.
//!
//! The actors (listener, router, planner, reply loop, judge, pattern store,
//! summariser, graph) land with the runtime issue; until then this crate
//! fixes the dependency direction `actors -> storage -> events`, so nothing
//! below it can grow a dependency on actix, and holds the pieces the actors
//! are built from:
//!
//! * [`embedder`]: sentence embeddings (the [`Embedder`] trait and the local
//!   ONNX model behind it), what the router and the pattern store compare
//!   requests by.
//! * [`fast_path`]: the router's fast path (L0/L1/L2) assembled with the
//!   embedder and the embedding cache.
//! * [`tools`]: the [`Tool`] trait, the [`ToolRegistry`] with the
//!   built-ins (`get_now`, `get_date`, `get_location`, `undo`, `list_dir`,
//!   `read_file`), file confinement and the untrusted-output fence.

pub mod embedder;
pub mod fast_path;
pub mod tools;

pub use embedder::{EmbedError, Embedder, EmbedderConfig, OnnxEmbedder};
pub use engram_storage as storage;
pub use tools::{fence_untrusted, BuiltinConfig, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, UndoAction};
