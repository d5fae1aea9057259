//! Tools from MCP servers: the connections to the servers of `[mcp]`, and
//! each of their tools as an engram [`Tool`].
//!
//! An MCP server is a program (run as a child over stdio) or a URL
//! (streamable HTTP) that lists tools and runs them. [`McpHub`] keeps one
//! connection per configured server on its own thread and tokio runtime,
//! because the actors call tools synchronously from actix handlers, each on
//! a current-thread runtime of its own: the hub never calls `block_on` on
//! the caller's thread, it sends the work to its runtime and waits on a
//! channel with a timeout. The rules, in order:
//!
//! 1. **A tool is what the server says it is.** Its name is the server's
//!    name for it (two servers offering the same name: the registry keeps
//!    the later one, see [`ToolRegistry`](super::ToolRegistry)); its
//!    description is the server's, whole up to [`DESCRIPTION_MAX_CHARS`]
//!    characters; its parameters are its `inputSchema`. The description is
//!    the server's text, not ours: a planner must treat it as such.
//! 2. **Side effects from the annotations, effectful unless said
//!    otherwise** ([`side_effect_from_hints`]): `readOnlyHint: true` is
//!    [`Read`](engram_events::payloads::SideEffectClass::Read); `openWorldHint: true` (and not
//!    read-only) is [`Network`](engram_events::payloads::SideEffectClass::Network); anything else,
//!    an unannotated tool included, is [`Write`](engram_events::payloads::SideEffectClass::Write).
//!    The hints are the server's claims; an unknown tool is assumed to act.
//! 3. **A call is bounded and its output is data.** `tools/call` waits at
//!    most the server's `timeout_ms`; past it the call fails naming the
//!    server, the tool and the timeout, and the request is cancelled
//!    (`notifications/cancelled`). The result's text items are joined with
//!    newlines, other items named (`[image: image/png]`,
//!    `[resource: file:///…]`), the whole capped at [`OUTPUT_MAX_BYTES`]
//!    (saying it was cut). `isError: true` fails the call with the text.
//!    The output is always [`ToolOutput::untrusted`](super::ToolOutput::untrusted):
//!    fenced as data before an LLM sees it.
//! 4. **A server that dies fails its calls at once and comes back.** A call
//!    in flight when the connection closes fails at once, not after its
//!    timeout; the server is marked [`McpState::Failed`], its tools go away
//!    and it is restarted after 1 s, 2 s, 4 s … up to [`BACKOFF_MAX`]
//!    (the delay starts again at 1 s after a connection that lasted
//!    [`BACKOFF_MAX`]). Nothing a server does panics the caller: a panic on
//!    the hub's thread is caught and logged.
//! 5. **A server that does not speak MCP fails within its start timeout.**
//!    Connecting, `initialize` and the first `tools/list` must finish in
//!    `start_timeout_ms`; past it the server is failed with a note of what
//!    it did (lines on stdout that are not JSON-RPC, its last stderr line)
//!    and retried as in rule 4. A server whose configuration cannot be met
//!    (an environment variable it names is not set, a program that cannot
//!    be run) fails the same way.
//! 6. **Secrets stay in the environment.** `env` and `headers` name
//!    variables of engram's environment; their values reach the child or
//!    the request only, never the configuration file, a log line or an
//!    event. A stdio child gets only those and [`INHERITED_ENV`] from
//!    engram's environment, not the rest of it.
//!
//! Every change in the set of tools (a server ready, a
//! `notifications/tools/list_changed` whose re-listing differs, a server
//! gone or back) calls the hub's `on_change`, on a thread of the hub's
//! runtime, holding no lock of the hub's — except the changes
//! [`McpHub::start`] waited for: the caller reads [`McpHub::tools`] after
//! it returns.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Tool;

mod server;
mod tool;

pub use tool::{side_effect_from_hints, McpTool, DESCRIPTION_MAX_CHARS, OUTPUT_MAX_BYTES};

