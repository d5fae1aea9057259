//! The listener: the host's way in. Every utterance becomes
//! `utterance.received` and `intent.judged` (directed? the query, stop?,
//! confidence) — by the rule-based judge (wake word, hot window, stop
//! words; EN + IT) — plus `day.activated` on the first utterance of a day
//! ([`DayReactor`], as in import). Feedback and session ends from the host
//! are appended here too, so the listener alone numbers a session's turns.
//!
//! **LLM intent judge** (seed 002 #2): with a model server and `[llm]
//! intent_judge_model` set, speech that carries an engagement signal (the
//! wake word, or the hot window open) is judged by the model from the
//! session's recent transcript: it can tell talk *about* the assistant from
//! talk *to* it and resolve pronouns in the query. It runs for speech in
//! voice mode only: typed chat is always directed (a model call would only
//! add latency), ambient speech without a signal is not for the assistant
//! (the seed skips the judge for it), and a stop phrase is honoured at once
//! by the rules — stop must never wait for a model. Any failure (timeout,
//! HTTP error, an answer that is not the judge's JSON) falls back to the
//! rule verdict, `judge = rule`; the call's `llm.call_completed` goes into
//! the utterance's batch either way.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use crossbeam_channel::Sender;
use engram_events::derived;
use engram_events::payloads::*;
use engram_events::{ActorKind, Envelope, Event, EventId, EventKind, Seq, SessionId, TurnId};
use engram_learning::intent::{IntentMode, RuleIntentJudge};
use engram_learning::reactors::{DayReactor, Reactor};
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};
use engram_storage::LogError;

use crate::bus::Bus;
use crate::error::RuntimeError;
use crate::llm::contexts;
use crate::llm::ContextLlm;
use crate::shell::{Deliver, SaveSnapshot, Sizes};

/// How far back the transcript the LLM intent judge reads goes (seed 002
/// #2: a 120 s rolling buffer).
pub const TRANSCRIPT_WINDOW_SECS: i64 = 120;
/// Most utterances in that transcript, however fast people talk.
pub const TRANSCRIPT_MAX_LINES: usize = 32;

/// What the listener made of an utterance.
#[derive(Clone, Debug, PartialEq)]
pub struct Heard {
    /// The turn it opened.
    pub turn: TurnId,
    /// Its number in the session (1-based).
    pub turn_number: u32,
    /// The judgement.
    pub intent: IntentJudged,
}

#[derive(Default, Clone, serde::Serialize, serde::Deserialize)]
struct SessionState {
    turns: u32,
    last_turn: Option<TurnId>,
    last_at: Option<DateTime<Utc>>,
    /// When the assistant last answered (the hot window runs from there).
    last_reply_at: Option<DateTime<Utc>>,
    ended: bool,
    /// The session's sticky model (routing slot 2), stamped on each
    /// utterance (so a restart reads it back from the last one).
    sticky: Option<String>,
    /// Recent utterances, oldest first (for the LLM intent judge).
    transcript: VecDeque<(DateTime<Utc>, String)>,
}

/// The kinds the listener folds (turn numbers, ended sessions, days, hot
/// windows).
pub(crate) const FOLDED_KINDS: &[EventKind] =
    &[EventKind::UtteranceReceived, EventKind::SessionEnded, EventKind::DayActivated, EventKind::ReplyDelivered];

/// The listener's snapshot ([`engram_local_state::snapshot`]): its name and
/// the version of the state it saves.
pub(crate) const SNAPSHOT_NAME: &str = "listener";
/// 2: an ended session keeps no transcript (a snapshot of 1 held every
/// ended session's).
pub(crate) const SNAPSHOT_VERSION: u32 = 2;

/// The listener actor.
pub struct Listener {
    bus: Arc<Bus>,
    judge: RuleIntentJudge,
    mode: IntentMode,
    days: DayReactor,
    sessions: HashMap<SessionId, SessionState>,
    llm: Option<ContextLlm>,
    idle: Option<std::time::Duration>,
    /// The seq of the snapshot restored or last saved.
    snapshot_at: Seq,
}

