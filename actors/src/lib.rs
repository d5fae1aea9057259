//! engram's actor runtime: the actix actors that take an utterance to a
//! reply, one per role, talking only through the event log.
//!
//! * [`runtime`]: what a host embeds — [`Runtime::builder`] → a handle with
//!   `handle_utterance`, `feedback`, `end_session`, `shutdown`.
//! * [`roles`]: listener, router, planner, reply loop, and the roles that
//!   are exactly an `engram-learning` reactor (judge, pattern store,
//!   summariser, graph); [`shell`] runs each as a supervised actor with a
//!   checkpoint; [`bus`] is the log and the checkpoints they share;
//!   [`dispatch`] fans the log out to them and to the [`bridge`] that
//!   wakes the host.
//! * Adapters: [`embedder`] (local ONNX sentence embeddings), [`llm`]
//!   (Ollama and OpenAI-compatible servers), [`tools`] (the tool registry
//!   and built-ins); [`offline_planner`] plans when no LLM is configured.
//! * [`fast_path_service`]: the fast path's decision
//!   (`engram_learning::fast_path`) bound to the embedder, the embedding
//!   cache and the vector index — what the router actor asks.

#![warn(missing_docs)]

pub mod bridge;
pub mod bus;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod fast_path_service;
pub mod llm;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "onnx")]
pub mod onnx_embedder;
pub mod recollection;
pub mod roles;
pub mod runtime;
pub mod shell;
pub mod tool_router;
pub mod tools;

pub use error::RuntimeError;
#[cfg(feature = "onnx")]
pub use onnx_embedder::OnnxEmbedder;
pub use runtime::{Reply, Runtime, RuntimeBuilder};
pub use tools::{BuiltinConfig, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, UndoAction};
