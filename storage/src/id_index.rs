//! The id index: event id → `seq`, what makes appends idempotent and lets
//! an actor ask whether it already did something (`EventLog::seq_of`).
//!
//! One sled key per event made the index the log's most expensive part:
//! sled copies a leaf on every insert, ≈ 4–5 µs per id, more than
//! everything else an append costs together (relaxed appends ran at 0.45×
//! SQLite's rate with the applier busy inserting ids). So ids are kept in
//! **buckets**, one per millisecond of id time, split further only where a
//! millisecond holds many ids:
//!
//! | key | value |
//! |---|---|
//! | the id's 48-bit timestamp (ms), then `depth` bytes of its randomness (6 + depth bytes) | entries of 24 bytes: id (16, big-endian), `seq` (8, big-endian), in the order they were added — or `SPLIT`, one byte: this bucket's ids are in the buckets one byte deeper |
//!
//! Ids are ULIDs whose time is the event's (live ids) or its cause's
//! (derived and imported ids), so the events of one group commit share a
//! few milliseconds, and the applier writes each bucket once per batch: one
//! sled insert per bucket instead of one per event. A bucket of
//! `SPLIT_ABOVE` entries splits into up to 256 by the next byte of
//! randomness, so that a millisecond that holds a flood of ids (a file of
//! events that all carry one time) keeps buckets of a few hundred entries:
//! an insert rewrites, and a lookup scans, a bounded bucket.
//!
//! Why not always split (format 2 split every millisecond 16 ways): the
//! events a turn derives share their cause's millisecond, so 16 ways put
//! most of them in buckets of their own, and an import wrote one bucket per
//! event (measured, 40 000 turn records: 82 k events/s with 16-way buckets,
//! 129 k with one bucket per millisecond).
//!
//! Invariants:
//!
//! 1. Only one thread writes the index at a time (the applier, or the log's
//!    open before it starts); a bucket is read, extended and written back
//!    inside one sled batch with every other bucket of the group commit,
//!    and a split writes its marker and the deeper buckets in that batch.
//! 2. An entry is added only after its segment is written (sled recovers
//!    a prefix of its log), so an entry never points past the segments.
//! 3. An id has at most one entry: the writer checks the index (and the
//!    ids not applied yet) before giving an event a position.
//! 4. A key holds entries or `SPLIT`, never both; an id's entry is in the
//!    first bucket down its path (key depth 0, 1, …) that is not `SPLIT`.

use std::collections::{BTreeMap, HashMap, HashSet};

use engram_events::{EventId, Seq};

use crate::error::LogError;

/// A map keyed by event id, hashed by FxHash (sled's own hasher, already
/// compiled in). Ids are ULIDs, random in their low 80 bits, so a fast
/// hash spreads them; SipHash, the default, was ≈ 6 % of a JetStream
/// fetch's CPU (the pending ids, each group's lookups, each bucket's
/// entries). Whoever may publish on the log's subject could craft ids that
/// collide: they can already fill it.
pub(crate) type IdMap<V> = HashMap<EventId, V, fxhash::FxBuildHasher>;

/// A set of event ids ([`IdMap`]'s hashing).
pub(crate) type IdSet = HashSet<EventId, fxhash::FxBuildHasher>;

/// Bytes of a bucket key at depth 0: the id's millisecond.
const MS_BYTES: usize = 6;
/// Deepest bucket: a 4-byte path gives 2^32 buckets per millisecond, which
/// no log reaches; a bucket at this depth grows without splitting.
const MAX_DEPTH: usize = 4;
/// Bytes of one entry in a bucket.
const ENTRY_BYTES: usize = 24;
/// A bucket with more entries than this splits (12 KiB of entries: an
/// insert's rewrite and a lookup's scan stay within a few µs).
const SPLIT_ABOVE: usize = 512;
/// The value of a bucket that has split. One byte, so never a whole number
/// of entries.
const SPLIT: &[u8] = b"S";

/// A bucket key: the id's millisecond and up to [`MAX_DEPTH`] bytes of its
/// randomness.
type Key = Vec<u8>;

/// The key of `id`'s bucket at `depth`.
fn key(id: EventId, depth: usize) -> Key {
    let bytes = id.0 .0.to_be_bytes();
    bytes[..MS_BYTES + depth].to_vec()
}

fn entries(bucket: &[u8]) -> impl Iterator<Item = (EventId, Seq)> + '_ {
    bucket.chunks_exact(ENTRY_BYTES).map(|e| {
        let id = u128::from_be_bytes(e[..16].try_into().expect("16 bytes"));
        let seq = u64::from_be_bytes(e[16..].try_into().expect("8 bytes"));
        (EventId(engram_events::ulid::Ulid(id)), Seq(seq))
    })
}

