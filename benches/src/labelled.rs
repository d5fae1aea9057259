//! The labelled sets, scored per language with a real embedding model:
//!
//! * `tests/fixtures/fast_path/pairs.jsonl` — hard negatives and paraphrases
//!   (English, Italian and across the two): every candidate is learnt as an
//!   L1 row (three uses), every request routed; a hard negative that is
//!   served is a **wrong replay**, a paraphrase served by L1 with its
//!   candidate's tool is recall;
//! * `tests/fixtures/offline_planner/requests.jsonl` — natural requests
//!   labelled with the built-in they need, or none: the offline planner's
//!   tool choice.
//!
//! One implementation for `engram bench fast-path` (which prints these
//! beside the latencies, per model) and for the tests that hold the floors
//! (`tests/labelled.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use engram::actors::embedder::Embedder;
use engram::actors::fast_path_service::FastPathService;
use engram::actors::offline_planner::OfflinePlanner;
use engram::actors::tools::{BuiltinConfig, ToolRegistry};
use engram::events::payloads::{PlanStep, RouteLayer, ToolArgs};
use engram::learning::config::Config;

/// The fast path's labelled pairs (JSON Lines: lang, same, candidate, tool,
/// args, request).
pub const PAIRS: &str = include_str!("../../tests/fixtures/fast_path/pairs.jsonl");
/// The offline planner's labelled requests (JSON Lines: lang, text, tool).
pub const REQUESTS: &str = include_str!("../../tests/fixtures/offline_planner/requests.jsonl");

/// The instant the sets are routed at (dates in them resolve against it).
pub fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").expect("a valid instant")
}

/// One language's figures on the pairs.
#[derive(serde::Serialize, Debug, Clone, Default, PartialEq)]
pub struct PairScore {
    /// `en`, `it`, or `x` (candidate in one language, request in the other).
    pub lang: String,
    /// Hard negatives routed.
    pub hard_negatives: usize,
    /// Of them, served by the fast path: must be 0.
    pub wrong_replays: usize,
    /// Paraphrases routed.
    pub paraphrases: usize,
    /// Of them, served by L1 with the candidate's tool.
    pub served: usize,
    /// What went wrong, for a failing test's message.
    #[serde(skip)]
    pub misses: Vec<String>,
}

/// One language's figures on the planner's requests.
#[derive(serde::Serialize, Debug, Clone, Default, PartialEq)]
pub struct ChoiceScore {
    /// `en`, `it` or `mixed`.
    pub lang: String,
    /// Requests planned.
    pub requests: usize,
    /// Of them, planned with the labelled tool (or with none, when none).
    pub right: usize,
    /// What went wrong, for a failing test's message.
    #[serde(skip)]
    pub misses: Vec<String>,
}

fn rows(text: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| Ok(serde_json::from_str(l)?)).collect()
}

fn field<'a>(row: &'a serde_json::Value, key: &str) -> anyhow::Result<&'a str> {
    row[key].as_str().ok_or_else(|| anyhow::anyhow!("a labelled row without {key}: {row}"))
}

/// The pairs through a fast path that learnt every candidate, per language.
pub fn pairs(embedder: Arc<dyn Embedder>) -> anyhow::Result<Vec<PairScore>> {
    let rows = rows(PAIRS)?;
    let mut candidates: Vec<(String, Vec<PlanStep>)> = Vec::new();
    for r in &rows {
        let c = field(r, "candidate")?.to_owned();
        if !candidates.iter().any(|(t, _)| *t == c) {
            let args = ToolArgs::from_json(&serde_json::to_string(&r["args"])?)?;
            candidates.push((c, vec![PlanStep { tool: field(r, "tool")?.to_owned(), args }]));
        }
    }
    let config = Config::default();
    let (canonical, pipelines) = engram::learning::reactors::fast_path::learn(
        &candidates,
        3,
        config.multi_tool_fast_path.clone(),
        FixedOffset::east_opt(3600).expect("an offset"),
    );
    let fast_path = FastPathService::build(&config, &canonical, &pipelines, embedder, None)?;
    let mut by_lang: BTreeMap<String, PairScore> = BTreeMap::new();
    for r in &rows {
        let (lang, request) = (field(r, "lang")?, field(r, "request")?);
        let score =
            by_lang.entry(lang.to_owned()).or_insert_with(|| PairScore { lang: lang.into(), ..Default::default() });
        let d = fast_path.route(request, now())?;
        if r["same"] == false {
            score.hard_negatives += 1;
            if d.layer != RouteLayer::Planner {
                score.wrong_replays += 1;
                score.misses.push(format!("{request:?} replayed {:?} ({:?})", d.matched, d.similarity));
            }
        } else {
            score.paraphrases += 1;
            if d.layer == RouteLayer::L1 && d.steps.first().map(|s| s.tool.as_str()) == Some(field(r, "tool")?) {
                score.served += 1;
            } else {
                score.misses.push(format!("{request:?}: {:?} {:?} ({:?})", d.layer, d.matched, d.similarity));
            }
        }
    }
    Ok(by_lang.into_values().collect())
}

/// The offline planner's tool choice on the labelled requests, per language.
pub fn choices(embedder: Arc<dyn Embedder>) -> anyhow::Result<Vec<ChoiceScore>> {
    let planner = OfflinePlanner::new(embedder, &ToolRegistry::with_builtins(BuiltinConfig::default()).specs())?;
    let mut by_lang: BTreeMap<String, ChoiceScore> = BTreeMap::new();
    for r in rows(REQUESTS)? {
        let (lang, text) = (field(&r, "lang")?, field(&r, "text")?);
        let want = r["tool"].as_str();
        let got = planner.plan(text, now())?.first().map(|s| s.tool.clone());
        let score =
            by_lang.entry(lang.to_owned()).or_insert_with(|| ChoiceScore { lang: lang.into(), ..Default::default() });
        score.requests += 1;
        if got.as_deref() == want {
            score.right += 1;
        } else {
            score.misses.push(format!("{text:?}: {got:?}, expected {want:?}"));
        }
    }
    Ok(by_lang.into_values().collect())
}
