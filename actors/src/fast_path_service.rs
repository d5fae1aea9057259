//! The router's fast path, assembled: the pure decision of
//! [`engram_learning::fast_path::FastPath`], fed by the [`Embedder`], with
//! row vectors memoised in the [`EmbeddingCache`].
//!
//! Building embeds the canonical text of every L1/L2 candidate — from the
//! cache when it has them, in batches otherwise — so a restart costs cache
//! reads, not inference. Routing embeds one request (two with
//! `chain_to_planner`), never when L0 answers.

use std::sync::Arc;

use engram_events::payloads::PlanStep;
use engram_learning::embedder::EmbeddingModel;
use engram_learning::fast_path::decision::Changes;
use engram_learning::fast_path::decision::VectorSearch;
use engram_learning::fast_path::{Decision, FastPath};
use engram_learning::fast_path::{FastPathConfig, MultiToolConfig};
use engram_learning::projections::canonical_queries::CanonicalRow;
use engram_learning::projections::{CanonicalQueries, Pipelines};
use engram_learning::taught_phrasings::TaughtPhrasings;
use engram_local_state::embedding_cache::EmbeddingCache;
use engram_storage::LogError;
use engram_vector::index::{VectorConfig, VectorIndex};

use engram_learning::embedder::{EmbedError, Embedder};

/// Why the fast path could not be built or could not decide.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FastPathError {
    /// The embedder failed (missing assets name `scripts/fetch-models.sh`).
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The embedding cache could not be read or written.
    #[error("embedding cache: {0}")]
    Cache(#[from] LogError),
}

/// A layer's rows in the vector index (exact below its measured
/// crossover, HNSW above, grown one node per learnt row), keyed by row key.
/// Made at the first insert, when the model's dimension is known.
#[derive(Default)]
struct Rows(Option<VectorIndex<u64>>);

impl VectorSearch for Rows {
    fn search(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        // A query of the wrong dimension (another model's vector) finds
        // nothing rather than failing the turn.
        let Some(index) = &self.0 else { return Vec::new() };
        index.search(query, k).unwrap_or_default().into_iter().map(|h| (h.key, h.cosine)).collect()
    }

    fn heap_bytes(&self) -> usize {
        self.0.as_ref().map_or(0, VectorIndex::heap_bytes)
    }

    fn insert(&mut self, rows: Vec<(u64, Vec<f32>)>) {
        let Some(dim) = rows.first().map(|(_, v)| v.len().max(1)) else { return };
        let index = self.0.get_or_insert_with(|| {
            let mut config = VectorConfig::new(dim);
            // Building runs on the router's thread: do not take every core.
            config.build_threads = 1;
            VectorIndex::new(config).expect("a positive dimension")
        });
        if let Err(e) = index.extend(rows.iter().map(|(k, v)| (*k, v.as_slice()))) {
            tracing::warn!("fast path: a row vector was rejected ({e}); those rows answer nothing");
        }
    }

    fn remove(&mut self, key: u64) {
        if let Some(index) = &mut self.0 {
            index.remove(&key);
        }
    }
}

fn index() -> Box<dyn VectorSearch> {
    Box::<Rows>::default()
}

/// One text's vector, through the memo (the embedding cache) when there is
/// one: what the fast path and the diary's recall both embed with.
pub fn embed_text(
    embedder: &dyn Embedder,
    cache: Option<&EmbeddingCache>,
    text: &str,
) -> Result<Vec<f32>, FastPathError> {
    match cache {
        Some(c) => Ok(c.get_or_embed(embedder.model_id(), &[text], |m| embedder.embed_batch(m))??.remove(0)),
        None => Ok(embedder.embed(text)?),
    }
}

/// Embeds a batch through the memo (when there is one), recording a
/// failure in `failure` for the caller to return.
fn memo_embed<'a>(
    embedder: &'a dyn Embedder,
    cache: Option<&'a EmbeddingCache>,
    failure: &'a mut Option<FastPathError>,
) -> impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, ()> + 'a {
    let model = embedder.model_id().to_owned();
    move |texts: &[&str]| {
        let r = match cache {
            Some(c) => match c.get_or_embed(&model, texts, |missing| embedder.embed_batch(missing)) {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(FastPathError::from(e)),
                Err(e) => Err(FastPathError::from(e)),
            },
            None => embedder.embed_batch(texts).map_err(FastPathError::from),
        };
        r.map_err(|e| *failure = Some(e))
    }
}

/// The fast path with its embedder.
pub struct FastPathService {
    fast_path: FastPath,
    embedder: Arc<dyn Embedder>,
    cache: Option<EmbeddingCache>,
}

