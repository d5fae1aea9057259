//! The pattern store end to end (seed 001): turn records become events
//! (`import::turn_events`), the pattern reactor decides `pattern.recorded` /
//! `pattern.evicted` (`reactors::derive_all`), the `pattern_outcomes`
//! projection folds them. "Live" is the fold of the derived log as it is
//! produced; "rebuild" is a fresh fold of the same log; both must agree row
//! for row, and with a `rows()` → `load()` round trip in between.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, TimeZone, Utc};
use engram_events::codec;
use engram_events::payloads::{
    EvalCompleted, EvictionTrigger, FingerprintKind, JudgeKind, PatternEvicted, PatternRecorded, QueryEmbedding,
    SessionEndReason, SessionEnded, StructuralFeatures,
};
use engram_events::{ActorKind, Envelope, EvalId, Event, EventId, EventKind, FingerprintId, Seq, SessionId, TurnId};
use engram_learning::import::turn_events::{session_ended, turn_events};
use engram_learning::import::turn_record::{parse_line, TurnRecord};
use engram_learning::patterns::outcome::{score_nanos, to_micros};
use engram_learning::patterns::{Fingerprint, OutcomeRow, PatternCaps, PatternConfig};
use engram_learning::projections::PatternOutcomes;
use engram_learning::reactors::{derive_all, PatternReactor, Reactor};
use engram_local_state::projector::{digest, Projection, Projector};
use engram_local_state::snapshot::{SnapshotReader, SnapshotWriter};
use engram_storage::{LogConfig, OpenLog, SledLog};
use proptest::prelude::*;
use rust_decimal::Decimal;
use ulid::Ulid;

const DAY: i64 = 86_400;

/// 2026-01-01T00:00:00Z plus `secs`.
fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_767_225_600 + secs, 0).unwrap()
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn feats(tags: &[&str], exts: &[&str]) -> StructuralFeatures {
    StructuralFeatures {
        intent_tags: tags.iter().map(|s| s.to_string()).collect(),
        file_extensions: exts.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
    .normalized()
}

fn fid(f: &StructuralFeatures) -> FingerprintId {
    Fingerprint::structural(f.clone()).id()
}

fn fid_w(f: &StructuralFeatures, workload: &str) -> FingerprintId {
    Fingerprint::structural(f.clone()).with_workload(Some(workload.to_owned())).id()
}

/// A session being scripted: turns 10 s apart from `start`, ended one hour
/// after `start` (so every row a session writes is stamped `start + 1h`).
struct Sess {
    id: SessionId,
    start: DateTime<Utc>,
    turns: Vec<TurnRecord>,
}

impl Sess {
    fn new(id: &str, start: i64) -> Self {
        Sess { id: SessionId::new(id), start: t(start), turns: Vec::new() }
    }

    /// Adds a turn: 1 s latency, one cent, pricing `p1`, no verdict.
    fn turn(&mut self, model: Option<&str>, f: &StructuralFeatures) -> &mut TurnRecord {
        let n = self.turns.len() as u32 + 1;
        self.turns.push(TurnRecord {
            session: self.id.clone(),
            turn: n,
            at: self.start + Duration::seconds(10 * i64::from(n)),
            text: "do the thing".into(),
            steps: Vec::new(),
            model: model.map(str::to_owned),
            planner_ms: 10,
            latency_ms: 1000,
            cost_usd: dec("0.01"),
            pricing_version: "p1".into(),
            score: None,
            score_confidence: 1.0,
            workload: None,
            features: Some(f.clone()),
        });
        self.turns.last_mut().unwrap()
    }

    /// The id of turn `n` (1-based).
    fn tid(&self, n: u32) -> TurnId {
        let r = &self.turns[n as usize - 1];
        TurnId::for_turn(&r.session, r.turn, r.at)
    }

    fn end_at(&self) -> DateTime<Utc> {
        self.start + Duration::hours(1)
    }

    fn turn_events(&self) -> Vec<Envelope> {
        self.turns.iter().flat_map(|r| turn_events(r, false)).collect()
    }

    fn end(&self) -> Envelope {
        session_ended(&self.id, self.turns.len() as u32, self.end_at())
    }

    fn events(&self) -> Vec<Envelope> {
        let mut out = self.turn_events();
        out.push(self.end());
        out
    }
}

/// An eval id ordered by `at` (then by `n`).
fn eval_id(at: DateTime<Utc>, n: u8) -> EvalId {
    EvalId::derive(at, &[b"test-eval", &[n]])
}

/// An `eval.completed` delivered at `at`.
fn verdict(turn: TurnId, id: EvalId, score: f64, confidence: f64, at: DateTime<Utc>) -> Envelope {
    verdict_priced(turn, id, score, confidence, at, None)
}

fn verdict_priced(
    turn: TurnId,
    id: EvalId,
    score: f64,
    confidence: f64,
    at: DateTime<Utc>,
    pricing: Option<&str>,
) -> Envelope {
    Envelope::at(
        EventId::derive(at, &[b"test-eval", &id.0 .0.to_be_bytes()]),
        at,
        ActorKind::Judge,
        EvalCompleted {
            eval_id: id,
            subject_turn: turn,
            score,
            confidence,
            judge: JudgeKind::Heuristic,
            rubric: None,
            judge_pricing_version: pricing.map(str::to_owned),
        },
    )
    .with_turn(turn)
}

fn is_pattern(e: &Envelope) -> bool {
    matches!(e.event, Event::PatternRecorded(_) | Event::PatternEvicted(_))
}

fn recorded(e: &Envelope) -> &PatternRecorded {
    match &e.event {
        Event::PatternRecorded(p) => p,
        other => panic!("expected pattern.recorded, got {other:?}"),
    }
}

fn evicted(e: &Envelope) -> &PatternEvicted {
    match &e.event {
        Event::PatternEvicted(p) => p,
        other => panic!("expected pattern.evicted, got {other:?}"),
    }
}

fn fold(events: &[Envelope]) -> PatternOutcomes {
    let mut p = PatternOutcomes::default();
    for e in events {
        p.apply(e);
    }
    p
}

fn reload(p: &PatternOutcomes) -> PatternOutcomes {
    let mut loaded = PatternOutcomes::default();
    loaded.load(&mut p.rows().into_iter()).unwrap();
    loaded
}

fn reactors(store: PatternOutcomes, cfg: &PatternConfig, caps: PatternCaps) -> Vec<Box<dyn Reactor>> {
    vec![Box::new(PatternReactor::new(store, cfg.clone(), caps))]
}

fn small_caps(soft: u64, hard: u64) -> PatternCaps {
    PatternCaps { soft_cap_rows: soft, hard_cap_rows: hard, max_age_days: 180 }
}

/// A reactor and the log it writes, folded live as it grows.
struct Harness {
    reactors: Vec<Box<dyn Reactor>>,
    log: Vec<Envelope>,
    live: PatternOutcomes,
}

impl Harness {
    fn new(cfg: PatternConfig, caps: PatternCaps) -> Self {
        Harness {
            reactors: reactors(PatternOutcomes::default(), &cfg, caps),
            log: Vec::new(),
            live: Default::default(),
        }
    }

    fn default_store() -> Self {
        Harness::new(PatternConfig::default(), PatternCaps::default())
    }

    /// Derives from `events`, numbers the result after the log and folds it
    /// live; returns the pattern events derived.
    fn feed(&mut self, events: Vec<Envelope>) -> Vec<Envelope> {
        let mut derived = Vec::new();
        for mut e in derive_all(events, &mut self.reactors) {
            e.seq = Seq(self.log.len() as u64 + 1);
            self.live.apply(&e);
            if is_pattern(&e) {
                derived.push(e.clone());
            }
            self.log.push(e);
        }
        derived
    }

    /// Live, rebuilt and reloaded states agree byte for byte.
    fn assert_rebuilds(&self) {
        let live = digest(&self.live.rows());
        assert_eq!(live, digest(&fold(&self.log).rows()), "rebuild differs from live");
        assert_eq!(live, digest(&reload(&self.live).rows()), "reload differs from live");
    }

    fn row(&self, fp: FingerprintId, model: &str) -> &OutcomeRow {
        self.live.outcome(fp, model).unwrap_or_else(|| panic!("no row ({fp}, {model})"))
    }
}

// ---------------------------------------------------------------------------
// 1. The empty store.

#[test]
fn empty_store_recommends_nothing_and_empty_features_work() {
    let store = PatternOutcomes::default();
    let empty = Fingerprint::structural(StructuralFeatures::default());
    let r = store.recommend(&empty, &PatternConfig::default());
    assert_eq!(r.chosen_model, None);
    assert_eq!(r.confidence, 0.0);
    assert!(r.alternatives.is_empty());
    assert_eq!((r.sample_size, r.k_cluster_size), (0, 0));
    assert!(store.find_k_nearest(&empty, 10, 0.6).is_empty());
    assert_eq!((store.fingerprint_count(), store.outcome_count()), (0, 0));

    let mut h = Harness::default_store();
    // A session without turns, then one with only a fast-path turn: nothing.
    assert!(h.feed(vec![Sess::new("s0", 0).end()]).is_empty());
    let mut s = Sess::new("s1", 100);
    s.turn(None, &StructuralFeatures::default());
    assert!(h.feed(s.events()).is_empty());
    assert_eq!(h.live.outcome_count(), 0);
    let r = h.live.recommend(&empty, &PatternConfig::default());
    assert_eq!((r.chosen_model, r.alternatives.len()), (None, 0));

    // A planner turn with empty features is recorded like any other.
    let mut s = Sess::new("s2", 200);
    s.turn(Some("m:a"), &StructuralFeatures::default());
    let d = h.feed(s.events());
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!(p.fingerprint_id, empty.id());
    assert_eq!(p.features, Some(StructuralFeatures::default()));
    assert!(p.was_new_fingerprint);
    let n = h.live.find_k_nearest(&empty, 10, 0.6);
    assert_eq!(n.len(), 1);
    assert_eq!((n[0].fingerprint, &*n[0].model, n[0].similarity), (empty.id(), "m:a", 1.0));
    // One model, no verdicts: it is the only option (confidence 1), score 0.
    let r = h.live.recommend(&empty, &PatternConfig { min_sample_size: 1, ..Default::default() });
    assert_eq!(r.chosen_model.as_deref(), Some("m:a"));
    assert_eq!((r.confidence, r.sample_size, r.k_cluster_size), (1.0, 1, 1));
    assert_eq!(r.alternatives[0].score, 0.0);
    // The default sample gate (5) holds it back.
    assert_eq!(h.live.recommend(&empty, &PatternConfig::default()).chosen_model, None);
    h.assert_rebuilds();
}

// ---------------------------------------------------------------------------
// 2. Recording a session.

#[test]
fn a_session_records_one_sample_per_fingerprint_and_model() {
    let a = feats(&["debug"], &[".py"]);
    let b = feats(&["doc"], &[".md"]);
    let c = feats(&["commit"], &[]);
    let mut h = Harness::default_store();
    let mut s = Sess::new("s1", 0);
    {
        let r = s.turn(Some("m:a"), &a);
        r.cost_usd = dec("0.1");
        r.latency_ms = 1000;
    }
    {
        let r = s.turn(Some("m:a"), &b);
        r.cost_usd = dec("0.2");
        r.latency_ms = 2000;
    }
    {
        let r = s.turn(Some("m:b"), &a);
        r.cost_usd = dec("0.05");
        r.latency_ms = 500;
    }
    {
        // Same shape and model as turn 1: the same sample.
        let r = s.turn(Some("m:a"), &a);
        r.cost_usd = dec("0.2");
        r.latency_ms = 3000;
        r.pricing_version = "p2".into();
    }
    {
        // The fast path answered: nothing to record.
        let r = s.turn(None, &c);
        r.cost_usd = Decimal::ZERO;
    }
    // Nothing before the session ends.
    assert!(h.feed(s.turn_events()).is_empty());
    assert_eq!(h.live.pending_count(), 5);
    let d = h.feed(vec![s.end()]);
    assert_eq!(h.live.pending_count(), 0);
    let got: Vec<_> = d
        .iter()
        .map(|e| {
            let p = recorded(e);
            (p.fingerprint_id, p.primary_model.as_str(), p.turn.unwrap(), p.sample_size_before, p.sample_size_after)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (fid(&a), "m:a", s.tid(1), 0, 1),
            (fid(&a), "m:a", s.tid(4), 1, 1), // score-only: the turn's own slot
            (fid(&b), "m:a", s.tid(2), 0, 1),
            (fid(&a), "m:b", s.tid(3), 0, 1),
        ]
    );
    let first = recorded(&d[0]);
    assert!(first.was_new_fingerprint);
    assert_eq!(first.features.as_ref(), Some(&a));
    assert_eq!(first.cost_usd, dec("0.3")); // 0.1 + 0.2, exactly
    assert_eq!(first.latency_ms, 2000.0); // mean of 1000 and 3000
    assert_eq!(first.pricing_version, "p2"); // the group's last turn
    assert_eq!((first.success_score, first.eval_id, first.replaces_score), (None, None, None));
    assert_eq!(first.fingerprint_kind, FingerprintKind::Structural);
    assert!(!first.over_soft_cap);
    let extra = recorded(&d[1]);
    assert!(!extra.was_new_fingerprint);
    assert_eq!((extra.cost_usd, extra.latency_ms, extra.features.as_ref()), (Decimal::ZERO, 0.0, None));
    assert!(recorded(&d[2]).was_new_fingerprint);
    // `a` is new in this session but was announced by the first group.
    assert!(!recorded(&d[3]).was_new_fingerprint);
    assert_eq!(recorded(&d[3]).cost_usd, dec("0.05"));
    assert!(d.iter().all(|e| e.causation == Some(s.end().id) && e.actor == ActorKind::PatternStore));

    assert_eq!((h.live.fingerprint_count(), h.live.outcome_count()), (2, 3));
    assert!(h.live.fingerprint(fid(&c)).is_none());
    assert!(h.live.score_of(s.tid(5)).is_none());
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.cost_micros, row.score_count), (1, 300_000, 0));
    assert_eq!(row.avg_cost_usd(), dec("0.3"));
    assert_eq!(row.latency_mean_ms, 2000.0);
    assert_eq!(row.pricing_version_last, "p2");
    assert_eq!(row.last_updated, s.end_at());
    assert_eq!(h.row(fid(&b), "m:a").sample_size, 1);
    assert_eq!(h.row(fid(&a), "m:b").avg_cost_usd(), dec("0.05"));
    let sr = h.live.score_of(s.tid(4)).unwrap();
    assert_eq!((sr.fingerprint, sr.model.as_str(), sr.eval_id, sr.folded), (fid(&a), "m:a", None, None));

    // A second session on the same shape: sample 2, cost mean exact.
    let mut s2 = Sess::new("s2", DAY);
    {
        let r = s2.turn(Some("m:a"), &a);
        r.cost_usd = dec("0.000001");
        r.latency_ms = 500;
        r.pricing_version = "p3".into();
    }
    let d = h.feed(s2.events());
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!((p.sample_size_before, p.sample_size_after, p.was_new_fingerprint), (1, 2, false));
    assert_eq!(p.features, None);
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.cost_micros), (2, 300_001));
    assert_eq!(row.avg_cost_usd(), dec("0.1500005"));
    assert_eq!(row.latency_mean_ms, 1250.0); // (2000 + 500) / 2
    assert_eq!(row.pricing_version_last, "p3");

    // The session's end seen again (same event, or another one): nothing.
    assert!(h.feed(vec![s2.end()]).is_empty());
    let again = session_ended(&s2.id, 1, s2.end_at() + Duration::hours(1));
    assert_ne!(again.id, s2.end().id);
    assert!(h.feed(vec![again]).is_empty());
    // Its turns seen again: nothing either.
    assert!(h.feed(s2.events()).is_empty());
    assert_eq!(h.row(fid(&a), "m:a").sample_size, 2);
    h.assert_rebuilds();
}

