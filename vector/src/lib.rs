//! # engram-vector
//!
//! Nearest-neighbour search over embedding vectors: the fast path's L1/L2
//! rows and the pattern store's hybrid fingerprints. A crate of its own
//! because it is one: it knows nothing of events, logs or the assistant,
//! only `f32` vectors and the caller's keys.
//!
//! [`VectorIndex`] answers "which stored vectors are most similar to this
//! one" by cosine similarity, for keys of the caller's choosing, with
//! inserts, deletes and a one-file persistence. Underneath:
//!
//! * [`distance`] — the dot-product kernels (AVX-512 / AVX2+FMA chosen at
//!   run time, a portable fallback);
//! * [`blocks`] — rows in fixed-size blocks ([`RowBlocks`]): the storage of
//!   every table of vectors that only grows (the arena, its codes, the
//!   pattern store's k-NN arena), so none of them doubles;
//! * [`exact`] — the exact scan over the arena with a bounded
//!   top-k: the answer below the crossover, and the ground truth above it;
//! * [`hnsw`] — a compact HNSW graph over that same arena;
//! * [`quantized`] — int8 codes of the rows, which the graph walks before
//!   re-scoring its candidates in full precision;
//! * [`index`] — [`VectorIndex`]: exact below [`DEFAULT_EXACT_BELOW`] rows,
//!   HNSW above, tombstones, compaction, dump/load;
//! * [`fvecs`] — the `.fvecs` reader/writer of the standard ANN data sets;
//! * [`rng`] — the seeded generator HNSW draws node levels from;
//! * [`synthetic`] — structured synthetic embeddings for tests and benches.
//!
//! The `hnsw_rs` crate is not a dependency: `engram bench knn --hnsw-rs`
//! (in `engram-bench`) measures it beside [`Hnsw`] as a peer, which is how
//! [`hnsw`]'s module docs make the case for a graph of our own.
//!
//! All similarity is cosine on L2-normalised `f32` vectors (the index
//! normalises on the way in), i.e. a dot product. The exact scan and every
//! similarity returned are full precision; only the graph walk ranks on
//! int8 codes ([`quantized`]), and its candidates are scored again in `f32`.

#![warn(missing_docs)]

pub mod blocks;
pub mod distance;
pub mod exact;
pub mod fvecs;
pub mod hnsw;
pub mod index;
pub mod quantized;
pub mod rng;
pub mod synthetic;

pub use blocks::{RowBlocks, ROWS_PER_BLOCK};
pub use distance::{Isa, Kernel};
pub use exact::{ExactScan, TopK};
pub use fvecs::{parse_fvecs, read_fvecs, write_fvecs, Fvecs, FvecsError, FvecsFileError};
pub use hnsw::{Hnsw, HnswParams};
pub use index::{
    Hit, VectorConfig, VectorError, VectorIndex, DEFAULT_COMPACT_RATIO, DEFAULT_EF_SEARCH, DEFAULT_EXACT_BELOW,
};
pub use synthetic::{Synthetic, SyntheticSpec};

/// Scales `v` to unit L2 norm in place and returns its original norm
/// (accumulated in f64, so long vectors do not lose precision). A zero or
/// non-finite vector is left as it is.
pub fn normalize(v: &mut [f32]) -> f32 {
    let n = v.iter().map(|x| (*x as f64) * (*x as f64)).sum::<f64>().sqrt();
    if n > 0.0 && n.is_finite() {
        let inv = (1.0 / n) as f32;
        v.iter_mut().for_each(|x| *x *= inv);
    }
    n as f32
}
