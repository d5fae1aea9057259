//! What sled's recovery would do to a log, found out read-only before sled
//! is let near it.
//!
//! sled 0.34 writes a snapshot only when it opens a database; at the next
//! open it replays every message written since (the *replayed tail*: on an
//! assistant's log, everything the last run wrote). A message there whose
//! checksum fails is taken for a torn write at the end of the log: sled
//! stops the replay at it, **zeroes the segments after it and truncates the
//! file** — every event appended after one flipped byte is gone, from the
//! original files, before any command of ours has read a record. A torn
//! write at the real end is what that rule is for; one damaged record in
//! the middle must cost that record only (`docs/log.md`).
//!
//! So before sled opens an existing log, [`find_damage`] walks the replayed
//! tail the way sled's recovery iterator does (same segment order, same
//! message headers and checksums) and tells the two apart:
//!
//! | # | rule |
//! |---|---|
//! | 1 | the walk starts at the newest snapshot's stable LSN (its file name), on every segment whose header checks out and whose LSN is at or above that LSN's segment — the segments sled replays |
//! | 2 | a message whose header is whole (a known kind, this segment's number, a length that fits) but whose checksum fails — or a blob message whose blob fails its own checksum — is **suspect**; the first one is where sled would cut |
//! | 3 | bytes that are no message (zeros, a stale segment number, a length past the segment) end that segment's messages, as they end sled's — the normal end of the active segment looks like that |
//! | 4 | a suspect message that can be a write a kill cut short (rule 6) is left to sled: it cuts the log there, and nothing from there on was acknowledged — an acknowledgement waits for every earlier write, and this one never ended. That holds even when later messages check out: sled writes its buffers concurrently, and a later, smaller one can end while an earlier one is cut |
//! | 5 | a sound message pointing at a blob that fails the blob's own checksum is damage (the blob was written whole before the message) |
//! | 6 | a suspect message that cannot be a cut write is **damage**, last or not. A write cut short by a kill stops at a page boundary and leaves the rest of its area as it was: zeros where it was never written (sled zeroes free segments at open), or the leftovers of the segment's previous use (sled reuses a cleaned segment without zeroing it). So a message inside one 4 KiB page was written whole (one followed by a sound message with no sign of a cut goes to rule 8); one that spans pages is cut when it ends in zeros from a page boundary on — with nothing written right after it, or over 32 bytes or more (the follower may then open a later buffer, written concurrently and whole while this one was cut: the CI failure of `acknowledged_events_survive_kill_9` under four appenders) — or when it holds leftovers: our frames out of `seq` order, or a sound message of an earlier use of the segment (`cut`) |
//! | 7 | a suspect message spanning pages with neither sign (leftovers that are neither frames nor messages: the middle of an old blob or node) is left to sled when it is the last thing written — a cut write's tail, sled's own case (a flipped byte there costs that one message, as sled alone would); when a sound message follows it, rule 8 decides |
//! | 8 | a suspect message spanning pages that a sound message follows, at once or later, with no sign of rule 6, is **damage** when changing one byte would make its checksum hold (a flip: the damage a disk or a hand makes changes bytes in place, and CRC-32 finds one changed byte: `one_byte_explains`), else a cut write: sled writes its buffers concurrently, and a kill that cuts one can leave a later one whole after it — short tails of zeros (11 of a 24-byte message written, the next buffer sound) and leftovers with no sign both came out of the kill loop (`tests/crash.rs`), which rules 6 and 7 alone called damage |
//!
//! Damage makes [`crate::log::SledLog::open`] refuse with
//! [`crate::error::LogError::Unopenable`], naming the byte offset and the seqs the damaged
//! message holds, before sled has written a byte; `engram repair` then
//! reads the untouched original raw ([`crate::repair`]) and loses only the
//! damaged record.
//!
//! The cost is one read of the replayed tail, which sled reads next anyway
//! (it is then in the page cache). The format constants below are sled
//! 0.34.7's (`pagecache/constants.rs`, `logger.rs`, `serialization.rs`);
//! the workspace pins that version, and the tests here build real sled logs
//! and damage them, so a format change fails them rather than this check
//! going quietly blind.
//!
//! What this cannot tell apart: a flipped byte in a message whose last
//! page happens to be zeros, or which happens to hold leftovers, is taken
//! for a cut write, and sled's cut costs what follows; one in the last
//! message written, with neither sign, costs that message (rule 7); many
//! bytes changed in a message a sound one follows read as a cut (rule 8),
//! and a cut write whose checksum one byte happens to explain (odds of
//! about its length × 2⁻²⁴) reads as damage, which `engram repair` then
//! salvages. A flip in a message's header (its length or segment number) makes it no
//! message (rule 3): the walk reads the segment's normal end there and says
//! nothing, while sled cuts the log at it. The crash tests
//! (`tests/crash.rs`: kill -9 under four appenders, a segment reused
//! within a run, and a kill loop whose child dies inside sled's own writes,
//! cut at a page boundary, on both backends, counting which rule told each
//! cut — [`walk`]'s [`Verdict`]) hold the other side: a kill never makes the
//! log refuse to open. (Until this rule knew about reused segments, a cut write's
//! leftovers there read as damage, and a killed log would not reopen.)

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use engram_events::Seq;

/// sled's segment header: CRC, LSN, max stable LSN.
const SEG_HEADER_LEN: u64 = 20;
/// No message starts closer than this to a segment's end.
const MAX_MSG_HEADER_LEN: u64 = 32;
/// The page size a write cut short by a kill stops at a multiple of.
const PAGE: u64 = 4096;
/// The least run of zeros, from a page boundary to a suspect message's end,
/// that marks it cut even when a sound message follows it at once (rule
/// 6): a message written whole ends in its last frame's CRC or a pointer,
/// not in 32 zero bytes.
const MIN_CUT_ZEROS: u64 = 32;
/// sled's default segment size, used when `conf` does not say.
const DEFAULT_SEGMENT_SIZE: u64 = 512 * 1024;

