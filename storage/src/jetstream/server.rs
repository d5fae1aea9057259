//! A `nats-server` child process on loopback with JetStream on and its
//! store in a directory of the caller's: what the contract tests, the fault
//! tests and `engram bench log --backend jetstream` run the backend
//! against, and a quick way to try it. Production deployments run the
//! server as a service (`docs/distributed.md`).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start waits for the server to listen.
const START_WAIT: Duration = Duration::from_secs(15);

/// A running `nats-server` (killed when dropped).
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    store: PathBuf,
    cluster: Option<ClusterNode>,
    /// More arguments for `nats-server` (`--auth TOKEN`, say).
    extra: Vec<String>,
}

/// A node's place in a cluster of servers on loopback.
#[derive(Clone, Debug)]
struct ClusterNode {
    name: String,
    cluster_port: u16,
    routes: Vec<u16>,
}

impl NatsServer {
    /// Starts a single server with its JetStream store in `store`, on a
    /// free port.
    pub fn start(store: &Path) -> std::io::Result<NatsServer> {
        NatsServer::start_with(store, &[])
    }

    /// [`NatsServer::start`] with more `nats-server` arguments, e.g.
    /// `["--auth", "TOKEN"]` for a server that wants a token.
    pub fn start_with(store: &Path, extra: &[&str]) -> std::io::Result<NatsServer> {
        let mut server = NatsServer {
            child: None,
            port: free_port()?,
            store: store.to_owned(),
            cluster: None,
            extra: extra.iter().map(|a| (*a).to_owned()).collect(),
        };
        server.restart()?;
        Ok(server)
    }

    /// Starts `n` servers clustered on loopback (JetStream replicas need
    /// at least 3), their stores under `dir`. The ports are the OS's picks,
    /// free when picked; one taken before its server binds it (another
    /// process, or a node's own outgoing route connection, given the same
    /// port by the OS) fails that start, so the cluster is started again on
    /// new ports, [`PORT_ATTEMPTS`] times at most — a test on a busy machine
    /// must not fail by chance.
    pub fn cluster(dir: &Path, n: usize) -> std::io::Result<Vec<NatsServer>> {
        let mut attempt = 1;
        loop {
            // Each attempt in stores of its own: none of a failed start's.
            let stores = if attempt == 1 { dir.to_owned() } else { dir.join(format!("attempt-{attempt}")) };
            match NatsServer::cluster_once(&stores, n) {
                Err(e) if attempt < PORT_ATTEMPTS && e.to_string().contains("address already in use") => {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn cluster_once(dir: &Path, n: usize) -> std::io::Result<Vec<NatsServer>> {
        let cluster_ports: Vec<u16> = (0..n).map(|_| free_port()).collect::<Result<_, _>>()?;
        let mut nodes = Vec::with_capacity(n);
        for (i, &cluster_port) in cluster_ports.iter().enumerate() {
            let routes = cluster_ports.iter().copied().filter(|&p| p != cluster_port).collect();
            nodes.push(NatsServer {
                child: None,
                port: free_port()?,
                store: dir.join(format!("n{i}")),
                cluster: Some(ClusterNode { name: format!("n{i}"), cluster_port, routes }),
                extra: Vec::new(),
            });
        }
        // Each waits only for its own client port: the cluster forms behind.
        for node in &mut nodes {
            node.spawn()?;
        }
        for node in &mut nodes {
            node.wait_listening()?;
        }
        Ok(nodes)
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server with SIGKILL (no shutdown, no flush).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again, on the same port and store.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.spawn()?;
        self.wait_listening()
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        self.kill();
        std::fs::create_dir_all(&self.store)?;
        let port = self.port.to_string();
        let mut command = Command::new("nats-server");
        command.args(["-a", "127.0.0.1", "-p", &port, "-js", "-sd"]).arg(&self.store);
        if let Some(node) = &self.cluster {
            let routes: Vec<String> = node.routes.iter().map(|p| format!("nats://127.0.0.1:{p}")).collect();
            command
                .args(["-n", &node.name, "--cluster_name", "engram"])
                .args(["--cluster", &format!("nats://127.0.0.1:{}", node.cluster_port)])
                .args(["--routes", &routes.join(",")]);
        }
        command.args(&self.extra);
        let log = std::fs::File::create(self.store.join("server.log"))?;
        let child = command.stdout(Stdio::null()).stderr(log).spawn().map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("starting nats-server: {e} (install it: `apt-get install nats-server`, which the README's test command does)"),
            )
        })?;
        self.child = Some(child);
        Ok(())
    }

    fn wait_listening(&mut self) -> std::io::Result<()> {
        let deadline = Instant::now() + START_WAIT;
        loop {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    return Err(std::io::Error::other(format!(
                        "nats-server exited ({status}) at start:\n{}",
                        self.log_tail()
                    )));
                }
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "nats-server does not listen on port {} after {START_WAIT:?}:\n{}",
                    self.port,
                    self.log_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last lines the server logged.
    pub fn log_tail(&self) -> String {
        let Ok(file) = std::fs::File::open(self.store.join("server.log")) else { return String::new() };
        let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How many times [`NatsServer::cluster`] starts a cluster whose port was
/// taken before its server bound it.
pub const PORT_ATTEMPTS: u32 = 3;

/// A port nothing listens on now (the OS's pick, released at once).
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
