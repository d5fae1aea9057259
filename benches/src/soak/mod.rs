//! `engram bench soak`: memory under long use (issue 31, item 3).
//!
//! Drives many turns of a realistic mixed workload ([`workload`]) through
//! the live runtime, offline (the offline planner plans; no network): the
//! fast path, the planner, memory retrieval, the pattern store, feedback,
//! sessions ended every few turns. Every `--every` turns it reports the
//! process's resident memory (`VmRSS`), the p50/p99 turn latency of that
//! window and the sizes of what the actors hold
//! ([`engram::actors::Runtime::sizes`]): the learnt tables, which may grow
//! with what is new, and everything else, which must not grow with turns.
//! The learnt tables' bytes (the `….bytes` entries, counted from their
//! contents) are summed at each checkpoint and their growth since the first
//! checkpoint set beside RSS's, with the embedding memo's bytes (a bounded
//! cache) beside them: whether RSS grows by more than what is learnt.

pub mod workload;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use engram::actors::config::Config;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::actors::Runtime;
use engram::events::payloads::FeedbackRating;
use engram::events::SessionId;
use engram::learning::embedder::{Embedder, EmbedderConfig};
use serde::Serialize;

use crate::runtime::Latency;
use crate::{machine, round2};
use workload::{Files, Kind, Shape, User};

/// Options of `engram bench soak`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Runs on a fresh data dir in a temp dir, offline, with the real embedding \
model, under the default configuration with ENGRAM_<SECTION>_<KEY> \
variables applied (ENGRAM_STORAGE_CACHE_MB=8: a smaller page cache). \
Figures at every checkpoint: turns so far, resident memory (VmRSS), p50/p99 \
turn latency of the window, the size of every structure the actors hold, \
each actor's lag and glibc's heap in use and held free. The engram binary \
allocates with mimalloc, so glibc's heap is what ONNX Runtime and C \
libraries hold; it caps glibc at 2 malloc arenas (MALLOC_ARENA_MAX=N in \
the environment sets another cap).

Examples:
  engram bench soak --turns 20000 --json
  engram bench soak --turns 20000 --every 2000 --session-turns 20000 --distinct 50
  engram bench soak --turns 50000 --every 5000
  ENGRAM_STORAGE_CACHE_MB=8 engram bench soak --turns 10000 --every 2000")]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Turns in all
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub turns: usize,

    /// A checkpoint every N turns
    #[arg(long, value_name = "N", default_value_t = 5_000)]
    pub every: usize,

    /// Seed of the workload
    #[arg(long, value_name = "N", default_value_t = 31)]
    pub seed: u64,

    /// Turns in every session (default: drawn, 2 to 8); a number over
    /// --turns makes the run one session, as a voice assistant left running
    #[arg(long, value_name = "N")]
    pub session_turns: Option<usize>,

    /// Percent of turns made distinct: a word and a number no earlier turn
    /// had appended to the request
    #[arg(long, value_name = "PCT", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub distinct: u8,
}

/// The figures at one checkpoint.
#[derive(Serialize, Debug, Clone)]
pub struct Checkpoint {
    /// Turns taken so far.
    pub turns: usize,
    /// Sessions ended so far.
    pub sessions: usize,
    /// Resident memory of the process, KiB (`VmRSS`).
    pub rss_kib: u64,
    /// Turn latency over the window since the last checkpoint.
    pub latency: Latency,
    /// Turns per second over the window (feedback and session ends
    /// included in the time).
    pub turns_per_s: f64,
    /// Entries per structure the actors hold ([`Runtime::sizes`]).
    pub sizes: BTreeMap<String, usize>,
    /// The learnt tables' heap bytes: the sum of the `….bytes` entries of
    /// `sizes` but the memo's.
    pub learnt_bytes: usize,
    /// The embedding memo's bytes (`embedding_memo.bytes`; bounded by
    /// `[storage] embedding_cache_rows`).
    pub memo_bytes: usize,
    /// Per actor, events of the log it has not handled yet
    /// ([`Runtime::lags`]): a mailbox backlog would grow here with the
    /// turns. Read right after the checkpoint's turn, before the session
    /// ends (which waits for the actors to settle).
    pub lags: BTreeMap<String, u64>,
    /// glibc's heap at the checkpoint ([`Heap::now`]; `None` off glibc):
    /// whether RSS grows with live allocations or with memory the
    /// allocator holds free. In the `engram` binary, whose Rust allocations
    /// are mimalloc's, this is the share of ONNX Runtime and C libraries.
    pub heap: Option<Heap>,
}

