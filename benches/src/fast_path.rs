//! Fast-path benchmark: what one request costs on each layer of the router's
//! fast path (seed 000), end to end through [`FastPath::route`] with the real
//! embedding model (all-MiniLM-L6-v2 int8 on ONNX Runtime, the request
//! embedded each time: no embedding cache on the query side, as
//! `FastPathService` with `cache = None`).
//!
//! * **l0** — a literal phrase (the built-in EN/IT table, some with the
//!   capitals and punctuation people type) through `route`: normalisation
//!   and one hash lookup, no embedding;
//! * **embed** — [`Embedder::embed`] on one short request alone (the masked
//!   canonical text `route` would embed);
//! * **l1 / l2** — for each table size N (N L1 rows *and* N L2 pipelines),
//!   requests that should hit L1 / L2, each with a fresh path or URL (masked,
//!   so the canonical text is the row's own): value extraction and
//!   normalisation, the request embedded, the L1 index searched (then the L2
//!   index for L2), the replay gate, the placeholders resolved. `hit_rate`
//!   is the share that hit the intended layer, `wrong` the hits that matched
//!   another row than the intended one (the gate lets one read-only verb
//!   replay another, so when the approximate search misses the request's
//!   own row, a sibling — "summarize …" for "describe …" — can answer);
//! * **miss** — hard negatives that must go to the planner: a row's request
//!   with an effectful verb instead of its read-only one ("delete the annual
//!   tax notes in ~/x" for the row "read the annual tax notes in PATH"),
//!   so the nearest rows pass the cosine threshold and the gate refuses them:
//!   embedding + both searches + the gate. `gated` is the share of misses
//!   where the gate ran and refused at least one candidate.
//!
//! Each figure also splits the request's median into the embedding, the
//! index searches (timed inside the index) and the rest (extraction,
//! normalisation, gate, placeholders).
//!
//! ## How the tables are made
//!
//! The tables are *learned*, the way the runtime learns them: synthetic
//! planner turns (each seen `min_uses` = 3 times) go through the
//! [`FastPathReactor`](engram::learning::reactors::FastPathReactor), whose `canonical.recorded` / `pipeline.recorded`
//! events fold into [`CanonicalQueries`] and [`Pipelines`]; [`FastPath::build`]
//! then builds the layers with the default configuration (thresholds 0.85)
//! and the runtime's vector index (exact scan below 3,000 rows, HNSW above).
//!
//! Rows are distinct combinations of a small grammar — L1: "`<verb>` the
//! `<adjective>` `<topic>` `<noun>` in PATH" (6 × 30 × 30 × 12 = 64,800 texts,
//! one read-only tool per verb); L2: "`<get>` URL and `<describe>` the
//! `<adjective>` `<topic>` `<noun>`" (4 × 3 × 30 × 30 × 12, two steps) —
//! drawn in a seeded random order. The first [`Options::distinct`] rows of
//! each layer (2,000 by default) are embedded with the real model, once per
//! run. Embedding 50,000 rows per layer would take minutes, so the rows
//! beyond are given *derived* vectors: the vector of a real row (row `i`
//! takes real row `i mod distinct`) plus isotropic Gaussian noise,
//! renormalised, at a cosine drawn uniformly in [0.70, 0.95] from it — a
//! dense neighbourhood around every real row, as a large table of
//! near-paraphrases has. Queries target the real rows. `--distinct N` with
//! N ≥ the largest size embeds every row for real.
//!
//! The index is built on all cores (the runtime builds it on one, to spare
//! the router's thread); that changes the build time, not the graph's
//! parameters or the search.

use crate::{machine, round2};
use std::cell::Cell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::{DateTime, FixedOffset};
use engram::learning::embedder::EmbeddingModel;

use crate::labelled;
use crate::patterns::Rng;
use crate::percentile_us;
use engram::actors::config::Config;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::events::payloads::{PlanStep, RouteLayer, ToolArgs};
use engram::learning::embedder::{EmbedError, Embedder, EmbedderConfig};
use engram::learning::fast_path::decision::VectorSearch;
use engram::learning::fast_path::{canonical, gate, l0, Decision, FastPath};
use engram::learning::projections::{CanonicalQueries, Pipelines};
use engram::vector::{VectorConfig, VectorIndex};

/// Untimed requests routed before each figure is measured.
pub const WARM_UP: usize = 10;

/// L1 rows learnt one at a time per table size, timed.
pub const LEARNT_ROWS: usize = 30;
/// Cosine of a derived row vector to its real row: uniform in this range.
pub const DERIVED_COSINE: (f64, f64) = (0.70, 0.95);

/// Options of `engram bench fast-path`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Every request goes through FastPath::route with the real embedding model \
(scripts/fetch-models.sh installs it; ENGRAM_MODELS_DIR overrides where it is \
looked for), the request embedded each time (no cache on the query side).

