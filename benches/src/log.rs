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
//! ([`workload`], [`engram_append`], [`SqlitePeer`], …) are public so that
//! the criterion bench (`benches/log.rs`) measures with the same code.

use crate::{machine, thousands};
use std::path::{Path, PathBuf};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension};

use engram::events::codec::binary;
use engram::events::payloads::{UtteranceReceived, UtteranceSource};
use engram::events::{ActorKind, Envelope, Seq, SessionId, TurnId};
use engram::storage::{Durability, EventLog, LogConfig, SledLog};

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

/// One figure, engram beside SQLite.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Pair {
    /// engram, events per second (median of the runs).
    pub engram_eps: f64,
    /// SQLite, events per second (median of the runs).
    pub sqlite_eps: f64,
    /// `engram_eps / sqlite_eps`.
    pub ratio: f64,
    /// Every engram run, events per second.
    pub engram_runs: Vec<f64>,
    /// Every SQLite run, events per second.
    pub sqlite_runs: Vec<f64>,
}

impl Pair {
    /// The medians and ratio of per-run samples.
    pub fn from_runs(engram_runs: Vec<f64>, sqlite_runs: Vec<f64>) -> Self {
        let engram_eps = median(&engram_runs);
        let sqlite_eps = median(&sqlite_runs);
        let round = |v: Vec<f64>| v.into_iter().map(f64::round).collect();
        Pair {
            engram_eps,
            sqlite_eps,
            ratio: ratio(engram_eps, sqlite_eps),
            engram_runs: round(engram_runs),
            sqlite_runs: round(sqlite_runs),
        }
    }
}

/// `a / b` to two decimals.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a / b * 100.0).round() / 100.0
    } else {
        f64::NAN
    }
}

/// Durable append at one concurrency level: engram beside SQLite with a
/// connection per appender (`sqlite_eps`, what `ratio` compares with), and
/// beside SQLite with its transactions serialised by an in-process lock
/// (`sqlite_serialized_eps`), which spares it the sleeps of its busy handler.
#[derive(serde::Serialize, Debug, Clone)]
pub struct DurablePair {
    /// engram and SQLite, a connection per appender.
    #[serde(flatten)]
    pub pair: Pair,
    /// SQLite, a connection per appender, one transaction at a time under
    /// an in-process mutex (median of the runs).
    pub sqlite_serialized_eps: f64,
    /// `engram_eps / sqlite_serialized_eps`.
    pub ratio_serialized: f64,
    /// Every serialised SQLite run.
    pub sqlite_serialized_runs: Vec<f64>,
}

impl DurablePair {
    /// Medians and ratios of per-run samples.
    pub fn from_runs(engram_runs: Vec<f64>, sqlite_runs: Vec<f64>, serialized_runs: Vec<f64>) -> Self {
        let pair = Pair::from_runs(engram_runs, sqlite_runs);
        let sqlite_serialized_eps = median(&serialized_runs);
        DurablePair {
            ratio_serialized: ratio(pair.engram_eps, sqlite_serialized_eps),
            pair,
            sqlite_serialized_eps,
            sqlite_serialized_runs: serialized_runs.into_iter().map(f64::round).collect(),
        }
    }
}

/// Durable append at each concurrency level.
#[derive(serde::Serialize, Debug, Clone)]
pub struct DurableFigures {
    /// One appender.
    pub c1: DurablePair,
    /// Four concurrent appenders.
    pub c4: DurablePair,
    /// Sixteen concurrent appenders.
    pub c16: DurablePair,
}

/// How each side was configured, for the record.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Settings {
    /// Durable appends per concurrency level.
    pub durable_events: usize,
    /// Events per append call in the durable runs.
    pub durable_batch: usize,
    /// Events per append call in the relaxed run.
    pub relaxed_batch: usize,
    /// The engram durability policies used.
    pub engram_durable: String,
    /// The engram relaxed policy.
    pub engram_relaxed: String,
    /// The SQLite durable setup.
    pub sqlite_durable: String,
    /// The SQLite relaxed setup.
    pub sqlite_relaxed: String,
    /// What replay does on each side.
    pub replay: String,
}

/// One JetStream figure beside the sled log's and SQLite's of the same run.
#[derive(serde::Serialize, Debug, Clone)]
pub struct BesideFigure {
    /// The JetStream log, events per second (median of the runs).
    pub jetstream_eps: f64,
    /// The sled log's figure of the same workload.
    pub sled_eps: f64,
    /// SQLite's.
    pub sqlite_eps: f64,
    /// `jetstream_eps / sled_eps`.
    pub vs_sled: f64,
    /// `jetstream_eps / sqlite_eps`.
    pub vs_sqlite: f64,
    /// Every JetStream run.
    pub jetstream_runs: Vec<f64>,
}

