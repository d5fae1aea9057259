//! Codec properties over every event kind, with an `Arbitrary`-style
//! strategy that draws every payload field independently: binary and JSON
//! round trips, the zero-copy view, segments of frames, and corruption
//! (flipped bytes, truncation) that is always an error. Plus unit tests of
//! the JSON error paths and the `pattern.recorded` v1 -> v2 upcast.
//!
//! The binary upcast (a v1 frame) needs a crate-internal frame writer and is
//! tested in `src/codec/upcast.rs`.

use chrono::{DateTime, Utc};
use engram_events::codec::{binary, json};
use engram_events::ids::{EvalId, EventId, FingerprintId, SessionId, TurnId};
use engram_events::payloads::*;
use engram_events::{ActorKind, DecodeError, Envelope, Event, EventKind, Seq};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use ulid::Ulid;

// ---------------------------------------------------------------------------
// Field strategies

/// Text of every sort: arbitrary Unicode (control characters included),
/// printable Unicode, identifier-like, fixed multi-script samples, empty.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => any::<String>(),
        2 => "\\PC{0,24}",
        2 => "[a-z_:./-]{0,12}",
        1 => prop::sample::select(vec![
            "",
            "che ore sono?",
            "ünïcødé ✓ 日本語 🎉",
            "quote \" backslash \\ newline \n tab \t",
            "\u{0}\u{1f}\u{7f}\u{2028}\u{feff}",
            "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 — ½ € ∑",
        ])
        .prop_map(str::to_owned),
    ]
    .boxed()
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text())
}

/// A query embedding (finite components: JSON has no NaN).
fn query_embedding() -> impl Strategy<Value = QueryEmbedding> {
    (text(), prop::collection::vec(-1.0f32..1.0, 0..8))
        .prop_map(|(provider, vector)| QueryEmbedding { provider, vector })
}

/// A query embedding, or none.
fn opt_embedding() -> impl Strategy<Value = Option<QueryEmbedding>> {
    proptest::option::of(query_embedding())
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(text(), 0..4)
}

/// Finite f64 only (no NaN, no infinity): normal, subnormal, ±0, any sign
/// and magnitude, plus the unit interval scores live in.
fn float() -> BoxedStrategy<f64> {
    use prop::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO,
        0.0f64..=1.0,
        prop::sample::select(vec![0.0, -0.0, 1.0, 0.1, 1e-7, f64::MAX, f64::MIN, f64::MIN_POSITIVE, f64::EPSILON]),
    ]
    .boxed()
}

fn opt_float() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(float())
}

/// A Decimal from a random i64 mantissa and a scale in 0..10.
fn decimal() -> impl Strategy<Value = Decimal> {
    (any::<i64>(), 0u32..10).prop_map(|(m, s)| Decimal::new(m, s))
}

fn ulid() -> impl Strategy<Value = Ulid> {
    any::<u128>().prop_map(Ulid)
}

fn turn_id() -> impl Strategy<Value = TurnId> {
    ulid().prop_map(TurnId)
}

fn fingerprint_id() -> impl Strategy<Value = FingerprintId> {
    ulid().prop_map(FingerprintId)
}

fn eval_id() -> impl Strategy<Value = EvalId> {
    ulid().prop_map(EvalId)
}

/// A JSON value inside tool arguments: strings, integers (signed and
/// unsigned), bools, null, finite floats, and nested objects and arrays.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        text().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        float().prop_map(Value::from),
        prop::sample::select(vec!["$0", "$1", "{url}", "*.pdf"]).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::btree_map(text(), inner.clone(), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            prop::collection::vec(inner, 0..4).prop_map(Value::Array),
        ]
    })
}

/// A few random keys (identifier-like or any text) with random values.
fn tool_args() -> impl Strategy<Value = ToolArgs> {
    let key = prop_oneof![3 => "[a-z_]{1,8}", 1 => text()];
    prop::collection::btree_map(key, json_value(), 0..5).prop_map(|m| ToolArgs(m.into_iter().collect()))
}

fn step() -> impl Strategy<Value = PlanStep> {
    (text(), tool_args()).prop_map(|(tool, args)| PlanStep { tool, args })
}

fn steps() -> impl Strategy<Value = Vec<PlanStep>> {
    prop::collection::vec(step(), 0..4)
}

fn select<T: Clone + std::fmt::Debug + 'static>(all: &'static [T]) -> impl Strategy<Value = T> {
    prop::sample::select(all)
}

