//! # engram
//!
//! An embedded, event-sourced actor runtime for a local LLM assistant. A host
//! process embeds this crate; the `engram` binary replays, rebuilds and
//! inspects what the runtime stored.
//!
//! Everything that happens is an [`Envelope`]d [`Event`] appended to one
//! durable [`EventLog`] ([`SledLog`] by default); every table the runtime
//! reads is a fold over that log. The crates underneath, re-exported here:
//!
//! * [`events`] — the event catalog and its codecs;
//! * [`storage`] — the log, subscriptions, importers;
//! * [`actors`] — the actor runtime a host embeds ([`actors::Runtime`]).

pub mod bench;
pub mod data_dir;

pub use engram_actors as actors;
pub use engram_events as events;
pub use engram_storage as storage;

pub use engram_events::{ActorKind, Envelope, Event, EventKind, Seq, SessionId, TurnId};
pub use engram_storage::{Durability, EventLog, Filter, LogConfig, LogError, SledLog, Subscription};
