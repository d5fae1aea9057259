//! The tool router (seed 002 #7) and the tool searcher (#8): a catalogue
//! too big for a prompt — a host that registers 200 tools — is narrowed
//! before the planner sees it, and the reply loop's model can look for
//! more.
//!
//! | # | rule |
//! |---|---|
//! | 1 | a catalogue of at most `[planner] max_tools` (12) tools is not narrowed: every prompt lists it all, no call |
//! | 2 | a bigger one: the router model (`tool_router_model`, else `intent_judge_model`, else `model`; `router_timeout_ms`) picks at most 5 by name, or none; a failure (timeout, error, no known name) falls open to rule 3 — not to "every tool", which is what the budget forbids |
//! | 3 | without a model: the `[planner] max_tools` tools nearest the request in embedding space (the offline planner's own vectors of each tool's description and phrasings) |
//! | 4 | always in: `recall` (memory needs no routing), and a tool that failed in the turn before (the user is probably supplying what it lacked, seed 002's carry-over guard) |
//! | 4b | the picks of rules 2–3 are kept for the conversation (per session, the request normalised; a pause longer than the dialogue window or the session's end clears them): the same request asked again costs no router call; rule 4's additions are made afresh each turn |
//! | 4c | a model whose prompt budget is smaller than what rules 1–3 give (a tiny model: `engram_learning::model_budget`, rule 3) sees the budget's tools: the first of rule 2's picks, else the nearest by rule 3, nearest first (a small model leans to the first tool it is shown); rule 4's added on top |
//! | 5 | the reply loop's model sees what was routed, the plan's tools and `search_tools`; a `search_tools` call (at most 3 per reply) returns the 5 best matches not yet offered, by rule 3's ranking, and offers them from the next model turn on |

use std::sync::Arc;

use engram_events::payloads::LlmCallCompleted;
use serde_json::json;

use crate::catalogue::Catalogue;
use crate::llm::ContextLlm;
use crate::llm::{contexts, ToolSpec};
use crate::tools::memory::RECALL;

/// The tool searcher's name, as the reply loop's model calls it.
pub const SEARCH_TOOLS: &str = "search_tools";
/// Most `search_tools` calls per reply (seed 002: 3).
pub const MAX_SEARCHES: usize = 3;
/// Tools one search returns.
const FOUND: usize = 5;

/// The router over the catalogue, as it is at each call.
#[derive(Clone)]
pub struct ToolRouter {
    catalogue: Arc<Catalogue>,
    max: usize,
    llm: Option<ContextLlm>,
}

impl ToolRouter {
    /// Narrows `catalogue` to `max` tools (rule 1), asking `llm` when given
    /// (rule 2), else ranking with the offline planner's vectors (rule 3).
    pub fn new(catalogue: Arc<Catalogue>, max: usize, llm: Option<ContextLlm>) -> ToolRouter {
        ToolRouter { catalogue, max: max.max(1), llm }
    }

    /// Whether the catalogue is too big for a prompt (rule 1).
    pub fn narrows(&self) -> bool {
        self.catalogue.view().tools.len() > self.max
    }

    /// The tools a prompt may list (`[planner] max_tools`).
    pub fn max_tools(&self) -> usize {
        self.max
    }

    /// Whether a prompt of at most `budget` tools must be narrowed (rules
    /// 1 and 4c).
    pub fn narrows_to(&self, budget: usize) -> bool {
        self.catalogue.view().tools.len() > budget.min(self.max)
    }

    /// The version of the catalogue the router sees now: picks cached for
    /// another version are stale (an MCP server's tools changed).
    pub fn version(&self) -> u64 {
        self.catalogue.view().version
    }

    /// The tools for `query`, with `also` (rule 4) — every tool when the
    /// catalogue is small — and the router call's record, if one was made.
    pub fn route(&self, query: &str, also: &[String]) -> (Vec<String>, Option<LlmCallCompleted>) {
        if !self.narrows() {
            return (self.catalogue.view().tools.iter().map(|t| t.0.clone()).collect(), None);
        }
        let (picked, record) = self.pick(query);
        (self.with_kept(picked, also), record)
    }

    /// Rules 2 and 3 alone: what the router model (or the ranking) picks
    /// for `query` — what a conversation may cache, since rule 4's
    /// additions change from turn to turn.
    pub fn pick(&self, query: &str) -> (Vec<String>, Option<LlmCallCompleted>) {
        match &self.llm {
            Some(llm) => {
                let view = self.catalogue.view();
                let listed: Vec<(String, String)> = view.tools.iter().map(|t| (t.0.clone(), t.1.clone())).collect();
                let names: Vec<&str> = view.tools.iter().map(|t| t.0.as_str()).collect();
                let (call, parsed) =
                    llm.ask(contexts::router_messages(query, &listed), |t| contexts::parse_router(t, &names));
                let picked = parsed.unwrap_or_else(|e| {
                    tracing::warn!(model = %llm.model, "tool router failed open to the embedding ranking: {e}");
                    self.nearest(query, self.max)
                });
                (picked, Some(call))
            }
            None => (self.nearest(query, self.max), None),
        }
    }

    /// `picked` with rule 4's tools: `recall` and `also`.
    pub fn with_kept(&self, mut picked: Vec<String>, also: &[String]) -> Vec<String> {
        let view = self.catalogue.view();
        for name in also.iter().map(String::as_str).chain([RECALL]) {
            if view.has(name) && !picked.iter().any(|p| p == name) {
                picked.push(name.to_owned());
            }
        }
        picked
    }

    /// The `n` tools nearest `query`, nearest first (rules 3 and 4c); none
    /// when embedding fails.
    pub fn nearest(&self, query: &str, n: usize) -> Vec<String> {
        match self.catalogue.view().offline.rank(query) {
            Ok(ranked) => ranked.into_iter().take(n).map(|(name, _)| name).collect(),
            Err(e) => {
                tracing::warn!("tool router: ranking failed ({e}); no tool offered");
                Vec::new()
            }
        }
    }

    /// `search_tools` (#8): the best matches of `query` not in `known`, as
    /// `(name, description)`.
    pub fn search(&self, query: &str, known: &[String]) -> Vec<(String, String)> {
        let view = self.catalogue.view();
        self.nearest(query, view.tools.len())
            .into_iter()
            .filter(|n| !known.contains(n))
            .take(FOUND)
            .filter_map(|n| view.tools.iter().find(|t| t.0 == n).map(|t| (t.0.clone(), t.1.clone())))
            .collect()
    }

    /// The specs of `names` for a model request, catalogue order, with
    /// `search_tools` when the catalogue was narrowed.
    pub fn specs(&self, names: &[String]) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = crate::llm::context_llm::llm_specs(&self.catalogue.view().tools)
            .into_iter()
            .filter(|s| names.contains(&s.name))
            .collect();
        if self.narrows() {
            specs.push(search_spec());
        }
        specs
    }
}

/// The spec of `search_tools`.
fn search_spec() -> ToolSpec {
    ToolSpec {
        name: SEARCH_TOOLS.to_owned(),
        description: "find more tools: describe what you need a tool for; the best matches become available".to_owned(),
        parameters: json!({
            "type": "object",
            "properties": { "query": { "type": "string", "description": "what the tool should do" } },
            "required": ["query"],
            "additionalProperties": false
        }),
    }
}
