//! Pattern-store benchmark: the K-NN recommendation path beside the
//! reference exact scan, and the `pattern_outcomes` rebuild.
//!
//! * **recommend** — for each size N of [`Options::sizes`] and each kind
//!   (structural, 384-d hybrid), a [`KnnIndex`] over N outcome rows (about
//!   N/3 fingerprints, 2–4 models each) of a deterministic synthetic corpus
//!   ([`Generator`]); per query (fresh fingerprints drawn like the corpus)
//!   the latency of the whole recommendation — [`KnnIndex::search`] with
//!   K = 10 and alpha 0.6, the outcome rows looked up, [`score_cluster`] —
//!   as p50/p99, beside the p50 of [`exact_k_nearest`] (the reference scan:
//!   string sets and `f64` cosine) over the same entries, and recall@10 of
//!   the index against that scan over `(fingerprint, model)` pairs;
//! * **rebuild** — a realistic event stream of at least
//!   [`Options::rebuild_events`] envelopes (import-shaped turns:
//!   `route.decided`, tools, `turn.completed`, `eval.completed`,
//!   `session.ended`, late re-evaluations, and the `pattern.recorded`
//!   events the [`PatternReactor`] derives from them) appended to a fresh
//!   [`SledLog`], then folded into a fresh [`PatternOutcomes`] by
//!   [`Projector::catch_up`] the way `engram rebuild` does (every record
//!   read and CRC-checked, the kinds the projection folds decoded, nothing
//!   persisted); events/s counts every record of the log, as `engram
//!   rebuild` does. The same envelopes folded from memory, already decoded
//!   ([`Projection::apply`] only), are reported beside it (`fold_*`).
//!
//! The recommendation corpus is built directly (index plus an
//! [`OutcomeRow`] per `(fingerprint, model)`) rather than through
//! `pattern.recorded` events, so the figure is the K-NN and scoring alone
//! ([`PatternOutcomes::recommend`] adds the `min_hybrid_similarity` filter
//! over the same cluster, a pass over ≤ K rows). The building blocks ([`Generator`],
//! [`Corpus`], [`event_stream`], …) are public so that the criterion bench
//! (`benches/patterns.rs`) measures with the same code.

use crate::{machine, percentile_us, round2, thousands};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use engram::events::payloads::{EvalCompleted, JudgeKind, PlanStep, SideEffectClass, StructuralFeatures, ToolArgs};
use engram::events::rust_decimal::Decimal;
use engram::events::{ActorKind, Envelope, EvalId, EventId, FingerprintId, Seq, SessionId, TurnId};
use engram::learning::import::turn_events::{session_ended, turn_end, turn_events};
use engram::learning::import::turn_record::TurnRecord;
use engram::learning::patterns::knn::{exact_k_nearest, unit};
use engram::learning::patterns::recommend::score_cluster;
use engram::learning::patterns::{
    Embedding, Fingerprint, KnnIndex, Neighbor, OutcomeRow, PatternCaps, PatternConfig, Recommendation,
};
use engram::learning::projections::PatternOutcomes;
use engram::learning::reactors::{derive_all, PatternReactor, Reactor};
use engram::local_state::projector::{digest, Projection, Projector};
use engram::storage::{EventLog, SledLog};

/// Cluster size (outcome rows), as in [`PatternConfig::default`].
pub const K: usize = 10;
/// Weight of the cosine term, as in [`PatternConfig::default`].
pub const ALPHA: f64 = engram::learning::patterns::similarity::DEFAULT_ALPHA;
/// Embedding dimension of the hybrid corpus (MiniLM-sized).
pub const DIM: usize = 384;
/// Embedding provider of the hybrid corpus.
pub const PROVIDER: &str = "bench:384";
/// Topics: each has preferred features, models and an embedding centroid.
pub const TOPICS: usize = 50;
/// Exact-scan queries at the largest hybrid sizes (the scan takes tens of
/// milliseconds a query there).
pub const EXACT_QUERIES_LARGE: usize = 30;
/// Outcome rows from which the hybrid exact scan is limited to
/// [`EXACT_QUERIES_LARGE`] queries.
pub const EXACT_LIMIT_FROM: usize = 100_000;
/// Distinct shapes in the rebuild stream: with up to three models a shape,
/// the store stays under the default soft cap (5,000 rows), as a store
/// that respects its caps does, so no eviction scan runs while the stream
/// is derived.
pub const REBUILD_SHAPES: usize = 1_200;
/// Timed passes over the queries of a corpus (see [`measure`]).
pub const PASSES: usize = 3;
/// Runs per rebuild figure; the report gives the median.
pub const REBUILD_RUNS: usize = 3;

