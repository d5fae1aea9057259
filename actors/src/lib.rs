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
//! * [`llm`]: the LLM client trait, seed 002's contexts (prompts and
//!   parsers), the calls' records; [`tool_router`] narrows a big catalogue
//!   for a prompt; [`recollection`] finds the past days a request needs.
//! * [`tools`]: the tool registry and the built-in tools.
//! * [`fast_path_service`]: the fast path's decision
//!   (`engram_learning::fast_path`) bound to the embedder, the embedding
//!   cache and the vector index — what the router actor asks.
//! * [`config`]: the `engram.toml` / `ENGRAM_*` loader.
//! * Adapters, each a Cargo feature: `onnx_embedder` (`onnx`: the local
//!   sentence embedder on ONNX Runtime), `llm::ollama` and `llm::openai`
//!   (`llm-http`: Ollama and OpenAI-compatible servers), `metrics`
//!   (`metrics`: Prometheus). Without them a host gives its own
//!   [`Embedder`](engram_learning::embedder::Embedder) and
//!   [`LlmClient`](llm::LlmClient).
//!
//! What the runtime *decides* — the fast path, the routing chain, the
//! offline planner, the memory folds — is `engram_learning`: this crate
//! wires it to the log and does the I/O.

#![warn(missing_docs)]

pub mod bridge;
pub mod bus;
pub mod catalogue;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod fast_path_service;
pub mod gazetteer;
pub mod llm;
pub mod memory_backfill;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "onnx")]
pub mod onnx_embedder;
pub mod priority;
pub mod recollection;
pub mod roles;
pub mod runtime;
pub mod shell;
pub mod tool_router;
pub mod tools;

pub use error::RuntimeError;
#[cfg(feature = "onnx")]
pub use onnx_embedder::OnnxEmbedder;
pub use runtime::{Reply, Runtime, RuntimeBuilder, SnapshotsBeside};
pub use tools::{BuiltinConfig, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, UndoAction};
