//! The demo home's MCP server (`engram demo-home-server`, hidden): MCP
//! over stdio, by hand — JSON-RPC 2.0, one message a line — so that the
//! demo needs no Node, no Python and no network to show engram learning a
//! home from an MCP server's tools. It answers `initialize`, `ping`,
//! `tools/list` and `tools/call` ([`House`] runs the calls), ignores
//! notifications and responses, and says "method not found" to anything
//! else.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use serde_json::{json, Value};

use super::house::{listing, House};

/// The protocol version it answers with when the client names none.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// Serves stdin → stdout until stdin closes (the client is gone).
pub fn run() -> anyhow::Result<ExitCode> {
    let mut house = House::default();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(answer) = handle(&mut house, &line) {
            writeln!(out, "{answer}")?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The answer to one line, if it wants one.
pub fn handle(house: &mut House, line: &str) -> Option<Value> {
    let Ok(msg) = serde_json::from_str::<Value>(line) else {
        return Some(error(Value::Null, -32700, "parse error"));
    };
    let Some(obj) = msg.as_object() else {
        return Some(error(Value::Null, -32600, "invalid request: not one JSON-RPC object"));
    };
    // A notification (no id) wants no answer; nor does a response (no
    // method) to a request this server never makes.
    let (Some(id), Some(method)) = (obj.get("id").cloned(), obj.get("method")) else { return None };
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    Some(match method.as_str().unwrap_or_default() {
        "initialize" => {
            let version = params["protocolVersion"].as_str().unwrap_or(PROTOCOL_VERSION);
            result(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "engram-demo-home", "version": env!("CARGO_PKG_VERSION")},
                }),
            )
        }
        "ping" => result(id, json!({})),
        "tools/list" => result(id, json!({"tools": listing()})),
        "tools/call" => call(house, id, &params),
        other => error(id, -32601, format!("method not found: {other}")),
    })
}

/// `tools/call`: an unknown tool is a protocol error; a call that cannot
/// be done is the tool's (`isError`), with the reason as its text.
fn call(house: &mut House, id: Value, params: &Value) -> Value {
    let Some(name) = params["name"].as_str() else { return error(id, -32602, "tools/call: no tool name") };
    if !listing().iter().any(|t| t["name"] == name) {
        return error(id, -32602, format!("unknown tool: {name}"));
    }
    let empty = serde_json::Map::new();
    let args = params["arguments"].as_object().unwrap_or(&empty);
    let (text, failed) = match house.call(name, args) {
        Ok(text) => (text, false),
        Err(why) => (why, true),
    };
    result(id, json!({"content": [{"type": "text", "text": text}], "isError": failed}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(house: &mut House, msg: Value) -> Option<Value> {
        handle(house, &msg.to_string())
    }

    #[test]
    fn a_session_initializes_lists_and_calls() {
        let mut h = House::default();
        let init = ask(
            &mut h,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        )
        .unwrap();
        assert_eq!(init["id"], 1);
        assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
        assert!(init["result"]["capabilities"]["tools"].is_object());
        assert_eq!(ask(&mut h, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})), None);
        let list = ask(&mut h, json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list"})).unwrap();
        let tools = list["result"]["tools"].as_array().unwrap();
        assert!(tools.len() >= 10, "{list}");
        assert!(tools.iter().all(|t| t["inputSchema"]["type"] == "object" && t["description"].is_string()));
        let on = ask(
            &mut h,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "HassTurnOn", "arguments": {"area": "garage", "domain": ["light"]}}}),
        )
        .unwrap();
        assert_eq!(
            on["result"],
            json!({"content": [{"type": "text", "text": "The light in the garage is on."}], "isError": false})
        );
        let state = ask(
            &mut h,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "HassGetState", "arguments": {"area": "garage"}}}),
        )
        .unwrap();
        assert_eq!(state["result"]["content"][0]["text"], "The light in the garage is on.");
        assert_eq!(ask(&mut h, json!({"jsonrpc": "2.0", "id": 4, "method": "ping"})).unwrap()["result"], json!({}));
    }

    #[test]
    fn errors_are_json_rpc_errors_or_tool_errors() {
        let mut h = House::default();
        assert_eq!(handle(&mut h, "not json").unwrap()["error"]["code"], -32700);
        assert_eq!(handle(&mut h, "[1]").unwrap()["error"]["code"], -32600);
        let unknown = ask(&mut h, json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"})).unwrap();
        assert_eq!(unknown["error"]["code"], -32601);
        assert_eq!(unknown["id"], 5);
        let no_tool = ask(
            &mut h,
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "HassToaster", "arguments": {}}}),
        )
        .unwrap();
        assert_eq!(no_tool["error"]["code"], -32602);
        let bad = ask(
            &mut h,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "HassTurnOn", "arguments": {"area": "ballroom"}}}),
        )
        .unwrap();
        assert_eq!(bad["result"]["isError"], true);
        assert!(bad["result"]["content"][0]["text"].as_str().unwrap().contains("ballroom"), "{bad}");
        // A response to a request it never made wants no answer.
        assert_eq!(ask(&mut h, json!({"jsonrpc": "2.0", "id": 8, "result": {}})), None);
    }
}
