//! OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp, LM Studio):
//! `POST {base}/v1/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, answered by server-sent events —
//! `data: {chunk}` lines ending with `data: [DONE]`. Tool calls arrive as
//! index-keyed deltas whose `function.arguments` are string fragments,
//! parsed as JSON once the stream is complete.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::http::{Lines, Transport};
use super::text_tools::chat_with_fallback;
use super::{ApiKey, ChatRequest, ChatResponse, LlmClient, LlmError, MessageRole, ToolCall, ToolSpec};

/// A client for one OpenAI-compatible server.
pub struct OpenAiClient {
    transport: Transport,
    text_tools: AtomicBool,
}

impl std::fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("transport", &self.transport)
            .field("text_tools", &self.text_tools.load(Ordering::Relaxed))
            .finish()
    }
}

impl OpenAiClient {
    /// A client for the server at `base_url` (with or without a trailing
    /// `/v1`); `api_key` goes out as `Authorization: Bearer`.
    pub fn new(base_url: &str, api_key: Option<ApiKey>) -> Result<Self, LlmError> {
        Ok(OpenAiClient { transport: Transport::new(base_url, api_key)?, text_tools: AtomicBool::new(false) })
    }

    /// True once the server has refused native tools.
    pub fn text_tools(&self) -> bool {
        self.text_tools.load(Ordering::Relaxed)
    }

    fn url(&self) -> String {
        let base = self.transport.base_url();
        match base.ends_with("/v1") {
            true => format!("{base}/chat/completions"),
            false => format!("{base}/v1/chat/completions"),
        }
    }

    fn send(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let lines = self.transport.post_stream(&self.url(), &request_body(req), req.timeout, !req.tools.is_empty())?;
        let mut resp = read_stream(lines)?;
        self.transport.scrub_response(&mut resp);
        resp.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(resp)
    }
}

impl LlmClient for OpenAiClient {
    fn provider(&self) -> &str {
        "openai"
    }

    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        chat_with_fallback(&self.text_tools, req, |r| self.send(r))
    }
}

/// The JSON body for `req` (no `tools` key when there are none). Tool calls
/// in the history get ids `call_<message>_<n>`, and each tool message
/// answers the oldest unanswered one, as the protocol requires.
pub fn request_body(req: &ChatRequest) -> Value {
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut messages = Vec::with_capacity(req.messages.len());
    for (i, m) in req.messages.iter().enumerate() {
        let mut out = json!({ "role": m.role.as_str(), "content": m.content });
        match m.role {
            MessageRole::Assistant if !m.tool_calls.is_empty() => {
                pending.clear();
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(j, c)| {
                        let id = format!("call_{i}_{j}");
                        pending.push_back(id.clone());
                        json!({
                            "id": id,
                            "type": "function",
                            "function": { "name": c.name, "arguments": Value::Object(c.arguments.clone()).to_string() },
                        })
                    })
                    .collect();
                out["tool_calls"] = Value::Array(calls);
            }
            MessageRole::Tool => {
                out["tool_call_id"] = Value::from(pending.pop_front().unwrap_or_else(|| format!("call_{i}")));
            }
            _ => {}
        }
        messages.push(out);
    }
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(req.tools.iter().map(tool).collect());
    }
    body
}

fn tool(t: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": { "name": t.name, "description": t.description, "parameters": t.parameters },
    })
}

/// A tool call being assembled from deltas.
#[derive(Default)]
struct PartialCall {
    name: String,
    arguments: String,
}

/// Reads the SSE stream to `data: [DONE]`.
fn read_stream(mut lines: Lines) -> Result<ChatResponse, LlmError> {
    let mut resp = ChatResponse::default();
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    while let Some((n, line)) = lines.next_line()? {
        // Blank lines end events; `:` comments, `event:` and `id:` carry nothing we use.
        let Some(data) = line.strip_prefix("data:") else { continue };
        let data = data.trim();
        if data == "[DONE]" {
            resp.tool_calls = finish_calls(calls)?;
            return Ok(resp);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| LlmError::Malformed(format!("stream line {n} is not JSON: {e}")))?;
        if let Some(err) = chunk.get("error") {
            return Err(LlmError::Malformed(format!("stream line {n}: server error {err}")));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            resp.input_tokens = count(usage, "prompt_tokens");
            resp.output_tokens = count(usage, "completion_tokens");
        }
        let Some(delta) = chunk.pointer("/choices/0/delta") else { continue };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            resp.content.push_str(text);
        }
        for (k, d) in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let index = d.get("index").and_then(Value::as_u64).unwrap_or(k as u64);
            let call = calls.entry(index).or_default();
            if let Some(name) = d.pointer("/function/name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(args) = d.pointer("/function/arguments").and_then(Value::as_str) {
                call.arguments.push_str(args);
            }
        }
    }
    Err(LlmError::Malformed("stream ended without data: [DONE]".into()))
}

fn finish_calls(calls: BTreeMap<u64, PartialCall>) -> Result<Vec<ToolCall>, LlmError> {
    calls
        .into_values()
        .map(|c| {
            if c.name.is_empty() {
                return Err(LlmError::Malformed("a streamed tool call has no name".into()));
            }
            let arguments = match c.arguments.trim() {
                "" => Map::new(),
                text => match serde_json::from_str(text) {
                    Ok(Value::Object(m)) => m,
                    _ => {
                        return Err(LlmError::Malformed(format!(
                            "arguments of tool call {} are not a JSON object",
                            c.name
                        )))
                    }
                },
            };
            Ok(ToolCall { name: c.name, arguments })
        })
        .collect()
}

fn count(usage: &Value, key: &str) -> u32 {
    usage.get(key).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}