/// A day-long session kept every turn pending until its end (≈ 3 KB a
/// planner turn with its request vector); its older turns are now recorded
/// in parts, and what it adds up to is the same outcome row.
#[test]
fn a_long_session_is_recorded_in_parts_and_keeps_few_turns_pending() {
    use engram_learning::projections::pattern_outcomes::{PART_KEEPS, PART_TURNS};
    let a = feats(&["debug"], &[".py"]);
    let mut h = Harness::default_store();
    let mut s = Sess::new("long", 0);
    let n = PART_TURNS + PART_KEEPS + 10;
    for i in 0..n {
        let r = s.turn(Some("m:a"), &a);
        r.score = Some(if i % 2 == 0 { 1.0 } else { 0.5 });
    }
    // Turn by turn: the part is due at the turn that completes
    // PART_TURNS + PART_KEEPS, and records the oldest PART_TURNS.
    let mut parts = Vec::new();
    for (i, r) in s.turns.iter().enumerate() {
        let d = h.feed(turn_events(r, false));
        if !d.is_empty() {
            parts.push((i + 1, d));
        }
        assert!(h.live.pending_count() < PART_TURNS + PART_KEEPS, "turn {}: {} pending", i + 1, h.live.pending_count());
    }
    assert_eq!(parts.len(), 1, "one part in {n} turns");
    let (at, d) = &parts[0];
    assert_eq!(*at, PART_TURNS + PART_KEEPS);
    let turns: Vec<TurnId> = d.iter().map(|e| recorded(e).turn.unwrap()).collect();
    assert_eq!(turns, (1..=PART_TURNS as u32).map(|k| s.tid(k)).collect::<Vec<_>>());
    let first = recorded(&d[0]);
    assert_eq!((first.sample_size_before, first.sample_size_after), (0, 1));
    assert_eq!(first.cost_usd, dec("0.01") * Decimal::from(PART_TURNS as u64));
    // Each verdict that arrived before the part is on its turn's record.
    assert!(d.iter().all(|e| recorded(e).success_score.is_some()));
    assert_eq!(h.live.pending_count(), n - PART_TURNS);

    // The end records the rest as a second sample; every turn is in the
    // history once, and the row holds every turn's cost and score.
    let end = h.feed(vec![s.end()]);
    assert_eq!(end.len(), n - PART_TURNS);
    assert_eq!(h.live.pending_count(), 0);
    let row = h.row(fid(&a), "m:a");
    assert_eq!(row.sample_size, 2);
    assert_eq!(row.cost_micros, 10_000 * n as i64);
    assert_eq!(row.score_count, n as u64);
    assert!((1..=n as u32).all(|k| h.live.score_of(s.tid(k)).is_some()));
    // A late verdict on a turn of the part replaces its score.
    let late =
        verdict(s.tid(1), eval_id(s.end_at() + Duration::hours(1), 1), 0.0, 1.0, s.end_at() + Duration::hours(1));
    let d = h.feed(vec![late]);
    assert_eq!(d.len(), 1);
    assert_eq!(recorded(&d[0]).replaces_score, Some(1.0));
    h.assert_rebuilds();
    // Derived again from the same log (a replay, a resumed import): nothing new.
    let mut again = Harness::default_store();
    let log: Vec<Envelope> = h.log.iter().filter(|e| !is_pattern(e)).cloned().collect();
    again.feed(log);
    let ids = |l: &[Envelope]| l.iter().filter(|e| is_pattern(e)).map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(&again.log), ids(&h.log));
}

#[test]
fn parsed_turn_records_feed_the_store() {
    let lines = [
        r#"{"session":"p1","turn":1,"at":"2026-01-01T10:00:00Z","text":"fix the bug in main.py","steps":[],"model":"m:a","latency_ms":1200,"cost_usd":"0.004","pricing_version":"2026-01","score":0.75}"#,
        r#"{"session":"p1","turn":2,"at":"2026-01-01T10:01:00Z","text":"fix the bug in util.py","steps":[],"model":"m:a","latency_ms":800,"cost_usd":"0.006","pricing_version":"2026-01","score":0.25}"#,
    ];
    let recs: Vec<TurnRecord> = lines.iter().map(|l| parse_line(l).unwrap()).collect();
    let mut events: Vec<Envelope> = recs.iter().flat_map(|r| turn_events(r, false)).collect();
    events.push(session_ended(&recs[0].session, 2, t(DAY)));
    let mut h = Harness::default_store();
    let d = h.feed(events);
    // Both turns have the computed shape ("debug", ".py"): one sample, two
    // scores folded (each turn's own verdict).
    assert_eq!(d.len(), 2);
    let fp = recorded(&d[0]).fingerprint_id;
    assert_eq!(recorded(&d[1]).fingerprint_id, fp);
    let shape = h.live.fingerprint(fp).unwrap();
    assert_eq!(shape.features.intent_tags, vec!["debug".to_string()]);
    assert_eq!(shape.features.file_extensions, vec![".py".to_string()]);
    let row = h.row(fp, "m:a");
    assert_eq!((row.sample_size, row.score_count, row.cost_micros), (1, 2, 10_000));
    assert_eq!(row.success_mean(), Some(0.5));
    assert_eq!(row.latency_mean_ms, 1000.0);
    h.assert_rebuilds();
}

// ---------------------------------------------------------------------------
// 3. Two-phase scoring.

/// s1 with a verdict before its end (0.8, and an older 0.1 arriving after
/// it), then s2 ended without one.
fn two_phase_prefix(h: &mut Harness, a: &StructuralFeatures) -> (Sess, Sess) {
    let mut s1 = Sess::new("s1", 0);
    s1.turn(Some("m:a"), a);
    let mut events = s1.turn_events();
    events.push(verdict(s1.tid(1), eval_id(t(100), 0), 0.8, 0.9, t(100)));
    events.push(verdict(s1.tid(1), eval_id(t(50), 0), 0.1, 1.0, t(200))); // older id, ignored
    assert!(h.feed(events).is_empty());
    let d = h.feed(vec![s1.end()]);
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!((p.sample_size_before, p.sample_size_after), (0, 1));
    assert_eq!(p.success_score, Some(0.8));
    assert_eq!(p.eval_id, Some(eval_id(t(100), 0)));
    assert_eq!(p.score_confidence, Some(0.9));
    let row = h.row(fid(a), "m:a");
    assert_eq!((row.sample_size, row.score_count, row.success_mean()), (1, 1, Some(0.8)));

    let mut s2 = Sess::new("s2", DAY);
    s2.turn(Some("m:a"), a);
    let d = h.feed(s2.events());
    assert_eq!(d.len(), 1);
    assert_eq!(recorded(&d[0]).success_score, None);
    let row = h.row(fid(a), "m:a");
    assert_eq!((row.sample_size, row.score_count, row.success_mean()), (2, 1, Some(0.8)));
    (s1, s2)
}

