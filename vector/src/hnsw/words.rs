//! The graph as plain integers and back, for the index's dump and load:
//! the one place that knows the words' layout and checks a file's graph
//! is consistent before it is used. Apart because persistence is not the
//! graph's building or searching.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;

use super::{Hnsw, HnswParams, MAX_LEVEL, NONE};

impl Hnsw {
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
