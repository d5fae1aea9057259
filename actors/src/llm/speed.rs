//! How fast each model answered in this process: every answered call's
//! prompt size, answer length and wall time, fitted per model
//! ([`engram_learning::model_budget::CallSpeed`]), so the planner's
//! timeout follows the model's measured speed (a 135M model on two CPU
//! cores and a hosted one are not given the same 6 s for the same reason).
//!
//! Like the health of a server ([`super::health`]), this is how this
//! process sees a server right now, not an event: [`super::Guarded`]
//! records each call it passes through, the planner reads the fit.

use std::collections::HashMap;
use std::sync::Mutex;

use engram_learning::model_budget::CallSpeed;

use super::{ChatRequest, ChatResponse};

/// Per model, the fit of its answered calls (see the module docs).
#[derive(Debug, Default)]
pub struct ModelSpeeds {
    fits: Mutex<HashMap<String, CallSpeed>>,
}

impl ModelSpeeds {
    /// Adds one answered call of `req`'s model.
    pub fn record(&self, req: &ChatRequest, resp: &ChatResponse) {
        let chars = prompt_chars(req);
        let mut fits = self.fits.lock().unwrap_or_else(|e| e.into_inner());
        fits.entry(req.model.clone()).or_default().record(chars, resp.output_tokens, resp.latency_ms);
    }

    /// The fit of `model`'s calls so far; `None` before its first answer.
    pub fn of(&self, model: &str) -> Option<CallSpeed> {
        self.fits.lock().unwrap_or_else(|e| e.into_inner()).get(model).copied().filter(CallSpeed::is_measured)
    }
}

/// The characters a request sends the model to read: its messages and
/// its tools' specs — what prompt processing scales with.
pub fn prompt_chars(req: &ChatRequest) -> usize {
    let messages: usize = req.messages.iter().map(|m| m.content.chars().count()).sum();
    let tools: usize =
        req.tools.iter().map(|t| t.name.len() + t.description.chars().count() + t.parameters.to_string().len()).sum();
    messages + tools
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, LlmContext};
    use std::time::Duration;

    #[test]
    fn each_model_has_its_own_fit() {
        let speeds = ModelSpeeds::default();
        let req = |model: &str, text: &str| ChatRequest {
            model: model.into(),
            messages: vec![ChatMessage::user(text)],
            tools: Vec::new(),
            context: LlmContext::Planner,
            timeout: Duration::from_secs(6),
            answer_schema: None,
            max_tokens: None,
            temperature: None,
        };
        let answered = |tokens, ms| ChatResponse { output_tokens: tokens, latency_ms: ms, ..ChatResponse::default() };
        assert!(speeds.of("slow").is_none());
        speeds.record(&req("slow", &"x".repeat(2000)), &answered(50, 5000));
        speeds.record(&req("fast", &"x".repeat(2000)), &answered(50, 500));
        let slow = speeds.of("slow").unwrap().predict(2000, 50).unwrap();
        let fast = speeds.of("fast").unwrap().predict(2000, 50).unwrap();
        assert!(slow > fast * 5, "{slow:?} {fast:?}");
        assert_eq!(prompt_chars(&req("m", "héllo")), 5);
    }
}
