//! The heuristic judge: verdicts (`eval.completed`) from what a turn shows,
//! from the user correcting it, and from explicit feedback — the judge
//! actor's logic when no LLM judge is configured.
//!
//! | signal | subject | score | confidence | judge | rubric |
//! |---|---|---|---|---|---|
//! | `turn.completed`, a tool failed | the turn | [`TOOL_FAILURE`] | | heuristic | `heuristic/tool_failure` |
//! | `turn.completed`, tools ok, steps run or a reply given | the turn | [`ANSWERED`] | | heuristic | `heuristic/answered` |
//! | `turn.completed` whose text opens with a correction ("no, I meant", "ho detto", …) | the session's previous turn | [`CORRECTED`] | | heuristic | `heuristic/user_correction` |
//! | `feedback.received` positive / negative / correction | its turn, else the session's last | [`FEEDBACK_POSITIVE`] / [`FEEDBACK_NEGATIVE`] / [`FEEDBACK_CORRECTION`] | | feedback | `feedback/<rating>` |
//!
//! A turn that ran nothing and said nothing (an imported fast-path turn
//! carries no reply text) gets no heuristic verdict: there is nothing to
//! judge it on.
//!
//! Eval ids derive from the cause and the subject turn, so deriving twice
//! from the same event yields the same verdicts; the pattern store applies
//! each `eval_id` once.

use std::collections::HashMap;

use engram_events::payloads::{EvalCompleted, FeedbackRating, JudgeKind};
use engram_events::{ActorKind, Envelope, EvalId, Event, SessionId, TurnId};

use super::Reactor;
use crate::text::normalize;
use chrono::{DateTime, Utc};
use engram_events::derived;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// (score, confidence) of a turn whose tool failed: a failure is plain to
/// see, so the verdict is confident.
pub const TOOL_FAILURE: (f64, f64) = (0.15, 0.7);
/// The rubric of [`TOOL_FAILURE`] verdicts: a tool failed, which says the
/// world refused (a missing file, a server down), not that the route was
/// wrong — the fast path does not unlearn from it.
pub const RUBRIC_TOOL_FAILURE: &str = "heuristic/tool_failure";
/// (score, confidence) of a turn that ran its plan or replied without a
/// failure: probably fine, but nothing says the user got what they wanted.
pub const ANSWERED: (f64, f64) = (0.75, 0.4);
/// (score, confidence) of a turn the user corrected in the next one.
pub const CORRECTED: (f64, f64) = (0.1, 0.8);
/// (score, confidence) of positive feedback.
pub const FEEDBACK_POSITIVE: (f64, f64) = (1.0, 0.9);
/// (score, confidence) of negative feedback.
pub const FEEDBACK_NEGATIVE: (f64, f64) = (0.0, 0.9);
/// (score, confidence) of a correction given as feedback.
pub const FEEDBACK_CORRECTION: (f64, f64) = (0.1, 0.9);

/// Openings that make a turn a verdict on the previous one (EN + IT),
/// normalised.
const CORRECTION_MARKERS: &[&str] = &[
    "no i meant",
    "i said",
    "that's wrong",
    "that is wrong",
    "not what i asked",
    "that's not what i asked",
    "no intendevo",
    "ho detto",
    "non è quello che ho chiesto",
    "sbagliato",
    "è sbagliato",
];

/// Does `text` open with a correction marker?
pub fn is_correction(text: &str) -> bool {
    let n = normalize(text);
    CORRECTION_MARKERS.iter().any(|m| n.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with(' ')))
}

/// What the judge remembers of an open session.
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct Open {
    /// The last completed turn.
    last_turn: Option<TurnId>,
    /// When it completed.
    completed_at: Option<DateTime<Utc>>,
    /// The turn whose non-empty reply was delivered last.
    replied: Option<TurnId>,
}

/// How far after a turn's completion a verdict caused by a later event
/// (feedback, a correction) is dated at the least. The latest verdict on a
/// turn is the greatest eval id (seed 001 §10.4), and an eval id's time is
/// the millisecond it is dated at; a verdict dated in the same millisecond
/// as another would be ordered by the bytes of a hash. So: the heuristic
/// verdict is dated at the turn's completion, the LLM judge's 1 ms after
/// it (`engram_actors::roles::judge`), and feedback or a correction at
/// least 2 ms after it — the user's word stands over both, however fast a
/// host gives it.
pub const AFTER_THE_TURN: chrono::Duration = chrono::Duration::milliseconds(2);

/// Derives `eval.completed` from turns and feedback.
#[derive(Default)]
pub struct JudgeReactor {
    /// Open sessions only: forgotten at `session.ended`.
    sessions: HashMap<SessionId, Open>,
}

