//! The planner: a plan for every turn the router sent past the fast path.
//!
//! With an LLM, the task-list planner of seed 002 #12 (at most 5 steps,
//! its own timeout, fail-open to an empty plan: the reply loop then lets
//! the model work without one); without, the [`OfflinePlanner`](engram_learning::offline_planner::OfflinePlanner). Consumes
//! `route.decided` (layer `planner`), emits `plan.created` and, for LLM
//! plans, `llm.call_completed` (first, so the turn's cost includes it).
//!
//! A *chained* request (`fastpath.hit` with a `residual`, just before the
//! route) is planned for what is left: the plan is the replayed prefix's
//! steps, then the planner's for the residual, whose references may name
//! the prefix's results.
//!
//! Planning is not a pure function (a model answers differently twice), so
//! after a restart the planner first looks for the plan it may already have
//! appended, by its derived id, and does not plan the turn again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::FixedOffset;
use engram_events::derived;
use engram_events::payloads::*;
use engram_events::{ActorKind, Envelope, Event, EventKind, SessionId, TurnId};

use super::with_prompt_context;
use crate::bus::Bus;
use crate::catalogue::Catalogue;
use crate::llm::{self, ChatRequest, LlmClient, ModelSpeeds, PriceTable};
use crate::shell::Role;
use crate::tool_router::ToolRouter;
use engram_learning::fast_path::model_away;
use engram_learning::memory::dialogue::{Dialogue, DialogueSection};
use engram_learning::memory::profile::Profile;
use engram_learning::model_budget::{ModelTier, PlanBudget};
use engram_learning::offline_planner::OFFLINE_MODEL;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// What the planner needs.
#[derive(Clone)]
pub struct PlannerSetup {
    /// The model server, if any.
    pub llm: Option<Arc<dyn LlmClient>>,
    /// Prices of LLM calls.
    pub prices: Arc<PriceTable>,
    /// The planner call's timeout (seed 002: 6 s); a model measured slower
    /// gets more (`engram_learning::model_budget`, rule 5).
    pub timeout: Duration,
    /// The most a planner call is given, however slow the model measured.
    pub timeout_max: Duration,
    /// The models' measured speeds in this process (none: every call gets
    /// `timeout`).
    pub speeds: Option<Arc<ModelSpeeds>>,
    /// The tools the plan may use, and the offline planner over them
    /// (always built: it is the fallback too), as they are at each turn.
    pub catalogue: Arc<Catalogue>,
    /// The user's UTC offset.
    pub offset: FixedOffset,
    /// `[tools] location`, for the time and place line of the prompt
    /// (seed 002 #1).
    pub location: Option<String>,
    /// The conversation's window and per-prompt cap (`[dialogue]`).
    pub dialogue: DialogueSection,
    /// Narrows a catalogue too big for the prompt (seed 002 #7).
    pub router: Option<ToolRouter>,
    /// `[llm] planner_enabled`: false leaves planning to the reply loop's
    /// model (an empty plan, no call).
    pub enabled: bool,
}

/// A request shorter than this (characters, trimmed) is not planned by the
/// model (seed 002 #12: "ok", "no" need no plan).
pub const MIN_PLAN_CHARS: usize = 4;

/// The planner's state: each open turn's request.
pub struct Planner {
    setup: PlannerSetup,
    queries: HashMap<TurnId, String>,
    /// Chained turns: the steps the fast path replays first, and the part
    /// of the request left to plan.
    chained: HashMap<TurnId, (Vec<PlanStep>, String)>,
    /// The sessions' recent exchanges, for the prompt.
    dialogue: Dialogue,
    /// What earlier sessions taught about the user, for the prompt.
    profile: Profile,
    /// The tool router's picks per session for the conversation it is in
    /// (seed 002 #7's cache), by normalised request.
    routes: HashMap<SessionId, (u64, HashMap<String, Vec<String>>)>,
    /// Open turns' near misses (`fastpath.missed.near`): the call the
    /// nearest learnt phrasing would make — what the offline planner plans
    /// by `engram_learning::fast_path::model_away`'s rules, so that with the model
    /// away the assistant chooses as the model chose.
    near: HashMap<TurnId, NearMiss>,
}

impl Planner {
    /// A planner with nothing open.
    pub fn new(setup: PlannerSetup) -> Planner {
        let dialogue = Dialogue::configured(&setup.dialogue);
        Planner {
            setup,
            queries: HashMap::new(),
            chained: HashMap::new(),
            dialogue,
            profile: Profile::default(),
            routes: HashMap::new(),
            near: HashMap::new(),
        }
    }

