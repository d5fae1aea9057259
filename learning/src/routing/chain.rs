//! The routing chain of a planner turn (seed 001 §9): five slots, each
//! asked in order, the first answer wins — the user's override for this
//! utterance, the session's sticky choice, a rule (`[routing] model_rules`,
//! by intent tag), the pattern store (with exploration asked first), the
//! default model. Every slot is asked whatever won above it, and the whole
//! chain is recorded in `route.decided`: an answer a higher slot beat is
//! `deferred`, no answer `not_applicable` — so the log says not only which
//! model took a turn but what each slot would have said.

use engram_events::payloads::{ChainEntry, ChainVerdict, ModelOption, PatternMatched, RoutePolicy};
use engram_events::TurnId;

use super::explore::{exploration, Exploring};
use crate::patterns::{Fingerprint, Recommendation};

/// What the chain of one planner turn is asked: each slot's answer.
pub struct Slots<'a> {
    /// The fast path's best similarity (it did not answer the turn: slot 0
    /// is recorded `not_applicable`).
    pub fast_path_similarity: Option<f64>,
    /// Slot 1: the model the user chose for this utterance.
    pub user_override: Option<String>,
    /// Slot 2: the session's sticky model.
    pub sticky: Option<String>,
    /// Slot 3: the model a rule pins for the turn's intent tags.
    pub rule: Option<String>,
    /// The turn (its id is exploration's draw).
    pub turn: Option<TurnId>,
    /// Slot 4: the store's recommendation among the candidates.
    pub recommendation: &'a Recommendation,
    /// The fingerprint the store was asked with.
    pub fingerprint: &'a Fingerprint,
    /// Exploration's knobs; its `default_model` is slot 5.
    pub exploring: &'a Exploring<'a>,
}

/// The chain's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Routed {
    /// Every slot's verdict, in order.
    pub chain: Vec<ChainEntry>,
    /// The model that takes the turn.
    pub model: String,
    /// When the store's recommendation took the turn: the
    /// `pattern.matched` to record.
    pub matched: Option<PatternMatched>,
}

/// The chain of a turn the fast path answers alone.
pub fn fast_path_chain(similarity: Option<f64>) -> Vec<ChainEntry> {
    vec![entry(RoutePolicy::FastPath, ChainVerdict::Chosen, None, similarity, None)]
}

/// Asks the slots in order (see the module docs).
pub fn route_chain(slots: Slots<'_>) -> Routed {
    let mut chain =
        vec![entry(RoutePolicy::FastPath, ChainVerdict::NotApplicable, None, slots.fast_path_similarity, None)];
    let mut chosen: Option<String> = None;
    for (policy, answer) in [
        (RoutePolicy::UserOverride, slots.user_override),
        (RoutePolicy::Sticky, slots.sticky),
        (RoutePolicy::Rule, slots.rule),
    ] {
        chain.push(match answer {
            Some(m) if chosen.is_none() => {
                chosen = Some(m.clone());
                entry(policy, ChainVerdict::Chosen, Some(m), Some(1.0), None)
            }
            Some(m) => entry(policy, ChainVerdict::Deferred, Some(m), Some(1.0), None),
            None => entry(policy, ChainVerdict::NotApplicable, None, None, None),
        });
    }
    let rec = slots.recommendation;
    // Exploration, asked before the store's own choice, only for a turn
    // nothing above decided.
    let explore = match (&chosen, slots.turn) {
        (None, Some(turn)) => exploration(turn, rec, slots.exploring),
        _ => None,
    };
    chain.push(match &explore {
        Some((model, samples)) => {
            chosen = Some(model.clone());
            entry(RoutePolicy::Explore, ChainVerdict::Chosen, Some(model.clone()), Some(*samples as f64), None)
        }
        None => entry(RoutePolicy::Explore, ChainVerdict::NotApplicable, None, None, None),
    });
    let alternatives = Some(rec.alternatives.clone()).filter(|a| !a.is_empty());
    let mut matched = None;
    let verdict = match (&chosen, &rec.chosen_model) {
        (_, None) => ChainVerdict::NotApplicable,
        (Some(_), Some(_)) => ChainVerdict::Deferred,
        (None, Some(model)) => {
            chosen = Some(model.clone());
            matched = Some(PatternMatched {
                fingerprint_id: slots.fingerprint.id(),
                fingerprint_kind: slots.fingerprint.kind(),
                chosen_model: model.clone(),
                confidence: rec.confidence,
                sample_size: rec.sample_size,
                k_cluster_size: rec.k_cluster_size as u32,
                alternatives_count: rec.alternatives.len() as u32,
            });
            ChainVerdict::Chosen
        }
    };
    chain.push(entry(RoutePolicy::Pattern, verdict, rec.chosen_model.clone(), Some(rec.confidence), alternatives));
    let default = slots.exploring.default_model.to_owned();
    let verdict = if chosen.is_some() { ChainVerdict::Deferred } else { ChainVerdict::Chosen };
    chain.push(entry(RoutePolicy::Default, verdict, Some(default.clone()), None, None));
    Routed { chain, model: chosen.unwrap_or(default), matched }
}

fn entry(
    policy: RoutePolicy,
    verdict: ChainVerdict,
    model: Option<String>,
    confidence: Option<f64>,
    pattern_alternatives: Option<Vec<ModelOption>>,
) -> ChainEntry {
    ChainEntry { policy, verdict, model, confidence, pattern_alternatives }
}
