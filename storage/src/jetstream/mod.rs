//! The event log on a NATS JetStream stream: one log shared by several
//! runtimes (the same person's laptop, desktop and home server), replicated
//! by a NATS cluster when the log must survive a disk.
//!
//! [`JetStreamLog`] keeps two copies and one rule between them:
//!
//! | where | what | role |
//! |---|---|---|
//! | the stream (`[storage] stream`, subject `<stream>.events`) | one message per event: its binary frame, `Nats-Msg-Id` = the event id | **the log**: positions, order, acknowledgement |
//! | `<data dir>/log.sled` | a [`SledLog`] holding the stream's events at the same positions | the **local copy**: reads, the id index, subscriptions, and beside it the data dir's projections, caches, checkpoints and snapshots |
//!
//! Rules, each kept by the code named:
//!
//! 1. **`seq` is the stream sequence** (`remote::attach`). The stream is
//!    created with deletes and purges denied, so it never gets a gap; one
//!    that has one (first sequence past 1, deleted messages) is refused at
//!    open with a [`LogError::Stream`] naming them.
//! 2. **The local copy is a prefix of the stream** (`remote::check_prefix`,
//!    `replica::Replica::apply`). Events enter it only in stream order, at
//!    their stream sequence; at open, its last event must be the stream's
//!    event at that position (a data dir of another stream, or a stream that
//!    lost acknowledged events, is refused, naming the `seq`). It is written
//!    relaxed: what a crash takes from it is fetched again at the next open.
//! 3. **Idempotent by id, for ever** (`publisher`): an append first brings
//!    the local copy up to the stream's end, looks every id up in its id
//!    index, and publishes only the new ones, each with
//!    `Nats-Expected-Last-Sequence` set to the position before it. If any
//!    other writer appended in between, the server refuses the publish, the
//!    copy catches up and the lookup runs again. So an id is never stored
//!    twice, however long ago it was appended — JetStream's own duplicate
//!    window (`Nats-Msg-Id`, two minutes) is only a first line. The cost: a
//!    lookup in a local index, no extra round trip; a refused publish costs
//!    one stream-info request and the catch-up.
//! 4. **Batches are not interleaved** (`publisher`): a batch's messages are
//!    published back to back, each expecting the one before, and carry
//!    `Engram-Batch-Left` (how many of the batch follow). A writer whose
//!    copy ends inside another writer's batch waits for it
//!    ([`BATCH_WAIT`]) before it publishes. A writer killed mid-batch leaves
//!    a prefix of it in the stream; since ids are idempotent, its retry (an
//!    actor re-deriving, an import run again) appends exactly the rest.
//! 5. **Acknowledged means stored by the server** — and by a majority of
//!    the stream's replicas when `replicas` > 1 — before `append` returns.
//!    nats-server 2.9 writes every message to its file before acknowledging
//!    (file storage, no asynchronous flush), so a killed server loses
//!    nothing acknowledged; it `fsync`s its files once a minute, so a power
//!    loss of a single-node server can lose the last minute. Three replicas
//!    on three machines are the durable configuration (`docs/distributed.md`).
//! 6. **A stranger's message stops no device** (`foreign`, `follower`,
//!    `replica::Replica::apply`): a message on the subject that no engram
//!    wrote — bytes that are no frame, a frame naming another position, a
//!    copy of an event the stream holds before — is recorded at its
//!    position as `stream.message_skipped` (the same event on every device:
//!    its id comes from the position and the bytes), with a warning naming
//!    the stream sequence. Rule 2 and `engram verify` match it with the
//!    message by the bytes' hash. (Deletes being denied, nothing could take
//!    such a message off the stream: refusing it stopped every device.)
//!
//! Reads, `seq_of` and subscriptions are served from the local copy, which
//! a follower task keeps current with an ordered consumer on the stream: a
//! subscription sees another runtime's events as soon as they reach it,
//! backlog then live, with the local log's no-gap, no-duplicate guarantee.
//! A copy far behind (a new device, one that was away) first fetches in
//! bulk through a pull consumer with large requests, checking every
//! position itself before the copy sees it (rule 2), then hands over to
//! the ordered consumer.

mod follower;
mod foreign;
mod offline;
mod packs;
mod publisher;
mod remote;
mod replica;
#[cfg(feature = "test-support")]
pub mod server;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use engram_events::{Envelope, EventId, EventKind, Seq};

use crate::durability::Durability;
use crate::error::LogError;
use crate::event_log::{AppendOutcome, AppendTicket, EventLog};
use crate::log::{LogConfig, SledLog};
use crate::subscription::{Filter, Subscription};

pub use offline::OfflineCopy;
pub use remote::{Credentials, CredentialsUnset};

/// How long a writer waits for another writer's unfinished batch at the end
/// of the stream before it takes it for abandoned and appends after it.
pub const BATCH_WAIT: Duration = Duration::from_secs(2);

