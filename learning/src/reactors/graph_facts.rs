//! The graph reactor: facts from summaries into the knowledge graph
//! (seed 002 #10, #11b) — the graph actor's logic when no LLM is configured.
//!
//! On `summary.written` it extracts facts with the rule-based extractor
//! ([`crate::memory::facts`]) and, node by node:
//!
//! * a fact already in its node (equal after normalisation: lowercase,
//!   straight apostrophes, punctuation and whitespace runs collapsed) is
//!   dropped;
//! * on a single-valued node (`USER/identity`, `USER/location`) the newest
//!   fact is the value: an empty node gets `graph.fact_added`, a node
//!   holding another value gets `graph.node_merged` with the new value
//!   alone — the contradicted one is dropped (#11b "contradiction drops the
//!   old version");
//! * elsewhere each new fact is `graph.fact_added`, unless the node would
//!   then hold more than [`MAX_FACTS_PER_NODE`]: then one
//!   `graph.node_merged` keeps the newest facts.
//!
//! [`GraphReactor::decide`] applies the same rules to facts extracted
//! elsewhere (the LLM extractor of the graph actor, seed 002 #10).
//!
//! The reactor decides from its copy of the `graph` projection, folded from
//! the graph events it is shown, so what it decides is what a rebuild folds.

use engram_events::payloads::{ExtractorKind, GraphBranch, GraphFactAdded, GraphNodeMerged};
use engram_events::{ActorKind, Envelope, Event};

use super::Reactor;
use crate::memory::facts::{extract_facts, Fact, SINGLE_VALUED};
use crate::projections::Graph;
use crate::text::normalize;
use engram_events::derived;
use engram_local_state::projector::Projection;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// The node of a branch for facts no rule places more precisely.
pub const GENERAL: &str = "general";

/// Most facts a node holds; a merge keeps the newest beyond it.
pub const MAX_FACTS_PER_NODE: usize = 12;

/// Derives `graph.fact_added` / `graph.node_merged` from `summary.written`.
#[derive(Default)]
pub struct GraphReactor {
    graph: Graph,
}

impl GraphReactor {
    /// Starts from what the `graph` projection holds.
    pub fn from_projection(graph: &Graph) -> Self {
        GraphReactor { graph: graph.clone() }
    }

    /// The node a fact tagged only with its branch (as the LLM extractor
    /// tags them) goes to: the rule extractor's node when a rule recognises
    /// the fact on that branch ("my name is Ada" → `USER/identity`, single
    /// valued), else the branch's [`GENERAL`] node.
    pub fn place(branch: GraphBranch, fact: String) -> Fact {
        let node = extract_facts(&fact)
            .into_iter()
            .find(|(b, _, _)| *b == branch)
            .map(|(_, node, _)| node)
            .unwrap_or_else(|| GENERAL.to_owned());
        (branch, node, fact)
    }

    /// The graph the reactor decides from.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// What the rule extractor's facts in `summary` change in the graph.
    fn on_summary(&self, env: &Envelope, summary: &str) -> Vec<Envelope> {
        self.decide(env, extract_facts(summary), ExtractorKind::Rule)
    }

    /// The graph events `facts` (extracted elsewhere, e.g. by an LLM, and
    /// placed with [`GraphReactor::place`]) cause, derived from `env`:
    /// the same dedupe, single-value and node-size rules as the rule
    /// extractor's facts, so an LLM extractor never needs its own copy.
    /// Does not fold them: the caller shows them to [`Reactor::observe`].
    pub fn decide(&self, env: &Envelope, facts: Vec<Fact>, extractor: ExtractorKind) -> Vec<Envelope> {
        // Facts grouped by node, nodes in order of first appearance.
        let mut groups: Vec<(GraphBranch, String, Vec<String>)> = Vec::new();
        for (branch, node, fact) in facts {
            match groups.iter_mut().find(|g| g.0 == branch && g.1 == node) {
                Some(g) => g.2.push(fact),
                None => groups.push((branch, node, vec![fact])),
            }
        }
        let mut out = Vec::new();
        let mut ordinal = 0;
        let mut emit = |out: &mut Vec<Envelope>, event: Event| {
            out.push(derived(env, ActorKind::Graph, event, ordinal));
            ordinal += 1;
        };
        for (branch, node, facts) in groups {
            let existing = self.graph.facts(branch, &node);
            let mut known: Vec<String> = existing.iter().map(|f| normalize(f)).collect();
            let mut new: Vec<String> = Vec::new();
            for fact in facts {
                let n = normalize(&fact);
                if !known.contains(&n) {
                    known.push(n);
                    new.push(fact);
                }
            }
            let Some(newest) = new.last().cloned() else { continue };
            let facts_before = (existing.len() + new.len()) as u32;
            let added = |fact: String| Event::from(GraphFactAdded { branch, node: node.clone(), fact, extractor });
            let merged =
                |facts: Vec<String>| Event::from(GraphNodeMerged { branch, node: node.clone(), facts, facts_before });
            if SINGLE_VALUED.contains(&(branch, node.as_str())) {
                if existing.is_empty() {
                    emit(&mut out, added(newest));
                } else {
                    emit(&mut out, merged(vec![newest]));
                }
            } else if existing.len() + new.len() > MAX_FACTS_PER_NODE {
                let all: Vec<String> = existing.iter().cloned().chain(new).collect();
                emit(&mut out, merged(all[all.len() - MAX_FACTS_PER_NODE..].to_vec()));
            } else {
                for fact in new {
                    emit(&mut out, added(fact));
                }
            }
        }
        out
    }
}

