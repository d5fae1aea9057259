//! [`VectorIndex`]: cosine K-NN over keys of the caller's choosing, exact
//! when small, HNSW when large, with deletes and a file format.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::Hash;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::exact::ExactScan;
use crate::hnsw::{Hnsw, HnswParams, Rows};
use crate::quantized::Codes;

/// Below this many stored vectors the index answers with the exact scan
/// and keeps no graph.
///
/// Measured on the 2-core dev machine (AVX-512, 384 dimensions, k = 10,
/// structured synthetic data, one query thread, p50): the exact scan costs
/// ≈ 20 µs per thousand rows (2k: 41 µs, 3k: 65, 4k: 81, 6k: 118), the
/// graph at `ef = 64` 56–62 µs over the same range. They meet at ≈ 3,000
/// rows; below that the scan is faster, exact, and needs no build.
pub const DEFAULT_EXACT_BELOW: usize = 3_000;

/// Default layer-0 candidate-list size of a search: recall@10 ≈ 0.98 on
/// the structured benchmark data at 20k–50k rows.
pub const DEFAULT_EF_SEARCH: usize = 64;

/// Tombstones above this share of the stored rows trigger a compaction
/// (rows dropped, graph rebuilt): past it, dead rows waste the scan's
/// bandwidth and the graph's `ef`.
pub const DEFAULT_COMPACT_RATIO: f32 = 0.2;

/// File magic of [`VectorIndex::dump`].
const MAGIC: &[u8; 8] = b"ENGRAMVX";
/// File format version.
const VERSION: u32 = 1;

/// Why a vector-index operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// A vector or query of the wrong length: a caller mixing embedding
    /// models, which must never be answered with a silent truncation.
    #[error("vector has {got} dimensions, the index holds {expected}")]
    DimensionMismatch {
        /// The index's dimension.
        expected: usize,
        /// The offending vector's length.
        got: usize,
    },
    /// An index of dimension 0 was asked for.
    #[error("a vector index needs at least one dimension")]
    ZeroDimension,
    /// A NaN or infinite component: it would poison every comparison.
    #[error("vector component {index} is {value}, not a finite number")]
    NonFinite {
        /// Index of the component.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// An all-zero vector has no direction, so no cosine.
    #[error("vector has zero length: cosine similarity is undefined")]
    ZeroVector,
    /// Reading or writing an index file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An index file is not one this code wrote, or was damaged.
    #[error("{path}: not a valid vector index file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What check failed.
        reason: String,
    },
    /// The keys could not be encoded or decoded.
    #[error("{path}: keys: {source}")]
    Keys {
        /// The file.
        path: PathBuf,
        /// The serde error.
        source: serde_json::Error,
    },
}

/// Tuning of a [`VectorIndex`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VectorConfig {
    /// Floats per vector (384 for MiniLM-class embedders).
    pub dim: usize,
    /// Stored rows below which searches scan exactly and no graph is kept
    /// ([`DEFAULT_EXACT_BELOW`]). `usize::MAX`: always exact; 0: always HNSW.
    pub exact_below: usize,
    /// Layer-0 candidates per graph search: higher is more recall, slower
    /// ([`DEFAULT_EF_SEARCH`]). A search for `k` uses at least `k`.
    pub ef_search: usize,
    /// Graph shape (fixed when the graph is built).
    pub hnsw: HnswParams,
    /// Tombstone share that triggers compaction ([`DEFAULT_COMPACT_RATIO`]).
    pub compact_ratio: f32,
    /// Threads for bulk graph builds (0: all available).
    #[serde(skip)]
    pub build_threads: usize,
    /// Keep each row's `f32` copy (true, the default), or its int8 codes
    /// only: a quarter of the memory, every score then from the codes —
    /// the exact scan, the graph's build and its re-scoring. For vectors
    /// that were int8 codes and a scale to begin with (memory's passages,
    /// as the log keeps them) the codes are the same vector, so the
    /// cosines are the same less rounding; for others they are off by the
    /// quantisation's few thousandths ([`crate::quantized`]).
    #[serde(default = "float_rows_default")]
    pub float_rows: bool,
}