/// Options of `engram bench patterns`.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Outcome rows in the index, one run per size (comma-separated)
    #[arg(long, value_name = "N,…", value_delimiter = ',', default_value = "1000,10000,100000")]
    pub sizes: Vec<usize>,

    /// Queries per size and kind
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub queries: usize,

    /// Envelopes in the rebuild stream (at least; whole sessions)
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub rebuild_events: usize,

    /// Seed of the synthetic corpora
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { json: false, sizes: vec![1_000, 10_000, 100_000], queries: 200, rebuild_events: 1_000_000, seed: 42 }
    }
}

// ---------------------------------------------------------------------------
// Randomness

/// SplitMix64: a tiny, fast, seeded generator (the library does not depend
/// on `rand`).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_F42D_4C95_7F2D)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Standard normal (Box–Muller).
    pub fn gaussian(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An independent generator derived from this one and `stream`.
    pub fn fork(&mut self, stream: u64) -> Rng {
        Rng::new(self.next_u64() ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93))
    }
}

/// Zipf(1) over `n` items: item `i` with weight `1 / (i + 1)`.
#[derive(Clone, Debug)]
struct Zipf {
    cum: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Self {
        let mut total = 0.0;
        let cum = (0..n)
            .map(|i| {
                total += 1.0 / (i as f64 + 1.0);
                total
            })
            .collect();
        Zipf { cum }
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let x = rng.unit() * self.cum.last().copied().unwrap_or(0.0);
        self.cum.partition_point(|c| *c <= x).min(self.cum.len() - 1)
    }
}

// ---------------------------------------------------------------------------
// Vocabulary

/// Intent tags.
pub const INTENTS: [&str; 6] = ["commit", "refactor", "architecture", "debug", "doc", "test"];

/// File extensions, most common first.
pub const EXTENSIONS: [&str; 30] = [
    ".rs", ".py", ".ts", ".md", ".json", ".toml", ".js", ".tsx", ".go", ".yaml", ".sql", ".sh", ".c", ".h", ".cpp",
    ".java", ".kt", ".rb", ".css", ".html", ".txt", ".yml", ".proto", ".hpp", ".cs", ".php", ".swift", ".scss",
    ".lock", ".jsx",
];

/// Top-level directories, most common first.
pub const BUCKETS: [&str; 20] = [
    "src",
    "tests",
    "docs",
    "scripts",
    "config",
    "benches",
    "examples",
    "api",
    "cli",
    "core",
    "storage",
    "web",
    "migrations",
    "assets",
    "infra",
    "deploy",
    "tools",
    "build",
    "vendor",
    ".github",
];

/// Verbs of the tool names (`read_file`, `run_test`, …).
const TOOL_VERBS: [&str; 10] = ["read", "search", "list", "get", "edit", "write", "create", "update", "delete", "run"];
/// Objects of the tool names.
const TOOL_OBJECTS: [&str; 8] = ["file", "dir", "test", "branch", "doc", "url", "issue", "pr"];

/// The 80 tool names, most common first (verb-major).
pub fn tool_names() -> Vec<String> {
    let mut out = Vec::with_capacity(TOOL_VERBS.len() * TOOL_OBJECTS.len());
    for o in TOOL_OBJECTS {
        for v in TOOL_VERBS {
            out.push(format!("{v}_{o}"));
        }
    }
    out
}

/// What a tool may do to the world, from its name.
pub fn side_effects_of(tool: &str) -> Vec<SideEffectClass> {
    let (verb, object) = tool.split_once('_').unwrap_or((tool, ""));
    let mut out = vec![match verb {
        "read" | "search" | "list" | "get" => SideEffectClass::Read,
        "run" => SideEffectClass::Execute,
        _ => SideEffectClass::Write,
    }];
    if matches!(object, "url" | "issue" | "pr") {
        out.push(SideEffectClass::Network);
    }
    out
}

/// The models of the corpora, with a per-session cost in micro-dollars.
pub const MODELS: [(&str, i64); 8] = [
    ("claude-opus-4", 60_000),
    ("claude-sonnet-4", 12_000),
    ("claude-haiku-4", 2_500),
    ("gpt-4.1", 10_000),
    ("gpt-4.1-mini", 2_000),
    ("gemini-2.5-pro", 9_000),
    ("gemini-2.5-flash", 1_500),
    ("local:qwen2.5-coder-32b", 0),
];

