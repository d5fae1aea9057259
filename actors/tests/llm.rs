//! The LLM adapters over real HTTP against a scripted local server: both
//! streaming protocols, tool calls native and as text, and every failure
//! mode the runtime must tell apart (timeout, HTTP error, malformed stream,
//! unreachable server), plus cost accounting.

mod support;

use std::str::FromStr;
use std::time::{Duration, Instant};

use engram_actors::llm::LlmSection;
use engram_actors::llm::{
    call_completed, client_from_config_with_env, ApiKey, ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError,
    ModelPrice, NativeTools, OllamaClient, OpenAiClient, PriceTable, ToolCall, ToolSpec,
};
use engram_events::payloads::{LlmContext, LlmOutcome, LlmTools};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use support::llm_server::{post_json, refused_url, Reply, Server};

const KEY: &str = "sk-test-SECRET-4242";

fn request(tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        model: "gemma4:e2b".into(),
        messages: vec![ChatMessage::system("be brief"), ChatMessage::user("weather in Oslo?")],
        tools,
        context: LlmContext::ReplyLoop,
        timeout: Duration::from_secs(5),
        answer_schema: None,
        max_tokens: None,
        temperature: None,
    }
}

fn weather_tool() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }]
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().expect("an object").clone()
}

fn ollama(server: &Server) -> OllamaClient {
    OllamaClient::new(&server.url(), None).unwrap()
}

fn openai(server: &Server, key: Option<&str>) -> OpenAiClient {
    OpenAiClient::new(&server.url(), key.and_then(ApiKey::new)).unwrap()
}

const OLLAMA_DONE: &str = r#"{"model":"gemma4:e2b","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":42,"eval_count":7}"#;

#[test]
fn ollama_streams_content_and_token_counts() {
    let server = Server::start(vec![Reply::ndjson(&[
        r#"{"model":"gemma4:e2b","message":{"role":"assistant","content":"It is "},"done":false}"#,
        r#"{"model":"gemma4:e2b","message":{"role":"assistant","content":"raining."},"done":false}"#,
        OLLAMA_DONE,
    ])]);
    let resp = ollama(&server).chat(&request(vec![])).unwrap();
    assert_eq!(resp.content, "It is raining.");
    assert!(resp.tool_calls.is_empty());
    assert_eq!((resp.input_tokens, resp.output_tokens), (42, 7));
    assert!(!resp.text_tool_fallback);
    let sent = &server.requests()[0];
    assert_eq!(sent.request_line, "POST /api/chat HTTP/1.1");
    assert_eq!(sent.body["model"], "gemma4:e2b");
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["messages"][0], json!({"role": "system", "content": "be brief"}));
    assert_eq!(sent.body["messages"][1]["role"], "user");
    assert!(sent.body.get("tools").is_none(), "no tools offered, no tools key: {}", sent.body);
    assert_eq!(sent.header("authorization"), None);
}

#[test]
fn ollama_tool_calls_arrive_as_objects_and_history_round_trips() {
    let server = Server::start(vec![Reply::ndjson(&[
        r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Oslo"}}}]},"done":false}"#,
        OLLAMA_DONE,
    ])]);
    let mut req = request(weather_tool());
    let mut earlier = ChatMessage::assistant("");
    earlier.tool_calls.push(ToolCall { name: "get_time".into(), arguments: args(json!({"tz": "UTC"})) });
    req.messages.push(earlier);
    req.messages.push(ChatMessage::tool("get_time", "12:00"));
    let resp = ollama(&server).chat(&req).unwrap();
    assert_eq!(
        resp.tool_calls,
        vec![ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) }]
    );
    let body = &server.requests()[0].body;
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["tools"][0]["function"]["parameters"]["required"][0], "city");
    assert_eq!(body["messages"][2]["tool_calls"][0]["function"]["arguments"], json!({"tz": "UTC"}));
    assert_eq!(body["messages"][3], json!({"role": "tool", "content": "12:00", "tool_name": "get_time"}));
}

#[test]
fn openai_assembles_deltas_streamed_tool_arguments_and_usage() {
    let server = Server::start(vec![Reply::sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Checking"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":" both."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Oslo\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":" \"Bergen\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":33,"total_tokens":153}}"#,
        "[DONE]",
    ])]);
    let resp = openai(&server, Some(KEY)).chat(&request(weather_tool())).unwrap();
    assert_eq!(resp.content, "Checking both.");
    assert_eq!(
        resp.tool_calls,
        vec![
            ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) },
            ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Bergen"})) },
        ]
    );
    assert_eq!((resp.input_tokens, resp.output_tokens), (120, 33));
    let sent = &server.requests()[0];
    assert_eq!(sent.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["model"], "gemma4:e2b");
    assert_eq!(sent.body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
}

