//! The rebuild's workload: a realistic event stream of import-shaped
//! sessions — turns drawn from a fixed set of shapes, their verdicts, late
//! re-evaluations — with the `pattern.*` events the [`PatternReactor`]
//! derives from them, numbered as a log would hold them, and what the
//! stream holds ([`StreamStats`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use engram::events::payloads::{EvalCompleted, JudgeKind, PlanStep, StructuralFeatures, ToolArgs};
use engram::events::rust_decimal::Decimal;
use engram::events::{ActorKind, Envelope, EvalId, EventId, Seq, SessionId, TurnId};
use engram::learning::import::turn_events::{session_ended, turn_end, turn_events};
use engram::learning::import::turn_record::TurnRecord;
use engram::learning::patterns::{PatternCaps, PatternConfig};
use engram::learning::projections::PatternOutcomes;
use engram::learning::reactors::{derive_all, PatternReactor, Reactor};

use super::generator::{epoch, Generator};
use super::vocabulary::MODELS;

/// Distinct shapes in the rebuild stream: with up to three models a shape,
/// the store stays under the default soft cap (5,000 rows), as a store
/// that respects its caps does, so no eviction scan runs while the stream
/// is derived.
pub const REBUILD_SHAPES: usize = 1_200;

/// What an event stream holds.
#[derive(serde::Serialize, Debug, Clone, Default)]
pub struct StreamStats {
    /// Sessions.
    pub sessions: u64,
    /// Turns (planner and fast path).
    pub turns: u64,
    /// Turns answered by a model.
    pub planner_turns: u64,
    /// Verdicts given after their session ended.
    pub late_verdicts: u64,
    /// Envelopes by kind.
    pub kinds: BTreeMap<&'static str, u64>,
}

/// At least `min_events` envelopes of import-shaped sessions (whole
/// sessions), with the events the [`PatternReactor`] (default config and
/// caps) derives inserted after their causes, numbered from seq 1.
///
/// Sessions of 1–8 turns draw from [`REBUILD_SHAPES`] shapes (a turn often
/// repeats the previous one's shape); three turns in four go to a model
/// (the topic's favourite half the time), the others to the fast path; six
/// in ten carry a verdict, and one recorded turn in twenty gets a second,
/// later verdict after its session ended (a re-evaluation the reactor folds
/// with an exact roll-back).
pub fn event_stream(min_events: usize, seed: u64) -> (Vec<Envelope>, StreamStats) {
    let mut gen = Generator::new(seed ^ 0xEB);
    let shapes = draw_shapes(&mut gen);
    let mut reactors = pattern_reactor();
    let mut out: Vec<Envelope> = Vec::with_capacity(min_events + 64);
    let mut stats = StreamStats::default();
    let mut at = epoch();
    let mut s = 0u64;
    while out.len() < min_events {
        let session = SessionId::new(format!("bench-p{s:07}"));
        s += 1;
        let events = session_events(&mut gen, &shapes, &session, s, &mut at, &mut stats);
        out.extend(derive_all(events, &mut reactors));
        stats.sessions += 1;
        at += chrono::Duration::minutes(2);
    }
    number_and_count(&mut out, &mut stats);
    (out, stats)
}

/// A turn's shape: its structural features and their topic.
type Shape = (StructuralFeatures, usize);

/// The [`REBUILD_SHAPES`] shapes the stream's turns draw from.
fn draw_shapes(gen: &mut Generator) -> Vec<Shape> {
    (0..REBUILD_SHAPES)
        .map(|_| {
            let topic = gen.topic();
            (gen.features(topic), topic)
        })
        .collect()
}

/// The one reactor deriving the stream's `pattern.*` events: a
/// [`PatternReactor`] over a fresh store, default config and caps.
fn pattern_reactor() -> Vec<Box<dyn Reactor>> {
    vec![Box::new(PatternReactor::new(PatternOutcomes::default(), PatternConfig::default(), PatternCaps::default()))]
}