    /// The router's picks for `query` earlier in this conversation, on
    /// the catalogue of `version`. A turn that starts a conversation (the
    /// dialogue's: after a pause longer than its window, a stop, the
    /// session's end) drops the session's, and so does a catalogue that
    /// changed (an MCP server's tools: seed 002 #7).
    fn routed(&mut self, env: &Envelope, query: &str, version: u64) -> Option<Vec<String>> {
        let session = env.session.as_ref()?;
        if !self.dialogue.continues(env) || self.routes.get(session).is_some_and(|(v, _)| *v != version) {
            self.routes.remove(session);
            return None;
        }
        self.routes.get(session)?.1.get(&engram_learning::text::normalize(query)).cloned()
    }

    /// Keeps the router's picks for `query` for the conversation, on the
    /// catalogue of `version`.
    fn remember_route(&mut self, env: &Envelope, query: &str, picks: Vec<String>, version: u64) {
        if let Some(session) = env.session.clone() {
            let (v, routes) = self.routes.entry(session).or_insert_with(|| (version, HashMap::new()));
            if *v != version {
                *v = version;
                routes.clear();
            }
            routes.insert(engram_learning::text::normalize(query), picks);
        }
    }

    fn fold(&mut self, env: &Envelope) {
        self.dialogue.observe(env);
        self.profile.observe(env);
        // An ended session's conversation is over: its picks go (they were
        // kept for every session ever routed).
        if let (Event::SessionEnded(_), Some(session)) = (&env.event, &env.session) {
            self.routes.remove(session);
        }
        let Some(turn) = env.turn else { return };
        match &env.event {
            // Imported turns were planned when they happened.
            Event::IntentJudged(i) if i.judge != JudgeKind::Import => {
                self.queries.insert(turn, i.query.clone());
            }
            Event::FastPathHit(h) => {
                if let Some(rest) = &h.residual {
                    self.chained.insert(turn, (h.steps.clone(), rest.clone()));
                }
            }
            Event::FastPathMissed(m) => {
                if let Some(near) = &m.near {
                    self.near.insert(turn, near.clone());
                }
            }
            Event::PlanCreated(_) | Event::TurnCompleted(_) => {
                self.queries.remove(&turn);
                self.chained.remove(&turn);
                self.near.remove(&turn);
            }
            _ => {}
        }
    }

    fn plan(&mut self, env: &Envelope, route: &RouteDecided, bus: &Bus) -> Vec<Envelope> {
        if bus.has_derived(env, EventKind::PlanCreated) {
            return Vec::new();
        }
        // No live request for this turn (an imported one): nothing to plan.
        let Some(query) = env.turn.and_then(|t| self.queries.get(&t)).cloned() else { return Vec::new() };
        // A chained request: plan what is left after the replayed prefix,
        // which runs first and whose results the plan may use.
        let (done, query) = match env.turn.and_then(|t| self.chained.get(&t)) {
            Some((done, rest)) => (done.clone(), rest.clone()),
            None => (Vec::new(), query),
        };
        let started = Instant::now();
        let mut out = Vec::new();
        let mut allowed: Option<Vec<String>> = None;
        let model = route.chosen_model.clone().unwrap_or_else(|| OFFLINE_MODEL.to_owned());
        let skip = !self.setup.enabled || query.trim().chars().count() < MIN_PLAN_CHARS;
        let (planner, steps) = match self.setup.llm.clone() {
            // Seed 002 #12: disabled, or too short to plan — the empty
            // plan, and the reply loop's model goes on without one.
            Some(_) if model != OFFLINE_MODEL && skip => (PlannerKind::Llm, Vec::new()),
            Some(client) if model != OFFLINE_MODEL => {
                allowed = self.narrowed_tools(env, &query, &model, &mut out);
                let (record, planned) = self.plan_with_model(env, &*client, &model, &query, &done, allowed.as_deref());
                // The model answered, with nothing usable: a malformed
                // answer, or a plan the check refused.
                let (planned, refused) = match planned {
                    Some(steps) => self.checked(env, &model, &query, steps).map_or((None, true), |s| (Some(s), false)),
                    None => (None, false),
                };
                let answered = refused
                    || matches!(&record.event, Event::LlmCallCompleted(c) if c.outcome == LlmOutcome::Malformed);
                out.push(record);
                match planned {
                    Some(steps) => (PlannerKind::Llm, steps),
                    // Fail towards offline: a server that cannot be reached
                    // or a plan that cannot be used costs the turn its
                    // model, not its answer — the offline planner plans it
                    // (the call's record says why; the reply says so).
                    None => {
                        allowed = None;
                        match self.plan_offline(env, &query, done.len()) {
                            // A model that answered, but with no usable
                            // plan, for a request no tool serves ("what is
                            // the capital of France?"): the empty plan, and
                            // the reply loop's model answers it — a small
                            // model that cannot plan can still say "Paris".
                            offline if offline.is_empty() && answered => (PlannerKind::Llm, offline),
                            offline => (PlannerKind::Offline, offline),
                        }
                    }
                }
            }
            _ => (PlannerKind::Offline, self.plan_offline(env, &query, done.len())),
        };
        // The model that actually planned: offline, whatever the route
        // chose (no server to ask), so outcomes are scored against it.
        let model = if planner == PlannerKind::Offline { OFFLINE_MODEL.to_owned() } else { model };
        let steps: Vec<PlanStep> = done.into_iter().chain(steps).collect();
        // What the reply loop's model may call: the routed tools and the
        // plan's (empty: every tool).
        let mut tools = allowed.unwrap_or_default();
        if !tools.is_empty() {
            for s in &steps {
                if !tools.contains(&s.tool) {
                    tools.push(s.tool.clone());
                }
            }
        }
        let plan =
            PlanCreated { planner, model: Some(model), steps, planner_ms: started.elapsed().as_millis() as u64, tools };
        // After the call's record: the reply loop runs the turn when it
        // sees the plan, and must have folded the planner's cost by then.
        out.push(derived(env, ActorKind::Planner, plan, 0));
        out
    }

