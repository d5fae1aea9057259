//! Int8 copies of the arena's rows, for the graph walk.
//!
//! An HNSW query scores ≈ 1 000 rows it reaches by links, i.e. in no
//! order memory likes: at 20k × 384 `f32` (30 MB, more than this machine's
//! cache) the walk waits on memory more than it computes. These codes are a
//! quarter of the size (one byte a dimension, plus a scale a row), so the
//! walk reads a quarter of the bytes, and their integer dot product is
//! exact and identical on every kernel. The walk ranks by these codes; the
//! `ef` candidates it keeps are then scored again in full precision
//! ([`crate::Hnsw::search`]), so the cosines a caller sees and the final
//! order are those of the `f32` rows. The exact scan never uses them —
//! unless the index keeps codes only ([`crate::VectorConfig::float_rows`]
//! false), when they are the rows: every score is then the full-precision
//! query against the floats the codes stand for ([`Codes::dot_f32`]), which
//! for vectors that were codes to begin with is no approximation at all.
//!
//! Quantisation is symmetric, per row: `code = round(x / scale)` with
//! `scale = max |x| / 127`, so every row uses the whole `i8` range whatever
//! its spread (a unit vector of 384 dimensions has `|x|` around 0.05; a
//! fixed scale would leave most codes at 0). The dot product of two rows is
//! then `scale_a · scale_b · Σ code_a · code_b`, off the `f32` one by a few
//! thousandths at most for unit vectors — below the gaps the walk decides on,
//! and the re-scoring removes it from the answer.

use crate::blocks::RowBlocks;
use crate::distance::Kernel;

/// The largest code: codes span `-127..=127` (symmetric, so negation is exact).
const CODE_MAX: f32 = 127.0;

/// Int8 codes and per-row scales, row `i` beside arena row `i`; the codes
/// grow in blocks like the arena ([`RowBlocks`]).
#[derive(Clone, Debug, Default)]
pub struct Codes {
    dim: usize,
    codes: RowBlocks<i8>,
    scales: RowBlocks<f32>,
}

impl Codes {
    /// No rows, `dim` codes a row.
    pub fn new(dim: usize) -> Self {
        Codes { dim, codes: RowBlocks::new(dim), scales: RowBlocks::new(1) }
    }

    /// The codes of every row of `data`.
    pub fn from_rows(dim: usize, data: &RowBlocks<f32>) -> Self {
        let mut c = Codes::new(dim);
        c.extend_from(data);
        c
    }

    /// Encodes the rows of `data` from row `len()` on: what an arena grew
    /// by since the codes last caught up with it.
    pub fn extend_from(&mut self, data: &RowBlocks<f32>) {
        if self.dim == 0 {
            return;
        }
        let mut out = vec![0i8; self.dim];
        for slot in self.len()..data.len() {
            let scale = encode(data.row(slot as u32), &mut out);
            self.codes.push(&out);
            self.scales.push(&[scale]);
        }
    }

    /// Encodes one more row, `row` itself (an index that keeps codes only,
    /// [`crate::VectorConfig::float_rows`]); returns its slot.
    pub fn push(&mut self, row: &[f32]) -> u32 {
        let mut out = vec![0i8; self.dim];
        let scale = encode(row, &mut out);
        self.push_coded(&out, scale)
    }

    /// Appends a row already encoded (a compaction copying live rows).
    pub fn push_coded(&mut self, codes: &[i8], scale: f32) -> u32 {
        self.codes.push(codes);
        self.scales.push(&[scale])
    }

    /// The floats row `node` stands for (its codes times its scale).
    pub fn decode(&self, node: u32) -> Vec<f32> {
        let (codes, scale) = self.row(node);
        codes.iter().map(|&c| c as f32 * scale).collect()
    }

    /// The dot product of full-precision `q` with row `node`: exact for the
    /// floats the row stands for, so a row that was itself int8 codes and
    /// a scale (memory's passages, as the log keeps them) scores as its
    /// `f32` row would, less rounding.
    #[inline]
    pub fn dot_f32(&self, q: &[f32], node: u32) -> f32 {
        let (codes, scale) = self.row(node);
        // Sixteen running sums, so the compiler keeps them in vector
        // registers (one sum in order cannot be reordered into lanes):
        // measured on a 10k-passage exact scan, 4.6 ms → 1.3 ms p50.
        const LANES: usize = 16;
        let mut acc = [0f32; LANES];
        let (qc, qr) = q.split_at(q.len() - q.len() % LANES);
        let (cc, cr) = codes.split_at(qc.len().min(codes.len()));
        for (qs, cs) in qc.chunks_exact(LANES).zip(cc.chunks_exact(LANES)) {
            for i in 0..LANES {
                acc[i] += qs[i] * cs[i] as f32;
            }
        }
        let tail: f32 = qr.iter().zip(cr).map(|(a, &c)| a * c as f32).sum();
        (acc.iter().sum::<f32>() + tail) * scale
    }

