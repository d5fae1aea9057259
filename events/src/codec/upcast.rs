//! Older payload schemas, read and upcast to today's.
//!
//! Each arm names a `(kind, version)` that was once written and the legacy
//! struct that decodes it. Arms are only ever added: a log written by any
//! earlier version of engram must replay unchanged (`tests/fixtures/`).

use crate::codec::DecodeError;
use crate::event::{Event, EventKind};
use crate::payloads::{
    CanonicalRecorded, CanonicalRecordedV1, CanonicalRejected, CanonicalRejectedV1, FastPathHit, FastPathHitV1,
    FastPathMissed, FastPathMissedV1, LlmCallCompleted, LlmCallCompletedV1, PatternRecorded, PatternRecordedV1,
    PatternRecordedV2, PlanCreated, PlanCreatedV1, RouteDecided, RouteDecidedV1, ToolCalled, ToolCalledV1,
    ToolCalledV2, UtteranceReceived, UtteranceReceivedV1,
};

/// Decodes a payload archive of an older schema version.
pub(crate) fn from_archive(kind: EventKind, version: u16, bytes: &[u8]) -> Result<Event, DecodeError> {
    let archive_err = |e: rkyv::rancor::Error| DecodeError::Archive(e.to_string());
    match (kind, version) {
        (EventKind::PatternRecorded, 1) => {
            let v1 = rkyv::from_bytes::<PatternRecordedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::from(PatternRecorded::from(v1)))
        }
        (EventKind::FastPathHit, 1) => {
            let v1 = rkyv::from_bytes::<FastPathHitV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::FastPathHit(FastPathHit::from(v1)))
        }
        (EventKind::UtteranceReceived, 1) => {
            let v1 = rkyv::from_bytes::<UtteranceReceivedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::UtteranceReceived(UtteranceReceived::from(v1)))
        }
        (EventKind::PatternRecorded, 2) => {
            let v2 = rkyv::from_bytes::<PatternRecordedV2, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::from(PatternRecorded::from(v2)))
        }
        (EventKind::RouteDecided, 1) => {
            let v1 = rkyv::from_bytes::<RouteDecidedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::from(RouteDecided::from(v1)))
        }
        (EventKind::ToolCalled, 1) => {
            let v1 = rkyv::from_bytes::<ToolCalledV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::ToolCalled(ToolCalled::from(v1)))
        }
        (EventKind::ToolCalled, 2) => {
            let v2 = rkyv::from_bytes::<ToolCalledV2, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::ToolCalled(ToolCalled::from(v2)))
        }
        (EventKind::PlanCreated, 1) => {
            let v1 = rkyv::from_bytes::<PlanCreatedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::PlanCreated(PlanCreated::from(v1)))
        }
        (EventKind::CanonicalRecorded, 1) => {
            let v1 = rkyv::from_bytes::<CanonicalRecordedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::CanonicalRecorded(CanonicalRecorded::from(v1)))
        }
        (EventKind::FastPathMissed, 1) => {
            let v1 = rkyv::from_bytes::<FastPathMissedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::FastPathMissed(FastPathMissed::from(v1)))
        }
        (EventKind::CanonicalRejected, 1) => {
            let v1 = rkyv::from_bytes::<CanonicalRejectedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::CanonicalRejected(CanonicalRejected::from(v1)))
        }
        (EventKind::LlmCallCompleted, 1) => {
            let v1 = rkyv::from_bytes::<LlmCallCompletedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::LlmCallCompleted(LlmCallCompleted::from(v1)))
        }
        _ => Err(DecodeError::SchemaVersion { kind: kind.name(), version, current: kind.schema_version() }),
    }
}