/// A topic: what turns about one kind of work tend to look like.
#[derive(Clone, Debug)]
pub struct Topic {
    intent: usize,
    extensions: [usize; 3],
    tools: [usize; 6],
    buckets: [usize; 3],
    /// Candidate models, the topic's favourite first.
    models: [usize; 5],
    /// Success-score mean of each model on this topic.
    quality: [f64; MODELS.len()],
    /// Unit centroid of the topic's request embeddings.
    centroid: Vec<f32>,
}

/// Fingerprint kind of a corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// v1: structural features only.
    Structural,
    /// v2: structural features and a 384-d embedding.
    Hybrid,
}

impl Kind {
    /// Both kinds.
    pub const ALL: [Kind; 2] = [Kind::Structural, Kind::Hybrid];

    /// `structural` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Structural => "structural",
            Kind::Hybrid => "hybrid",
        }
    }
}

/// Draws fingerprints like a coding assistant's turns: a topic (one of
/// [`TOPICS`]) picks the likely intent, extensions, tools and directories
/// (each drawn from the topic's favourites or, less often, from the whole
/// vocabulary by a Zipf law), side effects follow from the tools, the
/// input-token bucket leans small, images are rare; a hybrid's embedding is
/// its topic's centroid plus Gaussian noise (cosine ≈ 0.7 to the centroid,
/// ≈ 0.5 between two requests of a topic, ≈ 0 across topics).
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Rng,
    tools: Vec<String>,
    topics: Vec<Topic>,
    ext_zipf: Zipf,
    tool_zipf: Zipf,
    bucket_zipf: Zipf,
    topic_zipf: Zipf,
}

