//! `engram route TEXT`

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use engram::actors::fast_path_service::FastPathService;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::events::chrono::{DateTime, FixedOffset, Local};
use engram::learning::fast_path::{Decision, L0Table};
use engram::learning::projections::{self, CanonicalQueries, Pipelines};
use engram::local_state::embedding_cache::{CacheCaps, EmbeddingCache};
use engram::local_state::projector::Projector;
use serde_json::json;

use crate::output;

/// Show what the fast path would do with a request: L0, L1, L2, or the
/// planner — and why.
///
/// L0 needs nothing; L1 and L2 embed the request with the local model
/// (installed by scripts/fetch-models.sh) and compare it with the canonical
/// requests learned from the log. Nothing is written but the embedding cache.
#[derive(clap::Args)]
pub struct Args {
    /// The request, as the user said it
    text: String,
    /// Print {"layer","steps","similarity","matched","reason"}
    #[arg(long)]
    json: bool,
    /// Also show the canonical form and every candidate examined
    #[arg(long)]
    explain: bool,
    /// When the request is said (RFC 3339; default: now, local time) —
    /// relative dates ("tomorrow") resolve against it
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(data)?;
    let now: DateTime<FixedOffset> = match &args.at {
        Some(t) => DateTime::parse_from_rfc3339(t).with_context(|| format!("--at {t:?}: not an RFC 3339 time"))?,
        None => Local::now().fixed_offset(),
    };
    // L0 needs neither the log nor the model.
    let l0 = L0Table::from_config(&config.fast_path);
    let decision = if let Some(d) = Decision::from_l0(&l0, &args.text) {
        d
    } else if !data.join("log.sled").is_dir() {
        Decision::planner("nothing learned yet (no data dir)".into(), None)
    } else {
        let log = crate::open_for_reading(data)?;
        let projector = Projector::open(&log, projections::all(), |_, _| {})?;
        let canonical = projector.get::<CanonicalQueries>("canonical_queries").cloned().unwrap_or_default();
        let pipelines = projector.get::<Pipelines>("pipelines").cloned().unwrap_or_default();
        let embedder = Arc::new(OnnxEmbedder::open(&config.embedder)?);
        let cache = EmbeddingCache::open(log.local_db(), CacheCaps::default())?;
        let service = FastPathService::build(
            (&config.fast_path, &config.multi_tool_fast_path),
            &canonical,
            &pipelines,
            embedder,
            Some(cache),
        )?;
        service.route(&args.text, now)?
    };
    print(&decision, &args)?;
    Ok(ExitCode::SUCCESS)
}

fn print(d: &Decision, args: &Args) -> anyhow::Result<()> {
    let layer = if d.layer == engram::events::payloads::RouteLayer::Planner { "planner" } else { d.layer.as_str() };
    if args.json {
        let mut v = json!({
            "layer": layer,
            "steps": d.steps,
            "similarity": d.similarity,
            "matched": d.matched,
            "reason": d.reason,
        });
        if d.residual.is_some() {
            v["residual"] = json!(d.residual);
        }
        if args.explain {
            v["canonical"] = json!(d.canonical);
            v["trace"] = json!(d.trace);
        }
        output::print_json(&v)?;
        return Ok(());
    }
    let prefix = format!("{layer}: ");
    println!("{layer}: {}", d.reason.strip_prefix(&prefix).unwrap_or(&d.reason));
    for (i, s) in d.steps.iter().enumerate() {
        println!("  {}. {} {}", i + 1, s.tool, s.args.to_json());
    }
    if let Some(r) = &d.residual {
        println!("  then the planner: {r:?}");
    }
    if args.explain {
        if !d.canonical.is_empty() {
            println!("canonical: {:?}", d.canonical);
        }
        for t in &d.trace {
            println!("  considered: {t}");
        }
    }
    Ok(())
}
