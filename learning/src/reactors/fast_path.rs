//! The fast path's learning (seed 000): what a completed turn teaches L1
//! and L2, when a pipeline expires and when it is promoted — decided here,
//! written as events, folded by `canonical_queries` and `pipelines`.
//!
//! * `turn.completed` with one step, chosen by the planner (or replayed by
//!   L1) → `canonical.recorded` (canonical text, executor, arguments with
//!   the request's values as placeholders);
//! * `turn.completed` with two or more steps, however they were served (steps
//!   answered by L0/L1 count: that is how pipelines compose) →
//!   `pipeline.recorded` at the current active-day rank, and
//!   `pipeline.promoted` the first time its uses reach `k_synth`;
//! * `day.activated` → `pipeline.expired` for every pipeline unused for more
//!   than `ttl_active_days` *active* days (two months away do not count);
//! * a *chained* turn (`fastpath.hit` with a `residual`: L2 replayed a known
//!   prefix, the planner planned the rest) teaches only the prefix — its
//!   pipeline's use — never the whole request as a pipeline: what the
//!   planner made of the rest is one turn's answer, not a known route.

use chrono::FixedOffset;
use engram_events::payloads::{
    CanonicalRecorded, PipelineExpired, PipelinePromoted, PipelineRecorded, PlanStep, RouteLayer,
};
use engram_events::{ActorKind, Envelope, Event, TurnId};
use std::collections::HashMap;

use super::Reactor;
use crate::fast_path::MultiToolConfig;
use crate::fast_path::{canonical, pipeline_id, placeholder};
use crate::projections::{ActiveDays, CanonicalQueries, Pipelines};
use engram_events::derived;
use engram_local_state::projector::Projection;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// Derives `canonical.recorded`, `pipeline.recorded/.expired/.promoted`.
pub struct FastPathReactor {
    canonical: CanonicalQueries,
    pipelines: Pipelines,
    day_rank: u32,
    config: MultiToolConfig,
    offset: FixedOffset,
    /// Chained turns under way: the replayed prefix's canonical text and
    /// step count, learnt alone when the turn completes.
    chained: HashMap<TurnId, (String, usize)>,
}

impl FastPathReactor {
    /// A reactor starting from the projections' state; `offset` is the
    /// user's UTC offset (relative dates in requests are local).
    pub fn new(
        canonical: CanonicalQueries,
        pipelines: Pipelines,
        days: &ActiveDays,
        config: MultiToolConfig,
        offset: FixedOffset,
    ) -> Self {
        FastPathReactor { canonical, pipelines, day_rank: days.current_rank(), config, offset, chained: HashMap::new() }
    }

    /// The L1 rows the reactor decides from.
    pub fn canonical_queries(&self) -> &CanonicalQueries {
        &self.canonical
    }

    /// The L2 rows the reactor decides from.
    pub fn pipelines(&self) -> &Pipelines {
        &self.pipelines
    }

    fn on_turn(&self, env: &Envelope, text: &str, layer: RouteLayer, steps: &[PlanStep]) -> Vec<Envelope> {
        let (canonical, ex) = canonical(text, env.at.with_timezone(&self.offset));
        if canonical.is_empty() {
            return Vec::new();
        }
        let templated = templated(steps, &ex);
        let mut out = Vec::new();
        if templated.len() == 1 && matches!(layer, RouteLayer::Planner | RouteLayer::L1) {
            let step = &templated[0];
            let event = CanonicalRecorded { canonical, executor: step.tool.clone(), args_observed: step.args.clone() };
            out.push(derived(env, ActorKind::Router, event, 0));
        } else if templated.len() >= 2 {
            out = self.pipeline_used(env, canonical, templated);
        }
        out
    }

    /// A chained turn: only the replayed prefix — `prefix` (its canonical
    /// text, as matched) run as the first `steps` — is a use of its
    /// pipeline.
    fn on_prefix(&self, env: &Envelope, text: &str, prefix: &str, steps: &[PlanStep]) -> Vec<Envelope> {
        let (_, ex) = canonical(text, env.at.with_timezone(&self.offset));
        let templated = templated(steps, &ex);
        if templated.len() < 2 {
            return Vec::new();
        }
        self.pipeline_used(env, prefix.to_owned(), templated)
    }

