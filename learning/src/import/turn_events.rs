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
    let turn_id = TurnId::for_turn(&r.session, r.turn, r.at);
    let planned_at = after(r.at, r.planner_ms);
    let done_at = after(r.at, r.latency_ms);
    let layer = match (&r.model, r.steps.len()) {
        (Some(_), _) => RouteLayer::Planner,
        (None, 0) => RouteLayer::L0,
        (None, 1) => RouteLayer::L1,
        (None, _) => RouteLayer::L2,
    };
    let fast = layer != RouteLayer::Planner;
    let mut b = TurnBuilder { r, turn_id, out: Vec::new() };

    b.push(
        r.at,
        ActorKind::Listener,
        UtteranceReceived {
            text: r.text.clone(),
            turn_number: r.turn,
            source: UtteranceSource::Import,
            lang: None,
            model: None,
            sticky_model: None,
        },
    );
    b.push(
        r.at,
        ActorKind::Listener,
        IntentJudged { directed: true, query: r.text.clone(), stop: false, confidence: 1.0, judge: JudgeKind::Import },
    );
    let features = r.features.clone().unwrap_or_else(|| features::for_turn(&r.text, &r.steps, has_history));
    b.push(
        r.at,
        ActorKind::Router,
        RouteDecided {
            layer,
            chosen_model: r.model.clone(),
            chain: vec![
                ChainEntry {
                    policy: RoutePolicy::FastPath,
                    verdict: if fast { ChainVerdict::Chosen } else { ChainVerdict::NotApplicable },
                    model: None,
                    confidence: None,
                    pattern_alternatives: None,
                },
                ChainEntry {
                    policy: RoutePolicy::Default,
                    verdict: if fast { ChainVerdict::Deferred } else { ChainVerdict::Chosen },
                    model: r.model.clone(),
                    confidence: None,
                    pattern_alternatives: None,
                },
            ],
            features,
            workload: r.workload.clone(),
            embedding: None,
        },
    );
    if fast {
        b.push(
            r.at,
            ActorKind::Router,
            FastPathHit { layer, matched: r.text.clone(), similarity: None, steps: r.steps.clone(), residual: None },
        );
    } else {
        let model = r.model.clone().unwrap_or_default();
        b.push(
            r.at,
            ActorKind::Router,
            FastPathMissed {
                best_similarity: None,
                best_candidate: None,
                reason: "imported turn: answered by the planner".to_owned(),
            },
        );
        b.push(
            planned_at,
            ActorKind::Planner,
            PlanCreated {
                planner: PlannerKind::Import,
                model: Some(model.clone()),
                steps: r.steps.clone(),
                planner_ms: r.planner_ms,
                tools: Vec::new(),
            },
        );
        b.push(
            planned_at,
            ActorKind::Planner,
            LlmCallCompleted {
                model,
                context: LlmContext::Planner,
                input_tokens: 0,
                output_tokens: 0,
                cost_usd: r.cost_usd,
                pricing_version: r.pricing_version.clone(),
                latency_ms: r.planner_ms,
                outcome: LlmOutcome::Ok,
            },
        );
    }
    for (i, step) in r.steps.iter().enumerate() {
        b.push(
            planned_at,
            ActorKind::ReplyLoop,
            ToolCalled {
                step: i as u32,
                tool: step.tool.clone(),
                args: step.args.clone(),
                served_by: fast.then_some(layer),
                side_effect: None,
            },
        );
        b.push(
            planned_at,
            ActorKind::ReplyLoop,
            ToolCompleted {
                step: i as u32,
                tool: step.tool.clone(),
                ok: true,
                output: String::new(),
                error: None,
                duration_ms: 0,
            },
        );
    }
    b.push(done_at, ActorKind::ReplyLoop, ReplyDelivered { text: String::new(), layer, latency_ms: r.latency_ms });
    let completed = b.push(
        done_at,
        ActorKind::ReplyLoop,
        TurnCompleted {
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
        },
    );
    if let Some(score) = r.score {
        let eval_id = EvalId::derive(done_at, &[b"import-eval", &turn_id.0 .0.to_be_bytes()]);
        let ordinal = b.out.len();
        let eval = Envelope::at(
            b.id(done_at, ordinal),
            done_at,
            ActorKind::Judge,
            EvalCompleted {
                eval_id,
                subject_turn: turn_id,
                score,
                confidence: r.score_confidence,
                judge: JudgeKind::Import,
                rubric: None,
                judge_pricing_version: None,
            },
        )
        .with_session(r.session.clone())
        .with_turn(turn_id)
        .caused_by(completed);
        b.out.push(eval);
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
}
