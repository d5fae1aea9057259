//! The actor snapshots in the data dir: a start folds the log only after
//! the seq a snapshot holds, so a damaged one (not used: the next start
//! folds from seq 1) is worth showing.

use std::path::Path;

use engram::local_state::snapshot::{Listed, SnapshotDir};
use serde_json::json;

use super::disk::human_bytes;

/// The snapshot files under `data`.
pub(super) fn list(data: &Path) -> Vec<Listed> {
    SnapshotDir::new(data).list()
}

/// One JSON object per snapshot: owner, bytes and version and seq, or why
/// it is damaged.
pub(super) fn to_json(snapshots: &[Listed]) -> Vec<serde_json::Value> {
    snapshots
        .iter()
        .map(|l| match &l.header {
            Ok((version, seq)) => json!({"owner": l.owner, "bytes": l.bytes, "version": version, "seq": seq.0}),
            Err(e) => json!({"owner": l.owner, "bytes": l.bytes, "damaged": e}),
        })
        .collect()
}

/// A heading (if there are any) and a line per snapshot.
pub(super) fn print(snapshots: &[Listed]) {
    if !snapshots.is_empty() {
        println!("actor snapshots (a start folds the log only after these)");
    }
    for l in snapshots {
        match &l.header {
            Ok((version, seq)) => {
                println!("  {:<22} at seq {seq}, {} (state version {version})", l.owner, human_bytes(l.bytes))
            }
            Err(e) => println!("  {:<22} damaged ({e}): not used; the next start folds from seq 1", l.owner),
        }
    }
}
