//! The fast-path bench's run: for each model and table size, the requests
//! of each figure routed (after a warm-up) and their times split into
//! embedding, index searches and the rest; L0 and the embedding alone once;
//! rows learnt one at a time; then the labelled pairs, the offline
//! planner's choices and a month through the live runtime — one
//! [`Report`] per model.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use engram::events::payloads::RouteLayer;
use engram::learning::embedder::{Embedder, EmbeddingModel};
use engram::learning::fast_path::{canonical, gate};

use super::grammar::{now, L1_SPACE};
use super::harness::{l0_requests, Corpus, Harness, Request, Routed, LEARNT_ROWS, WARM_UP};
use super::report::{Hits, Latency, Misses, Report, Reports, Table};
use super::vectors::Given;
use super::Options;
use crate::{labelled, machine, percentile_us, round2};

/// A duration in seconds, to two decimals.
fn secs(d: Duration) -> f64 {
    round2(d.as_secs_f64())
}

/// The median of `samples`, µs.
fn p50(samples: &[Duration]) -> f64 {
    percentile_us(samples, 50.0)
}

/// The median and 99th percentile of `samples`.
fn latency(samples: &[Duration]) -> Latency {
    Latency { p50_us: percentile_us(samples, 50.0), p99_us: percentile_us(samples, 99.0) }
}

/// Says what is being done, on a terminal (not with `--json`).
fn progress(opts: &Options, what: &str) {
    crate::progress(opts.json, what);
}

/// Routes `requests` (the first [`WARM_UP`] untimed, then `queries` timed,
/// cycling).
fn route_all(
    corpus: &Corpus,
    embedder: &dyn Embedder,
    requests: &[Request],
    queries: usize,
) -> anyhow::Result<Vec<(usize, Routed)>> {
    for r in requests.iter().cycle().take(WARM_UP) {
        corpus.route(embedder, &r.text)?;
    }
    (0..queries)
        .map(|j| Ok((j % requests.len(), corpus.route(embedder, &requests[j % requests.len()].text)?)))
        .collect()
}

/// Median of `route` for `requests` with their vectors given.
fn given_p50(corpus: &Corpus, embedder: &dyn Embedder, requests: &[Request], queries: usize) -> anyhow::Result<f64> {
    let given = Given::embed_all(embedder, requests.iter().map(|r| canonical(&r.text, now()).0))?;
    let routed = route_all(corpus, &given, requests, queries)?;
    Ok(p50(&routed.iter().map(|(_, r)| r.total).collect::<Vec<_>>()))
}

/// What `route` spent outside the embedding and the index searches.
fn rest(r: &Routed) -> Duration {
    r.total.saturating_sub(r.embed + r.search)
}

/// Routes `requests`, which should hit `layer`: the figure, with the
/// time split and the canonicalisation and gate timed alone.
fn hits(
    corpus: &Corpus,
    embedder: &dyn Embedder,
    requests: &[Request],
    layer: RouteLayer,
    queries: usize,
) -> anyhow::Result<Hits> {
    let routed = route_all(corpus, embedder, requests, queries)?;
    let total: Vec<Duration> = routed.iter().map(|(_, r)| r.total).collect();
    let hit = routed.iter().filter(|(_, r)| r.decision.layer == layer).count();
    let wrong =
        routed.iter().filter(|(i, r)| r.decision.layer == layer && r.decision.matched != requests[*i].expect).count();
    let mut canon = Vec::with_capacity(routed.len());
    let mut gate_t = Vec::with_capacity(routed.len());
    for (i, r) in &routed {
        let t = Instant::now();
        let (c, _) = std::hint::black_box(canonical(&requests[*i].text, now()));
        canon.push(t.elapsed());
        if let Some(m) = &r.decision.matched {
            let t = Instant::now();
            let _ = std::hint::black_box(gate::check(&c, m));
            gate_t.push(t.elapsed());
        }
    }
    Ok(Hits {
        rows: if layer == RouteLayer::L2 { corpus.l2_rows } else { corpus.l1_rows },
        p50_us: p50(&total),
        p99_us: percentile_us(&total, 99.0),
        hit_rate: round2(hit as f64 / routed.len() as f64 * 100.0) / 100.0,
        wrong,
        embed_p50_us: p50(&routed.iter().map(|(_, r)| r.embed).collect::<Vec<_>>()),
        search_p50_us: p50(&routed.iter().map(|(_, r)| r.search).collect::<Vec<_>>()),
        rest_p50_us: p50(&routed.iter().map(|(_, r)| rest(r)).collect::<Vec<_>>()),
        canonical_p50_us: p50(&canon),
        gate_p50_us: p50(&gate_t),
        given_p50_us: given_p50(corpus, embedder, requests, queries)?,
    })
}