fn features() -> impl Strategy<Value = StructuralFeatures> {
    (
        texts(),
        texts(),
        texts(),
        texts(),
        prop::collection::vec(select(SideEffectClass::ALL), 0..4),
        any::<u8>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(intent_tags, file_extensions, tool_names, file_path_buckets, side_effect_classes, bucket, img, hist)| {
                StructuralFeatures {
                    intent_tags,
                    file_extensions,
                    tool_names,
                    file_path_buckets,
                    side_effect_classes,
                    estimated_input_tokens_bucket: bucket,
                    has_images: img,
                    has_tool_calls_in_history: hist,
                }
            },
        )
}

fn model_option() -> impl Strategy<Value = ModelOption> {
    (text(), float(), any::<u64>(), decimal(), float()).prop_map(
        |(model, score, sample_size, avg_cost_usd, success_score_mean)| ModelOption {
            model,
            score,
            sample_size,
            avg_cost_usd,
            success_score_mean,
        },
    )
}

fn chain_entry() -> impl Strategy<Value = ChainEntry> {
    (
        select(RoutePolicy::ALL),
        select(ChainVerdict::ALL),
        opt_text(),
        opt_float(),
        proptest::option::of(prop::collection::vec(model_option(), 0..4)),
    )
        .prop_map(|(policy, verdict, model, confidence, pattern_alternatives)| ChainEntry {
            policy,
            verdict,
            model,
            confidence,
            pattern_alternatives,
        })
}

// ---------------------------------------------------------------------------
// The event and envelope strategies

