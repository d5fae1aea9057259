//! Runtime benchmarks (criterion), with the building blocks `engram bench
//! runtime` uses (`engram_bench::runtime`): a fast-path turn through the
//! live actors, from `handle_utterance` to its return.
//!
//! * `runtime/l0_turn/{durable,relaxed}` — "what time is it": listener,
//!   router (L0), reply loop, bridge; no embedding;
//! * `runtime/l1_turn/{durable,relaxed}` — a known request with a new path
//!   (the router's L1, its canonical form's embedding memoised).
//!
//! Needs the model where `scripts/fetch-models.sh` installs it. `engram bench
//! runtime` sets these beside the same decision by direct calls and adds
//! throughput with 1 and 16 sessions.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::events::payloads::RouteLayer;
use engram::learning::embedder::{Embedder, EmbedderConfig};
use engram::SessionId;
use engram_bench::runtime::{l1_text, start};

fn runtime(c: &mut Criterion) {
    let embedder: Arc<dyn Embedder> =
        Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).unwrap_or_else(|e| panic!("the model: {e}")));
    let mut g = c.benchmark_group("runtime");
    g.throughput(Throughput::Elements(1));
    g.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for durability in ["durable", "relaxed"] {
        let dir = tempfile::tempdir().unwrap();
        let rt = start(dir.path(), durability, embedder.clone()).unwrap_or_else(|e| panic!("{e:#}"));
        let s = SessionId::new("bench");
        // Teach L1 the request (three planner turns).
        for _ in 0..3 {
            rt.handle_utterance(&s, "count the words in ~/notes.txt").unwrap();
        }
        assert!(rt.settle(Duration::from_secs(10)));
        assert_eq!(rt.handle_utterance(&s, &l1_text(0)).unwrap().layer, Some(RouteLayer::L1));
        g.bench_function(format!("l0_turn/{durability}"), |b| {
            b.iter(|| rt.handle_utterance(&s, "what time is it").unwrap())
        });
        let mut i = 0;
        g.bench_function(format!("l1_turn/{durability}"), |b| {
            b.iter(|| {
                i += 1;
                rt.handle_utterance(&s, &l1_text(i)).unwrap()
            })
        });
        rt.shutdown().unwrap();
    }
    g.finish();
}

criterion_group!(benches, runtime);
criterion_main!(benches);
