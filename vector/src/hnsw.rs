//! A compact HNSW graph (Malkov & Yashunin) over the exact scan's arena.
//!
//! Why not hnsw_rs's own graph: measured in the same run at 20k × 384
//! (`engram bench knn --synthetic 20000 --hnsw-rs`, m 16, ef_construction
//! 200, one query thread), hnsw_rs with our vectorised distance answered
//! ≈ 2,200 queries/s at ef 64 with recall@10 0.93 (0.95 only at ef 128,
//! ≈ 1,450/s) and took 15 s to build; this graph gives ≈ 9,000/s at 0.98
//! and builds in ≈ 3 s. hnsw_rs pays two `Arc` allocations, a hash-map
//! insert and a lock per visited node, and keeps its own copy of every
//! vector. This graph is laid out the way hnswlib's is:
//!
//! * the vectors stay in the caller's contiguous arena (no copy);
//! * layer-0 links are one flat array of `u32`, `1 + m0` per node (count,
//!   then ids); the few nodes on upper layers have their lists in a second
//!   flat array;
//! * "visited" is a generation-tagged `u32` per node, reused across queries
//!   (thread-local), so a query allocates nothing but its two heaps;
//! * the whole rows of the next few unvisited neighbours are prefetched
//!   while the current one is scored (measured: 1.5-2x at 20k rows).
//!
//! Neighbours are chosen with the diversity heuristic (a candidate is kept
//! only if it is closer to the new node than to any neighbour already
//! kept), which is what gives hnswlib/faiss their recall at small `ef`.
//!
//! Links are `AtomicU32`s written under a per-node mutex and read without
//! one, so the bulk build runs on several threads while searches inside it
//! see possibly stale — never invalid — lists; after the build, reads are
//! plain loads.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use crate::blocks::RowBlocks;
use crate::distance::Kernel;
use crate::quantized::{CodedQuery, Codes};
use crate::rng::Rng;

/// Highest layer a node can be drawn on (`m = 16` reaches 8 layers at ~4
/// billion nodes).
const MAX_LEVEL: u8 = 16;

/// How many vectors ahead of the one being scored the search prefetches.
/// Measured at 20k × 384 (ef 48, p50): 1 → 90 µs, 2 → 80, 4 → 81, 6 → 77,
/// 10 → 78, 16 → 83, all → 85 — enough loads in flight to cover memory
/// latency, not so many that they evict each other.
const PREFETCH_AHEAD: usize = 6;

/// No node (an empty graph's entry point).
const NONE: u32 = u32::MAX;

/// Graph-shape parameters, fixed at build time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HnswParams {
    /// Links per node on the upper layers; layer 0 keeps `2 * m`. More links
    /// raise recall at a given `ef` and cost memory and build time.
    pub m: usize,
    /// Candidate-list size while inserting: the build-time `ef`.
    pub ef_construction: usize,
    /// Seed of the layer draws, so a rebuild of the same data is alike.
    pub seed: u64,
}

impl Default for HnswParams {
    /// `m = 16, ef_construction = 200`: the values faiss and hnswlib are
    /// usually run with, so figures compare like for like.
    fn default() -> Self {
        HnswParams { m: 16, ef_construction: 200, seed: 0x5EED }
    }
}

/// A candidate: distance to the query (`1 − cosine`) and node.
#[derive(Clone, Copy, Debug)]
struct Cand {
    dist: f32,
    node: u32,
}

