//! The projection framework: state folded from the log, persisted,
//! rebuildable bit for bit. The projections themselves (sessions, pattern
//! outcomes, the fast path's rows, …) are the assistant's and live in
//! `engram-learning`; this module is what any of them needs and nothing
//! any one of them knows.
//!
//! A [`Projection`] is a pure fold — `apply(&mut self, &Envelope)` with no
//! clock, no I/O and no randomness — over an in-memory state that it exposes
//! as canonical *rows* (sorted key → value bytes). Rows are what is
//! persisted (one sled tree per projection, with the checkpoint written in
//! the same atomic batch) and what the content [digest] is computed over, so
//! "a rebuild reproduces the live digest" means the rebuilt rows are the
//! live rows, byte for byte.
//!
//! Projections never decide: anything judged or timed (eviction, expiry,
//! promotion, day ranking) arrives as an event an actor wrote.
//!
//! [`Table`] is the building block most projections need: a sorted map that
//! remembers which keys changed since the last persist. [`Projector`]
//! runs a set of projections against a log: loads them with their
//! checkpoints, catches them up, persists, rebuilds.

mod runner;

use std::collections::{BTreeMap, BTreeSet};

use engram_events::{Envelope, EventKind};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::snapshot::{SnapshotError, SnapshotReader, SnapshotWriter};

pub use runner::{ProjectionStatus, Projector};

/// A row: key and value bytes.
pub type Row = (Vec<u8>, Vec<u8>);

/// A change to persist: the row's new value, or `None` when it is gone.
pub type Change = (Vec<u8>, Option<Vec<u8>>);

/// A deterministic fold over envelopes with row-shaped state.
///
/// A projection keeps its state in [`Table`]s and lists them in
/// [`Projection::tables`]; persistence, digests and loading are derived
/// from that list.
pub trait Projection: std::any::Any + Send {
    /// Stable name (`sessions`, `pattern_outcomes`); names its sled tree.
    fn name(&self) -> &'static str;

    /// Folds one envelope. Same envelopes in the same order, same rows.
    fn apply(&mut self, env: &Envelope);

    /// The version of the rows' layout and of the fold. Bump it when either
    /// changes: stored rows of another version are rebuilt from the log at
    /// open, never read as if they were this one's.
    fn version(&self) -> u32 {
        1
    }

    /// The kinds `apply` looks at. Catch-up and rebuild decode only these
    /// (other records are still CRC-checked), which is most of a rebuild's
    /// speed. `None`: every kind.
    fn kinds(&self) -> Option<&'static [EventKind]> {
        None
    }

    /// The tables holding the state (distinct prefixes).
    fn tables(&self) -> Vec<&dyn TableRows>;

    /// The same tables, to modify.
    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows>;

    /// Every row of the state, sorted by key, in canonical encoding.
    fn rows(&self) -> Vec<Row> {
        let mut out = Vec::new();
        for t in self.tables() {
            t.rows_into(&mut out);
        }
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Number of rows (without encoding them).
    fn row_count(&self) -> u64 {
        self.tables().iter().map(|t| t.len() as u64).sum()
    }

    /// Rows changed since the last call.
    fn take_changes(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        for t in self.tables_mut() {
            t.changes_into(&mut out);
        }
        out
    }

    /// Forgets which rows changed, without encoding them (a projection
    /// held in memory only has nowhere to write them).
    fn forget_changes(&mut self) {
        for t in self.tables_mut() {
            t.forget_changes();
        }
    }

    /// Stops remembering which rows change, for good: for a projection
    /// held in memory only (a reactor's state, whose snapshot is the whole
    /// state), which would otherwise copy the key of every row each event
    /// touches into a set, only to forget it after the event.
    fn stop_tracking(&mut self) {
        for t in self.tables_mut() {
            t.stop_tracking();
        }
    }

    /// Empties the state (and forgets pending changes).
    fn reset(&mut self) {
        for t in self.tables_mut() {
            t.clear();
        }
        self.derive_from_rows();
    }

    /// Restores the state from persisted rows, after a `reset`.
    fn load(&mut self, rows: &mut dyn Iterator<Item = Row>) -> Result<(), String> {
        load_tables(self.tables_mut(), rows)?;
        self.derive_from_rows();
        Ok(())
    }

    /// Rebuilds what the projection keeps in memory beside its tables (an
    /// index over the rows) after the tables were loaded or emptied.
    fn derive_from_rows(&mut self) {}

    /// Writes the state into an actor's snapshot (see
    /// [`crate::snapshot`]): each table in the snapshot's binary encoding,
    /// which reads back several times faster than the rows' JSON.
    fn save(&self, w: &mut SnapshotWriter) {
        for t in self.tables() {
            t.save(w);
        }
    }

    /// Restores the state [`Projection::save`] wrote.
    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        for t in self.tables_mut() {
            t.restore(r)?;
        }
        self.derive_from_rows();
        Ok(())
    }
}

