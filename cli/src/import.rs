//! `engram import FILE`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use engram::learning::import;
use engram::learning::projections;
use engram::local_state::projector::Projector;

use crate::output;

/// Import turn records or envelopes (JSON Lines, auto-detected).
///
/// The whole file is validated first: if any line is invalid nothing is
/// imported and each bad line is reported as FILE:LINE: FIELD: message.
/// Ids are derived from the records, so importing a file twice adds nothing
/// and an interrupted import completes when run again. Then, for turn
/// records, what was said is indexed for recall, as `engram memory index`
/// does (embedding every imported turn, in batches; `--no-memory-index`
/// leaves it for later; envelopes are a copy of a log and add nothing).
#[derive(clap::Args)]
pub struct Args {
    /// The JSON Lines file
    file: PathBuf,
    /// Print {"imported_turns":N,"skipped_existing":N,"events_appended":N,
    /// "seconds":S,"events_per_second":N,"peak_rss_bytes":N,
    /// "append_seconds":S,"append_events_per_second":N,"snapshots_seconds":S|null,
    /// "memory_index":{"turns","already_indexed","turns_indexed","passages","without_vectors"}|null,
    /// "memory_index_seconds":S|null}:
    /// `seconds`, its rate and the peak are the whole command's, start to
    /// exit; `append_*` is the conversion and append phase (the actors'
    /// snapshots fold beside it), `snapshots_seconds` what their saving
    /// took after it, `memory_index*` the back-fill after that (null: not run)
    #[arg(long)]
    json: bool,
    /// Do not index what was said for recall now (`engram memory index`
    /// does it later; until then the reply loop does not recall the
    /// imported conversations' words)
    #[arg(long)]
    no_memory_index: bool,
    /// Do not fold the imported history into the actors' snapshots (the
    /// next start then folds it, once)
    #[arg(long)]
    no_snapshots: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(data)?;
    let source = engram::storage::ImportSource::open(&args.file)?;
    let plan = import::validate(&args.file, source)?;
    let log = crate::open_log_for_import(data)?;
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    let bar = output::progress(plan.records as u64, "importing");
    let before = log.head();
    let started = std::time::Instant::now();
    let every = config.runtime.snapshot_every;
    // The actors' snapshots fold beside the conversion, on another core; an
    // actor with work left from an earlier run (a crash) has live work to
    // do, which the fold must not do in its place.
    let checkpoints = engram::local_state::ActorCheckpoints::open(log.local_db())?;
    let behind_before = checkpoints.behind(before)?;
    let mut beside = (!args.no_snapshots && every > 0 && behind_before == 0)
        .then(|| engram::actors::Runtime::builder().config(config.clone()).offline().prepare_snapshots_beside(&log))
        .and_then(|b| b.map_err(|e| tracing::warn!("actor snapshots not folded beside the import ({e})")).ok());
    // What import appended is history to the runtime's actors (it derived
    // what they would have), not work: their checkpoints move past it —
    // here for an import that stopped part-way, whatever stopped it (its
    // error is the one reported), below for one that completed.
    let stats = import::run_beside(
        &plan,
        log.log(),
        &projector,
        |p| import::reactors(p, &config.multi_tool_fast_path, &config.pattern),
        &mut beside,
        |done| bar.set_position(done as u64),
    )
    .inspect_err(|_| {
        let _ = checkpoints.advance(before, log.head());
    })?;
    // Durable before the rate is taken: the rate is of events on disk.
    log.flush()?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    checkpoints.advance(before, log.head())?;
    // An actor still behind (a crash of an earlier run) has live work to
    // do, which an offline start here must not do in its place.
    let behind = checkpoints.behind(log.head())?;
    // Not held while the log closes (below).
    drop(checkpoints);
    let per_second = stats.events_appended as f64 / seconds.max(1e-9);
    drop(projector);
    let wanted = !args.no_snapshots && every > 0 && stats.events_appended >= every;
    if wanted && behind > 0 {
        tracing::warn!(
            "actor snapshots not prepared: {behind} actor(s) have work left from an earlier run; \
             the next `engram run` does it and folds the imported history once"
        );
    }
    let snapshots_seconds = (wanted && behind == 0)
        .then(|| prepare_snapshots(&log, config.clone(), beside, stats.events_appended))
        .flatten();
    // Envelopes are a copy of a log (`engram export`): they bring the
    // source's passages, and add nothing it did not hold.
    let memory_index = (!args.no_memory_index && plan.format == import::Format::TurnRecords)
        .then(|| index_memory(&log, &config))
        .flatten();
    drop(log);
    // The figures a user waits for: the whole command, start to here (all
    // that is left is printing), and the process's peak memory over all of
    // it — the snapshots' fold included. The phases are named beside them.
    let figures = Figures {
        command: crate::command_seconds(),
        peak_rss: peak_rss_bytes(),
        append: seconds,
        per_second,
        snapshots: snapshots_seconds,
        memory_index,
    };
    if args.json {
        output::print_json(&figures.json(&stats)?)?;
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
        figures.print(&stats);
    }
    Ok(ExitCode::SUCCESS)
}