/// Events a pack holds (`packs` module): ≈ 200–400 KiB for events of
/// 200–400 bytes, far under nats-server's default 1 MiB `max_payload`,
/// and enough that a round trip per pack vanishes beside the events' own
/// cost.
pub const PACK_EVENTS: u64 = 1024;

/// How long a flush waits for the packer to move before it leaves the
/// rest of the packs to it (or to the next device that opens the log).
const PACK_STALL: Duration = Duration::from_secs(10);

/// The header giving how many messages of the same batch follow this one.
pub const BATCH_LEFT_HEADER: &str = "Engram-Batch-Left";

/// Told how far a first open's fetch has come: (events fetched, events to
/// fetch).
pub type FetchProgress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// Where the stream is and how it is made.
#[derive(Clone)]
pub struct JetStreamConfig {
    /// The server (or servers, comma-separated), e.g.
    /// `nats://127.0.0.1:4222`.
    pub url: String,
    /// The stream's name; its subject is `<stream>.events`.
    pub stream: String,
    /// Replicas of a stream this log creates (1 on a single server, 3 on a
    /// cluster). An existing stream keeps its own.
    pub replicas: usize,
    /// How to authenticate, if the server asks.
    pub credentials: Option<Credentials>,
    /// How long a request (a publish's acknowledgement, a stream lookup)
    /// may take before it is retried; an append gives up after
    /// [`JetStreamConfig::append_timeout`].
    pub request_timeout: Duration,
    /// How long an append keeps retrying while the server is unreachable
    /// before it fails with [`LogError::Remote`].
    pub append_timeout: Duration,
    /// How long `open` waits for the server.
    pub connect_timeout: Duration,
    /// Called while `open` fetches what the copy lacks (a new device on a
    /// long stream), for a progress bar; `None`: nothing reported.
    pub progress: Option<FetchProgress>,
    /// Publish packs of the log's events and fetch from them (`packs`
    /// module: a new device fetches a long stream in packs of
    /// [`PACK_EVENTS`], not message by message). On by default.
    pub packs: bool,
}

impl std::fmt::Debug for JetStreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamConfig")
            .field("url", &self.url)
            .field("stream", &self.stream)
            .field("replicas", &self.replicas)
            .field("credentials", &self.credentials)
            .field("request_timeout", &self.request_timeout)
            .field("append_timeout", &self.append_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("progress", &self.progress.is_some())
            .field("packs", &self.packs)
            .finish()
    }
}

impl Default for JetStreamConfig {
    fn default() -> Self {
        JetStreamConfig {
            url: "nats://127.0.0.1:4222".to_owned(),
            stream: "engram".to_owned(),
            replicas: 1,
            credentials: None,
            request_timeout: Duration::from_secs(5),
            append_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            progress: None,
            packs: true,
        }
    }
}

impl JetStreamConfig {
    /// The one subject the stream's events are published on.
    pub fn subject(&self) -> String {
        format!("{}.events", self.stream)
    }
}

/// The event log on a JetStream stream, with its local copy in the data dir
/// (see the module docs for the rules between them).
pub struct JetStreamLog {
    replica: Arc<replica::Replica>,
    publisher: publisher::Publisher,
    remote: Arc<remote::Remote>,
    /// The packs stream, unless off or refused.
    packs: Option<Arc<packs::Packs>>,
    /// Runs the client, the follower and the publisher; dropped last.
    runtime: Option<tokio::runtime::Runtime>,
}

