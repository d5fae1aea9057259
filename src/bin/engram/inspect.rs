//! `engram inspect`

use std::path::Path;
use std::process::ExitCode;

use engram::storage::projection::Projector;
use engram::storage::projections::{self, ActiveDays, Sessions};
use serde_json::json;

use crate::output;

/// Show what a projection holds.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Sessions: start, end, turns, fast-path turns, cost, models, mean verdict
    Sessions(Opts),
    /// Active days and their ranks (TTLs count these, not calendar days)
    Days(Opts),
}

/// Options shared by the inspect commands.
#[derive(clap::Args)]
pub struct Opts {
    /// One JSON object per row (JSON Lines)
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, cmd: Command) -> anyhow::Result<ExitCode> {
    let log = crate::open_existing(data)?;
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    match cmd {
        Command::Sessions(opts) => {
            let sessions = projector.get::<Sessions>("sessions").expect("registered");
            if !opts.json {
                println!(
                    "{:<14} {:<20} {:>5} {:>5} {:>10} {:>6}  models",
                    "session", "started", "turns", "fast", "cost", "score"
                );
            }
            for (id, s) in sessions.iter() {
                if opts.json {
                    output::print_json(&json!({
                        "session": id,
                        "started": s.started,
                        "ended": s.ended,
                        "end_reason": s.end_reason,
                        "turns": s.turns,
                        "fast_path_turns": s.fast_path_turns,
                        "cost_usd": s.cost_usd.to_string(),
                        "models": s.models,
                        "mean_score": s.mean_score(),
                    }))?;
                } else {
                    println!(
                        "{:<14} {:<20} {:>5} {:>5} {:>10} {:>6}  {}",
                        id,
                        s.started.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_default(),
                        s.turns,
                        s.fast_path_turns,
                        s.cost_usd.to_string(),
                        s.mean_score().map(|m| format!("{m:.2}")).unwrap_or_else(|| "-".into()),
                        s.models.iter().cloned().collect::<Vec<_>>().join(", ")
                    );
                }
            }
        }
        Command::Days(opts) => {
            let days = projector.get::<ActiveDays>("active_days").expect("registered");
            for (day, rank) in days.iter() {
                if opts.json {
                    output::print_json(&json!({"day": day, "rank": rank}))?;
                } else {
                    println!("{day}  rank {rank}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