    /// `pipeline.recorded` (and `pipeline.promoted` the first time its uses
    /// reach `k_synth`) for one use of `canonical` → `steps`.
    fn pipeline_used(&self, env: &Envelope, canonical: String, steps: Vec<PlanStep>) -> Vec<Envelope> {
        let id = pipeline_id(&canonical, &steps);
        let row = self.pipelines.get(&id);
        let uses = row.map_or(0, |r| r.uses) + 1;
        let promoted = row.is_some_and(|r| r.promoted);
        let event = PipelineRecorded { pipeline_id: id.clone(), canonical, steps, day_rank: self.day_rank };
        let mut out = vec![derived(env, ActorKind::Router, event, 0)];
        if uses >= self.config.k_synth && !promoted {
            out.push(derived(env, ActorKind::Router, PipelinePromoted { pipeline_id: id, uses }, 0));
        }
        out
    }

    fn on_day(&self, env: &Envelope, rank: u32) -> Vec<Envelope> {
        self.pipelines
            .iter()
            .filter(|p| rank.saturating_sub(p.last_used_rank) > self.config.ttl_active_days)
            .enumerate()
            .map(|(i, p)| {
                let event = PipelineExpired {
                    pipeline_id: p.pipeline_id.clone(),
                    last_used_rank: p.last_used_rank,
                    current_rank: rank,
                };
                derived(env, ActorKind::Router, event, i as u32)
            })
            .collect()
    }
}

/// The steps with the request's values in their arguments turned into
/// placeholders (`{path}`): what a learnt row remembers.
fn templated(steps: &[PlanStep], ex: &crate::fast_path::Extracted) -> Vec<PlanStep> {
    steps.iter().map(|s| PlanStep { tool: s.tool.clone(), args: placeholder::templatize(&s.args, ex) }).collect()
}

impl Reactor for FastPathReactor {
    fn name(&self) -> &'static str {
        "fast_path"
    }

    fn observe(&mut self, env: &Envelope) {
        match &env.event {
            Event::DayActivated(d) => self.day_rank = self.day_rank.max(d.rank),
            Event::FastPathHit(h) if h.residual.is_some() => {
                if let Some(turn) = env.turn {
                    self.chained.insert(turn, (h.matched.clone(), h.steps.len()));
                }
            }
            Event::TurnCompleted(_) => {
                if let Some(turn) = env.turn {
                    self.chained.remove(&turn);
                }
            }
            Event::CanonicalRecorded(_) => self.canonical.apply(env),
            Event::PipelineRecorded(_) | Event::PipelineExpired(_) | Event::PipelinePromoted(_) => {
                self.pipelines.apply(env)
            }
            _ => {}
        }
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        let out = match &env.event {
            Event::TurnCompleted(t) if t.tools_ok && !t.steps.is_empty() => {
                match env.turn.and_then(|turn| self.chained.get(&turn)) {
                    Some((prefix, n)) => self.on_prefix(env, &t.text, prefix, &t.steps[..(*n).min(t.steps.len())]),
                    None => self.on_turn(env, &t.text, t.layer, &t.steps),
                }
            }
            Event::DayActivated(d) => self.on_day(env, d.rank),
            _ => Vec::new(),
        };
        self.observe(env);
        out
    }
}

