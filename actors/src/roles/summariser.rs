//! The summariser: one `summary.written` per session at `session.ended`.
//!
//! With a model server it asks the LLM summariser (seed 002 #9) for the
//! summary and its topics (`summariser = llm`); any failure — timeout, HTTP
//! error, an answer that is not `{"summary", "topics"}` — falls back to the
//! extractive [`SummaryReactor`], which always runs and keeps the session's
//! turns. Both write the same derived id, so a session has one summary.
//!
//! The diary has one entry per day (seed 002 #9): the LLM summariser is
//! handed the day's entry so far and writes it updated; an extractive
//! summary is appended to it ([`Diary`], the fold the reply loop recalls
//! from too).
//!
//! After a restart the summariser looks for its `llm.call_completed` (by
//! its derived id) before asking the model about a session again: the
//! summary went into the log in the same batch.

use chrono::FixedOffset;
use engram_events::derived;
use engram_events::payloads::{SummariserKind, SummaryWritten};
use engram_events::{ActorKind, Envelope, Event, EventKind, SessionId};
use engram_learning::memory::{Diary, TurnText};
use engram_learning::reactors::{Reactor, SummaryReactor};
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

use crate::bus::Bus;
use crate::llm::contexts;
use crate::llm::ContextLlm;
use crate::shell::Role;

/// The summariser actor's role.
pub struct Summariser {
    extractive: SummaryReactor,
    llm: Option<ContextLlm>,
    /// The entries written so far, by day at the user's offset.
    diary: Diary,
}

impl Summariser {
    /// The extractive summariser, with the LLM one in front when `llm` is
    /// given; days are taken at `offset`.
    pub fn new(llm: Option<ContextLlm>, offset: FixedOffset) -> Summariser {
        Summariser { extractive: SummaryReactor::new(), llm, diary: Diary::new(offset) }
    }

    fn summarise(&mut self, llm: &ContextLlm, env: &Envelope, session: &SessionId, bus: &Bus) -> Vec<Envelope> {
        let turns: Vec<TurnText> = self.extractive.turns_of(session).into_iter().cloned().collect();
        let fallback = self.extractive.react(env);
        if turns.is_empty() {
            return fallback;
        }
        if super::called_already(bus, env) {
            return Vec::new();
        }
        let mut dialogue = Vec::new();
        for t in &turns {
            dialogue.push(("user".to_owned(), t.request.clone()));
            if !t.reply.trim().is_empty() {
                dialogue.push(("assistant".to_owned(), t.reply.clone()));
            }
        }
        // The day's entry so far, to update (one entry per day).
        let prior = self.diary.entry(self.diary.day_of(env.at)).map(|e| e.text.clone());
        let (record, parsed) =
            llm.ask(contexts::summary_messages(&dialogue, prior.as_deref()), contexts::parse_summary);
        let mut out = match parsed {
            Ok((summary, topics)) => {
                let event = SummaryWritten {
                    summary,
                    topics,
                    summariser: SummariserKind::Llm,
                    turns_covered: turns.len() as u32,
                };
                vec![derived(env, ActorKind::Summariser, event, 0)]
            }
            Err(e) => {
                tracing::warn!(model = %llm.model, "LLM summariser failed open to the extractive summary: {e}");
                fallback
            }
        };
        out.push(derived(env, ActorKind::Summariser, record, 0));
        out
    }
}

impl Role for Summariser {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out = self.extractive.sizes();
        out.extend(self.diary.sizes());
        out
    }

    fn snapshot_version(&self) -> u32 {
        // 2: a turn's texts are kept cut to MAX_TEXT_CHARS; 3: the diary
        // counts the summaries a day let go (MAX_DAY_SUMMARIES).
        3
    }

    /// The open sessions' turns and the diary.
    fn save(&self, w: &mut SnapshotWriter) {
        self.extractive.save(w);
        self.diary.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.extractive.restore(r)?;
        self.diary.restore(r)
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        Some(vec![
            EventKind::UtteranceReceived,
            EventKind::ReplyDelivered,
            EventKind::TurnCompleted,
            EventKind::SessionEnded,
            EventKind::SummaryWritten,
            EventKind::MemoryForgotten,
        ])
    }

    fn observe(&mut self, env: &Envelope) {
        self.extractive.observe(env);
        self.diary.observe(env);
    }

    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope> {
        self.diary.observe(env);
        match (self.llm.clone(), &env.event, &env.session) {
            (Some(llm), Event::SessionEnded(_), Some(session)) => self.summarise(&llm, env, session, bus),
            _ => self.extractive.react(env),
        }
    }
}
