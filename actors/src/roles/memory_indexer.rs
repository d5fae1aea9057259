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
//! The request's first passage is embedded with the questions the
//! session's last indexed reply ended on, which it answers ("Where did
//! you go?" … "Woodhaven"): the index finds an answer by its question's
//! words and meaning as well as its own (rule 7 of
//! [`engram_learning::memory::passages`]).
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
use engram_learning::memory::passages::{quantize, split, Questions};

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
    /// Session → the questions its last indexed reply ended on (rule 7).
    asking: Questions,
}

impl MemoryIndexer {
    /// An indexer embedding with `embedder` (none: passages without
    /// vectors).
    pub fn new(embedder: Option<Arc<dyn Embedder>>) -> MemoryIndexer {
        MemoryIndexer { embedder, replies: HashMap::new(), asking: Questions::default() }
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
    pub fn passages(&self, said: TurnSaid<'_>) -> Vec<Passage> {
        passages_of(self.embedder.as_deref(), &[said]).pop().unwrap_or_default()
    }
}

/// Whether a completed turn's reply is indexed beside its request: a
/// model's is (what it confirmed: "Updated: Sunday 15 November, 1 pm");
/// an offline one is a template over a tool's output or over memory
/// itself, and would only echo it back later.
pub fn reply_kept(turn: &TurnCompleted) -> bool {
    turn.model.as_deref().is_some_and(|m| !m.starts_with("offline:"))
}

/// What a completed turn said, as the indexer splits it.
#[derive(Clone, Copy, Debug, Default)]
pub struct TurnSaid<'a> {
    /// The user's words.
    pub request: &'a str,
    /// The reply, when it is indexed ([`reply_kept`]).
    pub reply: Option<&'a str>,
    /// The questions the session's last indexed reply ended on
    /// ([`engram_learning::memory::passages::reply_questions`]), which the
    /// request answers: its first
    /// passage is embedded with it ("Where did you go?" … "Woodhaven, a
    /// little town"), as the index finds it by its words.
    pub asked: Option<&'a str>,
}

/// The passages of `turns`, in order: per turn the user's words, then the
/// reply's, every text of every turn embedded in one batch (none without
/// an embedder, or when it fails: the passages keep their words).
pub fn passages_of(embedder: Option<&dyn Embedder>, turns: &[TurnSaid<'_>]) -> Vec<Vec<Passage>> {
    let texts: Vec<Vec<(Speaker, String)>> = turns
        .iter()
        .map(|t| {
            let mut texts: Vec<(Speaker, String)> = split(t.request).into_iter().map(|t| (Speaker::User, t)).collect();
            texts.extend(t.reply.iter().flat_map(|r| split(r)).map(|t| (Speaker::Assistant, t)));
            texts
        })
        .collect();
    // What is embedded: an answer's first passage with its question.
    let embedded: Vec<String> = texts
        .iter()
        .zip(turns)
        .flat_map(|(said, turn)| {
            said.iter().enumerate().map(move |(i, (_, text))| match turn.asked {
                Some(q) if i == 0 && said[0].0 == Speaker::User => format!("{q} {text}"),
                _ => text.clone(),
            })
        })
        .collect();
    let all: Vec<&str> = embedded.iter().map(String::as_str).collect();
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
        vec![("replies", self.replies.len()), ("asking", self.asking.len())]
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        Some(vec![EventKind::ReplyDelivered, EventKind::TurnCompleted])
    }

    /// 2: the questions sessions were left on; 3: as their own type.
    fn snapshot_version(&self) -> u32 {
        3
    }

    /// The replies of turns still open (usually none), and the questions
    /// sessions were left on.
    fn save(&self, w: &mut engram_local_state::snapshot::SnapshotWriter) {
        w.put_map(&self.replies);
        w.put(&self.asking);
    }

    fn restore(
        &mut self,
        r: &mut engram_local_state::snapshot::SnapshotReader<'_>,
    ) -> Result<(), engram_local_state::snapshot::SnapshotError> {
        self.replies = r.take_map()?;
        self.asking = r.take()?;
        Ok(())
    }

    fn observe(&mut self, env: &Envelope) {
        match &env.event {
            Event::ReplyDelivered(_) => self.remember_reply(env),
            Event::TurnCompleted(t) => {
                let reply = env.turn.and_then(|turn| self.replies.remove(&turn)).filter(|_| reply_kept(t));
                self.asking.take(env.session.as_ref());
                self.asking.after(env.session.as_ref(), reply.as_deref());
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
                let asked = self.asking.take(env.session.as_ref());
                let said = TurnSaid { request: &t.text, reply: reply.as_deref(), asked: asked.as_deref() };
                let passages = self.passages(said);
                self.asking.after(env.session.as_ref(), reply.as_deref());
                if passages.is_empty() {
                    return Vec::new();
                }
                vec![derived(env, ActorKind::Memory, PassagesIndexed { passages }, 0)]
            }
            _ => Vec::new(),
        }
    }
}
