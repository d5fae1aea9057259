//! # engram-events
//!
//! The event catalog of engram: everything that happens in the runtime is one
//! of these events, wrapped in an [`Envelope`] and appended to the log.
//!
//! * [`Envelope`] — id, log position ([`Seq`]), time, session, turn,
//!   causation, actor, and the typed [`Event`].
//! * [`Event`] — one variant per kind (`session.ended`, `eval.completed`, …),
//!   each with a payload struct from [`payloads`]. [`EventKind`] gives every
//!   kind its dotted name, stable code and schema version.
//! * [`codec::binary`] — the framed rkyv form stored in the log (format
//!   version + CRC32, so corruption is detected, never misread).
//! * [`codec::json`] — the JSON Lines form of import, export and `--json`.
//! * [`derived`] — an event caused by another takes its id from its cause,
//!   so deriving twice appends nothing new.
//!
//! Payloads evolve by schema version: a kind whose payload changes bumps its
//! version and keeps a decoder for the old one, so a log written by any
//! earlier engram replays unchanged.

#![warn(missing_docs)]

mod causation;
pub mod codec;
mod envelope;
mod event;
pub mod ids;
pub mod payloads;
mod remote;

pub use causation::{derived, derived_id};
pub use codec::DecodeError;
pub use envelope::{ActorKind, Envelope};
pub use event::{Event, EventKind};
pub use ids::{EvalId, EventId, FingerprintId, InvalidSessionId, Seq, SessionId, TurnId};

pub use chrono;
pub use rust_decimal;
pub use ulid;
