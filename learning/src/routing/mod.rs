//! Which model takes a planner turn: the routing chain ([`chain`]) and its
//! exploration rule ([`explore`]) — pure functions of the turn, the user's
//! choices, the configured rules and the pattern store's answer, so that a
//! store rebuilt from the log reproduces every choice. The router actor
//! (`engram_actors::roles::router`) asks them and records the chain.

use std::collections::BTreeMap;

pub mod chain;
pub mod explore;

pub use chain::{fast_path_chain, route_chain, Routed, Slots};
pub use explore::{exploration, Exploring};

/// `[routing]`: the rules of the chain's third slot — intent tag → model,
/// e.g. `model_rules = { doc = "qwen3:32b" }`, above the pattern store's
/// recommendation.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingSection {
    /// Intent tag → model.
    pub model_rules: BTreeMap<String, String>,
}
