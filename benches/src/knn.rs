//! K-NN benchmark: [`VectorIndex`]'s HNSW at several `ef`, against the
//! exact answer computed by its own exact scan, on `.fvecs` files or on
//! structured synthetic data.
//!
//! For each `ef`: recall@k (the share of the exact top k found), queries
//! per second and the median latency; the exact scan's own QPS and median
//! beside them; and how long the graph took to build. Every query is
//! timed on its own, through the public API (normalisation included), on
//! `--threads` threads (1 by default: per-core figures, as the peers'
//! are usually quoted).
//!
//! `--hnsw-rs` adds the hnsw_rs crate's graph, with our vectorised
//! distance, as an in-run peer (why [`engram::vector::hnsw`]
//! exists). faiss and hnswlib are measured in the same run on exactly the
//! same vectors when the Python the bench finds imports them
//! (`benches/peers/knn_peers.py`, embedded; `--python`, `--no-peers`,
//! `--peers-json` for figures measured elsewhere), and the curves are
//! compared at recalls 0.90–0.99: each one's best QPS among the `ef` that
//! reach the recall. `--write-fvecs DIR` saves the synthetic data.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};

use engram::vector::{
    read_fvecs, write_fvecs, HnswParams, Kernel, Synthetic, SyntheticSpec, VectorConfig, VectorIndex,
};
use hnsw_rs::anndists::dist::distances::Distance;

/// Options of `engram bench knn`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Data: either --base and --query (.fvecs: per vector a little-endian i32 \
dimension, then that many f32), or --synthetic N, which generates N \
structured unit vectors of --dim dimensions (clusters of ~2,000 points in a \
64-dimensional latent space, plus isotropic noise; seeded, so repeatable) \
and --queries fresh draws of the same distribution as queries.

Examples:
  engram bench knn --synthetic 20000 --dim 384 --json
  engram bench knn --base sift_base.fvecs --query sift_query.fvecs --ef 16,32,64")]
pub struct Options {
    /// Base vectors, .fvecs
    #[arg(long, value_name = "FILE", requires = "query", conflicts_with = "synthetic")]
    pub base: Option<PathBuf>,

    /// Query vectors, .fvecs
    #[arg(long, value_name = "FILE", requires = "base")]
    pub query: Option<PathBuf>,

    /// Generate N structured synthetic base vectors instead of reading files
    #[arg(long, value_name = "N", required_unless_present = "base")]
    pub synthetic: Option<usize>,

    /// Dimension of synthetic vectors
    #[arg(long, value_name = "D", default_value_t = 384)]
    pub dim: usize,

    /// Number of synthetic queries
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    pub queries: usize,

    /// Seed of the synthetic data
    #[arg(long, value_name = "SEED", default_value_t = 42)]
    pub seed: u64,

    /// Neighbours per query
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub k: usize,

    /// Search breadths to measure, comma-separated (the default sweeps 16
    /// points from 16 to 512: the recall–QPS curve)
    #[arg(long, value_name = "EF,...", value_delimiter = ',', default_values_t = EF_SWEEP)]
    pub ef: Vec<usize>,

    /// Threads issuing queries
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,

    /// Threads building the graph [default: all cores]
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true)]
    pub build_threads: usize,

    /// HNSW links per node (layer 0 keeps twice as many)
    #[arg(long, value_name = "M", default_value_t = 16)]
    pub m: usize,

    /// HNSW candidate-list size while building
    #[arg(long, value_name = "EF", default_value_t = 200)]
    pub ef_construction: usize,

    /// Minimum measuring time per configuration, in seconds (the query set
    /// is repeated until it is reached)
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub seconds: f64,

    /// Also measure the hnsw_rs crate's graph (with our distance) as a peer
    #[arg(long)]
    pub hnsw_rs: bool,

    /// Write the (synthetic) base and queries to DIR/base.fvecs and
    /// DIR/query.fvecs, to measure other libraries on the same data
    #[arg(long, value_name = "DIR")]
    pub write_fvecs: Option<PathBuf>,

    /// The Python that runs faiss and hnswlib on the same vectors
    /// (benches/peers/knn_peers.py, embedded in the binary) [default:
    /// $ENGRAM_BENCH_PYTHON, else python3]; a library it cannot import is
    /// named in the report, not measured
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// Do not run faiss and hnswlib
    #[arg(long)]
    pub no_peers: bool,

    /// Peer figures measured elsewhere, as the JSON knn_peers.py prints,
    /// shown beside this run's (instead of running the peers)
    #[arg(long, value_name = "FILE")]
    pub peers_json: Option<PathBuf>,

    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// The default `ef` sweep: 16 points from 16 to 512.
