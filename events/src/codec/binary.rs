//! The binary frame: a fixed header, the envelope header archive and the
//! payload archive (both rkyv), covered by one CRC32.
//!
//! ```text
//! offset size  field
//! 0      1     format version (FORMAT_VERSION)
//! 1      1     reserved (0)
//! 2      2     kind code           (u16 LE)
//! 4      2     payload schema ver. (u16 LE)
//! 6      4     header archive len  (u32 LE)
//! 10     4     payload archive len (u32 LE)
//! 14     4     CRC32 of bytes 0..14 ++ header ++ payload
//! 18     ..    header archive, payload archive
//! ```
//!
//! Frames are self-delimiting, so a log segment is frames back to back. The
//! kind and version sit outside the archive so an old payload is recognised
//! before it is touched and decoded with its own schema, then upcast.

use crate::codec::upcast;
use crate::codec::DecodeError;
use crate::envelope::{ArchivedHeader, Envelope, Header};
use crate::event::{Event, EventKind};
use crate::ids::Seq;

/// The frame layout version written today.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes before the archives.
pub const FRAME_HEADER_LEN: usize = 18;

/// Appends `env` as one frame to `out` and returns the frame's length.
pub fn encode_into(env: &Envelope, out: &mut Vec<u8>) -> usize {
    let start = out.len();
    let kind = env.kind();
    out.extend_from_slice(&[0u8; FRAME_HEADER_LEN]);
    let header = Header {
        id: env.id,
        seq: env.seq,
        at: env.at,
        session: env.session.clone(),
        turn: env.turn,
        causation: env.causation,
        actor: env.actor,
    };
    let body_start = out.len();
    let buf = std::mem::take(out);
    // Serialising into a Vec cannot fail: every archived type is plain data.
    let buf = rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(&header, buf)
        .expect("archiving an envelope header cannot fail");
    let header_len = buf.len() - body_start;
    let buf = env.event.archive_payload_into(buf).expect("archiving a payload cannot fail");
    *out = buf;
    let payload_len = out.len() - body_start - header_len;

    let frame = &mut out[start..];
    frame[0] = FORMAT_VERSION;
    frame[1] = 0;
    frame[2..4].copy_from_slice(&kind.code().to_le_bytes());
    frame[4..6].copy_from_slice(&kind.schema_version().to_le_bytes());
    frame[6..10].copy_from_slice(&(header_len as u32).to_le_bytes());
    frame[10..14].copy_from_slice(&(payload_len as u32).to_le_bytes());
    let crc = frame_crc(&frame[..14], &frame[FRAME_HEADER_LEN..]);
    frame[14..18].copy_from_slice(&crc.to_le_bytes());
    out.len() - start
}

/// Encodes `env` as a standalone frame.
pub fn encode(env: &Envelope) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    encode_into(env, &mut out);
    out
}

fn frame_crc(fixed: &[u8], body: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(fixed);
    hasher.update(body);
    hasher.finalize()
}

/// A frame whose length and CRC have been checked, not yet decoded.
#[derive(Clone, Copy, Debug)]
pub struct RawFrame<'a> {
    /// The kind code (may be unknown to this build).
    pub kind_code: u16,
    /// The payload schema version.
    pub schema_version: u16,
    header: &'a [u8],
    payload: &'a [u8],
    /// The whole frame.
    pub bytes: &'a [u8],
}

impl<'a> RawFrame<'a> {
    /// The log position recorded in the frame, without decoding the payload.
    pub fn seq(&self) -> Result<Seq, DecodeError> {
        Ok(Seq(self.archived_header()?.seq.0.to_native()))
    }

    /// The log position and the event id recorded in the frame, from one
    /// check of its header, without decoding the payload.
    pub fn seq_and_id(&self) -> Result<(Seq, crate::ids::EventId), DecodeError> {
        let header = self.archived_header()?;
        Ok((Seq(header.seq.0.to_native()), crate::ids::EventId(ulid::Ulid(header.id.0 .0.to_native()))))
    }

    fn archived_header(&self) -> Result<&'a ArchivedHeader, DecodeError> {
        rkyv::access::<ArchivedHeader, rkyv::rancor::Error>(self.header)
            .map_err(|e| DecodeError::Archive(e.to_string()))
    }

    /// Validates the frame's archives in place and returns a view of its
    /// envelope fields — the zero-copy read: nothing is deserialised or
    /// allocated. Replays that only need a few fields (or that skip most
    /// events) use this instead of [`RawFrame::decode`].
    pub fn view(&self) -> Result<FrameView<'a>, DecodeError> {
        let kind = EventKind::from_code(self.kind_code).ok_or(DecodeError::UnknownKind(self.kind_code))?;
        let header = self.archived_header()?;
        if self.schema_version == kind.schema_version() {
            Event::check_archive(kind, self.payload).map_err(|e| DecodeError::Archive(e.to_string()))?;
        } else {
            upcast::check_archive(kind, self.schema_version, self.payload)?;
        }
        Ok(FrameView { header, kind, schema_version: self.schema_version, frame: *self })
    }

    /// Decodes the envelope, upcasting an older payload schema.
    pub fn decode(&self) -> Result<Envelope, DecodeError> {
        let kind = EventKind::from_code(self.kind_code).ok_or(DecodeError::UnknownKind(self.kind_code))?;
        let header: Header = rkyv::from_bytes::<Header, rkyv::rancor::Error>(self.header)
            .map_err(|e| DecodeError::Archive(e.to_string()))?;
        let event = if self.schema_version == kind.schema_version() {
            Event::from_archive(kind, self.payload).map_err(|e| DecodeError::Archive(e.to_string()))?
        } else {
            upcast::from_archive(kind, self.schema_version, self.payload)?
        };
        Ok(Envelope {
            id: header.id,
            seq: header.seq,
            at: header.at,
            session: header.session,
            turn: header.turn,
            causation: header.causation,
            actor: header.actor,
            event,
        })
    }
}