impl Reactor for GraphReactor {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        vec![("graph.nodes", self.graph.len())]
    }

    fn name(&self) -> &'static str {
        "graph"
    }

    fn observe(&mut self, env: &Envelope) {
        self.graph.apply(env);
        self.graph.forget_changes();
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        let out = match &env.event {
            Event::SummaryWritten(s) => self.on_summary(env, &s.summary),
            _ => Vec::new(),
        };
        self.observe(env);
        out
    }
}

/// The graph's state is its projection.
impl Snapshot for GraphReactor {
    fn save(&self, w: &mut SnapshotWriter) {
        self.graph.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.graph.restore(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use engram_events::payloads::{SummariserKind, SummaryWritten};
    use engram_events::EventId;

    fn summary(i: u8, text: &str) -> Envelope {
        let at = Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, i.into()).unwrap();
        let event = SummaryWritten {
            summary: text.into(),
            topics: Vec::new(),
            summariser: SummariserKind::Extractive,
            turns_covered: 1,
        };
        Envelope::at(EventId::derive(at, &[&[i]]), at, ActorKind::Summariser, event)
    }

    /// Reacts like `derive_all`: derived events are shown right after.
    fn run(r: &mut GraphReactor, env: &Envelope) -> Vec<Envelope> {
        let out = r.react(env);
        for e in &out {
            assert!(r.react(e).is_empty());
        }
        out
    }

    #[test]
    fn known_facts_are_not_added_again_and_observe_derives_nothing() {
        let mut r = GraphReactor::default();
        assert_eq!(run(&mut r, &summary(1, "I like green tea. Call me Ada.")).len(), 2);
        // Same facts, other case, spacing and punctuation: nothing new.
        assert!(run(&mut r, &summary(2, "i  LIKE green tea! call me Ada")).is_empty());
        assert_eq!(r.graph().facts(GraphBranch::User, "preferences"), ["I like green tea"]);

        // A reactor warmed by observe() from the same log decides the same.
        let mut warm = GraphReactor::default();
        let mut log = vec![summary(1, "I like green tea. Call me Ada.")];
        log.extend(GraphReactor::default().react(&log[0]));
        for e in &log {
            warm.observe(e);
        }
        assert_eq!(warm.graph().fact_count(), 2);
        assert!(run(&mut warm, &summary(2, "i  LIKE green tea! call me Ada")).is_empty());
        let out = run(&mut warm, &summary(3, "My name is Ada. Mi chiamo Ada Lovelace."));
        // Two names in one summary: the newest is the value.
        let Event::GraphFactAdded(f) = &out[0].event else { panic!("{out:?}") };
        assert_eq!((out.len(), f.fact.as_str()), (1, "Mi chiamo Ada Lovelace"));
        // From the projection: the same state.
        assert_eq!(GraphReactor::from_projection(warm.graph()).graph().fact_count(), 3);
    }

    #[test]
    fn external_facts_follow_the_same_rules() {
        let mut r = GraphReactor::default();
        run(&mut r, &summary(1, "My name is Ada."));
        let facts = vec![
            GraphReactor::place(GraphBranch::User, "My name is Ada Lovelace".into()),
            GraphReactor::place(GraphBranch::World, "Oslo is the capital of Norway".into()),
            GraphReactor::place(GraphBranch::User, "my name is ada".into()),
        ];
        assert_eq!(facts[0].1, "identity");
        assert_eq!(facts[1].1, GENERAL);
        let cause = summary(2, "");
        let out = r.decide(&cause, facts, ExtractorKind::Llm);
        // A new name on a single-valued node replaces the old one; the
        // duplicate (after normalisation) adds nothing.
        assert_eq!(out.len(), 2, "{out:?}");
        let Event::GraphNodeMerged(m) = &out[0].event else { panic!("{out:?}") };
        assert_eq!(m.facts, ["My name is Ada Lovelace"]);
        let Event::GraphFactAdded(f) = &out[1].event else { panic!("{out:?}") };
        assert_eq!((f.branch, f.extractor), (GraphBranch::World, ExtractorKind::Llm));
        assert_eq!(out[1].causation, Some(cause.id));
    }
}
