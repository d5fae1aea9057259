//! `engram inspect`: what one projection of a data dir holds, row by row.
//!
//! The command folds the whole log into every projection once, then shows
//! the one asked for. Each subject has its own module, which takes its
//! projection from the folded state and prints it as a table or, with
//! `--json`, as one JSON object per row; this module holds the command line
//! and the dispatch.

mod canonical;
mod days;
mod graph;
mod memory;
mod patterns;
mod pipelines;
mod sessions;

use std::path::Path;
use std::process::ExitCode;

use engram::learning::projections;
use engram::local_state::projector::Projector;

/// Show what a projection holds.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Sessions: start, end, turns, fast-path turns, cost, models, mean verdict
    Sessions(Opts),
    /// Active days and their ranks (TTLs count these, not calendar days)
    Days(Opts),
    /// Pattern-store outcomes: one row per (fingerprint, model) with its
    /// samples, success mean, average cost and latency, and the
    /// fingerprint's features; --clusters: per fingerprint, the cluster a
    /// turn of that shape meets and each model's evidence in it
    Patterns(PatternOpts),
    /// Fast-path L1 rows: canonical request, executor, observed arguments,
    /// uses (candidates once uses reach canonical_query_min_uses)
    Canonical(Opts),
    /// Fast-path L2 pipelines: canonical request, steps with placeholders,
    /// uses, last active-day rank, promoted
    Pipelines(Opts),
    /// Knowledge graph: one line per fact under its branch (USER /
    /// DIRECTIVES / WORLD) and node; --json: one object per node
    Graph(Opts),
    /// Memory index: what was said, one passage per line (date, session,
    /// speaker, whether it has a vector); --search WORDS: the passages
    /// those words find, best first
    Memory(MemoryOpts),
}

/// Options of `inspect memory`.
#[derive(clap::Args)]
pub struct MemoryOpts {
    /// One JSON object per row (JSON Lines)
    #[arg(long)]
    json: bool,
    /// Only the passages these words find (BM25, best first)
    #[arg(long, value_name = "WORDS")]
    search: Option<String>,
    /// Most passages --search shows
    #[arg(long, value_name = "N", default_value_t = 10)]
    limit: usize,
}

/// Options of `inspect patterns`.
#[derive(clap::Args)]
pub struct PatternOpts {
    /// One JSON object per row (JSON Lines)
    #[arg(long)]
    json: bool,
    /// Per fingerprint, the store's recommendation for a turn of that shape:
    /// its cluster's models with samples, success and score, the model
    /// chosen (or why none), as `[pattern]` in engram.toml configures it
    #[arg(long)]
    clusters: bool,
}

/// Options shared by the inspect commands.
#[derive(clap::Args)]
pub struct Opts {
    /// One JSON object per row (JSON Lines)
    #[arg(long)]
    json: bool,
}

/// Folds the log of `data` into every projection and prints the one `cmd`
/// names.
pub fn run(data: &Path, cmd: Command) -> anyhow::Result<ExitCode> {
    let log = crate::open_for_reading(data)?;
    if let Command::Memory(opts) = &cmd {
        memory::print(&log, opts)?;
        return Ok(ExitCode::SUCCESS);
    }
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    match cmd {
        Command::Sessions(opts) => sessions::print(&projector, &opts)?,
        Command::Patterns(opts) if opts.clusters => patterns::print_clusters(data, &projector, &opts)?,
        Command::Patterns(opts) => patterns::print_outcomes(&projector, &opts)?,
        Command::Canonical(opts) => canonical::print(&projector, &opts)?,
        Command::Pipelines(opts) => pipelines::print(&projector, &opts)?,
        Command::Graph(opts) => graph::print(&projector, &opts)?,
        Command::Days(opts) => days::print(&projector, &opts)?,
        Command::Memory(_) => unreachable!("shown above, without the projections"),
    }
    Ok(ExitCode::SUCCESS)
}
