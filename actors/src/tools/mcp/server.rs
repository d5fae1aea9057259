//! One server: its shared state (what tools and status read), and the
//! supervisor task on the hub's runtime that connects it, watches it and
//! restarts it (rules 4 and 5 of the module docs).

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::{ClientHandler, Peer, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use super::spec::McpToolSpec;
use super::{McpServerSection, McpServerStatus, McpState, BACKOFF_FIRST, BACKOFF_MAX, INHERITED_ENV};

/// The longest line read from a stdio server (what rmcp accepts too).
const MAX_LINE: usize = 16 * 1024 * 1024;
/// How much of a server's stray output a failure note quotes.
const NOTE_CHARS: usize = 200;
/// How long a stdio child has to exit once its stdin is closed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A live connection: what a call needs.
#[derive(Clone)]
pub(super) struct Conn {
    pub(super) peer: Peer<RoleClient>,
    pub(super) tools: Arc<Vec<McpToolSpec>>,
    /// Turns true when the connection closes (a call in flight then fails
    /// at once, rule 4).
    pub(super) closed: watch::Receiver<bool>,
}

struct Inner {
    state: McpState,
    conn: Option<Conn>,
}

/// A server as the hub and its tools see it.
pub(crate) struct Shared {
    name: String,
    pub(super) call_timeout: Duration,
    pub(super) rt: Option<tokio::runtime::Handle>,
    inner: Mutex<Inner>,
}

impl Shared {
    pub(super) fn new(name: &str, s: &McpServerSection, rt: tokio::runtime::Handle) -> Shared {
        Shared {
            name: name.to_owned(),
            call_timeout: Duration::from_millis(s.timeout_ms),
            rt: Some(rt),
            inner: Mutex::new(Inner { state: McpState::Starting, conn: None }),
        }
    }

    /// A server that will never run (no runtime to run it on).
    pub(super) fn detached(name: &str, s: &McpServerSection, state: McpState) -> Arc<Shared> {
        Arc::new(Shared {
            name: name.to_owned(),
            call_timeout: Duration::from_millis(s.timeout_ms),
            rt: None,
            inner: Mutex::new(Inner { state, conn: None }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding it; if something did, the state is
        // still a plain value worth reading.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn set_state(&self, state: McpState) {
        self.lock().state = state;
    }

    fn set(&self, state: McpState, conn: Option<Conn>) {
        let mut g = self.lock();
        g.state = state;
        g.conn = conn;
    }

    pub(super) fn connection(&self) -> Result<Conn, McpState> {
        let g = self.lock();
        g.conn.clone().ok_or_else(|| g.state.clone())
    }

    /// What the server lists now (none while it is not connected).
    pub(super) fn specs(&self) -> Arc<Vec<McpToolSpec>> {
        match &self.lock().conn {
            Some(c) => c.tools.clone(),
            None => Arc::default(),
        }
    }

    pub(super) fn has_tool(&self, tool: &str) -> bool {
        self.lock().conn.as_ref().is_some_and(|c| c.tools.iter().any(|t| t.name == tool))
    }

    pub(super) fn status(&self) -> McpServerStatus {
        let g = self.lock();
        McpServerStatus {
            name: self.name.clone(),
            state: g.state.clone(),
            tools: g.conn.as_ref().map_or(0, |c| c.tools.len()),
        }
    }
}

/// How to reach a server, with the values of its variables read (rule 6),
/// or why it cannot be reached at all.
pub(super) enum Spec {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<std::path::PathBuf>,
    },
    Http {
        url: String,
        headers: Vec<(http::HeaderName, http::HeaderValue)>,
    },
    /// The configuration cannot be met; retrying will not help.
    Broken(String),
}

impl Spec {
    pub(super) fn resolve(s: &McpServerSection, env_var: &dyn Fn(&str) -> Option<String>) -> Spec {
        if !s.command.trim().is_empty() {
            let mut env = Vec::new();
            for var in INHERITED_ENV {
                if let Some(v) = env_var(var) {
                    env.push(((*var).to_owned(), v));
                }
            }
            for (key, var) in &s.env {
                match env_var(var) {
                    Some(v) => {
                        env.retain(|(k, _)| k != key);
                        env.push((key.clone(), v));
                    }
                    None => {
                        return Spec::Broken(format!(
                            "`env.{key}` names the environment variable {var}, which is not set"
                        ))
                    }
                }
            }
            Spec::Stdio { command: s.command.trim().to_owned(), args: s.args.clone(), env, cwd: s.cwd.clone() }
        } else if !s.url.trim().is_empty() {
            let mut headers = Vec::new();
            for (key, var) in &s.headers {
                let Some(value) = env_var(var) else {
                    return Spec::Broken(format!(
                        "`headers.{key}` names the environment variable {var}, which is not set"
                    ));
                };
                let name = match http::HeaderName::from_bytes(key.as_bytes()) {
                    Ok(n) => n,
                    Err(_) => return Spec::Broken(format!("`headers.{key}` is not a valid header name")),
                };
                let value = match http::HeaderValue::from_str(&value) {
                    Ok(mut v) => {
                        v.set_sensitive(true);
                        v
                    }
                    // The value itself is not said: it is a secret.
                    Err(_) => {
                        return Spec::Broken(format!(
                            "the value of {var} (for `headers.{key}`) is not a valid header value"
                        ))
                    }
                };
                headers.push((name, value));
            }
            Spec::Http { url: s.url.trim().to_owned(), headers }
        } else {
            Spec::Broken("neither `command` nor `url` is set".to_owned())
        }
    }
}

/// Calls `on_change` off the runtime's thread, once the hub has started.
#[derive(Clone)]
pub(super) struct Notify {
    pub(super) on_change: Arc<dyn Fn() + Send + Sync>,
    pub(super) started: Arc<AtomicBool>,
}

impl Notify {
    fn changed(&self, server: &str) {
        if !self.started.load(Ordering::SeqCst) {
            return;
        }
        let f = self.on_change.clone();
        let server = server.to_owned();
        // On the blocking pool: `on_change` may take locks, read the hub's
        // tools or even call one without stalling this runtime.
        tokio::task::spawn_blocking(move || {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f())).is_err() {
                tracing::error!(server = %server, "mcp: on_change panicked");
            }
        });
    }
}

/// The rmcp client handler: says who we are and hears `tools/list_changed`.
struct Handler {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        // The newest version that still has the `initialize` handshake: what
        // every server of 2025 answers, and what rmcp's `serve` performs.
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("engram", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// What a stdio child printed that was not for rmcp: stray stdout lines
/// and its last stderr line, for failure notes (rule 5).
#[derive(Default)]
struct Chatter {
    stray_lines: usize,
    first_stray: Option<String>,
    last_stderr: Option<String>,
}

fn cut(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(NOTE_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

impl Chatter {
    fn note(&self) -> String {
        let mut note = String::new();
        if let Some(first) = &self.first_stray {
            note.push_str(&format!(
                "; it printed {} line(s) on stdout that are not JSON-RPC, the first: {first:?}",
                self.stray_lines
            ));
        }
        if let Some(last) = &self.last_stderr {
            note.push_str(&format!("; its last stderr line: {last:?}"));
        }
        note
    }
}

/// A connected server and what has to be cleaned up with it.
struct Connected {
    running: RunningService<RoleClient, Handler>,
    tools: Vec<McpToolSpec>,
    child: Option<ServerProcess>,
    list_changed: mpsc::UnboundedReceiver<()>,
}

/// A stdio server's process, started as the leader of a process group of
/// its own: what a launcher it runs starts (`npx`, `uvx`, a shell script
/// that runs the server as its child) is in that group too, and goes with
/// it. Killing the launcher alone leaves such a server running after
/// engram — stuck in a call, holding files or ports.
struct ServerProcess {
    child: tokio::process::Child,
    /// The group's id (the leader's pid).
    group: Option<libc::pid_t>,
}

impl ServerProcess {
    /// Every process left in the group, killed (none: nothing happens).
    fn kill_group(&self) {
        if let Some(group) = self.group.filter(|g| *g > 0) {
            // SAFETY: a signal to a process group this server started.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Starts one server (spawns or reaches it, `initialize`, `tools/list`).
/// On failure, the child (if any) is killed and reaped.
async fn connect(
    name: &str,
    spec: &Spec,
    start_timeout: Duration,
    chatter: &Arc<Mutex<Chatter>>,
) -> Result<Connected, String> {
    let (tx, list_changed) = mpsc::unbounded_channel();
    let handler = Handler { list_changed: tx };
    match spec {
        Spec::Broken(why) => Err(why.clone()),
        Spec::Stdio { command, args, env, cwd } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
            // A group of its own (`ServerProcess`): what it starts goes
            // with it.
            cmd.process_group(0);
            let child = cmd.spawn().map_err(|e| format!("cannot run {command:?}: {e}"))?;
            let group = child.id().and_then(|id| libc::pid_t::try_from(id).ok());
            let mut child = ServerProcess { child, group };
            let child_io = &mut child.child;
            let (Some(stdout), Some(stdin), Some(stderr)) =
                (child_io.stdout.take(), child_io.stdin.take(), child_io.stderr.take())
            else {
                stop_child(&mut child).await;
                return Err("the child's stdio could not be piped".to_owned());
            };
            tokio::spawn(read_stderr(name.to_owned(), stderr, chatter.clone()));
            let (rmcp_side, our_side) = tokio::io::duplex(64 * 1024);
            let (rmcp_read, _unused_write) = tokio::io::split(rmcp_side);
            tokio::spawn(filter_stdout(name.to_owned(), stdout, our_side, chatter.clone()));
            let started = tokio::time::timeout(start_timeout, async {
                let running = handler.serve((rmcp_read, stdin)).await.map_err(|e| format!("initialize failed: {e}"))?;
                let tools = running.peer().list_all_tools().await.map_err(|e| format!("tools/list failed: {e}"))?;
                Ok::<_, String>((running, tools))
            })
            .await;
            match started {
                Ok(Ok((running, tools))) => Ok(Connected {
                    running,
                    tools: tools.iter().map(McpToolSpec::from_rmcp).collect(),
                    child: Some(child),
                    list_changed,
                }),
                Ok(Err(why)) => {
                    let status = stop_child(&mut child).await;
                    let note = lock(chatter).note();
                    Err(format!("{why}{}{note}", exited(status)))
                }
                Err(_) => {
                    let _ = stop_child(&mut child).await;
                    let note = lock(chatter).note();
                    Err(format!("no answer to initialize and tools/list within {} ms{note}", start_timeout.as_millis()))
                }
            }
        }
        Spec::Http { url, headers } => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            use rmcp::transport::StreamableHttpClientTransport;
            // reqwest is built without a crypto provider: ring, as ureq's
            // rustls uses. Already installed (by us or the host) is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(headers.iter().cloned().collect());
            let started = tokio::time::timeout(start_timeout, async {
                let transport = StreamableHttpClientTransport::from_config(config);
                let running = handler.serve(transport).await.map_err(|e| format!("initialize failed: {e}"))?;
                let tools = running.peer().list_all_tools().await.map_err(|e| format!("tools/list failed: {e}"))?;
                Ok::<_, String>((running, tools))
            })
            .await;
            match started {
                Ok(Ok((running, tools))) => Ok(Connected {
                    running,
                    tools: tools.iter().map(McpToolSpec::from_rmcp).collect(),
                    child: None,
                    list_changed,
                }),
                Ok(Err(why)) => Err(why),
                Err(_) => {
                    Err(format!("no answer to initialize and tools/list within {} ms", start_timeout.as_millis()))
                }
            }
        }
    }
}

fn lock(chatter: &Mutex<Chatter>) -> MutexGuard<'_, Chatter> {
    chatter.lock().unwrap_or_else(|p| p.into_inner())
}

fn exited(status: Option<std::process::ExitStatus>) -> String {
    match status {
        Some(s) => format!(" (it exited: {s})"),
        None => String::new(),
    }
}

/// Closes a child's pipes by dropping nothing we still hold, waits a
/// moment for it to exit, kills it otherwise, and reaps it: no zombie;
/// then whatever it started in its group goes too. Returns its exit
/// status when it exited by itself.
async fn stop_child(process: &mut ServerProcess) -> Option<std::process::ExitStatus> {
    let child = &mut process.child;
    let status = match child.try_wait() {
        Ok(Some(status)) => Some(status),
        _ => match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = child.kill().await;
                None
            }
        },
    };
    process.kill_group();
    status
}

/// Logs a stdio child's stderr (debug) and keeps its last line.
async fn read_stderr(name: String, stderr: tokio::process::ChildStderr, chatter: Arc<Mutex<Chatter>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %name, "mcp stderr: {line}");
        if !line.trim().is_empty() {
            lock(&chatter).last_stderr = Some(cut(&line));
        }
    }
}

/// Passes the child's stdout lines that are JSON to rmcp and keeps a note
/// of those that are not (a banner, a log line: rule 5). Ends (closing
/// rmcp's side, so a call in flight fails) when the child's stdout does.
async fn filter_stdout(
    name: String,
    stdout: tokio::process::ChildStdout,
    mut to_rmcp: tokio::io::DuplexStream,
    chatter: Arc<Mutex<Chatter>>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_capped(&mut reader, &mut line).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(server = %name, error = %e, "mcp: reading stdout failed");
                break;
            }
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > MAX_LINE || serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
            let shown = cut(&String::from_utf8_lossy(&text[..text.len().min(4 * NOTE_CHARS)]));
            tracing::debug!(server = %name, "mcp: not JSON-RPC on stdout: {shown}");
            let mut c = lock(&chatter);
            c.stray_lines += 1;
            if c.first_stray.is_none() {
                c.first_stray = Some(shown);
            }
            continue;
        }
        if to_rmcp.write_all(text).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
            break;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Reads one line into `buf`, keeping at most [`MAX_LINE`] + 1 bytes of it
