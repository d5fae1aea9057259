//! What a learnt table costs on the heap, counted from its own contents.
//!
//! `engram bench soak` sets the process's resident memory beside what the
//! learnt tables hold (issue 31, item 3: "RSS grows by no more than what the
//! learnt tables legitimately hold"). Counting entries says which table
//! grows, not by how many bytes; these helpers turn a table's entries into
//! bytes as the allocator hands them out: every allocation rounded to
//! glibc's chunk (its request plus an 8-byte header, in 16-byte steps, at
//! least 32), vectors and strings by their capacity, not their length, and
//! the node space of a B-tree or hash map shared out per entry. They are a
//! count of what is held, not a measurement: `docs/performance.md` sets
//! them beside heaptrack's figures for the same run.

use std::collections::HashMap;

use crate::projector::Table;
use engram_events::payloads::StructuralFeatures;

/// Bytes glibc's `malloc` takes for a request of `n` bytes (0: none).
pub fn alloc(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + 8).next_multiple_of(16).max(32)
    }
}

/// A string's buffer (by its length: the strings counted here are built
/// to size).
pub fn string(s: &str) -> usize {
    alloc(s.len())
}

/// A `Vec<T>`'s buffer (its elements' own heap not included).
pub fn vec<T>(v: &Vec<T>) -> usize {
    alloc(v.capacity() * size_of::<T>())
}

/// Each `Vec<String>` buffer and its strings.
pub fn strings(v: &Vec<String>) -> usize {
    vec(v) + v.iter().map(|s| alloc(s.capacity())).sum::<usize>()
}

/// One entry's share of a `BTreeMap<K, V>`'s nodes. A leaf holds up to 11
/// entries; keys that arrive in order (ULIDs, times) leave each leaf with
/// 6 when it splits, so a leaf's bytes are shared by 6.
pub fn btree_entry<K, V>() -> usize {
    alloc(16 + 11 * (size_of::<K>() + size_of::<V>())) / 6
}

/// A `HashMap`'s table: one `(K, V)` slot and a control byte per bucket,
/// buckets the power of two at or above 8/7 of its capacity (the keys' and
/// values' own heap not included).
pub fn hash_map<K, V, S>(m: &HashMap<K, V, S>) -> usize {
    let cap = m.capacity();
    if cap == 0 {
        return 0;
    }
    let buckets = (cap * 8 / 7).next_power_of_two();
    alloc(buckets * (size_of::<(K, V)>() + 1) + 16)
}

/// A projection table: each entry's key, its share of the B-tree, and
/// `value(v)`, the value's own heap.
pub fn table<V>(t: &Table<V>, value: impl Fn(&V) -> usize) -> usize
where
    V: serde::Serialize + serde::de::DeserializeOwned,
{
    t.iter().map(|(k, v)| vec(k) + btree_entry::<Vec<u8>, V>() + value(v)).sum()
}

/// A value of nested maps, lists and strings (tool arguments, plan steps)
/// by its JSON length, doubled: its strings' bytes plus about as much again
/// for the maps' nodes and the allocations' headers. An estimate, for
/// values a few hundred bytes long.
pub fn json<T: serde::Serialize>(v: &T) -> usize {
    2 * serde_json::to_vec(v).map_or(0, |j| j.len())
}

/// The heap of a turn's structural features (its strings and their lists).
pub fn features(f: &StructuralFeatures) -> usize {
    strings(&f.intent_tags)
        + strings(&f.file_extensions)
        + strings(&f.tool_names)
        + strings(&f.file_path_buckets)
        + vec(&f.side_effect_classes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_round_to_glibc_chunks() {
        assert_eq!(alloc(0), 0);
        assert_eq!(alloc(1), 32);
        assert_eq!(alloc(24), 32);
        assert_eq!(alloc(25), 48);
        assert_eq!(alloc(2048), 2064);
        let v: Vec<u64> = Vec::with_capacity(4);
        assert_eq!(vec(&v), 48);
        let m: HashMap<u32, u32> = HashMap::with_capacity(100);
        assert!(hash_map(&m) >= 128 * 9);
    }
}