/// A payload of `kind` with every field drawn independently. The match is
/// exhaustive, so a new kind does not compile until it has a strategy here.
fn arb_event(kind: EventKind) -> BoxedStrategy<Event> {
    match kind {
        EventKind::UtteranceReceived => {
            (text(), any::<u32>(), select(UtteranceSource::ALL), opt_text(), opt_text(), opt_text())
                .prop_map(|(text, turn_number, source, lang, model, sticky_model)| {
                    UtteranceReceived { text, turn_number, source, lang, model, sticky_model }.into()
                })
                .boxed()
        }
        EventKind::IntentJudged => (any::<bool>(), text(), any::<bool>(), float(), select(JudgeKind::ALL))
            .prop_map(|(directed, query, stop, confidence, judge)| {
                IntentJudged { directed, query, stop, confidence, judge }.into()
            })
            .boxed(),
        EventKind::RouteDecided => (
            select(RouteLayer::ALL),
            opt_text(),
            prop::collection::vec(chain_entry(), 0..4),
            features(),
            opt_text(),
            opt_embedding(),
        )
            .prop_map(|(layer, chosen_model, chain, features, workload, embedding)| {
                RouteDecided { layer, chosen_model, chain, features, workload, embedding }.into()
            })
            .boxed(),
        EventKind::FastPathHit => (select(RouteLayer::ALL), text(), opt_float(), steps(), opt_text())
            .prop_map(|(layer, matched, similarity, steps, residual)| {
                FastPathHit { layer, matched, similarity, steps, residual }.into()
            })
            .boxed(),
        EventKind::FastPathMissed => {
            (opt_float(), opt_text(), text(), proptest::option::of((text(), float(), steps())))
                .prop_map(|(best_similarity, best_candidate, reason, near)| {
                    let near = near.map(|(canonical, similarity, steps)| NearMiss { canonical, similarity, steps });
                    FastPathMissed { best_similarity, best_candidate, reason, near }.into()
                })
                .boxed()
        }
        EventKind::PlanCreated => (select(PlannerKind::ALL), opt_text(), steps(), any::<u64>(), texts())
            .prop_map(|(planner, model, steps, planner_ms, tools)| {
                PlanCreated { planner, model, steps, planner_ms, tools }.into()
            })
            .boxed(),
        EventKind::ToolCalled => (
            (any::<u32>(), text(), tool_args(), proptest::option::of(select(RouteLayer::ALL))),
            proptest::option::of(select(SideEffectClass::ALL)),
            opt_text(),
        )
            .prop_map(|((step, tool, args, served_by), side_effect, source)| {
                ToolCalled { step, tool, args, served_by, side_effect, source }.into()
            })
            .boxed(),
        EventKind::ToolCompleted => (any::<u32>(), text(), any::<bool>(), text(), opt_text(), any::<u64>())
            .prop_map(|(step, tool, ok, output, error, duration_ms)| {
                ToolCompleted { step, tool, ok, output, error, duration_ms }.into()
            })
            .boxed(),
        EventKind::LlmCallCompleted => (
            text(),
            select(LlmContext::ALL),
            any::<u32>(),
            any::<u32>(),
            decimal(),
            text(),
            any::<u64>(),
            (select(LlmOutcome::ALL), select(LlmTools::ALL), any::<bool>()),
        )
            .prop_map(
                |(
                    model,
                    context,
                    input_tokens,
                    output_tokens,
                    cost_usd,
                    pricing_version,
                    latency_ms,
                    (outcome, tools, structured),
                )| {
                    LlmCallCompleted {
                        model,
                        context,
                        input_tokens,
                        output_tokens,
                        cost_usd,
                        pricing_version,
                        latency_ms,
                        outcome,
                        tools,
                        structured,
                    }
                    .into()
                },
            )
            .boxed(),
        EventKind::ReplyDelivered => (text(), select(RouteLayer::ALL), any::<u64>())
            .prop_map(|(text, layer, latency_ms)| ReplyDelivered { text, layer, latency_ms }.into())
            .boxed(),
        EventKind::TurnCompleted => (
            any::<u32>(),
            text(),
            select(RouteLayer::ALL),
            opt_text(),
            steps(),
            any::<bool>(),
            any::<u64>(),
            any::<u64>(),
            decimal(),
            text(),
        )
            .prop_map(
                |(
                    turn_number,
                    text,
                    layer,
                    model,
                    steps,
                    tools_ok,
                    planner_ms,
                    latency_ms,
                    cost_usd,
                    pricing_version,
                )| {
                    TurnCompleted {
                        turn_number,
                        text,
                        layer,
                        model,
                        steps,
                        tools_ok,
                        planner_ms,
                        latency_ms,
                        cost_usd,
                        pricing_version,
                    }
                    .into()
                },
            )
            .boxed(),
        EventKind::SessionEnded => (select(SessionEndReason::ALL), any::<u32>())
            .prop_map(|(reason, turns)| SessionEnded { reason, turns }.into())
            .boxed(),
        EventKind::EvalCompleted => {
            (eval_id(), turn_id(), float(), float(), select(JudgeKind::ALL), opt_text(), opt_text())
                .prop_map(|(eval_id, subject_turn, score, confidence, judge, rubric, judge_pricing_version)| {
                    EvalCompleted { eval_id, subject_turn, score, confidence, judge, rubric, judge_pricing_version }
                        .into()
                })
                .boxed()
        }
        EventKind::PatternRecorded => (
            (
                fingerprint_id(),
                select(FingerprintKind::ALL),
                text(),
                any::<u64>(),
                any::<u64>(),
                any::<bool>(),
                opt_float(),
                decimal(),
                text(),
                any::<bool>(),
            ),
            (
                proptest::option::of(turn_id()),
                float(),
                proptest::option::of(eval_id()),
                opt_float(),
                opt_float(),
                proptest::option::of(features()),
                opt_text(),
                opt_embedding(),
            ),
        )
            .prop_map(
                |(
                    (
                        fingerprint_id,
                        fingerprint_kind,
                        primary_model,
                        sample_size_before,
                        sample_size_after,
                        was_new_fingerprint,
                        success_score,
                        cost_usd,
                        pricing_version,
                        over_soft_cap,
                    ),
                    (turn, latency_ms, eval_id, score_confidence, replaces_score, features, workload, embedding),
                )| {
                    PatternRecorded {
                        fingerprint_id,
                        fingerprint_kind,
                        primary_model,
                        sample_size_before,
                        sample_size_after,
                        was_new_fingerprint,
                        success_score,
                        cost_usd,
                        pricing_version,
                        over_soft_cap,
                        turn,
                        latency_ms,
                        eval_id,
                        score_confidence,
                        replaces_score,
                        features,
                        workload,
                        embedding,
                    }
                    .into()
                },
            )
            .boxed(),
        EventKind::PatternMatched => {
            (fingerprint_id(), select(FingerprintKind::ALL), text(), float(), any::<u64>(), any::<u32>(), any::<u32>())
                .prop_map(
                    |(
                        fingerprint_id,
                        fingerprint_kind,
                        chosen_model,
                        confidence,
                        sample_size,
                        k_cluster_size,
                        alternatives_count,
                    )| {
                        PatternMatched {
                            fingerprint_id,
                            fingerprint_kind,
                            chosen_model,
                            confidence,
                            sample_size,
                            k_cluster_size,
                            alternatives_count,
                        }
                        .into()
                    },
                )
                .boxed()
        }
        EventKind::PatternEvicted => (
            select(EvictionTrigger::ALL),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            opt_float(),
            prop::collection::vec(
                (fingerprint_id(), text())
                    .prop_map(|(fingerprint_id, primary_model)| EvictedOutcome { fingerprint_id, primary_model }),
                0..4,
            ),
        )
            .prop_map(
                |(
                    trigger,
                    fingerprints_before,
                    fingerprints_after,
                    outcomes_before,
                    outcomes_after,
                    entries_evicted,
                    oldest_evicted_age_days,
                    evicted,
                )| {
                    PatternEvicted {
                        trigger,
                        fingerprints_before,
                        fingerprints_after,
                        outcomes_before,
                        outcomes_after,
                        entries_evicted,
                        oldest_evicted_age_days,
                        evicted,
                    }
                    .into()
                },
            )
            .boxed(),
        EventKind::CanonicalRecorded => (text(), text(), tool_args(), tool_args())
            .prop_map(|(canonical, executor, args_observed, slots)| {
                CanonicalRecorded { canonical, executor, args_observed, slots }.into()
            })
            .boxed(),
        EventKind::PipelineRecorded => (text(), text(), steps(), any::<u32>())
            .prop_map(|(pipeline_id, canonical, steps, day_rank)| {
                PipelineRecorded { pipeline_id, canonical, steps, day_rank }.into()
            })
            .boxed(),
        EventKind::PipelineExpired => (text(), any::<u32>(), any::<u32>())
            .prop_map(|(pipeline_id, last_used_rank, current_rank)| {
                PipelineExpired { pipeline_id, last_used_rank, current_rank }.into()
            })
            .boxed(),
        EventKind::PipelinePromoted => {
            (text(), any::<u32>()).prop_map(|(pipeline_id, uses)| PipelinePromoted { pipeline_id, uses }.into()).boxed()
        }
        EventKind::DayActivated => (prop_oneof!["[0-9]{4}-[0-9]{2}-[0-9]{2}", text()], any::<u32>())
            .prop_map(|(day, rank)| DayActivated { day, rank }.into())
            .boxed(),
        EventKind::SummaryWritten => (text(), texts(), select(SummariserKind::ALL), any::<u32>())
            .prop_map(|(summary, topics, summariser, turns_covered)| {
                SummaryWritten { summary, topics, summariser, turns_covered }.into()
            })
            .boxed(),
        EventKind::GraphFactAdded => (select(GraphBranch::ALL), text(), text(), select(ExtractorKind::ALL))
            .prop_map(|(branch, node, fact, extractor)| GraphFactAdded { branch, node, fact, extractor }.into())
            .boxed(),
        EventKind::GraphNodeMerged => (select(GraphBranch::ALL), text(), texts(), any::<u32>())
            .prop_map(|(branch, node, facts, facts_before)| {
                GraphNodeMerged { branch, node, facts, facts_before }.into()
            })
            .boxed(),
        EventKind::FeedbackReceived => (proptest::option::of(turn_id()), select(FeedbackRating::ALL), opt_text())
            .prop_map(|(subject_turn, rating, text)| FeedbackReceived { subject_turn, rating, text }.into())
            .boxed(),
        EventKind::MemoryForgotten => (
            text(),
            proptest::collection::vec(
                (select(GraphBranch::ALL), text(), text()).prop_map(|(branch, node, fact)| ForgottenFact {
                    branch,
                    node,
                    fact,
                }),
                0..3,
            ),
            texts(),
            texts(),
        )
            .prop_map(|(request, facts, sessions, phrases)| {
                let sessions = sessions.into_iter().map(SessionId::new).collect();
                MemoryForgotten { request, facts, sessions, phrases }.into()
            })
            .boxed(),
        EventKind::PatternReembedded => (fingerprint_id(), proptest::option::of(turn_id()), query_embedding())
            .prop_map(|(fingerprint_id, turn, embedding)| PatternReembedded { fingerprint_id, turn, embedding }.into())
            .boxed(),
        EventKind::StreamMessageSkipped => (text(), any::<u64>(), text())
            .prop_map(|(reason, payload_bytes, payload_blake3)| {
                StreamMessageSkipped { reason, payload_bytes, payload_blake3 }.into()
            })
            .boxed(),
        EventKind::CanonicalRejected => (text(), text(), turn_id(), eval_id(), float(), tool_args())
            .prop_map(|(canonical, executor, subject_turn, eval_id, score, slots)| {
                CanonicalRejected { canonical, executor, subject_turn, eval_id, score, slots }.into()
            })
            .boxed(),
        EventKind::CanonicalCompared => (text(), text(), float(), any::<bool>(), turn_id())
            .prop_map(|(canonical, executor, similarity, agreed, subject_turn)| {
                CanonicalCompared { canonical, executor, similarity, agreed, subject_turn }.into()
            })
            .boxed(),
        EventKind::PipelineRejected => (text(), turn_id(), eval_id(), float())
            .prop_map(|(pipeline_id, subject_turn, eval_id, score)| {
                PipelineRejected { pipeline_id, subject_turn, eval_id, score }.into()
            })
            .boxed(),
        EventKind::PassagesIndexed => prop::collection::vec(
            (
                text(),
                select(Speaker::ALL),
                proptest::option::of((text(), 0.0f32..1.0, prop::collection::vec(any::<i8>(), 0..8))),
            )
                .prop_map(|(text, speaker, vector)| Passage {
                    text,
                    speaker,
                    vector: vector.map(|(provider, scale, codes)| PassageVector { provider, scale, codes }),
                }),
            0..3,
        )
        .prop_map(|passages| PassagesIndexed { passages }.into())
        .boxed(),
    }
}