impl JudgeReactor {
    /// A judge that remembers no session yet. Its state is the open
    /// sessions' last turns: warm it with [`Reactor::observe`] over the log
    /// from the earliest start of a session not yet ended (the `sessions`
    /// projection knows it).
    pub fn new() -> Self {
        JudgeReactor::default()
    }

    /// Entries per structure held (open sessions).
    pub fn sizes(&self) -> Vec<(&'static str, usize)> {
        vec![("open_sessions", self.sessions.len())]
    }

    /// The last completed turn of `session`, while it is open.
    pub fn last_turn(&self, session: &SessionId) -> Option<TurnId> {
        self.sessions.get(session).and_then(|o| o.last_turn)
    }

    /// Number of open sessions remembered.
    pub fn open_sessions(&self) -> usize {
        self.sessions.len()
    }

    fn fold(&mut self, env: &Envelope) {
        let Some(session) = &env.session else { return };
        match &env.event {
            Event::ReplyDelivered(r) if !r.text.trim().is_empty() => {
                self.sessions.entry(session.clone()).or_default().replied = env.turn;
            }
            Event::TurnCompleted(_) => {
                if let Some(turn) = env.turn {
                    let open = self.sessions.entry(session.clone()).or_default();
                    open.last_turn = Some(turn);
                    open.completed_at = Some(env.at);
                }
            }
            Event::SessionEnded(_) => {
                self.sessions.remove(session);
            }
            _ => {}
        }
    }

    fn verdicts(&self, env: &Envelope) -> Vec<Verdict> {
        let open = env.session.as_ref().and_then(|s| self.sessions.get(s)).copied().unwrap_or_default();
        match &env.event {
            Event::TurnCompleted(t) => {
                let Some(turn) = env.turn else { return Vec::new() };
                let mut out = Vec::new();
                let replied = open.replied == Some(turn);
                if !t.tools_ok {
                    out.push(Verdict::heuristic(turn, TOOL_FAILURE, RUBRIC_TOOL_FAILURE));
                } else if !t.steps.is_empty() || replied {
                    out.push(Verdict::heuristic(turn, ANSWERED, "heuristic/answered"));
                }
                if let Some(previous) = open.last_turn.filter(|p| *p != turn) {
                    if is_correction(&t.text) {
                        out.push(Verdict::heuristic(previous, CORRECTED, "heuristic/user_correction"));
                    }
                }
                out
            }
            Event::FeedbackReceived(f) => {
                let Some(turn) = f.subject_turn.or(open.last_turn) else {
                    tracing::warn!(event = %env.id, "judge: feedback names no turn and its session has none; ignored");
                    return Vec::new();
                };
                let (score, rubric) = match f.rating {
                    FeedbackRating::Positive => (FEEDBACK_POSITIVE, "feedback/positive"),
                    FeedbackRating::Negative => (FEEDBACK_NEGATIVE, "feedback/negative"),
                    FeedbackRating::Correction => (FEEDBACK_CORRECTION, "feedback/correction"),
                };
                vec![Verdict { turn, score, judge: JudgeKind::Feedback, rubric }]
            }
            _ => Vec::new(),
        }
    }
}

/// A verdict before it becomes an event.
struct Verdict {
    turn: TurnId,
    score: (f64, f64),
    judge: JudgeKind,
    rubric: &'static str,
}

impl Verdict {
    fn heuristic(turn: TurnId, score: (f64, f64), rubric: &'static str) -> Self {
        Verdict { turn, score, judge: JudgeKind::Heuristic, rubric }
    }
}

impl Reactor for JudgeReactor {
    fn name(&self) -> &'static str {
        "judge"
    }

    fn observe(&mut self, env: &Envelope) {
        self.fold(env);
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        let verdicts = self.verdicts(env);
        // The session's last completion before this event (see
        // AFTER_THE_TURN): a verdict on another turn than the one this event
        // completes comes after it.
        let before = env.session.as_ref().and_then(|s| self.sessions.get(s)).and_then(|o| o.completed_at);
        self.fold(env);
        verdicts
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let dated = match before {
                    Some(done) if env.turn != Some(v.turn) || !matches!(env.event, Event::TurnCompleted(_)) => {
                        env.at.max(done + AFTER_THE_TURN)
                    }
                    _ => env.at,
                };
                let eval_id =
                    EvalId::derive(dated, &[b"judge", &env.id.0 .0.to_be_bytes(), &v.turn.0 .0.to_be_bytes()]);
                let event = EvalCompleted {
                    eval_id,
                    subject_turn: v.turn,
                    score: v.score.0,
                    confidence: v.score.1,
                    judge: v.judge,
                    rubric: Some(v.rubric.to_owned()),
                    judge_pricing_version: None,
                };
                let mut out = derived(env, ActorKind::Judge, event, i as u32);
                out.turn = Some(v.turn);
                out
            })
            .collect()
    }
}

