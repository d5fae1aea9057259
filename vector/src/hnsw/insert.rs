//! Building the graph: nodes inserted (in parallel, links written under
//! a per-node lock), neighbours chosen with the diversity heuristic, and
//! the orphans a parallel build leaves linked again. Apart from the search
//! because it is the only writer of the links; it walks the graph with the
//! search's own layer walk.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use super::search::{Exact, SCRATCH};
use super::{Cand, Hnsw, Rows, NONE};

fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hnsw {
    /// Inserts arena rows `len()..rows.len()` in parallel on `threads`
    /// threads (1: in order on this thread, fully deterministic).
    ///
    /// # Panics
    /// If the arena holds fewer rows than the graph has nodes.
    pub fn extend(&mut self, rows: Rows<'_>, threads: usize) {
        let total = rows.len();
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
                let mut near: Vec<Cand> =
                    links.iter().map(|&w| Cand { dist: rows.dist_nodes(orphan, w), node: w }).collect();
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
        let q = &*q;
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
                for &n in buf.iter().filter(|&&n| !chosen.iter().any(|c| c.node == n)) {
                    mine.push(Cand { dist: rows.dist_nodes(node, n), node: n });
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
        let mut cands: Vec<Cand> = buf.iter().map(|&n| Cand { dist: rows.dist_nodes(node, n), node: n }).collect();
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
            if kept.iter().all(|k| rows.dist_nodes(c.node, k.node) >= c.dist) {
                kept.push(*c);
            }
        }
        kept
    }
}

#[cfg(test)]
mod reach {
    use crate::exact::ExactScan;
    use crate::hnsw::{Hnsw, HnswParams, Rows};
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
        assert!(!g.search(&q, 1, 64, rows, |_| false).iter().any(|c| c.0 == orphan), "an orphan is never found");
        g.link_orphans(rows);
        assert!(unreachable(&g).is_empty());
        assert_eq!(g.search(&q, 1, 64, rows, |_| false)[0].0, orphan, "found again");
    }
}
