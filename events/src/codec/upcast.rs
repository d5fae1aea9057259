//! Older payload schemas, read and upcast to today's.
//!
//! Each arm names a `(kind, version)` that was once written and the legacy
//! struct that decodes it. Arms are only ever added: a log written by any
//! earlier version of engram must replay unchanged (`tests/fixtures/`).

use crate::codec::DecodeError;
use crate::event::{Event, EventKind};
use crate::payloads::{PatternRecorded, PatternRecordedV1};

/// Decodes a payload archive of an older schema version.
pub(crate) fn from_archive(kind: EventKind, version: u16, bytes: &[u8]) -> Result<Event, DecodeError> {
    let archive_err = |e: rkyv::rancor::Error| DecodeError::Archive(e.to_string());
    match (kind, version) {
        (EventKind::PatternRecorded, 1) => {
            let v1 = rkyv::from_bytes::<PatternRecordedV1, rkyv::rancor::Error>(bytes).map_err(archive_err)?;
            Ok(Event::PatternRecorded(PatternRecorded::from(v1)))
        }
        _ => Err(DecodeError::SchemaVersion { kind: kind.name(), version, current: kind.schema_version() }),
    }
}

/// Validates a payload archive of an older schema version in place.
pub(crate) fn check_archive(kind: EventKind, version: u16, bytes: &[u8]) -> Result<(), DecodeError> {
    let archive_err = |e: rkyv::rancor::Error| DecodeError::Archive(e.to_string());
    match (kind, version) {
        (EventKind::PatternRecorded, 1) => {
            rkyv::access::<rkyv::Archived<PatternRecordedV1>, rkyv::rancor::Error>(bytes)
                .map(|_| ())
                .map_err(archive_err)
        }
        _ => Err(DecodeError::SchemaVersion { kind: kind.name(), version, current: kind.schema_version() }),
    }
}

/// Parses a JSON payload of an older schema version.
pub(crate) fn from_json(kind: EventKind, version: u16, value: serde_json::Value) -> Result<Event, DecodeError> {
    match (kind, version) {
        (EventKind::PatternRecorded, 1) => {
            let v1: PatternRecordedV1 = serde_json::from_value(value).map_err(|e| DecodeError::Json(e.to_string()))?;
            Ok(Event::PatternRecorded(PatternRecorded::from(v1)))
        }
        _ => Err(DecodeError::SchemaVersion { kind: kind.name(), version, current: kind.schema_version() }),
    }
}
