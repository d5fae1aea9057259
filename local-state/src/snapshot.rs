//! Snapshots: an actor's folded state saved beside its checkpoint, so that
//! a start reads the state and the log's tail instead of folding the whole
//! log from seq 1.
//!
//! The log stays the only truth. A snapshot is a cache of one fold over it
//! and is used only when it can be shown to be that fold; anything else
//! about it — missing, torn, damaged, of another version, of another log —
//! makes its owner fold from seq 1 as it did before snapshots existed, and
//! write a fresh one. A snapshot is never a reason to refuse a start.
//!
//! | file | holds |
//! |---|---|
//! | `DIR/snapshots/<owner>.snap` | one owner's state: [header](HEADER_LEN), then the body its [`Snapshot::save`] wrote |
//! | `DIR/snapshots/<owner>.snap.tmp` | a snapshot being written (renamed over the `.snap` when whole) |
//!
//! The header, little-endian: magic `ENGRAMSS`, [`FORMAT`] (u32), the
//! owner's state version (u32), the `seq` the state is folded up to (u64),
//! the id of the event at that `seq` (16 bytes), the body's length (u64),
//! and a CRC-32 over everything before it plus the body (u32).
//!
//! # Rules
//!
//! 1. **Written whole, then renamed.** A snapshot is written to its `.tmp`
//!    file and renamed over the old one, never rewritten in place: a reader
//!    finds the old snapshot or the new one. It is not fsynced — after a
//!    power loss a file may be torn or empty, and rule 2 rejects it.
//! 2. **Checked before use.** A snapshot is used only when its magic, format
//!    and CRC are right; its version is the one its owner folds today; its
//!    `seq` is at most the owner's checkpoint; the event at that `seq` in the
//!    log has the id the header names (a log repaired, re-imported or cut
//!    back by a power loss has other events there); and its body restores
//!    to its last byte. [`SnapshotDir::load`] checks all but the last, which
//!    is the owner's [`SnapshotReader::finish`].
//! 3. **Only an exact fold is saved.** An owner saves its state at `seq` only
//!    when that state is the fold of the log up to `seq` and nothing more —
//!    the actors' shell waits until every event a role derived and folded
//!    has come back from the log (see `engram_actors::shell`).
//! 4. **What shapes a fold is in the body.** Configuration a fold depends on
//!    (the user's UTC offset, a dialogue window) is saved in the body and
//!    compared on restore ([`SnapshotReader::expect`]): a changed setting
//!    makes the owner fold from seq 1 under the new one.
//! 5. **A changed fold is a new version.** An owner's version changes with
//!    the layout of its state *and* with any change to what its fold
//!    computes, or a snapshot would carry the old fold's results forward.
//!
//! The body is [postcard]: compact, and fast for the vectors and maps most
//! of a state is (a projection's tables go in this way, not as their JSON
//! rows). Maps keyed by hash go in sorted, so equal states save equal
//! bytes (the tests compare them).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::hash::{BuildHasher, Hash};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use engram_events::{EventId, Seq};
use serde::de::DeserializeOwned;
use serde::Serialize;

use engram_storage::EventLog;

/// The snapshot file format (the header and the body's encoding).
pub const FORMAT: u32 = 1;

/// The magic opening every snapshot file.
const MAGIC: &[u8; 8] = b"ENGRAMSS";

/// Length of the header: magic, format, version, seq, event id, body
/// length, CRC.
pub const HEADER_LEN: usize = 8 + 4 + 4 + 8 + 16 + 8 + 4;

/// The snapshots' directory under the data dir.
pub const DIR_NAME: &str = "snapshots";

/// Why a snapshot was not saved or not used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The file or its body is not a whole snapshot of this format.
    #[error("damaged: {0}")]
    Damaged(String),
    /// A whole snapshot, but not of the state this owner would fold now
    /// (another version, another log, another setting).
    #[error("stale: {0}")]
    Stale(String),
    /// The state could not be encoded.
    #[error("cannot encode the state: {0}")]
    Encode(String),
}

/// State that can be saved into a snapshot and restored from one.
///
/// `restore` is called on a freshly built owner (its configuration set,
/// its state empty) and reads exactly what `save` wrote, in order.
pub trait Snapshot {
    /// Writes the folded state.
    fn save(&self, w: &mut SnapshotWriter);

    /// Reads the state `save` wrote.
    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError>;
}

/// Builds a snapshot's body.
#[derive(Default)]
pub struct SnapshotWriter {
    buf: Vec<u8>,
    /// The first encoding error: the body is then not saved.
    failed: Option<String>,
}