/// glibc's heap figures (`mallinfo2`, every arena), KiB.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct Heap {
    /// Bytes in live allocations: in the arenas (`uordblks`) and mapped on
    /// their own (`hblkhd`).
    pub in_use_kib: u64,
    /// Bytes the arenas hold free (`fordblks`): freed memory not given back
    /// to the kernel, resident where it was touched.
    pub free_kib: u64,
    /// Bytes the arenas hold from the kernel (`arena`), in use or free,
    /// mapped chunks not included.
    pub arenas_kib: u64,
}

impl Checkpoint {
    /// glibc's heap in use and held free, MiB (zeros off glibc): what the
    /// progress line and the report's table print.
    fn heap_mib(&self) -> (f64, f64) {
        self.heap.map_or((0.0, 0.0), |h| (h.in_use_kib as f64 / 1024.0, h.free_kib as f64 / 1024.0))
    }
}

impl Heap {
    /// The figures now (`None` off glibc). `mallinfo2` walks every arena's
    /// free lists under its lock: milliseconds, once a checkpoint.
    pub fn now() -> Option<Heap> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: mallinfo2 takes no arguments and only reads the
            // allocator's state under its own locks.
            let m = unsafe { libc::mallinfo2() };
            Some(Heap {
                in_use_kib: ((m.uordblks + m.hblkhd) / 1024) as u64,
                free_kib: (m.fordblks / 1024) as u64,
                arenas_kib: (m.arena / 1024) as u64,
            })
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            None
        }
    }
}

/// The learnt tables' bytes and the memo's in `sizes`.
pub fn accounted(sizes: &BTreeMap<String, usize>) -> (usize, usize) {
    let memo = sizes.get(MEMO_BYTES).copied().unwrap_or(0);
    let learnt = sizes.iter().filter(|(n, _)| n.ends_with(".bytes") && *n != MEMO_BYTES).map(|(_, b)| b).sum();
    (learnt, memo)
}

/// The memo's entry in [`Runtime::sizes`].
const MEMO_BYTES: &str = "embedding_memo.bytes";

/// The report.
#[derive(Serialize, Debug)]
pub struct Report {
    /// CPU and OS.
    pub machine: String,
    /// Turns taken.
    pub turns: usize,
    /// Sessions' length and the share of distinct requests.
    pub shape: Shape,
    /// Turns of each kind.
    pub mix: BTreeMap<String, usize>,
    /// Turns answered by each layer (`L0`, `L1`, `L2`, `Planner`, `none`).
    pub layers: BTreeMap<String, usize>,
    /// Feedback given (good, bad).
    pub feedback: (usize, usize),
    /// One per `--every` turns.
    pub checkpoints: Vec<Checkpoint>,
    /// RSS growth per turn after warm-up (from the first checkpoint to the
    /// last), bytes.
    pub rss_bytes_per_turn_after_warmup: f64,
    /// The learnt tables' growth per turn over the same turns, bytes.
    pub learnt_bytes_per_turn_after_warmup: f64,
    /// The embedding memo's growth per turn over the same turns, bytes.
    pub memo_bytes_per_turn_after_warmup: f64,
    /// Structures that grew after warm-up, by how many entries per 1,000
    /// turns.
    pub growth_per_1k_turns: BTreeMap<String, f64>,
}

/// Resident memory of this process, KiB (`VmRSS` of `/proc/self/status`;
/// 0 where there is none).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Runs the soak with the default embedding model, under the default
/// configuration with the environment's `ENGRAM_*` overrides (so a run can
/// compare, say, `[storage] cache_mb` without a config file: the data dir
/// is a fresh temp dir).
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    let config = Config::default().with_env(std::env::vars()).context("the ENGRAM_* variables")?;
    let embedder: Arc<dyn Embedder> =
        Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).context("the embedding model")?);
    let bar = indicatif::ProgressBar::new(opts.turns as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("  soak {bar:40} {pos}/{len} turns, {per_sec}, eta {eta} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let shape = Shape { session_turns: opts.session_turns.map(|n| n.max(1)), distinct_pct: opts.distinct };
    let report = drive(
        config,
        embedder,
        Run { turns: opts.turns, every: opts.every, seed: opts.seed, shape },
        |done, checkpoint| {
            bar.set_position(done as u64);
            if let Some(c) = checkpoint {
                bar.set_message(format!("RSS {} MiB", c.rss_kib / 1024));
                // A line per checkpoint on stderr, so a long run that is
                // stopped still leaves its curve.
                bar.suspend(|| {
                    eprintln!(
                    "  soak: {} turns, RSS {:.1} MiB, learnt {:.1} MiB, memo {:.1} MiB, p50 {:.2} ms, p99 {:.2} ms, \
                     {:.0} turns/s, heap in use {:.1} MiB, free {:.1} MiB, lags {:?}",
                    c.turns,
                    c.rss_kib as f64 / 1024.0,
                    c.learnt_bytes as f64 / MIB,
                    c.memo_bytes as f64 / MIB,
                    c.latency.p50_us / 1000.0,
                    c.latency.p99_us / 1000.0,
                    c.turns_per_s,
                    c.heap_mib().0,
                    c.heap_mib().1,
                    c.lags
                )
                });
            }
        },
    )?;
    bar.finish_and_clear();
    Ok(report)
}

/// Counters of a run as it goes.
#[derive(Default)]
struct Tally {
    mix: BTreeMap<String, usize>,
    layers: BTreeMap<String, usize>,
    good: usize,
    bad: usize,
    sessions: usize,
}

/// What a soak runs: how many turns, a checkpoint every how many, the
/// workload's seed and shape.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// Turns in all.
    pub turns: usize,
    /// A checkpoint every this many turns.
    pub every: usize,
    /// The workload's seed.
    pub seed: u64,
    /// Sessions' length and the share of distinct requests.
    pub shape: Shape,
}