impl PartialEq for Cand {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
/// Farther is greater (so `BinaryHeap<Cand>` has the farthest on top);
/// ties by node id, for determinism.
impl Ord for Cand {
    fn cmp(&self, other: &Self) -> Ordering {
        self.dist.total_cmp(&other.dist).then(self.node.cmp(&other.node))
    }
}

/// Min-heap adaptor: nearest on top.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Near(std::cmp::Reverse<Cand>);

/// Per-thread search scratch: visited tags and the two heaps, kept between
/// queries so a search does not allocate.
#[derive(Default)]
struct Scratch {
    tags: Vec<u32>,
    generation: u32,
    top: BinaryHeap<Cand>,
    cands: BinaryHeap<Near>,
    pending: Vec<u32>,
}

impl Scratch {
    /// Starts a new visit over `n` nodes.
    fn begin(&mut self, n: usize) {
        if self.tags.len() < n {
            self.tags.resize(n, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.tags.fill(0);
            self.generation = 1;
        }
        self.top.clear();
        self.cands.clear();
    }

    /// Marks `node` visited; false if it already was.
    #[inline]
    fn visit(&mut self, node: u32) -> bool {
        let t = &mut self.tags[node as usize];
        if *t == self.generation {
            false
        } else {
            *t = self.generation;
            true
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The vectors a graph is built over: `dim` floats per node, in the
/// arena's blocks.
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    /// The arena.
    pub data: &'a RowBlocks<f32>,
    /// Floats per row.
    pub dim: usize,
    /// The dot-product kernel.
    pub kernel: Kernel,
    /// The rows' int8 codes, when the caller keeps them (as
    /// [`crate::VectorIndex`] does): a search then walks the graph on them
    /// and re-scores its candidates on `data`. Building always uses `data`.
    pub codes: Option<&'a Codes>,
}

impl Rows<'_> {
    #[inline]
    fn row(&self, node: u32) -> &'_ [f32] {
        self.data.row(node)
    }

    #[inline]
    fn dist(&self, q: &[f32], node: u32) -> f32 {
        1.0 - self.kernel.dot(q, self.row(node))
    }

    #[inline]
    fn prefetch(&self, node: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            if (node as usize) < self.data.len() {
                let p = self.data.row(node).as_ptr() as *const i8;
                // The whole row: measured 12% faster than its first two
                // lines and leaving the rest to the hardware prefetcher.
                for line in 0..self.dim.div_ceil(16) {
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

/// How a walk scores nodes against its query: on the rows themselves (the
/// build, and searches without codes) or on their int8 codes.
trait Scorer {
    /// `1 − cosine` of the query and `node` (approximate for codes).
    fn dist(&self, node: u32) -> f32;
    /// Asks for `node`'s row ahead of scoring it.
    fn prefetch(&self, node: u32);
}

/// Scores on the `f32` rows.
struct Exact<'a> {
    rows: Rows<'a>,
    q: &'a [f32],
}

impl Scorer for Exact<'_> {
    #[inline]
    fn dist(&self, node: u32) -> f32 {
        self.rows.dist(self.q, node)
    }
    #[inline]
    fn prefetch(&self, node: u32) {
        self.rows.prefetch(node)
    }
}

/// Scores on the int8 codes.
struct Coded<'a> {
    codes: &'a Codes,
    q: CodedQuery,
}

impl Scorer for Coded<'_> {
    #[inline]
    fn dist(&self, node: u32) -> f32 {
        1.0 - self.q.dot(self.codes, node)
    }
    #[inline]
    fn prefetch(&self, node: u32) {
        self.codes.prefetch(node)
    }
}

/// Scores `nodes` in order, handing each `(node, distance)` to `f`, with
/// each row asked for [`PREFETCH_AHEAD`] nodes before it is scored.
#[inline]
fn score_ahead(sc: &impl Scorer, nodes: &[u32], mut f: impl FnMut(u32, f32)) {
    for &nb in nodes.iter().take(PREFETCH_AHEAD) {
        sc.prefetch(nb);
    }
    for (i, &nb) in nodes.iter().enumerate() {
        if let Some(&next) = nodes.get(i + PREFETCH_AHEAD) {
            sc.prefetch(next);
        }
        f(nb, sc.dist(nb));
    }
}

/// The graph: layers of links over nodes `0..len()`, node = arena slot.
#[derive(Debug)]
pub struct Hnsw {
    params: HnswParams,
    m0: usize,
    /// Layer of each node.
    levels: Vec<u8>,
    /// Layer 0: `1 + m0` per node — count, then ids.
    base: Vec<AtomicU32>,
    /// Start in `upper` of each node's upper-layer lists (`NONE` if level 0).
    upper_off: Vec<u32>,
    /// `level * (1 + m)` per node above layer 0.
    upper: Vec<AtomicU32>,
    /// Entry point and top layer; readers take a copy under the lock.
    entry: Mutex<(u32, u8)>,
    /// Writers of node `i`'s lists hold `locks[i]`.
    locks: Vec<Mutex<()>>,
}

fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hnsw {
    /// An empty graph.
    ///
    /// # Panics
    /// If `m < 2` (the layer distribution needs `ln m > 0`) or `m > 1024`.
    pub fn new(params: HnswParams) -> Self {
        assert!((2..=1024).contains(&params.m), "hnsw m must be in 2..=1024");
        Hnsw {
            params,
            m0: 2 * params.m,
            levels: Vec::new(),
            base: Vec::new(),
            upper_off: Vec::new(),
            upper: Vec::new(),
            entry: Mutex::new((NONE, 0)),
            locks: Vec::new(),
        }
    }

    /// Heap bytes held by the links and locks (capacities, so what the
    /// allocator gave): the graph's share of an index's cost.
    pub fn heap_bytes(&self) -> usize {
        self.levels.capacity()
            + (self.base.capacity() + self.upper.capacity()) * size_of::<AtomicU32>()
            + self.upper_off.capacity() * size_of::<u32>()
            + self.locks.capacity() * size_of::<Mutex<()>>()
    }

    /// The build parameters.
    pub fn params(&self) -> HnswParams {
        self.params
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// True when the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// The layer node `i` is drawn on: `floor(-ln U / ln m)`, from a hash of
    /// the seed and the node, so it does not depend on insertion order.
    fn draw_level(&self, node: u32) -> u8 {
        let mut rng = Rng::new(self.params.seed ^ (node as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let u = rng.unit().max(f64::MIN_POSITIVE);
        let l = (-u.ln() / (self.params.m as f64).ln()).floor();
        l.min(MAX_LEVEL as f64) as u8
    }

    /// Allocates node `len()` (with no links) and returns it.
    fn add_node(&mut self) -> u32 {
        let node = u32::try_from(self.levels.len()).expect("more than u32::MAX nodes");
        let level = self.draw_level(node);
        self.levels.push(level);
        self.base.extend((0..1 + self.m0).map(|_| AtomicU32::new(0)));
        if level > 0 {
            let off = u32::try_from(self.upper.len()).expect("upper-layer links overflow u32");
            self.upper_off.push(off);
            self.upper.extend((0..level as usize * (1 + self.params.m)).map(|_| AtomicU32::new(0)));
        } else {
            self.upper_off.push(NONE);
        }
        self.locks.push(Mutex::new(()));
        node
    }

    #[inline]
    fn links(&self, node: u32, level: u8) -> &[AtomicU32] {
        if level == 0 {
            let s = node as usize * (1 + self.m0);
            &self.base[s..s + 1 + self.m0]
        } else {
            let w = 1 + self.params.m;
            let s = self.upper_off[node as usize] as usize + (level as usize - 1) * w;
            &self.upper[s..s + w]
        }
    }

    /// Copies node's list on `level` into `out`.
    fn read_links(&self, node: u32, level: u8, out: &mut Vec<u32>) {
        let l = self.links(node, level);
        let n = (l[0].load(Relaxed) as usize).min(l.len() - 1);
        out.clear();
        out.extend(l[1..1 + n].iter().map(|a| a.load(Relaxed)));
    }

    /// Overwrites node's list on `level` (caller holds the node's lock).
    fn write_links(&self, node: u32, level: u8, ids: &[u32]) {
        let l = self.links(node, level);
        debug_assert!(ids.len() < l.len());
        for (slot, id) in l[1..].iter().zip(ids) {
            slot.store(*id, Relaxed);
        }
        l[0].store(ids.len() as u32, Relaxed);
    }

    /// Inserts arena rows `len()..rows.len()` in parallel on `threads`
    /// threads (1: in order on this thread, fully deterministic).
    ///
    /// # Panics
    /// If the arena holds fewer rows than the graph has nodes.
    pub fn extend(&mut self, rows: Rows<'_>, threads: usize) {
        let total = rows.data.len();
        let first = self.len();
        assert!(total >= first, "arena shrank under the graph");
        for _ in first..total {
            self.add_node();
        }
        let this = &*self;
        let next = AtomicUsize::new(first);
        // The first node of an empty graph becomes the entry point; insert
        // a handful serially so the threads start from a connected core.
        let serial_end = (first + 64).min(total);
        for node in first..serial_end {
            this.insert(node as u32, rows);
        }
        next.store(serial_end, Relaxed);
        let threads = threads.max(1).min((total - serial_end).div_ceil(256).max(1));
        let work = || loop {
            let node = next.fetch_add(1, Relaxed);
            if node >= total {
                break;
            }
            this.insert(node as u32, rows);
        };
        if threads == 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(work);
                }
            });
            this.link_orphans(rows);
        }
    }

