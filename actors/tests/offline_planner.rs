//! The offline planner's rules with the real embedding model. Its accuracy
//! on the labelled natural requests (`tests/fixtures/offline_planner/`) is
//! held by `tests/labelled.rs`, through the scoring `engram bench
//! fast-path` prints.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::tools::{BuiltinConfig, ToolRegistry};
use engram_learning::embedder::EmbedderConfig;
use engram_learning::offline_planner::OfflinePlanner;

fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap()
}

/// Rule 3 on its own: requests to delete, rename, send or play get no
/// step, whatever they resemble ("delete ~/notes.txt" is close to reading
/// it), while the same object with a verb a built-in serves does.
#[test]
fn actions_no_tool_does_are_not_planned_as_another_tool() {
    let e = Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).unwrap());
    let planner = OfflinePlanner::new(e, &ToolRegistry::with_builtins(BuiltinConfig::default()).specs()).unwrap();
    for text in ["delete ~/notes/todo.txt", "cancella il file ~/note/todo.txt", "send ~/report.md to Anna"] {
        assert_eq!(planner.plan(text, now()).unwrap(), vec![], "{text}");
    }
    let read = planner.plan("read ~/notes/todo.txt", now()).unwrap();
    assert_eq!(read.first().map(|s| s.tool.as_str()), Some("read_file"));
    let listed = planner.plan("elenca i file in ~/note", now()).unwrap();
    assert_eq!(listed.first().map(|s| s.tool.as_str()), Some("list_dir"));
}
