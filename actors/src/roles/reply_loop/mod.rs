//! The reply loop: runs a turn's steps through the tool registry and
//! delivers the reply.
//!
//! Consumes `fastpath.hit` (a replayed plan) and `plan.created`; emits
//! `tool.called` / `tool.completed` per step, `llm.call_completed` per
//! model turn, then `reply.delivered` and `turn.completed` — one batch, so
//! a turn is in the log whole or not at all. With an LLM, planner turns go
//! on as the agentic loop of seed 002 #1: up to `[reply_loop] max_turns` model
//! turns, each with its timeout, tool results fenced as untrusted data
//! before the model reads them; a model that fails or times out fails open
//! to a reply built from the tool results. Step arguments may name an
//! earlier step's result as `"$0"`, `"$1"`, ….
//!
//! Tools have effects, so after a restart the loop looks for the turn's
//! `reply.delivered` by its derived id before running anything again.
//! A turn cut off by a crash before that batch is appended runs again:
//! tools are called at least once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::llm::is_small_model;
use chrono::{DateTime, FixedOffset, SubsecRound, Utc};
use engram_events::derived;
use engram_events::payloads::*;
use engram_events::{ActorKind, Envelope, Event, EventKind, SessionId, TurnId};
use engram_learning::lang;
use engram_learning::memory::{directives, enrich_by_rule, should_recall};
use engram_learning::reply_composition::{acknowledgement, capped, offline_note, TurnResults};
use rust_decimal::Decimal;

use super::with_prompt_context;
use crate::bus::Bus;
use crate::catalogue::Catalogue;
use crate::llm::{LlmClient, PriceTable};
use crate::recollection::Recollection;
use crate::shell::Role;
use crate::tools::ToolContext;
use engram_learning::memory::dialogue::{Dialogue, DialogueSection};
use engram_learning::memory::profile::Profile;
use engram_learning::memory::Recalled;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

mod model_loop;
mod steps;

/// Most characters of a tool's output kept in `tool.completed`.
pub const OUTPUT_CHARS: usize = 4096;

/// `[reply_loop]`: how long a reply may run and be.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplyLoopSection {
    /// Most model turns of the agentic loop per reply (seed 002 #1: 8).
    pub max_turns: u32,
    /// Most bytes of one reply the log stores (and the host gets): a longer
    /// one — a model's runaway answer, a big file read out — is cut there,
    /// at a character boundary, saying so. The reply is stored once
    /// (`reply.delivered`); what remembers it (the summariser) keeps less.
    pub max_reply_bytes: usize,
}

impl Default for ReplyLoopSection {
    fn default() -> Self {
        ReplyLoopSection { max_turns: 8, max_reply_bytes: 256 * 1024 }
    }
}

/// What the reply loop needs.
#[derive(Clone)]
pub struct ReplySetup {
    /// Tokens recalled memory may take of a prompt (`[memory]`).
    pub memory_budget_tokens: usize,
    /// The tools (they run the calls), their descriptions (for the model)
    /// and the offline planner over them, as they are at each turn.
    pub catalogue: Arc<Catalogue>,
    /// The model server, if any.
    pub llm: Option<Arc<dyn LlmClient>>,
    /// Prices of LLM calls.
    pub prices: Arc<PriceTable>,
    /// Timeout of one model turn (seed 002: 45 s).
    pub chat_timeout: Duration,
    /// All the model turns of one reply together (`[llm]
    /// reply_budget_ms`).
    pub reply_budget: Duration,
    /// Most model turns per reply (`[reply_loop] max_turns`).
    pub agentic_max_turns: u32,
    /// The user's UTC offset.
    pub offset: FixedOffset,
    /// `[tools] location`, for the time and place line of every model
    /// turn (seed 002 #1).
    pub location: Option<String>,
    /// The conversation's window and per-prompt cap (`[dialogue]`).
    pub dialogue: DialogueSection,
    /// What embeds diary entries and requests for recall (the fast path's
    /// embedder and memo); none: keywords alone rank the diary.
    pub embed: Option<(
        Arc<dyn engram_learning::embedder::Embedder>,
        Option<engram_local_state::embedding_cache::EmbeddingCache>,
    )>,
    /// The memory enrichment extractor (seed 002 #3); none: the rule.
    pub enrichment: Option<crate::llm::ContextLlm>,
    /// The digests (seed 002 #4, #5, #6); none: what they would digest
    /// goes in as it is.
    pub digests: Digests,
    /// The step resolver (seed 002 #13), asked for a small turn model's
    /// steps that are not concrete; none (or a large model): the rule.
    pub step_resolver: Option<crate::llm::ContextLlm>,
    /// The tool router, for `search_tools` (seed 002 #8) when the plan's
    /// catalogue was narrowed.
    pub router: Option<crate::tool_router::ToolRouter>,
    /// Most bytes of a reply stored (`[reply_loop] max_reply_bytes`).
    pub max_reply_bytes: usize,
}

