//! The fast path's vector index, timed: each layer's rows in the runtime's
//! [`VectorIndex`], every search and insert adding its time to a shared
//! [`SearchClock`], so that a request's time splits into embedding, index
//! searches and the rest, and a table's build time shows its index's share.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use engram::learning::fast_path::decision::VectorSearch;
use engram::vector::{VectorConfig, VectorIndex};

/// Time spent in index searches (all layers), for the per-request split.
#[derive(Debug, Default)]
pub struct SearchClock {
    nanos: AtomicU64,
    build_nanos: AtomicU64,
}

impl SearchClock {
    /// Nanoseconds spent searching so far.
    pub fn nanos(&self) -> u64 {
        self.nanos.load(Ordering::Relaxed)
    }

    /// Nanoseconds spent inserting rows (building the indexes) so far.
    pub(super) fn build_nanos(&self) -> u64 {
        self.build_nanos.load(Ordering::Relaxed)
    }
}

/// A layer's rows in the runtime's [`VectorIndex`] (as `FastPathService`
/// indexes them: default configuration, the row key as key), each search
/// and each insert timed.
struct TimedRows {
    index: Option<VectorIndex<u64>>,
    clock: Arc<SearchClock>,
}

impl VectorSearch for TimedRows {
    fn search(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        let t = Instant::now();
        let Some(index) = &self.index else { return Vec::new() };
        let hits: Vec<(u64, f32)> =
            index.search(query, k).unwrap_or_default().into_iter().map(|h| (h.key, h.cosine)).collect();
        self.clock.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        hits
    }

    fn insert(&mut self, rows: Vec<(u64, Vec<f32>)>) {
        let t = Instant::now();
        let dim = rows.first().map_or(1, |(_, v)| v.len()).max(1);
        // All cores (the runtime takes one): only the build is faster.
        let index =
            self.index.get_or_insert_with(|| VectorIndex::new(VectorConfig::new(dim)).expect("a positive dimension"));
        index.extend(rows.iter().map(|(k, v)| (*k, v.as_slice()))).expect("valid row vectors");
        self.clock.build_nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn remove(&mut self, key: u64) {
        if let Some(index) = &mut self.index {
            index.remove(&key);
        }
    }
}

/// An empty layer index whose searches and inserts `clock` times.
pub(super) fn timed_index(clock: &Arc<SearchClock>) -> Box<dyn VectorSearch> {
    Box::new(TimedRows { index: None, clock: Arc::clone(clock) })
}
