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

pub mod fingerprint;
pub mod knn;
pub mod outcome;
pub mod recommend;
pub mod similarity;

pub use fingerprint::{Embedding, Fingerprint, Stage};
pub use knn::{KnnIndex, Neighbor};
pub use outcome::OutcomeRow;
pub use recommend::{PatternConfig, Recommendation};

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
