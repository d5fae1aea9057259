//! Codecs: the framed rkyv binary form stored in the log, and the JSON Lines
//! form used by import, export and `--json` output. Both carry the payload's
//! schema version, and both upcast older versions on read.

pub mod binary;
pub mod json;
mod upcast;

/// Why bytes or a JSON line could not be decoded into an envelope. The log
/// adds the `seq` and the file adds the line; this says what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than the frame declares.
    #[error("truncated frame: needs {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A frame layout this build does not know.
    #[error("unknown frame format version {0}")]
    FormatVersion(u8),
    /// The stored CRC does not match the bytes: corruption.
    #[error("CRC mismatch: stored {stored:#010x}, computed {actual:#010x}")]
    Crc {
        /// CRC in the frame.
        stored: u32,
        /// CRC of the bytes read.
        actual: u32,
    },
    /// An event kind code this build does not know (written by a newer engram).
    #[error("unknown event kind code {0}")]
    UnknownKind(u16),
    /// A kind name this build does not know.
    #[error("unknown event kind {0:?}")]
    UnknownKindName(String),
    /// A payload schema version with no decoder (newer than this build).
    #[error("{kind}: schema version {version} is not supported (this build writes v{current})")]
    SchemaVersion {
        /// The kind.
        kind: &'static str,
        /// The version found.
        version: u16,
        /// The version this build writes.
        current: u16,
    },
    /// The archive failed validation.
    #[error("invalid archive: {0}")]
    Archive(String),
    /// Bytes after the single frame `decode` expects.
    #[error("{0} trailing bytes after the frame")]
    TrailingBytes(usize),
    /// The JSON is malformed.
    #[error("{0}")]
    Json(String),
    /// A field is missing, unknown, or has the wrong type or value.
    #[error("{field}: {message}")]
    Field {
        /// Path of the field (`payload.steps[0].tool`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl DecodeError {
    /// A payload deserialisation error as a [`DecodeError::Field`] whose
    /// path starts at `payload` (for current and legacy schemas alike).
    pub(crate) fn payload_field(e: serde_path_to_error::Error<serde_json::Error>) -> DecodeError {
        let path = e.path().to_string();
        let field = if path == "." { "payload".to_owned() } else { format!("payload.{path}") };
        DecodeError::Field { field, message: e.into_inner().to_string() }
    }
}
