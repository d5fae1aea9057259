//! One module per actor role (DESIGN's table). Each role is a thin shell
//! over pure logic in `engram-learning` where that logic exists (reactors,
//! the fast path, the pattern store): the same code `engram import` runs.
//!
//! | role | consumes | emits |
//! |---|---|---|
//! | [`listener`] | the host's utterances, feedback, session ends; `reply.delivered` (hot window) | `utterance.received`, `intent.judged` (+ `llm.call_completed` with the LLM intent judge), `day.activated`, `feedback.received`, `session.ended` |
//! | [`router`] | `intent.judged`; `turn.completed` | `route.decided`, `fastpath.hit/missed`, `pattern.matched`; `canonical.recorded`, `pipeline.*` |
//! | [`planner`] | `route.decided` (planner layer) | `plan.created`, `llm.call_completed` |
//! | [`reply_loop`] | `fastpath.hit`, `plan.created` | `tool.called/completed`, `llm.call_completed`, `reply.delivered`, `turn.completed` |
//! | [`judge`] | `turn.completed`, `feedback.received` | `eval.completed` (heuristic, feedback and, when enabled, LLM), `llm.call_completed` |
//! | [`summariser`] | `session.ended` | `summary.written` (LLM, else extractive), `llm.call_completed` |
//! | [`graph`] | `summary.written` | `graph.fact_added/node_merged` (LLM facts, else rule facts), `llm.call_completed` |
//! | pattern store | see [`ReactorRole`] | `pattern.recorded/evicted` |
//!
//! Every LLM call fails open to the offline logic (seed 002): a failed or
//! unparseable answer costs the turn nothing but the call's record.

pub mod dialogue;
pub mod graph;
pub mod judge;
pub mod listener;
pub mod planner;
pub mod profile;
pub mod recollection;
pub mod reply_loop;
pub mod router;
pub mod step_resolver;
pub mod summariser;
pub mod tool_router;

use std::sync::Arc;
use std::time::{Duration, Instant};

use engram_events::payloads::{LlmCallCompleted, LlmContext, LlmOutcome};
use engram_events::{Envelope, EventKind};
use engram_learning::config::LlmSection;
use engram_learning::reactors::Reactor;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

use crate::bus::Bus;
use crate::llm::{self, ChatMessage, ChatRequest, ChatResponse, LlmClient, PriceTable, ToolSpec};
use crate::offline_planner::ToolDescription;
use crate::shell::Role;

/// `kinds` and what a role that prompts a model folds for the prompt's
/// context (the conversation, the warm profile), each once.
fn with_prompt_context(mut kinds: Vec<EventKind>) -> Vec<EventKind> {
    for k in dialogue::DIALOGUE_KINDS.iter().chain(profile::PROFILE_KINDS) {
        if !kinds.contains(k) {
            kinds.push(*k);
        }
    }
    kinds
}

/// A model server set up for one LLM context: which model, under which
/// timeout, priced how.
#[derive(Clone)]
pub struct ContextLlm {
    /// The server.
    pub client: Arc<dyn LlmClient>,
    /// The context the calls serve (recorded in `llm.call_completed`).
    pub context: LlmContext,
    /// The model (`[llm]`'s `model_for(context)`).
    pub model: String,
    /// The context's timeout (`[llm]`'s `timeout(context)`).
    pub timeout: Duration,
    /// Prices of calls.
    pub prices: Arc<PriceTable>,
}

impl ContextLlm {
    /// `client` for `context` as `[llm]` configures it.
    pub fn new(client: Arc<dyn LlmClient>, section: &LlmSection, context: LlmContext, prices: Arc<PriceTable>) -> Self {
        ContextLlm {
            client,
            context,
            model: section.model_for(context).to_owned(),
            timeout: section.timeout(context),
            prices,
        }
    }

