//! Ollama's native chat API: `POST {base}/api/chat` with `stream: true`,
//! answered by NDJSON — one JSON object per line, `message.content` chunks
//! and `message.tool_calls` (arguments as an object), then a `done: true`
//! line with `prompt_eval_count` / `eval_count`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::http::{Lines, Transport};
use super::text_tools::chat_with_fallback;
use super::{ApiKey, ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, MessageRole, ToolCall, ToolSpec};

/// Where Ollama listens when `llm.base_url` is empty.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// A client for one Ollama server.
pub struct OllamaClient {
    transport: Transport,
    text_tools: AtomicBool,
}

impl std::fmt::Debug for OllamaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OllamaClient")
            .field("transport", &self.transport)
            .field("text_tools", &self.text_tools.load(Ordering::Relaxed))
            .finish()
    }
}

impl OllamaClient {
    /// A client for the server at `base_url`; `api_key` (for a server behind
    /// an authenticating proxy) goes out as a bearer token.
    pub fn new(base_url: &str, api_key: Option<ApiKey>) -> Result<Self, LlmError> {
        Ok(OllamaClient { transport: Transport::new(base_url, api_key)?, text_tools: AtomicBool::new(false) })
    }

    /// True once the server has refused native tools: every later call with
    /// tools uses text tool calls.
    pub fn text_tools(&self) -> bool {
        self.text_tools.load(Ordering::Relaxed)
    }

    fn send(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let url = format!("{}/api/chat", self.transport.base_url());
        let lines = self.transport.post_stream(&url, &request_body(req), req.timeout, !req.tools.is_empty())?;
        let mut resp = read_stream(lines)?;
        self.transport.scrub_response(&mut resp);
        resp.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(resp)
    }
}

impl LlmClient for OllamaClient {
    fn provider(&self) -> &str {
        "ollama"
    }

    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        chat_with_fallback(&self.text_tools, req, |r| self.send(r))
    }
}

/// The JSON body for `req` (no `tools` key when there are none).
pub fn request_body(req: &ChatRequest) -> Value {
    let mut body = json!({
        "model": req.model,
        "messages": req.messages.iter().map(message).collect::<Vec<_>>(),
        "stream": true,
    });
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(req.tools.iter().map(tool).collect());
    }
    body
}

fn message(m: &ChatMessage) -> Value {
    let mut out = json!({ "role": m.role.as_str(), "content": m.content });
    if m.role == MessageRole::Assistant && !m.tool_calls.is_empty() {
        out["tool_calls"] =
            m.tool_calls.iter().map(|c| json!({ "function": { "name": c.name, "arguments": c.arguments } })).collect();
    }
    if let (MessageRole::Tool, Some(name)) = (m.role, &m.tool_name) {
        out["tool_name"] = Value::from(name.as_str());
    }
    out
}

fn tool(t: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": { "name": t.name, "description": t.description, "parameters": t.parameters },
    })
}

/// Reads the NDJSON stream to its `done: true` line.
fn read_stream(mut lines: Lines) -> Result<ChatResponse, LlmError> {
    let mut resp = ChatResponse::default();
    while let Some((n, line)) = lines.next_line()? {
        if line.trim().is_empty() {
            continue;
        }
        let chunk: Value = serde_json::from_str(&line)
            .map_err(|e| LlmError::Malformed(format!("stream line {n} is not JSON: {e}")))?;
        if let Some(err) = chunk.get("error") {
            return Err(LlmError::Malformed(format!("stream line {n}: server error {err}")));
        }
        if let Some(msg) = chunk.get("message") {
            if let Some(text) = msg.get("content").and_then(Value::as_str) {
                resp.content.push_str(text);
            }
            for call in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                resp.tool_calls
                    .push(tool_call(call).map_err(|why| LlmError::Malformed(format!("stream line {n}: {why}")))?);
            }
        }
        if chunk.get("done").and_then(Value::as_bool) == Some(true) {
            resp.input_tokens = count(&chunk, "prompt_eval_count");
            resp.output_tokens = count(&chunk, "eval_count");
            return Ok(resp);
        }
    }
    Err(LlmError::Malformed("stream ended without a done line".into()))
}

fn count(chunk: &Value, key: &str) -> u32 {
    chunk.get(key).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

fn tool_call(call: &Value) -> Result<ToolCall, String> {
    let f = call.get("function").ok_or("tool call without function")?;
    let name = f.get("name").and_then(Value::as_str).ok_or("tool call without a name")?.to_owned();
    let arguments = match f.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        // Some models put a JSON string here.
        Some(Value::String(s)) if s.trim().is_empty() => Map::new(),
        Some(Value::String(s)) => match serde_json::from_str(s) {
            Ok(Value::Object(m)) => m,
            _ => return Err(format!("arguments of {name} are not a JSON object")),
        },
        Some(_) => return Err(format!("arguments of {name} are not a JSON object")),
    };
    Ok(ToolCall { name, arguments })
}
