//! # engram
//!
//! An embedded, event-sourced actor runtime for a local LLM assistant. A host
//! process depends on this crate and starts the runtime
//! ([`actors::Runtime::builder`]); the `engram` command (crate `engram-cli`)
//! imports, replays, rebuilds and inspects what the runtime stored, and is
//! not part of what a host compiles.
//!
//! Everything that happens is an [`Envelope`]d [`Event`] appended to one
//! durable [`EventLog`] ([`SledLog`] by default); every table the runtime
//! reads is a fold over that log. The crates underneath, re-exported here,
//! each depending only on those listed after it:
//!
//! * [`actors`] — the actix runtime a host embeds: listener, router,
//!   planner, reply loop, judge, pattern store, summariser and graph actors;
//!   the tools, the `engram.toml` loader; the adapters (features `onnx`,
//!   `llm-http`, `metrics`);
//! * [`learning`] — every decision: the fast path's rules, the routing
//!   chain, the pattern store's math, the offline planner, the embedder
//!   trait, intent and memory rules, the reactors, the projections, the
//!   importers;
//! * [`vector`] — nearest neighbours by cosine (exact scan, HNSW);
//! * [`local_state`] — what a data dir keeps beside its log: projections'
//!   persistence, snapshots, checkpoints, the embedding memo;
//! * [`storage`] — the event log: the trait, the sled log, the JetStream
//!   backend, recovery, repair, verify;
//! * [`events`] — the event catalog and its codecs.
//!
//! A host starts the runtime and hands it utterances (`docs/embedding.md`
//! has every option; the defaults are offline):
//!
//! ```no_run
//! use engram::actors::config::Config;
//! use engram::actors::Runtime;
//! use engram::{EventKind, EventLog, Filter, SessionId};
//!
//! let data = std::path::PathBuf::from("/tmp/engram-embed");
//! // engram.toml (if there is one) with ENGRAM_* overrides.
//! let config = Config::load(Config::locate(&data).as_deref(), std::env::vars())?;
//! let rt = Runtime::builder().data_dir(&data).config(config).start()?;
//! // Verdicts as they are written, from now on.
//! let mut verdicts = rt.log().subscribe(rt.log().head().next(), Filter::kinds([EventKind::EvalCompleted]))?;
//! let session = SessionId::new("s-1");
//! let reply = rt.handle_utterance(&session, "what time is it")?; // blocks until the turn is durable
//! println!("{} (answered by {:?} in {} ms)", reply.text, reply.layer, reply.latency_ms);
//! println!("judged: {:?}", verdicts.recv()?.event);
//! rt.end_session(&session)?;
//! rt.shutdown()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Features: `onnx` and `llm-http` (the local embedder and the HTTP LLM
//! clients) are on by default; `metrics`, `jetstream` and `full` are not.
//! With `default-features = false` the host gives its own embedder and LLM
//! client.
//!
//! # What a host touches
//!
//! | to | use | notes |
//! |---|---|---|
//! | start the runtime | [`actors::Runtime::builder`] → [`actors::RuntimeBuilder`] | `data_dir` is required; `config`, `embedder`, `llm`, `tool`, `offline`, … |
//! | configure it | [`actors::config::Config`] (`Config::load`, `Config::locate`) | `engram.toml` and `ENGRAM_*`; every section in `docs/embedding.md` |
//! | give it an embedder | [`learning::embedder::Embedder`] | four methods; its docs hold a small embedder a host can start from, run as a test |
//! | give it a model | [`actors::llm::LlmClient`] | two methods; its docs hold a scripted client run in a runtime, as a test |
//! | give it a tool | [`actors::Tool`] ([`actors::ToolContext`], [`actors::ToolOutput`], [`actors::ToolError`]) | `docs/embedding.md`, *Writing a tool* |
//! | take a turn | [`actors::Runtime::handle_utterance`]`(&`[`SessionId`]`, &str)` → `Result<`[`actors::Reply`]`, `[`actors::RuntimeError`]`>` | `Reply`'s fields: `turn:` [`TurnId`], `heard:` [`actors::roles::listener::Heard`], `text: String`, `layer: Option<`[`RouteLayer`]`>`, `model: Option<String>`, `steps: Vec<`[`PlanStep`]`>`, `tools_ok: bool`, `latency_ms: u64` |
//! | rate a turn | [`actors::Runtime::feedback`]`(&SessionId, `[`FeedbackRating`]`, Option<&str>)` → `Result<Option<TurnId>, RuntimeError>` | the session's last turn; `None`: it has none |
//! | end a session | [`actors::Runtime::end_session`] → `Result<u32, RuntimeError>` | nothing ends a session by itself |
//! | read what happened | [`actors::Runtime::log`] → [`EventLog`]; `subscribe` → [`Subscription`] | `recv()` → `Result<Envelope, LogError>`; `recv_timeout`, `try_recv` → `Result<Option<Envelope>, LogError>` |
//! | stop | [`actors::Runtime::shutdown`] | settles the actors, saves snapshots, flushes |

#![warn(missing_docs)]

pub use engram_actors as actors;
pub use engram_events as events;
pub use engram_learning as learning;
pub use engram_local_state as local_state;
pub use engram_storage as storage;
pub use engram_vector as vector;

pub use engram_events::payloads::{FeedbackRating, PlanStep, RouteLayer, UtteranceSource};
pub use engram_events::{ActorKind, Envelope, Event, EventKind, Seq, SessionId, TurnId};
pub use engram_storage::{Durability, EventLog, Filter, LogConfig, LogError, SledLog, Subscription};
