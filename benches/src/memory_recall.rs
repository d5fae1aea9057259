//! What the memory index finds (issue 30): graded on long conversations
//! written apart from the code, and timed at a year's scale beside an
//! exact scan.
//!
//! **Grading** (`tests/fixtures/memory`, its README says how it was
//! written and split): each conversation's sessions go, turn by turn and
//! at their own times, through the memory indexer's own split and embed
//! ([`MemoryIndexer::passages`]) into a fresh [`Recollection`] — the fold
//! the reply loop asks — and each question is asked at its `asked_at` with
//! the rule enrichment. A question **reaches** the context when the block
//! the reply loop would put in the model's prompt holds every one of its
//! `must_contain` strings (case-insensitive). Reported per split, language
//! and kind, with the context's size; `changed` questions also count how
//! often only the superseded statement reached it. Tune on `dev`; `heldout`
//! is reported, never tuned on.
//!
//! **Scale**: the dev conversations again, each inside an index padded
//! with distractor passages to 1k / 10k / 100k — words drawn from every
//! conversation's vocabulary, vectors near a real passage of another
//! conversation (a real passage's embedding plus noise, normalised) and
//! times over the fixture's months — searched through the graph and
//! through an exact scan (the peer), for recall@budget, retrieval latency
//! (search + pack; the request's embedding is timed apart) and the
//! process's memory per passage.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Serialize};

use crate::patterns::Rng;
use crate::runtime::Latency;
use crate::{progress, round2};
use engram::actors::recollection::Recollection;
use engram::actors::roles::memory_indexer::{MemoryIndexer, TurnSaid};
use engram::events::payloads::{MemoryForgotten, Passage, PassagesIndexed, Speaker};
use engram::learning::embedder::Embedder;
use engram::learning::memory::passages::{dequantize, quantize, reply_questions, CHARS_PER_TOKEN};
use engram::learning::memory::recalled::DEFAULT_BUDGET_TOKENS;
use engram::learning::memory::{enrich_by_rule, MemoryQuery, PassageIndex};
use engram::{ActorKind, Envelope, SessionId};

/// Options of the memory index's part of `engram bench memory`.
#[derive(clap::Args, Debug, Clone)]
pub struct RecallOptions {
    /// The graded conversations (conversations.jsonl, questions.jsonl)
    #[arg(long, value_name = "DIR", default_value = "tests/fixtures/memory")]
    pub fixture: PathBuf,

    /// Recalled memory's budget, in tokens (as `[memory] context_budget_tokens`)
    #[arg(long, value_name = "TOKENS", default_value_t = DEFAULT_BUDGET_TOKENS)]
    pub budget_tokens: usize,

    /// Index sizes to time, in passages (comma-separated; 0: none)
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', default_value = "1000,10000,100000")]
    pub scales: Vec<usize>,

    /// The memory index's least cosine (default: the model's
    /// `Calibration::memory_passage`), to calibrate it on the dev split
    #[arg(long, value_name = "COSINE")]
    pub passage_bar: Option<f32>,

    /// Print each question that does not reach the context (dev split
    /// only: the held-out split is never inspected)
    #[arg(long)]
    pub misses: bool,
}

#[derive(Deserialize)]
struct Conversation {
    id: String,
    split: String,
    sessions: Vec<Session>,
}

#[derive(Deserialize)]
struct Session {
    session: String,
    at: DateTime<FixedOffset>,
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    user: String,
    assistant: String,
}

#[derive(Deserialize, Clone)]
struct Question {
    id: String,
    conversation: String,
    lang: String,
    kind: String,
    asked_at: DateTime<FixedOffset>,
    question: String,
    must_contain: Vec<String>,
    #[serde(default)]
    superseded: Vec<Evidence>,
}

#[derive(Deserialize, Clone)]
struct Evidence {
    session: String,
    turn: usize,
}

/// Questions reached, of asked.
#[derive(Serialize, Debug, Default, Clone, Copy)]
pub struct Share {
    /// Questions whose answer reached the context.
    pub reached: usize,
    /// Questions asked.
    pub asked: usize,
}

impl Share {
    fn add(&mut self, hit: bool) {
        self.asked += 1;
        self.reached += usize::from(hit);
    }

    /// `reached / asked`, in per cent.
    pub fn percent(&self) -> f64 {
        round2(100.0 * self.reached as f64 / self.asked.max(1) as f64)
    }
}

/// One split's grade.
#[derive(Serialize, Debug, Default)]
pub struct SplitGrade {
    /// All its questions.
    pub all: Share,
    /// By the question's language.
    pub by_lang: BTreeMap<String, Share>,
    /// By kind of question.
    pub by_kind: BTreeMap<String, Share>,
    /// `changed` questions where only a superseded statement reached it.
    pub changed_only_stale: usize,
    /// The recalled block's size, median, in characters.
    pub context_chars_p50: usize,
    /// The recalled block's size, largest, in characters.
    pub context_chars_max: usize,
}

