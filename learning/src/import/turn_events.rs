//! A turn record becomes the events the live runtime would have emitted for
//! that turn, with ids derived from the record (never random), so importing
//! the same file anywhere gives the same log.
//!
//! | ordinal | event                | actor       | when                  |
//! |---------|----------------------|-------------|-----------------------|
//! | 0       | `utterance.received` | listener    | `at`                  |
//! | 1       | `intent.judged`      | listener    | `at`                  |
//! | 2       | `route.decided`      | router      | `at`                  |
//! | 3       | `fastpath.hit` (no model) or `fastpath.missed` | router | `at` |
//! | 4, 5    | `plan.created`, `llm.call_completed` (planner turns only) | planner | `at + planner_ms` |
//! | …       | `tool.called`, `tool.completed` per step | reply_loop | `at + planner_ms` |
//! | …       | `reply.delivered`, `turn.completed` | reply_loop | `at + latency_ms` |
//! | …       | `eval.completed` (when the record has a score) | judge | `at + latency_ms` |
//!
//! A record without a model was answered by the fast path: L2 when it has
//! two or more steps, L1 with one, L0 with none.

use chrono::{DateTime, Utc};
use engram_events::payloads::*;
use engram_events::{ActorKind, Envelope, EvalId, Event, EventId, SessionId, TurnId};

use super::turn_record::{after, TurnRecord};
use crate::features;

/// The events of one turn. `has_history`: did an earlier turn of the
/// session call tools (a structural feature when the record has none).
pub fn turn_events(r: &TurnRecord, has_history: bool) -> Vec<Envelope> {
    let layer = match (&r.model, r.steps.len()) {
        (Some(_), _) => RouteLayer::Planner,
        (None, 0) => RouteLayer::L0,
        (None, 1) => RouteLayer::L1,
        (None, _) => RouteLayer::L2,
    };
    let mut b = TurnBuilder { r, turn_id: TurnId::for_turn(&r.session, r.turn, r.at), out: Vec::new() };
    b.heard();
    b.routed(layer, has_history);
    if layer != RouteLayer::Planner {
        let hit =
            FastPathHit { layer, matched: r.text.clone(), similarity: None, steps: r.steps.clone(), residual: None };
        b.push(r.at, ActorKind::Router, hit);
    } else {
        b.planned();
    }
    b.ran_steps(layer);
    let completed = b.delivered(layer);
    if let Some(score) = r.score {
        b.evaluated(score, completed);
    }
    b.out
}

/// `session.ended` after the last record of a session in the file.
pub fn session_ended(session: &SessionId, turns: u32, at: DateTime<Utc>) -> Envelope {
    let id = EventId::derive(at, &[b"import", session.as_str().as_bytes(), b"session.ended"]);
    Envelope::at(id, at, ActorKind::Host, SessionEnded { reason: SessionEndReason::Import, turns })
        .with_session(session.clone())
}

/// When a record's turn is over (its `session.ended` follows then).
pub fn turn_end(r: &TurnRecord) -> DateTime<Utc> {
    after(r.at, r.latency_ms)
}

/// The id of a record's `utterance.received`, its first event: how the
/// importer tells a record already in the log (same id) from another turn
/// with the same session and number (another id).
pub fn utterance_id(r: &TurnRecord) -> EventId {
    TurnBuilder { r, turn_id: TurnId::for_turn(&r.session, r.turn, r.at), out: Vec::new() }.id(r.at, 0)
}

struct TurnBuilder<'a> {
    r: &'a TurnRecord,
    turn_id: TurnId,
    out: Vec<Envelope>,
}