impl SnapshotWriter {
    /// An empty body.
    pub fn new() -> Self {
        SnapshotWriter::default()
    }

    /// Appends `value` (postcard). The type's serde form must not depend
    /// on a self-describing format: no `skip_serializing_if`, no JSON
    /// values (event payloads keep those for their JSON; `ToolArgs` writes
    /// its JSON text in a binary format) — the actors' round-trip tests
    /// catch one that does.
    pub fn put<T: Serialize + ?Sized>(&mut self, value: &T) {
        if self.failed.is_some() {
            return;
        }
        match postcard::to_extend(value, std::mem::take(&mut self.buf)) {
            Ok(buf) => self.buf = buf,
            Err(e) => self.failed = Some(e.to_string()),
        }
    }

    /// Appends a hash map with its entries sorted by key, so that equal
    /// maps give equal bytes.
    pub fn put_map<K: Ord + Serialize, V: Serialize, S>(&mut self, map: &HashMap<K, V, S>) {
        let mut entries: Vec<(&K, &V)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        self.put(&entries);
    }

    /// Appends a hash set, sorted.
    pub fn put_set<T: Ord + Serialize, S>(&mut self, set: &HashSet<T, S>) {
        let mut items: Vec<&T> = set.iter().collect();
        items.sort_unstable();
        self.put(&items);
    }

    /// The body, or why it could not be encoded.
    pub fn finish(self) -> Result<Vec<u8>, SnapshotError> {
        match self.failed {
            Some(e) => Err(SnapshotError::Encode(e)),
            None => Ok(self.buf),
        }
    }
}

/// Reads a snapshot's body back, in the order it was written.
pub struct SnapshotReader<'a> {
    rest: &'a [u8],
}

impl<'a> SnapshotReader<'a> {
    /// A reader over `body`.
    pub fn new(body: &'a [u8]) -> Self {
        SnapshotReader { rest: body }
    }

    /// The next value, as [`SnapshotWriter::put`] wrote it.
    pub fn take<T: DeserializeOwned>(&mut self) -> Result<T, SnapshotError> {
        let (value, rest) = postcard::take_from_bytes(self.rest)
            .map_err(|e| SnapshotError::Damaged(format!("{} ({} bytes left)", e, self.rest.len())))?;
        self.rest = rest;
        Ok(value)
    }

    /// The next map, as [`SnapshotWriter::put_map`] wrote it.
    pub fn take_map<K: Eq + Hash + DeserializeOwned, V: DeserializeOwned, S: BuildHasher + Default>(
        &mut self,
    ) -> Result<HashMap<K, V, S>, SnapshotError> {
        let entries: Vec<(K, V)> = self.take()?;
        Ok(entries.into_iter().collect())
    }

    /// The next set, as [`SnapshotWriter::put_set`] wrote it.
    pub fn take_set<T: Eq + Hash + DeserializeOwned, S: BuildHasher + Default>(
        &mut self,
    ) -> Result<HashSet<T, S>, SnapshotError> {
        let items: Vec<T> = self.take()?;
        Ok(items.into_iter().collect())
    }

    /// Reads a setting the fold depended on and checks it is `current`
    /// (rule 4): `what` names it in the reason when it is not.
    pub fn expect<T: DeserializeOwned + PartialEq + std::fmt::Debug>(
        &mut self,
        what: &str,
        current: &T,
    ) -> Result<(), SnapshotError> {
        let saved: T = self.take()?;
        if &saved != current {
            return Err(SnapshotError::Stale(format!("{what} was {saved:?}, is {current:?}")));
        }
        Ok(())
    }

    /// Checks the body was read to its last byte.
    pub fn finish(self) -> Result<(), SnapshotError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(SnapshotError::Damaged(format!("{} bytes after the state", self.rest.len())))
        }
    }
}

/// A snapshot that passed [`SnapshotDir::load`]'s checks.
#[derive(Debug)]
pub struct Loaded {
    /// The `seq` the state is folded up to.
    pub seq: Seq,
    /// The whole file, header and body (the body is not copied out of it:
    /// a pattern store's is megabytes, read at every start).
    file: Vec<u8>,
}

impl Loaded {
    /// The owner's body.
    pub fn body(&self) -> &[u8] {
        &self.file[HEADER_LEN..]
    }
}

/// One snapshot file as [`SnapshotDir::list`] finds it.
#[derive(Debug)]
pub struct Listed {
    /// Whose state it is.
    pub owner: String,
    /// Its size.
    pub bytes: u64,
    /// Its state version and seq, or why its header or CRC is wrong.
    pub header: Result<(u32, Seq), String>,
}