#[test]
fn verdicts_after_the_session_end_update_scores_idempotently() {
    let a = feats(&["debug"], &[".py"]);
    let mut h = Harness::default_store();
    let (s1, s2) = two_phase_prefix(&mut h, &a);
    let turn = s2.tid(1);

    // A verdict after the end: a score-only write.
    let e20 = verdict(turn, eval_id(t(2 * DAY), 0), 0.4, 1.0, t(2 * DAY));
    let d = h.feed(vec![e20.clone()]);
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!((p.sample_size_before, p.sample_size_after), (2, 2));
    assert_eq!((p.success_score, p.replaces_score, p.cost_usd, p.latency_ms), (Some(0.4), None, Decimal::ZERO, 0.0));
    assert_eq!(p.turn, Some(turn));
    assert!(!p.was_new_fingerprint);
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.score_count), (2, 2));
    assert!((row.success_mean().unwrap() - 0.6).abs() < 1e-12);
    assert_eq!(row.last_updated, t(2 * DAY));

    // The same verdict again: nothing.
    let before = digest(&h.live.rows());
    assert!(h.feed(vec![e20.clone()]).is_empty());
    assert_eq!(digest(&h.live.rows()), before);

    // A re-evaluation (greater id) replaces 0.4 by 1.0.
    let e30 = verdict(turn, eval_id(t(3 * DAY), 0), 1.0, 1.0, t(3 * DAY));
    let d = h.feed(vec![e30.clone()]);
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!((p.success_score, p.replaces_score), (Some(1.0), Some(0.4)));
    assert_eq!(p.eval_id, Some(eval_id(t(3 * DAY), 0)));
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.score_count), (2, 2));
    assert!((row.success_mean().unwrap() - 0.9).abs() < 1e-12);

    // An older verdict arriving later is ignored.
    let before = digest(&h.live.rows());
    let e25 = verdict(turn, eval_id(t(2 * DAY + 10), 0), 0.0, 1.0, t(4 * DAY));
    assert!(h.feed(vec![e25]).is_empty());
    assert_eq!(digest(&h.live.rows()), before);
    assert_eq!(h.live.score_of(turn).unwrap().eval_id, Some(eval_id(t(3 * DAY), 0)));

    // The rollback is exact: the row equals one that only ever saw 1.0.
    let mut control = Harness::default_store();
    two_phase_prefix(&mut control, &a);
    assert_eq!(control.feed(vec![e30]).len(), 1);
    assert_eq!(h.row(fid(&a), "m:a"), control.row(fid(&a), "m:a"));
    assert_eq!(h.live.score_of(turn), control.live.score_of(turn));
    assert_eq!(digest(&h.live.rows()), digest(&control.live.rows()));

    // s1's verdict (folded at its end) can be re-evaluated too.
    let d = h.feed(vec![verdict(s1.tid(1), eval_id(t(5 * DAY), 0), 0.5, 1.0, t(5 * DAY))]);
    assert_eq!(recorded(&d[0]).replaces_score, Some(0.8));
    let row = h.row(fid(&a), "m:a");
    assert_eq!(row.score_count, 2);
    assert!((row.success_mean().unwrap() - 0.75).abs() < 1e-12);
    h.assert_rebuilds();
    control.assert_rebuilds();
}

#[test]
fn low_confidence_verdicts_are_applied_but_not_folded() {
    let a = feats(&["debug"], &[".py"]);
    let mut h = Harness::default_store();
    let (s1, _s2) = two_phase_prefix(&mut h, &a);

    // Before the end, confidence 0.3 < 0.5.
    let mut s3 = Sess::new("s3", 2 * DAY);
    s3.turn(Some("m:a"), &a);
    let low = verdict(s3.tid(1), eval_id(t(2 * DAY + 100), 0), 0.0, 0.3, t(2 * DAY + 100));
    let mut events = s3.turn_events();
    events.push(low.clone());
    events.push(s3.end());
    let d = h.feed(events);
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!((p.sample_size_before, p.sample_size_after), (2, 3));
    assert_eq!((p.success_score, p.score_confidence), (None, Some(0.3)));
    assert_eq!(p.eval_id, Some(eval_id(t(2 * DAY + 100), 0)));
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.score_count, row.success_mean()), (3, 1, Some(0.8)));
    assert_eq!(h.live.score_of(s3.tid(1)).unwrap().eval_id, Some(eval_id(t(2 * DAY + 100), 0)));
    // Re-delivered after the end: applied already, nothing.
    assert!(h.feed(vec![low]).is_empty());

    // After the end, a low-confidence re-evaluation of s1's turn: the
    // latest verdict wins, and it is not actionable, so s1's 0.8 leaves
    // the mean and nothing replaces it.
    let d = h.feed(vec![verdict(s1.tid(1), eval_id(t(6 * DAY), 0), 0.1, 0.49, t(6 * DAY))]);
    assert_eq!(d.len(), 1);
    let p = recorded(&d[0]);
    assert_eq!((p.success_score, p.replaces_score, p.score_confidence), (None, Some(0.8), Some(0.49)));
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.score_count, row.success_mean()), (3, 0, None));
    // Exactly at the threshold is folded.
    let d = h.feed(vec![verdict(s3.tid(1), eval_id(t(7 * DAY), 0), 0.6, 0.5, t(7 * DAY))]);
    assert_eq!(recorded(&d[0]).success_score, Some(0.6));
    assert_eq!(h.row(fid(&a), "m:a").success_mean(), Some(0.6));
    h.assert_rebuilds();
}

#[test]
fn verdicts_for_unknown_or_unrecorded_turns_create_nothing() {
    let a = feats(&["debug"], &[".py"]);
    let mut h = Harness::default_store();
    let mut s = Sess::new("s1", 0);
    s.turn(Some("m:a"), &a);
    s.turn(None, &a); // fast path
    h.feed(s.events());
    let before = digest(&h.live.rows());
    let unknown = TurnId::derive(t(10), &[b"never recorded"]);
    assert!(h.feed(vec![verdict(unknown, eval_id(t(DAY), 0), 1.0, 1.0, t(DAY))]).is_empty());
    assert!(h.feed(vec![verdict(s.tid(2), eval_id(t(DAY), 1), 1.0, 1.0, t(DAY))]).is_empty());
    assert_eq!(digest(&h.live.rows()), before);
    assert!(h.live.score_of(unknown).is_none());
    assert!(h.live.score_of(s.tid(2)).is_none());
    assert_eq!((h.live.fingerprint_count(), h.live.outcome_count()), (1, 1));
    // A verdict for a turn of a session that never ends: kept pending,
    // never recorded.
    let mut open = Sess::new("open", DAY);
    open.turn(Some("m:b"), &a);
    let mut events = open.turn_events();
    events.push(verdict(open.tid(1), eval_id(t(DAY + 100), 0), 1.0, 1.0, t(DAY + 100)));
    assert!(h.feed(events).is_empty());
    assert_eq!(h.live.pending_turn(open.tid(1)).unwrap().verdict.as_ref().unwrap().score, 1.0);
    assert!(h.live.outcome(fid(&a), "m:b").is_none());
    h.assert_rebuilds();
}

// ---------------------------------------------------------------------------
// 4. Sessions without a score.

#[test]
fn unscored_sessions_move_sample_size_and_cost_not_the_mean() {
    let a = feats(&["refactor"], &[".rs"]);
    let mut h = Harness::default_store();
    for (i, (cost, score)) in [("0.1", Some(0.9)), ("0.3", None), ("0.2", None)].into_iter().enumerate() {
        let mut s = Sess::new(&format!("s{i}"), i as i64 * DAY);
        let r = s.turn(Some("m:a"), &a);
        r.cost_usd = dec(cost);
        r.score = score;
        let d = h.feed(s.events());
        assert_eq!(recorded(&d[0]).success_score, score);
    }
    let row = h.row(fid(&a), "m:a");
    assert_eq!((row.sample_size, row.score_count, row.success_mean()), (3, 1, Some(0.9)));
    assert_eq!(row.avg_cost_usd(), dec("0.2"));
    // The recommendation counts all three samples behind the one score.
    let r = h
        .live
        .recommend(&Fingerprint::structural(a.clone()), &PatternConfig { min_sample_size: 3, ..Default::default() });
    assert_eq!(r.chosen_model.as_deref(), Some("m:a"));
    assert_eq!(r.sample_size, 3);
    assert!((r.alternatives[0].success_score_mean - 0.9).abs() < 1e-12);
    assert_eq!(r.alternatives[0].avg_cost_usd, dec("0.2"));
    h.assert_rebuilds();
}

// ---------------------------------------------------------------------------
// 5. Pricing versions.

#[test]
fn pricing_version_last_is_the_most_recent_contribution() {
    let a = feats(&["doc"], &[".md"]);
    let fp = fid(&a);
    let mut h = Harness::default_store();
    let mut s1 = Sess::new("s1", 0);
    s1.turn(Some("m:a"), &a).pricing_version = "2026-03".into();
    h.feed(s1.events());
    assert_eq!(h.row(fp, "m:a").pricing_version_last, "2026-03");
    // Most recent, not greatest.
    let mut s2 = Sess::new("s2", DAY);
    s2.turn(Some("m:a"), &a).pricing_version = "2026-01".into();
    h.feed(s2.events());
    assert_eq!(h.row(fp, "m:a").pricing_version_last, "2026-01");
    // Within a session, the group's last turn.
    let mut s3 = Sess::new("s3", 2 * DAY);
    s3.turn(Some("m:a"), &a).pricing_version = "2026-05".into();
    s3.turn(Some("m:a"), &a).pricing_version = "2026-04".into();
    let d = h.feed(s3.events());
    assert!(d.iter().all(|e| recorded(e).pricing_version == "2026-04"));
    assert_eq!(h.row(fp, "m:a").pricing_version_last, "2026-04");
    // A judge's price table counts only when more recent.
    let d = h.feed(vec![verdict_priced(s1.tid(1), eval_id(t(3 * DAY), 0), 0.5, 1.0, t(3 * DAY), Some("2026-02"))]);
    assert_eq!(recorded(&d[0]).pricing_version, "2026-04");
    assert_eq!(h.row(fp, "m:a").pricing_version_last, "2026-04");
    let d = h.feed(vec![verdict_priced(s2.tid(1), eval_id(t(4 * DAY), 0), 0.5, 1.0, t(4 * DAY), Some("2026-06"))]);
    assert_eq!(recorded(&d[0]).pricing_version, "2026-06");
    assert_eq!(h.row(fp, "m:a").pricing_version_last, "2026-06");
    h.assert_rebuilds();
}

/// Seed 001 §10.4: "pricing_version_last set if the eval's pricing version
/// is more recent" — whether the verdict arrives after the session's end
/// or while it is open (the pending verdict keeps the judge's version), so
/// the row does not depend on when the judge answered.
#[test]
fn judge_pricing_of_a_verdict_before_the_end_is_kept() {
    let a = feats(&["doc"], &[".md"]);
    let run = |before_end: bool| {
        let mut h = Harness::default_store();
        let mut s = Sess::new("s1", 0);
        s.turn(Some("m:a"), &a).pricing_version = "2026-01".into();
        let v = verdict_priced(s.tid(1), eval_id(t(100), 0), 0.7, 1.0, t(100), Some("2026-09"));
        let mut events = s.turn_events();
        if before_end {
            events.push(v);
            events.push(s.end());
        } else {
            events.push(s.end());
            events.push(v);
        }
        h.feed(events);
        h.row(fid(&a), "m:a").pricing_version_last.clone()
    };
    assert_eq!(run(false), "2026-09");
    assert_eq!(run(true), "2026-09");
}

// ---------------------------------------------------------------------------
// 6. Caps and eviction.

/// A session at `day` recording one turn of model `m` per shape.
fn day_session(name: &str, day: i64, shapes: &[(&StructuralFeatures, &str)]) -> Sess {
    let mut s = Sess::new(name, day * DAY);
    for (f, m) in shapes {
        s.turn(Some(m), f);
    }
    s
}

fn evicted_rows(e: &PatternEvicted) -> Vec<(FingerprintId, &str)> {
    e.evicted.iter().map(|o| (o.fingerprint_id, o.primary_model.as_str())).collect()
}

