//! `engram import FILE`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use engram::storage::import;
use engram::storage::patterns::{PatternCaps, PatternConfig};
use engram::storage::projection::Projector;
use engram::storage::projections::{self, ActiveDays, PatternOutcomes};
use engram::storage::reactors::{DayReactor, PatternReactor, Reactor};

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
    let plan = import::validate(&args.file)?;
    let log = crate::open_log(data)?;
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    let mut reactors = reactors_for(&projector);
    let bar = output::progress(plan.records as u64, "importing");
    let stats = import::run(&plan, &log, &mut reactors, |done| bar.set_position(done as u64))?;
    bar.finish_and_clear();
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

/// The reactors an import runs, warmed up from the live projections.
fn reactors_for(projector: &Projector) -> Vec<Box<dyn Reactor>> {
    let days = projector.get::<ActiveDays>("active_days").map(DayReactor::from_projection).unwrap_or_default();
    let patterns = projector.get::<PatternOutcomes>("pattern_outcomes").cloned().unwrap_or_default();
    vec![Box::new(days), Box::new(PatternReactor::new(patterns, PatternConfig::default(), PatternCaps::default()))]
}