/// Distributes persisted rows over `tables` by prefix — the default
/// [`Projection::load`], for projections that override it to rebuild
/// derived in-memory state afterwards.
pub fn load_tables(mut tables: Vec<&mut dyn TableRows>, rows: &mut dyn Iterator<Item = Row>) -> Result<(), String> {
    'rows: for (k, v) in rows {
        for t in tables.iter_mut() {
            if t.load_row(&k, &v)? {
                continue 'rows;
            }
        }
        return Err(format!("row {:?} belongs to no table", String::from_utf8_lossy(&k)));
    }
    Ok(())
}

/// What the framework needs of a table, whatever its value type.
pub trait TableRows {
    /// Appends every row (prefixed key, encoded value) to `out`.
    fn rows_into(&self, out: &mut Vec<Row>);
    /// Appends the changed rows to `out` and forgets them.
    fn changes_into(&mut self, out: &mut Vec<Change>);
    /// Forgets the changed rows without encoding them.
    fn forget_changes(&mut self);
    /// Forgets the changed rows and remembers none from now on.
    fn stop_tracking(&mut self);
    /// Empties the table.
    fn clear(&mut self);
    /// Takes a persisted row if it belongs to this table (`Ok(false)`: not ours).
    fn load_row(&mut self, key: &[u8], value: &[u8]) -> Result<bool, String>;
    /// Number of rows.
    fn len(&self) -> usize;
    /// Writes every row into a snapshot.
    fn save(&self, w: &mut SnapshotWriter);
    /// Replaces the rows with those [`TableRows::save`] wrote.
    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError>;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// BLAKE3 over the rows (length-prefixed key and value, in key order).
pub fn digest(rows: &[Row]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    for (k, v) in rows {
        hasher.update(&(k.len() as u64).to_le_bytes());
        hasher.update(k);
        hasher.update(&(v.len() as u64).to_le_bytes());
        hasher.update(v);
    }
    *hasher.finalize().as_bytes()
}

/// Lowercase hex of a digest.
pub fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Notes `key` in `dirty` as changed, if changes are `tracked` (a key
/// already there is not copied again).
fn mark(dirty: &mut BTreeSet<Vec<u8>>, tracked: bool, key: &[u8]) {
    if tracked && !dirty.contains(key) {
        dirty.insert(key.to_vec());
    }
}

/// A sorted map whose rows live under a one-byte prefix of the projection's
/// key space and whose changed keys are remembered until persisted. Values
/// are encoded as JSON (serde): canonical for a given struct, and readable
/// with `sled` tools when debugging.
#[derive(Clone)]
pub struct Table<V> {
    prefix: u8,
    map: BTreeMap<Vec<u8>, V>,
    dirty: BTreeSet<Vec<u8>>,
    /// Whether changed keys go to `dirty` ([`TableRows::stop_tracking`]).
    tracked: bool,
}

impl<V: Serialize + DeserializeOwned> Table<V> {
    /// A table under `prefix` (distinct per table of one projection).
    pub fn new(prefix: u8) -> Self {
        Table { prefix, map: BTreeMap::new(), dirty: BTreeSet::new(), tracked: true }
    }

    /// The value under `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.map.get(key)
    }

    /// The value under `key`, to modify (marks it changed).
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let v = self.map.get_mut(key)?;
        mark(&mut self.dirty, self.tracked, key);
        Some(v)
    }

    /// The value under `key`, inserting `make()` first if absent (marks it changed).
    pub fn entry(&mut self, key: &[u8], make: impl FnOnce() -> V) -> &mut V {
        self.mark(key);
        self.map.entry(key.to_vec()).or_insert_with(make)
    }

    /// Sets `key`.
    pub fn insert(&mut self, key: Vec<u8>, value: V) {
        self.mark(&key);
        self.map.insert(key, value);
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let v = self.map.remove(key)?;
        self.mark(key);
        Some(v)
    }