Tables: synthetic planner turns, learned by the fast-path reactor as the \
runtime learns them; at size N the fast path holds N L1 rows and N L2 \
pipelines, all with distinct canonical texts. The first --distinct rows of \
each layer are embedded with the real model; the rows beyond get derived \
vectors (a real row's vector plus Gaussian noise, renormalised, at a cosine \
of 0.70-0.95 from it), because embedding 50,000 rows a layer takes minutes. \
Queries target the really embedded rows, with fresh masked values (paths, \
URLs). --distinct 50000 embeds every row of a 50,000-row table for real.

Examples:
  engram bench fast-path --json
  engram bench fast-path --sizes 1000 --queries 500")]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Table sizes: L1 rows and L2 pipelines each, one run per size (comma-separated)
    #[arg(long, value_name = "N,…", value_delimiter = ',', default_value = "1000,50000")]
    pub sizes: Vec<usize>,

    /// Timed requests per figure (after a warm-up of 10)
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub queries: usize,

    /// Rows per layer embedded with the real model; rows beyond get derived vectors
    #[arg(long, value_name = "N", default_value_t = 2_000)]
    pub distinct: usize,

    /// Inference threads of the request embedder (0: the embedder's default, 1)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,

    /// Seed of the synthetic tables and requests
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,

    /// One embedding model (use-multilingual-v3, minilm-l6-v2); default: each, in turn, in this run
    #[arg(long, value_name = "NAME")]
    pub model: Option<EmbeddingModel>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            json: false,
            sizes: vec![1_000, 50_000],
            queries: 200,
            distinct: 2_000,
            threads: 0,
            seed: 42,
            model: None,
        }
    }
}

// ---------------------------------------------------------------------------
// The synthetic grammar

/// L1 verbs: (verb, executor, argument holding the path). All read-only, so
/// that an effectful verb makes a hard negative of any row.
pub const L1_VERBS: [(&str, &str, &str); 6] = [
    ("read", "read_file", "path"),
    ("summarize", "summarize_file", "path"),
    ("show", "show_file", "path"),
    ("find", "find_files", "root"),
    ("describe", "describe_file", "path"),
    ("list", "list_files", "root"),
];
/// Adjectives (no stop word, action or polarity word, nothing the extractor
/// takes for a value).
pub const ADJECTIVES: [&str; 30] = [
    "quarterly",
    "annual",
    "weekly",
    "monthly",
    "draft",
    "final",
    "old",
    "shared",
    "private",
    "archived",
    "scanned",
    "handwritten",
    "signed",
    "unsigned",
    "urgent",
    "personal",
    "legal",
    "medical",
    "financial",
    "technical",
    "internal",
    "external",
    "printed",
    "revised",
    "pending",
    "yearly",
    "team",
    "family",
    "confidential",
    "spanish",
];
/// Topics.
pub const TOPICS: [&str; 30] = [
    "budget",
    "travel",
    "tax",
    "insurance",
    "mortgage",
    "garden",
    "kitchen",
    "holiday",
    "wedding",
    "school",
    "project",
    "research",
    "marketing",
    "sales",
    "hiring",
    "health",
    "fitness",
    "recipe",
    "car",
    "bike",
    "rent",
    "energy",
    "garage",
    "bank",
    "pension",
    "music",
    "photo",
    "book",
    "conference",
    "client",
];
/// L1 nouns.
pub const L1_NOUNS: [&str; 12] = [
    "notes",
    "reports",
    "invoices",
    "receipts",
    "letters",
    "contracts",
    "spreadsheets",
    "slides",
    "minutes",
    "plans",
    "checklists",
    "forms",
];
/// L2 first verbs (the first step: `get_urls`).
pub const L2_GETS: [&str; 4] = ["download", "fetch", "read", "get"];
/// L2 second verbs and their tools.
pub const L2_VERBS: [(&str, &str); 3] =
    [("describe", "describe_entries"), ("summarize", "summarize_entries"), ("explain", "explain_entries")];
/// L2 nouns.
pub const L2_NOUNS: [&str; 12] = [
    "article",
    "post",
    "story",
    "review",
    "guide",
    "tutorial",
    "announcement",
    "newsletter",
    "paper",
    "thread",
    "interview",
    "essay",
];
/// Effectful verbs that turn an L1 row's request into a hard negative.
pub const MISS_VERBS: [&str; 5] = ["delete", "send", "move", "copy", "rename"];

/// Distinct L1 rows the grammar makes.
pub const L1_SPACE: usize = L1_VERBS.len() * ADJECTIVES.len() * TOPICS.len() * L1_NOUNS.len();
/// Distinct L2 pipelines the grammar makes.
pub const L2_SPACE: usize = L2_GETS.len() * L2_VERBS.len() * ADJECTIVES.len() * TOPICS.len() * L2_NOUNS.len();

/// Splits `code` into digits of the given radices (least significant first).
fn digits<const N: usize>(mut code: usize, radices: [usize; N]) -> [usize; N] {
    let mut out = [0; N];
    for (o, r) in out.iter_mut().zip(radices) {
        *o = code % r;
        code /= r;
    }
    out
}

fn step(tool: &str, args: serde_json::Value) -> PlanStep {
    PlanStep { tool: tool.to_owned(), args: ToolArgs::from_json(&args.to_string()).expect("an object") }
}

/// The object phrase of an L1 row ("the annual tax notes").
fn l1_object(code: usize) -> (usize, String) {
    let [v, a, t, n] = digits(code, [L1_VERBS.len(), ADJECTIVES.len(), TOPICS.len(), L1_NOUNS.len()]);
    (v, format!("the {} {} {}", ADJECTIVES[a], TOPICS[t], L1_NOUNS[n]))
}

/// L1 row `code` (< [`L1_SPACE`]) asked about `path`: the request and its
/// one step.
pub fn l1_request(code: usize, path: &str) -> (String, PlanStep) {
    let (v, object) = l1_object(code);
    let (verb, tool, arg) = L1_VERBS[v];
    (format!("{verb} {object} in {path}"), step(tool, serde_json::json!({ arg: path })))
}

