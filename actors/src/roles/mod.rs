//! One module per actor role (DESIGN's table). Each role is a thin shell
//! over pure logic in `engram-storage` where that logic exists (reactors,
//! the fast path, the pattern store): the same code `engram import` runs.
//!
//! | role | consumes | emits |
//! |---|---|---|
//! | [`listener`] | the host's utterances, feedback, session ends | `utterance.received`, `intent.judged`, `day.activated`, `feedback.received`, `session.ended` |
//! | [`router`] | `intent.judged`; `turn.completed` | `route.decided`, `fastpath.hit/missed`, `pattern.matched`; `canonical.recorded`, `pipeline.*` |
//! | [`planner`] | `route.decided` (planner layer) | `plan.created`, `llm.call_completed` |
//! | [`reply_loop`] | `fastpath.hit`, `plan.created` | `tool.called/completed`, `llm.call_completed`, `reply.delivered`, `turn.completed` |
//! | judge, pattern store, summariser, graph | see [`ReactorRole`] | `eval.completed`; `pattern.recorded/evicted`; `summary.written`; `graph.*` |

pub mod listener;
pub mod planner;
pub mod reply_loop;
pub mod router;

use engram_events::Envelope;
use engram_storage::reactors::Reactor;

use crate::bus::Bus;
use crate::llm::ToolSpec;
use crate::offline_planner::ToolDescription;
use crate::shell::Role;

/// A role that is exactly a storage reactor (judge, pattern store,
/// summariser, graph): it observes to warm up and reacts to derive.
pub struct ReactorRole(pub Box<dyn Reactor>);

impl Role for ReactorRole {
    fn observe(&mut self, env: &Envelope) {
        self.0.observe(env);
    }

    fn handle(&mut self, env: &Envelope, _bus: &Bus) -> Vec<Envelope> {
        self.0.react(env)
    }
}

/// The tools as a model is told about them.
pub(crate) fn llm_specs(tools: &[ToolDescription]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|(name, description, parameters)| ToolSpec {
            name: name.clone(),
            description: description.clone(),
            parameters: parameters.clone(),
        })
        .collect()
}