    /// A catalogue too big for the prompt, or for `model`'s budget: the
    /// tool router's picks (its call recorded in `out`) or the nearest
    /// tools, as many as the budget allows, a tool that just failed kept;
    /// `None`: every tool.
    fn narrowed_tools(
        &mut self,
        env: &Envelope,
        query: &str,
        model: &str,
        out: &mut Vec<Envelope>,
    ) -> Option<Vec<String>> {
        let router = self.setup.router.clone()?;
        let budget = PlanBudget::for_model(model, router.max_tools());
        if !router.narrows_to(budget.tools) {
            return None;
        }
        let version = router.version();
        let picked = match self.routed(env, query, version) {
            Some(cached) => cached,
            // A catalogue the prompt holds, too big for this model alone:
            // the nearest tools, no router call (rule 4c).
            None if !router.narrows() => router.nearest(query, budget.tools),
            None => {
                let (picked, record) = router.pick(query);
                if let Some(record) = record {
                    out.push(derived(env, ActorKind::Planner, record, 1));
                }
                self.remember_route(env, query, picked.clone(), version);
                picked
            }
        };
        Some(router.offered(picked, budget.tools, &self.dialogue.last_failed_tools(env)))
    }

    /// The tools a prompt may list (`[planner] max_tools`).
    fn max_tools(&self) -> usize {
        self.setup.router.as_ref().map_or(usize::MAX, ToolRouter::max_tools)
    }

