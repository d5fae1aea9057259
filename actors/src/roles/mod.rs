//! One module per actor role (DESIGN's table). Each role is a thin shell
//! over pure logic in `engram-learning` where that logic exists (reactors,
//! the fast path, the pattern store): the same code `engram import` runs.
//!
//! | role | consumes | emits |
//! |---|---|---|
//! | [`listener`] | the host's utterances, feedback, session ends; `reply.delivered` (hot window) | `utterance.received`, `intent.judged` (+ `llm.call_completed` with the LLM intent judge), `day.activated`, `feedback.received`, `session.ended` |
//! | [`router`] | `intent.judged`; `turn.completed`, `eval.completed` | `route.decided`, `fastpath.hit/missed`, `pattern.matched`; `canonical.recorded/.rejected`, `pipeline.*` |
//! | [`planner`] | `route.decided` (planner layer) | `plan.created`, `llm.call_completed` |
//! | [`reply_loop`] | `fastpath.hit`, `plan.created` | `tool.called/completed`, `llm.call_completed`, `reply.delivered`, `turn.completed` |
//! | [`judge`] | `turn.completed`, `feedback.received` | `eval.completed` (heuristic, feedback and, when enabled, LLM), `llm.call_completed` |
//! | [`summariser`] | `session.ended` | `summary.written` (LLM, else extractive), `llm.call_completed` |
//! | [`graph`] | `summary.written` | `graph.fact_added/node_merged` (LLM facts, else rule facts), `llm.call_completed` |
//! | [`memory_indexer`] | `reply.delivered`, `turn.completed` | `memory.passages_indexed` (what the turn said, embedded) |
//! | pattern store | see [`ReactorRole`] | `pattern.recorded/evicted` |
//!
//! Every LLM call fails open to the offline logic (seed 002): a failed or
//! unparseable answer costs the turn nothing but the call's record.

pub mod graph;
pub mod judge;
pub mod listener;
pub mod memory_indexer;
pub mod planner;
pub mod reply_loop;
pub mod router;
pub mod summariser;

use engram_events::{Envelope, EventKind};
use engram_learning::reactors::Reactor;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

use crate::bus::Bus;
use crate::shell::Role;

/// `kinds` and what a role that prompts a model folds for the prompt's
/// context (the conversation, the warm profile), each once.
fn with_prompt_context(mut kinds: Vec<EventKind>) -> Vec<EventKind> {
    for k in
        engram_learning::memory::dialogue::DIALOGUE_KINDS.iter().chain(engram_learning::memory::profile::PROFILE_KINDS)
    {
        if !kinds.contains(k) {
            kinds.push(*k);
        }
    }
    kinds
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

    fn sizes(&self) -> Vec<(&'static str, usize)> {
        self.0.sizes()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use engram_events::payloads::*;
    use engram_events::{ActorKind, Event, EventKind, SessionId, TurnId};
    use engram_storage::{LogConfig, OpenLog, SledLog};
    use rust_decimal::Decimal;

    use super::*;
    use crate::llm::LlmSection;
    use crate::llm::{ChatRequest, ChatResponse, ContextLlm, LlmClient, LlmError, PriceTable};
    use std::sync::Arc;

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
                Box::new(move || Box::new(graph::GraphWriter::new(graph_llm.clone()))),
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
