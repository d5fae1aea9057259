//! Memory at work in the workload's turns (not the routing part's): the
//! last turn that answered with `recall` (what an earlier session taught),
//! the last answered with a detail said in passing sessions before, and
//! the last follow-up whose "it" came from the turn before.

use std::collections::HashMap;

use engram::events::payloads::TurnCompleted;
use engram::events::TurnId;
use engram::{Envelope, Event};

use super::Memory;

/// The workload's turns, folded so far for [`Memory`].
#[derive(Default)]
pub(super) struct MemoryFold {
    /// What memory did so far.
    memory: Memory,
    /// The reply of each turn not completed yet.
    replies: HashMap<TurnId, String>,
}

impl MemoryFold {
    /// Folds in one event of the workload: keeps each reply until its turn
    /// completes, then looks at the turn.
    pub(super) fn apply(&mut self, env: &Envelope) {
        match (&env.event, env.turn) {
            (Event::ReplyDelivered(r), Some(t)) => {
                self.replies.insert(t, r.text.clone());
            }
            (Event::TurnCompleted(c), Some(t)) => {
                let reply = self.replies.remove(&t).unwrap_or_default();
                self.turn_completed(c, reply);
            }
            _ => {}
        }
    }

    /// Keeps a completed turn that ran `recall`, or else one whose request
    /// says "it" and whose steps used an argument the request does not hold.
    fn turn_completed(&mut self, c: &TurnCompleted, reply: String) {
        let shown: Vec<String> =
            c.steps.iter().map(|s| format!("{} {}", s.tool, serde_json::Value::Object(s.args.0.clone()))).collect();
        let says_it = c.text.split(|ch: char| !ch.is_alphanumeric()).any(|w| w.eq_ignore_ascii_case("it"));
        let from_before =
            c.steps.iter().any(|s| s.args.0.values().any(|v| v.as_str().is_some_and(|a| !c.text.contains(a))));
        // A reply quoting what was said (`said_line`'s form, EN or IT).
        // The first question answered so: a statement the offline planner
        // took for `recall` ("abito a Torino") is echoed from memory too,
        // and later questions may quote what the recall tool answered from
        // ("my name is Ada").
        let quotes = reply.contains(" you said: \"") || reply.contains(" mi hai detto: \"");
        if quotes && c.text.trim_end().ends_with('?') && self.memory.said_earlier.is_none() {
            self.memory.said_earlier = Some((c.text.clone(), reply.clone()));
        }
        if c.steps.iter().any(|s| s.tool == engram::actors::tools::memory::RECALL) {
            self.memory.recalled = Some((c.text.clone(), shown, reply));
        } else if says_it && from_before {
            self.memory.follow_up = Some((c.text.clone(), shown, reply));
        }
    }

    /// What memory did.
    pub(super) fn finish(self) -> Memory {
        self.memory
    }
}