    /// Heap bytes held (codes and scales, whole blocks).
    pub fn heap_bytes(&self) -> usize {
        self.codes.heap_bytes() + self.scales.heap_bytes()
    }

    /// Rows encoded.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// True when no row is encoded.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Codes a row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Row `node`'s codes and scale.
    #[inline]
    pub fn row(&self, node: u32) -> (&[i8], f32) {
        (self.codes.row(node), self.scales.row(node)[0])
    }

    /// Asks the CPU for row `node`'s codes ahead of scoring it.
    #[inline]
    pub fn prefetch(&self, node: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            if (node as usize) < self.codes.len() {
                let p = self.codes.row(node).as_ptr();
                for line in 0..self.dim.div_ceil(64) {
                    // SAFETY: prefetching never faults, and every address
                    // is inside the row's cache lines.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line)) };
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = node;
    }
}

/// Writes `row`'s codes into `out` (as long as `row`) and returns its scale.
pub fn encode(row: &[f32], out: &mut [i8]) -> f32 {
    let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.fill(0);
        return 0.0;
    }
    let inv = CODE_MAX / max;
    for (o, x) in out.iter_mut().zip(row) {
        *o = (x * inv).round().clamp(-CODE_MAX, CODE_MAX) as i8;
    }
    max / CODE_MAX
}

/// A query encoded for [`Codes`]: its codes, scale and the kernel.
pub struct CodedQuery {
    codes: Vec<i8>,
    scale: f32,
    kernel: Kernel,
}

impl CodedQuery {
    /// Encodes unit vector `q`.
    pub fn new(q: &[f32], kernel: Kernel) -> Self {
        let mut codes = vec![0i8; q.len()];
        let scale = encode(q, &mut codes);
        CodedQuery { codes, scale, kernel }
    }

    /// The approximate dot product with row `node` of `codes`.
    #[inline]
    pub fn dot(&self, codes: &Codes, node: u32) -> f32 {
        let (row, scale) = codes.row(node);
        self.kernel.dot_i8(&self.codes, row) as f32 * (self.scale * scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{Synthetic, SyntheticSpec};

    /// Over structured unit vectors the coded dot product stays within a
    /// few thousandths of the `f32` one: the error bound the module docs
    /// state, and what the walk's decisions rely on.
    #[test]
    fn coded_dot_products_track_the_float_ones() {
        let spec = SyntheticSpec { n: 300, dim: 384, ..SyntheticSpec::default() };
        let mut gen = Synthetic::new(&spec);
        let (base, queries) = (gen.base(300), gen.base(20));
        let kernel = Kernel::detect();
        let codes = Codes::from_rows(spec.dim, &RowBlocks::from_flat(spec.dim, &base));
        assert_eq!(codes.len(), 300);
        let mut worst = 0f32;
        for q in queries.chunks_exact(spec.dim) {
            let cq = CodedQuery::new(q, kernel);
            for (i, row) in base.chunks_exact(spec.dim).enumerate() {
                let exact = kernel.dot(q, row);
                worst = worst.max((cq.dot(&codes, i as u32) - exact).abs());
            }
        }
        assert!(worst < 0.005, "coded dot product off by {worst}");
        assert!(worst > 0.0, "codes are not the floats");
    }

    #[test]
    fn a_zero_row_codes_to_zero_and_extend_catches_up() {
        let mut out = [1i8; 4];
        assert_eq!(encode(&[0.0; 4], &mut out), 0.0);
        assert_eq!(out, [0; 4]);
        let scale = encode(&[0.5, -1.0, 0.25, 0.0], &mut out);
        assert_eq!(out, [64, -127, 32, 0]);
        assert!((scale - 1.0 / 127.0).abs() < 1e-7);

        let data = [0.5f32, -1.0, 0.25, 0.0, 1.0, 0.0, 0.0, 0.0];
        let mut codes = Codes::from_rows(4, &RowBlocks::from_flat(4, &data[..4]));
        codes.extend_from(&RowBlocks::from_flat(4, &data));
        assert_eq!(codes.len(), 2);
        assert_eq!(codes.row(1).0, &[127, 0, 0, 0]);
    }
}