/// One index size.
#[derive(Serialize, Debug)]
pub struct Scale {
    /// Passages held.
    pub passages: usize,
    /// Dev questions reaching the context through the graph.
    pub recall_graph: Share,
    /// Through the exact scan.
    pub recall_exact: Share,
    /// Search + pack through the graph.
    pub graph: Latency,
    /// Search + pack through the exact scan.
    pub exact: Latency,
    /// `exact.p50 / graph.p50`.
    pub speedup_p50: f64,
    /// Resident memory the padded index added, per passage (bytes).
    pub rss_bytes_per_passage: f64,
}

/// The memory index's report.
#[derive(Serialize, Debug)]
pub struct RecallReport {
    /// The budget, tokens.
    pub budget_tokens: usize,
    /// Passages indexed from the fixture.
    pub fixture_passages: usize,
    /// Per split (`dev`, `heldout`).
    pub splits: BTreeMap<String, SplitGrade>,
    /// Embedding one request (the model), p50/p99.
    pub query_embedding: Latency,
    /// Per index size.
    pub scales: Vec<Scale>,
}

impl RecallReport {
    /// The human-readable lines.
    pub fn human(&self) -> Vec<String> {
        let mut out = vec![format!(
            "memory index: {} passages from the fixture; budget {} tokens",
            self.fixture_passages, self.budget_tokens
        )];
        for (split, g) in &self.splits {
            let kinds: Vec<String> = g.by_kind.iter().map(|(k, s)| format!("{k} {}/{}", s.reached, s.asked)).collect();
            let langs: Vec<String> = g.by_lang.iter().map(|(k, s)| format!("{k} {}/{}", s.reached, s.asked)).collect();
            out.push(format!(
                "  {split:<8} reached {}/{} ({:.1} %) — {} — {}; context median {} chars (max {}); changed: stale only {}",
                g.all.reached,
                g.all.asked,
                g.all.percent(),
                langs.join(", "),
                kinds.join(", "),
                g.context_chars_p50,
                g.context_chars_max,
                g.changed_only_stale
            ));
        }
        out.push(format!(
            "  request embedding p50 {:.1} ms, p99 {:.1} ms",
            self.query_embedding.p50_us / 1000.0,
            self.query_embedding.p99_us / 1000.0
        ));
        for s in &self.scales {
            out.push(format!(
                "  {:>7} passages: graph p50 {:>8.1} µs p99 {:>8.1} µs, recall {}/{} | exact p50 {:>8.1} µs p99 {:>8.1} µs, recall {}/{} | {:.1}× | {:.0} B/passage",
                s.passages,
                s.graph.p50_us,
                s.graph.p99_us,
                s.recall_graph.reached,
                s.recall_graph.asked,
                s.exact.p50_us,
                s.exact.p99_us,
                s.recall_exact.reached,
                s.recall_exact.asked,
                s.speedup_p50,
                s.rss_bytes_per_passage
            ));
        }
        out
    }
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{}: line {}", path.display(), i + 1)))
        .collect()
}

/// A conversation's turns as the memory indexer would have appended them.
fn events(indexer: &MemoryIndexer, c: &Conversation) -> Vec<Envelope> {
    let mut out = Vec::new();
    for s in &c.sessions {
        for (i, t) in s.turns.iter().enumerate() {
            // As the indexer does: the question the reply before ended on.
            let asked = i.checked_sub(1).and_then(|k| reply_questions(&s.turns[k].assistant));
            let said = TurnSaid { request: &t.user, reply: Some(&t.assistant), asked: asked.as_deref() };
            let passages = indexer.passages(said);
            let mut env = Envelope::new(ActorKind::Memory, PassagesIndexed { passages })
                .with_session(SessionId::new(s.session.clone()));
            env.at = s.at.to_utc() + chrono::Duration::minutes(2 * i as i64);
            out.push(env);
        }
    }
    out
}

/// Whether `block` holds every string of `must`.
fn holds(block: &str, must: &[String]) -> bool {
    let lower = block.to_lowercase();
    must.iter().all(|m| lower.contains(&m.to_lowercase()))
}

