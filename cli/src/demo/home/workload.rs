//! The home part's workload (`examples/demo/home.jsonl`): what a household
//! says to its assistant over five evenings, English and Italian, each
//! request with its right call — the scripted model's answer and the
//! yardstick every reply is rated by.
//!
//! Two parts: `teach` (eight phrasings, each said three times with other
//! values) and `new` (taught phrasings with rooms, devices, items and
//! numbers never taught, and other wordings of taught actions).

use engram::events::payloads::PlanStep;
use engram_bench::home::Call;
use serde::Deserialize;

/// Where the workload comes from, for error messages.
const PATH: &str = "examples/demo/home.jsonl";

/// The workload, compiled in so that `engram demo` needs no files.
const TEXT: &str = include_str!("../../../../examples/demo/home.jsonl");

/// Which part of the workload a request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// Said to teach: a phrasing, three times, with other values.
    Teach,
    /// Asked once taught: what the fast path should now serve.
    New,
}

/// One request.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The session (an evening) it is said in.
    pub session: String,
    pub part: Part,
    /// `en` or `it`.
    pub lang: String,
    /// `other` on a new request worded unlike any taught phrasing (another
    /// wording or language for a taught action); absent otherwise.
    #[serde(default)]
    pub wording: Option<String>,
    /// What the user says.
    pub text: String,
    /// The right call: `{"tool", "args"}`.
    pub call: Call,
}

impl Request {
    /// Whether `steps` are this request's call, graded as `engram bench
    /// learning --home` grades (strings by case, numbers by value, arrays
    /// as sets).
    pub fn right(&self, steps: &[PlanStep]) -> bool {
        engram_bench::home::right(Some(&self.call), steps)
    }
}

impl Request {
    /// Whether it is worded as no taught phrasing is.
    pub fn other_wording(&self) -> bool {
        self.wording.as_deref() == Some("other")
    }
}

/// The workload's requests, in the order they are said.
pub fn requests() -> anyhow::Result<Vec<Request>> {
    TEXT.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| anyhow::anyhow!("{PATH}:{}: {e}", i + 1)))
        .collect()
}

/// The request said as `text`, if the workload has it.
pub fn find<'a>(requests: &'a [Request], text: &str) -> Option<&'a Request> {
    requests.iter().find(|r| r.text == text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashSet};

    #[test]
    fn the_workload_parses_with_unique_texts_and_taught_phrasings_three_times() {
        let rs = requests().unwrap();
        let texts: HashSet<&str> = rs.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts.len(), rs.len(), "a request said twice");
        let teach: Vec<&Request> = rs.iter().filter(|r| r.part == Part::Teach).collect();
        let new = rs.len() - teach.len();
        assert!((20..=30).contains(&teach.len()) && (20..=30).contains(&new), "{} + {new}", teach.len());
        // Every taught request comes before every new one.
        let first_new = rs.iter().position(|r| r.part == Part::New).unwrap();
        assert!(rs[first_new..].iter().all(|r| r.part == Part::New));
        // Each action (tool + argument names) taught at least three times.
        let mut actions: BTreeMap<(String, Vec<String>), usize> = BTreeMap::new();
        for r in &teach {
            *actions.entry((r.call.tool.clone(), r.call.args.keys().cloned().collect())).or_default() += 1;
        }
        assert!(actions.values().all(|n| *n >= 3), "{actions:?}");
        assert!(rs.iter().any(|r| r.lang == "it") && rs.iter().all(|r| r.lang == "it" || r.lang == "en"));
        assert!(rs.iter().all(|r| r.wording.is_none() || (r.other_wording() && r.part == Part::New)));
        assert!(rs.iter().any(Request::other_wording));
    }

    #[test]
    fn every_call_is_one_the_home_can_run() {
        let mut house = super::super::house::House::default();
        for r in requests().unwrap() {
            let out = house.call(&r.call.tool, &r.call.args);
            assert!(out.is_ok(), "{}: {out:?}", r.text);
            let step =
                PlanStep { tool: r.call.tool.clone(), args: engram::events::payloads::ToolArgs(r.call.args.clone()) };
            assert!(r.right(&[step]));
        }
    }
}
