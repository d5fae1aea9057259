//! `recall`: what earlier sessions taught about the user, as a tool — so
//! that without a model the offline planner can still answer "what is my
//! name?" or "where do I live?" from the knowledge graph (seed 002's
//! memory, offline). The reply loop hands the turn's USER facts in the
//! [`ToolContext`]; the tool reads nothing else.

use engram_events::payloads::{SideEffectClass, ToolArgs};
use serde_json::json;

use super::{args, Tool, ToolContext, ToolError, ToolOutput};

/// `recall`: the user's facts from earlier sessions.
#[derive(Clone, Debug, Default)]
pub struct Recall;

impl Tool for Recall {
    fn name(&self) -> &str {
        "recall"
    }

    fn description(&self) -> &str {
        "what you remember about me from earlier conversations: my name, where I live, what I told you"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args::only(args, self.name(), &[])?;
        if ctx.memory.is_empty() {
            return Ok(ToolOutput::trusted("I don't remember anything about you yet: tell me, and I will."));
        }
        // The user's own words, but data all the same: an LLM sees them
        // fenced.
        Ok(ToolOutput::untrusted(ctx.memory.join("\n")))
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
    }
}