/// (the rest of a longer line is read and dropped). Returns the bytes read.
async fn read_line_capped<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (used, done) = match memchr_newline(chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (MAX_LINE + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        r.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// What ended a connection's watch.
enum End {
    Stop,
    Closed(String),
}

/// One server's life on the hub's runtime: connect, serve, restart.
pub(super) struct Supervisor {
    pub(super) shared: Arc<Shared>,
    pub(super) spec: Spec,
    pub(super) start_timeout: Duration,
    pub(super) notify: Notify,
    pub(super) stop: watch::Receiver<bool>,
    /// Told once, after the first attempt (what `start` waits for).
    pub(super) first: Option<crossbeam_channel::Sender<()>>,
}

impl Supervisor {
    pub(super) async fn run(mut self) {
        let name = self.shared.name().to_owned();
        let mut attempt: u32 = 0;
        // Fires after the first attempt's state is set, or if this panics.
        let mut first = FirstGuard(self.first.take());
        loop {
            if *self.stop.borrow() {
                return;
            }
            if attempt > 0 {
                self.shared.set_state(McpState::Restarting { attempt });
            }
            let chatter = Arc::new(Mutex::new(Chatter::default()));
            let result = connect(&name, &self.spec, self.start_timeout, &chatter).await;
            self.after_connect(&name, result, &chatter, &mut attempt, &mut first).await;
            if *self.stop.borrow() {
                return;
            }
            if matches!(self.spec, Spec::Broken(_)) {
                // Nothing will change until the configuration does.
                let _ = self.stop.wait_for(|s| *s).await;
                return;
            }
            attempt += 1;
            let delay = backoff(attempt);
            tracing::info!(server = %name, "mcp: restarting in {delay:?} (attempt {attempt})");
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// Serves a connected server until it closes or the hub stops; marks a
    /// failure. Resets `attempt` after a connection that lasted.
    async fn after_connect(
        &mut self,
        name: &str,
        result: Result<Connected, String>,
        chatter: &Arc<Mutex<Chatter>>,
        attempt: &mut u32,
        first: &mut FirstGuard,
    ) {
        let mut connected = match result {
            Ok(c) => c,
            Err(why) => {
                tracing::warn!(server = %name, "mcp: server {name} failed to start: {why}");
                self.shared.set(McpState::Failed(why), None);
                first.fire();
                return;
            }
        };
        let since = Instant::now();
        let (closed_tx, closed_rx) = watch::channel(false);
        let mut tools = connected.tools.clone();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tracing::info!(server = %name, tools = tools.len(), "mcp: server {name} ready");
        self.shared.set(
            McpState::Ready,
            Some(Conn { peer: connected.running.peer().clone(), tools: Arc::new(tools), closed: closed_rx.clone() }),
        );
        // In this order: a change `start` waits for is not reported.
        self.notify.changed(name);
        first.fire();

        let peer = connected.running.peer().clone();
        let cancel = connected.running.cancellation_token();
        let mut waiting = Box::pin(connected.running.waiting());
        let end = loop {
            let event = tokio::select! {
                quit = &mut waiting => WatchEvent::Quit(format!("the connection closed ({quit:?})")),
                r = self.stop.wait_for(|s| *s) => {
                    drop(r);
                    WatchEvent::Stop
                }
                Some(()) = connected.list_changed.recv() => WatchEvent::ListChanged,
            };
            match event {
                WatchEvent::Quit(why) => break End::Closed(why),
                WatchEvent::Stop => break End::Stop,
                WatchEvent::ListChanged => {
                    // Several notifications in a row: one re-listing.
                    while connected.list_changed.try_recv().is_ok() {}
                    self.relist(name, &peer, &closed_rx).await;
                }
            }
        };
        // From here on no call starts on this connection, and those in
        // flight fail at once.
        let _ = closed_tx.send(true);
        match end {
            End::Stop => {
                self.shared.set(McpState::Failed("shut down".to_owned()), None);
                cancel.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(3), &mut waiting).await;
                if let Some(child) = connected.child.as_mut() {
                    stop_child(child).await;
                }
            }
            End::Closed(why) => {
                let status = match connected.child.as_mut() {
                    Some(child) => stop_child(child).await,
                    None => None,
                };
                let why = format!("{why}{}{}", exited(status), lock(chatter).note());
                tracing::warn!(server = %name, "mcp: server {name} went away: {why}");
                self.shared.set(McpState::Failed(why), None);
                self.notify.changed(name);
                if since.elapsed() >= BACKOFF_MAX {
                    *attempt = 0;
                }
            }
        }
    }
}

impl Supervisor {
    /// Lists a server's tools again after `tools/list_changed`; tells
    /// `on_change` if they differ.
    async fn relist(&self, name: &str, peer: &Peer<RoleClient>, closed: &watch::Receiver<bool>) {
        match tokio::time::timeout(self.start_timeout, peer.list_all_tools()).await {
            Ok(Ok(listed)) => {
                let mut specs: Vec<McpToolSpec> = listed.iter().map(McpToolSpec::from_rmcp).collect();
                specs.sort_by(|a, b| a.name.cmp(&b.name));
                let differs = match self.shared.connection() {
                    Ok(c) => *c.tools != specs,
                    Err(_) => true,
                };
                if differs {
                    tracing::info!(server = %name, tools = specs.len(), "mcp: server {name}'s tools changed");
                    let conn = Conn { peer: peer.clone(), tools: Arc::new(specs), closed: closed.clone() };
                    self.shared.set(McpState::Ready, Some(conn));
                    self.notify.changed(name);
                }
            }
            Ok(Err(e)) => tracing::warn!(server = %name, "mcp: re-listing {name}'s tools failed: {e}"),
            Err(_) => tracing::warn!(server = %name, "mcp: re-listing {name}'s tools timed out"),
        }
    }
}

/// What woke a connection's watch.
enum WatchEvent {
    Quit(String),
    Stop,
    ListChanged,
}

/// Tells `start` a server's first attempt is over, however it ended.
struct FirstGuard(Option<crossbeam_channel::Sender<()>>);

impl FirstGuard {
    fn fire(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for FirstGuard {
    fn drop(&mut self) {
        self.fire();
    }
}

/// The wait before restart `attempt` (from 1): 1 s, 2 s, 4 s … 60 s.
pub(super) fn backoff(attempt: u32) -> Duration {
    let factor = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
    BACKOFF_FIRST.saturating_mul(factor).min(BACKOFF_MAX)
}
