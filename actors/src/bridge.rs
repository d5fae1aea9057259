//! How a host's call learns its turn is over: the dispatcher hands it
//! every `reply.delivered` / `turn.completed`, and it wakes the caller
//! waiting for that turn. Completions nobody waits for (yet) are kept for a while, so
//! a turn that finishes before its caller starts waiting is not missed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use engram_events::payloads::{PlanStep, RouteLayer};
use engram_events::{Event, TurnId};

/// A completed turn, as the host sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Completed {
    /// The reply text.
    pub text: String,
    /// Which layer answered.
    pub layer: RouteLayer,
    /// The model that planned it, if any.
    pub model: Option<String>,
    /// The steps run.
    pub steps: Vec<PlanStep>,
    /// Did every tool succeed.
    pub tools_ok: bool,
    /// From utterance to reply.
    pub latency_ms: u64,
}

/// Completions kept for callers that have not asked yet.
const KEEP: usize = 4096;

#[derive(Default)]
struct State {
    replies: HashMap<TurnId, String>,
    done: HashMap<TurnId, Completed>,
    order: VecDeque<TurnId>,
}

/// Turn completions, by turn.
pub struct Bridge {
    state: Mutex<State>,
    cv: Condvar,
}

impl Bridge {
    /// An empty bridge; the dispatcher feeds it.
    pub fn new() -> Arc<Bridge> {
        Arc::new(Bridge { state: Mutex::new(State::default()), cv: Condvar::new() })
    }

    /// Takes note of a `reply.delivered` or `turn.completed` (anything
    /// else is ignored).
    pub(crate) fn take(&self, env: &engram_events::Envelope) {
        let Some(turn) = env.turn else { return };
        let mut s = self.state.lock().expect("bridge lock");
        match &env.event {
            Event::ReplyDelivered(r) => {
                s.replies.insert(turn, r.text.clone());
            }
            Event::TurnCompleted(t) => {
                let text = s.replies.remove(&turn).unwrap_or_default();
                let c = Completed {
                    text,
                    layer: t.layer,
                    model: t.model.clone(),
                    steps: t.steps.clone(),
                    tools_ok: t.tools_ok,
                    latency_ms: t.latency_ms,
                };
                s.done.insert(turn, c);
                s.order.push_back(turn);
                while s.order.len() > KEEP {
                    if let Some(old) = s.order.pop_front() {
                        s.done.remove(&old);
                    }
                }
                self.cv.notify_all();
            }
            _ => {}
        }
    }

    /// Entries held: replies and completions not asked for yet, and the
    /// order they go in (bounded by `KEEP`).
    pub fn sizes(&self) -> Vec<(String, usize)> {
        let s = self.state.lock().expect("bridge lock");
        vec![
            ("bridge.replies".to_owned(), s.replies.len()),
            ("bridge.done".to_owned(), s.done.len()),
            ("bridge.order".to_owned(), s.order.len()),
        ]
    }

    /// Waits up to `timeout` for `turn` to complete.
    pub fn wait(&self, turn: TurnId, timeout: Duration) -> Option<Completed> {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock().expect("bridge lock");
        loop {
            if let Some(c) = s.done.remove(&turn) {
                return Some(c);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            s = self.cv.wait_timeout(s, left).expect("bridge lock").0;
        }
    }
}