    /// Asks `model` for the plan of `query` after the replayed prefix
    /// `done`, among the `allowed` tools (`None`: all): the call's record,
    /// and the steps — `None` when there is no usable answer (the server
    /// failed, or the plan broke the contract), which the caller takes to
    /// the offline planner. (Seed 002 #12 fails open to an empty plan; an
    /// empty plan answers "list the files in ~/Notes" worse than the
    /// offline planner does, so engram fails towards offline instead.)
    fn plan_with_model(
        &self,
        env: &Envelope,
        client: &dyn LlmClient,
        model: &str,
        query: &str,
        done: &[PlanStep],
        allowed: Option<&[String]>,
    ) -> (Envelope, Option<Vec<PlanStep>>) {
        let view = self.setup.catalogue.view();
        let budget = PlanBudget::for_model(model, self.max_tools());
        let all = crate::llm::context_llm::llm_specs(&view.tools);
        // The narrowed tools in the router's order, nearest first: a small
        // model leans to the first tool it is shown.
        let specs: Vec<_> = match allowed {
            Some(names) => names.iter().filter_map(|n| all.iter().find(|s| &s.name == n).cloned()).collect(),
            None => all,
        };
        // The conversation so far (seed 002 #1), this turn aside, and what
        // earlier sessions taught — within the model's budget.
        let (profile, dialogue) = engram_learning::model_budget::fit_context(
            budget.context_chars,
            self.profile.render(),
            self.dialogue.before(env),
        );
        let now = env.at.with_timezone(&self.setup.offset);
        let situation = llm::contexts::situation(now, self.setup.location.as_deref());
        let messages = llm::contexts::planner_messages(
            query,
            &specs,
            &dialogue,
            done,
            profile.as_deref(),
            &situation,
            budget.steps,
        );
        let mut request = ChatRequest {
            model: model.to_owned(),
            messages,
            tools: Vec::new(),
            context: LlmContext::Planner,
            timeout: self.setup.timeout,
            // The plan's shape, so a server with structured output keeps
            // even a small model to a plan of these tools and steps.
            answer_schema: Some(llm::structured::plan_schema(&specs, budget.steps)),
            max_tokens: Some(budget.max_tokens()),
            // A plan is rule-following (seed 002 asks 0 of such calls).
            temperature: Some(0.0),
        };
        // As long as this model's measured speed needs for this prompt.
        let speed = self.setup.speeds.as_ref().and_then(|s| s.of(model));
        request.timeout = engram_learning::model_budget::plan_timeout(
            speed.as_ref(),
            crate::llm::speed::prompt_chars(&request),
            &budget,
            self.setup.timeout,
            self.setup.timeout_max,
        );
        tracing::debug!(%model, timeout_ms = request.timeout.as_millis() as u64, tools = specs.len(), "planner call");
        let names: Vec<&str> = view.tools.iter().map(|t| t.0.as_str()).collect();
        let (record, parsed) = crate::llm::context_llm::ask(client, &request, &self.setup.prices, |r| {
            llm::contexts::parse_plan_after(&r.content, &names, done.len())
        });
        // parse_plan keeps at most MAX_PLAN_STEPS (seed 002 #12); a
        // model's budget may allow fewer.
        let steps = parsed
            .map(|mut steps| {
                steps.truncate(budget.steps.max(1));
                steps
            })
            .map_err(
                |e| tracing::warn!(model = %model, "planner model failed ({e}); the offline planner plans the turn"),
            )
            .ok();
        (derived(env, ActorKind::Planner, record, 0), steps)
    }

    /// The model's steps checked against the tools' schemas and `query`
    /// ([`engram_learning::plan_check`]): mended where the request says
    /// what was meant; `None` when a step must not run. A small model's
    /// values must be the request's own, and a call of its with no
    /// arguments a tool the offline planner plans for the request — a
    /// small model's near-miss becomes the right call, never a wrong one.
    fn checked(&self, env: &Envelope, model: &str, query: &str, steps: Vec<PlanStep>) -> Option<Vec<PlanStep>> {
        let view = self.setup.catalogue.view();
        // The offline planner's tools for the request, asked once, when a
        // small model's plan needs them (plan_check rules 8 and 9).
        let mut offline: Option<Vec<String>> = None;
        let mut offline_tools = || {
            offline
                .get_or_insert_with(|| self.plan_offline(env, query, 0).into_iter().map(|s| s.tool).collect())
                .clone()
        };
        let tier = ModelTier::of(model);
        let (tiny, small) = (tier == ModelTier::Tiny, tier.is_small());
        let empty = serde_json::json!({});
        if tiny && steps.is_empty() {
            if let Err(why) = engram_learning::plan_check::empty_plan_stands(&offline_tools()) {
                tracing::warn!(%model, "the model's plan refused: {why}; the offline planner plans the turn");
                return None;
            }
        }
        let mut out = Vec::with_capacity(steps.len());
        for step in steps {
            let schema = view.tools.iter().find(|t| t.0 == step.tool).map_or(&empty, |t| &t.2);
            match engram_learning::plan_check::check_step(&step, schema, query, small) {
                // The same call twice is a small model repeating itself.
                engram_learning::plan_check::Checked::Run(step) if out.contains(&step) => {}
                // Rule 8: the tool itself, beside the offline planner's
                // plan — near the request is not enough once the prompt
                // lists only the nearest tools (measured: "tell me a joke"
                // → `get_now`, whose cosine passed the offline bar, while
                // the offline planner plans nothing).
                engram_learning::plan_check::Checked::Run(step) if small => {
                    match engram_learning::plan_check::offline_agrees(&step, &offline_tools(), tiny) {
                        Ok(()) => out.push(step),
                        Err(why) => {
                            tracing::warn!(%model, "the model's plan refused: {why}; the offline planner plans the turn");
                            return None;
                        }
                    }
                }
                engram_learning::plan_check::Checked::Run(step) => out.push(step),
                engram_learning::plan_check::Checked::Refused(why) => {
                    tracing::warn!(%model, "the model's plan refused: {why}; the offline planner plans the turn");
                    return None;
                }
            }
        }
        Some(out)
    }