    fn mark(&mut self, key: &[u8]) {
        mark(&mut self.dirty, self.tracked, key);
    }

    /// Entries whose key starts with `prefix`, in key order.
    pub fn range_prefix<'a>(&'a self, prefix: &[u8]) -> impl Iterator<Item = (&'a Vec<u8>, &'a V)> + 'a {
        let prefix = prefix.to_vec();
        self.map.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix))
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &V)> {
        self.map.iter()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Number of keys changed since the changes were last taken or
    /// forgotten (what a projection's next write to sled carries).
    pub fn dirty_len(&self) -> usize {
        self.dirty.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn full_key(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(key.len() + 1);
        k.push(self.prefix);
        k.extend_from_slice(key);
        k
    }

    fn encode(v: &V) -> Vec<u8> {
        serde_json::to_vec(v).expect("projection rows serialise")
    }
}

impl<V: Serialize + DeserializeOwned> TableRows for Table<V> {
    fn rows_into(&self, out: &mut Vec<Row>) {
        out.extend(self.map.iter().map(|(k, v)| (self.full_key(k), Self::encode(v))));
    }

    fn changes_into(&mut self, out: &mut Vec<Change>) {
        for k in std::mem::take(&mut self.dirty) {
            let value = self.map.get(&k).map(Self::encode);
            out.push((self.full_key(&k), value));
        }
    }

    fn forget_changes(&mut self) {
        self.dirty.clear();
    }

    fn stop_tracking(&mut self) {
        self.tracked = false;
        self.dirty.clear();
    }

    fn clear(&mut self) {
        self.map.clear();
        self.dirty.clear();
    }

    fn load_row(&mut self, key: &[u8], value: &[u8]) -> Result<bool, String> {
        if key.first() != Some(&self.prefix) {
            return Ok(false);
        }
        let v = serde_json::from_slice(value).map_err(|e| format!("row {:?}: {e}", String::from_utf8_lossy(key)))?;
        self.map.insert(key[1..].to_vec(), v);
        Ok(true)
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn save(&self, w: &mut SnapshotWriter) {
        w.put(&self.map);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.map = r.take()?;
        self.dirty.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_tracks_changes_and_round_trips() {
        let mut t: Table<u32> = Table::new(1);
        t.insert(b"b".to_vec(), 2);
        *t.entry(b"a", || 0) += 5;
        let mut changes = Vec::new();
        t.changes_into(&mut changes);
        assert_eq!(changes, vec![(b"\x01a".to_vec(), Some(b"5".to_vec())), (b"\x01b".to_vec(), Some(b"2".to_vec()))]);
        t.remove(b"b");
        let mut changes = Vec::new();
        t.changes_into(&mut changes);
        assert_eq!(changes, vec![(b"\x01b".to_vec(), None)]);
        let mut rows = Vec::new();
        t.rows_into(&mut rows);
        let mut u: Table<u32> = Table::new(1);
        for (k, v) in &rows {
            assert!(u.load_row(k, v).unwrap());
        }
        assert!(!u.load_row(b"\x02x", b"1").unwrap());
        assert_eq!(u.get(b"a"), Some(&5));
        let mut again = Vec::new();
        u.rows_into(&mut again);
        assert_eq!(digest(&rows), digest(&again));
    }

    /// A table that stopped tracking keeps its rows and reports no change
    /// (through a clone and a restore too); before, it forgets none.
    #[test]
    fn an_untracked_table_remembers_no_changes() {
        let mut t: Table<u32> = Table::new(1);
        t.insert(b"a".to_vec(), 1);
        t.stop_tracking();
        t.insert(b"b".to_vec(), 2);
        *t.entry(b"a", || 0) += 5;
        *t.get_mut(b"b").unwrap() += 1;
        t.remove(b"b");
        let mut clone = t.clone();
        let mut w = SnapshotWriter::new();
        t.save(&mut w);
        let bytes = w.finish().unwrap();
        clone.restore(&mut SnapshotReader::new(&bytes)).unwrap();
        clone.insert(b"c".to_vec(), 3);
        for table in [&mut t, &mut clone] {
            let mut changes = Vec::new();
            table.changes_into(&mut changes);
            assert!(changes.is_empty(), "{changes:?}");
            assert_eq!(table.get(b"a"), Some(&6));
        }
        assert_eq!(t.len(), 1);
        assert_eq!(clone.len(), 2);
    }
}