fn push(bucket: &mut Vec<u8>, id: EventId, seq: Seq) {
    bucket.extend_from_slice(&id.0 .0.to_be_bytes());
    bucket.extend_from_slice(&seq.0.to_be_bytes());
}

/// Items grouped by the bucket key at `depth` of their id, in key order.
fn by_key<T>(depth: usize, items: impl Iterator<Item = T>, id: impl Fn(&T) -> EventId) -> BTreeMap<Key, Vec<T>> {
    let mut grouped: BTreeMap<Key, Vec<T>> = BTreeMap::new();
    for item in items {
        grouped.entry(key(id(&item), depth)).or_default().push(item);
    }
    grouped
}

/// Whether `bucket`, read at `depth`, sends its ids one byte deeper
/// (invariant 4).
fn is_split(bucket: &[u8], depth: usize) -> bool {
    bucket == SPLIT && depth < MAX_DEPTH
}

/// The key and contents of the bucket that holds (or would hold) `id`
/// (invariant 4); `None` contents if there is no such bucket yet.
fn leaf(tree: &sled::Tree, id: EventId) -> Result<(Key, Option<sled::IVec>), LogError> {
    let mut depth = 0;
    loop {
        let k = key(id, depth);
        match tree.get(&k)? {
            Some(v) if is_split(&v, depth) => depth += 1,
            found => return Ok((k, found)),
        }
    }
}

/// [`leaf`] for many items at once: groups them by bucket from `depth`
/// down, reading each bucket once, and calls `at_leaf` with each leaf's
/// key, its contents (`None`: no bucket yet) and the items under it, in
/// key order. A group commit's ids share few milliseconds, so this is a
/// read per few events where [`leaf`] of each would be one per event.
fn for_each_leaf<T>(
    tree: &sled::Tree,
    depth: usize,
    items: impl Iterator<Item = T>,
    id: &impl Fn(&T) -> EventId,
    at_leaf: &mut impl FnMut(Key, Option<sled::IVec>, Vec<T>) -> Result<(), LogError>,
) -> Result<(), LogError> {
    let grouped = by_key(depth, items, id);
    let mut scanned = if depth == 0 { scan(tree, &grouped)? } else { None };
    for (key, items) in grouped {
        let bucket = match &mut scanned {
            Some(found) => found.remove(&key),
            None => tree.get(&key)?,
        };
        match bucket {
            Some(v) if is_split(&v, depth) => for_each_leaf(tree, depth + 1, items.into_iter(), id, at_leaf)?,
            bucket => at_leaf(key, bucket, items)?,
        }
    }
    Ok(())
}

/// Buckets read in one pass rather than one `get` each: from this many
/// keys up.
const SCAN_FROM: usize = 8;

/// The depth-0 buckets of `grouped`'s keys, read with one range scan from
/// its first key to its last: `None` when a `get` each is the better
/// read — few keys, or a range that holds more than a few buckets besides
/// them. A group commit of an import spans a run of milliseconds that
/// mostly have no bucket yet, and a sled `get` walks the tree from its
/// root each time (measured, 40 000 turn records: 110 k buckets, a `get`
/// for each in the writer's lookups and again in the applier's inserts).
fn scan<T>(tree: &sled::Tree, grouped: &BTreeMap<Key, Vec<T>>) -> Result<Option<HashMap<Key, sled::IVec>>, LogError> {
    let (Some(first), Some(last)) = (grouped.keys().next(), grouped.keys().next_back()) else { return Ok(None) };
    if grouped.len() < SCAN_FROM {
        return Ok(None);
    }
    let most = 2 * grouped.len() + 64;
    let mut found = HashMap::new();
    for (read, item) in tree.range(first.as_slice()..).enumerate() {
        let (k, v) = item?;
        // A deeper key of `last`'s millisecond sorts after it, before the
        // next millisecond's.
        if k.as_ref() > last.as_slice() && !k.starts_with(last) {
            break;
        }
        if read == most {
            return Ok(None);
        }
        if k.len() == MS_BYTES {
            found.insert(k.to_vec(), v);
        }
    }
    Ok(Some(found))
}

/// Where `id` is, if the index has it.
pub(crate) fn get(tree: &sled::Tree, id: EventId) -> Result<Option<Seq>, LogError> {
    let (_, bucket) = leaf(tree, id)?;
    Ok(bucket.and_then(|b| entries(&b).find(|(found, _)| *found == id).map(|(_, seq)| seq)))
}

