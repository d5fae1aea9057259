//! The recommendation corpus: a K-NN index over a given number of outcome
//! rows drawn by the [`Generator`], the same entries for the reference
//! exact scan, each row's accumulator, and fresh queries — with the
//! recommendation path (search, then score) and the scan to time, and the
//! recall of one against the other.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use engram::events::FingerprintId;
use engram::learning::patterns::knn::exact_k_nearest;
use engram::learning::patterns::recommend::score_cluster;
use engram::learning::patterns::{Fingerprint, KnnIndex, Neighbor, OutcomeRow, PatternConfig, Recommendation};

use super::generator::{epoch, Generator, Kind};
use super::vocabulary::MODELS;

/// Cluster size (outcome rows), as in [`PatternConfig::default`].
pub const K: usize = 10;
/// Weight of the cosine term, as in [`PatternConfig::default`].
pub const ALPHA: f64 = engram::learning::patterns::similarity::DEFAULT_ALPHA;

/// A K-NN index over `outcomes` outcome rows, the same entries for the
/// reference scan, the rows' accumulators and fresh queries.
pub struct Corpus {
    /// Structural or hybrid.
    pub kind: Kind,
    /// The index under test.
    pub index: KnnIndex,
    /// Every fingerprint with its models, in first-recorded order (the
    /// reference scan's input).
    pub entries: Vec<(FingerprintId, Fingerprint, Vec<Arc<str>>)>,
    /// The accumulator of each `(fingerprint, model)`.
    pub rows: HashMap<FingerprintId, Vec<(Arc<str>, OutcomeRow)>>,
    /// Fresh query fingerprints, drawn like the corpus.
    pub queries: Vec<Fingerprint>,
    /// The recommendation knobs (defaults: K = 10, alpha 0.6).
    pub config: PatternConfig,
}

impl Corpus {
    /// A corpus of exactly `outcomes` rows (about `outcomes / 3`
    /// fingerprints) of `kind`, and `queries` queries, from `seed`.
    pub fn build(outcomes: usize, kind: Kind, queries: usize, seed: u64) -> Corpus {
        let mut gen = Generator::new(seed);
        let models: Vec<Arc<str>> = MODELS.iter().map(|(m, _)| Arc::from(*m)).collect();
        let mut index = KnnIndex::default();
        let mut entries = Vec::with_capacity(outcomes / 3 + 1);
        let mut rows = HashMap::with_capacity(outcomes / 3 + 1);
        let mut seen = HashSet::new();
        let mut total = 0usize;
        let mut attempts = 0usize;
        while total < outcomes {
            attempts += 1;
            assert!(attempts < 100 * outcomes + 1_000, "the generator ran out of distinct fingerprints");
            let (fp, topic) = gen.fingerprint(kind);
            let id = fp.id();
            if !seen.insert(id) {
                continue; // a shape already recorded
            }
            let n = (2 + gen.rng().below(3)).min(outcomes - total);
            let mut fp_models = Vec::with_capacity(n);
            let mut fp_rows = Vec::with_capacity(n);
            for m in gen.models(topic, n) {
                index.insert(id, &fp, &models[m]);
                let mut row = OutcomeRow::new(epoch());
                let samples = 1 + gen.rng().below(12);
                for s in 0..samples {
                    let at = epoch() + chrono::Duration::minutes((total * 7 + s) as i64);
                    let cost = gen.cost(m);
                    let latency = 800.0 + 6_000.0 * gen.rng().unit();
                    row.contribute(cost, latency, "2025-01", at);
                    if gen.rng().chance(0.7) {
                        let score = gen.score(topic, m);
                        row.add_score(score);
                    }
                }
                fp_models.push(models[m].clone());
                fp_rows.push((models[m].clone(), row));
            }
            fp_models.sort();
            total += n;
            entries.push((id, fp, fp_models));
            rows.insert(id, fp_rows);
        }
        let queries = (0..queries).map(|_| gen.fingerprint(kind).0).collect();
        debug_assert_eq!(index.outcomes(), outcomes);
        Corpus { kind, index, entries, rows, queries, config: PatternConfig::default() }
    }

    /// Outcome rows.
    pub fn outcomes(&self) -> usize {
        self.index.outcomes()
    }

    /// Fingerprints.
    pub fn fingerprints(&self) -> usize {
        self.entries.len()
    }

    /// The accumulator of `(id, model)`.
    pub fn row(&self, id: FingerprintId, model: &str) -> Option<&OutcomeRow> {
        self.rows.get(&id)?.iter().find(|(m, _)| **m == *model).map(|(_, r)| r)
    }

    /// The index's K nearest outcome rows.
    pub fn search(&self, query: &Fingerprint) -> Vec<Neighbor> {
        self.index.search(query, self.config.k, self.config.alpha)
    }

    /// The cluster's recommendation (what `PatternOutcomes::recommend`
    /// does after the search).
    pub fn score(&self, cluster: &[Neighbor]) -> Recommendation {
        let rows = cluster.iter().filter_map(|n| Some((&*n.model, self.row(n.fingerprint, &n.model)?)));
        score_cluster(rows, &self.config)
    }

    /// The whole recommendation path: search, then score.
    pub fn recommend(&self, query: &Fingerprint) -> Recommendation {
        self.score(&self.search(query))
    }

    /// The reference scan's K nearest outcome rows.
    pub fn exact(&self, query: &Fingerprint) -> Vec<Neighbor> {
        exact_k_nearest(
            self.entries.iter().map(|(id, fp, m)| (*id, fp, m.as_slice())),
            query,
            self.config.k,
            self.config.alpha,
        )
    }
}

/// `|got ∩ want| / |want|` over `(fingerprint, model)` pairs (1 when both
/// are empty).
pub fn recall(got: &[Neighbor], want: &[Neighbor]) -> f64 {
    if want.is_empty() {
        return if got.is_empty() { 1.0 } else { 0.0 };
    }
    let want_keys: HashSet<(FingerprintId, &str)> = want.iter().map(|n| (n.fingerprint, &*n.model)).collect();
    let hit = got.iter().filter(|n| want_keys.contains(&(n.fingerprint, &*n.model))).count();
    hit as f64 / want.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::measure;
    use std::time::Duration;

    #[test]
    fn corpus_has_the_requested_rows_and_the_index_matches_the_scan() {
        for kind in Kind::ALL {
            let c = Corpus::build(600, kind, 20, 3);
            assert_eq!(c.outcomes(), 600);
            assert!((150..=300).contains(&c.fingerprints()), "{} fingerprints", c.fingerprints());
            assert_eq!(c.rows.values().map(Vec::len).sum::<usize>(), 600);
            for q in &c.queries {
                let got = c.search(q);
                assert_eq!(got.len(), K);
                assert!(recall(&got, &c.exact(q)) >= 0.9);
                assert!(!c.recommend(q).alternatives.is_empty());
            }
            let fig = measure(&c, 5, Duration::ZERO);
            assert_eq!((fig.exact_queries, fig.queries), (5, 20));
            assert!(fig.p50_us > 0.0 && fig.p99_us >= fig.p50_us && fig.recall_at_10 >= 0.9);
        }
        // Same seed, same corpus.
        let (a, b) = (Corpus::build(90, Kind::Hybrid, 3, 9), Corpus::build(90, Kind::Hybrid, 3, 9));
        assert_eq!(
            a.entries.iter().map(|e| e.0).collect::<Vec<_>>(),
            b.entries.iter().map(|e| e.0).collect::<Vec<_>>()
        );
        assert_eq!(a.queries, b.queries);
    }
}
