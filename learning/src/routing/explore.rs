//! Exploration (part of slot 4 of the routing chain): while no candidate
//! has won in a cluster of similar turns against another with evidence, a
//! share of the turns nothing above decided goes to a candidate with too
//! few samples there, so the store learns what it would otherwise never
//! try (`docs/patterns.md`).

use engram_events::payloads::ModelOption;
use engram_events::TurnId;

use crate::patterns::{PatternConfig, Recommendation};

/// What exploration needs to know besides the store's answer.
pub struct Exploring<'a> {
    /// The models a turn may be routed to.
    pub candidates: &'a [String],
    /// Slot 5's model (never explored: it gets the other turns).
    pub default_model: &'a str,
    /// `[pattern] explore`: the share of open turns.
    pub share: f64,
    /// The store's knobs (`min_sample_size`).
    pub pattern: &'a PatternConfig,
}

/// The exploration rule (`docs/patterns.md`): `Some((candidate, its
/// samples in the cluster))` for a turn nothing above slot 4 decided, when
/// the store's choice `rec` is not contested (no model won there against
/// another with `min_sample_size` samples), a candidate other than the
/// default has fewer than `min_sample_size` samples among the cluster's
/// models and is not already losing there (success half a point under a
/// proven model's), and the turn's draw falls under the share — every
/// turn, when no proven model succeeds in the cluster. The fewest samples
/// first, ties in `candidates` order. A pure function of the turn id and
/// the store's answer, so a store rebuilt from the log reproduces every
/// choice (`actors/tests/routing.rs` re-derives them).
pub fn exploration(turn: TurnId, rec: &Recommendation, x: &Exploring<'_>) -> Option<(String, u64)> {
    let (alternatives, min) = (&rec.alternatives, x.pattern.min_sample_size);
    let contested = rec.chosen_model.is_some() && alternatives.iter().filter(|a| a.sample_size >= min).count() >= 2;
    if contested || x.share <= 0.0 || x.candidates.len() < 2 {
        return None;
    }
    // No model with enough evidence here succeeds (success under one
    // half): leaving them costs nothing in expectation, so every open turn
    // explores.
    let proven: Vec<&ModelOption> = alternatives.iter().filter(|a| a.sample_size >= min).collect();
    let share = if !proven.is_empty() && proven.iter().all(|a| a.success_score_mean < 0.5) { 1.0 } else { x.share };
    let samples = |m: &str| alternatives.iter().filter(|a| a.model == m).map(|a| a.sample_size).sum::<u64>();
    // A candidate whose samples here already lose to a proven model by
    // half the scale is not worth more of the user's turns.
    let best_proven = proven.iter().map(|a| a.success_score_mean).fold(f64::NEG_INFINITY, f64::max);
    let losing = |m: &str| {
        alternatives.iter().any(|a| a.model == m && a.sample_size > 0 && a.success_score_mean + 0.5 < best_proven)
    };
    let (model, n) = x
        .candidates
        .iter()
        .filter(|c| c.as_str() != x.default_model && !losing(c))
        .map(|c| (c, samples(c)))
        .filter(|(_, n)| *n < min)
        .min_by_key(|(_, n)| *n)?;
    // The turn id's bits, mixed (splitmix64), as a uniform draw.
    let mut h = (turn.0 .0 as u64) ^ ((turn.0 .0 >> 64) as u64);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    let draw = (h >> 11) as f64 / (1u64 << 53) as f64;
    (draw < share).then(|| (model.clone(), n))
}
