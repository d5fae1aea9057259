//! One call as an `llm.call_completed` event: every call is recorded, the
//! failed ones too, so fail-open paths and their cost stay visible.

use std::time::Duration;

use engram_events::payloads::{LlmCallCompleted, LlmOutcome, LlmTools};
use rust_decimal::Decimal;

use super::{ChatRequest, ChatResponse, LlmError, PriceTable};

/// The event for `req` and its `result`, with `latency` as the caller
/// measured it. A failed call records 0 tokens and 0 cost (servers do not
/// report usage for calls that fail).
pub fn call_completed(
    req: &ChatRequest,
    result: &Result<ChatResponse, LlmError>,
    latency: Duration,
    prices: &PriceTable,
) -> LlmCallCompleted {
    let (input_tokens, output_tokens, cost_usd, outcome) = match result {
        Ok(r) => {
            (r.input_tokens, r.output_tokens, prices.cost(&req.model, r.input_tokens, r.output_tokens), LlmOutcome::Ok)
        }
        Err(e) => (0, 0, Decimal::ZERO, e.outcome()),
    };
    LlmCallCompleted {
        model: prices.canonical_model(&req.model),
        context: req.context,
        input_tokens,
        output_tokens,
        cost_usd,
        pricing_version: prices.version_for(&req.model),
        latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
        outcome,
        tools: match result {
            _ if req.tools.is_empty() => LlmTools::None,
            Ok(r) if r.text_tool_fallback => LlmTools::Text,
            Ok(_) => LlmTools::Native,
            Err(_) => LlmTools::Unknown,
        },
        structured: result.as_ref().is_ok_and(|r| r.structured),
    }
}