/// The L1 rows and L2 pipelines a runtime learns from planner turns
/// `(text, steps)`, each completed `times` (tools ok), through this reactor —
/// what benchmarks and tests build fast-path tables from without a log.
pub fn learn<T: AsRef<str>>(
    turns: &[(T, Vec<PlanStep>)],
    times: u32,
    config: MultiToolConfig,
    offset: FixedOffset,
) -> (CanonicalQueries, Pipelines) {
    use chrono::TimeZone;
    use engram_events::payloads::TurnCompleted;
    use engram_events::{EventId, SessionId, TurnId};
    use rust_decimal::Decimal;

    let mut reactor =
        FastPathReactor::new(CanonicalQueries::default(), Pipelines::default(), &ActiveDays::default(), config, offset);
    let (mut canonical, mut pipelines) = (CanonicalQueries::default(), Pipelines::default());
    let start = chrono::Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0).single().expect("a valid instant");
    let session = SessionId::new("learn");
    let mut n = 0u32;
    for _ in 0..times {
        for (text, steps) in turns {
            n += 1;
            let at = start + chrono::Duration::seconds(n.into());
            let env = Envelope::at(
                EventId::derive(at, &[&n.to_be_bytes()]),
                at,
                ActorKind::ReplyLoop,
                TurnCompleted {
                    turn_number: n,
                    text: text.as_ref().to_owned(),
                    layer: RouteLayer::Planner,
                    model: Some("learn".into()),
                    steps: steps.clone(),
                    tools_ok: true,
                    planner_ms: 12_000,
                    latency_ms: 13_000,
                    cost_usd: Decimal::ZERO,
                    pricing_version: String::new(),
                },
            )
            .with_session(session.clone())
            .with_turn(TurnId::for_turn(&session, n, at));
            for e in &reactor.react(&env) {
                canonical.apply(e);
                pipelines.apply(e);
                reactor.observe(e);
            }
        }
    }
    (canonical, pipelines)
}

/// The fast path's learning state: its two projections, the active-day
/// rank and the chained turns under way. The configuration is the
/// runtime's, not the state's: the fold does not depend on it.
impl Snapshot for FastPathReactor {
    fn save(&self, w: &mut SnapshotWriter) {
        self.canonical.save(w);
        self.pipelines.save(w);
        w.put(&self.day_rank);
        w.put_map(&self.chained);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.canonical.restore(r)?;
        self.pipelines.restore(r)?;
        self.day_rank = r.take()?;
        self.chained = r.take_map()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reactors::{derive_all, DayReactor};
    use chrono::{DateTime, Duration, TimeZone, Utc};
    use engram_events::payloads::{ToolArgs, TurnCompleted, UtteranceReceived, UtteranceSource};
    use engram_events::{EventId, SessionId, TurnId};
    use rust_decimal::Decimal;

    fn turn(at: DateTime<Utc>, n: u32, text: &str, layer: RouteLayer, steps: &[(&str, &str)]) -> Vec<Envelope> {
        let session = SessionId::new("s");
        let turn = TurnId::for_turn(&session, n, at);
        let steps: Vec<PlanStep> =
            steps.iter().map(|(t, a)| PlanStep { tool: (*t).into(), args: ToolArgs::from_json(a).unwrap() }).collect();
        let u = Envelope::at(
            EventId::derive(at, &[b"u", &n.to_be_bytes()]),
            at,
            ActorKind::Listener,
            UtteranceReceived {
                text: text.into(),
                turn_number: n,
                source: UtteranceSource::Chat,
                lang: None,
                model: None,
                sticky_model: None,
            },
        );
        let c = Envelope::at(
            EventId::derive(at, &[b"c", &n.to_be_bytes()]),
            at,
            ActorKind::ReplyLoop,
            TurnCompleted {
                turn_number: n,
                text: text.into(),
                layer,
                model: None,
                steps,
                tools_ok: true,
                planner_ms: 0,
                latency_ms: 0,
                cost_usd: Decimal::ZERO,
                pricing_version: String::new(),
            },
        );
        [u, c].into_iter().map(|e| e.with_session(session.clone()).with_turn(turn)).collect()
    }

    fn reactors(ttl: u32, k_synth: u32) -> Vec<Box<dyn Reactor>> {
        let cfg = MultiToolConfig { ttl_active_days: ttl, k_synth, ..Default::default() };
        vec![
            Box::new(DayReactor::default()),
            Box::new(FastPathReactor::new(
                CanonicalQueries::default(),
                Pipelines::default(),
                &ActiveDays::default(),
                cfg,
                FixedOffset::east_opt(0).unwrap(),
            )),
        ]
    }

    fn kinds(events: &[Envelope]) -> Vec<&'static str> {
        events
            .iter()
            .map(|e| e.kind().name())
            .filter(|k| k.starts_with("pipeline") || k.starts_with("canonical"))
            .collect()
    }

