//! The output of `engram stats`: the gathered figures as one JSON object
//! (`--json`) or as lines for a person.

use std::collections::BTreeMap;
use std::path::Path;

use engram::local_state::snapshot::Listed;
use serde_json::json;

use super::disk::{human_bytes, Footprint};
use super::embedder::Vectors;
use super::records::Counts;
use super::snapshots;
use crate::output;
use crate::Log;

/// Everything `engram stats` shows, gathered before a line is printed.
pub(super) struct Stats<'a> {
    /// The data dir.
    pub(super) data: &'a Path,
    /// Its log (its head and backend are shown).
    pub(super) log: &'a Log,
    /// The log's records, counted.
    pub(super) records: Counts,
    /// Each projection's rows, last seq and digest, by name.
    pub(super) projections: BTreeMap<&'static str, serde_json::Value>,
    /// The configured embedding model and the stored vectors by model.
    pub(super) vectors: Vectors,
    /// Disk use beside the raw records.
    pub(super) footprint: Footprint,
    /// The actor snapshots.
    pub(super) snapshots: Vec<Listed>,
}

impl Stats<'_> {
    /// Prints the figures as one line of JSON.
    pub(super) fn print_json(&self) -> anyhow::Result<()> {
        let (records, vectors, footprint) = (&self.records, &self.vectors, &self.footprint);
        let configured = &vectors.configured;
        output::print_json(&json!({
            "events": records.events,
            "sessions": records.sessions.len(),
            "turns": records.turns(),
            "head_seq": self.log.head().0,
            "backend": self.log.describe(),
            "by_kind": records.by_kind,
            "record_bytes": footprint.record_bytes,
            "disk_bytes": footprint.disk_bytes,
            "disk_overhead": footprint.ratio,
            "projections": self.projections,
            "embedder": {"model": configured.name(), "id": configured.spec().id, "dim": configured.spec().dim,
                         "fingerprint_vectors": vectors.by_model,
                         "fingerprint_vectors_of_other_models": vectors.of_other_models},
            "damaged": records.damaged,
            "snapshots": snapshots::to_json(&self.snapshots),
        }))
    }

    /// Prints the figures as lines: the log, disk, embedder, projections,
    /// snapshots, then events by kind.
    pub(super) fn print_text(&self) {
        let (records, vectors, footprint) = (&self.records, &self.vectors, &self.footprint);
        let configured = &vectors.configured;
        println!("data dir   {}", self.data.display());
        println!("log        {}", self.log.describe());
        println!("events     {} (head seq {})", records.events, self.log.head());
        println!("sessions   {}", records.sessions.len());
        println!("turns      {}", records.turns());
        println!(
            "disk       {} on disk for {} of records ({:.2}x)",
            human_bytes(footprint.disk_bytes),
            human_bytes(footprint.record_bytes),
            footprint.ratio
        );
        println!("embedder   {} ({}, {}-d)", configured.name(), configured.spec().id, configured.spec().dim);
        for (model, n) in &vectors.by_model {
            let note = if *model == configured.name() {
                ""
            } else {
                " (another model's: embedded again at the runtime's next routed turn)"
            };
            println!("  fingerprint vectors of {model}: {n}{note}");
        }
        println!("projections");
        for (name, p) in &self.projections {
            println!("  {name:<22} {} rows, at seq {}", p["rows"], p["last_seq"]);
        }
        snapshots::print(&self.snapshots);
        println!("by kind");
        for (kind, n) in &records.by_kind {
            println!("  {kind:<22} {n}");
        }
    }
}
