//! `engram inspect pipelines`: the fast path's L2 rows (the `pipelines`
//! projection) — a canonical request, its steps with placeholders, uses,
//! the last active-day rank it was used on and whether it was promoted.

use engram::learning::projections::Pipelines;
use engram::local_state::projector::Projector;
use serde_json::json;

use super::Opts;
use crate::output;

/// Prints a line (or a JSON object) per pipeline, its steps joined by `→`.
pub(super) fn print(projector: &Projector, opts: &Opts) -> anyhow::Result<()> {
    let rows = projector.get::<Pipelines>("pipelines").expect("registered");
    for r in rows.iter() {
        if opts.json {
            output::print_json(&json!({
                "pipeline_id": r.pipeline_id,
                "canonical": r.canonical,
                "steps": r.steps,
                "uses": r.uses,
                "last_used_rank": r.last_used_rank,
                "promoted": r.promoted,
            }))?;
        } else {
            let steps: Vec<String> = r.steps.iter().map(|s| format!("{}{}", s.tool, s.args.to_json())).collect();
            output::print_line(&format!(
                "{:>4}  rank {:>4}{}  {:<40}  {}",
                r.uses,
                r.last_used_rank,
                if r.promoted { " promoted" } else { "" },
                r.canonical,
                steps.join(" → ")
            ));
        }
    }
    Ok(())
}
