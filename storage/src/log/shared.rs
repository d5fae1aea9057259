//! What the log's threads share: the tuning, the messages to the writer,
//! the state every handle, the writer and the applier read (positions,
//! pending ids, the subscribers' hub), and how far the applier has come.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crossbeam_channel::Sender;
use engram_events::{Envelope, EventId, Seq};

use crate::durability::Durability;
use crate::error::LogError;
use crate::event_log::AppendOutcome;
use crate::id_index::{self, IdMap};
use crate::local_db::LocalDb;
use crate::segment::SEGMENT_TARGET_BYTES;
use crate::subscription::Hub;

/// Under the durable policy, how long a deferred append waits for a
/// durable one (or a flush) before the writer flushes it on its own.
pub const DEFERRED_FLUSH: Duration = Duration::from_millis(20);

/// Tuning for [`SledLog`](super::SledLog); the defaults are what engram ships.
#[derive(Clone, Debug)]
pub struct LogConfig {
    /// When appends are acknowledged.
    pub durability: Durability,
    /// Segment size target in bytes.
    pub segment_bytes: usize,
    /// Live buffer per subscriber, in committed batches.
    pub subscriber_buffer: usize,
    /// Most events one group commit takes from the queue.
    pub max_batch_events: usize,
    /// sled's page cache, in bytes. sled's own default (1 GiB) lets a
    /// process grow with the log it writes (an import of a million events
    /// would keep most of them cached); the log is read sequentially
    /// (replay, catch-up) or by id, neither of which needs the whole tree
    /// in memory.
    pub cache_bytes: u64,
    /// Serve this log to followers in other processes (`engram replay
    /// --follow`) on the data dir's Unix socket ([`crate::follow`]). Off
    /// by default: a host embedding the runtime opens no socket unless it
    /// asks; `engram run` asks.
    pub serve_followers: bool,
}

/// [`LogConfig::cache_bytes`] by default: 64 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            durability: Durability::Durable,
            segment_bytes: SEGMENT_TARGET_BYTES,
            subscriber_buffer: 1024,
            max_batch_events: 16_384,
            cache_bytes: DEFAULT_CACHE_BYTES,
            serve_followers: false,
        }
    }
}

/// Where the writer sends a batch's outcomes.
pub(super) type Ack = Sender<Result<Vec<AppendOutcome>, LogError>>;

pub(super) enum WriterMsg {
    /// `durable: false`: acknowledge once committed (see
    /// [`EventLog::submit_deferred`]).
    Append {
        events: Vec<Envelope>,
        ack: Ack,
        durable: bool,
    },
    Flush {
        ack: Sender<Result<(), LogError>>,
    },
    /// Wakes the writer thread to look at its fsync timer (after a caller
    /// committed on its own thread and left records unsynced).
    Tick,
}

pub(super) struct Shared {
    pub(super) dir: PathBuf,
    pub(super) db: sled::Db,
    pub(super) local: LocalDb,
    pub(super) log: sled::Tree,
    pub(super) ids: sled::Tree,
    /// The last acknowledged position.
    pub(super) head: AtomicU64,
    /// The last position sled holds.
    pub(super) applied: Applied,
    /// Ids acknowledged but not applied to sled yet.
    pub(super) pending: Mutex<IdMap<Seq>>,
    /// Tells the applier a reader waits for it.
    pub(super) hurry: Sender<()>,
    /// Messages sent to the writer and not yet committed: a caller commits
    /// on its own thread only when there are none, so that batches stay in
    /// submission order.
    pub(super) in_flight: AtomicUsize,
    pub(super) hub: Arc<Hub>,
}

impl Shared {
    /// Where `id` is: among the pending appends, else in sled's index (an
    /// id leaves the pending ones only once sled has it).
    pub(super) fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        if let Some(&seq) = self.pending.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
            return Ok(Some(seq));
        }
        id_index::get(&self.ids, id)
    }

    /// [`Shared::seq_of`] of many ids at once (the writer's check of a
    /// group commit): the pending ones under one lock, the rest with one
    /// read per index bucket. Returns the ids found.
    pub(super) fn seq_of_many(&self, ids: &[EventId]) -> Result<IdMap<Seq>, LogError> {
        let mut found = IdMap::with_capacity_and_hasher(ids.len(), Default::default());
        let mut rest = Vec::with_capacity(ids.len());
        {
            let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            for id in ids {
                match pending.get(id) {
                    Some(&seq) => {
                        found.insert(*id, seq);
                    }
                    None => rest.push(*id),
                }
            }
        }
        id_index::get_many(&self.ids, &rest, &mut found)?;
        Ok(found)
    }

    /// Waits until sled holds every acknowledged event.
    pub(super) fn caught_up(&self) -> Result<(), LogError> {
        self.applied.wait_for(Seq(self.head.load(Ordering::Acquire)), &self.hurry)
    }
}

/// How far sled has caught up with the acknowledged head: readers of the
/// trees wait for it, so an acknowledged append is read back at once.
pub(super) struct Applied {
    pub(super) state: Mutex<(Seq, Option<String>)>,
    pub(super) changed: Condvar,
}

impl Applied {
    pub(super) fn new(head: Seq) -> Self {
        Applied { state: Mutex::new((head, None)), changed: Condvar::new() }
    }

    /// Waits until sled holds everything up to `seq`, hurrying the
    /// applier (through `hurry`) if it is not there yet.
    pub(super) fn wait_for(&self, seq: Seq, hurry: &Sender<()>) -> Result<(), LogError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.0 < seq {
            let _ = hurry.try_send(());
        }
        while state.0 < seq && state.1.is_none() {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        match &state.1 {
            Some(why) => Err(LogError::Transaction(why.clone())),
            None => Ok(()),
        }
    }

    pub(super) fn advance(&self, seq: Seq) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = seq;
        self.changed.notify_all();
    }

    pub(super) fn fail(&self, why: String) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(why);
        self.changed.notify_all();
    }

    pub(super) fn failure(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }
}