pub const EF_SWEEP: [usize; 16] = [16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512];

/// The recalls at which the curves are compared.
pub const RECALLS: [f64; 10] = [0.90, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99];

impl Options {
    /// Options for `n` synthetic vectors of `dim`, everything else default.
    pub fn synthetic(n: usize, dim: usize) -> Self {
        Options {
            base: None,
            query: None,
            synthetic: Some(n),
            dim,
            queries: 1_000,
            seed: 42,
            k: 10,
            ef: vec![32, 64, 128],
            threads: 1,
            python: None,
            no_peers: true,
            peers_json: None,
            build_threads: 0,
            m: 16,
            ef_construction: 200,
            seconds: 1.0,
            hnsw_rs: false,
            write_fvecs: None,
            json: false,
        }
    }
}

/// One `ef` setting's figures.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct Config {
    /// Layer-0 candidate-list size.
    pub ef: usize,
    /// Mean share of the exact top k returned.
    pub recall_at_k: f64,
    /// Queries per second over all query threads.
    pub qps: f64,
    /// Median latency of one query, in microseconds.
    pub p50_us: f64,
}

/// The exact scan's figures.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Exact {
    /// Queries per second over all query threads.
    pub qps: f64,
    /// Median latency of one query, in microseconds.
    pub p50_us: f64,
}

/// The hnsw_rs peer's figures (only with `--hnsw-rs`).
#[derive(serde::Serialize, Debug, Clone)]
pub struct Peer {
    /// Seconds to build its graph (parallel insert).
    pub build_s: f64,
    /// Its figures per `ef`.
    pub configs: Vec<Config>,
}

/// A library measured by benches/peers/knn_peers.py on the same vectors.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub struct ExternalPeer {
    /// Library, version and index type.
    pub name: String,
    /// Seconds to build its graph (all cores).
    pub build_s: f64,
    /// Its figures per `ef` (QPS of a batched search on one thread).
    pub configs: Vec<Config>,
}

impl ExternalPeer {
    /// The library's name alone (`faiss`), for table labels.
    pub fn short_name(&self) -> &str {
        self.name.split_whitespace().next().unwrap_or(&self.name)
    }
}

/// What knn_peers.py prints.
#[derive(serde::Deserialize, Debug, Clone, Default)]
struct PeersOutput {
    peers: Vec<ExternalPeer>,
    #[serde(default)]
    missing: Vec<String>,
}

/// Each curve's best QPS at one recall.
#[derive(serde::Serialize, Debug, Clone)]
pub struct AtRecall {
    /// The recall@k reached (at least).
    pub recall: f64,
    /// engram's best QPS among the `ef` that reach it (`None`: none does).
    pub engram_qps: Option<f64>,
    /// Each peer's, by name.
    pub peers_qps: std::collections::BTreeMap<String, Option<f64>>,
}

/// The best QPS among the configurations that reach `recall` (the
/// upper-left frontier of a recall–QPS curve).
pub fn qps_at(configs: &[Config], recall: f64) -> Option<f64> {
    configs.iter().filter(|c| c.recall_at_k + 1e-9 >= recall).map(|c| c.qps).reduce(f64::max)
}

/// The report of `engram bench knn`.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    /// Base vectors.
    pub n: usize,
    /// Their dimension.
    pub dim: usize,
    /// Seconds to build the graph over all base vectors.
    pub build_s: f64,
    /// HNSW figures per `ef`.
    pub configs: Vec<Config>,
    /// The exact scan.
    pub exact: Exact,
    /// hnsw_rs, if asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hnsw_rs: Option<Peer>,
    /// faiss and hnswlib on the same vectors (benches/peers/knn_peers.py).
    pub peers: Vec<ExternalPeer>,
    /// Peers that could not be measured, and why.
    pub peers_missing: Vec<String>,
    /// The curves compared at recalls 0.90 to 0.99.
    pub at_recall: Vec<AtRecall>,
}

