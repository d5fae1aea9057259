//! Vectors the fast-path bench makes instead of embedding: the derived
//! vectors of the rows beyond the first `--distinct` (a real row's vector
//! plus noise, at a chosen cosine from it), and [`Given`], an embedder that
//! returns vectors computed beforehand, to time the fast path's own work.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use engram::learning::embedder::{EmbedError, Embedder};

use crate::patterns::Rng;

/// Cosine of a derived row vector to its real row: uniform in this range.
pub const DERIVED_COSINE: (f64, f64) = (0.70, 0.95);

/// `base` plus isotropic Gaussian noise, renormalised, at a cosine drawn
/// uniformly in [`DERIVED_COSINE`] from it (in expectation).
pub fn derive_vector(base: &[f32], rng: &mut Rng) -> Vec<f32> {
    let (lo, hi) = DERIVED_COSINE;
    let c = lo + (hi - lo) * rng.unit();
    // |noise|² ≈ σ²·dim, so cos ≈ 1 / sqrt(1 + σ²·dim).
    let sigma = ((1.0 / (c * c) - 1.0) / base.len() as f64).sqrt();
    let mut v: Vec<f32> = base.iter().map(|&x| x + (sigma * rng.gaussian()) as f32).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// An "embedder" that returns vectors computed beforehand: `route` with the
/// request's vector already known (as on an embedding-cache hit), to time
/// the fast path's own work.
pub struct Given {
    vectors: HashMap<String, Vec<f32>>,
    dim: usize,
}

impl Given {
    /// The vectors `embedder` gives `texts`.
    pub fn embed_all(embedder: &dyn Embedder, texts: impl IntoIterator<Item = String>) -> anyhow::Result<Given> {
        let mut vectors = HashMap::new();
        for t in texts {
            if let Entry::Vacant(e) = vectors.entry(t) {
                let v = embedder.embed(e.key())?;
                e.insert(v);
            }
        }
        Ok(Given { vectors, dim: embedder.dim() })
    }
}

impl Embedder for Given {
    fn model_id(&self) -> &str {
        "given"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.vectors.get(text).cloned().ok_or_else(|| EmbedError::Inference(format!("no vector given for {text:?}")))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_vectors_are_unit_and_at_the_asked_cosine() {
        let mut rng = Rng::new(7);
        let mut base: Vec<f32> = (0..384).map(|_| rng.gaussian() as f32).collect();
        let norm = base.iter().map(|x| x * x).sum::<f32>().sqrt();
        base.iter_mut().for_each(|x| *x /= norm);
        for _ in 0..50 {
            let v = derive_vector(&base, &mut rng);
            let n: f32 = v.iter().map(|x| x * x).sum();
            let cos: f32 = v.iter().zip(&base).map(|(a, b)| a * b).sum();
            assert!((n - 1.0).abs() < 1e-4);
            assert!(cos > 0.55 && cos < 0.99, "{cos}");
        }
    }
}