impl BesideFigure {
    fn new(runs: Vec<f64>, beside: &Pair) -> Self {
        let jetstream_eps = median(&runs);
        BesideFigure {
            jetstream_eps,
            sled_eps: beside.engram_eps,
            sqlite_eps: beside.sqlite_eps,
            vs_sled: ratio(jetstream_eps, beside.engram_eps),
            vs_sqlite: ratio(jetstream_eps, beside.sqlite_eps),
            jetstream_runs: runs.into_iter().map(f64::round).collect(),
        }
    }
}

/// `--backend jetstream`: the log on NATS JetStream, same workloads.
#[derive(serde::Serialize, Debug, Clone)]
pub struct JetStreamFigures {
    /// The server measured against.
    pub server: String,
    /// What an acknowledgement means there.
    pub acknowledgement: String,
    /// Single-event appends, one appender, each waiting for its
    /// acknowledgement (beside the durable c1 figures).
    pub append_durable_c1: BesideFigure,
    /// Four appenders.
    pub append_durable_c4: BesideFigure,
    /// Sixteen appenders.
    pub append_durable_c16: BesideFigure,
    /// One appender, batches of `relaxed_batch` (beside the relaxed figures).
    pub append_batched: BesideFigure,
    /// A new data dir fetching the whole stream at its first open (beside
    /// the fresh-open replay figures).
    pub replay_fetch: BesideFigure,
    /// Replay of that data dir's copy, reopened (beside the same).
    pub replay_copy: BesideFigure,
}

/// Bytes on disk of the replay corpus.
#[derive(serde::Serialize, Debug, Clone)]
pub struct DiskUse {
    /// engram's data dir (sled files), in bytes.
    pub engram_bytes: u64,
    /// SQLite database plus WAL, in bytes.
    pub sqlite_bytes: u64,
    /// The encoded frames alone, in bytes.
    pub frame_bytes: u64,
}

/// The report of `engram bench log`.
#[derive(serde::Serialize, Debug, Clone)]
pub struct LogReport {
    /// Durable append at 1, 4 and 16 appenders.
    pub append_durable: DurableFigures,
    /// Relaxed append, one appender.
    pub append_relaxed: Pair,
    /// Full replay with decoding, on a freshly opened store.
    pub replay: Pair,
    /// The same, read a second time through the same handle.
    pub replay_warm: Pair,
    /// Replay without deserialising (warm): every frame read in order and
    /// its length and CRC checked, the storage share of `replay`.
    pub replay_frames: Pair,
    /// Zero-copy replay (warm): every frame CRC-checked and its archives
    /// validated in place, nothing deserialised.
    pub replay_view: Pair,
    /// Runs per replay figure.
    pub replay_median_of: usize,
    /// Events in the relaxed run and the replay corpus.
    pub events: usize,
    /// Mean encoded frame size, in bytes.
    pub payload_bytes: usize,
    /// Runs per figure (the figures are their medians).
    pub median_of: usize,
    /// Batching and durability on each side.
    pub settings: Settings,
    /// Disk use of the replay corpus.
    pub disk: DiskUse,
    /// Where it was measured.
    pub machine: String,
    /// With `--backend jetstream`: the JetStream log beside both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jetstream: Option<JetStreamFigures>,
}