    /// After a parallel build: gives every layer-0 node nothing links to
    /// (but the entry point) an in-link, from the nearest of its own
    /// neighbours that has room (else the nearest), so that every node can
    /// be found. Threads searching stale lists leave a few such orphans
    /// that a serial build does not (measured: 2 of 20 000 with two
    /// threads, after `insert` stopped dropping concurrent links), and no
    /// `ef` finds an orphan: recall stopped at 0.999.
    fn link_orphans(&self, rows: Rows<'_>) {
        let n = self.len();
        let entry = self.entry.lock().unwrap_or_else(|p| p.into_inner()).0;
        let (mut links, mut theirs) = (Vec::new(), Vec::new());
        // A link added may push another out of a full list: a few rounds.
        for _ in 0..4 {
            let mut linked = vec![false; n];
            for v in 0..n as u32 {
                self.read_links(v, 0, &mut links);
                links.iter().for_each(|&w| linked[w as usize] = true);
            }
            let orphans: Vec<u32> = (0..n as u32).filter(|&v| v != entry && !linked[v as usize]).collect();
            if orphans.is_empty() {
                return;
            }
            for orphan in orphans {
                self.read_links(orphan, 0, &mut links);
                let q = rows.row(orphan);
                let mut near: Vec<Cand> = links.iter().map(|&w| Cand { dist: rows.dist(q, w), node: w }).collect();
                near.sort_unstable();
                let with_room = near.iter().find(|c| {
                    self.read_links(c.node, 0, &mut theirs);
                    theirs.len() < self.m0
                });
                if let Some(c) = with_room.or(near.first()) {
                    self.connect(c.node, orphan, c.dist, 0, self.m0, rows, &mut theirs);
                }
            }
        }
    }