impl Generator {
    /// A generator for `seed`; the topics depend on the seed only.
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let tools = tool_names();
        let (ext_zipf, tool_zipf, bucket_zipf) =
            (Zipf::new(EXTENSIONS.len()), Zipf::new(tools.len()), Zipf::new(BUCKETS.len()));
        let topics = (0..TOPICS)
            .map(|t| {
                let mut models = [0usize; 5];
                let mut order: Vec<usize> = (0..MODELS.len()).collect();
                for (i, m) in models.iter_mut().enumerate() {
                    let j = i + rng.below(order.len() - i);
                    order.swap(i, j);
                    *m = order[i];
                }
                let centroid: Vec<f32> = (0..DIM).map(|_| rng.gaussian() as f32).collect();
                Topic {
                    intent: t % INTENTS.len(),
                    extensions: std::array::from_fn(|_| ext_zipf.sample(&mut rng)),
                    tools: std::array::from_fn(|_| tool_zipf.sample(&mut rng)),
                    buckets: std::array::from_fn(|_| bucket_zipf.sample(&mut rng)),
                    models,
                    quality: std::array::from_fn(|_| 0.45 + 0.5 * rng.unit()),
                    centroid: unit(PROVIDER, centroid).vector.to_vec(),
                }
            })
            .collect();
        Generator { rng, tools, topics, ext_zipf, tool_zipf, bucket_zipf, topic_zipf: Zipf::new(TOPICS) }
    }

    /// The generator's own random stream.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// A topic, the popular ones more often.
    pub fn topic(&mut self) -> usize {
        // Flattened Zipf: half uniform, half Zipf.
        if self.rng.chance(0.5) {
            self.rng.below(TOPICS)
        } else {
            self.topic_zipf.sample(&mut self.rng)
        }
    }

    /// Structural features of a turn about `topic`.
    pub fn features(&mut self, topic: usize) -> StructuralFeatures {
        let t = &self.topics[topic];
        let rng = &mut self.rng;
        let mut intent_tags = vec![INTENTS[if rng.chance(0.85) { t.intent } else { rng.below(INTENTS.len()) }]];
        if rng.chance(0.3) {
            intent_tags.push(INTENTS[rng.below(INTENTS.len())]);
        }
        let pick = |rng: &mut Rng, n: usize, own: &[usize], p_own: f64, zipf: &Zipf| -> Vec<usize> {
            (0..n).map(|_| if rng.chance(p_own) { own[rng.below(own.len())] } else { zipf.sample(rng) }).collect()
        };
        let n_ext = [0, 1, 1, 1, 2, 2, 2, 3, 3, 4][rng.below(10)];
        let extensions = pick(rng, n_ext, &t.extensions, 0.7, &self.ext_zipf);
        let n_tools = 1 + rng.below(6);
        let tools = pick(rng, n_tools, &t.tools, 0.6, &self.tool_zipf);
        let n_buckets = [0, 1, 1, 1, 2, 2, 3][rng.below(7)];
        let buckets = pick(rng, n_buckets, &t.buckets, 0.7, &self.bucket_zipf);
        let tool_names: Vec<String> = tools.iter().map(|i| self.tools[*i].clone()).collect();
        let side_effect_classes = tool_names.iter().flat_map(|t| side_effects_of(t)).collect();
        StructuralFeatures {
            intent_tags: intent_tags.into_iter().map(str::to_owned).collect(),
            file_extensions: extensions.into_iter().map(|i| EXTENSIONS[i].to_owned()).collect(),
            tool_names,
            file_path_buckets: buckets.into_iter().map(|i| BUCKETS[i].to_owned()).collect(),
            side_effect_classes,
            estimated_input_tokens_bucket: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 3][rng.below(15)],
            has_images: rng.chance(0.02),
            has_tool_calls_in_history: rng.chance(0.5),
        }
        .normalized()
    }

    /// A request embedding about `topic`: its centroid plus noise, unit
    /// length.
    pub fn embedding(&mut self, topic: usize) -> Embedding {
        let sigma = 1.0 / (DIM as f64).sqrt();
        let c = &self.topics[topic].centroid;
        let v: Vec<f32> = c.iter().map(|x| x + (sigma * self.rng.gaussian()) as f32).collect();
        unit(PROVIDER, v)
    }

    /// A fingerprint of `kind` about a random topic, and the topic.
    pub fn fingerprint(&mut self, kind: Kind) -> (Fingerprint, usize) {
        let topic = self.topic();
        let fp = Fingerprint::structural(self.features(topic));
        let fp = match kind {
            Kind::Structural => fp,
            Kind::Hybrid => fp.with_embedding(Some(self.embedding(topic))),
        };
        (fp, topic)
    }

    /// `n` distinct candidate models of `topic` (2 ≤ n ≤ 5), as indices
    /// into [`MODELS`].
    pub fn models(&mut self, topic: usize, n: usize) -> Vec<usize> {
        let mut order = self.topics[topic].models;
        let n = n.clamp(1, order.len());
        for i in 0..n {
            let j = i + self.rng.below(order.len() - i);
            order.swap(i, j);
        }
        order[..n].to_vec()
    }

    /// A model for a turn about `topic`: the favourite half the time, else
    /// one of the topic's three first candidates.
    pub fn model(&mut self, topic: usize) -> usize {
        let models = self.topics[topic].models;
        if self.rng.chance(0.5) {
            models[0]
        } else {
            models[self.rng.below(3)]
        }
    }

    /// A success score of `model` on `topic`: its mean quality plus noise.
    pub fn score(&mut self, topic: usize, model: usize) -> f64 {
        (self.topics[topic].quality[model] + 0.15 * self.rng.gaussian()).clamp(0.0, 1.0)
    }

    /// A session cost of `model`, around its list price.
    pub fn cost(&mut self, model: usize) -> Decimal {
        let base = MODELS[model].1;
        Decimal::new(base / 2 + (self.rng.unit() * base as f64) as i64, 6)
    }
}

// ---------------------------------------------------------------------------
// Recommendation corpus

/// Where the synthetic outcome rows start (2025-01-01).
fn epoch() -> DateTime<Utc> {
    DateTime::from_timestamp(1_735_689_600, 0).expect("a valid time")
}

/// A K-NN index over `outcomes` outcome rows, the same entries for the
/// reference scan, the rows' accumulators and fresh queries.
pub struct Corpus {
    /// Structural or hybrid.
    pub kind: Kind,
    /// The index under test.
    pub index: KnnIndex,
    /// Every fingerprint with its models, in first-recorded order (the
    /// reference scan's input).
    pub entries: Vec<(FingerprintId, Fingerprint, Vec<Arc<str>>)>,
    /// The accumulator of each `(fingerprint, model)`.
    pub rows: HashMap<FingerprintId, Vec<(Arc<str>, OutcomeRow)>>,
    /// Fresh query fingerprints, drawn like the corpus.
    pub queries: Vec<Fingerprint>,
    /// The recommendation knobs (defaults: K = 10, alpha 0.6).
    pub config: PatternConfig,
}

