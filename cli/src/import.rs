//! `engram import FILE`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use engram::learning::import;
use engram::learning::projections;
use engram::storage::projector::Projector;
use engram::storage::EventLog;

use crate::output;

/// Import turn records or envelopes (JSON Lines, auto-detected).
///
/// The whole file is validated first: if any line is invalid nothing is
/// imported and each bad line is reported as FILE:LINE: FIELD: message.
/// Ids are derived from the records, so importing a file twice adds nothing
/// and an interrupted import completes when run again.
#[derive(clap::Args)]
pub struct Args {
    /// The JSON Lines file
    file: PathBuf,
    /// Print {"imported_turns":N,"skipped_existing":N,"events_appended":N}
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(data)?;
    let plan = import::validate(&args.file)?;
    let log = crate::open_log(data)?;
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    let bar = output::progress(plan.records as u64, "importing");
    let before = log.head();
    let stats =
        import::run(&plan, &log, || import::reactors(&projector, &config), |done| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    // What import appended is history to the runtime's actors (it derived
    // what they would have), not work: move their checkpoints past it.
    engram::actors::bus::Bus::advance_checkpoints(&log, before, log.head())?;
    if args.json {
        output::print_json(&stats)?;
    } else {
        println!(
            "imported {} turns ({} events) from {} ({}); {} already present; data dir {}",
            stats.imported_turns,
            stats.events_appended,
            args.file.display(),
            plan.format,
            stats.skipped_existing,
            data.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