    /// Links node `node` (already allocated) into the graph.
    fn insert(&self, node: u32, rows: Rows<'_>) {
        let level = self.levels[node as usize];
        let q = rows.row(node);
        // A node that raises the top layer holds the entry lock for its
        // whole insertion (rare: one node in m^level), as hnswlib does.
        let mut guard = self.entry.lock().unwrap_or_else(|p| p.into_inner());
        let (ep, top) = *guard;
        if ep == NONE {
            *guard = (node, level);
            return;
        }
        let held = if level > top {
            Some(guard)
        } else {
            drop(guard);
            None
        };

        let exact = Exact { rows, q };
        let mut cur = Cand { dist: rows.dist(q, ep), node: ep };
        let mut buf = Vec::with_capacity(self.m0);
        let mut l = top;
        while l > level {
            cur = self.greedy(&exact, cur, l, &mut buf);
            l -= 1;
        }
        let mut l = level.min(top) as i32;
        while l >= 0 {
            let layer = l as u8;
            let found = SCRATCH.with(|s| {
                let mut s = s.borrow_mut();
                self.search_layer(&exact, &[cur], self.params.ef_construction, layer, &mut s, |_| false)
            });
            let found: Vec<Cand> = found.into_iter().filter(|c| c.node != node).collect();
            let chosen = self.select(&found, self.params.m, rows);
            let cap = if layer == 0 { self.m0 } else { self.params.m };
            {
                let _g = lock(&self.locks[node as usize]);
                // Another insertion that reached this node through its
                // upper-layer links may already have linked itself here;
                // overwriting the list would drop that link, and a node
                // whose every in-link is dropped is never found again
                // (measured: 7 of 20 000 nodes with two build threads,
                // recall stuck at 0.999). Keep them, as `connect` does.
                self.read_links(node, layer, &mut buf);
                let mut mine: Vec<Cand> = chosen.clone();
                let base = rows.row(node);
                for &n in buf.iter().filter(|&&n| !chosen.iter().any(|c| c.node == n)) {
                    mine.push(Cand { dist: rows.dist(base, n), node: n });
                }
                mine.sort_unstable();
                let kept = if mine.len() > cap { self.select(&mine, cap, rows) } else { mine };
                self.write_links(node, layer, &kept.iter().map(|c| c.node).collect::<Vec<_>>());
            }
            for c in &chosen {
                self.connect(c.node, node, c.dist, layer, cap, rows, &mut buf);
            }
            if let Some(best) = found.first() {
                cur = *best;
            }
            l -= 1;
        }
        if let Some(mut g) = held {
            *g = (node, level);
        }
    }