fn rows_of(p: &PatternOutcomes) -> HashSet<(FingerprintId, String)> {
    p.outcomes().map(|(f, m, _)| (f, m.to_owned())).collect()
}

#[test]
fn soft_cap_signals_and_hard_cap_evicts_least_recently_updated() {
    let [x, y, z, w, v, u, s_, r] = ["x", "y", "z", "w", "v", "u", "s", "r"].map(|tag| feats(&[tag], &[".py"]));
    let mut h = Harness::new(PatternConfig::default(), small_caps(3, 5));
    let d = h.feed(day_session("s1", 0, &[(&x, "m")]).events());
    assert_eq!(d.len(), 1);
    // x again (sample 2) and y (sample 1), both stamped day 1.
    let d = h.feed(day_session("s2", 1, &[(&x, "m"), (&y, "m")]).events());
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|e| !recorded(e).over_soft_cap));
    assert_eq!(h.row(fid(&x), "m").sample_size, 2);

    // Third row: the soft cap (3) is reached — a signal, nothing removed.
    let d = h.feed(day_session("s3", 2, &[(&z, "m")]).events());
    assert_eq!(d.len(), 2);
    assert!(recorded(&d[0]).over_soft_cap);
    let sig = evicted(&d[1]);
    assert_eq!(sig.trigger, EvictionTrigger::SoftCapSignal);
    assert_eq!((sig.entries_evicted, sig.outcomes_before, sig.outcomes_after), (0, 3, 3));
    assert_eq!((sig.fingerprints_before, sig.fingerprints_after), (3, 3));
    assert_eq!(sig.oldest_evicted_age_days, None);
    assert!(sig.evicted.is_empty());
    assert_eq!(h.live.outcome_count(), 3);

    // Over the soft cap, under the hard cap, nothing old: records only.
    for (name, day, f) in [("s4", 3, &w), ("s5", 4, &v)] {
        let d = h.feed(day_session(name, day, &[(f, "m")]).events());
        assert_eq!(d.len(), 1);
        assert!(recorded(&d[0]).over_soft_cap);
    }
    assert_eq!(h.live.outcome_count(), 5);

    // Sixth row > hard cap 5: evict one. x and y were both last updated on
    // day 1; y has the thinner evidence.
    let before = rows_of(&h.live);
    let d = h.feed(day_session("s6", 5, &[(&u, "m")]).events());
    assert_eq!(d.len(), 2);
    let ev = evicted(&d[1]);
    assert_eq!(ev.trigger, EvictionTrigger::HardCapEvict);
    assert_eq!(evicted_rows(ev), vec![(fid(&y), "m")]);
    assert_eq!((ev.entries_evicted, ev.outcomes_before, ev.outcomes_after), (1, 6, 5));
    assert_eq!((ev.fingerprints_before, ev.fingerprints_after), (6, 5));
    assert_eq!(ev.oldest_evicted_age_days, Some(4.0));
    assert_eq!(d[1].causation, Some(day_session("s6", 5, &[(&u, "m")]).end().id));
    let after = rows_of(&h.live);
    let mut want = before.clone();
    want.insert((fid(&u), "m".into()));
    want.remove(&(fid(&y), "m".into()));
    assert_eq!(after, want);
    assert_eq!(h.live.outcome_count(), 5);
    assert!(h.live.fingerprint(fid(&y)).is_none());
    assert!(h.live.fingerprint(fid(&x)).is_some());
    // The evicted row's turn history went with it: a late verdict for y's
    // turn finds nothing.
    let s2 = day_session("s2", 1, &[(&x, "m"), (&y, "m")]);
    assert!(h.live.score_of(s2.tid(2)).is_none());
    assert!(h.feed(vec![verdict(s2.tid(2), eval_id(t(6 * DAY), 0), 1.0, 1.0, t(6 * DAY))]).is_empty());

    // Two new rows: evict two, oldest first (x on day 1, then z on day 2).
    let d = h.feed(day_session("s7", 6, &[(&s_, "m"), (&r, "m")]).events());
    assert_eq!(d.len(), 3);
    let ev = evicted(&d[2]);
    assert_eq!(ev.trigger, EvictionTrigger::HardCapEvict);
    assert_eq!(evicted_rows(ev), vec![(fid(&x), "m"), (fid(&z), "m")]);
    assert_eq!((ev.outcomes_before, ev.outcomes_after, ev.entries_evicted), (7, 5, 2));
    assert_eq!((ev.fingerprints_before, ev.fingerprints_after), (7, 5));
    assert_eq!(ev.oldest_evicted_age_days, Some(5.0));
    let left: HashSet<FingerprintId> = h.live.fingerprints().map(|(id, _)| id).collect();
    assert_eq!(left, [&w, &v, &u, &s_, &r].iter().map(|f| fid(f)).collect::<HashSet<_>>());
    // The K-NN index forgot them too.
    let n = h.live.find_k_nearest(&Fingerprint::structural(x.clone()), 10, 0.6);
    assert_eq!(n.len(), 5);
    assert!(n.iter().all(|n| left.contains(&n.fingerprint)));
    // x comes back as a new fingerprint.
    let d = h.feed(day_session("s8", 7, &[(&x, "m")]).events());
    let p = recorded(&d[0]);
    assert!(p.was_new_fingerprint);
    assert_eq!((p.sample_size_before, p.sample_size_after), (0, 1));
    assert_eq!(evicted_rows(evicted(&d[1])), vec![(fid(&w), "m")]);
    // A score-only write over the soft cap says so.
    let s7 = day_session("s7", 6, &[(&s_, "m"), (&r, "m")]);
    let d = h.feed(vec![verdict(s7.tid(1), eval_id(t(8 * DAY), 0), 1.0, 1.0, t(8 * DAY))]);
    assert_eq!(d.len(), 1, "a score-only write never evicts");
    assert!(recorded(&d[0]).over_soft_cap);
    assert_eq!(recorded(&d[0]).sample_size_after, 1);
    h.assert_rebuilds();
}

#[test]
fn a_fingerprint_leaves_with_its_last_row() {
    let f = feats(&["f"], &[]);
    let g = feats(&["g"], &[]);
    let mut h = Harness::new(PatternConfig::default(), small_caps(2, 2));
    let d = h.feed(day_session("s1", 0, &[(&f, "m1"), (&f, "m2")]).events());
    assert_eq!(evicted(&d[2]).trigger, EvictionTrigger::SoftCapSignal);
    // g pushes one of f's rows out (same time, same sample: by model id).
    let d = h.feed(day_session("s2", 1, &[(&g, "m1")]).events());
    let ev = evicted(&d[1]);
    assert_eq!(evicted_rows(ev), vec![(fid(&f), "m1")]);
    assert_eq!((ev.fingerprints_before, ev.fingerprints_after), (2, 2));
    assert!(h.live.fingerprint(fid(&f)).is_some());
    assert_eq!(h.live.models_of(fid(&f)).collect::<Vec<_>>(), vec!["m2"]);
    // Then its last one.
    let d = h.feed(day_session("s3", 2, &[(&g, "m2")]).events());
    let ev = evicted(&d[1]);
    assert_eq!(evicted_rows(ev), vec![(fid(&f), "m2")]);
    assert_eq!((ev.fingerprints_before, ev.fingerprints_after), (2, 1));
    assert!(h.live.fingerprint(fid(&f)).is_none());
    assert_eq!(h.live.fingerprint_count(), 1);
    h.assert_rebuilds();
}

#[test]
fn rows_idle_past_max_age_are_trimmed_over_the_soft_cap() {
    let [p, q, r, n] = ["p", "q", "r", "n"].map(|tag| feats(&[tag], &[]));
    let mut h = Harness::new(PatternConfig::default(), small_caps(3, 5));
    h.feed(day_session("a1", 0, &[(&p, "m")]).events());
    h.feed(day_session("a2", 1, &[(&q, "m")]).events());
    let d = h.feed(day_session("a3", 2, &[(&r, "m")]).events());
    assert_eq!(evicted(&d[1]).trigger, EvictionTrigger::SoftCapSignal);
    // Day 100: over the soft cap, nothing idle for 180 days yet.
    let d = h.feed(day_session("a4", 100, &[(&n, "m")]).events());
    assert_eq!(d.len(), 1);
    // Day 200: p is written again (so it is not idle), q and r are.
    let d = h.feed(day_session("a5", 200, &[(&p, "m")]).events());
    assert_eq!(d.len(), 2);
    let ev = evicted(&d[1]);
    assert_eq!(ev.trigger, EvictionTrigger::AgeTrim);
    assert_eq!(evicted_rows(ev), vec![(fid(&q), "m"), (fid(&r), "m")]);
    assert_eq!((ev.outcomes_before, ev.outcomes_after, ev.entries_evicted), (4, 2, 2));
    assert_eq!((ev.fingerprints_before, ev.fingerprints_after), (4, 2));
    assert_eq!(ev.oldest_evicted_age_days, Some(199.0));
    assert_eq!(h.row(fid(&p), "m").sample_size, 2);
    assert!(h.live.outcome(fid(&n), "m").is_some());
    // Under the soft cap nothing is trimmed, however idle (n: 200 days).
    let d = h.feed(day_session("a6", 300, &[(&p, "m")]).events());
    assert!(d.iter().all(|e| e.kind() == EventKind::PatternRecorded), "2 rows < soft cap 3: no trim");
    assert!(h.live.outcome(fid(&n), "m").is_some());
    h.assert_rebuilds();
}

#[test]
fn manual_clear_empties_the_store() {
    let a = feats(&["debug"], &[".py"]);
    let b = feats(&["doc"], &[".md"]);
    let mut h = Harness::default_store();
    let s = day_session("s1", 0, &[(&a, "m:a"), (&b, "m:a"), (&a, "m:b")]);
    h.feed(s.events());
    let cause = Envelope::at(
        EventId::derive(t(DAY), &[b"clear"]),
        t(DAY),
        ActorKind::Cli,
        SessionEnded { reason: SessionEndReason::Host, turns: 0 },
    );
    let reactor = PatternReactor::new(h.live.clone(), PatternConfig::default(), PatternCaps::default());
    let mut clear = reactor.clear(&cause).expect("a non-empty store clears");
    let ev = evicted(&clear).clone();
    assert_eq!(ev.trigger, EvictionTrigger::ManualClear);
    assert_eq!((ev.outcomes_before, ev.outcomes_after, ev.entries_evicted), (3, 0, 3));
    assert_eq!((ev.fingerprints_before, ev.fingerprints_after), (2, 0));
    assert_eq!(ev.evicted.len(), 3);
    assert_eq!(clear.causation, Some(cause.id));
    clear.seq = Seq(h.log.len() as u64 + 1);
    h.live.apply(&clear);
    h.log.push(clear);
    assert_eq!((h.live.fingerprint_count(), h.live.outcome_count()), (0, 0));
    assert!(h.live.score_of(s.tid(1)).is_none());
    let r = h.live.recommend(&Fingerprint::structural(a.clone()), &PatternConfig::default());
    assert_eq!((r.chosen_model, r.alternatives.len()), (None, 0));
    assert!(h.live.find_k_nearest(&Fingerprint::structural(a.clone()), 10, 0.6).is_empty());
    // Nothing left to clear.
    let reactor = PatternReactor::new(h.live.clone(), PatternConfig::default(), PatternCaps::default());
    assert!(reactor.clear(&cause).is_none());
    h.assert_rebuilds();
    // A fresh reactor over the cleared store starts over.
    let mut h2 = Harness {
        reactors: reactors(h.live.clone(), &PatternConfig::default(), PatternCaps::default()),
        log: h.log.clone(),
        live: h.live.clone(),
    };
    assert!(h2.feed(vec![verdict(s.tid(1), eval_id(t(2 * DAY), 0), 1.0, 1.0, t(2 * DAY))]).is_empty());
    let d = h2.feed(day_session("s2", 3, &[(&a, "m:a")]).events());
    assert!(recorded(&d[0]).was_new_fingerprint);
    assert_eq!(h2.row(fid(&a), "m:a").sample_size, 1);
    h2.assert_rebuilds();
}