    /// One call with `messages` (no tools), its answer checked by `parse`.
    /// Returns the call's record and the parsed value or why there is none.
    /// An answer that breaks the context's contract is recorded as
    /// `malformed` with its tokens and cost: the call was paid for.
    pub(crate) fn ask<T, E: std::fmt::Display>(
        &self,
        messages: Vec<ChatMessage>,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> (LlmCallCompleted, Result<T, String>) {
        let request = ChatRequest {
            model: self.model.clone(),
            messages,
            tools: Vec::new(),
            context: self.context,
            timeout: self.timeout,
        };
        ask(&*self.client, &request, &self.prices, |r| parse(&r.content))
    }
}

/// Sends `request`, records it and parses its answer (see [`ContextLlm::ask`]).
pub(crate) fn ask<T, E: std::fmt::Display>(
    client: &dyn LlmClient,
    request: &ChatRequest,
    prices: &PriceTable,
    parse: impl FnOnce(&ChatResponse) -> Result<T, E>,
) -> (LlmCallCompleted, Result<T, String>) {
    let t0 = Instant::now();
    let result = client.chat(request);
    let mut record = llm::call_completed(request, &result, t0.elapsed(), prices);
    let parsed = match &result {
        Ok(r) => parse(r).map_err(|e| {
            record.outcome = LlmOutcome::Malformed;
            format!("answer rejected: {e}")
        }),
        Err(e) => Err(e.to_string()),
    };
    (record, parsed)
}

/// Whether the model was asked about `cause` already (before a restart):
/// its `llm.call_completed` is in the log, and what it decided went in with
/// it in the same batch. Roles whose LLM work is not a pure function check
/// this before calling again.
pub(crate) fn called_already(bus: &Bus, cause: &Envelope) -> bool {
    bus.has_derived(cause, EventKind::LlmCallCompleted)
}

/// A role that is exactly a storage reactor (the pattern store): it
/// observes to warm up, reacts to derive, and its snapshot is the
/// reactor's.
pub struct ReactorRole<R>(pub R, pub Option<Vec<EventKind>>);

impl<R: Reactor + Snapshot + 'static> Role for ReactorRole<R> {
    fn snapshot_version(&self) -> u32 {
        1
    }

    fn save(&self, w: &mut SnapshotWriter) {
        self.0.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.0.restore(r)
    }

    fn observe(&mut self, env: &Envelope) {
        self.0.observe(env);
    }

    fn handle(&mut self, env: &Envelope, _bus: &Bus) -> Vec<Envelope> {
        self.0.react(env)
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        self.1.clone()
    }
}

