//! `engram inspect`

use std::path::Path;
use std::process::ExitCode;

use engram::learning::projections::{self, ActiveDays, CanonicalQueries, Graph, PatternOutcomes, Pipelines, Sessions};
use engram::local_state::projector::Projector;
use serde_json::json;

use crate::output;

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

pub fn run(data: &Path, cmd: Command) -> anyhow::Result<ExitCode> {
    let log = crate::open_for_reading(data)?;
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
        }
        Command::Patterns(opts) if opts.clusters => {
            let store = projector.get::<PatternOutcomes>("pattern_outcomes").expect("registered");
            let config = crate::load_config(data)?.pattern.config();
            let mut fps: Vec<_> = store.fingerprints().collect();
            fps.sort_by_key(|(id, row)| (row.first_seq, *id));
            for (id, row) in fps {
                // What a route-time query of this shape sees: the rows of
                // its kind whatever tools their models went on to run.
                let rec = store.recommend(&row.fingerprint().at_route(), &config);
                if opts.json {
                    output::print_json(&json!({
                        "fingerprint_id": id.to_string(),
                        "fingerprint_kind": row.kind,
                        "features": &row.features,
                        "workload": row.workload,
                        "chosen_model": rec.chosen_model,
                        "confidence": rec.confidence,
                        "sample_size": rec.sample_size,
                        "k_cluster_size": rec.k_cluster_size,
                        "models": rec.alternatives,
                    }))?;
                    continue;
                }
                let why = match &rec.chosen_model {
                    Some(m) => format!("chooses {m} (confidence {:.2})", rec.confidence),
                    None if rec.alternatives.is_empty() => "no evidence".to_owned(),
                    None => format!(
                        "chooses nothing: confidence {:.2} < {} or samples {} < {}",
                        rec.confidence, config.min_confidence, rec.sample_size, config.min_sample_size
                    ),
                };
                println!(
                    "{} {} [{}]: {} rows in the cluster; {why}",
                    id,
                    row.kind.as_str(),
                    describe(&row.features, row.workload.as_deref()),
                    rec.k_cluster_size
                );
                for m in &rec.alternatives {
                    println!(
                        "    {:<24} samples {:>5}  success {:.3}  cost ${:.6}  score {:.3}",
                        m.model, m.sample_size, m.success_score_mean, m.avg_cost_usd, m.score
                    );
                }
            }
        }
        Command::Patterns(opts) => {
            let store = projector.get::<PatternOutcomes>("pattern_outcomes").expect("registered");
            if !opts.json {
                println!(
                    "{:<26} {:<24} {:>7} {:>7} {:>12} {:>9}  features",
                    "fingerprint", "model", "samples", "success", "avg cost", "latency"
                );
            }
            for (id, model, o) in store.outcomes() {
                let fp = store.fingerprint(id);
                if opts.json {
                    output::print_json(&json!({
                        "fingerprint_id": id.to_string(),
                        "fingerprint_kind": fp.map(|f| f.kind),
                        "primary_model": model,
                        "sample_size": o.sample_size,
                        "success_score_mean": o.success_mean(),
                        "success_score_count": o.score_count,
                        "avg_cost_usd": o.avg_cost_usd().to_string(),
                        "avg_latency_ms": o.latency_mean_ms,
                        "pricing_version_last": o.pricing_version_last,
                        "last_updated": o.last_updated,
                        "workload": fp.and_then(|f| f.workload.clone()),
                        "features": fp.map(|f| &f.features),
                    }))?;
                } else {
                    let features = fp.map(|f| describe(&f.features, f.workload.as_deref())).unwrap_or_default();
                    println!(
                        "{:<26} {:<24} {:>7} {:>7} {:>12} {:>7.0}ms  {}",
                        id.to_string(),
                        model,
                        o.sample_size,
                        o.success_mean().map(|m| format!("{m:.3}")).unwrap_or_else(|| "-".into()),
                        format!("${:.6}", o.avg_cost_usd()),
                        o.latency_mean_ms,
                        features
                    );
                }
            }
            if !opts.json {
                println!(
                    "{} fingerprints, {} outcomes, {} turns of open sessions",
                    store.fingerprint_count(),
                    store.outcome_count(),
                    store.pending_count()
                );
            }
        }
        Command::Canonical(opts) => {
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
        }
        Command::Pipelines(opts) => {
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
                    let steps: Vec<String> =
                        r.steps.iter().map(|s| format!("{}{}", s.tool, s.args.to_json())).collect();
                    println!(
                        "{:>4}  rank {:>4}{}  {:<40}  {}",
                        r.uses,
                        r.last_used_rank,
                        if r.promoted { " promoted" } else { "" },
                        r.canonical,
                        steps.join(" → ")
                    );
                }
            }
        }
        Command::Graph(opts) => {
            let graph = projector.get::<Graph>("graph").expect("registered");
            if !opts.json {
                println!("{:<10} {:<20} fact", "branch", "node");
            }
            for n in graph.iter() {
                if opts.json {
                    output::print_json(&json!({"branch": n.branch, "node": n.node, "facts": n.facts}))?;
                } else {
                    for fact in &n.facts {
                        println!("{:<10} {:<20} {}", n.branch.as_str(), n.node, fact);
                    }
                }
            }
            if !opts.json {
                println!("{} nodes, {} facts", graph.len(), graph.fact_count());
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

/// A one-line summary of a fingerprint's features.
fn describe(f: &engram::events::payloads::StructuralFeatures, workload: Option<&str>) -> String {
    let mut parts = Vec::new();
    let mut set = |name: &str, v: Vec<String>| {
        if !v.is_empty() {
            parts.push(format!("{name}={}", v.join(",")));
        }
    };
    set("tags", f.intent_tags.clone());
    set("ext", f.file_extensions.clone());
    set("tools", f.tool_names.clone());
    set("dirs", f.file_path_buckets.clone());
    set("effects", f.side_effect_classes.iter().map(|c| c.as_str().to_owned()).collect());
    if let Some(w) = workload {
        parts.push(format!("workload={w}"));
    }
    parts.push(format!("tokens={}", f.estimated_input_tokens_bucket));
    if f.has_images {
        parts.push("images".into());
    }
    parts.join(" ")
}
