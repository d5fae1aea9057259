//! Arbitrary model output through every parser of an LLM context and the
//! text tool-call fallback: each returns (an error or a value within its
//! contract), never panics. A model's reply is untrusted input.
#![no_main]

use engram_actors::llm::contexts::{self, MAX_PLAN_STEPS};
use engram_actors::llm::text_tools::parse_tool_blocks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(steps) = contexts::parse_plan(text, &["get_now", "read_file", "list_dir"]) {
        assert!(steps.len() <= MAX_PLAN_STEPS);
        assert!(steps.iter().all(|s| ["get_now", "read_file", "list_dir"].contains(&s.tool.as_str())));
    }
    if let Ok(j) = contexts::parse_intent(text) {
        assert!((0.0..=1.0).contains(&j.confidence));
    }
    if let Ok((score, confidence)) = contexts::parse_verdict(text) {
        assert!((0.0..=1.0).contains(&score) && (0.0..=1.0).contains(&confidence));
    }
    let _ = contexts::parse_summary(text);
    let _ = contexts::parse_facts(text);
    let _ = parse_tool_blocks(text);
});