/// The events of one session of 1–8 turns (`session`, the `s`-th, as its
/// requests say), starting at `at`: each turn's events, `session.ended`,
/// then the verdicts that arrive after it. Moves `at` past its last turn
/// and counts what it made into `stats` (all but the session itself).
fn session_events(
    gen: &mut Generator,
    shapes: &[Shape],
    session: &SessionId,
    s: u64,
    at: &mut DateTime<Utc>,
    stats: &mut StreamStats,
) -> Vec<Envelope> {
    let turns = 1 + gen.rng().below(8) as u32;
    let mut events = Vec::with_capacity(turns as usize * 16);
    let mut history = false;
    let mut shape = gen.rng().below(shapes.len());
    let mut last: Option<TurnRecord> = None;
    let mut judged_later: Vec<(TurnId, usize, usize)> = Vec::new();
    for turn in 1..=turns {
        if !gen.rng().chance(0.4) {
            shape = gen.rng().below(shapes.len());
        }
        let (features, topic) = &shapes[shape];
        let (r, model) = turn_record(gen, features, *topic, session, s, turn, *at);
        stats.turns += 1;
        if let Some(m) = model {
            stats.planner_turns += 1;
            if gen.rng().chance(0.05) {
                judged_later.push((TurnId::for_turn(session, turn, *at), *topic, m));
            }
        }
        events.extend(turn_events(&r, history));
        history |= !r.steps.is_empty();
        *at = turn_end(&r) + chrono::Duration::seconds(5 + gen.rng().below(120) as i64);
        last = Some(r);
    }
    if let Some(r) = &last {
        events.push(session_ended(session, turns, turn_end(r)));
    }
    // Verdicts that arrive after the session ended (re-evaluations).
    for (turn, topic, model) in judged_later {
        events.push(late_verdict(gen, session, turn, topic, model, *at));
        stats.late_verdicts += 1;
    }
    events
}

/// Turn `turn` of `session` (the `s`-th) at `at`, with `features` about
/// `topic`: three in four go to a model (returned beside the record, as an
/// index into [`MODELS`]), the others to the fast path with a prefix of
/// the tools; six in ten carry a verdict.
fn turn_record(
    gen: &mut Generator,
    features: &StructuralFeatures,
    topic: usize,
    session: &SessionId,
    s: u64,
    turn: u32,
    at: DateTime<Utc>,
) -> (TurnRecord, Option<usize>) {
    let planner = gen.rng().chance(0.75);
    let model = planner.then(|| gen.model(topic));
    let steps: Vec<PlanStep> = if planner {
        features.tool_names.iter().map(|t| PlanStep { tool: t.clone(), args: ToolArgs::default() }).collect()
    } else {
        let n = gen.rng().below(3).min(features.tool_names.len());
        features.tool_names[..n].iter().map(|t| PlanStep { tool: t.clone(), args: ToolArgs::default() }).collect()
    };
    let latency_ms = if planner { 800 + gen.rng().below(9_000) as u64 } else { 20 + gen.rng().below(300) as u64 };
    let judged = gen.rng().chance(0.6);
    let score = match (judged, model) {
        (true, Some(m)) => Some(gen.score(topic, m)),
        (true, None) => Some(0.8 + 0.2 * gen.rng().unit()),
        _ => None,
    };
    let r = TurnRecord {
        session: session.clone(),
        turn,
        at,
        text: format!("request {turn} of session {s}"),
        steps,
        model: model.map(|m| MODELS[m].0.to_owned()),
        planner_ms: if planner { latency_ms / 3 } else { 0 },
        latency_ms,
        cost_usd: model.map_or(Decimal::ZERO, |m| gen.cost(m)),
        pricing_version: "2025-01".to_owned(),
        score,
        score_confidence: 0.4 + 0.6 * gen.rng().unit(),
        workload: None,
        features: Some(features.clone()),
    };
    (r, model)
}

/// A second verdict on `turn` (about `topic`, answered by `model`), 30 s
/// after `at`, when its session has ended: a re-evaluation the reactor
/// folds with an exact roll-back.
fn late_verdict(
    gen: &mut Generator,
    session: &SessionId,
    turn: TurnId,
    topic: usize,
    model: usize,
    at: DateTime<Utc>,
) -> Envelope {
    let when = at + chrono::Duration::seconds(30);
    let eval_id = EvalId::derive(when, &[b"bench-reeval", &turn.0 .0.to_be_bytes()]);
    let score = gen.score(topic, model);
    Envelope::at(
        EventId::derive(when, &[b"bench-reeval-event", &turn.0 .0.to_be_bytes()]),
        when,
        ActorKind::Judge,
        EvalCompleted {
            eval_id,
            subject_turn: turn,
            score,
            confidence: 0.9,
            judge: JudgeKind::Llm,
            rubric: None,
            judge_pricing_version: None,
        },
    )
    .with_session(session.clone())
    .with_turn(turn)
}

/// Numbers the stream from seq 1, as a log holds it, and counts its
/// envelopes by kind.
fn number_and_count(out: &mut [Envelope], stats: &mut StreamStats) {
    for (i, env) in out.iter_mut().enumerate() {
        env.seq = Seq(i as u64 + 1);
        *stats.kinds.entry(env.kind().name()).or_default() += 1;
    }
}