impl Corpus {
    /// A corpus of exactly `outcomes` rows (about `outcomes / 3`
    /// fingerprints) of `kind`, and `queries` queries, from `seed`.
    pub fn build(outcomes: usize, kind: Kind, queries: usize, seed: u64) -> Corpus {
        let mut gen = Generator::new(seed);
        let models: Vec<Arc<str>> = MODELS.iter().map(|(m, _)| Arc::from(*m)).collect();
        let mut index = KnnIndex::default();
        let mut entries = Vec::with_capacity(outcomes / 3 + 1);
        let mut rows = HashMap::with_capacity(outcomes / 3 + 1);
        let mut seen = HashSet::new();
        let mut total = 0usize;
        let mut attempts = 0usize;
        while total < outcomes {
            attempts += 1;
            assert!(attempts < 100 * outcomes + 1_000, "the generator ran out of distinct fingerprints");
            let (fp, topic) = gen.fingerprint(kind);
            let id = fp.id();
            if !seen.insert(id) {
                continue; // a shape already recorded
            }
            let n = (2 + gen.rng().below(3)).min(outcomes - total);
            let mut fp_models = Vec::with_capacity(n);
            let mut fp_rows = Vec::with_capacity(n);
            for m in gen.models(topic, n) {
                index.insert(id, &fp, &models[m]);
                let mut row = OutcomeRow::new(epoch());
                let samples = 1 + gen.rng().below(12);
                for s in 0..samples {
                    let at = epoch() + chrono::Duration::minutes((total * 7 + s) as i64);
                    let cost = gen.cost(m);
                    let latency = 800.0 + 6_000.0 * gen.rng().unit();
                    row.contribute(cost, latency, "2025-01", at);
                    if gen.rng().chance(0.7) {
                        let score = gen.score(topic, m);
                        row.add_score(score);
                    }
                }
                fp_models.push(models[m].clone());
                fp_rows.push((models[m].clone(), row));
            }
            fp_models.sort();
            total += n;
            entries.push((id, fp, fp_models));
            rows.insert(id, fp_rows);
        }
        let queries = (0..queries).map(|_| gen.fingerprint(kind).0).collect();
        debug_assert_eq!(index.outcomes(), outcomes);
        Corpus { kind, index, entries, rows, queries, config: PatternConfig::default() }
    }

    /// Outcome rows.
    pub fn outcomes(&self) -> usize {
        self.index.outcomes()
    }

    /// Fingerprints.
    pub fn fingerprints(&self) -> usize {
        self.entries.len()
    }

    /// The accumulator of `(id, model)`.
    pub fn row(&self, id: FingerprintId, model: &str) -> Option<&OutcomeRow> {
        self.rows.get(&id)?.iter().find(|(m, _)| **m == *model).map(|(_, r)| r)
    }

    /// The index's K nearest outcome rows.
    pub fn search(&self, query: &Fingerprint) -> Vec<Neighbor> {
        self.index.search(query, self.config.k, self.config.alpha)
    }

    /// The cluster's recommendation (what `PatternOutcomes::recommend`
    /// does after the search).
    pub fn score(&self, cluster: &[Neighbor]) -> Recommendation {
        let rows = cluster.iter().filter_map(|n| Some((&*n.model, self.row(n.fingerprint, &n.model)?)));
        score_cluster(rows, &self.config)
    }

    /// The whole recommendation path: search, then score.
    pub fn recommend(&self, query: &Fingerprint) -> Recommendation {
        self.score(&self.search(query))
    }

    /// The reference scan's K nearest outcome rows.
    pub fn exact(&self, query: &Fingerprint) -> Vec<Neighbor> {
        exact_k_nearest(
            self.entries.iter().map(|(id, fp, m)| (*id, fp, m.as_slice())),
            query,
            self.config.k,
            self.config.alpha,
        )
    }
}

/// `|got ∩ want| / |want|` over `(fingerprint, model)` pairs (1 when both
/// are empty).
pub fn recall(got: &[Neighbor], want: &[Neighbor]) -> f64 {
    if want.is_empty() {
        return if got.is_empty() { 1.0 } else { 0.0 };
    }
    let want_keys: HashSet<(FingerprintId, &str)> = want.iter().map(|n| (n.fingerprint, &*n.model)).collect();
    let hit = got.iter().filter(|n| want_keys.contains(&(n.fingerprint, &*n.model))).count();
    hit as f64 / want.len() as f64
}

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
    /// Queries timed on the index (each [`PASSES`] times).
    pub queries: usize,
    /// Queries timed on the exact scan (and checked for recall).
    pub exact_queries: usize,
    /// Time to build the corpus and the index, ms.
    pub build_ms: f64,
}

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

