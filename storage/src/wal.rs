//! The write-ahead log: where an append becomes durable at one `fdatasync`.
//!
//! sled 0.34 makes a write durable only through `flush()`, and an atomic
//! batch makes it roll its IO buffer before and after (`pin_log`): two
//! `pwrite` + `sync_file_range(WAIT)` per commit, a third on `flush()`, then
//! our `fdatasync` — ≈ 1 ms per group commit, a quarter of SQLite's rate
//! with one appender. So the log's writer appends each group commit as
//! **one record** to a file of its own, `fdatasync`s it, acknowledges, and
//! only then applies the record to sled with plain inserts (no batch, no
//! flush). A checkpointer thread flushes sled in the background and
//! deletes the files sled no longer needs.
//!
//! Layout (`<data dir>/log.wal/`):
//!
//! | file | what |
//! |---|---|
//! | `<generation, 16 hex digits>.wal` | a header, then records, back to back; the rest of the file zeros, or what an earlier generation left |
//! | `spare.wal` | a checkpointed file kept to be reused as the next one |
//!
//! | part | bytes | what |
//! |---|---|---|
//! | header | 32 | magic `ENGRAMWL`, version (u32), generation (u64), base — the log's head when the file was started (u64), CRC32 of the 28 bytes before |
//! | record | 12 + n | body length n (u32), tag — the generation's low 32 bits (u32), CRC32 of the length, tag and body (u32), body |
//! | body | n | one or more segments, each: first `seq` (u64), length (u32), the segment's frames — the bytes sled stores under that key |
//!
//! Integers are little-endian.
//!
//! A file is written before its first record (its first MiB in zeros, or
//! a checkpointed file renamed, at its full size), so a record overwrites
//! blocks the file already has: `fdatasync` then writes the data alone, not the
//! file's size too (≈ 95 µs against ≈ 120 µs here, measured with 230-byte
//! records; the single-appender rate moved from 0.8× to 1.05–1.15×
//! SQLite's). The records end at the first place whose tag is not the
//! file's generation: zeros, or a record of the file's earlier use.
//!
//! The rules the writer and [`recover`] keep:
//!
//! 1. A record is written whole before sled sees any of its events, and is
//!    fsynced before a durable append in it is acknowledged.
//! 2. Records follow each other without a gap: a record's first `seq` is
//!    the one after the previous record's last (the file's base + 1 for
//!    its first record), and a file's base is the last `seq` of the file
//!    before it.
//! 3. A file is fsynced before the next one is started, and a new file is
//!    fsynced with its directory before any record goes into it, so only
//!    the *last* file can end in a torn record (or a header a crash
//!    interrupted: that file never held a record, and is ignored).
//! 4. A file is deleted only after sled has been flushed and fsynced with
//!    every record in it applied (a checkpoint), so the files on disk
//!    always reach back to what sled holds durably.
//! 5. At open, every record is applied to sled again (idempotent: the same
//!    keys get the same bytes), and whatever sled holds past the end of the
//!    last whole record is removed. sled writes its buffers when it likes;
//!    what it wrote past that end belongs to a record a power loss tore —
//!    never acknowledged as durable (rule 1) — and possibly to only part of
//!    its batch. So the log after a crash is always the prefix of whole
//!    records, and a batch is still all or nothing.
//! 6. A bad record of the file's generation at the end of the last file
//!    (its length runs past the end, its CRC fails, or it is cut short) is
//!    a torn write: dropped, with a warning. A bad record — or the end of
//!    the records — with a sound record of the generation anywhere after
//!    it, or a torn record in an earlier file, is damage: the log refuses
//!    to open, naming the file and the offset, and `engram repair`
//!    salvages the frames (every frame in a record carries its own CRC).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use engram_events::Seq;

use crate::error::LogError;

/// A file is closed, and a checkpoint asked for, once it holds this many
/// bytes: what a crash may leave to re-apply at the next open (≈ 20 000
/// events of 200 bytes, re-applied in well under a second).
pub const WAL_FILE_BYTES: u64 = 4 << 20;

