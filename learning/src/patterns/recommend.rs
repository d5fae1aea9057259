//! Turning a K-cluster into a recommendation (seed 001 §8, routing §5.5).
//!
//! For each model M in the cluster:
//!
//! * `success(M)` — Σ(success_mean · sample_size) / Σ sample_size over M's
//!   rows that have a score (rows without one still count toward the sample
//!   size);
//! * `avg_cost(M)` — the mean of the rows' average session cost;
//! * `efficiency(M)` — `(max_cost − avg_cost(M)) / (max_cost − min_cost)`
//!   across the cluster's models, 0 when all costs are equal;
//! * `score(M) = (1 − cost_weight) · success(M) + cost_weight · efficiency(M)`.
//!
//! The best score wins with confidence `(best − runner_up) / best` (1.0
//! when the cluster holds one model), gated by `min_confidence` and by
//! `min_sample_size` on Σ sample_size of the winner's rows.

use std::collections::BTreeMap;

use engram_events::payloads::ModelOption;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::outcome::OutcomeRow;

/// The knobs of a recommendation (the `[pattern]` config section).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PatternConfig {
    /// Weight of cost efficiency against success.
    pub cost_weight: f64,
    /// Smallest confidence gap that recommends.
    pub min_confidence: f64,
    /// Smallest Σ sample_size behind the winner that recommends.
    pub min_sample_size: u64,
    /// Verdicts less confident than this are recorded but not folded into
    /// success means.
    pub min_eval_confidence: f64,
    /// Cluster size, over outcome rows.
    pub k: usize,
    /// Weight of the cosine term for hybrid fingerprints.
    pub alpha: f64,
    /// For a hybrid query, the least blended similarity a row needs to be
    /// in the cluster at all: with few fingerprints the K nearest rows are
    /// every row, and "what did best on similar turns" must not become
    /// "what did best on any turn". Structural queries are unaffected
    /// (seed 001 §8 as written).
    pub min_hybrid_similarity: f64,
    /// The least cosine between two requests for one turn to join the
    /// hybrid fingerprint the other founded (the same request reworded):
    /// below it, a turn founds a fingerprint of its own. (−1: every turn of
    /// a family joins its first fingerprint — the design before meaning.)
    pub same_request: f64,
    /// The least cosine between two requests for one to be in the other's
    /// neighbourhood of meaning: a hybrid query's cluster holds only rows
    /// whose request is at it, so two kinds of request of one structure are
    /// two neighbourhoods, each with its own evidence, confidence and
    /// exploration. (−1: no such gate.)
    pub same_kind: f64,
}

impl Default for PatternConfig {
    fn default() -> Self {
        PatternConfig {
            cost_weight: 0.05,
            min_confidence: 0.05,
            min_sample_size: 5,
            min_eval_confidence: 0.5,
            k: 10,
            alpha: super::similarity::DEFAULT_ALPHA,
            min_hybrid_similarity: 0.5,
            same_request: crate::embedder::EmbeddingModel::default().spec().calibration.same_request,
            same_kind: crate::embedder::EmbeddingModel::default().spec().calibration.same_kind,
        }
    }
}

/// What the router gets back (seed 001 `PatternRecommendation`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The model to route to; `None` when the evidence is too thin.
    pub chosen_model: Option<String>,
    /// `(best − runner_up) / best`.
    pub confidence: f64,
    /// Samples behind the best model (whether chosen or gated off).
    pub sample_size: u64,
    /// Every model of the cluster, best first — even when nothing is chosen,
    /// so the router can apply its own availability checks.
    pub alternatives: Vec<ModelOption>,
    /// Outcome rows in the cluster (≤ K).
    pub k_cluster_size: usize,
    /// Lookup plus scoring time.
    pub elapsed_ms: f64,
}

impl Recommendation {
    /// Nothing to recommend.
    pub fn empty() -> Self {
        Recommendation {
            chosen_model: None,
            confidence: 0.0,
            sample_size: 0,
            alternatives: Vec::new(),
            k_cluster_size: 0,
            elapsed_ms: 0.0,
        }
    }
}

