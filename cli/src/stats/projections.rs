//! The projections folded from the log: for each, its rows, the last seq
//! folded into it and the digest of its rows (the digest `engram verify`
//! compares with a rebuild's).

use std::collections::BTreeMap;

use engram::local_state::projector::{hex, Projector};
use serde_json::json;

/// Each projection's `{"rows", "last_seq", "digest"}`, by name.
pub(super) fn status(projector: &Projector) -> BTreeMap<&'static str, serde_json::Value> {
    projector
        .status()
        .into_iter()
        .map(|s| (s.name, json!({"rows": s.rows, "last_seq": s.last_seq.0, "digest": hex(&s.digest)})))
        .collect()
}
