//! `engram inspect days`: the `active_days` projection — each day the
//! assistant was used and its rank. TTLs count these ranks rather than
//! calendar days, so this is what ages the fast path's rows.

use engram::learning::projections::ActiveDays;
use engram::local_state::projector::Projector;
use serde_json::json;

use super::Opts;
use crate::output;

/// Prints a line (or a JSON object) per active day with its rank.
pub(super) fn print(projector: &Projector, opts: &Opts) -> anyhow::Result<()> {
    let days = projector.get::<ActiveDays>("active_days").expect("registered");
    for (day, rank) in days.iter() {
        if opts.json {
            output::print_json(&json!({"day": day, "rank": rank}))?;
        } else {
            println!("{day}  rank {rank}");
        }
    }
    Ok(())
}