/// Scores a cluster: `(model, row)` for each neighbouring outcome.
pub fn score_cluster<'a>(
    cluster: impl IntoIterator<Item = (&'a str, &'a OutcomeRow)>,
    cfg: &PatternConfig,
) -> Recommendation {
    #[derive(Default)]
    struct Acc {
        samples: u64,
        weighted_success: f64,
        scored_samples: u64,
        cost_sum: Decimal,
        rows: u32,
    }
    let mut by_model: BTreeMap<&str, Acc> = BTreeMap::new();
    let mut k = 0;
    for (model, row) in cluster {
        k += 1;
        let a = by_model.entry(model).or_default();
        a.samples += row.sample_size;
        if let Some(mean) = row.success_mean() {
            a.weighted_success += mean * row.sample_size as f64;
            a.scored_samples += row.sample_size;
        }
        a.cost_sum = a.cost_sum.saturating_add(row.avg_cost_usd());
        a.rows += 1;
    }
    if by_model.is_empty() {
        return Recommendation::empty();
    }
    let costs: Vec<Decimal> = by_model.values().map(|a| a.cost_sum / Decimal::from(a.rows)).collect();
    let max = costs.iter().copied().max().unwrap_or_default();
    let min = costs.iter().copied().min().unwrap_or_default();
    let mut options: Vec<ModelOption> = by_model
        .iter()
        .zip(&costs)
        .map(|((model, a), cost)| {
            let success = if a.scored_samples > 0 { a.weighted_success / a.scored_samples as f64 } else { 0.0 };
            let efficiency = if max == min { 0.0 } else { ((max - *cost) / (max - min)).to_f64().unwrap_or(0.0) };
            ModelOption {
                model: (*model).to_owned(),
                score: (1.0 - cfg.cost_weight) * success + cfg.cost_weight * efficiency,
                sample_size: a.samples,
                avg_cost_usd: *cost,
                success_score_mean: success,
            }
        })
        .collect();
    // Best first; ties by model id so the order never depends on the scan.
    options.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.model.cmp(&b.model)));
    let best = &options[0];
    let confidence = match options.get(1) {
        None => 1.0,
        Some(runner_up) if best.score > 0.0 => (best.score - runner_up.score) / best.score,
        Some(_) => 0.0,
    };
    let chosen =
        (confidence >= cfg.min_confidence && best.sample_size >= cfg.min_sample_size).then(|| best.model.clone());
    Recommendation {
        chosen_model: chosen,
        confidence,
        sample_size: best.sample_size,
        alternatives: options,
        k_cluster_size: k,
        elapsed_ms: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    /// A row with `n` sessions, the given mean score (or none) and cost.
    fn row(n: u64, score: Option<f64>, cost: Decimal) -> OutcomeRow {
        let mut r = OutcomeRow::new(Utc.timestamp_opt(0, 0).unwrap());
        for _ in 0..n {
            r.contribute(cost, 1.0, "p", Utc.timestamp_opt(1, 0).unwrap());
            if let Some(s) = score {
                r.add_score(s);
            }
        }
        r
    }

    fn cfg() -> PatternConfig {
        PatternConfig { min_sample_size: 1, ..Default::default() }
    }

    #[test]
    fn empty_cluster_recommends_nothing() {
        let r = score_cluster(Vec::<(&str, &OutcomeRow)>::new(), &cfg());
        assert_eq!(r, Recommendation::empty());
    }

    #[test]
    fn one_model_has_confidence_one() {
        let a = row(5, Some(0.4), Decimal::ONE);
        let r = score_cluster([("m", &a)], &PatternConfig::default());
        assert_eq!(r.chosen_model.as_deref(), Some("m"));
        assert_eq!(r.confidence, 1.0);
        assert_eq!(r.sample_size, 5);
    }

    #[test]
    fn success_is_weighted_by_sample_size() {
        // 50 sessions at 0.9 vs a one-shot at 0.1, same model: (45 + 0.1)/51.
        let big = row(50, Some(0.9), Decimal::ONE);
        let one = row(1, Some(0.1), Decimal::ONE);
        let r = score_cluster([("m", &big), ("m", &one)], &cfg());
        assert!((r.alternatives[0].success_score_mean - (50.0 * 0.9 + 0.1) / 51.0).abs() < 1e-12);
        assert_eq!(r.alternatives[0].sample_size, 51);
        // Unscored rows count toward samples, not toward the mean.
        let unscored = row(10, None, Decimal::ONE);
        let r = score_cluster([("m", &big), ("m", &unscored)], &cfg());
        assert!((r.alternatives[0].success_score_mean - 0.9).abs() < 1e-9);
        assert_eq!(r.alternatives[0].sample_size, 60);
    }

    #[test]
    fn cost_weight_edge_cases() {
        let good_dear = row(5, Some(0.9), Decimal::new(10, 0));
        let poor_cheap = row(5, Some(0.5), Decimal::new(1, 0));
        // cost_weight 0: pure quality, whatever the cost.
        let c0 = PatternConfig { cost_weight: 0.0, ..cfg() };
        let r = score_cluster([("dear", &good_dear), ("cheap", &poor_cheap)], &c0);
        assert_eq!(r.chosen_model.as_deref(), Some("dear"));
        assert!((r.alternatives[0].score - 0.9).abs() < 1e-12);
        // cost_weight 1: pure cost efficiency.
        let c1 = PatternConfig { cost_weight: 1.0, ..cfg() };
        let r = score_cluster([("dear", &good_dear), ("cheap", &poor_cheap)], &c1);
        assert_eq!(r.chosen_model.as_deref(), Some("cheap"));
        assert_eq!(r.alternatives[0].score, 1.0);
        assert_eq!(r.alternatives[1].score, 0.0);
        // Default 0.05: 0.95·0.9 + 0 = 0.855 vs 0.95·0.5 + 0.05 = 0.525.
        let r = score_cluster([("dear", &good_dear), ("cheap", &poor_cheap)], &PatternConfig::default());
        assert!((r.alternatives[0].score - 0.855).abs() < 1e-12);
        assert!((r.alternatives[1].score - 0.525).abs() < 1e-12);
        assert!((r.confidence - (0.855 - 0.525) / 0.855).abs() < 1e-12);
        // Identical costs: the efficiency term is zero for everyone.
        let a = row(5, Some(0.8), Decimal::ONE);
        let b = row(5, Some(0.6), Decimal::ONE);
        let r = score_cluster([("a", &a), ("b", &b)], &PatternConfig::default());
        assert!((r.alternatives[0].score - 0.95 * 0.8).abs() < 1e-12);
        assert!((r.alternatives[1].score - 0.95 * 0.6).abs() < 1e-12);
    }

    #[test]
    fn gates() {
        let a = row(3, Some(0.9), Decimal::ONE);
        let b = row(3, Some(0.88), Decimal::ONE);
        // Confidence (0.9 − 0.88)/0.9 ≈ 0.022 < 0.05: nothing chosen, but the
        // alternatives are all there.
        let r = score_cluster([("a", &a), ("b", &b)], &cfg());
        assert_eq!(r.chosen_model, None);
        assert_eq!(r.alternatives.len(), 2);
        assert_eq!(r.alternatives[0].model, "a");
        // Clear winner but 3 samples < min_sample_size 5.
        let c = row(3, Some(0.2), Decimal::ONE);
        let r = score_cluster([("a", &a), ("c", &c)], &PatternConfig::default());
        assert_eq!(r.chosen_model, None);
        assert_eq!(r.sample_size, 3);
        // Sample size is summed over the winner's rows: 3 + 3 ≥ 5.
        let a2 = row(3, Some(0.9), Decimal::ONE);
        let r = score_cluster([("a", &a), ("a", &a2), ("c", &c)], &PatternConfig::default());
        assert_eq!(r.chosen_model.as_deref(), Some("a"));
        assert_eq!(r.sample_size, 6);
        // All scores zero: confidence 0, nothing chosen.
        let z1 = row(5, Some(0.0), Decimal::ONE);
        let z2 = row(5, Some(0.0), Decimal::ONE);
        let r = score_cluster([("x", &z1), ("y", &z2)], &PatternConfig::default());
        assert_eq!((r.chosen_model, r.confidence), (None, 0.0));
    }
}
