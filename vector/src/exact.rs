//! The exact scan: every stored vector, one dot product each, a bounded
//! top-k.
//!
//! Rows live in the *arena*, `dim` floats per slot in blocks of 64 rows
//! ([`RowBlocks`]: it grows a block at a time, never doubling), so the scan
//! is a linear sweep per block the prefetcher can follow and the kernel can
//! take four rows per query load ([`Kernel::dot_rows`]). At the
//! sizes the fast path starts with (hundreds to a few thousand rows) this
//! beats any graph: no build, no recall loss, and fewer bytes touched than
//! the graph's random walk. [`crate::VectorIndex`] switches to HNSW only
//! above its measured crossover.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::blocks::{RowBlocks, ROWS_PER_BLOCK};
use crate::distance::Kernel;

/// Rows scored per call of the kernel: large enough to amortise the call,
/// small enough for the scores to stay in L1. One arena block.
const BLOCK_ROWS: usize = ROWS_PER_BLOCK;

/// A scored slot, ordered so that a [`BinaryHeap`] of them keeps the
/// *worst* on top: lower score first, and among equal scores the higher
/// slot (so that ties resolve to the lower, older slot, deterministically).
#[derive(Clone, Copy, Debug)]
struct Worst {
    score: f32,
    slot: u32,
}

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        other.score.total_cmp(&self.score).then(self.slot.cmp(&other.slot))
    }
}

/// The `k` best `(slot, score)` pairs seen so far, higher score better.
///
/// A min-heap of size `k`: a candidate costs one comparison against the
/// current worst unless it gets in, so a scan of `n` rows costs
/// `O(n + k log k log n)`-ish rather than a sort of `n`.
#[derive(Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl TopK {
    /// An empty top-`k`.
    pub fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    /// The score a candidate must beat to get in (`-inf` until full).
    #[inline]
    pub fn threshold(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.heap.peek().map_or(f32::NEG_INFINITY, |w| w.score)
        }
    }

    /// Offers a candidate; keeps it if it is among the best `k`.
    #[inline]
    pub fn push(&mut self, slot: u32, score: f32) {
        if self.k == 0 {
            return;
        }
        let cand = Worst { score, slot };
        if self.heap.len() < self.k {
            self.heap.push(cand);
        } else if let Some(mut top) = self.heap.peek_mut() {
            if cand < *top {
                *top = cand;
            }
        }
    }

    /// The kept pairs, best first (ties: lower slot first).
    pub fn into_sorted(self) -> Vec<(u32, f32)> {
        // `into_sorted_vec` is ascending by `Ord`, i.e. best first here.
        self.heap.into_sorted_vec().into_iter().map(|w| (w.slot, w.score)).collect()
    }
}

/// Vectors of one dimension in an arena of fixed blocks, searched
/// exhaustively.
///
/// Slots are dense `u32` indices handed out by [`ExactScan::push`]; the
/// caller maps its own ids onto them ([`crate::VectorIndex`] does). Vectors
/// are stored as given: cosine search needs them L2-normalised first.
#[derive(Clone, Debug)]
pub struct ExactScan {
    dim: usize,
    data: RowBlocks<f32>,
    kernel: Kernel,
}

impl ExactScan {
    /// An empty arena for vectors of `dim` floats, with the fastest kernel.
    pub fn new(dim: usize) -> Self {
        ExactScan::with_kernel(dim, Kernel::detect())
    }

    /// An empty arena with a given kernel (tests and benches pin one).
    pub fn with_kernel(dim: usize, kernel: Kernel) -> Self {
        ExactScan { dim, data: RowBlocks::new(dim), kernel }
    }

    /// Builds an arena from `dim`-float rows laid end to end.
    ///
    /// # Panics
    /// If `data.len()` is not a multiple of `dim`.
    pub fn from_flat(dim: usize, data: &[f32]) -> Self {
        assert!(dim > 0 && data.len().is_multiple_of(dim), "arena of {} floats is not rows of {dim}", data.len());
        ExactScan { dim, data: RowBlocks::from_flat(dim, data), kernel: Kernel::detect() }
    }

    /// Floats per vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of rows (slots) stored.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when no row is stored.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Heap bytes held by the rows (whole blocks).
    pub fn heap_bytes(&self) -> usize {
        self.data.heap_bytes()
    }

    /// The kernel in use.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The rows, in their blocks (for persistence, rebuilds and the graph).
    pub fn rows(&self) -> &RowBlocks<f32> {
        &self.data
    }

    /// Appends a row and returns its slot.
    ///
    /// # Panics
    /// If `v.len() != dim` (the index checks first and returns a typed error)
    /// or more than `u32::MAX` rows are stored.
    pub fn push(&mut self, v: &[f32]) -> u32 {
        assert_eq!(v.len(), self.dim, "row of {} floats in an arena of dimension {}", v.len(), self.dim);
        self.data.push(v)
    }

    /// The row in `slot`.
    ///
    /// # Panics
    /// If `slot` is out of range.
    pub fn row(&self, slot: u32) -> &[f32] {
        self.data.row(slot)
    }

