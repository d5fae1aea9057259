//! The pattern bench's run: the recommendation latency at each size and
//! kind, then the rebuild's throughput, into one [`Report`].

use std::time::Instant;

use super::corpus::{Corpus, ALPHA, K};
use super::generator::{Kind, DIM};
use super::rebuild_throughput::measure_rebuild;
use super::recommend_latency::{exact_queries_for, measure};
use super::report::Report;
use super::Options;
use crate::machine;

/// Says what is being measured, on a terminal (not with `--json`).
fn progress(opts: &Options, what: &str) {
    crate::progress(opts.json, &format!("measuring {what}"));
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    anyhow::ensure!(!opts.sizes.is_empty() && opts.sizes.iter().all(|n| *n > 0), "--sizes must be positive");
    anyhow::ensure!(opts.queries > 0 && opts.rebuild_events > 0, "--queries and --rebuild-events must be positive");
    let mut recommend = Vec::new();
    for &n in &opts.sizes {
        for kind in Kind::ALL {
            progress(opts, &format!("recommend, {n} {} outcomes", kind.as_str()));
            let start = Instant::now();
            let corpus = Corpus::build(n, kind, opts.queries, opts.seed);
            let build = start.elapsed();
            recommend.push(measure(&corpus, exact_queries_for(n, kind, opts.queries), build));
        }
    }
    let rebuild = measure_rebuild(opts.rebuild_events, opts.seed, |what| progress(opts, what))?;
    Ok(Report {
        recommend,
        rebuild_events_per_sec: rebuild.events_per_sec,
        rebuild_events: rebuild.events,
        rebuild,
        k: K,
        alpha: ALPHA,
        dim: DIM,
        seed: opts.seed,
        machine: machine(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_reports_every_figure() {
        let opts = Options { sizes: vec![300], queries: 12, rebuild_events: 2_000, ..Options::default() };
        let report = run(&opts).unwrap();
        assert_eq!(report.recommend.len(), 2);
        let json = serde_json::to_value(&report).unwrap();
        for (i, kind) in ["structural", "hybrid"].into_iter().enumerate() {
            let f = &json["recommend"][i];
            assert_eq!(f["kind"], kind);
            assert_eq!(f["outcomes"], 300);
            for field in ["p50_us", "p99_us", "exact_p50_us", "recall_at_10"] {
                assert!(f[field].is_number(), "{kind}.{field}");
            }
        }
        assert!(json["rebuild_events_per_sec"].as_f64().unwrap() > 0.0);
        assert!(report.human().contains("exact/idx"));
    }
}