/// sled's `MessageKind`s this walk tells apart.
mod kind {
    pub const CORRUPTED: u8 = 0;
    pub const CAP: u8 = 2;
    pub const BLOB_META: u8 = 7;
    pub const BLOB_NODE: u8 = 9;
    pub const BLOB_LINK: u8 = 11;
    /// The highest kind sled 0.34 writes.
    pub const LAST: u8 = 11;
}

/// A damaged message in the replayed tail, followed by ones that are sound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset of the damaged message in `log.sled/db`.
    pub offset: u64,
    /// The seqs of the intact frames the damaged message still holds
    /// (`None`: none of ours are readable in it).
    pub holds: Option<(Seq, Seq)>,
    /// A seq missing between those — the damaged record, when it can be
    /// told.
    pub missing: Option<Seq>,
    /// The checksum that would make sled accept the damaged bytes.
    fix: Fix,
}

/// Where a damaged message's checksum is and what it would have to be for
/// sled to replay the message as it is ([`disarm`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fix {
    /// The CRC at this offset of `db`.
    Message { at: u64, crc: u32 },
    /// The CRC at the start of this blob file.
    Blob { path: std::path::PathBuf, crc: u32 },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.missing, self.holds) {
            (Some(seq), _) => write!(f, "a record is damaged (seq {seq}, by the frames around it)")?,
            (None, Some((a, b))) => write!(f, "the sled page holding seqs {a}..={b} is damaged")?,
            (None, None) => write!(f, "a sled page is damaged")?,
        }
        write!(
            f,
            " (db offset {}), in the part sled replays at open: opening it would drop every record written after it",
            self.offset
        )
    }
}

/// What the walk of a replayed tail found, and by which rule: the one
/// thing [`find_damage`] acts on is [`Verdict::Damaged`]; the rest say why
/// sled may open the log, so the crash tests can count which rules their
/// kills reached (a rule no kill reaches is a rule no test has shown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No message in the replayed tail fails its checksum (or there is no
    /// database yet, or one this walk cannot read).
    Sound,
    /// The first suspect message is a write a kill cut short (rules 4 and
    /// 6), told by this sign; sled cuts the log there.
    Cut(CutSign),
    /// The first suspect message spans pages with neither sign and is the
    /// last thing written (rule 7): a cut write's tail, left to sled.
    LastWrite,
    /// Damage (rules 5, 6 and 7): sled must not open the log as it is.
    Damaged(Damage),
}

/// How a suspect message spanning pages shows it is a write a kill cut
/// short (rule 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CutSign {
    /// It ends in zeros from a page boundary on, nothing written after it.
    Zeros,
    /// It ends in 32 or more zeros from a page boundary on,
    /// and a later buffer, written concurrently and whole, follows it.
    ZerosBeforeLaterBuffer,
    /// It holds our frames out of `seq` order: the front is this write's,
    /// the rest an older node left in a reused segment.
    FramesOutOfOrder,
    /// It holds a sound message of an earlier use of its segment.
    StaleMessage,
    /// A sound message follows it (at once or later: a later buffer,
    /// written whole while this one was cut), it shows none of the signs
    /// above, and no one changed byte explains its checksum — the one kind
    /// of damage a flip makes (rule 8).
    Unexplained,
}

/// Walks the replayed tail of the sled database in `sled_dir` (see the
/// module docs). `Ok(None)`: sled may open it — nothing damaged there, or
/// no database yet, or one this walk cannot read (sled then says why).
pub fn find_damage(sled_dir: &Path) -> std::io::Result<Option<Damage>> {
    Ok(match walk(sled_dir)? {
        Verdict::Damaged(damage) => Some(damage),
        Verdict::Sound | Verdict::Cut(_) | Verdict::LastWrite => None,
    })
}

/// The walk behind [`find_damage`], saying which rule decided. Reads only.
pub fn walk(sled_dir: &Path) -> std::io::Result<Verdict> {
    let db = sled_dir.join("db");
    let file = match File::open(&db) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Sound),
        Err(e) => return Err(e),
    };
    let seg = segment_size(sled_dir);
    let stable = stable_lsn(sled_dir)?;
    let from = stable / seg * seg;
    let file_len = file.metadata()?.len();
    let count = file_len / seg + u64::from(file_len % seg >= SEG_HEADER_LEN);
    // Rule 1: the replayed segments, in LSN order.
    let mut segments: Vec<(u64, u64)> = Vec::new();
    for idx in 0..count {
        let mut header = [0u8; SEG_HEADER_LEN as usize];
        if file.read_exact_at(&mut header, idx * seg).is_err() {
            continue;
        }
        let crc = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) ^ 0xFFFF_FFFF;
        if crc != crc32fast::hash(&header[4..20]) {
            continue;
        }
        let lsn = i64::from_le_bytes(header[4..12].try_into().expect("8 bytes")) ^ 0x7FFF_FFFF_FFFF_FFFF;
        if let Ok(lsn) = u64::try_from(lsn) {
            if lsn >= from {
                segments.push((lsn, idx * seg));
            }
        }
    }
    segments.sort_unstable();
    // The first suspect message with no sign either way (rule 7), and
    // whether one changed byte explains its checksum (rule 8).
    let mut pending: Option<(Damage, bool)> = None;
    let mut bytes = Vec::new();
    for (lsn, lid) in segments {
        let len = seg.min(file_len - lid);
        bytes.resize(len as usize, 0);
        file.read_exact_at(&mut bytes, lid)?;
        let number = lsn / seg;
        let mut pos = SEG_HEADER_LEN;
        while pos + MAX_MSG_HEADER_LEN <= seg {
            match read_message(&bytes, pos, number) {
                Message::Sound { kind, end, body } => {
                    // Rules 7 and 8: more was written after it.
                    match pending {
                        Some((damage, true)) => return Ok(Verdict::Damaged(damage)),
                        Some((_, false)) => return Ok(Verdict::Cut(CutSign::Unexplained)),
                        None => {}
                    }
                    // Rule 5: a blob is written whole before the message
                    // that points at it, so a sound pointer to a blob that
                    // fails its checksum is damage, last or not.
                    if matches!(kind, kind::BLOB_META | kind::BLOB_NODE | kind::BLOB_LINK) {
                        if let Some((fix, blob)) = blob_fix(sled_dir, body) {
                            return Ok(Verdict::Damaged(damage_at(lid + pos, &blob, fix)));
                        }
                    }
                    if kind == kind::CAP {
                        break;
                    }
                    pos = end;
                }
                Message::Suspect { end, body, crc } => {
                    // Rule 2: the first one is the one sled would stop at.
                    if pending.is_none() {
                        let at = lid + pos;
                        let damage = damage_at(at, body, Fix::Message { at, crc });
                        match cut(&bytes, pos, end, number, lid) {
                            // Rule 4: sled cuts the log here, and nothing
                            // after it was acknowledged.
                            Cut::Yes(sign) => return Ok(Verdict::Cut(sign)),
                            Cut::No => return Ok(Verdict::Damaged(damage)), // rule 6
                            Cut::Unknown => {
                                let explained = one_byte_explains(&bytes[pos as usize..end as usize]);
                                pending = Some((damage, explained)); // rule 7
                            }
                        }
                    }
                    pos = end;
                }
                Message::End => break, // rule 3
            }
        }
    }
    Ok(if pending.is_some() { Verdict::LastWrite } else { Verdict::Sound })
}