impl Listener {
    /// A listener that has read the log (turn numbers, days).
    pub fn start(bus: Arc<Bus>, mode: IntentMode) -> Result<Listener, LogError> {
        let (mut l, from) = Listener::restored(bus.clone(), mode);
        let head = bus.head();
        for env in bus.read_range_of(from.next(), head, Some(FOLDED_KINDS)) {
            l.fold(&env?);
        }
        l.warmed_up(from, head);
        Ok(l)
    }

    /// An empty listener with its snapshot restored if it has a usable one,
    /// and the seq it was folded up to (0: none).
    pub(crate) fn restored(bus: Arc<Bus>, mode: IntentMode) -> (Listener, Seq) {
        let empty = || Listener {
            bus: bus.clone(),
            judge: Default::default(),
            mode,
            days: DayReactor::from_projection(&Default::default()),
            sessions: HashMap::new(),
            llm: None,
            idle: None,
            snapshot_at: Seq(0),
        };
        let mut l = empty();
        let head = bus.head();
        let restored = bus.restore_snapshot(SNAPSHOT_NAME, SNAPSHOT_VERSION, head, |r| l.restore(r));
        if restored.is_none() {
            // Whatever a failed restore left half-read goes.
            l = empty();
        }
        (l, restored.unwrap_or(Seq(0)))
    }

    /// The end of the warm-up: the listener, restored at `from`, has folded
    /// the log's [`FOLDED_KINDS`] up to the head, `head`, exactly; a long
    /// fold is saved at once (whether it was).
    pub(crate) fn warmed_up(&mut self, from: Seq, head: Seq) -> bool {
        self.snapshot_at = from;
        let bus = self.bus.clone();
        let saved = bus.snapshot_due_at_rest(from, head)
            && bus.save_snapshot(SNAPSHOT_NAME, SNAPSHOT_VERSION, head, |w| self.save(w));
        if saved {
            self.snapshot_at = head;
        }
        saved
    }

    /// The days and the sessions (turn numbers, hot windows, transcripts,
    /// ended or not).
    pub(crate) fn save(&self, w: &mut SnapshotWriter) {
        self.days.save(w);
        w.put_map(&self.sessions);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.days.restore(r)?;
        self.sessions = r.take_map()?;
        Ok(())
    }

    /// This listener counting calendar days in the user's local time.
    pub fn with_utc_offset(mut self, offset: chrono::FixedOffset) -> Listener {
        self.days = std::mem::take(&mut self.days).with_offset(offset);
        self
    }

    /// This listener ending sessions with no utterance for `idle`
    /// (`session.ended`, reason `idle`); sessions left open by an earlier
    /// run are ended the same way once idle.
    pub fn with_idle_timeout(mut self, idle: Option<std::time::Duration>) -> Listener {
        self.idle = idle;
        self
    }