// ---------------------------------------------------------------------------
// 7. Recommendations end to end.

/// A session where `m:a` answers `f1` (0.9, 10 cents) and `m:b` answers
/// `f2` (0.4, 2 cents).
fn ab_session(i: i64, f1: &StructuralFeatures, f2: &StructuralFeatures) -> Vec<Envelope> {
    let mut s = Sess::new(&format!("ab{i}"), i * DAY);
    {
        let r = s.turn(Some("m:a"), f1);
        r.score = Some(0.9);
        r.cost_usd = dec("0.10");
    }
    {
        let r = s.turn(Some("m:b"), f2);
        r.score = Some(0.4);
        r.cost_usd = dec("0.02");
    }
    s.events()
}

#[test]
fn recommend_picks_the_better_model_with_the_formula_confidence() {
    let f1 = feats(&["debug"], &[".py"]);
    let f2 = feats(&["debug"], &[".py", ".rs"]);
    let q = Fingerprint::structural(f1.clone());
    let mut h = Harness::default_store();
    for i in 0..4 {
        h.feed(ab_session(i, &f1, &f2));
    }
    // sA = 0.95·0.9 + 0.05·0 (dearest); sB = 0.95·0.4 + 0.05·1 (cheapest).
    let (sa, sb) = (0.95 * 0.9, 0.95 * 0.4 + 0.05);
    let want_conf = (sa - sb) / sa;
    // Four samples: below the sample gate (5), but ranked.
    let r = h.live.recommend(&q, &PatternConfig::default());
    assert_eq!(r.chosen_model, None);
    assert_eq!(r.sample_size, 4);
    assert!((r.confidence - want_conf).abs() < 1e-12);
    assert_eq!(r.alternatives.iter().map(|o| o.model.as_str()).collect::<Vec<_>>(), ["m:a", "m:b"]);

    h.feed(ab_session(4, &f1, &f2));
    let r = h.live.recommend(&q, &PatternConfig::default());
    assert_eq!(r.chosen_model.as_deref(), Some("m:a"));
    assert!((r.confidence - want_conf).abs() < 1e-12, "{} vs {want_conf}", r.confidence);
    assert!((r.confidence - 0.497_076_023_391_812_9).abs() < 1e-12);
    assert_eq!((r.sample_size, r.k_cluster_size), (5, 2));
    let (a, b) = (&r.alternatives[0], &r.alternatives[1]);
    assert!((a.score - sa).abs() < 1e-12 && (b.score - sb).abs() < 1e-12);
    assert_eq!((a.sample_size, a.avg_cost_usd), (5, dec("0.10")));
    assert_eq!((b.sample_size, b.avg_cost_usd), (5, dec("0.02")));
    assert!((a.success_score_mean - 0.9).abs() < 1e-12 && (b.success_score_mean - 0.4).abs() < 1e-12);
    let n = h.live.find_k_nearest(&q, 10, 0.6);
    assert_eq!(n.len(), 2);
    assert_eq!((n[0].fingerprint, n[0].similarity), (fid(&f1), 1.0));
    assert_eq!(n[1].fingerprint, fid(&f2));
    assert!((n[1].similarity - 0.9).abs() < 1e-12); // loses half the 0.20 extension weight

    // The confidence gate, just above and just below 0.497.
    let strict = PatternConfig { min_confidence: 0.5, ..Default::default() };
    assert_eq!(h.live.recommend(&q, &strict).chosen_model, None);
    let lenient = PatternConfig { min_confidence: 0.49, ..Default::default() };
    assert_eq!(h.live.recommend(&q, &lenient).chosen_model.as_deref(), Some("m:a"));
    // The sample gate, at 5 and 6.
    let six = PatternConfig { min_sample_size: 6, ..Default::default() };
    assert_eq!(h.live.recommend(&q, &six).chosen_model, None);

    // K is over outcome rows: with K = 1 only the nearest row is seen.
    let k1 = PatternConfig { k: 1, ..Default::default() };
    let r = h.live.recommend(&Fingerprint::structural(f2.clone()), &k1);
    assert_eq!(r.chosen_model.as_deref(), Some("m:b"));
    assert_eq!((r.confidence, r.k_cluster_size, r.alternatives.len()), (1.0, 1, 1));
    let r = h.live.recommend(&Fingerprint::structural(f2.clone()), &PatternConfig { k: 2, ..Default::default() });
    assert_eq!(r.chosen_model.as_deref(), Some("m:a"));
    h.assert_rebuilds();
    // The same answers after a reload (the K-NN index is rebuilt).
    let loaded = reload(&h.live);
    assert_eq!(
        loaded.recommend(&q, &PatternConfig::default()).alternatives,
        h.live.recommend(&q, &PatternConfig::default()).alternatives
    );
}

#[test]
fn k_counts_outcome_rows_not_fingerprints() {
    let f = feats(&["test"], &[".py"]);
    let g = feats(&["test"], &[".go"]);
    let mut h = Harness::default_store();
    h.feed(day_session("s1", 0, &[(&f, "m:c"), (&f, "m:a"), (&f, "m:b"), (&g, "m:a")]).events());
    let n = h.live.find_k_nearest(&Fingerprint::structural(f.clone()), 2, 0.6);
    // f's three rows tie at similarity 1; ties go by model id.
    let got: Vec<_> = n.iter().map(|n| (n.fingerprint, n.model.to_string())).collect();
    assert_eq!(got, vec![(fid(&f), "m:a".to_string()), (fid(&f), "m:b".to_string())]);
    assert_eq!(h.live.find_k_nearest(&Fingerprint::structural(f.clone()), 10, 0.6).len(), 4);
    let r = h.live.recommend(&Fingerprint::structural(f.clone()), &PatternConfig { k: 3, ..Default::default() });
    assert_eq!(r.k_cluster_size, 3);
    assert_eq!(r.alternatives.len(), 3);
}

#[test]
fn cluster_success_is_weighted_by_sample_size() {
    // m:a: three sessions at 1.0 on f, one at 0.0 on g; m:b: four at 0.6.
    let f = feats(&["debug"], &[".py"]);
    let g = feats(&["debug"], &[".rs"]);
    let mut h = Harness::default_store();
    for i in 0..4 {
        let mut s = Sess::new(&format!("s{i}"), i * DAY);
        if i < 3 {
            s.turn(Some("m:a"), &f).score = Some(1.0);
        } else {
            s.turn(Some("m:a"), &g).score = Some(0.0);
        }
        s.turn(Some("m:b"), &f).score = Some(0.6);
        h.feed(s.events());
    }
    let r = h
        .live
        .recommend(&Fingerprint::structural(f.clone()), &PatternConfig { min_sample_size: 4, ..Default::default() });
    // Σ(mean · n) / Σ n = 3/4 for m:a (an unweighted mean of rows would say 0.5).
    let a = r.alternatives.iter().find(|o| o.model == "m:a").unwrap();
    assert!((a.success_score_mean - 0.75).abs() < 1e-12);
    assert_eq!(a.sample_size, 4);
    assert_eq!(r.chosen_model.as_deref(), Some("m:a"));
    assert!((r.confidence - (0.95 * 0.75 - 0.95 * 0.6) / (0.95 * 0.75)).abs() < 1e-12);
    h.assert_rebuilds();
}

#[test]
fn the_workload_partitions_the_cluster() {
    let w = feats(&["refactor"], &[".ts"]);
    let mut h = Harness::default_store();
    for i in 0..5 {
        for (wl, sa, sb) in [("w1", 0.9, 0.3), ("w2", 0.3, 0.9)] {
            let mut s = Sess::new(&format!("{wl}-{i}"), i * DAY);
            for (m, score) in [("m:a", sa), ("m:b", sb)] {
                let r = s.turn(Some(m), &w);
                r.workload = Some(wl.into());
                r.score = Some(score);
            }
            h.feed(s.events());
        }
    }
    assert_eq!(h.live.outcome_count(), 4);
    assert_eq!(h.row(fid_w(&w, "w1"), "m:a").success_mean(), Some(0.9));
    assert_eq!(h.live.fingerprint(fid_w(&w, "w2")).unwrap().workload.as_deref(), Some("w2"));
    let cfg = PatternConfig { k: 2, ..Default::default() };
    let q1 = Fingerprint::structural(w.clone()).with_workload(Some("w1".into()));
    let q2 = Fingerprint::structural(w.clone()).with_workload(Some("w2".into()));
    let n = h.live.find_k_nearest(&q1, 4, cfg.alpha);
    let sims: Vec<(FingerprintId, f64)> = n.iter().map(|n| (n.fingerprint, n.similarity)).collect();
    assert_eq!(sims[0], (fid_w(&w, "w1"), 1.0));
    assert_eq!(sims[1], (fid_w(&w, "w1"), 1.0));
    assert_eq!(sims[2].0, fid_w(&w, "w2"));
    assert!((sims[2].1 - 0.15).abs() < 1e-12);
    // Same features, opposite winners.
    let r1 = h.live.recommend(&q1, &cfg);
    let r2 = h.live.recommend(&q2, &cfg);
    assert_eq!(r1.chosen_model.as_deref(), Some("m:a"));
    assert_eq!(r2.chosen_model.as_deref(), Some("m:b"));
    let want = (0.95 * 0.9 - 0.95 * 0.3) / (0.95 * 0.9);
    assert!((r1.confidence - want).abs() < 1e-12 && (r2.confidence - want).abs() < 1e-12);
    // A cluster wide enough to hold both workloads is a tie: no answer.
    let wide = h.live.recommend(&q1, &PatternConfig { k: 4, ..Default::default() });
    assert_eq!((wide.chosen_model, wide.confidence), (None, 0.0));
    h.assert_rebuilds();
}

