//! The demo's second part, read back from its sessions (`route-…`):
//! routing among the two stand-in models — which model took each planner
//! turn and how many of those the user rated good, how often exploration
//! chose, and how each unseen request was routed and why.

use std::collections::{HashMap, HashSet};

use engram::events::payloads::{ChainVerdict, FeedbackRating, RouteDecided, RoutePolicy};
use engram::events::{SessionId, TurnId};
use engram::{Envelope, Event};

use super::{Routing, UnseenRoute};
use crate::demo::models::{MODELS, SESSION_PREFIX};

/// Whether `env` belongs to one of the routing part's sessions.
pub(super) fn is_routing(env: &Envelope) -> bool {
    env.session.as_ref().is_some_and(|s| s.as_str().starts_with(SESSION_PREFIX))
}

/// The routing part's events, folded so far.
#[derive(Default)]
pub(super) struct RoutingFold {
    /// The figures so far (all but the server and the session count).
    routing: Routing,
    /// The request of each turn.
    texts: HashMap<TurnId, String>,
    /// The model that completed each turn.
    turn_model: HashMap<TurnId, String>,
    /// The routing sessions seen.
    sessions: HashSet<SessionId>,
}

impl RoutingFold {
    /// Folds in one event of a routing session (see [`is_routing`]).
    pub(super) fn apply(&mut self, env: &Envelope) {
        if let Some(s) = &env.session {
            self.sessions.insert(s.clone());
        }
        match &env.event {
            Event::UtteranceReceived(u) => {
                if let Some(t) = env.turn {
                    self.texts.insert(t, u.text.clone());
                }
            }
            Event::RouteDecided(d) => self.route_decided(env, d),
            Event::TurnCompleted(t) => {
                if let (Some(m), Some(turn)) = (&t.model, env.turn) {
                    self.routing.models.entry(m.clone()).or_default().0 += 1;
                    self.turn_model.insert(turn, m.clone());
                }
            }
            Event::FeedbackReceived(f) if f.rating == FeedbackRating::Positive => {
                if let Some(m) = f.subject_turn.and_then(|t| self.turn_model.get(&t)) {
                    self.routing.models.entry(m.clone()).or_default().1 += 1;
                }
            }
            _ => {}
        }
    }

    /// Counts a turn exploration chose; for a turn of an unseen request,
    /// records how it was routed and what the pattern store recommended.
    fn route_decided(&mut self, env: &Envelope, d: &RouteDecided) {
        let chosen = d.chain.iter().find(|c| c.verdict == ChainVerdict::Chosen);
        if chosen.is_some_and(|c| c.policy == RoutePolicy::Explore) {
            self.routing.explored += 1;
        }
        let unseen = env.session.as_ref().is_some_and(|s| s.as_str().contains("unseen"));
        if let (true, Some(t)) = (unseen, env.turn) {
            let store =
                d.chain.iter().find(|c| c.policy == RoutePolicy::Pattern && c.verdict != ChainVerdict::NotApplicable);
            self.routing.unseen.push(UnseenRoute {
                request: self.texts.get(&t).cloned().unwrap_or_default(),
                model: d.chosen_model.clone(),
                chosen_by: chosen.map(|c| c.policy.as_str().to_owned()),
                confidence: chosen.and_then(|c| c.confidence),
                store_recommends: store.and_then(|c| c.model.clone()),
            });
        }
    }

    /// The routing figures, with the server that played the models.
    pub(super) fn finish(self) -> Routing {
        Routing { server: server(), sessions: self.sessions.len() as u64, ..self.routing }
    }
}

/// What served the stand-in models, and what each always plans.
fn server() -> String {
    format!(
        "a scripted local server (Ollama API) with two stand-in models: {}",
        MODELS.iter().map(|(m, t)| format!("{m} always plans {t}")).collect::<Vec<_>>().join(", ")
    )
}
