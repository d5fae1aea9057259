//! Pattern-store events (seed 001 §10).

use rust_decimal::Decimal;

use crate::ids::{EvalId, FingerprintId, TurnId};

use super::StructuralFeatures;

payload! {
    /// A request's embedding and the model that made it: the vector half of
    /// a hybrid fingerprint (seed 001 §16), carried by `route.decided` and,
    /// for a new fingerprint, `pattern.recorded`.
    pub struct QueryEmbedding {
        /// Stable embedder id (`local:all-MiniLM-L6-v2:int8`): vectors of
        /// different providers are never compared.
        pub provider: String,
        /// L2-normalised components.
        pub vector: Vec<f32>,
    }
}

closed_enum! {
    /// Fingerprint kind (seed 001 `FingerprintKind`).
    pub enum FingerprintKind {
        /// v1: structural features only.
        Structural => "structural",
        /// v2: structural features + an embedding.
        Hybrid => "hybrid",
    }
}

payload! {
    /// `pattern.recorded` (schema v3): one write to a `(fingerprint, model)`
    /// outcome accumulator — a session's contribution at `session.ended`
    /// (`sample_size_after = before + 1`) or a score-only update from
    /// `eval.completed` (`before == after`).
    ///
    /// v1 was seed 001 §10.1's shape exactly; v2 adds what a projection needs
    /// to fold the write without consulting anything but the log: the turn,
    /// its latency, the verdict's id and confidence, the score it replaces,
    /// and the fingerprint's features when it is new.
    pub struct PatternRecorded {
        /// The fingerprint (derived from its structural signature in v1).
        pub fingerprint_id: FingerprintId,
        /// Structural or hybrid.
        pub fingerprint_kind: FingerprintKind,
        /// The model the turn was routed to.
        pub primary_model: String,
        /// Outcome sample size before this write.
        pub sample_size_before: u64,
        /// Outcome sample size after this write.
        pub sample_size_after: u64,
        /// True on the fingerprint's first sighting.
        pub was_new_fingerprint: bool,
        /// This contribution's score; `None` if no verdict yet.
        pub success_score: Option<f64>,
        /// This session's cost contribution.
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub cost_usd: Decimal,
        /// Price table version of `cost_usd`.
        pub pricing_version: String,
        /// Store at or over the soft cap after this write.
        pub over_soft_cap: bool,
        /// (v2) The contributing turn.
        pub turn: Option<TurnId>,
        /// (v2) The turn's wall time.
        pub latency_ms: f64,
        /// (v2) The verdict applied, for `eval_id` idempotence.
        pub eval_id: Option<EvalId>,
        /// (v2) The verdict's confidence.
        pub score_confidence: Option<f64>,
        /// (v2) The earlier score of the same turn this write rolls back.
        pub replaces_score: Option<f64>,
        /// (v2) The features, present when `was_new_fingerprint`.
        pub features: Option<StructuralFeatures>,
        /// (v2) Seed 001 `workload_id`.
        pub workload: Option<String>,
        /// (v3) A hybrid fingerprint's embedding, present when
        /// `was_new_fingerprint`: the request's vector travels in the log,
        /// so rebuilding the store never runs the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub embedding: Option<QueryEmbedding>,
    }
}

payload! {
    /// `pattern.recorded` schema v2 (before `embedding`). Never written any
    /// more; read and upcast to v3. As v3 without `embedding`: one write to a `(fingerprint, model)`
    /// outcome accumulator — a session's contribution at `session.ended`
    /// (`sample_size_after = before + 1`) or a score-only update from
    /// `eval.completed` (`before == after`).
    ///
    /// v1 was seed 001 §10.1's shape exactly; v2 adds what a projection needs
    /// to fold the write without consulting anything but the log: the turn,
    /// its latency, the verdict's id and confidence, the score it replaces,
    /// and the fingerprint's features when it is new.
    pub struct PatternRecordedV2 {
        /// The fingerprint (derived from its structural signature in v1).
        pub fingerprint_id: FingerprintId,
        /// Structural or hybrid.
        pub fingerprint_kind: FingerprintKind,
        /// The model the turn was routed to.
        pub primary_model: String,
        /// Outcome sample size before this write.
        pub sample_size_before: u64,
        /// Outcome sample size after this write.
        pub sample_size_after: u64,
        /// True on the fingerprint's first sighting.
        pub was_new_fingerprint: bool,
        /// This contribution's score; `None` if no verdict yet.
        pub success_score: Option<f64>,
        /// This session's cost contribution.
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub cost_usd: Decimal,
        /// Price table version of `cost_usd`.
        pub pricing_version: String,
        /// Store at or over the soft cap after this write.
        pub over_soft_cap: bool,
        /// (v2) The contributing turn.
        pub turn: Option<TurnId>,
        /// (v2) The turn's wall time.
        pub latency_ms: f64,
        /// (v2) The verdict applied, for `eval_id` idempotence.
        pub eval_id: Option<EvalId>,
        /// (v2) The verdict's confidence.
        pub score_confidence: Option<f64>,
        /// (v2) The earlier score of the same turn this write rolls back.
        pub replaces_score: Option<f64>,
        /// (v2) The features, present when `was_new_fingerprint`.
        pub features: Option<StructuralFeatures>,
        /// (v2) Seed 001 `workload_id`.
        pub workload: Option<String>,
    }
}