fn float_rows_default() -> bool {
    true
}

impl VectorConfig {
    /// The defaults for vectors of `dim` floats.
    pub fn new(dim: usize) -> Self {
        VectorConfig {
            dim,
            exact_below: DEFAULT_EXACT_BELOW,
            ef_search: DEFAULT_EF_SEARCH,
            hnsw: HnswParams::default(),
            compact_ratio: DEFAULT_COMPACT_RATIO,
            build_threads: 0,
            float_rows: true,
        }
    }

    fn threads(&self) -> usize {
        if self.build_threads > 0 {
            self.build_threads
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit<K> {
    /// The key the vector was inserted under.
    pub key: K,
    /// Cosine similarity to the query, in `[-1, 1]`.
    pub cosine: f32,
}

/// Nearest neighbours by cosine similarity, over keys of the caller's
/// choosing (`u64` row ids, fingerprints, …).
///
/// * Vectors are L2-normalised on the way in (a copy; the caller's slice is
///   untouched), so cosine is a dot product; queries are normalised too.
/// * Rows live in one contiguous arena ([`ExactScan`]). Below
///   [`VectorConfig::exact_below`] rows every search is an exact scan;
///   at that size a graph ([`Hnsw`], over the same arena — no second copy)
///   is built once, in parallel, and then grown one node per insert.
///   With [`VectorConfig::float_rows`] false the rows are kept as int8
///   codes only (a quarter of the bytes) and scored from them.
/// * [`VectorIndex::remove`] tombstones: the row stays (in the graph it
///   still routes searches) but is never returned — the graph search
///   filters while it walks, so a result is never short of live rows
///   because dead ones took their places (where the walk still comes up
///   short, the exact scan answers). When tombstones pass
///   [`VectorConfig::compact_ratio`] the arena is compacted and the graph
///   rebuilt.
/// * Inserting an existing key replaces its vector (old row tombstoned).
/// * [`VectorIndex::dump`]/[`VectorIndex::load`] write and read one file
///   holding rows, keys and graph, so a restart costs a file read, not a
///   rebuild (minutes at 100k rows).
pub struct VectorIndex<K = u64> {
    config: VectorConfig,
    arena: ExactScan,
    /// The arena's int8 codes, which the graph walks (kept level with the
    /// arena while there is a graph; empty below the crossover).
    codes: Codes,
    /// Slot → key; `None` is a tombstone.
    keys: Vec<Option<K>>,
    slot_of: HashMap<K, u32>,
    dead: usize,
    graph: Option<Hnsw>,
}

impl<K: Clone + Eq + Hash> VectorIndex<K> {
    /// An empty index.
    pub fn new(config: VectorConfig) -> Result<Self, VectorError> {
        if config.dim == 0 {
            return Err(VectorError::ZeroDimension);
        }
        Ok(VectorIndex {
            arena: ExactScan::new(config.dim),
            codes: Codes::new(config.dim),
            config,
            keys: Vec::new(),
            slot_of: HashMap::new(),
            dead: 0,
            graph: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &VectorConfig {
        &self.config
    }

    /// Floats per vector.
    pub fn dim(&self) -> usize {
        self.config.dim
    }

    /// Live (searchable) vectors.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// True when no live vector is stored.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Tombstoned rows awaiting compaction.
    pub fn tombstones(&self) -> usize {
        self.dead
    }

    /// Heap bytes held: rows, codes, graph, keys and the key map (by
    /// capacity; a key's own heap, if it has any, is not counted). What the
    /// runtime's accounting reports for an index, so a reader can set it
    /// beside the process's RSS.
    pub fn heap_bytes(&self) -> usize {
        // A `HashMap` entry: key, slot, and one control byte.
        let map = self.slot_of.capacity() * (size_of::<K>() + size_of::<u32>() + 1);
        self.arena.heap_bytes()
            + self.codes.heap_bytes()
            + self.graph.as_ref().map_or(0, Hnsw::heap_bytes)
            + self.keys.capacity() * size_of::<Option<K>>()
            + map
    }

    /// True when searches go through the graph.
    pub fn uses_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// True if `key` is stored.
    pub fn contains(&self, key: &K) -> bool {
        self.slot_of.contains_key(key)
    }

    /// The stored (normalised) vector of `key` (decoded from its codes
    /// when the index keeps no floats).
    pub fn get(&self, key: &K) -> Option<Cow<'_, [f32]>> {
        let &s = self.slot_of.get(key)?;
        Some(if self.config.float_rows { Cow::Borrowed(self.arena.row(s)) } else { Cow::Owned(self.codes.decode(s)) })
    }

    /// Rows stored, tombstones included: the arena's, or the codes' when
    /// the index keeps no floats.
    fn stored(&self) -> usize {
        if self.config.float_rows {
            self.arena.len()
        } else {
            self.codes.len()
        }
    }

    /// Changes the default search breadth (takes effect immediately; the
    /// graph does not depend on it).
    pub fn set_ef_search(&mut self, ef: usize) {
        self.config.ef_search = ef.max(1);
    }

    /// Checks and normalises `v` into a new vector.
    fn prepare(&self, v: &[f32]) -> Result<Vec<f32>, VectorError> {
        if v.len() != self.config.dim {
            return Err(VectorError::DimensionMismatch { expected: self.config.dim, got: v.len() });
        }
        if let Some((index, &value)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(VectorError::NonFinite { index, value });
        }
        let mut out = v.to_vec();
        let norm = crate::normalize(&mut out);
        if norm == 0.0 || !norm.is_finite() {
            return Err(VectorError::ZeroVector);
        }
        Ok(out)
    }

    /// Appends a prepared row; tombstones a previous row of the same key.
    fn push_row(&mut self, key: K, row: &[f32]) {
        let slot = if self.config.float_rows { self.arena.push(row) } else { self.codes.push(row) };
        if let Some(old) = self.slot_of.insert(key.clone(), slot) {
            self.keys[old as usize] = None;
            self.dead += 1;
        }
        self.keys.push(Some(key));
    }

    fn rows(&self) -> Rows<'_> {
        Rows { data: self.arena.rows(), dim: self.config.dim, kernel: self.arena.kernel(), codes: Some(&self.codes) }
    }

    /// Brings the graph in line with the arena: builds it (in parallel) once
    /// the index reaches the crossover, extends it otherwise.
    fn sync_graph(&mut self) {
        let threads = self.config.threads();
        let stored = self.stored();
        if self.config.float_rows && (self.graph.is_some() || stored >= self.config.exact_below) {
            self.codes.extend_from(self.arena.rows());
        }
        match self.graph.take() {
            Some(mut g) => {
                let rows = self.rows();
                g.extend(rows, threads);
                self.graph = Some(g);
            }
            None if stored >= self.config.exact_below && stored > 0 => {
                let mut g = Hnsw::new(self.config.hnsw);
                g.extend(self.rows(), threads);
                self.graph = Some(g);
            }
            None => {}
        }
    }

    /// Stores `v` under `key` (replacing any previous vector of `key`).
    ///
    /// Above the crossover this links one node into the graph
    /// (≈ `ef_construction` distance evaluations); the insert that reaches
    /// the crossover builds the whole graph.
    pub fn insert(&mut self, key: K, v: &[f32]) -> Result<(), VectorError> {
        let row = self.prepare(v)?;
        self.push_row(key, &row);
        self.sync_graph();
        Ok(())
    }

    /// Stores many vectors, then builds or extends the graph once, on
    /// [`VectorConfig::build_threads`] threads: the way to load a corpus.
    /// Nothing is stored if any vector is invalid.
    pub fn extend<'v, I>(&mut self, items: I) -> Result<(), VectorError>
    where
        I: IntoIterator<Item = (K, &'v [f32])>,
    {
        let items = items.into_iter();
        let mut prepared = Vec::with_capacity(items.size_hint().0);
        for (k, v) in items {
            prepared.push((k, self.prepare(v)?));
        }
        for (k, row) in prepared {
            self.push_row(k, &row);
        }
        self.sync_graph();
        self.maybe_compact();
        Ok(())
    }

    /// Deletes `key`; returns whether it was stored. The row is tombstoned
    /// and never returned again; past [`VectorConfig::compact_ratio`] the
    /// index compacts (which rebuilds the graph: seconds at 100k rows).
    pub fn remove(&mut self, key: &K) -> bool {
        let Some(slot) = self.slot_of.remove(key) else { return false };
        self.keys[slot as usize] = None;
        self.dead += 1;
        self.maybe_compact();
        true
    }

    fn maybe_compact(&mut self) {
        if self.dead > 0 && self.dead as f32 > self.config.compact_ratio * self.keys.len() as f32 {
            self.compact();
        }
    }

    /// Drops tombstoned rows and rebuilds the graph (if the live rows still
    /// reach the crossover). Slots are renumbered; keys are unaffected.
    pub fn compact(&mut self) {
        let mut arena = ExactScan::with_kernel(self.config.dim, self.arena.kernel());
        let mut codes = Codes::new(self.config.dim);
        let mut keys = Vec::with_capacity(self.len());
        for (slot, key) in self.keys.iter().enumerate() {
            if let Some(k) = key {
                let new = if self.config.float_rows {
                    arena.push(self.arena.row(slot as u32))
                } else {
                    let (c, scale) = self.codes.row(slot as u32);
                    codes.push_coded(c, scale)
                };
                self.slot_of.insert(k.clone(), new);
                keys.push(Some(k.clone()));
            }
        }
        self.arena = arena;
        self.codes = if self.config.float_rows { Codes::new(self.config.dim) } else { codes };
        self.keys = keys;
        self.dead = 0;
        self.graph = None;
        self.sync_graph();
    }

    /// The `k` stored vectors most similar to `query`, best first, searched
    /// with [`VectorConfig::ef_search`].
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<Hit<K>>, VectorError> {
        self.search_ef(query, k, self.config.ef_search)
    }

    /// [`VectorIndex::search`] with an explicit `ef` (ignored below the
    /// crossover, where the answer is exact anyway).
    pub fn search_ef(&self, query: &[f32], k: usize, ef: usize) -> Result<Vec<Hit<K>>, VectorError> {
        let q = self.prepare(query)?;
        let want = k.min(self.len());
        let found = match &self.graph {
            Some(g) => {
                let found = if self.dead == 0 {
                    g.search(&q, k, ef, self.rows(), |_| false)
                } else {
                    g.search(&q, k, ef, self.rows(), |s| self.keys[s as usize].is_none())
                };
                if found.len() < want {
                    self.scan(&q, k)
                } else {
                    found
                }
            }
            None => self.scan(&q, k),
        };
        Ok(self.hits(found))
    }

    /// The exact answer, whatever the size (ground truth for recall).
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<Hit<K>>, VectorError> {
        let q = self.prepare(query)?;
        Ok(self.hits(self.scan(&q, k)))
    }

    fn scan(&self, q: &[f32], k: usize) -> Vec<(u32, f32)> {
        if !self.config.float_rows {
            let mut top = crate::exact::TopK::new(k);
            for slot in 0..self.codes.len() as u32 {
                if self.keys[slot as usize].is_some() {
                    top.push(slot, self.codes.dot_f32(q, slot));
                }
            }
            return top.into_sorted();
        }
        if self.dead == 0 {
            self.arena.search(q, k)
        } else {
            self.arena.search_filtered(q, k, |s| self.keys[s as usize].is_none())
        }
    }

    fn hits(&self, found: Vec<(u32, f32)>) -> Vec<Hit<K>> {
        found
            .into_iter()
            .filter_map(|(s, cosine)| {
                self.keys[s as usize].clone().map(|key| Hit { key, cosine: cosine.clamp(-1.0, 1.0) })
            })
            .collect()
    }
}

/// The JSON header of an index file.
#[derive(Serialize, Deserialize)]
struct Header {
    config: VectorConfig,
    slots: usize,
    keys_bytes: usize,
    graph_words: usize,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> VectorError + '_ {
    move |source| VectorError::Io { path: path.to_owned(), source }
}

impl<K: Clone + Eq + Hash + Serialize + DeserializeOwned> VectorIndex<K> {
    /// Writes the whole index — configuration, rows, keys, tombstones and
    /// graph — to `path`, atomically (a temporary file renamed over it, so
    /// a crash leaves the old file or the new one, never half of one).
    ///
    /// Layout: `ENGRAMVX`, version (u32 LE), header length (u32 LE), JSON
    /// header, rows (f32 LE), keys (JSON array, `null` for tombstones),
    /// graph (u32 LE words), then the BLAKE3 hash of all that.
    pub fn dump(&self, path: &Path) -> Result<(), VectorError> {
        let keys =
            serde_json::to_vec(&self.keys).map_err(|source| VectorError::Keys { path: path.to_owned(), source })?;
        let graph = self.graph.as_ref().map(Hnsw::to_words).unwrap_or_default();
        let header = Header {
            config: self.config.clone(),
            slots: self.keys.len(),
            keys_bytes: keys.len(),
            graph_words: graph.len(),
        };
        let header =
            serde_json::to_vec(&header).map_err(|source| VectorError::Keys { path: path.to_owned(), source })?;
        let mut buf = Vec::with_capacity(
            16 + header.len() + 4 * self.stored() * self.config.dim + keys.len() + 4 * graph.len() + 32,
        );
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&VERSION.to_le_bytes());
        buf.extend_from_slice(&(header.len() as u32).to_le_bytes());
        buf.extend_from_slice(&header);
        // An index keeping codes only writes the floats they stand for
        // (one file format; its load encodes them again, to the same codes).
        if self.config.float_rows {
            for x in self.arena.rows().rows().flatten() {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        } else {
            for slot in 0..self.codes.len() as u32 {
                for x in self.codes.decode(slot) {
                    buf.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        buf.extend_from_slice(&keys);
        for w in &graph {
            buf.extend_from_slice(&w.to_le_bytes());
        }
        let hash = blake3::hash(&buf);
        buf.extend_from_slice(hash.as_bytes());

        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut file = std::fs::File::create(&tmp).map_err(io_err(&tmp))?;
        file.write_all(&buf).map_err(io_err(&tmp))?;
        file.sync_all().map_err(io_err(&tmp))?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(io_err(path))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    /// Reads an index written by [`VectorIndex::dump`]. Every length, id and
    /// the hash are checked: a damaged file is [`VectorError::Corrupt`],
    /// never a panic or a silently wrong index. The build-thread count is
    /// not stored (it belongs to the machine): it comes back as 0 (all).
    pub fn load(path: &Path) -> Result<Self, VectorError> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        let corrupt = |reason: &str| VectorError::Corrupt { path: path.to_owned(), reason: reason.to_owned() };
        if bytes.len() < 16 + 32 || &bytes[..8] != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let (body, hash) = bytes.split_at(bytes.len() - 32);
        if blake3::hash(body).as_bytes() != hash {
            return Err(corrupt("checksum mismatch"));
        }
        let version = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(corrupt(&format!("format version {version}, this build reads {VERSION}")));
        }
        let hlen = u32::from_le_bytes(body[12..16].try_into().expect("4 bytes")) as usize;
        let rest = &body[16..];
        if rest.len() < hlen {
            return Err(corrupt("truncated header"));
        }
        let (hbytes, rest) = rest.split_at(hlen);
        let header: Header = serde_json::from_slice(hbytes).map_err(|e| corrupt(&format!("header: {e}")))?;
        let dim = header.config.dim;
        if dim == 0 {
            return Err(corrupt("dimension 0"));
        }
        let floats = header.slots.checked_mul(dim).ok_or_else(|| corrupt("size overflow"))?;
        let need = floats
            .checked_mul(4)
            .and_then(|f| f.checked_add(header.keys_bytes))
            .and_then(|f| header.graph_words.checked_mul(4).and_then(|g| f.checked_add(g)))
            .ok_or_else(|| corrupt("size overflow"))?;
        if rest.len() != need {
            return Err(corrupt(&format!("body is {} bytes, header says {need}", rest.len())));
        }
        let (rbytes, rest) = rest.split_at(floats * 4);
        let (kbytes, gbytes) = rest.split_at(header.keys_bytes);
        let data: Vec<f32> =
            rbytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        let keys: Vec<Option<K>> =
            serde_json::from_slice(kbytes).map_err(|source| VectorError::Keys { path: path.to_owned(), source })?;
        if keys.len() != header.slots {
            return Err(corrupt("key count differs from row count"));
        }
        let mut slot_of = HashMap::with_capacity(keys.len());
        let mut dead = 0;
        for (slot, key) in keys.iter().enumerate() {
            match key {
                Some(k) => {
                    if slot_of.insert(k.clone(), slot as u32).is_some() {
                        return Err(corrupt("duplicate live key"));
                    }
                }
                None => dead += 1,
            }
        }
        let graph = if header.graph_words == 0 {
            None
        } else {
            let words: Vec<u32> =
                gbytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
            let g = Hnsw::from_words(header.config.hnsw, &words).ok_or_else(|| corrupt("inconsistent graph"))?;
            if g.len() != header.slots {
                return Err(corrupt("graph size differs from row count"));
            }
            Some(g)
        };
        let mut arena = ExactScan::from_flat(dim, &data);
        drop(data);
        let codes = if graph.is_some() || !header.config.float_rows {
            Codes::from_rows(dim, arena.rows())
        } else {
            Codes::new(dim)
        };
        if !header.config.float_rows {
            arena = ExactScan::new(dim);
        }
        Ok(VectorIndex { arena, codes, config: header.config, keys, slot_of, dead, graph })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{Synthetic, SyntheticSpec};

    fn data(n: usize, dim: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
        let spec = SyntheticSpec { n, dim, latent: 24, noise: 0.4, seed, ..SyntheticSpec::default() };
        let mut g = Synthetic::new(&spec);
        (g.base(n), g.base(50))
    }

    fn small_config(dim: usize, exact_below: usize) -> VectorConfig {
        VectorConfig {
            exact_below,
            hnsw: HnswParams { m: 12, ef_construction: 80, ..HnswParams::default() },
            build_threads: 2,
            ..VectorConfig::new(dim)
        }
    }

    /// Vectors that were int8 codes to begin with (memory's passages, as
    /// the log keeps them): an index keeping codes only answers as one
    /// keeping floats — same keys, same cosines less rounding — exact and
    /// through its graph, after deletes and a compaction and a round trip,
    /// without the floats' 4 bytes a dimension.
    #[test]
    fn codes_only_answers_as_floats_for_coded_vectors() {
        let dim = 48;
        let (base, queries) = data(1_500, dim, 11);
        // Each row as its codes stand for it.
        let coded: Vec<f32> = base
            .chunks_exact(dim)
            .flat_map(|r| {
                let mut c = vec![0i8; dim];
                let scale = crate::quantized::encode(r, &mut c);
                c.into_iter().map(move |x| x as f32 * scale)
            })
            .collect();
        let build = |float_rows: bool| {
            let mut idx: VectorIndex = VectorIndex::new(VectorConfig { float_rows, ..small_config(dim, 600) }).unwrap();
            for (i, row) in coded.chunks_exact(dim).take(700).enumerate() {
                idx.insert(i as u64, row).unwrap();
            }
            idx.extend(coded.chunks_exact(dim).enumerate().skip(700).map(|(i, r)| (i as u64, r))).unwrap();
            for k in (0..1_500).step_by(4) {
                idx.remove(&k);
            }
            idx
        };
        let (floats, codes) = (build(true), build(false));
        assert!(floats.uses_graph() && codes.uses_graph());
        // The floats' 4 bytes a dimension gone (less the blocks' slack).
        let saved = floats.heap_bytes() - codes.heap_bytes();
        assert!(saved >= 1_500 * dim * 3, "{} vs {}", codes.heap_bytes(), floats.heap_bytes());
        let same = |a: Vec<Hit<u64>>, b: Vec<Hit<u64>>| {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!((x.cosine - y.cosine).abs() < 1e-5, "{} vs {}", x.cosine, y.cosine);
            }
            let (ka, kb): (Vec<u64>, Vec<u64>) = (a.iter().map(|h| h.key).collect(), b.iter().map(|h| h.key).collect());
            // Equal up to ties a rounding can reorder.
            assert!(ka.iter().filter(|k| kb.contains(k)).count() + 1 >= ka.len(), "{ka:?} vs {kb:?}");
        };
        for q in queries.chunks_exact(dim) {
            same(floats.search_exact(q, 10).unwrap(), codes.search_exact(q, 10).unwrap());
            let got = codes.search(q, 10).unwrap();
            assert!(got.iter().all(|h| h.key % 4 != 0), "a deleted key came back");
        }
        let k = 7u64;
        let (a, b) = (floats.get(&k).unwrap(), codes.get(&k).unwrap());
        assert!(a.iter().zip(b.iter()).all(|(x, y)| (x - y).abs() < 1e-5));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codes.vx");
        codes.dump(&path).unwrap();
        let loaded: VectorIndex = VectorIndex::load(&path).unwrap();
        assert!(!loaded.config().float_rows);
        for q in queries.chunks_exact(dim) {
            same(codes.search(q, 10).unwrap(), loaded.search(q, 10).unwrap());
        }
        let mut compacted = build(false);
        compacted.compact();
        assert_eq!(compacted.tombstones(), 0);
        for q in queries.chunks_exact(dim) {
            same(codes.search_exact(q, 10).unwrap(), compacted.search_exact(q, 10).unwrap());
        }
    }

    #[test]
    fn dimension_and_value_errors() {
        let mut idx: VectorIndex = VectorIndex::new(VectorConfig::new(4)).unwrap();
        assert!(matches!(idx.insert(1, &[1.0, 2.0, 3.0]), Err(VectorError::DimensionMismatch { expected: 4, got: 3 })));
        assert!(matches!(idx.insert(1, &[0.0; 4]), Err(VectorError::ZeroVector)));
        assert!(matches!(idx.insert(1, &[1.0, f32::NAN, 0.0, 0.0]), Err(VectorError::NonFinite { index: 1, .. })));
        assert!(matches!(idx.search(&[1.0; 5], 3), Err(VectorError::DimensionMismatch { expected: 4, got: 5 })));
        assert!(matches!(VectorIndex::<u64>::new(VectorConfig::new(0)), Err(VectorError::ZeroDimension)));
        let msg = idx.search(&[1.0; 5], 3).unwrap_err().to_string();
        assert!(msg.contains('5') && msg.contains('4'), "{msg}");
        assert!(idx.is_empty());
    }

    #[test]
    fn small_index_is_exact_and_normalises() {
        let mut idx: VectorIndex<String> = VectorIndex::new(VectorConfig::new(3)).unwrap();
        idx.insert("x".into(), &[2.0, 0.0, 0.0]).unwrap();
        idx.insert("y".into(), &[0.0, 5.0, 0.0]).unwrap();
        idx.insert("xy".into(), &[1.0, 1.0, 0.0]).unwrap();
        let hits = idx.search(&[10.0, 0.0, 0.0], 2).unwrap();
        assert_eq!(hits[0], Hit { key: "x".into(), cosine: 1.0 });
        assert_eq!(hits[1].key, "xy");
        assert!((hits[1].cosine - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!(!idx.uses_graph());
        // Upsert replaces.
        idx.insert("x".into(), &[0.0, 0.0, 1.0]).unwrap();
        assert_eq!(idx.len(), 3);
        assert_eq!(idx.search(&[1.0, 0.0, 0.0], 1).unwrap()[0].key, "xy");
    }

    #[test]
    fn graph_recall_deletes_and_round_trip() {
        let dim = 48;
        let (base, queries) = data(2_000, dim, 7);
        let mut idx: VectorIndex = VectorIndex::new(small_config(dim, 800)).unwrap();
        // One at a time up to the crossover, then in bulk.
        for (i, row) in base.chunks_exact(dim).take(900).enumerate() {
            idx.insert(i as u64, row).unwrap();
        }
        assert!(idx.uses_graph());
        idx.extend(base.chunks_exact(dim).enumerate().skip(900).map(|(i, r)| (i as u64, r))).unwrap();
        assert_eq!(idx.len(), 2_000);

        let recall = |idx: &VectorIndex| {
            let mut hit = 0;
            for q in queries.chunks_exact(dim) {
                let want: Vec<u64> = idx.search_exact(q, 10).unwrap().into_iter().map(|h| h.key).collect();
                let got = idx.search(q, 10).unwrap();
                assert_eq!(got.len(), 10);
                hit += got.iter().filter(|h| want.contains(&h.key)).count();
            }
            hit as f64 / (10 * queries.len() / dim) as f64
        };
        let r = recall(&idx);
        assert!(r >= 0.95, "recall@10 {r}");

        // Delete every key that any query's top 20 holds: none may come back.
        let mut deleted = std::collections::HashSet::new();
        for q in queries.chunks_exact(dim).take(10) {
            for h in idx.search_exact(q, 20).unwrap() {
                deleted.insert(h.key);
            }
        }
        for k in &deleted {
            assert!(idx.remove(k));
        }
        assert!(!idx.remove(&u64::MAX));
        assert!(idx.tombstones() > 0 && idx.tombstones() < 400, "below the compaction ratio");
        for q in queries.chunks_exact(dim) {
            let got = idx.search(q, 10).unwrap();
            assert_eq!(got.len(), 10);
            assert!(got.iter().all(|h| !deleted.contains(&h.key)));
        }
        assert!(recall(&idx) >= 0.95);

        // Dump and load: identical answers, tombstones included.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.vx");
        idx.dump(&path).unwrap();
        let back: VectorIndex = VectorIndex::load(&path).unwrap();
        assert_eq!(back.len(), idx.len());
        assert_eq!(back.tombstones(), idx.tombstones());
        assert!(back.uses_graph());
        for q in queries.chunks_exact(dim) {
            assert_eq!(back.search(q, 10).unwrap(), idx.search(q, 10).unwrap());
            assert_eq!(back.search_ef(q, 5, 16).unwrap(), idx.search_ef(q, 5, 16).unwrap());
        }

        // A flipped byte is caught.
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(VectorIndex::<u64>::load(&path), Err(VectorError::Corrupt { .. })));

        // Past the ratio: compaction, and still nothing deleted returns.
        let victims: Vec<u64> = (0..2_000u64).filter(|k| k % 3 == 0 && !deleted.contains(k)).collect();
        for k in &victims {
            idx.remove(k);
        }
        assert!(idx.tombstones() < idx.len() / 4, "compacted");
        assert!(idx.uses_graph());
        for q in queries.chunks_exact(dim) {
            let got = idx.search(q, 10).unwrap();
            assert!(got.iter().all(|h| h.key % 3 != 0 && !deleted.contains(&h.key)));
        }
        assert!(recall(&idx) >= 0.95);
    }
}