/// Drives `run.turns` turns of the workload through a live offline runtime
/// on a temp data dir under `config` (its tool roots and location set to
/// the workload's) with `embedder`, a checkpoint every `run.every` turns;
/// `tick` is called after each turn with the turns done and the checkpoint
/// when one was just taken.
pub fn drive(
    mut config: Config,
    embedder: Arc<dyn Embedder>,
    run: Run,
    mut tick: impl FnMut(usize, Option<&Checkpoint>),
) -> anyhow::Result<Report> {
    let Run { turns, every, seed, shape } = run;
    let tmp = tempfile::tempdir()?;
    let files = Files::create(&tmp.path().join("files"))?;
    config.tools.file_roots = vec![files.root.clone()];
    config.tools.location = "Turin, Italy".to_owned();
    let rt = Runtime::builder()
        .data_dir(tmp.path().join("data"))
        .offline()
        .config(config)
        .embedder(embedder)
        .tool(workload::word_count(files.root.clone()))
        .turn_timeout(Duration::from_secs(60))
        .start()
        .context("starting the runtime")?;
    let mut user = User::new(seed, files, shape);
    let mut tally = Tally::default();
    let mut checkpoints = Vec::new();
    let mut window: Vec<Duration> = Vec::with_capacity(every.max(1));
    let mut window_start = Instant::now();
    let mut done = 0;
    while done < turns {
        let session = SessionId::new(format!("soak-{}", tally.sessions));
        let len = user.session_len();
        for _ in 0..len.min(turns - done) {
            one_turn(&rt, &session, &mut user, &mut tally, &mut window)?;
            done += 1;
            let checkpoint = (done % every.max(1) == 0 || done == turns).then(|| {
                let c = checkpoint(&rt, done, tally.sessions, &window, window_start.elapsed());
                window.clear();
                window_start = Instant::now();
                c
            });
            tick(done, checkpoint.as_ref());
            checkpoints.extend(checkpoint);
        }
        rt.end_session(&session)?;
        tally.sessions += 1;
    }
    rt.shutdown()?;
    Ok(report(turns, shape, tally, checkpoints))
}

/// One request of `user` in `session`, timed into `window`, and maybe
/// feedback on it.
fn one_turn(
    rt: &Runtime,
    session: &SessionId,
    user: &mut User,
    tally: &mut Tally,
    window: &mut Vec<Duration>,
) -> anyhow::Result<()> {
    let (kind, text) = user.next_turn();
    *tally.mix.entry(kind_name(kind)).or_default() += 1;
    let t = Instant::now();
    let reply = rt.handle_utterance(session, &text).with_context(|| format!("the turn {text:?}"))?;
    window.push(t.elapsed());
    let layer = reply.layer.map_or("none".to_owned(), |l| format!("{l:?}"));
    *tally.layers.entry(layer).or_default() += 1;
    if reply.layer.is_some() {
        if let Some(good) = user.feedback() {
            let rating = if good { FeedbackRating::Positive } else { FeedbackRating::Negative };
            rt.feedback(session, rating, None)?;
            if good {
                tally.good += 1;
            } else {
                tally.bad += 1;
            }
        }
    }
    Ok(())
}

