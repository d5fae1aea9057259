//! Fast-path benchmarks (criterion), with the building blocks `engram bench
//! fast-path` uses (`engram_bench::fast_path`), so both measure the same
//! thing: [`FastPath::route`](engram::learning::fast_path::FastPath::route)
//! with the real embedding model, the request embedded each time.
//!
//! * `fast_path/l0` — a literal phrase through `route` (cycling through the
//!   built-in EN/IT phrases, as typed and capitalised with a question mark):
//!   normalisation and a hash lookup, no embedding;
//! * `fast_path/embed` — one short request (a masked canonical text) embedded
//!   alone;
//! * `fast_path/l1_hit/1000` — a request that hits L1 in a table of 1,000 L1
//!   rows learned from synthetic planner turns (all embedded with the real
//!   model), end to end: extraction, embedding, index search, gate,
//!   placeholders. Cycles through requests for different rows, each with a
//!   fresh path.
//!
//! Needs the model where `scripts/fetch-models.sh` installs it (or
//! `ENGRAM_MODELS_DIR`); fails, never skips, when it is missing. Building the
//! table embeds 1,000 texts (about a second), so `cargo bench --bench
//! fast_path -- --test` takes a few seconds. `engram bench fast-path` gives
//! p50/p99, hit rates, the 50,000-row table, L2 and misses in one report.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engram::events::payloads::RouteLayer;
use engram::learning::embedder::{EmbedError, Embedder};
use engram_bench::fast_path::{l0_requests, now, Harness};

/// L1 rows in the table.
const ROWS: usize = 1_000;
/// Distinct requests each benchmark cycles through.
const QUERIES: usize = 64;
/// Table and request seed.
const SEED: u64 = 42;

fn fast_path(c: &mut Criterion) {
    let mut harness = Harness::open(Default::default(), 0, ROWS, SEED).unwrap_or_else(|e| panic!("{e:#}"));
    // L1 only: an L1 hit never reaches L2.
    let corpus = harness.corpus(ROWS, 0).unwrap_or_else(|e| panic!("{e:#}"));
    let embedder = std::sync::Arc::clone(&harness.embedder);
    let phrases = l0_requests();
    let l1 = corpus.l1_requests(QUERIES, SEED);
    let canonical: Vec<String> = l1.iter().filter_map(|r| r.expect.clone()).collect();

    let no_embedding = &mut |_: &str| -> Result<Vec<f32>, EmbedError> { panic!("L0 embedded a request") };
    for p in &phrases {
        let d = corpus.fast_path.route(p, now(), no_embedding).expect("route");
        assert_eq!(d.layer, RouteLayer::L0, "{p:?}: {d:?}");
    }
    for r in &l1 {
        let d = corpus.fast_path.route(&r.text, now(), &mut |t| embedder.embed(t)).expect("route");
        assert!(d.layer == RouteLayer::L1 && d.matched == r.expect, "{:?}: {d:?}", r.text);
    }

    let mut g = c.benchmark_group("fast_path");
    g.throughput(Throughput::Elements(1));
    g.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    g.bench_function("l0", |b| {
        let mut texts = phrases.iter().cycle();
        b.iter(|| corpus.fast_path.route(texts.next().expect("phrases"), now(), no_embedding).expect("route"))
    });
    g.bench_function("embed", |b| {
        let mut texts = canonical.iter().cycle();
        b.iter(|| embedder.embed(texts.next().expect("texts")).expect("embed"))
    });
    g.bench_with_input(BenchmarkId::new("l1_hit", ROWS), &corpus, |b, corpus| {
        let mut requests = l1.iter().cycle();
        b.iter(|| {
            let r = requests.next().expect("requests");
            corpus.fast_path.route(&r.text, now(), &mut |t| embedder.embed(t)).expect("route")
        })
    });
    g.finish();
}

criterion_group!(benches, fast_path);
criterion_main!(benches);