use server::{Shared, Spec};

/// The longest wait between two restarts of a failed server (rule 4).
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The first wait before restarting a failed server; each next one doubles
/// it (rule 4).
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// Variables of engram's environment a stdio server gets without being
/// named in `env` (rule 6): what programs need to run at all.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "SHELL",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "TEMP",
    "TMP",
];
/// How long [`McpHub::shutdown`] waits for the servers to exit before it
/// gives up on them (they are killed, not waited for, past it).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

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

/// Where a server stands, for `engram tools` and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpState {
    /// Its first start is under way.
    Starting,
    /// Connected; its tools are listed.
    Ready,
    /// Not connected, and why (it is retried in the background unless its
    /// configuration cannot be met).
    Failed(String),
    /// A restart after a failure is under way (`attempt` counts from 1).
    Restarting {
        /// Which restart this is.
        attempt: u32,
    },
}

impl std::fmt::Display for McpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpState::Starting => f.write_str("starting"),
            McpState::Ready => f.write_str("ready"),
            McpState::Failed(why) => write!(f, "failed: {why}"),
            McpState::Restarting { attempt } => write!(f, "restarting (attempt {attempt})"),
        }
    }
}

/// One server as [`McpHub::status`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerStatus {
    /// Its name in `[mcp.servers]`.
    pub name: String,
    /// Where it stands.
    pub state: McpState,
    /// How many tools it offers (0 unless ready).
    pub tools: usize,
}

/// What the hub's runtime thread needs to stop: the signal, and word that
/// it has.
struct Stopper {
    stop: tokio::sync::watch::Sender<bool>,
    done: crossbeam_channel::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
    thread_id: Option<std::thread::ThreadId>,
}

/// The connections to every configured server (see the module docs).
pub struct McpHub {
    servers: Vec<Arc<Shared>>,
    stopper: Mutex<Option<Stopper>>,
}