    fn end_idle(&mut self) {
        let Some(idle) = self.idle else { return };
        let Ok(idle) = chrono::Duration::from_std(idle) else { return };
        let now = Utc::now();
        let due: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(id, s)| !s.ended && s.last_at.is_some_and(|at| now - at >= idle) && self.bus.owns_session(id))
            .map(|(id, _)| id.clone())
            .collect();
        for session in due {
            if let Err(e) = self.end(session.clone(), SessionEndReason::Idle) {
                tracing::warn!(session = session.as_str(), "idle session not ended: {e}");
            }
        }
    }

    /// This listener with the LLM intent judge (see the module docs).
    pub fn with_llm_judge(mut self, llm: Option<ContextLlm>) -> Listener {
        self.llm = llm;
        self
    }

    pub(crate) fn fold(&mut self, env: &Envelope) {
        self.days.observe(env);
        let Some(session) = &env.session else { return };
        match &env.event {
            Event::UtteranceReceived(u) => {
                let s = self.sessions.entry(session.clone()).or_default();
                s.turns = s.turns.max(u.turn_number);
                s.last_turn = env.turn;
                s.last_at = Some(env.at);
                s.sticky = u.sticky_model.clone();
                s.transcript.push_back((env.at, u.text.clone()));
                let horizon = env.at - chrono::Duration::seconds(TRANSCRIPT_WINDOW_SECS);
                while s.transcript.len() > TRANSCRIPT_MAX_LINES
                    || s.transcript.front().is_some_and(|(t, _)| *t < horizon)
                {
                    s.transcript.pop_front();
                }
            }
            // An ended session takes no utterance again: what is kept of
            // it is what answers the host (its end, its last turn for
            // feedback), not its transcript or its model choice.
            Event::SessionEnded(_) => {
                let s = self.sessions.entry(session.clone()).or_default();
                s.ended = true;
                s.transcript = VecDeque::new();
                s.sticky = None;
            }
            // The hot window runs from the reply's time (the reply loop
            // stamps a turn's tail when it delivers it). Read from the log at
            // start and handed on by the dispatcher while running — one
            // source, one clock, whether or not the host still waited.
            Event::ReplyDelivered(_) => {
                let s = self.sessions.entry(session.clone()).or_default();
                s.last_reply_at = s.last_reply_at.max(Some(env.at));
            }
            _ => {}
        }
    }

    fn hear(
        &mut self,
        session: SessionId,
        text: String,
        source: UtteranceSource,
        model: Option<String>,
    ) -> Result<Heard, RuntimeError> {
        let state = self.sessions.get(&session).cloned().unwrap_or_default();
        if state.ended {
            return Err(RuntimeError::SessionEnded(session.as_str().to_owned()));
        }
        let now = Utc::now();
        let number = state.turns + 1;
        let turn = TurnId::for_turn(&session, number, now);
        let utterance = Envelope::at(
            EventId::new_live(),
            now,
            ActorKind::Listener,
            UtteranceReceived {
                text: text.clone(),
                turn_number: number,
                source,
                lang: Some(engram_learning::lang::detect(&text).code().to_owned()),
                model,
                sticky_model: state.sticky.clone(),
            },
        )
        .with_session(session.clone())
        .with_turn(turn);
        let rule = self.judge.judge(&text, self.mode, state.last_reply_at, now);
        let (intent, call) = self.judge_with_llm(rule, &text, source, &state, now);
        // Spoken here: this runtime answers it, on a log shared with others.
        self.bus.record_origin(&session, turn)?;
        let mut batch = vec![utterance.clone()];
        batch.extend(self.days.react(&utterance));
        batch.push(derived(&utterance, ActorKind::Listener, intent.clone(), 0));
        if let Some(call) = call {
            batch.push(derived(&utterance, ActorKind::Listener, call, 0));
        }
        // A turn that goes on ends in the reply loop's durable append, which
        // makes this batch durable too; one that stops here is durable now.
        if intent.directed && !intent.stop {
            self.bus.append_deferred(batch)?;
        } else {
            self.bus.append(batch)?;
        }
        self.fold(&utterance);
        Ok(Heard { turn, turn_number: number, intent })
    }

    /// The LLM intent judge's verdict when it applies (see the module
    /// docs), else the rule verdict; and the call's record if one was made.
    fn judge_with_llm(
        &self,
        rule: IntentJudged,
        text: &str,
        source: UtteranceSource,
        state: &SessionState,
        now: DateTime<Utc>,
    ) -> (IntentJudged, Option<LlmCallCompleted>) {
        let Some(llm) = &self.llm else { return (rule, None) };
        let speech = self.mode == IntentMode::Voice && source == UtteranceSource::Voice;
        // In voice mode the rules direct speech only on a wake word or in
        // the hot window (or for a stop phrase, which is not asked about).
        let engaged = rule.directed && !rule.stop;
        if !speech || !engaged {
            return (rule, None);
        }
        let mut transcript: Vec<String> =
            state.transcript.iter().map(|(at, said)| format!("[{}] {said}", at.format("%H:%M:%S"))).collect();
        transcript.push(format!("[{}] {text}", now.format("%H:%M:%S")));
        let hot = self.judge.in_hot_window(state.last_reply_at, now);
        let messages = contexts::intent_messages(&transcript.join("\n"), &self.judge.name(), hot);
        let (record, parsed) = llm.ask(messages, contexts::parse_intent);
        let intent = match parsed {
            Ok(j) => IntentJudged {
                directed: j.directed,
                query: j.query,
                stop: j.stop,
                confidence: j.confidence,
                judge: JudgeKind::Llm,
            },
            Err(e) => {
                tracing::warn!(model = %llm.model, "LLM intent judge failed open to the rules: {e}");
                rule
            }
        };
        (intent, Some(record))
    }

    fn feedback(
        &mut self,
        session: SessionId,
        rating: FeedbackRating,
        text: Option<String>,
    ) -> Result<Option<TurnId>, RuntimeError> {
        // Feedback about nothing (no turn yet in the session) is not an
        // event: the caller hears `None`.
        let Some(subject) = self.sessions.get(&session).and_then(|s| s.last_turn) else { return Ok(None) };
        let env = Envelope::new(ActorKind::Host, FeedbackReceived { subject_turn: Some(subject), rating, text })
            .with_session(session)
            .with_turn(subject);
        self.bus.append(vec![env])?;
        Ok(Some(subject))
    }

    fn end(&mut self, session: SessionId, reason: SessionEndReason) -> Result<u32, RuntimeError> {
        let state = self.sessions.get(&session).cloned().unwrap_or_default();
        if state.ended {
            return Ok(state.turns);
        }
        let env = Envelope::new(ActorKind::Host, SessionEnded { reason, turns: state.turns }).with_session(session);
        self.bus.append(vec![env.clone()])?;
        self.fold(&env);
        Ok(state.turns)
    }
}