    /// Greedy descent on one upper layer: move to the nearest neighbour
    /// until none is nearer.
    fn greedy(&self, sc: &impl Scorer, mut cur: Cand, level: u8, buf: &mut Vec<u32>) -> Cand {
        loop {
            self.read_links(cur.node, level, buf);
            let mut moved = false;
            for &nb in buf.iter() {
                let d = sc.dist(nb);
                if d < cur.dist {
                    cur = Cand { dist: d, node: nb };
                    moved = true;
                }
            }
            if !moved {
                return cur;
            }
        }
    }

    /// Adds `new` to `node`'s list on `level`; a full list is re-chosen with
    /// the heuristic among its members and `new`.
    #[allow(clippy::too_many_arguments)]
    fn connect(&self, node: u32, new: u32, dist: f32, level: u8, cap: usize, rows: Rows<'_>, buf: &mut Vec<u32>) {
        let _g = lock(&self.locks[node as usize]);
        self.read_links(node, level, buf);
        if buf.contains(&new) {
            return;
        }
        if buf.len() < cap {
            buf.push(new);
            self.write_links(node, level, buf);
            return;
        }
        let base = rows.row(node);
        let mut cands: Vec<Cand> = buf.iter().map(|&n| Cand { dist: rows.dist(base, n), node: n }).collect();
        cands.push(Cand { dist, node: new });
        cands.sort_unstable();
        let kept = self.select(&cands, cap, rows);
        buf.clear();
        buf.extend(kept.iter().map(|c| c.node));
        self.write_links(node, level, buf);
    }

    /// The diversity heuristic: walking `sorted` nearest first, keep a
    /// candidate unless it is nearer to an already kept one than to the
    /// base point; at most `m`.
    fn select(&self, sorted: &[Cand], m: usize, rows: Rows<'_>) -> Vec<Cand> {
        if sorted.len() <= m {
            return sorted.to_vec();
        }
        let mut kept: Vec<Cand> = Vec::with_capacity(m);
        for c in sorted {
            if kept.len() >= m {
                break;
            }
            let v = rows.row(c.node);
            if kept.iter().all(|k| rows.dist(v, k.node) >= c.dist) {
                kept.push(*c);
            }
        }
        kept
    }

    /// Best-first search of one layer from `entries`, keeping the `ef`
    /// nearest nodes for which `skip` is false (skipped nodes are still
    /// walked through: a tombstone keeps routing). Returns them nearest
    /// first.
    fn search_layer(
        &self,
        sc: &impl Scorer,
        entries: &[Cand],
        ef: usize,
        level: u8,
        s: &mut Scratch,
        skip: impl Fn(u32) -> bool,
    ) -> Vec<Cand> {
        s.begin(self.len());
        let ef = ef.max(1);
        for e in entries {
            if s.visit(e.node) {
                s.cands.push(Near(std::cmp::Reverse(*e)));
                if !skip(e.node) {
                    s.top.push(*e);
                }
            }
        }
        let mut bound = if s.top.len() >= ef { s.top.peek().map_or(f32::INFINITY, |c| c.dist) } else { f32::INFINITY };
        while let Some(Near(std::cmp::Reverse(c))) = s.cands.pop() {
            if c.dist > bound {
                break;
            }
            let links = self.links(c.node, level);
            let n = (links[0].load(Relaxed) as usize).min(links.len() - 1);
            // Gather the unvisited first (cheap tag checks), so the
            // prefetches below are spent on vectors we will score.
            let mut pending = std::mem::take(&mut s.pending);
            pending.clear();
            for nb in &links[1..1 + n] {
                let nb = nb.load(Relaxed);
                if s.visit(nb) {
                    pending.push(nb);
                }
            }
            score_ahead(sc, &pending, |nb, d| {
                if d < bound || s.top.len() < ef {
                    s.cands.push(Near(std::cmp::Reverse(Cand { dist: d, node: nb })));
                    if !skip(nb) {
                        s.top.push(Cand { dist: d, node: nb });
                        if s.top.len() > ef {
                            s.top.pop();
                        }
                        if s.top.len() >= ef {
                            bound = s.top.peek().map_or(f32::INFINITY, |c| c.dist);
                        }
                    }
                }
            });
            s.pending = pending;
        }
        let mut out: Vec<Cand> = s.top.drain().collect();
        out.sort_unstable();
        out
    }

