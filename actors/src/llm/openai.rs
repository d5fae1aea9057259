//! OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp, LM Studio):
//! `POST {base}/v1/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, answered by server-sent events —
//! `data: {chunk}` lines ending with `data: [DONE]`. Tool calls arrive as
//! index-keyed deltas whose `function.arguments` are string fragments,
//! parsed as JSON once the stream is complete.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::http::{Lines, Transport};
use super::structured::SchemaSupport;
use super::text_tools::chat_with_tools;
use super::{
    pair_tool_calls, ApiKey, ChatRequest, ChatResponse, LlmClient, LlmError, NativeTools, ToolCall, ToolPairing,
    ToolSpec,
};

/// A client for one OpenAI-compatible server.
#[derive(Debug)]
pub struct OpenAiClient {
    transport: Transport,
    native_tools: NativeTools,
    /// Which models refused a `response_format` ([`super::structured`]).
    schemas: SchemaSupport,
}

impl OpenAiClient {
    /// A client for the server at `base_url` (with or without a trailing
    /// `/v1`); `api_key` goes out as `Authorization: Bearer`. Tools go
    /// natively ([`NativeTools::Auto`]); see [`OpenAiClient::with_native_tools`].
    pub fn new(base_url: &str, api_key: Option<ApiKey>) -> Result<Self, LlmError> {
        Ok(OpenAiClient {
            transport: Transport::new(base_url, api_key)?,
            native_tools: NativeTools::Auto,
            schemas: SchemaSupport::default(),
        })
    }

    /// This client with tools sent as `mode` says. The protocol has no
    /// capability signal, so `auto` is native; the choice is logged once,
    /// naming the server.
    pub fn with_native_tools(mut self, mode: NativeTools) -> Self {
        self.native_tools = mode;
        tracing::info!(
            server = %self.transport.base_url(),
            ?mode,
            native = mode != NativeTools::Off,
            "openai-compatible server: tools go {} (llm.native_tools)",
            if mode == NativeTools::Off { "as text" } else { "natively" }
        );
        self
    }

    /// How this client sends tools.
    pub fn native_tools(&self) -> NativeTools {
        self.native_tools
    }

    fn url(&self) -> String {
        let base = self.transport.base_url();
        match base.ends_with("/v1") {
            true => format!("{base}/chat/completions"),
            false => format!("{base}/v1/chat/completions"),
        }
    }

    fn send(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.schemas.send(self.transport.base_url(), req, |r| self.post(r))
    }

    fn post(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let lines = self.transport.post_stream(&self.url(), &request_body(req)?, req.timeout)?;
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
        chat_with_tools(self.native_tools == NativeTools::Off, req, |r| self.send(r))
    }
}

/// The JSON body for `req` (no `tools` key when there are none). An
/// assistant message's calls go as `tool_calls` (id, `type: "function"`,
/// arguments as a JSON string) and each tool message quotes the
/// `tool_call_id` of the call it answers ([`pair_tool_calls`]); a history
/// that cannot be paired is [`LlmError::Protocol`].
pub fn request_body(req: &ChatRequest) -> Result<Value, LlmError> {
    let pairing = pair_tool_calls(&req.messages)?;
    let messages: Vec<Value> = req
        .messages
        .iter()
        .zip(&pairing)
        .map(|(m, p)| {
            let mut out = json!({ "role": m.role.as_str(), "content": m.content });
            match p {
                ToolPairing::Calls(ids) => {
                    let calls = m.tool_calls.iter().zip(ids).map(|(c, id)| {
                        json!({
                            "id": id,
                            "type": "function",
                            "function": { "name": c.name, "arguments": Value::Object(c.arguments.clone()).to_string() },
                        })
                    });
                    out["tool_calls"] = Value::Array(calls.collect());
                }
                ToolPairing::Answers { id, .. } => out["tool_call_id"] = Value::from(id.as_str()),
                ToolPairing::None => {}
            }
            out
        })
        .collect();
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(req.tools.iter().map(tool).collect());
    }
    if let Some(schema) = &req.answer_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": { "name": "answer", "schema": schema },
        });
    }
    if let Some(n) = req.max_tokens {
        body["max_tokens"] = Value::from(n);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = Value::from(t);
    }
    Ok(body)
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
    let mut saw_usage = false;
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
        read_usage(&chunk, &mut resp, &mut saw_usage);
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

/// Token counts from a chunk, in any form a server sends them: `usage`
/// (OpenAI's final chunk under `stream_options.include_usage`, vLLM,
/// llama.cpp, LM Studio; a later chunk replaces an earlier one, as servers
/// that report usage on every chunk send running totals), else llama.cpp's
/// `timings` (`prompt_n`, `predicted_n`) when no `usage` was seen.
fn read_usage(chunk: &Value, resp: &mut ChatResponse, saw_usage: &mut bool) {
    if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
        resp.input_tokens = count(usage, "prompt_tokens");
        resp.output_tokens = count(usage, "completion_tokens");
        *saw_usage = true;
    } else if let Some(timings) = chunk.get("timings").filter(|t| t.is_object() && !*saw_usage) {
        resp.input_tokens = count(timings, "prompt_n");
        resp.output_tokens = count(timings, "predicted_n");
    }
}

fn count(usage: &Value, key: &str) -> u32 {
    usage.get(key).and_then(Value::as_u64).map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}
