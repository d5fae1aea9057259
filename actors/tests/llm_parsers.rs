//! A model's reply is untrusted input: every LLM-context parser and the
//! text tool-call parser, fed arbitrary text and JSON-shaped text, returns
//! an error or a value within its contract — never a panic. (The same
//! properties as the `llm_replies` fuzz target, on the stable toolchain.)

use engram_actors::llm::contexts::{self, MAX_PLAN_STEPS, MAX_TOPICS};
use engram_actors::llm::text_tools::parse_tool_blocks;
use proptest::prelude::*;

const TOOLS: &[&str] = &["get_now", "read_file", "list_dir"];

fn check(text: &str) {
    if let Ok(steps) = contexts::parse_plan(text, TOOLS) {
        assert!(steps.len() <= MAX_PLAN_STEPS);
        assert!(steps.iter().all(|s| TOOLS.contains(&s.tool.as_str())), "{steps:?}");
    }
    if let Ok(j) = contexts::parse_intent(text) {
        assert!((0.0..=1.0).contains(&j.confidence), "{j:?}");
    }
    if let Ok((score, confidence)) = contexts::parse_verdict(text) {
        assert!((0.0..=1.0).contains(&score) && (0.0..=1.0).contains(&confidence));
    }
    if let Ok((summary, topics)) = contexts::parse_summary(text) {
        assert!(!summary.is_empty() && topics.len() <= MAX_TOPICS);
    }
    let _ = contexts::parse_facts(text);
    let _ = parse_tool_blocks(text);
}

/// JSON-ish replies: the shapes the parsers look for, with arbitrary values.
fn jsonish() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        "[a-z_]{0,12}".prop_map(|s| format!("{s:?}")),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
    ];
    let key = prop_oneof![
        Just("tool"),
        Just("args"),
        Just("score"),
        Just("confidence"),
        Just("directed"),
        Just("query"),
        Just("stop"),
        Just("summary"),
        Just("topics"),
        Just("branch"),
        Just("fact"),
        Just("facts"),
    ];
    let object = prop::collection::vec((key, value), 0..6).prop_map(|kv| {
        let body: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
        format!("{{{}}}", body.join(", "))
    });
    let array = prop::collection::vec(object.clone(), 0..8).prop_map(|o| format!("[{}]", o.join(", ")));
    prop_oneof![object, array].prop_flat_map(|j| {
        prop_oneof![
            Just(j.clone()),
            Just(format!("```json\n{j}\n```")),
            Just(format!("Sure! Here it is: {j} Hope it helps.")),
            Just(format!("```tool_call\n{j}\n```")),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,300}") {
        check(&text);
    }

    #[test]
    fn json_shaped_replies_keep_each_contract(text in jsonish()) {
        check(&text);
    }
}