impl LogReport {
    /// Human-readable table.
    pub fn human(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "event log: {} events of {} B; durable: {} single-event appends per level; \
             median of {} runs ({} for replay)\n\n",
            self.events, self.payload_bytes, self.settings.durable_events, self.median_of, self.replay_median_of
        ));
        out.push_str(&format!(
            "{:<22} {:>12} {:>12} {:>7}   {:>12} {:>7}\n",
            "events/s", "engram", "sqlite", "ratio", "sqlite ser.", "ratio"
        ));
        let row = |name: &str, p: &Pair, ser: Option<(f64, f64)>| {
            let ser = match ser {
                Some((eps, ratio)) => format!("   {:>12} {:>6.2}x", thousands(eps), ratio),
                None => String::new(),
            };
            format!(
                "{:<22} {:>12} {:>12} {:>6.2}x{ser}\n",
                name,
                thousands(p.engram_eps),
                thousands(p.sqlite_eps),
                p.ratio
            )
        };
        let d = &self.append_durable;
        for (name, c) in [("append durable c1", &d.c1), ("append durable c4", &d.c4), ("append durable c16", &d.c16)] {
            out.push_str(&row(name, &c.pair, Some((c.sqlite_serialized_eps, c.ratio_serialized))));
        }
        out.push_str(&row(&format!("append relaxed b{}", self.settings.relaxed_batch), &self.append_relaxed, None));
        out.push_str(&row("replay", &self.replay, None));
        out.push_str(&row("replay, warm", &self.replay_warm, None));
        out.push_str(&row("replay, frames only", &self.replay_frames, None));
        out.push_str(&row("replay, zero-copy view", &self.replay_view, None));
        out.push_str(&format!(
            "\ndisk (replay corpus): engram {:.1} MiB, sqlite {:.1} MiB, frames alone {:.1} MiB\n",
            mib(self.disk.engram_bytes),
            mib(self.disk.sqlite_bytes),
            mib(self.disk.frame_bytes)
        ));
        out.push_str(&format!(
            "sqlite ser.: SQLite with its transactions serialised by an in-process mutex\n{}\n",
            self.machine
        ));
        if let Some(js) = &self.jetstream {
            out.push_str(&format!("\nJetStream: {}\n{}\n\n", js.server, js.acknowledgement));
            out.push_str(&format!(
                "{:<22} {:>12} {:>12} {:>8} {:>12} {:>9}\n",
                "events/s", "jetstream", "sled", "vs sled", "sqlite", "vs sqlite"
            ));
            for (name, f) in [
                ("append durable c1", &js.append_durable_c1),
                ("append durable c4", &js.append_durable_c4),
                ("append durable c16", &js.append_durable_c16),
                (&*format!("append batched b{}", self.settings.relaxed_batch), &js.append_batched),
                ("replay: fetch, new dir", &js.replay_fetch),
                ("replay: local copy", &js.replay_copy),
            ] {
                out.push_str(&format!(
                    "{:<22} {:>12} {:>12} {:>7.2}x {:>12} {:>8.2}x\n",
                    name,
                    thousands(f.jetstream_eps),
                    thousands(f.sled_eps),
                    f.vs_sled,
                    thousands(f.sqlite_eps),
                    f.vs_sqlite
                ));
            }
        }
        out
    }
}

