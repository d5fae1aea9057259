//! Which tool the offline planner chooses with real MCP servers beside the
//! built-ins, graded on a request set written apart from the planner
//! (`tests/fixtures/mcp_requests.jsonl`, its README says how): the official
//! filesystem and "everything" servers and the stub's `home` mode, with no
//! `[tools] file_roots` and no `[tools] location` configured.
//!
//! The bug this guards against: the built-in `list_dir` / `read_file`,
//! which refuse everything without `file_roots`, were planned over the
//! filesystem server's `list_directory` / `read_text_file`, and "what's the
//! capital of France" was planned as `get_location`.
#![cfg(all(feature = "mcp", unix))]

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use engram_actors::catalogue::Catalogue;
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::tools::mcp::{McpHub, McpSection, McpServerSection, McpState};
use engram_actors::{BuiltinConfig, ToolRegistry};
use engram_events::chrono::DateTime;
use engram_learning::embedder::{Embedder, EmbedderConfig};

fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).expect("the embedding model (scripts/fetch-models.sh)"))
    })
    .clone()
}

/// The installed reference servers' entry points (`npm ci --prefix
/// tests/mcp`), or `None` (skipped, saying why) when they or `node` are
/// missing.
fn reference_servers() -> Option<(PathBuf, PathBuf)> {
    if std::process::Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipped: `node` is not on PATH");
        return None;
    }
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/node_modules/@modelcontextprotocol");
    let files = modules.join("server-filesystem/dist/index.js");
    let everything = modules.join("server-everything/dist/index.js");
    if !files.is_file() || !everything.is_file() {
        eprintln!("skipped: run `npm ci --ignore-scripts --prefix tests/mcp` (scripts/test.sh does)");
        return None;
    }
    Some((files, everything))
}

fn node(args: Vec<String>) -> McpServerSection {
    McpServerSection { command: "node".into(), args, start_timeout_ms: 20_000, ..McpServerSection::default() }
}

/// One request of the fixture.
struct Case {
    split: String,
    request: String,
    expect: Vec<String>,
}

fn cases() -> Vec<Case> {
    let text = include_str!("fixtures/mcp_requests.jsonl");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Case {
                split: v["split"].as_str().unwrap().to_owned(),
                request: v["request"].as_str().unwrap().to_owned(),
                expect: v["expect"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect(),
            }
        })
        .collect()
}

/// Right choices and right abstentions of one split.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Grade {
    choices: usize,
    of_choices: usize,
    abstentions: usize,
    of_abstentions: usize,
}

#[test]
fn the_offline_planner_prefers_a_tool_that_can_run_and_abstains_on_trivia() {
    let Some((files, everything)) = reference_servers() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stub = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_stub.js");
    let section = McpSection {
        servers: [
            ("files", node(vec![files.display().to_string(), dir.path().display().to_string()])),
            ("everything", node(vec![everything.display().to_string(), "stdio".into()])),
            ("home", node(vec![stub.display().to_string(), "home".into()])),
        ]
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect(),
    };
    let hub = McpHub::start(&section, |_| None, Arc::new(|| {}));
    // No `[tools] file_roots`, no `[tools] location`.
    let registry = Arc::new(ToolRegistry::with_builtins(BuiltinConfig::default()));
    hub.register_tools(&registry);
    for server in hub.status() {
        assert_eq!(server.state, McpState::Ready, "{:?}", hub.status());
    }
    // The built-ins that cannot run so configured.
    let unconfigured = ["get_location", "list_dir", "read_file"];
    let catalogue = Catalogue::new(registry, embedder()).unwrap();
    let view = catalogue.view();
    let now = DateTime::parse_from_rfc3339("2026-11-26T10:00:00+01:00").unwrap();

    let verbose = std::env::var_os("ENGRAM_MCP_CHOICE_VERBOSE").is_some();
    let mut grades: std::collections::BTreeMap<String, Grade> = Default::default();
    let mut wrong_fs = Vec::new();
    for case in cases() {
        let steps = view.offline.plan(&case.request, now).unwrap();
        let planned: Vec<&str> = steps.iter().map(|s| s.tool.as_str()).collect();
        let g = grades.entry(case.split.clone()).or_default();
        let right = if case.expect.is_empty() {
            g.of_abstentions += 1;
            planned.is_empty()
        } else {
            g.of_choices += 1;
            !planned.is_empty() && planned.iter().all(|t| case.expect.iter().any(|e| e == t))
        };
        if right {
            match case.expect.is_empty() {
                true => g.abstentions += 1,
                false => g.choices += 1,
            }
        }
        // The case this test is named after: a request for the filesystem
        // server's tools planned as a built-in that refuses everything.
        let wants_files = case.expect.iter().any(|e| registry_source_is_files(&hub, e));
        if wants_files && planned.iter().any(|t| unconfigured.iter().any(|u| u == t)) {
            wrong_fs.push(format!("{:?} → {planned:?}", case.request));
        }
        if verbose && (case.split == "dev" || std::env::var_os("ENGRAM_MCP_CHOICE_HELD_OUT").is_some()) {
            let mark = if right { "ok " } else { "BAD" };
            let ranked = view.offline.rank(&case.request).unwrap();
            let mut top: Vec<String> = ranked.iter().take(3).map(|(t, c)| format!("{t} {c:.3}")).collect();
            top.extend(ranked.iter().filter(|(t, _)| case.expect.contains(t)).map(|(t, c)| format!("want {t} {c:.3}")));
            eprintln!("{mark} [{}] {:?} → {planned:?} (want {:?}; top {top:?})", case.split, case.request, case.expect);
        }
    }
    for (split, g) in &grades {
        eprintln!(
            "{split}: right choices {}/{}, right abstentions {}/{}",
            g.choices, g.of_choices, g.abstentions, g.of_abstentions
        );
    }
    hub.shutdown();
    let dev = grades["dev"];
    let held = grades["held-out"];
    // No request for the filesystem server's tools goes to a built-in that
    // refuses everything as configured (before the fix: 19 of 20 did).
    assert!(wrong_fs.is_empty(), "filesystem requests planned as an unconfigured built-in:\n{}", wrong_fs.join("\n"));
    // "What's the capital of France" and the other trivia: no tool.
    assert_eq!(dev.abstentions, dev.of_abstentions, "dev abstentions: {dev:?}");
    assert_eq!(held.abstentions, held.of_abstentions, "held-out abstentions: {held:?}");
    // The measured figures (docs/tools.md: dev 22/25, held-out 17/23; before
    // the fix 14/25 and 10/23), a request of slack each for a model or
    // runtime update that moves cosines a little.
    assert!(dev.choices >= 21, "dev: {dev:?}");
    assert!(held.choices >= 16, "held-out: {held:?}");
}

/// Whether `tool` is one the filesystem server lists.
fn registry_source_is_files(hub: &McpHub, tool: &str) -> bool {
    hub.source_of(tool).as_deref() == Some("files") || tool == "files_read_file"
}
