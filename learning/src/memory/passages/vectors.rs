//! The vector half of rules 1 and 2: embeddings as the log keeps them
//! (quantised to a byte per dimension), the vector index built from them
//! at the first search that needs it, and the embedding's ranking. Apart
//! from the lexical half: the two rank on their own and only their ranks
//! are fused.

use engram_events::payloads::PassageVector;
use engram_vector::{VectorConfig, VectorIndex};

use super::{top, MemoryQuery, PassageIndex};

/// The graph search's candidate list: wider than the vector crate's
/// default (64) since a search here asks for
/// [`CANDIDATES`](super::CANDIDATES), not 10. Measured by `engram bench
/// memory` at 100k passages: see docs/memory.md.
const EF_SEARCH: usize = 160;

/// Vectors joined to the index per step of a flush.
const FLUSH_CHUNK: usize = 4_096;

/// `vector` as the log keeps it: one signed byte per dimension and a
/// scale ([`PassageVector`]).
pub fn quantize(provider: &str, vector: &[f32]) -> PassageVector {
    let mut codes = vec![0i8; vector.len()];
    let scale = engram_vector::quantized::encode(vector, &mut codes);
    PassageVector { provider: provider.to_owned(), scale, codes }
}

/// The floats a [`PassageVector`] stands for.
pub fn dequantize(v: &PassageVector) -> Vec<f32> {
    v.codes.iter().map(|&c| c as f32 * v.scale).collect()
}

impl PassageIndex {
    /// Joins the waiting vectors to the vector index, a chunk at a time
    /// (a year's passages at a first search would otherwise hold every
    /// float vector twice while the graph is built).
    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for chunk in pending.chunks(FLUSH_CHUNK) {
            let rows: Vec<(u32, Vec<f32>)> = chunk
                .iter()
                .filter_map(|&slot| {
                    let p = self.passages[slot as usize].as_ref()?;
                    Some((slot, dequantize(p.vector.as_ref()?)))
                })
                .filter(|(_, v)| v.iter().any(|x| *x != 0.0))
                .collect();
            let Some(dim) = rows.first().map(|(_, v)| v.len()) else { continue };
            let exact = self.exact;
            let index = self.vectors.get_or_insert_with(|| {
                let mut c = VectorConfig::new(dim.max(1));
                c.build_threads = 1;
                c.ef_search = EF_SEARCH;
                // The log keeps a passage's vector as int8 codes and a
                // scale: the index's codes are those codes, so an `f32`
                // copy beside them (2 KB a 512-d passage, half of what a
                // passage holds resident) would add nothing but memory.
                c.float_rows = false;
                if exact {
                    c.exact_below = usize::MAX;
                }
                VectorIndex::new(c).expect("a positive dimension")
            });
            // In one go (the graph is built or extended once); a chunk
            // with a bad vector (another model's length) goes row by row
            // instead, so only that row is left out.
            if index.extend(rows.iter().map(|(s, v)| (*s, v.as_slice()))).is_err() {
                for (slot, v) in rows {
                    if let Err(e) = index.insert(slot, &v) {
                        tracing::warn!("memory index: passage {slot} was not indexed ({e})");
                    }
                }
            }
        }
    }

    /// This index ranking by embedding only the passages at least `bar`
    /// alike with the request (the model's `Calibration::recall`): the
    /// nearest passages of an index are always *some* passages, and a
    /// request about nothing said must bring none (the lexical half still
    /// finds a name or a number in common).
    pub fn min_cosine(mut self, bar: f32) -> PassageIndex {
        self.min_cosine = bar;
        self
    }

    /// This index searching vectors by exact scan however many it holds:
    /// the peer that `engram bench memory` measures the graph against.
    pub fn exact(mut self) -> PassageIndex {
        self.exact = true;
        self
    }

    /// The embedding's ranking of the passages in range, best first: the
    /// vector index when no day is named, else an exact scan of the days
    /// named (few passages).
    pub fn semantic(&mut self, q: &MemoryQuery<'_>, k: usize) -> Vec<(u32, f32)> {
        let Some(query) = q.vector else { return Vec::new() };
        self.flush();
        let Some(index) = &self.vectors else { return Vec::new() };
        if q.from.is_none() && q.to.is_none() {
            // (Graph results are filtered only for the conversation in
            // progress: a few passages.)
            return match index.search(query, k) {
                Ok(hits) => hits
                    .into_iter()
                    .filter(|h| h.cosine >= self.min_cosine && self.in_range(h.key, q))
                    .map(|h| (h.key, h.cosine))
                    .collect(),
                Err(e) => {
                    tracing::warn!("memory index: vector search failed ({e}); words alone rank");
                    Vec::new()
                }
            };
        }
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        let scored: Vec<(u32, f32)> = (0..self.passages.len() as u32)
            .filter(|&s| self.in_range(s, q))
            .filter_map(|s| {
                let v = index.get(&s)?;
                Some((s, v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>() / norm))
            })
            .filter(|(_, c)| *c >= self.min_cosine)
            .collect();
        top(scored, k)
    }
}
