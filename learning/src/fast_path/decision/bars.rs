//! How near is near enough: each layer's and each L1 action's bar, raised
//! by the replays the user rejected ([`FastPath::raise_bar`]), and the
//! neighbourhood vote that lets two agreeing phrasings serve a little
//! under their bar ([`vote`]). Apart because a bar is learnt — from the
//! model's answers and the replays the user rejected — not read from the
//! request.

use engram_events::payloads::{PlanStep, RouteLayer};

use super::{Decision, FastPath};

/// How far above a rejected replay's cosine the bar goes.
pub const BAR_STEP: f64 = 0.01;
/// The highest the log may raise the bar: a repeat (cosine 1) is still
/// replayed.
pub const BAR_CAP: f64 = 0.97;

/// How far under its bar two agreeing phrasings of one action may be and
/// still serve together (`vote`). Set before measuring; 0.15 served
/// the same on the home fixture's dev split.
pub const VOTE_MARGIN: f64 = 0.1;

/// An L1 phrasing that passed the gate and filled its slots but fell
/// short of its action's bar.
pub(super) struct Short<'a> {
    pub(super) sim: f64,
    pub(super) bar: f64,
    pub(super) action: &'a str,
    pub(super) steps: Vec<PlanStep>,
    pub(super) phrasing: &'a str,
}

/// The learnt row as a neighbourhood of phrasings: when two phrasings of
/// one action, each within [`VOTE_MARGIN`] of its bar (gate passed, slots
/// filled), make the same call and no phrasing of another action is that
/// near, the request is that action said another way — one phrasing at
/// 0.75 is a guess, two agreeing are the model's answer twice. The
/// nearest of them, and how many agree.
pub(super) fn vote<'s, 'a>(short: &'s [Short<'a>]) -> Option<(&'s Short<'a>, usize)> {
    let close: Vec<&Short<'a>> = short.iter().filter(|s| s.sim >= s.bar - VOTE_MARGIN).collect();
    let best = close.iter().max_by(|a, b| a.sim.total_cmp(&b.sim))?;
    let agree = close.iter().filter(|s| s.action == best.action && s.steps == best.steps).count();
    (agree >= 2 && close.iter().all(|s| s.action == best.action)).then_some((best, agree))
}

impl FastPath {
    /// Adjusts the layers' bars from the log's own outcomes: `rejected` is
    /// the highest cosine of a paraphrase replay (not an exact repeat) the
    /// user rejected. The bar of each layer becomes the higher of its
    /// calibration and that cosine plus [`BAR_STEP`], at most [`BAR_CAP`] —
    /// what this user's requests showed unsafe is not served again at that
    /// cosine, by any row. The calibration stays the floor: an accepted
    /// replay never lowers it.
    pub fn raise_bar(&mut self, rejected: Option<f64>) {
        self.rejected = rejected;
    }

    /// A layer's bar: its calibration, raised by the log (see
    /// [`FastPath::raise_bar`]).
    pub(super) fn bar(&self, calibrated: f64) -> f64 {
        match self.rejected {
            Some(c) => calibrated.max((c + BAR_STEP).min(BAR_CAP)),
            None => calibrated,
        }
    }

    /// The bar of an L1 action: its own, learnt from the model's answers
    /// ([`ActionRow::bar`](crate::projections::canonical_queries::ActionRow::bar)),
    /// raised by the log's rejected replays ([`FastPath::raise_bar`]).
    pub(super) fn action_bar(&self, action: &str) -> f64 {
        let calibrated = self.fast.l1_threshold();
        let own = match self.actions.get(action) {
            Some(a) => a.bar(calibrated, self.fast.row_bar_floor(), self.fast.row_error_rate, BAR_STEP),
            None => calibrated,
        };
        match self.rejected {
            Some(c) => own.max((c + BAR_STEP).min(BAR_CAP)),
            None => own,
        }
    }

    /// The learnt row as a neighbourhood of phrasings ([`vote`]).
    pub(super) fn neighbourhood_vote(&self, short: &[Short<'_>]) -> Option<Decision> {
        let (best, agree) = vote(short)?;
        let sim = best.sim;
        let reason = format!(
            "L1: {agree} phrasings of one action within {VOTE_MARGIN} of its bar, best {sim:.3}, none of another"
        );
        Some(Decision::served(RouteLayer::L1, best.steps.clone(), Some(sim), best.phrasing.to_owned(), reason))
    }
}
