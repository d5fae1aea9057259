//! The bus the actors talk over: the event log (append + subscribe) and
//! the actors' checkpoints beside it.
//!
//! Actors never call each other. Each appends what it derives and reads
//! what others appended, so every step of every turn is in the log, and a
//! restarted actor finds its work where it left it: at its checkpoint, the
//! `seq` of the last event it handled.
//!
//! **On a log several runtimes share** ([`EventLog::shared`]: the same
//! person's devices on one JetStream stream), every runtime folds every
//! event, but acts only on the turns spoken to it: a turn is answered, and
//! its tools run, on the device the user spoke to, once. The turns (and
//! sessions) a runtime's listener opened are recorded in the data dir
//! before their utterance is appended ([`Bus::record_origin`]), so a
//! restarted runtime still knows its unfinished turns; [`Bus::acts_on`]
//! tells a shell whether to handle an event or only fold it.

use std::sync::Arc;

use engram_events::{Envelope, EventId, EventKind, Seq, SessionId, TurnId};
use engram_local_state::snapshot::{SnapshotDir, SnapshotError, SnapshotReader, SnapshotWriter};
use engram_local_state::{ActorCheckpoints, Origins};
use engram_storage::{AppendOutcome, EventLog, LocalDb, LogError, OpenLog};

/// What the bus tells whoever counts it (the runtime's Prometheus metrics,
/// feature `metrics`): a trait, so the bus knows nothing of what counts.
pub trait BusObserver: Send + Sync {
    /// An append, acknowledged after `took`, that added events of `kinds`.
    fn appended(&self, kinds: &mut dyn Iterator<Item = EventKind>, took: std::time::Duration);

    /// `actor` is `behind` events behind the log's head.
    fn lag(&self, actor: &str, behind: u64);
}

/// The log plus the actors' checkpoints and snapshots.
pub struct Bus {
    log: Arc<dyn EventLog>,
    /// On a shared log, the turns and sessions spoken to this runtime;
    /// `None`: the log is this runtime's alone, and so is every turn.
    origin: Option<Origins>,
    /// Where appends and lags are counted, if metrics are on.
    observer: Option<Arc<dyn BusObserver>>,
    checkpoints: ActorCheckpoints,
    snapshots: SnapshotDir,
    snapshot_every: u64,
    local_db: LocalDb,
    /// Set by [`Bus::close`]: appends are refused from then on.
    closed: std::sync::atomic::AtomicBool,
}