impl Report {
    /// The report as a table.
    pub fn human(&self, opts: &Options) -> String {
        let mut out = format!(
            "k-nn: {} base vectors of {} dims, k = {}, {} query thread(s); graph m = {}, ef_construction = {}, \
             built in {:.1} s\n\n{:<16} {:>10} {:>10} {:>10}\n",
            self.n,
            self.dim,
            opts.k,
            opts.threads,
            opts.m,
            opts.ef_construction,
            self.build_s,
            "",
            "recall@k",
            "qps",
            "p50 µs"
        );
        let row = |out: &mut String, label: String, recall: f64, qps: f64, p50_us: f64| {
            out.push_str(&format!("{label:<16} {recall:>10.4} {qps:>10.0} {p50_us:>10.1}\n"));
        };
        let curve = |out: &mut String, name: &str, configs: &[Config]| {
            for c in configs {
                row(out, format!("{name} ef {}", c.ef), c.recall_at_k, c.qps, c.p50_us);
            }
        };
        curve(&mut out, "hnsw", &self.configs);
        row(&mut out, "exact".to_owned(), 1.0, self.exact.qps, self.exact.p50_us);
        if let Some(p) = &self.hnsw_rs {
            curve(&mut out, "hnsw_rs", &p.configs);
            out.push_str(&format!("(hnsw_rs built in {:.1} s)\n", p.build_s));
        }
        for p in &self.peers {
            curve(&mut out, p.short_name(), &p.configs);
            out.push_str(&format!("({} built in {:.1} s)\n", p.name, p.build_s));
        }
        for m in &self.peers_missing {
            out.push_str(&format!("not measured: {m}\n"));
        }
        if !self.peers.is_empty() {
            out.push_str("\nbest QPS at recall@k ≥");
            out.push_str(&format!("\n{:<8} {:>10}", "recall", "engram"));
            for p in &self.peers {
                out.push_str(&format!(" {:>10} {:>8}", p.short_name(), "ratio"));
            }
            out.push('\n');
            let cell = |q: Option<f64>| q.map_or("—".to_owned(), |q| format!("{q:.0}"));
            for a in &self.at_recall {
                out.push_str(&format!("{:<8.2} {:>10}", a.recall, cell(a.engram_qps)));
                for p in &self.peers {
                    let theirs = a.peers_qps.get(&p.name).copied().flatten();
                    let ratio = match (a.engram_qps, theirs) {
                        (Some(o), Some(t)) if t > 0.0 => format!("{:.2}x", o / t),
                        _ => "—".to_owned(),
                    };
                    out.push_str(&format!(" {:>10} {:>8}", cell(theirs), ratio));
                }
                out.push('\n');
            }
        }
        out
    }
}

/// Base and query vectors of one dimension.
pub struct Data {
    /// Floats per vector.
    pub dim: usize,
    /// Base vectors, end to end.
    pub base: Vec<f32>,
    /// Query vectors, end to end.
    pub queries: Vec<f32>,
}

/// Reads or generates the data `opts` asks for.
pub fn load_data(opts: &Options) -> anyhow::Result<Data> {
    if let Some(n) = opts.synthetic {
        if n == 0 || opts.dim == 0 || opts.queries == 0 {
            bail!("--synthetic, --dim and --queries must be positive");
        }
        let spec = SyntheticSpec { n, dim: opts.dim, seed: opts.seed, ..SyntheticSpec::default() };
        let mut g = Synthetic::new(&spec);
        let base = g.base(n);
        let queries = g.base(opts.queries);
        return Ok(Data { dim: opts.dim, base, queries });
    }
    let (Some(b), Some(q)) = (&opts.base, &opts.query) else { bail!("give --base and --query, or --synthetic N") };
    let base = read_fvecs(b)?;
    let queries = read_fvecs(q)?;
    if base.is_empty() || queries.is_empty() {
        bail!("{} or {} holds no vector", b.display(), q.display());
    }
    if base.dim != queries.dim {
        bail!("{} has dimension {}, {} has {}", b.display(), base.dim, q.display(), queries.dim);
    }
    Ok(Data { dim: base.dim, base: base.data, queries: queries.data })
}