/// Routes `requests`, which should go to the planner: the figure, with
/// the share the gate refused.
fn misses(corpus: &Corpus, embedder: &dyn Embedder, requests: &[Request], queries: usize) -> anyhow::Result<Misses> {
    let routed = route_all(corpus, embedder, requests, queries)?;
    let n = routed.len() as f64;
    let planner = routed.iter().filter(|(_, r)| r.decision.layer == RouteLayer::Planner).count();
    let gated =
        routed.iter().filter(|(_, r)| r.decision.trace.iter().any(|t| t.contains("refused by the gate"))).count();
    let total: Vec<Duration> = routed.iter().map(|(_, r)| r.total).collect();
    Ok(Misses {
        rows: corpus.l1_rows,
        p50_us: p50(&total),
        p99_us: percentile_us(&total, 99.0),
        planner_rate: round2(planner as f64 / n * 100.0) / 100.0,
        gated: round2(gated as f64 / n * 100.0) / 100.0,
        embed_p50_us: p50(&routed.iter().map(|(_, r)| r.embed).collect::<Vec<_>>()),
        search_p50_us: p50(&routed.iter().map(|(_, r)| r.search).collect::<Vec<_>>()),
        rest_p50_us: p50(&routed.iter().map(|(_, r)| rest(r)).collect::<Vec<_>>()),
        given_p50_us: given_p50(corpus, embedder, requests, queries)?,
    })
}

/// Runs the benchmark for `--model`, or for every model in turn.
pub fn run(opts: &Options) -> anyhow::Result<Reports> {
    let models = match opts.model {
        Some(m) => vec![m],
        None => EmbeddingModel::ALL.to_vec(),
    };
    Ok(Reports { models: models.into_iter().map(|m| run_model(opts, m)).collect::<anyhow::Result<_>>()? })
}

