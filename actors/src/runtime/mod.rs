//! The runtime a host embeds: [`Runtime::builder`] → [`Runtime`], whose
//! handle takes utterances, feedback and session ends and returns replies.
//!
//! ```no_run
//! use engram_actors::runtime::Runtime;
//! use engram_events::SessionId;
//!
//! let rt = Runtime::builder().data_dir("/tmp/engram-host").start()?;
//! let session = SessionId::new("s-1");
//! let reply = rt.handle_utterance(&session, "what time is it")?;
//! println!("{} ({:?})", reply.text, reply.layer);
//! rt.end_session(&session)?;
//! rt.shutdown()?;
//! # Ok::<(), engram_actors::RuntimeError>(())
//! ```
//!
//! Inside, each role runs as an actix actor on its own arbiter (thread),
//! under a supervisor; actors talk only through the log (see [`crate::shell`]).
//! The host's calls block until their turn's `turn.completed` is in the
//! log; hosts on an async runtime call them from a blocking task.

mod beside;
mod builder;
mod launch;
mod prepare;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix::{Addr, Recipient, System};
use engram_events::payloads::{FeedbackRating, PlanStep, RouteLayer, SessionEndReason, UtteranceSource};
use engram_events::{ActorKind, Envelope, Seq, SessionId, TurnId};
use engram_storage::EventLog;

use crate::bridge::Bridge;
use crate::bus::Bus;
use crate::error::RuntimeError;
use crate::roles::listener::{Heard, HostInput, Listener};
use crate::shell::{SaveSnapshot, ShellStatus};

pub use beside::SnapshotsBeside;
pub use builder::RuntimeBuilder;
pub use prepare::Prepared;

/// How long a host call waits for its turn by default.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(120);

/// How long shutdown waits for the actors to save their snapshots.
pub const SNAPSHOT_WAIT: Duration = Duration::from_secs(10);

/// How long shutdown waits for the actors to handle what is in the log.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// How long shutdown waits when what it waits for is a model call in the
/// background (a session's summary or facts, a verdict): a local model
/// may take tens of seconds, and the next start makes the call again.
/// One second, so `engram run --once` exits within 2 s of its reply (the
/// rest of shutdown takes ~0.4 s; with 2 s here, exits were measured
/// 2.1–2.5 s after the reply).
pub const MODEL_CALL_WAIT: Duration = Duration::from_secs(1);

/// What the host gets back for an utterance.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The turn the utterance opened.
    pub turn: TurnId,
    /// How the listener judged it.
    pub heard: Heard,
    /// The reply (empty when the utterance was not for the assistant).
    pub text: String,
    /// Which layer answered (`None`: not directed, or a stop).
    pub layer: Option<RouteLayer>,
    /// The model that planned the turn, if any.
    pub model: Option<String>,
    /// The steps run.
    pub steps: Vec<PlanStep>,
    /// Did every tool succeed.
    pub tools_ok: bool,
    /// From utterance to reply, as the reply loop measured it.
    pub latency_ms: u64,
}

impl Reply {
    /// The reply to an utterance heard, before (or without) its turn's end.
    fn heard(heard: Heard) -> Reply {
        Reply {
            turn: heard.turn,
            heard,
            text: String::new(),
            layer: None,
            model: None,
            steps: Vec::new(),
            tools_ok: true,
            latency_ms: 0,
        }
    }
}

/// What wakes the host's thread for an utterance: once, with its turn's
/// end, or with the listener's judgement alone when the turn stops there.
enum Answer {
    /// Not for the assistant, a stop, nothing asked, or refused.
    Heard(Result<Heard, RuntimeError>),
    /// The turn ran to its end.
    Done(Heard, crate::bridge::Completed),
}

/// Whether a heard utterance opens a turn the actors carry on (one that
/// ends in `turn.completed`).
fn goes_on(heard: &Heard) -> bool {
    heard.intent.directed && !heard.intent.stop && !heard.intent.query.trim().is_empty()
}

/// How long [`Runtime::feedback`] waits for its verdict to be folded: the
/// heuristic judge's takes a millisecond; an LLM judge still grading the
/// turn before is not waited for longer than this.
pub const FEEDBACK_FOLDED: Duration = Duration::from_secs(2);

/// A host's session id, checked ([`SessionId::parse`]) before it reaches
/// the log.
fn checked(session: &SessionId) -> Result<(), RuntimeError> {
    SessionId::parse(session.as_str())
        .map(drop)
        .map_err(|reason| RuntimeError::BadSession { id: session.as_str().to_owned(), reason })
}

/// An actor's name and progress.
struct ActorEntry {
    name: &'static str,
    status: Arc<ShellStatus>,
}

