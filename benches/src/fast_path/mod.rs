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
//!
//! ## Where each part lives
//!
//! One module per concept, their items re-exported here:
//!
//! * the workload — `grammar` (the synthetic rows, requests and hard
//!   negatives, and the tables learned from them) and `vectors` (derived
//!   row vectors, vectors given instead of embedded);
//! * the run — `timed_index` (the layers' index, its searches timed),
//!   `harness` (the model, the tables at each size, a request routed and
//!   timed) and `run` (every figure, per model, into the report);
//! * `report` — [`Report`] / [`Reports`] and their figures, as JSON and as
//!   a table.
//!
//! [`FastPath::route`]: engram::learning::fast_path::FastPath::route
//! [`FastPath::build`]: engram::learning::fast_path::FastPath::build
//! [`Embedder::embed`]: engram::learning::embedder::Embedder::embed
//! [`CanonicalQueries`]: engram::learning::projections::CanonicalQueries
//! [`Pipelines`]: engram::learning::projections::Pipelines

use engram::learning::embedder::EmbeddingModel;

mod grammar;
mod harness;
mod report;
mod run;
mod timed_index;
mod vectors;

pub use grammar::{
    l1_request, l2_request, learn, miss_request, now, ADJECTIVES, L1_NOUNS, L1_SPACE, L1_VERBS, L2_GETS, L2_NOUNS,
    L2_SPACE, L2_VERBS, MISS_VERBS, TOPICS,
};
pub use harness::{l0_requests, Corpus, Harness, Request, Routed, LEARNT_ROWS, WARM_UP};
pub use report::{Hits, Latency, Misses, Report, Reports, Table};
pub use run::{run, run_model};
pub use timed_index::SearchClock;
pub use vectors::{derive_vector, Given, DERIVED_COSINE};

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
