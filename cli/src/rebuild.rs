//! `engram rebuild`

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use engram::learning::projections;
use engram::local_state::projector::{hex, Projector};
use engram::local_state::snapshot::SnapshotDir;
use serde_json::json;

use crate::output;

/// Drop projections and rebuild them from the log, printing their digests.
///
/// A rebuild replays every event from seq 1; the digest of the rebuilt rows
/// equals the digest of the live ones (`engram verify` checks that). A full
/// rebuild (no `--projection`) also drops the actors' snapshots.
#[derive(clap::Args)]
pub struct Args {
    /// Only this projection (repeatable); all by default
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(projections::names()))]
    projection: Vec<String>,
    /// Print {"projections":{NAME:{"digest":"hex","rows":N,"events":N,"folded":N}},"events_per_sec":F,"snapshots_dropped":B}
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let log = crate::open_existing(data)?;
    let head = log.head().0;
    let bar = output::progress(head, "rebuilding");
    let names: Vec<&str> = args.projection.iter().map(String::as_str).collect();
    // The old rows are dropped unread: a rebuild repairs a damaged store.
    let started = std::time::Instant::now();
    let mut projector = Projector::open_clearing(&log, projections::all(), Some(&names), |n, _| bar.set_position(n))?;
    projector.persist()?;
    // The actors' snapshots are folds too: a full rebuild drops them, and
    // the next start folds the log from seq 1 and saves them again.
    let snapshots_dropped = names.is_empty();
    if snapshots_dropped {
        let snapshots = SnapshotDir::new(data);
        snapshots.remove_all().with_context(|| format!("removing {}", snapshots.dir().display()))?;
    }
    let (events, secs) = (head, started.elapsed().as_secs_f64());
    bar.finish_and_clear();
    let eps = if secs > 0.0 { events as f64 / secs } else { 0.0 };
    let rebuilt: BTreeMap<&str, serde_json::Value> = projector
        .status()
        .into_iter()
        .filter(|s| names.is_empty() || names.contains(&s.name))
        .map(|s| {
            let folded = projector.folded(s.name).unwrap_or(0);
            (s.name, json!({"digest": hex(&s.digest), "rows": s.rows, "events": events, "folded": folded}))
        })
        .collect();
    if args.json {
        output::print_json(
            &json!({"projections": rebuilt, "events_per_sec": eps, "snapshots_dropped": snapshots_dropped}),
        )?;
    } else {
        for (name, v) in &rebuilt {
            println!(
                "{name:<18} {:>8} rows  {:>10} folded  {}",
                v["rows"],
                v["folded"],
                v["digest"].as_str().unwrap_or("")
            );
        }
        println!("replayed {events} events in {secs:.2} s ({eps:.0} events/s)");
        if snapshots_dropped {
            println!("actor snapshots dropped: the next start folds the log from seq 1 and saves them again");
        }
    }
    Ok(ExitCode::SUCCESS)
}