    /// The `k` rows with the highest dot product with `query`, best first,
    /// skipping slots for which `skip` returns true (tombstones).
    ///
    /// # Panics
    /// If `query.len() != dim`.
    pub fn search_filtered(&self, query: &[f32], k: usize, skip: impl Fn(u32) -> bool) -> Vec<(u32, f32)> {
        assert_eq!(query.len(), self.dim, "query of {} floats against dimension {}", query.len(), self.dim);
        let mut top = TopK::new(k);
        if k == 0 || self.dim == 0 {
            return Vec::new();
        }
        let mut scores = [0f32; BLOCK_ROWS];
        for (b, block) in self.data.blocks().enumerate() {
            let rows = block.len() / self.dim;
            let scores = &mut scores[..rows];
            self.kernel.dot_rows(query, block, scores);
            let mut threshold = top.threshold();
            for (i, &s) in scores.iter().enumerate() {
                // `>=` keeps equal scores in play; TopK breaks the tie by slot.
                if s >= threshold {
                    let slot = (b * BLOCK_ROWS + i) as u32;
                    if !skip(slot) {
                        top.push(slot, s);
                        threshold = top.threshold();
                    }
                }
            }
        }
        top.into_sorted()
    }

    /// [`ExactScan::search_filtered`] with nothing skipped.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(u32, f32)> {
        self.search_filtered(query, k, |_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::Isa;
    use crate::synthetic::{Synthetic, SyntheticSpec};

    /// Naive reference: every dot product in f64, full sort.
    fn naive(data: &[f32], dim: usize, q: &[f32], k: usize, skip: impl Fn(u32) -> bool) -> Vec<(u32, f64)> {
        let mut all: Vec<(u32, f64)> = data
            .chunks_exact(dim)
            .enumerate()
            .filter(|(i, _)| !skip(*i as u32))
            .map(|(i, r)| (i as u32, r.iter().zip(q).map(|(a, b)| *a as f64 * *b as f64).sum()))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        all
    }

    #[test]
    fn exact_scan_matches_naive_f64_reference() {
        let spec = SyntheticSpec { n: 1_003, dim: 67, ..SyntheticSpec::default() };
        let data = Synthetic::new(&spec).base(spec.n);
        let queries = Synthetic::new(&SyntheticSpec { seed: 99, ..spec.clone() }).base(20);
        for isa in [Isa::Portable, Isa::Avx2Fma, Isa::Avx512] {
            let Some(kernel) = Kernel::for_isa(isa) else { continue };
            let mut scan = ExactScan::with_kernel(spec.dim, kernel);
            for row in data.chunks_exact(spec.dim) {
                scan.push(row);
            }
            for q in queries.chunks_exact(spec.dim) {
                for k in [1, 10, 57] {
                    let skip = |s: u32| s % 7 == 3;
                    let got = scan.search_filtered(q, k, skip);
                    let want = naive(&data, spec.dim, q, k, skip);
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        // Same score to f32 precision; the slot may differ
                        // only where two scores tie to within rounding.
                        assert!((g.1 as f64 - w.1).abs() < 1e-5, "{isa:?} k={k}: {g:?} vs {w:?}");
                        if g.0 != w.0 {
                            let other = naive(&data, spec.dim, q, data.len(), |_| false);
                            let gs = other.iter().find(|x| x.0 == g.0).unwrap().1;
                            assert!((gs - w.1).abs() < 1e-5, "{isa:?}: slot {} is not a tie", g.0);
                        }
                        assert!(!skip(g.0));
                    }
                }
            }
        }
    }

    /// The arena's blocks score every row bit for bit as one flat array of
    /// rows did (blocks of 64 rows keep the kernels' groups of four), so
    /// searches answer exactly as before the rows moved into blocks.
    #[test]
    fn scores_over_blocks_equal_one_flat_scan_bit_for_bit() {
        let spec = SyntheticSpec { n: 3 * BLOCK_ROWS + 7, dim: 67, ..SyntheticSpec::default() };
        let data = Synthetic::new(&spec).base(spec.n);
        let q = Synthetic::new(&SyntheticSpec { seed: 5, ..spec.clone() }).base(1);
        for isa in [Isa::Portable, Isa::Avx2Fma, Isa::Avx512] {
            let Some(kernel) = Kernel::for_isa(isa) else { continue };
            let mut flat = vec![0f32; spec.n];
            kernel.dot_rows(&q, &data, &mut flat);
            let mut scan = ExactScan::with_kernel(spec.dim, kernel);
            for row in data.chunks_exact(spec.dim) {
                scan.push(row);
            }
            let mut got = scan.search(&q, spec.n);
            got.sort_by_key(|(slot, _)| *slot);
            let got: Vec<u32> = got.iter().map(|(_, s)| s.to_bits()).collect();
            assert_eq!(got, flat.iter().map(|s| s.to_bits()).collect::<Vec<_>>(), "{isa:?}");
        }
    }

    #[test]
    fn top_k_keeps_the_best_and_breaks_ties_by_slot() {
        let mut t = TopK::new(3);
        for (slot, s) in [(5, 0.5), (1, 0.9), (2, 0.5), (3, 0.1), (4, 0.9), (0, 0.5)] {
            t.push(slot, s);
        }
        assert_eq!(t.into_sorted(), vec![(1, 0.9), (4, 0.9), (0, 0.5)]);
        assert!(TopK::new(0).into_sorted().is_empty());
    }
}
