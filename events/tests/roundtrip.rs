//! Codec properties over every event kind: binary and JSON round trips,
//! segments of frames, and corruption that is always detected.

use chrono::{DateTime, Utc};
use engram_events::codec::{binary, json};
use engram_events::ids::{EvalId, EventId, FingerprintId, SessionId, TurnId};
use engram_events::payloads::*;
use engram_events::{ActorKind, Envelope, Event, EventKind, Seq};
use proptest::prelude::*;
use rust_decimal::Decimal;
use ulid::Ulid;

/// Random values every payload builder draws from.
#[derive(Clone, Debug)]
struct Scalars {
    text: [String; 3],
    int: [u32; 3],
    big: u64,
    float: [f64; 2],
    flag: [bool; 2],
    cost: Decimal,
    ids: [u128; 3],
    n: usize,
    args: ToolArgs,
}

fn arb_args() -> impl Strategy<Value = ToolArgs> {
    let leaf = prop_oneof![
        any::<String>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<bool>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
        (-1e12f64..1e12).prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(2, 8, 3, |inner| {
        prop::collection::btree_map("[a-z]{1,6}", inner, 0..3)
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
    });
    prop::collection::btree_map("[a-z_]{1,8}", value, 0..4).prop_map(|m| ToolArgs(m.into_iter().collect()))
}

fn arb_scalars() -> impl Strategy<Value = Scalars> {
    (
        [any::<String>(), "[a-z:.0-9-]{1,20}", "\\PC{0,40}"],
        any::<[u32; 3]>(),
        any::<u64>(),
        [-1e9f64..1e9, 0.0f64..1.0],
        any::<[bool; 2]>(),
        (any::<i64>(), 0u32..=12).prop_map(|(m, s)| Decimal::new(m, s)),
        any::<[u128; 3]>(),
        0usize..4,
        arb_args(),
    )
        .prop_map(|(text, int, big, float, flag, cost, ids, n, args)| Scalars {
            text,
            int,
            big,
            float,
            flag,
            cost,
            ids,
            n,
            args,
        })
}

fn pick<T: Copy>(all: &[T], i: u32) -> T {
    all[i as usize % all.len()]
}

fn opt<T>(flag: bool, v: T) -> Option<T> {
    flag.then_some(v)
}

/// A payload of `kind` whose every field comes from `s`.
fn build(kind: EventKind, s: &Scalars) -> Event {
    let t = |i: usize| s.text[i].clone();
    let steps: Vec<PlanStep> = (0..s.n).map(|i| PlanStep { tool: format!("tool{i}"), args: s.args.clone() }).collect();
    let features = StructuralFeatures {
        intent_tags: vec![t(1); s.n],
        file_extensions: vec![t(2); s.n.min(1)],
        tool_names: vec![t(0)],
        file_path_buckets: Vec::new(),
        side_effect_classes: SideEffectClass::ALL[..s.n.min(4)].to_vec(),
        estimated_input_tokens_bucket: (s.int[0] % 4) as u8,
        has_images: s.flag[0],
        has_tool_calls_in_history: s.flag[1],
    };
    let option = ModelOption {
        model: t(1),
        score: s.float[0],
        sample_size: s.big,
        avg_cost_usd: s.cost,
        success_score_mean: s.float[1],
    };
    let layer = pick(RouteLayer::ALL, s.int[1]);
    let turn = TurnId(Ulid(s.ids[1]));
    let fp = FingerprintId(Ulid(s.ids[2]));
    match kind {
        EventKind::UtteranceReceived => Event::UtteranceReceived(UtteranceReceived {
            text: t(0),
            turn_number: s.int[0],
            source: pick(UtteranceSource::ALL, s.int[1]),
            lang: opt(s.flag[0], t(1)),
        }),
        EventKind::IntentJudged => Event::IntentJudged(IntentJudged {
            directed: s.flag[0],
            query: t(0),
            stop: s.flag[1],
            confidence: s.float[1],
            judge: pick(JudgeKind::ALL, s.int[2]),
        }),
        EventKind::RouteDecided => Event::RouteDecided(RouteDecided {
            layer,
            chosen_model: opt(s.flag[0], t(1)),
            chain: (0..s.n)
                .map(|i| ChainEntry {
                    policy: pick(RoutePolicy::ALL, s.int[0] + i as u32),
                    verdict: pick(ChainVerdict::ALL, s.int[1] + i as u32),
                    model: opt(s.flag[1], t(1)),
                    confidence: opt(s.flag[0], s.float[1]),
                    pattern_alternatives: opt(s.flag[1], vec![option.clone(); s.n]),
                })
                .collect(),
            features,
            workload: opt(s.flag[1], t(2)),
        }),
        EventKind::FastPathHit => {
            Event::FastPathHit(FastPathHit { layer, matched: t(0), similarity: opt(s.flag[0], s.float[0]), steps })
        }
        EventKind::FastPathMissed => Event::FastPathMissed(FastPathMissed {
            best_similarity: opt(s.flag[0], s.float[1]),
            best_candidate: opt(s.flag[1], t(2)),
            reason: t(0),
        }),
        EventKind::PlanCreated => Event::PlanCreated(PlanCreated {
            planner: pick(PlannerKind::ALL, s.int[0]),
            model: opt(s.flag[0], t(1)),
            steps,
            planner_ms: s.big,
        }),
        EventKind::ToolCalled => Event::ToolCalled(ToolCalled {
            step: s.int[0],
            tool: t(1),
            args: s.args.clone(),
            served_by: opt(s.flag[0], layer),
        }),
        EventKind::ToolCompleted => Event::ToolCompleted(ToolCompleted {
            step: s.int[0],
            tool: t(1),
            ok: s.flag[0],
            output: t(0),
            error: opt(s.flag[1], t(2)),
            duration_ms: s.big,
        }),
        EventKind::LlmCallCompleted => Event::LlmCallCompleted(LlmCallCompleted {
            model: t(1),
            context: pick(LlmContext::ALL, s.int[0]),
            input_tokens: s.int[1],
            output_tokens: s.int[2],
            cost_usd: s.cost,
            pricing_version: t(2),
            latency_ms: s.big,
            outcome: pick(LlmOutcome::ALL, s.int[2]),
        }),
        EventKind::ReplyDelivered => Event::ReplyDelivered(ReplyDelivered { text: t(0), layer, latency_ms: s.big }),
        EventKind::TurnCompleted => Event::TurnCompleted(TurnCompleted {
            turn_number: s.int[0],
            text: t(0),
            layer,
            model: opt(s.flag[0], t(1)),
            steps,
            tools_ok: s.flag[1],
            planner_ms: s.big,
            latency_ms: s.big / 2,
            cost_usd: s.cost,
            pricing_version: t(2),
        }),
        EventKind::SessionEnded => {
            Event::SessionEnded(SessionEnded { reason: pick(SessionEndReason::ALL, s.int[0]), turns: s.int[1] })
        }
        EventKind::EvalCompleted => Event::EvalCompleted(EvalCompleted {
            eval_id: EvalId(Ulid(s.ids[0])),
            subject_turn: turn,
            score: s.float[1],
            confidence: s.float[1] / 2.0,
            judge: pick(JudgeKind::ALL, s.int[0]),
            rubric: opt(s.flag[0], t(2)),
            judge_pricing_version: opt(s.flag[1], t(1)),
        }),
        EventKind::PatternRecorded => Event::PatternRecorded(PatternRecorded {
            fingerprint_id: fp,
            fingerprint_kind: pick(FingerprintKind::ALL, s.int[0]),
            primary_model: t(1),
            sample_size_before: s.big / 2,
            sample_size_after: s.big / 2 + 1,
            was_new_fingerprint: s.flag[0],
            success_score: opt(s.flag[1], s.float[1]),
            cost_usd: s.cost,
            pricing_version: t(2),
            over_soft_cap: s.flag[1],
            turn: opt(s.flag[0], turn),
            latency_ms: s.float[0],
            eval_id: opt(s.flag[1], EvalId(Ulid(s.ids[0]))),
            score_confidence: opt(s.flag[0], s.float[1]),
            replaces_score: opt(s.flag[1], s.float[1]),
            features: opt(s.flag[0], features),
            workload: opt(s.flag[1], t(2)),
        }),
        EventKind::PatternMatched => Event::PatternMatched(PatternMatched {
            fingerprint_id: fp,
            fingerprint_kind: pick(FingerprintKind::ALL, s.int[0]),
            chosen_model: t(1),
            confidence: s.float[1],
            sample_size: s.big,
            k_cluster_size: s.int[1],
            alternatives_count: s.int[2],
        }),
        EventKind::PatternEvicted => Event::PatternEvicted(PatternEvicted {
            trigger: pick(EvictionTrigger::ALL, s.int[0]),
            fingerprints_before: s.big,
            fingerprints_after: s.big / 2,
            outcomes_before: s.int[1] as u64,
            outcomes_after: s.int[2] as u64,
            entries_evicted: s.n as u64,
            oldest_evicted_age_days: opt(s.flag[0], s.float[0]),
            evicted: (0..s.n).map(|_| EvictedOutcome { fingerprint_id: fp, primary_model: t(1) }).collect(),
        }),
        EventKind::CanonicalRecorded => Event::CanonicalRecorded(CanonicalRecorded {
            canonical: t(0),
            executor: t(1),
            args_observed: s.args.clone(),
        }),
        EventKind::PipelineRecorded => {
            Event::PipelineRecorded(PipelineRecorded { pipeline_id: t(1), canonical: t(0), steps, day_rank: s.int[0] })
        }
        EventKind::PipelineExpired => Event::PipelineExpired(PipelineExpired {
            pipeline_id: t(1),
            last_used_rank: s.int[0],
            current_rank: s.int[1],
        }),
        EventKind::PipelinePromoted => Event::PipelinePromoted(PipelinePromoted { pipeline_id: t(1), uses: s.int[0] }),
        EventKind::DayActivated => Event::DayActivated(DayActivated { day: t(2), rank: s.int[0] }),
        EventKind::SummaryWritten => Event::SummaryWritten(SummaryWritten {
            summary: t(0),
            topics: vec![t(1); s.n],
            summariser: pick(SummariserKind::ALL, s.int[0]),
            turns_covered: s.int[1],
        }),
        EventKind::GraphFactAdded => Event::GraphFactAdded(GraphFactAdded {
            branch: pick(GraphBranch::ALL, s.int[0]),
            node: t(1),
            fact: t(0),
            extractor: pick(ExtractorKind::ALL, s.int[1]),
        }),
        EventKind::GraphNodeMerged => Event::GraphNodeMerged(GraphNodeMerged {
            branch: pick(GraphBranch::ALL, s.int[0]),
            node: t(1),
            facts: vec![t(0); s.n],
            facts_before: s.int[1],
        }),
        EventKind::FeedbackReceived => Event::FeedbackReceived(FeedbackReceived {
            subject_turn: opt(s.flag[0], turn),
            rating: pick(FeedbackRating::ALL, s.int[0]),
            text: opt(s.flag[1], t(0)),
        }),
    }
}

fn arb_envelope() -> impl Strategy<Value = Envelope> {
    (
        0..EventKind::ALL.len(),
        arb_scalars(),
        any::<u128>(),
        1u64..u64::MAX / 2,
        946_684_800_000_000i64..4_102_444_800_000_000, // 2000..2100, microseconds
        proptest::option::of("\\PC{1,12}"),
        proptest::option::of(any::<u128>()),
        proptest::option::of(any::<u128>()),
        0..ActorKind::ALL.len(),
    )
        .prop_map(|(k, s, id, seq, micros, session, turn, cause, actor)| {
            let at = DateTime::<Utc>::from_timestamp_micros(micros).unwrap();
            let mut env = Envelope::at(EventId(Ulid(id)), at, ActorKind::ALL[actor], build(EventKind::ALL[k], &s));
            env.seq = Seq(seq);
            env.session = session.map(SessionId::new);
            env.turn = turn.map(|t| TurnId(Ulid(t)));
            env.causation = cause.map(|c| EventId(Ulid(c)));
            env
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn binary_round_trip(env in arb_envelope()) {
        prop_assert_eq!(binary::decode(&binary::encode(&env)).unwrap(), env);
    }

    #[test]
    fn json_round_trip_is_exact(env in arb_envelope()) {
        let line = json::to_line(&env);
        let back = json::from_line(&line).unwrap();
        prop_assert_eq!(&back, &env);
        prop_assert_eq!(json::to_line(&back), line);
    }

    #[test]
    fn segments_split_back_into_their_frames(envs in prop::collection::vec(arb_envelope(), 1..8)) {
        let mut segment = Vec::new();
        for e in &envs {
            binary::encode_into(e, &mut segment);
        }
        let back: Vec<Envelope> = binary::frames(&segment).map(|f| f.unwrap().decode().unwrap()).collect();
        prop_assert_eq!(back, envs);
    }

    #[test]
    fn any_flipped_byte_is_detected(env in arb_envelope(), at in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let mut frame = binary::encode(&env);
        let i = at.index(frame.len());
        frame[i] ^= mask;
        // An error — never a panic, never a different envelope.
        prop_assert!(binary::decode(&frame).is_err());
    }

    #[test]
    fn any_truncation_is_detected(env in arb_envelope(), at in any::<prop::sample::Index>()) {
        let frame = binary::encode(&env);
        let cut = at.index(frame.len());
        prop_assert!(binary::decode(&frame[..cut]).is_err());
    }
}

#[test]
fn the_strategy_builds_every_kind() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let s = proptest::strategy::ValueTree::current(&arb_scalars().new_tree(&mut runner).unwrap());
    for &kind in EventKind::ALL {
        assert_eq!(build(kind, &s).kind(), kind);
    }
}

#[test]
fn json_errors_name_the_field() {
    let env = Envelope::at(
        EventId(Ulid(7)),
        DateTime::<Utc>::from_timestamp_micros(1_763_630_102_000_000).unwrap(),
        ActorKind::Judge,
        EvalCompleted {
            eval_id: EvalId(Ulid(1)),
            subject_turn: TurnId(Ulid(2)),
            score: 0.5,
            confidence: 1.0,
            judge: JudgeKind::Llm,
            rubric: None,
            judge_pricing_version: None,
        },
    );
    let line = json::to_line(&env);
    let field = |line: &str| match json::from_line(line) {
        Err(engram_events::DecodeError::Field { field, .. }) => field,
        other => panic!("expected a field error, got {other:?}"),
    };
    assert_eq!(field(&line.replace("\"score\":0.5", "\"score\":\"high\"")), "payload.score");
    assert_eq!(field(&line.replace("\"rubric\":null", "\"rubric\":null,\"extra\":1")), "payload.extra");
    assert_eq!(field(&line.replace("\"v\":1", "\"v\":1,\"extra\":1")), "extra");
    assert!(matches!(
        json::from_line(&line.replace("eval.completed", "eval.finished")),
        Err(engram_events::DecodeError::UnknownKindName(_))
    ));
    assert!(matches!(
        json::from_line(&line.replace("\"v\":1", "\"v\":99")),
        Err(engram_events::DecodeError::SchemaVersion { version: 99, .. })
    ));
}

#[test]
fn pattern_recorded_v1_json_is_upcast() {
    let v1 = PatternRecordedV1 {
        fingerprint_id: FingerprintId(Ulid(3)),
        fingerprint_kind: FingerprintKind::Structural,
        primary_model: "ollama:gemma4:26b".into(),
        sample_size_before: 4,
        sample_size_after: 5,
        was_new_fingerprint: false,
        success_score: Some(0.75),
        cost_usd: Decimal::new(12, 4),
        pricing_version: "2026-11".into(),
        over_soft_cap: false,
    };
    let line = format!(
        r#"{{"id":"{}","seq":3,"at":"2026-11-20T09:15:02.000000Z","session":null,"turn":null,"causation":null,"actor":"pattern_store","kind":"pattern.recorded","v":1,"payload":{}}}"#,
        EventId(Ulid(9)),
        serde_json::to_string(&v1).unwrap()
    );
    let env = json::from_line(&line).unwrap();
    assert_eq!(env.event, Event::PatternRecorded(PatternRecorded::from(v1)));
    match &env.event {
        Event::PatternRecorded(p) => {
            assert_eq!(p.turn, None);
            assert_eq!(p.latency_ms, 0.0);
            assert_eq!(p.sample_size_after, 5);
        }
        _ => unreachable!(),
    }
    // Written back, it is the current version.
    assert!(json::to_line(&env).contains("\"v\":2"));
}
