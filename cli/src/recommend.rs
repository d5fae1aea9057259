//! `engram recommend`

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use engram::events::payloads::StructuralFeatures;
use engram::learning::patterns::{Fingerprint, PatternConfig, Recommendation};
use engram::learning::projections::{self, PatternOutcomes};
use engram::local_state::projector::Projector;
use serde_json::json;

use crate::output;

/// Ask the pattern store which model to route a turn to.
///
/// The turn is described by its structural features (seed 001
/// `StructuralFeatures`); fields left out default to empty, false or 0.
/// A data dir with no patterns, or one that cannot be read, recommends
/// nothing (exit 0) — the router then falls through to its next policy.
#[derive(clap::Args)]
pub struct Args {
    /// The features as a JSON object, or `-` to read it from stdin, e.g.
    /// '{"intent_tags":["debug"],"file_extensions":[".py"],"tool_names":["read_file"]}'
    #[arg(long, value_name = "JSON|-")]
    features: String,
    /// Workload tag (a near-keyed partition of the neighbours)
    #[arg(long, value_name = "ID")]
    workload: Option<String>,
    /// Neighbours to aggregate, counted in outcome rows
    #[arg(long, default_value_t = PatternConfig::default().k)]
    k: usize,
    /// Weight of cost efficiency against success (0..1)
    #[arg(long, default_value_t = PatternConfig::default().cost_weight)]
    cost_weight: f64,
    /// Smallest confidence gap that recommends
    #[arg(long, default_value_t = PatternConfig::default().min_confidence)]
    min_confidence: f64,
    /// Smallest sample size behind the winner that recommends
    #[arg(long, default_value_t = PatternConfig::default().min_sample_size)]
    min_sample_size: u64,
    /// Print {"chosen_model":..,"confidence":..,"sample_size":..,"alternatives":[..],"elapsed_ms":..}
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let text = if args.features == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("reading features from stdin")?;
        s
    } else {
        args.features.clone()
    };
    let features: StructuralFeatures = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
        .map_err(|e| {
            let path = e.path().to_string();
            anyhow::anyhow!("--features: {}: {}", if path == "." { "(object)".into() } else { path }, e.into_inner())
        })?;
    let fp = Fingerprint::structural(features).with_workload(args.workload.clone());
    let cfg = PatternConfig {
        k: args.k,
        cost_weight: args.cost_weight,
        min_confidence: args.min_confidence,
        min_sample_size: args.min_sample_size,
        ..PatternConfig::default()
    };
    let rec = match store(data) {
        Ok(Some(store)) => store.recommend(&fp, &cfg),
        Ok(None) => Recommendation::empty(),
        Err(e) => {
            // Never fail a turn over the pattern store: warn, recommend nothing.
            tracing::warn!("pattern store unavailable, recommending nothing: {e:#}");
            Recommendation::empty()
        }
    };
    if args.json {
        output::print_json(&json!({
            "chosen_model": rec.chosen_model,
            "confidence": rec.confidence,
            "sample_size": rec.sample_size,
            "alternatives": rec.alternatives,
            "k_cluster_size": rec.k_cluster_size,
            "elapsed_ms": rec.elapsed_ms,
        }))?;
    } else {
        match &rec.chosen_model {
            Some(m) => println!("{m}  (confidence {:.3}, {} samples)", rec.confidence, rec.sample_size),
            None if rec.alternatives.is_empty() => println!("no recommendation: no similar turns recorded"),
            None => println!(
                "no recommendation: confidence {:.3} (min {}), {} samples (min {})",
                rec.confidence, cfg.min_confidence, rec.sample_size, cfg.min_sample_size
            ),
        }
        for a in &rec.alternatives {
            println!(
                "  {:<28} score {:.3}  success {:.3}  samples {:>4}  avg cost ${}",
                a.model,
                a.score,
                a.success_score_mean,
                a.sample_size,
                a.avg_cost_usd.round_dp(6)
            );
        }
        println!("  ({} neighbours, {:.3} ms)", rec.k_cluster_size, rec.elapsed_ms);
    }
    Ok(ExitCode::SUCCESS)
}

/// The pattern store of `data`, `None` when nothing was ever stored there.
fn store(data: &Path) -> anyhow::Result<Option<PatternOutcomes>> {
    if !data.join("log.sled").is_dir() {
        return Ok(None);
    }
    let log = crate::open_for_reading(data)?;
    let projector = Projector::open(&log, projections::all(), |_, _| {})?;
    Ok(projector.get::<PatternOutcomes>("pattern_outcomes").cloned())
}