    /// The `k` nodes nearest `query` for which `skip` is false, as
    /// `(node, cosine)` best first, exploring `max(ef, k)` candidates on
    /// layer 0. `query` must be unit length and as long as the rows.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        rows: Rows<'_>,
        skip: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let (ep, top) = *self.entry.lock().unwrap_or_else(|p| p.into_inner());
        if ep == NONE || k == 0 {
            return Vec::new();
        }
        match rows.codes.filter(|c| c.len() >= self.len()) {
            Some(codes) => {
                let coded = Coded { codes, q: CodedQuery::new(query, rows.kernel) };
                let found = self.walk(&coded, ep, top, ef.max(k), skip);
                // Re-score the walk's candidates on the rows: the answer's
                // order and cosines are full precision.
                let nodes: Vec<u32> = found.iter().map(|c| c.node).collect();
                let mut rescored = Vec::with_capacity(nodes.len());
                score_ahead(&Exact { rows, q: query }, &nodes, |node, dist| rescored.push(Cand { dist, node }));
                rescored.sort_unstable();
                rescored.into_iter().take(k).map(|c| (c.node, 1.0 - c.dist)).collect()
            }
            None => {
                let found = self.walk(&Exact { rows, q: query }, ep, top, ef.max(k), skip);
                found.into_iter().take(k).map(|c| (c.node, 1.0 - c.dist)).collect()
            }
        }
    }

