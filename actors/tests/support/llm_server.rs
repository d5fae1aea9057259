//! A scripted local HTTP/1.1 server for the LLM tests: it answers each
//! request with the next scripted [`Reply`] (the last one repeats) or, with
//! [`Server::respond_with`], with whatever a function of the request says
//! (so a runtime's concurrent contexts each get their own script); streams
//! bodies chunked with optional pauses, and records every request so tests
//! can assert what the client sent.
//!
//! It is strict, as real servers are: a chat request that breaks its
//! protocol ([`check_openai`] for `/v1/chat/completions`, [`check_ollama`]
//! for `/api/chat`) is answered 400 with the server's error body before the
//! script is consulted, and recorded with the reason ([`Server::rejections`]).
//! `/api/show` is answered from [`Server::set_capabilities`] (default:
//! completion and tools), as Ollama lists a model's capabilities.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// How the server answers one request.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The content type.
    pub content_type: &'static str,
    /// Wait this long before sending anything.
    pub delay_before_headers: Duration,
    /// Body pieces, each sent as one HTTP chunk.
    pub chunks: Vec<String>,
    /// Wait this long between pieces.
    pub delay_between_chunks: Duration,
    /// Echo the request's Authorization header into the body (to check
    /// the client redacts what a server sends back).
    pub echo_authorization: bool,
}

impl Reply {
    /// 200 with an NDJSON stream, one line per chunk.
    pub fn ndjson(lines: &[&str]) -> Reply {
        Reply::ok("application/x-ndjson", lines.iter().map(|l| format!("{l}\n")).collect())
    }

    /// 200 with server-sent events, one `data:` event per chunk.
    pub fn sse(events: &[&str]) -> Reply {
        Reply::ok("text/event-stream", events.iter().map(|e| format!("data: {e}\n\n")).collect())
    }

    /// 200 with these raw body pieces.
    pub fn ok(content_type: &'static str, chunks: Vec<String>) -> Reply {
        Reply {
            status: 200,
            content_type,
            delay_before_headers: Duration::ZERO,
            chunks,
            delay_between_chunks: Duration::ZERO,
            echo_authorization: false,
        }
    }

    /// An error status with a JSON body.
    pub fn status(status: u16, body: &str) -> Reply {
        Reply { status, ..Reply::ok("application/json", vec![body.to_owned()]) }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `POST /api/chat`.
    pub request_line: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
    /// The error body (saying why) the strict server answered 400 with
    /// (`None`: the request was valid).
    pub rejected: Option<String>,
}

impl Recorded {
    /// A header's value, if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Chooses the reply to a request.
type Responder = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// A running server; it lives until the test process ends.
pub struct Server {
    addr: SocketAddr,
    state: Arc<State>,
}

/// What the connection threads share.
struct State {
    requests: Mutex<Vec<Recorded>>,
    probes: Mutex<Vec<Recorded>>,
    capabilities: Mutex<Vec<String>>,
}

impl Server {
    /// Starts a server that answers with `script` in order (of connection).
    pub fn start(script: Vec<Reply>) -> Server {
        assert!(!script.is_empty());
        let next = std::sync::atomic::AtomicUsize::new(0);
        Server::respond_with(move |_| {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            script[i.min(script.len() - 1)].clone()
        })
    }

    /// Starts a server that answers each request with `respond(request)`.
    pub fn respond_with(respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(State {
            requests: Mutex::new(Vec::new()),
            probes: Mutex::new(Vec::new()),
            capabilities: Mutex::new(vec!["completion".into(), "tools".into()]),
        });
        let shared = Arc::clone(&state);
        let respond: Arc<Responder> = Arc::new(respond);
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&shared);
                let respond = Arc::clone(&respond);
                thread::spawn(move || serve(stream, &*respond, &shared));
            }
        });
        Server { addr, state }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The chat requests received so far (not the `/api/show` probes).
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The error bodies of the refused chat requests, in order.
    pub fn rejections(&self) -> Vec<String> {
        self.requests().into_iter().filter_map(|r| r.rejected).collect()
    }

    /// The `/api/show` requests received so far.
    pub fn probes(&self) -> Vec<Recorded> {
        self.state.probes.lock().unwrap().clone()
    }

    /// What `/api/show` lists as the model's `capabilities` from now on.
    pub fn set_capabilities(&self, caps: &[&str]) {
        *self.state.capabilities.lock().unwrap() = caps.iter().map(|c| (*c).to_owned()).collect();
    }
}

