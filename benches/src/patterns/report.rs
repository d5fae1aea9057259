//! The pattern bench's report: [`Report`] with a [`RecommendFigure`] per
//! corpus size and kind and the [`RebuildFigure`], serialised as the JSON
//! of `engram bench patterns --json`, and [`Report::human`], the table it
//! prints otherwise.

use super::generator::Kind;
use super::stream::StreamStats;
use crate::thousands;

/// One size and kind of the recommendation benchmark.
#[derive(serde::Serialize, Debug, Clone)]
pub struct RecommendFigure {
    /// Outcome rows in the index.
    pub outcomes: usize,
    /// Structural or hybrid.
    pub kind: Kind,
    /// Recommendation latency (search, row lookup, scoring), median, µs.
    pub p50_us: f64,
    /// The same, 99th percentile, µs.
    pub p99_us: f64,
    /// The reference exact scan (`exact_k_nearest`), median, µs.
    pub exact_p50_us: f64,
    /// Mean over the scanned queries of |index top-10 ∩ exact top-10| / 10.
    pub recall_at_10: f64,
    /// `exact_p50_us / p50_us`.
    pub speedup: f64,
    /// The index search alone, median, µs.
    pub search_p50_us: f64,
    /// Fingerprints in the index.
    pub fingerprints: usize,
    /// Queries timed on the index (each [`PASSES`](super::PASSES) times).
    pub queries: usize,
    /// Queries timed on the exact scan (and checked for recall).
    pub exact_queries: usize,
    /// Time to build the corpus and the index, ms.
    pub build_ms: f64,
}

/// The rebuild figures.
#[derive(serde::Serialize, Debug, Clone)]
pub struct RebuildFigure {
    /// Records in the log.
    pub events: u64,
    /// Records of the kinds `pattern_outcomes` folds (decoded and folded;
    /// the others are read and CRC-checked only).
    pub decoded: u64,
    /// Rebuild from the log, every record counted, median of the runs.
    pub events_per_sec: f64,
    /// Every rebuild run, events per second.
    pub runs: Vec<f64>,
    /// The same envelopes folded from memory, already decoded, median.
    pub fold_events_per_sec: f64,
    /// Every in-memory fold, events per second.
    pub fold_runs: Vec<f64>,
    /// Fingerprints in the rebuilt store.
    pub fingerprints: u64,
    /// Outcome rows in the rebuilt store.
    pub outcomes: u64,
    /// Rows of the rebuilt projection.
    pub rows: u64,
    /// Time to generate the stream and derive its `pattern.*` events
    /// (not part of any figure), ms.
    pub generate_ms: f64,
    /// What the stream holds.
    pub stream: StreamStats,
}

/// The report of `engram bench patterns`.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    /// One figure per size and kind.
    pub recommend: Vec<RecommendFigure>,
    /// Rebuild of `pattern_outcomes` from the log, events per second.
    pub rebuild_events_per_sec: f64,
    /// Records in the rebuilt log.
    pub rebuild_events: u64,
    /// The rebuild in detail.
    pub rebuild: RebuildFigure,
    /// Cluster size.
    pub k: usize,
    /// Cosine weight of hybrid similarity.
    pub alpha: f64,
    /// Embedding dimension of the hybrid corpus.
    pub dim: usize,
    /// Seed of the corpora.
    pub seed: u64,
    /// Where it was measured.
    pub machine: String,
}

impl Report {
    /// Human-readable table.
    pub fn human(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "pattern store: recommend = K-NN search (K={}, alpha {}) + row lookup + scoring; \
             exact = reference scan (exact_k_nearest)\n\n",
            self.k, self.alpha
        ));
        out.push_str(&format!(
            "{:>9} {:<11} {:>7} {:>10} {:>10} {:>10} {:>13} {:>9} {:>10}\n",
            "outcomes", "kind", "fps", "p50 µs", "p99 µs", "search µs", "exact p50 µs", "exact/idx", "recall@10"
        ));
        for f in &self.recommend {
            out.push_str(&format!(
                "{:>9} {:<11} {:>7} {:>10.1} {:>10.1} {:>10.1} {:>13.1} {:>8.1}x {:>10.4}{}\n",
                f.outcomes,
                f.kind.as_str(),
                f.fingerprints,
                f.p50_us,
                f.p99_us,
                f.search_p50_us,
                f.exact_p50_us,
                f.speedup,
                f.recall_at_10,
                if f.exact_queries < f.queries {
                    format!("  (exact: {} queries)", f.exact_queries)
                } else {
                    String::new()
                }
            ));
        }
        let r = &self.rebuild;
        out.push_str(&format!(
            "\nrebuild pattern_outcomes: {} events ({} sessions, {} turns; {} decoded and folded) \
             in {} events/s from the log (median of {}), {} events/s folded from memory\n",
            r.events,
            r.stream.sessions,
            r.stream.turns,
            r.decoded,
            thousands(r.events_per_sec),
            r.runs.len(),
            thousands(r.fold_events_per_sec)
        ));
        out.push_str(&format!("rebuilt store: {} fingerprints, {} outcome rows\n", r.fingerprints, r.outcomes));
        out.push_str(&self.machine);
        out.push('\n');
        out
    }
}