/// The open sessions' last turns.
impl Snapshot for JudgeReactor {
    fn save(&self, w: &mut SnapshotWriter) {
        w.put_map(&self.sessions);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.sessions = r.take_map()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use engram_events::payloads::{FeedbackReceived, RouteLayer, SessionEndReason, SessionEnded, TurnCompleted};
    use engram_events::EventId;
    use rust_decimal::Decimal;

    fn env(i: u32, turn: Option<TurnId>, event: impl Into<Event>) -> Envelope {
        let at = Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, i).unwrap();
        let mut e = Envelope::at(EventId::derive(at, &[&i.to_be_bytes()]), at, ActorKind::Host, event)
            .with_session(SessionId::new("s"));
        e.turn = turn;
        e
    }

    fn completed(i: u32, text: &str) -> (TurnId, Envelope) {
        let turn = TurnId::derive(Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, i).unwrap(), &[b"t", &i.to_be_bytes()]);
        let event = TurnCompleted {
            turn_number: i,
            text: text.into(),
            layer: RouteLayer::L1,
            model: None,
            steps: vec![engram_events::payloads::PlanStep { tool: "get_now".into(), args: Default::default() }],
            tools_ok: true,
            planner_ms: 0,
            latency_ms: 1,
            cost_usd: Decimal::ZERO,
            pricing_version: String::new(),
        };
        (turn, env(i, Some(turn), event))
    }

    #[test]
    fn observe_folds_without_deriving_and_an_ended_session_is_forgotten() {
        let mut judge = JudgeReactor::new();
        let (t1, e1) = completed(1, "what time is it");
        judge.observe(&e1);
        assert_eq!(judge.last_turn(&SessionId::new("s")), Some(t1));
        // Warmed by observe(), the correction still finds the turn before it.
        let (_, e2) = completed(2, "no, I meant in Tokyo");
        let out = judge.react(&e2);
        assert_eq!(out.len(), 2);
        let Event::EvalCompleted(v) = &out[1].event else { panic!("{out:?}") };
        assert_eq!((v.subject_turn, v.score, v.confidence), (t1, CORRECTED.0, CORRECTED.1));
        assert_eq!(out[1].turn, Some(t1));
        assert_ne!(out[0].id, out[1].id);

        judge.observe(&env(3, None, SessionEnded { reason: SessionEndReason::Host, turns: 2 }));
        assert_eq!(judge.open_sessions(), 0);
        // Feedback naming no turn, in a session the judge no longer knows: nothing.
        let fb = FeedbackReceived { subject_turn: None, rating: FeedbackRating::Positive, text: None };
        assert!(judge.react(&env(4, None, fb)).is_empty());
    }

    /// Feedback given in the very microsecond the turn completed still
    /// comes after the heuristic verdict: its eval id is the greater, for
    /// any ids (it was ordered by hash bytes before, and lost half the time).
    #[test]
    fn feedback_in_the_turns_own_millisecond_is_the_latest_verdict() {
        for i in 0..30u32 {
            let mut judge = JudgeReactor::new();
            let (turn, done) = completed(i, "what time is it");
            let heuristic = judge.react(&done);
            let fb = FeedbackReceived { subject_turn: None, rating: FeedbackRating::Negative, text: None };
            let mut feedback = env(i, Some(turn), fb);
            feedback.id = EventId::derive(done.at, &[b"feedback", &i.to_be_bytes()]);
            feedback.at = done.at;
            let verdict = judge.react(&feedback);
            let id = |out: &[Envelope]| match &out[0].event {
                Event::EvalCompleted(v) => v.eval_id,
                other => panic!("{other:?}"),
            };
            assert!(id(&verdict) > id(&heuristic), "case {i}: the feedback's verdict is the latest");
            // A correction on the next turn, completed in the same instant,
            // comes after the turn it corrects too.
            let (_, mut next) = completed(i + 30, "no, I meant in Tokyo");
            next.id = EventId::derive(done.at, &[b"next", &i.to_be_bytes()]);
            next.at = done.at;
            let out = judge.react(&next);
            let correction = out.iter().find_map(|e| match &e.event {
                Event::EvalCompleted(v) if v.subject_turn == turn => Some(v.eval_id),
                _ => None,
            });
            assert!(correction.expect("a correction verdict") > id(&heuristic), "case {i}");
        }
    }

    #[test]
    fn correction_markers_en_it() {
        for text in [
            "No, I meant the other file",
            "no i meant yesterday",
            "I said PDF",
            "That's wrong!",
            "not what I asked",
            "No, intendevo ieri",
            "Ho detto domani",
            "Non è quello che ho chiesto",
            "Sbagliato.",
        ] {
            assert!(is_correction(text), "{text}");
        }
        for text in ["I saidly", "no problem", "what did I say", "ho dettato una lettera", "download it"] {
            assert!(!is_correction(text), "{text}");
        }
    }
}
