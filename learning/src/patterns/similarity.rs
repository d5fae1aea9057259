//! Fingerprint similarity, the reference way (seed 001 §5.3 and §16.5):
//! plain set arithmetic over the features as written, `f64` throughout.
//!
//! These functions define the answer. The K-NN index ([`super::knn`])
//! computes the same numbers faster (interned bitsets, contiguous `f32`
//! vectors) and is tested against them; the benchmark's exact-scan baseline
//! is a scan with these functions.

use engram_events::payloads::StructuralFeatures;

use super::fingerprint::{Fingerprint, Stage};

/// Weight of the intent tags in the structural score.
pub const W_INTENT: f64 = 0.30;
/// Weight of the file extensions.
pub const W_EXTENSIONS: f64 = 0.20;
/// Weight of the tool names.
pub const W_TOOLS: f64 = 0.15;
/// Weight of the top-level directories.
pub const W_BUCKETS: f64 = 0.10;
/// Weight of the side-effect classes.
pub const W_SIDE_EFFECTS: f64 = 0.10;
/// Weight of an equal input-token bucket.
pub const W_TOKENS: f64 = 0.10;
/// Weight of an equal `has_images`.
pub const W_IMAGES: f64 = 0.05;
/// Weight of "same workload" when both sides name one (seed 001 §5.3: the
/// near-keyed partition).
pub const WORKLOAD_BLEND: f64 = 0.85;
/// Default weight of the cosine term in a v2 hybrid score (§16.5).
pub const DEFAULT_ALPHA: f64 = 0.6;
/// The weights of the fields known at route time (intent tags, extensions,
/// token bucket, images): the divisor that renormalises a route-time score
/// to `[0, 1]` once the run-time fields are skipped.
pub const W_ROUTE: f64 = W_INTENT + W_EXTENSIONS + W_TOKENS + W_IMAGES;

/// Jaccard overlap of two sorted, de-duplicated slices; two empty sets
/// match (0/0 → 1), one empty side scores 0.
pub fn jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    jaccard_of_counts(inter, a.len(), b.len())
}

/// Jaccard from the intersection and the two set sizes — the one formula
/// both the reference and the bitset index use, so they agree bit for bit.
#[inline]
pub fn jaccard_of_counts(inter: usize, a: usize, b: usize) -> f64 {
    let union = a + b - inter;
    if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    }
}

/// The v1 weighted-Jaccard score of two *normalized* feature sets (§5.3).
pub fn structural(a: &StructuralFeatures, b: &StructuralFeatures) -> f64 {
    structural_at(a, b, Stage::Recorded)
}

/// The structural score at a stage: [`Stage::Recorded`] is seed 001 §5.3
/// as written; [`Stage::Route`] skips the fields a turn knows only once it
/// ran (tools, path buckets, side effects) and divides by the weight of the
/// rest ([`W_ROUTE`]), so a route-time query scores a recorded row of its
/// own kind 1.0 whatever that row's model went on to run.
pub fn structural_at(a: &StructuralFeatures, b: &StructuralFeatures, stage: Stage) -> f64 {
    if stage == Stage::Route {
        return combine_route(
            [jaccard(&a.intent_tags, &b.intent_tags), jaccard(&a.file_extensions, &b.file_extensions)],
            a.estimated_input_tokens_bucket == b.estimated_input_tokens_bucket,
            a.has_images == b.has_images,
        );
    }
    combine_structural(
        [
            jaccard(&a.intent_tags, &b.intent_tags),
            jaccard(&a.file_extensions, &b.file_extensions),
            jaccard(&a.tool_names, &b.tool_names),
            jaccard(&a.file_path_buckets, &b.file_path_buckets),
            jaccard(&a.side_effect_classes, &b.side_effect_classes),
        ],
        a.estimated_input_tokens_bucket == b.estimated_input_tokens_bucket,
        a.has_images == b.has_images,
    )
}

/// The §5.3 weighted sum, from the five set overlaps (intent tags,
/// extensions, tools, buckets, side effects) and the two equalities.
#[inline]
pub fn combine_structural(sets: [f64; 5], same_tokens: bool, same_images: bool) -> f64 {
    W_INTENT * sets[0]
        + W_EXTENSIONS * sets[1]
        + W_TOOLS * sets[2]
        + W_BUCKETS * sets[3]
        + W_SIDE_EFFECTS * sets[4]
        + if same_tokens { W_TOKENS } else { 0.0 }
        + if same_images { W_IMAGES } else { 0.0 }
}

/// The route-time weighted sum, from the two set overlaps known before
/// planning (intent tags, extensions) and the two equalities, renormalised
/// by [`W_ROUTE`]. Summed in the same order as [`combine_structural`] so
/// the K-NN index reproduces it bit for bit.
#[inline]
pub fn combine_route(sets: [f64; 2], same_tokens: bool, same_images: bool) -> f64 {
    (W_INTENT * sets[0]
        + W_EXTENSIONS * sets[1]
        + if same_tokens { W_TOKENS } else { 0.0 }
        + if same_images { W_IMAGES } else { 0.0 })
        / W_ROUTE
}

