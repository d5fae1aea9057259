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
use engram_storage::snapshot::{SnapshotDir, SnapshotError, SnapshotReader, SnapshotWriter};
use engram_storage::{AppendOutcome, EventLog, LogError, SledLog};

/// The sled tree of the actors' checkpoints (`projection.actor_checkpoints`).
const CHECKPOINTS: &str = "actor_checkpoints";

/// A checkpoint as stored: its seq, big-endian (a value that is not 8
/// bytes reads as 0: the actor folds from seq 1).
fn stored_seq(v: &[u8]) -> Seq {
    Seq(u64::from_be_bytes(v.try_into().unwrap_or([0; 8])))
}

/// The data dir's record of the turns and sessions spoken to this runtime
/// (`device.origin`): `t` + turn ULID, `s` + session id.
const ORIGIN: &str = "origin";

/// The log plus the actors' checkpoints and snapshots.
pub struct Bus {
    log: Arc<dyn EventLog>,
    /// On a shared log, the turns and sessions spoken to this runtime;
    /// `None`: the log is this runtime's alone, and so is every turn.
    origin: Option<sled::Tree>,
    /// Where appends and lags are counted, if metrics are on.
    metrics: Option<Arc<crate::metrics::Metrics>>,
    checkpoints: sled::Tree,
    snapshots: SnapshotDir,
    snapshot_every: u64,
}

impl Bus {
    /// Opens the checkpoint tree of `log`.
    pub fn new(log: Arc<dyn EventLog>) -> Result<Bus, LogError> {
        let checkpoints = log.local().projection_tree(CHECKPOINTS)?;
        let snapshots = SnapshotDir::new(log.local().dir());
        let origin = if log.shared() { Some(log.local().device_tree(ORIGIN)?) } else { None };
        Ok(Bus { log, checkpoints, snapshots, origin, metrics: None, snapshot_every: 4096 })
    }

    /// Records that `turn` of `session` was spoken to this runtime, durably,
    /// before its utterance is appended (a no-op on a log of its own).
    pub fn record_origin(&self, session: &SessionId, turn: TurnId) -> Result<(), LogError> {
        let Some(tree) = &self.origin else { return Ok(()) };
        tree.insert(origin_key(b't', &turn.ulid().to_bytes()), &[])?;
        tree.insert(origin_key(b's', session.as_str().as_bytes()), &[])?;
        tree.flush()?;
        Ok(())
    }

    /// Whether this runtime acts on `env` (derives from it), rather than
    /// only folding it: always on a log of its own; on a shared one, for
    /// the events of turns spoken to it, of its sessions (events of no
    /// turn), and of no session at all (what every runtime derives alike,
    /// with the same ids).
    pub fn acts_on(&self, env: &Envelope) -> bool {
        let Some(tree) = &self.origin else { return true };
        let key = match (&env.turn, &env.session) {
            (Some(turn), _) => origin_key(b't', &turn.ulid().to_bytes()),
            (None, Some(session)) => origin_key(b's', session.as_str().as_bytes()),
            (None, None) => return true,
        };
        // A lookup that fails (an I/O error) acts: an answer twice is
        // better than none.
        tree.contains_key(key).unwrap_or(true)
    }

    /// Whether `session` was started on this runtime (always, on a log of
    /// its own): only its owner ends it when idle.
    pub fn owns_session(&self, session: &SessionId) -> bool {
        let Some(tree) = &self.origin else { return true };
        tree.contains_key(origin_key(b's', session.as_str().as_bytes())).unwrap_or(true)
    }

    /// This bus counting its appends (and its actors their lag) in
    /// `metrics`.
    pub fn with_metrics(mut self, metrics: Option<Arc<crate::metrics::Metrics>>) -> Bus {
        self.metrics = metrics;
        self
    }

