//! The tool router (seed 002 #7) and the tool searcher (#8): a catalogue
//! too big for a prompt — a host that registers 200 tools — is narrowed
//! before the planner sees it, and the reply loop's model can look for
//! more.
//!
//! The rules (which tools, how many, what is always in, what a search
//! finds) are [`engram_learning::tool_narrowing`]'s; this module holds the
//! catalogue, asks the router model (rule 2) and the offline planner's
//! ranking (rule 3), and writes `search_tools`' spec for the model.

use std::sync::Arc;

use engram_events::payloads::LlmCallCompleted;
use serde_json::json;

use crate::catalogue::Catalogue;
use crate::llm::ContextLlm;
use crate::llm::{contexts, ToolSpec};
use engram_learning::tool_narrowing::{self, Narrowing};

/// The tool searcher's name, as the reply loop's model calls it.
pub const SEARCH_TOOLS: &str = "search_tools";

/// The router over the catalogue, as it is at each call.
#[derive(Clone)]
pub struct ToolRouter {
    catalogue: Arc<Catalogue>,
    narrowing: Narrowing,
    llm: Option<ContextLlm>,
}

impl ToolRouter {
    /// Narrows `catalogue` to `max` tools (rule 1), asking `llm` when given
    /// (rule 2), else ranking with the offline planner's vectors (rule 3).
    pub fn new(catalogue: Arc<Catalogue>, max: usize, llm: Option<ContextLlm>) -> ToolRouter {
        ToolRouter { catalogue, narrowing: Narrowing::new(max), llm }
    }

    /// Whether the catalogue is too big for a prompt (rule 1).
    pub fn narrows(&self) -> bool {
        self.narrowing.narrows(self.catalogue.view().tools.len())
    }

    /// The tools a prompt may list (`[planner] max_tools`).
    pub fn max_tools(&self) -> usize {
        self.narrowing.max_tools()
    }

    /// Whether a prompt of at most `budget` tools must be narrowed (rules
    /// 1 and 4c).
    pub fn narrows_to(&self, budget: usize) -> bool {
        self.narrowing.narrows_to(self.catalogue.view().tools.len(), budget)
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
        let nearest = |n| self.nearest(query, n);
        let Some(llm) = &self.llm else { return (self.narrowing.picks::<String>(None, nearest), None) };
        let view = self.catalogue.view();
        let listed: Vec<(String, String)> = view.tools.iter().map(|t| (t.0.clone(), t.1.clone())).collect();
        let names: Vec<&str> = view.tools.iter().map(|t| t.0.as_str()).collect();
        let (call, parsed) = llm.ask(contexts::router_messages(query, &listed), |t| contexts::parse_router(t, &names));
        let parsed = parsed.map_err(|e| format!("{e} (model {})", llm.model));
        (self.narrowing.picks(Some(parsed), nearest), Some(call))
    }

    /// `picked` with rule 4's tools: `recall` and `also`.
    pub fn with_kept(&self, picked: Vec<String>, also: &[String]) -> Vec<String> {
        let view = self.catalogue.view();
        tool_narrowing::with_kept(picked, also, |name| view.has(name))
    }

    /// The first `budget` of `picked` with rule 4's tools (rule 4c).
    pub fn offered(&self, picked: Vec<String>, budget: usize, also: &[String]) -> Vec<String> {
        let view = self.catalogue.view();
        self.narrowing.offered(picked, budget, also, |name| view.has(name))
    }

    /// The `n` tools nearest `query`, nearest first (rules 3 and 4c); none
    /// when embedding fails.
    pub fn nearest(&self, query: &str, n: usize) -> Vec<String> {
        match self.catalogue.view().offline.rank(query) {
            Ok(ranked) => tool_narrowing::nearest(ranked, n),
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
        tool_narrowing::found(self.nearest(query, view.tools.len()), known)
            .into_iter()
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