    const DESCRIBE: &[(&str, &str)] =
        &[("get_urls", r#"{"url":"https://a.org"}"#), ("describe_entries", r#"{"entries":"$0"}"#)];

    #[test]
    fn one_step_is_canonical_two_are_a_pipeline_with_placeholders() {
        let mut r = reactors(30, 50);
        let t0 = Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).unwrap();
        let mut events =
            turn(t0, 1, "read ~/notes.md", RouteLayer::Planner, &[("read_file", r#"{"path":"~/notes.md"}"#)]);
        events.extend(turn(t0, 2, "download https://a.org and describe it", RouteLayer::Planner, DESCRIBE));
        events.extend(turn(t0, 3, "what time is it", RouteLayer::L0, &[("get_now", "{}")]));
        let out = derive_all(events, &mut r);
        assert_eq!(kinds(&out), ["canonical.recorded", "pipeline.recorded"]);
        let Event::CanonicalRecorded(c) = &out.iter().find(|e| e.kind().name() == "canonical.recorded").unwrap().event
        else {
            unreachable!()
        };
        assert_eq!((c.canonical.as_str(), c.executor.as_str()), ("read path", "read_file"));
        assert_eq!(c.args_observed, ToolArgs::from_json(r#"{"path":"{path}"}"#).unwrap());
        let Event::PipelineRecorded(p) = &out.iter().find(|e| e.kind().name() == "pipeline.recorded").unwrap().event
        else {
            unreachable!()
        };
        assert_eq!(p.canonical, "download url and describe it");
        assert_eq!(p.steps[0].args, ToolArgs::from_json(r#"{"url":"{url}"}"#).unwrap());
        assert_eq!(p.day_rank, 1);
    }

    #[test]
    fn steps_served_by_l0_and_l1_still_count_toward_a_pipeline() {
        // "what time is it and where am I": both steps were fast-path hits,
        // the turn as a whole is a pipeline that worked — composition.
        let mut r = reactors(30, 50);
        let t0 = Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).unwrap();
        let mut out = Vec::new();
        for n in 0..3 {
            let steps: &[(&str, &str)] = &[("get_now", "{}"), ("get_location", "{}")];
            out.extend(derive_all(turn(t0, n, "what time is it and where am I", RouteLayer::L0, steps), &mut r));
        }
        assert_eq!(kinds(&out), ["pipeline.recorded"; 3]);
        let ids: Vec<&str> = out
            .iter()
            .filter_map(|e| match &e.event {
                Event::PipelineRecorded(p) => Some(p.pipeline_id.as_str()),
                _ => None,
            })
            .collect();
        assert!(ids.windows(2).all(|w| w[0] == w[1]), "three identical passes of one pipeline: {ids:?}");
    }

    #[test]
    fn ttl_counts_active_days_and_promotion_happens_once() {
        let mut r = reactors(30, 3);
        let day = |d: i64| Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap() + Duration::days(d);
        let mut out = Vec::new();
        for n in 0..4u32 {
            out.extend(derive_all(
                turn(day(0), n, "download https://a.org and describe it", RouteLayer::L2, DESCRIBE),
                &mut r,
            ));
        }
        assert_eq!(kinds(&out).iter().filter(|k| **k == "pipeline.promoted").count(), 1, "promoted once, at 3 uses");
        // Two months away: the next active day is rank 2, nothing expires.
        let back = derive_all(turn(day(60), 10, "che ore sono", RouteLayer::L0, &[("get_now", "{}")]), &mut r);
        assert!(!kinds(&back).contains(&"pipeline.expired"));
        // Active days without using it: it expires once 30 have gone by.
        let mut expired_on = None;
        for d in 1..=31 {
            let o = derive_all(
                turn(day(60 + d), 100 + d as u32, "che ore sono", RouteLayer::L0, &[("get_now", "{}")]),
                &mut r,
            );
            if kinds(&o).contains(&"pipeline.expired") {
                expired_on = Some(d);
            }
        }
        assert_eq!(expired_on, Some(30), "last used at rank 1; day 60 + 30 is rank 32 and 32 − 1 > 30");
    }
}
