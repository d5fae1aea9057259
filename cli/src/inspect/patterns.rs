//! `engram inspect patterns`: the pattern store (the `pattern_outcomes`
//! projection), seen two ways — its outcomes, one row per (fingerprint,
//! model) with samples, success, cost and latency; or, with `--clusters`,
//! per fingerprint what the store would recommend for a turn of that shape,
//! so a routing choice can be checked against the evidence behind it.

use std::path::Path;

use engram::events::payloads::StructuralFeatures;
use engram::learning::projections::PatternOutcomes;
use engram::local_state::projector::Projector;
use serde_json::json;

use super::PatternOpts;
use crate::output;

/// Prints, per fingerprint in the order first seen, the recommendation a
/// route-time query of its shape gets under the `[pattern]` config of
/// `data`: the model chosen (or why none) and each model's evidence.
pub(super) fn print_clusters(data: &Path, projector: &Projector, opts: &PatternOpts) -> anyhow::Result<()> {
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
        output::print_line(&format!(
            "{} {} [{}]: {} rows in the cluster; {why}",
            id,
            row.kind.as_str(),
            describe(&row.features, row.workload.as_deref()),
            rec.k_cluster_size
        ));
        for m in &rec.alternatives {
            output::print_line(&format!(
                "    {:<24} samples {:>5}  success {:.3}  cost ${:.6}  score {:.3}",
                m.model, m.sample_size, m.success_score_mean, m.avg_cost_usd, m.score
            ));
        }
    }
    Ok(())
}

/// Prints the store's outcomes: a header, a line per (fingerprint, model)
/// and the store's counts, or a JSON object per outcome.
pub(super) fn print_outcomes(projector: &Projector, opts: &PatternOpts) -> anyhow::Result<()> {
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
            output::print_line(&format!(
                "{:<26} {:<24} {:>7} {:>7} {:>12} {:>7.0}ms  {}",
                id.to_string(),
                model,
                o.sample_size,
                o.success_mean().map(|m| format!("{m:.3}")).unwrap_or_else(|| "-".into()),
                format!("${:.6}", o.avg_cost_usd()),
                o.latency_mean_ms,
                features
            ));
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
    Ok(())
}

/// A one-line summary of a fingerprint's features.
fn describe(f: &StructuralFeatures, workload: Option<&str>) -> String {
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
