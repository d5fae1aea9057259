//! Tool narrowing (seed 002 #7, #8): which tools a prompt lists when the
//! catalogue is too big for it — a host that registers 200 tools — and
//! what the reply loop's model finds when it looks for more.
//!
//! The rules are here; the actors' tool router holds the catalogue, asks
//! the router model and the offline planner's ranking, and applies them.
//!
//! | # | rule |
//! |---|---|
//! | 1 | a catalogue of at most `[planner] max_tools` (12) tools is not narrowed: every prompt lists it all, no call ([`Narrowing::narrows`]) |
//! | 2 | a bigger one: the router model (`tool_router_model`, else `intent_judge_model`, else `model`; `router_timeout_ms`) picks at most 5 by name, or none; a failure (timeout, error, no known name) falls open to rule 3 — not to "every tool", which is what the budget forbids ([`Narrowing::picks`]) |
//! | 3 | without a model: the `[planner] max_tools` tools nearest the request in embedding space (the offline planner's own vectors of each tool's description and phrasings) ([`nearest`]) |
//! | 4 | always in: [`RECALL`] (memory needs no routing), and a tool that failed in the turn before (the user is probably supplying what it lacked, seed 002's carry-over guard) ([`with_kept`]) |
//! | 4b | the picks of rules 2–3 are kept for the conversation (per session, the request normalised; a pause longer than the dialogue window or the session's end clears them): the same request asked again costs no router call; rule 4's additions are made afresh each turn |
//! | 4c | a model whose prompt budget is smaller than what rules 1–3 give (a tiny model: [`crate::model_budget`], rule 3) sees the budget's tools: the first of rule 2's picks, else the nearest by rule 3, nearest first (a small model leans to the first tool it is shown); rule 4's added on top ([`Narrowing::narrows_to`], [`Narrowing::offered`]) |
//! | 5 | the reply loop's model sees what was routed, the plan's tools and `search_tools`; a search (at most [`MAX_SEARCHES`] per reply) returns the [`FOUND`] best matches not yet offered, by rule 3's ranking, and offers them from the next model turn on ([`found`]) |

use std::fmt::Display;

pub use crate::offline_planner::RECALL;

/// Most `search_tools` calls per reply (seed 002: 3).
pub const MAX_SEARCHES: usize = 3;
/// Tools one search returns.
pub const FOUND: usize = 5;

/// The narrowing of one catalogue to a prompt's `[planner] max_tools`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Narrowing {
    max: usize,
}

impl Narrowing {
    /// Narrowing to `max` tools (at least one).
    pub fn new(max: usize) -> Narrowing {
        Narrowing { max: max.max(1) }
    }

    /// The tools a prompt may list (`[planner] max_tools`).
    pub fn max_tools(&self) -> usize {
        self.max
    }

    /// Whether a catalogue of `tools` is too big for a prompt (rule 1).
    pub fn narrows(&self, tools: usize) -> bool {
        tools > self.max
    }

    /// Whether a catalogue of `tools` must be narrowed for a prompt of at
    /// most `budget` tools (rules 1 and 4c).
    pub fn narrows_to(&self, tools: usize, budget: usize) -> bool {
        tools > budget.min(self.max)
    }

    /// Rules 2 and 3: the router model's picks, or — with no model, or
    /// when it failed — the [`Narrowing::max_tools`] nearest, which
    /// `nearest(n)` ranks.
    pub fn picks<E: Display>(
        &self,
        asked: Option<Result<Vec<String>, E>>,
        nearest: impl FnOnce(usize) -> Vec<String>,
    ) -> Vec<String> {
        match asked {
            Some(Ok(picked)) => picked,
            Some(Err(e)) => {
                tracing::warn!("tool router failed open to the embedding ranking: {e}");
                nearest(self.max)
            }
            None => nearest(self.max),
        }
    }

    /// Rules 4 and 4c: the first `budget` of `picked`, with what is always
    /// in.
    pub fn offered(
        &self,
        picked: Vec<String>,
        budget: usize,
        failed: &[String],
        has: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        with_kept(picked.into_iter().take(budget).collect(), failed, has)
    }
}

/// Rule 4: `picked` with [`RECALL`] and the tools that `failed` in the
/// turn before, each when the catalogue `has` it and it is not in yet.
pub fn with_kept(mut picked: Vec<String>, failed: &[String], has: impl Fn(&str) -> bool) -> Vec<String> {
    for name in failed.iter().map(String::as_str).chain([RECALL]) {
        if has(name) && !picked.iter().any(|p| p == name) {
            picked.push(name.to_owned());
        }
    }
    picked
}

/// Rule 3: the first `n` of a ranking (best first), by name.
pub fn nearest(ranked: Vec<(String, f32)>, n: usize) -> Vec<String> {
    ranked.into_iter().take(n).map(|(name, _)| name).collect()
}

/// Rule 5: what a search finds — the [`FOUND`] best of `ranked` (names,
/// best first) not `known` yet.
pub fn found(ranked: Vec<String>, known: &[String]) -> Vec<String> {
    ranked.into_iter().filter(|n| !known.contains(n)).take(FOUND).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_catalogue_within_the_budget_is_not_narrowed() {
        let n = Narrowing::new(12);
        assert!(!n.narrows(12));
        assert!(n.narrows(13));
        assert!(n.narrows_to(12, 4), "a tiny model's budget narrows what the prompt would hold");
        assert!(!n.narrows_to(4, 4));
        assert_eq!(Narrowing::new(0).max_tools(), 1);
    }

    #[test]
    fn a_failed_router_falls_open_to_the_ranking_not_to_every_tool() {
        let n = Narrowing::new(2);
        let ranking = |k: usize| names(&["a", "b", "c"]).into_iter().take(k).collect();
        assert_eq!(n.picks::<String>(Some(Ok(names(&["c"]))), ranking), ["c"]);
        assert_eq!(n.picks(Some(Err("timeout")), ranking), ["a", "b"]);
        assert_eq!(n.picks::<String>(None, ranking), ["a", "b"]);
    }

    #[test]
    fn recall_and_the_tool_that_failed_are_always_offered() {
        let catalogue = ["a", "b", "c", RECALL];
        let has = |t: &str| catalogue.contains(&t);
        let n = Narrowing::new(12);
        assert_eq!(n.offered(names(&["a", "b"]), 1, &names(&["c", "gone"]), has), ["a", "c", RECALL]);
        assert_eq!(with_kept(names(&[RECALL]), &[], has), [RECALL], "not twice");
        assert_eq!(with_kept(names(&["a"]), &[], |t| t == "a"), ["a"], "not when the catalogue lacks it");
    }

    #[test]
    fn a_search_finds_what_is_not_offered_yet() {
        let ranked = names(&["a", "b", "c", "d", "e", "f", "g"]);
        assert_eq!(found(ranked, &names(&["b"])), ["a", "c", "d", "e", "f"]);
        assert_eq!(nearest(vec![("x".into(), 0.9), ("y".into(), 0.5)], 1), ["x"]);
    }
}
