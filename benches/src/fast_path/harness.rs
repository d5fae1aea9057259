//! The fast-path bench's harness: the embedding model (a request embedder
//! and a batch embedder for the tables), the tables learned and built at
//! each size ([`Corpus`]: real row vectors memoised across sizes, the rest
//! derived), the requests each figure routes, and one request routed with
//! its embedding and index searches timed ([`Routed`]).

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engram::actors::config::Config;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::events::payloads::{PlanStep, RouteLayer};
use engram::learning::embedder::{EmbedError, Embedder, EmbedderConfig, EmbeddingModel};
use engram::learning::fast_path::{canonical, l0, Decision, FastPath};
use engram::learning::projections::{CanonicalQueries, Pipelines};

use super::grammar::{l1_request, l2_request, learn, miss_request, now, permutation, L1_SPACE, L2_SPACE};
use super::timed_index::{timed_index, SearchClock};
use super::vectors::derive_vector;
use crate::patterns::Rng;

/// Untimed requests routed before each figure is measured.
pub const WARM_UP: usize = 10;

/// L1 rows learnt one at a time per table size, timed.
pub const LEARNT_ROWS: usize = 30;

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
        let index = Duration::from_nanos(clock.build_nanos());
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
                slots: Default::default(),
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
