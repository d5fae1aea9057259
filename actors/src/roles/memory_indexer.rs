//! The memory indexer: what every completed turn said, as passages the
//! reply loop can find again (issue 30; the index is
//! [`engram_learning::memory::passages`]).
//!
//! At `turn.completed` it splits the request and — when a model wrote it
//! — the reply ([`split`]), embeds the passages in one batch and appends
//! one `memory.passages_indexed`,
//! derived from the turn (so handling it twice after a crash appends
//! nothing new). The embedding is off the turn's path: the reply was
//! delivered before this actor sees the turn. An embedder that fails
//! leaves the passages without vectors — found by their words alone —
//! rather than losing them.
//!
//! A data dir's history from before this actor existed, or imported, is
//! not seen by it (the actor starts at the log's end, as every actor new to
//! a data dir does): [`crate::memory_backfill`] indexes it, with the same
//! passages and the same derived ids (`engram memory index`, and `engram
//! import` after it appends).

use std::collections::HashMap;
use std::sync::Arc;

use engram_events::payloads::{Passage, PassagesIndexed, Speaker, TurnCompleted};
use engram_events::{derived, ActorKind, Envelope, Event, EventKind, TurnId};
use engram_learning::embedder::Embedder;
use engram_learning::memory::passages::{quantize, split};

use crate::bus::Bus;
use crate::shell::Role;

/// Most replies held while their turn completes (a turn's reply and its
/// completion come in one batch; this bounds what a turn that never
/// completes can leave behind).
const MAX_OPEN: usize = 256;

/// The memory indexer actor's role.
pub struct MemoryIndexer {
    embedder: Option<Arc<dyn Embedder>>,
    /// Replies of turns not completed yet.
    replies: HashMap<TurnId, String>,
}

impl MemoryIndexer {
    /// An indexer embedding with `embedder` (none: passages without
    /// vectors).
    pub fn new(embedder: Option<Arc<dyn Embedder>>) -> MemoryIndexer {
        MemoryIndexer { embedder, replies: HashMap::new() }
    }

    fn remember_reply(&mut self, env: &Envelope) {
        if let (Event::ReplyDelivered(r), Some(turn)) = (&env.event, env.turn) {
            if self.replies.len() >= MAX_OPEN {
                self.replies.clear();
            }
            self.replies.insert(turn, r.text.clone());
        }
    }

    /// The passages of a turn: the user's words, then the reply's.
    pub fn passages(&self, request: &str, reply: Option<&str>) -> Vec<Passage> {
        passages_of(self.embedder.as_deref(), &[(request, reply)]).pop().unwrap_or_default()
    }
}

/// Whether a completed turn's reply is indexed beside its request: a
/// model's is (what it confirmed: "Updated: Sunday 15 November, 1 pm");
/// an offline one is a template over a tool's output or over memory
/// itself, and would only echo it back later.
pub fn reply_kept(turn: &TurnCompleted) -> bool {
    turn.model.as_deref().is_some_and(|m| !m.starts_with("offline:"))
}

/// The passages of `turns` (`(request, reply)` each), in order: per turn
/// the user's words, then the reply's, every text of every turn embedded
/// in one batch (none without an embedder, or when it fails: the passages
/// keep their words).
pub fn passages_of(embedder: Option<&dyn Embedder>, turns: &[(&str, Option<&str>)]) -> Vec<Vec<Passage>> {
    let texts: Vec<Vec<(Speaker, String)>> = turns
        .iter()
        .map(|(request, reply)| {
            let mut texts: Vec<(Speaker, String)> = split(request).into_iter().map(|t| (Speaker::User, t)).collect();
            texts.extend(reply.iter().flat_map(|r| split(r)).map(|t| (Speaker::Assistant, t)));
            texts
        })
        .collect();
    let all: Vec<&str> = texts.iter().flatten().map(|(_, t)| t.as_str()).collect();
    let mut vectors = match (embedder, all.is_empty()) {
        (Some(e), false) => match e.embed_batch(&all) {
            Ok(v) if v.len() == all.len() => v.iter().map(|v| Some(quantize(e.model_id(), v))).collect(),
            Ok(_) => {
                tracing::warn!("memory indexer: the embedder returned a wrong count; words alone");
                vec![None; all.len()]
            }
            Err(e) => {
                tracing::warn!("memory indexer: embedding failed ({e}); the passages keep their words");
                vec![None; all.len()]
            }
        },
        _ => vec![None; all.len()],
    }
    .into_iter();
    texts
        .into_iter()
        .map(|turn| {
            turn.into_iter()
                .map(|(speaker, text)| Passage { text, speaker, vector: vectors.next().flatten() })
                .collect()
        })
        .collect()
}

impl Role for MemoryIndexer {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        vec![("replies", self.replies.len())]
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        Some(vec![EventKind::ReplyDelivered, EventKind::TurnCompleted])
    }

    fn snapshot_version(&self) -> u32 {
        1
    }

    /// The replies of turns still open (usually none).
    fn save(&self, w: &mut engram_local_state::snapshot::SnapshotWriter) {
        w.put_map(&self.replies);
    }

    fn restore(
        &mut self,
        r: &mut engram_local_state::snapshot::SnapshotReader<'_>,
    ) -> Result<(), engram_local_state::snapshot::SnapshotError> {
        self.replies = r.take_map()?;
        Ok(())
    }

    fn observe(&mut self, env: &Envelope) {
        match &env.event {
            Event::ReplyDelivered(_) => self.remember_reply(env),
            Event::TurnCompleted(_) => {
                if let Some(turn) = env.turn {
                    self.replies.remove(&turn);
                }
            }
            _ => {}
        }
    }

    fn handle(&mut self, env: &Envelope, _bus: &Bus) -> Vec<Envelope> {
        match &env.event {
            Event::ReplyDelivered(_) => {
                self.remember_reply(env);
                Vec::new()
            }
            Event::TurnCompleted(t) => {
                let reply = env.turn.and_then(|turn| self.replies.remove(&turn)).filter(|_| reply_kept(t));
                let passages = self.passages(&t.text, reply.as_deref());
                if passages.is_empty() {
                    return Vec::new();
                }
                vec![derived(env, ActorKind::Memory, PassagesIndexed { passages }, 0)]
            }
            _ => Vec::new(),
        }
    }
}