impl TurnBuilder<'_> {
    fn id(&self, at: DateTime<Utc>, ordinal: usize) -> EventId {
        EventId::derive(
            at,
            &[
                b"import",
                self.r.session.as_str().as_bytes(),
                &self.r.turn.to_be_bytes(),
                &(ordinal as u32).to_be_bytes(),
            ],
        )
    }

    fn push(&mut self, at: DateTime<Utc>, actor: ActorKind, event: impl Into<Event>) -> EventId {
        let id = self.id(at, self.out.len());
        self.out.push(Envelope::at(id, at, actor, event).with_session(self.r.session.clone()).with_turn(self.turn_id));
        id
    }

    /// The listener's two: the utterance, judged directed.
    fn heard(&mut self) {
        let r = self.r;
        let utterance = UtteranceReceived {
            text: r.text.clone(),
            turn_number: r.turn,
            source: UtteranceSource::Import,
            lang: None,
            model: None,
            sticky_model: None,
        };
        self.push(r.at, ActorKind::Listener, utterance);
        let judged = IntentJudged {
            directed: true,
            query: r.text.clone(),
            stop: false,
            confidence: 1.0,
            judge: JudgeKind::Import,
        };
        self.push(r.at, ActorKind::Listener, judged);
    }

    /// The router's `route.decided`: the fast path, else the record's
    /// model as the default slot.
    fn routed(&mut self, layer: RouteLayer, has_history: bool) {
        let r = self.r;
        let fast = layer != RouteLayer::Planner;
        let features = r.features.clone().unwrap_or_else(|| features::for_turn(&r.text, &r.steps, has_history));
        let slot = |policy, verdict, model| ChainEntry {
            policy,
            verdict,
            model,
            confidence: None,
            pattern_alternatives: None,
        };
        let chain = vec![
            slot(RoutePolicy::FastPath, if fast { ChainVerdict::Chosen } else { ChainVerdict::NotApplicable }, None),
            slot(
                RoutePolicy::Default,
                if fast { ChainVerdict::Deferred } else { ChainVerdict::Chosen },
                r.model.clone(),
            ),
        ];
        let route = RouteDecided {
            layer,
            chosen_model: r.model.clone(),
            chain,
            features,
            workload: r.workload.clone(),
            embedding: None,
        };
        self.push(r.at, ActorKind::Router, route);
    }

    /// A planner turn's miss, plan and the planner call's record.
    fn planned(&mut self) {
        let r = self.r;
        let planned_at = after(r.at, r.planner_ms);
        let model = r.model.clone().unwrap_or_default();
        let missed = FastPathMissed {
            best_similarity: None,
            best_candidate: None,
            reason: "imported turn: answered by the planner".to_owned(),
            near: None,
        };
        self.push(r.at, ActorKind::Router, missed);
        let plan = PlanCreated {
            planner: PlannerKind::Import,
            model: Some(model.clone()),
            steps: r.steps.clone(),
            planner_ms: r.planner_ms,
            tools: Vec::new(),
        };
        self.push(planned_at, ActorKind::Planner, plan);
        let call = LlmCallCompleted {
            model,
            context: LlmContext::Planner,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: r.cost_usd,
            pricing_version: r.pricing_version.clone(),
            latency_ms: r.planner_ms,
            outcome: LlmOutcome::Ok,
            // A turn record does not say how its planner was asked.
            tools: LlmTools::Unknown,
            structured: false,
        };
        self.push(planned_at, ActorKind::Planner, call);
    }

    /// Each step's call and completion (all succeeded).
    fn ran_steps(&mut self, layer: RouteLayer) {
        let r = self.r;
        let planned_at = after(r.at, r.planner_ms);
        let served_by = (layer != RouteLayer::Planner).then_some(layer);
        for (i, step) in r.steps.iter().enumerate() {
            let (tool, step_no) = (step.tool.clone(), i as u32);
            let called = ToolCalled {
                step: step_no,
                tool: tool.clone(),
                args: step.args.clone(),
                served_by,
                side_effect: None,
                source: None,
            };
            self.push(planned_at, ActorKind::ReplyLoop, called);
            let completed =
                ToolCompleted { step: step_no, tool, ok: true, output: String::new(), error: None, duration_ms: 0 };
            self.push(planned_at, ActorKind::ReplyLoop, completed);
        }
    }

    /// The reply and `turn.completed`, whose id it returns.
    fn delivered(&mut self, layer: RouteLayer) -> EventId {
        let r = self.r;
        let done_at = after(r.at, r.latency_ms);
        self.push(
            done_at,
            ActorKind::ReplyLoop,
            ReplyDelivered { text: String::new(), layer, latency_ms: r.latency_ms },
        );
        let completed = TurnCompleted {
            turn_number: r.turn,
            text: r.text.clone(),
            layer,
            model: r.model.clone(),
            steps: r.steps.clone(),
            tools_ok: true,
            planner_ms: r.planner_ms,
            latency_ms: r.latency_ms,
            cost_usd: r.cost_usd,
            pricing_version: r.pricing_version.clone(),
        };
        self.push(done_at, ActorKind::ReplyLoop, completed)
    }

    /// The record's score as the judge's `eval.completed`, caused by the
    /// turn's completion.
    fn evaluated(&mut self, score: f64, completed: EventId) {
        let r = self.r;
        let done_at = after(r.at, r.latency_ms);
        let eval_id = EvalId::derive(done_at, &[b"import-eval", &self.turn_id.0 .0.to_be_bytes()]);
        let eval = EvalCompleted {
            eval_id,
            subject_turn: self.turn_id,
            score,
            confidence: r.score_confidence,
            judge: JudgeKind::Import,
            rubric: None,
            judge_pricing_version: None,
        };
        let env = Envelope::at(self.id(done_at, self.out.len()), done_at, ActorKind::Judge, eval)
            .with_session(r.session.clone())
            .with_turn(self.turn_id)
            .caused_by(completed);
        self.out.push(env);
    }
}