/// How much of a new file (no spare to reuse) is written before its first
/// record: the first MiB, not all [`WAL_FILE_BYTES`] — a new data dir's
/// open (and the close after it) would otherwise write and fsync 4 MiB of
/// zeros, ≈ 6 ms here and hundreds of ms on a disk busy with other
/// fsyncs. Past it, records grow the file (an fsync then writes its size
/// too) until the file is retired and comes back as a full-size spare.
const PREFILL_BYTES: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"ENGRAMWL";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 32;
const RECORD_HEADER_BYTES: usize = 12;
/// The checkpointed file kept for reuse.
const SPARE: &str = "spare.wal";
/// A segment's own header inside a record body.
const SEGMENT_HEADER_BYTES: usize = 12;

/// One group commit: its segments, `(first seq, frames)`, in order.
pub type Segments = Vec<(Seq, Vec<u8>)>;

/// The file being appended to.
pub(crate) struct Wal {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    generation: u64,
    len: u64,
    /// Bytes written since the last `fdatasync`.
    dirty: bool,
    /// Scratch buffer for one record.
    buf: Vec<u8>,
}

impl Wal {
    /// Starts file `generation`, whose first record follows `base` (rule
    /// 3: the file, written before use, and its directory entry are durable
    /// before it is used). Reuses the spare file when there is one.
    pub(crate) fn create(dir: &Path, generation: u64, base: Seq) -> Result<Wal, LogError> {
        crate::data_dir::create_private_dir(dir).map_err(|e| LogError::io(dir, e))?;
        let path = file_path(dir, generation);
        let spare = dir.join(SPARE);
        let reused = std::fs::rename(&spare, &path).is_ok();
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(!reused);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path).map_err(|e| LogError::io(&path, e))?;
        let mut header = Vec::with_capacity(HEADER_BYTES);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&generation.to_le_bytes());
        header.extend_from_slice(&base.0.to_le_bytes());
        header.extend_from_slice(&crc32fast::hash(&header).to_le_bytes());
        let written = write_at(&file, &header, 0).and_then(|_| {
            let size = file.metadata()?.len();
            if size < PREFILL_BYTES {
                write_at(&file, &vec![0; (PREFILL_BYTES - size) as usize], size)?;
            }
            file.sync_all()
        });
        written.map_err(|e| LogError::io(&path, e))?;
        sync_dir(dir)?;
        Ok(Wal {
            dir: dir.to_owned(),
            path,
            file,
            generation,
            len: HEADER_BYTES as u64,
            dirty: false,
            buf: Vec::with_capacity(64 << 10),
        })
    }

    /// Appends one record holding `segments` (rule 1: one `write`, before
    /// sled sees them). Not durable until [`Wal::sync`].
    pub(crate) fn append(&mut self, segments: &[(Seq, Vec<u8>)]) -> Result<(), LogError> {
        self.buf.clear();
        self.buf.extend_from_slice(&[0; RECORD_HEADER_BYTES]);
        for (first, bytes) in segments {
            self.buf.extend_from_slice(&first.0.to_le_bytes());
            self.buf.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            self.buf.extend_from_slice(bytes);
        }
        let body_len = (self.buf.len() - RECORD_HEADER_BYTES) as u32;
        self.buf[..4].copy_from_slice(&body_len.to_le_bytes());
        self.buf[4..8].copy_from_slice(&tag(self.generation).to_le_bytes());
        let crc = record_crc(&self.buf[..8], &self.buf[RECORD_HEADER_BYTES..]);
        self.buf[8..12].copy_from_slice(&crc.to_le_bytes());
        write_at(&self.file, &self.buf, self.len).map_err(|e| LogError::io(&self.path, e))?;
        self.len += self.buf.len() as u64;
        self.dirty = true;
        Ok(())
    }

    /// Makes every record written so far durable: one `fdatasync`.
    pub(crate) fn sync(&mut self) -> Result<(), LogError> {
        if self.dirty {
            self.file.sync_data().map_err(|e| LogError::io(&self.path, e))?;
            self.dirty = false;
        }
        Ok(())
    }

    /// Bytes in the current file.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Closes this file (synced: rule 3) and starts the next one after
    /// `base`. Returns the generation closed.
    pub(crate) fn rotate(&mut self, base: Seq) -> Result<u64, LogError> {
        self.sync()?;
        let closed = self.generation;
        *self = Wal::create(&self.dir, closed + 1, base)?;
        Ok(closed)
    }
}

