//! The judge: the heuristic [`JudgeReactor`] on every event, plus — when a
//! model server exists and `[llm] judge_model` names a model — an LLM
//! verdict on every completed turn.
//!
//! The LLM verdict is a second opinion, not a replacement: it has its own
//! eval id (tag `judge-llm`, so both verdicts on a turn live side by side)
//! and `judge = llm`. It fails open to nothing: a timeout, an HTTP error or
//! an answer that is not `{"score", "confidence"}` emits no verdict, and the
//! heuristic one stands; the call is recorded either way.
//!
//! A model grades differently twice, so after a restart the judge looks for
//! the call's `llm.call_completed` (by its derived id) before asking again.

use std::collections::HashMap;

use engram_events::derived;
use engram_events::payloads::{EvalCompleted, JudgeKind, TurnCompleted};
use engram_events::{ActorKind, Envelope, EvalId, Event, EventKind, TurnId};
use engram_learning::reactors::{JudgeReactor, Reactor};
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

use crate::bus::Bus;
use crate::llm::contexts;
use crate::llm::ContextLlm;
use crate::shell::Role;

/// The ordinal of the LLM verdict among the judge's `eval.completed` from
/// one cause: above the heuristic ones (0, 1), so the ids never collide.
pub const LLM_VERDICT_ORDINAL: u32 = 16;

/// The rubric recorded with LLM verdicts.
pub const LLM_RUBRIC: &str = "llm/judge";

/// Most characters of tool results shown to the judge model.
const TOOL_RESULTS_CHARS: usize = 8_000;

/// What the judge has seen of a turn under way, for the model's prompt.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Seen {
    reply: String,
    tools: Vec<String>,
}

/// The judge actor's role.
pub struct Judge {
    heuristic: JudgeReactor,
    llm: Option<ContextLlm>,
    turns: HashMap<TurnId, Seen>,
}

impl Judge {
    /// The heuristic judge, with the LLM judge when `llm` is given.
    pub fn new(llm: Option<ContextLlm>) -> Judge {
        Judge { heuristic: JudgeReactor::new(), llm, turns: HashMap::new() }
    }

    fn fold(&mut self, env: &Envelope) {
        if self.llm.is_none() {
            return;
        }
        let Some(turn) = env.turn else { return };
        match &env.event {
            Event::ReplyDelivered(r) => self.turns.entry(turn).or_default().reply = r.text.clone(),
            Event::ToolCompleted(t) => {
                let line = match &t.error {
                    Some(e) => format!("{} failed: {e}", t.tool),
                    None => format!("{}: {}", t.tool, t.output),
                };
                self.turns.entry(turn).or_default().tools.push(line);
            }
            Event::TurnCompleted(_) => {
                self.turns.remove(&turn);
            }
            _ => {}
        }
    }

    /// The LLM verdict on a completed turn, and the call's record.
    fn llm_verdict(&self, llm: &ContextLlm, env: &Envelope, t: &TurnCompleted, bus: &Bus) -> Vec<Envelope> {
        let Some(turn) = env.turn else { return Vec::new() };
        let seen = self.turns.get(&turn);
        let reply = seen.map(|s| s.reply.as_str()).unwrap_or_default();
        // As the heuristic judge: a turn that ran nothing and said nothing
        // has nothing to be judged on.
        if reply.trim().is_empty() && t.steps.is_empty() {
            return Vec::new();
        }
        if super::called_already(bus, env) {
            return Vec::new();
        }
        let mut tools = seen.map(|s| s.tools.join("\n")).unwrap_or_default();
        if let Some((cut, _)) = tools.char_indices().nth(TOOL_RESULTS_CHARS) {
            tools.truncate(cut);
        }
        let (record, verdict) = llm.ask(contexts::judge_messages(&t.text, reply, &tools), contexts::parse_verdict);
        let mut out = Vec::new();
        match verdict {
            Ok((score, confidence)) => {
                // The model's verdict comes after the heuristic one on the
                // same turn, and the greatest eval id is the verdict that
                // stands: its id is a millisecond later, so it wins — by
                // order, not by hash bytes — and a user's feedback, dated
                // two after at the least, wins over it
                // (`engram_learning::reactors::verdicts::AFTER_THE_TURN`).
                let later = env.at + chrono::Duration::milliseconds(1);
                let eval_id =
                    EvalId::derive(later, &[b"judge-llm", &env.id.0 .0.to_be_bytes(), &turn.0 .0.to_be_bytes()]);
                let event = EvalCompleted {
                    eval_id,
                    subject_turn: turn,
                    score,
                    confidence,
                    judge: JudgeKind::Llm,
                    rubric: Some(LLM_RUBRIC.to_owned()),
                    judge_pricing_version: Some(record.pricing_version.clone()),
                };
                out.push(derived(env, ActorKind::Judge, event, LLM_VERDICT_ORDINAL));
            }
            Err(e) => tracing::warn!(model = %llm.model, "LLM judge failed open (the heuristic verdict stands): {e}"),
        }
        out.push(derived(env, ActorKind::Judge, record, 0));
        out
    }
}

impl Role for Judge {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out = self.heuristic.sizes();
        out.push(("turns", self.turns.len()));
        out
    }

    fn snapshot_version(&self) -> u32 {
        1
    }

    /// The heuristic judge's sessions and, with an LLM judge, what it has
    /// seen of the turns under way — which it folds only with one, so
    /// whether it has one is part of the fold.
    fn save(&self, w: &mut SnapshotWriter) {
        self.heuristic.save(w);
        w.put(&self.llm.is_some());
        w.put_map(&self.turns);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.heuristic.restore(r)?;
        r.expect("an LLM judge", &self.llm.is_some())?;
        self.turns = r.take_map()?;
        Ok(())
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        Some(vec![
            EventKind::UtteranceReceived,
            EventKind::ReplyDelivered,
            EventKind::ToolCompleted,
            EventKind::TurnCompleted,
            EventKind::FeedbackReceived,
            EventKind::EvalCompleted,
            EventKind::SessionEnded,
        ])
    }

    fn observe(&mut self, env: &Envelope) {
        self.heuristic.observe(env);
        self.fold(env);
    }

    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope> {
        let mut out = self.heuristic.react(env);
        if let (Some(llm), Event::TurnCompleted(t)) = (&self.llm, &env.event) {
            out.extend(self.llm_verdict(llm, env, t, bus));
        }
        self.fold(env);
        out
    }
}