/// Whether the suspect message at `pos..end` of a segment (`number`, at
/// `lid` in the file) is a write a kill cut short (rule 6). Such a write
/// stops at a page boundary and leaves the rest of its area as it was:
/// zeros where the area was never written (sled zeroes free segments when
/// it opens), or the bytes of the segment's previous use — sled reuses a
/// cleaned segment without zeroing it.
enum Cut {
    /// Inside one page, or followed at once by a sound message of its
    /// segment (without the signs below): written whole.
    No,
    /// (a) it ends in zeros from a page boundary on, and nothing was
    /// written right after it or the zeros are [`MIN_CUT_ZEROS`] or more (a
    /// later buffer, written concurrently, may follow a cut one), or (b) it
    /// holds leftovers: our frames out of order (a
    /// node lists its records in `seq` order; an older one's follow at a
    /// lower `seq`), or a sound message of an earlier use of the segment
    /// (a lower segment number) starting past its first page boundary.
    Yes(CutSign),
    /// Neither sign (rule 7 decides).
    Unknown,
}

fn cut(segment: &[u8], pos: u64, end: u64, number: u64, lid: u64) -> Cut {
    let first_boundary = (lid + pos) / PAGE * PAGE + PAGE - lid;
    if first_boundary >= end {
        return Cut::No;
    }
    let followed = matches!(read_message(segment, end, number), Message::Sound { .. });
    // The longest run of zeros ending at `end` that starts at a page
    // boundary inside the message: where a cut write stopped, over a
    // never-written area.
    let zeros_from = (first_boundary..end)
        .step_by(PAGE as usize)
        .find(|&b| segment[b as usize..end as usize].iter().all(|x| *x == 0));
    // Followed at once by a sound message, a zero tail is a cut only when
    // it is long enough that no message written whole ends that way: the
    // follower can be the first message of a later buffer, which sled
    // writes concurrently and which may end while this one is cut.
    let body = &segment[pos as usize..end as usize];
    let out_of_order = || crate::segment::find_frames(body).windows(2).any(|w| w[1].0 < w[0].0);
    let stale = || (first_boundary..end).any(|q| stale_message_at(segment, q, number));
    match zeros_from {
        Some(_) if !followed => Cut::Yes(CutSign::Zeros),
        Some(b) if end - b >= MIN_CUT_ZEROS => Cut::Yes(CutSign::ZerosBeforeLaterBuffer),
        _ if out_of_order() => Cut::Yes(CutSign::FramesOutOfOrder),
        _ if stale() => Cut::Yes(CutSign::StaleMessage),
        // Rule 8: a flip changes one byte; a cut, every byte from a page
        // boundary on that differs from what was there.
        _ if followed && one_byte_explains(&segment[pos as usize..end as usize]) => Cut::No,
        _ if followed => Cut::Yes(CutSign::Unexplained),
        _ => Cut::Unknown,
    }
}

/// The IEEE CRC-32 table (reflected, polynomial `0xEDB88320`), sled's
/// checksum through `crc32fast`.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// For each top byte, the table index whose entry has it: the table's top
/// bytes are a permutation of 0..=255, which makes a CRC step invertible.
const CRC_BY_TOP: [u8; 256] = {
    let mut by_top = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        by_top[(CRC_TABLE[i] >> 24) as usize] = i as u8;
        i += 1;
    }
    by_top
};

/// Whether changing one byte of the message (`whole`: header and body, as
/// stored) would make its checksum hold — the mark of a flip, the damage
/// the crash and corruption tests make (rule 8). CRC-32 is linear: the
/// stored and the computed checksums differ by the checksum of the error
/// alone, and an error of one byte `v` at `k` bytes from the end is
/// `T[v]` advanced over `k` zero bytes. So the difference, stepped back
/// one zero byte at a time, meets some `T[v]` within the message's length
/// exactly when one byte explains it. A cut write's difference is random:
/// it meets one by chance with odds of about `len × 2⁻²⁴` (a 4 KiB
/// message: 1 in 4,000). One pass over the message, no copy.
fn one_byte_explains(whole: &[u8]) -> bool {
    let Some((stored, _, _, _, header_len)) = parse_header(whole) else { return false };
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&whole[header_len..]);
    hasher.update(&whole[4..header_len]);
    let actual = hasher.finalize() ^ 0xFFFF_FFFF;
    let difference = stored ^ actual;
    // The checksum itself flipped: it differs from the right one in one byte.
    if difference.to_le_bytes().iter().filter(|b| **b != 0).count() == 1 {
        return true;
    }
    // The checksummed bytes: the body, then the header after the CRC.
    let len = whole.len() - 4;
    let mut r = difference;
    for _ in 0..len {
        let index = CRC_BY_TOP[(r >> 24) as usize];
        if index != 0 && CRC_TABLE[index as usize] == r {
            return true;
        }
        // One zero byte back: r = (prev >> 8) ^ T[prev & 0xFF].
        r = ((r ^ CRC_TABLE[index as usize]) << 8) | u32::from(index);
    }
    false
}

