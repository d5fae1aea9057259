//! `engram stats`

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

use engram::learning::embedder::EmbeddingModel;
use engram::learning::projections::{self, PatternOutcomes};
use engram::local_state::projector::{hex, Projector};
use engram::local_state::snapshot::SnapshotDir;
use engram::{EventKind, Seq};
use serde_json::json;

use crate::output;

/// Event counts by kind, sessions, turns, and disk use beside the raw bytes
/// of the records (sled keeps roughly twice the raw size on disk).
#[derive(clap::Args)]
pub struct Args {
    /// Print {"events":N,"sessions":N,"turns":N,"by_kind":{..},"disk_bytes":N,..}
    #[arg(long)]
    json: bool,
}

/// Total size of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let log = crate::open_for_reading(data)?;
    let mut by_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut sessions: HashSet<String> = HashSet::new();
    // Counting needs no payloads: read the records in place.
    let viewed = log.records().for_each_view(Seq::FIRST, |view| {
        *by_kind.entry(view.kind().name()).or_default() += 1;
        if let Some(s) = view.session() {
            if !sessions.contains(s) {
                sessions.insert(s.to_owned());
            }
        }
        Ok(())
    });
    let mut damaged = false;
    let events = match viewed {
        Ok(n) => n,
        // The in-place reader stops at damage; the decoding one goes
        // around it: count again with that.
        Err(e) if e.is_record_damage() => {
            tracing::debug!("counting around damage: {e}");
            by_kind.clear();
            sessions.clear();
            let mut n = 0;
            for env in log.read_from(Seq::FIRST) {
                let env = match env {
                    Ok(env) => env,
                    Err(e) if output::around_damage(&e) => {
                        damaged = true;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                n += 1;
                *by_kind.entry(env.kind().name()).or_default() += 1;
                if let Some(s) = &env.session {
                    sessions.insert(s.as_str().to_owned());
                }
            }
            n
        }
        Err(e) => return Err(e.into()),
    };
    let turns = by_kind.get(EventKind::TurnCompleted.name()).copied().unwrap_or(0);
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    let projections: BTreeMap<&str, serde_json::Value> = projector
        .status()
        .into_iter()
        .map(|s| (s.name, json!({"rows": s.rows, "last_seq": s.last_seq.0, "digest": hex(&s.digest)})))
        .collect();
    // Which model the data dir's stored vectors come from: the hybrid
    // fingerprints carry theirs (by model id); fast-path rows and diary
    // entries are embedded from their text by the configured model at start.
    let configured = crate::load_config(data).map(|c| c.embedder.model).unwrap_or_default();
    let mut vectors: BTreeMap<String, u64> = BTreeMap::new();
    if let Some(store) = projector.get::<PatternOutcomes>("pattern_outcomes") {
        for (_, row) in store.fingerprints() {
            if let Some(e) = &row.embedding {
                let name = EmbeddingModel::from_id(&e.provider).map_or(e.provider.clone(), |m| m.name().to_owned());
                *vectors.entry(name).or_default() += 1;
            }
        }
    }
    let stale: u64 = vectors.iter().filter(|(m, _)| **m != configured.name()).map(|(_, n)| n).sum();
    let record_bytes: u64 = log.records().segments().map(|s| s.map(|(_, b)| b.len() as u64)).sum::<Result<u64, _>>()?;
    let disk_bytes = dir_bytes(data);
    let snapshots = SnapshotDir::new(data).list();
    let ratio = if record_bytes > 0 { disk_bytes as f64 / record_bytes as f64 } else { 0.0 };
    if args.json {
        output::print_json(&json!({
            "events": events,
            "sessions": sessions.len(),
            "turns": turns,
            "head_seq": log.head().0,
            "backend": log.describe(),
            "by_kind": by_kind,
            "record_bytes": record_bytes,
            "disk_bytes": disk_bytes,
            "disk_overhead": ratio,
            "projections": projections,
            "embedder": {"model": configured.name(), "id": configured.spec().id, "dim": configured.spec().dim,
                         "fingerprint_vectors": vectors, "fingerprint_vectors_of_other_models": stale},
            "damaged": damaged,
            "snapshots": snapshots.iter().map(|l| match &l.header {
                Ok((version, seq)) => json!({"owner": l.owner, "bytes": l.bytes, "version": version, "seq": seq.0}),
                Err(e) => json!({"owner": l.owner, "bytes": l.bytes, "damaged": e}),
            }).collect::<Vec<_>>(),
        }))?;
    } else {
        println!("data dir   {}", data.display());
        println!("log        {}", log.describe());
        println!("events     {events} (head seq {})", log.head());
        println!("sessions   {}", sessions.len());
        println!("turns      {turns}");
        println!(
            "disk       {} on disk for {} of records ({ratio:.2}x)",
            human_bytes(disk_bytes),
            human_bytes(record_bytes)
        );
        println!("embedder   {} ({}, {}-d)", configured.name(), configured.spec().id, configured.spec().dim);
        for (model, n) in &vectors {
            let note = if *model == configured.name() {
                ""
            } else {
                " (another model's: embedded again at the runtime's next routed turn)"
            };
            println!("  fingerprint vectors of {model}: {n}{note}");
        }
        println!("projections");
        for (name, p) in &projections {
            println!("  {name:<22} {} rows, at seq {}", p["rows"], p["last_seq"]);
        }
        if !snapshots.is_empty() {
            println!("actor snapshots (a start folds the log only after these)");
        }
        for l in &snapshots {
            match &l.header {
                Ok((version, seq)) => {
                    println!("  {:<22} at seq {seq}, {} (state version {version})", l.owner, human_bytes(l.bytes))
                }
                Err(e) => println!("  {:<22} damaged ({e}): not used; the next start folds from seq 1", l.owner),
            }
        }
        println!("by kind");
        for (kind, n) in &by_kind {
            println!("  {kind:<22} {n}");
        }
    }
    Ok(if damaged { output::damaged_exit() } else { ExitCode::SUCCESS })
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