/// The running runtime (see the module docs).
pub struct Runtime {
    bus: Arc<Bus>,
    listener: Addr<Listener>,
    actors: Vec<ActorEntry>,
    bridge: Arc<Bridge>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    system: Option<(System, JoinHandle<()>)>,
    turn_timeout: Duration,
    online: bool,
    /// The models a user may choose (`[llm] candidates`).
    candidates: Vec<String>,
    /// Background model calls in flight (summary, facts, verdicts).
    model_calls: Arc<std::sync::atomic::AtomicUsize>,
    /// Whether shutdown stopped waiting for a model call.
    held_by_model: bool,
    /// `[runtime] max_utterance_bytes`.
    max_utterance_bytes: usize,
    /// Every actor and the listener, to save their snapshots at shutdown.
    snapshots: Vec<Recipient<SaveSnapshot>>,
    /// Every actor and the listener, to count what they hold.
    sizes: Vec<Recipient<crate::shell::Sizes>>,
    /// The `/metrics` endpoint, when `[metrics] listen` is set.
    #[cfg(feature = "metrics")]
    metrics_server: Option<crate::metrics::MetricsServer>,
    /// The tools as the roles see them (set by the builder).
    catalogue: Option<Arc<crate::catalogue::Catalogue>>,
    /// The embedding memo the roles share (set by the builder), counted in
    /// [`Runtime::sizes`].
    memo: Option<engram_local_state::embedding_cache::EmbeddingCache>,
    /// The MCP servers' connections, closed at shutdown.
    #[cfg(feature = "mcp")]
    mcp: Option<Arc<crate::tools::mcp::McpHub>>,
}

impl Runtime {
    /// A builder.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Takes one utterance of `session` through every actor and returns the
    /// reply (typed chat).
    pub fn handle_utterance(&self, session: &SessionId, text: &str) -> Result<Reply, RuntimeError> {
        self.handle_from(session, text, UtteranceSource::Chat)
    }

    /// [`Runtime::handle_utterance`] for speech (the intent judge then
    /// wants a wake word or the hot window, in voice mode).
    pub fn handle_from(&self, session: &SessionId, text: &str, source: UtteranceSource) -> Result<Reply, RuntimeError> {
        self.handle_input(session, text, source, None)
    }

    /// [`Runtime::handle_utterance`] with the model the user chose for this
    /// utterance alone (routing slot 1, above everything but the fast
    /// path): one of `[llm] candidates`.
    pub fn handle_with_model(&self, session: &SessionId, text: &str, model: &str) -> Result<Reply, RuntimeError> {
        self.check_candidate(model)?;
        self.handle_input(session, text, UtteranceSource::Chat, Some(model.to_owned()))
    }

    /// Sets the session's sticky model (routing slot 2: every later planner
    /// turn of the session uses it, unless an utterance names its own), or
    /// clears it with `None`. The choice is recorded on each utterance.
    pub fn use_model(&self, session: &SessionId, model: Option<&str>) -> Result<(), RuntimeError> {
        checked(session)?;
        if let Some(m) = model {
            self.check_candidate(m)?;
        }
        self.listener.do_send(HostInput::UseModel { session: session.clone(), model: model.map(str::to_owned) });
        Ok(())
    }

    /// The models a user may choose (`[llm] candidates`).
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    fn check_candidate(&self, model: &str) -> Result<(), RuntimeError> {
        if self.candidates.iter().any(|c| c == model) {
            Ok(())
        } else {
            Err(RuntimeError::UnknownModel { model: model.to_owned(), candidates: self.candidates.clone() })
        }
    }

