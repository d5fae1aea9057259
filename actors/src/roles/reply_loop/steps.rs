//! Running a turn's steps: each call resolved (`"$N"` references, the
//! arguments left to the conversation), made through the registry, and
//! recorded as `tool.called` / `tool.completed`.

use std::time::Instant;

use engram_learning::fence::fence_untrusted;
use engram_learning::memory::dialogue::{Call, CARRY_CHARS};
use engram_learning::step_resolver;
use engram_learning::text::truncate;

use super::*;
use crate::llm::contexts;

impl ReplyLoop {
    /// Runs `steps` in order: a planner's with the arguments they left to
    /// the conversation filled in, a fast-path replay's as they are.
    /// Without a model to ask the user (`agentic` false), a call the
    /// request leaves required arguments out of is not made: the reply asks
    /// for them, in one line, and the steps after it wait too.
    pub(super) fn run_steps(
        &self,
        run: &mut Run<'_>,
        steps: &[PlanStep],
        (served_by, agentic): (Option<RouteLayer>, bool),
        model: Option<&str>,
        ctx: &ToolContext,
    ) {
        for step in steps {
            // A fast-path replay's steps are concrete by construction.
            let step = match served_by {
                None => self.resolve_step(run, step.clone(), model),
                Some(_) => step.clone(),
            };
            if !agentic {
                let missing = self
                    .schema(&step.tool)
                    .map(|schema| step_resolver::unresolved(&step.args, &schema))
                    .unwrap_or_default();
                if !missing.is_empty() {
                    run.done.ask = Some((step.tool.clone(), missing));
                    return;
                }
            }
            self.call_tool(run, step, served_by, ctx);
        }
    }

    /// The JSON schema of `tool`'s arguments, if it is offered.
    fn schema(&self, tool: &str) -> Option<serde_json::Value> {
        self.setup.catalogue.registry().get(tool).map(|t| t.parameters())
    }

    pub(super) fn call_tool(
        &self,
        run: &mut Run<'_>,
        mut step: PlanStep,
        served_by: Option<RouteLayer>,
        ctx: &ToolContext,
    ) {
        let n = run.done.steps.len() as u32;
        run.done.consumed.extend(resolve_references(&mut step.args, &run.done.plain));
        run.out.push(derived(
            run.cause,
            ActorKind::ReplyLoop,
            ToolCalled {
                step: n,
                tool: step.tool.clone(),
                args: step.args.clone(),
                served_by,
                side_effect: self.setup.catalogue.registry().get(&step.tool).map(|t| t.side_effect()),
                source: self.setup.catalogue.registry().source(&step.tool).map(|s| s.to_string()),
            },
            n,
        ));
        let t0 = Instant::now();
        // A tool that panics fails its step, not the turn (nor the actor).
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.setup.catalogue.registry().call(&step.tool, &step.args, ctx)
        }))
        .unwrap_or_else(|_| Err(crate::tools::ToolError::Failed(format!("{} panicked", step.tool))));
        let duration_ms = t0.elapsed().as_millis() as u64;
        let (ok, output, for_model, error) = match result {
            Ok(o) => {
                let for_model = o.for_llm(&step.tool);
                (true, o.text, for_model, None)
            }
            Err(e) => (false, String::new(), String::new(), Some(e.to_string())),
        };
        run.done.tools_ok &= ok;
        let (plain, fenced) = match &error {
            Some(e) => {
                let failed = format!("{} failed: {e}", step.tool);
                // An MCP server's error is its own text (`isError`): data
                // for the model, like its results, never instructions.
                let from_server = matches!(
                    self.setup.catalogue.registry().source(&step.tool),
                    Some(crate::tools::ToolSource::Mcp(_))
                );
                let for_model = match from_server {
                    true => fence_untrusted(&format!("{} (error)", step.tool), &failed),
                    false => failed.clone(),
                };
                (failed, for_model)
            }
            None => (output.clone(), for_model),
        };
        run.done.plain.push(plain);
        run.results.push(fenced);
        run.out.push(derived(
            run.cause,
            ActorKind::ReplyLoop,
            ToolCompleted {
                step: n,
                tool: step.tool.clone(),
                ok,
                output: truncate(&output, OUTPUT_CHARS),
                error,
                duration_ms,
            },
            n,
        ));
        run.done.steps.push(step);
    }

    /// A planned step with the arguments it left to the conversation filled
    /// in ([`step_resolver`]'s rules): the model's resolution for a small
    /// turn model, else — or when it fails — the rule's.
    fn resolve_step(&self, run: &mut Run<'_>, mut step: PlanStep, model: Option<&str>) -> PlanStep {
        let Some(schema) = self.schema(&step.tool) else { return step };
        let schema = &schema;
        let missing = step_resolver::unresolved(&step.args, schema);
        if missing.is_empty() {
            return step; // rule 1
        }
        // This turn's steps first, newest first, then the conversation's.
        let this_turn = run.done.steps.iter().zip(&run.done.plain).rev().map(|(s, out)| Call {
            tool: s.tool.clone(),
            args: s.args.clone(),
            output: Some(truncate(out, CARRY_CHARS)),
        });
        let earlier: Vec<Call> = this_turn.chain(self.dialogue.earlier_calls(run.cause)).collect();
        if let Some(llm) = self.setup.step_resolver.as_ref().filter(|_| model.is_some_and(is_small_model)) {
            let lines: Vec<String> = earlier.iter().map(Call::line).collect();
            let (record, parsed) = llm.ask(contexts::step_resolver_messages(&step, schema, &lines), |t| {
                contexts::parse_resolved_step(t, &step.tool)
            });
            run.record_call(record);
            match parsed {
                Ok(Some(args)) if step_resolver::unresolved(&args, schema).is_empty() => {
                    return PlanStep { tool: step.tool, args }; // rule 2
                }
                Ok(_) => tracing::debug!(tool = %step.tool, "step resolver: nothing earlier gives {missing:?}"),
                Err(e) => tracing::warn!(model = %llm.model, "step resolver failed open to the rule: {e}"),
            }
        }
        let filled = step_resolver::by_rule(&mut step, &missing, &earlier); // rule 3
        tracing::debug!(tool = %step.tool, ?filled, "step resolver: filled from earlier calls");
        step
    }
}

/// Replaces argument values `"$N"` with the result of step N; returns the
/// steps taken.
fn resolve_references(args: &mut ToolArgs, results: &[String]) -> Vec<usize> {
    let mut taken = Vec::new();
    for v in args.0.values_mut() {
        if let Some(n) = crate::llm::contexts::step_ref(v) {
            if let Some(r) = results.get(n) {
                *v = serde_json::Value::String(r.clone());
                taken.push(n);
            }
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_references_take_earlier_results() {
        let mut args = ToolArgs::default();
        args.0.insert("entries".into(), "$0".into());
        args.0.insert("keep".into(), "$x".into());
        assert_eq!(resolve_references(&mut args, &["listing".to_owned()]), [0]);
        assert_eq!(args.0["entries"], "listing");
        assert_eq!(args.0["keep"], "$x");
    }
}