    /// Descends the upper layers greedily from `ep`, then searches layer 0
    /// keeping `ef` candidates, nearest first.
    fn walk(&self, sc: &impl Scorer, ep: u32, top: u8, ef: usize, skip: impl Fn(u32) -> bool) -> Vec<Cand> {
        let mut cur = Cand { dist: sc.dist(ep), node: ep };
        let mut buf = Vec::with_capacity(self.m0);
        for l in (1..=top).rev() {
            cur = self.greedy(sc, cur, l, &mut buf);
        }
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            self.search_layer(sc, &[cur], ef, 0, &mut s, skip)
        })
    }

    /// The graph as plain integers, for persistence: per node its level,
    /// then every list (count-prefixed) layer 0 first; the entry point and
    /// top layer first of all.
    pub fn to_words(&self) -> Vec<u32> {
        let (ep, top) = *self.entry.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::with_capacity(3 + self.base.len() + self.upper.len() + self.levels.len());
        out.extend([self.levels.len() as u32, ep, top as u32]);
        out.extend(self.levels.iter().map(|&l| l as u32));
        out.extend(self.base.iter().map(|a| a.load(Relaxed)));
        out.extend(self.upper.iter().map(|a| a.load(Relaxed)));
        out
    }

    /// Rebuilds a graph from [`Hnsw::to_words`]; `None` if the words are
    /// not a consistent graph of `params` (wrong lengths, ids out of
    /// range), so a corrupt file is an error, not a panic later.
    pub fn from_words(params: HnswParams, words: &[u32]) -> Option<Hnsw> {
        if !(2..=1024).contains(&params.m) {
            return None;
        }
        let mut g = Hnsw::new(params);
        let (&n, rest) = words.split_first()?;
        let (&ep, rest) = rest.split_first()?;
        let (&top, rest) = rest.split_first()?;
        let n = n as usize;
        if rest.len() < n {
            return None;
        }
        let (levels, rest) = rest.split_at(n);
        let mut upper_len = 0usize;
        for &l in levels {
            if l > MAX_LEVEL as u32 {
                return None;
            }
            g.levels.push(l as u8);
            if l > 0 {
                g.upper_off.push(u32::try_from(upper_len).ok()?);
                upper_len += l as usize * (1 + params.m);
            } else {
                g.upper_off.push(NONE);
            }
        }
        let base_len = n.checked_mul(1 + g.m0)?;
        if rest.len() != base_len + upper_len {
            return None;
        }
        let (base, upper) = rest.split_at(base_len);
        let ok_list = |list: &[u32]| {
            let c = list[0] as usize;
            c < list.len() && list[1..1 + c].iter().all(|&id| (id as usize) < n)
        };
        if !base.chunks_exact(1 + g.m0).all(ok_list) || !upper.chunks_exact(1 + params.m).all(ok_list) {
            return None;
        }
        // An upper-layer list may only name nodes that reach that layer
        // (the search indexes their upper lists).
        for (node, &l) in levels.iter().enumerate() {
            for layer in 1..=l as usize {
                let s = g.upper_off[node] as usize + (layer - 1) * (1 + params.m);
                let list = &upper[s..s + 1 + params.m];
                if list[1..1 + list[0] as usize].iter().any(|&id| (levels[id as usize] as usize) < layer) {
                    return None;
                }
            }
        }
        if n == 0 {
            if ep != NONE {
                return None;
            }
        } else if ep as usize >= n || top > MAX_LEVEL as u32 || levels[ep as usize] != top {
            return None;
        }
        g.base = base.iter().map(|&w| AtomicU32::new(w)).collect();
        g.upper = upper.iter().map(|&w| AtomicU32::new(w)).collect();
        g.locks = (0..n).map(|_| Mutex::new(())).collect();
        g.entry = Mutex::new((ep, top as u8));
        Some(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::ExactScan;
    use crate::synthetic::{Synthetic, SyntheticSpec};

    fn recall(g: &Hnsw, scan: &ExactScan, queries: &[f32], k: usize, ef: usize) -> f64 {
        let dim = scan.dim();
        let rows = Rows { data: scan.rows(), dim, kernel: scan.kernel(), codes: None };
        let mut hit = 0;
        let mut total = 0;
        for q in queries.chunks_exact(dim) {
            let want: Vec<u32> = scan.search(q, k).into_iter().map(|x| x.0).collect();
            let got = g.search(q, k, ef, rows, |_| false);
            hit += got.iter().filter(|x| want.contains(&x.0)).count();
            total += want.len();
        }
        hit as f64 / total as f64
    }

    #[test]
    fn recall_on_structured_data_and_round_trip() {
        let spec = SyntheticSpec { n: 2_000, dim: 48, latent: 24, noise: 0.4, ..SyntheticSpec::default() };
        let mut gen = Synthetic::new(&spec);
        let scan = ExactScan::from_flat(spec.dim, &gen.base(spec.n));
        let queries = gen.base(100);
        let mut g = Hnsw::new(HnswParams { m: 12, ef_construction: 100, ..HnswParams::default() });
        g.extend(Rows { data: scan.rows(), dim: spec.dim, kernel: scan.kernel(), codes: None }, 2);
        assert_eq!(g.len(), spec.n);
        let r = recall(&g, &scan, &queries, 10, 64);
        assert!(r >= 0.95, "recall@10 {r}");

        let back = Hnsw::from_words(g.params(), &g.to_words()).unwrap();
        let rows = Rows { data: scan.rows(), dim: spec.dim, kernel: scan.kernel(), codes: None };
        for q in queries.chunks_exact(spec.dim) {
            assert_eq!(g.search(q, 10, 32, rows, |_| false), back.search(q, 10, 32, rows, |_| false));
        }
        let mut words = g.to_words();
        let last = words.len() - 1;
        words[last] = 0;
        words.push(7);
        assert!(Hnsw::from_words(g.params(), &words).is_none());
    }

    /// A search over the int8 codes finds what the float walk finds, and
    /// answers in full precision: every cosine is the rows' own dot product
    /// (a walk that returned its coded scores would be off by ~1e-3) and
    /// the answer is in that order.
    #[test]
    fn the_coded_walk_recalls_as_well_and_answers_in_full_precision() {
        let spec = SyntheticSpec { n: 3_000, dim: 96, latent: 24, noise: 0.4, ..SyntheticSpec::default() };
        let mut gen = Synthetic::new(&spec);
        let scan = ExactScan::from_flat(spec.dim, &gen.base(spec.n));
        let queries = gen.base(100);
        let codes = Codes::from_rows(spec.dim, scan.rows());
        let rows = Rows { data: scan.rows(), dim: spec.dim, kernel: scan.kernel(), codes: None };
        let coded = Rows { codes: Some(&codes), ..rows };
        let mut g = Hnsw::new(HnswParams { m: 12, ef_construction: 100, ..HnswParams::default() });
        g.extend(rows, 1);
        let (mut hit_float, mut hit_coded, mut total) = (0, 0, 0);
        for q in queries.chunks_exact(spec.dim) {
            let want: Vec<u32> = scan.search(q, 10).into_iter().map(|x| x.0).collect();
            let float = g.search(q, 10, 48, rows, |_| false);
            let got = g.search(q, 10, 48, coded, |_| false);
            hit_float += float.iter().filter(|x| want.contains(&x.0)).count();
            hit_coded += got.iter().filter(|x| want.contains(&x.0)).count();
            total += want.len();
            for (node, cosine) in &got {
                assert_eq!(*cosine, 1.0 - (1.0 - scan.kernel().dot(q, scan.row(*node))), "node {node}");
            }
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "best first: {got:?}");
        }
        let (rf, rc) = (hit_float as f64 / total as f64, hit_coded as f64 / total as f64);
        assert!(rc >= 0.95 && rc >= rf - 0.01, "recall@10: coded {rc}, float {rf}");
    }
}