fn serve(stream: TcpStream, respond: &Responder, state: &State) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let Some(mut req) = read_request(&mut reader) else { return };
    let auth = req.header("authorization").unwrap_or("").to_owned();
    let path = req.request_line.split(' ').nth(1).unwrap_or("").to_owned();
    if path == "/api/show" {
        let caps = state.capabilities.lock().unwrap().clone();
        let body = serde_json::json!({ "details": { "family": "test" }, "capabilities": caps }).to_string();
        state.probes.lock().unwrap().push(req);
        let _ = write_reply(stream, &Reply::ok("application/json", vec![body]), &auth);
        return;
    }
    let checked = match path.as_str() {
        "/api/chat" => check_ollama(&req.body).map_err(|why| ollama_error(&why)),
        p if p.ends_with("/chat/completions") => check_openai(&req.body).map_err(|why| openai_error(&why)),
        _ => Ok(()),
    };
    let reply = match &checked {
        Ok(()) => respond(&req),
        Err(body) => Reply::status(400, body),
    };
    req.rejected = checked.err();
    state.requests.lock().unwrap().push(req);
    // Write errors mean the client hung up (e.g. after its timeout): fine.
    let _ = write_reply(stream, &reply, &auth);
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    Some(Recorded { request_line: request_line.trim_end().to_owned(), headers, body, rejected: None })
}

fn write_reply(mut stream: TcpStream, reply: &Reply, auth: &str) -> std::io::Result<()> {
    thread::sleep(reply.delay_before_headers);
    write!(
        stream,
        "HTTP/1.1 {} X\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        reply.status, reply.content_type
    )?;
    stream.flush()?;
    let mut chunks = reply.chunks.clone();
    if reply.echo_authorization {
        chunks.push(format!("(you sent: {auth})"));
    }
    // An empty chunk would end the body early.
    for (i, chunk) in chunks.iter().filter(|c| !c.is_empty()).enumerate() {
        if i > 0 {
            thread::sleep(reply.delay_between_chunks);
        }
        write!(stream, "{:x}\r\n{chunk}\r\n", chunk.len())?;
        stream.flush()?;
    }
    write!(stream, "0\r\n\r\n")?;
    stream.flush()
}

/// A port nobody listens on: bound, then released.
pub fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}")
}

/// OpenAI's error body, as OpenAI, vLLM and llama.cpp send it.
fn openai_error(message: &str) -> String {
    serde_json::json!({
        "error": { "message": message, "type": "invalid_request_error", "param": "messages", "code": null }
    })
    .to_string()
}

/// Ollama's error body.
fn ollama_error(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Keys of `v` outside `allowed`, as an error naming `what`.
fn only_keys(v: &Value, allowed: &[&str], what: &str) -> Result<(), String> {
    let obj = v.as_object().ok_or_else(|| format!("{what} must be an object"))?;
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!("{what}: unrecognized field {k:?}")),
        None => Ok(()),
    }
}

fn string<'v>(v: &'v Value, key: &str, what: &str) -> Result<&'v str, String> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| format!("{what}.{key} must be a string"))
}

/// `tools`: `[{type: "function", function: {name, description, parameters}}]`,
/// names as OpenAI allows them.
fn check_tools(body: &Value) -> Result<(), String> {
    let Some(tools) = body.get("tools") else { return Ok(()) };
    let tools = tools.as_array().filter(|t| !t.is_empty()).ok_or("tools must be a non-empty array")?;
    for (i, t) in tools.iter().enumerate() {
        let what = format!("tools[{i}]");
        only_keys(t, &["type", "function"], &what)?;
        if t.get("type") != Some(&Value::from("function")) {
            return Err(format!("{what}.type must be \"function\""));
        }
        let f = &t["function"];
        only_keys(f, &["name", "description", "parameters", "strict"], &format!("{what}.function"))?;
        let name = string(f, "name", &format!("{what}.function"))?;
        if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c)) {
            return Err(format!("{what}.function.name {name:?} must match ^[a-zA-Z0-9_-]{{1,64}}$"));
        }
        string(f, "description", &format!("{what}.function"))?;
        if f.get("parameters").and_then(|p| p.get("type")) != Some(&Value::from("object")) {
            return Err(format!("{what}.function.parameters must be a JSON schema of type object"));
        }
    }
    Ok(())
}