/// The snapshots of one data dir (`DIR/snapshots`).
#[derive(Clone, Debug)]
pub struct SnapshotDir {
    dir: PathBuf,
}

impl SnapshotDir {
    /// The snapshots of the data dir `data_dir` (created at the first save).
    pub fn new(data_dir: &Path) -> SnapshotDir {
        SnapshotDir { dir: data_dir.join(DIR_NAME) }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `owner`'s snapshot lives.
    pub fn path(&self, owner: &str) -> PathBuf {
        self.dir.join(format!("{owner}.snap"))
    }

    /// Saves `body` as `owner`'s state (of `version`) folded up to `seq`,
    /// which must be in `log` (rule 1). Nothing is saved for seq 0.
    pub fn save(
        &self,
        log: &dyn EventLog,
        owner: &str,
        version: u32,
        seq: Seq,
        body: &[u8],
    ) -> Result<(), SnapshotError> {
        if seq.0 == 0 {
            return Ok(());
        }
        let id = event_id_at(log, seq)?;
        // A link planted in its place is refused before anything follows it.
        if fs::symlink_metadata(&self.dir).is_ok_and(|m| !m.is_dir()) {
            return Err(SnapshotError::Damaged(format!("{} is not a directory", self.dir.display())));
        }
        engram_storage::data_dir::create_private_dir(&self.dir).map_err(|source| self.io(&self.dir, source))?;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT.to_le_bytes());
        header.extend_from_slice(&version.to_le_bytes());
        header.extend_from_slice(&seq.0.to_le_bytes());
        header.extend_from_slice(&id.0.to_bytes());
        header.extend_from_slice(&(body.len() as u64).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&header);
        crc.update(body);
        header.extend_from_slice(&crc.finalize().to_le_bytes());
        let path = self.path(owner);
        let tmp = path.with_extension("snap.tmp");
        let write = || -> io::Result<()> {
            // A planted link is replaced, never followed.
            let _ = fs::remove_file(&tmp);
            let mut f = fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            f.write_all(&header)?;
            f.write_all(body)?;
            drop(f);
            fs::rename(&tmp, &path)
        };
        write().map_err(|source| self.io(&path, source))
    }

    /// `owner`'s snapshot if it passes every check of rule 2 but the
    /// body's own; `upto` is the owner's checkpoint. `Ok(None)`: there is
    /// none.
    pub fn load(
        &self,
        log: &dyn EventLog,
        owner: &str,
        version: u32,
        upto: Seq,
    ) -> Result<Option<Loaded>, SnapshotError> {
        let path = self.path(owner);
        let bytes = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(&path, e)),
            Ok(m) if !m.is_file() => return Err(SnapshotError::Damaged(format!("{} is not a file", path.display()))),
            Ok(_) => fs::read(&path).map_err(|e| self.io(&path, e))?,
        };
        let (saved, seq, id, _) = parse(&bytes)?;
        if saved != version {
            return Err(SnapshotError::Stale(format!("state version {saved}, this engram folds version {version}")));
        }
        if seq > upto {
            return Err(SnapshotError::Stale(format!("folded up to seq {seq}, past the checkpoint at {upto}")));
        }
        let found = event_id_at(log, seq)?;
        if found != id {
            return Err(SnapshotError::Stale(format!("folded up to seq {seq}, event {id}; the log has {found} there")));
        }
        Ok(Some(Loaded { seq, file: bytes }))
    }

    /// Every snapshot file, by owner, with what its header says (state
    /// version, seq) or why it cannot be read — for `engram stats`; whether
    /// an owner would use it is [`SnapshotDir::load`]'s to say.
    pub fn list(&self) -> Vec<Listed> {
        let Ok(entries) = fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out: Vec<Listed> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let owner = name.strip_suffix(".snap")?.to_owned();
                let bytes = fs::read(e.path()).map_err(|e| e.to_string());
                let size = bytes.as_ref().map_or(0, |b| b.len() as u64);
                let header =
                    bytes.and_then(|b| parse(&b).map(|(version, seq, _, _)| (version, seq)).map_err(|e| e.to_string()));
                Some(Listed { owner, bytes: size, header })
            })
            .collect();
        out.sort_by(|a, b| a.owner.cmp(&b.owner));
        out
    }

    /// Removes every snapshot (after a rebuild, a repair): the next start
    /// folds from seq 1 and saves them again.
    pub fn remove_all(&self) -> io::Result<()> {
        match fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn io(&self, path: &Path, source: io::Error) -> SnapshotError {
        SnapshotError::Io { path: path.to_owned(), source }
    }
}