impl JetStreamLog {
    /// Opens the data dir's local copy (taking its lock), connects to the
    /// server, creates the stream if it is missing, checks rules 1 and 2,
    /// and fetches whatever the copy lacks before it returns.
    pub fn open(dir: &Path, local: LogConfig, config: JetStreamConfig) -> Result<Self, LogError> {
        let log = Arc::new(SledLog::open(dir, copy_config(local))?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("engram-nats")
            .enable_all()
            .build()
            .map_err(|e| LogError::io(dir, e))?;
        let progress = config.progress.clone();
        let remote = Arc::new(run_blocking(&runtime, remote::Remote::connect(config))?);
        let replica = Arc::new(replica::Replica::new(log));
        let end = run_blocking(&runtime, remote.attach(&replica))?;
        let packs = match remote.config.packs {
            true => run_blocking(&runtime, packs::Packs::open(&remote)),
            false => None,
        };
        follower::Follower::start(&runtime, remote.clone(), replica.clone(), packs.clone());
        let start = replica.local().head();
        let report = |head: Seq| {
            if let Some(p) = &progress {
                p(head.0.saturating_sub(start.0), end.0.saturating_sub(start.0));
            }
        };
        run_blocking(&runtime, replica.wait_for_reporting(end, replica::CATCH_UP_STALL, &report))?;
        if let Some(p) = &packs {
            packs::Packer::start(&runtime, p.clone(), remote.clone(), replica.clone());
        }
        let publisher = publisher::Publisher::start(&runtime, remote.clone(), replica.clone());
        Ok(JetStreamLog { replica, publisher, remote, packs, runtime: Some(runtime) })
    }

    /// The data dir's copy of the stream: a sled log at the same
    /// positions (rule 2).
    pub fn copy(&self) -> &Arc<SledLog> {
        self.replica.local()
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.remote.config.stream
    }

    /// The stream's last sequence as the server has it now (the local copy
    /// may not have reached it yet).
    pub fn remote_head(&self) -> Result<Seq, LogError> {
        self.block_on(self.remote.last_seq())
    }

    /// Waits until the local copy holds every event up to `seq` (another
    /// runtime's, say), for at most `timeout`.
    pub fn wait_for(&self, seq: Seq, timeout: Duration) -> Result<(), LogError> {
        self.block_on(self.replica.wait_for(seq, timeout))
    }

    /// Events this log's catch-ups took from packs rather than from the
    /// stream's messages (how much of a new device's fetch they served).
    pub fn fetched_from_packs(&self) -> u64 {
        self.packs.as_ref().map_or(0, |p| p.fetched())
    }

    /// Compares every event of the local copy with the stream's message at
    /// the same position (id and frame), returning the first `seq` that
    /// differs: `engram verify` on a JetStream data dir.
    pub fn compare_with_stream(&self) -> Result<Option<(Seq, String)>, LogError> {
        self.block_on(self.remote.compare(&self.replica))
    }

    fn block_on<T: Send>(&self, f: impl std::future::Future<Output = T> + Send) -> T {
        run_blocking(self.runtime.as_ref().expect("the runtime lives as long as the log"), f)
    }
}

/// How the data dir's copy is opened (rule 2): relaxed, since what a crash
/// takes from it is fetched again from the stream.
fn copy_config(local: LogConfig) -> LogConfig {
    LogConfig { durability: Durability::Relaxed { flush_every_ms: 100 }, ..local }
}

/// Runs `f` on the log's runtime from a synchronous caller — which may be
/// on a tokio runtime of its own (a tokio host), where blocking on another
/// runtime's thread would panic: then it blocks on a thread of its own.
fn run_blocking<T: Send>(runtime: &tokio::runtime::Runtime, f: impl std::future::Future<Output = T> + Send) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => std::thread::scope(|s| s.spawn(|| runtime.block_on(f)).join().expect("a log task panicked")),
        Err(_) => runtime.block_on(f),
    }
}

impl EventLog for JetStreamLog {
    fn submit(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        self.publisher.submit(events)
    }

    fn append(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        let runtime = self.runtime.as_ref().expect("the runtime lives as long as the log");
        match self.publisher.append_here(runtime, events) {
            Ok(outcomes) => outcomes,
            Err(events) => self.publisher.submit(events)?.wait(),
        }
    }

    fn head(&self) -> Seq {
        self.replica.local().head()
    }

    fn read_from(&self, from: Seq) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        self.replica.local().read_from(from)
    }

    fn read_kinds(
        &self,
        from: Seq,
        kinds: &[EventKind],
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        self.replica.local().read_kinds(from, kinds)
    }

    fn subscribe(&self, from: Seq, filter: Filter) -> Result<Subscription, LogError> {
        self.replica.local().subscribe(from, filter)
    }

    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        self.replica.local().seq_of(id)
    }

    fn flush(&self) -> Result<(), LogError> {
        // A copy that stopped following the stream (a panic applying its
        // events) fails what ends with a flush — an import, a shutdown —
        // rather than let it end as a success.
        if let Some(e) = self.replica.failure() {
            return Err(e);
        }
        // Acknowledged events are the server's; this makes the copy durable.
        self.replica.local().flush()?;
        // And packs whatever range it completed, so that a device joining
        // after an import finds them (bounded: packs are optional).
        if let Some(p) = &self.packs {
            self.block_on(packs::wait_packed(p, self.head(), PACK_STALL));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("jetstream (stream {} at {})", self.remote.config.stream, self.remote.config.url)
    }

    fn shared(&self) -> bool {
        true
    }

    fn verify_remote(&self) -> Result<Option<(Seq, String)>, LogError> {
        self.compare_with_stream()
    }
}

impl Drop for JetStreamLog {
    fn drop(&mut self) {
        self.publisher.stop();
        if let Some(rt) = self.runtime.take() {
            let stop = move || rt.shutdown_timeout(Duration::from_secs(2));
            // A runtime may not be dropped from inside another one's task.
            match tokio::runtime::Handle::try_current() {
                Ok(_) => drop(std::thread::spawn(stop).join()),
                Err(_) => stop(),
            }
        }
    }
}