impl Bus {
    /// The bus of an opened data dir: its log, and the actors' checkpoints,
    /// snapshots and (on a shared log) origins kept beside it.
    pub fn new(log: &OpenLog) -> Result<Bus, LogError> {
        let checkpoints = ActorCheckpoints::open(log.local_db())?;
        let snapshots = SnapshotDir::new(log.local_db().dir());
        let origin = if log.shared() { Some(Origins::open(log.local_db())?) } else { None };
        Ok(Bus {
            log: log.log().clone(),
            checkpoints,
            snapshots,
            origin,
            observer: None,
            snapshot_every: 4096,
            local_db: log.local_db().clone(),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Records that `turn` of `session` was spoken to this runtime, durably,
    /// before its utterance is appended (a no-op on a log of its own).
    pub fn record_origin(&self, session: &SessionId, turn: TurnId) -> Result<(), LogError> {
        match &self.origin {
            Some(origin) => origin.record(session, turn),
            None => Ok(()),
        }
    }

    /// Whether this runtime acts on `env` (derives from it), rather than
    /// only folding it: always on a log of its own; on a shared one, see
    /// [`Origins::acts_on`].
    pub fn acts_on(&self, env: &Envelope) -> bool {
        self.origin.as_ref().is_none_or(|origin| origin.acts_on(env))
    }

    /// Whether `session` was started on this runtime (always, on a log of
    /// its own): only its owner ends it when idle.
    pub fn owns_session(&self, session: &SessionId) -> bool {
        self.origin.as_ref().is_none_or(|origin| origin.owns_session(session))
    }

    /// This bus telling `observer` of its appends (and its actors of
    /// their lag).
    pub fn with_observer(mut self, observer: Option<Arc<dyn BusObserver>>) -> Bus {
        self.observer = observer;
        self
    }

    /// Who is told of appends and lags, if anyone.
    pub fn observer(&self) -> Option<&dyn BusObserver> {
        self.observer.as_deref()
    }

    /// This bus with its actors saving a snapshot every `every` events (0:
    /// never).
    pub fn with_snapshot_every(mut self, every: u64) -> Bus {
        self.snapshot_every = every;
        self
    }

    /// Whether an owner whose last snapshot is at `last` saves one now, at
    /// `now`, while running: once `[runtime] snapshot_every` events have
    /// passed. A snapshot costs an encoding of the whole state; a start
    /// after a crash folds at most about that many events per owner.
    pub fn snapshot_due(&self, last: Seq, now: Seq) -> bool {
        self.snapshot_every > 0 && now.0 >= last.0 + self.snapshot_every
    }

    /// The same at a rest point (after a warm-up, at shutdown): once a
    /// quarter of that has passed. Below it, folding the tail at the next
    /// start costs less than saving the whole state now (a `run --once`
    /// adds a dozen events).
    pub fn snapshot_due_at_rest(&self, last: Seq, now: Seq) -> bool {
        self.snapshot_every > 0 && now.0 >= last.0 + (self.snapshot_every / 4).max(1)
    }

    /// Restores `owner`'s state from its snapshot, if it has one that
    /// passes every check ([`engram_local_state::snapshot`], rule 2) with
    /// `upto` as its checkpoint; `restore` reads the body. Returns the seq
    /// the restored state is folded up to, or `None` — then nothing usable
    /// was found, `restore` may have left the state half-read, and the
    /// owner starts from empty and folds the log from seq 1.
    pub fn restore_snapshot(
        &self,
        owner: &str,
        version: u32,
        upto: Seq,
        restore: impl FnOnce(&mut SnapshotReader<'_>) -> Result<(), SnapshotError>,
    ) -> Option<Seq> {
        if version == 0 || self.snapshot_every == 0 {
            return None;
        }
        let started = std::time::Instant::now();
        let restored = self.snapshots.load(self.log.as_ref(), owner, version, upto).and_then(|loaded| {
            let Some(loaded) = loaded else { return Ok(None) };
            let mut r = SnapshotReader::new(loaded.body());
            restore(&mut r)?;
            r.finish()?;
            Ok(Some(loaded.seq))
        });
        match restored {
            Ok(Some(seq)) => {
                let ms = started.elapsed().as_millis() as u64;
                tracing::debug!(owner, seq = seq.0, ms, "state restored from its snapshot");
                Some(seq)
            }
            Ok(None) => None,
            Err(e @ SnapshotError::Stale(_)) => {
                tracing::info!(owner, "snapshot not used ({e}); folding the log from seq 1");
                None
            }
            Err(e) => {
                tracing::warn!(owner, path = %self.snapshots.path(owner).display(), "snapshot not used ({e}); folding the log from seq 1");
                None
            }
        }
    }

    /// Saves `owner`'s state, folded up to `seq`, as its snapshot (which
    /// only a fold of exactly the log up to `seq` may be: rule 3). A
    /// failure is logged and costs the next start time, nothing else.
    pub fn save_snapshot(&self, owner: &str, version: u32, seq: Seq, save: impl FnOnce(&mut SnapshotWriter)) -> bool {
        if version == 0 {
            return false;
        }
        let mut w = SnapshotWriter::new();
        save(&mut w);
        self.save_snapshot_body(owner, version, seq, w.finish())
    }

    /// [`save_snapshot`](Self::save_snapshot) of a body written before:
    /// the fold beside an import encodes each state as soon as it is
    /// folded, and learns the seq it is folded up to only after the append.
    pub fn save_snapshot_body(
        &self,
        owner: &str,
        version: u32,
        seq: Seq,
        body: Result<Vec<u8>, engram_local_state::snapshot::SnapshotError>,
    ) -> bool {
        if version == 0 {
            return false;
        }
        let started = std::time::Instant::now();
        let saved = body.and_then(|body| {
            self.snapshots.save(self.log.as_ref(), owner, version, seq, &body)?;
            Ok(body.len())
        });
        match saved {
            Ok(bytes) => {
                tracing::debug!(owner, seq = seq.0, bytes, ms = started.elapsed().as_millis() as u64, "snapshot saved");
                true
            }
            Err(e) => {
                tracing::warn!(owner, seq = seq.0, "snapshot not saved: {e}");
                false
            }
        }
    }

    /// The log.
    pub fn log(&self) -> &Arc<dyn EventLog> {
        &self.log
    }

    /// The data dir's database, where what it keeps beside the log lives.
    pub fn local_db(&self) -> &LocalDb {
        &self.local_db
    }

    /// Appends `events` in one batch (durably, under the log's policy).
    pub fn append(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        self.counted(events, |log, events| log.append(events))
    }

    /// Appends `events` acknowledged before they are durable: the next
    /// durable append makes them durable with it (see
    /// [`EventLog::submit_deferred`]). For what can be derived again after a
    /// crash, and for host input whose turn ends in a durable append.
    pub fn append_deferred(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        self.counted(events, |log, events| log.append_deferred(events))
    }

    /// Refuses every later append ([`LogError::WriterStopped`]): what the
    /// runtime's shutdown does last, so that an actor still inside a model
    /// call when shutdown stopped waiting writes nothing after it — it
    /// stays at the event that asked, for the next start to handle again.
    pub fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Runs `append` on a non-empty batch, telling the observer (its new
    /// events by kind, its time to the acknowledgement) if there is one.
    fn counted(
        &self,
        events: Vec<Envelope>,
        append: impl FnOnce(&dyn EventLog, Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError>,
    ) -> Result<Vec<AppendOutcome>, LogError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(LogError::WriterStopped);
        }
        let Some(observer) = &self.observer else { return append(&*self.log, events) };
        let kinds: Vec<EventKind> = events.iter().map(Envelope::kind).collect();
        let start = std::time::Instant::now();
        let outcomes = append(&*self.log, events)?;
        observer.appended(&mut new_kinds(&kinds, &outcomes), start.elapsed());
        Ok(outcomes)
    }

    /// Whether an event with this id is in the log: how an actor whose work
    /// is not a pure function (an LLM call, a tool) learns, after a restart,
    /// that it already did it.
    pub fn contains(&self, id: EventId) -> Result<bool, LogError> {
        Ok(self.log.seq_of(id)?.is_some())
    }

    /// Whether the first event of `kind` derived from `cause` is in the log
    /// (see [`engram_events::derived_id`]): what a role whose
    /// work is not a pure function (a model's answer, a tool's effect) asks
    /// before doing that work again after a restart.
    pub fn has_derived(&self, cause: &Envelope, kind: EventKind) -> bool {
        self.contains(engram_events::derived_id(cause, kind, 0)).unwrap_or(false)
    }

    /// The last `seq` an actor handled (0: none), never past the log's
    /// head (see [`ActorCheckpoints::get`]).
    pub fn checkpoint(&self, actor: &str) -> Result<Seq, LogError> {
        self.checkpoints.get(actor, self.log.head())
    }

    /// Records that `actor` handled everything up to `seq`. Not flushed on
    /// its own: a checkpoint that lags after a crash only makes the actor
    /// handle a few events again, which derivation by causation id absorbs.
    pub fn set_checkpoint(&self, actor: &str, seq: Seq) -> Result<(), LogError> {
        self.checkpoints.set(actor, seq)
    }

    /// Gives `actor` a checkpoint at `seq` if it has none: an actor new to a
    /// data dir derives from what happens from now on and folds what came
    /// before (an imported history, or one lived before the actor existed)
    /// without acting on it again. Returns its checkpoint.
    pub fn start_checkpoint(&self, actor: &str, seq: Seq) -> Result<Seq, LogError> {
        if self.checkpoints.set_if_missing(actor, seq)? {
            Ok(seq)
        } else {
            self.checkpoint(actor)
        }
    }

    /// Flushes the checkpoints (at shutdown).
    pub fn flush_checkpoints(&self) -> Result<(), LogError> {
        self.checkpoints.flush()
    }

    /// The events with `from <= seq <= to`, in order.
    pub fn read_range(&self, from: Seq, to: Seq) -> impl Iterator<Item = Result<Envelope, LogError>> + '_ {
        self.log.read_from(from).take_while(move |r| r.as_ref().map_or(true, |e| e.seq <= to))
    }

    /// The events of `kinds` (`None`: all) with `from <= seq <= to`, in
    /// order; records of other kinds are skipped without being decoded.
    pub fn read_range_of(
        &self,
        from: Seq,
        to: Seq,
        kinds: Option<&[EventKind]>,
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + '_> {
        match kinds {
            None => Box::new(self.read_range(from, to)),
            Some(k) => {
                Box::new(self.log.read_kinds(from, k).take_while(move |r| r.as_ref().map_or(true, |e| e.seq <= to)))
            }
        }
    }

    /// The last `seq` in the log.
    pub fn head(&self) -> Seq {
        self.log.head()
    }
}

/// The kinds of the events of an append that were new (an id already in
/// the log is not an append).
fn new_kinds<'a>(kinds: &'a [EventKind], outcomes: &'a [AppendOutcome]) -> impl Iterator<Item = EventKind> + 'a {
    kinds.iter().zip(outcomes).filter(|(_, o)| o.is_new()).map(|(k, _)| *k)
}