/// The stage two fingerprints can be compared at: [`Stage::Route`] when
/// either side is a route-time query.
#[inline]
pub fn common_stage(a: Stage, b: Stage) -> Stage {
    if a == Stage::Route || b == Stage::Route {
        Stage::Route
    } else {
        Stage::Recorded
    }
}

/// Cosine of two vectors of equal length (a dot product: providers
/// L2-normalise). `None` when the lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    (a.len() == b.len()).then(|| a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum())
}

/// The v2 blend: `alpha · cosine + (1 − alpha) · structural`.
#[inline]
pub fn blend(alpha: f64, cosine: f64, structural: f64) -> f64 {
    alpha * cosine + (1.0 - alpha) * structural
}

/// The workload partition on top of a base score (§5.3, §16.5.4): applied
/// only when both sides name a workload.
#[inline]
pub fn with_workload(same_workload: Option<bool>, base: f64) -> f64 {
    match same_workload {
        None => base,
        Some(same) => WORKLOAD_BLEND * if same { 1.0 } else { 0.0 } + (1.0 - WORKLOAD_BLEND) * base,
    }
}

/// The full similarity of two fingerprints: structural (at their common
/// [`Stage`]), blended with the cosine when both carry an embedding of the
/// same provider and dimension (otherwise the structural score alone — the
/// mixed-version fallback), and the workload partition on top.
pub fn similarity(a: &Fingerprint, b: &Fingerprint, alpha: f64) -> f64 {
    let s = structural_at(&a.features, &b.features, common_stage(a.stage, b.stage));
    let base = match (&a.embedding, &b.embedding) {
        (Some(x), Some(y)) if x.comparable(y) => blend(alpha, cosine(&x.vector, &y.vector).unwrap_or(0.0), s),
        _ => s,
    };
    let same = match (&a.workload, &b.workload) {
        (Some(x), Some(y)) => Some(x == y),
        _ => None,
    };
    with_workload(same, base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::fingerprint::Embedding;
    use engram_events::payloads::SideEffectClass;

    fn fp(tags: &[&str], ext: &[&str]) -> Fingerprint {
        Fingerprint::structural(StructuralFeatures {
            intent_tags: tags.iter().map(|s| s.to_string()).collect(),
            file_extensions: ext.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
    }

    #[test]
    fn weights_sum_to_one() {
        let sum = W_INTENT + W_EXTENSIONS + W_TOOLS + W_BUCKETS + W_SIDE_EFFECTS + W_TOKENS + W_IMAGES;
        assert!((sum - 1.0).abs() < 1e-12);
    }

    #[test]
    fn jaccard_conventions() {
        let e: [&str; 0] = [];
        assert_eq!(jaccard(&e, &e), 1.0);
        assert_eq!(jaccard(&["a"], &e), 0.0);
        assert_eq!(jaccard(&["a", "b"], &["b", "c"]), 1.0 / 3.0);
        assert_eq!(jaccard(&["a", "b"], &["a", "b"]), 1.0);
    }

    #[test]
    fn identical_features_score_one_and_empty_features_match() {
        let a = fp(&["debug"], &[".py"]);
        assert!((similarity(&a, &a, DEFAULT_ALPHA) - 1.0).abs() < 1e-12);
        // Two empty fingerprints: every set is 0/0 → 1 and the equalities hold.
        let e = Fingerprint::structural(StructuralFeatures::default());
        assert!((similarity(&e, &e, DEFAULT_ALPHA) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn weighting_follows_section_5_3() {
        // Same everything but the intent tags (disjoint): lose exactly 0.30.
        let a = fp(&["debug"], &[".py"]);
        let b = fp(&["doc"], &[".py"]);
        assert!((similarity(&a, &b, DEFAULT_ALPHA) - 0.70).abs() < 1e-12);
        // Disjoint extensions instead: lose 0.20.
        let c = fp(&["debug"], &[".rs"]);
        assert!((similarity(&a, &c, DEFAULT_ALPHA) - 0.80).abs() < 1e-12);
        // Side effects half overlapping: lose 0.10 · (1 − 1/3).
        let mut d = a.clone();
        d.features.side_effect_classes = vec![SideEffectClass::Read, SideEffectClass::Write];
        let mut e = a.clone();
        e.features.side_effect_classes = vec![SideEffectClass::Write, SideEffectClass::Network];
        assert!((similarity(&d, &e, DEFAULT_ALPHA) - (1.0 - 0.10 * (2.0 / 3.0))).abs() < 1e-12);
        // Images and token bucket.
        let mut f = a.clone();
        f.features.has_images = true;
        f.features.estimated_input_tokens_bucket = 2;
        assert!((similarity(&a, &f, DEFAULT_ALPHA) - 0.85).abs() < 1e-12);
    }

    #[test]
    fn workload_partition() {
        let a = fp(&["debug"], &[".py"]).with_workload(Some("w1".into()));
        let b = fp(&["debug"], &[".py"]).with_workload(Some("w2".into()));
        let c = fp(&[], &[]).with_workload(Some("w1".into()));
        // Same structure, different workloads: only the 0.15 share survives.
        assert!((similarity(&a, &b, DEFAULT_ALPHA) - 0.15).abs() < 1e-12);
        // Same workload, different structure: at least 0.85.
        let s = structural(&a.features, &c.features);
        assert!((similarity(&a, &c, DEFAULT_ALPHA) - (0.85 + 0.15 * s)).abs() < 1e-12);
        // One side without a workload: plain v1.
        let d = fp(&["debug"], &[".py"]);
        assert!((similarity(&a, &d, DEFAULT_ALPHA) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn cosine_basics() {
        assert_eq!(cosine(&[1.0, 0.0, 0.0], &[1.0, 0.0, 0.0]), Some(1.0));
        assert_eq!(cosine(&[1.0, 0.0, 0.0], &[0.0, 1.0, 0.0]), Some(0.0));
        assert_eq!(cosine(&[1.0, 0.0, 0.0], &[-1.0, 0.0, 0.0]), Some(-1.0));
        assert_eq!(cosine(&[1.0, 0.0], &[1.0, 0.0, 0.0]), None);
        let n = (0.5f32).sqrt();
        assert!((cosine(&[n, n], &[n, n]).unwrap() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn blend_numbers() {
        assert!((blend(0.6, 0.8, 0.4) - 0.64).abs() < 1e-12);
        assert_eq!(blend(0.0, 0.8, 0.4), 0.4);
        assert_eq!(blend(1.0, 0.8, 0.4), 0.8);
        // Same workload, cosine 0 and Jaccard 0: still ≥ 0.85.
        assert!(with_workload(Some(true), blend(0.6, 0.0, 0.0)) >= WORKLOAD_BLEND);
    }

    #[test]
    fn route_time_skips_run_time_fields_and_renormalises() {
        assert!((W_ROUTE - 0.65).abs() < 1e-12);
        // One kind of request, recorded after two models ran different
        // tools: a full comparison tells them apart, a route-time query
        // (which cannot know the tools) scores both 1.0.
        let mut small = fp(&["time"], &[]);
        small.features.tool_names = vec!["clock".into()];
        small.features.side_effect_classes = vec![SideEffectClass::Read];
        let mut big = fp(&["time"], &[]);
        big.features.tool_names = vec!["shell".into()];
        big.features.file_path_buckets = vec!["~".into()];
        big.features.side_effect_classes = vec![SideEffectClass::Execute];
        assert!((similarity(&small, &big, DEFAULT_ALPHA) - 0.65).abs() < 1e-12);
        let query = fp(&["time"], &[]).at_route();
        assert_eq!(similarity(&query, &small, DEFAULT_ALPHA), 1.0);
        assert_eq!(similarity(&query, &big, DEFAULT_ALPHA), 1.0);
        // Symmetric, and whatever the query's own run-time fields hold.
        assert_eq!(similarity(&big, &query, DEFAULT_ALPHA), 1.0);
        let mut noisy = query.clone();
        noisy.features.tool_names = vec!["other".into()];
        assert_eq!(similarity(&noisy, &small, DEFAULT_ALPHA), 1.0);
        // The known fields keep their relative weights: disjoint intent
        // tags lose 0.30 / 0.65, disjoint extensions 0.20 / 0.65.
        let other = fp(&["weather"], &[]).at_route();
        assert!((similarity(&other, &small, DEFAULT_ALPHA) - 0.35 / 0.65).abs() < 1e-12);
        let ext = fp(&["time"], &[".txt"]).at_route();
        assert!((similarity(&ext, &small, DEFAULT_ALPHA) - 0.45 / 0.65).abs() < 1e-12);
        // The identity ignores the stage.
        assert_eq!(query.id(), fp(&["time"], &[]).id());
    }

    fn emb(provider: &str, v: &[f32]) -> Option<Embedding> {
        Some(Embedding::new(provider, v.to_vec()))
    }

    #[test]
    fn mixed_version_and_mismatch_fall_back_to_structural() {
        let mut a = fp(&["debug"], &[".py"]);
        let mut b = fp(&["doc"], &[".py"]);
        let s = structural(&a.features, &b.features);
        a.embedding = emb("local:minilm", &[1.0, 0.0]);
        // b has no embedding: structural only, whatever alpha.
        assert_eq!(similarity(&a, &b, 0.6), s);
        assert_eq!(similarity(&a, &b, 1.0), s);
        // Different dimension: structural.
        b.embedding = emb("local:minilm", &[1.0, 0.0, 0.0]);
        assert_eq!(similarity(&a, &b, 0.6), s);
        // Different provider, same dimension: structural (never compare
        // one model's vectors with another's).
        b.embedding = emb("openai:small", &[1.0, 0.0]);
        assert_eq!(similarity(&a, &b, 0.6), s);
        // Same provider: blended.
        b.embedding = emb("local:minilm", &[0.0, 1.0]);
        assert!((similarity(&a, &b, 0.6) - 0.4 * s).abs() < 1e-12);
    }
}
