//! The fast path's learning (seed 000): what a completed turn teaches L1
//! and L2, what a verdict takes back, when a pipeline expires and when it
//! is promoted — decided here, written as events, folded by
//! `canonical_queries` and `pipelines`.
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
//!
//! # The learning bar
//!
//! Seed 000 replays only what was decided well. A turn teaches when it
//! completes with its tools ok — the heuristic judge's "answered" verdict —
//! and every later verdict on it is weighed (the latest wins, as in the
//! pattern store):
//!
//! 1. A verdict **below the bar** — score < [`REJECT_BELOW`] with confidence
//!    ≥ [`MIN_CONFIDENCE`]: the user's `:bad` or correction, a correction
//!    in the next turn, a low LLM judge score — rejects what the turn taught
//!    *and* what served it (the L1 row `fastpath.hit` matched, the L2
//!    pipelines of its text and tools): `canonical.rejected`,
//!    `pipeline.rejected`. The row serves no more from that moment.
//!    A tool's failure is not such a verdict ([`RUBRIC_TOOL_FAILURE`]): a
//!    missing file says nothing of the route.
//! 2. A rejected row is not learnt again from a turn merely answered: the
//!    turn's lesson is held back, and written only when a verdict **rated
//!    well** arrives — score ≥ [`GOOD_FROM`], confidence ≥
//!    [`MIN_CONFIDENCE`], from the user or an LLM judge (not the heuristic,
//!    whose "answered" says nothing of the answer). Then the row counts its
//!    uses from one again.
//! 3. A turn's lessons are remembered for the last [`RECENT_TURNS`] turns:
//!    a verdict on an older turn changes nothing here (the pattern store
//!    still folds it).
//!
//! Everything is decided from the log's events, so a rebuild or an import
//! agrees: the rejections are events, and the held-back lessons are this
//! reactor's state (its snapshot, or a warm-up over the log).

use chrono::FixedOffset;
use engram_events::payloads::{
    CanonicalCompared, CanonicalRecorded, CanonicalRejected, EvalCompleted, JudgeKind, NearMiss, PipelineExpired,
    PipelinePromoted, PipelineRecorded, PipelineRejected, PlanStep, RouteLayer, ToolArgs,
};
use engram_events::{ActorKind, Envelope, Event, TurnId};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};

use super::verdicts::RUBRIC_TOOL_FAILURE;
use super::Reactor;
use crate::fast_path::MultiToolConfig;
use crate::fast_path::{canonical, pipeline_id, placeholder, steps_agree, with_names_as_words, SlotKind};
use crate::projections::{ActiveDays, CanonicalQueries, Pipelines};
use engram_events::derived;
use engram_local_state::projector::Projection;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// A verdict scoring below this (confident enough) rejects what served or
/// taught its turn. The heuristic "answered" is 0.75, a `:bad` 0.0, a
/// correction 0.1: the bar sits between what the judge calls a failure
/// and what it calls an answer.
pub const REJECT_BELOW: f64 = 0.5;
/// A verdict scoring at least this, from the user or an LLM judge, teaches
/// a rejected row again (`:good` is 1.0).
pub const GOOD_FROM: f64 = 0.7;
/// A verdict less confident than this changes nothing here.
pub const MIN_CONFIDENCE: f64 = 0.6;
/// How many recent turns' lessons are remembered for later verdicts.
pub const RECENT_TURNS: usize = 256;

/// A row a turn was served by or taught.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Target {
    /// An L1 row.
    Canonical { canonical: String, executor: String },
    /// An L2 pipeline.
    Pipeline(String),
}

/// What a turn teaches: the event that records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Lesson {
    Canonical(CanonicalRecorded),
    Pipeline(PipelineRecorded),
}

impl Lesson {
    fn target(&self) -> Target {
        match self {
            Lesson::Canonical(c) => Target::Canonical { canonical: c.canonical.clone(), executor: c.executor.clone() },
            Lesson::Pipeline(p) => Target::Pipeline(p.pipeline_id.clone()),
        }
    }
}

