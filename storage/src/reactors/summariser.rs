//! The summariser: one `summary.written` per session at `session.ended`,
//! written by the extractive summariser ([`crate::memory::extractive`]) —
//! the summariser actor's logic when no LLM is configured (seed 002 #9).
//!
//! It keeps the turns of open sessions (request, reply text from
//! `reply.delivered`, tools run), at most [`MAX_TURNS_PER_SESSION`] per
//! session (the latest), and forgets a session once summarised. A session
//! that ended without a completed turn gets no summary.

use std::collections::{HashMap, VecDeque};

use engram_events::payloads::{SummariserKind, SummaryWritten};
use engram_events::{ActorKind, Envelope, Event, SessionId, TurnId};

use super::{derived, Reactor};
use crate::memory::{summarise, TurnText};

/// Turns kept per open session: a summary is ≤ 200 words, so older turns
/// of a very long session would not make it in anyway.
pub const MAX_TURNS_PER_SESSION: usize = 50;

/// What the summariser keeps of an open session.
#[derive(Default)]
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
                self.sessions.entry(session.clone()).or_default().reply = Some((env.turn, r.text.clone()));
            }
            Event::TurnCompleted(t) => {
                let open = self.sessions.entry(session.clone()).or_default();
                let reply = match open.reply.take() {
                    Some((turn, text)) if turn == env.turn => text,
                    _ => String::new(),
                };
                open.turns.push_back(TurnText {
                    request: t.text.clone(),
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