/// The digest contexts (seed 002 #4, #5, #6), each failing open to what it
/// digests, and when the first two run.
#[derive(Clone, Default)]
pub struct Digests {
    /// #4: recalled memory condensed for the request.
    pub memory: Option<crate::llm::ContextLlm>,
    /// #5: a long tool result condensed for the request.
    pub tool: Option<crate::llm::ContextLlm>,
    /// #6: the reply when the loop ran out of turns without one.
    pub max_turn: Option<crate::llm::ContextLlm>,
    /// `[llm] memory_digest`; unset: for a small turn model only.
    pub memory_on: Option<bool>,
    /// `[llm] tool_result_digest`; unset: for a small turn model only.
    pub tool_on: Option<bool>,
}

impl Digests {
    /// The memory digest, if it runs for a turn on `model`.
    fn memory_for(&self, model: &str) -> Option<&crate::llm::ContextLlm> {
        self.memory.as_ref().filter(|_| self.memory_on.unwrap_or_else(|| is_small_model(model)))
    }

    /// The tool-result digest, if it runs for a turn on `model`.
    fn tool_for(&self, model: &str) -> Option<&crate::llm::ContextLlm> {
        self.tool.as_ref().filter(|_| self.tool_on.unwrap_or_else(|| is_small_model(model)))
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct OpenTurn {
    number: u32,
    text: String,
    at: DateTime<Utc>,
    planner_ms: u64,
    cost: Decimal,
    pricing_version: Option<String>,
    /// How the planner's model call failed, if it did: the offline planner
    /// planned the turn instead, and the reply says so.
    planner_failed: Option<LlmOutcome>,
}

/// The reply loop's state: the turns under way.
pub struct ReplyLoop {
    setup: ReplySetup,
    turns: HashMap<TurnId, OpenTurn>,
    /// The sessions' recent exchanges, for the model's prompt.
    dialogue: Dialogue,
    /// What earlier sessions taught about the user, for the model's prompt.
    profile: Profile,
    /// The diary, for requests that need past days.
    recollection: Recollection,
}

/// What the model's first turn is told beside the system prompt and the
/// profile.
struct Prompt<'a> {
    /// The request.
    query: &'a str,
    /// The conversation before it, `(role, text)`.
    dialogue: &'a [(String, String)],
    /// The diary block, if the request recalled anything.
    recalled: Option<&'a str>,
    /// The tools the model may call (the router's and the plan's); empty:
    /// every tool.
    offered: &'a [String],
}

/// A turn's output as it is built.
struct Run<'a> {
    cause: &'a Envelope,
    out: Vec<Envelope>,
    /// Each step's result as a model reads it (untrusted output fenced).
    results: Vec<String>,
    /// What the steps did, as the user reads it (what a reply no model
    /// writes is made of).
    done: TurnResults,
    llm_calls: u32,
    cost: Decimal,
    pricing_version: Option<String>,
}