payload! {
    /// `pattern.recorded` schema v1: seed 001 §10.1 verbatim (money as a
    /// Decimal string). Never written any more; read and upcast to v2.
    pub struct PatternRecordedV1 {
        /// See [`PatternRecorded::fingerprint_id`].
        pub fingerprint_id: FingerprintId,
        /// See [`PatternRecorded::fingerprint_kind`].
        pub fingerprint_kind: FingerprintKind,
        /// See [`PatternRecorded::primary_model`].
        pub primary_model: String,
        /// See [`PatternRecorded::sample_size_before`].
        pub sample_size_before: u64,
        /// See [`PatternRecorded::sample_size_after`].
        pub sample_size_after: u64,
        /// See [`PatternRecorded::was_new_fingerprint`].
        pub was_new_fingerprint: bool,
        /// See [`PatternRecorded::success_score`].
        pub success_score: Option<f64>,
        /// See [`PatternRecorded::cost_usd`].
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub cost_usd: Decimal,
        /// See [`PatternRecorded::pricing_version`].
        pub pricing_version: String,
        /// See [`PatternRecorded::over_soft_cap`].
        pub over_soft_cap: bool,
    }
}

impl From<PatternRecordedV1> for PatternRecorded {
    fn from(v1: PatternRecordedV1) -> Self {
        PatternRecorded {
            fingerprint_id: v1.fingerprint_id,
            fingerprint_kind: v1.fingerprint_kind,
            primary_model: v1.primary_model,
            sample_size_before: v1.sample_size_before,
            sample_size_after: v1.sample_size_after,
            was_new_fingerprint: v1.was_new_fingerprint,
            success_score: v1.success_score,
            cost_usd: v1.cost_usd,
            pricing_version: v1.pricing_version,
            over_soft_cap: v1.over_soft_cap,
            turn: None,
            latency_ms: 0.0,
            eval_id: None,
            score_confidence: None,
            replaces_score: None,
            features: None,
            workload: None,
            embedding: None,
        }
    }
}

impl From<PatternRecordedV2> for PatternRecorded {
    fn from(v2: PatternRecordedV2) -> Self {
        PatternRecorded {
            fingerprint_id: v2.fingerprint_id,
            fingerprint_kind: v2.fingerprint_kind,
            primary_model: v2.primary_model,
            sample_size_before: v2.sample_size_before,
            sample_size_after: v2.sample_size_after,
            was_new_fingerprint: v2.was_new_fingerprint,
            success_score: v2.success_score,
            cost_usd: v2.cost_usd,
            pricing_version: v2.pricing_version,
            over_soft_cap: v2.over_soft_cap,
            turn: v2.turn,
            latency_ms: v2.latency_ms,
            eval_id: v2.eval_id,
            score_confidence: v2.score_confidence,
            replaces_score: v2.replaces_score,
            features: v2.features,
            workload: v2.workload,
            embedding: None,
        }
    }
}

payload! {
    /// `pattern.matched`: routing slot 4 won the turn (seed 001 §10.2).
    pub struct PatternMatched {
        /// The turn's fingerprint.
        pub fingerprint_id: FingerprintId,
        /// Structural or hybrid.
        pub fingerprint_kind: FingerprintKind,
        /// Mirrors `route.decided.chosen_model`.
        pub chosen_model: String,
        /// (top − runner-up) / top.
        pub confidence: f64,
        /// Samples backing the chosen model.
        pub sample_size: u64,
        /// Neighbours found (≤ K).
        pub k_cluster_size: u32,
        /// Distinct models scored.
        pub alternatives_count: u32,
    }
}

closed_enum! {
    /// Why outcomes were evicted (seed 001 §10.3).
    pub enum EvictionTrigger {
        /// Soft cap reached: a signal, nothing removed.
        SoftCapSignal => "soft_cap_signal",
        /// Hard cap exceeded: oldest rows removed.
        HardCapEvict => "hard_cap_evict",
        /// Rows older than `max_age_days` trimmed.
        AgeTrim => "age_trim",
        /// The user cleared the store.
        ManualClear => "manual_clear",
    }
}

payload! {
    /// One evicted `(fingerprint, model)` outcome row.
    pub struct EvictedOutcome {
        /// The fingerprint.
        pub fingerprint_id: FingerprintId,
        /// The model.
        pub primary_model: String,
    }
}

payload! {
    /// `pattern.evicted`: outcomes removed (or a soft-cap signal). The
    /// pattern-store actor decides; the projection folds `evicted`.
    pub struct PatternEvicted {
        /// Why.
        pub trigger: EvictionTrigger,
        /// Fingerprint rows before.
        pub fingerprints_before: u64,
        /// Fingerprint rows after.
        pub fingerprints_after: u64,
        /// Outcome rows before.
        pub outcomes_before: u64,
        /// Outcome rows after.
        pub outcomes_after: u64,
        /// Outcomes removed; 0 for a soft-cap signal.
        pub entries_evicted: u64,
        /// Age of the oldest evicted row, for age trims and hard-cap evictions.
        pub oldest_evicted_age_days: Option<f64>,
        /// Exactly which rows went, so a rebuild removes the same ones.
        pub evicted: Vec<EvictedOutcome>,
    }
}

payload! {
    /// `pattern.reembedded`: a hybrid fingerprint's request embedded again by
    /// the embedding model the runtime now runs (the configured model
    /// changed). The vector travels in the log, so rebuilding the store
    /// still never runs a model; the fingerprint keeps its id and outcomes,
    /// and its vector becomes this one (the old one is never compared with
    /// the new model's queries). Derived by the router, once per
    /// fingerprint and model.
    pub struct PatternReembedded {
        /// The fingerprint.
        pub fingerprint_id: FingerprintId,
        /// The turn whose request was embedded (the one that first recorded
        /// the fingerprint).
        pub turn: Option<TurnId>,
        /// The new vector and the model that made it.
        pub embedding: QueryEmbedding,
    }
}