/// Runs the benchmark with one model.
pub fn run_model(opts: &Options, model: EmbeddingModel) -> anyhow::Result<Report> {
    anyhow::ensure!(!opts.sizes.is_empty() && opts.sizes.iter().all(|n| *n > 0), "--sizes must be positive");
    anyhow::ensure!(opts.queries > 0 && opts.distinct > 0, "--queries and --distinct must be positive");
    if let Some(n) = opts.sizes.iter().find(|n| **n > L1_SPACE) {
        bail!("--sizes: {n} is more than the {L1_SPACE} distinct rows the synthetic grammar makes");
    }
    progress(opts, &format!("opening the embedding model {model}"));
    let mut harness = Harness::open(model, opts.threads, opts.distinct, opts.seed)?;
    let embedder = Arc::clone(&harness.embedder);
    let threads = if opts.threads == 0 { engram::learning::embedder::DEFAULT_THREADS } else { opts.threads };

    let (mut l0, mut embed) = (None, None);
    let (mut l1, mut l2, mut miss, mut tables) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &n in &opts.sizes {
        progress(opts, &format!("learning and building {n} L1 rows and {n} L2 pipelines"));
        let mut corpus = harness.corpus(n, n)?;
        let l1_requests = corpus.l1_requests(opts.queries, opts.seed);
        if l0.is_none() {
            progress(opts, "measuring L0 and the embedding alone");
            let phrases = l0_requests();
            let mut samples = Vec::with_capacity(opts.queries);
            for (j, text) in phrases.iter().cycle().take(WARM_UP + opts.queries).enumerate() {
                let r = corpus.route(embedder.as_ref(), text)?;
                if r.decision.layer != RouteLayer::L0 || r.embeddings > 0 {
                    bail!("{text:?} did not stay on L0: {:?}", r.decision);
                }
                if j >= WARM_UP {
                    samples.push(r.total);
                }
            }
            l0 = Some(latency(&samples));
            let texts: Vec<String> = l1_requests.iter().filter_map(|r| r.expect.clone()).collect();
            let mut samples = Vec::with_capacity(opts.queries);
            for (j, text) in texts.iter().cycle().take(WARM_UP + opts.queries).enumerate() {
                let t = Instant::now();
                std::hint::black_box(harness.embed(text)?);
                if j >= WARM_UP {
                    samples.push(t.elapsed());
                }
            }
            embed = Some(latency(&samples));
        }
        progress(opts, &format!("measuring L1 hits, L2 hits and misses at {n} rows"));
        l1.push(hits(&corpus, embedder.as_ref(), &l1_requests, RouteLayer::L1, opts.queries)?);
        let l2_requests = corpus.l2_requests(opts.queries, opts.seed);
        l2.push(hits(&corpus, embedder.as_ref(), &l2_requests, RouteLayer::L2, opts.queries)?);
        let miss_requests = corpus.miss_requests(opts.queries, opts.seed);
        miss.push(misses(&corpus, embedder.as_ref(), &miss_requests, opts.queries)?);
        progress(opts, &format!("learning {LEARNT_ROWS} more L1 rows one at a time at {n} rows"));
        let learnt = corpus.learn_rows(embedder.as_ref())?;
        let learn_row_p50_us = p50(&learnt);
        tables.push(Table {
            l1_rows: corpus.l1_rows,
            l2_rows: corpus.l2_rows,
            l1_embedded: corpus.embedded.0,
            l2_embedded: corpus.embedded.1,
            learn_s: secs(corpus.learn),
            build_s: secs(corpus.build),
            index_s: secs(corpus.index),
            learn_row_p50_us,
            rebuild_ratio: round2(corpus.build.as_secs_f64() * 1e6 / learn_row_p50_us.max(1e-3)),
        });
    }
    Ok(Report {
        l0: l0.expect("at least one size"),
        embed: embed.expect("at least one size"),
        l1,
        l2,
        miss,
        tables,
        queries: opts.queries,
        model: embedder.model_id().to_owned(),
        embedder_threads: threads,
        row_embedding_s: secs(harness.row_embedding),
        pairs: {
            progress(opts, "scoring the labelled pairs and the offline planner's requests");
            labelled::pairs(embedder.clone())?
        },
        planner: labelled::choices(embedder.clone())?,
        month: {
            progress(opts, "a month of requests through the live runtime");
            labelled::month(embedder.clone(), 30, 12, opts.seed)?
        },
        machine: machine(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// End to end with the real models (as the fast-path tests, fails when
    /// one is missing): a small table, half its rows derived, each model in
    /// the same run.
    #[test]
    fn small_run_reports_every_figure() {
        let opts = Options { sizes: vec![120], queries: 12, distinct: 60, ..Options::default() };
        let all = run(&opts).unwrap();
        let ids: Vec<&str> = all.models.iter().map(|r| r.model.as_str()).collect();
        assert_eq!(ids, EmbeddingModel::ALL.map(|m| m.spec().id), "every model, the default first");
        assert!(all.human().contains("wrong replays"));
        let r = &all.models[0];
        assert_eq!(r.pairs.iter().map(|p| p.lang.as_str()).collect::<Vec<_>>(), ["en", "it", "x"]);
        assert!(r.pairs.iter().all(|p| p.wrong_replays == 0 && p.hard_negatives > 0), "{:?}", r.pairs);
        assert!(r.planner.iter().map(|c| c.requests).sum::<usize>() > 50, "{:?}", r.planner);
        assert_eq!((r.month.turns, r.month.wrong_fast_path), (360, 0), "{:?}", r.month);
        assert!(r.l0.p50_us > 0.0 && r.embed.p50_us > r.l0.p50_us);
        assert_eq!((r.l1.len(), r.l2.len(), r.miss.len()), (1, 1, 1));
        assert_eq!((r.l1[0].rows, r.l1[0].hit_rate, r.l1[0].wrong), (120, 1.0, 0));
        assert_eq!((r.l2[0].rows, r.l2[0].hit_rate, r.l2[0].wrong), (120, 1.0, 0));
        assert_eq!(r.miss[0].planner_rate, 1.0);
        assert_eq!((r.tables[0].l1_embedded, r.tables[0].l2_embedded), (60, 60));
        let v: serde_json::Value = serde_json::to_value(r).unwrap();
        assert!(v["pairs"][0]["wrong_replays"].is_u64() && v["planner"][0]["right"].is_u64(), "{v}");
        for key in ["l0", "embed"] {
            assert!(v[key]["p50_us"].is_f64() && v[key]["p99_us"].is_f64(), "{v}");
        }
        for key in ["rows", "p50_us", "p99_us", "hit_rate"] {
            assert!(!v["l1"][0][key].is_null() && !v["l2"][0][key].is_null(), "{key}: {v}");
        }
        assert!(v["miss"][0]["rows"].is_u64() && v["miss"][0]["p50_us"].is_f64());
        assert!(r.human().contains("L1"));
    }
}
