//! `engram bench runtime`: what the actor runtime adds to a turn.
//!
//! A fast-path turn through the live runtime — listener, router, reply
//! loop, each an actor appending to the log and woken by its subscription —
//! is timed from `handle_utterance` to its return, and set beside the same
//! decision made by direct calls in the same run (the L0 table or the fast
//! path's `route`, then the tool): the difference is the runtime's
//! overhead (bus appends, actor hops, the host bridge). The tool is a
//! trivial one, so tool time is nil; no LLM is involved.
//!
//! Figures: p50/p99 of L0 turns (no embedding) and L1 turns (new
//! arguments in a known request: its canonical form's embedding comes from
//! the memo, as it does in steady state; a request whose canonical form is
//! new also pays one embedding, reported beside), under the `durable` log policy (an fsync per append: what a
//! host gets by default) and `relaxed`; turns/s with 1 and 16 concurrent
//! sessions; events appended per turn; and the L0 turn **at rest**: one
//! turn at a time with every actor idle before it, as a voice assistant's
//! turns come seconds apart. Back to back, the actors' threads and caches
//! are still warm from the turn before; at rest each hop (host, listener,
//! router, reply loop, host) wakes a parked thread onto cold caches — on a
//! small VM every stage measured about twice as slow, the work as much as
//! the wake-up (docs/performance.md) — so the two figures bracket what a
//! user sees.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::Utc;
use engram::actors::config::Config;
use engram::actors::fast_path_service::FastPathService;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::actors::tools::{FnTool, Tool, ToolContext, ToolOutput};
use engram::actors::Runtime;
use engram::events::payloads::ToolArgs;
use engram::events::{Seq, SessionId};
use engram::learning::embedder::{Embedder, EmbedderConfig};
use engram::learning::fast_path::l0::L0Table;
use engram::learning::projections::{CanonicalQueries, Pipelines};
use engram::local_state::embedding_cache::CacheCaps;
use engram::local_state::projector::Projector;
use serde::Serialize;

use crate::percentile_us;
use crate::{machine, round2};

/// Options of `engram bench runtime`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Each figure is measured on a fresh data dir in a temp dir, with the real \
embedding model. Overhead = runtime turn − the same decision by direct \
calls, medians of the same run.

Examples:
  engram bench runtime --json
  engram bench runtime --turns 500")]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Timed turns per figure (after a warm-up of 20)
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub turns: usize,

    /// Sessions taking turns at once in the throughput figure
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub concurrency: usize,
}

/// A trivial tool, so a turn's time is the runtime's: `word_count {path}`
/// that counts the characters of the path instead of reading a file.
pub fn echo() -> FnTool {
    FnTool::new("word_count", "Count the words in a text file", |args, _ctx| {
        let path = args.0.get("path").and_then(|v| v.as_str()).unwrap_or_default();
        Ok(ToolOutput::trusted(format!("{} words", path.len())))
    })
    .with_arg("path", "the file")
}

/// p50 / p99 in µs.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct Latency {
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

impl Latency {
    /// The p50 and p99 of `samples`.
    pub(crate) fn of(samples: &[Duration]) -> Latency {
        Latency { p50_us: percentile_us(samples, 50.0), p99_us: percentile_us(samples, 99.0) }
    }
}

/// One kind of turn under one log policy.
#[derive(Serialize, Debug)]
pub struct TurnFigure {
    /// `L0` or `L1`.
    pub layer: String,
    /// `durable` or `relaxed`.
    pub durability: String,
    /// The whole turn through the runtime.
    pub runtime: Latency,
    /// The same decision and tool call by direct calls.
    pub direct: Latency,
    /// runtime p50 − direct p50, µs: the runtime's overhead.
    pub overhead_p50_us: f64,
    /// runtime p99 − direct p99, µs.
    pub overhead_p99_us: f64,
    /// runtime p50 / direct p50.
    pub ratio_p50: f64,
    /// Events appended per turn (derived ones included).
    pub events_per_turn: f64,
}

/// Turns per second.
#[derive(Serialize, Debug)]
pub struct Throughput {
    /// Sessions taking turns at once.
    pub sessions: usize,
    /// `durable` or `relaxed`.
    pub durability: String,
    /// Completed L0 turns per second.
    pub turns_per_s: f64,
}

/// The report.
#[derive(Serialize, Debug)]
pub struct Report {
    /// CPU and OS.
    pub machine: String,
    /// Timed turns per figure.
    pub turns: usize,
    /// Per layer and policy.
    pub figures: Vec<TurnFigure>,
    /// Turns per second.
    pub throughput: Vec<Throughput>,
    /// Embedding one request alone, p50 µs: what an L1 turn adds when its
    /// canonical form is not memoised yet.
    pub embed_p50_us: f64,
    /// L0 turns at rest (the runtime settled before each), per policy.
    pub at_rest: Vec<RestFigure>,
}