/// One recent turn: what served it (and at what cosine), what it teaches.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct TurnLessons {
    served: Vec<Target>,
    similarity: Option<f64>,
    taught: Vec<Lesson>,
    /// The call the nearest learnt phrasing would have made, when the
    /// planner answered (`fastpath.missed`): compared with the model's.
    near: Option<NearMiss>,
    /// What `taught` is worked out from, while it is not yet: see
    /// [`Unlearnt`]. Never in a snapshot (saving works it out).
    #[serde(skip)]
    unlearnt: Option<Box<Unlearnt>>,
}

/// A completed turn whose lessons are not worked out yet. A fold of the
/// log (a warm-up, the snapshots an import prepares) observes every turn
/// but keeps the lessons of the last [`RECENT_TURNS`] only, and working
/// them out — the canonical text, the templated steps — was most of that
/// fold's work (measured, a year-long import: 0.6 s of the snapshot fold's
/// 1.75 s of CPU). So observing a turn keeps what they are made from, and
/// they are worked out when something reads them: a reaction to the turn,
/// a verdict on it, a snapshot.
#[derive(Clone, Debug)]
struct Unlearnt {
    at: chrono::DateTime<chrono::Utc>,
    text: String,
    layer: RouteLayer,
    steps: Vec<PlanStep>,
    /// The turn's chained prefix (canonical text, steps replayed), if L2
    /// replayed one.
    chained: Option<(String, usize)>,
    /// The active-day rank when the turn completed.
    day_rank: u32,
}

/// Derives `canonical.recorded`, `pipeline.recorded/.expired/.promoted`,
/// `canonical.rejected` and `pipeline.rejected`.
pub struct FastPathReactor {
    canonical: CanonicalQueries,
    pipelines: Pipelines,
    day_rank: u32,
    config: MultiToolConfig,
    offset: FixedOffset,
    /// Chained turns under way: the replayed prefix's canonical text and
    /// step count, learnt alone when the turn completes.
    chained: HashMap<TurnId, (String, usize)>,
    /// The last [`RECENT_TURNS`] turns' lessons, oldest first.
    recent: VecDeque<(TurnId, TurnLessons)>,
    /// The turns in `recent`: a turn not among them (each new turn) is
    /// known absent without a scan of all of them.
    recent_turns: HashSet<TurnId>,
    /// The highest cosine of a paraphrase replay (not an exact repeat) a
    /// verdict rejected: the log's own outcome, which raises the fast
    /// path's bar ([`crate::fast_path::FastPath::raise_bar`]).
    rejected_replay: Option<f64>,
}

impl FastPathReactor {
    /// A reactor starting from the projections' state; `offset` is the
    /// user's UTC offset (relative dates in requests are local).
    pub fn new(
        mut canonical: CanonicalQueries,
        mut pipelines: Pipelines,
        days: &ActiveDays,
        config: MultiToolConfig,
        offset: FixedOffset,
    ) -> Self {
        // Held in memory only: which rows changed is never written anywhere.
        canonical.stop_tracking();
        pipelines.stop_tracking();
        FastPathReactor {
            canonical,
            pipelines,
            day_rank: days.current_rank(),
            config,
            offset,
            chained: HashMap::new(),
            recent: VecDeque::new(),
            recent_turns: HashSet::new(),
            rejected_replay: None,
        }
    }

    /// The L1 rows the reactor decides from.
    pub fn canonical_queries(&self) -> &CanonicalQueries {
        &self.canonical
    }

    /// The L2 rows the reactor decides from.
    pub fn pipelines(&self) -> &Pipelines {
        &self.pipelines
    }

    /// The highest cosine of a paraphrase replay a verdict rejected, if
    /// any: what the fast path's bar rises above.
    pub fn rejected_replay(&self) -> Option<f64> {
        self.rejected_replay
    }

