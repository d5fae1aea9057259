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
//! * [`llm`]: the blocking LLM adapters (Ollama, OpenAI-compatible), their
//!   cost accounting and the prompts and parsers of the LLM contexts.

pub mod embedder;
pub mod fast_path;
pub mod llm;

pub use embedder::{EmbedError, Embedder, EmbedderConfig, OnnxEmbedder};
pub use engram_storage as storage;