impl McpHub {
    /// Starts every enabled server in parallel and waits (at most each
    /// one's `start_timeout_ms`) until each is ready or has failed. It never
    /// fails as a whole: a server that fails to start is logged (`warn`,
    /// naming it and why), marked failed and retried in the background
    /// with backoff (rule 4). `env_var` reads engram's environment (rule 6;
    /// production: `|n| std::env::var(n).ok()`). `on_change` is called
    /// whenever the set of tools changes after this returns.
    pub fn start(
        section: &McpSection,
        env_var: impl Fn(&str) -> Option<String>,
        on_change: Arc<dyn Fn() + Send + Sync>,
    ) -> McpHub {
        let enabled: Vec<(&String, &McpServerSection)> = section.servers.iter().filter(|(_, s)| s.enabled).collect();
        if enabled.is_empty() {
            return McpHub { servers: Vec::new(), stopper: Mutex::new(None) };
        }
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().thread_name("engram-mcp").build();
        let runtime = match runtime {
            Ok(rt) => rt,
            Err(e) => {
                tracing::warn!(error = %e, "mcp: could not start the MCP runtime; no MCP server is started");
                let servers = enabled
                    .iter()
                    .map(|(name, s)| {
                        Shared::detached(name, s, McpState::Failed(format!("could not start the MCP runtime: {e}")))
                    })
                    .collect();
                return McpHub { servers, stopper: Mutex::new(None) };
            }
        };
        let handle = runtime.handle().clone();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let started = Arc::new(AtomicBool::new(false));
        let (first_tx, first_rx) = crossbeam_channel::unbounded::<()>();
        let mut servers = Vec::new();
        let mut supervisors = Vec::new();
        let mut longest = Duration::ZERO;
        for (name, s) in enabled {
            let shared = Arc::new(Shared::new(name, s, handle.clone()));
            longest = longest.max(Duration::from_millis(s.start_timeout_ms));
            let spec = Spec::resolve(s, &env_var);
            let sup = server::Supervisor {
                shared: shared.clone(),
                spec,
                start_timeout: Duration::from_millis(s.start_timeout_ms),
                notify: server::Notify { on_change: on_change.clone(), started: started.clone() },
                stop: stop_rx.clone(),
                first: Some(first_tx.clone()),
            };
            supervisors.push(sup);
            servers.push(shared);
        }
        drop(first_tx);
        let (done_tx, done) = crossbeam_channel::bounded::<()>(1);
        let thread = std::thread::Builder::new().name("engram-mcp".into()).spawn(move || {
            let mut stop_rx = stop_rx;
            runtime.block_on(async move {
                let tasks: Vec<_> = supervisors.into_iter().map(|s| tokio::spawn(s.run())).collect();
                let _ = stop_rx.wait_for(|s| *s).await;
                // Each supervisor sees the same signal and closes its server.
                let all = async {
                    for t in tasks {
                        if let Err(e) = t.await {
                            tracing::error!(error = %e, "mcp: a server's supervisor panicked");
                        }
                    }
                };
                if tokio::time::timeout(SHUTDOWN_WAIT, all).await.is_err() {
                    tracing::warn!("mcp: servers still closing after {SHUTDOWN_WAIT:?}; leaving them");
                }
            });
            // Not a plain drop: that would wait for `on_change` calls still
            // running on the blocking pool (one of which may be this wait's
            // caller).
            runtime.shutdown_timeout(Duration::from_secs(1));
            let _ = done_tx.send(());
        });
        let (thread, thread_id) = match thread {
            Ok(t) => {
                let id = t.thread().id();
                (Some(t), Some(id))
            }
            Err(e) => {
                tracing::warn!(error = %e, "mcp: could not start the MCP thread; no MCP server is started");
                for s in &servers {
                    s.set_state(McpState::Failed(format!("could not start the MCP thread: {e}")));
                }
                (None, None)
            }
        };
        if thread.is_some() {
            let deadline = Instant::now() + longest + Duration::from_millis(500);
            for _ in 0..servers.len() {
                if first_rx.recv_deadline(deadline).is_err() {
                    break;
                }
            }
        }
        started.store(true, Ordering::SeqCst);
        McpHub { servers, stopper: Mutex::new(Some(Stopper { stop, done, thread, thread_id })) }
    }

    /// Every ready server's tools as engram tools, sorted by (server, tool
    /// name).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for s in &self.servers {
            for t in s.tools() {
                out.push(Arc::new(t));
            }
        }
        out
    }

    /// Per server: its name, state and tool count, for `engram tools` and
    /// logs.
    pub fn status(&self) -> Vec<McpServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Which server serves tool `tool` (for the `tool.called` record), if
    /// any ready one does.
    pub fn source_of(&self, tool: &str) -> Option<String> {
        self.servers.iter().find(|s| s.has_tool(tool)).map(|s| s.name().to_owned())
    }

    /// Closes every server: stdio children are asked to exit (stdin
    /// closed), killed if they do not, and reaped. Waits up to 10 s; later
    /// calls do nothing. Also done on drop.
    pub fn shutdown(&self) {
        let stopper = match self.stopper.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        let Some(mut stopper) = stopper else { return };
        let _ = stopper.stop.send(true);
        if stopper.thread_id == Some(std::thread::current().id()) {
            // Called from the hub's own thread (a drop in `on_change`): it
            // stops by itself once this returns.
            return;
        }
        if stopper.done.recv_timeout(SHUTDOWN_WAIT + Duration::from_secs(2)).is_ok() {
            if let Some(t) = stopper.thread.take() {
                let _ = t.join();
            }
        } else {
            tracing::warn!("mcp: the MCP thread did not stop in time; leaving it");
        }
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub").field("servers", &self.status()).finish()
    }
}

#[cfg(test)]
mod tests;
