//! How a host's call learns its turn is over: the dispatcher hands it
//! every `reply.delivered` / `turn.completed`, and it wakes the caller
//! waiting for that turn. Completions nobody waits for (yet) are kept for a while, so
//! a turn that finishes before its caller starts waiting is not missed.
//!
//! A caller waits by leaving a callback the completion runs
//! ([`Bridge::when_done`]): the listener's thread registers the host's
//! as it hears the utterance, so the host's thread sleeps
//! once per turn, until the end, instead of being woken for the
//! listener's judgement in the middle of the turn — a wake-up that came
//! late, behind the actors on both cores, and took a core from them
//! (docs/performance.md, *Fewer hops*).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

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

/// What a completion runs for a caller that registered before it came.
pub type OnDone = Box<dyn FnOnce(Completed) + Send>;

#[derive(Default)]
struct State {
    replies: HashMap<TurnId, String>,
    done: HashMap<TurnId, Completed>,
    order: VecDeque<TurnId>,
    /// Callers waiting by callback (at most one per turn; each removed when
    /// its turn completes or its caller gives up).
    waiters: HashMap<TurnId, OnDone>,
}

/// Turn completions, by turn.
pub struct Bridge {
    state: Mutex<State>,
}

impl Bridge {
    /// An empty bridge; the dispatcher feeds it.
    pub fn new() -> Arc<Bridge> {
        Arc::new(Bridge { state: Mutex::new(State::default()) })
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
                if let Some(waiter) = s.waiters.remove(&turn) {
                    drop(s);
                    waiter(c);
                    return;
                }
                s.done.insert(turn, c);
                s.order.push_back(turn);
                while s.order.len() > KEEP {
                    if let Some(old) = s.order.pop_front() {
                        s.done.remove(&old);
                    }
                }
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
            ("bridge.waiters".to_owned(), s.waiters.len()),
        ]
    }

    /// Runs `then` with `turn`'s completion: at once if it has completed,
    /// else when it does, on the thread that hands the completion on.
    /// `then` should only pass the completion on (send it to a channel).
    pub fn when_done(&self, turn: TurnId, then: OnDone) {
        let mut s = self.state.lock().expect("bridge lock");
        match s.done.remove(&turn) {
            Some(c) => {
                drop(s);
                then(c);
            }
            None => {
                s.waiters.insert(turn, then);
            }
        }
    }

    /// Withdraws the callback [`Bridge::when_done`] left for `turn` (its
    /// caller gave up waiting). `false` when there was none: it has run,
    /// or is running, with the completion.
    pub fn forget(&self, turn: TurnId) -> bool {
        self.state.lock().expect("bridge lock").waiters.remove(&turn).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::{ReplyDelivered, TurnCompleted};
    use engram_events::{ActorKind, Envelope};

    fn turn(name: &str) -> TurnId {
        TurnId::derive(chrono::Utc::now(), &[name.as_bytes()])
    }

    /// A turn's reply and its completion, as the reply loop appends them.
    fn ends(turn: TurnId, text: &str) -> [Envelope; 2] {
        let delivered = ReplyDelivered { text: text.into(), layer: RouteLayer::L0, latency_ms: 1 };
        // As it reads in the log: an L0 turn that ran no tool.
        let completed: TurnCompleted = serde_json::from_value(serde_json::json!({
            "turn_number": 1, "text": "what time is it", "layer": "L0", "model": null, "steps": [],
            "tools_ok": true, "planner_ms": 0, "latency_ms": 1, "cost_usd": "0", "pricing_version": "none",
        }))
        .expect("a turn.completed payload");
        [
            Envelope::new(ActorKind::ReplyLoop, delivered).with_turn(turn),
            Envelope::new(ActorKind::ReplyLoop, completed).with_turn(turn),
        ]
    }

    fn channel() -> (OnDone, crossbeam_channel::Receiver<Completed>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        (Box::new(move |c| drop(tx.send(c))), rx)
    }

    #[test]
    fn a_callback_left_before_the_end_runs_with_it_and_is_not_kept() {
        let (bridge, t) = (Bridge::new(), turn("a"));
        let (then, rx) = channel();
        bridge.when_done(t, then);
        assert!(rx.try_recv().is_err(), "nothing has completed yet");
        for env in ends(t, "ten past three") {
            bridge.take(&env);
        }
        assert_eq!(rx.try_recv().expect("run at the completion").text, "ten past three");
        assert!(bridge.sizes().iter().all(|(_, n)| *n == 0), "{:?}", bridge.sizes());
        assert!(!bridge.forget(t), "it ran: nothing to withdraw");
    }

    #[test]
    fn a_callback_left_after_the_end_runs_at_once() {
        let (bridge, t) = (Bridge::new(), turn("b"));
        for env in ends(t, "noon") {
            bridge.take(&env);
        }
        let (then, rx) = channel();
        bridge.when_done(t, then);
        assert_eq!(rx.try_recv().expect("run at once").text, "noon");
        let held = |name: &str| bridge.sizes().into_iter().find(|(n, _)| n == name).map(|(_, n)| n);
        assert_eq!((held("bridge.done"), held("bridge.waiters")), (Some(0), Some(0)));
    }

    #[test]
    fn a_withdrawn_callback_never_runs_and_its_turn_is_kept_for_a_waiter() {
        let (bridge, t, other) = (Bridge::new(), turn("c"), turn("d"));
        let (then, rx) = channel();
        bridge.when_done(t, then);
        let (then_other, rx_other) = channel();
        bridge.when_done(other, then_other);
        assert!(bridge.forget(t));
        for env in ends(t, "late") {
            bridge.take(&env);
        }
        assert!(rx.try_recv().is_err(), "withdrawn");
        assert!(rx_other.try_recv().is_err(), "another turn's callback waits for its own");
        let (later, rx_later) = channel();
        bridge.when_done(t, later);
        assert_eq!(rx_later.try_recv().map(|c| c.text).as_deref(), Ok("late"), "kept for a caller to come");
    }
}
