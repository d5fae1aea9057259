//! Pattern-store benchmarks (criterion), with the building blocks `engram
//! bench patterns` uses (`engram_bench::patterns`), so both measure the
//! same thing.
//!
//! * `patterns/recommend/{structural,hybrid}/{1000,10000}` — one
//!   recommendation (K-NN search with K = 10 and alpha 0.6, the rows
//!   looked up, the cluster scored) over an index of that many outcome
//!   rows, cycling through fresh queries;
//! * `patterns/exact/{structural,hybrid}/{1000,10000}` — the reference
//!   exact scan (`exact_k_nearest`) over the same entries;
//! * `patterns/rebuild` — `pattern_outcomes` rebuilt from a log of
//!   [`REBUILD_EVENTS`] import-shaped events (`log`: read, CRC-checked, the
//!   folded kinds decoded, as `engram rebuild` does; `fold`: the decoded
//!   envelopes folded from memory).
//!
//! Set `ENGRAM_BENCH_PATTERNS_100K=1` to add the 100,000-row sizes. Under
//! `cargo test` (no `--bench` flag) each benchmark runs once on a small
//! corpus (1,000 rows, a 20,000-event log), to keep the test suite fast.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engram_bench::log::{engram_open, engram_relaxed_config};
use engram_bench::patterns::{append_all, event_stream, fold, rebuild, Corpus, Kind};

/// Queries each recommendation benchmark cycles through.
const QUERIES: usize = 64;
/// Envelopes in the rebuild benchmark's log.
const REBUILD_EVENTS: usize = 200_000;
/// The same, under `cargo test`.
const REBUILD_EVENTS_TEST: usize = 20_000;
/// Corpus seed.
const SEED: u64 = 42;

/// Whether this is a benchmark run (`cargo bench`, with or without
/// `--test`) rather than `cargo test`.
fn benchmarking() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn sizes() -> Vec<usize> {
    if !benchmarking() {
        return vec![1_000];
    }
    let mut sizes = vec![1_000, 10_000];
    if std::env::var_os("ENGRAM_BENCH_PATTERNS_100K").is_some_and(|v| v != "0") {
        sizes.push(100_000);
    }
    sizes
}

fn recommend(c: &mut Criterion) {
    for kind in Kind::ALL {
        let corpora: Vec<(usize, Corpus)> =
            sizes().into_iter().map(|n| (n, Corpus::build(n, kind, QUERIES, SEED))).collect();

        let mut g = c.benchmark_group(format!("patterns/recommend/{}", kind.as_str()));
        g.throughput(Throughput::Elements(1));
        g.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        for (n, corpus) in &corpora {
            g.bench_with_input(BenchmarkId::from_parameter(n), corpus, |b, corpus| {
                let mut queries = corpus.queries.iter().cycle();
                b.iter(|| corpus.recommend(queries.next().expect("queries")))
            });
        }
        g.finish();

        let mut g = c.benchmark_group(format!("patterns/exact/{}", kind.as_str()));
        g.throughput(Throughput::Elements(1));
        g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        for (n, corpus) in &corpora {
            g.bench_with_input(BenchmarkId::from_parameter(n), corpus, |b, corpus| {
                let mut queries = corpus.queries.iter().cycle();
                b.iter(|| corpus.exact(queries.next().expect("queries")))
            });
        }
        g.finish();
    }
}

fn rebuild_patterns(c: &mut Criterion) {
    let (events, _) = event_stream(if benchmarking() { REBUILD_EVENTS } else { REBUILD_EVENTS_TEST }, SEED);
    let n = events.len() as u64;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = engram_open(&dir.path().join("log"), engram_relaxed_config()).expect("open engram log");
    append_all(&log, events.clone()).expect("append the stream");

    let mut g = c.benchmark_group("patterns/rebuild");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    // The folded state is dropped outside the timing.
    g.bench_function("log", |b| b.iter_with_large_drop(|| rebuild(&log).expect("rebuild")));
    g.bench_function("fold", |b| b.iter_with_large_drop(|| fold(&events)));
    g.finish();
}

criterion_group!(benches, recommend, rebuild_patterns);
criterion_main!(benches);
