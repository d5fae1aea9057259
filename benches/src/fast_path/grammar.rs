//! The fast-path bench's workload: a small grammar whose distinct
//! combinations are the L1 rows ("`<verb>` the `<adjective>` `<topic>`
//! `<noun>` in PATH") and L2 pipelines ("`<get>` URL and `<describe>` the
//! …"), their requests with fresh values, the hard negatives (a row's
//! request with an effectful verb), and the tables learned from planner
//! turns the way the runtime learns them.

use chrono::{DateTime, FixedOffset};
use engram::actors::config::Config;
use engram::events::payloads::{PlanStep, ToolArgs};
use engram::learning::projections::{CanonicalQueries, Pipelines};

use crate::patterns::Rng;

/// L1 verbs: (verb, executor, argument holding the path). All read-only, so
/// that an effectful verb makes a hard negative of any row.
pub const L1_VERBS: [(&str, &str, &str); 6] = [
    ("read", "read_file", "path"),
    ("summarize", "summarize_file", "path"),
    ("show", "show_file", "path"),
    ("find", "find_files", "root"),
    ("describe", "describe_file", "path"),
    ("list", "list_files", "root"),
];
/// Adjectives (no stop word, action or polarity word, nothing the extractor
/// takes for a value).
pub const ADJECTIVES: [&str; 30] = [
    "quarterly",
    "annual",
    "weekly",
    "monthly",
    "draft",
    "final",
    "old",
    "shared",
    "private",
    "archived",
    "scanned",
    "handwritten",
    "signed",
    "unsigned",
    "urgent",
    "personal",
    "legal",
    "medical",
    "financial",
    "technical",
    "internal",
    "external",
    "printed",
    "revised",
    "pending",
    "yearly",
    "team",
    "family",
    "confidential",
    "spanish",
];
/// Topics.
pub const TOPICS: [&str; 30] = [
    "budget",
    "travel",
    "tax",
    "insurance",
    "mortgage",
    "garden",
    "kitchen",
    "holiday",
    "wedding",
    "school",
    "project",
    "research",
    "marketing",
    "sales",
    "hiring",
    "health",
    "fitness",
    "recipe",
    "car",
    "bike",
    "rent",
    "energy",
    "garage",
    "bank",
    "pension",
    "music",
    "photo",
    "book",
    "conference",
    "client",
];
/// L1 nouns.
pub const L1_NOUNS: [&str; 12] = [
    "notes",
    "reports",
    "invoices",
    "receipts",
    "letters",
    "contracts",
    "spreadsheets",
    "slides",
    "minutes",
    "plans",
    "checklists",
    "forms",
];
/// L2 first verbs (the first step: `get_urls`).
pub const L2_GETS: [&str; 4] = ["download", "fetch", "read", "get"];
/// L2 second verbs and their tools.
pub const L2_VERBS: [(&str, &str); 3] =
    [("describe", "describe_entries"), ("summarize", "summarize_entries"), ("explain", "explain_entries")];
/// L2 nouns.
pub const L2_NOUNS: [&str; 12] = [
    "article",
    "post",
    "story",
    "review",
    "guide",
    "tutorial",
    "announcement",
    "newsletter",
    "paper",
    "thread",
    "interview",
    "essay",
];
/// Effectful verbs that turn an L1 row's request into a hard negative.
pub const MISS_VERBS: [&str; 5] = ["delete", "send", "move", "copy", "rename"];

/// Distinct L1 rows the grammar makes.
pub const L1_SPACE: usize = L1_VERBS.len() * ADJECTIVES.len() * TOPICS.len() * L1_NOUNS.len();
/// Distinct L2 pipelines the grammar makes.
pub const L2_SPACE: usize = L2_GETS.len() * L2_VERBS.len() * ADJECTIVES.len() * TOPICS.len() * L2_NOUNS.len();

/// Splits `code` into digits of the given radices (least significant first).
fn digits<const N: usize>(mut code: usize, radices: [usize; N]) -> [usize; N] {
    let mut out = [0; N];
    for (o, r) in out.iter_mut().zip(radices) {
        *o = code % r;
        code /= r;
    }
    out
}

/// A plan step calling `tool` with `args` (a JSON object).
fn step(tool: &str, args: serde_json::Value) -> PlanStep {
    PlanStep { tool: tool.to_owned(), args: ToolArgs::from_json(&args.to_string()).expect("an object") }
}