/// A validated frame, read in place (see [`RawFrame::view`]).
#[derive(Clone, Copy)]
pub struct FrameView<'a> {
    header: &'a ArchivedHeader,
    kind: EventKind,
    schema_version: u16,
    frame: RawFrame<'a>,
}

impl<'a> FrameView<'a> {
    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The payload's schema version.
    pub fn schema_version(&self) -> u16 {
        self.schema_version
    }

    /// The log position.
    pub fn seq(&self) -> Seq {
        Seq(self.header.seq.0.to_native())
    }

    /// The event id.
    pub fn id(&self) -> crate::ids::EventId {
        crate::ids::EventId(ulid::Ulid(self.header.id.0 .0.to_native()))
    }

    /// Microseconds since the Unix epoch.
    pub fn at_micros(&self) -> i64 {
        self.header.at.micros.to_native()
    }

    /// The session id, borrowed from the frame.
    pub fn session(&self) -> Option<&'a str> {
        self.header.session.as_ref().map(|s| s.0.as_str())
    }

    /// Deserialises the whole envelope (allocates).
    pub fn decode(&self) -> Result<Envelope, DecodeError> {
        self.frame.decode()
    }
}

/// The whole length of the frame whose first [`FRAME_HEADER_LEN`] bytes
/// are `fixed` (what a reader of a stream of frames needs to read next);
/// `None` if it overflows `usize`. Nothing is checked but the arithmetic:
/// the frame's CRC is checked when it is split.
pub fn frame_len(fixed: &[u8]) -> Option<usize> {
    let u32_at = |i: usize| u32::from_le_bytes([fixed[i], fixed[i + 1], fixed[i + 2], fixed[i + 3]]) as usize;
    FRAME_HEADER_LEN.checked_add(u32_at(6))?.checked_add(u32_at(10))
}

/// Splits the first frame off `bytes`, checking its length and CRC.
/// Returns the frame and the rest.
pub fn split_frame(bytes: &[u8]) -> Result<(RawFrame<'_>, &[u8]), DecodeError> {
    if bytes.len() < FRAME_HEADER_LEN {
        return Err(DecodeError::Truncated { needed: FRAME_HEADER_LEN, available: bytes.len() });
    }
    if bytes[0] != FORMAT_VERSION {
        return Err(DecodeError::FormatVersion(bytes[0]));
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let header_len = u32_at(6) as usize;
    let total = frame_len(&bytes[..FRAME_HEADER_LEN])
        .ok_or(DecodeError::Truncated { needed: usize::MAX, available: bytes.len() })?;
    if bytes.len() < total {
        return Err(DecodeError::Truncated { needed: total, available: bytes.len() });
    }
    let stored = u32_at(14);
    let actual = frame_crc(&bytes[..14], &bytes[FRAME_HEADER_LEN..total]);
    if stored != actual {
        return Err(DecodeError::Crc { stored, actual });
    }
    let body = &bytes[FRAME_HEADER_LEN..total];
    Ok((
        RawFrame {
            kind_code: u16_at(2),
            schema_version: u16_at(4),
            header: &body[..header_len],
            payload: &body[header_len..],
            bytes: &bytes[..total],
        },
        &bytes[total..],
    ))
}

/// Decodes exactly one frame (trailing bytes are an error).
pub fn decode(bytes: &[u8]) -> Result<Envelope, DecodeError> {
    let (frame, rest) = split_frame(bytes)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes(rest.len()));
    }
    frame.decode()
}

/// Iterates the frames of a segment (frames back to back).
pub fn frames(segment: &[u8]) -> Frames<'_> {
    Frames { rest: segment }
}

/// Iterator over the frames of a segment; stops after the first error.
pub struct Frames<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<RawFrame<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match split_frame(self.rest) {
            Ok((frame, rest)) => {
                self.rest = rest;
                Some(Ok(frame))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// Test-only: a frame from the envelope fields of `env` (its payload is
/// ignored) and an explicit kind code, schema version and payload archive.
/// `encode` only ever writes today's schema; this writes the frames of older
/// (or unknown) schemas that the upcast tests read back.
#[cfg(test)]
pub(crate) fn encode_raw(env: &Envelope, kind_code: u16, schema_version: u16, payload_archive: &[u8]) -> Vec<u8> {
    let header = Header {
        id: env.id,
        seq: env.seq,
        at: env.at,
        session: env.session.clone(),
        turn: env.turn,
        causation: env.causation,
        actor: env.actor,
    };
    let out = vec![0u8; FRAME_HEADER_LEN];
    let mut out = rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(&header, out)
        .expect("archiving an envelope header cannot fail");
    let header_len = out.len() - FRAME_HEADER_LEN;
    out.extend_from_slice(payload_archive);
    out[0] = FORMAT_VERSION;
    out[1] = 0;
    out[2..4].copy_from_slice(&kind_code.to_le_bytes());
    out[4..6].copy_from_slice(&schema_version.to_le_bytes());
    out[6..10].copy_from_slice(&(header_len as u32).to_le_bytes());
    out[10..14].copy_from_slice(&(payload_archive.len() as u32).to_le_bytes());
    let crc = frame_crc(&out[..14], &out[FRAME_HEADER_LEN..]);
    out[14..18].copy_from_slice(&crc.to_le_bytes());
    out
}
