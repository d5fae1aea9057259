//! Ollama's native chat API: `POST {base}/api/chat` with `stream: true`,
//! answered by NDJSON — one JSON object per line, `message.content` chunks
//! and `message.tool_calls` (arguments as an object), then a `done: true`
//! line with `prompt_eval_count` / `eval_count`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::http::{Lines, Transport};
use super::structured::SchemaSupport;
use super::text_tools::chat_with_tools;
use super::{
    pair_tool_calls, ApiKey, ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, NativeTools, ToolCall,
    ToolPairing, ToolSpec,
};

/// Where Ollama listens when `llm.base_url` is empty.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";

/// How long a probed capability is trusted: a model can be re-pulled or
/// replaced under the same name, so the answer is asked again after this.
pub const PROBE_TTL: Duration = Duration::from_secs(600);

/// The most of a call's budget the capability probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A client for one Ollama server.
#[derive(Debug)]
pub struct OllamaClient {
    transport: Transport,
    native_tools: NativeTools,
    /// Model → when `/api/show` was asked and whether it listed `tools`.
    probed: Mutex<HashMap<String, (Instant, bool)>>,
    /// Which models refused a `format` schema ([`super::structured`]).
    schemas: SchemaSupport,
}

impl OllamaClient {
    /// A client for the server at `base_url`; `api_key` (for a server behind
    /// an authenticating proxy) goes out as a bearer token. Tool support is
    /// probed ([`NativeTools::Auto`]); see [`OllamaClient::with_native_tools`].
    pub fn new(base_url: &str, api_key: Option<ApiKey>) -> Result<Self, LlmError> {
        Ok(OllamaClient {
            transport: Transport::new(base_url, api_key)?,
            native_tools: NativeTools::Auto,
            probed: Mutex::new(HashMap::new()),
            schemas: SchemaSupport::default(),
        })
    }

    /// This client with tools sent as `mode` says (`auto`: as the model's
    /// capabilities in `/api/show` say).
    pub fn with_native_tools(mut self, mode: NativeTools) -> Self {
        self.native_tools = mode;
        self
    }

    /// Whether calls with tools on `model` send them natively: from
    /// `native_tools`, or for `auto` from the server's `/api/show`
    /// capabilities, asked at most once per [`PROBE_TTL`] per model within
    /// `budget`. A server that lists no capabilities (before Ollama 0.6) or
    /// a probe that fails means native; a failed probe is not remembered.
    /// Returns the answer and whether a probe was sent.
    pub fn sends_tools_natively(&self, model: &str, budget: Duration) -> (bool, bool) {
        match self.native_tools {
            NativeTools::On => return (true, false),
            NativeTools::Off => return (false, false),
            NativeTools::Auto => {}
        }
        let mut probed = self.probed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, native)) = probed.get(model).filter(|(at, _)| at.elapsed() < PROBE_TTL) {
            tracing::trace!(model, native, age_s = at.elapsed().as_secs(), "ollama: tool support as probed");
            return (*native, false);
        }
        let server = self.transport.base_url();
        let url = format!("{server}/api/show");
        let native = match self.transport.post_json(&url, &json!({ "model": model }), budget.min(PROBE_TIMEOUT)) {
            Ok(show) => match show.get("capabilities").and_then(Value::as_array) {
                Some(caps) => {
                    let native = caps.iter().any(|c| c == "tools");
                    tracing::info!(
                        server,
                        model,
                        native,
                        ?caps,
                        "ollama: /api/show capabilities say tools go {}",
                        if native { "natively" } else { "as text" }
                    );
                    native
                }
                None => {
                    tracing::info!(server, model, "ollama: /api/show lists no capabilities: tools go natively");
                    true
                }
            },
            Err(e) => {
                tracing::info!(server, model, "ollama: capability probe failed ({e}): tools go natively this call");
                return (true, true);
            }
        };
        probed.insert(model.to_owned(), (Instant::now(), native));
        (native, true)
    }

    fn send(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.schemas.send(self.transport.base_url(), req, |r| self.post(r))
    }

    fn post(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let url = format!("{}/api/chat", self.transport.base_url());
        let lines = self.transport.post_stream(&url, &request_body(req)?, req.timeout)?;
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
        if req.tools.is_empty() {
            return chat_with_tools(false, req, |r| self.send(r));
        }
        let started = Instant::now();
        let (native, probed) = self.sends_tools_natively(&req.model, req.timeout);
        if !probed {
            return chat_with_tools(!native, req, |r| self.send(r));
        }
        // The probe came out of the call's budget.
        let timeout = req
            .timeout
            .checked_sub(started.elapsed())
            .filter(|t| !t.is_zero())
            .ok_or(LlmError::Timeout { after_ms: u64::try_from(req.timeout.as_millis()).unwrap_or(u64::MAX) })?;
        chat_with_tools(!native, &ChatRequest { timeout, ..req.clone() }, |r| self.send(r))
    }
}

/// The JSON body for `req` (no `tools` key when there are none): an
/// assistant message's calls go as `tool_calls` with object arguments, and
/// each tool message names (`tool_name`) the call it answers
/// ([`pair_tool_calls`]); a history that cannot be paired is
/// [`LlmError::Protocol`].
pub fn request_body(req: &ChatRequest) -> Result<Value, LlmError> {
    let pairing = pair_tool_calls(&req.messages)?;
    let mut body = json!({
        "model": req.model,
        "messages": req.messages.iter().zip(&pairing).map(|(m, p)| message(m, p)).collect::<Vec<_>>(),
        "stream": true,
    });
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(req.tools.iter().map(tool).collect());
    }
    if let Some(schema) = &req.answer_schema {
        body["format"] = schema.clone();
    }
    if let Some(n) = req.max_tokens {
        body["options"]["num_predict"] = Value::from(n);
    }
    if let Some(t) = req.temperature {
        body["options"]["temperature"] = Value::from(t);
    }
    Ok(body)
}

fn message(m: &ChatMessage, pairing: &ToolPairing) -> Value {
    let mut out = json!({ "role": m.role.as_str(), "content": m.content });
    match pairing {
        ToolPairing::Calls(_) => {
            out["tool_calls"] = m
                .tool_calls
                .iter()
                .map(|c| json!({ "function": { "name": c.name, "arguments": c.arguments } }))
                .collect();
        }
        ToolPairing::Answers { name, .. } => out["tool_name"] = Value::from(name.as_str()),
        ToolPairing::None => {}
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