impl<'a> Run<'a> {
    /// A turn's run, caused by `cause`, carrying what the turn cost before
    /// it reached the reply loop (the planner's call).
    fn start(cause: &'a Envelope, open: &OpenTurn, rules: directives::ByRule) -> Run<'a> {
        Run {
            cause,
            out: Vec::new(),
            results: Vec::new(),
            done: TurnResults::new(rules),
            llm_calls: 0,
            cost: open.cost,
            pricing_version: open.pricing_version.clone(),
        }
    }

    /// Takes in one LLM call of the turn: its cost and price table join
    /// the turn's, its `llm.call_completed` joins the turn's batch.
    fn record_call(&mut self, record: LlmCallCompleted) {
        self.cost = self.cost.saturating_add(record.cost_usd);
        self.pricing_version = Some(record.pricing_version.clone());
        self.out.push(derived(self.cause, ActorKind::ReplyLoop, record, self.llm_calls));
        self.llm_calls += 1;
    }
}

impl ReplyLoop {
    /// A reply loop with no turn under way.
    pub fn new(setup: ReplySetup) -> ReplyLoop {
        let dialogue = Dialogue::configured(&setup.dialogue);
        let recollection = Recollection::new(setup.offset, setup.embed.clone(), setup.memory_budget_tokens);
        ReplyLoop { setup, turns: HashMap::new(), dialogue, profile: Profile::default(), recollection }
    }

    fn fold(&mut self, env: &Envelope) {
        self.dialogue.observe(env);
        self.profile.observe(env);
        self.recollection.observe(env);
        let Some(turn) = env.turn else { return };
        match &env.event {
            // Imported turns ran when they happened: never run them again.
            Event::UtteranceReceived(u) if u.source == UtteranceSource::Import => {}
            Event::UtteranceReceived(u) => {
                let open = OpenTurn {
                    number: u.turn_number,
                    text: u.text.clone(),
                    at: env.at,
                    planner_ms: 0,
                    cost: Decimal::ZERO,
                    pricing_version: None,
                    planner_failed: None,
                };
                self.turns.insert(turn, open);
            }
            Event::IntentJudged(i) => {
                if let Some(t) = self.turns.get_mut(&turn) {
                    t.text = i.query.clone();
                }
                if !i.directed || i.stop {
                    self.turns.remove(&turn);
                }
            }
            Event::PlanCreated(p) => {
                if let Some(t) = self.turns.get_mut(&turn) {
                    t.planner_ms = p.planner_ms;
                }
            }
            Event::LlmCallCompleted(c) if env.actor == ActorKind::Planner => {
                if let Some(t) = self.turns.get_mut(&turn) {
                    t.cost = t.cost.saturating_add(c.cost_usd);
                    t.pricing_version = Some(c.pricing_version.clone());
                    if c.context == LlmContext::Planner && c.outcome != LlmOutcome::Ok {
                        t.planner_failed = Some(c.outcome);
                    }
                }
            }
            Event::TurnCompleted(_) => {
                self.turns.remove(&turn);
            }
            _ => {}
        }
    }

