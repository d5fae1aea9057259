//! Identifiers: log positions, event ids, session and turn ids.
//!
//! Live ids are monotonic ULIDs. Ids of imported and derived events are
//! *derived*: the 48-bit timestamp part comes from the record's `at`, the
//! 80-bit random part from a BLAKE3 hash of whatever identifies the event
//! (session, turn number, ordinal; or causation id + kind). Deriving instead
//! of drawing is what makes `engram import` deterministic and idempotent.

use std::fmt;
use std::str::FromStr;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ulid::Ulid;

/// A position in the event log: assigned by the log on append, starting at 1,
/// gap-free and strictly increasing. `Seq(0)` means "not yet assigned" on an
/// envelope and "nothing applied yet" on a checkpoint.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(transparent)]
pub struct Seq(pub u64);

impl Seq {
    /// The placeholder on an envelope that has not been appended yet.
    pub const UNASSIGNED: Seq = Seq(0);
    /// The first position the log hands out.
    pub const FIRST: Seq = Seq(1);

    /// The position after this one.
    pub fn next(self) -> Seq {
        Seq(self.0 + 1)
    }

    /// The raw number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

macro_rules! ulid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash,
            Serialize, Deserialize,
            rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(#[rkyv(with = crate::remote::UlidDef)] pub Ulid);

        impl $name {
            /// The id as a ULID.
            pub fn ulid(self) -> Ulid {
                self.0
            }

            /// A deterministic id: timestamp from `at`, random part from a
            /// hash of `parts` (see the module docs).
            pub fn derive(at: DateTime<Utc>, parts: &[&[u8]]) -> Self {
                $name(derive_ulid(at, parts))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = ulid::DecodeError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ulid::from_string(s).map($name)
            }
        }
    };
}

ulid_id!(
    /// The unique id of one event. Appending the same id twice is a no-op,
    /// which is what makes re-imports and at-least-once delivery safe.
    EventId
);
ulid_id!(
    /// The id of one turn, derived from (session, turn number) so that a
    /// verdict arriving days later can name it.
    TurnId
);
ulid_id!(
    /// The id of one evaluator verdict (`eval.completed`); the pattern store
    /// applies each `eval_id` at most once, and the greatest one per turn wins.
    EvalId
);
ulid_id!(
    /// The id of a pattern-store fingerprint. For v1 structural fingerprints
    /// it is derived from the structural signature, so equal features share
    /// one id.
    FingerprintId
);

impl EventId {
    /// A fresh, monotonic id for a live event (strictly increasing within
    /// this process even within one millisecond).
    pub fn new_live() -> Self {
        static GENERATOR: Mutex<Option<ulid::Generator>> = Mutex::new(None);
        let mut guard = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
        let generator = guard.get_or_insert_with(ulid::Generator::new);
        // The generator only fails when 2^80 ids were drawn in one
        // millisecond; a fresh random id is then still unique in practice.
        EventId(generator.generate().unwrap_or_else(|_| Ulid::new()))
    }
}

impl TurnId {
    /// The id of turn `number` of `session`, timestamped at the turn's start.
    pub fn for_turn(session: &SessionId, number: u32, at: DateTime<Utc>) -> Self {
        TurnId::derive(at, &[b"turn", session.as_str().as_bytes(), &number.to_be_bytes()])
    }
}

/// Derives a ULID from a timestamp and identifying bytes (length-prefixed,
/// so `["ab","c"]` and `["a","bc"]` differ).
pub fn derive_ulid(at: DateTime<Utc>, parts: &[&[u8]]) -> Ulid {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let hash = hasher.finalize();
    let mut random = [0u8; 16];
    random[6..].copy_from_slice(&hash.as_bytes()[..10]);
    let random = u128::from_be_bytes(random);
    let millis = at.timestamp_millis().clamp(0, (1i64 << 48) - 1) as u64;
    Ulid::from_parts(millis, random)
}

/// A session id as the host names it (`"s-001"`, a UUID, ...). Sessions are
/// the unit the pattern store records at (`session.ended`).
#[derive(
    Clone,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(transparent)]
pub struct SessionId(pub String);

/// The longest session id, in bytes.
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// Why a session id from outside was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSessionId {
    /// An empty id.
    #[error("a session id must not be empty")]
    Empty,
    /// Longer than [`MAX_SESSION_ID_BYTES`].
    #[error("a session id is at most {MAX_SESSION_ID_BYTES} bytes, this one {0}")]
    TooLong(usize),
    /// A control character (a newline, an escape sequence, …).
    #[error("a session id must not contain control characters (found {0:?})")]
    Control(char),
}

impl SessionId {
    /// Wraps a host-provided session name (unchecked: ids read back from
    /// the log, or made by engram; see [`SessionId::parse`] for ids from
    /// outside).
    pub fn new(id: impl Into<String>) -> Self {
        SessionId(id.into())
    }

    /// A session id from outside — a host's call, `engram run --session`,
    /// an imported record — checked: not empty, at most
    /// [`MAX_SESSION_ID_BYTES`], no control characters (`replay` and
    /// `inspect` print ids, and a terminal must never receive one as an
    /// escape sequence).
    pub fn parse(id: &str) -> Result<SessionId, InvalidSessionId> {
        if id.is_empty() {
            return Err(InvalidSessionId::Empty);
        }
        if id.len() > MAX_SESSION_ID_BYTES {
            return Err(InvalidSessionId::TooLong(id.len()));
        }
        if let Some(c) = id.chars().find(|c| c.is_control()) {
            return Err(InvalidSessionId::Control(c));
        }
        Ok(SessionId(id.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    /// The id, with any control character escaped (`\u{1b}`): an id that
    /// entered a log before [`SessionId::parse`] refused them still prints
    /// harmlessly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.chars().any(char::is_control) {
            return f.write_str(&self.0);
        }
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn session_ids_from_outside_are_checked_and_print_escaped() {
        assert_eq!(SessionId::parse("s-1").unwrap().as_str(), "s-1");
        assert_eq!(SessionId::parse(""), Err(InvalidSessionId::Empty));
        assert_eq!(SessionId::parse(&"x".repeat(257)), Err(InvalidSessionId::TooLong(257)));
        assert_eq!(SessionId::parse("a\u{1b}[2J"), Err(InvalidSessionId::Control('\u{1b}')));
        assert_eq!(SessionId::new("a\u{1b}[2J\nb").to_string(), "a\\u{1b}[2J\\nb");
    }

    #[test]
    fn derived_ids_are_deterministic_and_distinct() {
        let at = Utc.with_ymd_and_hms(2026, 11, 20, 9, 15, 2).unwrap();
        let a = derive_ulid(at, &[b"s-001", b"1"]);
        assert_eq!(a, derive_ulid(at, &[b"s-001", b"1"]));
        assert_ne!(a, derive_ulid(at, &[b"s-001", b"2"]));
        assert_ne!(derive_ulid(at, &[b"ab", b"c"]), derive_ulid(at, &[b"a", b"bc"]));
        assert_eq!(a.timestamp_ms(), at.timestamp_millis() as u64);
    }

    #[test]
    fn live_ids_are_monotonic() {
        let mut last = EventId::new_live();
        for _ in 0..10_000 {
            let next = EventId::new_live();
            assert!(next > last);
            last = next;
        }
    }
}
