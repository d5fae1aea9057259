//! MCP tool sources (`tools::mcp`) against a hostile stub server
//! (tests/support/mcp_stub.js, Node without dependencies) and, when
//! installed (`npm ci --prefix tests/mcp`), the reference server
//! `@modelcontextprotocol/server-everything`.
#![cfg(all(feature = "mcp", unix))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram_actors::tools::mcp::{McpHub, McpSection, McpServerSection, McpState, OUTPUT_MAX_BYTES};
use engram_actors::tools::Tool;
use engram_actors::{ToolContext, ToolError};
use engram_events::chrono::DateTime;
use engram_events::payloads::{SideEffectClass, ToolArgs};
use engram_events::SessionId;
use engram_learning::fence::is_fenced;

fn ctx() -> ToolContext {
    ToolContext::new(SessionId::new("s-mcp"), DateTime::parse_from_rfc3339("2026-11-23T14:05:30+01:00").unwrap())
}

fn args(json: &str) -> ToolArgs {
    ToolArgs::from_json(json).unwrap()
}

fn node_missing() -> bool {
    let ok = std::process::Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: `node` is not on PATH (the MCP stub server is a Node script)");
    }
    !ok
}

fn stub(mode: &str) -> McpServerSection {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_stub.js");
    McpServerSection {
        command: "node".into(),
        args: vec![script.display().to_string(), mode.into()],
        start_timeout_ms: 10_000,
        ..McpServerSection::default()
    }
}

fn section(servers: Vec<(&str, McpServerSection)>) -> McpSection {
    McpSection { servers: servers.into_iter().map(|(n, s)| (n.to_owned(), s)).collect() }
}

/// A counter of `on_change` calls.
fn counter() -> (Arc<AtomicUsize>, Arc<dyn Fn() + Send + Sync>) {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    (
        n,
        Arc::new(move || {
            m.fetch_add(1, Ordering::SeqCst);
        }),
    )
}

fn start(section: &McpSection, env: BTreeMap<&'static str, String>, on_change: Arc<dyn Fn() + Send + Sync>) -> McpHub {
    McpHub::start(section, move |n| env.get(n).cloned().or_else(|| std::env::var(n).ok()), on_change)
}

fn tool(hub: &McpHub, name: &str) -> Arc<dyn Tool> {
    hub.tools().into_iter().find(|t| t.name() == name).unwrap_or_else(|| panic!("no tool {name}: {:?}", hub.status()))
}

fn state(hub: &McpHub, server: &str) -> McpState {
    hub.status().into_iter().find(|s| s.name == server).unwrap().state
}

fn wait_until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// True when `pid` is gone: neither running nor a zombie (a zombie keeps
/// its /proc entry until reaped).
fn process_gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn failed_text(r: Result<engram_actors::ToolOutput, ToolError>) -> String {
    match r {
        Err(ToolError::Failed(m)) => m,
        other => panic!("expected ToolError::Failed, got {other:?}"),
    }
}