/// Where each of `ids` is, added to `found` for those the index has, each
/// bucket read once ([`for_each_leaf`]).
pub(crate) fn get_many(tree: &sled::Tree, ids: &[EventId], found: &mut IdMap<Seq>) -> Result<(), LogError> {
    for_each_leaf(tree, 0, ids.iter().copied(), &|id| *id, &mut |_, bucket, ids| {
        let Some(bucket) = bucket else { return Ok(()) };
        let wanted: IdSet = ids.into_iter().collect();
        found.extend(entries(&bucket).filter(|(id, _)| wanted.contains(id)));
        Ok(())
    })
}

/// Adds every entry whose id the index lacks, one sled insert per bucket
/// written, as one atomic batch (invariant 1). Ids already there are left
/// as they are, so adding a record again (the write-ahead records
/// re-applied at open) adds nothing (invariant 3).
pub(crate) fn insert_all(tree: &sled::Tree, added: impl Iterator<Item = (EventId, Seq)>) -> Result<(), LogError> {
    let mut batch = sled::Batch::default();
    for_each_leaf(tree, 0, added, &|e| e.0, &mut |key, old, added| {
        let mut bucket = old.map(|b| b.to_vec()).unwrap_or_default();
        let mut present: IdSet = entries(&bucket).map(|(id, _)| id).collect();
        let before = bucket.len();
        bucket.reserve(added.len() * ENTRY_BYTES);
        for (id, seq) in added {
            if present.insert(id) {
                push(&mut bucket, id, seq);
            }
        }
        if bucket.len() > before {
            write_bucket(&mut batch, key, bucket);
        }
        Ok(())
    })?;
    tree.apply_batch(batch)?;
    Ok(())
}

/// Writes `bucket` at `key` (which nothing deeper exists under), splitting
/// it while it is over [`SPLIT_ABOVE`] entries.
fn write_bucket(batch: &mut sled::Batch, key: Key, bucket: Vec<u8>) {
    let depth = key.len() - MS_BYTES;
    if bucket.len() / ENTRY_BYTES <= SPLIT_ABOVE || depth >= MAX_DEPTH {
        batch.insert(key, bucket);
        return;
    }
    batch.insert(key, SPLIT);
    let mut deeper: BTreeMap<Key, Vec<u8>> = BTreeMap::new();
    for (id, seq) in entries(&bucket) {
        push(deeper.entry(self::key(id, depth + 1)).or_default(), id, seq);
    }
    for (k, b) in deeper {
        write_bucket(batch, k, b);
    }
}

/// Removes the entries of these ids that point at these positions, as one
/// atomic batch. An emptied bucket goes; a split stays split.
pub(crate) fn remove_all(tree: &sled::Tree, removed: impl Iterator<Item = (EventId, Seq)>) -> Result<(), LogError> {
    let mut batch = sled::Batch::default();
    for_each_leaf(tree, 0, removed, &|e| e.0, &mut |key, old, removed| {
        let Some(old) = old else { return Ok(()) };
        let mut bucket = Vec::with_capacity(old.len());
        for (id, seq) in entries(&old).filter(|e| !removed.contains(e)) {
            push(&mut bucket, id, seq);
        }
        if bucket.is_empty() {
            batch.remove(key);
        } else {
            batch.insert(key, bucket);
        }
        Ok(())
    })?;
    tree.apply_batch(batch)?;
    Ok(())
}

/// Every entry, in bucket order. Also reads the index of a format-1 log
/// (one key of 16 bytes per id) and of a format-2 log (7-byte keys, whose
/// values are entries too), for `engram repair`.
pub(crate) fn all(tree: &sled::Tree) -> impl Iterator<Item = Result<(EventId, Seq), LogError>> + '_ {
    tree.iter().flat_map(|item| -> Vec<Result<(EventId, Seq), LogError>> {
        match item {
            Err(e) => vec![Err(e.into())],
            Ok((k, v)) if k.len() == 16 && v.len() == 8 => {
                let id = u128::from_be_bytes(k.as_ref().try_into().expect("16 bytes"));
                let seq = u64::from_be_bytes(v.as_ref().try_into().expect("8 bytes"));
                vec![Ok((EventId(engram_events::ulid::Ulid(id)), Seq(seq)))]
            }
            Ok((_, v)) if v.as_ref() == SPLIT => Vec::new(),
            Ok((_, v)) => entries(&v).map(Ok).collect(),
        }
    })
}

