//! The envelope: what every event carries besides its payload.

use chrono::{DateTime, SubsecRound, Utc};

use crate::event::{Event, EventKind};
use crate::ids::{EventId, Seq, SessionId, TurnId};
use crate::payloads::closed_enum;

closed_enum! {
    /// Which part of the system wrote an event.
    pub enum ActorKind {
        /// The embedding host process.
        Host => "host",
        /// Listener: utterances and intent.
        Listener => "listener",
        /// Router: fast path and routing chain.
        Router => "router",
        /// Planner.
        Planner => "planner",
        /// Reply loop: tools and LLM turns.
        ReplyLoop => "reply_loop",
        /// Judge: verdicts.
        Judge => "judge",
        /// Pattern store.
        PatternStore => "pattern_store",
        /// Summariser.
        Summariser => "summariser",
        /// Knowledge graph.
        Graph => "graph",
        /// `engram import`.
        Importer => "importer",
        /// An operator command (`engram` CLI maintenance).
        Cli => "cli",
        /// The log itself (what it found on a shared stream).
        Log => "log",
        /// The memory indexer: what was said, as passages (issue 30).
        Memory => "memory",
    }
}

/// One event in the log.
///
/// `seq` is the log position, assigned on append; `causation` is the id of
/// the event this one was derived from, which makes derivation idempotent.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// Unique id; appending an id already in the log is a no-op.
    pub id: EventId,
    /// Log position ([`Seq::UNASSIGNED`] until appended).
    pub seq: Seq,
    /// When it happened, in UTC, microsecond precision.
    pub at: DateTime<Utc>,
    /// The session it belongs to, if any.
    pub session: Option<SessionId>,
    /// The turn it belongs to, if any.
    pub turn: Option<TurnId>,
    /// The event it was derived from, if any.
    pub causation: Option<EventId>,
    /// Who wrote it.
    pub actor: ActorKind,
    /// The typed payload.
    pub event: Event,
}

impl Envelope {
    /// A live event: fresh monotonic id, timestamped now, not yet appended.
    pub fn new(actor: ActorKind, event: impl Into<Event>) -> Self {
        Envelope::at(EventId::new_live(), Utc::now(), actor, event)
    }

    /// An event with a given id and time (imports, derivations, tests).
    /// The time is truncated to microseconds, the log's precision.
    pub fn at(id: EventId, at: DateTime<Utc>, actor: ActorKind, event: impl Into<Event>) -> Self {
        Envelope {
            id,
            seq: Seq::UNASSIGNED,
            at: at.trunc_subsecs(6),
            session: None,
            turn: None,
            causation: None,
            actor,
            event: event.into(),
        }
    }

    /// Sets the session.
    pub fn with_session(mut self, session: SessionId) -> Self {
        self.session = Some(session);
        self
    }

    /// Sets the turn.
    pub fn with_turn(mut self, turn: TurnId) -> Self {
        self.turn = Some(turn);
        self
    }

    /// Sets the causing event.
    pub fn caused_by(mut self, cause: EventId) -> Self {
        self.causation = Some(cause);
        self
    }

    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        self.event.kind()
    }
}

/// The envelope fields as archived by the binary codec (everything but the
/// payload, which is archived separately so each kind versions on its own).
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct Header {
    pub id: EventId,
    pub seq: Seq,
    #[rkyv(with = crate::remote::TimestampDef)]
    pub at: DateTime<Utc>,
    pub session: Option<SessionId>,
    pub turn: Option<TurnId>,
    pub causation: Option<EventId>,
    pub actor: ActorKind,
}