    fn run(
        &mut self,
        env: &Envelope,
        layer: RouteLayer,
        steps: &[PlanStep],
        model: Option<String>,
        offered: &[String],
        bus: &Bus,
    ) -> Vec<Envelope> {
        if bus.has_derived(env, EventKind::ReplyDelivered) {
            return Vec::new();
        }
        let Some(open) = env.turn.and_then(|t| self.turns.get(&t)).cloned() else {
            // An imported turn (or one whose utterance is not in the log).
            tracing::debug!(seq = env.seq.0, "reply loop: no live utterance for this turn; nothing to run");
            return Vec::new();
        };
        let session = env.session.clone().unwrap_or_else(|| SessionId::new("unknown"));
        let mut run = Run::start(env, &open, directives::by_rule(&self.profile.directives()));
        // Past days, when the request needs them (seed 002 #3, #3b): the
        // plan asks for `recall`, or planned nothing (fail-open: the model
        // may need memory to answer at all).
        let asks_recall = steps.iter().any(|s| s.tool == crate::tools::memory::RECALL);
        // A tiny model's plan that ran tools is answered with what they
        // returned, as offline (`model_budget`, rule 6).
        let agentic = layer == RouteLayer::Planner
            && model.as_deref().is_some_and(|m| {
                !m.starts_with("offline:") && (steps.is_empty() || engram_learning::model_budget::words_tool_results(m))
            });
        // Offline (not agentic) no model reads the conversation in
        // progress: what was said in it is recalled like any other.
        let recalled = if layer == RouteLayer::Planner && (asks_recall || steps.is_empty()) {
            self.recollect(&mut run, &open.text, asks_recall, !agentic)
        } else {
            Recalled::default()
        };
        let ctx = self.tool_context(session, &open.text, &recalled, asks_recall, run.done.lang(&open.text));
        let served_by = (layer != RouteLayer::Planner).then_some(layer);
        self.run_steps(&mut run, steps, (served_by, agentic), model.as_deref(), &ctx);
        let text = match (&self.setup.llm, agentic) {
            (Some(client), true) => {
                let client = client.clone();
                let dialogue = self.dialogue.before(env);
                let model = model.as_deref().unwrap_or_default();
                // A planned `recall` hands the findings over as its result.
                let memory = if asks_recall { None } else { self.memory_block(&mut run, &open.text, model, &recalled) };
                let prompt = Prompt { query: &open.text, dialogue: &dialogue, recalled: memory.as_deref(), offered };
                self.agentic(&mut run, &client, model, prompt, &ctx)
            }
            // Offline, a request no tool matched may be about what was
            // said (issue 30): answered from memory when a passage
            // resembles it enough; a statement about the user is
            // acknowledged (the memory index keeps it).
            _ if steps.is_empty() && layer == RouteLayer::Planner => self
                .recollection
                .answer_unplanned(&open.text, &recalled, run.done.lang(&open.text))
                .or_else(|| acknowledgement(&open.text, run.done.lang(&open.text)))
                .unwrap_or_else(|| run.done.offline_reply(layer, &open.text, ctx.now)),
            _ => run.done.offline_reply(layer, &open.text, ctx.now),
        };
        let text = match open.planner_failed.filter(|_| !agentic) {
            Some(outcome) => {
                format!("{text}\n{}", offline_note(outcome, run.done.lang(&open.text)))
            }
            None => text,
        };
        let latency_ms = (Utc::now() - open.at).num_milliseconds().max(0) as u64;
        let text = capped(text, self.setup.max_reply_bytes);
        let mut out = run.out;
        out.push(derived(env, ActorKind::ReplyLoop, ReplyDelivered { text, layer, latency_ms }, 0));
        out.push(derived(
            env,
            ActorKind::ReplyLoop,
            TurnCompleted {
                turn_number: open.number,
                text: open.text,
                layer,
                model,
                steps: run.done.steps,
                tools_ok: run.done.tools_ok,
                planner_ms: open.planner_ms,
                latency_ms,
                cost_usd: run.cost,
                pricing_version: run.pricing_version.unwrap_or_else(|| "unknown".into()),
            },
            0,
        ));
        // At the log's precision, so what a role folds from this batch live
        // is what it folds from the log after a restart.
        let now = Utc::now().trunc_subsecs(6);
        for e in &mut out {
            e.at = now;
        }
        out
    }

    /// What the tools of a turn asking `request` may read: the user's facts
    /// and what they said, the one the request asks about first when the
    /// plan calls `recall`.
    fn tool_context(
        &self,
        session: SessionId,
        request: &str,
        recalled: &Recalled,
        asks_recall: bool,
        lang: lang::Lang,
    ) -> ToolContext {
        let (facts, recollection) = match asks_recall {
            true => self.recollection.recall_lines(request, recalled, self.profile.user_facts(), lang),
            false => (self.profile.user_facts(), recalled.lines()),
        };
        ToolContext::new(session, Utc::now().with_timezone(&self.setup.offset))
            .with_memory(facts)
            .with_recollection(recollection)
    }