#[cfg(test)]
mod reach {
    use super::*;
    use crate::exact::ExactScan;
    use crate::synthetic::{Synthetic, SyntheticSpec};

    /// Nodes no walk on layer 0 from the entry point reaches.
    fn unreachable(g: &Hnsw) -> Vec<u32> {
        let n = g.len();
        let entry = g.entry.lock().unwrap().0;
        let (mut seen, mut stack, mut links) = (vec![false; n], vec![entry], Vec::new());
        seen[entry as usize] = true;
        while let Some(v) = stack.pop() {
            g.read_links(v, 0, &mut links);
            for &w in &links {
                if !std::mem::replace(&mut seen[w as usize], true) {
                    stack.push(w);
                }
            }
        }
        (0..n as u32).filter(|&v| !seen[v as usize]).collect()
    }

    #[test]
    fn a_node_nothing_links_to_is_linked_again() {
        let spec = SyntheticSpec { n: 3_000, dim: 32, latent: 16, ..SyntheticSpec::default() };
        let scan = ExactScan::from_flat(spec.dim, &Synthetic::new(&spec).base(spec.n));
        let rows = Rows { data: scan.rows(), dim: spec.dim, kernel: scan.kernel(), codes: None };
        let mut g = Hnsw::new(HnswParams { m: 8, ef_construction: 64, ..HnswParams::default() });
        g.extend(rows, 2);
        assert!(unreachable(&g).is_empty(), "a parallel build leaves every node reachable");
        // What a race can leave: nothing links to node 100 any more.
        let orphan = 100u32;
        let mut links = Vec::new();
        for v in 0..g.len() as u32 {
            g.read_links(v, 0, &mut links);
            if links.contains(&orphan) {
                links.retain(|&w| w != orphan);
                g.write_links(v, 0, &links);
            }
        }
        assert_eq!(unreachable(&g), vec![orphan]);
        let q = rows.row(orphan);
        assert!(!g.search(q, 1, 64, rows, |_| false).iter().any(|c| c.0 == orphan), "an orphan is never found");
        g.link_orphans(rows);
        assert!(unreachable(&g).is_empty());
        assert_eq!(g.search(q, 1, 64, rows, |_| false)[0].0, orphan, "found again");
    }
}