/// The hard negative of L1 row `code`: its request with an effectful verb.
pub fn miss_request(code: usize, path: &str, which: usize) -> String {
    let (_, object) = l1_object(code);
    format!("{} {object} in {path}", MISS_VERBS[which % MISS_VERBS.len()])
}

/// L2 pipeline `code` (< [`L2_SPACE`]) asked about `url`: the request and
/// its two steps.
pub fn l2_request(code: usize, url: &str) -> (String, Vec<PlanStep>) {
    let [g, v, a, t, n] = digits(code, [L2_GETS.len(), L2_VERBS.len(), ADJECTIVES.len(), TOPICS.len(), L2_NOUNS.len()]);
    let (verb, tool) = L2_VERBS[v];
    let text = format!("{} {url} and {verb} the {} {} {}", L2_GETS[g], ADJECTIVES[a], TOPICS[t], L2_NOUNS[n]);
    (
        text,
        vec![step("get_urls", serde_json::json!({ "url": url })), step(tool, serde_json::json!({ "entries": "$0" }))],
    )
}

/// A seeded random order of `0..space`.
fn permutation(space: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..space).collect();
    for i in (1..space).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

/// The instant every request is said at (the user's local time).
pub fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").expect("a valid instant")
}

/// Tables learned from planner turns `(text, steps)`, each seen `times`,
/// through the [`FastPathReactor`](engram::learning::reactors::FastPathReactor)
/// as the runtime learns them.
pub fn learn(turns: &[(String, Vec<PlanStep>)], times: u32) -> (CanonicalQueries, Pipelines) {
    engram::learning::reactors::fast_path::learn(turns, times, Config::default().multi_tool_fast_path, *now().offset())
}

// ---------------------------------------------------------------------------
// The index, timed

/// Time spent in index searches (all layers), for the per-request split.
#[derive(Debug, Default)]
pub struct SearchClock {
    nanos: AtomicU64,
    build_nanos: AtomicU64,
}

impl SearchClock {
    /// Nanoseconds spent searching so far.
    pub fn nanos(&self) -> u64 {
        self.nanos.load(Ordering::Relaxed)
    }
}

/// A layer's rows in the runtime's [`VectorIndex`] (as `FastPathService`
/// indexes them: default configuration, the row key as key), each search
/// and each insert timed.
struct TimedRows {
    index: Option<VectorIndex<u64>>,
    clock: Arc<SearchClock>,
}

impl VectorSearch for TimedRows {
    fn search(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        let t = Instant::now();
        let Some(index) = &self.index else { return Vec::new() };
        let hits: Vec<(u64, f32)> =
            index.search(query, k).unwrap_or_default().into_iter().map(|h| (h.key, h.cosine)).collect();
        self.clock.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        hits
    }