/// Validates a payload archive of an older schema version in place.
pub(crate) fn check_archive(kind: EventKind, version: u16, bytes: &[u8]) -> Result<(), DecodeError> {
    let archive_err = |e: rkyv::rancor::Error| DecodeError::Archive(e.to_string());
    match (kind, version) {
        (EventKind::PatternRecorded, 1) => {
            rkyv::access::<rkyv::Archived<PatternRecordedV1>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        (EventKind::FastPathHit, 1) => {
            rkyv::access::<rkyv::Archived<FastPathHitV1>, rkyv::rancor::Error>(bytes).map(|_| ()).map_err(archive_err)
        }
        (EventKind::UtteranceReceived, 1) => {
            rkyv::access::<rkyv::Archived<UtteranceReceivedV1>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        (EventKind::PatternRecorded, 2) => {
            rkyv::access::<rkyv::Archived<PatternRecordedV2>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        (EventKind::RouteDecided, 1) => {
            rkyv::access::<rkyv::Archived<RouteDecidedV1>, rkyv::rancor::Error>(bytes).map(|_| ()).map_err(archive_err)
        }
        (EventKind::ToolCalled, 1) => {
            rkyv::access::<rkyv::Archived<ToolCalledV1>, rkyv::rancor::Error>(bytes).map(|_| ()).map_err(archive_err)
        }
        (EventKind::ToolCalled, 2) => {
            rkyv::access::<rkyv::Archived<ToolCalledV2>, rkyv::rancor::Error>(bytes).map(|_| ()).map_err(archive_err)
        }
        (EventKind::PlanCreated, 1) => {
            rkyv::access::<rkyv::Archived<PlanCreatedV1>, rkyv::rancor::Error>(bytes).map(|_| ()).map_err(archive_err)
        }
        (EventKind::CanonicalRecorded, 1) => {
            rkyv::access::<rkyv::Archived<CanonicalRecordedV1>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        (EventKind::FastPathMissed, 1) => rkyv::access::<rkyv::Archived<FastPathMissedV1>, rkyv::rancor::Error>(bytes)
            .map(|_| ())
            .map_err(archive_err),
        (EventKind::CanonicalRejected, 1) => {
            rkyv::access::<rkyv::Archived<CanonicalRejectedV1>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        (EventKind::LlmCallCompleted, 1) => {
            rkyv::access::<rkyv::Archived<LlmCallCompletedV1>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        _ => Err(DecodeError::SchemaVersion { kind: kind.name(), version, current: kind.schema_version() }),
    }
}

/// Parses a JSON payload of an older schema version.
pub(crate) fn from_json(kind: EventKind, version: u16, value: serde_json::Value) -> Result<Event, DecodeError> {
    match (kind, version) {
        (EventKind::PatternRecorded, 1) => {
            let v1: PatternRecordedV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::from(PatternRecorded::from(v1)))
        }
        (EventKind::FastPathHit, 1) => {
            let v1: FastPathHitV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::FastPathHit(FastPathHit::from(v1)))
        }
        (EventKind::UtteranceReceived, 1) => {
            let v1: UtteranceReceivedV1 =
                serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::UtteranceReceived(UtteranceReceived::from(v1)))
        }
        (EventKind::PatternRecorded, 2) => {
            let v2: PatternRecordedV2 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::from(PatternRecorded::from(v2)))
        }
        (EventKind::RouteDecided, 1) => {
            let v1: RouteDecidedV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::from(RouteDecided::from(v1)))
        }
        (EventKind::ToolCalled, 1) => {
            let v1: ToolCalledV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::ToolCalled(ToolCalled::from(v1)))
        }
        (EventKind::ToolCalled, 2) => {
            let v2: ToolCalledV2 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::ToolCalled(ToolCalled::from(v2)))
        }
        (EventKind::PlanCreated, 1) => {
            let v1: PlanCreatedV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::PlanCreated(PlanCreated::from(v1)))
        }
        (EventKind::CanonicalRecorded, 1) => {
            let v1: CanonicalRecordedV1 =
                serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::CanonicalRecorded(CanonicalRecorded::from(v1)))
        }
        (EventKind::FastPathMissed, 1) => {
            let v1: FastPathMissedV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::FastPathMissed(FastPathMissed::from(v1)))
        }
        (EventKind::CanonicalRejected, 1) => {
            let v1: CanonicalRejectedV1 =
                serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::CanonicalRejected(CanonicalRejected::from(v1)))
        }
        (EventKind::LlmCallCompleted, 1) => {
            let v1: LlmCallCompletedV1 = serde_path_to_error::deserialize(value).map_err(DecodeError::payload_field)?;
            Ok(Event::LlmCallCompleted(LlmCallCompleted::from(v1)))
        }
        _ => Err(DecodeError::SchemaVersion { kind: kind.name(), version, current: kind.schema_version() }),
    }
}