    /// The metrics, if they are on.
    pub fn metrics(&self) -> Option<&crate::metrics::Metrics> {
        self.metrics.as_deref()
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
    /// passes every check ([`engram_storage::snapshot`], rule 2) with
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
        let started = std::time::Instant::now();
        let mut w = SnapshotWriter::new();
        save(&mut w);
        let saved = w.finish().and_then(|body| {
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

    /// Runs `append` on a non-empty batch, counting it in the metrics (its
    /// new events by kind, its time to the acknowledgement) when they are on.
    fn counted(
        &self,
        events: Vec<Envelope>,
        append: impl FnOnce(&dyn EventLog, Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError>,
    ) -> Result<Vec<AppendOutcome>, LogError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let Some(m) = &self.metrics else { return append(&*self.log, events) };
        let kinds: Vec<EventKind> = events.iter().map(Envelope::kind).collect();
        let start = std::time::Instant::now();
        let outcomes = append(&*self.log, events)?;
        m.appended(new_kinds(&kinds, &outcomes), start.elapsed());
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
    /// head: a checkpoint beyond it names events a power loss took back
    /// (the log keeps only whole write-ahead records; see
    /// `engram_storage::wal`, rule 5), and the events that take those
    /// positions next are new work.
    pub fn checkpoint(&self, actor: &str) -> Result<Seq, LogError> {
        let stored = match self.checkpoints.get(actor.as_bytes())? {
            Some(v) => stored_seq(&v),
            None => Seq(0),
        };
        Ok(stored.min(self.log.head()))
    }

    /// Records that `actor` handled everything up to `seq`. Not flushed on
    /// its own: a checkpoint that lags after a crash only makes the actor
    /// handle a few events again, which derivation by causation id absorbs.
    pub fn set_checkpoint(&self, actor: &str, seq: Seq) -> Result<(), LogError> {
        self.checkpoints.insert(actor.as_bytes(), &seq.0.to_be_bytes())?;
        Ok(())
    }

    /// Gives `actor` a checkpoint at `seq` if it has none: an actor new to a
    /// data dir derives from what happens from now on and folds what came
    /// before (an imported history, or one lived before the actor existed)
    /// without acting on it again. Returns its checkpoint.
    pub fn start_checkpoint(&self, actor: &str, seq: Seq) -> Result<Seq, LogError> {
        let prev = self.checkpoints.compare_and_swap(actor.as_bytes(), None::<&[u8]>, Some(&seq.0.to_be_bytes()))?;
        match prev {
            Ok(()) => Ok(seq),
            Err(_) => self.checkpoint(actor),
        }
    }

    /// Moves every actor checkpoint that stood at `from` to `to`: events
    /// appended in between by someone else than the runtime (`engram
    /// import`, which derives what the live actors would have) are history
    /// to fold, not work to do. Checkpoints behind `from` (an actor that had
    /// not finished) are left alone.
    pub fn advance_checkpoints(log: &SledLog, from: Seq, to: Seq) -> Result<usize, LogError> {
        let tree = log.projection_tree(CHECKPOINTS)?;
        let mut moved = 0;
        for entry in tree.iter() {
            let (k, v) = entry?;
            if v.as_ref() == from.0.to_be_bytes() {
                tree.insert(k, &to.0.to_be_bytes())?;
                moved += 1;
            }
        }
        tree.flush()?;
        Ok(moved)
    }

    /// How many actors have a checkpoint behind `head`: work left from an
    /// earlier run (a crash), which only a runtime with that run's
    /// configuration should do.
    pub fn checkpoints_behind(log: &SledLog, head: Seq) -> Result<usize, LogError> {
        let tree = log.projection_tree(CHECKPOINTS)?;
        let mut behind = 0;
        for entry in tree.iter() {
            let (_, v) = entry?;
            behind += usize::from(stored_seq(&v) < head);
        }
        Ok(behind)
    }

    /// Flushes the checkpoints (at shutdown).
    pub fn flush_checkpoints(&self) -> Result<(), LogError> {
        self.checkpoints.flush()?;
        Ok(())
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

/// A key of the origin tree: a tag, then the id's bytes.
fn origin_key(tag: u8, id: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + id.len());
    key.push(tag);
    key.extend_from_slice(id);
    key
}

/// The kinds of the events of an append that were new (an id already in
/// the log is not an append).
fn new_kinds<'a>(kinds: &'a [EventKind], outcomes: &'a [AppendOutcome]) -> impl Iterator<Item = EventKind> + 'a {
    kinds.iter().zip(outcomes).filter(|(_, o)| o.is_new()).map(|(k, _)| *k)
}
