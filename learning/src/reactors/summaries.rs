//! The summariser: one `summary.written` per session at `session.ended`,
//! written by the extractive summariser ([`crate::memory::extractive`]) —
//! the summariser actor's logic when no LLM is configured (seed 002 #9).
//!
//! It keeps the turns of open sessions (request, reply text from
//! `reply.delivered`, tools run), at most [`MAX_TURNS_PER_SESSION`] per
//! session (the latest), each text cut to [`MAX_TEXT_CHARS`], and forgets
//! a session once summarised. A session
//! that ended without a completed turn gets no summary.

use std::collections::{HashMap, VecDeque};

use engram_events::payloads::{SummariserKind, SummaryWritten};
use engram_events::{ActorKind, Envelope, Event, SessionId, TurnId};

use super::Reactor;
use crate::memory::{summarise, TurnText};
use engram_events::derived;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// Turns kept per open session: a summary is ≤ 200 words, so older turns
/// of a very long session would not make it in anyway.
pub const MAX_TURNS_PER_SESSION: usize = 50;

/// Characters kept of a turn's request and of its reply: a summary of
/// ≤ 200 words needs their gist, not a whole file a reply quoted — and
/// what is kept goes into the summariser's memory, its snapshot and its
/// model's prompt, so it is bounded whatever a reply holds.
pub const MAX_TEXT_CHARS: usize = 2_000;

/// What the summariser keeps of an open session.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct OpenSession {
    turns: VecDeque<TurnText>,
    /// The last reply delivered, waiting for its `turn.completed`.
    reply: Option<(Option<TurnId>, String)>,
}

/// Derives `summary.written` from `session.ended`.
#[derive(Default)]
pub struct SummaryReactor {
    sessions: HashMap<SessionId, OpenSession>,
}

impl SummaryReactor {
    /// A summariser that remembers no session yet. Its state is the open
    /// sessions' turns: warm it with [`Reactor::observe`] over the log from
    /// [`Sessions::earliest_open_start`](crate::projections::Sessions::earliest_open_start).
    pub fn new() -> Self {
        SummaryReactor::default()
    }

    /// Entries per structure held (open sessions, their turns).
    pub fn sizes(&self) -> Vec<(&'static str, usize)> {
        vec![("open_sessions", self.sessions.len())]
    }

    /// Number of open sessions remembered.
    pub fn open_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The turns kept for `session`, oldest first.
    pub fn turns_of(&self, session: &SessionId) -> Vec<&TurnText> {
        self.sessions.get(session).map(|s| s.turns.iter().collect()).unwrap_or_default()
    }

    fn fold(&mut self, env: &Envelope) {
        let Some(session) = &env.session else { return };
        match &env.event {
            Event::ReplyDelivered(r) => {
                let reply = crate::text::truncate(&r.text, MAX_TEXT_CHARS);
                self.sessions.entry(session.clone()).or_default().reply = Some((env.turn, reply));
            }
            Event::TurnCompleted(t) => {
                let open = self.sessions.entry(session.clone()).or_default();
                let reply = match open.reply.take() {
                    Some((turn, text)) if turn == env.turn => text,
                    _ => String::new(),
                };
                open.turns.push_back(TurnText {
                    request: crate::text::truncate(&t.text, MAX_TEXT_CHARS),
                    reply,
                    tools: t.steps.iter().map(|s| s.tool.clone()).collect(),
                });
                if open.turns.len() > MAX_TURNS_PER_SESSION {
                    open.turns.pop_front();
                }
            }
            Event::SessionEnded(_) => {
                self.sessions.remove(session);
            }
            _ => {}
        }
    }
}

