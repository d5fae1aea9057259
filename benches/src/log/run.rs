//! The log bench's run: what is timed, in which order, against which peer.
//! Durable append at each concurrency level, relaxed append (whose last
//! run's stores are the replay corpus), then replay of that corpus — the
//! sled log beside SQLite, and beside JetStream with `--backend jetstream`
//! — each step a function of its own, and [`run`], which does them in turn
//! and makes the [`LogReport`].

use std::path::{Path, PathBuf};

use engram::events::{Envelope, Seq};
use engram::storage::EventLog;

use super::engram_side::{
    engram_append, engram_durable_config, engram_frames, engram_open, engram_relaxed_config, engram_replay,
    engram_replay_view,
};
use super::jetstream::{self, BenchServer};
use super::report::{BesideFigure, DiskUse, DurableFigures, DurablePair, JetStreamFigures, LogReport, Pair, Settings};
use super::scratch::{disk_bytes, remove, sqlite_files_bytes, Scratch};
use super::sqlite_side::{SqlitePeer, SqliteSync};
use super::timing::{eps, timed_read};
use super::workload::{mean_frame_bytes, split, workload};
use super::{BenchBackend, Options, DURABLE_APPENDERS, RELAXED_FLUSH_MS};
use crate::machine;

/// Says what is being measured, on a terminal (not with `--json`).
fn progress(opts: &Options, what: &str) {
    crate::progress(opts.json, &format!("measuring {what}"));
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

/// Durable append at each of [`DURABLE_APPENDERS`], `runs` runs each: the
/// figures, and with a JetStream `server` its runs at each level (one list
/// per level, empty without a server), then the runs of its bare publish
/// round trip ([`jetstream::round_trip_once`]).
fn measure_durable(
    opts: &Options,
    runs: usize,
    scratch: &mut Scratch,
    mut server: Option<&mut BenchServer>,
) -> anyhow::Result<(DurableFigures, Vec<Vec<f64>>)> {
    let mut durable = Vec::new();
    let mut js_durable: Vec<Vec<f64>> = Vec::new();
    let mut round_trips = Vec::new();
    for appenders in DURABLE_APPENDERS {
        progress(opts, &format!("durable append, {appenders} appender(s)"));
        let (mut e, mut s, mut z) = (Vec::new(), Vec::new(), Vec::new());
        let mut j = Vec::new();
        for run in 0..runs {
            let dir = scratch.fresh(&format!("durable-c{appenders}"))?;
            let [a, b, c] = durable_once(&dir, opts.durable_events, appenders, opts.payload_bytes, run % 2 == 0)?;
            if let Some(server) = server.as_deref_mut() {
                j.push(jetstream::durable_once(server, &dir, opts.durable_events, appenders, opts.payload_bytes)?);
                if appenders == 1 {
                    round_trips.push(jetstream::round_trip_once(server, opts.durable_events, opts.payload_bytes)?);
                }
            }
            remove(&dir);
            e.push(a);
            s.push(b);
            z.push(c);
        }
        durable.push(DurablePair::from_runs(e, s, z));
        js_durable.push(j);
    }
    // The server's bound on c1, after the three levels' lists.
    if server.is_some() {
        js_durable.push(round_trips);
    }
    let mut durable = durable.into_iter();
    let (c1, c4, c16) = (durable.next().expect("c1"), durable.next().expect("c4"), durable.next().expect("c16"));
    Ok((DurableFigures { c1, c4, c16 }, js_durable))
}

/// The stores the last relaxed run wrote, which the replay reads.
struct ReplayCorpus {
    /// The run's directory, holding both stores.
    dir: PathBuf,
    /// The engram log's data dir.
    engram_dir: PathBuf,
    /// The SQLite database.
    db: PathBuf,
}

/// What the relaxed-append measurement yields.
struct Relaxed {
    /// engram beside SQLite.
    figures: Pair,
    /// Mean encoded frame size of the workload, in bytes.
    frame_bytes: usize,
    /// The replay corpus.
    corpus: ReplayCorpus,
    /// With a JetStream server: its batched-append, fetch and copy-replay
    /// runs, in that order.
    jetstream: [Vec<f64>; 4],
}

/// One relaxed-append run of `opts.events` events in batches of
/// `opts.relaxed_batch`, into an engram log at `engram_dir` and a SQLite
/// database at `db`, in the order `engram_first` says. Returns their
/// events per second: engram, SQLite.
fn relaxed_once(
    opts: &Options,
    engram_dir: &Path,
    db: &Path,
    envs: Vec<Envelope>,
    engram_first: bool,
) -> anyhow::Result<[f64; 2]> {
    let engram = |envs: Vec<Envelope>| -> anyhow::Result<f64> {
        let log = engram_open(engram_dir, engram_relaxed_config())?;
        let d = engram_append(&log, split(envs, 1, opts.relaxed_batch))?;
        anyhow::ensure!(log.head() == Seq(opts.events as u64), "engram appended {} events", log.head().0);
        Ok(eps(opts.events, d))
    };
    let sqlite = |envs: Vec<Envelope>| -> anyhow::Result<f64> {
        let peer = SqlitePeer::create(db, SqliteSync::Normal)?;
        let d = peer.append_concurrently(split(envs, 1, opts.relaxed_batch), false)?;
        Ok(eps(opts.events, d))
    };
    if engram_first {
        let e = engram(envs.clone())?;
        Ok([e, sqlite(envs)?])
    } else {
        let s = sqlite(envs.clone())?;
        Ok([engram(envs)?, s])
    }
}

/// Relaxed append, `runs` runs (and with a JetStream `server`, its batched
/// append and replay on each run's directory); the last run's stores are
/// kept as the replay corpus, the others removed.
fn measure_relaxed(
    opts: &Options,
    runs: usize,
    scratch: &mut Scratch,
    mut server: Option<&mut BenchServer>,
) -> anyhow::Result<Relaxed> {
    progress(opts, "relaxed append");
    let (mut e, mut s) = (Vec::new(), Vec::new());
    let mut js_batched: [Vec<f64>; 4] = Default::default();
    let mut corpus: Option<ReplayCorpus> = None;
    let mut frame_bytes = 0usize;
    for run in 0..runs {
        let dir = scratch.fresh("relaxed")?;
        let envs = workload(opts.events, opts.payload_bytes);
        frame_bytes = mean_frame_bytes(&envs);
        let engram_dir = dir.join("engram");
        let db = dir.join("sqlite.db");
        let [a, b] = relaxed_once(opts, &engram_dir, &db, envs, run % 2 == 0)?;
        e.push(a);
        s.push(b);
        if let Some(server) = server.as_deref_mut() {
            let figures =
                jetstream::batched_and_replay_once(server, &dir, opts.events, opts.relaxed_batch, opts.payload_bytes)?;
            for (all, f) in js_batched.iter_mut().zip(figures) {
                all.push(f);
            }
        }
        if run + 1 == runs {
            corpus = Some(ReplayCorpus { dir, engram_dir, db });
        } else {
            remove(&dir);
        }
    }
    Ok(Relaxed {
        figures: Pair::from_runs(e, s),
        frame_bytes,
        corpus: corpus.expect("at least one run"),
        jetstream: js_batched,
    })
}

/// The four replay figures and the runs behind each.
struct Replay {
    /// Decoding, on a freshly opened store.
    cold: Pair,
    /// Decoding again, through the same handle.
    warm: Pair,
    /// Frames only, not deserialised.
    frames: Pair,
    /// The zero-copy view.
    view: Pair,
    /// Runs per figure.
    runs: usize,
}

/// Replay of `corpus` (`opts.events` events): per run and side, a freshly
/// opened store is read four times — decoding (cold: the store's own cache
/// is empty, the OS cache is not), decoding again (warm), frames only
/// (warm, no deserialisation) and the zero-copy view. Replay is cheap, so
/// it gets more runs: `2 * runs + 1`.
fn measure_replay(opts: &Options, runs: usize, corpus: &ReplayCorpus) -> anyhow::Result<Replay> {
    let sqlite_reader = SqlitePeer { path: corpus.db.clone(), sync: SqliteSync::Normal };
    progress(opts, "replay");
    let n = opts.events;
    let replay_runs = 2 * runs + 1;
    let mut samples: [Vec<f64>; 8] = Default::default();
    for run in 0..replay_runs {
        for side in if run % 2 == 0 { [0, 1] } else { [1, 0] } {
            if side == 0 {
                let log = engram_open(&corpus.engram_dir, engram_relaxed_config())?;
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
    Ok(Replay {
        cold: Pair::from_runs(e, s),
        warm: Pair::from_runs(ew, sw),
        frames: Pair::from_runs(ef, sf),
        view: Pair::from_runs(ev, sv),
        runs: replay_runs,
    })
}

/// The JetStream figures, each beside the sled log's and SQLite's figure of
/// the same workload: `durable_runs` holds its runs per concurrency level
/// and then the bare publish round trip's,
/// `batched_runs` its batched-append, fetch (packs, then messages) and
/// copy-replay runs.
fn jetstream_figures(
    server: &BenchServer,
    durable_runs: Vec<Vec<f64>>,
    batched_runs: [Vec<f64>; 4],
    append_durable: &DurableFigures,
    append_relaxed: &Pair,
    replay: &Pair,
) -> JetStreamFigures {
    let mut durable = durable_runs.into_iter();
    let mut next = |beside: &Pair| BesideFigure::new(durable.next().unwrap_or_default(), beside);
    let [batched, fetch, fetch_messages, copy] = batched_runs;
    JetStreamFigures {
        server: server.describe(),
        acknowledgement: "acknowledged = stored by the server (written to its file; nats-server 2.9 fsyncs \
                          once a minute), not fsynced as the sled and SQLite durable figures are"
            .to_owned(),
        append_durable_c1: next(&append_durable.c1.pair),
        append_durable_c4: next(&append_durable.c4.pair),
        append_durable_c16: next(&append_durable.c16.pair),
        publish_round_trip: next(&append_durable.c1.pair),
        append_batched: BesideFigure::new(batched, append_relaxed),
        replay_fetch: BesideFigure::new(fetch, replay),
        replay_fetch_messages: BesideFigure::new(fetch_messages, replay),
        replay_copy: BesideFigure::new(copy, replay),
    }
}

/// How each side was configured, as the report records it.
fn settings(opts: &Options) -> Settings {
    Settings {
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
    }
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> anyhow::Result<LogReport> {
    anyhow::ensure!(opts.events > 0 && opts.durable_events > 0, "--events and --durable-events must be positive");
    let runs = opts.runs.max(1);
    let mut scratch = Scratch::new(opts.dir.as_deref())?;
    let mut server = match opts.backend {
        BenchBackend::Jetstream => Some(BenchServer::new(opts.nats_url.as_deref(), &scratch.root)?),
        BenchBackend::Sled => None,
    };
    let (append_durable, js_durable) = measure_durable(opts, runs, &mut scratch, server.as_mut())?;
    let relaxed = measure_relaxed(opts, runs, &mut scratch, server.as_mut())?;
    let replay = measure_replay(opts, runs, &relaxed.corpus)?;
    let disk = DiskUse {
        engram_bytes: disk_bytes(&relaxed.corpus.engram_dir),
        sqlite_bytes: sqlite_files_bytes(&relaxed.corpus.db),
        frame_bytes: (relaxed.frame_bytes * opts.events) as u64,
    };
    remove(&relaxed.corpus.dir);
    let jetstream = server.map(|server| {
        jetstream_figures(&server, js_durable, relaxed.jetstream, &append_durable, &relaxed.figures, &replay.cold)
    });

    Ok(LogReport {
        append_durable,
        append_relaxed: relaxed.figures,
        replay: replay.cold,
        replay_warm: replay.warm,
        replay_frames: replay.frames,
        replay_view: replay.view,
        replay_median_of: replay.runs,
        events: opts.events,
        payload_bytes: relaxed.frame_bytes,
        median_of: runs,
        settings: settings(opts),
        disk,
        machine: machine(),
        jetstream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
