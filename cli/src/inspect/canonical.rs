//! `engram inspect canonical`: the fast path's L1 rows (the
//! `canonical_queries` projection) — a canonical request, the executor that
//! answers it, the arguments observed and how often it was used.

use engram::learning::projections::CanonicalQueries;
use engram::local_state::projector::Projector;
use serde_json::json;

use super::Opts;
use crate::output;

/// Prints a line (or a JSON object) per L1 row.
pub(super) fn print(projector: &Projector, opts: &Opts) -> anyhow::Result<()> {
    let rows = projector.get::<CanonicalQueries>("canonical_queries").expect("registered");
    for r in rows.iter() {
        if opts.json {
            output::print_json(&json!({
                "canonical": r.canonical,
                "executor": r.executor,
                "args_observed": r.args_observed,
                "uses": r.uses,
            }))?;
        } else {
            println!("{:>4}  {:<40}  {} {}", r.uses, r.canonical, r.executor, r.args_observed.to_json());
        }
    }
    Ok(())
}
