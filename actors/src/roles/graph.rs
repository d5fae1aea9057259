//! The graph: facts from each `summary.written` into the knowledge graph.
//!
//! With a model server the facts come from the LLM extractor (seed 002
//! #10, `extractor = llm`), each placed on a node by
//! [`GraphReactor::place`]; what they change (dedupe, single-valued nodes,
//! node size) is decided by [`GraphReactor::decide`], the rules the rule
//! extractor's facts go through too. Any failure — timeout, HTTP error, an
//! answer that is not a fact array — falls back to the rule extractor
//! ([`GraphReactor`] as it is). An empty array is an answer: nothing to keep.
//!
//! After a restart the graph looks for its `llm.call_completed` (by its
//! derived id) before asking the model about a summary again.

use engram_events::derived;
use engram_events::payloads::{ExtractorKind, SummaryWritten};
use engram_events::{ActorKind, Envelope, Event, EventKind};
use engram_learning::projections::Graph as GraphProjection;
use engram_learning::reactors::{GraphReactor, Reactor};
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

use crate::bus::Bus;
use crate::llm::contexts;
use crate::llm::ContextLlm;
use crate::shell::Role;

/// The graph actor's role.
pub struct GraphWriter {
    rules: GraphReactor,
    llm: Option<ContextLlm>,
}

impl GraphWriter {
    /// The rule extractor, with the LLM one in front when `llm` is given.
    pub fn new(llm: Option<ContextLlm>) -> GraphWriter {
        GraphWriter { rules: GraphReactor::from_projection(&GraphProjection::default()), llm }
    }

    fn extract(&mut self, llm: &ContextLlm, env: &Envelope, s: &SummaryWritten, bus: &Bus) -> Vec<Envelope> {
        if super::called_already(bus, env) {
            self.rules.observe(env);
            return Vec::new();
        }
        let (record, parsed) = llm.ask(contexts::graph_messages(&s.summary), contexts::parse_facts);
        let mut out = match parsed {
            Ok(facts) => {
                let placed = facts.into_iter().map(|(branch, fact)| GraphReactor::place(branch, fact)).collect();
                let out = self.rules.decide(env, placed, ExtractorKind::Llm);
                self.rules.observe(env);
                out
            }
            Err(e) => {
                tracing::warn!(model = %llm.model, "LLM graph extraction failed open to the rule extractor: {e}");
                self.rules.react(env)
            }
        };
        out.push(derived(env, ActorKind::Graph, record, 0));
        out
    }
}

impl Role for GraphWriter {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        self.rules.sizes()
    }

    fn snapshot_version(&self) -> u32 {
        1
    }

    /// The graph the rule extractor decides against.
    fn save(&self, w: &mut SnapshotWriter) {
        self.rules.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.rules.restore(r)
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        Some(vec![
            EventKind::SummaryWritten,
            EventKind::GraphFactAdded,
            EventKind::GraphNodeMerged,
            EventKind::MemoryForgotten,
        ])
    }

    fn observe(&mut self, env: &Envelope) {
        self.rules.observe(env);
    }

    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope> {
        match (self.llm.clone(), &env.event) {
            (Some(llm), Event::SummaryWritten(s)) => self.extract(&llm, env, s, bus),
            _ => self.rules.react(env),
        }
    }
}
