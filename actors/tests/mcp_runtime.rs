//! MCP tools in the live runtime, offline: the servers' tools join the
//! catalogue at start, the offline planner chooses among them exactly as
//! among built-ins (and abstains when none fits), a call is recorded with
//! its source, and a `notifications/tools/list_changed` mid-conversation
//! brings the new tool into the very next turn.
#![cfg(all(feature = "mcp", unix))]

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use engram_actors::config::Config;
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::tools::mcp::McpServerSection;
use engram_actors::tools::ToolSource;
use engram_actors::Runtime;
use engram_events::payloads::SideEffectClass;
use engram_events::{Event, Seq, SessionId};
use engram_learning::embedder::{Embedder, EmbedderConfig};
use engram_storage::EventLog;

fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).expect("the embedding model (scripts/fetch-models.sh)"))
    })
    .clone()
}

fn home_server() -> McpServerSection {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_stub.js");
    McpServerSection {
        command: "node".into(),
        args: vec![script.display().to_string(), "home".into()],
        start_timeout_ms: 10_000,
        ..McpServerSection::default()
    }
}

#[test]
fn an_mcp_tool_is_chosen_offline_called_and_refreshed_mid_conversation() {
    if std::process::Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipped: `node` is not on PATH (the MCP stub server is a Node script)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.mcp.servers.insert("home".into(), home_server());
    let rt = Runtime::builder().data_dir(dir.path()).config(config).offline().embedder(embedder()).start().unwrap();
    let listed: Vec<(String, ToolSource)> = rt.tools().iter().map(|(t, s)| (t.name().to_owned(), s.clone())).collect();
    let home = ToolSource::Mcp("home".into());
    assert!(listed.contains(&("set_thermostat".into(), home.clone())), "{listed:?}");
    assert!(listed.contains(&("get_room_temperature".into(), home.clone())), "{listed:?}");
    assert!(listed.contains(&("read_file".into(), ToolSource::Builtin)), "{listed:?}");

    let s = SessionId::new("s-home");
    let r = rt.handle_utterance(&s, "set the thermostat to 21 degrees").unwrap();
    assert_eq!(r.steps.iter().map(|s| s.tool.as_str()).collect::<Vec<_>>(), ["set_thermostat"], "{r:?}");
    assert_eq!(r.steps[0].args.0["degrees"], 21, "{r:?}");
    assert!(r.text.contains("thermostat set to 21 C"), "{r:?}");
    let called: Vec<_> = rt
        .log()
        .read_from(Seq(1))
        .filter_map(|e| match e.unwrap().event {
            Event::ToolCalled(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(called.len(), 1);
    assert_eq!(called[0].source.as_deref(), Some("mcp:home"));
    assert_eq!(called[0].side_effect, Some(SideEffectClass::Write), "destructiveHint: effectful");

    // The call made the server list a new tool: the next turn may use it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !rt.tools().iter().any(|(t, _)| t.name() == "water_plants") {
        assert!(Instant::now() < deadline, "list_changed never reached the catalogue");
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = rt.handle_utterance(&s, "water the plants in the garden").unwrap();
    assert_eq!(r.steps.iter().map(|s| s.tool.as_str()).collect::<Vec<_>>(), ["water_plants"], "{r:?}");

    // No offered tool fits: no MCP tool is called.
    let r = rt.handle_utterance(&s, "tell me a joke about penguins").unwrap();
    assert!(r.steps.iter().all(|s| s.tool != "set_thermostat" && s.tool != "water_plants"), "{r:?}");
    rt.shutdown().unwrap();
}

/// The official filesystem server (`@modelcontextprotocol/server-filesystem`,
/// installed by scripts/test.sh from tests/mcp's lock file), confined to a
/// temp dir: its `read_file` may not shadow the built-in (it is offered as
/// `files_read_file`), its tools are called through the runtime's
/// registry with their output fenced as data and its refusals as errors,
/// and — with no `[tools] file_roots` — a turn about a folder or a file
/// goes to the server, not to a built-in that refuses everything.
#[test]
fn the_reference_filesystem_server_joins_without_shadowing_a_built_in() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/node_modules");
    let entry = root.join("@modelcontextprotocol/server-filesystem/dist/index.js");
    if !entry.is_file() {
        eprintln!("skipped: run `npm ci --ignore-scripts --prefix tests/mcp` (scripts/test.sh does)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "buy milk\n").unwrap();
    let mut config = Config::default();
    let server = McpServerSection {
        command: "node".into(),
        args: vec![entry.display().to_string(), notes.display().to_string()],
        start_timeout_ms: 20_000,
        ..McpServerSection::default()
    };
    config.mcp.servers.insert("files".into(), server);
    let rt = Runtime::builder()
        .data_dir(dir.path().join("data"))
        .config(config)
        .offline()
        .embedder(embedder())
        .start()
        .unwrap();
    let tools = rt.tools();
    let source = |name: &str| tools.iter().find(|(t, _)| t.name() == name).map(|(_, s)| s.clone());
    assert_eq!(source("read_file"), Some(ToolSource::Builtin));
    assert_eq!(source("files_read_file"), Some(ToolSource::Mcp("files".into())));
    assert_eq!(source("list_directory"), Some(ToolSource::Mcp("files".into())));
    let (write, _) = tools.iter().find(|(t, _)| t.name() == "write_file").unwrap();
    assert_eq!(write.side_effect(), SideEffectClass::Write);
    let (list, _) = tools.iter().find(|(t, _)| t.name() == "list_directory").unwrap();
    let ctx = engram_actors::ToolContext::new(SessionId::new("s-fs"), engram_events::chrono::Utc::now().fixed_offset());
    let path = notes.display().to_string();
    let out = list
        .call(&engram_events::payloads::ToolArgs::from_json(&format!(r#"{{"path":"{path}"}}"#)).unwrap(), &ctx)
        .unwrap();
    assert!(out.untrusted && out.text.contains("todo.txt"), "{out:?}");
    let outside = list.call(&engram_events::payloads::ToolArgs::from_json(r#"{"path":"/etc"}"#).unwrap(), &ctx);
    assert!(outside.is_err(), "the server's own confinement: {outside:?}");

    // No `[tools] file_roots`: the built-in `list_dir` and `read_file`
    // refuse everything, so a turn asking for the folder or the file is
    // served by the server's tools (it went to the built-ins, which said
    // "no file roots are configured").
    let s = SessionId::new("s-fs-turn");
    let r = rt.handle_utterance(&s, &format!("list the files in {path}/")).unwrap();
    let listing = ["list_directory", "list_directory_with_sizes", "directory_tree"];
    assert!(r.steps.len() == 1 && listing.contains(&r.steps[0].tool.as_str()), "{r:?}");
    assert!(r.text.contains("todo.txt"), "{r:?}");
    let r = rt.handle_utterance(&s, &format!("read {path}/todo.txt")).unwrap();
    assert_eq!(r.steps.iter().map(|s| s.tool.as_str()).collect::<Vec<_>>(), ["read_text_file"], "{r:?}");
    assert!(r.text.contains("buy milk"), "{r:?}");
    rt.shutdown().unwrap();
}