    fn insert(&mut self, rows: Vec<(u64, Vec<f32>)>) {
        let t = Instant::now();
        let dim = rows.first().map_or(1, |(_, v)| v.len()).max(1);
        // All cores (the runtime takes one): only the build is faster.
        let index =
            self.index.get_or_insert_with(|| VectorIndex::new(VectorConfig::new(dim)).expect("a positive dimension"));
        index.extend(rows.iter().map(|(k, v)| (*k, v.as_slice()))).expect("valid row vectors");
        self.clock.build_nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn remove(&mut self, key: u64) {
        if let Some(index) = &mut self.index {
            index.remove(&key);
        }
    }
}

fn timed_index(clock: &Arc<SearchClock>) -> Box<dyn VectorSearch> {
    Box::new(TimedRows { index: None, clock: Arc::clone(clock) })
}

/// `base` plus isotropic Gaussian noise, renormalised, at a cosine drawn
/// uniformly in [`DERIVED_COSINE`] from it (in expectation).
pub fn derive_vector(base: &[f32], rng: &mut Rng) -> Vec<f32> {
    let (lo, hi) = DERIVED_COSINE;
    let c = lo + (hi - lo) * rng.unit();
    // |noise|² ≈ σ²·dim, so cos ≈ 1 / sqrt(1 + σ²·dim).
    let sigma = ((1.0 / (c * c) - 1.0) / base.len() as f64).sqrt();
    let mut v: Vec<f32> = base.iter().map(|&x| x + (sigma * rng.gaussian()) as f32).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// An "embedder" that returns vectors computed beforehand: `route` with the
/// request's vector already known (as on an embedding-cache hit), to time
/// the fast path's own work.
pub struct Given {
    vectors: HashMap<String, Vec<f32>>,
    dim: usize,
}

impl Given {
    /// The vectors `embedder` gives `texts`.
    pub fn embed_all(embedder: &dyn Embedder, texts: impl IntoIterator<Item = String>) -> anyhow::Result<Given> {
        let mut vectors = HashMap::new();
        for t in texts {
            if let Entry::Vacant(e) = vectors.entry(t) {
                let v = embedder.embed(e.key())?;
                e.insert(v);
            }
        }
        Ok(Given { vectors, dim: embedder.dim() })
    }
}

impl Embedder for Given {
    fn model_id(&self) -> &str {
        "given"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.vectors.get(text).cloned().ok_or_else(|| EmbedError::Inference(format!("no vector given for {text:?}")))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

// ---------------------------------------------------------------------------
// The harness

/// The embedders and the real row vectors, shared by every table size.
pub struct Harness {
    /// The request embedder (the configured inference threads).
    pub embedder: Arc<OnnxEmbedder>,
    /// Embeds table rows in batches (all cores).
    table_embedder: OnnxEmbedder,
    /// Real vectors of row canonical texts, memoised across sizes.
    memo: HashMap<String, Vec<f32>>,
    l1_order: Vec<usize>,
    l2_order: Vec<usize>,
    distinct: usize,
    seed: u64,
    /// Time spent embedding row texts with the real model.
    pub row_embedding: Duration,
}

/// One table size, built and ready to route.
pub struct Corpus {
    /// The fast path.
    pub fast_path: FastPath,
    /// L1 rows.
    pub l1_rows: usize,
    /// L2 pipelines.
    pub l2_rows: usize,
    /// Rows per layer with real vectors (the rest are derived).
    pub embedded: (usize, usize),
    l1_codes: Vec<usize>,
    l2_codes: Vec<usize>,
    clock: Arc<SearchClock>,
    /// Learning the tables from turns.
    pub learn: Duration,
    /// [`FastPath::build`]: row vectors gathered, indexes built.
    pub build: Duration,
    /// The part of `build` spent building the two indexes.
    pub index: Duration,
    /// The projections the tables were built from (what a learnt row is
    /// added to).
    canonical: CanonicalQueries,
    pipelines: Pipelines,
    /// L1 rows not in the tables, for learning one more at a time.
    unlearnt: Vec<usize>,
}

/// A request and what it should do.
#[derive(Clone, Debug)]
pub struct Request {
    /// The text.
    pub text: String,
    /// The canonical text of the row it should match (`None`: none).
    pub expect: Option<String>,
}

impl Harness {
    /// Opens the model (twice: the request embedder with `threads` inference
    /// threads, 0 for the default, and a batch embedder for the tables on
    /// all cores).
    pub fn open(model: EmbeddingModel, threads: usize, distinct: usize, seed: u64) -> anyhow::Result<Harness> {
        let mut config = EmbedderConfig { threads, ..EmbedderConfig::default() }.with_model(model);
        let embedder = Arc::new(OnnxEmbedder::open(&config).context("opening the embedding model")?);
        config.threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let table_embedder = OnnxEmbedder::open(&config).context("opening the embedding model")?;
        let mut rng = Rng::new(seed);
        let l1_order = permutation(L1_SPACE, &mut rng.fork(1));
        let l2_order = permutation(L2_SPACE, &mut rng.fork(2));
        Ok(Harness {
            embedder,
            table_embedder,
            memo: HashMap::new(),
            l1_order,
            l2_order,
            distinct: distinct.max(1),
            seed,
            row_embedding: Duration::ZERO,
        })
    }

    /// Real vectors for `texts` (memoised).
    fn real_vectors(&mut self, texts: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut missing: Vec<&str> = texts.iter().map(String::as_str).filter(|t| !self.memo.contains_key(*t)).collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let t = Instant::now();
            let vectors = self.table_embedder.embed_batch(&missing).context("embedding the table rows")?;
            self.row_embedding += t.elapsed();
            for (text, v) in missing.into_iter().zip(vectors) {
                self.memo.insert(text.to_owned(), v);
            }
        }
        Ok(texts.iter().map(|t| self.memo[t].clone()).collect())
    }

    /// Row vectors for a layer whose rows have these canonical texts: the
    /// first `distinct` real, the rest derived from them.
    fn layer_vectors(&mut self, canon: &[String], stream: u64) -> anyhow::Result<HashMap<String, Vec<f32>>> {
        let real_n = self.distinct.min(canon.len());
        let real = self.real_vectors(&canon[..real_n])?;
        let mut rng = Rng::new(self.seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut out: HashMap<String, Vec<f32>> = HashMap::with_capacity(canon.len());
        for (i, text) in canon.iter().enumerate() {
            let v = if i < real_n { real[i].clone() } else { derive_vector(&real[i % real_n], &mut rng) };
            out.insert(text.clone(), v);
        }
        Ok(out)
    }

    /// The fast path with `l1_rows` L1 rows and `l2_rows` L2 pipelines.
    pub fn corpus(&mut self, l1_rows: usize, l2_rows: usize) -> anyhow::Result<Corpus> {
        if l1_rows > L1_SPACE || l2_rows > L2_SPACE {
            bail!("the synthetic grammar makes at most {L1_SPACE} L1 rows and {L2_SPACE} L2 pipelines");
        }
        let l1_codes = self.l1_order[..l1_rows].to_vec();
        let l2_codes = self.l2_order[..l2_rows].to_vec();
        let mut turns: Vec<(String, Vec<PlanStep>)> = Vec::with_capacity(l1_rows + l2_rows);
        for (i, &c) in l1_codes.iter().enumerate() {
            let (text, s) = l1_request(c, &format!("~/docs/{i}/notes.md"));
            turns.push((text, vec![s]));
        }
        for (i, &c) in l2_codes.iter().enumerate() {
            turns.push(l2_request(c, &format!("https://example.org/{i}")));
        }
        let min_uses = Config::default().fast_path.canonical_query_min_uses;
        let t = Instant::now();
        let (canonical_queries, pipelines) = learn(&turns, min_uses);
        let learn = t.elapsed();
        // Row order here = the order of the real/derived split.
        let canon = |t: &(String, Vec<PlanStep>)| canonical(&t.0, now()).0;
        let l1_canon: Vec<String> = turns[..l1_rows].iter().map(canon).collect();
        let l2_canon: Vec<String> = turns[l1_rows..].iter().map(canon).collect();
        let mut vectors = self.layer_vectors(&l1_canon, 1)?;
        vectors.extend(self.layer_vectors(&l2_canon, 2)?);

        let clock = Arc::new(SearchClock::default());
        let config = Config::default();
        let t = Instant::now();
        let mut embed = |texts: &[&str]| -> anyhow::Result<Vec<Vec<f32>>> {
            texts.iter().map(|t| vectors.remove(*t).with_context(|| format!("no vector for the row {t:?}"))).collect()
        };
        let fast_path = FastPath::build(
            &config.fast_path,
            &config.multi_tool_fast_path,
            &canonical_queries,
            &pipelines,
            &mut embed,
            &|| timed_index(&clock),
        )?;
        let build = t.elapsed();
        let index = Duration::from_nanos(clock.build_nanos.load(Ordering::Relaxed));
        if fast_path.sizes() != (l1_rows, l2_rows) {
            bail!("the fast path holds {:?} rows, {:?} were learned", fast_path.sizes(), (l1_rows, l2_rows));
        }
        Ok(Corpus {
            fast_path,
            l1_rows,
            l2_rows,
            embedded: (self.distinct.min(l1_rows), self.distinct.min(l2_rows)),
            l1_codes,
            l2_codes,
            clock,
            learn,
            build,
            index,
            canonical: canonical_queries,
            pipelines,
            unlearnt: self.l1_order[l1_rows..].iter().copied().take(LEARNT_ROWS + WARM_UP).collect(),
        })
    }

    /// Embeds one text with the request embedder.
    pub fn embed(&self, text: &str) -> anyhow::Result<Vec<f32>> {
        Ok(self.embedder.embed(text)?)
    }
}

/// The L0 phrases as typed: every built-in phrase, and again capitalised
/// with a question mark.
pub fn l0_requests() -> Vec<String> {
    let mut out = Vec::new();
    for (_, phrases) in l0::BUILTIN {
        for p in *phrases {
            out.push((*p).to_owned());
            let mut c = p.chars();
            let first = c.next().map(|f| f.to_uppercase().collect::<String>()).unwrap_or_default();
            out.push(format!("{first}{}?", c.as_str()));
        }
    }
    out
}

/// What one routed request cost.
#[derive(Clone, Debug)]
pub struct Routed {
    /// The decision.
    pub decision: Decision,
    /// `route`, end to end.
    pub total: Duration,
    /// Embedding inside it.
    pub embed: Duration,
    /// Index searches inside it.
    pub search: Duration,
    /// Requests embedded.
    pub embeddings: usize,
}

impl Corpus {
    /// Learns new L1 rows one at a time, as the router does after a planner
    /// turn: the row's `canonical.recorded` events folded into the
    /// projection, then [`FastPath::update_texts`] — the new text embedded with
    /// `embedder` and inserted into the index, the other rows untouched.
    /// Returns each update's time without its embedding (the first
    /// [`WARM_UP`] untimed); each learnt row must answer its request on L1.
    pub fn learn_rows(&mut self, embedder: &dyn Embedder) -> anyhow::Result<Vec<Duration>> {
        use engram::events::payloads::CanonicalRecorded;
        use engram::events::{ActorKind, Envelope};
        use engram::learning::fast_path::placeholder;
        use engram::local_state::projector::Projection;
        let min_uses = Config::default().fast_path.canonical_query_min_uses;
        let mut samples = Vec::with_capacity(LEARNT_ROWS);
        for (j, code) in std::mem::take(&mut self.unlearnt).into_iter().enumerate() {
            let (text, step) = l1_request(code, &format!("~/new/{j}/notes.md"));
            let (canon, ex) = canonical(&text, now());
            let recorded = CanonicalRecorded {
                canonical: canon.clone(),
                executor: step.tool.clone(),
                args_observed: placeholder::templatize(&step.args, &ex),
            };
            for _ in 0..min_uses {
                self.canonical.apply(&Envelope::new(ActorKind::Router, recorded.clone()));
            }
            let embedding = Cell::new(Duration::ZERO);
            let mut embed = |texts: &[&str]| -> Result<Vec<Vec<f32>>, EmbedError> {
                let t = Instant::now();
                let v = embedder.embed_batch(texts);
                embedding.set(embedding.get() + t.elapsed());
                v
            };
            let t = Instant::now();
            let changes = self.fast_path.update_texts(
                &self.canonical,
                &self.pipelines,
                std::slice::from_ref(&canon),
                &mut embed,
            )?;
            let took = t.elapsed().saturating_sub(embedding.get());
            if changes.added != 1 || changes.removed != 0 {
                bail!("learning {canon:?} changed {changes:?}, not one added row");
            }
            let (again, _) = l1_request(code, &format!("~/again/{j}/notes.md"));
            let d = self.route(embedder, &again)?.decision;
            if d.layer != RouteLayer::L1 || d.matched.as_deref() != Some(canon.as_str()) {
                bail!("the row {canon:?} was learnt, yet {again:?} went {:?} ({})", d.layer, d.reason);
            }
            if j >= WARM_UP {
                samples.push(took);
            }
        }
        Ok(samples)
    }

    /// `n` requests for L1 rows with real vectors, each with a fresh path.
    pub fn l1_requests(&self, n: usize, seed: u64) -> Vec<Request> {
        let real = self.embedded.0.min(self.l1_codes.len());
        let mut rng = Rng::new(seed ^ 0x11);
        (0..n)
            .map(|j| {
                let (text, _) = l1_request(self.l1_codes[rng.below(real)], &format!("~/inbox/{j}/item-{j}.pdf"));
                let expect = canonical(&text, now()).0;
                Request { text, expect: Some(expect) }
            })
            .collect()
    }

    /// `n` requests for L2 pipelines with real vectors, each with a fresh URL.
    pub fn l2_requests(&self, n: usize, seed: u64) -> Vec<Request> {
        let real = self.embedded.1.min(self.l2_codes.len());
        let mut rng = Rng::new(seed ^ 0x22);
        (0..n)
            .map(|j| {
                let (text, _) = l2_request(self.l2_codes[rng.below(real)], &format!("https://news.example.com/{j}/a"));
                let expect = canonical(&text, now()).0;
                Request { text, expect: Some(expect) }
            })
            .collect()
    }

    /// `n` hard negatives of L1 rows with real vectors.
    pub fn miss_requests(&self, n: usize, seed: u64) -> Vec<Request> {
        let real = self.embedded.0.min(self.l1_codes.len());
        let mut rng = Rng::new(seed ^ 0x33);
        (0..n)
            .map(|j| {
                let code = self.l1_codes[rng.below(real)];
                Request { text: miss_request(code, &format!("~/inbox/{j}/item-{j}.pdf"), j), expect: None }
            })
            .collect()
    }

    /// Routes `text` with `embedder`, timing the embedding and the searches.
    pub fn route(&self, embedder: &dyn Embedder, text: &str) -> anyhow::Result<Routed> {
        let (embed_ns, count) = (Cell::new(0u64), Cell::new(0usize));
        let mut embed = |t: &str| {
            let s = Instant::now();
            let v = embedder.embed(t);
            embed_ns.set(embed_ns.get() + s.elapsed().as_nanos() as u64);
            count.set(count.get() + 1);
            v
        };
        let searched = self.clock.nanos();
        let t = Instant::now();
        let decision = self.fast_path.route(text, now(), &mut embed)?;
        let total = t.elapsed();
        Ok(Routed {
            decision,
            total,
            embed: Duration::from_nanos(embed_ns.get()),
            search: Duration::from_nanos(self.clock.nanos() - searched),
            embeddings: count.get(),
        })
    }
}

// ---------------------------------------------------------------------------
// The report

/// Median and 99th percentile.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Latency {
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile (nearest rank), µs.
    pub p99_us: f64,
}

/// Requests that should hit one layer, at one table size.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Hits {
    /// Rows in the layer's table (L1 rows or L2 pipelines).
    pub rows: usize,
    /// `route` end to end, median, µs.
    pub p50_us: f64,
    /// The same, 99th percentile, µs.
    pub p99_us: f64,
    /// Share of the requests answered by the intended layer.
    pub hit_rate: f64,
    /// Hits that matched another row than the intended one.
    pub wrong: usize,
    /// Embedding the request, median, µs.
    pub embed_p50_us: f64,
    /// Index searches (L1, and L2 for L2 hits), median, µs.
    pub search_p50_us: f64,
    /// The rest of `route` (extraction, normalisation, gate, placeholders),
    /// median, µs.
    pub rest_p50_us: f64,
    /// Value extraction and normalisation alone (`canonical`), median, µs.
    pub canonical_p50_us: f64,
    /// The replay gate alone on the matched pair, median, µs.
    pub gate_p50_us: f64,
    /// `route` with the request's vector given (as on an embedding-cache
    /// hit): the fast path's own work, median, µs.
    pub given_p50_us: f64,
}

/// Requests that should go to the planner, at one table size.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Misses {
    /// L1 rows (and L2 pipelines).
    pub rows: usize,
    /// `route` end to end, median, µs.
    pub p50_us: f64,
    /// The same, 99th percentile, µs.
    pub p99_us: f64,
    /// Share of the requests sent to the planner (anything else is a wrong
    /// replay).
    pub planner_rate: f64,
    /// Share where the gate ran and refused at least one candidate.
    pub gated: f64,
    /// Embedding the request, median, µs.
    pub embed_p50_us: f64,
    /// Both index searches, median, µs.
    pub search_p50_us: f64,
    /// The rest of `route`, median, µs.
    pub rest_p50_us: f64,
    /// `route` with the request's vector given, median, µs.
    pub given_p50_us: f64,
}

/// How one table size was made.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Table {
    /// L1 rows.
    pub l1_rows: usize,
    /// L2 pipelines.
    pub l2_rows: usize,
    /// L1 rows embedded with the real model (the rest derived).
    pub l1_embedded: usize,
    /// L2 pipelines embedded with the real model.
    pub l2_embedded: usize,
    /// Seconds to learn the tables from turns (3 × rows turns a layer).
    pub learn_s: f64,
    /// Seconds in `FastPath::build` (row vectors gathered, indexes built).
    pub build_s: f64,
    /// The part of `build_s` spent building the indexes (all cores).
    pub index_s: f64,
    /// Learning one more L1 row ([`FastPath::update_texts`]: its rows
    /// looked up, one index insert), without embedding its text, median, µs.
    pub learn_row_p50_us: f64,
    /// `build_s` over `learn_row_p50_us`: what a rebuild per learnt row
    /// (the router before `update`) cost, as a multiple.
    pub rebuild_ratio: f64,
}

