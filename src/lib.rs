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
//!   the LLM adapters, the embedder, the tools;
//! * [`learning`] — what the assistant learns and decides: the fast path's
//!   rules, the pattern store's math, intent and memory rules, the reactors,
//!   the projections, the importers, `engram.toml`;
//! * [`vector`] — nearest neighbours by cosine (exact scan, HNSW);
//! * [`local_state`] — what a data dir keeps beside its log: projections'
//!   persistence, snapshots, checkpoints, the embedding memo;
//! * [`storage`] — the event log: the trait, the sled log, the JetStream
//!   backend, recovery, repair, verify;
//! * [`events`] — the event catalog and its codecs.

pub use engram_actors as actors;
pub use engram_events as events;
pub use engram_learning as learning;
pub use engram_local_state as local_state;
pub use engram_storage as storage;
pub use engram_vector as vector;

pub use engram_events::{ActorKind, Envelope, Event, EventKind, Seq, SessionId, TurnId};
pub use engram_storage::{Durability, EventLog, Filter, LogConfig, LogError, SledLog, Subscription};