// ---------------------------------------------------------------------------
// Rebuild stream

/// What an event stream holds.
#[derive(serde::Serialize, Debug, Clone, Default)]
pub struct StreamStats {
    /// Sessions.
    pub sessions: u64,
    /// Turns (planner and fast path).
    pub turns: u64,
    /// Turns answered by a model.
    pub planner_turns: u64,
    /// Verdicts given after their session ended.
    pub late_verdicts: u64,
    /// Envelopes by kind.
    pub kinds: BTreeMap<&'static str, u64>,
}

/// At least `min_events` envelopes of import-shaped sessions (whole
/// sessions), with the events the [`PatternReactor`] (default config and
/// caps) derives inserted after their causes, numbered from seq 1.
///
/// Sessions of 1–8 turns draw from [`REBUILD_SHAPES`] shapes (a turn often
/// repeats the previous one's shape); three turns in four go to a model
/// (the topic's favourite half the time), the others to the fast path; six
/// in ten carry a verdict, and one recorded turn in twenty gets a second,
/// later verdict after its session ended (a re-evaluation the reactor folds
/// with an exact roll-back).
pub fn event_stream(min_events: usize, seed: u64) -> (Vec<Envelope>, StreamStats) {
    let mut gen = Generator::new(seed ^ 0xEB);
    let shapes: Vec<(StructuralFeatures, usize)> = (0..REBUILD_SHAPES)
        .map(|_| {
            let topic = gen.topic();
            (gen.features(topic), topic)
        })
        .collect();
    let mut reactors: Vec<Box<dyn Reactor>> = vec![Box::new(PatternReactor::new(
        PatternOutcomes::default(),
        PatternConfig::default(),
        PatternCaps::default(),
    ))];
    let mut out: Vec<Envelope> = Vec::with_capacity(min_events + 64);
    let mut stats = StreamStats::default();
    let mut at = epoch();
    let mut s = 0u64;
    while out.len() < min_events {
        let session = SessionId::new(format!("bench-p{s:07}"));
        s += 1;
        let turns = 1 + gen.rng().below(8) as u32;
        let mut events = Vec::with_capacity(turns as usize * 16);
        let mut history = false;
        let mut shape = gen.rng().below(shapes.len());
        let mut last: Option<TurnRecord> = None;
        let mut judged_later: Vec<(TurnId, usize, usize)> = Vec::new();
        for turn in 1..=turns {
            if !gen.rng().chance(0.4) {
                shape = gen.rng().below(shapes.len());
            }
            let (features, topic) = &shapes[shape];
            let planner = gen.rng().chance(0.75);
            let model = planner.then(|| gen.model(*topic));
            let steps: Vec<PlanStep> = if planner {
                features.tool_names.iter().map(|t| PlanStep { tool: t.clone(), args: ToolArgs::default() }).collect()
            } else {
                let n = gen.rng().below(3).min(features.tool_names.len());
                features.tool_names[..n]
                    .iter()
                    .map(|t| PlanStep { tool: t.clone(), args: ToolArgs::default() })
                    .collect()
            };
            let latency_ms =
                if planner { 800 + gen.rng().below(9_000) as u64 } else { 20 + gen.rng().below(300) as u64 };
            let judged = gen.rng().chance(0.6);
            let score = match (judged, model) {
                (true, Some(m)) => Some(gen.score(*topic, m)),
                (true, None) => Some(0.8 + 0.2 * gen.rng().unit()),
                _ => None,
            };
            let r = TurnRecord {
                session: session.clone(),
                turn,
                at,
                text: format!("request {turn} of session {s}"),
                steps,
                model: model.map(|m| MODELS[m].0.to_owned()),
                planner_ms: if planner { latency_ms / 3 } else { 0 },
                latency_ms,
                cost_usd: model.map_or(Decimal::ZERO, |m| gen.cost(m)),
                pricing_version: "2025-01".to_owned(),
                score,
                score_confidence: 0.4 + 0.6 * gen.rng().unit(),
                workload: None,
                features: Some(features.clone()),
            };
            stats.turns += 1;
            if let Some(m) = model {
                stats.planner_turns += 1;
                if gen.rng().chance(0.05) {
                    judged_later.push((TurnId::for_turn(&session, turn, at), *topic, m));
                }
            }
            events.extend(turn_events(&r, history));
            history |= !r.steps.is_empty();
            at = turn_end(&r) + chrono::Duration::seconds(5 + gen.rng().below(120) as i64);
            last = Some(r);
        }
        if let Some(r) = &last {
            events.push(session_ended(&session, turns, turn_end(r)));
        }
        // Verdicts that arrive after the session ended (re-evaluations).
        for (turn, topic, model) in judged_later {
            let when = at + chrono::Duration::seconds(30);
            let eval_id = EvalId::derive(when, &[b"bench-reeval", &turn.0 .0.to_be_bytes()]);
            let score = gen.score(topic, model);
            let env = Envelope::at(
                EventId::derive(when, &[b"bench-reeval-event", &turn.0 .0.to_be_bytes()]),
                when,
                ActorKind::Judge,
                EvalCompleted {
                    eval_id,
                    subject_turn: turn,
                    score,
                    confidence: 0.9,
                    judge: JudgeKind::Llm,
                    rubric: None,
                    judge_pricing_version: None,
                },
            )
            .with_session(session.clone())
            .with_turn(turn);
            events.push(env);
            stats.late_verdicts += 1;
        }
        out.extend(derive_all(events, &mut reactors));
        stats.sessions += 1;
        at += chrono::Duration::minutes(2);
    }
    for (i, env) in out.iter_mut().enumerate() {
        env.seq = Seq(i as u64 + 1);
        *stats.kinds.entry(env.kind().name()).or_default() += 1;
    }
    (out, stats)
}