impl Actor for Listener {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(idle) = self.idle {
            let every = (idle / 4).clamp(std::time::Duration::from_millis(100), std::time::Duration::from_secs(10));
            ctx.run_interval(every, |listener, _| listener.end_idle());
        }
    }
}

/// Where the listener's judgement of an utterance goes: run on the
/// listener's thread as soon as the utterance is heard, so the host can
/// choose to be woken now or only when its turn ends
/// ([`crate::bridge::Bridge::when_done`]).
pub type OnHeard = Box<dyn FnOnce(Result<Heard, RuntimeError>) + Send>;

/// What the host sends the listener.
#[derive(Message)]
#[rtype(result = "()")]
pub enum HostInput {
    /// An utterance.
    Utterance {
        /// The session.
        session: SessionId,
        /// What was said or typed.
        text: String,
        /// Voice or chat.
        source: UtteranceSource,
        /// The model the user chose for this utterance (routing slot 1).
        model: Option<String>,
        /// Where the judgement goes.
        reply: OnHeard,
    },
    /// The session's sticky model (routing slot 2); `None` clears it.
    UseModel {
        /// The session.
        session: SessionId,
        /// The model, or none.
        model: Option<String>,
    },
    /// Feedback on the session's last turn.
    Feedback {
        /// The session.
        session: SessionId,
        /// Positive, negative, correction.
        rating: FeedbackRating,
        /// The user's words, if any.
        text: Option<String>,
        /// The turn it is about.
        reply: Sender<Result<Option<TurnId>, RuntimeError>>,
    },
    /// The session is over.
    End {
        /// The session.
        session: SessionId,
        /// Why.
        reason: SessionEndReason,
        /// Its number of turns.
        reply: Sender<Result<u32, RuntimeError>>,
    },
}