    fn handle_input(
        &self,
        session: &SessionId,
        text: &str,
        source: UtteranceSource,
        model: Option<String>,
    ) -> Result<Reply, RuntimeError> {
        checked(session)?;
        let max = self.max_utterance_bytes;
        if text.len() > max {
            return Err(RuntimeError::UtteranceTooLong { bytes: text.len(), max });
        }
        // One wake-up per turn: the listener's thread passes a turn that goes
        // on to the bridge, whose completion wakes this thread; only a turn
        // that stops at the listener (or fails there) wakes it at once.
        let (tx, rx) = crossbeam_channel::bounded::<Answer>(1);
        let heard_at: Arc<std::sync::OnceLock<(TurnId, Instant)>> = Arc::default();
        let (bridge, noted) = (self.bridge.clone(), heard_at.clone());
        let on_heard = move |heard: Result<Heard, RuntimeError>| match heard {
            Ok(h) if goes_on(&h) => {
                let _ = noted.set((h.turn, Instant::now()));
                bridge.when_done(h.turn, Box::new(move |done| drop(tx.send(Answer::Done(h, done)))));
            }
            other => drop(tx.send(Answer::Heard(other))),
        };
        self.listener.do_send(HostInput::Utterance {
            session: session.clone(),
            text: text.to_owned(),
            source,
            model,
            reply: Box::new(on_heard),
        });
        // The turn's time counts from when it was heard, as the judgement
        // itself may ask a model (voice mode's intent judge).
        let mut wait = self.turn_timeout;
        let (heard, done) = loop {
            match rx.recv_timeout(wait) {
                Ok(Answer::Heard(heard)) => return Ok(Reply::heard(heard?)),
                Ok(Answer::Done(heard, done)) => break (heard, done),
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Err(RuntimeError::Stopped),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                    let Some(&(turn, at)) = heard_at.get() else { continue };
                    match (at + self.turn_timeout).checked_duration_since(Instant::now()) {
                        Some(left) => wait = left,
                        // Given up: unless the completion is on its way.
                        None if self.bridge.forget(turn) => {
                            return Err(RuntimeError::TurnTimeout {
                                turn: turn.to_string(),
                                secs: self.turn_timeout.as_secs(),
                            })
                        }
                        None => wait = Duration::from_secs(1),
                    }
                }
            }
        };
        let mut reply = Reply::heard(heard);
        reply.text = done.text;
        reply.layer = Some(done.layer);
        reply.model = done.model;
        reply.steps = done.steps;
        reply.tools_ok = done.tools_ok;
        reply.latency_ms = done.latency_ms;
        Ok(reply)
    }

    /// The user's feedback on the session's last turn (the judge turns it
    /// into a verdict). Returns the turn it is about; `None` when the
    /// session has no turn yet, and then nothing is appended.
    ///
    /// Waits (up to [`FEEDBACK_FOLDED`]) for the judge's verdict and for the
    /// router to fold it, so the next utterance is routed knowing it: a
    /// `:bad` answer is not replayed to a host that asks again at once.
    pub fn feedback(
        &self,
        session: &SessionId,
        rating: FeedbackRating,
        text: Option<&str>,
    ) -> Result<Option<TurnId>, RuntimeError> {
        checked(session)?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.listener.do_send(HostInput::Feedback {
            session: session.clone(),
            rating,
            text: text.map(str::to_owned),
            reply: tx,
        });
        let turn = rx.recv().map_err(|_| RuntimeError::Stopped)??;
        if turn.is_some() && !self.settle_chain(&["judge", "router"], FEEDBACK_FOLDED) {
            tracing::debug!("feedback: the verdict is not folded yet; the next turn may be routed without it");
        }
        Ok(turn)
    }

    /// Waits until the actors of `chain` have handled the log up to its
    /// head, one after the other — each may append what the next consumes
    /// (the judge a verdict, the router what the verdict takes back) — or
    /// `timeout` passes; true when they have. Unlike [`Runtime::settle`] it
    /// waits for no other actor (an LLM summary under way).
    fn settle_chain(&self, chain: &[&str], timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        for name in chain {
            let Some(actor) = self.actors.iter().find(|a| a.name == *name) else { continue };
            let head = self.bus.head();
            while !actor.status.settled_at(head) {
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        true
    }

    /// Ends a session: the pattern store records its turns, the summariser
    /// writes its summary. Returns its number of turns.
    ///
    /// Waits (up to 5 s) for the actors to finish what is in the log first,
    /// so the session's verdicts precede its end and are recorded with it
    /// rather than as re-evaluations a moment later.
    pub fn end_session(&self, session: &SessionId) -> Result<u32, RuntimeError> {
        checked(session)?;
        self.settle(Duration::from_secs(5));
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.listener.do_send(HostInput::End { session: session.clone(), reason: SessionEndReason::Host, reply: tx });
        rx.recv().map_err(|_| RuntimeError::Stopped)?
    }

    /// Whether every actor has handled everything up to `head`, and `head`
    /// is still the log's head.
    fn settled_at(&self, head: Seq) -> bool {
        self.actors.iter().all(|a| a.status.settled_at(head)) && self.bus.head() == head
    }

    /// Waits until every actor has handled everything in the log (or
    /// `timeout` passes); true when they have.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let head = self.bus.head();
            if self.settled_at(head) {
                return true;
            }
            if Instant::now() >= deadline {
                for a in &self.actors {
                    tracing::warn!(
                        actor = a.name,
                        head = head.0,
                        seen = a.status.seen.load(Ordering::Acquire),
                        forwarded = a.status.forwarded.load(Ordering::Acquire),
                        position = a.status.position.load(Ordering::Acquire),
                        "not settled"
                    );
                }
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Retracts what the assistant learnt (a fact, by a text it holds, or
    /// everything a session taught): one `memory.forgotten`, which every
    /// actor folds before its next prompt — the fact reaches no model call
    /// again, and a restart or `engram rebuild` keeps it retracted. Returns
    /// the event as appended; [`engram_learning::memory::ForgetError`] when
    /// nothing matches (then nothing is appended). Waits (up to 5 s) for
    /// the actors to fold it.
    pub fn forget(&self, what: &engram_learning::memory::Forget) -> Result<Envelope, RuntimeError> {
        self.settle(Duration::from_secs(5));
        let env = engram_learning::memory::forget::forget(self.log().as_ref(), what, ActorKind::Host)?;
        self.settle(Duration::from_secs(5));
        Ok(env)
    }

    /// The log (to read what happened).
    pub fn log(&self) -> &Arc<dyn EventLog> {
        self.bus.log()
    }

    /// The data dir's embedding memo, as the runtime's roles use it (a
    /// request embedded once is not embedded again), with `caps`: typed
    /// local state for a host or a bench that embeds beside the runtime —
    /// never the raw database it lives in.
    pub fn embedding_cache(
        &self,
        caps: engram_local_state::embedding_cache::CacheCaps,
    ) -> Result<engram_local_state::embedding_cache::EmbeddingCache, RuntimeError> {
        Ok(engram_local_state::embedding_cache::EmbeddingCache::open(self.bus.local_db(), caps)?)
    }

    /// Whether a model server is configured (false: offline mode).
    pub fn is_online(&self) -> bool {
        self.online
    }

    /// Per actor: (name, last seq handled, panics caught, restarts).
    pub fn actor_status(&self) -> Vec<(&'static str, u64, u64, u64)> {
        self.actors
            .iter()
            .map(|a| {
                (
                    a.name,
                    a.status.position.load(Ordering::Acquire),
                    a.status.panics.load(Ordering::Relaxed),
                    a.status.restarts.load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// The number of entries in each structure the actors keep in memory,
    /// by `actor.structure` (`router.fast_path.l1_rows`,
    /// `reply_loop.passages`, `listener.sessions`, …), sorted by name: what
    /// `engram bench soak` watches to tell what grows with use from what
    /// stays bounded. Each actor answers between two events; an actor busy
    /// for longer than 5 s is left out.
    ///
    /// Entries named `….bytes` are the heap bytes of a learnt table,
    /// counted from its contents (`engram_learning::heap`);
    /// `embedding_memo.rows`, `.bytes` and `.rows_cap` are the embedding
    /// memo's rows as counted, their bytes and its cap (`[storage]
    /// embedding_cache_rows`): a bounded cache, on disk and in sled's page
    /// cache.
    pub fn sizes(&self) -> Vec<(String, usize)> {
        let (done, got) = crossbeam_channel::unbounded();
        for r in &self.sizes {
            r.do_send(crate::shell::Sizes { done: done.clone() });
        }
        drop(done);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut out = self.bridge.sizes();
        for _ in &self.sizes {
            match got.recv_deadline(deadline) {
                Ok(s) => out.extend(s),
                Err(_) => break,
            }
        }
        if let Some(memo) = &self.memo {
            let (rows, bytes, cap) = memo.held();
            out.extend([
                ("embedding_memo.rows".to_owned(), rows.unwrap_or(0)),
                ("embedding_memo.bytes".to_owned(), bytes),
                ("embedding_memo.rows_cap".to_owned(), cap),
            ]);
        }
        out.sort();
        out
    }

    /// Per actor: how many events of the log it has not handled yet
    /// ([`ShellStatus::lag_at`] the head now; the
    /// `engram_subscription_lag_events` gauge's measure, without the
    /// `metrics` feature). What `engram bench soak` reads at each checkpoint
    /// to tell a mailbox backlog, which would grow with the turns, from
    /// what the actors hold.
    pub fn lags(&self) -> Vec<(&'static str, u64)> {
        let head = self.bus.head();
        self.actors.iter().map(|a| (a.name, a.status.lag_at(head))).collect()
    }

    /// Per actor: the seq of the snapshot its last warm-up restored (0: it
    /// folded the log from seq 1; see [`engram_local_state::snapshot`]).
    pub fn restored_snapshots(&self) -> Vec<(&'static str, u64)> {
        self.actors.iter().map(|a| (a.name, a.status.restored.load(Ordering::Acquire))).collect()
    }

    /// Where `/metrics` is served (`[metrics] listen`; the port the OS
    /// picked for `:0`).
    #[cfg(feature = "metrics")]
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_server.as_ref().map(crate::metrics::MetricsServer::addr)
    }

    /// Lets the actors finish what is in the log (up to 10 s), moves every
    /// settled actor's checkpoint to the head and saves the snapshots that
    /// are due, stops the actors and flushes the log. Dropping a runtime
    /// without calling it stops the actors too, without waiting: they
    /// resume from their checkpoints at the next start.
    ///
    /// A model asked at a session's end (its summary, its facts, a
    /// verdict) holds the process at most [`MODEL_CALL_WAIT`]: after that,
    /// shutdown stops waiting, the actor keeps its checkpoint before the
    /// event that asked, and the next start asks again from the log — a
    /// slow local model never keeps `engram run` from exiting.
    pub fn shutdown(mut self) -> Result<(), RuntimeError> {
        if self.settle_for_shutdown() {
            // Every actor has handled all it wants up to the head: its
            // checkpoint is the head (an import before the next start then
            // counts as history to every actor; see `ActorCheckpoints::advance`).
            let head = self.bus.head();
            for a in &self.actors {
                self.bus.set_checkpoint(a.name, head)?;
            }
            self.save_snapshots(head);
        } else {
            tracing::warn!("shutdown: actors still busy after 10 s; they resume from their checkpoints next start");
        }
        self.stop_all();
        #[cfg(feature = "mcp")]
        if let Some(hub) = self.mcp.take() {
            hub.shutdown();
        }
        self.bus.flush_checkpoints()?;
        self.bus.log().flush()?;
        self.bus.close();
        Ok(())
    }

    /// Every tool the assistant can call now, with its source (`builtin`,
    /// `host`, `mcp:SERVER`), sorted by name: the catalogue's current view,
    /// what the next turn is planned with.
    pub fn tools(&self) -> Vec<(Arc<dyn crate::tools::Tool>, crate::tools::ToolSource)> {
        let Some(catalogue) = &self.catalogue else { return Vec::new() };
        let view = catalogue.view();
        catalogue.registry().listing().into_iter().filter(|(t, _)| view.has(t.name())).collect()
    }

    /// The MCP servers and where each stands (starting, ready, failed…).
    #[cfg(feature = "mcp")]
    pub fn mcp_status(&self) -> Vec<crate::tools::mcp::McpServerStatus> {
        self.mcp.as_ref().map(|h| h.status()).unwrap_or_default()
    }

    /// Has every actor and the listener save its state, folded up to
    /// `head`, as its snapshot, so the next start folds nothing (waits up
    /// to [`SNAPSHOT_WAIT`]; a snapshot not saved costs that start time,
    /// nothing else).
    fn save_snapshots(&self, head: Seq) {
        let (done, saved) = crossbeam_channel::unbounded();
        for r in &self.snapshots {
            r.do_send(SaveSnapshot { upto: head, done: done.clone() });
        }
        drop(done);
        let deadline = Instant::now() + SNAPSHOT_WAIT;
        for _ in &self.snapshots {
            if saved.recv_deadline(deadline).is_err() {
                tracing::warn!("shutdown: not every actor saved its snapshot; the next start folds more of the log");
                break;
            }
        }
    }

    /// [`settle`](Self::settle) for up to 10 s — less when what is left
    /// is a background model call (module docs of [`Runtime::shutdown`]).
    fn settle_for_shutdown(&mut self) -> bool {
        let started = Instant::now();
        loop {
            if self.settled_at(self.bus.head()) {
                return true;
            }
            let waited = started.elapsed();
            let calls = self.model_calls.load(Ordering::Acquire);
            if waited >= MODEL_CALL_WAIT && calls > 0 {
                tracing::warn!(
                    calls,
                    "shutdown: not waiting for a model call at a session's end; the next start makes it again"
                );
                self.held_by_model = true;
                return false;
            }
            if waited >= SHUTDOWN_WAIT {
                return self.settle(Duration::ZERO);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn stop_all(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some((system, thread)) = self.system.take() {
            system.stop();
            let _ = thread.join();
        }
        // The actors' arbiters wind down on threads of their own, each
        // dropping its actor's handle on the bus as it goes: wait for them,
        // so that the log (and the data dir's lock) is released when
        // `shutdown` returns and the data dir can be opened again at once.
        // (Not for an actor inside a model call: it lets go when the call
        // ends, and nothing it would write is waited for.)
        let wait = if self.held_by_model { Duration::ZERO } else { Duration::from_secs(5) };
        let deadline = Instant::now() + wait;
        while Arc::strong_count(&self.bus) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_all();
        let _ = self.bus.flush_checkpoints();
    }
}