/// A message's `tool_calls`, which must be a non-empty array.
fn call_list<'v>(calls: &'v Value, what: &str) -> Result<&'v Vec<Value>, String> {
    calls.as_array().filter(|c| !c.is_empty()).ok_or(format!("{what}.tool_calls must be a non-empty array"))
}

fn messages(body: &Value) -> Result<&Vec<Value>, String> {
    string(body, "model", "request")?;
    if body.get("stream").is_some_and(|s| !s.is_boolean()) {
        return Err("stream must be a boolean".into());
    }
    body.get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| "messages must be a non-empty array".to_owned())
}

/// Checks an OpenAI chat-completions request as a strict server does:
/// known fields only; roles `system`/`user`/`assistant`/`tool` with string
/// content (null only beside `tool_calls`); each assistant `tool_calls`
/// entry `{id, type: "function", function: {name, arguments}}` with
/// arguments a string holding a JSON object and ids unique; every `tool`
/// message quoting the `tool_call_id` of a call of the assistant message
/// before it, and every call answered before the next other message.
pub fn check_openai(body: &Value) -> Result<(), String> {
    only_keys(
        body,
        &[
            "model",
            "messages",
            "stream",
            "stream_options",
            "tools",
            "tool_choice",
            "temperature",
            "max_tokens",
            "response_format",
        ],
        "request",
    )?;
    let msgs = messages(body)?;
    if let Some(t) = body.get("temperature") {
        if !t.as_f64().is_some_and(|t| (0.0..=2.0).contains(&t)) {
            return Err(format!("temperature must be a number in 0..=2, got {t}"));
        }
    }
    // Structured output as llama.cpp's server and OpenAI take it.
    if let Some(format) = body.get("response_format") {
        only_keys(format, &["type", "json_schema"], "response_format")?;
        if format.get("type") != Some(&Value::from("json_schema")) {
            return Err("response_format.type must be \"json_schema\" here".into());
        }
        let schema = &format["json_schema"];
        only_keys(schema, &["name", "schema", "strict", "description"], "response_format.json_schema")?;
        string(schema, "name", "response_format.json_schema")?;
        if !schema.get("schema").is_some_and(Value::is_object) {
            return Err("response_format.json_schema.schema must be a JSON schema object".into());
        }
    }
    if let Some(opts) = body.get("stream_options") {
        if body.get("stream") != Some(&Value::Bool(true)) {
            return Err("stream_options is only allowed when stream is true".into());
        }
        only_keys(opts, &["include_usage"], "stream_options")?;
    }
    check_tools(body)?;
    let mut open: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        let what = format!("messages[{i}]");
        let role = string(m, "role", &what)?;
        if role != "tool" && !open.is_empty() {
            return Err(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each \
                 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        match role {
            "system" | "user" => {
                only_keys(m, &["role", "content", "name"], &what)?;
                string(m, "content", &what)?;
            }
            "assistant" => {
                only_keys(m, &["role", "content", "name", "tool_calls"], &what)?;
                let calls = m.get("tool_calls");
                match m.get("content") {
                    Some(Value::String(_)) => {}
                    None | Some(Value::Null) if calls.is_some() => {}
                    _ => return Err(format!("{what}.content must be a string")),
                }
                let Some(calls) = calls else { continue };
                for (j, c) in call_list(calls, &what)?.iter().enumerate() {
                    let cw = format!("{what}.tool_calls[{j}]");
                    only_keys(c, &["id", "type", "function"], &cw)?;
                    let id = string(c, "id", &cw)?;
                    if id.is_empty() || !seen.insert(id.to_owned()) {
                        return Err(format!("{cw}.id {id:?} must be non-empty and unique"));
                    }
                    if c.get("type") != Some(&Value::from("function")) {
                        return Err(format!("{cw}.type must be \"function\""));
                    }
                    let f = &c["function"];
                    only_keys(f, &["name", "arguments"], &format!("{cw}.function"))?;
                    string(f, "name", &format!("{cw}.function"))?;
                    let args = string(f, "arguments", &format!("{cw}.function"))?;
                    if !serde_json::from_str::<Value>(args).is_ok_and(|a| a.is_object()) {
                        return Err(format!("{cw}.function.arguments must be a JSON object in a string"));
                    }
                    open.push(id.to_owned());
                }
            }
            "tool" => {
                only_keys(m, &["role", "content", "tool_call_id"], &what)?;
                string(m, "content", &what)?;
                let id = string(m, "tool_call_id", &what)?;
                let Some(at) = open.iter().position(|o| o == id) else {
                    return Err(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceding message \
                         with 'tool_calls' ({what}.tool_call_id {id:?})"
                    ));
                };
                open.remove(at);
            }
            other => return Err(format!("{what}.role {other:?} is not one of system, user, assistant, tool")),
        }
    }
    match open.is_empty() {
        true => Ok(()),
        false => Err(format!("tool_call_ids without response messages: {}", open.join(", "))),
    }
}