/// 2000-01-01T00:00:00Z and 2100-01-01T00:00:00Z in microseconds.
const Y2000_MICROS: i64 = 946_684_800_000_000;
const Y2100_MICROS: i64 = 4_102_444_800_000_000;

/// An envelope around `event`: random id, seq, microsecond timestamp in
/// 2000..2100, optional session / turn / causation, any actor.
fn arb_envelope_with(event: BoxedStrategy<Event>) -> impl Strategy<Value = Envelope> {
    (
        event,
        ulid(),
        any::<u64>(),
        Y2000_MICROS..Y2100_MICROS,
        proptest::option::of(text()),
        proptest::option::of(turn_id()),
        proptest::option::of(ulid()),
        select(ActorKind::ALL),
    )
        .prop_map(|(event, id, seq, micros, session, turn, causation, actor)| Envelope {
            id: EventId(id),
            seq: Seq(seq),
            at: DateTime::<Utc>::from_timestamp_micros(micros).unwrap(),
            session: session.map(SessionId),
            turn,
            causation: causation.map(EventId),
            actor,
            event,
        })
}

/// An envelope of any kind (kinds drawn uniformly).
fn arb_envelope() -> impl Strategy<Value = Envelope> {
    arb_envelope_with(select(EventKind::ALL).prop_flat_map(arb_event).boxed())
}

