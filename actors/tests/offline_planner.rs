//! The offline planner's tool choice on natural requests (EN, IT, mixed),
//! with the real embedding models: `tests/fixtures/offline_planner/`.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use engram_actors::embedder::{EmbedderConfig, OnnxEmbedder};
use engram_actors::offline_planner::OfflinePlanner;
use engram_actors::tools::{BuiltinConfig, ToolRegistry};
use engram_learning::embedding_model::EmbeddingModel;

const REQUESTS: &str = include_str!("../../tests/fixtures/offline_planner/requests.jsonl");

fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap()
}

#[test]
fn sweep() {
    let registry = ToolRegistry::with_builtins(BuiltinConfig::default());
    let tools = registry.specs();
    for model in EmbeddingModel::ALL {
        let e = Arc::new(OnnxEmbedder::open(&EmbedderConfig::default().with_model(model)).unwrap());
        for t in [0.2f32, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6] {
            let p = OfflinePlanner::new(e.clone(), &tools).unwrap().with_threshold(t);
            let (mut right, mut n) = (0, 0);
            let mut wrong = Vec::new();
            for line in REQUESTS.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let text = v["text"].as_str().unwrap();
                let want = v["tool"].as_str();
                let plan = p.plan(text, now()).unwrap();
                let got = plan.first().map(|s| s.tool.as_str());
                n += 1;
                if got == want {
                    right += 1;
                } else {
                    wrong.push(format!("{text} -> {got:?}"));
                }
            }
            eprintln!("{model} t={t}: {right}/{n}  {wrong:?}");
        }
    }
}