/// Retires every file of generation `up_to` or older (rule 4: the caller
/// has made sled durable with all of them applied): the newest becomes the
/// spare when there is none, the others are deleted.
pub(crate) fn remove_up_to(dir: &Path, up_to: u64) -> Result<(), LogError> {
    let mut retired: Vec<(u64, PathBuf)> = list(dir)?.into_iter().filter(|(g, _)| *g <= up_to).collect();
    if retired.is_empty() {
        return Ok(());
    }
    // Oldest first, the newest last: a crash part-way leaves the files
    // still on disk a chain without a gap (rule 2).
    let spare = dir.join(SPARE);
    let (_, newest) = retired.pop().expect("not empty");
    for (_, path) in retired {
        std::fs::remove_file(&path).map_err(|e| LogError::io(&path, e))?;
    }
    if spare.exists() {
        std::fs::remove_file(&newest).map_err(|e| LogError::io(&newest, e))?;
    } else {
        std::fs::rename(&newest, &spare).map_err(|e| LogError::io(&newest, e))?;
    }
    sync_dir(dir)
}

/// What the files hold, read at open (or by `engram verify`).
#[derive(Debug, Default)]
pub struct Recovered {
    /// Every whole record, in order.
    pub records: Vec<Segments>,
    /// The last `seq` the files account for: the last record's last, or
    /// the last file's base when it has none. `None` without files.
    pub end: Option<Seq>,
    /// The first file's base: sled must hold everything up to it.
    pub base: Option<Seq>,
    /// The newest generation found.
    pub last_generation: Option<u64>,
    /// A torn record dropped from the end (rule 6): the file and offset.
    pub torn: Option<(PathBuf, u64)>,
}

