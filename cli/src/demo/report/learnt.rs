//! What the workload left in the learning stores, from the log: sessions
//! the pattern store recorded and their outcomes, with what the store now
//! recommends for [`RECOMMEND_FOR`]; the summaries written; the knowledge
//! graph's facts by branch.

use engram::actors::config::Config;
use engram::events::payloads::GraphBranch;
use engram::learning::features;
use engram::learning::patterns::Fingerprint;
use engram::learning::projections::PatternOutcomes;
use engram::{Envelope, Event};

use super::{Graph, Patterns, Summaries, RECOMMEND_FOR};

/// The workload's learning events, counted so far.
#[derive(Default)]
pub(super) struct Learnt {
    /// Sessions ended (each recorded in the pattern store).
    pub(super) sessions_recorded: u64,
    /// Pattern outcomes recorded.
    pub(super) outcomes: u64,
    /// Summaries written.
    pub(super) summaries: Summaries,
    /// Graph facts added.
    pub(super) graph: Graph,
}

impl Learnt {
    /// Counts one event of the workload.
    pub(super) fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::SessionEnded(_) => self.sessions_recorded += 1,
            Event::PatternRecorded(_) => self.outcomes += 1,
            Event::SummaryWritten(s) => {
                self.summaries.count += 1;
                self.summaries.first.get_or_insert_with(|| s.summary.clone());
            }
            Event::GraphFactAdded(f) => {
                match f.branch {
                    GraphBranch::User => self.graph.user += 1,
                    GraphBranch::Directives => self.graph.directives += 1,
                    GraphBranch::World => self.graph.world += 1,
                }
                self.graph.example.get_or_insert_with(|| (f.branch.to_string(), f.node.clone(), f.fact.clone()));
            }
            _ => {}
        }
    }

    /// The pattern store's figures: the counts, and what `store`, under the
    /// default `[pattern]` config, recommends for [`RECOMMEND_FOR`].
    pub(super) fn patterns(&self, store: &PatternOutcomes) -> Patterns {
        let config = Config::default();
        let fp = Fingerprint::structural(features::for_turn(RECOMMEND_FOR, &[], false).normalized()).at_route();
        let rec = store.recommend(&fp, &config.pattern.config());
        let best = rec.alternatives.first();
        Patterns {
            sessions_recorded: self.sessions_recorded,
            outcomes: self.outcomes,
            request: RECOMMEND_FOR,
            chosen_model: rec.chosen_model.clone(),
            best_model: best.map(|b| b.model.clone()),
            best_score: best.map(|b| b.score),
            confidence: rec.confidence,
            sample_size: rec.sample_size,
        }
    }
}
