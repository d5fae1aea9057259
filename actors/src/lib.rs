//! engram's actor runtime: the actix actors that take an utterance to a
//! reply, one per role, talking only through the event log.
//!
//! * [`runtime`]: what a host embeds — [`Runtime::builder`] → a handle with
//!   `handle_utterance`, `feedback`, `end_session`, `shutdown`.
//! * [`roles`]: listener, router, planner, reply loop, and the roles that
//!   are exactly a storage reactor (judge, pattern store, summariser,
//!   graph); [`shell`] runs each as a supervised actor with a checkpoint;
//!   [`bus`] is the log and the checkpoints they share.
//! * Adapters: [`embedder`] (local ONNX sentence embeddings), [`llm`]
//!   (Ollama and OpenAI-compatible servers), [`tools`] (the tool registry
//!   and built-ins); [`offline_planner`] plans when no LLM is configured.
//! * [`fast_path`]: the router's fast path (L0/L1/L2) with the embedder and
//!   the embedding cache.

pub mod bridge;
pub mod bus;
pub mod dispatch;
pub mod embedder;
pub mod error;
pub mod fast_path;
pub mod llm;
pub mod offline_planner;
pub mod roles;
pub mod runtime;
pub mod shell;
pub mod tools;

pub use embedder::{EmbedError, Embedder, EmbedderConfig, OnnxEmbedder};
pub use engram_storage as storage;
pub use error::RuntimeError;
pub use runtime::{Reply, Runtime, RuntimeBuilder};
pub use tools::{fence_untrusted, BuiltinConfig, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, UndoAction};
