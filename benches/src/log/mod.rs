//! Event-log benchmark: engram's sled log beside SQLite in WAL mode, the
//! store the seeds' Python systems use.
//!
//! Three measurements, each on both sides with the same envelopes, the
//! same frame bytes and the same batching, in fresh directories:
//!
//! * **durable append** with 1, 4 and 16 concurrent appenders: every
//!   appender appends single-event batches and waits for each
//!   acknowledgement, which comes only after fsync (engram
//!   [`Durability::Durable`], group commit; SQLite `synchronous=FULL`, one
//!   `BEGIN IMMEDIATE … COMMIT` per event, a connection per appender; and,
//!   as a second peer, the same with SQLite's transactions serialised by an
//!   in-process mutex, which spares it its busy handler's sleeps);
//! * **relaxed append**: one appender, batches of [`Options::relaxed_batch`]
//!   events (engram [`Durability::Relaxed`] flushing every
//!   [`RELAXED_FLUSH_MS`] ms; SQLite `synchronous=NORMAL`, a transaction per
//!   batch);
//! * **replay**: every event of the relaxed corpus read back in order and
//!   decoded into an [`Envelope`] (engram [`EventLog::read_from`]; SQLite
//!   `SELECT frame FROM log ORDER BY seq` and [`binary::decode`] per row),
//!   on a freshly opened store, then warm; then frames only (CRC-checked,
//!   not deserialised) and the zero-copy view ([`SledLog::for_each_view`] /
//!   [`binary::RawFrame::view`]), which show the storage share.
//!
//! Each figure is the median of [`Options::runs`] runs (`2 * runs + 1` for
//! the cheap replay figures). The building blocks
//! ([`workload()`], [`engram_append`], [`SqlitePeer`], …) are public so that
//! the criterion bench (`benches/log.rs`) measures with the same code.
//!
//! One module per concept, their items re-exported here:
//!
//! * `workload` — what is appended: the envelopes and how they are split
//!   over appenders and batches;
//! * `timing` — how an append is timed: the appender threads both sides
//!   run through, events per second;
//! * `engram_side`, `sqlite_side` and [`jetstream`] — the sled log and its
//!   peers, opened, appended to and read back;
//! * `scratch` — the fresh directories the stores live in, their disk use;
//! * `run` — the measurements, in order, and [`run()`], which makes the
//!   report;
//! * `report` — [`LogReport`] and its figures, as JSON and as a table.
//!
//! [`Durability::Durable`]: engram::storage::Durability::Durable
//! [`Durability::Relaxed`]: engram::storage::Durability::Relaxed
//! [`Envelope`]: engram::events::Envelope
//! [`EventLog::read_from`]: engram::storage::EventLog::read_from
//! [`binary::decode`]: engram::events::codec::binary::decode
//! [`SledLog::for_each_view`]: engram::storage::SledLog::for_each_view
//! [`binary::RawFrame::view`]: engram::events::codec::binary::RawFrame::view

use std::path::PathBuf;

mod engram_side;
pub mod jetstream;
mod report;
mod run;
mod scratch;
mod sqlite_side;
mod timing;
mod workload;

pub use engram_side::{
    engram_append, engram_durable_config, engram_frames, engram_open, engram_relaxed_config, engram_replay,
    engram_replay_view,
};
pub use report::{BesideFigure, DiskUse, DurableFigures, DurablePair, JetStreamFigures, LogReport, Pair, Settings};
pub use run::{durable_once, run};
pub use scratch::disk_bytes;
pub use sqlite_side::{SqlitePeer, SqliteSync};
pub use timing::timed_appenders;
pub use workload::{mean_frame_bytes, split, text_len_for, workload, workload_event};

/// Flush interval of the engram log in the relaxed measurement.
pub const RELAXED_FLUSH_MS: u64 = 100;

/// Concurrency levels of the durable-append measurement.
pub const DURABLE_APPENDERS: [usize; 3] = [1, 4, 16];

/// Options of `engram bench log`.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Events in the relaxed-append run and the replay corpus
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    pub events: usize,

    /// Durable appends per concurrency level (split over the appenders)
    #[arg(long, value_name = "N", default_value_t = 2_000)]
    pub durable_events: usize,

    /// Events per append call in the relaxed run (both sides)
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub relaxed_batch: usize,

    /// Target size of one encoded event frame, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 200)]
    pub payload_bytes: usize,

    /// Runs per figure; the report gives the median
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub runs: usize,

    /// Where to put the scratch stores (a temporary directory is made in it
    /// and removed afterwards) [default: the system's temporary directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// `jetstream`: also measure the log on NATS JetStream (durable append,
    /// batched append, replay), beside the sled log and SQLite in the same
    /// run
    #[arg(long, value_enum, default_value_t = BenchBackend::Sled)]
    pub backend: BenchBackend,

    /// With --backend jetstream: the server to measure against (each
    /// measurement gets a stream of its own, deleted afterwards) [default: a
    /// nats-server the bench starts on loopback]
    #[arg(long, value_name = "URL")]
    pub nats_url: Option<String>,
}

/// `engram bench log --backend`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BenchBackend {
    /// The sled log beside SQLite.
    #[default]
    Sled,
    /// The same, and the JetStream log beside both.
    Jetstream,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            json: false,
            events: 200_000,
            durable_events: 2_000,
            relaxed_batch: 64,
            payload_bytes: 200,
            runs: 3,
            dir: None,
            backend: BenchBackend::Sled,
            nats_url: None,
        }
    }
}
