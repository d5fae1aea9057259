//! `engram inspect sessions`: one row per session of the `sessions`
//! projection — when it started, how many turns (and how many the fast path
//! answered), what it cost, which models ran and the mean verdict.

use engram::learning::projections::Sessions;
use engram::local_state::projector::Projector;
use serde_json::json;

use super::Opts;
use crate::output;

/// Prints the sessions: a header and a line per session, or a JSON object
/// per session.
pub(super) fn print(projector: &Projector, opts: &Opts) -> anyhow::Result<()> {
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
                output::escape_controls(&id),
                s.started.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_default(),
                s.turns,
                s.fast_path_turns,
                s.cost_usd.to_string(),
                s.mean_score().map(|m| format!("{m:.2}")).unwrap_or_else(|| "-".into()),
                s.models.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(())
}
