//! [`McpHub`]: the connections to every configured server (see the
//! [module docs](super) for its rules).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::section::{McpSection, McpServerSection};
use super::server::{self, Shared, Spec};
use super::{McpServerStatus, McpState};
use crate::tools::{Tool, ToolRegistry, ToolSource};

/// How long [`McpHub::shutdown`] waits for the servers to exit before it
/// gives up on them (they are killed, not waited for, past it).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

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
            for t in super::tool::tools_of(s) {
                out.push(Arc::new(t));
            }
        }
        out
    }

    /// Puts every server's ready tools into `registry`, each server its
    /// own source (`mcp:NAME`), replacing what that source had (none for a
    /// server that is not ready): the one way the runtime's catalogue and
    /// `engram tools` take the hub's tools.
    pub fn register_tools(&self, registry: &ToolRegistry) {
        for s in &self.servers {
            let tools = super::tool::tools_of(s).into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>).collect();
            registry.set_source(&ToolSource::Mcp(s.name().to_owned()), tools);
        }
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