/// The report of `engram bench fast-path`.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    /// L0 phrases through `route`.
    pub l0: Latency,
    /// One short request embedded alone.
    pub embed: Latency,
    /// L1 hits per table size.
    pub l1: Vec<Hits>,
    /// L2 hits per table size.
    pub l2: Vec<Hits>,
    /// Planner-bound hard negatives per table size.
    pub miss: Vec<Misses>,
    /// How each table was made.
    pub tables: Vec<Table>,
    /// Timed requests per figure.
    pub queries: usize,
    /// The model.
    pub model: String,
    /// Inference threads of the request embedder.
    pub embedder_threads: usize,
    /// Seconds spent embedding table rows with the real model.
    pub row_embedding_s: f64,
    /// The labelled pairs, per language: wrong replays and paraphrase recall.
    pub pairs: Vec<labelled::PairScore>,
    /// The offline planner's tool choice on natural requests, per language.
    pub planner: Vec<labelled::ChoiceScore>,
    /// A month of EN + IT requests through the live offline runtime.
    pub month: labelled::MonthScore,
    /// Cores, CPU, OS.
    pub machine: String,
}

/// `engram bench fast-path`: one [`Report`] per embedding model, measured
/// in the same run so that their figures compare.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Reports {
    /// Per model, the default first.
    pub models: Vec<Report>,
}

