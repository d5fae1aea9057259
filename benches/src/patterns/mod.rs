//! Pattern-store benchmark: the K-NN recommendation path beside the
//! reference exact scan, and the `pattern_outcomes` rebuild.
//!
//! * **recommend** — for each size N of [`Options::sizes`] and each kind
//!   (structural, 384-d hybrid), a [`KnnIndex`] over N outcome rows (about
//!   N/3 fingerprints, 2–4 models each) of a deterministic synthetic corpus
//!   ([`Generator`]); per query (fresh fingerprints drawn like the corpus)
//!   the latency of the whole recommendation — [`KnnIndex::search`] with
//!   K = 10 and alpha 0.6, the outcome rows looked up, [`score_cluster`] —
//!   as p50/p99, beside the p50 of [`exact_k_nearest`] (the reference scan:
//!   string sets and `f64` cosine) over the same entries, and recall@10 of
//!   the index against that scan over `(fingerprint, model)` pairs;
//! * **rebuild** — a realistic event stream of at least
//!   [`Options::rebuild_events`] envelopes (import-shaped turns:
//!   `route.decided`, tools, `turn.completed`, `eval.completed`,
//!   `session.ended`, late re-evaluations, and the `pattern.recorded`
//!   events the [`PatternReactor`] derives from them) appended to a fresh
//!   [`SledLog`], then folded into a fresh [`PatternOutcomes`] by
//!   [`Projector::catch_up`] the way `engram rebuild` does (every record
//!   read and CRC-checked, the kinds the projection folds decoded, nothing
//!   persisted); events/s counts every record of the log, as `engram
//!   rebuild` does. The same envelopes folded from memory, already decoded
//!   ([`Projection::apply`] only), are reported beside it (`fold_*`).
//!
//! The recommendation corpus is built directly (index plus an
//! [`OutcomeRow`] per `(fingerprint, model)`) rather than through
//! `pattern.recorded` events, so the figure is the K-NN and scoring alone
//! ([`PatternOutcomes::recommend`] adds the `min_hybrid_similarity` filter
//! over the same cluster, a pass over ≤ K rows). The building blocks ([`Generator`],
//! [`Corpus`], [`event_stream`], …) are public so that the criterion bench
//! (`benches/patterns.rs`) measures with the same code.
//!
//! One module per concept, their items re-exported here:
//!
//! * the workload — `random` (the seeded generator and a Zipf law),
//!   `vocabulary` (intents, extensions, directories, tools, models),
//!   `generator` (topics and the fingerprints drawn from them), `corpus`
//!   (the recommendation corpus) and `stream` (the rebuild's event stream);
//! * the run — `recommend_latency` (the recommendation timed beside the
//!   reference scan), `rebuild_throughput` (the stream appended to a log
//!   and folded back) and `run` ([`run()`], both in turn);
//! * `report` — [`Report`] and its figures, as JSON and as a table.
//!
//! [`KnnIndex`]: engram::learning::patterns::KnnIndex
//! [`KnnIndex::search`]: engram::learning::patterns::KnnIndex::search
//! [`score_cluster`]: engram::learning::patterns::recommend::score_cluster
//! [`exact_k_nearest`]: engram::learning::patterns::knn::exact_k_nearest
//! [`PatternReactor`]: engram::learning::reactors::PatternReactor
//! [`SledLog`]: engram::storage::SledLog
//! [`PatternOutcomes`]: engram::learning::projections::PatternOutcomes
//! [`PatternOutcomes::recommend`]: engram::learning::projections::PatternOutcomes::recommend
//! [`Projector::catch_up`]: engram::local_state::projector::Projector::catch_up
//! [`Projection::apply`]: engram::local_state::projector::Projection::apply
//! [`OutcomeRow`]: engram::learning::patterns::OutcomeRow

mod corpus;
mod generator;
mod random;
mod rebuild_throughput;
mod recommend_latency;
mod report;
mod run;
mod stream;
mod vocabulary;

pub use corpus::{recall, Corpus, ALPHA, K};
pub use generator::{Generator, Kind, Topic, DIM, PROVIDER, TOPICS};
pub use random::Rng;
pub use rebuild_throughput::{append_all, fold, measure_rebuild, rebuild, rebuilt_digest, REBUILD_RUNS};
pub use recommend_latency::{exact_queries_for, measure, EXACT_LIMIT_FROM, EXACT_QUERIES_LARGE, PASSES};
pub use report::{RebuildFigure, RecommendFigure, Report};
pub use run::run;
pub use stream::{event_stream, StreamStats, REBUILD_SHAPES};
pub use vocabulary::{side_effects_of, tool_names, BUCKETS, EXTENSIONS, INTENTS, MODELS};

/// Options of `engram bench patterns`.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Outcome rows in the index, one run per size (comma-separated)
    #[arg(long, value_name = "N,…", value_delimiter = ',', default_value = "1000,10000,100000")]
    pub sizes: Vec<usize>,

    /// Queries per size and kind
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub queries: usize,

    /// Envelopes in the rebuild stream (at least; whole sessions)
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub rebuild_events: usize,

    /// Seed of the synthetic corpora
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { json: false, sizes: vec![1_000, 10_000, 100_000], queries: 200, rebuild_events: 1_000_000, seed: 42 }
    }
}
