//! With the model away: what the offline planner plans when the fast path
//! had a learnt phrasing near the request but did not serve it (issue 39,
//! *the offline planner learns from the model*).
//!
//! A near miss ([`NearMiss`]) is the call the nearest learnt phrasing
//! would make — the model's own answer to a request worded like this one,
//! with this request's values in its slots. The offline planner's own plan
//! knows the tools only by their descriptions, names and schemas, but it
//! also knows things a near miss does not (whether a path names a file or
//! a folder, an argument the request names in full). So:
//!
//! 1. A near miss under [`LEARNT_BAR`] is not taken: too far to say what
//!    the model would have done.
//! 2. When the offline planner plans nothing, the near miss's call is
//!    taken: the model chose for requests like this, the descriptions
//!    alone do not.
//! 3. When both plan the same tools, the near miss's call is taken: its
//!    values were filled into slots the model taught.
//! 4. When they plan other tools, the near miss's call is taken — the
//!    model chose for requests worded like this one, the descriptions
//!    alone guess ("accendi la luce della mansarda" near a taught "mi
//!    accendi le luci in X" is `HassTurnOn`, not the `HassLightSet` the
//!    word "luce" leans to) — unless the offline planner read what a
//!    phrasing cannot: a path of a kind a tool takes ("read the file
//!    notes/a.txt" near a taught "elenca i file in …" is a read, not a
//!    listing; `OfflinePlanner::reads_path`). Measured on the home
//!    fixture's dev split, reported on its held-out one
//!    (`docs/fast-path.md`).
//! 5. A near miss may leave arguments out — a request worded unlike any
//!    phrasing holds only some of the values its slots took
//!    (`FastPath::taught_guess`): what it lacks, the offline planner's
//!    arguments for that tool complete.
//! 6. A near miss whose call, so completed, sets something and is given
//!    nothing to set (the offline planner's rule 10: "make the bedroom
//!    light brighter" near "make the X light Y" is a room and no colour)
//!    is not taken, and nothing is planned: its slot for what to set found
//!    no value in the request, so the request asks something the phrasing
//!    does not — and the descriptions' plan, which rule 4 ranks under the
//!    near miss, is no better read ("brighter" planned as `HassTurnOff`).
//! 7. A near miss of one call whose text value the request names beside
//!    another, joined by a conjunction ("the kitchen and the office
//!    lights"), is not taken, and nothing is planned: the call would drop
//!    one (the offline planner's rule 13,
//!    [`crate::arguments::one_of_two`]).

use engram_events::payloads::{NearMiss, PlanStep, ToolArgs};

/// The least similarity (values set aside) at which a near miss says what
/// the model would have planned. Measured on the dev split of the home
/// fixture (`engram bench learning --home`, `docs/fast-path.md`).
pub const LEARNT_BAR: f64 = 0.6;

/// Where a plan made with the model away came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The nearest learnt phrasing's call (rules 2 and 3).
    Learnt,
    /// The offline planner's own plan (rules 1 and 4).
    Descriptions,
}