/// Checks an Ollama `/api/chat` request: known fields only; string content;
/// assistant `tool_calls` as `[{function: {name, arguments: {..}}}]` (an
/// object, not a string); each `tool` message naming in `tool_name` an
/// unanswered call of the assistant message before it, and every call
/// answered before the next other message.
pub fn check_ollama(body: &Value) -> Result<(), String> {
    only_keys(body, &["model", "messages", "stream", "tools", "format", "options", "keep_alive", "think"], "request")?;
    if let Some(options) = body.get("options") {
        only_keys(options, &["num_predict", "temperature"], "options")?;
    }
    let msgs = messages(body)?;
    check_tools(body)?;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let what = format!("messages[{i}]");
        let role = string(m, "role", &what)?;
        if role != "tool" && !open.is_empty() {
            return Err(format!("{what}: the tool calls {open:?} have no tool message answering them"));
        }
        if !matches!(role, "system" | "user" | "assistant" | "tool") {
            return Err(format!("{what}.role {role:?} is not one of system, user, assistant, tool"));
        }
        only_keys(m, &["role", "content", "images", "tool_calls", "tool_name", "thinking"], &what)?;
        string(m, "content", &what)?;
        if role != "assistant" && m.get("tool_calls").is_some() {
            return Err(format!("{what}: only assistant messages make tool calls"));
        }
        if role != "tool" && m.get("tool_name").is_some() {
            return Err(format!("{what}: only tool messages have a tool_name"));
        }
        if let Some(calls) = m.get("tool_calls") {
            for (j, c) in call_list(calls, &what)?.iter().enumerate() {
                let cw = format!("{what}.tool_calls[{j}]");
                only_keys(c, &["function", "id", "type"], &cw)?;
                let f = &c["function"];
                only_keys(f, &["name", "arguments", "index"], &format!("{cw}.function"))?;
                open.push(string(f, "name", &format!("{cw}.function"))?.to_owned());
                if !f.get("arguments").is_some_and(Value::is_object) {
                    return Err(format!(
                        "json: cannot unmarshal {cw}.function.arguments into Go struct field of type \
                         api.ToolCallFunctionArguments (must be an object)"
                    ));
                }
            }
        }
        if role == "tool" {
            let name = string(m, "tool_name", &what)?;
            let Some(at) = open.iter().position(|o| o == name) else {
                return Err(format!("{what}: tool_name {name:?} answers no call of the assistant message before it"));
            };
            open.remove(at);
        }
    }
    match open.is_empty() {
        true => Ok(()),
        false => Err(format!("the tool calls {open:?} have no tool message answering them")),
    }
}

/// POSTs `body` to `url` + `path` as a bare HTTP/1.1 client would, and
/// returns the status and the raw (chunked) body: to show what the strict
/// server says of a body no client builds any more.
pub fn post_json(url: &str, path: &str, body: &Value) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).expect("connect");
    let body = body.to_string();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
    (status, body)
}