#[cfg(test)]
mod tests {
    use super::from_json;
    use chrono::{DateTime, Utc};
    use rust_decimal::Decimal;
    use ulid::Ulid;

    use crate::codec::binary::{self, encode_raw};
    use crate::codec::DecodeError;
    use crate::envelope::{ActorKind, Envelope};
    use crate::event::{Event, EventKind};
    use crate::ids::{EventId, FingerprintId, Seq, SessionId, TurnId};
    use crate::payloads::{FingerprintKind, PatternRecorded, PatternRecordedV1, SessionEndReason, SessionEnded};

    fn v1() -> PatternRecordedV1 {
        PatternRecordedV1 {
            fingerprint_id: FingerprintId(Ulid(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef)),
            fingerprint_kind: FingerprintKind::Hybrid,
            primary_model: "ollama:gemma4:26b".into(),
            sample_size_before: 4,
            sample_size_after: 5,
            was_new_fingerprint: true,
            success_score: Some(0.75),
            cost_usd: Decimal::new(12, 4),
            pricing_version: "2026-11".into(),
            over_soft_cap: true,
        }
    }

    /// An envelope whose header fields are all set; the payload is whatever
    /// the test needs (it is ignored by `encode_raw`).
    fn header(event: impl Into<Event>) -> Envelope {
        let at = DateTime::<Utc>::from_timestamp_micros(1_763_630_102_123_456).unwrap();
        let mut env = Envelope::at(EventId(Ulid(9)), at, ActorKind::PatternStore, event)
            .with_session(SessionId::new("s-001"))
            .with_turn(TurnId(Ulid(8)))
            .caused_by(EventId(Ulid(7)));
        env.seq = Seq(42);
        env
    }

    fn archive<T>(value: &T) -> Vec<u8>
    where
        T: for<'a> rkyv::Serialize<
            rkyv::api::high::HighSerializer<
                rkyv::util::AlignedVec,
                rkyv::ser::allocator::ArenaHandle<'a>,
                rkyv::rancor::Error,
            >,
        >,
    {
        rkyv::to_bytes::<rkyv::rancor::Error>(value).unwrap().to_vec()
    }

    #[test]
    fn the_raw_encoder_writes_what_encode_writes() {
        // Guards the test helper: with today's kind, version and payload
        // archive it must produce `encode`'s exact bytes.
        let env = header(PatternRecorded::from(v1()));
        let payload = match &env.event {
            Event::PatternRecorded(p) => archive(&**p),
            _ => unreachable!(),
        };
        let kind = EventKind::PatternRecorded;
        assert_eq!(encode_raw(&env, kind.code(), kind.schema_version(), &payload), binary::encode(&env));
    }