/// The object phrase of an L1 row ("the annual tax notes").
fn l1_object(code: usize) -> (usize, String) {
    let [v, a, t, n] = digits(code, [L1_VERBS.len(), ADJECTIVES.len(), TOPICS.len(), L1_NOUNS.len()]);
    (v, format!("the {} {} {}", ADJECTIVES[a], TOPICS[t], L1_NOUNS[n]))
}

/// L1 row `code` (< [`L1_SPACE`]) asked about `path`: the request and its
/// one step.
pub fn l1_request(code: usize, path: &str) -> (String, PlanStep) {
    let (v, object) = l1_object(code);
    let (verb, tool, arg) = L1_VERBS[v];
    (format!("{verb} {object} in {path}"), step(tool, serde_json::json!({ arg: path })))
}

/// The hard negative of L1 row `code`: its request with an effectful verb.
pub fn miss_request(code: usize, path: &str, which: usize) -> String {
    let (_, object) = l1_object(code);
    format!("{} {object} in {path}", MISS_VERBS[which % MISS_VERBS.len()])
}

/// L2 pipeline `code` (< [`L2_SPACE`]) asked about `url`: the request and
/// its two steps.
pub fn l2_request(code: usize, url: &str) -> (String, Vec<PlanStep>) {
    let [g, v, a, t, n] = digits(code, [L2_GETS.len(), L2_VERBS.len(), ADJECTIVES.len(), TOPICS.len(), L2_NOUNS.len()]);
    let (verb, tool) = L2_VERBS[v];
    let text = format!("{} {url} and {verb} the {} {} {}", L2_GETS[g], ADJECTIVES[a], TOPICS[t], L2_NOUNS[n]);
    (
        text,
        vec![step("get_urls", serde_json::json!({ "url": url })), step(tool, serde_json::json!({ "entries": "$0" }))],
    )
}

/// A seeded random order of `0..space`.
pub(super) fn permutation(space: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..space).collect();
    for i in (1..space).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

/// The instant every request is said at (the user's local time).
pub fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").expect("a valid instant")
}

/// Tables learned from planner turns `(text, steps)`, each seen `times`,
/// through the [`FastPathReactor`](engram::learning::reactors::FastPathReactor)
/// as the runtime learns them.
pub fn learn(turns: &[(String, Vec<PlanStep>)], times: u32) -> (CanonicalQueries, Pipelines) {
    engram::learning::reactors::fast_path::learn(turns, times, Config::default().multi_tool_fast_path, *now().offset())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram::learning::fast_path::{canonical, gate};

    #[test]
    fn the_grammar_makes_distinct_rows_that_resolve_and_hard_negatives_the_gate_refuses() {
        let mut seen = std::collections::HashSet::new();
        for code in (0..L1_SPACE).step_by(97) {
            let (text, s) = l1_request(code, "~/a/b.md");
            let (c, ex) = canonical(&text, now());
            assert!(c.ends_with(" in path"), "{c}");
            assert_eq!(ex.slots.len(), 1, "{text}");
            assert!(seen.insert(c.clone()), "{c} twice");
            assert!(s.args.to_json().contains("~/a/b.md"));
            let (q, _) = canonical(&l1_request(code, "~/x/y.pdf").0, now());
            assert_eq!(q, c);
            assert_eq!(gate::check(&q, &c), Ok(()));
            let (m, _) = canonical(&miss_request(code, "~/x/y.pdf", code), now());
            assert!(gate::check(&m, &c).is_err(), "{m} / {c}");
        }
        for code in (0..L2_SPACE).step_by(211) {
            let (text, steps) = l2_request(code, "https://example.org/1");
            let (c, ex) = canonical(&text, now());
            assert_eq!(ex.slots.len(), 1, "{text}");
            assert!(c.contains(" url and "), "{c}");
            assert!(seen.insert(c), "twice");
            assert_eq!(steps.len(), 2);
        }
    }

    #[test]
    fn learned_tables_hold_one_row_per_turn_text() {
        let turns: Vec<(String, Vec<PlanStep>)> = (0..20)
            .map(|c| {
                let (t, s) = l1_request(c * 101, &format!("~/d/{c}.md"));
                (t, vec![s])
            })
            .chain((0..5).map(|c| l2_request(c * 37, &format!("https://e.org/{c}"))))
            .collect();
        let (c, p) = learn(&turns, 3);
        assert_eq!((c.candidates(3).count(), p.candidates(3).count()), (20, 5));
        let row = c.iter().next().unwrap();
        assert!(row.args_observed.to_json().contains("{path}"), "{:?}", row.args_observed);
    }
}