/// Reads every file in `dir` (none, when it does not exist), applying
/// rules 2, 3 and 6. Reads only.
pub fn recover(dir: &Path) -> Result<Recovered, LogError> {
    let mut out = Recovered::default();
    let files = match list(dir) {
        Ok(files) => files,
        Err(LogError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    let count = files.len();
    let mut expected: Option<Seq> = None;
    for (i, (generation, path)) in files.into_iter().enumerate() {
        let last_file = i + 1 == count;
        let bytes = std::fs::read(&path).map_err(|e| LogError::io(&path, e))?;
        let damaged =
            |offset: usize, what: String| LogError::WalDamaged { path: path.clone(), offset: offset as u64, what };
        let tag = tag(generation);
        let base = match parse_header(&bytes) {
            Ok((found, base)) if found == generation => base,
            // A file whose creation a crash interrupted (rule 3): no
            // record of its generation follows the header.
            header if last_file && !sound_record_after(&bytes, HEADER_BYTES, tag) => {
                tracing::debug!("{}: ignored, its creation was interrupted ({header:?})", path.display());
                out.torn = Some((path.clone(), 0));
                break;
            }
            Ok((found, _)) => return Err(damaged(0, format!("the header names generation {found}"))),
            Err(what) => return Err(damaged(0, what)),
        };
        if let Some(want) = expected {
            if base != want {
                return Err(damaged(0, format!("the file starts after seq {base}, the one before ends at seq {want}")));
            }
        } else {
            out.base = Some(base);
        }
        out.last_generation = Some(generation);
        let mut next = base;
        let mut offset = HEADER_BYTES;
        while offset < bytes.len() {
            match parse_record(&bytes[offset..], tag, next.next()) {
                Ok(Some((segments, len, last))) => {
                    out.records.push(segments);
                    next = last;
                    offset += len;
                }
                // The end of the records: unless one follows (rule 6).
                Ok(None) if !sound_record_after(&bytes, offset + 1, tag) => break,
                Ok(None) => return Err(damaged(offset, "a record's header is damaged".to_owned())),
                Err(what) => {
                    // Rule 6: torn only if it is the very end.
                    if last_file && !sound_record_after(&bytes, offset + 1, tag) {
                        out.torn = Some((path.clone(), offset as u64));
                        break;
                    }
                    return Err(damaged(offset, what));
                }
            }
        }
        expected = Some(next);
    }
    out.end = expected;
    Ok(out)
}

/// Whether any offset from `from` on starts a record of this tag whose
/// CRC holds. Zeros (the common case: a prefilled file) are skipped at
/// memory speed.
fn sound_record_after(bytes: &[u8], from: usize, tag: u32) -> bool {
    let Some(rest) = bytes.get(from..) else { return false };
    let Some(start) = rest.iter().position(|b| *b != 0) else { return false };
    // A record's header may begin up to 11 bytes before its first nonzero
    // byte (a length and tag of zeros cannot be a record's, but start early).
    let first = (from + start).saturating_sub(RECORD_HEADER_BYTES).max(from);
    // Only where the generation's tag stands can a record of it begin: the
    // tag is searched for (a vectorised scan of the stale megabytes a
    // recycled file holds), not tried at every byte.
    let end = bytes.len().saturating_sub(RECORD_HEADER_BYTES);
    let Some(window) = bytes.get(first + 4..end + 8) else { return false };
    memchr::memmem::find_iter(window, &tag.to_le_bytes())
        .map(|at| first + at)
        .any(|p| matches!(record_body(&bytes[p..], tag), Ok(Some(_))))
}

/// The tag of a generation's records.
fn tag(generation: u64) -> u32 {
    generation as u32
}

/// A record's CRC: over its length and tag, then its body.
fn record_crc(len_and_tag: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(len_and_tag);
    hasher.update(body);
    hasher.finalize()
}

fn parse_header(bytes: &[u8]) -> Result<(u64, Seq), String> {
    let header = bytes.get(..HEADER_BYTES).ok_or_else(|| format!("{} bytes, shorter than a header", bytes.len()))?;
    if &header[..8] != MAGIC {
        return Err("not a write-ahead file (bad magic)".to_owned());
    }
    let crc = u32::from_le_bytes(header[28..32].try_into().expect("4 bytes"));
    if crc32fast::hash(&header[..28]) != crc {
        return Err("header CRC mismatch".to_owned());
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format!("version {version}, this engram reads {VERSION}"));
    }
    let generation = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
    let base = Seq(u64::from_le_bytes(header[20..28].try_into().expect("8 bytes")));
    Ok((generation, base))
}

/// The body of the record at the start of `bytes`, checked (length, CRC);
/// `None` where the records end (a tag not of this generation: zeros, or
/// the file's earlier use).
fn record_body(bytes: &[u8], tag: u32) -> Result<Option<&[u8]>, String> {
    let header = bytes.get(..RECORD_HEADER_BYTES).ok_or("a record header cut short")?;
    if header[4..8] != tag.to_le_bytes() {
        return Ok(None);
    }
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if len == 0 {
        return Err("an empty record".to_owned());
    }
    let body = bytes
        .get(RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + len)
        .ok_or_else(|| format!("a record of {len} bytes runs past the end of the file"))?;
    if record_crc(&header[..8], body) != crc {
        return Err("record CRC mismatch".to_owned());
    }
    Ok(Some(body))
}

/// One record at the start of `bytes`, which must begin at `first`:
/// `(segments, bytes taken, last seq)`; `None` where the records end.
#[allow(clippy::type_complexity)]
fn parse_record(bytes: &[u8], tag: u32, first: Seq) -> Result<Option<(Segments, usize, Seq)>, String> {
    let Some(body) = record_body(bytes, tag)? else { return Ok(None) };
    let len = body.len();
    let mut segments = Vec::new();
    let mut expected = first;
    let mut rest = body;
    while !rest.is_empty() {
        let header = rest.get(..SEGMENT_HEADER_BYTES).ok_or("a segment header cut short")?;
        let seg_first = Seq(u64::from_le_bytes(header[..8].try_into().expect("8 bytes")));
        let seg_len = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
        let frames =
            rest.get(SEGMENT_HEADER_BYTES..SEGMENT_HEADER_BYTES + seg_len).ok_or("a segment runs past its record")?;
        if seg_first != expected {
            return Err(format!("a segment starts at seq {seg_first}, expected seq {expected}"));
        }
        let end = crate::segment::for_each_frame(seg_first, frames, |_, _| Ok(())).map_err(|e| e.to_string())?;
        segments.push((seg_first, frames.to_vec()));
        expected = end;
        rest = &rest[SEGMENT_HEADER_BYTES + seg_len..];
    }
    Ok(Some((segments, RECORD_HEADER_BYTES + len, Seq(expected.0 - 1))))
}

/// The files in `dir`, oldest generation first.
fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, LogError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name();
        let Some(generation) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".wal"))
            .filter(|n| n.len() == 16)
            .and_then(|n| u64::from_str_radix(n, 16).ok())
        else {
            continue;
        };
        files.push((generation, entry.path()));
    }
    files.sort();
    Ok(files)
}

