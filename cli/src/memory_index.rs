//! `engram memory index`: the back-fill of the memory index
//! ([`engram::actors::memory_backfill`]).

use std::path::Path;
use std::process::ExitCode;

use engram::actors::memory_backfill::{backfill, Backfill};
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::storage::EventLog;

use crate::output;

/// What the memory index of what was said can do after the fact.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Index what was said in the data dir's history: every completed turn
    /// the memory indexer has not seen (imported, or from before it existed)
    ///
    /// Appends, for each such turn, the `memory.passages_indexed` the
    /// memory indexer would have appended (the same passages and ids), so
    /// the reply loop recalls it; a turn indexed already is skipped, and a
    /// second run appends nothing. Embeds in batches with the configured
    /// `[embedder]` model. `engram import` runs it after it appends.
    Index(IndexArgs),
}

/// `engram memory index`'s options.
#[derive(clap::Args)]
pub struct IndexArgs {
    /// Print {"turns":N,"already_indexed":N,"turns_indexed":N,"passages":N,
    /// "without_vectors":N,"seconds":S}
    #[arg(long)]
    json: bool,
}

/// Runs `engram memory …`.
pub fn run(data: &Path, cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Index(args) => {
            let config = crate::load_config(data)?;
            let log = crate::open_existing(data)?;
            let started = std::time::Instant::now();
            let stats = index(log.log().as_ref(), &config)?;
            log.flush()?;
            let seconds = started.elapsed().as_secs_f64();
            if args.json {
                let mut report = serde_json::to_value(stats)?;
                report["seconds"] = serde_json::json!((seconds * 1000.0).round() / 1000.0);
                output::print_json(&report)?;
            } else {
                println!("{}; {seconds:.2} s", summary(&stats));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Back-fills `log` with the embedder `config` names, a progress bar on a
/// terminal. The model is opened only when some turn needs it.
pub(crate) fn index(log: &dyn EventLog, config: &engram::actors::config::Config) -> anyhow::Result<Backfill> {
    // A pass without embedding first: nothing to index, no model loaded.
    let counted = engram::actors::memory_backfill::unindexed(log)?;
    if counted == 0 {
        return Ok(backfill(log, None, |_| {})?);
    }
    let embedder = OnnxEmbedder::open(&config.embedder)
        .map_err(|e| anyhow::anyhow!("the memory index needs the embedding model: {e}"))?;
    let bar = output::progress(counted, "indexing");
    let stats = backfill(log, Some(&embedder), |turns| bar.set_position(turns))?;
    bar.finish_and_clear();
    Ok(stats)
}

/// One line of what a back-fill did.
pub(crate) fn summary(stats: &Backfill) -> String {
    let vectors = match stats.without_vectors {
        0 => String::new(),
        n => format!(" ({n} without a vector: found by their words alone)"),
    };
    format!(
        "memory index: {} of {} completed turns indexed now, {} passages{vectors}; {} indexed already",
        stats.turns_indexed, stats.turns, stats.passages, stats.already_indexed
    )
}
