//! `graph`: the knowledge graph (seed 002 #10-#11b) — branches USER /
//! DIRECTIVES / WORLD, nodes under them, each node's facts in order — folded
//! from `graph.fact_added` (append) and `graph.node_merged` (the node's full
//! new content). Which fact goes where, and what a merge drops, is decided
//! by the graph actor ([`crate::reactors::GraphReactor`]), never here.

use engram_events::payloads::GraphBranch;
use engram_events::{Envelope, Event, EventKind};
use serde::{Deserialize, Serialize};

use engram_local_state::projector::{Projection, Table, TableRows};

/// One node: where it is and its facts, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphNode {
    /// Its branch.
    pub branch: GraphBranch,
    /// Its path under the branch (`identity`, `food/preferences`).
    pub node: String,
    /// Its facts, in the order they were added or merged.
    pub facts: Vec<String>,
}

/// The `graph` projection.
#[derive(Clone)]
pub struct Graph {
    nodes: Table<GraphNode>,
}

impl Default for Graph {
    fn default() -> Self {
        Graph { nodes: Table::new(b'n') }
    }
}

/// Row key of a node: branch, `/`, node path (branch names hold no `/`).
fn key(branch: GraphBranch, node: &str) -> Vec<u8> {
    format!("{}/{node}", branch.as_str()).into_bytes()
}

impl Graph {
    /// The facts of `node` under `branch` (empty when it has none).
    pub fn facts(&self, branch: GraphBranch, node: &str) -> &[String] {
        self.nodes.get(&key(branch, node)).map_or(&[], |n| n.facts.as_slice())
    }

    /// Every node, by branch then node path.
    pub fn iter(&self) -> impl Iterator<Item = &GraphNode> {
        self.nodes.iter().map(|(_, n)| n)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph knows nothing.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Number of facts over all nodes.
    pub fn fact_count(&self) -> usize {
        self.iter().map(|n| n.facts.len()).sum()
    }
}

impl Projection for Graph {
    fn name(&self) -> &'static str {
        "graph"
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[EventKind::GraphFactAdded, EventKind::GraphNodeMerged, EventKind::MemoryForgotten])
    }

    fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::GraphFactAdded(f) => {
                let node = self.nodes.entry(&key(f.branch, &f.node), || GraphNode {
                    branch: f.branch,
                    node: f.node.clone(),
                    facts: Vec::new(),
                });
                // The same text twice (two extractors agreeing) is one fact.
                if !node.facts.contains(&f.fact) {
                    node.facts.push(f.fact.clone());
                }
            }
            Event::GraphNodeMerged(m) => {
                let k = key(m.branch, &m.node);
                if m.facts.is_empty() {
                    self.nodes.remove(&k);
                } else {
                    self.nodes.insert(k, GraphNode { branch: m.branch, node: m.node.clone(), facts: m.facts.clone() });
                }
            }
            // The user retracted these: gone from the node, and a node left
            // with no facts is gone.
            Event::MemoryForgotten(m) => {
                for f in &m.facts {
                    let k = key(f.branch, &f.node);
                    let Some(node) = self.nodes.get(&k) else { continue };
                    if !node.facts.contains(&f.fact) {
                        continue;
                    }
                    let facts: Vec<String> = node.facts.iter().filter(|x| **x != f.fact).cloned().collect();
                    if facts.is_empty() {
                        self.nodes.remove(&k);
                    } else {
                        self.nodes.insert(k, GraphNode { branch: f.branch, node: f.node.clone(), facts });
                    }
                }
            }
            _ => {}
        }
    }

    fn tables(&self) -> Vec<&dyn TableRows> {
        vec![&self.nodes]
    }

    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
        vec![&mut self.nodes]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use engram_events::payloads::{ExtractorKind, GraphFactAdded, GraphNodeMerged};
    use engram_events::{ActorKind, EventId};

    fn env(i: u8, event: impl Into<Event>) -> Envelope {
        let at = Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, i.into()).unwrap();
        Envelope::at(EventId::derive(at, &[&[i]]), at, ActorKind::Graph, event)
    }

    fn added(i: u8, branch: GraphBranch, node: &str, fact: &str) -> Envelope {
        env(i, GraphFactAdded { branch, node: node.into(), fact: fact.into(), extractor: ExtractorKind::Rule })
    }

    #[test]
    fn facts_append_once_and_merges_replace() {
        let mut g = Graph::default();
        g.apply(&added(1, GraphBranch::User, "location", "I live in Milan"));
        g.apply(&added(2, GraphBranch::User, "preferences", "I like jazz"));
        g.apply(&added(3, GraphBranch::User, "preferences", "I like jazz"));
        g.apply(&added(4, GraphBranch::Directives, "behaviour", "Always answer in Italian"));
        assert_eq!(g.facts(GraphBranch::User, "preferences"), ["I like jazz"]);
        assert_eq!((g.len(), g.fact_count()), (3, 3));
        // Keys sort by branch: DIRECTIVES, USER.
        let order: Vec<_> = g.iter().map(|n| (n.branch, n.node.as_str())).collect();
        assert_eq!(
            order,
            [
                (GraphBranch::Directives, "behaviour"),
                (GraphBranch::User, "location"),
                (GraphBranch::User, "preferences")
            ]
        );
        let merged = |i, facts: &[&str]| {
            env(
                i,
                GraphNodeMerged {
                    branch: GraphBranch::User,
                    node: "location".into(),
                    facts: facts.iter().map(|f| f.to_string()).collect(),
                    facts_before: 2,
                },
            )
        };
        g.apply(&merged(5, &["I live in Rome"]));
        assert_eq!(g.facts(GraphBranch::User, "location"), ["I live in Rome"]);
        // A merge to nothing removes the node.
        g.apply(&merged(6, &[]));
        assert!(g.facts(GraphBranch::User, "location").is_empty());
        assert_eq!(g.len(), 2);
    }
}