    /// The offline planner's plan of `query`, numbered after `done` replayed
    /// steps; a pronoun that hid what a tool would match ("how big is it?")
    /// is resolved from what the conversation last worked on.
    fn plan_offline(&self, env: &Envelope, query: &str, done: usize) -> Vec<PlanStep> {
        let now = chrono::Utc::now().with_timezone(&self.setup.offset);
        let plan = |q: &str| {
            let taught = self.setup.catalogue.taught();
            self.setup.catalogue.view().offline.plan_taught(q, now, &taught).unwrap_or_else(|e| {
                tracing::warn!("offline planner failed open: {e}");
                Vec::new()
            })
        };
        // What the model taught: the nearest learnt phrasing's call, by
        // `model_away`'s rules, when the whole request is left to plan and
        // this catalogue has its tools; the values it passed.
        let view = self.setup.catalogue.view();
        let near =
            env.turn.and_then(|t| self.near.get(&t)).filter(|n| done == 0 && n.steps.iter().all(|s| view.has(&s.tool)));
        let (planned, source) = view.offline.plan_away(query, now, near, &self.setup.catalogue.taught());
        if source == model_away::Source::Learnt {
            tracing::debug!(matched = ?near.map(|n| &n.canonical), "offline planner: as the model taught");
            return planned;
        }
        let mut steps = planned;
        if steps.is_empty() {
            let earlier = self.dialogue.earlier_calls(env);
            if let Some(resolved) = engram_learning::step_resolver::substitute_pronoun(query, &earlier) {
                tracing::debug!(%resolved, "offline planner: the pronoun resolved from the turn before");
                steps = plan(&resolved);
            }
        }
        // Its plan numbers results from $0: after the prefix.
        rebase(&mut steps, done);
        steps
    }
}

/// Shifts a plan's `"$N"` references by `by`: the plan follows `by` steps.
fn rebase(steps: &mut [PlanStep], by: usize) {
    if by == 0 {
        return;
    }
    for s in steps {
        for v in s.args.0.values_mut() {
            if let Some(n) = llm::contexts::step_ref(v) {
                *v = serde_json::Value::String(format!("${}", n + by));
            }
        }
    }
}

impl Role for Planner {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![
            ("queries", self.queries.len()),
            ("chained", self.chained.len()),
            ("routes.sessions", self.routes.len()),
            ("routes", self.routes.values().map(|(_, r)| r.len()).sum()),
            ("near", self.near.len()),
        ];
        out.extend(self.dialogue.sizes());
        out
    }

    fn snapshot_version(&self) -> u32 {
        2 // 2: near misses
    }

    /// The open turns' requests, the chained turns, the dialogue and the
    /// profile. The tool router's picks are a cache of what this process
    /// asked, not state.
    fn save(&self, w: &mut SnapshotWriter) {
        w.put_map(&self.queries);
        w.put_map(&self.chained);
        w.put_map(&self.near);
        self.dialogue.save(w);
        self.profile.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.queries = r.take_map()?;
        self.chained = r.take_map()?;
        self.near = r.take_map()?;
        self.dialogue.restore(r)?;
        self.profile.restore(r)
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        let kinds = vec![
            EventKind::IntentJudged,
            EventKind::FastPathHit,
            EventKind::FastPathMissed,
            EventKind::RouteDecided,
            EventKind::PlanCreated,
            EventKind::TurnCompleted,
        ];
        Some(with_prompt_context(kinds))
    }

    fn observe(&mut self, env: &Envelope) {
        self.fold(env);
    }

    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope> {
        let out = match &env.event {
            Event::RouteDecided(r) if r.layer == RouteLayer::Planner => self.plan(env, r, bus),
            _ => Vec::new(),
        };
        self.fold(env);
        out
    }
}