/// Number of entries (equals the number of events in a healthy log).
pub(crate) fn count(tree: &sled::Tree) -> Result<u64, LogError> {
    let mut n = 0;
    for item in tree.iter() {
        let (_, v) = item?;
        n += (v.len() / ENTRY_BYTES) as u64;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(millis: u64, random: u128) -> EventId {
        EventId(engram_events::ulid::Ulid::from_parts(millis, random))
    }

    #[test]
    fn buckets_hold_their_ids_and_only_theirs() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("ids").unwrap();
        // Same millisecond, same and different top bits; another ms.
        let ids = [id(7, 1), id(7, 2), id(7, 1 << 79), id(8, 1), id(7, 3)];
        insert_all(&tree, ids.iter().enumerate().map(|(i, id)| (*id, Seq(i as u64 + 1)))).unwrap();
        assert_eq!(tree.len(), 2, "one bucket per millisecond: ms 7, ms 8");
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(get(&tree, *id).unwrap(), Some(Seq(i as u64 + 1)));
        }
        assert_eq!(get(&tree, id(7, 4)).unwrap(), None, "a bucket that exists, an id it lacks");
        assert_eq!(get(&tree, id(9, 1)).unwrap(), None);
        assert_eq!(count(&tree).unwrap(), 5);
        // Adding to a bucket keeps what it had; adding again adds nothing.
        insert_all(&tree, [(id(7, 9), Seq(6)), (id(7, 1), Seq(1))].into_iter()).unwrap();
        insert_all(&tree, ids.iter().enumerate().map(|(i, id)| (*id, Seq(i as u64 + 1)))).unwrap();
        assert_eq!(count(&tree).unwrap(), 6);
        assert_eq!(get(&tree, id(7, 1)).unwrap(), Some(Seq(1)));
        assert_eq!(get(&tree, id(7, 9)).unwrap(), Some(Seq(6)));
        remove_all(&tree, [(id(7, 1), Seq(1)), (id(8, 1), Seq(4)), (id(7, 2), Seq(99))].into_iter()).unwrap();
        assert_eq!(get(&tree, id(7, 1)).unwrap(), None);
        assert_eq!(get(&tree, id(7, 2)).unwrap(), Some(Seq(2)), "only an entry at that seq is removed");
        assert_eq!(tree.len(), 1, "an emptied bucket goes");
        let mut listed: Vec<_> = all(&tree).map(Result::unwrap).collect();
        listed.sort();
        assert_eq!(listed.len(), 4);
    }

    /// Largest bucket in entries, and how many buckets have split.
    fn shape(tree: &sled::Tree) -> (usize, usize) {
        let (mut largest, mut splits) = (0, 0);
        for item in tree.iter() {
            let (_, v) = item.unwrap();
            if v.as_ref() == SPLIT {
                splits += 1;
            } else {
                assert_eq!(v.len() % ENTRY_BYTES, 0, "a bucket holds whole entries");
                largest = largest.max(v.len() / ENTRY_BYTES);
            }
        }
        (largest, splits)
    }

    /// A millisecond holding a flood of ids (one batch of thousands, then
    /// batches that land in buckets already split) keeps every bucket at or
    /// under the split size, and every id is found where it was put.
    #[test]
    fn a_crowded_millisecond_splits_and_every_id_stays_found() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("ids").unwrap();
        let mut rng = 0x9E37_79B9_7F4A_7C15u128;
        let mut next = || {
            rng = rng.wrapping_mul(0x2545_F491_4F6C_DD1D).wrapping_add(0x1234_5678_9ABC_DEF1);
            rng >> 48
        };
        let ids: Vec<EventId> = (0..6_000).map(|_| id(42, next())).collect();
        insert_all(&tree, ids[..3_000].iter().enumerate().map(|(i, id)| (*id, Seq(i as u64 + 1)))).unwrap();
        for chunk in (3_000..6_000).collect::<Vec<_>>().chunks(250) {
            insert_all(&tree, chunk.iter().map(|&i| (ids[i], Seq(i as u64 + 1)))).unwrap();
        }
        let (largest, splits) = shape(&tree);
        assert!(largest <= SPLIT_ABOVE, "a bucket of {largest} entries");
        assert!(splits >= 1, "the millisecond split");
        assert_eq!(count(&tree).unwrap(), 6_000);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(get(&tree, *id).unwrap(), Some(Seq(i as u64 + 1)), "id {i}");
        }
        assert_eq!(get(&tree, id(42, next())).unwrap(), None, "an id the split buckets lack");
        // Again: nothing added. Then removing half leaves the other half.
        insert_all(&tree, ids.iter().enumerate().map(|(i, id)| (*id, Seq(i as u64 + 1)))).unwrap();
        assert_eq!(count(&tree).unwrap(), 6_000);
        remove_all(&tree, ids.iter().enumerate().step_by(2).map(|(i, id)| (*id, Seq(i as u64 + 1)))).unwrap();
        assert_eq!(count(&tree).unwrap(), 3_000);
        for (i, id) in ids.iter().enumerate() {
            let want = (i % 2 == 1).then_some(Seq(i as u64 + 1));
            assert_eq!(get(&tree, *id).unwrap(), want, "id {i}");
        }
        let mut listed: Vec<_> = all(&tree).map(Result::unwrap).collect();
        listed.sort();
        assert_eq!(listed.len(), 3_000);
    }

    /// A batch's buckets read with one range scan, and with a `get` each
    /// when the range holds many other buckets: the same entries.
    #[test]
    fn a_scan_and_gets_find_the_same_entries() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("ids").unwrap();
        let held: Vec<(EventId, Seq)> = (0..1_000u64).map(|ms| (id(ms, 7), Seq(ms + 1))).collect();
        insert_all(&tree, held.iter().copied()).unwrap();
        // Few other buckets in the range (a scan), then a range of 1 000
        // buckets for 10 asked (a get each): hits, and misses beside them.
        for step in [1u64, 100] {
            let asked: Vec<EventId> = (0..10u64).flat_map(|i| [id(i * step, 7), id(i * step, 8)]).collect();
            let grouped = by_key(0, asked.iter().copied(), |id| *id);
            assert_eq!(scan(&tree, &grouped).unwrap().is_some(), step == 1, "step {step}");
            let mut found = IdMap::default();
            get_many(&tree, &asked, &mut found).unwrap();
            let want: IdMap<Seq> = (0..10u64).map(|i| (id(i * step, 7), Seq(i * step + 1))).collect();
            assert_eq!(found, want, "step {step}");
        }
    }

    #[test]
    fn a_format_1_index_still_lists() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("ids").unwrap();
        tree.insert(id(5, 5).0 .0.to_be_bytes(), &7u64.to_be_bytes()).unwrap();
        assert_eq!(all(&tree).map(Result::unwrap).collect::<Vec<_>>(), vec![(id(5, 5), Seq(7))]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// The index against a map: ids crowded into three milliseconds
        /// (so buckets split, at various depths and batch boundaries),
        /// added in batches with repeats, some removed. Every id's entry is
        /// what the map says, `all` and `count` agree with it, and no bucket
        /// outgrows the split size.
        #[test]
        fn the_index_agrees_with_a_map(
            ops in proptest::collection::vec(
                (0u64..3, 1u64..24, proptest::prelude::any::<u128>(), proptest::prelude::any::<bool>(), 0usize..400),
                1..40,
            )
        ) {
            let db = sled::Config::new().temporary(true).open().unwrap();
            let tree = db.open_tree("ids").unwrap();
            let mut model: IdMap<Seq> = IdMap::default();
            let mut seq = 0u64;
            // A batch spreads over `spread` milliseconds from `ms`: one or
            // a few crowd buckets until they split; many are read with a
            // range scan (`scan`), over buckets other batches wrote.
            for (ms, spread, seed, remove, n) in ops {
                let batch: Vec<(EventId, Seq)> = (0..n as u128)
                    .map(|i| {
                        let r = seed.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)) >> 48;
                        seq += 1;
                        (id(ms * 8 + r as u64 % spread, r), Seq(seq))
                    })
                    .collect();
                if remove {
                    let gone: Vec<(EventId, Seq)> =
                        model.iter().filter(|(id, _)| id.0 .0 % 3 == 0).map(|(id, s)| (*id, *s)).collect();
                    remove_all(&tree, gone.iter().copied()).unwrap();
                    gone.iter().for_each(|(id, _)| { model.remove(id); });
                }
                insert_all(&tree, batch.iter().copied()).unwrap();
                for (id, s) in batch {
                    model.entry(id).or_insert(s);
                }
            }
            for (id, s) in &model {
                proptest::prop_assert_eq!(get(&tree, *id).unwrap(), Some(*s));
            }
            // All at once, with ids the index lacks among them.
            let mut asked: Vec<EventId> = model.keys().copied().collect();
            asked.extend((0..50u128).map(|r| id(r as u64 % 40, r << 60 | 0xABCDEF)));
            let mut found = IdMap::default();
            get_many(&tree, &asked, &mut found).unwrap();
            proptest::prop_assert_eq!(&found, &model);
            proptest::prop_assert_eq!(count(&tree).unwrap(), model.len() as u64);
            let listed: IdMap<Seq> = all(&tree).map(Result::unwrap).collect();
            proptest::prop_assert_eq!(listed, model);
            proptest::prop_assert!(shape(&tree).0 <= SPLIT_ABOVE);
        }
    }
}