/// Runs the grading and the scale figures.
pub fn run(opts: &RecallOptions, embedder: &Arc<dyn Embedder>, json: bool) -> anyhow::Result<RecallReport> {
    let conversations: Vec<Conversation> = read_jsonl(&opts.fixture.join("conversations.jsonl"))?;
    let questions: Vec<Question> = read_jsonl(&opts.fixture.join("questions.jsonl"))?;
    let indexer = MemoryIndexer::new(Some(embedder.clone()));
    progress(json, "embedding the fixture's turns");
    let per_conversation: BTreeMap<String, Vec<Envelope>> =
        conversations.iter().map(|c| (c.id.clone(), events(&indexer, c))).collect();
    let count = |envs: &[Envelope]| -> usize {
        envs.iter()
            .map(|e| match &e.event {
                engram::Event::PassagesIndexed(p) => p.passages.len(),
                _ => 0,
            })
            .sum()
    };
    let fixture_passages = per_conversation.values().map(|e| count(e)).sum();
    let split_of: BTreeMap<&str, &str> = conversations.iter().map(|c| (c.id.as_str(), c.split.as_str())).collect();
    let texts_of = |conversation: &str, ev: &[Evidence]| -> Vec<String> {
        let c = conversations.iter().find(|c| c.id == conversation);
        ev.iter()
            .filter_map(|e| {
                let s = c?.sessions.iter().find(|s| s.session == e.session)?;
                Some(s.turns.get(e.turn)?.user.clone())
            })
            .collect()
    };

    progress(json, "asking the questions");
    let mut splits: BTreeMap<String, SplitGrade> = BTreeMap::new();
    let mut sizes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut embed_times = Vec::new();
    for q in &questions {
        let split = split_of.get(q.conversation.as_str()).copied().unwrap_or("dev").to_owned();
        let offset = *q.asked_at.offset();
        let mut r = Recollection::new(offset, Some((embedder.clone(), None)), opts.budget_tokens);
        if let Some(bar) = opts.passage_bar {
            r = r.passage_bar(bar);
        }
        for e in per_conversation.get(&q.conversation).into_iter().flatten() {
            r.observe(e);
        }
        let today = q.asked_at.date_naive();
        let enrichment = enrich_by_rule(&q.question, today);
        let t = Instant::now();
        let _ = embedder.embed(&q.question);
        embed_times.push(t.elapsed());
        let block = r.recall(&q.question, &enrichment, &[], None).render().unwrap_or_default();
        let hit = holds(&block, &q.must_contain);
        let g = splits.entry(split.clone()).or_default();
        g.all.add(hit);
        g.by_lang.entry(q.lang.clone()).or_default().add(hit);
        g.by_kind.entry(q.kind.clone()).or_default().add(hit);
        if q.kind == "changed" && !hit {
            let stale = texts_of(&q.conversation, &q.superseded);
            let lower = block.to_lowercase();
            if stale.iter().any(|s| {
                let s: String = s.chars().take(60).collect();
                lower.contains(&s.to_lowercase())
            }) {
                g.changed_only_stale += 1;
            }
        }
        sizes.entry(split.clone()).or_default().push(block.chars().count());
        if opts.misses && !hit && split == "dev" {
            eprintln!("miss {} [{}] {} — wants {:?}\n{block}\n", q.id, q.kind, q.question, q.must_contain);
        }
    }
    for (split, s) in &mut sizes {
        s.sort_unstable();
        if let Some(g) = splits.get_mut(split) {
            g.context_chars_p50 = crate::percentile(s, 50.0).unwrap_or(0);
            g.context_chars_max = s.last().copied().unwrap_or(0);
        }
    }

    let mut scales = Vec::new();
    for &n in opts.scales.iter().filter(|n| **n > 0) {
        progress(json, &format!("timing an index of {n} passages"));
        scales.push(scale(n, opts, embedder, &conversations, &questions, &per_conversation)?);
    }
    Ok(RecallReport {
        budget_tokens: opts.budget_tokens,
        fixture_passages,
        splits,
        query_embedding: Latency::of(&embed_times),
        scales,
    })
}

/// Resident memory of this process, bytes.
fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<usize>().ok()))
        .map_or(0, |pages| pages * 4096)
}

/// Distractor passages for an index of `n`: words of the fixture, vectors
/// near real ones, times over the fixture's months.
fn distractors(n: usize, all: &[&Passage], provider: &str, rng: &mut Rng) -> Vec<Envelope> {
    let vocabulary: Vec<&str> = all.iter().flat_map(|p| p.text.split_whitespace()).collect();
    let start = DateTime::parse_from_rfc3339("2026-09-01T08:00:00Z").expect("a time").to_utc();
    let mut out = Vec::new();
    let mut made = 0;
    while made < n {
        let batch = (n - made).min(512);
        let passages = (0..batch)
            .map(|_| {
                let words = 8 + rng.below(30);
                let text: Vec<&str> = (0..words).map(|_| vocabulary[rng.below(vocabulary.len())]).collect();
                let base = all[rng.below(all.len())];
                let vector = base.vector.as_ref().map(|v| {
                    let mut f = dequantize(v);
                    for x in &mut f {
                        *x += (rng.below(2001) as f32 / 1000.0 - 1.0) * 0.08;
                    }
                    engram::vector::normalize(&mut f);
                    quantize(provider, &f)
                });
                Passage { text: text.join(" "), speaker: Speaker::User, vector }
            })
            .collect();
        let mut env = Envelope::new(ActorKind::Memory, PassagesIndexed { passages })
            .with_session(SessionId::new(format!("padding-{made}")));
        env.at = start + chrono::Duration::minutes(rng.below(90 * 24 * 60) as i64);
        out.push(env);
        made += batch;
    }
    out
}

