//! With the model away, the whole decision in one place: the offline
//! planner's plan (its descriptions and the phrasings the model taught),
//! the nearest learnt phrasing's call ([`crate::fast_path::model_away`]),
//! and the values the model passed ([`crate::arguments::learnt_values`]).
//! The planner actor and `engram bench learning` both plan through
//! [`OfflinePlanner::plan_away`], so what the bench grades is what runs.

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{NearMiss, PlanStep, ToolArgs};
use serde_json::Value;

use super::OfflinePlanner;
use crate::fast_path::model_away::{self, Source};
use crate::taught_phrasings::TaughtPhrasings;

impl OfflinePlanner {
    /// The plan for `request` said at `now` with the model away: `near` is
    /// the fast path's near miss for it, `taught` what the model taught.
    /// A plan of one call is then completed by the values the model passed
    /// ([`crate::arguments::learnt_values`]). An embedding that fails
    /// leaves the planner's own plan empty (logged), not the near miss.
    pub fn plan_away(
        &self,
        request: &str,
        now: DateTime<FixedOffset>,
        near: Option<&NearMiss>,
        taught: &TaughtPhrasings,
    ) -> (Vec<PlanStep>, Source) {
        let own = self.plan_taught(request, now, taught).unwrap_or_else(|e| {
            tracing::warn!("offline planner failed open: {e}");
            Vec::new()
        });
        let arguments = |tool: &str| self.arguments_taught(tool, request, now, taught);
        let sets_nothing = |step: &PlanStep| self.call_sets_nothing(step);
        let one_of_two = |args: &ToolArgs| crate::arguments::one_of_two(args, request);
        let reads_path = self.reads_path(request, now);
        let (mut steps, source) = model_away::plan(near, own, reads_path, &arguments, &sets_nothing, &one_of_two);
        if let [step] = steps.as_mut_slice() {
            self.complete_learnt(step, request, taught);
        }
        (steps, source)
    }

    /// Completes `step` from `request` by the values the model passed for
    /// its tool's parameters — and for a parameter of another tool with the
    /// same name that means the same: a place of the home, or the same
    /// description ("Name of the door or gate" of `lock_door` and
    /// `unlock_door`) — a value first moved to the parameter the model
    /// passed it as ([`crate::arguments::learnt_values::relabel`]).
    fn complete_learnt(&self, step: &mut PlanStep, request: &str, taught: &TaughtPhrasings) {
        let Some(tool) = self.tools.iter().find(|t| t.name == step.tool) else { return };
        let spec_of = |tool: &str, param: &str| {
            let t = self.tools.iter().find(|t| t.name == tool)?;
            t.schema.get("properties")?.get(param).cloned()
        };
        let learnt = |param: &str, spec: &Value| {
            let same = |other: &Value| {
                let place = crate::spoken::place_property(param, spec) && crate::spoken::place_property(param, other);
                place || other.get("description") == spec.get("description")
            };
            let mut out: Vec<(String, Value)> = taught.values(&tool.name, param).to_vec();
            for other in taught.tools_with(param).filter(|t| *t != tool.name) {
                if spec_of(other, param).is_some_and(|o| same(&o)) {
                    out.extend(
                        taught.values(other, param).iter().filter(|v| !out.contains(v)).cloned().collect::<Vec<_>>(),
                    );
                }
            }
            out
        };
        let passed = |param: &str| !taught.values(&tool.name, param).is_empty();
        crate::arguments::learnt_values::relabel(&tool.schema, &mut step.args, &passed, &learnt);
        crate::arguments::learnt_values::complete(&tool.schema, &mut step.args, request, &learnt);
    }
}
