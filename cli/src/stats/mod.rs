//! `engram stats`: what a data dir holds, in one screen (or one JSON
//! object) — the log's records counted by kind, the projections folded
//! from them, which embedding model the stored vectors come from, the
//! actor snapshots, and the disk the whole takes beside the raw records.
//!
//! Each of those is gathered by its own module; `report` prints them.
//! This module holds the command line and the order things are read in.

mod disk;
mod embedder;
mod projections;
mod records;
mod report;
mod snapshots;

use std::path::Path;
use std::process::ExitCode;

use engram::local_state::projector::Projector;

use crate::output;

/// Event counts by kind, sessions, turns, and disk use beside the raw bytes
/// of the records (sled keeps roughly twice the raw size on disk).
#[derive(clap::Args)]
pub struct Args {
    /// Print {"events":N,"sessions":N,"turns":N,"by_kind":{..},"disk_bytes":N,..}
    #[arg(long)]
    json: bool,
}

/// Gathers the figures of `data` and prints them; the exit code says
/// whether the log was read around damage.
pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let log = crate::open_for_reading(data)?;
    let records = records::count(&log)?;
    let projector = Projector::open(&log, engram::learning::projections::all(), |_, _| {})?;
    let stats = report::Stats {
        data,
        log: &log,
        projections: projections::status(&projector),
        vectors: embedder::vectors(data, &projector),
        footprint: disk::footprint(data, &log)?,
        snapshots: snapshots::list(data),
        records,
    };
    if args.json {
        stats.print_json()?;
    } else {
        stats.print_text();
    }
    Ok(if stats.records.damaged { output::damaged_exit() } else { ExitCode::SUCCESS })
}
