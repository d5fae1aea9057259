//! Memory benchmark: what assembling a reply's memory context costs per
//! turn (seed 002 #3, #3b, #4) with a long history — by default 1,000
//! sessions over a year — beside the LLM call it precedes.
//!
//! Per request, timed as the reply loop does it:
//!
//! * **profile** — the warm profile rendered from the graph's USER and
//!   DIRECTIVES facts ([`Profile::render`]);
//! * **gate** — the recall gate and the rule enrichment ([`should_recall`],
//!   [`enrich_by_rule`]);
//! * **recall** — [`Recollection::recall`]: the request embedded with the
//!   real model (a fresh request each time: no cache hit), the exact search
//!   over every day's entry, keywords, the WORLD facts;
//! * **digest prompt** — the memory digest's (#4) messages built from what
//!   was recalled (the call itself is the model's);
//! * **total** — all of it.
//!
//! The diary's entries are embedded once before timing (the runtime embeds
//! each lazily, once, at the first recall after it changed). The history is
//! a small grammar of everyday conversations (dinners, trips, films, work),
//! three sessions a day, with 60 USER / DIRECTIVES facts and 300 WORLD
//! facts. The peer figure is the LLM call the context precedes: not run
//! here (no model server is assumed), so it is `--llm-ms` — by default the
//! ~12 s planner turn seed 002 reports — and the report gives the ratio.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{FixedOffset, TimeZone, Utc};
use serde::Serialize;

use crate::patterns::Rng;
use crate::runtime::Latency;
use crate::{machine, progress, round2};
use engram::actors::llm::contexts::memory_digest_messages;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::actors::recollection::Recollection;
use engram::events::payloads::{ExtractorKind, GraphBranch, GraphFactAdded, SummariserKind, SummaryWritten};
use engram::learning::embedder::{Embedder, EmbedderConfig};
use engram::learning::memory::profile::Profile;
use engram::learning::memory::{enrich_by_rule, should_recall};
use engram::local_state::embedding_cache::{CacheCaps, EmbeddingCache};
use engram::{ActorKind, Envelope, LogConfig, SessionId, SledLog};

/// `engram bench memory` options.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Sessions of history (three a day)
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub sessions: usize,

    /// Timed requests (after a warm-up of 10)
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub requests: usize,

    /// The LLM call the context precedes, in ms (not run here): seed 002's
    /// ~12 s planner turn by default
    #[arg(long, value_name = "MS", default_value_t = 12_000.0)]
    pub llm_ms: f64,

    /// The memory index: graded on the fixture, timed at scale
    #[command(flatten)]
    pub index: crate::memory_recall::RecallOptions,
}

/// The report.
#[derive(Serialize, Debug)]
pub struct Report {
    /// The machine.
    pub machine: String,
    /// Sessions of history.
    pub sessions: usize,
    /// Diary entries (days).
    pub diary_days: usize,
    /// Facts in the graph.
    pub facts: usize,
    /// Timed requests.
    pub requests: usize,
    /// The warm profile.
    pub profile: Latency,
    /// The recall gate and the rule enrichment.
    pub gate: Latency,
    /// Recall: embedding, search, keywords, WORLD facts.
    pub recall: Latency,
    /// The memory digest's prompt.
    pub digest_prompt: Latency,
    /// Everything.
    pub total: Latency,
    /// Median days recalled per request.
    pub days_recalled_p50: usize,
    /// The LLM call the context precedes, ms (given, not measured).
    pub llm_ms: f64,
    /// total p50 / the LLM call.
    pub share_of_llm_call: f64,
    /// The memory index of what was said (issue 30).
    pub index: crate::memory_recall::RecallReport,
}

impl Report {
    /// The human form.
    pub fn human(&self) -> String {
        let row = |name: &str, f: &Latency| format!("  {name:<14} p50 {:>9.1} µs   p99 {:>9.1} µs", f.p50_us, f.p99_us);
        [
            format!(
                "memory context per turn: {} sessions ({} diary days, {} facts), {} requests — {}",
                self.sessions, self.diary_days, self.facts, self.requests, self.machine
            ),
            row("profile", &self.profile),
            row("gate", &self.gate),
            row("recall", &self.recall),
            row("digest prompt", &self.digest_prompt),
            row("total", &self.total),
            format!(
                "  {} days recalled (median); the context is {:.4} % of the {:.0} ms LLM call it precedes (--llm-ms)",
                self.days_recalled_p50,
                self.share_of_llm_call * 100.0,
                self.llm_ms
            ),
        ]
        .into_iter()
        .chain(self.index.human())
        .collect::<Vec<_>>()
        .join("\n")
    }
}

const PEOPLE: [&str; 8] = ["Luca", "Giulia", "Marco", "Sara", "Ada", "Tom", "Elena", "Paolo"];
const PLACES: [&str; 8] = ["Da Mario", "the harbour", "Turin", "Lisbon", "the gym", "the office", "Milan", "Oslo"];
const THINGS: [&str; 8] =
    ["a film", "the tax return", "a birthday", "the garden", "a new job", "the car", "a book", "jazz"];

