//! The pattern store's math (seed 001): fingerprints, similarity, outcome
//! accumulators, the K-NN index and recommendations.
//!
//! The *state* lives in the `pattern_outcomes` projection
//! ([`crate::projections::PatternOutcomes`]), folded from `pattern.recorded`
//! and `pattern.evicted`; the *decisions* that write those events live in
//! the pattern reactor ([`crate::reactors::PatternReactor`]). This module
//! holds what both share:
//!
//! * [`fingerprint`] — a turn's shape and its signature-derived id;
//! * [`similarity`] — the reference similarity (v1 weighted Jaccard, the
//!   workload partition, the v2 cosine blend and its fallbacks);
//! * [`outcome`] — the `(fingerprint, model)` accumulator;
//! * [`knn`] — the fast exact K-nearest search;
//! * [`recommend`] — scoring a cluster, with the confidence and sample gates.
//!
//! Its configuration is `[pattern]` of `engram.toml` ([`PatternSection`]).

pub mod fingerprint;
pub mod knn;
pub mod outcome;
pub mod recommend;
pub mod similarity;

pub use fingerprint::{Embedding, Fingerprint, Stage};
pub use knn::{KnnIndex, Neighbor};
pub use outcome::OutcomeRow;
pub use recommend::{PatternConfig, Recommendation};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::embedder::{Calibration, EmbeddingModel};

/// Per-store caps (seed 001 §6): the soft cap signals, the hard cap evicts,
/// and rows idle longer than `max_age_days` go first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PatternCaps {
    /// Outcome rows at which `pattern.evicted` (`soft_cap_signal`) fires.
    pub soft_cap_rows: u64,
    /// Outcome rows above which the oldest are evicted.
    pub hard_cap_rows: u64,
    /// Idle age after which a row is evicted first.
    pub max_age_days: u32,
}

impl Default for PatternCaps {
    fn default() -> Self {
        PatternCaps { soft_cap_rows: 5_000, hard_cap_rows: 10_000, max_age_days: 180 }
    }
}

/// `[pattern]`: the pattern store's knobs and caps (seed 001).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PatternSection {
    /// See [`PatternConfig::cost_weight`].
    pub cost_weight: f64,
    /// See [`PatternConfig::min_confidence`].
    pub min_confidence: f64,
    /// See [`PatternConfig::min_sample_size`].
    pub min_sample_size: u64,
    /// See [`PatternConfig::min_eval_confidence`].
    pub min_eval_confidence: f64,
    /// Cluster size over outcome rows.
    pub k: usize,
    /// Cosine weight for hybrid fingerprints.
    pub embedding_alpha: f64,
    /// See [`PatternConfig::min_hybrid_similarity`]. Unset: the embedding
    /// model's calibration ([`Calibration::hybrid_floor`]).
    pub min_hybrid_similarity: Option<f64>,
    /// See [`PatternConfig::same_request`]. Unset: the embedding model's
    /// calibration ([`Calibration::same_request`]).
    pub same_request_similarity: Option<f64>,
    /// See [`PatternConfig::same_kind`]. Unset: the embedding model's
    /// calibration ([`Calibration::same_kind`]).
    pub same_kind_similarity: Option<f64>,
    /// See [`PatternCaps::soft_cap_rows`].
    pub soft_cap_rows: u64,
    /// See [`PatternCaps::hard_cap_rows`].
    pub hard_cap_rows: u64,
    /// See [`PatternCaps::max_age_days`].
    pub max_age_days: u32,
    /// Exploration: the share of planner turns, in a cluster where no
    /// candidate has cleared the store's gate, that go to a candidate with
    /// fewer than `min_sample_size` samples there, so the store gets
    /// evidence for it at all (0 disables). Deterministic: drawn from the
    /// turn's id. See `docs/patterns.md`.
    pub explore: f64,
    /// More intent tags for live fingerprints: tag → the words that signal
    /// it (matched as whole words, any case), beside the built-in EN/IT set
    /// (`learning/src/features.rs`), e.g. `travel = ["flight", "train"]`.
    pub intent_tags: BTreeMap<String, Vec<String>>,
    /// 2 (the default): hybrid fingerprints — the request's embedding beside
    /// the structural features, blended by `embedding_alpha` — whenever the
    /// runtime has an embedder; 1: structural only (seed 001 §16).
    pub fingerprint_version: u32,
}

impl Default for PatternSection {
    fn default() -> Self {
        let (c, caps) = (PatternConfig::default(), PatternCaps::default());
        PatternSection {
            cost_weight: c.cost_weight,
            min_confidence: c.min_confidence,
            min_sample_size: c.min_sample_size,
            min_eval_confidence: c.min_eval_confidence,
            k: c.k,
            embedding_alpha: c.alpha,
            min_hybrid_similarity: None,
            same_request_similarity: None,
            same_kind_similarity: None,
            soft_cap_rows: caps.soft_cap_rows,
            hard_cap_rows: caps.hard_cap_rows,
            max_age_days: caps.max_age_days,
            explore: 0.25,
            intent_tags: BTreeMap::new(),
            fingerprint_version: 2,
        }
    }
}

impl PatternSection {
    /// The recommendation knobs.
    pub fn config(&self) -> PatternConfig {
        PatternConfig {
            cost_weight: self.cost_weight,
            min_confidence: self.min_confidence,
            min_sample_size: self.min_sample_size,
            min_eval_confidence: self.min_eval_confidence,
            k: self.k,
            alpha: self.embedding_alpha,
            min_hybrid_similarity: self
                .min_hybrid_similarity
                .unwrap_or(EmbeddingModel::default().spec().calibration.hybrid_floor),
            same_request: self
                .same_request_similarity
                .unwrap_or(EmbeddingModel::default().spec().calibration.same_request),
            same_kind: self.same_kind_similarity.unwrap_or(EmbeddingModel::default().spec().calibration.same_kind),
        }
    }

    /// Fills the hybrid floor, if the configuration leaves it unset, with
    /// the calibration of the model whose vectors it will compare.
    pub fn calibrate(&mut self, cal: &Calibration) {
        self.min_hybrid_similarity.get_or_insert(cal.hybrid_floor);
        self.same_request_similarity.get_or_insert(cal.same_request);
        self.same_kind_similarity.get_or_insert(cal.same_kind);
    }

    /// The caps.
    pub fn caps(&self) -> PatternCaps {
        PatternCaps {
            soft_cap_rows: self.soft_cap_rows,
            hard_cap_rows: self.hard_cap_rows,
            max_age_days: self.max_age_days,
        }
    }
}