    /// What `query` recalls from the diary: unless the plan asked for
    /// `recall`, the gate (#3b) skips a follow-up the conversation already
    /// grounds; the enrichment (#3) comes from the model when one is
    /// configured (its call recorded in `run`), else — or when it fails —
    /// from the rule. `offline`: no model reads the conversation in
    /// progress, so what was said in it is recalled too.
    fn recollect(&mut self, run: &mut Run<'_>, query: &str, asked: bool, offline: bool) -> Recalled {
        let env = run.cause;
        let world = self.profile.world_facts();
        // The conversation in progress reaches a model's prompt as itself;
        // offline, nothing else reads it.
        let since = match (&env.session, env.turn, offline) {
            (Some(s), Some(t), false) => self.dialogue.since(s, t, env.at).map(|at| (s, at)),
            _ => None,
        };
        if self.recollection.is_empty(since) && world.is_empty() {
            return Recalled::default();
        }
        if !asked {
            let window = self.dialogue.before(env);
            let texts: Vec<&str> = window.iter().map(|(_, t)| t.as_str()).collect();
            if !should_recall(query, &texts, self.dialogue.fresh_tool_result(env)) {
                return Recalled::default();
            }
        }
        let today = self.recollection.day_of(Utc::now());
        let rule = enrich_by_rule(query, today);
        let enrichment = match &self.setup.enrichment {
            Some(llm) => {
                let (record, parsed) = llm.ask(
                    crate::llm::contexts::enrichment_messages(query, today),
                    crate::llm::contexts::parse_enrichment,
                );
                run.record_call(record);
                parsed.unwrap_or_else(|e| {
                    tracing::warn!(model = %llm.model, "memory enrichment failed open to the rule: {e}");
                    rule
                })
            }
            None => rule,
        };
        self.recollection.recall(query, &enrichment, &world, since)
    }
}

impl Role for ReplyLoop {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![("turns", self.turns.len())];
        out.extend(self.dialogue.sizes());
        out.extend(self.recollection.sizes());
        out
    }

    /// 2: an open turn knows how its planner call failed.
    fn snapshot_version(&self) -> u32 {
        // 3: the recollection holds the memory index's passages; 4: the
        // diary counts the summaries a day let go (MAX_DAY_SUMMARIES); 5:
        // a passage holds the question it answers (memory rule 7); 6: the
        // passages are saved with their follow-up links (rule 8).
        6
    }

    /// The turns under way, the dialogue, the profile, the diary and the
    /// passages.
    fn save(&self, w: &mut SnapshotWriter) {
        w.put_map(&self.turns);
        self.dialogue.save(w);
        self.profile.save(w);
        self.recollection.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.turns = r.take_map()?;
        self.dialogue.restore(r)?;
        self.profile.restore(r)?;
        self.recollection.restore(r)
    }

    fn durable(&self) -> bool {
        true
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        let kinds = vec![
            EventKind::UtteranceReceived,
            EventKind::IntentJudged,
            EventKind::PlanCreated,
            EventKind::LlmCallCompleted,
            EventKind::FastPathHit,
            EventKind::TurnCompleted,
            EventKind::SummaryWritten,
            EventKind::PassagesIndexed,
        ];
        Some(with_prompt_context(kinds))
    }

    fn observe(&mut self, env: &Envelope) {
        self.fold(env);
    }

    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope> {
        let out = match &env.event {
            // A chained hit runs with the planner's plan (prefix first).
            Event::FastPathHit(h) if h.residual.is_none() => self.run(env, h.layer, &h.steps, None, &[], bus),
            Event::PlanCreated(p) => {
                // The plan's planner_ms belongs in the turn it completes.
                self.fold(env);
                self.run(env, RouteLayer::Planner, &p.steps, p.model.clone(), &p.tools, bus)
            }
            _ => Vec::new(),
        };
        self.fold(env);
        out
    }
}

#[cfg(test)]
mod tests {
    use engram_learning::text::truncate;

    #[test]
    fn truncation_keeps_char_boundaries() {
        assert_eq!(truncate("àèìòù", 2), "àè…");
        assert_eq!(truncate("abc", 5), "abc");
    }
}