/// One value from `strategy`, deterministically.
fn sample<S: Strategy>(strategy: &S, runner: &mut TestRunner) -> S::Value {
    strategy.new_tree(runner).unwrap().current()
}

// ---------------------------------------------------------------------------
// Properties

proptest! {
    // 256 cases each by default; `PROPTEST_CASES=N` runs more.
    #![proptest_config(ProptestConfig::default())]

    /// (a) binary: decode(encode(env)) == env, and the zero-copy view
    /// agrees with the full decode.
    #[test]
    fn binary_round_trip(env in arb_envelope()) {
        let frame = binary::encode(&env);
        prop_assert_eq!(&binary::decode(&frame).unwrap(), &env);

        let (raw, rest) = binary::split_frame(&frame).unwrap();
        prop_assert!(rest.is_empty());
        prop_assert_eq!(raw.bytes, &frame[..]);
        prop_assert_eq!(raw.kind_code, env.kind().code());
        prop_assert_eq!(raw.schema_version, env.kind().schema_version());
        prop_assert_eq!(raw.seq().unwrap(), env.seq);
        let view = raw.view().unwrap();
        prop_assert_eq!(view.kind(), env.kind());
        prop_assert_eq!(view.seq(), env.seq);
        prop_assert_eq!(view.id(), env.id);
        prop_assert_eq!(view.at_micros(), env.at.timestamp_micros());
        prop_assert_eq!(view.session(), env.session.as_ref().map(SessionId::as_str));
        prop_assert_eq!(&view.decode().unwrap(), &env);
    }

    /// (b) JSON: from_line(to_line(env)) == env, and re-encoding the parsed
    /// envelope gives the identical line; the line is one line.
    #[test]
    fn json_round_trip_is_exact(env in arb_envelope()) {
        let line = json::to_line(&env);
        prop_assert!(!line.contains('\n'), "a JSON line must not contain a newline: {}", line);
        let back = json::from_line(&line).unwrap();
        prop_assert_eq!(&back, &env);
        prop_assert_eq!(json::to_line(&back), line);
        prop_assert_eq!(&json::from_value(json::to_value(&env)).unwrap(), &env);
    }

    /// (c) frames concatenated with `encode_into` split back into the same
    /// envelopes, each frame byte-identical to its standalone encoding.
    #[test]
    fn segments_split_back_into_their_frames(envs in prop::collection::vec(arb_envelope(), 1..8)) {
        let mut segment = Vec::new();
        let mut lens = Vec::new();
        for env in &envs {
            lens.push(binary::encode_into(env, &mut segment));
        }
        prop_assert_eq!(lens.iter().sum::<usize>(), segment.len());
        let frames: Vec<_> = binary::frames(&segment).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(frames.len(), envs.len());
        for ((frame, env), len) in frames.iter().zip(&envs).zip(&lens) {
            prop_assert_eq!(frame.bytes.len(), *len);
            prop_assert_eq!(frame.bytes, &binary::encode(env)[..]);
            prop_assert_eq!(&frame.decode().unwrap(), env);
        }
    }

    /// (d) flipping any single byte of a frame is an error, never a panic
    /// and never a different envelope; the error is a framing one (the CRC
    /// catches it before any archive is touched).
    #[test]
    fn any_flipped_byte_is_detected(env in arb_envelope(), at in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let mut frame = binary::encode(&env);
        let i = at.index(frame.len());
        frame[i] ^= mask;
        let err = binary::decode(&frame).unwrap_err();
        prop_assert!(
            matches!(
                err,
                DecodeError::Crc { .. }
                    | DecodeError::FormatVersion(_)
                    | DecodeError::Truncated { .. }
                    | DecodeError::TrailingBytes(_)
            ),
            "byte {} ^ {:#04x}: unexpected error {:?}", i, mask, err
        );
    }

    /// (d') the same in a segment: the frames before the damaged one still
    /// decode, and the damaged one is an error, not a misread.
    #[test]
    fn a_flipped_byte_in_a_segment_is_detected(
        envs in prop::collection::vec(arb_envelope(), 1..5),
        at in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let mut segment = Vec::new();
        let mut ends = Vec::new();
        for env in &envs {
            binary::encode_into(env, &mut segment);
            ends.push(segment.len());
        }
        let i = at.index(segment.len());
        segment[i] ^= mask;
        let damaged = ends.iter().position(|&end| i < end).unwrap();
        let results: Vec<_> = binary::frames(&segment).map(|f| f.and_then(|f| f.decode())).collect();
        prop_assert_eq!(results.len(), damaged + 1, "the iterator stops at the damaged frame");
        for (result, env) in results.iter().zip(&envs).take(damaged) {
            prop_assert_eq!(result.as_ref().unwrap(), env);
        }
        prop_assert!(results[damaged].is_err());
    }

    /// (e) truncating a frame at any length is an error. Every cut of the
    /// frame is tried, and trailing bytes are rejected as well.
    #[test]
    fn any_truncation_is_detected(env in arb_envelope(), extra in 1usize..4) {
        let frame = binary::encode(&env);
        for cut in 0..frame.len() {
            let err = binary::decode(&frame[..cut]).unwrap_err();
            prop_assert!(matches!(err, DecodeError::Truncated { available, .. } if available == cut), "cut {}: {:?}", cut, err);
        }
        let mut longer = frame.clone();
        longer.extend(std::iter::repeat_n(0u8, extra));
        prop_assert_eq!(binary::decode(&longer), Err(DecodeError::TrailingBytes(extra)));
    }
}

