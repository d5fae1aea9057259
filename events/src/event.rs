//! The catalog: one [`Event`] variant per kind, each with a typed payload, a
//! dotted name, a stable numeric code (the binary codec's tag) and a schema
//! version. Codes are never reused; a payload change bumps its kind's schema
//! version and keeps a decoder for the old one (see `codec::upcast`).

use crate::payloads::*;

/// The type a variant of [`Event`] holds: its payload, or the payload
/// boxed (`Payload => Box<Payload>` in the catalog) for the few whose size
/// would otherwise make every event as big as they are.
macro_rules! field_ty {
    ($payload:ty) => {
        $payload
    };
    ($payload:ty, $field:ty) => {
        $field
    };
}

macro_rules! catalog {
    ($( $(#[$doc:meta])* $variant:ident($payload:ty $(=> $field:ty)?) = $code:literal, $name:literal, $ver:literal; )*) => {
        /// One event: the variant is the kind, the field its typed payload
        /// (boxed for the two large ones, `pattern.recorded` and
        /// `route.decided`, so that an event is a third of their size:
        /// replay and the actors move events by value).
        #[derive(Clone, Debug, PartialEq)]
        pub enum Event {
            $( $(#[$doc])* $variant(field_ty!($payload $(, $field)?)), )*
        }

        /// The kind of an event, without its payload.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum EventKind {
            $( $(#[$doc])* $variant = $code, )*
        }

        impl EventKind {
            /// Every kind, in catalog order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant),*];

            /// The dotted name (`session.ended`).
            pub fn name(self) -> &'static str {
                match self { $(EventKind::$variant => $name),* }
            }

            /// The stable numeric code used by the binary codec.
            pub fn code(self) -> u16 {
                self as u16
            }

            /// The kind with this code.
            pub fn from_code(code: u16) -> Option<EventKind> {
                match code { $($code => Some(EventKind::$variant),)* _ => None }
            }

            /// The kind with this dotted name.
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name { $($name => Some(EventKind::$variant),)* _ => None }
            }

            /// The schema version written today; older ones are upcast on read.
            pub fn schema_version(self) -> u16 {
                match self { $(EventKind::$variant => $ver),* }
            }
        }

        impl Event {
            /// This event's kind.
            pub fn kind(&self) -> EventKind {
                match self { $(Event::$variant(_) => EventKind::$variant),* }
            }

            /// Appends the payload's rkyv archive to `buf`.
            pub(crate) fn archive_payload_into(&self, buf: Vec<u8>) -> Result<Vec<u8>, rkyv::rancor::Error> {
                match self {
                    $(Event::$variant(p) => {
                        let p: &$payload = std::borrow::Borrow::borrow(p);
                        rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(p, buf)
                    })*
                }
            }

            /// Decodes a current-version payload archive.
            pub(crate) fn from_archive(kind: EventKind, bytes: &[u8]) -> Result<Event, rkyv::rancor::Error> {
                Ok(match kind {
                    $(EventKind::$variant => Event::$variant(rkyv::from_bytes::<$payload, rkyv::rancor::Error>(bytes)?.into()),)*
                })
            }

            /// Validates a current-version payload archive in place, without
            /// deserialising it (the zero-copy read).
            pub(crate) fn check_archive(kind: EventKind, bytes: &[u8]) -> Result<(), rkyv::rancor::Error> {
                match kind {
                    $(EventKind::$variant => rkyv::access::<rkyv::Archived<$payload>, rkyv::rancor::Error>(bytes).map(|_| ()),)*
                }
            }

            /// The payload as a JSON value.
            pub(crate) fn payload_to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
                match self {
                    $(Event::$variant(p) => serde_json::to_value::<&$payload>(std::borrow::Borrow::borrow(p)),)*
                }
            }

            /// Parses a current-version JSON payload; an error carries the
            /// path of the offending field (`steps[0].tool`).
            pub(crate) fn payload_from_json(kind: EventKind, value: serde_json::Value) -> Result<Event, serde_path_to_error::Error<serde_json::Error>> {
                Ok(match kind {
                    $(EventKind::$variant => Event::$variant(serde_path_to_error::deserialize::<_, $payload>(value)?.into()),)*
                })
            }
        }

        $(
            impl From<$payload> for Event {
                fn from(p: $payload) -> Event {
                    Event::$variant(p.into())
                }
            }
        )*
    };
}

catalog! {
    /// `utterance.received`
    UtteranceReceived(UtteranceReceived) = 1, "utterance.received", 2;
    /// `intent.judged`
    IntentJudged(IntentJudged) = 2, "intent.judged", 1;
    /// `route.decided`
    RouteDecided(RouteDecided => Box<RouteDecided>) = 3, "route.decided", 2;
    /// `fastpath.hit`
    /// `fastpath.hit` (v1 had no `residual`; see `FastPathHitV1`)
    FastPathHit(FastPathHit) = 4, "fastpath.hit", 2;
    /// `fastpath.missed` (v1 had no `near`)
    FastPathMissed(FastPathMissed) = 5, "fastpath.missed", 2;
    /// `plan.created` (v1 had no `tools`)
    PlanCreated(PlanCreated) = 6, "plan.created", 2;
    /// `tool.called`
    ToolCalled(ToolCalled) = 7, "tool.called", 3;
    /// `tool.completed`
    ToolCompleted(ToolCompleted) = 8, "tool.completed", 1;
    /// `llm.call_completed`
    LlmCallCompleted(LlmCallCompleted) = 9, "llm.call_completed", 2;
    /// `reply.delivered`
    ReplyDelivered(ReplyDelivered) = 10, "reply.delivered", 1;
    /// `turn.completed`
    TurnCompleted(TurnCompleted) = 11, "turn.completed", 1;
    /// `session.ended`
    SessionEnded(SessionEnded) = 12, "session.ended", 1;
    /// `eval.completed`
    EvalCompleted(EvalCompleted) = 13, "eval.completed", 1;
    /// `pattern.recorded` (v1 was seed 001 §10.1's shape, v2 had no `embedding`)
    PatternRecorded(PatternRecorded => Box<PatternRecorded>) = 14, "pattern.recorded", 3;
    /// `pattern.matched`
    PatternMatched(PatternMatched) = 15, "pattern.matched", 1;
    /// `pattern.evicted`
    PatternEvicted(PatternEvicted) = 16, "pattern.evicted", 1;
    /// `canonical.recorded` (v1 had no `slots`)
    CanonicalRecorded(CanonicalRecorded) = 17, "canonical.recorded", 2;
    /// `pipeline.recorded`
    PipelineRecorded(PipelineRecorded) = 18, "pipeline.recorded", 1;
    /// `pipeline.expired`
    PipelineExpired(PipelineExpired) = 19, "pipeline.expired", 1;
    /// `pipeline.promoted`
    PipelinePromoted(PipelinePromoted) = 20, "pipeline.promoted", 1;
    /// `day.activated`
    DayActivated(DayActivated) = 21, "day.activated", 1;
    /// `summary.written`
    SummaryWritten(SummaryWritten) = 22, "summary.written", 1;
    /// `graph.fact_added`
    GraphFactAdded(GraphFactAdded) = 23, "graph.fact_added", 1;
    /// `graph.node_merged`
    GraphNodeMerged(GraphNodeMerged) = 24, "graph.node_merged", 1;
    /// `feedback.received`
    FeedbackReceived(FeedbackReceived) = 25, "feedback.received", 1;
    /// `memory.forgotten`
    MemoryForgotten(MemoryForgotten) = 26, "memory.forgotten", 1;
    /// `pattern.reembedded`
    PatternReembedded(PatternReembedded) = 27, "pattern.reembedded", 1;
    /// `stream.message_skipped`
    StreamMessageSkipped(StreamMessageSkipped) = 28, "stream.message_skipped", 1;
    /// `canonical.rejected` (v1 had no `slots`)
    CanonicalRejected(CanonicalRejected) = 29, "canonical.rejected", 2;
    /// `pipeline.rejected`
    PipelineRejected(PipelineRejected) = 30, "pipeline.rejected", 1;
    /// `memory.passages_indexed`
    PassagesIndexed(PassagesIndexed) = 31, "memory.passages_indexed", 1;
    /// `canonical.compared`
    CanonicalCompared(CanonicalCompared) = 32, "canonical.compared", 1;
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for &kind in EventKind::ALL {
            assert_eq!(EventKind::from_code(kind.code()), Some(kind));
            assert_eq!(EventKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(EventKind::ALL.len(), 32);
        assert_eq!(EventKind::from_code(0), None);
        assert_eq!(EventKind::from_name("session.started"), None);
    }
}
