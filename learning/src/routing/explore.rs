//! Exploration (part of slot 4 of the routing chain): while no candidate
//! has won in a cluster of similar turns against another with evidence, a
//! share of the turns nothing above decided goes to a candidate with too
//! few samples there, so the store learns what it would otherwise never
//! try (`docs/patterns.md`).

use engram_events::payloads::ModelOption;
use engram_events::TurnId;

use crate::patterns::{PatternConfig, Recommendation};

/// A model succeeds in a cluster when its mean success is at least this
/// (half the scale); half the scale is also the margin by which a
/// candidate already loses to a proven model.
const SUCCEEDS: f64 = 0.5;

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
/// first, ties in `candidates` order. The default model is explored too
/// when the store's uncontested choice is another model that fails there:
/// a neighbourhood whose first turns all went to an explored model that
/// got them wrong would otherwise route every later turn to it, the
/// default never asked again. A pure function of the turn id and
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
    let fails = |a: &&ModelOption| a.success_score_mean < SUCCEEDS;
    let share = if !proven.is_empty() && proven.iter().all(fails) { 1.0 } else { x.share };
    // The default gets the turns nobody else takes — unless the store
    // takes them all for a model that fails here.
    let default_shut_out = rec
        .chosen_model
        .as_deref()
        .is_some_and(|m| m != x.default_model && proven.iter().any(|a| a.model == m && fails(a)));
    let samples = |m: &str| alternatives.iter().filter(|a| a.model == m).map(|a| a.sample_size).sum::<u64>();
    // A candidate whose samples here already lose to a proven model by
    // half the scale is not worth more of the user's turns.
    let best_proven = proven.iter().map(|a| a.success_score_mean).fold(f64::NEG_INFINITY, f64::max);
    let losing = |m: &str| {
        alternatives.iter().any(|a| a.model == m && a.sample_size > 0 && a.success_score_mean + SUCCEEDS < best_proven)
    };
    let (model, n) = x
        .candidates
        .iter()
        .filter(|c| (c.as_str() != x.default_model || default_shut_out) && !losing(c))
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

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;
    use ulid::Ulid;

    use super::*;

    fn option(model: &str, sample_size: u64, success: f64) -> ModelOption {
        ModelOption {
            model: model.into(),
            score: success,
            sample_size,
            avg_cost_usd: Decimal::ZERO,
            success_score_mean: success,
        }
    }

    /// The store's answer in a cluster holding only `big`'s evidence.
    fn alone(success: f64) -> Recommendation {
        Recommendation {
            chosen_model: Some("big".into()),
            confidence: 1.0,
            sample_size: 10,
            alternatives: vec![option("big", 10, success)],
            k_cluster_size: 10,
            elapsed_ms: 0.0,
        }
    }

    /// What 64 turns explore, `small` the default.
    fn explored(rec: &Recommendation) -> Vec<Option<String>> {
        let (candidates, pattern) = (["small".to_owned(), "big".to_owned()], PatternConfig::default());
        let x = Exploring { candidates: &candidates, default_model: "small", share: 0.25, pattern: &pattern };
        (0..64u128).map(|t| exploration(TurnId(Ulid(t << 80 | t)), rec, &x).map(|(m, _)| m)).collect()
    }

    /// A cluster whose first turns all went to an explored model that got
    /// them wrong: the store chooses that model (alone, confidence 1), and
    /// without the default explored again every later turn would go there.
    #[test]
    fn a_failing_choice_gives_the_default_every_open_turn() {
        assert!(explored(&alone(0.1)).iter().all(|m| m.as_deref() == Some("small")));
    }

    /// A succeeding choice keeps its turns: the default is not explored
    /// (the default gets the turns no slot takes, and here one does).
    #[test]
    fn a_succeeding_choice_is_not_explored_away() {
        assert!(explored(&alone(0.9)).iter().all(Option::is_none));
    }

    /// With no choice, a quarter of the turns (in expectation) go to the
    /// candidate without evidence, never to the default.
    #[test]
    fn with_no_choice_the_share_goes_to_the_other_candidate() {
        let none = Recommendation::empty();
        let got = explored(&none);
        assert!(got.iter().all(|m| m.as_deref() != Some("small")));
        let n = got.iter().filter(|m| m.is_some()).count();
        assert!((4..=28).contains(&n), "{n} of 64 explored");
    }
}