    /// Notes a rejection's turn: when a paraphrase replay served it, its
    /// cosine is a bar this user showed unsafe.
    fn note_rejected(&mut self, turn: TurnId) {
        let sim = self.recent_lessons(turn).and_then(|l| l.similarity);
        if let Some(sim) = sim.filter(|s| *s < 1.0 - 1e-9) {
            self.rejected_replay = Some(self.rejected_replay.map_or(sim, |r| r.max(sim)));
        }
    }

    /// Where `turn` is in `recent`, if it is.
    fn position(&self, turn: TurnId) -> Option<usize> {
        if !self.recent_turns.contains(&turn) {
            return None;
        }
        self.recent.iter().rposition(|(t, _)| *t == turn)
    }

    /// The lessons of `turn`, if it is among the recent turns.
    fn recent_lessons(&self, turn: TurnId) -> Option<&TurnLessons> {
        self.position(turn).map(|i| &self.recent[i].1)
    }

    fn lessons_of(&mut self, turn: TurnId) -> &mut TurnLessons {
        if let Some(i) = self.position(turn) {
            return &mut self.recent[i].1;
        }
        if self.recent.len() == RECENT_TURNS {
            if let Some((gone, _)) = self.recent.pop_front() {
                self.recent_turns.remove(&gone);
            }
        }
        self.recent.push_back((turn, TurnLessons::default()));
        self.recent_turns.insert(turn);
        &mut self.recent.back_mut().expect("just pushed").1
    }

    /// Works out the lessons of `turn` if they are not yet ([`Unlearnt`]).
    fn work_out(&mut self, turn: TurnId) {
        let Some(i) = self.position(turn) else { return };
        if let Some(u) = self.recent[i].1.unlearnt.take() {
            self.recent[i].1.taught = self.lessons(&u);
        }
    }

    /// What a completed turn teaches (before the bar: see [`Self::teach`]).
    fn lessons(&self, u: &Unlearnt) -> Vec<Lesson> {
        let Unlearnt { at, text, layer, steps, chained, day_rank } = u;
        let (layer, steps) = (*layer, steps.as_slice());
        let (mut canon, mut ex) = canonical(text, at.with_timezone(&self.offset));
        let mut all = templated(steps, &ex);
        // A proper noun the steps do not take stays a word of the row's
        // text: the row then serves that request again, never another name.
        if !placeholder::takes_every(all.iter().map(|s| &s.args), &ex, SlotKind::ProperName) {
            (canon, ex) = with_names_as_words(&ex);
            all = templated(steps, &ex);
        }
        if let Some((prefix, n)) = chained {
            // A chained turn: only the replayed prefix — `prefix` (its
            // canonical text, as matched) run as the first `n` steps — is a
            // use of its pipeline.
            // (A step's template is its own: the prefix's are the first
            // `n` of the whole turn's.)
            all.truncate(*n);
            if all.len() < 2 {
                return Vec::new();
            }
            return vec![pipeline_lesson(prefix.clone(), all, *day_rank)];
        }
        if canon.is_empty() {
            return Vec::new();
        }
        let templated = all;
        if templated.len() == 1 && matches!(layer, RouteLayer::Planner | RouteLayer::L1) {
            let step = &templated[0];
            // The values the model passed that the user said are slots of
            // the phrasing (`fast_path::slots`).
            let s = crate::fast_path::slots::slot_values(&canon, &step.args);
            let slots = ToolArgs(
                s.said
                    .into_iter()
                    .map(|x| {
                        let slot = serde_json::json!({"said": x.said, "value": x.value, "after_determiner": x.after_determiner});
                        (x.name, slot)
                    })
                    .collect(),
            );
            vec![Lesson::Canonical(CanonicalRecorded {
                canonical: s.canonical,
                executor: step.tool.clone(),
                args_observed: s.args,
                slots,
            })]
        } else if templated.len() >= 2 {
            vec![pipeline_lesson(canon, templated, *day_rank)]
        } else {
            Vec::new()
        }
    }

