//! `recall`: what earlier sessions taught about the user, as a tool — so
//! that without a model the offline planner can still answer "what is my
//! name?" or "where do I live?" from the knowledge graph (seed 002's
//! memory, offline) — and "what did we talk about yesterday?" from the
//! diary. The reply loop hands the turn's USER facts and what the request
//! recalled from the diary in the [`ToolContext`]; the tool reads nothing
//! else.

use engram_events::payloads::{SideEffectClass, ToolArgs};
use serde_json::json;

use super::{args, Tool, ToolContext, ToolError, ToolOutput};

/// The `recall` tool's name (the reply loop recalls the diary for a plan
/// that calls it; the offline planner sends memory questions to it).
pub use engram_learning::offline_planner::RECALL;

/// `recall`: the user's facts from earlier sessions.
#[derive(Clone, Debug, Default)]
pub struct Recall;

impl Tool for Recall {
    fn name(&self) -> &str {
        RECALL
    }

    fn description(&self) -> &str {
        "what you remember about me from earlier conversations: my name, where I live, what I told you, what we talked about yesterday or last week"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args::only(args, self.name(), &[])?;
        if ctx.memory.is_empty() && ctx.recollection.is_empty() {
            return Ok(ToolOutput::trusted("I don't remember anything about you yet: tell me, and I will."));
        }
        // The user's own words, but data all the same: an LLM sees them
        // fenced.
        let mut lines = ctx.memory.clone();
        if !ctx.recollection.is_empty() {
            lines.push("From earlier conversations:".to_owned());
            lines.extend(ctx.recollection.iter().cloned());
        }
        Ok(ToolOutput::untrusted(lines.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::SessionId;

    #[test]
    fn recall_answers_from_the_context_and_says_when_it_knows_nothing() {
        let now = chrono::Utc::now().fixed_offset();
        let empty = ToolContext::new(SessionId::new("s"), now);
        assert!(Recall.call(&ToolArgs::default(), &empty).unwrap().text.contains("don't remember"));
        let known = ToolContext::new(SessionId::new("s"), now).with_memory(vec!["my name is Ada".into()]);
        let out = Recall.call(&ToolArgs::default(), &known).unwrap();
        assert_eq!(out.text, "my name is Ada");
        assert!(out.untrusted);
        let diary = ToolContext::new(SessionId::new("s"), now)
            .with_recollection(vec!["2026-11-23: dinner at Da Mario with Luca".into()]);
        let out = Recall.call(&ToolArgs::default(), &diary).unwrap();
        assert_eq!(out.text, "From earlier conversations:\n2026-11-23: dinner at Da Mario with Luca");
    }
}