/// A sound message of an earlier use of this segment (a segment number
/// below `number`) at `q`: bytes left from before the segment was reused.
fn stale_message_at(segment: &[u8], q: u64, number: u64) -> bool {
    let Some(rest) = segment.get(q as usize..) else { return false };
    let Some((_, kind, _, found_number, _)) = parse_header(rest) else { return false };
    if kind == kind::CORRUPTED || kind > kind::LAST || found_number >= number {
        return false;
    }
    matches!(read_message(segment, q, found_number), Message::Sound { .. })
}

/// One position of the walk.
enum Message<'a> {
    /// Checks out; the next message starts at `end`.
    Sound { kind: u8, end: u64, body: &'a [u8] },
    /// Whole header, failed checksum (rule 2); `crc` is the one its bytes
    /// have.
    Suspect { end: u64, body: &'a [u8], crc: u32 },
    /// No message here (rule 3).
    End,
}

/// Reads the message at `pos` of a segment as sled's `read_message` does.
fn read_message(segment: &[u8], pos: u64, number: u64) -> Message<'_> {
    let Some(rest) = segment.get(pos as usize..) else { return Message::End };
    let Some((crc, kind, len, found_number, header_len)) = parse_header(rest) else { return Message::End };
    if kind == kind::CORRUPTED || kind > kind::LAST || found_number != number {
        return Message::End;
    }
    let room = rest.len() as u64 - header_len as u64;
    if len > room {
        return Message::End;
    }
    let body = &rest[header_len..header_len + len as usize];
    let end = pos + header_len as u64 + len;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(body);
    hasher.update(&rest[4..header_len]);
    let actual = hasher.finalize() ^ 0xFFFF_FFFF;
    if actual == crc {
        Message::Sound { kind, end, body }
    } else {
        Message::Suspect { end, body, crc: actual }
    }
}

/// sled's message header: CRC (u32 LE), kind, then length, segment number
/// and page id as sled's varints. `(crc, kind, len, number, header length)`.
fn parse_header(buf: &[u8]) -> Option<(u32, u8, u64, u64, usize)> {
    let crc = u32::from_le_bytes(buf.get(0..4)?.try_into().ok()?);
    let kind = *buf.get(4)?;
    let mut at = 5;
    let mut next = || {
        let (v, n) = varint(buf.get(at..)?)?;
        at += n;
        Some(v)
    };
    let len = next()?;
    let number = next()?;
    let _pid = next()?;
    Some((crc, kind, len, number, at))
}

/// sled's u64 encoding (`serialization.rs`): `(value, bytes used)`.
fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    Some(match first {
        0..=240 => (u64::from(first), 1),
        241..=248 => (240 + 256 * (u64::from(first) - 241) + u64::from(*buf.get(1)?), 2),
        249 => (2288 + 256 * u64::from(*buf.get(1)?) + u64::from(*buf.get(2)?), 3),
        _ => {
            let n = first as usize - 247;
            let mut le = [0u8; 8];
            le[..n].copy_from_slice(buf.get(1..=n)?);
            (u64::from_le_bytes(le), n + 1)
        }
    })
}

/// `None` when the blob a blob message points at passes its own checksum
/// (or is missing: sled's "dangling" blob, which it skips); else the fix
/// and the blob's bytes.
fn blob_fix(sled_dir: &Path, body: &[u8]) -> Option<(Fix, Vec<u8>)> {
    let id = i64::from_le_bytes(body.get(0..8)?.try_into().ok()?);
    let path = sled_dir.join("blobs").join(id.to_string());
    let bytes = std::fs::read(&path).ok()?;
    let crc = crc32fast::hash(bytes.get(4..)?);
    (u32::from_le_bytes(bytes[0..4].try_into().ok()?) != crc).then_some((Fix::Blob { path, crc }, bytes))
}

/// Makes sled replay the damaged messages of the log in `sled_dir` as they
/// are, instead of cutting the log at the first: each gets the checksum
/// its bytes have. Only for a **copy** being salvaged (`engram repair`):
/// sled then reads every page, and the damaged bytes, where they fall in
/// our frames, are found by the frames' own CRCs and gone around record by
/// record. Returns how many messages were changed.
pub fn disarm(sled_dir: &Path) -> std::io::Result<usize> {
    let mut fixed = 0;
    // Each pass fixes the first; a bound against a fix that does not take.
    while let Some(damage) = find_damage(sled_dir)? {
        // Only pages holding our records are worth it (and a bound against
        // a fix that does not take): past one holding none, sled cuts the
        // copy and the raw scan gives the rest.
        if fixed == 64 || (damage.holds.is_none() && matches!(damage.fix, Fix::Message { .. })) {
            break;
        }
        match damage.fix {
            Fix::Message { at, crc } => {
                let file = std::fs::OpenOptions::new().write(true).open(sled_dir.join("db"))?;
                file.write_all_at(&crc.to_le_bytes(), at)?;
                file.sync_all()?;
            }
            Fix::Blob { path, crc } => {
                let file = std::fs::OpenOptions::new().write(true).open(&path)?;
                file.write_all_at(&crc.to_le_bytes(), 0)?;
                file.sync_all()?;
            }
        }
        fixed += 1;
    }
    Ok(fixed)
}

