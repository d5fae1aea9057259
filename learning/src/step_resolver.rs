//! The step resolver (seed 002 #13): the arguments a planned step leaves
//! to the conversation. "how big is it?" after "count the words in
//! ~/notes.txt" plans a size tool with no path (the offline planner has
//! nothing to take it from) or with `"it"` (a small model copying the
//! request); the path is in the turn before.
//!
//! | # | rule |
//! |---|---|
//! | 1 | a step is **concrete** when every required parameter of its tool has a value that is not a stand-in (`it`, `that`, `questo`, `<file>`, …): it runs as planned — no model, no rule |
//! | 2 | otherwise, with a step-resolver model for the turn (on for a small turn model), the model gets the step, the tool's schema and the earlier calls with the start of their results, and answers one JSON object `{"tool", "args"}` for the same tool, or `null` |
//! | 3 | without one, or when it fails (timeout, error, another tool, no JSON), each unresolved parameter takes the value of the same-named argument of the newest earlier call: this turn's steps first, then the conversation's (tool carryover, [`crate::memory::dialogue`]) |
//! | 4 | what is still missing stays missing: the tool's own error says what it lacks |
//!
//! Offline, a request whose pronoun hides the very words a tool would be
//! matched by ("how big is it?") may match no tool at all; the offline
//! planner then plans it again with the pronoun replaced by the newest
//! earlier call's argument ([`substitute_pronoun`]: "how big is ~/d.txt?").

use engram_events::payloads::{PlanStep, ToolArgs};
use serde_json::Value;

use crate::memory::dialogue::Call;

/// Words of a request that point back at something said before.
const PRONOUNS: &[&str] = &["it", "that", "this", "them", "those", "lo", "la", "questo", "questa", "quello", "quella"];

/// `request` with its first pronoun replaced by the first string argument
/// of the newest of `earlier` (newest first) that has one; `None` when the
/// request has no pronoun or nothing earlier has an argument.
pub fn substitute_pronoun(request: &str, earlier: &[Call]) -> Option<String> {
    let value = earlier
        .iter()
        .find_map(|c| c.args.0.values().find_map(|v| v.as_str().filter(|s| !s.trim().is_empty() && !is_stand_in(v))))?;
    let (i, len) =
        words(request).find(|(_, w)| PRONOUNS.contains(&w.to_lowercase().as_str())).map(|(i, w)| (i, w.len()))?;
    Some(format!("{}{value}{}", &request[..i], &request[i + len..]))
}

/// The words of `text` (runs of letters, digits and apostrophe-free
/// marks) with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out.into_iter()
}

/// Values that stand for something said before rather than being it.
const STAND_INS: &[&str] = &[
    "it",
    "that",
    "this",
    "them",
    "those",
    "the file",
    "that file",
    "this file",
    "the same",
    "same",
    "lo",
    "la",
    "li",
    "quello",
    "quella",
    "questo",
    "questa",
    "esso",
    "stesso",
    "lo stesso",
];

/// Whether `value` stands for an earlier one (rule 1).
fn is_stand_in(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => {
            let t = s.trim().trim_matches(|c: char| c == '"' || c == '\'').trim().to_lowercase();
            t.is_empty() || STAND_INS.contains(&t.as_str()) || (t.starts_with('<') && t.ends_with('>'))
        }
        _ => false,
    }
}

/// The required parameters of `schema` (a tool's JSON schema) that `args`
/// leaves unresolved: absent, or a stand-in (rule 1). Empty: concrete.
pub fn unresolved(args: &ToolArgs, schema: &Value) -> Vec<String> {
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    required
        .iter()
        .filter_map(Value::as_str)
        .filter(|p| args.0.get(*p).is_none_or(is_stand_in))
        .map(str::to_owned)
        .collect()
}

/// Rule 3: fills each of `missing` in `step` from the newest of `earlier`
/// (newest first) that has an argument of that name. Returns the names
/// filled.
pub fn by_rule(step: &mut PlanStep, missing: &[String], earlier: &[Call]) -> Vec<String> {
    let mut filled = Vec::new();
    for param in missing {
        let found = earlier.iter().find_map(|c| c.args.0.get(param).filter(|v| !is_stand_in(v)));
        if let Some(v) = found {
            step.args.0.insert(param.clone(), v.clone());
            filled.push(param.clone());
        }
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> ToolArgs {
        ToolArgs(v.as_object().unwrap().clone())
    }

    fn call(tool: &str, a: Value) -> Call {
        Call { tool: tool.into(), args: args(a), output: Some("ok".into()) }
    }

    #[test]
    fn a_pronoun_is_replaced_by_the_newest_earlier_argument() {
        let earlier = [call("word_count", json!({"path": "~/d.txt"})), call("get_weather", json!({"city": "Oslo"}))];
        assert_eq!(substitute_pronoun("how big is it?", &earlier).as_deref(), Some("how big is ~/d.txt?"));
        assert_eq!(
            substitute_pronoun("quanto è grande questo file", &earlier[1..]).as_deref(),
            Some("quanto è grande Oslo file")
        );
        assert_eq!(substitute_pronoun("how big is a.txt", &earlier), None, "no pronoun");
        assert_eq!(substitute_pronoun("what is it", &[]), None, "nothing earlier");
        assert_eq!(substitute_pronoun("with italics", &earlier), None, "whole words only");
    }

    #[test]
    fn a_step_missing_its_path_takes_the_newest_earlier_one() {
        let schema = json!({"properties": {"path": {}}, "required": ["path"]});
        assert_eq!(unresolved(&args(json!({"path": "~/notes.txt"})), &schema), Vec::<String>::new());
        for stand_in in [json!({}), json!({"path": "it"}), json!({"path": " Questo "}), json!({"path": "<file>"})] {
            assert_eq!(unresolved(&args(stand_in.clone()), &schema), ["path"], "{stand_in}");
        }
        let earlier = [
            call("get_now", json!({})),
            call("read_file", json!({"path": "~/notes.txt"})),
            call("list_dir", json!({"path": "~/old"})),
        ];
        let mut step = PlanStep { tool: "file_info".into(), args: args(json!({"path": "it"})) };
        assert_eq!(by_rule(&mut step, &["path".into()], &earlier), ["path"]);
        assert_eq!(step.args.0["path"], "~/notes.txt", "the newest call that has one");
        let mut nothing = PlanStep { tool: "file_info".into(), args: ToolArgs::default() };
        assert!(by_rule(&mut nothing, &["path".into()], &earlier[..1]).is_empty(), "rule 4: stays missing");
        assert!(nothing.args.0.is_empty());
    }
}