fn file_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:016x}.wal"))
}

fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, offset)
}

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| LogError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::SegmentBuilder;
    use engram_events::payloads::{SessionEndReason, SessionEnded};
    use engram_events::{ActorKind, Envelope, SessionId};

    fn segments(first: u64, n: u64) -> Segments {
        let mut builder = SegmentBuilder::new(512);
        for seq in first..first + n {
            let mut env =
                Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: seq as u32 })
                    .with_session(SessionId::new(format!("s-{seq}")));
            env.seq = Seq(seq);
            builder.push(&env);
        }
        builder.finish()
    }

    fn write(dir: &Path, records: &[(u64, u64)]) -> Wal {
        let mut wal = Wal::create(dir, 1, Seq(records.first().map_or(0, |r| r.0 - 1))).unwrap();
        for &(first, n) in records {
            wal.append(&segments(first, n)).unwrap();
        }
        wal.sync().unwrap();
        wal
    }

    fn last_seq(r: &Recovered) -> u64 {
        r.end.unwrap().0
    }

    #[test]
    fn records_come_back_whole_and_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let mut wal = write(tmp.path(), &[(1, 3), (4, 40), (44, 1)]);
        let closed = wal.rotate(Seq(44)).unwrap();
        assert_eq!(closed, 1);
        wal.append(&segments(45, 2)).unwrap();
        let r = recover(tmp.path()).unwrap();
        assert_eq!(r.records.len(), 4);
        assert!(r.records[1].len() > 1, "40 events make several segments");
        assert_eq!((r.base, last_seq(&r), r.last_generation), (Some(Seq(0)), 46, Some(2)));
        assert!(r.torn.is_none());
        remove_up_to(tmp.path(), closed).unwrap();
        let r = recover(tmp.path()).unwrap();
        assert_eq!((r.base, last_seq(&r), r.records.len()), (Some(Seq(44)), 46, 1));
    }

    #[test]
    fn a_torn_last_record_is_dropped_at_every_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let wal = write(tmp.path(), &[(1, 3), (4, 5)]);
        let path = wal.path.clone();
        let whole = std::fs::read(&path).unwrap()[..wal.len as usize].to_vec();
        let first_end = {
            let r = recover(tmp.path()).unwrap();
            assert_eq!(last_seq(&r), 8);
            HEADER_BYTES + RECORD_HEADER_BYTES + r.records[0].iter().map(|s| 12 + s.1.len()).sum::<usize>()
        };
        for cut in first_end + 1..whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let r = recover(tmp.path()).unwrap();
            assert_eq!((r.records.len(), last_seq(&r)), (1, 3), "cut at {cut}");
            assert_eq!(r.torn.as_ref().map(|t| t.1), Some(first_end as u64));
        }
        // A torn record whose space holds zeros or noise, not a cut.
        let mut zeroed = whole.clone();
        zeroed[first_end + 20..].iter_mut().for_each(|b| *b = 0);
        std::fs::write(&path, &zeroed).unwrap();
        assert_eq!(last_seq(&recover(tmp.path()).unwrap()), 3);
    }

    #[test]
    fn a_damaged_record_before_a_sound_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let wal = write(tmp.path(), &[(1, 3), (4, 5), (9, 2)]);
        let mut bytes = std::fs::read(&wal.path).unwrap();
        bytes[HEADER_BYTES + 40] ^= 0x10;
        std::fs::write(&wal.path, &bytes).unwrap();
        let err = recover(tmp.path()).unwrap_err();
        assert!(matches!(&err, LogError::WalDamaged { offset, .. } if *offset == HEADER_BYTES as u64), "{err}");
        assert!(err.to_string().contains("engram repair"), "{err}");
    }

    #[test]
    fn a_torn_record_in_an_earlier_file_is_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let mut wal = write(tmp.path(), &[(1, 3), (4, 5)]);
        let old = wal.path.clone();
        wal.rotate(Seq(8)).unwrap();
        wal.append(&segments(9, 1)).unwrap();
        let mut bytes = std::fs::read(&old).unwrap();
        let end = bytes.iter().rposition(|b| *b != 0).unwrap();
        bytes[end] ^= 0x01;
        std::fs::write(&old, &bytes).unwrap();
        assert!(matches!(recover(tmp.path()), Err(LogError::WalDamaged { .. })));
    }

    #[test]
    fn a_reused_file_ends_where_its_generation_does() {
        let tmp = tempfile::tempdir().unwrap();
        let mut wal = write(tmp.path(), &[(1, 30), (31, 30), (61, 30)]);
        let closed = wal.rotate(Seq(90)).unwrap();
        remove_up_to(tmp.path(), closed).unwrap();
        assert!(tmp.path().join(SPARE).exists(), "kept for reuse");
        // The next file reuses it: its old records follow the new ones.
        let closed = wal.rotate(Seq(90)).unwrap();
        remove_up_to(tmp.path(), closed).unwrap();
        wal.append(&segments(91, 2)).unwrap();
        wal.sync().unwrap();
        assert!(std::fs::read(&wal.path).unwrap()[wal.len as usize..].iter().any(|b| *b != 0), "old records remain");
        let r = recover(tmp.path()).unwrap();
        assert_eq!((r.records.len(), last_seq(&r), r.base), (1, 92, Some(Seq(90))));
        assert!(r.torn.is_none(), "the end of a generation is no torn record");
        // A record whose tag is damaged ends the records early, with a
        // sound one after it: damage, not the end.
        wal.append(&segments(93, 2)).unwrap();
        wal.sync().unwrap();
        let mut bytes = std::fs::read(&wal.path).unwrap();
        bytes[HEADER_BYTES + 4] ^= 0x01;
        std::fs::write(&wal.path, &bytes).unwrap();
        let err = recover(tmp.path()).unwrap_err();
        assert!(matches!(&err, LogError::WalDamaged { offset, .. } if *offset == HEADER_BYTES as u64), "{err}");
    }

    #[test]
    fn retiring_files_oldest_first_keeps_a_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let mut wal = write(tmp.path(), &[(1, 3)]);
        wal.rotate(Seq(3)).unwrap();
        wal.append(&segments(4, 2)).unwrap();
        wal.rotate(Seq(5)).unwrap();
        wal.append(&segments(6, 2)).unwrap();
        wal.sync().unwrap();
        // What a crash after the first deletion of `remove_up_to(2)` leaves.
        std::fs::remove_file(file_path(tmp.path(), 1)).unwrap();
        let r = recover(tmp.path()).unwrap();
        assert_eq!((r.base, last_seq(&r)), (Some(Seq(3)), 7));
        remove_up_to(tmp.path(), 2).unwrap();
        let r = recover(tmp.path()).unwrap();
        assert_eq!((r.base, last_seq(&r), r.records.len()), (Some(Seq(5)), 7, 1));
    }

    #[test]
    fn files_must_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let mut wal = write(tmp.path(), &[(1, 3)]);
        wal.rotate(Seq(5)).unwrap();
        let err = recover(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("starts after seq 5"), "{err}");
    }

    #[test]
    fn a_file_cut_at_creation_is_ignored_when_last() {
        let tmp = tempfile::tempdir().unwrap();
        let _wal = write(tmp.path(), &[(1, 3)]);
        std::fs::write(file_path(tmp.path(), 2), b"ENGRAM").unwrap();
        let r = recover(tmp.path()).unwrap();
        assert_eq!((last_seq(&r), r.last_generation), (3, Some(1)));
        assert!(r.torn.is_some());
    }

    #[test]
    fn no_dir_is_no_files() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recover(&tmp.path().join("absent")).unwrap();
        assert!(r.end.is_none() && r.records.is_empty());
    }
}