fn sentence(rng: &mut Rng) -> String {
    let (p, q, t) = (PEOPLE[rng.below(8)], PLACES[rng.below(8)], THINGS[rng.below(8)]);
    match rng.below(4) {
        0 => format!("The user had dinner at {q} with {p}."),
        1 => format!("The user asked about {t} and planned a trip to {q}."),
        2 => format!("The user talked with {p} about {t}."),
        _ => format!("The user worked on {t} at {q}."),
    }
}

/// Runs the benchmark.
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    progress(opts.json, "opening the embedding model");
    let embedder: Arc<dyn Embedder> = Arc::new(OnnxEmbedder::open(&EmbedderConfig::default())?);
    let tmp = tempfile::tempdir()?;
    let log = SledLog::open(tmp.path(), LogConfig::default())?;
    let cache = EmbeddingCache::open(log.local_db(), CacheCaps::default())?;
    let offset = FixedOffset::east_opt(3600).expect("an offset");
    let mut recollection = Recollection::new(offset, Some((embedder.clone(), Some(cache))), 100_000);
    let mut profile = Profile::default();
    let mut rng = Rng::new(14);
    let start = Utc.with_ymd_and_hms(2025, 11, 1, 9, 0, 0).single().expect("a time");
    progress(opts.json, "writing the history");
    for i in 0..opts.sessions {
        let summary = (0..3).map(|_| sentence(&mut rng)).collect::<Vec<_>>().join(" ");
        let mut env = Envelope::new(
            ActorKind::Summariser,
            SummaryWritten {
                summary,
                topics: vec![THINGS[rng.below(8)].to_owned()],
                summariser: SummariserKind::Extractive,
                turns_covered: 4,
            },
        )
        .with_session(SessionId::new(format!("s-{i}")));
        env.at = start + chrono::Duration::hours(8 * i as i64);
        recollection.observe(&env);
    }
    let mut facts = 0;
    for i in 0..360 {
        let (branch, node, fact) = match i % 6 {
            0 if i < 60 => {
                (GraphBranch::Directives, "behaviour".to_owned(), format!("Always mention {}", THINGS[i % 8]))
            }
            _ if i < 60 => (GraphBranch::User, format!("about/{i}"), format!("The user knows {}", PEOPLE[i % 8])),
            _ => (
                GraphBranch::World,
                format!("places/{i}"),
                format!("{} is near {}", PLACES[i % 8], PLACES[(i + 3) % 8]),
            ),
        };
        profile.observe(&Envelope::new(
            ActorKind::Graph,
            GraphFactAdded { branch, node, fact, extractor: ExtractorKind::Rule },
        ));
        facts += 1;
    }
    let world = profile.world_facts();
    let diary_days = opts.sessions.div_ceil(3);

    progress(opts.json, "embedding the diary");
    let today = recollection.day_of(start + chrono::Duration::hours(8 * opts.sessions as i64));
    let mut times: [Vec<Duration>; 5] = Default::default();
    let mut recalled = Vec::new();
    progress(opts.json, "timing");
    for n in 0..opts.requests + 10 {
        // A fresh request each time: its embedding is never cached.
        let query =
            format!("what did I say about {} and {} last time ({n})?", THINGS[rng.below(8)], PEOPLE[rng.below(8)]);
        let t0 = Instant::now();
        let warm = profile.render();
        let t1 = Instant::now();
        let open = should_recall(&query, &[], false);
        let enrichment = enrich_by_rule(&query, today);
        let t2 = Instant::now();
        let found = recollection.recall(&query, &enrichment, &world, None);
        let t3 = Instant::now();
        let lines = found.lines().join("\n");
        let digest = memory_digest_messages(&query, &lines);
        let t4 = Instant::now();
        std::hint::black_box((warm, open, digest));
        if n >= 10 {
            for (i, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0].into_iter().enumerate() {
                times[i].push(d);
            }
            recalled.push(found.days.len());
        }
    }
    let total = Latency::of(&times[4]);
    let index = crate::memory_recall::run(&opts.index, &embedder, opts.json)?;
    Ok(Report {
        index,
        machine: machine(),
        sessions: opts.sessions,
        diary_days,
        facts,
        requests: opts.requests,
        profile: Latency::of(&times[0]),
        gate: Latency::of(&times[1]),
        recall: Latency::of(&times[2]),
        digest_prompt: Latency::of(&times[3]),
        total,
        days_recalled_p50: crate::percentile(&recalled, 50.0).unwrap_or(0),
        llm_ms: opts.llm_ms,
        share_of_llm_call: round2(total.p50_us / (opts.llm_ms * 1000.0) * 1e6) / 1e6,
    })
}