/// The plan with the model away (module docs): `near` is the turn's near
/// miss, `own` the offline planner's plan of the request, `reads_path`
/// whether that plan rests on a path's kind (rule 4), `arguments` the
/// offline planner's arguments for a tool from the request (rule 5),
/// `sets_nothing` its rule 10 for a call (rule 6), `one_of_two` whether
/// the request names another value beside one of these arguments (rule
/// 7).
pub fn plan(
    near: Option<&NearMiss>,
    own: Vec<PlanStep>,
    reads_path: bool,
    arguments: &dyn Fn(&str) -> Option<ToolArgs>,
    sets_nothing: &dyn Fn(&PlanStep) -> bool,
    one_of_two: &dyn Fn(&ToolArgs) -> bool,
) -> (Vec<PlanStep>, Source) {
    let Some(near) = near.filter(|n| n.similarity >= LEARNT_BAR && !n.steps.is_empty()) else {
        return (own, Source::Descriptions);
    };
    let tools = |steps: &[PlanStep]| steps.iter().map(|s| s.tool.clone()).collect::<Vec<_>>();
    let same = tools(&own) == tools(&near.steps);
    if !own.is_empty() && !same && reads_path {
        return (own, Source::Descriptions);
    }
    // Another tool's arguments are no arguments of the near miss's.
    let own = if same { own } else { Vec::new() };
    let mut steps = near.steps.clone();
    for (i, step) in steps.iter_mut().enumerate() {
        let theirs = match own.get(i) {
            Some(o) => Some(o.args.clone()),
            None => arguments(&step.tool),
        };
        for (k, v) in theirs.map(|a| a.0).unwrap_or_default() {
            step.args.0.entry(k).or_insert(v);
        }
    }
    if steps.iter().any(sets_nothing) || matches!(steps.as_slice(), [step] if one_of_two(&step.args)) {
        return (Vec::new(), Source::Descriptions);
    }
    (steps, Source::Learnt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(tool: &str, path: &str) -> PlanStep {
        let args = ToolArgs::from_json(&serde_json::json!({ "path": path }).to_string()).unwrap();
        PlanStep { tool: tool.into(), args }
    }

    fn near(similarity: f64, steps: Vec<PlanStep>) -> NearMiss {
        NearMiss { canonical: "elenca i file in path".into(), similarity, steps }
    }

    #[test]
    fn a_near_miss_fills_in_where_the_descriptions_plan_nothing() {
        let n = near(0.7, vec![step("list_dir", "/a")]);
        assert_eq!(
            plan(Some(&n), Vec::new(), false, &|_| None, &|_| false, &|_| false),
            (n.steps.clone(), Source::Learnt)
        );
    }

    #[test]
    fn a_near_miss_under_the_bar_says_nothing() {
        let n = near(LEARNT_BAR - 0.01, vec![step("list_dir", "/a")]);
        assert_eq!(
            plan(Some(&n), Vec::new(), false, &|_| None, &|_| false, &|_| false),
            (Vec::new(), Source::Descriptions)
        );
    }

    #[test]
    fn on_the_same_tool_the_learnt_values_are_taken() {
        let n = near(0.7, vec![step("list_dir", "/a")]);
        let own = vec![step("list_dir", "/b")];
        assert_eq!(plan(Some(&n), own, false, &|_| None, &|_| false, &|_| false), (n.steps.clone(), Source::Learnt));
    }

    #[test]
    fn on_another_tool_the_near_miss_wins_unless_a_path_decided() {
        let n = near(0.72, vec![step("list_dir", "/a/todo.txt")]);
        let own = vec![step("read_file", "/a/todo.txt")];
        assert_eq!(
            plan(Some(&n), own.clone(), true, &|_| None, &|_| false, &|_| false),
            (own.clone(), Source::Descriptions)
        );
        assert_eq!(plan(Some(&n), own, false, &|_| None, &|_| false, &|_| false), (n.steps.clone(), Source::Learnt));
    }

    #[test]
    fn what_a_near_miss_leaves_out_the_offline_arguments_complete() {
        let mut partial = step("HassTurnOn", "/x");
        partial.args.0.remove("path");
        partial.args.0.insert("domain".into(), serde_json::json!(["light"]));
        let n = near(0.7, vec![partial]);
        let area = |tool: &str| {
            assert_eq!(tool, "HassTurnOn");
            Some(ToolArgs::from_json(r#"{"area": "laundry room", "domain": "x"}"#).unwrap())
        };
        let (steps, source) = plan(Some(&n), Vec::new(), false, &area, &|_| false, &|_| false);
        assert_eq!(source, Source::Learnt);
        assert_eq!(steps[0].args.to_json(), r#"{"area":"laundry room","domain":["light"]}"#);
    }

    #[test]
    fn a_near_miss_that_sets_nothing_is_not_taken() {
        let n = near(0.7, vec![step("HassLightSet", "/x")]);
        let own = vec![step("HassTurnOn", "/y")];
        let unset = |s: &PlanStep| s.tool == "HassLightSet";
        assert_eq!(plan(Some(&n), own, false, &|_| None, &unset, &|_| false), (Vec::new(), Source::Descriptions));
        assert_eq!(
            plan(Some(&n), Vec::new(), false, &|_| None, &unset, &|_| false),
            (Vec::new(), Source::Descriptions)
        );
    }
}