/// Splits a snapshot file into its state version, seq, event id and body,
/// checking magic, format, length and CRC.
fn parse(bytes: &[u8]) -> Result<(u32, Seq, EventId, &[u8]), SnapshotError> {
    let damaged = |what: &str| Err(SnapshotError::Damaged(what.to_owned()));
    if bytes.len() < HEADER_LEN {
        return damaged(&format!("{} bytes, shorter than a header", bytes.len()));
    }
    if &bytes[..8] != MAGIC {
        return damaged("not a snapshot (bad magic)");
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let format = u32_at(8);
    if format != FORMAT {
        return Err(SnapshotError::Stale(format!("snapshot format {format}, this engram writes {FORMAT}")));
    }
    let seq = Seq(u64_at(16));
    let id = EventId(ulid::Ulid::from_bytes(bytes[24..40].try_into().expect("16 bytes")));
    let len = u64_at(40);
    if len != (bytes.len() - HEADER_LEN) as u64 {
        return damaged(&format!("body of {} bytes, header says {len}", bytes.len() - HEADER_LEN));
    }
    let stored = u32_at(48);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[..48]);
    crc.update(&bytes[HEADER_LEN..]);
    if crc.finalize() != stored {
        return damaged("CRC mismatch");
    }
    Ok((u32_at(12), seq, id, &bytes[HEADER_LEN..]))
}

/// The id of the event at `seq`.
fn event_id_at(log: &dyn EventLog, seq: Seq) -> Result<EventId, SnapshotError> {
    match log.read_from(seq).next() {
        Some(Ok(env)) if env.seq == seq => Ok(env.id),
        Some(Ok(_)) | None => Err(SnapshotError::Stale(format!("the log has no event at seq {seq}"))),
        Some(Err(e)) => Err(SnapshotError::Stale(format!("the event at seq {seq} cannot be read: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_and_reader_round_trip_in_order() {
        let mut w = SnapshotWriter::new();
        w.put(&7u32);
        let map: HashMap<String, u8> = [("b".into(), 2), ("a".into(), 1), ("c".into(), 3)].into();
        w.put_map(&map);
        w.put(&"offset");
        let body = w.finish().unwrap();
        let mut r = SnapshotReader::new(&body);
        assert_eq!(r.take::<u32>().unwrap(), 7);
        let back: HashMap<String, u8> = r.take_map().unwrap();
        assert_eq!(back, map);
        assert!(matches!(r.expect("setting", &"other".to_string()), Err(SnapshotError::Stale(_))));
        r.finish().unwrap();
    }

    #[test]
    fn equal_maps_save_equal_bytes() {
        let a: HashMap<u64, u64> = (0..500).map(|i| (i, i * 2)).collect();
        let b: HashMap<u64, u64> = (0..500).rev().map(|i| (i, i * 2)).collect();
        let (mut wa, mut wb) = (SnapshotWriter::new(), SnapshotWriter::new());
        wa.put_map(&a);
        wb.put_map(&b);
        assert_eq!(wa.finish().unwrap(), wb.finish().unwrap());
    }

    #[test]
    fn trailing_bytes_are_damage() {
        let mut w = SnapshotWriter::new();
        w.put(&1u8);
        w.put(&2u8);
        let body = w.finish().unwrap();
        let mut r = SnapshotReader::new(&body);
        r.take::<u8>().unwrap();
        assert!(matches!(r.finish(), Err(SnapshotError::Damaged(_))));
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_rejected() {
        let body = b"the state".to_vec();
        let mut file = Vec::new();
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&FORMAT.to_le_bytes());
        file.extend_from_slice(&3u32.to_le_bytes());
        file.extend_from_slice(&9u64.to_le_bytes());
        file.extend_from_slice(&[7; 16]);
        file.extend_from_slice(&(body.len() as u64).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&file);
        crc.update(&body);
        file.extend_from_slice(&crc.finalize().to_le_bytes());
        file.extend_from_slice(&body);
        let (version, seq, id, got) = parse(&file).unwrap();
        assert_eq!((version, seq, id.0.to_bytes(), got), (3, Seq(9), [7; 16], &body[..]));
        for cut in 0..file.len() {
            assert!(parse(&file[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..file.len() {
            let mut bad = file.clone();
            bad[at] ^= 0x10;
            assert!(parse(&bad).is_err(), "flip at {at}");
        }
    }
}
