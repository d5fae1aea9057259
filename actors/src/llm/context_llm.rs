//! A model server set up for one of seed 002's contexts ([`ContextLlm`]):
//! which model, under which timeout, priced how — and the one way a role
//! asks it something and records the call (`ask`), whatever the answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::llm::LlmSection;
use engram_events::payloads::{LlmCallCompleted, LlmContext, LlmOutcome};
use engram_learning::offline_planner::ToolDescription;

use super::{call_completed, ChatMessage, ChatRequest, ChatResponse, LlmClient, PriceTable, ToolSpec};

/// A model server set up for one LLM context: which model, under which
/// timeout, priced how.
#[derive(Clone)]
pub struct ContextLlm {
    /// The server.
    pub client: Arc<dyn LlmClient>,
    /// The context the calls serve (recorded in `llm.call_completed`).
    pub context: LlmContext,
    /// The model (`[llm]`'s `model_for(context)`).
    pub model: String,
    /// The context's timeout (`[llm]`'s `timeout(context)`).
    pub timeout: Duration,
    /// Prices of calls.
    pub prices: Arc<PriceTable>,
    /// Calls in flight, counted with every other context of the runtime:
    /// what shutdown reads to stop waiting for a model at a session's end
    /// (`Runtime::shutdown`; the call is picked up from the log by the
    /// next start).
    pub in_flight: Arc<AtomicUsize>,
}

impl ContextLlm {
    /// `client` for `context` as `[llm]` configures it.
    pub fn new(client: Arc<dyn LlmClient>, section: &LlmSection, context: LlmContext, prices: Arc<PriceTable>) -> Self {
        ContextLlm {
            client,
            context,
            model: section.model_for(context).to_owned(),
            timeout: section.timeout(context),
            prices,
            in_flight: Arc::default(),
        }
    }

    /// This context counting its calls in `in_flight` (the runtime's
    /// counter, shared by every context).
    pub fn counted_in(self, in_flight: Arc<AtomicUsize>) -> Self {
        ContextLlm { in_flight, ..self }
    }

    /// One call with `messages` (no tools), its answer checked by `parse`.
    /// Returns the call's record and the parsed value or why there is none.
    /// An answer that breaks the context's contract is recorded as
    /// `malformed` with its tokens and cost: the call was paid for.
    pub(crate) fn ask<T, E: std::fmt::Display>(
        &self,
        messages: Vec<ChatMessage>,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> (LlmCallCompleted, Result<T, String>) {
        let request = ChatRequest {
            model: self.model.clone(),
            messages,
            tools: Vec::new(),
            context: self.context,
            timeout: self.timeout,
            answer_schema: None,
            max_tokens: None,
            temperature: None,
        };
        let _call = InFlight::new(&self.in_flight);
        ask(&*self.client, &request, &self.prices, |r| parse(&r.content))
    }
}

/// One call counted in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Sends `request`, records it and parses its answer (see [`ContextLlm::ask`]).
pub(crate) fn ask<T, E: std::fmt::Display>(
    client: &dyn LlmClient,
    request: &ChatRequest,
    prices: &PriceTable,
    parse: impl FnOnce(&ChatResponse) -> Result<T, E>,
) -> (LlmCallCompleted, Result<T, String>) {
    let t0 = Instant::now();
    let result = client.chat(request);
    let mut record = call_completed(request, &result, t0.elapsed(), prices);
    let parsed = match &result {
        Ok(r) => parse(r).map_err(|e| {
            record.outcome = LlmOutcome::Malformed;
            format!("answer rejected: {e}")
        }),
        Err(e) => Err(e.to_string()),
    };
    (record, parsed)
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
