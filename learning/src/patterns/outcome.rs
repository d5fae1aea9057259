//! The outcome accumulator: one row per `(fingerprint, model)` (seed 001 §4
//! `Outcome`, §5.4), folded from `pattern.recorded` events.
//!
//! * `sample_size` counts contributing sessions;
//! * cost is an exact integer sum of micro-dollars (Decimal at the API);
//! * latency is a Welford running mean (never rolled back);
//! * the success score is an exact fixed-point sum (nano-units) and count,
//!   so that re-evaluation can roll an old score back *exactly* (seed 001
//!   §10.4) — Welford's float recurrence cannot be inverted bit for bit.

use chrono::{DateTime, Utc};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};

/// Fixed-point scale of the score sum.
const SCORE_SCALE: f64 = 1e9;

/// One `(fingerprint, model)` accumulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutcomeRow {
    /// Sessions that contributed.
    pub sample_size: u64,
    /// Contributions with a score folded in.
    pub score_count: u64,
    /// Σ folded scores, in units of 1e-9.
    pub score_sum_nanos: i64,
    /// Σ session costs, in micro-dollars.
    pub cost_micros: i64,
    /// Welford mean of the contributions' latency.
    pub latency_mean_ms: f64,
    /// The most recent contributing pricing version.
    pub pricing_version_last: String,
    /// Time of the last write (drives eviction).
    pub last_updated: DateTime<Utc>,
}

impl OutcomeRow {
    /// An empty accumulator.
    pub fn new(at: DateTime<Utc>) -> Self {
        OutcomeRow {
            sample_size: 0,
            score_count: 0,
            score_sum_nanos: 0,
            cost_micros: 0,
            latency_mean_ms: 0.0,
            pricing_version_last: String::new(),
            last_updated: at,
        }
    }

    /// Folds one session's contribution (without its score).
    pub fn contribute(&mut self, cost: Decimal, latency_ms: f64, pricing_version: &str, at: DateTime<Utc>) {
        self.sample_size += 1;
        self.cost_micros = self.cost_micros.saturating_add(to_micros(cost));
        // Welford: the mean moves by the new sample's deviation over n.
        self.latency_mean_ms += (latency_ms - self.latency_mean_ms) / self.sample_size as f64;
        self.touch(pricing_version, at);
    }

    /// Records a write's time and pricing version.
    pub fn touch(&mut self, pricing_version: &str, at: DateTime<Utc>) {
        if !pricing_version.is_empty() {
            self.pricing_version_last = pricing_version.to_owned();
        }
        self.last_updated = self.last_updated.max(at);
    }

    /// Folds a score into the success mean.
    pub fn add_score(&mut self, score: f64) {
        self.score_count += 1;
        self.score_sum_nanos += score_nanos(score);
    }

    /// Takes a previously folded score out again, exactly.
    pub fn remove_score(&mut self, score: f64) {
        if self.score_count > 0 {
            self.score_count -= 1;
            self.score_sum_nanos -= score_nanos(score);
        }
    }

    /// Mean of the folded scores (`None` before the first).
    pub fn success_mean(&self) -> Option<f64> {
        (self.score_count > 0).then(|| self.score_sum_nanos as f64 / SCORE_SCALE / self.score_count as f64)
    }

    /// Mean session cost.
    pub fn avg_cost_usd(&self) -> Decimal {
        if self.sample_size == 0 {
            return Decimal::ZERO;
        }
        Decimal::new(self.cost_micros, 6) / Decimal::from(self.sample_size)
    }
}

/// A cost in whole micro-dollars, rounding half to even below a micro.
pub fn to_micros(cost: Decimal) -> i64 {
    let saturated = if cost.is_sign_negative() { i64::MIN } else { i64::MAX };
    cost.round_dp_with_strategy(6, RoundingStrategy::MidpointNearestEven)
        .checked_mul(Decimal::new(1_000_000, 0))
        .and_then(|scaled| scaled.to_i64())
        .unwrap_or(saturated)
}

/// A score in nano-units; scores are clamped to [0, 1] (NaN counts as 0).
pub fn score_nanos(score: f64) -> i64 {
    let s = if score.is_nan() { 0.0 } else { score.clamp(0.0, 1.0) };
    (s * SCORE_SCALE).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }

    #[test]
    fn costs_are_exact_micros() {
        let mut o = OutcomeRow::new(t(0));
        for _ in 0..3 {
            o.contribute(Decimal::new(1, 1), 10.0, "p1", t(1)); // 0.1 three times
        }
        assert_eq!(o.cost_micros, 300_000);
        assert_eq!(o.avg_cost_usd(), Decimal::new(1, 1));
        // Sub-micro parts round half to even.
        assert_eq!(to_micros(Decimal::new(12345625, 13)), 1); // 0.0000012345625 → 1 µ$
        assert_eq!(to_micros(Decimal::new(25, 7)), 2); // 0.0000025 → 2 (even)
        assert_eq!(to_micros(Decimal::new(35, 7)), 4); // 0.0000035 → 4 (even)
    }

    #[test]
    fn none_scores_count_samples_not_scores() {
        let mut o = OutcomeRow::new(t(0));
        o.contribute(Decimal::ONE, 100.0, "p1", t(1));
        o.contribute(Decimal::new(3, 0), 300.0, "p2", t(2));
        assert_eq!(o.sample_size, 2);
        assert_eq!(o.success_mean(), None);
        assert_eq!(o.avg_cost_usd(), Decimal::new(2, 0));
        assert_eq!(o.latency_mean_ms, 200.0);
        assert_eq!(o.pricing_version_last, "p2");
    }

    #[test]
    fn rollback_is_exact() {
        let mut a = OutcomeRow::new(t(0));
        let mut b = OutcomeRow::new(t(0));
        for s in [0.1, 0.7, 0.33] {
            a.add_score(s);
            b.add_score(s);
        }
        a.add_score(0.2);
        a.remove_score(0.2);
        a.add_score(0.9);
        b.add_score(0.9);
        assert_eq!(a, b);
    }

    proptest! {
        /// Welford's latency mean and the score mean match a naive mean.
        #[test]
        fn means_match_naive(xs in proptest::collection::vec((0.0f64..60_000.0, proptest::option::of(0.0f64..=1.0)), 1..200)) {
            let mut o = OutcomeRow::new(t(0));
            for (lat, score) in &xs {
                o.contribute(Decimal::ZERO, *lat, "p", t(1));
                if let Some(s) = score { o.add_score(*s); }
            }
            let naive = xs.iter().map(|(l, _)| l).sum::<f64>() / xs.len() as f64;
            prop_assert!((o.latency_mean_ms - naive).abs() <= 1e-9 * naive.max(1.0));
            let scores: Vec<f64> = xs.iter().filter_map(|(_, s)| *s).collect();
            match o.success_mean() {
                None => prop_assert!(scores.is_empty()),
                Some(m) => prop_assert!((m - scores.iter().sum::<f64>() / scores.len() as f64).abs() < 1e-8),
            }
        }
    }
}