impl Reports {
    /// Each model's table, then the models side by side.
    pub fn human(&self) -> String {
        let mut out: String = self.models.iter().map(|r| r.human() + "\n").collect();
        if self.models.len() > 1 {
            out.push_str(&format!(
                "{:<44} {:>10} {:>10} {:>14} {:>13}\n",
                "model", "encode p50", "L1 p50", "wrong replays", "planner right"
            ));
            for r in &self.models {
                let wrong: usize = r.pairs.iter().map(|p| p.wrong_replays).sum();
                let (right, asked) = r.planner.iter().fold((0, 0), |(a, b), c| (a + c.right, b + c.requests));
                out.push_str(&format!(
                    "{:<44} {:>7.0} µs {:>7.0} µs {:>14} {:>9}/{}\n",
                    r.model,
                    r.embed.p50_us,
                    r.l1.first().map_or(f64::NAN, |h| h.p50_us),
                    wrong,
                    right,
                    asked
                ));
            }
        }
        out
    }
}

impl Report {
    /// The report as a table.
    pub fn human(&self) -> String {
        let mut out = format!(
            "fast path: FastPath::route end to end, {} ({} inference thread(s)), {} timed requests per figure; \
             the request is embedded each time\n\n",
            self.model, self.embedder_threads, self.queries
        );
        out.push_str(&format!(
            "L0 (literal phrase, no embedding)  p50 {:>8.2} µs  p99 {:>8.2} µs\n",
            self.l0.p50_us, self.l0.p99_us
        ));
        out.push_str(&format!(
            "embedding one request alone        p50 {:>8.1} µs  p99 {:>8.1} µs\n\n",
            self.embed.p50_us, self.embed.p99_us
        ));
        out.push_str(&format!(
            "{:<6} {:>7} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>8} {:>8} {:>9}\n",
            "layer",
            "rows",
            "p50 µs",
            "p99 µs",
            "hit rate",
            "embed µs",
            "search µs",
            "rest µs",
            "canon µs",
            "gate µs",
            "given µs"
        ));
        for (name, hits) in [("L1", &self.l1), ("L2", &self.l2)] {
            for h in hits {
                out.push_str(&format!(
                    "{:<6} {:>7} {:>10.1} {:>10.1} {:>9.3} {:>10.1} {:>10.1} {:>9.1} {:>8.1} {:>8.1} {:>9.1}{}\n",
                    name,
                    h.rows,
                    h.p50_us,
                    h.p99_us,
                    h.hit_rate,
                    h.embed_p50_us,
                    h.search_p50_us,
                    h.rest_p50_us,
                    h.canonical_p50_us,
                    h.gate_p50_us,
                    h.given_p50_us,
                    if h.wrong > 0 { format!("  ({} WRONG)", h.wrong) } else { String::new() }
                ));
            }
        }
        out.push_str(&format!(
            "\n{:<6} {:>7} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>8} {:>9}\n",
            "miss", "rows", "p50 µs", "p99 µs", "planner", "embed µs", "search µs", "rest µs", "gated", "given µs"
        ));
        for m in &self.miss {
            out.push_str(&format!(
                "{:<6} {:>7} {:>10.1} {:>10.1} {:>9.3} {:>10.1} {:>10.1} {:>9.1} {:>8.3} {:>9.1}\n",
                "",
                m.rows,
                m.p50_us,
                m.p99_us,
                m.planner_rate,
                m.embed_p50_us,
                m.search_p50_us,
                m.rest_p50_us,
                m.gated,
                m.given_p50_us
            ));
        }
        out.push_str("\ntables (N L1 rows and N L2 pipelines; rows beyond the embedded ones have derived vectors):\n");
        for t in &self.tables {
            out.push_str(&format!(
                "  {:>6} rows: {} + {} embedded, learned in {:.1} s, built in {:.1} s (indexes {:.1} s); \
                 one more row learnt in {:.0} µs (median, embedding aside) — {:.0}× less than a rebuild\n",
                t.l1_rows,
                t.l1_embedded,
                t.l2_embedded,
                t.learn_s,
                t.build_s,
                t.index_s,
                t.learn_row_p50_us,
                t.rebuild_ratio
            ));
        }
        out.push_str(&format!("  row embedding: {:.1} s in all\n", self.row_embedding_s));
        out.push_str(
            "\nlabelled pairs (tests/fixtures/fast_path; x: across languages) and the offline planner's choice:\n",
        );
        for p in &self.pairs {
            out.push_str(&format!(
                "  {:<5} hard negatives {:>3}, wrong replays {}{}; paraphrases {:>3}, served by L1 {:>3} (recall {:.2})\n",
                p.lang,
                p.hard_negatives,
                p.wrong_replays,
                if p.wrong_replays > 0 { " (WRONG)" } else { "" },
                p.paraphrases,
                p.served,
                p.served as f64 / p.paraphrases.max(1) as f64
            ));
        }
        for c in &self.planner {
            out.push_str(&format!(
                "  {:<5} offline planner: {:>3} of {:>3} requests planned with the right tool ({:.0} %)\n",
                c.lang,
                c.right,
                c.requests,
                100.0 * c.right as f64 / c.requests.max(1) as f64
            ));
        }
        let m = &self.month;
        out.push_str(&format!(
            "  a month ({} days, {} requests, EN + IT, live runtime offline): fast path {} ({} with other tools than \
             the request's{}), offline planner {} ({} right)\n",
            m.days,
            m.turns,
            m.fast_path,
            m.wrong_fast_path,
            if m.wrong_fast_path > 0 { ": WRONG" } else { "" },
            m.planner,
            m.planner_right
        ));
        out.push_str(&self.machine);
        out.push('\n');
        out
    }
}

