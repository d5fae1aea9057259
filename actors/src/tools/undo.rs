//! `undo` and the per-session undo stacks.
//!
//! A tool with side effects returns an [`UndoAction`] with its output;
//! [`ToolRegistry::call`](super::ToolRegistry::call) pushes it on the
//! calling session's stack and `undo` pops and runs the newest one. Stacks
//! are per session so that "undo" in one conversation never reverts what
//! another one did, and bounded ([`UndoStack::DEPTH`]) so a long session
//! cannot grow one without limit: the oldest action falls off.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use engram_events::payloads::{SideEffectClass, ToolArgs};
use engram_events::SessionId;
use serde_json::json;

use super::{args, Tool, ToolContext, ToolError, ToolOutput, UndoAction};

type Entries = HashMap<SessionId, Vec<(String, UndoAction)>>;

/// The undo actions of every session, newest last. Cloning shares the
/// stacks (the registry and its `undo` tool hold the same ones).
#[derive(Clone, Default)]
pub struct UndoStack {
    inner: Arc<Mutex<Entries>>,
}

impl std::fmt::Debug for UndoStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sessions: HashMap<String, usize> =
            self.lock().iter().map(|(s, v)| (s.as_str().to_owned(), v.len())).collect();
        f.debug_struct("UndoStack").field("depths", &sessions).finish()
    }
}

impl UndoStack {
    /// Actions kept per session; pushing one more drops the oldest.
    pub const DEPTH: usize = 32;

    fn lock(&self) -> MutexGuard<'_, Entries> {
        // An action panicking elsewhere must not disable undo for everyone.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Pushes `tool`'s undo `action` on `session`'s stack.
    pub fn push(&self, session: &SessionId, tool: &str, action: UndoAction) {
        let mut all = self.lock();
        let stack = all.entry(session.clone()).or_default();
        if stack.len() == Self::DEPTH {
            let (dropped, _) = stack.remove(0);
            tracing::debug!(%session, tool = %dropped, "undo stack full: the oldest action is dropped");
        }
        stack.push((tool.to_owned(), action));
    }

    /// Takes `session`'s newest action and the tool that left it.
    pub fn pop(&self, session: &SessionId) -> Option<(String, UndoAction)> {
        let mut all = self.lock();
        let stack = all.get_mut(session)?;
        let top = stack.pop();
        if stack.is_empty() {
            all.remove(session);
        }
        top
    }

    /// How many actions `session` can undo.
    pub fn depth(&self, session: &SessionId) -> usize {
        self.lock().get(session).map_or(0, Vec::len)
    }

    /// Forgets `session`'s actions (when it ends).
    pub fn clear(&self, session: &SessionId) {
        self.lock().remove(session);
    }
}

/// `undo`: reverts the session's last undoable action. With nothing to
/// undo it says so (not an error: "undo" is a fine thing to ask for).
#[derive(Clone, Debug, Default)]
pub struct Undo {
    stack: UndoStack,
}

impl Undo {
    /// An `undo` popping from `stack` (pass the registry's
    /// [`undo_stack`](super::ToolRegistry::undo_stack)).
    pub fn new(stack: UndoStack) -> Self {
        Undo { stack }
    }
}

impl Tool for Undo {
    fn name(&self) -> &str {
        "undo"
    }

    fn description(&self) -> &str {
        "undo that: revert the last action the assistant took in this conversation"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({ "type": "object", "properties": {}, "additionalProperties": false })
    }

    /// Read: `undo` itself changes nothing the user did not ask to revert,
    /// and the actions it runs were classed when their tools were called.
    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        args::only(args, self.name(), &[])?;
        // The lock is released before the action runs: an action may call tools.
        let Some((tool, action)) = self.stack.pop(&ctx.session) else {
            return Ok(ToolOutput::trusted("Nothing to undo."));
        };
        let said = action().map_err(|e| ToolError::Failed(format!("undo of {tool} failed: {e}")))?;
        Ok(ToolOutput::trusted(format!("Undid {tool}: {said}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(text: &'static str) -> UndoAction {
        Box::new(move || Ok(text.to_owned()))
    }

    #[test]
    fn stacks_are_per_session_newest_first_and_bounded() {
        let stack = UndoStack::default();
        let (a, b) = (SessionId::new("a"), SessionId::new("b"));
        for i in 0..UndoStack::DEPTH + 3 {
            stack.push(&a, &format!("t{i}"), action("x"));
        }
        stack.push(&b, "only", action("y"));
        assert_eq!(stack.depth(&a), UndoStack::DEPTH);
        assert_eq!(stack.pop(&a).unwrap().0, format!("t{}", UndoStack::DEPTH + 2));
        assert_eq!(stack.depth(&b), 1);
        stack.clear(&a);
        assert_eq!(stack.depth(&a), 0);
        assert!(stack.pop(&a).is_none());
        let (tool, run) = stack.pop(&b).unwrap();
        assert_eq!((tool.as_str(), run().unwrap().as_str()), ("only", "y"));
    }

    #[test]
    fn a_failing_action_is_reported_and_consumed() {
        let stack = UndoStack::default();
        let s = SessionId::new("s");
        stack.push(&s, "write_file", Box::new(|| Err(ToolError::Failed("disk full".into()))));
        let undo = Undo::new(stack.clone());
        let ctx = ToolContext::new(s, chrono::DateTime::parse_from_rfc3339("2026-11-23T10:00:00Z").unwrap());
        let e = undo.call(&ToolArgs::default(), &ctx).unwrap_err().to_string();
        assert!(e.contains("undo of write_file failed") && e.contains("disk full"), "{e}");
        assert_eq!(undo.call(&ToolArgs::default(), &ctx).unwrap().text, "Nothing to undo.");
    }
}
