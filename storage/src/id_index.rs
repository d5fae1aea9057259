//! The id index: event id → `seq`, what makes appends idempotent and lets
//! an actor ask whether it already did something (`EventLog::seq_of`).
//!
//! One sled key per event made the index the log's most expensive part:
//! sled copies a leaf on every insert, ≈ 4–5 µs per id, more than
//! everything else an append costs together (relaxed appends ran at 0.45×
//! SQLite's rate with the applier busy inserting ids). So ids are kept in
//! **buckets**:
//!
//! | key (7 bytes) | value |
//! |---|---|
//! | the id's 48-bit timestamp (ms), then the top 4 bits of its randomness | entries of 24 bytes: id (16, big-endian), `seq` (8, big-endian), in the order they were added |
//!
//! Ids are ULIDs whose time is the event's (live ids) or its cause's
//! (derived and imported ids), so the events of one group commit share a
//! few buckets, and the applier writes each bucket once per batch: one
//! sled insert per bucket instead of one per event. The 4 bits of
//! randomness spread the events of one millisecond over up to 16 buckets,
//! so that even a file of events that all carry the same time (an import)
//! keeps buckets of a few thousand entries, not one bucket of them all.
//!
//! Invariants:
//!
//! 1. Only one thread writes the index at a time (the applier, or the log's
//!    open before it starts); a bucket is read, extended and written back
//!    inside one sled batch with every other bucket of the group commit.
//! 2. An entry is added only after its segment is written (sled recovers
//!    a prefix of its log), so an entry never points past the segments.
//! 3. An id has at most one entry: the writer checks the index (and the
//!    ids not applied yet) before giving an event a position.

use std::collections::{BTreeMap, HashSet};

use engram_events::{EventId, Seq};

use crate::error::LogError;

/// Bytes of a bucket key.
const KEY_BYTES: usize = 7;
/// Bytes of one entry in a bucket.
const ENTRY_BYTES: usize = 24;

/// The bucket key of `id`.
fn key(id: EventId) -> [u8; KEY_BYTES] {
    let bytes = id.0 .0.to_be_bytes();
    let mut key = [0; KEY_BYTES];
    key[..6].copy_from_slice(&bytes[..6]);
    key[6] = bytes[6] >> 4;
    key
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

/// Entries grouped by bucket, buckets in key order.
fn by_bucket(entries: impl Iterator<Item = (EventId, Seq)>) -> BTreeMap<[u8; KEY_BYTES], Vec<(EventId, Seq)>> {
    let mut grouped: BTreeMap<[u8; KEY_BYTES], Vec<(EventId, Seq)>> = BTreeMap::new();
    for (id, seq) in entries {
        grouped.entry(key(id)).or_default().push((id, seq));
    }
    grouped
}

/// Where `id` is, if the index has it.
pub(crate) fn get(tree: &sled::Tree, id: EventId) -> Result<Option<Seq>, LogError> {
    let Some(bucket) = tree.get(key(id))? else { return Ok(None) };
    let found = entries(&bucket).find(|(found, _)| *found == id).map(|(_, seq)| seq);
    Ok(found)
}

/// Adds every entry whose id the index lacks, one sled insert per bucket,
/// as one atomic batch (invariant 1). Ids already there are left as they
/// are, so adding a record again (the write-ahead records re-applied at
/// open) adds nothing (invariant 3).
pub(crate) fn insert_all(tree: &sled::Tree, added: impl Iterator<Item = (EventId, Seq)>) -> Result<(), LogError> {
    let mut batch = sled::Batch::default();
    for (key, added) in by_bucket(added) {
        let mut bucket = tree.get(key)?.map(|b| b.to_vec()).unwrap_or_default();
        let mut present: HashSet<EventId> = entries(&bucket).map(|(id, _)| id).collect();
        let before = bucket.len();
        bucket.reserve(added.len() * ENTRY_BYTES);
        for (id, seq) in added {
            if present.insert(id) {
                push(&mut bucket, id, seq);
            }
        }
        if bucket.len() > before {
            batch.insert(&key, bucket);
        }
    }
    tree.apply_batch(batch)?;
    Ok(())
}

/// Removes the entries of these ids that point at these positions, as one
/// atomic batch.
pub(crate) fn remove_all(tree: &sled::Tree, removed: impl Iterator<Item = (EventId, Seq)>) -> Result<(), LogError> {
    let mut batch = sled::Batch::default();
    for (key, removed) in by_bucket(removed) {
        let Some(old) = tree.get(key)? else { continue };
        let mut bucket = Vec::with_capacity(old.len());
        for (id, seq) in entries(&old).filter(|e| !removed.contains(e)) {
            push(&mut bucket, id, seq);
        }
        if bucket.is_empty() {
            batch.remove(&key);
        } else {
            batch.insert(&key, bucket);
        }
    }
    tree.apply_batch(batch)?;
    Ok(())
}

/// Every entry, in bucket order. Also reads the index of a format-1 log
/// (one key of 16 bytes per id), for `engram repair`.
pub(crate) fn all(tree: &sled::Tree) -> impl Iterator<Item = Result<(EventId, Seq), LogError>> + '_ {
    tree.iter().flat_map(|item| -> Vec<Result<(EventId, Seq), LogError>> {
        match item {
            Err(e) => vec![Err(e.into())],
            Ok((k, v)) if k.len() == 16 && v.len() == 8 => {
                let id = u128::from_be_bytes(k.as_ref().try_into().expect("16 bytes"));
                let seq = u64::from_be_bytes(v.as_ref().try_into().expect("8 bytes"));
                vec![Ok((EventId(engram_events::ulid::Ulid(id)), Seq(seq)))]
            }
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
        assert_eq!(tree.len(), 3, "ms 7 low bits, ms 7 high bits, ms 8");
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
        assert_eq!(tree.len(), 2, "an emptied bucket goes");
        let mut listed: Vec<_> = all(&tree).map(Result::unwrap).collect();
        listed.sort();
        assert_eq!(listed.len(), 4);
    }

    #[test]
    fn a_format_1_index_still_lists() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("ids").unwrap();
        tree.insert(id(5, 5).0 .0.to_be_bytes(), &7u64.to_be_bytes()).unwrap();
        assert_eq!(all(&tree).map(Result::unwrap).collect::<Vec<_>>(), vec![(id(5, 5), Seq(7))]);
    }
}
