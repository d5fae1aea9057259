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
//! not indexed (the actor starts at the log's end, as every actor new to a
//! data dir does).

use std::collections::HashMap;
use std::sync::Arc;

use engram_events::payloads::{Passage, PassagesIndexed, Speaker};
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
        let mut texts: Vec<(Speaker, String)> = split(request).into_iter().map(|t| (Speaker::User, t)).collect();
        texts.extend(reply.into_iter().flat_map(split).map(|t| (Speaker::Assistant, t)));
        let vectors = match (&self.embedder, texts.is_empty()) {
            (Some(e), false) => {
                let refs: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
                match e.embed_batch(&refs) {
                    Ok(v) if v.len() == texts.len() => v.iter().map(|v| Some(quantize(e.model_id(), v))).collect(),
                    Ok(_) => {
                        tracing::warn!("memory indexer: the embedder returned a wrong count; words alone");
                        vec![None; texts.len()]
                    }
                    Err(e) => {
                        tracing::warn!("memory indexer: embedding failed ({e}); the passages keep their words");
                        vec![None; texts.len()]
                    }
                }
            }
            _ => vec![None; texts.len()],
        };
        texts.into_iter().zip(vectors).map(|((speaker, text), vector)| Passage { text, speaker, vector }).collect()
    }
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
                // A model's reply is kept beside the request (what it
                // confirmed: "Updated: Sunday 15 November, 1 pm"); an
                // offline one is a template over a tool's output or over
                // memory itself, and would only echo it back later.
                let by_model = t.model.as_deref().is_some_and(|m| !m.starts_with("offline:"));
                let reply = env.turn.and_then(|turn| self.replies.remove(&turn)).filter(|_| by_model);
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