/// What an import reports beside what it imported: the whole command
/// (start to report) and its phases.
struct Figures {
    /// The whole command's seconds.
    command: f64,
    /// The process's peak resident memory.
    peak_rss: Option<u64>,
    /// The conversion and append phase's seconds, and its rate.
    append: f64,
    per_second: f64,
    /// The actors' snapshots' fold after it (`None`: not done).
    snapshots: Option<f64>,
    /// The memory back-fill after that, and its seconds (`None`: not run).
    memory_index: Option<(engram::actors::memory_backfill::Backfill, f64)>,
}

impl Figures {
    /// `--json`'s report.
    fn json(&self, stats: &import::ImportStats) -> anyhow::Result<serde_json::Value> {
        let ms = |s: f64| (s * 1000.0).round() / 1000.0;
        let mut report = serde_json::to_value(stats)?;
        report["seconds"] = serde_json::json!(ms(self.command));
        report["events_per_second"] = serde_json::json!(self.command_rate(stats).round());
        report["peak_rss_bytes"] = serde_json::json!(self.peak_rss);
        report["append_seconds"] = serde_json::json!(ms(self.append));
        report["append_events_per_second"] = serde_json::json!(self.per_second.round());
        report["snapshots_seconds"] = serde_json::json!(self.snapshots.map(ms));
        report["memory_index"] = serde_json::to_value(self.memory_index.map(|(m, _)| m))?;
        report["memory_index_seconds"] = serde_json::json!(self.memory_index.map(|(_, s)| ms(s)));
        Ok(report)
    }

    /// The human report's figures: the whole command's first, then the
    /// phases.
    fn print(&self, stats: &import::ImportStats) {
        println!(
            "{:.2} s, {:.0} events/s, the whole command; peak memory {} MiB",
            self.command,
            self.command_rate(stats),
            self.peak_rss.map_or("unknown".to_owned(), |b| (b >> 20).to_string())
        );
        let snapshots = match self.snapshots {
            Some(s) => format!(
                "; actor snapshots prepared in {s:.2} s (the next start does not fold the imported turns again)"
            ),
            None => String::new(),
        };
        println!("phases: append {:.2} s ({:.0} events/s){snapshots}", self.append, self.per_second);
        if let Some((m, s)) = self.memory_index {
            println!("{} in {s:.2} s", crate::memory_index::summary(&m));
        }
    }

    /// Events appended per second of the whole command.
    fn command_rate(&self, stats: &import::ImportStats) -> f64 {
        stats.events_appended as f64 / self.command.max(1e-9)
    }
}

/// Folds the imported history into the actors' snapshots, as their
/// warm-ups at the next start would, without starting them (no model is
/// loaded: see `RuntimeBuilder::prepare_snapshots`), so the first `engram
/// run` after a big import starts as fast as any (otherwise it would fold
/// the whole log, once). Most of it is done already: `beside` folded the
/// import as it was converted, and saves if the log took exactly
/// what it folded (`appended` events); else the log is read and folded
/// now. Nothing is appended. Returns the seconds this part took, or `None`
/// with a warning when it failed (the import itself stands).
fn prepare_snapshots(
    log: &crate::Log,
    config: engram::actors::config::Config,
    beside: Option<engram::actors::SnapshotsBeside>,
    appended: u64,
) -> Option<f64> {
    let started = std::time::Instant::now();
    let folded = match beside.map(|b| b.finish(appended)) {
        Some(Ok(Some(_))) => Ok(()),
        Some(Err(e)) => Err(e),
        Some(Ok(None)) | None => {
            engram::actors::Runtime::builder().config(config).offline().prepare_snapshots(log).map(drop)
        }
    };
    match folded {
        Ok(()) => Some(started.elapsed().as_secs_f64()),
        Err(e) => {
            tracing::warn!("actor snapshots not prepared ({e}); the next start folds the imported history once");
            None
        }
    }
}

/// Indexes what was said in the data dir's history for recall (`engram
/// memory index`), after the import: the seconds it took and what it did,
/// or `None` with a warning when it could not (the import itself stands).
fn index_memory(
    log: &crate::Log,
    config: &engram::actors::config::Config,
) -> Option<(engram::actors::memory_backfill::Backfill, f64)> {
    let started = std::time::Instant::now();
    let indexed = crate::memory_index::index(log.log().as_ref(), config).and_then(|m| {
        log.flush()?;
        Ok(m)
    });
    match indexed {
        Ok(m) => Some((m, started.elapsed().as_secs_f64())),
        Err(e) => {
            tracing::warn!("what was said is not indexed for recall ({e}); `engram memory index` does it later");
            None
        }
    }
}

/// The process's peak resident memory (`getrusage`), what an import of a
/// large file costs a machine beside its time.
fn peak_rss_bytes() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a rusage into the pointer it is given, which
    // points at one; RUSAGE_SELF is a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    // SAFETY: initialised by the successful call (and zeroed before).
    (rc == 0).then(|| unsafe { usage.assume_init() }.ru_maxrss as u64 * 1024)
}
