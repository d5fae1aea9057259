//! The recommendation's latency: every query of a [`Corpus`] through the
//! recommendation path (search, row lookup, scoring) in several passes,
//! beside the reference exact scan on the first queries, and the recall of
//! the index against that scan — one [`RecommendFigure`] per corpus.

use std::time::{Duration, Instant};

use super::corpus::{recall, Corpus};
use super::generator::Kind;
use super::report::RecommendFigure;
use crate::{percentile_us, round2};

/// Exact-scan queries at the largest hybrid sizes (the scan takes tens of
/// milliseconds a query there).
pub const EXACT_QUERIES_LARGE: usize = 30;
/// Outcome rows from which the hybrid exact scan is limited to
/// [`EXACT_QUERIES_LARGE`] queries.
pub const EXACT_LIMIT_FROM: usize = 100_000;
/// Timed passes over the queries of a corpus (see [`measure`]).
pub const PASSES: usize = 3;

/// Measures one corpus: every query through the recommendation path
/// [`PASSES`] times (round robin; a query's latency is the median of its
/// passes, so one pass disturbed by another process does not skew the
/// figures), the first `exact_queries` through the reference scan once.
pub fn measure(corpus: &Corpus, exact_queries: usize, build: Duration) -> RecommendFigure {
    // Warm up caches and the branch predictors.
    for q in corpus.queries.iter().take(10) {
        std::hint::black_box(corpus.recommend(q));
    }
    let n = corpus.queries.len();
    let mut total = vec![[Duration::ZERO; PASSES]; n];
    let mut search = vec![[Duration::ZERO; PASSES]; n];
    let mut clusters = Vec::with_capacity(exact_queries);
    for pass in 0..PASSES {
        for (i, q) in corpus.queries.iter().enumerate() {
            let start = Instant::now();
            let cluster = corpus.search(q);
            let searched = start.elapsed();
            let rec = corpus.score(&cluster);
            let done = start.elapsed();
            std::hint::black_box(rec);
            total[i][pass] = done;
            search[i][pass] = searched;
            if pass == 0 && i < exact_queries {
                clusters.push(cluster);
            }
        }
    }
    let median = |d: [Duration; PASSES]| crate::percentile(&d, 50.0).expect("PASSES > 0");
    let total: Vec<Duration> = total.into_iter().map(median).collect();
    let search: Vec<Duration> = search.into_iter().map(median).collect();
    let exact_queries = exact_queries.min(corpus.queries.len());
    let mut exact = Vec::with_capacity(exact_queries);
    let mut recall_sum = 0.0;
    for (q, got) in corpus.queries.iter().zip(&clusters) {
        let start = Instant::now();
        let want = corpus.exact(q);
        exact.push(start.elapsed());
        recall_sum += recall(got, &want);
    }
    let p50_us = percentile_us(&total, 50.0);
    let exact_p50_us = percentile_us(&exact, 50.0);
    RecommendFigure {
        outcomes: corpus.outcomes(),
        kind: corpus.kind,
        p50_us,
        p99_us: percentile_us(&total, 99.0),
        exact_p50_us,
        recall_at_10: if exact_queries > 0 {
            (recall_sum / exact_queries as f64 * 1e4).round() / 1e4
        } else {
            f64::NAN
        },
        speedup: if p50_us > 0.0 { round2(exact_p50_us / p50_us) } else { f64::NAN },
        search_p50_us: percentile_us(&search, 50.0),
        fingerprints: corpus.fingerprints(),
        queries: corpus.queries.len(),
        exact_queries,
        build_ms: round2(build.as_secs_f64() * 1e3),
    }
}

/// Queries the exact scan runs at `outcomes` rows of `kind`.
pub fn exact_queries_for(outcomes: usize, kind: Kind, queries: usize) -> usize {
    if kind == Kind::Hybrid && outcomes >= EXACT_LIMIT_FROM {
        queries.min(EXACT_QUERIES_LARGE)
    } else {
        queries
    }
}
