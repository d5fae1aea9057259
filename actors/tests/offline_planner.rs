//! The offline planner's tool choice on natural requests (EN, IT and mixed)
//! with the real embedding models: `tests/fixtures/offline_planner/`
//! labels each request with the built-in it needs, or none (small talk, and
//! actions no built-in can do: delete, rename, send, play).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use engram_actors::embedder::{EmbedderConfig, OnnxEmbedder};
use engram_actors::offline_planner::OfflinePlanner;
use engram_actors::tools::{BuiltinConfig, ToolRegistry};
use engram_learning::embedding_model::EmbeddingModel;

const REQUESTS: &str = include_str!("../../tests/fixtures/offline_planner/requests.jsonl");

fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap()
}

/// Per language: (right, asked); and the requests it got wrong.
fn accuracy(model: EmbeddingModel) -> (BTreeMap<String, (usize, usize)>, Vec<String>) {
    let e = Arc::new(OnnxEmbedder::open(&EmbedderConfig::default().with_model(model)).unwrap());
    let planner = OfflinePlanner::new(e, &ToolRegistry::with_builtins(BuiltinConfig::default()).specs()).unwrap();
    let mut by_lang: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut wrong = Vec::new();
    for line in REQUESTS.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let text = v["text"].as_str().unwrap();
        let want = v["tool"].as_str();
        let got = planner.plan(text, now()).unwrap().first().map(|s| s.tool.clone());
        let entry = by_lang.entry(v["lang"].as_str().unwrap().to_owned()).or_default();
        entry.1 += 1;
        if got.as_deref() == want {
            entry.0 += 1;
        } else {
            wrong.push(format!("{text:?}: {got:?}, expected {want:?}"));
        }
    }
    (by_lang, wrong)
}

/// The default model chooses right on at least 90 % of the set, and in
/// each language at least 80 %; an action no built-in can do is never
/// planned as some other tool. (all-MiniLM-L6-v2, English-only, is printed
/// beside it: about 80 %, most of its misses Italian.)
#[test]
fn the_offline_planner_gets_natural_requests_right_in_both_languages() {
    for model in EmbeddingModel::ALL {
        let (by_lang, wrong) = accuracy(model);
        let (right, asked) = by_lang.values().fold((0, 0), |(r, a), (r2, a2)| (r + r2, a + a2));
        eprintln!("{model}: {right}/{asked} {by_lang:?}; wrong: {wrong:#?}");
        if model != EmbeddingModel::default() {
            continue;
        }
        assert!(right * 10 >= asked * 9, "{model}: {right}/{asked} right; wrong: {wrong:#?}");
        for (lang, (r, a)) in &by_lang {
            assert!(r * 10 >= a * 8, "{model} {lang}: {r}/{a}; wrong: {wrong:#?}");
        }
    }
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