    /// Is there a row for `target` (an imported hit names the request it
    /// answered, not a row)?
    fn is_known(&self, target: &Target) -> bool {
        match target {
            Target::Canonical { canonical, executor } => self.canonical.get(canonical, executor).is_some(),
            Target::Pipeline(id) => self.pipelines.get(id).is_some(),
        }
    }

    fn is_rejected(&self, target: &Target) -> bool {
        match target {
            Target::Canonical { canonical, executor } => self.canonical.is_rejected(canonical, executor),
            Target::Pipeline(id) => self.pipelines.is_rejected(id),
        }
    }

    /// The events that record `lessons`, caused by `env` (ordinals from
    /// `first`): a pipeline's use, and its promotion the first time its uses
    /// reach `k_synth`.
    fn teach(&self, env: &Envelope, lessons: Vec<Lesson>, first: u32) -> Vec<Envelope> {
        let mut out = Vec::new();
        let mut ordinal = first;
        let mut next = || {
            ordinal += 1;
            ordinal - 1
        };
        for lesson in lessons {
            match lesson {
                Lesson::Canonical(c) => out.push(derived(env, ActorKind::Router, c, next())),
                Lesson::Pipeline(mut p) => {
                    p.day_rank = self.day_rank;
                    let row = self.pipelines.get(&p.pipeline_id);
                    let uses = row.filter(|r| !r.rejected).map_or(0, |r| r.uses) + 1;
                    let promoted = row.is_some_and(|r| r.promoted);
                    let id = p.pipeline_id.clone();
                    out.push(derived(env, ActorKind::Router, p, next()));
                    if uses >= self.config.k_synth && !promoted {
                        out.push(derived(env, ActorKind::Router, PipelinePromoted { pipeline_id: id, uses }, next()));
                    }
                }
            }
        }
        out
    }

    /// A verdict on a recent turn: below the bar it rejects what served and
    /// taught the turn; rated well it teaches the turn's held-back lessons.
    fn on_verdict(&self, env: &Envelope, v: &EvalCompleted) -> Vec<Envelope> {
        if v.confidence < MIN_CONFIDENCE {
            return Vec::new();
        }
        let Some(lessons) = self.recent_lessons(v.subject_turn) else {
            return Vec::new();
        };
        if v.score < REJECT_BELOW {
            if v.rubric.as_deref() == Some(RUBRIC_TOOL_FAILURE) {
                return Vec::new();
            }
            let mut targets: Vec<(Target, ToolArgs)> =
                lessons.served.iter().map(|t| (t.clone(), ToolArgs::default())).collect();
            for l in &lessons.taught {
                let t = l.target();
                // What the turn taught the row's vocabulary is taken back.
                let slots = match l {
                    Lesson::Canonical(c) => c.slots.clone(),
                    Lesson::Pipeline(_) => ToolArgs::default(),
                };
                match targets.iter_mut().find(|(x, _)| *x == t) {
                    Some((_, s)) => *s = slots,
                    None => targets.push((t, slots)),
                }
            }
            return targets
                .into_iter()
                .filter(|(t, _)| self.is_known(t) && !self.is_rejected(t))
                .enumerate()
                .map(|(i, (t, slots))| {
                    let (subject_turn, eval_id, score) = (v.subject_turn, v.eval_id, v.score);
                    match t {
                        Target::Canonical { canonical, executor } => derived(
                            env,
                            ActorKind::Router,
                            CanonicalRejected { canonical, executor, subject_turn, eval_id, score, slots },
                            i as u32,
                        ),
                        Target::Pipeline(pipeline_id) => derived(
                            env,
                            ActorKind::Router,
                            PipelineRejected { pipeline_id, subject_turn, eval_id, score },
                            i as u32,
                        ),
                    }
                })
                .collect();
        }
        let rated_well = v.score >= GOOD_FROM && !matches!(v.judge, JudgeKind::Heuristic | JudgeKind::Rule);
        if !rated_well {
            return Vec::new();
        }
        let held: Vec<Lesson> = lessons.taught.iter().filter(|l| self.is_rejected(&l.target())).cloned().collect();
        self.teach(env, held, 0)
    }

