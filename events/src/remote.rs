//! rkyv layouts for foreign types (remote derives).
//!
//! The archived form of each is a fixed, documented encoding that must never
//! change without a new schema version: ULIDs as `u128`, timestamps as `i64`
//! microseconds since the Unix epoch, `Decimal` as its own exact 16-byte
//! encoding. (Tool arguments, a type of engram's own, have their layout
//! beside it: `payloads::common::ToolArgsDef`.)

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use ulid::Ulid;

/// Archived layout of [`Ulid`]: its 128-bit value.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(remote = Ulid)]
pub struct UlidDef(#[rkyv(getter = ulid_bits)] pub(crate) u128);

fn ulid_bits(id: &Ulid) -> u128 {
    id.0
}

impl From<UlidDef> for Ulid {
    fn from(value: UlidDef) -> Self {
        Ulid(value.0)
    }
}

/// Archived layout of [`Decimal`]: `Decimal::serialize`'s exact 16 bytes.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(remote = Decimal)]
pub struct DecimalDef {
    #[rkyv(getter = Decimal::serialize)]
    bytes: [u8; 16],
}

impl From<DecimalDef> for Decimal {
    fn from(value: DecimalDef) -> Self {
        Decimal::deserialize(value.bytes)
    }
}

/// Archived layout of a UTC timestamp: microseconds since the Unix epoch.
/// Envelopes are truncated to microseconds when built, so this is exact.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(remote = DateTime<Utc>)]
pub struct TimestampDef {
    #[rkyv(getter = DateTime::<Utc>::timestamp_micros)]
    pub(crate) micros: i64,
}

impl From<TimestampDef> for DateTime<Utc> {
    fn from(value: TimestampDef) -> Self {
        DateTime::<Utc>::from_timestamp_micros(value.micros).unwrap_or_default()
    }
}