/// The kinds the dispatcher hands the listener: what others append that
/// it folds (it folds what it appends itself as it appends it).
pub const LISTENER_KINDS: &[EventKind] = &[EventKind::ReplyDelivered];

/// At shutdown, once every actor has settled at `upto`: the dispatcher
/// hands each event to the listener before any shell counts it as seen,
/// so every `reply.delivered` up to `upto` is folded before this message
/// is handled, and the listener's own events are folded as it appends them.
impl Handler<SaveSnapshot> for Listener {
    type Result = ();

    fn handle(&mut self, msg: SaveSnapshot, _ctx: &mut Context<Self>) {
        let bus = self.bus.clone();
        if bus.snapshot_due_at_rest(self.snapshot_at, msg.upto)
            && bus.save_snapshot(SNAPSHOT_NAME, SNAPSHOT_VERSION, msg.upto, |w| self.save(w))
        {
            self.snapshot_at = msg.upto;
        }
        let _ = msg.done.send(());
    }
}

impl Listener {
    /// Heap bytes of the sessions it knows (ended ones included: a
    /// session ends once, and a host's ended id is refused), counted from
    /// their contents ([`engram_learning::heap`]).
    fn heap_bytes(&self) -> usize {
        use engram_local_state::heap_bytes::{alloc, hash_map, string};
        hash_map(&self.sessions)
            + self
                .sessions
                .iter()
                .map(|(id, s)| {
                    string(id.as_str())
                        + s.sticky.as_deref().map_or(0, string)
                        + alloc(s.transcript.capacity() * size_of::<(DateTime<Utc>, String)>())
                        + s.transcript.iter().map(|(_, t)| string(t)).sum::<usize>()
                })
                .sum::<usize>()
    }
}

impl Handler<Sizes> for Listener {
    type Result = ();

    fn handle(&mut self, msg: Sizes, _ctx: &mut Context<Self>) {
        let open = self.sessions.values().filter(|s| !s.ended).count();
        let lines = self.sessions.values().map(|s| s.transcript.len()).sum();
        let _ = msg.done.send(vec![
            ("listener.sessions".to_owned(), self.sessions.len()),
            ("listener.sessions_open".to_owned(), open),
            ("listener.transcript_lines".to_owned(), lines),
            ("listener.sessions.bytes".to_owned(), self.heap_bytes()),
        ]);
    }
}

impl Handler<Deliver> for Listener {
    type Result = ();

    fn handle(&mut self, msg: Deliver, _ctx: &mut Context<Self>) {
        for env in msg.0.iter().filter(|env| LISTENER_KINDS.contains(&env.kind())) {
            self.fold(env);
        }
    }
}

impl Handler<HostInput> for Listener {
    type Result = ();

    fn handle(&mut self, msg: HostInput, _ctx: &mut Context<Self>) {
        match msg {
            HostInput::Utterance { session, text, source, model, reply } => {
                // A panic here must not take the host's way in down with it.
                let heard = std::panic::catch_unwind(AssertUnwindSafe(|| self.hear(session, text, source, model)))
                    .unwrap_or_else(|_| {
                        tracing::error!("listener panicked; utterance refused");
                        Err(RuntimeError::ActorFailed("listener"))
                    });
                reply(heard);
            }
            HostInput::Feedback { session, rating, text, reply } => {
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| self.feedback(session, rating, text)))
                    .unwrap_or_else(|_| Err(RuntimeError::ActorFailed("listener")));
                let _ = reply.send(r);
            }
            HostInput::UseModel { session, model } => {
                self.sessions.entry(session).or_default().sticky = model;
            }
            HostInput::End { session, reason, reply } => {
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| self.end(session, reason)))
                    .unwrap_or_else(|_| Err(RuntimeError::ActorFailed("listener")));
                let _ = reply.send(r);
            }
        }
    }
}
