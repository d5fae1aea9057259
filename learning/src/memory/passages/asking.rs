//! Rule 7's state: session → the questions its last indexed reply ended
//! on, which the session's next request answers. One piece for the fold
//! (which holds an answer with its question) and for the memory indexer
//! and the back-fill (which embed the answer with it), so the words and
//! the vector name the same questions under the same bound.

use std::collections::HashMap;

use engram_events::SessionId;
use serde::{Deserialize, Serialize};

use super::reply_questions;

/// Most sessions whose questions are held (a session's entry goes at its
/// next turn; this bounds what sessions left on a question keep: past it,
/// the older half is let go — an answer then is held by its own words
/// alone).
pub const MAX_ASKING: usize = 1024;

/// Session → the questions its last indexed reply ended on
/// ([`reply_questions`]), with the order they were noted in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Questions {
    pending: HashMap<SessionId, (u64, String)>,
    noted: u64,
}

impl Questions {
    /// Takes the questions `session`'s next request answers.
    pub fn take(&mut self, session: Option<&SessionId>) -> Option<String> {
        session.and_then(|s| self.pending.remove(s)).map(|(_, q)| q)
    }

    /// Notes what `session`'s turn left asked: the questions its indexed
    /// reply (`None`: not indexed) ended on.
    pub fn after(&mut self, session: Option<&SessionId>, reply: Option<&str>) {
        let Some(session) = session else { return };
        match reply.and_then(reply_questions) {
            Some(q) => {
                if self.pending.len() >= MAX_ASKING {
                    // The older half goes.
                    let mut ages: Vec<u64> = self.pending.values().map(|(n, _)| *n).collect();
                    ages.sort_unstable();
                    let cut = ages[ages.len() / 2];
                    self.pending.retain(|_, (n, _)| *n > cut);
                }
                self.noted += 1;
                self.pending.insert(session.clone(), (self.noted, q));
            }
            None => {
                self.pending.remove(session);
            }
        }
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no session is left on a question.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Heap bytes held ([`engram_local_state::heap_bytes`]).
    pub fn heap_bytes(&self) -> usize {
        use engram_local_state::heap_bytes::{hash_map, string};
        hash_map(&self.pending) + self.pending.iter().map(|(s, (_, q))| string(s.as_str()) + string(q)).sum::<usize>()
    }
}