impl Reactor for SummaryReactor {
    fn name(&self) -> &'static str {
        "summariser"
    }

    fn observe(&mut self, env: &Envelope) {
        self.fold(env);
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        let mut out = Vec::new();
        if let (Event::SessionEnded(_), Some(session)) = (&env.event, &env.session) {
            if let Some(open) = self.sessions.get(session).filter(|o| !o.turns.is_empty()) {
                let turns: Vec<TurnText> = open.turns.iter().cloned().collect();
                let (summary, topics) = summarise(&turns);
                if !summary.is_empty() {
                    let event = SummaryWritten {
                        summary,
                        topics,
                        summariser: SummariserKind::Extractive,
                        turns_covered: turns.len() as u32,
                    };
                    out.push(derived(env, ActorKind::Summariser, event, 0));
                }
            }
        }
        self.fold(env);
        out
    }
}

/// The open sessions' turns.
impl Snapshot for SummaryReactor {
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
    use engram_events::payloads::{ReplyDelivered, RouteLayer, SessionEndReason, SessionEnded, TurnCompleted};
    use engram_events::EventId;
    use rust_decimal::Decimal;

    fn env(session: &str, i: u32, turn: Option<TurnId>, event: impl Into<Event>) -> Envelope {
        let at = Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0).unwrap() + chrono::Duration::seconds(i.into());
        let mut e =
            Envelope::at(EventId::derive(at, &[session.as_bytes(), &i.to_be_bytes()]), at, ActorKind::Host, event)
                .with_session(SessionId::new(session));
        e.turn = turn;
        e
    }

    fn turn(session: &str, n: u32, text: &str, reply: &str) -> Vec<Envelope> {
        let id = TurnId::derive(chrono::Utc::now(), &[session.as_bytes(), &n.to_be_bytes()]);
        vec![
            env(session, 2 * n, Some(id), ReplyDelivered { text: reply.into(), layer: RouteLayer::L0, latency_ms: 1 }),
            env(
                session,
                2 * n + 1,
                Some(id),
                TurnCompleted {
                    turn_number: n,
                    text: text.into(),
                    layer: RouteLayer::L0,
                    model: None,
                    steps: Vec::new(),
                    tools_ok: true,
                    planner_ms: 0,
                    latency_ms: 1,
                    cost_usd: Decimal::ZERO,
                    pricing_version: String::new(),
                },
            ),
        ]
    }

    fn ended(session: &str) -> Envelope {
        env(session, 10_000, None, SessionEnded { reason: SessionEndReason::Host, turns: 0 })
    }

    #[test]
    fn keeps_the_latest_turns_with_their_replies_and_forgets_ended_sessions() {
        let mut r = SummaryReactor::new();
        for n in 1..=(MAX_TURNS_PER_SESSION as u32 + 3) {
            for e in turn("a", n, &format!("request {n}"), &format!("reply {n}")) {
                assert!(r.react(&e).is_empty());
            }
        }
        r.observe(&turn("b", 1, "other", "")[1]);
        let kept = r.turns_of(&SessionId::new("a"));
        assert_eq!(kept.len(), MAX_TURNS_PER_SESSION);
        assert_eq!((kept[0].request.as_str(), kept[0].reply.as_str()), ("request 4", "reply 4"));
        assert_eq!(r.open_sessions(), 2);

        // observe() folds the end without deriving; react() derives once.
        let mut warm = SummaryReactor::new();
        for e in turn("b", 1, "I like tea", "") {
            warm.observe(&e);
        }
        warm.observe(&ended("b"));
        assert_eq!(warm.open_sessions(), 0);

        let out = r.react(&ended("a"));
        assert_eq!(out.len(), 1);
        let Event::SummaryWritten(s) = &out[0].event else { panic!("{out:?}") };
        assert_eq!(s.turns_covered, MAX_TURNS_PER_SESSION as u32);
        assert!(s.summary.starts_with("request 4."), "{}", s.summary);
        assert_eq!(out[0].causation, Some(ended("a").id));
        assert!(r.react(&ended("a")).is_empty(), "a session is summarised once");
        assert_eq!(r.open_sessions(), 1);
    }
}