    #[test]
    fn pattern_recorded_v1_frame_is_upcast() {
        let v1 = v1();
        let expected = header(PatternRecorded::from(v1.clone()));
        let frame = encode_raw(&expected, EventKind::PatternRecorded.code(), 1, &archive(&v1));

        let env = binary::decode(&frame).unwrap();
        assert_eq!(env, expected);
        match &env.event {
            Event::PatternRecorded(p) => {
                assert_eq!(p.primary_model, "ollama:gemma4:26b");
                assert_eq!(p.cost_usd, Decimal::new(12, 4));
                assert_eq!(p.success_score, Some(0.75));
                assert!(p.over_soft_cap && p.was_new_fingerprint);
                assert_eq!((p.sample_size_before, p.sample_size_after), (4, 5));
                assert_eq!(p.turn, None);
                assert_eq!(p.latency_ms, 0.0);
                assert_eq!(p.eval_id, None);
                assert_eq!(p.score_confidence, None);
                assert_eq!(p.replaces_score, None);
                assert_eq!(p.features, None);
                assert_eq!(p.workload, None);
            }
            other => panic!("expected pattern.recorded, got {other:?}"),
        }

        // The zero-copy path validates the v1 archive with the v1 layout.
        let (raw, rest) = binary::split_frame(&frame).unwrap();
        assert!(rest.is_empty());
        assert_eq!(raw.schema_version, 1);
        let view = raw.view().unwrap();
        assert_eq!(view.kind(), EventKind::PatternRecorded);
        assert_eq!(view.schema_version(), 1);
        assert_eq!(view.seq(), Seq(42));
        assert_eq!(view.session(), Some("s-001"));
        assert_eq!(view.decode().unwrap(), expected);

        // Re-encoded, it is written at today's version and reads back equal.
        let again = binary::encode(&env);
        assert_eq!(u16::from_le_bytes([again[4], again[5]]), EventKind::PatternRecorded.schema_version());
        assert_eq!(binary::decode(&again).unwrap(), expected);

        // A segment mixing a v1 frame and a current one splits and decodes.
        let mut segment = frame.clone();
        binary::encode_into(&expected, &mut segment);
        let both: Vec<Envelope> = binary::frames(&segment).map(|f| f.unwrap().decode().unwrap()).collect();
        assert_eq!(both, vec![expected.clone(), expected]);
    }

    #[test]
    fn fast_path_hit_v1_is_upcast_with_no_residual() {
        use crate::payloads::{FastPathHit, FastPathHitV1, PlanStep, RouteLayer, ToolArgs};
        let v1 = FastPathHitV1 {
            layer: RouteLayer::L2,
            matched: "get URL and describe it".into(),
            similarity: Some(0.93),
            steps: vec![PlanStep { tool: "get_urls".into(), args: ToolArgs::default() }],
        };
        let expected = header(FastPathHit::from(v1.clone()));
        let frame = encode_raw(&expected, EventKind::FastPathHit.code(), 1, &archive(&v1));
        let env = binary::decode(&frame).unwrap();
        assert_eq!(env, expected);
        assert!(matches!(&env.event, Event::FastPathHit(h) if h.residual.is_none() && h.steps.len() == 1));
        assert_eq!(binary::split_frame(&frame).unwrap().0.view().unwrap().decode().unwrap(), expected);
        // And from a v1 JSON line.
        let line = crate::codec::json::to_line(&expected).replace("\"v\":2", "\"v\":1");
        assert_eq!(crate::codec::json::from_line(&line).unwrap(), expected);
    }

    #[test]
    fn tool_called_v2_is_upcast_with_no_source() {
        use crate::payloads::{RouteLayer, SideEffectClass, ToolArgs, ToolCalled, ToolCalledV2};
        let v2 = ToolCalledV2 {
            step: 1,
            tool: "read_file".into(),
            args: ToolArgs::default(),
            served_by: Some(RouteLayer::L1),
            side_effect: Some(SideEffectClass::Read),
        };
        let expected = header(ToolCalled::from(v2.clone()));
        assert!(matches!(&expected.event, Event::ToolCalled(c) if c.source.is_none() && c.side_effect.is_some()));
        let frame = encode_raw(&expected, EventKind::ToolCalled.code(), 2, &archive(&v2));
        assert_eq!(binary::decode(&frame).unwrap(), expected);
        assert_eq!(binary::split_frame(&frame).unwrap().0.view().unwrap().decode().unwrap(), expected);
        let line = crate::codec::json::to_line(&expected).replace("\"v\":3", "\"v\":2");
        assert_eq!(crate::codec::json::from_line(&line).unwrap(), expected);
    }