#[test]
fn recommend_stays_fast_at_400_fingerprints() {
    // Seed 001 §17.1's smoke bound: p95 < 100 ms at 400 fingerprints (the
    // spec's budget is 3 ms; this only catches a gross regression).
    let mut h = Harness::default_store();
    let mut events = Vec::new();
    for i in 0..400i64 {
        let f = StructuralFeatures {
            intent_tags: vec![TAGS[(i % 2) as usize].into()],
            tool_names: vec![format!("tool{}", i % 13)],
            file_path_buckets: vec![format!("dir{i}")],
            estimated_input_tokens_bucket: (i % 4) as u8,
            ..Default::default()
        };
        let mut s = Sess::new(&format!("s{i}"), i * 60);
        s.turn(Some(MODELS[(i % 3) as usize]), &f).score = Some((i % 10) as f64 / 10.0);
        events.extend(s.events());
    }
    h.feed(events);
    assert_eq!((h.live.fingerprint_count(), h.live.outcome_count()), (400, 400));
    let q = Fingerprint::structural(StructuralFeatures {
        intent_tags: vec!["debug".into()],
        tool_names: vec!["tool3".into()],
        file_path_buckets: vec!["dir7".into()],
        ..Default::default()
    });
    let mut times: Vec<f64> = (0..200)
        .map(|_| {
            let started = std::time::Instant::now();
            let r = h.live.recommend(&q, &PatternConfig::default());
            assert_eq!(r.k_cluster_size, 10);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    assert!(times[189] < 100.0, "p95 {} ms", times[189]);
    // The nearest rows share tag, tool and token bucket (0.9, only the
    // directory differs): i ≡ 0 mod 4 and ≡ 3 mod 13, first recorded first.
    let n = h.live.find_k_nearest(&q, 10, 0.6);
    let dirs: Vec<String> =
        n.iter().map(|n| h.live.fingerprint(n.fingerprint).unwrap().features.file_path_buckets[0].clone()).collect();
    assert_eq!(dirs[..8], ["dir16", "dir68", "dir120", "dir172", "dir224", "dir276", "dir328", "dir380"]);
    assert!(n[..8].iter().all(|n| (n.similarity - 0.9).abs() < 1e-12));
    assert!(n[8].similarity < 0.9);
}

// ---------------------------------------------------------------------------
// 8. Isolation.

fn history(name: &str, f: &StructuralFeatures, model: &str, score: f64) -> Vec<Envelope> {
    (0..5)
        .flat_map(|i| {
            let mut s = Sess::new(&format!("{name}{i}"), i * DAY);
            s.turn(Some(model), f).score = Some(score);
            s.events()
        })
        .collect()
}

fn derived_log(events: Vec<Envelope>) -> Vec<Envelope> {
    let mut h = Harness::default_store();
    h.feed(events);
    h.log
}

#[test]
fn two_stores_do_not_see_each_other() {
    let f1 = feats(&["debug"], &[".py"]);
    let f2 = feats(&["doc"], &[".md"]);
    let one = fold(&derived_log(history("one", &f1, "m:a", 0.9)));
    let two = fold(&derived_log(history("two", &f2, "m:b", 0.7)));
    assert_eq!(one.fingerprints().map(|(id, _)| id).collect::<Vec<_>>(), vec![fid(&f1)]);
    assert_eq!(two.fingerprints().map(|(id, _)| id).collect::<Vec<_>>(), vec![fid(&f2)]);
    assert!(one.outcome(fid(&f2), "m:b").is_none());
    assert!(two.outcome(fid(&f1), "m:a").is_none());
    let q = Fingerprint::structural(f1.clone());
    assert_eq!(one.recommend(&q, &PatternConfig::default()).chosen_model.as_deref(), Some("m:a"));
    let r = two.recommend(&q, &PatternConfig::default());
    assert_eq!(r.alternatives.iter().map(|o| o.model.as_str()).collect::<Vec<_>>(), ["m:b"]);
    assert!(two.find_k_nearest(&q, 10, 0.6).iter().all(|n| n.fingerprint == fid(&f2)));
}

#[test]
fn two_data_dirs_do_not_see_each_other_and_reopen_identically() {
    let f1 = feats(&["debug"], &[".py"]);
    let f2 = feats(&["doc"], &[".md"]);
    let logs = [derived_log(history("one", &f1, "m:a", 0.9)), derived_log(history("two", &f2, "m:b", 0.7))];
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let sleds: Vec<OpenLog> =
        dirs.iter().map(|d| OpenLog::from_sled(SledLog::open(d.path(), LogConfig::default()).unwrap())).collect();
    for (log, events) in sleds.iter().zip(&logs) {
        let unassigned: Vec<Envelope> = events
            .iter()
            .cloned()
            .map(|mut e| {
                e.seq = Seq::UNASSIGNED;
                e
            })
            .collect();
        log.append(unassigned).unwrap();
        assert_eq!(log.head(), Seq(events.len() as u64));
    }
    let open = |log: &OpenLog| {
        let ps: Vec<Box<dyn Projection>> = vec![Box::new(PatternOutcomes::default())];
        Projector::open(log, ps, |_, _| {}).unwrap()
    };
    let mut digests = Vec::new();
    for ((log, events), (f, m)) in sleds.iter().zip(&logs).zip([(&f1, "m:a"), (&f2, "m:b")]) {
        let p = open(log);
        let store = p.get::<PatternOutcomes>("pattern_outcomes").unwrap();
        let want = fold(events);
        assert_eq!(digest(&store.rows()), digest(&want.rows()));
        assert_eq!(store.outcome_count(), 1);
        assert_eq!(store.outcome(fid(f), m).unwrap().sample_size, 5);
        let status = p.status();
        digests.push(status[0].digest);
        drop(p);
        // Reopened: loaded from its tree, nothing refolded, same rows and
        // same answers.
        let again = open(log);
        assert_eq!(again.folded("pattern_outcomes"), Some(0));
        let store2 = again.get::<PatternOutcomes>("pattern_outcomes").unwrap();
        assert_eq!(again.status()[0].digest, *digests.last().unwrap());
        let q = Fingerprint::structural(f.clone());
        assert_eq!(
            store2.recommend(&q, &PatternConfig::default()).alternatives,
            want.recommend(&q, &PatternConfig::default()).alternatives
        );
        assert_eq!(store2.recommend(&q, &PatternConfig::default()).chosen_model.as_deref(), Some(m));
    }
    assert_ne!(digests[0], digests[1]);
    let one = open(&sleds[0]);
    assert!(one.get::<PatternOutcomes>("pattern_outcomes").unwrap().outcome(fid(&f2), "m:b").is_none());
}

// ---------------------------------------------------------------------------
// 9. Payload shapes.

fn assert_round_trips(e: &Envelope) {
    let line = codec::json::to_line(e);
    assert_eq!(&codec::json::from_line(&line).unwrap(), e, "JSON: {line}");
    assert_eq!(&codec::binary::decode(&codec::binary::encode(e)).unwrap(), e, "binary");
}

#[test]
fn pattern_events_round_trip_through_both_codecs() {
    let a = feats(&["debug"], &[".py"]);
    let b = feats(&["doc"], &[".md"]);
    let mut h = Harness::new(PatternConfig::default(), small_caps(1, 2));
    let mut s = Sess::new("s1", 0);
    {
        let r = s.turn(Some("m:a"), &a);
        r.score = Some(1.0 / 3.0);
        r.cost_usd = dec("0.000123");
        r.latency_ms = 1001;
    }
    s.turn(Some("m:a"), &a).latency_ms = 1000; // a group mean of 1000.5
    s.turn(Some("m:b"), &b).workload = Some("w".into());
    h.feed(s.events());
    h.feed(day_session("s2", 1, &[(&b, "m:c")]).events());
    h.feed(vec![verdict(s.tid(2), eval_id(t(2 * DAY), 0), 0.1 + 0.2, 0.75, t(2 * DAY))]);
    let kinds: Vec<EventKind> = h.log.iter().filter(|e| is_pattern(e)).map(|e| e.kind()).collect();
    assert!(kinds.contains(&EventKind::PatternRecorded) && kinds.contains(&EventKind::PatternEvicted));
    for e in &h.log {
        assert_round_trips(e);
    }
    // The JSON shape of a contribution.
    let first = h.log.iter().find(|e| is_pattern(e)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&codec::json::to_line(first)).unwrap();
    assert_eq!(v["kind"], "pattern.recorded");
    assert_eq!(v["v"], 3);
    assert_eq!(v["actor"], "pattern_store");
    let p = &v["payload"];
    assert_eq!(p["fingerprint_id"], fid(&a).to_string());
    assert_eq!(p["fingerprint_kind"], "structural");
    assert_eq!(p["primary_model"], "m:a");
    assert_eq!((p["sample_size_before"].as_u64(), p["sample_size_after"].as_u64()), (Some(0), Some(1)));
    assert_eq!(p["was_new_fingerprint"], true);
    assert_eq!(p["cost_usd"], "0.010123"); // money is a decimal string
    assert_eq!(p["latency_ms"], 1000.5);
    assert_eq!(p["success_score"].as_f64(), Some(1.0 / 3.0));
    assert_eq!(p["features"]["intent_tags"][0], "debug");
    assert_eq!(p["workload"], serde_json::Value::Null);
    // The JSON shape of an eviction.
    let ev = h
        .log
        .iter()
        .find(|e| matches!(&e.event, Event::PatternEvicted(p) if p.trigger == EvictionTrigger::HardCapEvict))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&codec::json::to_line(ev)).unwrap();
    assert_eq!(v["kind"], "pattern.evicted");
    assert_eq!(v["payload"]["trigger"], "hard_cap_evict");
    assert_eq!(
        v["payload"]["evicted"].as_array().unwrap().len() as u64,
        v["payload"]["entries_evicted"].as_u64().unwrap()
    );
    assert!(v["payload"]["evicted"][0]["primary_model"].is_string());

    // Synthetic payloads with every optional field set and unset.
    let full = PatternRecorded {
        fingerprint_id: fid(&a),
        fingerprint_kind: FingerprintKind::Hybrid,
        primary_model: "ollama:gemma".into(),
        sample_size_before: u64::MAX - 1,
        sample_size_after: u64::MAX,
        was_new_fingerprint: true,
        success_score: Some(0.1 + 0.2),
        cost_usd: dec("12345.000001"),
        pricing_version: "2026-05".into(),
        over_soft_cap: true,
        turn: Some(s.tid(1)),
        latency_ms: 1.0 / 3.0,
        eval_id: Some(eval_id(t(0), 9)),
        score_confidence: Some(0.5),
        replaces_score: Some(1e-9),
        features: Some(StructuralFeatures { has_images: true, estimated_input_tokens_bucket: 3, ..a.clone() }),
        workload: Some("bench".into()),
        embedding: None,
    };
    let bare = PatternRecorded {
        success_score: None,
        turn: None,
        eval_id: None,
        score_confidence: None,
        replaces_score: None,
        features: None,
        workload: None,
        ..full.clone()
    };
    let none_age = PatternEvicted {
        trigger: EvictionTrigger::ManualClear,
        fingerprints_before: 3,
        fingerprints_after: 0,
        outcomes_before: 4,
        outcomes_after: 0,
        entries_evicted: 0,
        oldest_evicted_age_days: None,
        evicted: Vec::new(),
    };
    let with_age = PatternEvicted {
        trigger: EvictionTrigger::AgeTrim,
        oldest_evicted_age_days: Some(180.000_001),
        ..none_age.clone()
    };
    for (i, event) in [Event::from(full), bare.into(), none_age.into(), with_age.into()].into_iter().enumerate() {
        let mut e = Envelope::at(EventId::derive(t(0), &[b"shape", &[i as u8]]), t(0), ActorKind::PatternStore, event);
        e.seq = Seq(42 + i as u64);
        assert_round_trips(&e);
    }
}

// ---------------------------------------------------------------------------
// 9b. Meaning: hybrid fingerprints are neighbourhoods of meaning.

/// A unit vector at `angle` radians in the plane of the first two axes.
fn unit(angle: f64) -> Vec<f32> {
    let mut v = vec![0.0f32; 8];
    v[0] = angle.cos() as f32;
    v[1] = angle.sin() as f32;
    v
}

/// The events of a one-turn session of shape `f` whose request embeds as
/// `vector`, answered by `model` and rated `score`.
fn meaning_session(
    name: &str,
    start: i64,
    f: &StructuralFeatures,
    vector: Vec<f32>,
    model: &str,
    score: f64,
) -> Vec<Envelope> {
    let mut s = Sess::new(name, start);
    s.turn(Some(model), f);
    let turn = s.tid(1);
    let mut events = s.turn_events();
    for e in &mut events {
        if let Event::RouteDecided(d) = &mut e.event {
            d.embedding = Some(QueryEmbedding { provider: "p".into(), vector: vector.clone() });
        }
    }
    assert!(events.iter().any(|e| matches!(&e.event, Event::RouteDecided(d) if d.embedding.is_some())));
    events.push(verdict(
        turn,
        eval_id(s.end_at() - Duration::minutes(1), 1),
        score,
        0.9,
        s.end_at() - Duration::minutes(1),
    ));
    events.push(s.end());
    events
}

#[test]
fn one_structure_holds_one_fingerprint_per_meaning() {
    let f = feats(&[], &[]);
    let cfg = PatternConfig { same_request: 0.8, same_kind: 0.5, min_sample_size: 1, ..Default::default() };
    let mut h = Harness::new(cfg.clone(), PatternCaps::default());
    // Two requests of one structure and different meaning (cosine 0.27):
    // two fingerprints. A rewording of the first (cosine 0.94) joins it.
    let d1 = h.feed(meaning_session("s1", 0, &f, unit(0.0), "m:a", 1.0));
    let d2 = h.feed(meaning_session("s2", 7_200, &f, unit(1.3), "m:a", 0.0));
    let d3 = h.feed(meaning_session("s3", 14_400, &f, unit(0.35), "m:a", 1.0));
    let (p1, p2, p3) = (recorded(&d1[0]), recorded(&d2[0]), recorded(&d3[0]));
    assert_ne!(p1.fingerprint_id, p2.fingerprint_id, "unrelated meanings, one structure: two fingerprints");
    assert_eq!(p3.fingerprint_id, p1.fingerprint_id, "a rewording joins the first");
    assert!(p1.was_new_fingerprint && p2.was_new_fingerprint && !p3.was_new_fingerprint);
    assert!(p1.embedding.is_some() && p3.embedding.is_none(), "the founder's vector travels, once");
    assert_eq!(h.live.fingerprint_count(), 2);
    assert_eq!(h.row(p1.fingerprint_id, "m:a").sample_size, 2);
    // A request on the other side of the first, below same_request to it
    // (cosine 0.76): it founds a third.
    let d4 = h.feed(meaning_session("s4", 21_600, &f, unit(-0.7), "m:b", 1.0));
    assert!(recorded(&d4[0]).was_new_fingerprint);
    assert_eq!(h.live.fingerprint_count(), 3);
    h.assert_rebuilds();
    // Asked about the first meaning, the store counts only its
    // neighbourhood (cosine ≥ same_kind): m:a, rated 1.0 twice — not the
    // 0.0 of the other request (cosine 0.36)…
    let q = Fingerprint::structural(f.clone())
        .with_embedding(Some(engram_learning::patterns::Embedding::new("p", unit(0.1))))
        .at_route();
    let rec = h.live.recommend(&q, &cfg);
    let a = rec.alternatives.iter().find(|o| o.model == "m:a").expect("m:a in the cluster");
    assert_eq!((a.sample_size, a.success_score_mean), (2, 1.0), "{rec:?}");
    // …and m:b's row at cosine 0.70: a neighbour of meaning.
    assert!(rec.alternatives.iter().any(|o| o.model == "m:b"), "{rec:?}");
    // Without the gate (the design before meaning), the other request's
    // verdict is in the cluster too: its blended similarity, 0.62, clears
    // the hybrid floor.
    let open = PatternConfig { same_kind: -1.0, ..cfg };
    let a = h.live.recommend(&q, &open).alternatives.into_iter().find(|o| o.model == "m:a").unwrap();
    assert_eq!(a.sample_size, 3);
}

// ---------------------------------------------------------------------------
// 10. Random histories.

const TAGS: [&str; 2] = ["debug", "doc"];
const EXTS: [&str; 2] = [".py", ".rs"];
const MODELS: [&str; 3] = ["m:a", "m:b", "m:c"];
const PRICING: [&str; 3] = ["p1", "p2", "p3"];

#[derive(Clone, Debug)]
struct GTurn {
    tags: u8,
    exts: u8,
    workload: bool,
    model: Option<u8>,
    cost_micros: u32,
    latency_ms: u32,
    pricing: u8,
    spacing: i64,
}

#[derive(Clone, Debug)]
struct GSession {
    gap: i64,
    turns: Vec<GTurn>,
    ends: bool,
}

#[derive(Clone, Debug)]
struct GVerdict {
    session: usize,
    turn: usize,
    unknown: bool,
    after_end: bool,
    delay: i64,
    rank: u64,
    score: f64,
    confidence: f64,
    dup: Option<i64>,
}

fn g_turn() -> impl Strategy<Value = GTurn> {
    (
        0u8..4,
        0u8..4,
        prop::bool::weighted(0.2),
        prop::option::weighted(0.85, 0u8..3),
        0u32..200_000,
        0u32..5_000,
        0u8..3,
        1i64..600,
    )
        .prop_map(|(tags, exts, workload, model, cost_micros, latency_ms, pricing, spacing)| GTurn {
            tags,
            exts,
            workload,
            model,
            cost_micros,
            latency_ms,
            pricing,
            spacing,
        })
}

fn g_session() -> impl Strategy<Value = GSession> {
    (
        prop::sample::select(vec![0, 30, DAY, 100 * DAY, 200 * DAY, 200 * DAY]),
        prop::collection::vec(g_turn(), 1..5),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(gap, turns, ends)| GSession { gap, turns, ends })
}

fn g_verdict() -> impl Strategy<Value = GVerdict> {
    (
        (any::<usize>(), any::<usize>(), prop::bool::weighted(0.1), any::<bool>()),
        prop::sample::select(vec![1, 60, DAY, 150 * DAY, 250 * DAY]),
        1u64..40,
        prop::sample::select(vec![0.0, 0.25, 0.5, 0.8, 1.0, 1.0 / 3.0]),
        prop::sample::select(vec![0.2, 0.49, 0.5, 0.9, 1.0]),
        prop::option::weighted(0.2, prop::sample::select(vec![0, 1, DAY, 300 * DAY])),
    )
        .prop_map(|((session, turn, unknown, after_end), delay, rank, score, confidence, dup)| GVerdict {
            session,
            turn,
            unknown,
            after_end,
            delay,
            rank,
            score,
            confidence,
            dup,
        })
}

/// What an item of the history is, for the oracle.
#[derive(Clone, Debug)]
enum What {
    Turn,
    End(usize),
    Verdict { target: TurnId, id: EvalId, score: f64, confidence: f64 },
}

/// A random history: its items in delivery order (each a group of input
/// envelopes) and the sessions' turn records.
struct History {
    items: Vec<(What, Vec<Envelope>)>,
    sessions: Vec<Vec<TurnRecord>>,
}

impl History {
    fn inputs(&self) -> Vec<Envelope> {
        self.items.iter().flat_map(|(_, e)| e.iter().cloned()).collect()
    }
}

fn bits<'a>(mask: u8, pool: &[&'a str]) -> Vec<&'a str> {
    pool.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, s)| *s).collect()
}

