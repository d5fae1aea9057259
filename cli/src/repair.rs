//! `engram repair`

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitCode;

use engram::events::EventId;
use engram::learning::reactors;
use engram::learning::{import, projections};
use engram::storage::projector::Projector;
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
    let pending = repair::pending(data);
    if data.join("log.sled").is_dir() && !pending {
        // A log that opens and verifies needs nothing.
        if let Ok(log) = crate::open_log(data) {
            let report = verify::verify(&log, |_| {});
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
    let report = repair::salvage(data)?;
    // Derived events among the lost: derived again, from their causes.
    let log = crate::open_log(data)?;
    let wanted: HashSet<EventId> = report.lost_ids.iter().filter_map(|id| id.parse().ok()).collect();
    let config = crate::load_config(data)?;
    // Fresh reactors: they see the whole log from its first record.
    let mut derivers = import::reactors(&Projector::in_memory(projections::all()), &config);
    let rederived = reactors::rederive(&log, &mut derivers, &wanted)?;
    let rederived_ids: Vec<String> = rederived.iter().map(|e| e.id.to_string()).collect();
    if !rederived.is_empty() {
        log.append(rederived)?;
    }
    let check = verify::verify(&log, |_| {});
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