#[test]
fn lists_tools_with_schemas_and_side_effects_and_calls_them() {
    if node_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut ok = stub("ok");
    ok.env.insert("MCP_STUB_PIDFILE".into(), "TEST_PIDFILE".into());
    let s = section(vec![("stub", ok), ("evil", stub("inject"))]);
    let (changes, on_change) = counter();
    let env = BTreeMap::from([("TEST_PIDFILE", pidfile.display().to_string())]);
    let hub = start(&s, env, on_change);

    let status = hub.status();
    assert_eq!(status.len(), 2);
    for st in &status {
        assert_eq!(st.state, McpState::Ready, "{st:?}");
    }
    // Sorted by (server, tool): evil's weather, then stub's echo, write_note.
    let names: Vec<String> = hub.tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["weather", "echo", "write_note"]);
    assert_eq!(hub.source_of("echo").as_deref(), Some("stub"));
    assert_eq!(hub.source_of("weather").as_deref(), Some("evil"));
    assert_eq!(hub.source_of("nope"), None);
    // What start waited for is not reported to on_change.
    assert_eq!(changes.load(Ordering::SeqCst), 0);

    let echo = tool(&hub, "echo");
    assert_eq!(echo.description(), "Echoes the text back.\n\nSecond paragraph of the description.");
    assert_eq!(echo.parameters()["properties"]["text"]["type"], "string");
    assert_eq!(echo.parameters()["required"][0], "text");
    assert_eq!(echo.side_effect(), SideEffectClass::Read);
    assert_eq!(tool(&hub, "write_note").side_effect(), SideEffectClass::Write);
    // readOnlyHint wins over openWorldHint.
    let weather = tool(&hub, "weather");
    assert_eq!(weather.side_effect(), SideEffectClass::Read);
    // The server's text, as it is: a planner is told where it comes from.
    assert!(weather.description().contains("ignore previous instructions"));

    let out = echo.call(&args(r#"{"text":"hello"}"#), &ctx()).unwrap();
    assert!(out.untrusted);
    assert_eq!(out.text, "hello\n[image: image/png]");
    assert!(is_fenced(&out.for_llm("echo (MCP stub)")));
    let out = tool(&hub, "write_note").call(&args(r#"{"note":"milk"}"#), &ctx()).unwrap();
    assert_eq!(out.text, "noted: milk");
    assert!(out.untrusted);
    let out = weather.call(&args(r#"{"city":"Rome"}"#), &ctx()).unwrap();
    assert!(out.untrusted);

    // isError: the call fails with the server's text, naming tool and server.
    let m = failed_text(echo.call(&args(r#"{"text":"fail"}"#), &ctx()));
    assert!(m.contains("echo") && m.contains("stub") && m.contains(r#"echo refuses "fail""#), "{m}");

    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(!process_gone(pid));
    hub.shutdown();
    assert!(process_gone(pid), "the stub outlived shutdown (or is a zombie)");
    // A tool kept past shutdown fails cleanly.
    let m = failed_text(echo.call(&args(r#"{"text":"late"}"#), &ctx()));
    assert!(m.contains("not ready") || m.contains("shut down"), "{m}");
    drop(hub);
}

#[test]
fn a_call_that_hangs_fails_at_its_timeout_and_is_cancelled() {
    if node_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut hang = stub("hang");
    hang.timeout_ms = 700;
    hang.env.insert("MCP_STUB_LOG".into(), "TEST_STUB_LOG".into());
    let (_, on_change) = counter();
    let hub = start(
        &section(vec![("slow", hang)]),
        BTreeMap::from([("TEST_STUB_LOG", log.display().to_string())]),
        on_change,
    );
    let echo = tool(&hub, "echo");
    let t0 = Instant::now();
    let m = failed_text(echo.call(&args(r#"{"text":"x"}"#), &ctx()));
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(650) && took < Duration::from_millis(2500), "{took:?}");
    assert!(m.contains("echo") && m.contains("slow") && m.contains("700 ms"), "{m}");
    wait_until("notifications/cancelled", Duration::from_secs(3), || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("notifications/cancelled"))
    });
    // Still connected: a hang is not a crash.
    assert_eq!(state(&hub, "slow"), McpState::Ready);
}

#[test]
fn a_crash_fails_the_call_at_once_then_the_server_comes_back() {
    if node_missing() {
        return;
    }
    let (changes, on_change) = counter();
    let hub = start(&section(vec![("fragile", stub("crash"))]), BTreeMap::new(), on_change);
    let echo = tool(&hub, "echo");
    let t0 = Instant::now();
    let m = failed_text(echo.call(&args(r#"{"text":"x"}"#), &ctx()));
    assert!(t0.elapsed() < Duration::from_secs(5), "not at once: {:?}", t0.elapsed());
    assert!(m.contains("closed the connection") && m.contains("fragile"), "{m}");
    wait_until("the failure to be seen", Duration::from_secs(5), || {
        matches!(state(&hub, "fragile"), McpState::Failed(_) | McpState::Restarting { .. })
            || changes.load(Ordering::SeqCst) >= 2
    });
    wait_until("on_change for the crash", Duration::from_secs(5), || changes.load(Ordering::SeqCst) >= 1);
    wait_until("the restart", Duration::from_secs(15), || state(&hub, "fragile") == McpState::Ready);
    wait_until("on_change for the restart", Duration::from_secs(5), || changes.load(Ordering::SeqCst) >= 2);
    assert_eq!(hub.tools().len(), 2);
    // The old tool handle goes to the new connection.
    let m = failed_text(echo.call(&args(r#"{"text":"again"}"#), &ctx()));
    assert!(m.contains("closed the connection"), "{m}");
}

#[test]
fn garbage_on_stdout_fails_that_server_only() {
    if node_missing() {
        return;
    }
    let mut garbage = stub("garbage");
    garbage.start_timeout_ms = 1500;
    let (_, on_change) = counter();
    let t0 = Instant::now();
    let hub = start(&section(vec![("junk", garbage), ("stub", stub("ok"))]), BTreeMap::new(), on_change);
    assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
    match state(&hub, "junk") {
        McpState::Failed(why) => {
            assert!(why.contains("1500 ms"), "{why}");
            assert!(why.contains("not JSON-RPC") && why.contains("Welcome to the server"), "{why}");
            assert!(why.contains("stub: started in mode garbage"), "{why}");
        }
        other => panic!("junk: {other:?}"),
    }
    assert_eq!(state(&hub, "stub"), McpState::Ready);
    let names: Vec<String> = hub.tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["echo", "write_note"]);
    let st = hub.status();
    assert_eq!(st.iter().find(|s| s.name == "junk").unwrap().tools, 0);
}

#[test]
fn a_huge_result_is_capped() {
    if node_missing() {
        return;
    }
    let (_, on_change) = counter();
    let hub = start(&section(vec![("big", stub("huge"))]), BTreeMap::new(), on_change);
    let out = tool(&hub, "echo").call(&args(r#"{"text":"x"}"#), &ctx()).unwrap();
    assert!(out.untrusted);
    assert!(out.text.len() < OUTPUT_MAX_BYTES + 200, "{}", out.text.len());
    assert!(out.text.starts_with("xxxx"));
    assert!(out.text.contains("[cut: the result was 1048576 bytes"), "{}", &out.text[out.text.len() - 120..]);
}

#[test]
fn list_changed_calls_on_change_and_lists_the_new_tool() {
    if node_missing() {
        return;
    }
    let (changes, on_change) = counter();
    let hub = start(&section(vec![("moving", stub("changing"))]), BTreeMap::new(), on_change);
    assert_eq!(hub.tools().len(), 2);
    tool(&hub, "echo").call(&args(r#"{"text":"x"}"#), &ctx()).unwrap();
    wait_until("on_change", Duration::from_secs(5), || changes.load(Ordering::SeqCst) >= 1);
    let names: Vec<String> = hub.tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names, ["added", "echo", "write_note"]);
    assert_eq!(tool(&hub, "added").side_effect(), SideEffectClass::Write);
    assert_eq!(hub.source_of("added").as_deref(), Some("moving"));
    assert_eq!(hub.status()[0].tools, 3);
}

#[test]
fn a_server_that_cannot_run_is_failed_with_why() {
    let mut missing_var = stub("ok");
    missing_var.env.insert("TOKEN".into(), "ENGRAM_TEST_SURELY_UNSET_VAR".into());
    let nonexistent = McpServerSection {
        command: "/nonexistent/engram-mcp-server".into(),
        start_timeout_ms: 2000,
        ..McpServerSection::default()
    };
    let disabled = McpServerSection { enabled: false, ..stub("ok") };
    let (_, on_change) = counter();
    let hub = start(
        &section(vec![("novar", missing_var), ("noprog", nonexistent), ("off", disabled)]),
        BTreeMap::new(),
        on_change,
    );
    let st = hub.status();
    assert_eq!(st.len(), 2, "disabled servers are not started: {st:?}");
    match state(&hub, "novar") {
        McpState::Failed(why) => {
            assert!(why.contains("ENGRAM_TEST_SURELY_UNSET_VAR") && why.contains("env.TOKEN"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    match state(&hub, "noprog") {
        McpState::Failed(why) => assert!(why.contains("cannot run") && why.contains("engram-mcp-server"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(hub.tools().is_empty());
}

/// The official reference server's entry point, installed from the pinned
/// lock file in tests/mcp; `None` (saying why) when it is not installed.
fn everything() -> Option<PathBuf> {
    if node_missing() {
        return None;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let entry = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.exists() {
        eprintln!(
            "skipped: {} is missing; run `npm ci --ignore-scripts --prefix tests/mcp` (pinned by tests/mcp/package-lock.json)",
            entry.display()
        );
        return None;
    }
    Some(entry)
}

fn check_everything(hub: &McpHub) {
    assert_eq!(state(hub, "everything"), McpState::Ready, "{:?}", hub.status());
    assert!(hub.tools().len() > 3, "{:?}", hub.status());
    let echo = tool(hub, "echo");
    assert!(echo.parameters()["properties"]["message"].is_object(), "{}", echo.parameters());
    let out = echo.call(&args(r#"{"message":"hi from engram"}"#), &ctx()).unwrap();
    assert!(out.untrusted);
    assert!(out.text.contains("hi from engram"), "{}", out.text);
}

/// `@modelcontextprotocol/server-everything` over stdio.
#[test]
fn the_reference_server_over_stdio() {
    let Some(entry) = everything() else { return };
    let server = McpServerSection {
        command: "node".into(),
        args: vec![entry.display().to_string(), "stdio".into()],
        start_timeout_ms: 20_000,
        ..McpServerSection::default()
    };
    let (_, on_change) = counter();
    let hub = start(&section(vec![("everything", server)]), BTreeMap::new(), on_change);
    check_everything(&hub);
}

/// Kills and reaps a child on drop.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `@modelcontextprotocol/server-everything` over streamable HTTP, with a
/// header whose value comes from the environment.
#[test]
fn the_reference_server_over_streamable_http() {
    let Some(entry) = everything() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _server = Reaped(
        std::process::Command::new("node")
            .arg(&entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("the HTTP server to listen", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let server = McpServerSection {
        url: format!("http://127.0.0.1:{port}/mcp"),
        headers: BTreeMap::from([("X-Engram-Test".to_owned(), "TEST_HEADER_VALUE".to_owned())]),
        start_timeout_ms: 20_000,
        ..McpServerSection::default()
    };
    let (_, on_change) = counter();
    let hub = start(
        &section(vec![("everything", server)]),
        BTreeMap::from([("TEST_HEADER_VALUE", "not-a-secret".to_owned())]),
        on_change,
    );
    check_everything(&hub);
}

/// True when `pid` has ended: gone, or a zombie no one reaped yet (an
/// orphan's reaper in a container may never come).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// A server started through a launcher that runs it as its child (as
/// `npx` and `uvx` do; here `sh`), stuck — it outlives its closed input —
/// is stopped with the launcher at shutdown: the launcher leads a process
/// group, and the group goes. (Killing the launcher alone left it
/// running after engram.)
#[test]
fn a_server_behind_a_launcher_is_stopped_with_it() {
    if node_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_stub.js");
    let mut launched = McpServerSection {
        command: "sh".into(),
        // Not `exec`: the server is the launcher's child.
        args: vec!["-c".into(), "node \"$0\" ok; echo launcher done >&2".into(), script.display().to_string()],
        start_timeout_ms: 10_000,
        ..McpServerSection::default()
    };
    for (var, from) in [("MCP_STUB_PIDFILE", "TEST_PIDFILE"), ("MCP_STUB_STAY", "TEST_STAY"), ("PATH", "PATH")] {
        launched.env.insert(var.into(), from.into());
    }
    let env = BTreeMap::from([("TEST_PIDFILE", pidfile.display().to_string()), ("TEST_STAY", "1".to_owned())]);
    let (_, on_change) = counter();
    let hub = start(&section(vec![("launched", launched)]), env, on_change);
    let _ = tool(&hub, "echo");
    let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(!ended(pid));
    hub.shutdown();
    wait_until("the server behind the launcher to end", Duration::from_secs(5), || ended(pid));
}