/// L0 turns taken one at a time, every actor idle before each: what the
/// thread hops cost when each wakes a parked thread.
#[derive(Serialize, Debug)]
pub struct RestFigure {
    /// `durable` or `relaxed`.
    pub durability: String,
    /// The whole turn through the runtime.
    pub runtime: Latency,
}

impl Report {
    /// The human form.
    pub fn human(&self) -> String {
        let mut out = format!("engram bench runtime — {}\n{} timed turns per figure\n\n", self.machine, self.turns);
        out.push_str(
            "layer  log       runtime p50/p99 µs     direct p50/p99 µs   overhead p50/p99 µs  ratio  events/turn\n",
        );
        for f in &self.figures {
            out.push_str(&format!(
                "{:<6} {:<9} {:>9.0} / {:<9.0}  {:>8.0} / {:<8.0}  {:>8.0} / {:<8.0}  {:>5.1}x  {:>5.1}\n",
                f.layer,
                f.durability,
                f.runtime.p50_us,
                f.runtime.p99_us,
                f.direct.p50_us,
                f.direct.p99_us,
                f.overhead_p50_us,
                f.overhead_p99_us,
                f.ratio_p50,
                f.events_per_turn
            ));
        }
        for r in &self.at_rest {
            out.push_str(&format!(
                "L0     {:<9} {:>9.0} / {:<9.0}  at rest (the runtime idle before each turn)\n",
                r.durability, r.runtime.p50_us, r.runtime.p99_us
            ));
        }
        out.push_str(&format!(
            "\nembedding one request (added when its canonical form is new): p50 {:.0} µs\n",
            self.embed_p50_us
        ));
        for t in &self.throughput {
            out.push_str(&format!(
                "throughput: {:>2} session(s), {:<8} {:>8.0} L0 turns/s\n",
                t.sessions, t.durability, t.turns_per_s
            ));
        }
        out
    }
}

const WARM_UP: usize = 20;

/// The runtime the benchmark drives: offline, [`echo`] registered, the log
/// under `durability` (`durable` or `relaxed`).
pub fn start(dir: &Path, durability: &str, embedder: Arc<dyn Embedder>) -> anyhow::Result<Runtime> {
    let mut config = Config::default();
    config.storage.durability = durability.to_owned();
    Runtime::builder()
        .data_dir(dir)
        .config(config)
        .offline()
        .embedder(embedder)
        .tool(Arc::new(echo()))
        .turn_timeout(Duration::from_secs(60))
        .start()
        .context("starting the runtime")
}

/// Times `n` turns of `text(i)` in one session; returns the samples and
/// the events appended per turn.
fn time_turns(
    rt: &Runtime,
    session: &str,
    n: usize,
    text: impl Fn(usize) -> String,
) -> anyhow::Result<(Vec<Duration>, f64)> {
    let s = SessionId::new(session);
    for i in 0..WARM_UP {
        rt.handle_utterance(&s, &text(i))?;
    }
    rt.settle(Duration::from_secs(10));
    let before = rt.log().head();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let t0 = Instant::now();
        let r = rt.handle_utterance(&s, &text(WARM_UP + i))?;
        samples.push(t0.elapsed());
        anyhow::ensure!(r.layer.is_some(), "turn {i} was not answered");
    }
    rt.settle(Duration::from_secs(10));
    let events = rt.log().head().0 - before.0;
    Ok((samples, events as f64 / n as f64))
}

/// Times `n` L0 turns in one session, each once every actor has handled
/// the log to its head (the turn before's learning included).
fn time_turns_at_rest(rt: &Runtime, n: usize) -> anyhow::Result<Vec<Duration>> {
    let s = SessionId::new("at-rest");
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        anyhow::ensure!(rt.settle(Duration::from_secs(10)), "the runtime did not settle before turn {i}");
        let t0 = Instant::now();
        let r = rt.handle_utterance(&s, "what time is it")?;
        samples.push(t0.elapsed());
        anyhow::ensure!(r.layer.is_some(), "turn {i} was not answered");
    }
    Ok(samples)
}

fn figure(layer: &str, durability: &str, runtime: &[Duration], direct: &[Duration], events: f64) -> TurnFigure {
    let (r, d) = (Latency::of(runtime), Latency::of(direct));
    TurnFigure {
        layer: layer.into(),
        durability: durability.into(),
        runtime: r,
        direct: d,
        overhead_p50_us: round2(r.p50_us - d.p50_us),
        overhead_p99_us: round2(r.p99_us - d.p99_us),
        ratio_p50: round2(r.p50_us / d.p50_us.max(0.01)),
        events_per_turn: round2(events),
    }
}