/// The damage report for a message at `offset` with `body`: the seqs of
/// our frames still readable in it, and the damaged one — a gap between
/// them, or a frame-shaped run of bytes (its lengths add up, its CRC does
/// not) just before the first or just after the last.
fn damage_at(offset: u64, body: &[u8], fix: Fix) -> Damage {
    let found = crate::segment::find_frames(body);
    let holds = found.first().zip(found.last()).map(|(a, b)| (a.0, b.0));
    let gap = found.windows(2).find(|w| w[1].0 .0 > w[0].0 .0 + 1).map(|w| Seq(w[0].0 .0 + 1));
    let edge = || {
        let (&(first, at), &(last, last_at)) = found.first().zip(found.last())?;
        let before = (0..at).any(|p| frame_len(&body[p..]).is_some_and(|n| p + n == at));
        if before && first.0 > 1 {
            return Some(Seq(first.0 - 1));
        }
        let after = last_at + frame_len(&body[last_at..])?;
        frame_len(&body[after..]).filter(|n| after + n <= body.len()).map(|_| last.next())
    };
    Damage { offset, holds, missing: gap.or_else(edge), fix }
}

/// The length a frame starting at `bytes[0]` says it has, checking only
/// its version byte (not its CRC).
fn frame_len(bytes: &[u8]) -> Option<usize> {
    use engram_events::codec::binary::{FORMAT_VERSION, FRAME_HEADER_LEN};
    if bytes.len() < FRAME_HEADER_LEN || bytes[0] != FORMAT_VERSION {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize;
    FRAME_HEADER_LEN.checked_add(u32_at(6))?.checked_add(u32_at(10))
}

/// The segment size sled's `conf` records (`segment_size: N`).
fn segment_size(sled_dir: &Path) -> u64 {
    std::fs::read(sled_dir.join("conf"))
        .ok()
        .and_then(|bytes| {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            text.lines().find_map(|l| l.strip_prefix("segment_size: ")).and_then(|v| v.trim().parse().ok())
        })
        .filter(|s: &u64| *s > SEG_HEADER_LEN + MAX_MSG_HEADER_LEN)
        .unwrap_or(DEFAULT_SEGMENT_SIZE)
}

/// The stable LSN of the snapshot sled will start from: the newest
/// `snap.<LSN in hex>` (0 without one: sled replays everything).
fn stable_lsn(sled_dir: &Path) -> std::io::Result<u64> {
    let mut newest: Option<String> = None;
    for entry in std::fs::read_dir(sled_dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.starts_with("snap.") && !name.ends_with(".in___motion") && newest.as_ref().is_none_or(|n| name > *n) {
            newest = Some(name);
        }
    }
    Ok(newest
        .and_then(|n| {
            n.strip_prefix("snap.").and_then(|hex| u64::from_str_radix(hex.trim_end_matches(".generating"), 16).ok())
        })
        .unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_log::EventLog;
    use crate::log::{LogConfig, SledLog};
    use engram_events::codec::binary;
    use engram_events::payloads::{SessionEndReason, SessionEnded};
    use engram_events::{ActorKind, Envelope, SessionId};

    /// A log of `n` more events in `dir`, written by one process; all of it.
    /// The write-ahead files are left as a kill would leave them (holding
    /// every record since the open), while sled's files are as a close
    /// leaves them: the tests cut sled's files as a kill would.
    fn log_with(dir: &Path, n: u32) -> Vec<Envelope> {
        let log = SledLog::open(dir, LogConfig::default()).unwrap();
        let events: Vec<Envelope> = (0..n)
            .map(|i| {
                Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
                    .with_session(SessionId::new(format!("s-{i}")))
            })
            .collect();
        for chunk in events.chunks(50) {
            log.append(chunk.to_vec()).unwrap();
        }
        let all: Vec<_> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        let wal = dir.join(crate::data_dir::WAL_DIR);
        let kept = dir.join("wal.kept");
        crate::data_dir::copy_tree(&wal, &kept).unwrap();
        drop(log);
        std::fs::remove_dir_all(&wal).unwrap();
        std::fs::rename(&kept, &wal).unwrap();
        all
    }

    /// Flips one byte inside every copy of `env`'s frame in sled's files.
    fn flip(sled_dir: &Path, env: &engram_events::Envelope) -> usize {
        let good = binary::encode(env);
        let db = sled_dir.join("db");
        let mut bytes = std::fs::read(&db).unwrap();
        let mut copies = 0;
        let mut i = 0;
        while let Some(p) = bytes[i..].windows(good.len()).position(|w| w == good.as_slice()) {
            bytes[i + p + good.len() / 2] ^= 0x01;
            copies += 1;
            i += p + good.len();
        }
        std::fs::write(&db, bytes).unwrap();
        copies
    }

    #[test]
    fn a_sound_log_has_no_damage_however_it_was_written() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        log_with(dir, 3000);
        assert_eq!(find_damage(&dir.join("log.sled")).unwrap(), None);
        // Reopened (a snapshot now), written again: still none.
        log_with(dir, 700);
        assert_eq!(find_damage(&dir.join("log.sled")).unwrap(), None);
        assert_eq!(find_damage(&tmp.path().join("nothing")).unwrap(), None);
    }

    #[test]
    fn a_flipped_record_in_the_replayed_tail_is_damage_and_sled_never_sees_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let all = log_with(dir, 3000);
        // The middle record of what this run wrote: all of it is replayed.
        let bad = &all[all.len() / 2];
        assert!(flip(&dir.join("log.sled"), bad) >= 1);
        let before = std::fs::read(dir.join("log.sled").join("db")).unwrap();
        let damage = find_damage(&dir.join("log.sled")).unwrap().expect("damage found");
        // Named at the flipped record, or earlier when the message that
        // holds it starts earlier: sled sometimes writes a whole leaf of
        // segments as one message (when depends on its flusher's timing).
        let missing = damage.missing.expect("the damage names a seq");
        assert!(missing <= bad.seq && missing >= all[0].seq, "{damage} (flipped: seq {})", bad.seq);
        let e = SledLog::open(dir, LogConfig::default()).err().expect("refused");
        assert!(e.to_string().contains(&format!("seq {missing}")) && e.to_string().contains("engram repair"), "{e}");
        assert_eq!(std::fs::read(dir.join("log.sled").join("db")).unwrap(), before, "nothing written to the files");

        // Disarmed (what `engram repair` does to its copy), sled opens it.
        assert!(disarm(&dir.join("log.sled")).unwrap() >= 1);
        assert_eq!(find_damage(&dir.join("log.sled")).unwrap(), None);
        // The write-ahead files still hold the record whole: re-applied at
        // open, it replaces the damaged copy.
        let other = tempfile::tempdir().unwrap();
        let healed = other.path().join("healed");
        crate::data_dir::copy_tree(dir, &healed).unwrap();
        let log = SledLog::open(&healed, LogConfig::default()).unwrap();
        let read: Vec<Envelope> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        assert_eq!(read, all);
        drop(log);
        // Without them (checkpointed since), every record but the damaged
        // one reads.
        std::fs::remove_dir_all(dir.join(crate::data_dir::WAL_DIR)).unwrap();
        let log = SledLog::open(dir, LogConfig::default()).unwrap();
        let read: Vec<Result<Envelope, crate::LogError>> = log.read_from(Seq::FIRST).collect();
        let good: Vec<Seq> = read.iter().filter_map(|r| r.as_ref().ok().map(|e| e.seq)).collect();
        assert_eq!(good.len(), all.len() - 1);
        assert!(!good.contains(&bad.seq));
        assert!(read.iter().any(|r| r.as_ref().is_err_and(|e| e.is_record_damage())));
    }

    /// A database closed a moment ago may still be writing its last
    /// segments (on sled's own threads, which hold the `db` file's lock
    /// until they end): the open waits for the lock before it walks the
    /// files, so a write in flight is not taken for damage. Here a flipped
    /// record stands for the write in flight, mended before the lock goes.
    #[test]
    fn a_database_still_writing_is_waited_for_not_called_damaged() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let all = log_with(dir, 3000);
        let db = dir.join("log.sled").join("db");
        let whole = std::fs::read(&db).unwrap();
        let held = std::fs::File::open(&db).unwrap();
        held.lock().unwrap();
        assert!(flip(&dir.join("log.sled"), &all[all.len() / 2]) >= 1);
        assert!(find_damage(&dir.join("log.sled")).unwrap().is_some(), "mid-write, the files read as damaged");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            std::fs::write(&db, whole).unwrap();
            drop(held);
        });
        let log = SledLog::open(dir, LogConfig::default()).expect("opened once the writes were done");
        writer.join().unwrap();
        let read: Vec<Envelope> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        assert_eq!(read, all);
    }

    /// The replayed segments of `sled_dir`'s `db` as (number, file offset),
    /// oldest first, and the file's bytes.
    fn segments(sled_dir: &Path) -> (Vec<(u64, u64)>, Vec<u8>) {
        let bytes = std::fs::read(sled_dir.join("db")).unwrap();
        let seg = segment_size(sled_dir);
        let mut found = Vec::new();
        let len = bytes.len() as u64;
        for idx in 0..len / seg + u64::from(len % seg >= SEG_HEADER_LEN) {
            let h = &bytes[(idx * seg) as usize..(idx * seg + SEG_HEADER_LEN) as usize];
            if u32::from_le_bytes(h[0..4].try_into().unwrap()) ^ 0xFFFF_FFFF != crc32fast::hash(&h[4..20]) {
                continue;
            }
            let lsn = i64::from_le_bytes(h[4..12].try_into().unwrap()) ^ 0x7FFF_FFFF_FFFF_FFFF;
            found.push((lsn as u64 / seg, idx * seg));
        }
        found.sort_unstable();
        (found, bytes)
    }

    /// A kill cut the write of a message short in a segment sled had
    /// reused: its last pages hold the segment's previous contents, not
    /// zeros. That is a torn write, not damage — the log must open (the
    /// CI failure this rule was written for: a killed log refused).
    #[test]
    fn a_cut_write_over_a_reused_segments_leftovers_is_no_damage() {
        // A layout ([`laid_out`]) whose newest segment has a message to
        // cut, and an older segment whose bytes there differ from it.
        let attempt = || {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let all = log_with(dir, 4000);
            let sled_dir = dir.join("log.sled");
            let seg = segment_size(&sled_dir);
            let (segs, mut bytes) = segments(&sled_dir);
            assert!(segs.len() >= 2, "the test needs an older segment to take leftovers from");
            let (number, lid) = *segs.last().unwrap();
            let (_, old_lid) = segs[segs.len() - 2];
            // The biggest message of the newest segment that spans pages.
            let segment = &bytes[lid as usize..((lid + seg) as usize).min(bytes.len())];
            let mut pos = SEG_HEADER_LEN;
            let mut biggest: Option<(u64, u64)> = None;
            while pos + MAX_MSG_HEADER_LEN <= seg {
                let Message::Sound { kind, end, .. } = read_message(segment, pos, number) else { break };
                if kind == kind::CAP {
                    break;
                }
                let boundary = (lid + pos) / PAGE * PAGE + PAGE - lid;
                if boundary < end && biggest.is_none_or(|(p, e)| end - pos > e - p) {
                    biggest = Some((pos, end));
                }
                pos = end;
            }
            let (pos, end) = biggest?;
            // Cut at its first page boundary: from there to the end of the
            // segment, what the older segment holds at the same place.
            let cut = (lid + pos) / PAGE * PAGE + PAGE - lid;
            let (from, to) = ((lid + cut) as usize, ((lid + seg) as usize).min(bytes.len()));
            let leftovers = bytes[(old_lid + cut) as usize..(old_lid + cut) as usize + (to - from)].to_vec();
            if leftovers[..(end - cut) as usize].iter().all(|b| *b == 0) {
                return None; // zeros: another test's case
            }
            bytes[from..to].copy_from_slice(&leftovers);
            let segment = &bytes[lid as usize..((lid + seg) as usize).min(bytes.len())];
            if !matches!(read_message(segment, pos, number), Message::Suspect { .. }) {
                return None; // the leftovers equal the message: no cut to see
            }
            std::fs::write(sled_dir.join("db"), &bytes).unwrap();
            Some((tmp, all))
        };
        let (tmp, all) = laid_out("a log with a message to cut", attempt);
        let dir = tmp.path();
        let sled_dir = dir.join("log.sled");
        assert_eq!(find_damage(&sled_dir).unwrap(), None, "a cut write is no damage");
        // sled cuts there; what remains is a gap-free prefix that verifies.
        let log = SledLog::open(dir, LogConfig::default()).expect("a killed log opens");
        let read: Vec<Envelope> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        assert!(!read.is_empty());
        assert_eq!(read, all[..read.len()], "a prefix of what was written");
        assert!(crate::verify::verify(&log, |_| {}).ok());
    }

    /// (segment offset, position, end, followed at once by a sound message)
    /// of messages.
    type Spans = Vec<Span>;
    /// One of [`Spans`].
    type Span = (u64, u64, u64, bool);

    /// The messages of the replayed segments whose body spans pages, in
    /// the walk's order, as (segment's offset, position, end, whether a
    /// sound message follows at once), the newest segment's offset, and
    /// the file's bytes. The header ends by the first page boundary: noise
    /// from there leaves it whole, so the walk reads a suspect message
    /// there, not bytes that are no message (rule 3) — whichever way
    /// sled's flusher laid the buffers out.
    fn spanning(sled_dir: &Path) -> (Spans, u64, Vec<u8>) {
        let seg = segment_size(sled_dir);
        let (segs, bytes) = segments(sled_dir);
        let mut found = Vec::new();
        for &(number, lid) in &segs {
            let segment = &bytes[lid as usize..((lid + seg) as usize).min(bytes.len())];
            let mut pos = SEG_HEADER_LEN;
            while pos + MAX_MSG_HEADER_LEN <= seg {
                let Message::Sound { kind, end, .. } = read_message(segment, pos, number) else { break };
                if kind == kind::CAP {
                    break;
                }
                let boundary = (lid + pos) / PAGE * PAGE + PAGE - lid;
                let header_end = pos + parse_header(&segment[pos as usize..]).expect("a sound header").4 as u64;
                if header_end <= boundary && boundary < end {
                    let followed = matches!(read_message(segment, end, number), Message::Sound { .. });
                    found.push((lid, pos, end, followed));
                }
                pos = end;
            }
        }
        (found, segs.last().unwrap().1, bytes)
    }

    /// How many logs a test writes looking for the layout it needs.
    const LAYOUT_TRIES: usize = 8;

    /// The first layout `attempt` finds, writing up to [`LAYOUT_TRIES`]
    /// logs. Whether sled's flusher laid its buffers out as a test needs
    /// depends on timing (a machine busy with other tests lays them out
    /// otherwise); the checks made on the layout found do not change.
    fn laid_out<T>(what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
        (0..LAYOUT_TRIES).find_map(|_| attempt()).unwrap_or_else(|| panic!("{what}, in {LAYOUT_TRIES} tries"))
    }

    /// A fresh log of `n` events whose spanning messages (see [`spanning`])
    /// include one `pick` accepts, with that message ([`laid_out`]).
    fn log_with_spanning(
        n: u32,
        pick: impl Fn(&Span, u64) -> bool,
    ) -> (tempfile::TempDir, Vec<Envelope>, Span, Vec<u8>) {
        laid_out("a log with the spanning message wanted", || {
            let tmp = tempfile::tempdir().unwrap();
            let all = log_with(tmp.path(), n);
            let (found, newest, bytes) = spanning(&tmp.path().join("log.sled"));
            let m = *found.iter().find(|m| pick(m, newest))?;
            Some((tmp, all, m, bytes))
        })
    }

    /// Noise that is neither zeros, frames nor sled messages.
    fn noise(bytes: &mut [u8]) {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for b in bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = (x >> 24) as u8 | 1;
        }
    }

    /// Rule 6 under concurrent buffers: a message cut at a page boundary
    /// over a never-written (zeroed) area, followed at once by a sound
    /// message — the first of a later buffer sled wrote while this one was
    /// cut — is a cut write: the log opens to a prefix. A few zero bytes
    /// are no such sign: the same message with a flipped byte and a short
    /// zero tail is damage.
    #[test]
    fn a_cut_write_a_later_buffer_follows_is_no_damage() {
        // In the newest segment. A cut in an older segment with a later
        // segment written whole is rarer, and sled 0.34's recovery can
        // panic on it (it reads on past the cut in its last stage, and a
        // page allocated there has no content): every command then says
        // sled cannot open the log, and `engram repair` salvages it.
        let (tmp, all, (lid, pos, end, _), mut bytes) = log_with_spanning(4000, |m, newest| {
            m.0 == newest && m.3 && m.2 - ((m.0 + m.1) / PAGE * PAGE + PAGE - m.0) >= MIN_CUT_ZEROS
        });
        let dir = tmp.path();
        let sled_dir = dir.join("log.sled");
        let cut = (lid + pos) / PAGE * PAGE + PAGE - lid;
        bytes[(lid + cut) as usize..(lid + end) as usize].fill(0);
        std::fs::write(sled_dir.join("db"), &bytes).unwrap();
        assert_eq!(find_damage(&sled_dir).unwrap(), None, "a cut write under a later buffer is no damage");
        let log = SledLog::open(dir, LogConfig::default()).expect("a killed log opens");
        let read: Vec<Envelope> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        assert_eq!(read, all[..read.len()], "a prefix of what was written");
        drop(log);

        // Written whole ending in fewer zeros than a cut leaves (its
        // checksum made to hold over them), then one byte flipped: damage,
        // as one changed byte explains its checksum (rule 8).
        let (tmp, _, (lid, pos, end, _), mut bytes) = log_with_spanning(4000, |m, _| m.3);
        let sled_dir = tmp.path().join("log.sled");
        let tail = (lid + end - 4) as usize..(lid + end) as usize;
        bytes[tail].fill(0);
        reseal(&mut bytes[(lid + pos) as usize..(lid + end) as usize]);
        bytes[(lid + pos + 40) as usize] ^= 0x01;
        std::fs::write(sled_dir.join("db"), &bytes).unwrap();
        let damage = find_damage(&sled_dir).unwrap().expect("damage");
        assert_eq!(damage.offset, lid + pos);

        // The same short zero tail with no flip but the checksum of what
        // was meant (a cut write a later buffer follows, the kill loop's
        // case: 11 of 24 bytes written): no one byte explains it, a cut.
        let (tmp, _, (lid, pos, end, _), mut bytes) = log_with_spanning(4000, |m, _| m.3);
        let sled_dir = tmp.path().join("log.sled");
        bytes[(lid + end - 4) as usize..(lid + end) as usize].copy_from_slice(&[0; 4]);
        let message = &bytes[(lid + pos) as usize..(lid + end) as usize];
        if !one_byte_explains(message) {
            std::fs::write(sled_dir.join("db"), &bytes).unwrap();
            assert_eq!(walk(&sled_dir).unwrap(), Verdict::Cut(CutSign::Unexplained));
        }
    }

    /// Gives the message `whole` the checksum its bytes have.
    fn reseal(whole: &mut [u8]) {
        let (_, _, _, _, header_len) = parse_header(whole).unwrap();
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&whole[header_len..]);
        hasher.update(&whole[4..header_len]);
        let crc = hasher.finalize() ^ 0xFFFF_FFFF;
        whole[0..4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Rule 8's test of a flip: every one changed byte anywhere in a
    /// message (any value, the checksum included) is found; two changed
    /// bytes, or a cut's many, are not (fixed draws: no chance involved).
    #[test]
    fn one_changed_byte_explains_a_checksum_and_a_cut_does_not() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for body_len in [16u64, 292, 4990] {
            // crc, kind 4 (a node), length, segment number 3, page id 9.
            let mut message = vec![0, 0, 0, 0, 4];
            message.extend(match body_len {
                0..=240 => vec![body_len as u8],
                241..=2287 => vec![241 + ((body_len - 240) / 256) as u8, ((body_len - 240) % 256) as u8],
                _ => vec![249, ((body_len - 2288) >> 8) as u8, (body_len - 2288) as u8],
            });
            message.extend_from_slice(&[3, 9]);
            let header_len = message.len();
            message.extend((0..body_len).map(|_| next() as u8));
            let len = message.len();
            assert_eq!(parse_header(&message).unwrap().2, body_len, "body length");
            reseal(&mut message);
            for _ in 0..200 {
                let mut flipped = message.clone();
                let at = (next() as usize) % len;
                flipped[at] ^= (next() as u8) | 1;
                if parse_header(&flipped).is_some_and(|h| h.2 == parse_header(&message).unwrap().2) {
                    assert!(one_byte_explains(&flipped), "len {len}: a flip at {at} not found");
                }
            }
            for _ in 0..200 {
                let mut cut = message.clone();
                let from = header_len + (next() as usize) % (len - header_len - 1);
                let n = ((next() as usize) % (len - from)).max(2);
                for b in &mut cut[from..from + n] {
                    *b = next() as u8;
                }
                if cut[from..from + n] != message[from..from + n] {
                    assert!(!one_byte_explains(&cut) || cut.iter().zip(&message).filter(|(a, b)| a != b).count() == 1);
                }
            }
        }
    }

    /// Rule 7: a cut write whose leftovers are neither frames nor messages
    /// (the middle of an old blob; here noise) and after which nothing was
    /// written is left to sled — the log opens to a prefix; the same
    /// leftovers in a message that a sound one follows are damage.
    #[test]
    fn a_cut_last_write_over_unreadable_leftovers_is_no_damage() {
        // The newest segment's first message spanning pages, cut at its
        // first page boundary, noise from there to the segment's end: the
        // last thing written.
        let (tmp, all, (lid, pos, _, _), mut bytes) = log_with_spanning(4000, |m, newest| m.0 == newest);
        let dir = tmp.path();
        let sled_dir = dir.join("log.sled");
        let seg = segment_size(&sled_dir);
        let cut = (lid + pos) / PAGE * PAGE + PAGE - lid;
        let to = ((lid + seg) as usize).min(bytes.len());
        noise(&mut bytes[(lid + cut) as usize..to]);
        std::fs::write(sled_dir.join("db"), &bytes).unwrap();
        assert_eq!(find_damage(&sled_dir).unwrap(), None, "a cut last write is no damage");
        let log = SledLog::open(dir, LogConfig::default()).expect("a killed log opens");
        let read: Vec<Envelope> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        assert_eq!(read, all[..read.len()], "a prefix of what was written");

        // The same noise inside a message a sound one follows: a cut write
        // a later buffer follows, as the kill loop makes them (no one byte
        // explains its checksum, rule 8) — left to sled.
        let (tmp, _, (lid, pos, end, _), mut bytes) = log_with_spanning(4000, |m, _| m.3);
        let sled_dir = tmp.path().join("log.sled");
        let cut = (lid + pos) / PAGE * PAGE + PAGE - lid;
        noise(&mut bytes[(lid + cut) as usize..(lid + end) as usize]);
        std::fs::write(sled_dir.join("db"), &bytes).unwrap();
        assert_eq!(walk(&sled_dir).unwrap(), Verdict::Cut(CutSign::Unexplained));

        // One byte of it changed instead: damage (rule 8), last or not.
        let (tmp, _, (lid, pos, end, _), mut bytes) = log_with_spanning(4000, |m, _| m.3);
        let sled_dir = tmp.path().join("log.sled");
        bytes[(lid + end - 1) as usize] ^= 0x5a;
        std::fs::write(sled_dir.join("db"), &bytes).unwrap();
        let damage = find_damage(&sled_dir).unwrap().expect("damage");
        assert_eq!(damage.offset, lid + pos);
    }

    #[test]
    fn sleds_varints_read_back() {
        for (bytes, want) in [
            (&[7u8][..], (7, 1)),
            (&[241, 5], (245, 2)),
            (&[249, 1, 2], (2288 + 258, 3)),
            (&[250, 1, 2, 3], (0x030201, 4)),
            (&[255, 1, 0, 0, 0, 0, 0, 0, 0], (1, 9)),
        ] {
            assert_eq!(varint(bytes), Some(want));
        }
        assert_eq!(varint(&[250, 1]), None);
    }
}
