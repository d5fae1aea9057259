//! `engram repair`

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitCode;

use engram::events::EventId;
use engram::learning::reactors;
use engram::learning::{import, projections};
use engram::local_state::projector::Projector;
use engram::local_state::snapshot::SnapshotDir;
use engram::storage::repair;
use engram::storage::verify;
use engram::EventLog;
use serde_json::json;

use crate::output;

/// Salvage a damaged log: every readable event into a new log, in place.
///
/// The damaged files are moved to `DIR/damaged-TIME/` and kept. sled reads
/// a copy of them, going around damaged records; what sled cannot give (or
/// everything, when it cannot open the log at all) is found by scanning the
/// files for frames, which carry their own seq and CRC. The events are
/// appended, in order, to a new log (ids kept; seqs after the first loss
/// move down to stay gap-free); events that were derived from others
/// (day.activated, canonical.recorded, pattern.recorded, …) and are among
/// the lost are derived again. The lost seqs and ids are listed, and the
/// new log is verified. A log that verifies is left as it is. Run it again
/// after an interruption: it finishes or starts over.
#[derive(clap::Args)]
pub struct Args {
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    if crate::load_config(data)?.storage.backend == engram::storage::StorageBackend::Jetstream {
        return refetch(data, args);
    }
    let pending = repair::pending(data);
    if data.join("log.sled").is_dir() && !pending {
        // A log that opens and verifies needs nothing.
        if let Ok(log) = crate::open_log(data) {
            let report = verify::verify(log.records(), |_| {});
            if report.ok() {
                if args.json {
                    output::print_json(&json!({"repaired": false, "ok": true, "events": report.events}))?;
                } else {
                    println!("the log verifies ({} events): nothing to repair", report.events);
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    } else if !data.join("log.sled").is_dir() && !pending {
        anyhow::bail!("{}: no engram data here (pass --data DIR)", data.display());
    }
    let config = crate::load_config(data)?;
    // Derived events among the lost: derived again, from their causes, by
    // fresh reactors that see the whole new log from its first record.
    let (multi_tool, pattern) = (&config.multi_tool_fast_path, &config.pattern);
    let rederive = |log: &dyn EventLog, report: &repair::RepairReport| {
        let wanted: HashSet<EventId> = report.lost_ids.iter().filter_map(|id| id.parse().ok()).collect();
        let mut derivers = import::reactors(&Projector::in_memory(projections::all()), multi_tool, pattern);
        reactors::rederive(log, &mut derivers, &wanted)
    };
    let steps = repair::RepairSteps { rederive: &rederive, outdated: &|dir| SnapshotDir::new(dir).remove_all() };
    let report = repair::salvage(data, &steps)?;
    let rederived_ids = &report.rederived;
    let log = crate::open_log(data)?;
    let check = verify::verify(log.records(), |_| {});
    drop(log);
    let lost: Vec<serde_json::Value> = report.lost.iter().map(|(a, b)| json!({"first": a, "last": b})).collect();
    if args.json {
        output::print_json(&json!({
            "repaired": true,
            "ok": check.ok(),
            "read_with": report.read_with,
            "sled_error": report.sled_error,
            "salvaged": report.salvaged,
            "raw_frames": report.raw_frames,
            "old_head": report.old_head,
            "lost": lost,
            "lost_records": report.lost_records(),
            "lost_ids": report.lost_ids,
            "rederived": rederived_ids,
            "renumbered_from": report.renumbered_from,
            "events": check.events,
            "aside": report.aside.display().to_string(),
        }))?;
    } else {
        println!("read with: {}", report.read_with);
        if let Some(why) = &report.sled_error {
            println!("  (sled: {why})");
        }
        println!("salvaged:  {} events into a new log", report.salvaged);
        if report.lost.is_empty() {
            println!("lost:      nothing");
        } else {
            let runs: Vec<String> = report
                .lost
                .iter()
                .map(|(a, b)| if a == b { format!("seq {a}") } else { format!("seqs {a}..={b}") })
                .collect();
            println!("lost:      {} records: {}", report.lost_records(), runs.join(", "));
            for id in &report.lost_ids {
                let again = if rederived_ids.contains(id) { " (derived again)" } else { "" };
                println!("  id {id}{again}");
            }
        }
        if let Some(from) = report.renumbered_from {
            println!("renumbered: the events from old seq {from} on moved down to keep seqs gap-free");
        }
        if !report.aside.as_os_str().is_empty() {
            println!("the damaged files are in {}", report.aside.display());
        }
        println!("verify: {} ({} events)", if check.ok() { "ok" } else { "FAILED" }, check.events);
    }
    Ok(if check.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// On a shared JetStream log, the data dir holds a copy of the stream:
/// a damaged copy is set aside whole (`DIR/damaged-TIME/`, kept) and the
/// stream fetched again; the projections, checkpoints and snapshots that
/// lived beside it are rebuilt from the log.
fn refetch(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    if let Ok(log) = crate::open_log(data) {
        let report = verify::verify(log.records(), |_| {});
        if report.ok() && log.verify_remote()?.is_none() {
            if args.json {
                output::print_json(&json!({"repaired": false, "ok": true, "events": report.events}))?;
            } else {
                println!(
                    "the data dir's copy of {} verifies ({} events): nothing to repair",
                    log.describe(),
                    report.events
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
    let aside = data.join(format!("damaged-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S")));
    std::fs::create_dir_all(&aside).map_err(|e| anyhow::anyhow!("{}: {e}", aside.display()))?;
    for name in ["log.sled", "log.wal", "snapshots"] {
        let from = data.join(name);
        if from.exists() {
            std::fs::rename(&from, aside.join(name)).map_err(|e| anyhow::anyhow!("{}: {e}", from.display()))?;
        }
    }
    let log = crate::open_log(data)?;
    let check = verify::verify(log.records(), |_| {});
    let ok = check.ok() && log.verify_remote()?.is_none();
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    drop(projector);
    if args.json {
        output::print_json(
            &json!({"repaired": true, "refetched": true, "ok": ok, "events": check.events, "damaged_kept_in": aside}),
        )?;
    } else {
        println!(
            "fetched {} events again from {}; the damaged copy is kept in {}",
            check.events,
            log.describe(),
            aside.display()
        );
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
