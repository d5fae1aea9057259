//! Threshold calibration: a cosine threshold means something only for the
//! embedding model it was measured on (the seed's 0.95 / 0.88 were for
//! BGE-M3). Given pairs of requests known to want the same or different
//! executions, with their cosine, [`calibrate`] picks the lowest threshold
//! whose false-positive rate stays within a target, and reports the
//! precision and recall it gives — with the replay gate applied on top, as
//! the router does.

use serde::Serialize;

/// One labelled pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// Cosine of the two canonical texts.
    pub cosine: f64,
    /// Both wanted the same execution.
    pub same: bool,
    /// The replay gate lets the pair through.
    pub gate_ok: bool,
}

/// What a threshold gives on the pairs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Operating {
    /// The threshold.
    pub threshold: f64,
    /// Negatives at or above it (cosine alone) / negatives.
    pub fpr_cosine: f64,
    /// Negatives replayed with the gate too / negatives.
    pub fpr: f64,
    /// Correct replays / replays (with the gate).
    pub precision: f64,
    /// Positives replayed (with the gate) / positives.
    pub recall: f64,
}

/// The operating point of `threshold` on `pairs`.
pub fn evaluate(pairs: &[Pair], threshold: f64) -> Operating {
    let neg = pairs.iter().filter(|p| !p.same).count().max(1) as f64;
    let pos = pairs.iter().filter(|p| p.same).count().max(1) as f64;
    let above = |p: &&Pair| p.cosine >= threshold;
    let fp_cos = pairs.iter().filter(above).filter(|p| !p.same).count() as f64;
    let fp = pairs.iter().filter(above).filter(|p| !p.same && p.gate_ok).count() as f64;
    let tp = pairs.iter().filter(above).filter(|p| p.same && p.gate_ok).count() as f64;
    Operating {
        threshold,
        fpr_cosine: fp_cos / neg,
        fpr: fp / neg,
        precision: if tp + fp > 0.0 { tp / (tp + fp) } else { 1.0 },
        recall: tp / pos,
    }
}

/// The lowest threshold (on a 0.005 grid, within `[floor, 1]`) at which the
/// cosine alone keeps the false-positive rate ≤ `target_fpr` — the gate is
/// a second line, not a licence to lower the first.
pub fn calibrate(pairs: &[Pair], target_fpr: f64, floor: f64) -> Operating {
    let mut best = evaluate(pairs, 1.0);
    let mut t = 1.0;
    while t >= floor - 1e-9 {
        let op = evaluate(pairs, t);
        if op.fpr_cosine > target_fpr {
            break;
        }
        best = op;
        t = ((t - 0.005) * 1000.0).round() / 1000.0;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(cosine: f64, same: bool) -> Pair {
        Pair { cosine, same, gate_ok: true }
    }

    #[test]
    fn picks_the_lowest_threshold_within_the_target() {
        let pairs = vec![p(0.97, true), p(0.93, true), p(0.90, true), p(0.80, true), p(0.91, false), p(0.70, false)];
        // No false positive allowed: just above the 0.91 negative.
        let op = calibrate(&pairs, 0.0, 0.5);
        assert!((op.threshold - 0.915).abs() < 1e-9, "{op:?}");
        assert_eq!((op.fpr, op.precision), (0.0, 1.0));
        assert!((op.recall - 0.5).abs() < 1e-9);
        // Half the negatives allowed: down to just above 0.70.
        let op = calibrate(&pairs, 0.5, 0.5);
        assert!((op.threshold - 0.705).abs() < 1e-9, "{op:?}");
        assert_eq!(op.recall, 1.0);
        // The gate removes a false positive the cosine let through.
        let gated = vec![p(0.95, true), Pair { cosine: 0.96, same: false, gate_ok: false }];
        let op = evaluate(&gated, 0.9);
        assert_eq!((op.fpr_cosine, op.fpr, op.precision), (1.0, 0.0, 1.0));
    }
}