/// The median of repeated runs' figures, rounded to a whole number.
fn median(runs: &[f64]) -> f64 {
    crate::percentile(runs, 50.0).unwrap_or(f64::NAN).round()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

// ---------------------------------------------------------------------------
// Workload

const WORDS: [&str; 24] = [
    "turn", "on", "the", "kitchen", "lights", "please", "what", "is", "weather", "tomorrow", "in", "rome", "remind",
    "me", "to", "call", "mum", "at", "six", "play", "some", "jazz", "set", "timer",
];

/// Utterance text of exactly `len` bytes, varied by `i`.
fn utterance_text(i: usize, len: usize) -> String {
    let mut text = String::with_capacity(len + 16);
    // A small LCG: deterministic, different words for different events.
    let mut x = (i as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    while text.len() < len {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(WORDS[(x >> 33) as usize % WORDS.len()]);
    }
    text.truncate(len);
    text
}

/// Event `i` of the workload: an `utterance.received` of session
/// `bench-sNNNNN` (16 turns each), with `text_len` bytes of text, a fresh
/// live id and the current time.
pub fn workload_event(i: usize, text_len: usize) -> Envelope {
    let session = SessionId::new(format!("bench-s{:05}", i / 16));
    let turn_number = (i % 16) as u32 + 1;
    let env = Envelope::new(
        ActorKind::Listener,
        UtteranceReceived {
            text: utterance_text(i, text_len),
            turn_number,
            source: UtteranceSource::Voice,
            lang: Some("en".to_owned()),
            model: None,
            sticky_model: None,
        },
    );
    let turn = TurnId::for_turn(&session, turn_number, env.at);
    env.with_session(session).with_turn(turn)
}

/// The text length that makes an encoded frame about `payload_bytes` long.
pub fn text_len_for(payload_bytes: usize) -> usize {
    let mut len = 64usize;
    for _ in 0..4 {
        let frame = binary::encode(&workload_event(0, len)).len();
        let next = (len as i64 + payload_bytes as i64 - frame as i64).max(9) as usize;
        if next == len {
            break;
        }
        len = next;
    }
    len
}

/// `n` workload events whose frames are about `payload_bytes` long (fresh
/// ids every call, so two calls never collide in one log).
pub fn workload(n: usize, payload_bytes: usize) -> Vec<Envelope> {
    let len = text_len_for(payload_bytes);
    (0..n).map(|i| workload_event(i, len)).collect()
}

/// Mean encoded frame size of `events`, in bytes.
pub fn mean_frame_bytes(events: &[Envelope]) -> usize {
    if events.is_empty() {
        return 0;
    }
    let mut buf = Vec::with_capacity(512);
    let mut total = 0usize;
    for env in events {
        buf.clear();
        total += binary::encode_into(env, &mut buf);
    }
    (total as f64 / events.len() as f64).round() as usize
}

/// Splits `events` over `appenders` appenders (round robin), each into
/// batches of `batch` events: what each appender thread submits, in order.
pub fn split(events: Vec<Envelope>, appenders: usize, batch: usize) -> Vec<Vec<Vec<Envelope>>> {
    let appenders = appenders.max(1);
    let batch = batch.max(1);
    let mut per: Vec<Vec<Envelope>> = vec![Vec::new(); appenders];
    for (i, env) in events.into_iter().enumerate() {
        per[i % appenders].push(env);
    }
    per.into_iter()
        .map(|evs| {
            let mut batches = Vec::with_capacity(evs.len() / batch + 1);
            let mut it = evs.into_iter().peekable();
            while it.peek().is_some() {
                batches.push(it.by_ref().take(batch).collect());
            }
            batches
        })
        .collect()
}

// ---------------------------------------------------------------------------
// engram side

/// The engram log configuration of the durable runs.
pub fn engram_durable_config() -> LogConfig {
    LogConfig { durability: Durability::Durable, ..LogConfig::default() }
}

/// The engram log configuration of the relaxed runs.
pub fn engram_relaxed_config() -> LogConfig {
    LogConfig { durability: Durability::Relaxed { flush_every_ms: RELAXED_FLUSH_MS }, ..LogConfig::default() }
}

/// Opens an engram log in `dir`.
pub fn engram_open(dir: &Path, config: LogConfig) -> anyhow::Result<SledLog> {
    SledLog::open(dir, config).with_context(|| format!("opening the engram log in {}", dir.display()))
}

/// Runs `append` on one thread per element of `work` — each thread first
/// runs `prepare` (connections, buffers), then waits until all are ready —
/// and returns the wall time from that moment until the last one finished.
/// Both sides of the append benchmarks run through this one harness.
pub fn timed_appenders<W: Send, P>(
    work: Vec<W>,
    prepare: impl Fn() -> anyhow::Result<P> + Sync,
    append: impl Fn(&mut P, W) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Duration> {
    let barrier = Barrier::new(work.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = work
            .into_iter()
            .map(|w| {
                let (barrier, prepare, append) = (&barrier, &prepare, &append);
                s.spawn(move || -> anyhow::Result<()> {
                    let state = prepare();
                    barrier.wait();
                    append(&mut state?, w)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("an appender panicked"))??;
        }
        Ok(start.elapsed())
    })
}

/// Runs one appender thread per element of `work`, each appending its
/// batches in order and waiting for every acknowledgement; returns the wall
/// time from the moment all appenders are ready until the last ack.
pub fn engram_append(log: &dyn EventLog, work: Vec<Vec<Vec<Envelope>>>) -> anyhow::Result<Duration> {
    timed_appenders(
        work,
        || Ok(()),
        |_, batches| {
            for batch in batches {
                log.append(batch)?;
            }
            Ok(())
        },
    )
}

/// Reads every event from the start, decoding each into an [`Envelope`];
/// returns how many.
pub fn engram_replay(log: &SledLog) -> anyhow::Result<usize> {
    let mut n = 0usize;
    for env in log.read_from(Seq(1)) {
        std::hint::black_box(env?);
        n += 1;
    }
    Ok(n)
}

/// Iterates the segments and splits them into frames, checking each
/// frame's length and CRC, without deserialising: the storage share of
/// replay; returns how many frames.
pub fn engram_frames(log: &SledLog) -> anyhow::Result<usize> {
    let mut n = 0usize;
    for seg in log.segments() {
        let (_, v) = seg?;
        for frame in binary::frames(&v) {
            std::hint::black_box(frame?);
            n += 1;
        }
    }
    Ok(n)
}

/// The zero-copy replay ([`SledLog::for_each_view`]): every frame
/// CRC-checked and its archives validated in place, nothing deserialised;
/// returns how many.
pub fn engram_replay_view(log: &SledLog) -> anyhow::Result<usize> {
    let n = log.for_each_view(Seq(1), |view| {
        std::hint::black_box(view.seq());
        Ok(())
    })?;
    Ok(n as usize)
}

// ---------------------------------------------------------------------------
// SQLite side

/// SQLite's `synchronous` setting (the database is always in WAL mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqliteSync {
    /// `synchronous=FULL`: every commit fsyncs the WAL (durable).
    Full,
    /// `synchronous=NORMAL`: commits do not fsync; checkpoints do.
    Normal,
}

impl SqliteSync {
    fn pragma(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
        }
    }
}

/// The SQLite peer: table `log(seq INTEGER PRIMARY KEY, id BLOB UNIQUE,
/// frame BLOB)` in WAL mode, storing the same frames engram stores (the
/// binary codec's), idempotent by id like engram's log.
#[derive(Clone, Debug)]
pub struct SqlitePeer {
    path: PathBuf,
    sync: SqliteSync,
}

impl SqlitePeer {
    /// Creates (or opens) the database at `path`.
    pub fn create(path: &Path, sync: SqliteSync) -> anyhow::Result<Self> {
        let peer = SqlitePeer { path: path.to_owned(), sync };
        let conn = peer.connect()?;
        conn.execute_batch("CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, id BLOB UNIQUE, frame BLOB)")?;
        Ok(peer)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new connection: WAL, the peer's `synchronous`, a 60 s busy timeout.
    pub fn connect(&self) -> anyhow::Result<Connection> {
        let conn = Connection::open(&self.path).with_context(|| format!("opening {}", self.path.display()))?;
        conn.busy_timeout(Duration::from_secs(60))?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "SQLite refused WAL mode (got {mode})");
        conn.execute_batch(&format!("PRAGMA synchronous={}", self.sync.pragma()))?;
        Ok(conn)
    }

    /// Appends one batch in one transaction (`BEGIN IMMEDIATE; INSERT …;
    /// COMMIT`), encoding each envelope with the binary codec.
    pub fn append(conn: &mut Connection, batch: &[Envelope], buf: &mut Vec<u8>) -> anyhow::Result<()> {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached("INSERT OR IGNORE INTO log (id, frame) VALUES (?1, ?2)")?;
            for env in batch {
                buf.clear();
                binary::encode_into(env, buf);
                stmt.execute((&env.id.0 .0.to_be_bytes()[..], &buf[..]))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Like [`engram_append`]: one thread and connection per element of
    /// `work`, each appending its batches in order, a transaction per batch;
    /// returns the wall time from the moment all are ready until the last
    /// commit. With `serialize`, each transaction runs under one in-process
    /// mutex, so appenders queue on it instead of polling SQLite's lock in
    /// the busy handler (which sleeps between attempts).
    pub fn append_concurrently(&self, work: Vec<Vec<Vec<Envelope>>>, serialize: bool) -> anyhow::Result<Duration> {
        let lock = Mutex::new(());
        timed_appenders(
            work,
            || Ok((self.connect()?, Vec::with_capacity(512))),
            |(conn, buf), batches| {
                for batch in &batches {
                    let _turn = if serialize { Some(lock.lock().unwrap_or_else(|e| e.into_inner())) } else { None };
                    SqlitePeer::append(conn, batch, buf)?;
                }
                Ok(())
            },
        )
    }

    /// Reads every frame in `seq` order and decodes each into an
    /// [`Envelope`] (the same decode engram's replay does); returns how many.
    pub fn replay(conn: &Connection) -> anyhow::Result<usize> {
        let mut stmt = conn.prepare_cached("SELECT frame FROM log ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(row) = rows.next()? {
            let env = binary::decode(row.get_ref(0)?.as_blob()?)?;
            std::hint::black_box(env);
            n += 1;
        }
        Ok(n)
    }

    /// Reads every frame in `seq` order and checks its length and CRC
    /// ([`binary::split_frame`]) without deserialising it: SQLite's share of
    /// replay, the same work as [`engram_frames`]; returns how many.
    pub fn frames(conn: &Connection) -> anyhow::Result<usize> {
        let mut stmt = conn.prepare_cached("SELECT frame FROM log ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(row) = rows.next()? {
            let (frame, rest) = binary::split_frame(row.get_ref(0)?.as_blob()?)?;
            anyhow::ensure!(rest.is_empty(), "{} trailing bytes after a frame", rest.len());
            std::hint::black_box(frame);
            n += 1;
        }
        Ok(n)
    }

    /// Like [`engram_replay_view`]: every frame read in `seq` order,
    /// CRC-checked and its archives validated in place
    /// ([`binary::RawFrame::view`]), nothing deserialised; returns how many.
    pub fn replay_view(conn: &Connection) -> anyhow::Result<usize> {
        let mut stmt = conn.prepare_cached("SELECT frame FROM log ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(row) = rows.next()? {
            let (frame, rest) = binary::split_frame(row.get_ref(0)?.as_blob()?)?;
            anyhow::ensure!(rest.is_empty(), "{} trailing bytes after a frame", rest.len());
            std::hint::black_box(frame.view()?.seq());
            n += 1;
        }
        Ok(n)
    }

    /// Rows in the table.
    pub fn count(conn: &Connection) -> anyhow::Result<usize> {
        let n: Option<i64> = conn.query_row("SELECT count(*) FROM log", [], |r| r.get(0)).optional()?;
        Ok(n.unwrap_or(0) as usize)
    }
}

// ---------------------------------------------------------------------------
// The run

/// Total size of the files under `path` (or of `path` itself).
pub fn disk_bytes(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if meta.is_dir() {
        std::fs::read_dir(path).map(|rd| rd.flatten().map(|e| disk_bytes(&e.path())).sum()).unwrap_or(0)
    } else {
        meta.len()
    }
}

fn sqlite_files_bytes(db: &Path) -> u64 {
    let mut total = disk_bytes(db);
    for suffix in ["-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        total += disk_bytes(Path::new(&p));
    }
    total
}

fn eps(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

struct Scratch {
    root: PathBuf,
    _temp: Option<tempfile::TempDir>,
    next: usize,
}

impl Scratch {
    fn new(dir: Option<&Path>) -> anyhow::Result<Self> {
        match dir {
            Some(d) => {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
                let temp = tempfile::Builder::new().prefix("engram-bench-").tempdir_in(d)?;
                Ok(Scratch { root: temp.path().to_owned(), _temp: Some(temp), next: 0 })
            }
            None => {
                let temp = tempfile::Builder::new().prefix("engram-bench-").tempdir()?;
                Ok(Scratch { root: temp.path().to_owned(), _temp: Some(temp), next: 0 })
            }
        }
    }

    /// A fresh, empty directory.
    fn fresh(&mut self, what: &str) -> anyhow::Result<PathBuf> {
        self.next += 1;
        let dir = self.root.join(format!("{:03}-{what}", self.next));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(dir)
    }
}

fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

fn progress(opts: &Options, what: &str) {
    super::progress(opts.json, &format!("measuring {what}"));
}

/// One durable-append run of `events` single-event appends spread over
/// `appenders` appenders, in fresh directories under `dir`: engram, SQLite
/// with a connection per appender, and SQLite serialised by an in-process
/// mutex. Returns their events per second, in that order.
pub fn durable_once(
    dir: &Path,
    events: usize,
    appenders: usize,
    payload_bytes: usize,
    engram_first: bool,
) -> anyhow::Result<[f64; 3]> {
    let envs = workload(events, payload_bytes);
    let engram = |envs: Vec<Envelope>| -> anyhow::Result<f64> {
        let engram_dir = dir.join("engram");
        let log = engram_open(&engram_dir, engram_durable_config())?;
        let d = engram_append(&log, split(envs, appenders, 1))?;
        anyhow::ensure!(log.head() == Seq(events as u64), "engram appended {} of {events}", log.head().0);
        drop(log);
        remove(&engram_dir);
        Ok(eps(events, d))
    };
    let sqlite = |envs: Vec<Envelope>, serialize: bool| -> anyhow::Result<f64> {
        let db = dir.join(if serialize { "serialized.db" } else { "sqlite.db" });
        let peer = SqlitePeer::create(&db, SqliteSync::Full)?;
        let d = peer.append_concurrently(split(envs, appenders, 1), serialize)?;
        let n = SqlitePeer::count(&peer.connect()?)?;
        anyhow::ensure!(n == events, "SQLite appended {n} of {events}");
        Ok(eps(events, d))
    };
    if engram_first {
        let e = engram(envs.clone())?;
        let s = sqlite(envs.clone(), false)?;
        Ok([e, s, sqlite(envs, true)?])
    } else {
        let s = sqlite(envs.clone(), false)?;
        let z = sqlite(envs.clone(), true)?;
        Ok([engram(envs)?, s, z])
    }
}

/// Times `f` on a store opened just before (not timed); returns events per
/// second, checking it saw `expected` events.
fn timed_read(expected: usize, what: &str, f: impl FnOnce() -> anyhow::Result<usize>) -> anyhow::Result<f64> {
    let start = Instant::now();
    let n = f()?;
    let d = start.elapsed();
    anyhow::ensure!(n == expected, "{what} read {n} of {expected} events");
    Ok(eps(n, d))
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> anyhow::Result<LogReport> {
    anyhow::ensure!(opts.events > 0 && opts.durable_events > 0, "--events and --durable-events must be positive");
    let runs = opts.runs.max(1);
    let mut scratch = Scratch::new(opts.dir.as_deref())?;
    let mut server = match opts.backend {
        BenchBackend::Jetstream => Some(crate::jetstream::BenchServer::new(opts.nats_url.as_deref(), &scratch.root)?),
        BenchBackend::Sled => None,
    };
    let mut js_durable: Vec<Vec<f64>> = Vec::new();
    let mut js_batched: [Vec<f64>; 3] = Default::default();

    // Durable append.
    let mut durable = Vec::new();
    for appenders in DURABLE_APPENDERS {
        progress(opts, &format!("durable append, {appenders} appender(s)"));
        let (mut e, mut s, mut z) = (Vec::new(), Vec::new(), Vec::new());
        let mut j = Vec::new();
        for run in 0..runs {
            let dir = scratch.fresh(&format!("durable-c{appenders}"))?;
            let [a, b, c] = durable_once(&dir, opts.durable_events, appenders, opts.payload_bytes, run % 2 == 0)?;
            if let Some(server) = server.as_mut() {
                j.push(crate::jetstream::durable_once(
                    server,
                    &dir,
                    opts.durable_events,
                    appenders,
                    opts.payload_bytes,
                )?);
            }
            remove(&dir);
            e.push(a);
            s.push(b);
            z.push(c);
        }
        durable.push(DurablePair::from_runs(e, s, z));
        js_durable.push(j);
    }
    let mut durable = durable.into_iter();
    let (c1, c4, c16) = (durable.next().expect("c1"), durable.next().expect("c4"), durable.next().expect("c16"));

    // Relaxed append; the last run's stores are the replay corpus.
    progress(opts, "relaxed append");
    let (mut e, mut s) = (Vec::new(), Vec::new());
    let mut corpus: Option<(PathBuf, PathBuf, PathBuf)> = None;
    let mut frame_bytes = 0usize;
    for run in 0..runs {
        let dir = scratch.fresh("relaxed")?;
        let envs = workload(opts.events, opts.payload_bytes);
        frame_bytes = mean_frame_bytes(&envs);
        let engram_dir = dir.join("engram");
        let db = dir.join("sqlite.db");
        let engram = |envs: Vec<Envelope>| -> anyhow::Result<f64> {
            let log = engram_open(&engram_dir, engram_relaxed_config())?;
            let d = engram_append(&log, split(envs, 1, opts.relaxed_batch))?;
            anyhow::ensure!(log.head() == Seq(opts.events as u64), "engram appended {} events", log.head().0);
            Ok(eps(opts.events, d))
        };
        let sqlite = |envs: Vec<Envelope>| -> anyhow::Result<f64> {
            let peer = SqlitePeer::create(&db, SqliteSync::Normal)?;
            let d = peer.append_concurrently(split(envs, 1, opts.relaxed_batch), false)?;
            Ok(eps(opts.events, d))
        };
        if run % 2 == 0 {
            e.push(engram(envs.clone())?);
            s.push(sqlite(envs)?);
        } else {
            s.push(sqlite(envs.clone())?);
            e.push(engram(envs)?);
        }
        if let Some(server) = server.as_mut() {
            let figures = crate::jetstream::batched_and_replay_once(
                server,
                &dir,
                opts.events,
                opts.relaxed_batch,
                opts.payload_bytes,
            )?;
            for (all, f) in js_batched.iter_mut().zip(figures) {
                all.push(f);
            }
        }
        if run + 1 == runs {
            corpus = Some((dir, engram_dir, db));
        } else {
            remove(&dir);
        }
    }
    let append_relaxed = Pair::from_runs(e, s);
    let (corpus_dir, engram_dir, db) = corpus.expect("at least one run");
    let sqlite_reader = SqlitePeer { path: db.clone(), sync: SqliteSync::Normal };

    // Replay: per run and side, a freshly opened store is read three times:
    // decoding (cold: the store's own cache is empty, the OS cache is
    // not), decoding again (warm), and frames only (warm, no
    // deserialisation). Replay is cheap, so it gets more runs.
    progress(opts, "replay");
    let n = opts.events;
    let replay_runs = 2 * runs + 1;
    let mut samples: [Vec<f64>; 8] = Default::default();
    for run in 0..replay_runs {
        for side in if run % 2 == 0 { [0, 1] } else { [1, 0] } {
            if side == 0 {
                let log = engram_open(&engram_dir, engram_relaxed_config())?;
                samples[0].push(timed_read(n, "engram replay", || engram_replay(&log))?);
                samples[2].push(timed_read(n, "engram replay", || engram_replay(&log))?);
                samples[4].push(timed_read(n, "engram frame scan", || engram_frames(&log))?);
                samples[6].push(timed_read(n, "engram zero-copy replay", || engram_replay_view(&log))?);
            } else {
                let conn = sqlite_reader.connect()?;
                samples[1].push(timed_read(n, "SQLite replay", || SqlitePeer::replay(&conn))?);
                samples[3].push(timed_read(n, "SQLite replay", || SqlitePeer::replay(&conn))?);
                samples[5].push(timed_read(n, "SQLite frame scan", || SqlitePeer::frames(&conn))?);
                samples[7].push(timed_read(n, "SQLite zero-copy replay", || SqlitePeer::replay_view(&conn))?);
            }
        }
    }
    let [e, s, ew, sw, ef, sf, ev, sv] = samples;
    let replay = Pair::from_runs(e, s);
    let replay_warm = Pair::from_runs(ew, sw);
    let replay_frames = Pair::from_runs(ef, sf);
    let replay_view = Pair::from_runs(ev, sv);
    let disk = DiskUse {
        engram_bytes: disk_bytes(&engram_dir),
        sqlite_bytes: sqlite_files_bytes(&db),
        frame_bytes: (frame_bytes * opts.events) as u64,
    };
    remove(&corpus_dir);
    let jetstream = server.map(|server| {
        let mut durable = js_durable.into_iter();
        let mut next = |beside: &Pair| BesideFigure::new(durable.next().unwrap_or_default(), beside);
        let [batched, fetch, copy] = js_batched;
        JetStreamFigures {
            server: server.describe(),
            acknowledgement: "acknowledged = stored by the server (written to its file; nats-server 2.9 fsyncs \
                              once a minute), not fsynced as the sled and SQLite durable figures are"
                .to_owned(),
            append_durable_c1: next(&c1.pair),
            append_durable_c4: next(&c4.pair),
            append_durable_c16: next(&c16.pair),
            append_batched: BesideFigure::new(batched, &append_relaxed),
            replay_fetch: BesideFigure::new(fetch, &replay),
            replay_copy: BesideFigure::new(copy, &replay),
        }
    });

    Ok(LogReport {
        append_durable: DurableFigures { c1, c4, c16 },
        append_relaxed,
        replay,
        replay_warm,
        replay_frames,
        replay_view,
        replay_median_of: replay_runs,
        events: opts.events,
        payload_bytes: frame_bytes,
        median_of: runs,
        settings: Settings {
            durable_events: opts.durable_events,
            durable_batch: 1,
            relaxed_batch: opts.relaxed_batch,
            engram_durable: "Durability::Durable (ack after flush + fsync, group commit)".to_owned(),
            engram_relaxed: format!("Durability::Relaxed {{ flush_every_ms: {RELAXED_FLUSH_MS} }}"),
            sqlite_durable: "WAL, synchronous=FULL, BEGIN IMMEDIATE/INSERT/COMMIT per event, a connection per appender"
                .to_owned(),
            sqlite_relaxed: "WAL, synchronous=NORMAL, one transaction per batch, one connection".to_owned(),
            replay: "replay: first read of a freshly opened store, every event decoded into an Envelope \
                     (binary codec); replay_warm: second read through the same handle; replay_frames: third \
                     read, frames CRC-checked but not deserialised; replay_view: fourth read, the zero-copy \
                     view (CRC checked, archives validated in place)"
                .to_owned(),
        },
        disk,
        machine: machine(),
        jetstream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_about_the_target_size() {
        let envs = workload(100, 200);
        let mean = mean_frame_bytes(&envs);
        assert!((190..=215).contains(&mean), "mean frame {mean} B");
    }

    #[test]
    fn split_keeps_every_event_in_order() {
        let envs = workload(10, 120);
        let ids: Vec<_> = envs.iter().map(|e| e.id).collect();
        let work = split(envs, 3, 2);
        assert_eq!(work.len(), 3);
        let first: Vec<_> = work[0].iter().flatten().map(|e| e.id).collect();
        assert_eq!(first, vec![ids[0], ids[3], ids[6], ids[9]]);
        assert_eq!(work.iter().flatten().flatten().count(), 10);
        assert!(work.iter().flatten().all(|b| b.len() <= 2));
    }

    #[test]
    fn a_tiny_run_reports_every_figure() {
        let opts = Options { events: 300, durable_events: 32, runs: 1, relaxed_batch: 16, ..Options::default() };
        let report = run(&opts).unwrap();
        assert_eq!(report.events, 300);
        assert!(report.replay.engram_eps > 0.0 && report.replay.sqlite_eps > 0.0);
        assert!(report.append_durable.c16.pair.engram_eps > 0.0);
        assert!(report.replay_frames.sqlite_eps > 0.0);
        assert!(report.replay_view.engram_eps > 0.0);
        let json = serde_json::to_value(&report).unwrap();
        for key in ["c1", "c4", "c16"] {
            for field in ["engram_eps", "sqlite_eps", "ratio", "sqlite_serialized_eps"] {
                assert!(json["append_durable"][key][field].is_number(), "{key}.{field}");
            }
        }
        assert!(json["payload_bytes"].as_u64().unwrap() > 150);
        assert!(report.human().contains("replay"));
    }
}
