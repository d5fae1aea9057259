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