/// Folds `events` (decoded, in order) into a fresh [`PatternOutcomes`].
pub fn fold(events: &[Envelope]) -> PatternOutcomes {
    let mut p = PatternOutcomes::default();
    for env in events {
        p.apply(env);
    }
    p
}

/// Appends `events` to `log` in batches of 2,048, as `engram import` does,
/// and waits until they are written.
pub fn append_all(log: &SledLog, events: Vec<Envelope>) -> anyhow::Result<()> {
    let n = events.len() as u64;
    let start = log.head().0;
    crate::log::engram_append(log, crate::log::split(events, 1, 2_048))?;
    log.flush()?;
    anyhow::ensure!(log.head().0 == start + n, "the log holds {} of {n} events", log.head().0 - start);
    Ok(())
}

/// Rebuilds `pattern_outcomes` from `log` the way `engram rebuild` does
/// (in memory, nothing persisted): returns the records decoded and folded,
/// the time it took, and the projector holding the result.
pub fn rebuild(log: &SledLog) -> anyhow::Result<(u64, Duration, Projector)> {
    let start = Instant::now();
    let mut projector = Projector::in_memory(vec![Box::new(PatternOutcomes::default())]);
    let read = projector.catch_up(log, |_, _| {})?;
    Ok((read, start.elapsed(), projector))
}

