//! `engram verify`

use std::path::Path;
use std::process::ExitCode;

use engram::learning::projections;
use engram::local_state::projector::{hex, Projector};
use engram::storage::verify;
use serde_json::json;

use crate::output;

/// Check the whole log: every record's CRC and archive, gap-free seqs,
/// segment keys, and the id index. Exits 1 on any fault, naming the first
/// bad seq.
#[derive(clap::Args)]
pub struct Args {
    /// Print {"ok":bool,"events":N,"segments":N,"first_bad_seq":N|null,"faults":[..]}
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let log = crate::open_for_reading(data)?;
    let bar = output::progress(log.head().0, "verifying");
    let mut report = verify::verify(log.records(), |n| bar.set_position(n));
    bar.finish_and_clear();
    // A shared log's copy, event for event against the stream.
    if report.ok() {
        if let Some((seq, what)) = log.verify_remote()? {
            report.faults.push(engram::LogError::Inconsistent { seq, what: format!("{}: {what}", log.describe()) });
        }
    }
    // Live projections (persisted, caught up) against a rebuild in memory.
    let mut digests = Vec::new();
    if report.ok() {
        let live = Projector::open(&log, projections::all(), |_, _| {})?;
        let mut rebuilt = Projector::in_memory(projections::all());
        rebuilt.catch_up(log.log(), |_, _| {})?;
        for (l, r) in live.status().into_iter().zip(rebuilt.status()) {
            if l.digest != r.digest {
                report.faults.push(engram::LogError::Projection {
                    name: l.name,
                    what: format!("live digest {} but a rebuild gives {}", hex(&l.digest), hex(&r.digest)),
                });
            }
            digests.push(
                json!({"name": l.name, "rows": l.rows, "digest": hex(&l.digest), "rebuilt_digest": hex(&r.digest)}),
            );
        }
    }
    if args.json {
        output::print_json(&json!({
            "ok": report.ok(),
            "events": report.events,
            "segments": report.segments,
            "first_bad_seq": report.first_bad_seq().map(|s| s.0),
            "backend": log.describe(),
            "faults": report.faults.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
            "projections": digests,
        }))?;
    } else if report.ok() {
        println!("ok: {} events in {} segments, CRCs, seqs and id index verified", report.events, report.segments);
        println!("ok: {} projections rebuilt in memory with the live digests", digests.len());
        if log.shared() {
            println!("ok: the data dir's copy matches {} event for event", log.describe());
        }
    } else {
        for fault in &report.faults {
            eprintln!("{}: {fault}", data.display());
        }
        let first = match report.first_bad_seq() {
            Some(seq) => format!("first bad seq {seq}"),
            None => "in sled's own pages (no seq to name)".to_owned(),
        };
        eprintln!(
            "verify failed: {} fault(s), {first}; `engram repair` salvages every readable event",
            report.faults.len()
        );
    }
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