impl FastPathService {
    /// Builds the fast path from the projections' candidates, configured
    /// by `[fast_path]` and `[multi_tool_fast_path]`, with the thresholds
    /// calibrated for `embedder`'s model where they set none.
    pub fn build(
        (fast, multi_tool): (&FastPathConfig, &MultiToolConfig),
        canonical: &CanonicalQueries,
        pipelines: &Pipelines,
        embedder: Arc<dyn Embedder>,
        cache: Option<EmbeddingCache>,
    ) -> Result<FastPathService, FastPathError> {
        // Thresholds the configuration leaves unset are the embedder's own.
        let cal = EmbeddingModel::calibration_for_id(embedder.model_id());
        let (mut fast, mut multi_tool) = (fast.clone(), multi_tool.clone());
        fast.calibrate(&cal);
        multi_tool.calibrate(&cal);
        let mut failure: Option<FastPathError> = None;
        let built = {
            let mut embed = memo_embed(embedder.as_ref(), cache.as_ref(), &mut failure);
            FastPath::build(&fast, &multi_tool, canonical, pipelines, &mut embed, &index)
        };
        match built {
            Ok(fast_path) => Ok(FastPathService { fast_path, embedder, cache }),
            Err(()) => Err(failure.expect("the embed closure records its failure")),
        }
    }

    /// Takes in what the projections learnt about `texts` (canonical texts
    /// named by the events learnt since the last build or update): a new
    /// row is embedded (through the memo) and inserted, a row that stopped
    /// being a candidate removed — the rest of the index untouched.
    pub fn update_texts(
        &mut self,
        canonical: &CanonicalQueries,
        pipelines: &Pipelines,
        texts: &[String],
    ) -> Result<Changes, FastPathError> {
        let mut failure: Option<FastPathError> = None;
        let updated = {
            let mut embed = memo_embed(self.embedder.as_ref(), self.cache.as_ref(), &mut failure);
            self.fast_path.update_texts(canonical, pipelines, texts, &mut embed)
        };
        updated.map_err(|()| failure.expect("the embed closure records its failure"))
    }

    /// Takes `rows` (phrasings of `canonical`) into what the model
    /// taught the offline planner: their examples embedded through the
    /// memo — the vectors the fast path embedded them to, read back — and
    /// the values the model passed for their tools.
    pub fn teach<'a>(
        &self,
        taught: &mut TaughtPhrasings,
        canonical: &'a CanonicalQueries,
        rows: impl IntoIterator<Item = &'a CanonicalRow>,
    ) -> Result<usize, FastPathError> {
        let mut failure: Option<FastPathError> = None;
        let added = {
            let mut embed = memo_embed(self.embedder.as_ref(), self.cache.as_ref(), &mut failure);
            taught.learn(canonical, rows, &mut embed)
        };
        added.map_err(|()| failure.expect("the embed closure records its failure"))
    }

    /// See [`FastPath::set_schemas`].
    pub fn set_schemas(&mut self, schemas: std::collections::HashMap<String, serde_json::Value>) {
        self.fast_path.set_schemas(schemas);
    }

    /// See [`FastPath::raise_bar`].
    pub fn raise_bar(&mut self, rejected: Option<f64>) {
        self.fast_path.raise_bar(rejected);
    }

    /// The decision for `text` said at `now`.
    pub fn route(&self, text: &str, now: chrono::DateTime<chrono::FixedOffset>) -> Result<Decision, FastPathError> {
        self.fast_path.route(text, now, &mut |t: &str| self.embed_one(t))
    }

    /// [`FastPathService::route`] with a second reader, `second` (the
    /// offline planner's plan of the request): a learnt phrasing short of
    /// serving alone serves when it plans the same call
    /// ([`FastPath::route_read_twice`]).
    pub fn route_read_twice(
        &self,
        text: &str,
        now: chrono::DateTime<chrono::FixedOffset>,
        second: &mut dyn FnMut(&str) -> Vec<PlanStep>,
    ) -> Result<Decision, FastPathError> {
        self.fast_path.route_read_twice(text, now, &mut |t: &str| self.embed_one(t), Some(second))
    }

    /// One text's vector, through the memo when there is one.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, FastPathError> {
        embed_text(self.embedder.as_ref(), self.cache.as_ref(), text)
    }

    /// The embedding of `text`'s canonical form (values masked, proper nouns
    /// as words), through the memo: what the fast path keeps as the
    /// request's meaning, for a turn it did not embed (no candidates yet).
    /// `None` for a request with no words left.
    pub fn embed_request(
        &self,
        text: &str,
        now: chrono::DateTime<chrono::FixedOffset>,
    ) -> Result<Option<Vec<f32>>, FastPathError> {
        let (_, ex) = engram_learning::fast_path::canonical(text, now);
        let (canon, _) = engram_learning::fast_path::with_names_as_words(&ex);
        if canon.is_empty() {
            return Ok(None);
        }
        self.embed_one(&canon).map(Some)
    }

    /// L1 rows and L2 pipelines held.
    pub fn sizes(&self) -> (usize, usize) {
        self.fast_path.sizes()
    }

    /// Heap bytes of L1 and L2 ([`FastPath::heap_bytes`]).
    pub fn heap_bytes(&self) -> (usize, usize) {
        self.fast_path.heap_bytes()
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }
}