// ---------------------------------------------------------------------------
// The strategy itself

#[test]
fn the_strategy_builds_every_kind() {
    // One envelope per kind, deterministically, each round-tripping both ways.
    let mut runner = TestRunner::deterministic();
    assert_eq!(EventKind::ALL.len(), 32);
    for &kind in EventKind::ALL {
        let env = sample(&arb_envelope_with(arb_event(kind)), &mut runner);
        assert_eq!(env.kind(), kind);
        assert_eq!(binary::decode(&binary::encode(&env)).unwrap(), env, "{kind}");
        assert_eq!(json::from_line(&json::to_line(&env)).unwrap(), env, "{kind}");
    }
}

#[test]
fn the_any_kind_strategy_reaches_every_kind() {
    let mut runner = TestRunner::deterministic();
    let strategy = arb_envelope();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..2_000 {
        seen.insert(sample(&strategy, &mut runner).kind());
        if seen.len() == EventKind::ALL.len() {
            break;
        }
    }
    let missing: Vec<_> = EventKind::ALL.iter().filter(|k| !seen.contains(k)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

// ---------------------------------------------------------------------------
// JSON: fixed shapes, upcasts and errors

fn at() -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_micros(1_763_630_102_000_000).unwrap() // 2025-11-20T09:15:02Z
}

fn eval_env() -> Envelope {
    let mut env = Envelope::at(
        EventId(Ulid(7)),
        at(),
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
    )
    .with_session(SessionId::new("s-001"));
    env.seq = Seq(3);
    env
}

fn field_error(line: &str) -> String {
    match json::from_line(line) {
        Err(DecodeError::Field { field, .. }) => field,
        other => panic!("expected a field error for {line}, got {other:?}"),
    }
}

#[test]
fn json_line_has_the_documented_shape() {
    // Envelope fields in the documented order, payload fields sorted,
    // six fractional digits, ULIDs as text.
    assert_eq!(
        json::to_line(&eval_env()),
        concat!(
            r#"{"id":"00000000000000000000000007","seq":3,"at":"2025-11-20T09:15:02.000000Z","session":"s-001","#,
            r#""turn":null,"causation":null,"actor":"judge","kind":"eval.completed","v":1,"payload":{"#,
            r#""confidence":1.0,"eval_id":"00000000000000000000000001","judge":"llm","judge_pricing_version":null,"#,
            r#""rubric":null,"score":0.5,"subject_turn":"00000000000000000000000002"}}"#
        )
    );
}

#[test]
fn tool_args_and_money_are_canonical() {
    // Keys come out sorted whatever the insertion order (this would fail if
    // serde_json's `preserve_order` were ever switched on in the workspace).
    let mut map = serde_json::Map::new();
    map.insert("zeta".into(), json!(1));
    map.insert("alpha".into(), json!({"y": true, "b": "$0"}));
    assert_eq!(ToolArgs(map).to_json(), r#"{"alpha":{"b":"$0","y":true},"zeta":1}"#);

    // Money is a decimal string, its scale kept exactly.
    let env = Envelope::at(
        EventId(Ulid(1)),
        at(),
        ActorKind::ReplyLoop,
        LlmCallCompleted {
            model: "ollama:gemma4:26b".into(),
            context: LlmContext::Planner,
            input_tokens: 10,
            output_tokens: 20,
            cost_usd: Decimal::new(12_000, 7),
            pricing_version: "2026-11".into(),
            latency_ms: 11_800,
            outcome: LlmOutcome::Ok,
            tools: LlmTools::None,
            structured: false,
        },
    );
    let line = json::to_line(&env);
    assert!(line.contains(r#""cost_usd":"0.0012000""#), "{line}");
    assert_eq!(json::to_line(&json::from_line(&line).unwrap()), line);
    // A JSON number is not money.
    assert_eq!(field_error(&line.replace(r#""0.0012000""#, "0.0012")), "payload.cost_usd");
    assert_eq!(field_error(&line.replace(r#""0.0012000""#, r#""twelve""#)), "payload.cost_usd");
}

#[test]
fn optional_envelope_fields_and_version_may_be_omitted() {
    let env = eval_env();
    let mut value = json::to_value(&env);
    let obj = value.as_object_mut().unwrap();
    for key in ["seq", "turn", "causation", "v"] {
        obj.remove(key);
    }
    let back = json::from_value(value).unwrap();
    // A missing `v` means today's version; a missing `seq` is unassigned.
    assert_eq!(back, Envelope { seq: Seq::UNASSIGNED, ..env });
}

#[test]
fn json_errors_name_the_field() {
    let line = json::to_line(&eval_env());
    // Wrong type in the payload.
    assert_eq!(field_error(&line.replace(r#""score":0.5"#, r#""score":"high""#)), "payload.score");
    // Unknown payload field.
    assert_eq!(field_error(&line.replace(r#""rubric":null"#, r#""rubric":null,"extra":1"#)), "payload.extra");
    // Unknown top-level field.
    assert_eq!(field_error(&line.replace(r#""v":1"#, r#""v":1,"extra":1"#)), "extra");
    // Unknown closed value.
    assert_eq!(field_error(&line.replace(r#""judge":"llm""#, r#""judge":"oracle""#)), "payload.judge");
    // Bad envelope values.
    assert_eq!(field_error(&line.replace(r#""actor":"judge""#, r#""actor":"nobody""#)), "actor");
    assert_eq!(field_error(&line.replace("2025-11-20T09:15:02.000000Z", "yesterday")), "at");
    assert_eq!(field_error(&line.replace("00000000000000000000000007", "not-a-ulid")), "id");
    // A missing payload field names the payload; a missing nullable field
    // is null (serde's rule for `Option`).
    assert_eq!(field_error(&line.replace(r#""score":0.5,"#, "")), "payload");
    assert_eq!(json::from_line(&line.replace(r#""rubric":null,"#, "")).unwrap(), eval_env());

    // Nested paths.
    let turn = Envelope::at(
        EventId(Ulid(5)),
        at(),
        ActorKind::ReplyLoop,
        PlanCreated {
            planner: PlannerKind::Llm,
            model: None,
            steps: vec![PlanStep { tool: "get_urls".into(), args: ToolArgs::default() }],
            planner_ms: 1,
            tools: Vec::new(),
        },
    );
    let line = json::to_line(&turn);
    assert_eq!(field_error(&line.replace(r#""tool":"get_urls""#, r#""tool":7"#)), "payload.steps[0].tool");
    assert_eq!(field_error(&line.replace(r#""args":{}"#, r#""args":[]"#)), "payload.steps[0].args");

    assert!(matches!(
        json::from_line(&json::to_line(&eval_env()).replace("eval.completed", "eval.finished")),
        Err(DecodeError::UnknownKindName(name)) if name == "eval.finished"
    ));
    assert!(matches!(json::from_line("{not json"), Err(DecodeError::Json(_))));
}

#[test]
fn an_unknown_json_schema_version_is_an_error() {
    let line = json::to_line(&eval_env());
    for v in [0u16, 2, 99] {
        assert_eq!(
            json::from_line(&line.replace(r#""v":1"#, &format!(r#""v":{v}"#))),
            Err(DecodeError::SchemaVersion { kind: "eval.completed", version: v, current: 1 })
        );
    }
    let recorded = Envelope::at(EventId(Ulid(1)), at(), ActorKind::PatternStore, PatternRecorded::from(v1()));
    let line = json::to_line(&recorded);
    assert!(line.contains(r#""v":3"#));
    assert_eq!(
        json::from_line(&line.replace(r#""v":3"#, r#""v":99"#)),
        Err(DecodeError::SchemaVersion { kind: "pattern.recorded", version: 99, current: 3 })
    );
}

fn v1() -> PatternRecordedV1 {
    PatternRecordedV1 {
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
    }
}

fn v1_line(payload: &Value) -> String {
    format!(
        concat!(
            r#"{{"id":"{}","seq":3,"at":"2026-11-20T09:15:02.000000Z","session":"s-001","turn":null,"#,
            r#""causation":null,"actor":"pattern_store","kind":"pattern.recorded","v":1,"payload":{}}}"#
        ),
        EventId(Ulid(9)),
        payload
    )
}

#[test]
fn pattern_recorded_v1_json_is_upcast() {
    let v1 = v1();
    let env = json::from_line(&v1_line(&serde_json::to_value(&v1).unwrap())).unwrap();
    assert_eq!(env.seq, Seq(3));
    assert_eq!(env.actor, ActorKind::PatternStore);
    let Event::PatternRecorded(p) = &env.event else { panic!("expected pattern.recorded, got {:?}", env.event) };
    // Every v1 field carries over...
    assert_eq!(p.fingerprint_id, v1.fingerprint_id);
    assert_eq!(p.fingerprint_kind, v1.fingerprint_kind);
    assert_eq!(p.primary_model, v1.primary_model);
    assert_eq!((p.sample_size_before, p.sample_size_after), (4, 5));
    assert!(!p.was_new_fingerprint && !p.over_soft_cap);
    assert_eq!(p.success_score, Some(0.75));
    assert_eq!(p.cost_usd, Decimal::new(12, 4));
    assert_eq!(p.pricing_version, "2026-11");
    // ...and the v2 fields are defaulted.
    assert_eq!(p.turn, None);
    assert_eq!(p.latency_ms, 0.0);
    assert_eq!(p.eval_id, None);
    assert_eq!(p.score_confidence, None);
    assert_eq!(p.replaces_score, None);
    assert_eq!(p.features, None);
    assert_eq!(p.workload, None);
    assert_eq!(env.event, Event::from(PatternRecorded::from(v1)));

    // Written back it is today's version, and reads back the same.
    let line = json::to_line(&env);
    assert!(line.contains(r#""kind":"pattern.recorded","v":3"#), "{line}");
    assert_eq!(json::from_line(&line).unwrap(), env);
    assert_eq!(binary::decode(&binary::encode(&env)).unwrap(), env);
}

#[test]
fn a_pattern_recorded_v1_payload_is_checked_against_v1() {
    let good = serde_json::to_value(v1()).unwrap();
    // A v2-only field is unknown in a v1 payload.
    let mut with_v2_field = good.clone();
    with_v2_field["latency_ms"] = json!(12.5);
    assert_eq!(field_error(&v1_line(&with_v2_field)), "payload.latency_ms");
    // Wrong types name the field, as for current payloads.
    let mut bad = good.clone();
    bad["cost_usd"] = json!(0.0012);
    assert_eq!(field_error(&v1_line(&bad)), "payload.cost_usd");
    let mut bad = good;
    bad.as_object_mut().unwrap().remove("primary_model");
    assert_eq!(field_error(&v1_line(&bad)), "payload");
    // A v2 payload labelled v1 is rejected, not silently truncated.
    let v2 = json::payload_to_value(&Event::from(PatternRecorded::from(v1())));
    assert!(matches!(json::from_line(&v1_line(&v2)), Err(DecodeError::Field { .. })));
}
