//! SCAFFOLD (replaced by the llm branch).
use engram_events::payloads::{LlmContext, LlmOutcome};
use std::time::Duration;
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_name: Option<String>,
}
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}
pub struct ToolCall {
    pub name: String,
    pub arguments: serde_json::Map<String, serde_json::Value>,
}
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub context: LlmContext,
    pub timeout: Duration,
}
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub latency_ms: u64,
    pub text_tool_fallback: bool,
}
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("timeout")]
    Timeout,
    #[error("malformed {0}")]
    Malformed(String),
}
impl LlmError {
    pub fn outcome(&self) -> LlmOutcome {
        LlmOutcome::Timeout
    }
}
pub trait LlmClient: Send + Sync {
    fn provider(&self) -> &str;
    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
}
pub struct PriceTable {
    pub version: String,
}
pub fn call_completed(
    req: &ChatRequest,
    _r: &Result<ChatResponse, LlmError>,
    latency: Duration,
    p: &PriceTable,
) -> engram_events::payloads::LlmCallCompleted {
    engram_events::payloads::LlmCallCompleted {
        model: req.model.clone(),
        context: req.context,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: Default::default(),
        pricing_version: p.version.clone(),
        latency_ms: latency.as_millis() as u64,
        outcome: LlmOutcome::Ok,
    }
}
impl ChatMessage {
    pub fn system(c: impl Into<String>) -> Self {
        ChatMessage { role: Role::System, content: c.into(), tool_calls: vec![], tool_name: None }
    }
    pub fn user(c: impl Into<String>) -> Self {
        ChatMessage { role: Role::User, content: c.into(), tool_calls: vec![], tool_name: None }
    }
    pub fn assistant(c: impl Into<String>) -> Self {
        ChatMessage { role: Role::Assistant, content: c.into(), tool_calls: vec![], tool_name: None }
    }
    pub fn tool(name: impl Into<String>, c: impl Into<String>) -> Self {
        ChatMessage { role: Role::Tool, content: c.into(), tool_calls: vec![], tool_name: Some(name.into()) }
    }
}
pub mod contexts {
    use super::*;
    #[derive(Debug, thiserror::Error)]
    #[error("bad")]
    pub struct ContextError;
    pub fn planner_messages(_q: &str, _t: &[ToolSpec], _d: &[(String, String)]) -> Vec<ChatMessage> {
        vec![]
    }
    pub fn parse_plan(_t: &str, _k: &[&str]) -> Result<Vec<engram_events::payloads::PlanStep>, ContextError> {
        Err(ContextError)
    }
}
impl PriceTable {
    pub fn from_section(_s: &engram_storage::config::LlmSection) -> Self {
        PriceTable { version: "x".into() }
    }
}
pub fn client_from_config(
    _s: &engram_storage::config::LlmSection,
) -> Result<Option<std::sync::Arc<dyn LlmClient>>, LlmError> {
    Ok(None)
}
