//! Where a node's lists live: its layer drawn, its slots allocated in the
//! two flat arrays (layer 0's `1 + m0` per node, the upper layers' after
//! it), its lists read and written. Apart from the insertion and the
//! search because both stand on it and neither owns the layout.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;

use super::{Hnsw, MAX_LEVEL, NONE};
use crate::rng::Rng;

impl Hnsw {
    /// The layer node `i` is drawn on: `floor(-ln U / ln m)`, from a hash of
    /// the seed and the node, so it does not depend on insertion order.
    fn draw_level(&self, node: u32) -> u8 {
        let mut rng = Rng::new(self.params.seed ^ (node as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let u = rng.unit().max(f64::MIN_POSITIVE);
        let l = (-u.ln() / (self.params.m as f64).ln()).floor();
        l.min(MAX_LEVEL as f64) as u8
    }

    /// Allocates node `len()` (with no links) and returns it.
    pub(super) fn add_node(&mut self) -> u32 {
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
    pub(super) fn links(&self, node: u32, level: u8) -> &[AtomicU32] {
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
    pub(super) fn read_links(&self, node: u32, level: u8, out: &mut Vec<u32>) {
        let l = self.links(node, level);
        let n = (l[0].load(Relaxed) as usize).min(l.len() - 1);
        out.clear();
        out.extend(l[1..1 + n].iter().map(|a| a.load(Relaxed)));
    }

    /// Overwrites node's list on `level` (caller holds the node's lock).
    pub(super) fn write_links(&self, node: u32, level: u8, ids: &[u32]) {
        let l = self.links(node, level);
        debug_assert!(ids.len() < l.len());
        for (slot, id) in l[1..].iter().zip(ids) {
            slot.store(*id, Relaxed);
        }
        l[0].store(ids.len() as u32, Relaxed);
    }
}