#[test]
fn openai_sends_no_authorization_without_a_key_and_keeps_a_v1_base() {
    let server = Server::start(vec![Reply::sse(&[r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#, "[DONE]"])]);
    let client = OpenAiClient::new(&format!("{}/v1/", server.url()), None).unwrap();
    let resp = client.chat(&request(vec![])).unwrap();
    assert_eq!(resp.content, "hi");
    assert_eq!((resp.input_tokens, resp.output_tokens), (0, 0), "no usage chunk: zero, not an error");
    let sent = &server.requests()[0];
    assert_eq!(sent.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(sent.header("authorization"), None);
    assert!(sent.body.get("tools").is_none());
}

#[test]
fn openai_history_pairs_tool_results_with_call_ids() {
    let server = Server::start(vec![Reply::sse(&[r#"{"choices":[{"index":0,"delta":{"content":"ok"}}]}"#, "[DONE]"])]);
    let mut req = request(weather_tool());
    let mut asked = ChatMessage::assistant("");
    asked.tool_calls.push(ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) });
    asked.tool_calls.push(ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Bergen"})) });
    req.messages.extend([asked, ChatMessage::tool("get_weather", "rain"), ChatMessage::tool("get_weather", "sun")]);
    openai(&server, None).chat(&req).unwrap();
    let m = &server.requests()[0].body["messages"];
    let (id0, id1) = (&m[2]["tool_calls"][0]["id"], &m[2]["tool_calls"][1]["id"]);
    assert_ne!(id0, id1);
    assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], r#"{"city":"Oslo"}"#, "arguments go as a string");
    assert_eq!((&m[3]["tool_call_id"], &m[4]["tool_call_id"]), (id0, id1));
}

/// The bodies the old client sent, which strict servers refuse: planned
/// steps' results as `tool` messages no assistant call precedes, and the
/// model's own calls echoed as an assistant message without `tool_calls`.
/// The strict test server answers them 400 with the server's error body.
#[test]
fn the_strict_server_refuses_the_old_unpaired_bodies() {
    let server = Server::start(vec![Reply::sse(&["[DONE]"])]);
    let planned = json!({"model": "m", "stream": true, "messages": [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "tool", "content": "rain", "tool_call_id": "call_1"},
    ]});
    let own = json!({"model": "m", "stream": true, "messages": [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "content": "rain", "tool_call_id": "call_2"},
    ]});
    let unanswered = json!({"model": "m", "stream": true, "messages": [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "user", "content": "well?"},
    ]});
    let object_arguments = json!({"model": "m", "stream": true, "messages": [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "content": "rain", "tool_call_id": "a"},
    ]});
    for (name, body) in [("planned", &planned), ("own", &own), ("unanswered", &unanswered), ("args", &object_arguments)]
    {
        let (status, answer) = post_json(&server.url(), "/v1/chat/completions", body);
        assert_eq!(status, 400, "{name}: {answer}");
        assert!(answer.contains("invalid_request_error"), "{name}: an OpenAI error body: {answer}");
    }
    let ollama_planned = json!({"model": "m", "stream": true, "messages": [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "tool", "content": "rain", "tool_name": "get_weather"},
    ]});
    let (status, answer) = post_json(&server.url(), "/api/chat", &ollama_planned);
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("\"error\":\"") && answer.contains("answers no call"), "{answer}");
    assert_eq!(server.rejections().len(), 5);

    // The same conversations as the client now sends them are accepted.
    let paired = json!({"model": "m", "stream": true, "messages": [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1_0", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "content": "rain", "tool_call_id": "call_1_0"},
    ]});
    let (status, answer) = post_json(&server.url(), "/v1/chat/completions", &paired);
    assert_eq!(status, 200, "{answer}");
}

/// A history as the reply loop builds it — the planned steps as one
/// assistant message's calls with their results, then the model's own
/// call and its result — reaches both servers paired as their protocols
/// require, and the strict server accepts it.
#[test]
fn planned_steps_and_the_models_own_calls_go_paired_to_both_servers() {
    let mut req = request(weather_tool());
    let planned = vec![
        ToolCall { name: "get_location".into(), arguments: args(json!({})) },
        ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) },
    ];
    req.messages.push(ChatMessage::assistant_calls("", planned));
    req.messages.push(ChatMessage::tool("get_location", "Oslo"));
    req.messages.push(ChatMessage::tool("get_weather", "rain"));
    let own = vec![ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Bergen"})) }];
    req.messages.push(ChatMessage::assistant_calls("And Bergen?", own));
    req.messages.push(ChatMessage::tool("get_weather", "sun"));

    let server = Server::start(vec![Reply::sse(&[r#"{"choices":[{"index":0,"delta":{"content":"ok"}}]}"#, "[DONE]"])]);
    openai(&server, None).chat(&req).unwrap();
    assert_eq!(server.rejections(), Vec::<String>::new());
    let m = &server.requests()[0].body["messages"];
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["tool_calls"][1]["type"], "function");
    assert_eq!(m[2]["tool_calls"][1]["function"], json!({"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}));
    assert_eq!(m[3]["tool_call_id"], m[2]["tool_calls"][0]["id"]);
    assert_eq!(m[4]["tool_call_id"], m[2]["tool_calls"][1]["id"]);
    assert_eq!(m[5]["content"], "And Bergen?");
    assert_eq!(m[6]["tool_call_id"], m[5]["tool_calls"][0]["id"]);
    let ids: std::collections::HashSet<&Value> = [&m[3], &m[4], &m[6]].iter().map(|t| &t["tool_call_id"]).collect();
    assert_eq!(ids.len(), 3, "ids are unique within the request");
    assert!(m.as_array().unwrap().iter().all(|x| x.get("tool_name").is_none()), "no Ollama fields");

    // The same ids in the next request: the history's ids are stable.
    req.messages.push(ChatMessage::user("thanks"));
    openai(&server, None).chat(&req).unwrap();
    assert_eq!(server.requests()[1].body["messages"][2]["tool_calls"], m[2]["tool_calls"]);

    let server = Server::start(vec![Reply::ndjson(&[OLLAMA_DONE])]);
    ollama(&server).chat(&req).unwrap();
    assert_eq!(server.rejections(), Vec::<String>::new());
    let m = &server.requests()[0].body["messages"];
    assert_eq!(m[2]["tool_calls"][1], json!({"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}));
    assert_eq!(m[3], json!({"role": "tool", "content": "Oslo", "tool_name": "get_location"}));
    assert_eq!(m[4], json!({"role": "tool", "content": "rain", "tool_name": "get_weather"}));
    assert_eq!(m[6], json!({"role": "tool", "content": "sun", "tool_name": "get_weather"}));
}

/// A history the protocol forbids is the caller's bug: refused with
/// [`LlmError::Protocol`] before anything is sent, in native and text mode.
#[test]
fn an_unpaired_history_is_refused_before_it_is_sent() {
    let orphan = {
        let mut r = request(weather_tool());
        r.messages.push(ChatMessage::tool("get_weather", "rain"));
        r
    };
    let unanswered = {
        let mut r = request(weather_tool());
        let call = ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) };
        r.messages.push(ChatMessage::assistant_calls("", vec![call]));
        r.messages.push(ChatMessage::user("well?"));
        r
    };
    let wrong_tool = {
        let mut r = request(weather_tool());
        let call = ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) };
        r.messages.push(ChatMessage::assistant_calls("", vec![call]));
        r.messages.push(ChatMessage::tool("get_time", "12:00"));
        r
    };
    let server = Server::start(vec![Reply::ndjson(&[OLLAMA_DONE])]);
    for req in [&orphan, &unanswered, &wrong_tool] {
        for client in [
            Box::new(ollama(&server)) as Box<dyn LlmClient>,
            Box::new(ollama(&server).with_native_tools(NativeTools::Off)),
            Box::new(openai(&server, None)),
        ] {
            let err = client.chat(req).unwrap_err();
            assert!(matches!(err, LlmError::Protocol(_)), "{}: {err:?}", client.provider());
        }
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

/// Token counts reach `llm.call_completed` from every stream format that
/// reports them: OpenAI's final usage chunk (`stream_options.include_usage`),
/// vLLM's running usage on every chunk, llama.cpp's final chunk with
/// `usage` and `timings` and an older llama.cpp's `timings` alone, and
/// Ollama's `done` line.
#[test]
fn usage_is_read_from_every_servers_stream_format() {
    let text = r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#;
    let openai_cases: [(&str, Vec<&str>, (u32, u32)); 4] = [
        (
            "openai final usage chunk",
            vec![text, r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}"#],
            (11, 3),
        ),
        (
            "vllm running usage",
            vec![
                r#"{"choices":[{"index":0,"delta":{"content":"h"}}],"usage":{"prompt_tokens":11,"completion_tokens":1}}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"i"}}],"usage":{"prompt_tokens":11,"completion_tokens":2}}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            ],
            (11, 2),
        ),
        (
            "llama.cpp usage and timings",
            vec![
                text,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":21,"completion_tokens":4},"timings":{"prompt_n":5,"predicted_n":4}}"#,
            ],
            (21, 4),
        ),
        (
            "llama.cpp timings only",
            vec![
                text,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"timings":{"prompt_n":17,"prompt_ms":12.5,"predicted_n":6,"predicted_ms":40.1}}"#,
            ],
            (17, 6),
        ),
    ];
    let p = prices();
    for (name, mut events, want) in openai_cases {
        events.push("[DONE]");
        let server = Server::start(vec![Reply::sse(&events)]);
        let req = ChatRequest { model: "gpt-5-mini".into(), ..request(vec![]) };
        let resp = openai(&server, None).chat(&req);
        let e = call_completed(&req, &resp, Duration::from_millis(5), &p);
        assert_eq!((e.input_tokens, e.output_tokens), want, "{name}");
        assert!(e.cost_usd > Decimal::ZERO, "{name}: priced");
    }
    let server = Server::start(vec![Reply::ndjson(&[
        r#"{"model":"m","message":{"role":"assistant","content":"hi"},"done":false}"#,
        OLLAMA_DONE,
    ])]);
    let req = request(vec![]);
    let e = call_completed(&req, &ollama(&server).chat(&req), Duration::from_millis(5), &p);
    assert_eq!((e.input_tokens, e.output_tokens), (42, 7), "ollama done line");
}

#[test]
fn http_500_is_an_http_error_with_a_truncated_body() {
    let long = format!("{{\"error\":\"{}\"}}", "x".repeat(5_000));
    for client in clients(&Server::start(vec![Reply::status(500, &long)])) {
        match client.chat(&request(vec![])) {
            Err(LlmError::Http { status: 500, body }) => {
                assert!(body.starts_with("{\"error\":\"xxx"), "{body}");
                assert!(body.chars().count() <= 513, "truncated: {} chars", body.chars().count());
            }
            other => panic!("{}: {other:?}", client.provider()),
        }
    }
}

fn clients(server: &Server) -> Vec<Box<dyn LlmClient>> {
    vec![Box::new(ollama(server)), Box::new(openai(server, None))]
}

/// A 400 is that call's error, whatever its body says about tools: the
/// next call with tools goes natively again, for both protocols (the old
/// client read "tool" in a 400 as "no native tools" and went text-only for
/// the rest of the process, hiding a strict server's protocol errors).
#[test]
fn a_400_is_an_error_for_that_call_and_never_switches_to_text_tools() {
    let refusals = [
        r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
        r#"{"error":{"message":"messages with role 'tool' must be a response to a preceding message with 'tool_calls'","type":"invalid_request_error"}}"#,
    ];
    for refusal in refusals {
        for provider in ["ollama", "openai"] {
            let ok = match provider {
                "ollama" => Reply::ndjson(&[OLLAMA_DONE]),
                _ => Reply::sse(&[r#"{"choices":[{"index":0,"delta":{"content":"ok"}}]}"#, "[DONE]"]),
            };
            let server = Server::start(vec![Reply::status(400, refusal), ok]);
            let client: Box<dyn LlmClient> = match provider {
                "ollama" => Box::new(ollama(&server)),
                _ => Box::new(openai(&server, None)),
            };
            let err = client.chat(&request(weather_tool())).unwrap_err();
            assert!(matches!(err, LlmError::Http { status: 400, .. }), "{provider}: {err:?}");
            assert_eq!(err.outcome(), LlmOutcome::HttpError);
            let resp = client.chat(&request(weather_tool())).unwrap();
            assert!(!resp.text_tool_fallback, "{provider}: a 400 switched the client to text tools");
            let sent = server.requests();
            assert_eq!(sent.len(), 2, "{provider}: no silent retry in text mode");
            for r in &sent {
                assert!(r.body.get("tools").is_some(), "{provider}: tools went natively: {}", r.body);
            }
        }
    }
}

/// `native_tools = "auto"` on Ollama asks `/api/show` once per model (then
/// trusts the answer for a while): a model whose capabilities list no
/// `tools` gets them as text guidance, with the calls parsed back out.
#[test]
fn ollama_auto_sends_tools_as_text_when_the_model_lists_no_tools_capability() {
    let text_answer =
        "Let me look.\n```tool_call\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n```";
    let done = OLLAMA_DONE.replace("\"content\":\"\"", &format!("\"content\":{}", json!(text_answer)));
    let server = Server::start(vec![Reply::ndjson(&[&done])]);
    server.set_capabilities(&["completion"]);
    let client = ollama(&server);
    for round in 0..2 {
        let resp = client.chat(&request(weather_tool())).unwrap();
        assert!(resp.text_tool_fallback, "round {round}");
        assert_eq!(resp.content, "Let me look.");
        assert_eq!(
            resp.tool_calls,
            vec![ToolCall { name: "get_weather".into(), arguments: args(json!({"city": "Oslo"})) }]
        );
    }
    let probes = server.probes();
    assert_eq!(probes.len(), 1, "the probe's answer is remembered");
    assert_eq!(probes[0].request_line, "POST /api/show HTTP/1.1");
    assert_eq!(probes[0].body, json!({"model": "gemma4:e2b"}));
    for sent in server.requests() {
        assert!(sent.body.get("tools").is_none(), "{}", sent.body);
        let system = sent.body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("be brief"), "guidance joins the existing system message");
        assert!(system.contains("```tool_call") && system.contains("get_weather: Current weather for a city"));
    }
    // Without tools there is nothing to probe, and no guidance.
    let plain = client.chat(&request(vec![])).unwrap();
    assert!(!plain.text_tool_fallback);
    assert!(!server.requests()[2].body["messages"][0]["content"].as_str().unwrap().contains("tool_call"));
    assert_eq!(server.probes().len(), 1);

    // A model with tools: native, one probe of its own.
    let native = Server::start(vec![Reply::ndjson(&[OLLAMA_DONE])]);
    let client = ollama(&native);
    assert!(!client.chat(&request(weather_tool())).unwrap().text_tool_fallback);
    assert!(native.requests()[0].body.get("tools").is_some());
    assert_eq!(native.probes().len(), 1);
}

/// `native_tools` set explicitly is obeyed without a probe: `on` sends the
/// tools natively, `off` as text, for both protocols; and the section key
/// reaches the clients `[llm]` builds.
#[test]
fn native_tools_on_and_off_are_obeyed_without_a_probe() {
    let ok_text = r#"{"choices":[{"index":0,"delta":{"content":"```tool_call\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}\n```"}}]}"#;
    for (mode, native) in [(NativeTools::On, true), (NativeTools::Off, false)] {
        let server = Server::start(vec![Reply::ndjson(&[OLLAMA_DONE])]);
        server.set_capabilities(&["completion"]);
        let resp = ollama(&server).with_native_tools(mode).chat(&request(weather_tool())).unwrap();
        assert_eq!(resp.text_tool_fallback, !native, "{mode:?}");
        assert_eq!(server.requests()[0].body.get("tools").is_some(), native, "{mode:?}");
        assert!(server.probes().is_empty(), "{mode:?}: no probe");

        let server = Server::start(vec![Reply::sse(&[ok_text, "[DONE]"])]);
        let section = LlmSection {
            provider: "openai".into(),
            base_url: server.url(),
            model: "gpt-5-mini".into(),
            native_tools: mode,
            ..LlmSection::default()
        };
        let client = client_from_config_with_env(&section, |_| None).unwrap().unwrap();
        let resp = client.chat(&request(weather_tool())).unwrap();
        assert_eq!(resp.text_tool_fallback, !native, "openai {mode:?}");
        assert_eq!(server.requests()[0].body.get("tools").is_some(), native, "openai {mode:?}");
        if !native {
            assert_eq!(resp.tool_calls[0].arguments, args(json!({"city": "Rome"})));
        }
    }
}

#[test]
fn a_400_without_tools_offered_is_a_plain_http_error() {
    let server = Server::start(vec![Reply::status(400, r#"{"error":"does not support tools"}"#)]);
    let err = ollama(&server).chat(&request(vec![])).unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 400, .. }), "{err:?}");
    assert_eq!(err.outcome(), LlmOutcome::HttpError);
}

fn assert_times_out(client: &dyn LlmClient, timeout: Duration) {
    let mut req = request(vec![]);
    req.timeout = timeout;
    let started = Instant::now();
    let err = client.chat(&req).unwrap_err();
    let elapsed = started.elapsed();
    assert!(matches!(err, LlmError::Timeout { after_ms } if after_ms == timeout.as_millis() as u64), "{err:?}");
    assert_eq!(err.outcome(), LlmOutcome::Timeout);
    // ureq's own clock for the call's budget may fire a fraction of a
    // millisecond before this test's (a CI run saw 799.89 ms of 800): a
    // timeout on time, not early.
    let early = Duration::from_millis(20);
    assert!(elapsed + early >= timeout && elapsed < timeout + Duration::from_secs(1), "{elapsed:?}");
}

#[test]
fn a_server_slow_to_answer_times_out_on_time() {
    let slow = Reply { delay_before_headers: Duration::from_secs(4), ..Reply::ndjson(&[OLLAMA_DONE]) };
    let server = Server::start(vec![slow]);
    assert_times_out(&ollama(&server), Duration::from_millis(600));
    assert_times_out(&openai(&server, None), Duration::from_millis(600));
}

#[test]
fn a_stream_that_stalls_times_out_on_the_whole_call_budget() {
    // Each chunk arrives well within the timeout, the whole stream does not.
    let chunks: Vec<String> =
        (0..10).map(|_| r#"{"message":{"role":"assistant","content":"."},"done":false}"#.to_owned() + "\n").collect();
    let trickle =
        Reply { delay_between_chunks: Duration::from_millis(300), ..Reply::ok("application/x-ndjson", chunks) };
    let server = Server::start(vec![trickle]);
    assert_times_out(&ollama(&server), Duration::from_millis(800));
}

#[test]
fn a_garbage_line_mid_stream_is_malformed_naming_the_line() {
    let server = Server::start(vec![Reply::ndjson(&[
        r#"{"message":{"role":"assistant","content":"a"},"done":false}"#,
        "<html>proxy error</html>",
        OLLAMA_DONE,
    ])]);
    let err = ollama(&server).chat(&request(vec![])).unwrap_err();
    assert!(matches!(&err, LlmError::Malformed(m) if m.contains("line 2")), "{err:?}");
    assert_eq!(err.outcome(), LlmOutcome::Malformed);

    let server =
        Server::start(vec![Reply::sse(&[r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#, "{oops", "[DONE]"])]);
    let err = openai(&server, None).chat(&request(vec![])).unwrap_err();
    // Events are `data: ...` then a blank line: the garbage is on line 3.
    assert!(matches!(&err, LlmError::Malformed(m) if m.contains("line 3")), "{err:?}");
}

#[test]
fn a_stream_that_ends_early_is_malformed() {
    let server =
        Server::start(vec![Reply::ndjson(&[r#"{"message":{"role":"assistant","content":"a"},"done":false}"#])]);
    let err = ollama(&server).chat(&request(vec![])).unwrap_err();
    assert!(matches!(&err, LlmError::Malformed(m) if m.contains("done")), "{err:?}");

    let server = Server::start(vec![Reply::sse(&[r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#])]);
    let err = openai(&server, None).chat(&request(vec![])).unwrap_err();
    assert!(matches!(&err, LlmError::Malformed(m) if m.contains("[DONE]")), "{err:?}");
}

#[test]
fn streamed_tool_arguments_that_are_not_json_are_malformed() {
    let server = Server::start(vec![Reply::sse(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"get_weather","arguments":"{\"city\":"}}]}}]}"#,
        "[DONE]",
    ])]);
    let err = openai(&server, None).chat(&request(weather_tool())).unwrap_err();
    assert!(matches!(&err, LlmError::Malformed(m) if m.contains("get_weather")), "{err:?}");
}

#[test]
fn connection_refused_is_unreachable() {
    let url = refused_url();
    let started = Instant::now();
    for client in [
        Box::new(OllamaClient::new(&url, None).unwrap()) as Box<dyn LlmClient>,
        Box::new(OpenAiClient::new(&url, None).unwrap()),
    ] {
        let err = client.chat(&request(vec![])).unwrap_err();
        assert!(matches!(err, LlmError::Unreachable(_)), "{}: {err:?}", client.provider());
        assert_eq!(err.outcome(), LlmOutcome::Unreachable);
    }
    assert!(started.elapsed() < Duration::from_secs(2), "refusal is immediate, not a timeout");
}

#[test]
fn the_api_key_never_shows_in_errors_or_debug_output() {
    let echo = Reply { echo_authorization: true, ..Reply::status(401, r#"{"error":"invalid key"}"#) };
    let server = Server::start(vec![echo]);
    let section = LlmSection {
        provider: "openai".into(),
        base_url: server.url(),
        model: "gpt-5-mini".into(),
        api_key_env: "ENGRAM_TEST_LLM_KEY".into(),
        ..LlmSection::default()
    };
    let env = |name: &str| (name == "ENGRAM_TEST_LLM_KEY").then(|| KEY.to_owned());
    let client = client_from_config_with_env(&section, env).unwrap().expect("a client");
    let err = client.chat(&request(vec![])).unwrap_err();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key was sent"
    );
    let LlmError::Http { status: 401, body } = &err else { panic!("{err:?}") };
    assert!(body.contains("(you sent: Bearer <redacted>)"), "{body}");
    for shown in [
        err.to_string(),
        format!("{err:?}"),
        format!("{:?}", OpenAiClient::new(&server.url(), ApiKey::new(KEY)).unwrap()),
    ] {
        assert!(!shown.contains(KEY) && !shown.contains("SECRET"), "{shown}");
    }
    assert_eq!(format!("{:?}", ApiKey::new(KEY).unwrap()), "ApiKey(<redacted>)");

    // A named variable that is unset is an error naming the variable.
    let e = client_from_config_with_env(&section, |_| None).err().expect("an error").to_string();
    assert!(e.contains("ENGRAM_TEST_LLM_KEY"), "{e}");
}

#[test]
fn client_from_config_picks_the_adapter_or_offline_mode() {
    let none = |_: &str| None;
    assert!(client_from_config_with_env(&LlmSection::default(), none).unwrap().is_none(), "offline mode");
    let ollama = LlmSection { provider: "ollama".into(), ..LlmSection::default() };
    assert_eq!(client_from_config_with_env(&ollama, none).unwrap().unwrap().provider(), "ollama");
    let openai =
        LlmSection { provider: "openai".into(), base_url: "http://127.0.0.1:1".into(), ..LlmSection::default() };
    assert_eq!(client_from_config_with_env(&openai, none).unwrap().unwrap().provider(), "openai");
    let e = client_from_config_with_env(&LlmSection { provider: "gemini".into(), ..LlmSection::default() }, none)
        .err()
        .expect("an error")
        .to_string();
    assert!(e.contains("\"gemini\"") && e.contains("ollama"), "{e}");
    let e = client_from_config_with_env(&LlmSection { base_url: String::new(), ..openai.clone() }, none).err().unwrap();
    assert!(e.to_string().contains("base_url"), "{e}");
    let e =
        client_from_config_with_env(&LlmSection { base_url: "127.0.0.1:11434".into(), ..ollama }, none).err().unwrap();
    assert!(e.to_string().contains("http://"), "{e}");
}

fn prices() -> PriceTable {
    let mut t = PriceTable { provider: "openai".into(), version: "2026-11".into(), ..PriceTable::default() };
    t.prices.insert(
        "gpt-5-mini".into(),
        ModelPrice {
            input_per_mtok: Decimal::from_str("0.15").unwrap(),
            output_per_mtok: Decimal::from_str("0.60").unwrap(),
        },
    );
    t
}

#[test]
fn cost_is_exact_decimal_arithmetic() {
    let t = prices();
    // 1234 * 0.15 / 1e6 + 567 * 0.60 / 1e6 = 0.0001851 + 0.0003402
    let cost = t.cost("gpt-5-mini", 1234, 567);
    assert_eq!(cost, Decimal::from_str("0.0005253").unwrap());
    assert_eq!(cost.to_string(), "0.0005253");
    // (2^32 - 1) * 0.75 / 1e6, no rounding anywhere.
    assert_eq!(t.cost("gpt-5-mini", u32::MAX, u32::MAX), Decimal::from_str("3221.22547125").unwrap());
    assert_eq!(t.cost("gpt-unknown", 1_000_000, 1_000_000), Decimal::ZERO);
    assert_eq!(t.version_for("gpt-5-mini"), "2026-11");
    assert_eq!(t.version_for("gpt-unknown"), "unpriced", "a paid provider's unlisted model is not free");
    let local = PriceTable { provider: "ollama".into(), ..t.clone() };
    assert_eq!(local.version_for("gemma4:e2b"), "local");
    assert_eq!(local.cost("gemma4:e2b", 10_000, 10_000), Decimal::ZERO);
}

#[test]
fn price_table_comes_from_config() {
    let toml = "[llm]\nprovider = \"openai\"\npricing_version = \"2026-11\"\n\n[llm.prices.gpt-5-mini]\ninput_per_mtok = \"0.15\"\noutput_per_mtok = \"0.60\"\n";
    let config = engram_actors::config::Config::from_toml(toml, std::path::Path::new("engram.toml")).unwrap();
    assert_eq!(PriceTable::from_config(&config.llm), prices());
}

#[test]
fn call_completed_records_ok_and_failed_calls() {
    let req = ChatRequest { model: "gpt-5-mini".into(), context: LlmContext::Planner, ..request(vec![]) };
    let ok =
        Ok(ChatResponse { content: "[]".into(), input_tokens: 1234, output_tokens: 567, ..ChatResponse::default() });
    let e = call_completed(&req, &ok, Duration::from_millis(1500), &prices());
    assert_eq!(e.model, "openai:gpt-5-mini");
    assert_eq!(e.context, LlmContext::Planner);
    assert_eq!((e.input_tokens, e.output_tokens), (1234, 567));
    assert_eq!(e.cost_usd, Decimal::from_str("0.0005253").unwrap());
    assert_eq!(e.pricing_version, "2026-11");
    assert_eq!(e.latency_ms, 1500);
    assert_eq!(e.outcome, LlmOutcome::Ok);

    let timed_out = Err(LlmError::Timeout { after_ms: 6000 });
    let e = call_completed(&req, &timed_out, Duration::from_millis(6012), &prices());
    assert_eq!((e.input_tokens, e.output_tokens, e.cost_usd), (0, 0, Decimal::ZERO));
    assert_eq!(e.latency_ms, 6012);
    assert_eq!(e.outcome, LlmOutcome::Timeout);
    assert_eq!(e.model, "openai:gpt-5-mini");

    // Issue 40 item 6: what happened, said — a request refused before it
    // was sent is a protocol error (it was `unreachable`), tools went
    // natively or as text, the answer was held to a schema or not.
    let refused = Err(LlmError::Protocol("call a to get_weather is never answered".into()));
    assert_eq!(call_completed(&req, &refused, Duration::ZERO, &prices()).outcome, LlmOutcome::ProtocolError);
    let (none, structured) = {
        let e = call_completed(
            &req,
            &Ok(ChatResponse { structured: true, ..ChatResponse::default() }),
            Duration::ZERO,
            &prices(),
        );
        (e.tools, e.structured)
    };
    assert_eq!((none, structured), (LlmTools::None, true));
    let with_tools = request(weather_tool());
    let as_text = Ok(ChatResponse { text_tool_fallback: true, ..ChatResponse::default() });
    assert_eq!(call_completed(&with_tools, &as_text, Duration::ZERO, &prices()).tools, LlmTools::Text);
    assert_eq!(
        call_completed(&with_tools, &Ok(ChatResponse::default()), Duration::ZERO, &prices()).tools,
        LlmTools::Native
    );
    assert_eq!(call_completed(&with_tools, &timed_out, Duration::ZERO, &prices()).tools, LlmTools::Unknown);
}

/// A server that echoes the key — in a 200 answer's text or tool call, or
/// in an error body — JSON-escaped (`\/`), percent-encoded or as it is:
/// none of it reaches the caller, so none of it reaches an event or a log.
#[test]
fn an_echoed_key_is_scrubbed_in_every_spelling() {
    const SLASHED: &str = "sk-pro/j+SECRET=42";
    let percent = "sk-pro%2Fj%2BSECRET%3D42";
    // On the wire: the key JSON-escaped with `\/` (decodes to the key), the
    // key escaped twice (decodes to `sk-pro\/j…`, a quoted JSON body), and
    // percent-encoded.
    let once = r"sk-pro\/j+SECRET=42";
    let twice = r"sk-pro\\\/j+SECRET=42";
    let chunk = format!(
        r#"{{"choices":[{{"index":0,"delta":{{"content":"raw {SLASHED}, once {once}, twice {twice}, encoded {percent}"}}}}]}}"#
    );
    let call = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": format!("{{\"city\":\"{SLASHED}\"}}")}}]}}]})
    .to_string();
    let error = Reply::status(500, &format!(r#"{{"error":"bad key sk-pro\/j+SECRET=42 ({percent})"}}"#));
    let server = Server::start(vec![Reply::sse(&[&chunk, &call, "[DONE]"]), error]);
    let client = openai(&server, Some(SLASHED));
    let resp = client.chat(&request(weather_tool())).unwrap();
    let shown = format!("{} {:?}", resp.content, resp.tool_calls);
    assert!(resp.content.starts_with("raw <redacted>"), "{shown}");
    assert!(!shown.contains("SECRET"), "{shown}");
    let err = client.chat(&request(vec![])).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("<redacted>") && !shown.contains("SECRET"), "{shown}");
}

/// Structured output (issue 40 item 1): a plan's schema and its token bound
/// go to each server in its own field, and the answer says it was decoded
/// under the schema.
#[test]
fn the_answer_schema_and_token_bound_go_to_both_servers() {
    let schema = engram_actors::llm::structured::plan_schema(&weather_tool(), 5);
    let req = ChatRequest { answer_schema: Some(schema.clone()), max_tokens: Some(512), ..request(vec![]) };
    let server = Server::start(vec![
        Reply::sse(&[r#"{"choices":[{"delta":{"content":"[]"}}]}"#, "[DONE]"]),
        Reply::ndjson(&[OLLAMA_DONE]),
    ]);
    assert!(openai(&server, None).chat(&req).unwrap().structured);
    assert!(ollama(&server).chat(&req).unwrap().structured);
    let sent = server.requests();
    assert!(server.rejections().is_empty(), "{:?}", server.rejections());
    assert_eq!(sent[0].body["response_format"]["type"], "json_schema");
    assert_eq!(sent[0].body["response_format"]["json_schema"]["schema"], schema);
    assert_eq!(sent[0].body["max_tokens"], 512);
    assert_eq!(sent[1].body["format"], schema);
    assert_eq!(sent[1].body["options"]["num_predict"], 512);
    assert_eq!(
        sent[0].body["response_format"]["json_schema"]["schema"]["items"]["properties"]["tool"]["enum"],
        json!(["get_weather"])
    );
}

/// A server without structured output refuses the field (HTTP 400): the
/// call is made again without it and answers, and that model is asked
/// without a schema from then on — one refusal, not one a turn.
#[test]
fn a_server_without_structured_output_is_asked_again_without_the_schema() {
    let server = Server::respond_with(|req| match req.body.get("response_format") {
        Some(_) => Reply::status(
            400,
            r#"{"error":{"message":"Unrecognized request argument supplied: response_format","type":"invalid_request_error"}}"#,
        ),
        None => Reply::sse(&[r#"{"choices":[{"delta":{"content":"[]"}}]}"#, "[DONE]"]),
    });
    let client = openai(&server, None);
    let schema = engram_actors::llm::structured::plan_schema(&weather_tool(), 5);
    let req = ChatRequest { answer_schema: Some(schema), ..request(vec![]) };
    for _ in 0..2 {
        let resp = client.chat(&req).unwrap();
        assert_eq!((resp.content.as_str(), resp.structured), ("[]", false));
    }
    let with_schema = server.requests().iter().filter(|r| r.body.get("response_format").is_some()).count();
    assert_eq!((server.requests().len(), with_schema), (3, 1), "asked with the schema once");
}