fn kind_name(kind: Kind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

fn checkpoint(rt: &Runtime, turns: usize, sessions: usize, window: &[Duration], took: Duration) -> Checkpoint {
    // The lags as the turn left them (an actor falling behind shows here),
    // then the sizes once the actors have settled: what one is still
    // handling — its own derivations on their way back from the log
    // (`*.folded`) — is not what it holds.
    let lags = rt.lags().into_iter().map(|(name, lag)| (name.to_owned(), lag)).collect();
    rt.settle(Duration::from_secs(5));
    let sizes: BTreeMap<String, usize> = rt.sizes().into_iter().collect();
    let (learnt_bytes, memo_bytes) = accounted(&sizes);
    Checkpoint {
        turns,
        sessions,
        rss_kib: rss_kib(),
        latency: Latency::of(window),
        turns_per_s: round2(window.len() as f64 / took.as_secs_f64().max(1e-9)),
        sizes,
        learnt_bytes,
        memo_bytes,
        lags,
        heap: Heap::now(),
    }
}

/// The report of a run: growth measured from the first checkpoint (the
/// warm-up) to the last.
fn report(turns: usize, shape: Shape, tally: Tally, checkpoints: Vec<Checkpoint>) -> Report {
    let mut growth = BTreeMap::new();
    let (mut rss_per_turn, mut learnt_per_turn, mut memo_per_turn) = (0.0, 0.0, 0.0);
    if let (Some(first), Some(last)) = (checkpoints.first(), checkpoints.last()) {
        let span = last.turns.saturating_sub(first.turns).max(1) as f64;
        rss_per_turn = round2((last.rss_kib as f64 - first.rss_kib as f64) * 1024.0 / span);
        learnt_per_turn = round2((last.learnt_bytes as f64 - first.learnt_bytes as f64) / span);
        memo_per_turn = round2((last.memo_bytes as f64 - first.memo_bytes as f64) / span);
        for (name, &n) in &last.sizes {
            let before = first.sizes.get(name).copied().unwrap_or(0);
            if n > before {
                growth.insert(name.clone(), round2((n - before) as f64 * 1000.0 / span));
            }
        }
    }
    Report {
        machine: machine(),
        turns,
        shape,
        mix: tally.mix,
        layers: tally.layers,
        feedback: (tally.good, tally.bad),
        checkpoints,
        rss_bytes_per_turn_after_warmup: rss_per_turn,
        learnt_bytes_per_turn_after_warmup: learnt_per_turn,
        memo_bytes_per_turn_after_warmup: memo_per_turn,
        growth_per_1k_turns: growth,
    }
}

impl Report {
    /// The human form.
    pub fn human(&self) -> String {
        let sessions = self
            .shape
            .session_turns
            .map_or("sessions of 2 to 8 turns".to_owned(), |n| format!("sessions of {n} turns"));
        let mut out = format!(
            "engram bench soak — {}\n{} turns, {sessions}, {} % distinct, mix {:?}\n",
            self.machine, self.turns, self.shape.distinct_pct, self.mix
        );
        out.push_str(&format!(
            "answered by {:?}; feedback {} good, {} bad\n\n",
            self.layers, self.feedback.0, self.feedback.1
        ));
        out.push_str(
            "   turns  sessions   RSS MiB  RSS +MiB  learnt MiB  learnt +MiB  memo MiB  heap MiB  free MiB  max lag   p50 ms   \
             p99 ms   turns/s\n",
        );
        let first = self.checkpoints.first();
        for c in &self.checkpoints {
            let rss_since = first.map_or(0.0, |f| (c.rss_kib as f64 - f.rss_kib as f64) / 1024.0);
            let learnt_since = first.map_or(0.0, |f| (c.learnt_bytes as f64 - f.learnt_bytes as f64) / MIB);
            out.push_str(&format!(
                "{:>8}  {:>8}  {:>8.1}  {:>+8.1}  {:>10.1}  {:>+11.1}  {:>8.1}  {:>8.1}  {:>8.1}  {:>7}  {:>7.2}  {:>7.2}  \
                 {:>8.0}\n",
                c.turns,
                c.sessions,
                c.rss_kib as f64 / 1024.0,
                rss_since,
                c.learnt_bytes as f64 / MIB,
                learnt_since,
                c.memo_bytes as f64 / MIB,
                c.heap_mib().0,
                c.heap_mib().1,
                c.lags.values().max().copied().unwrap_or(0),
                c.latency.p50_us / 1000.0,
                c.latency.p99_us / 1000.0,
                c.turns_per_s
            ));
        }
        out.push_str(&format!(
            "\nafter warm-up (first checkpoint to last), bytes per turn: RSS {:+.0}, learnt tables {:+.0}, \
             embedding memo {:+.0} (bounded: [storage] embedding_cache_rows)\n",
            self.rss_bytes_per_turn_after_warmup,
            self.learnt_bytes_per_turn_after_warmup,
            self.memo_bytes_per_turn_after_warmup
        ));
        if let Some(last) = self.checkpoints.last() {
            out.push_str("\nstructure                                   entries   growth per 1k turns after warm-up\n");
            for (name, n) in &last.sizes {
                let g = self.growth_per_1k_turns.get(name).map_or(String::new(), |g| format!("{g:+.1}"));
                out.push_str(&format!("{name:<42} {n:>8}   {g}\n"));
            }
        }
        out
    }
}