fn secs(d: Duration) -> f64 {
    round2(d.as_secs_f64())
}

fn p50(samples: &[Duration]) -> f64 {
    percentile_us(samples, 50.0)
}

fn latency(samples: &[Duration]) -> Latency {
    Latency { p50_us: percentile_us(samples, 50.0), p99_us: percentile_us(samples, 99.0) }
}

fn progress(opts: &Options, what: &str) {
    super::progress(opts.json, what);
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

fn rest(r: &Routed) -> Duration {
    r.total.saturating_sub(r.embed + r.search)
}

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

    #[test]
    fn the_grammar_makes_distinct_rows_that_resolve_and_hard_negatives_the_gate_refuses() {
        let mut seen = std::collections::HashSet::new();
        for code in (0..L1_SPACE).step_by(97) {
            let (text, s) = l1_request(code, "~/a/b.md");
            let (c, ex) = canonical(&text, now());
            assert!(c.ends_with(" in path"), "{c}");
            assert_eq!(ex.slots.len(), 1, "{text}");
            assert!(seen.insert(c.clone()), "{c} twice");
            assert!(s.args.to_json().contains("~/a/b.md"));
            let (q, _) = canonical(&l1_request(code, "~/x/y.pdf").0, now());
            assert_eq!(q, c);
            assert_eq!(gate::check(&q, &c), Ok(()));
            let (m, _) = canonical(&miss_request(code, "~/x/y.pdf", code), now());
            assert!(gate::check(&m, &c).is_err(), "{m} / {c}");
        }
        for code in (0..L2_SPACE).step_by(211) {
            let (text, steps) = l2_request(code, "https://example.org/1");
            let (c, ex) = canonical(&text, now());
            assert_eq!(ex.slots.len(), 1, "{text}");
            assert!(c.contains(" url and "), "{c}");
            assert!(seen.insert(c), "twice");
            assert_eq!(steps.len(), 2);
        }
    }

    #[test]
    fn derived_vectors_are_unit_and_at_the_asked_cosine() {
        let mut rng = Rng::new(7);
        let mut base: Vec<f32> = (0..384).map(|_| rng.gaussian() as f32).collect();
        let norm = base.iter().map(|x| x * x).sum::<f32>().sqrt();
        base.iter_mut().for_each(|x| *x /= norm);
        for _ in 0..50 {
            let v = derive_vector(&base, &mut rng);
            let n: f32 = v.iter().map(|x| x * x).sum();
            let cos: f32 = v.iter().zip(&base).map(|(a, b)| a * b).sum();
            assert!((n - 1.0).abs() < 1e-4);
            assert!(cos > 0.55 && cos < 0.99, "{cos}");
        }
    }

    #[test]
    fn learned_tables_hold_one_row_per_turn_text() {
        let turns: Vec<(String, Vec<PlanStep>)> = (0..20)
            .map(|c| {
                let (t, s) = l1_request(c * 101, &format!("~/d/{c}.md"));
                (t, vec![s])
            })
            .chain((0..5).map(|c| l2_request(c * 37, &format!("https://e.org/{c}"))))
            .collect();
        let (c, p) = learn(&turns, 3);
        assert_eq!((c.candidates(3).count(), p.candidates(3).count()), (20, 5));
        let row = c.iter().next().unwrap();
        assert!(row.args_observed.to_json().contains("{path}"), "{:?}", row.args_observed);
    }

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
