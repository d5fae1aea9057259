//! Text tool calls, for models without native tool calling (seed 002 #1).
//!
//! When `[llm] native_tools` says so — `"off"`, or `"auto"` and the server
//! reports that the model has no tool calling — the client sends the
//! request without native tools: the tools are listed in a system guidance
//! block that asks for fenced blocks
//!
//! ````text
//! ```tool_call
//! {"name": "get_weather", "arguments": {"city": "Oslo"}}
//! ```
//! ````
//!
//! and [`parse_tool_blocks`] takes them back out of the answer. The choice
//! is made per call from that explicit signal ([`chat_with_tools`]); an
//! HTTP error never switches it, so a strict server's 400 stays visible as
//! the error it is.

use std::time::Instant;

use serde_json::{Map, Value};

use super::{pair_tool_calls, ChatMessage, ChatRequest, ChatResponse, LlmError, MessageRole, ToolCall, ToolSpec};

/// The fence tag that opens a text tool call.
pub const FENCE: &str = "```tool_call";

/// Sends `req` through `send`: natively, or — when `text_mode` and tools
/// are offered — as [`text_mode_request`] with the calls parsed back out of
/// the text. A history that breaks the tool-call protocol is refused first
/// ([`pair_tool_calls`]), in either mode, so the caller's bug is seen
/// whatever the server's tool support.
pub fn chat_with_tools(
    text_mode: bool,
    req: &ChatRequest,
    send: impl Fn(&ChatRequest) -> Result<ChatResponse, LlmError>,
) -> Result<ChatResponse, LlmError> {
    pair_tool_calls(&req.messages)?;
    if req.tools.is_empty() || !text_mode {
        return send(req);
    }
    let started = Instant::now();
    let mut resp = send(&text_mode_request(req))?;
    let (prose, calls) = parse_tool_blocks(&resp.content);
    resp.content = prose;
    resp.tool_calls.extend(calls);
    resp.text_tool_fallback = true;
    resp.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(resp)
}

/// `req` without native tools: the guidance block joins the first system
/// message (or becomes one), earlier assistant tool calls become fenced
/// blocks and tool results become user messages, so servers without tool
/// support accept the history.
pub fn text_mode_request(req: &ChatRequest) -> ChatRequest {
    let guidance = guidance(&req.tools);
    let mut messages: Vec<ChatMessage> = req
        .messages
        .iter()
        .map(|m| match m.role {
            MessageRole::Assistant if !m.tool_calls.is_empty() => {
                let blocks: Vec<String> = m.tool_calls.iter().map(render_tool_call).collect();
                let content = [m.content.trim(), &blocks.join("\n")].join("\n\n").trim().to_owned();
                ChatMessage::assistant(content)
            }
            MessageRole::Tool => ChatMessage::user(format!(
                "Result of tool `{}`:\n{}",
                m.tool_name.as_deref().unwrap_or("unknown"),
                m.content
            )),
            _ => m.clone(),
        })
        .collect();
    match messages.iter_mut().find(|m| m.role == MessageRole::System) {
        Some(system) => system.content = format!("{}\n\n{guidance}", system.content),
        None => messages.insert(0, ChatMessage::system(guidance)),
    }
    ChatRequest { tools: Vec::new(), messages, ..req.clone() }
}

/// The system guidance listing `tools` and the block format.
pub fn guidance(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "You can call tools. To call one, answer with a fenced block exactly like this, one block per call:\n\n\
         ```tool_call\n{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARG\": \"VALUE\"}}\n```\n\n\
         Use only the tools below, with arguments matching their JSON schema. \
         Write no tool_call block when no tool is needed. Available tools:\n",
    );
    for t in tools {
        out.push_str(&format!("\n- {}: {}\n  parameters: {}", t.name, t.description, t.parameters));
    }
    out
}

/// One call as a fenced block (the inverse of [`parse_tool_blocks`]).
pub fn render_tool_call(call: &ToolCall) -> String {
    let body = serde_json::json!({ "name": call.name, "arguments": call.arguments });
    format!("{FENCE}\n{body}\n```")
}

/// Splits model text into prose and tool calls. A block whose JSON is not
/// `{"name": string, "arguments"?: object}` stays in the prose verbatim, so
/// nothing the model wrote is silently lost; an unclosed fence at the end is
/// accepted when its JSON is valid (small models forget the closing fence).
/// Prose pieces around blocks are trimmed and joined by a blank line.
pub fn parse_tool_blocks(text: &str) -> (String, Vec<ToolCall>) {
    let mut prose: Vec<&str> = Vec::new();
    let mut calls = Vec::new();
    let (mut piece_start, mut search) = (0, 0);
    while let Some(found) = text[search..].find(FENCE) {
        let start = search + found;
        let body_at = start + FENCE.len();
        match parse_block(&text[body_at..]) {
            Some((call, used)) => {
                prose.push(&text[piece_start..start]);
                calls.push(call);
                piece_start = body_at + used;
                search = piece_start;
            }
            // Not a call: the block, closing fence included, stays in the prose.
            None => search = text[body_at..].find("```").map_or(text.len(), |e| body_at + e + 3),
        }
    }
    prose.push(&text[piece_start..]);
    let prose: Vec<&str> = prose.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect();
    (prose.join("\n\n"), calls)
}

