//! An MCP server's tool as an engram [`Tool`] (rules 1–3 of the module
//! docs).

use std::sync::Arc;
use std::time::Duration;

use engram_events::payloads::{SideEffectClass, ToolArgs};
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceError;

use super::server::Shared;
use super::spec::McpToolSpec;
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// The most of a result's text a call returns (rule 3); the rest is cut,
/// saying so.
pub const OUTPUT_MAX_BYTES: usize = 64 * 1024;
/// The most of an error result's text a failed call quotes.
const ERROR_MAX_BYTES: usize = 4 * 1024;
/// How much longer than the call's own timeout the caller waits for the
/// hub's answer (the hub answers at the timeout itself; this only guards a
/// stalled hub).
const CALLER_GRACE: Duration = Duration::from_secs(2);

/// `s` cut to at most `max` bytes at a character boundary, and whether it
/// was cut.
fn cut_bytes(s: &str, max: usize) -> (&str, bool) {
    let cut = engram_learning::text::cut_bytes(s, max);
    (cut, cut.len() < s.len())
}

/// One tool of one MCP server, callable like any other tool. Calls go to
/// the server's current connection (a restarted server serves the same
/// tool), and fail at once while it has none.
pub struct McpTool {
    server: Arc<Shared>,
    spec: McpToolSpec,
}

impl McpTool {
    pub(super) fn new(server: Arc<Shared>, spec: McpToolSpec) -> McpTool {
        McpTool { server, spec }
    }

    /// The server offering it (its `[mcp.servers]` name): the description
    /// is that server's text, and the `tool.called` record names it.
    pub fn server(&self) -> &str {
        self.server.name()
    }

    fn fail(&self, what: impl std::fmt::Display) -> ToolError {
        ToolError::Failed(format!("{} (MCP server {}): {what}", self.spec.name, self.server.name()))
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("server", &self.server.name()).field("spec", &self.spec).finish()
    }
}

/// How a call on the hub's runtime ended.
enum Outcome {
    Done(Result<rmcp::model::CallToolResult, ServiceError>),
    TimedOut,
    Closed,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.spec.parameters.clone()
    }

    fn side_effect(&self) -> SideEffectClass {
        self.spec.side_effect
    }

    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let conn = self.server.connection().map_err(|state| self.fail(format!("the server is not ready ({state})")))?;
        let Some(rt) = self.server.rt.clone() else {
            return Err(self.fail("the server was never started"));
        };
        let timeout = self.server.call_timeout;
        let params = CallToolRequestParams::new(self.spec.name.clone()).with_arguments(args.0.clone());
        let (tx, rx) = crossbeam_channel::bounded(1);
        let mut closed = conn.closed.clone();
        // Runs on the hub's runtime; this thread only waits (never
        // `block_on`: it may be inside an actix arbiter's runtime).
        rt.spawn(async move {
            let outcome = tokio::select! {
                // Dropping the request on timeout sends notifications/cancelled.
                r = conn.peer.call_tool(params) => Outcome::Done(r),
                _ = tokio::time::sleep(timeout) => Outcome::TimedOut,
                _ = closed.wait_for(|c| *c) => Outcome::Closed,
            };
            let _ = tx.send(outcome);
        });
        let outcome = match rx.recv_timeout(timeout + CALLER_GRACE) {
            Ok(o) => o,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Outcome::TimedOut,
            // The hub is shut down (its runtime dropped the call).
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                return Err(self.fail("the MCP connections are shut down"))
            }
        };
        match outcome {
            Outcome::TimedOut => {
                Err(self.fail(format!("no answer within {} ms; the call was cancelled", timeout.as_millis())))
            }
            Outcome::Closed | Outcome::Done(Err(ServiceError::TransportClosed)) => {
                Err(self.fail("the server closed the connection during the call (it is restarted)"))
            }
            Outcome::Done(Err(ServiceError::McpError(e))) => {
                Err(self.fail(format!("error {}: {}", e.code.0, e.message)))
            }
            Outcome::Done(Err(e)) => Err(self.fail(e)),
            Outcome::Done(Ok(result)) => {
                let text = render(&result);
                if result.is_error == Some(true) {
                    let (shown, was_cut) = cut_bytes(&text, ERROR_MAX_BYTES);
                    let more = if was_cut { " […]" } else { "" };
                    return Err(self.fail(format!("the tool failed: {shown}{more}")));
                }
                let (shown, was_cut) = cut_bytes(&text, OUTPUT_MAX_BYTES);
                if was_cut {
                    Ok(ToolOutput::untrusted(format!(
                        "{shown}\n[cut: the result was {} bytes; only the first {} are shown]",
                        text.len(),
                        shown.len()
                    )))
                } else {
                    Ok(ToolOutput::untrusted(text))
                }
            }
        }
    }
}

/// A result's content as text: text items as they are, others named, one
/// per line; the structured content when there is nothing else.
pub(super) fn render(result: &rmcp::model::CallToolResult) -> String {
    let mut lines = Vec::new();
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or_default();
        let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("unknown");
        let s = |key: &str| v.get(key).and_then(|x| x.as_str()).unwrap_or("?").to_owned();
        lines.push(match kind {
            "text" => s("text"),
            "image" => format!("[image: {}]", s("mimeType")),
            "audio" => format!("[audio: {}]", s("mimeType")),
            "resource" => {
                let uri = v.pointer("/resource/uri").and_then(|x| x.as_str()).unwrap_or("?");
                format!("[resource: {uri}]")
            }
            "resource_link" => format!("[resource: {}]", s("uri")),
            other => format!("[{other}]"),
        });
    }
    if lines.is_empty() {
        if let Some(structured) = &result.structured_content {
            return structured.to_string();
        }
    }
    lines.join("\n")
}

/// The tools `server` lists now, as engram tools (none while it is not
/// connected).
pub(super) fn tools_of(server: &Arc<Shared>) -> Vec<McpTool> {
    server.specs().iter().map(|spec| McpTool::new(server.clone(), spec.clone())).collect()
}
