//! `[mcp]` of engram.toml: what servers to start (see the [module
//! docs](super) for what the hub does with them). Parsed in every build,
//! like every section: a build without the `mcp` feature refuses a
//! configuration that names servers, saying why.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// `[mcp]` of engram.toml: one `[mcp.servers.NAME]` table per server.
///
/// ```toml
/// [mcp.servers.files]
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
///
/// [mcp.servers.search]
/// url = "https://mcp.example.com/mcp"
/// headers = { Authorization = "SEARCH_MCP_AUTH" }  # the variable's name
/// ```
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSection {
    /// The servers by name (the name is how logs, `engram tools` and
    /// `tool.called` records refer to a server).
    pub servers: BTreeMap<String, McpServerSection>,
}

/// `[mcp.servers.NAME]`: one MCP server, either a program (`command`) or a
/// URL (`url`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerSection {
    /// A stdio server: the program to run (empty when `url` is set).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The child's variables: variable → the *name* of the variable of
    /// engram's environment holding its value (values are never in the
    /// file, a log or an event; rule 6).
    pub env: BTreeMap<String, String>,
    /// The child's working directory (default: engram's).
    pub cwd: Option<PathBuf>,
    /// A streamable-HTTP server: its URL (empty when `command` is set).
    pub url: String,
    /// HTTP headers: header → the *name* of the variable of engram's
    /// environment holding its value (rule 6).
    pub headers: BTreeMap<String, String>,
    /// The longest one `tools/call` may take, in ms (rule 3).
    pub timeout_ms: u64,
    /// The longest connecting, `initialize` and the first `tools/list` may
    /// take, in ms (rule 5).
    pub start_timeout_ms: u64,
    /// False: the server is configured but not started.
    pub enabled: bool,
}

impl Default for McpServerSection {
    fn default() -> Self {
        McpServerSection {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: String::new(),
            headers: BTreeMap::new(),
            timeout_ms: 30_000,
            start_timeout_ms: 20_000,
            enabled: true,
        }
    }
}

impl McpSection {
    /// Checks what deserialising cannot: each server is exactly one of a
    /// program or a URL, with only the keys that kind has, and sane
    /// timeouts. The message names `[mcp.servers.NAME]` and the key.
    pub fn check(&self) -> Result<(), String> {
        for (name, s) in &self.servers {
            let at = format!("[mcp.servers.{name}]");
            if name.trim().is_empty() {
                return Err(format!("{at}: a server needs a non-empty name"));
            }
            if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
                return Err(format!("{at}: a server name may not contain spaces or control characters"));
            }
            let command = !s.command.trim().is_empty();
            let url = !s.url.trim().is_empty();
            match (command, url) {
                (true, true) => {
                    return Err(format!(
                        "{at}: both `command` and `url` are set; a server is either a program (`command`, over stdio) or a URL (`url`, streamable HTTP)"
                    ))
                }
                (false, false) => {
                    return Err(format!(
                        "{at}: set `command` (a program, over stdio) or `url` (streamable HTTP)"
                    ))
                }
                (true, false) => {
                    if !s.headers.is_empty() {
                        return Err(format!("{at}: `headers` is for a `url` server, not a `command` one"));
                    }
                }
                (false, true) => {
                    for (key, set) in
                        [("args", !s.args.is_empty()), ("env", !s.env.is_empty()), ("cwd", s.cwd.is_some())]
                    {
                        if set {
                            return Err(format!("{at}: `{key}` is for a `command` server, not a `url` one"));
                        }
                    }
                    let u = s.url.trim();
                    if !(u.starts_with("http://") || u.starts_with("https://")) {
                        return Err(format!("{at}: `url` must start with http:// or https:// (got {u:?})"));
                    }
                }
            }
            for (table, map) in [("env", &s.env), ("headers", &s.headers)] {
                for (key, var) in map {
                    if key.trim().is_empty() {
                        return Err(format!("{at}: `{table}` has an empty key"));
                    }
                    if var.trim().is_empty() || var.contains('=') {
                        return Err(format!(
                            "{at}: `{table}.{key}` must name an environment variable holding the value (not the value itself)"
                        ));
                    }
                }
            }
            if s.timeout_ms == 0 {
                return Err(format!("{at}: `timeout_ms` must be more than 0"));
            }
            if s.start_timeout_ms == 0 {
                return Err(format!("{at}: `start_timeout_ms` must be more than 0"));
            }
        }
        Ok(())
    }
}