/// The digest of the rows of the `pattern_outcomes` a [`rebuild`] made.
pub fn rebuilt_digest(projector: &Projector) -> anyhow::Result<[u8; 32]> {
    let p = projector
        .get::<PatternOutcomes>("pattern_outcomes")
        .ok_or_else(|| anyhow::anyhow!("the projector holds no pattern_outcomes"))?;
    Ok(digest(&p.rows()))
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

/// Generates the stream, folds it in memory, appends it to a fresh log in
/// a temporary directory and rebuilds from there ([`REBUILD_RUNS`] runs
/// each), checking both folds agree.
pub fn measure_rebuild(min_events: usize, seed: u64, progress: impl Fn(&str)) -> anyhow::Result<RebuildFigure> {
    progress("rebuild: generating the event stream");
    let start = Instant::now();
    let (events, stream) = event_stream(min_events, seed);
    let generate_ms = round2(start.elapsed().as_secs_f64() * 1e3);
    let n = events.len() as u64;

    progress("rebuild: folding from memory");
    let mut fold_runs = Vec::with_capacity(REBUILD_RUNS);
    let mut folded = None;
    for _ in 0..REBUILD_RUNS {
        let start = Instant::now();
        let p = fold(&events);
        fold_runs.push(eps(n, start.elapsed()));
        folded = Some(p);
    }
    let folded = folded.expect("at least one run");
    let want = digest(&folded.rows());

    progress("rebuild: appending to a fresh log");
    let dir = tempfile::Builder::new().prefix("engram-bench-patterns-").tempdir()?;
    let log = crate::log::engram_open(&dir.path().join("log"), crate::log::engram_relaxed_config())?;
    append_all(&log, events)?;

    progress("rebuild: from the log");
    let mut runs = Vec::with_capacity(REBUILD_RUNS);
    let mut decoded = 0;
    for _ in 0..REBUILD_RUNS {
        let (read, took, projector) = rebuild(&log)?;
        anyhow::ensure!(
            rebuilt_digest(&projector)? == want,
            "the rebuilt pattern_outcomes differ from the in-memory fold"
        );
        decoded = read;
        runs.push(eps(n, took));
    }
    drop(log);
    Ok(RebuildFigure {
        events: n,
        decoded,
        events_per_sec: crate::percentile(&runs, 50.0).unwrap_or(f64::NAN).round(),
        runs: runs.into_iter().map(f64::round).collect(),
        fold_events_per_sec: crate::percentile(&fold_runs, 50.0).unwrap_or(f64::NAN).round(),
        fold_runs: fold_runs.into_iter().map(f64::round).collect(),
        fingerprints: folded.fingerprint_count(),
        outcomes: folded.outcome_count(),
        rows: folded.row_count(),
        generate_ms,
        stream,
    })
}

fn eps(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

// ---------------------------------------------------------------------------
// The run

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

fn progress(opts: &Options, what: &str) {
    super::progress(opts.json, &format!("measuring {what}"));
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
    fn rng_is_deterministic_and_roughly_uniform() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..100).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut counts = [0usize; 10];
        for _ in 0..10_000 {
            counts[a.below(10)] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
        let mean = (0..10_000).map(|_| a.gaussian()).sum::<f64>() / 10_000.0;
        assert!(mean.abs() < 0.05);
    }

    #[test]
    fn corpus_has_the_requested_rows_and_the_index_matches_the_scan() {
        for kind in Kind::ALL {
            let c = Corpus::build(600, kind, 20, 3);
            assert_eq!(c.outcomes(), 600);
            assert!((150..=300).contains(&c.fingerprints()), "{} fingerprints", c.fingerprints());
            assert_eq!(c.rows.values().map(Vec::len).sum::<usize>(), 600);
            for q in &c.queries {
                let got = c.search(q);
                assert_eq!(got.len(), K);
                assert!(recall(&got, &c.exact(q)) >= 0.9);
                assert!(!c.recommend(q).alternatives.is_empty());
            }
            let fig = measure(&c, 5, Duration::ZERO);
            assert_eq!((fig.exact_queries, fig.queries), (5, 20));
            assert!(fig.p50_us > 0.0 && fig.p99_us >= fig.p50_us && fig.recall_at_10 >= 0.9);
        }
        // Same seed, same corpus.
        let (a, b) = (Corpus::build(90, Kind::Hybrid, 3, 9), Corpus::build(90, Kind::Hybrid, 3, 9));
        assert_eq!(
            a.entries.iter().map(|e| e.0).collect::<Vec<_>>(),
            b.entries.iter().map(|e| e.0).collect::<Vec<_>>()
        );
        assert_eq!(a.queries, b.queries);
    }

    #[test]
    fn hybrid_embeddings_cluster_by_topic() {
        let mut g = Generator::new(1);
        let dot = |a: &Embedding, b: &Embedding| a.vector.iter().zip(b.vector.iter()).map(|(x, y)| x * y).sum::<f32>();
        let (a, b, c) = (g.embedding(0), g.embedding(0), g.embedding(1));
        let norm = dot(&a, &a);
        assert!((norm - 1.0).abs() < 1e-4);
        assert!(dot(&a, &b) > 0.3, "same topic {}", dot(&a, &b));
        assert!(dot(&a, &c).abs() < 0.3, "other topic {}", dot(&a, &c));
    }

    #[test]
    fn stream_records_patterns_and_rebuilds_identically() {
        let (events, stats) = event_stream(3_000, 5);
        assert!(events.len() >= 3_000);
        assert!(stats.kinds["pattern.recorded"] > 0 && stats.kinds["session.ended"] == stats.sessions);
        assert!(stats.kinds["eval.completed"] > 0 && stats.kinds["route.decided"] == stats.turns);
        let p = fold(&events);
        assert!(p.outcome_count() > 0 && p.fingerprint_count() > 0);
        let dir = tempfile::tempdir().unwrap();
        let log = crate::log::engram_open(&dir.path().join("log"), crate::log::engram_relaxed_config()).unwrap();
        let n = events.len() as u64;
        append_all(&log, events).unwrap();
        let (read, _, projector) = rebuild(&log).unwrap();
        assert!(read > 0 && read < n);
        assert_eq!(rebuilt_digest(&projector).unwrap(), digest(&p.rows()));
    }

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