/// The tools as a model is told about them.
pub(crate) fn llm_specs(tools: &[ToolDescription]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|(name, description, parameters)| ToolSpec {
            name: name.clone(),
            description: description.clone(),
            parameters: parameters.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use engram_events::payloads::*;
    use engram_events::{ActorKind, Event, EventKind, SessionId, TurnId};
    use engram_storage::{LogConfig, OpenLog, SledLog};
    use rust_decimal::Decimal;

    use super::*;
    use crate::llm::LlmError;

    /// A server that times out, counting the calls.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl LlmClient for Counting {
        fn provider(&self) -> &str {
            "ollama"
        }
        fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(LlmError::Timeout { after_ms: req.timeout.as_millis() as u64 })
        }
    }

    fn llm(client: &Arc<Counting>, context: LlmContext) -> Option<ContextLlm> {
        let client: Arc<dyn LlmClient> = client.clone();
        Some(ContextLlm::new(client, &LlmSection::default(), context, Arc::new(PriceTable::default())))
    }

    fn in_session(turn: Option<TurnId>, event: impl Into<Event>) -> Envelope {
        let env = Envelope::new(ActorKind::Host, event).with_session(SessionId::new("s"));
        match turn {
            Some(t) => env.with_turn(t),
            None => env,
        }
    }

    /// A session of one answered turn, then its end.
    fn session() -> Vec<Envelope> {
        let turn = TurnId::derive(chrono::Utc::now(), &[b"t"]);
        let delivered = ReplyDelivered { text: "It rains.".into(), layer: RouteLayer::Planner, latency_ms: 1 };
        let completed = TurnCompleted {
            turn_number: 1,
            text: "My name is Ada. Is it raining?".into(),
            layer: RouteLayer::Planner,
            model: Some("m".into()),
            steps: vec![PlanStep { tool: "get_weather".into(), args: ToolArgs::default() }],
            tools_ok: true,
            planner_ms: 1,
            latency_ms: 1,
            cost_usd: Decimal::ZERO,
            pricing_version: "none".into(),
        };
        vec![
            in_session(Some(turn), delivered),
            in_session(Some(turn), completed),
            in_session(None, SessionEnded { reason: SessionEndReason::Host, turns: 1 }),
        ]
    }

    type Make = Box<dyn Fn() -> Box<dyn Role>>;

    /// Handles `cause` with a role fresh from `make` (as after a restart
    /// whose checkpoint lagged behind `cause`), having observed `before`.
    fn handle(make: &Make, before: &[Envelope], cause: &Envelope, bus: &Bus) -> Vec<Envelope> {
        let mut role = make();
        for e in before {
            role.observe(e);
        }
        role.handle(cause, bus)
    }

    #[test]
    fn a_role_that_asked_the_model_before_a_restart_does_not_ask_again() {
        let events = session();
        let written = SummaryWritten {
            summary: "My name is Ada.".into(),
            topics: vec!["name".into()],
            summariser: SummariserKind::Extractive,
            turns_covered: 1,
        };
        let summary = Envelope::new(ActorKind::Summariser, written).with_session(SessionId::new("s"));
        let client = Arc::new(Counting::default());
        let judge_llm = llm(&client, LlmContext::Judge);
        let summary_llm = llm(&client, LlmContext::Summariser);
        let graph_llm = llm(&client, LlmContext::GraphExtract);
        let cases: Vec<(&str, Make, &[Envelope], &Envelope, ActorKind)> = vec![
            (
                "judge",
                Box::new(move || Box::new(judge::Judge::new(judge_llm.clone()))),
                &events[..1],
                &events[1],
                ActorKind::Judge,
            ),
            (
                "summariser",
                Box::new(move || {
                    Box::new(summariser::Summariser::new(
                        summary_llm.clone(),
                        chrono::FixedOffset::east_opt(0).unwrap(),
                    ))
                }),
                &events[..2],
                &events[2],
                ActorKind::Summariser,
            ),
            (
                "graph",
                Box::new(move || Box::new(graph::Graph::new(graph_llm.clone()))),
                &[],
                &summary,
                ActorKind::Graph,
            ),
        ];
        for (name, make, before, cause, actor) in cases {
            let dir = tempfile::tempdir().unwrap();
            let bus = Bus::new(&OpenLog::from_sled(SledLog::open(dir.path(), LogConfig::default()).unwrap())).unwrap();
            bus.append(before.iter().chain([cause]).cloned().collect()).unwrap();
            let calls = client.0.load(Ordering::SeqCst);
            assert!(!called_already(&bus, cause), "{name}");
            let first = handle(&make, before, cause, &bus);
            assert_eq!(client.0.load(Ordering::SeqCst), calls + 1, "{name}: one call");
            let record = first.iter().find(|e| e.kind() == EventKind::LlmCallCompleted).expect("the call's record");
            assert_eq!(record.actor, actor, "{name}");
            let Event::LlmCallCompleted(c) = &record.event else { unreachable!("found by kind") };
            assert_eq!(c.outcome, LlmOutcome::Timeout, "{name}");
            bus.append(first).unwrap();
            assert!(called_already(&bus, cause), "{name}");
            let again = handle(&make, before, cause, &bus);
            assert_eq!(client.0.load(Ordering::SeqCst), calls + 1, "{name}: no second call after the restart");
            for e in again {
                assert!(bus.contains(e.id).unwrap(), "{name}: only what the log holds is derived again: {e:?}");
            }
        }
    }
}
