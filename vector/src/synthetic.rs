//! Structured synthetic unit vectors: clusters in a low-dimensional latent
//! space, embedded in `dim` dimensions, plus isotropic noise.
//!
//! Why not uniform random vectors: in 384 dimensions those are all nearly
//! orthogonal to each other, every point is about equally far from every
//! other, and "nearest neighbour" stops meaning anything — no graph index
//! does well on them and no real embedding looks like them. Sentence
//! embeddings have a low intrinsic dimension and topical clusters. This
//! generator imitates that, deterministically from a seed, so benches and
//! tests run without input files:
//!
//! * `clusters` centres, random unit vectors in `dim` dimensions;
//! * a shared random linear map from a `latent`-dimensional space, through
//!   which each point gets a Gaussian offset of norm ≈ `spread`;
//! * isotropic Gaussian noise of norm ≈ `noise`;
//! * the sum, L2-normalised.
//!
//! Queries are fresh draws from the same distribution (not copies of base
//! points), as with real traffic.

use crate::normalize;
use crate::rng::Rng;

/// Parameters of a synthetic data set.
#[derive(Clone, Debug)]
pub struct SyntheticSpec {
    /// Number of base vectors (informational: [`Synthetic::base`] takes a count).
    pub n: usize,
    /// Dimension of the vectors.
    pub dim: usize,
    /// Number of cluster centres (0: one per 2,000 base vectors, at least 1).
    pub clusters: usize,
    /// Dimension of the latent space the within-cluster variation lives in.
    pub latent: usize,
    /// Expected norm of a point's latent offset from its centre.
    pub spread: f32,
    /// Expected norm of the isotropic noise.
    pub noise: f32,
    /// Seed of the generator; the same spec gives the same vectors.
    pub seed: u64,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec { n: 10_000, dim: 384, clusters: 0, latent: 64, spread: 1.0, noise: 0.5, seed: 42 }
    }
}

/// A generator of one synthetic distribution (see the module docs).
#[derive(Clone, Debug)]
pub struct Synthetic {
    spec: SyntheticSpec,
    centres: Vec<f32>,
    /// `latent × dim`, row-major.
    map: Vec<f32>,
    rng: Rng,
}

impl Synthetic {
    /// Draws the centres and the latent map from `spec.seed`.
    pub fn new(spec: &SyntheticSpec) -> Self {
        let mut rng = Rng::new(spec.seed);
        let dim = spec.dim;
        let clusters = if spec.clusters == 0 { (spec.n / 2_000).max(1) } else { spec.clusters };
        let mut centres = vec![0f32; clusters * dim];
        for c in centres.chunks_exact_mut(dim.max(1)) {
            c.iter_mut().for_each(|x| *x = rng.gauss());
            normalize(c);
        }
        // Entries N(0, 1/dim): each latent axis maps to a vector of norm ≈ 1.
        let scale = 1.0 / (dim.max(1) as f32).sqrt();
        let map = (0..spec.latent * dim).map(|_| rng.gauss() * scale).collect();
        Synthetic { spec: spec.clone(), centres, map, rng }
    }

    /// The next `count` vectors, `dim` floats each, end to end.
    pub fn base(&mut self, count: usize) -> Vec<f32> {
        let dim = self.spec.dim;
        let mut out = vec![0f32; count * dim];
        for v in out.chunks_exact_mut(dim.max(1)) {
            self.fill(v);
        }
        out
    }

    fn fill(&mut self, v: &mut [f32]) {
        let dim = self.spec.dim;
        let clusters = self.centres.len() / dim.max(1);
        let c = self.rng.below(clusters);
        v.copy_from_slice(&self.centres[c * dim..(c + 1) * dim]);
        let lat_scale = self.spec.spread / (self.spec.latent.max(1) as f32).sqrt();
        for row in self.map.chunks_exact(dim) {
            let z = self.rng.gauss() * lat_scale;
            v.iter_mut().zip(row).for_each(|(x, m)| *x += z * m);
        }
        let iso = self.spec.noise / (dim as f32).sqrt();
        v.iter_mut().for_each(|x| *x += self.rng.gauss() * iso);
        normalize(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_and_deterministic() {
        let spec = SyntheticSpec { n: 500, dim: 48, ..SyntheticSpec::default() };
        let a = Synthetic::new(&spec).base(50);
        let b = Synthetic::new(&spec).base(50);
        assert_eq!(a, b);
        for v in a.chunks_exact(48) {
            let n: f32 = v.iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-5);
        }
    }
}
