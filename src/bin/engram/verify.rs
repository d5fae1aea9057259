//! `engram verify`

use std::path::Path;
use std::process::ExitCode;

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
    let log = crate::open_existing(data)?;
    let bar = output::progress(engram::EventLog::head(&log).0, "verifying");
    let report = verify::verify(&log, |n| bar.set_position(n));
    bar.finish_and_clear();
    if args.json {
        output::print_json(&json!({
            "ok": report.ok(),
            "events": report.events,
            "segments": report.segments,
            "first_bad_seq": report.first_bad_seq().map(|s| s.0),
            "faults": report.faults.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        }))?;
    } else if report.ok() {
        println!("ok: {} events in {} segments, CRCs, seqs and id index verified", report.events, report.segments);
    } else {
        for fault in &report.faults {
            eprintln!("{}: {fault}", data.display());
        }
        eprintln!(
            "verify failed: {} fault(s); first bad seq {}",
            report.faults.len(),
            report.first_bad_seq().map_or("?".to_owned(), |s| s.to_string())
        );
    }
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