/// Parses the JSON after a fence tag (streaming, so backticks inside JSON
/// strings are fine) and returns the call and the bytes used, closing fence
/// included.
fn parse_block(body: &str) -> Option<(ToolCall, usize)> {
    let mut values = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let json_end = values.byte_offset();
    let after = &body[json_end..];
    let gap = after.len() - after.trim_start().len();
    let used = if after.trim_start().starts_with("```") {
        json_end + gap + 3
    } else if after.trim().is_empty() {
        body.len()
    } else {
        return None;
    };
    Some((to_call(value)?, used))
}

fn to_call(value: Value) -> Option<ToolCall> {
    let mut obj = match value {
        Value::Object(o) => o,
        _ => return None,
    };
    let name = obj.remove("name")?.as_str()?.trim().to_owned();
    if name.is_empty() {
        return None;
    }
    let arguments = match obj.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(Value::String(s)) => match serde_json::from_str(&s).ok()? {
            Value::Object(m) => m,
            _ => return None,
        },
        Some(_) => return None,
    };
    Some(ToolCall { name, arguments })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall { name: name.into(), arguments: args.as_object().unwrap().clone() }
    }

    #[test]
    fn table() {
        let cases: &[(&str, &str, Vec<ToolCall>)] = &[
            ("just prose", "just prose", vec![]),
            (
                "Let me check.\n```tool_call\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```\nDone.",
                "Let me check.\n\nDone.",
                vec![call("get_weather", json!({"city": "Oslo"}))],
            ),
            (
                "```tool_call {\"name\":\"a\"}```\n```tool_call\n{\"name\":\"b\",\"arguments\":\"{\\\"x\\\":1}\"}\n```",
                "",
                vec![call("a", json!({})), call("b", json!({"x": 1}))],
            ),
            ("text\n```tool_call\n{\"name\":\"c\",\"arguments\":{}}", "text", vec![call("c", json!({}))]),
            (
                "bad: ```tool_call\n{not json}\n``` end",
                "bad: ```tool_call\n{not json}\n``` end",
                vec![],
            ),
            ("```tool_call\n{\"arguments\":{}}\n```", "```tool_call\n{\"arguments\":{}}\n```", vec![]),
            ("```tool_call\n{\"name\":\"d\",\"arguments\":[1]}\n```", "```tool_call\n{\"name\":\"d\",\"arguments\":[1]}\n```", vec![]),
            ("```json\n{\"name\":\"e\"}\n```", "```json\n{\"name\":\"e\"}\n```", vec![]),
        ];
        for (input, prose, calls) in cases {
            let (p, c) = parse_tool_blocks(input);
            assert_eq!(&p, prose, "prose of {input:?}");
            assert_eq!(&c, calls, "calls of {input:?}");
        }
    }

    #[test]
    fn text_mode_request_moves_tools_into_guidance_and_history_into_text() {
        let tools = vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather for a city".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }];
        let mut asked = ChatMessage::assistant("checking");
        asked.tool_calls.push(call("get_weather", json!({"city": "Oslo"})));
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::user("weather?"), asked, ChatMessage::tool("get_weather", "rain")],
            tools,
            context: engram_events::payloads::LlmContext::ReplyLoop,
            timeout: std::time::Duration::from_secs(1),
            answer_schema: None,
            max_tokens: None,
            temperature: None,
        };
        let t = text_mode_request(&req);
        assert!(t.tools.is_empty());
        assert_eq!(t.messages[0].role, MessageRole::System, "a system message is added when there is none");
        assert!(t.messages[0].content.contains("get_weather: Weather for a city"));
        assert!(t.messages[0].content.contains("\"city\""));
        assert!(t.messages[2].tool_calls.is_empty() && t.messages[2].content.contains(FENCE));
        assert_eq!(parse_tool_blocks(&t.messages[2].content).1, vec![call("get_weather", json!({"city": "Oslo"}))]);
        assert_eq!(t.messages[3].role, MessageRole::User);
        assert!(t.messages[3].content.contains("get_weather") && t.messages[3].content.ends_with("rain"));
    }

    fn arb_call() -> impl Strategy<Value = ToolCall> {
        let value = prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            "[ -~]{0,20}".prop_map(Value::from),
        ];
        ("[a-z][a-z_]{0,12}", proptest::collection::btree_map("[a-z]{1,6}", value, 0..4))
            .prop_map(|(name, args)| ToolCall { name, arguments: args.into_iter().collect() })
    }

    proptest! {
        /// Prose without backticks and rendered calls, interleaved, parse back
        /// into the same calls and the same (trimmed) prose pieces.
        #[test]
        fn render_then_parse_round_trips(
            pieces in proptest::collection::vec(("[a-zA-Z0-9 .,!?\n]{0,30}", proptest::option::of(arb_call())), 0..5)
        ) {
            let mut text = String::new();
            let mut want_calls = Vec::new();
            let mut want_prose = Vec::new();
            let mut current = String::new();
            for (prose, call) in &pieces {
                text.push_str(prose);
                current.push_str(prose);
                if let Some(c) = call {
                    text.push('\n');
                    text.push_str(&render_tool_call(c));
                    text.push('\n');
                    want_calls.push(c.clone());
                    want_prose.push(current.trim().to_owned());
                    current.clear();
                }
            }
            want_prose.push(current.trim().to_owned());
            want_prose.retain(|p| !p.is_empty());
            let (prose, calls) = parse_tool_blocks(&text);
            prop_assert_eq!(calls, want_calls);
            prop_assert_eq!(prose, want_prose.join("\n\n"));
        }
    }
}
