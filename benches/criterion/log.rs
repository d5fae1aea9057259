//! Event-log benchmarks (criterion): engram's sled log beside SQLite in WAL
//! mode, with the building blocks `engram bench log` uses
//! (`engram_bench::log`), so both measure the same thing.
//!
//! * `log/replay` — read and decode every event of a pre-built corpus
//!   (`*_frames`: read and CRC-check the frames without deserialising;
//!   `*_view`: the zero-copy replay, archives validated in place);
//! * `log/append_relaxed` — one appender, batches of 64 events, engram
//!   relaxed (flush every 100 ms) / SQLite `synchronous=NORMAL`;
//! * `log/append_durable_c1`, `log/append_durable_c16` — single-event
//!   appends, each acknowledged after fsync, from 1 or 16 appenders (engram
//!   durable with group commit / SQLite `synchronous=FULL`, a connection per
//!   appender; at 16 appenders also `sqlite_serialized`, SQLite with its
//!   transactions serialised by an in-process mutex).
//!
//! `cargo bench --bench log` takes a few minutes; `engram bench log` gives
//! the medians and ratios in one report.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use engram::storage::LogConfig;
use engram::SledLog;
use engram_bench::log::{
    engram_append, engram_durable_config, engram_frames, engram_open, engram_relaxed_config, engram_replay,
    engram_replay_view, split, workload, SqlitePeer, SqliteSync,
};

/// Events in the replay corpus.
const CORPUS: usize = 100_000;
/// Target encoded frame size.
const PAYLOAD: usize = 200;
/// Events per append call in the relaxed benchmarks.
const RELAXED_BATCH: usize = 64;
/// Single-event appends per appender in one durable-append iteration.
const DURABLE_ROUND: usize = 32;

fn open_engram(dir: &Path, config: LogConfig) -> SledLog {
    engram_open(&dir.join("engram"), config).expect("open engram log")
}

fn create_sqlite(dir: &Path, sync: SqliteSync) -> SqlitePeer {
    SqlitePeer::create(&dir.join("sqlite.db"), sync).expect("create SQLite peer")
}

fn replay(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let envs = workload(CORPUS, PAYLOAD);
    let log = open_engram(dir.path(), engram_relaxed_config());
    engram_append(&log, split(envs.clone(), 1, RELAXED_BATCH)).expect("engram corpus");
    let peer = create_sqlite(dir.path(), SqliteSync::Normal);
    peer.append_concurrently(split(envs, 1, RELAXED_BATCH), false).expect("SQLite corpus");
    let conn = peer.connect().expect("SQLite connection");

    let mut g = c.benchmark_group("log/replay");
    g.throughput(Throughput::Elements(CORPUS as u64));
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    g.bench_function("engram", |b| b.iter(|| assert_eq!(engram_replay(&log).expect("replay"), CORPUS)));
    g.bench_function("sqlite", |b| b.iter(|| assert_eq!(SqlitePeer::replay(&conn).expect("replay"), CORPUS)));
    g.bench_function("engram_frames", |b| b.iter(|| assert_eq!(engram_frames(&log).expect("frames"), CORPUS)));
    g.bench_function("sqlite_frames", |b| b.iter(|| assert_eq!(SqlitePeer::frames(&conn).expect("frames"), CORPUS)));
    g.bench_function("engram_view", |b| b.iter(|| assert_eq!(engram_replay_view(&log).expect("view"), CORPUS)));
    g.bench_function("sqlite_view", |b| b.iter(|| assert_eq!(SqlitePeer::replay_view(&conn).expect("view"), CORPUS)));
    g.finish();
}

fn append_relaxed(c: &mut Criterion) {
    let mut g = c.benchmark_group("log/append_relaxed");
    g.throughput(Throughput::Elements(RELAXED_BATCH as u64));
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));

    let dir = tempfile::tempdir().expect("tempdir");
    let log = open_engram(dir.path(), engram_relaxed_config());
    g.bench_function("engram", |b| {
        b.iter_custom(|iters| {
            let envs = workload(iters as usize * RELAXED_BATCH, PAYLOAD);
            engram_append(&log, split(envs, 1, RELAXED_BATCH)).expect("append")
        })
    });
    drop(log);

    let peer = create_sqlite(dir.path(), SqliteSync::Normal);
    g.bench_function("sqlite", |b| {
        b.iter_custom(|iters| {
            let envs = workload(iters as usize * RELAXED_BATCH, PAYLOAD);
            peer.append_concurrently(split(envs, 1, RELAXED_BATCH), false).expect("append")
        })
    });
    g.finish();
}

fn append_durable(c: &mut Criterion) {
    for appenders in [1usize, 16] {
        let mut g = c.benchmark_group(format!("log/append_durable_c{appenders}"));
        // One iteration: every appender appends DURABLE_ROUND events, one
        // at a time, each acknowledged after fsync (enough events that
        // thread start-up and SQLite's first lock waits do not dominate).
        let per_iter = appenders * DURABLE_ROUND;
        g.throughput(Throughput::Elements(per_iter as u64));
        // Flat sampling: SQLite at 16 appenders takes about a second per
        // iteration, so each sample is a few iterations, not a ramp.
        g.sampling_mode(SamplingMode::Flat);
        g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));

        let dir = tempfile::tempdir().expect("tempdir");
        let log = open_engram(dir.path(), engram_durable_config());
        g.bench_function("engram", |b| {
            b.iter_custom(|iters| {
                let envs = workload(iters as usize * per_iter, PAYLOAD);
                engram_append(&log, split(envs, appenders, 1)).expect("append")
            })
        });
        drop(log);

        let peer = create_sqlite(dir.path(), SqliteSync::Full);
        g.bench_function("sqlite", |b| {
            b.iter_custom(|iters| {
                let envs = workload(iters as usize * per_iter, PAYLOAD);
                peer.append_concurrently(split(envs, appenders, 1), false).expect("append")
            })
        });
        if appenders > 1 {
            // SQLite with its transactions serialised by an in-process
            // mutex: no busy-handler sleeps.
            let peer = SqlitePeer::create(&dir.path().join("serialized.db"), SqliteSync::Full).expect("SQLite");
            g.bench_function("sqlite_serialized", |b| {
                b.iter_custom(|iters| {
                    let envs = workload(iters as usize * per_iter, PAYLOAD);
                    peer.append_concurrently(split(envs, appenders, 1), true).expect("append")
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, replay, append_relaxed, append_durable);
criterion_main!(benches);