fn build(sessions: &[GSession], verdicts: &[GVerdict]) -> History {
    let mut keyed: Vec<(i64, usize, What, Vec<Envelope>)> = Vec::new();
    let mut records: Vec<Vec<TurnRecord>> = Vec::new();
    let mut ends: Vec<i64> = Vec::new();
    let mut base = 0;
    for (i, gs) in sessions.iter().enumerate() {
        base += gs.gap;
        let id = SessionId::new(format!("s{i}"));
        let mut at = base;
        let mut recs = Vec::new();
        for (n, gt) in gs.turns.iter().enumerate() {
            at += gt.spacing;
            let r = TurnRecord {
                session: id.clone(),
                turn: n as u32 + 1,
                at: t(at),
                text: "x".into(),
                steps: Vec::new(),
                model: gt.model.map(|m| MODELS[m as usize].to_owned()),
                planner_ms: 1,
                latency_ms: u64::from(gt.latency_ms),
                cost_usd: Decimal::new(i64::from(gt.cost_micros), 6),
                pricing_version: PRICING[gt.pricing as usize].into(),
                score: None,
                score_confidence: 1.0,
                workload: gt.workload.then(|| "w1".to_owned()),
                features: Some(feats(&bits(gt.tags, &TAGS), &bits(gt.exts, &EXTS))),
            };
            let n = keyed.len();
            keyed.push((at, n, What::Turn, turn_events(&r, false)));
            recs.push(r);
        }
        let end = at + 3600;
        if gs.ends {
            let n = keyed.len();
            keyed.push((end, n, What::End(i), vec![session_ended(&id, recs.len() as u32, t(end))]));
        }
        ends.push(end);
        records.push(recs);
    }
    for (i, v) in verdicts.iter().enumerate() {
        let s = v.session % records.len();
        let r = &records[s][v.turn % records[s].len()];
        let turn_at = r.at.timestamp() - t(0).timestamp();
        let target = if v.unknown {
            TurnId::derive(t(0), &[b"unknown", &i.to_be_bytes()])
        } else {
            TurnId::for_turn(&r.session, r.turn, r.at)
        };
        let key = if v.after_end { ends[s] + v.delay } else { turn_at + 1 + v.delay.rem_euclid(ends[s] - turn_at - 1) };
        let id = EvalId(Ulid::from_parts(v.rank, i as u128));
        let env = verdict(target, id, v.score, v.confidence, t(key));
        let what = What::Verdict { target, id, score: v.score, confidence: v.confidence };
        let n = keyed.len();
        keyed.push((key, n, what.clone(), vec![env.clone()]));
        if let Some(d) = v.dup {
            let n = keyed.len();
            keyed.push((key + d, n, what, vec![env]));
        }
    }
    keyed.sort_by_key(|(k, n, _, _)| (*k, *n));
    History { items: keyed.into_iter().map(|(_, _, w, e)| (w, e)).collect(), sessions: records }
}

fn number(events: &mut [Envelope]) {
    for (i, e) in events.iter_mut().enumerate() {
        e.seq = Seq(i as u64 + 1);
    }
}

/// One-shot derivation of the whole history, numbered.
fn derive_history(h: &History, cfg: &PatternConfig, caps: PatternCaps) -> Vec<Envelope> {
    let mut out = derive_all(h.inputs(), &mut reactors(PatternOutcomes::default(), cfg, caps));
    number(&mut out);
    out
}

/// The expected outcome rows of a history under caps that never bind:
/// contributions per ended session, each recorded turn's latest verdict.
#[derive(Debug, Default)]
struct Expected {
    sample_size: u64,
    cost_micros: i64,
    latency: f64,
    pricing: String,
    turns: Vec<TurnId>,
}

/// An outcome row's key.
type RowKey = (FingerprintId, String);
/// Each turn's latest verdict: id, score, confidence.
type Latest = BTreeMap<TurnId, (EvalId, f64, f64)>;

fn oracle(h: &History) -> (BTreeMap<RowKey, Expected>, Latest) {
    let mut rows: BTreeMap<RowKey, Expected> = BTreeMap::new();
    let mut latest: Latest = BTreeMap::new();
    for (what, _) in &h.items {
        match what {
            What::Turn => {}
            What::Verdict { target, id, score, confidence } => {
                let e = latest.entry(*target).or_insert((*id, *score, *confidence));
                if *id > e.0 {
                    *e = (*id, *score, *confidence);
                }
            }
            What::End(s) => {
                let mut turns: Vec<(TurnId, &TurnRecord)> = h.sessions[*s]
                    .iter()
                    .filter(|r| r.model.is_some())
                    .map(|r| (TurnId::for_turn(&r.session, r.turn, r.at), r))
                    .collect();
                turns.sort_by_key(|(id, _)| *id);
                let mut groups: Vec<(RowKey, Vec<(TurnId, &TurnRecord)>)> = Vec::new();
                for (id, r) in turns {
                    let fp =
                        Fingerprint::structural(r.features.clone().unwrap()).with_workload(r.workload.clone()).id();
                    let key = (fp, r.model.clone().unwrap());
                    match groups.iter_mut().find(|g| g.0 == key) {
                        Some(g) => g.1.push((id, r)),
                        None => groups.push((key, vec![(id, r)])),
                    }
                }
                for (key, turns) in groups {
                    let row = rows.entry(key).or_default();
                    row.sample_size += 1;
                    row.cost_micros += to_micros(turns.iter().map(|(_, r)| r.cost_usd).sum());
                    let lat = turns.iter().map(|(_, r)| r.latency_ms as f64).sum::<f64>() / turns.len() as f64;
                    row.latency += (lat - row.latency) / row.sample_size as f64;
                    row.pricing = turns.last().unwrap().1.pricing_version.clone();
                    row.turns.extend(turns.iter().map(|(id, _)| *id));
                }
            }
        }
    }
    (rows, latest)
}