/// Asks `index` question `q` (its vector `v`) five times, timing search
/// and pack, and grades what was packed.
fn ask(
    index: &mut PassageIndex,
    q: &Question,
    v: &[f32],
    budget: usize,
    (times, share): (&mut Vec<std::time::Duration>, &mut Share),
) {
    let enrichment = enrich_by_rule(&q.question, q.asked_at.date_naive());
    let text = format!("{} {}", q.question, enrichment.keywords.join(" "));
    let query =
        MemoryQuery { text: &text, vector: Some(v), from: enrichment.from, to: enrichment.to, in_progress: None };
    let mut packed = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let found = index.search(&query);
        packed = index.pack(&found, budget, Some(v));
        times.push(t.elapsed());
    }
    let block: Vec<String> = packed.iter().map(|p| p.line()).collect();
    share.add(holds(&block.join("\n"), &q.must_contain));
}

fn scale(
    n: usize,
    opts: &RecallOptions,
    embedder: &Arc<dyn Embedder>,
    conversations: &[Conversation],
    questions: &[Question],
    per_conversation: &BTreeMap<String, Vec<Envelope>>,
) -> anyhow::Result<Scale> {
    let provider = embedder.model_id().to_owned();
    let all: Vec<&Passage> = per_conversation
        .values()
        .flatten()
        .flat_map(|e| match &e.event {
            engram::Event::PassagesIndexed(p) => p.passages.iter().collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect();
    let mut rng = Rng::new(n as u64);
    let padding = distractors(n, &all, &provider, &mut rng);
    let offset = FixedOffset::east_opt(0).expect("an offset");
    let before = rss_bytes();
    let bar = opts
        .passage_bar
        .unwrap_or(engram::learning::embedder::EmbeddingModel::calibration_for_id(&provider).memory_passage);
    let mut graph = PassageIndex::new(offset, Some(provider.clone())).min_cosine(bar);
    for e in &padding {
        graph.observe(e);
    }
    // Built now (the graph's one-off build is not a search).
    graph.search(&MemoryQuery {
        text: "warm",
        vector: all[0].vector.as_ref().map(dequantize).as_deref(),
        ..Default::default()
    });
    let rss = rss_bytes().saturating_sub(before);
    let mut exact = PassageIndex::new(offset, Some(provider.clone())).exact().min_cosine(bar);
    for e in &padding {
        exact.observe(e);
    }
    drop(padding);
    let budget = opts.budget_tokens * CHARS_PER_TOKEN;
    let (mut graph_times, mut exact_times) = (Vec::new(), Vec::new());
    let (mut recall_graph, mut recall_exact) = (Share::default(), Share::default());
    for c in conversations.iter().filter(|c| c.split == "dev") {
        let own = per_conversation.get(&c.id).map(Vec::as_slice).unwrap_or_default();
        for e in own {
            graph.observe(e);
            exact.observe(e);
        }
        // The passages just added join the vector index at the first
        // search after them (once, not per request): not timed.
        for index in [&mut graph, &mut exact] {
            index.search(&MemoryQuery { text: "warm", ..Default::default() });
            index.semantic(
                &MemoryQuery {
                    text: "",
                    vector: all[0].vector.as_ref().map(dequantize).as_deref(),
                    ..Default::default()
                },
                1,
            );
        }
        for q in questions.iter().filter(|q| q.conversation == c.id) {
            let v = embedder.embed(&q.question)?;
            ask(&mut graph, q, &v, budget, (&mut graph_times, &mut recall_graph));
            ask(&mut exact, q, &v, budget, (&mut exact_times, &mut recall_exact));
        }
        // Out again before the next conversation.
        let sessions: Vec<SessionId> = c.sessions.iter().map(|s| SessionId::new(s.session.clone())).collect();
        let forget = Envelope::new(
            ActorKind::Cli,
            MemoryForgotten { request: c.id.clone(), facts: Vec::new(), sessions, phrases: Vec::new() },
        );
        graph.observe(&forget);
        exact.observe(&forget);
    }
    let (g, x) = (Latency::of(&graph_times), Latency::of(&exact_times));
    Ok(Scale {
        passages: graph.len(),
        recall_graph,
        recall_exact,
        speedup_p50: round2(x.p50_us / g.p50_us.max(f64::MIN_POSITIVE)),
        graph: g,
        exact: x,
        rss_bytes_per_passage: round2(rss as f64 / n.max(1) as f64),
    })
}
