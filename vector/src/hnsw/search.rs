//! Walking the graph: greedy descent on the upper layers, best-first
//! search of one layer with prefetching, and a query's answer — walked on
//! the rows or on their int8 codes, then re-scored in full precision.
//! Apart from the insertion because it only reads the links; the build
//! reuses its layer walk and its per-thread scratch.

use std::cell::RefCell;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Relaxed;

use super::{Cand, Hnsw, Rows, NONE};
use crate::quantized::{CodedQuery, Codes};

/// How many vectors ahead of the one being scored the search prefetches.
/// Measured at 20k × 384 (ef 48, p50): 1 → 90 µs, 2 → 80, 4 → 81, 6 → 77,
/// 10 → 78, 16 → 83, all → 85 — enough loads in flight to cover memory
/// latency, not so many that they evict each other.
const PREFETCH_AHEAD: usize = 6;

/// Min-heap adaptor: nearest on top.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Near(std::cmp::Reverse<Cand>);

/// Per-thread search scratch: visited tags and the two heaps, kept between
/// queries so a search does not allocate.
#[derive(Default)]
pub(super) struct Scratch {
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
    pub(super) static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// How a walk scores nodes against its query: on the rows themselves (the
/// build, and searches without codes) or on their int8 codes.
pub(super) trait Scorer {
    /// `1 − cosine` of the query and `node` (approximate for codes).
    fn dist(&self, node: u32) -> f32;
    /// Asks for `node`'s row ahead of scoring it.
    fn prefetch(&self, node: u32);
}

/// Scores on the `f32` rows.
pub(super) struct Exact<'a> {
    pub(super) rows: Rows<'a>,
    pub(super) q: &'a [f32],
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

impl Hnsw {
    /// Greedy descent on one upper layer: move to the nearest neighbour
    /// until none is nearer.
    pub(super) fn greedy(&self, sc: &impl Scorer, mut cur: Cand, level: u8, buf: &mut Vec<u32>) -> Cand {
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

    /// Best-first search of one layer from `entries`, keeping the `ef`
    /// nearest nodes for which `skip` is false (skipped nodes are still
    /// walked through: a tombstone keeps routing). Returns them nearest
    /// first.
    pub(super) fn search_layer(
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
}