/// Folds `events` into `live`, checking every pattern event against the
/// state it lands on.
fn fold_checked(live: &mut PatternOutcomes, events: &[Envelope], caps: PatternCaps) {
    for e in events {
        match &e.event {
            Event::PatternRecorded(p) => {
                let current = live.outcome(p.fingerprint_id, &p.primary_model).map_or(0, |o| o.sample_size);
                assert_eq!(p.sample_size_before, current, "{p:?}");
                assert!(p.sample_size_after == p.sample_size_before || p.sample_size_after == p.sample_size_before + 1);
                if p.sample_size_after > p.sample_size_before {
                    assert_eq!(p.was_new_fingerprint, live.fingerprint(p.fingerprint_id).is_none(), "{p:?}");
                } else {
                    assert!(!p.was_new_fingerprint);
                }
                assert_eq!(p.features.is_some(), p.was_new_fingerprint);
            }
            Event::PatternEvicted(v) => {
                assert_eq!(v.outcomes_before, live.outcome_count(), "{v:?}");
                assert_eq!(v.fingerprints_before, live.fingerprint_count(), "{v:?}");
                assert_eq!(v.entries_evicted, v.evicted.len() as u64);
                assert_eq!(v.outcomes_after, v.outcomes_before - v.entries_evicted);
                let gone: HashSet<(FingerprintId, String)> =
                    v.evicted.iter().map(|o| (o.fingerprint_id, o.primary_model.clone())).collect();
                assert_eq!(gone.len(), v.evicted.len(), "a row listed twice");
                let rows: Vec<(FingerprintId, String, OutcomeRow)> =
                    live.outcomes().map(|(f, m, o)| (f, m.to_owned(), o.clone())).collect();
                let (out, kept): (Vec<_>, Vec<_>) = rows.iter().partition(|(f, m, _)| gone.contains(&(*f, m.clone())));
                assert_eq!(out.len(), v.evicted.len(), "evicting rows that are not there");
                match v.trigger {
                    EvictionTrigger::SoftCapSignal => {
                        assert!(v.evicted.is_empty());
                        assert!(v.outcomes_before >= caps.soft_cap_rows);
                    }
                    EvictionTrigger::HardCapEvict => {
                        assert_eq!(v.outcomes_after, caps.hard_cap_rows);
                        // Least recently updated first, thinnest evidence on ties.
                        for (_, _, o) in &out {
                            for (_, _, k) in &kept {
                                assert!(
                                    o.last_updated < k.last_updated
                                        || (o.last_updated == k.last_updated && o.sample_size <= k.sample_size),
                                    "evicted {o:?} over kept {k:?}"
                                );
                            }
                        }
                    }
                    EvictionTrigger::AgeTrim => {
                        assert!(v.outcomes_before >= caps.soft_cap_rows && v.outcomes_before <= caps.hard_cap_rows);
                        let max_age = Duration::days(i64::from(caps.max_age_days));
                        assert!(out.iter().all(|(_, _, o)| e.at - o.last_updated > max_age));
                        assert!(kept.iter().all(|(_, _, k)| e.at - k.last_updated <= max_age));
                    }
                    EvictionTrigger::ManualClear => panic!("no manual clear in a derived history"),
                }
            }
            _ => {}
        }
        live.apply(e);
        if let Event::PatternRecorded(p) = &e.event {
            assert_eq!(p.over_soft_cap, live.outcome_count() >= caps.soft_cap_rows, "{p:?}");
        }
        if let Event::PatternEvicted(v) = &e.event {
            assert_eq!(live.outcome_count(), v.outcomes_after);
            assert_eq!(live.fingerprint_count(), v.fingerprints_after, "{v:?}");
        }
        if !is_pattern(e) {
            assert!(live.outcome_count() <= caps.hard_cap_rows);
        }
    }
}

fn caps_strategy() -> impl Strategy<Value = PatternCaps> {
    prop_oneof![
        Just(PatternCaps::default()),
        (1u64..4, 0u64..5).prop_map(|(soft, extra)| PatternCaps {
            soft_cap_rows: soft,
            hard_cap_rows: soft + extra,
            max_age_days: 180
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Live equals rebuild equals persist-and-reload; deriving per item or
    /// resumed from a reloaded store derives the same log; re-delivery
    /// derives nothing; under caps that never bind the rows are exactly the
    /// naive per-session contributions and latest verdicts.
    #[test]
    fn random_histories_fold_deterministically(
        sessions in prop::collection::vec(g_session(), 1..10),
        verdicts in prop::collection::vec(g_verdict(), 0..16),
        caps in caps_strategy(),
        split in any::<prop::sample::Index>(),
    ) {
        let cfg = PatternConfig::default();
        let h = build(&sessions, &verdicts);
        let out = derive_history(&h, &cfg, caps);
        prop_assert_eq!(out.len() - h.inputs().len(), out.iter().filter(|e| is_pattern(e)).count());

        // Live (checked event by event), rebuild, Projector rebuild.
        let mut live = PatternOutcomes::default();
        fold_checked(&mut live, &out, caps);
        prop_assert!(live.outcome_count() <= caps.hard_cap_rows);
        let want = digest(&live.rows());
        prop_assert_eq!(want, digest(&fold(&out).rows()));
        let ps: Vec<Box<dyn Projection>> = vec![Box::new(PatternOutcomes::default())];
        let mut projector = Projector::in_memory(ps);
        for e in &out {
            projector.apply(e);
        }
        prop_assert_eq!(want, projector.status()[0].digest);

        // Two halves with a persist/reload in between.
        let mid = split.index(out.len() + 1);
        let mut half = reload(&fold(&out[..mid]));
        for e in &out[mid..] {
            half.apply(e);
        }
        prop_assert_eq!(want, digest(&half.rows()));
        let q = Fingerprint::structural(feats(&["debug"], &[".py"]));
        prop_assert_eq!(half.find_k_nearest(&q, 5, 0.6), live.find_k_nearest(&q, 5, 0.6));
        prop_assert_eq!(half.recommend(&q, &cfg).alternatives, live.recommend(&q, &cfg).alternatives);

        // Two halves with an actor's snapshot in between (saved, restored
        // into an empty store, the rest folded on top): the same rows, the
        // same neighbours, and the same bytes when saved again.
        let mut w = SnapshotWriter::new();
        fold(&out[..mid]).save(&mut w);
        let body = w.finish().unwrap();
        let mut snapped = PatternOutcomes::default();
        let mut r = SnapshotReader::new(&body);
        snapped.restore(&mut r).unwrap();
        r.finish().unwrap();
        for e in &out[mid..] {
            snapped.apply(e);
        }
        prop_assert_eq!(want, digest(&snapped.rows()));
        prop_assert_eq!(snapped.find_k_nearest(&q, 5, 0.6), live.find_k_nearest(&q, 5, 0.6));
        let (mut a, mut b) = (SnapshotWriter::new(), SnapshotWriter::new());
        snapped.save(&mut a);
        live.save(&mut b);
        prop_assert_eq!(a.finish().unwrap(), b.finish().unwrap());

        // A damaged body (one byte changed, or cut) restores to an error or
        // to some state, never to a panic.
        if !body.is_empty() {
            let mut bad = body.clone();
            let at = split.index(bad.len());
            bad[at] = bad[at].wrapping_add(1 + (at % 251) as u8);
            for damaged in [&bad[..], &body[..at]] {
                let mut r = SnapshotReader::new(damaged);
                let mut store = PatternOutcomes::default();
                if store.restore(&mut r).is_ok() && r.finish().is_ok() {
                    let _ = store.rows();
                    let _ = store.find_k_nearest(&q, 5, 0.6);
                }
            }
        }

        // Deriving item by item derives the same log.
        let mut rs = reactors(PatternOutcomes::default(), &cfg, caps);
        let mut step: Vec<Envelope> = h.items.iter().flat_map(|(_, e)| derive_all(e.clone(), &mut rs)).collect();
        number(&mut step);
        prop_assert_eq!(&step, &out);

        // Resuming from a reloaded store after any item derives the same log.
        let cut = split.index(h.items.len() + 1);
        let first: Vec<Envelope> = h.items[..cut].iter().flat_map(|(_, e)| e.iter().cloned()).collect();
        let mut resumed = derive_all(first, &mut reactors(PatternOutcomes::default(), &cfg, caps));
        number(&mut resumed);
        let warm = reload(&fold(&resumed));
        let rest: Vec<Envelope> = h.items[cut..].iter().flat_map(|(_, e)| e.iter().cloned()).collect();
        resumed.extend(derive_all(rest, &mut reactors(warm, &cfg, caps)));
        number(&mut resumed);
        prop_assert_eq!(&resumed, &out);

        // Re-delivering every input to a reactor warmed up from the store
        // derives nothing.
        let again = derive_all(h.inputs(), &mut reactors(live.clone(), &cfg, caps));
        prop_assert_eq!(again.len(), h.inputs().len());
        prop_assert!(!again.iter().any(is_pattern));

        // Deriving again over the derived log (a fresh reactor reacting to
        // the inputs and observing the logged pattern events) derives
        // exactly the logged pattern events, in order: nothing new.
        let mut fresh = PatternReactor::new(PatternOutcomes::default(), cfg.clone(), caps);
        let mut expected: std::collections::VecDeque<Envelope> = Default::default();
        for e in &out {
            if is_pattern(e) {
                let mut want = expected.pop_front().expect("a logged pattern event the replay did not derive");
                want.seq = e.seq;
                prop_assert_eq!(&want, e);
                fresh.observe(e);
            } else {
                prop_assert!(expected.is_empty(), "derived events missing from the log: {:?}", expected);
                expected.extend(fresh.react(e));
            }
        }
        prop_assert!(expected.is_empty());

        // Under caps that never bind: the naive oracle.
        if caps == PatternCaps::default() {
            let (rows, latest) = oracle(&h);
            prop_assert_eq!(live.outcome_count(), rows.len() as u64);
            let fps: HashSet<FingerprintId> = rows.keys().map(|(f, _)| *f).collect();
            prop_assert_eq!(live.fingerprint_count(), fps.len() as u64);
            for ((fp, model), x) in &rows {
                let got = live.outcome(*fp, model).expect("row");
                prop_assert_eq!(got.sample_size, x.sample_size);
                prop_assert_eq!(got.cost_micros, x.cost_micros);
                prop_assert!((got.latency_mean_ms - x.latency).abs() <= 1e-9 * x.latency.max(1.0));
                prop_assert_eq!(&got.pricing_version_last, &x.pricing);
                let folded: Vec<f64> = x
                    .turns
                    .iter()
                    .filter_map(|t| latest.get(t))
                    .filter(|v| v.2 >= cfg.min_eval_confidence)
                    .map(|v| v.1)
                    .collect();
                prop_assert_eq!(got.score_count, folded.len() as u64);
                prop_assert_eq!(got.score_sum_nanos, folded.iter().map(|s| score_nanos(*s)).sum::<i64>());
                for turn in &x.turns {
                    let sr = live.score_of(*turn).expect("history row");
                    prop_assert_eq!(sr.eval_id, latest.get(turn).map(|v| v.0));
                    prop_assert_eq!(sr.folded, latest.get(turn).filter(|v| v.2 >= cfg.min_eval_confidence).map(|v| v.1));
                }
            }
        }
    }
}
