//! What a snapshot holds of the memory index, and its restore: the
//! passages (rule 1: the lexical and vector indexes are derived from
//! them), and what the order of the log decided and the passages alone do
//! not show — which of them follows up which (rule 8), where each
//! session's conversation stands, and the questions replies left waiting
//! for the user's answer (rule 7). Recomputed from the passages instead,
//! a reply said again (rule 4: no new passage) or a passage forgotten
//! between two of the user's would link them otherwise than the fold did,
//! and a restored index would answer otherwise than the one saved.

use engram_events::payloads::Passage;
use engram_events::SessionId;
use serde::{Deserialize, Serialize};

use super::{PassageIndex, Questions, Remembered};

/// The index as saved: `P` is a borrowed [`Remembered`] when written, an
/// owned one when read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedPassages<P = Remembered> {
    /// The live passages, oldest slot first.
    pub passages: Vec<P>,
    /// Rule 8's links, `(passage, its follow-up)`, by position in
    /// `passages`.
    follow_ups: Vec<(u32, u32)>,
    /// Each session's last user passage (by position) and whether a reply
    /// came after it: what links the user's next words.
    threads: Vec<(Option<SessionId>, Option<u32>, bool)>,
    /// Rule 7's questions waiting for an answer.
    questions: Questions,
}

impl SavedPassages<&Remembered> {
    /// An owned copy, as a snapshot reads it back.
    pub fn owned(&self) -> SavedPassages {
        SavedPassages {
            passages: self.passages.iter().map(|p| (*p).clone()).collect(),
            follow_ups: self.follow_ups.clone(),
            threads: self.threads.clone(),
            questions: self.questions.clone(),
        }
    }
}

impl PassageIndex {
    /// The index, for a snapshot (the derived indexes are rebuilt).
    pub fn save(&self) -> SavedPassages<&Remembered> {
        let mut position: Vec<Option<u32>> = vec![None; self.passages.len()];
        let mut passages = Vec::with_capacity(self.live);
        for (slot, p) in self.passages.iter().enumerate() {
            if let Some(p) = p {
                position[slot] = Some(passages.len() as u32);
                passages.push(p);
            }
        }
        let at = |slot: u32| position.get(slot as usize).copied().flatten();
        let follow_ups = (0..self.follow_up.len() as u32)
            .filter_map(|slot| Some((at(slot)?, at(self.follow_up[slot as usize]?)?)))
            .collect();
        let mut threads: Vec<_> =
            self.by_session.iter().map(|(s, t)| (s.clone(), t.last_user.and_then(at), t.replied)).collect();
        threads.sort();
        SavedPassages { passages, follow_ups, threads, questions: self.questions.clone() }
    }

    /// Restores what [`PassageIndex::save`] wrote.
    pub fn restore(&mut self, saved: SavedPassages) {
        let (offset, provider, exact, bar) = (self.offset, self.provider.take(), self.exact, self.min_cosine);
        *self = PassageIndex::new(offset, provider);
        self.exact = exact;
        self.min_cosine = bar;
        let mut slot_of: Vec<Option<u32>> = Vec::with_capacity(saved.passages.len());
        for r in saved.passages {
            let slot = self.passages.len() as u32;
            let passage = Passage { text: r.text, speaker: r.speaker, vector: r.vector };
            self.add(&passage, r.session, r.at, r.asked);
            slot_of.push(Some(slot).filter(|s| (*s as usize) < self.passages.len()));
        }
        // The links, the threads and the questions as saved, not as the
        // order above would make them.
        self.questions = saved.questions;
        let slot = |i: u32| slot_of.get(i as usize).copied().flatten();
        self.follow_up.iter_mut().for_each(|f| *f = None);
        for (a, b) in saved.follow_ups {
            if let (Some(a), Some(b)) = (slot(a), slot(b)) {
                self.follow_up[a as usize] = Some(b);
            }
        }
        for (session, last_user, replied) in saved.threads {
            if let Some(thread) = self.by_session.get_mut(&session) {
                thread.last_user = last_user.and_then(slot);
                thread.replied = replied;
            }
        }
    }
}
