//! `engram inspect graph`: the knowledge graph (the `graph` projection) —
//! its facts under their branch (USER / DIRECTIVES / WORLD) and node.

use engram::learning::projections::Graph;
use engram::local_state::projector::Projector;
use serde_json::json;

use super::Opts;
use crate::output;

/// Prints a line per fact and a count of nodes and facts, or a JSON object
/// per node with its facts.
pub(super) fn print(projector: &Projector, opts: &Opts) -> anyhow::Result<()> {
    let graph = projector.get::<Graph>("graph").expect("registered");
    if !opts.json {
        println!("{:<10} {:<20} fact", "branch", "node");
    }
    for n in graph.iter() {
        if opts.json {
            output::print_json(&json!({"branch": n.branch, "node": n.node, "facts": n.facts}))?;
        } else {
            for fact in &n.facts {
                output::print_line(&format!("{:<10} {:<20} {}", n.branch.as_str(), n.node, fact));
            }
        }
    }
    if !opts.json {
        println!("{} nodes, {} facts", graph.len(), graph.fact_count());
    }
    Ok(())
}