    #[test]
    fn llm_call_completed_v1_is_upcast_with_tools_unknown_and_no_schema() {
        use crate::payloads::{LlmCallCompleted, LlmCallCompletedV1, LlmContext, LlmOutcome, LlmTools};
        let v1 = LlmCallCompletedV1 {
            model: "ollama:m".into(),
            context: LlmContext::Planner,
            input_tokens: 10,
            output_tokens: 2,
            cost_usd: rust_decimal::Decimal::new(5, 4),
            pricing_version: "2026-11".into(),
            latency_ms: 900,
            outcome: LlmOutcome::Unreachable,
        };
        let expected = header(LlmCallCompleted::from(v1.clone()));
        assert!(matches!(&expected.event, Event::LlmCallCompleted(c)
            if c.tools == LlmTools::Unknown && !c.structured && c.outcome == LlmOutcome::Unreachable));
        let frame = encode_raw(&expected, EventKind::LlmCallCompleted.code(), 1, &archive(&v1));
        assert_eq!(binary::decode(&frame).unwrap(), expected);
        assert_eq!(binary::split_frame(&frame).unwrap().0.view().unwrap().decode().unwrap(), expected);
        let line = crate::codec::json::to_line(&expected)
            .replace("\"v\":2", "\"v\":1")
            .replace(",\"structured\":false", "")
            .replace(",\"tools\":\"unknown\"", "");
        assert!(!line.contains("tools"), "{line}");
        assert_eq!(crate::codec::json::from_line(&line).unwrap(), expected);
    }

    #[test]
    fn an_unknown_schema_version_is_an_error() {
        let env = header(PatternRecorded::from(v1()));
        let payload = archive(&v1());
        for version in [0u16, 4, 99, u16::MAX] {
            let frame = encode_raw(&env, EventKind::PatternRecorded.code(), version, &payload);
            let expected = DecodeError::SchemaVersion { kind: "pattern.recorded", version, current: 3 };
            assert_eq!(binary::decode(&frame), Err(expected.clone()));
            assert_eq!(binary::split_frame(&frame).unwrap().0.view().err(), Some(expected));
        }
        // A kind that never had another version.
        let ended = SessionEnded { reason: SessionEndReason::Idle, turns: 3 };
        let env = header(ended.clone());
        let frame = encode_raw(&env, EventKind::SessionEnded.code(), 99, &archive(&ended));
        assert_eq!(
            binary::decode(&frame),
            Err(DecodeError::SchemaVersion { kind: "session.ended", version: 99, current: 1 })
        );
        // The same payload at its real version decodes.
        let frame = encode_raw(&env, EventKind::SessionEnded.code(), 1, &archive(&ended));
        assert_eq!(binary::decode(&frame).unwrap(), env);
    }

    #[test]
    fn an_unknown_kind_code_is_an_error() {
        let ended = SessionEnded { reason: SessionEndReason::Host, turns: 1 };
        let env = header(ended.clone());
        for code in [0u16, 33, 999, u16::MAX] {
            assert_eq!(EventKind::from_code(code), None);
            let frame = encode_raw(&env, code, 1, &archive(&ended));
            assert_eq!(binary::decode(&frame), Err(DecodeError::UnknownKind(code)));
            let (raw, _) = binary::split_frame(&frame).unwrap();
            assert_eq!(raw.kind_code, code);
            // The header is still readable, so the log can name the record.
            assert_eq!(raw.seq(), Ok(Seq(42)));
            assert_eq!(raw.view().err(), Some(DecodeError::UnknownKind(code)));
        }
    }

    #[test]
    fn a_legacy_json_payload_error_names_the_field() {
        let mut payload = serde_json::to_value(v1()).unwrap();
        payload["sample_size_after"] = serde_json::json!("five");
        match from_json(EventKind::PatternRecorded, 1, payload) {
            Err(DecodeError::Field { field, .. }) => assert_eq!(field, "payload.sample_size_after"),
            other => panic!("expected a field error, got {other:?}"),
        }
        // A v2-only field in a v1 payload is unknown there.
        let mut payload = serde_json::to_value(v1()).unwrap();
        payload["latency_ms"] = serde_json::json!(12.5);
        match from_json(EventKind::PatternRecorded, 1, payload) {
            Err(DecodeError::Field { field, .. }) => assert_eq!(field, "payload.latency_ms"),
            other => panic!("expected a field error, got {other:?}"),
        }
    }
}
