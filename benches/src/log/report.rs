//! The log bench's report: [`LogReport`] and its figures — every figure the
//! median of its runs, beside the peer's and their ratio — serialised as
//! the JSON of `engram bench log --json`, and [`LogReport::human`], the
//! table it prints otherwise.

use crate::thousands;

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
    /// The median of the JetStream `runs` beside the sled log's and
    /// SQLite's figures of the same workload.
    pub(super) fn new(runs: Vec<f64>, beside: &Pair) -> Self {
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
    /// The server's bound on `append_durable_c1`: the same frames published
    /// one at a time by the client alone, each awaiting its acknowledgement
    /// (beside the sled log's durable c1).
    pub publish_round_trip: BesideFigure,
    /// One appender, batches of `relaxed_batch` (beside the relaxed figures).
    pub append_batched: BesideFigure,
    /// A new data dir fetching the whole stream at its first open, packs
    /// and then the stream's messages (beside the fresh-open replay
    /// figures).
    pub replay_fetch: BesideFigure,
    /// The same fetch with packs off: every event a message of its own
    /// (what the packs are measured against).
    pub replay_fetch_messages: BesideFigure,
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
                ("  publish round trip", &js.publish_round_trip),
                ("append durable c4", &js.append_durable_c4),
                ("append durable c16", &js.append_durable_c16),
                (&*format!("append batched b{}", self.settings.relaxed_batch), &js.append_batched),
                ("replay: fetch, new dir", &js.replay_fetch),
                ("  without packs", &js.replay_fetch_messages),
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

/// Bytes in MiB.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