    /// `canonical.compared` for a turn a model planned whose request was
    /// near a learnt phrasing: did the model make the phrasing's call? The
    /// evidence each action's bar is learnt from. Only a model's answer is
    /// evidence: the offline planner agreeing with what it learnt from the
    /// fast path's own rows would prove nothing.
    fn compare(&self, env: &Envelope, turn: TurnId) -> Vec<Envelope> {
        let Event::TurnCompleted(t) = &env.event else { return Vec::new() };
        let by_model = t.model.as_deref().is_some_and(|m| m != crate::offline_planner::OFFLINE_MODEL);
        if t.layer != RouteLayer::Planner || !t.tools_ok || !by_model {
            return Vec::new();
        }
        let Some(near) = self.recent_lessons(turn).and_then(|l| l.near.clone()) else { return Vec::new() };
        let Some(first) = near.steps.first() else { return Vec::new() };
        let executor = first.tool.clone();
        // A guess with a slot left unfilled (`FastPath::taught_guess`) says
        // nothing of the phrasing's bar: only a full call is compared.
        let full = self
            .canonical
            .get(&near.canonical, &executor)
            .is_some_and(|r| r.action() == crate::projections::canonical_queries::action_key(&executor, &first.args));
        if !full {
            return Vec::new();
        }
        let agreed = steps_agree(&near.steps, &t.steps);
        let event = CanonicalCompared {
            canonical: near.canonical,
            executor,
            similarity: near.similarity,
            agreed,
            subject_turn: turn,
        };
        vec![derived(env, ActorKind::Router, event, 100)]
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

    /// The rows a fast-path hit replayed: the L1 row it matched, or the L2
    /// pipelines of its text with its tools.
    fn served_by(&self, layer: RouteLayer, matched: &str, steps: &[PlanStep]) -> Vec<Target> {
        match layer {
            RouteLayer::L1 => steps
                .first()
                .map(|s| Target::Canonical { canonical: matched.to_owned(), executor: s.tool.clone() })
                .into_iter()
                .collect(),
            RouteLayer::L2 => self
                .pipelines
                .iter()
                .filter(|p| {
                    p.canonical == matched
                        && p.steps.len() == steps.len()
                        && p.steps.iter().zip(steps).all(|(a, b)| a.tool == b.tool)
                })
                .map(|p| Target::Pipeline(p.pipeline_id.clone()))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// A pipeline's use, at the active-day rank `day_rank`.
fn pipeline_lesson(canonical: String, steps: Vec<PlanStep>, day_rank: u32) -> Lesson {
    let pipeline_id = pipeline_id(&canonical, &steps);
    Lesson::Pipeline(PipelineRecorded { pipeline_id, canonical, steps, day_rank })
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

    fn sizes(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("canonical_rows", self.canonical.len()),
            ("pipeline_rows", self.pipelines.len()),
            ("canonical_rows.bytes", self.canonical.heap_bytes()),
            ("pipeline_rows.bytes", self.pipelines.heap_bytes()),
            ("projection_dirty", self.canonical.dirty_len() + self.pipelines.dirty_len()),
            ("chained", self.chained.len()),
            ("recent_lessons", self.recent.len()),
        ]
    }

    fn observe(&mut self, env: &Envelope) {
        match &env.event {
            Event::DayActivated(d) => self.day_rank = self.day_rank.max(d.rank),
            Event::FastPathHit(h) => {
                if let Some(turn) = env.turn {
                    let served = self.served_by(h.layer, &h.matched, &h.steps);
                    let lessons = self.lessons_of(turn);
                    lessons.served = served;
                    lessons.similarity = h.similarity;
                    if h.residual.is_some() {
                        self.chained.insert(turn, (h.matched.clone(), h.steps.len()));
                    }
                }
            }
            Event::FastPathMissed(m) => {
                if let (Some(turn), Some(near)) = (env.turn, &m.near) {
                    self.lessons_of(turn).near = Some(near.clone());
                }
            }
            Event::TurnCompleted(t) => {
                if let Some(turn) = env.turn {
                    let chained = self.chained.remove(&turn);
                    let unlearnt = (t.tools_ok && !t.steps.is_empty()).then(|| {
                        let (text, steps) = (t.text.clone(), t.steps.clone());
                        Box::new(Unlearnt { at: env.at, text, layer: t.layer, steps, chained, day_rank: self.day_rank })
                    });
                    let lessons = self.lessons_of(turn);
                    lessons.taught = Vec::new();
                    lessons.unlearnt = unlearnt;
                }
            }
            // The reactor's projections track no changes (see `new`).
            Event::CanonicalRecorded(_) | Event::CanonicalCompared(_) => self.canonical.apply(env),
            Event::CanonicalRejected(c) => {
                self.note_rejected(c.subject_turn);
                self.canonical.apply(env);
            }
            Event::PipelineRejected(p) => {
                self.note_rejected(p.subject_turn);
                self.pipelines.apply(env);
            }
            Event::PipelineRecorded(_) | Event::PipelineExpired(_) | Event::PipelinePromoted(_) => {
                self.pipelines.apply(env);
            }
            _ => {}
        }
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        match &env.event {
            Event::TurnCompleted(_) => {
                self.observe(env);
                // What the turn teaches, except what a verdict rejected: that
                // waits for a verdict rated well (the learning bar, rule 2).
                let Some(turn) = env.turn else { return Vec::new() };
                self.work_out(turn);
                let Some(lessons) = self.recent_lessons(turn) else {
                    return Vec::new();
                };
                let now: Vec<Lesson> =
                    lessons.taught.iter().filter(|l| !self.is_rejected(&l.target())).cloned().collect();
                let compared = self.compare(env, turn);
                let mut out = self.teach(env, now, 0);
                out.extend(compared);
                out
            }
            Event::EvalCompleted(v) => {
                self.work_out(v.subject_turn);
                let out = self.on_verdict(env, v);
                self.observe(env);
                out
            }
            Event::DayActivated(d) => {
                let out = self.on_day(env, d.rank);
                self.observe(env);
                out
            }
            _ => {
                self.observe(env);
                Vec::new()
            }
        }
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
/// rank, the chained turns under way and the recent turns' lessons. The configuration is the
/// runtime's, not the state's: the fold does not depend on it.
impl Snapshot for FastPathReactor {
    fn save(&self, w: &mut SnapshotWriter) {
        self.canonical.save(w);
        self.pipelines.save(w);
        w.put(&self.day_rank);
        w.put_map(&self.chained);
        // Lessons not worked out yet are, in the copy saved (a restore
        // finds them as an eager fold would have left them).
        if self.recent.iter().any(|(_, l)| l.unlearnt.is_some()) {
            let mut recent = self.recent.clone();
            for (_, l) in &mut recent {
                if let Some(u) = l.unlearnt.take() {
                    l.taught = self.lessons(&u);
                }
            }
            w.put(&recent);
        } else {
            w.put(&self.recent);
        }
        w.put(&self.rejected_replay);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.canonical.restore(r)?;
        self.pipelines.restore(r)?;
        self.day_rank = r.take()?;
        self.chained = r.take_map()?;
        self.recent = r.take()?;
        self.recent_turns = self.recent.iter().map(|(t, _)| *t).collect();
        self.rejected_replay = r.take()?;
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
    use engram_local_state::snapshot::{SnapshotReader, SnapshotWriter};
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

    fn verdict(
        at: DateTime<Utc>,
        n: u32,
        subject: &[Envelope],
        score: f64,
        judge: JudgeKind,
        rubric: &str,
    ) -> Envelope {
        let subject_turn = subject[0].turn.unwrap();
        let event = EvalCompleted {
            eval_id: engram_events::EvalId::derive(at, &[b"v", &n.to_be_bytes()]),
            subject_turn,
            score,
            confidence: 0.9,
            judge,
            rubric: Some(rubric.into()),
            judge_pricing_version: None,
        };
        Envelope::at(EventId::derive(at, &[b"v", &n.to_be_bytes()]), at, ActorKind::Judge, event)
            .with_session(SessionId::new("s"))
            .with_turn(subject_turn)
    }

    fn hit(
        at: DateTime<Utc>,
        subject: &[Envelope],
        layer: RouteLayer,
        matched: &str,
        steps: &[(&str, &str)],
    ) -> Envelope {
        let steps: Vec<PlanStep> =
            steps.iter().map(|(t, a)| PlanStep { tool: (*t).into(), args: ToolArgs::from_json(a).unwrap() }).collect();
        let event = engram_events::payloads::FastPathHit {
            layer,
            matched: matched.into(),
            similarity: Some(0.95),
            steps,
            residual: None,
        };
        Envelope::at(EventId::derive(at, &[b"h"]), at, ActorKind::Router, event)
            .with_session(SessionId::new("s"))
            .with_turn(subject[0].turn.unwrap())
    }

    /// One fast-path reactor alone (no day reactor): each event reacted to,
    /// and what it derives in turn, as `derive_all` does.
    fn feed(fp: &mut FastPathReactor, events: Vec<Envelope>) -> Vec<Envelope> {
        let mut out = Vec::new();
        let mut stack: Vec<Envelope> = events.into_iter().rev().collect();
        while let Some(env) = stack.pop() {
            let caused = fp.react(&env);
            out.push(env);
            stack.extend(caused.into_iter().rev());
        }
        out
    }

    fn reactor() -> FastPathReactor {
        let cfg = MultiToolConfig { ttl_active_days: 30, k_synth: 50, ..Default::default() };
        let utc = FixedOffset::east_opt(0).unwrap();
        FastPathReactor::new(CanonicalQueries::default(), Pipelines::default(), &ActiveDays::default(), cfg, utc)
    }

    #[test]
    fn a_verdict_below_the_bar_rejects_and_only_a_good_one_teaches_again() {
        let mut r = reactor();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).unwrap();
        let read =
            |n| turn(t0, n, "read ~/notes.md", RouteLayer::Planner, &[("read_file", r#"{"path":"~/notes.md"}"#)]);
        let first = read(1);
        let mut out = feed(&mut r, first.clone());
        assert_eq!(kinds(&out), ["canonical.recorded"]);
        // A tool failure is not a verdict on the route.
        out = feed(&mut r, vec![verdict(t0, 1, &first, 0.15, JudgeKind::Heuristic, RUBRIC_TOOL_FAILURE)]);
        assert!(kinds(&out).is_empty());
        assert!(!r.canonical_queries().is_rejected("read path", "read_file"));
        // The user's :bad: rejected, uses back to 0.
        out = feed(&mut r, vec![verdict(t0, 2, &first, 0.0, JudgeKind::Feedback, "feedback/negative")]);
        assert_eq!(kinds(&out), ["canonical.rejected"]);
        let row = r.canonical_queries().get("read path", "read_file").unwrap();
        assert_eq!((row.uses, row.rejected), (0, true));
        // Answered again, merely: held back, whatever the heuristic says.
        let again = read(2);
        out = feed(&mut r, again.clone());
        assert!(kinds(&out).is_empty(), "{:?}", kinds(&out));
        out = feed(&mut r, vec![verdict(t0, 3, &again, 0.75, JudgeKind::Heuristic, "heuristic/answered")]);
        assert!(kinds(&out).is_empty());
        // Rated well by the user: learnt again, from one use.
        out = feed(&mut r, vec![verdict(t0, 4, &again, 1.0, JudgeKind::Feedback, "feedback/positive")]);
        assert_eq!(kinds(&out), ["canonical.recorded"]);
        let row = r.canonical_queries().get("read path", "read_file").unwrap();
        assert_eq!((row.uses, row.rejected), (1, false));
    }

    #[test]
    fn a_bad_replay_rejects_the_row_that_served_it() {
        let mut r = reactor();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).unwrap();
        for n in 0..3 {
            feed(&mut r, turn(t0, n, "download https://a.org and describe it", RouteLayer::Planner, DESCRIBE));
        }
        let id = r.pipelines().iter().next().unwrap().pipeline_id.clone();
        // L2 replays it for a paraphrase; the user corrects it.
        let replay = turn(t0, 9, "fetch https://b.org and describe it", RouteLayer::L2, DESCRIBE);
        let h = hit(t0, &replay, RouteLayer::L2, "download url and describe it", DESCRIBE);
        feed(&mut r, vec![replay[0].clone(), h, replay[1].clone()]);
        assert_eq!(r.pipelines().len(), 2, "the paraphrase taught a pipeline of its own");
        let out = feed(&mut r, vec![verdict(t0, 1, &replay, 0.1, JudgeKind::Feedback, "feedback/correction")]);
        assert_eq!(kinds(&out), ["pipeline.rejected", "pipeline.rejected"], "the row served and the row taught");
        assert!(r.pipelines().is_rejected(&id));
        assert_eq!(r.pipelines().candidates(1).count(), 0);
    }

    #[test]
    fn a_rejected_paraphrase_replay_is_remembered_by_its_cosine() {
        let mut r = reactor();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).unwrap();
        for n in 0..3 {
            feed(&mut r, turn(t0, n, "read ~/notes.md", RouteLayer::Planner, &[("read_file", r#"{"path":"~/x"}"#)]));
        }
        // L1 replays "read path" for a paraphrase at 0.9; the user says :bad.
        let replay = turn(t0, 9, "read ~/notes.md please", RouteLayer::L1, &[("read_file", r#"{"path":"~/x"}"#)]);
        let mut h = hit(t0, &replay, RouteLayer::L1, "read path", &[("read_file", r#"{"path":"~/x"}"#)]);
        if let Event::FastPathHit(hit) = &mut h.event {
            hit.similarity = Some(0.9);
        }
        feed(&mut r, vec![replay[0].clone(), h, replay[1].clone()]);
        assert_eq!(r.rejected_replay(), None);
        feed(&mut r, vec![verdict(t0, 1, &replay, 0.0, JudgeKind::Feedback, "feedback/negative")]);
        assert_eq!(r.rejected_replay(), Some(0.9));
    }

    #[test]
    fn lessons_survive_a_snapshot() {
        let mut r = reactor();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).unwrap();
        let first = turn(t0, 1, "read ~/notes.md", RouteLayer::Planner, &[("read_file", r#"{"path":"~/x"}"#)]);
        feed(&mut r, first.clone());
        let mut w = SnapshotWriter::new();
        r.save(&mut w);
        let bytes = w.finish().unwrap();
        let mut restored = reactor();
        restored.restore(&mut SnapshotReader::new(&bytes)).unwrap();
        let out = feed(&mut restored, vec![verdict(t0, 2, &first, 0.0, JudgeKind::Feedback, "feedback/negative")]);
        assert_eq!(kinds(&out), ["canonical.rejected"]);
    }
}