/// The `i`th L1 request: a known request with a new path.
pub fn l1_text(i: usize) -> String {
    format!("count the words in ~/file{i}.txt")
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    let embedder: Arc<dyn Embedder> = Arc::new(OnnxEmbedder::open(&EmbedderConfig::default())?);
    let config = Config::default();
    let now = Utc::now().fixed_offset();
    let ctx = ToolContext::new(SessionId::new("direct"), now);
    let l0 = L0Table::from_config(&config.fast_path);
    let mut figures = Vec::new();
    let mut throughput = Vec::new();
    let mut embed_samples = Vec::new();
    let mut at_rest = Vec::new();
    for i in 0..opts.turns.max(50) {
        let t0 = Instant::now();
        embedder.embed(&l1_text(i))?;
        embed_samples.push(t0.elapsed());
    }
    for durability in ["durable", "relaxed"] {
        progress(opts, &format!("{durability}: L0 turns"));
        let dir = tempfile::tempdir()?;
        let rt = start(dir.path(), durability, embedder.clone())?;
        let registry = engram::actors::tools::ToolRegistry::with_builtins(Default::default());
        let (samples, events) = time_turns(&rt, "l0", opts.turns, |_| "what time is it".to_owned())?;
        let mut direct = Vec::with_capacity(opts.turns);
        for _ in 0..opts.turns {
            let t0 = Instant::now();
            let (tool, _) = l0.lookup("what time is it").context("L0 has the phrase")?;
            std::hint::black_box(registry.call(tool, &ToolArgs::default(), &ctx)?);
            direct.push(t0.elapsed());
        }
        figures.push(figure("L0", durability, &samples, &direct, events));
        progress(opts, &format!("{durability}: L0 turns at rest"));
        let rest = time_turns_at_rest(&rt, opts.turns)?;
        at_rest.push(RestFigure { durability: durability.into(), runtime: Latency::of(&rest) });

        progress(opts, &format!("{durability}: L1 turns"));
        // Teach L1 the request (three planner turns), then time hits.
        let teach = SessionId::new("teach");
        for _ in 0..config.fast_path.canonical_query_min_uses {
            rt.handle_utterance(&teach, "count the words in ~/notes.txt")?;
        }
        rt.settle(Duration::from_secs(10));
        let (samples, events) = time_turns(&rt, "l1", opts.turns, l1_text)?;
        // Direct: the fast path over the same rows, then the tool.
        let fast = direct_fast_path(&rt, &config, embedder.clone())?;
        let tool = echo();
        let mut direct = Vec::with_capacity(opts.turns);
        for i in 0..opts.turns {
            let t0 = Instant::now();
            let d = fast.route(&l1_text(1_000_000 + i), now)?;
            anyhow::ensure!(d.steps.len() == 1, "the direct fast path missed: {}", d.reason);
            std::hint::black_box(tool.call(&d.steps[0].args, &ctx)?);
            direct.push(t0.elapsed());
        }
        figures.push(figure("L1", durability, &samples, &direct, events));

        progress(opts, &format!("{durability}: throughput"));
        for sessions in [1, opts.concurrency.max(1)] {
            throughput.push(time_throughput(&rt, sessions, (opts.turns / sessions).max(10), durability)?);
        }
        rt.shutdown()?;
    }
    Ok(Report {
        machine: machine(),
        turns: opts.turns,
        figures,
        throughput,
        embed_p50_us: percentile_us(&embed_samples, 50.0),
        at_rest,
    })
}

/// The fast path the runtime's router uses, built by direct calls over the
/// rows its log holds and the same embedding memo (a request's canonical
/// form is embedded once, then memoised).
fn direct_fast_path(rt: &Runtime, config: &Config, embedder: Arc<dyn Embedder>) -> anyhow::Result<FastPathService> {
    let mut projector =
        Projector::in_memory(vec![Box::new(CanonicalQueries::default()), Box::new(Pipelines::default())]);
    for env in rt.log().read_from(Seq(1)) {
        projector.apply(&env?);
    }
    let canonical = projector.get::<CanonicalQueries>("canonical_queries").cloned().unwrap_or_default();
    let pipelines = projector.get::<Pipelines>("pipelines").cloned().unwrap_or_default();
    let cache = rt.embedding_cache(CacheCaps::default())?;
    let sections = (&config.fast_path, &config.multi_tool_fast_path);
    Ok(FastPathService::build(sections, &canonical, &pipelines, embedder, Some(cache))?)
}

/// Turns per second with `sessions` sessions at once, `per` L0 turns each.
fn time_throughput(rt: &Runtime, sessions: usize, per: usize, durability: &str) -> anyhow::Result<Throughput> {
    let t0 = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..sessions)
            .map(|k| {
                scope.spawn(move || -> anyhow::Result<()> {
                    let s = SessionId::new(format!("tp-{sessions}-{k}"));
                    for _ in 0..per {
                        rt.handle_utterance(&s, "what time is it")?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a session thread panicked"))??;
        }
        Ok(())
    })?;
    let secs = t0.elapsed().as_secs_f64();
    Ok(Throughput { sessions, durability: durability.into(), turns_per_s: round2((sessions * per) as f64 / secs) })
}

fn progress(opts: &Options, what: &str) {
    super::progress(opts.json, what);
}