/// Runs `f` on every query, on `threads` threads, repeating the query set
/// until `seconds` have passed (at least once); returns (QPS, p50 µs).
fn measure<F>(queries: &[f32], dim: usize, threads: usize, seconds: f64, f: F) -> (f64, f64)
where
    F: Fn(&[f32]) + Sync,
{
    let nq = queries.len() / dim;
    let threads = threads.max(1).min(nq);
    let started = Instant::now();
    let mut lat: Vec<f64> = Vec::new();
    let mut done = 0usize;
    loop {
        let chunk = nq.div_ceil(threads);
        let parts: Vec<Vec<f64>> = std::thread::scope(|s| {
            let handles: Vec<_> = queries
                .chunks(chunk * dim)
                .map(|part| {
                    let f = &f;
                    s.spawn(move || {
                        part.chunks_exact(dim)
                            .map(|q| {
                                let t = Instant::now();
                                f(q);
                                t.elapsed().as_secs_f64()
                            })
                            .collect::<Vec<f64>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("query thread panicked")).collect()
        });
        parts.into_iter().for_each(|p| lat.extend(p));
        done += nq;
        if started.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let p50 = crate::percentile(&lat, 50.0).unwrap_or(f64::NAN) * 1e6;
    (round(done as f64 / elapsed, 0), round(p50, 1))
}

fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

/// Mean recall of `got` against `truth` (both per query, ids).
fn recall(truth: &[Vec<u64>], got: &[Vec<u64>]) -> f64 {
    let mut sum = 0.0;
    for (t, g) in truth.iter().zip(got) {
        if !t.is_empty() {
            sum += g.iter().filter(|x| t.contains(x)).count() as f64 / t.len() as f64;
        }
    }
    round(sum / truth.len().max(1) as f64, 4)
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    if opts.k == 0 || opts.ef.is_empty() {
        bail!("--k must be positive and --ef must list at least one value");
    }
    let data = load_data(opts)?;
    let dim = data.dim;
    if let Some(dir) = &opts.write_fvecs {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, v) in [("base.fvecs", &data.base), ("query.fvecs", &data.queries)] {
            let p = dir.join(name);
            write_fvecs(&p, dim, v).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    let n = data.base.len() / dim;
    let config = VectorConfig {
        exact_below: 0,
        hnsw: HnswParams { m: opts.m, ef_construction: opts.ef_construction, ..HnswParams::default() },
        build_threads: opts.build_threads,
        ..VectorConfig::new(dim)
    };
    let mut index: VectorIndex<u64> = VectorIndex::new(config)?;
    let t = Instant::now();
    index.extend(data.base.chunks_exact(dim).enumerate().map(|(i, r)| (i as u64, r)))?;
    let build_s = round(t.elapsed().as_secs_f64(), 2);

    // Ground truth on all cores: it is not what is measured.
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let nq = data.queries.len() / dim;
    let truth: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = data
            .queries
            .chunks(nq.div_ceil(cores) * dim)
            .map(|part| {
                let index = &index;
                s.spawn(move || {
                    part.chunks_exact(dim)
                        .map(|q| index.search_exact(q, opts.k).map(|h| h.into_iter().map(|x| x.key).collect()))
                        .collect::<Result<Vec<Vec<u64>>, _>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("ground-truth thread panicked")).collect::<Result<Vec<_>, _>>()
    })?
    .into_iter()
    .flatten()
    .collect();

    let mut configs = Vec::new();
    for &ef in &opts.ef {
        let got: Vec<Vec<u64>> = data
            .queries
            .chunks_exact(dim)
            .map(|q| index.search_ef(q, opts.k, ef).map(|h| h.into_iter().map(|x| x.key).collect()))
            .collect::<Result<_, _>>()?;
        let (qps, p50_us) = measure(&data.queries, dim, opts.threads, opts.seconds, |q| {
            std::hint::black_box(index.search_ef(q, opts.k, ef).ok());
        });
        configs.push(Config { ef, recall_at_k: recall(&truth, &got), qps, p50_us });
    }
    let (qps, p50_us) = measure(&data.queries, dim, opts.threads, opts.seconds, |q| {
        std::hint::black_box(index.search_exact(q, opts.k).ok());
    });
    let hnsw_rs = if opts.hnsw_rs { Some(hnsw_rs_peer(opts, &index, &data, &truth)) } else { None };
    let peers = external_peers(opts, &data)?;
    let at_recall = RECALLS
        .iter()
        .map(|&r| AtRecall {
            recall: r,
            engram_qps: qps_at(&configs, r),
            peers_qps: peers.peers.iter().map(|p| (p.name.clone(), qps_at(&p.configs, r))).collect(),
        })
        .collect();
    Ok(Report {
        n,
        dim,
        build_s,
        configs,
        exact: Exact { qps, p50_us },
        hnsw_rs,
        peers: peers.peers,
        peers_missing: peers.missing,
        at_recall,
    })
}

/// The peer script, embedded so that the binary runs it anywhere.
const PEERS_SCRIPT: &str = include_str!("../peers/knn_peers.py");

/// faiss and hnswlib on the same vectors: read from `--peers-json`, or
/// measured by the peer script under `--python` (nothing with
/// `--no-peers`).
fn external_peers(opts: &Options, data: &Data) -> anyhow::Result<PeersOutput> {
    if let Some(path) = &opts.peers_json {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        return serde_json::from_str(&text)
            .with_context(|| format!("{}: not the JSON knn_peers.py prints", path.display()));
    }
    if opts.no_peers {
        return Ok(PeersOutput::default());
    }
    let python = opts
        .python
        .clone()
        .or_else(|| std::env::var_os("ENGRAM_BENCH_PYTHON").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("python3"));
    let dir = tempfile::tempdir().context("creating a scratch dir for the peers")?;
    let script = dir.path().join("knn_peers.py");
    std::fs::write(&script, PEERS_SCRIPT).with_context(|| format!("writing {}", script.display()))?;
    let (base, query) = (dir.path().join("base.fvecs"), dir.path().join("query.fvecs"));
    write_fvecs(&base, data.dim, &data.base)?;
    write_fvecs(&query, data.dim, &data.queries)?;
    let ef: Vec<String> = opts.ef.iter().map(|e| e.to_string()).collect();
    let run = std::process::Command::new(&python)
        .arg(&script)
        .args(["--base".as_ref(), base.as_os_str(), "--query".as_ref(), query.as_os_str()])
        .args(["--k", &opts.k.to_string(), "--m", &opts.m.to_string()])
        .args(["--ef-construction", &opts.ef_construction.to_string(), "--ef", &ef.join(",")])
        .args(["--seconds", &opts.seconds.to_string()])
        .output();
    let missing = |why: String| Ok(PeersOutput { peers: Vec::new(), missing: vec![why] });
    match run {
        Err(e) => missing(format!("faiss, hnswlib: cannot run {} ({e})", python.display())),
        Ok(out) if !out.status.success() => missing(format!(
            "faiss, hnswlib: {} {} failed: {}",
            python.display(),
            script.display(),
            String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
        )),
        Ok(out) => serde_json::from_slice(&out.stdout)
            .with_context(|| format!("the peer script's output: {}", String::from_utf8_lossy(&out.stdout))),
    }
}

/// Cosine distance between unit vectors, as hnsw_rs wants it:
/// `1 − a·b`, clamped to `[0, 2]`.
///
/// The clamp matters: for two (nearly) identical unit vectors rounding can
/// make `a·b` slightly above 1, and hnsw_rs asserts non-negative distances
/// in its search loop. The inputs must already be L2-normalised
/// ([`engram::vector::normalize`]); [`VectorIndex`] does that on insert.
#[derive(Clone, Copy, Debug, Default)]
pub struct CosineDistance {
    kernel: Kernel,
}

impl CosineDistance {
    /// A distance using `kernel` (tests pin one; [`Default`] detects).
    pub fn with_kernel(kernel: Kernel) -> Self {
        CosineDistance { kernel }
    }

    /// The kernel in use.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }
}

impl Distance<f32> for CosineDistance {
    #[inline]
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - self.kernel.dot(va, vb)).clamp(0.0, 2.0)
    }
}

/// The hnsw_rs crate's graph over the same (normalised) vectors, with our
/// distance, inserted on all cores as its docs recommend.
fn hnsw_rs_peer(opts: &Options, index: &VectorIndex<u64>, data: &Data, truth: &[Vec<u64>]) -> Peer {
    use hnsw_rs::hnsw::Hnsw;
    let dim = data.dim;
    let n = data.base.len() / dim;
    let rows: Vec<std::borrow::Cow<'_, [f32]>> =
        (0..n as u64).map(|i| index.get(&i).expect("every base vector is stored")).collect();
    let t = Instant::now();
    let graph = Hnsw::<f32, CosineDistance>::new(opts.m, n, 16, opts.ef_construction, CosineDistance::default());
    graph.parallel_insert_slice(&rows.iter().enumerate().map(|(i, r)| (&**r, i)).collect());
    let build_s = round(t.elapsed().as_secs_f64(), 2);
    let queries: Vec<f32> = data
        .queries
        .chunks_exact(dim)
        .flat_map(|q| {
            let mut q = q.to_vec();
            engram::vector::normalize(&mut q);
            q
        })
        .collect();
    let configs = opts
        .ef
        .iter()
        .map(|&ef| {
            let got: Vec<Vec<u64>> = queries
                .chunks_exact(dim)
                .map(|q| graph.search(q, opts.k, ef).into_iter().map(|nb| nb.d_id as u64).collect())
                .collect();
            let (qps, p50_us) = measure(&queries, dim, opts.threads, opts.seconds, |q| {
                std::hint::black_box(graph.search(q, opts.k, ef));
            });
            Config { ef, recall_at_k: recall(truth, &got), qps, p50_us }
        })
        .collect();
    Peer { build_s, configs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_synthetic_run_reports_every_figure() {
        let opts = Options {
            queries: 40,
            ef: vec![16, 64],
            seconds: 0.0,
            m: 8,
            ef_construction: 40,
            ..Options::synthetic(1_500, 32)
        };
        let r = run(&opts).unwrap();
        assert_eq!((r.n, r.dim, r.configs.len()), (1_500, 32, 2));
        assert!(r.configs[1].recall_at_k >= 0.9, "{:?}", r.configs);
        assert!(r.exact.qps > 0.0 && r.configs.iter().all(|c| c.qps > 0.0 && c.p50_us > 0.0));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.starts_with(r#"{"n":1500,"dim":32,"build_s":"#), "{json}");
        assert!(json.contains(r#","configs":[{"ef":16,"recall_at_k":"#), "{json}");
        assert!(json.contains(r#"],"exact":{"qps":"#), "{json}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value.as_object().unwrap().len(), 8, "{json}");
        assert_eq!(value["at_recall"].as_array().unwrap().len(), RECALLS.len());
        assert!(value["peers"].as_array().unwrap().is_empty(), "--no-peers");
        assert_eq!(value["configs"][0].as_object().unwrap().len(), 4);
        assert!(r.human(&opts).contains("hnsw ef 64"));
    }

    #[test]
    fn reads_fvecs_and_names_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { queries: 5, write_fvecs: Some(dir.path().into()), ..Options::synthetic(50, 8) };
        let d = load_data(&opts).unwrap();
        write_fvecs(&dir.path().join("base.fvecs"), 8, &d.base).unwrap();
        write_fvecs(&dir.path().join("query.fvecs"), 8, &d.queries).unwrap();
        let files = Options {
            base: Some(dir.path().join("base.fvecs")),
            query: Some(dir.path().join("query.fvecs")),
            synthetic: None,
            ..opts.clone()
        };
        let back = load_data(&files).unwrap();
        assert_eq!((back.dim, back.base.len(), back.queries.len()), (8, 400, 40));
        std::fs::write(dir.path().join("query.fvecs"), [1u8, 0, 0]).unwrap();
        let err = load_data(&files).err().unwrap().to_string();
        assert!(err.contains("query.fvecs") && err.contains("vector 0"), "{err}");
    }
}

#[cfg(test)]
mod cosine_distance_tests {
    use super::*;

    #[test]
    fn cosine_distance_is_clamped() {
        let d = CosineDistance::default();
        let mut v = vec![0f32; 384];
        v[0] = 1.000_001;
        assert_eq!(d.eval(&v, &v), 0.0);
        let w: Vec<f32> = v.iter().map(|x| -x * 1.000_001).collect();
        assert_eq!(d.eval(&v, &w), 2.0);
    }

    #[test]
    fn curves_compare_on_their_frontier() {
        let c = |ef, recall_at_k, qps| Config { ef, recall_at_k, qps, p50_us: 0.0 };
        // A noisy curve: a larger ef that is faster still counts.
        let curve = [c(16, 0.85, 9000.0), c(32, 0.93, 5000.0), c(48, 0.95, 5200.0), c(64, 0.99, 2000.0)];
        assert_eq!(qps_at(&curve, 0.90), Some(5200.0));
        assert_eq!(qps_at(&curve, 0.95), Some(5200.0));
        assert_eq!(qps_at(&curve, 0.96), Some(2000.0));
        assert_eq!(qps_at(&curve, 0.995), None);
    }

    #[test]
    fn peer_figures_can_be_passed_in() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("peers.json");
        std::fs::write(
            &file,
            r#"{"peers":[{"name":"faiss 1.15.1 IndexHNSWFlat","build_s":1.5,"configs":[{"ef":16,"recall_at_k":0.99,"qps":1.0,"p50_us":3.0}]}]}"#,
        )
        .unwrap();
        let opts = Options { peers_json: Some(file), ..Options::synthetic(300, 8) };
        let report = run(&opts).unwrap();
        assert_eq!(report.peers.len(), 1);
        let at = &report.at_recall[0];
        assert_eq!(at.peers_qps["faiss 1.15.1 IndexHNSWFlat"], Some(1.0));
        assert!(report.human(&opts).contains("best QPS at recall"));
    }
}
