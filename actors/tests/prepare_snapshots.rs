//! `RuntimeBuilder::prepare_snapshots` — what `engram import` runs after
//! appending — saves exactly the snapshots (and leaves exactly the
//! checkpoints) a runtime's start and shutdown would on the same data dir:
//! byte for byte, owner by owner, without starting the actors or loading
//! the embedding model. Checked on an imported history alone and on one
//! imported over a lived one (whose snapshots the fold restores first).
//!
//! `RuntimeBuilder::prepare_snapshots_beside` — what `engram import` runs
//! instead, folding during the conversion — saves exactly what
//! `prepare_snapshots` after the import saves, or nothing when the log did
//! not take what it folded.
//!
//! Needs the model where `scripts/fetch-models.sh` installs it (the
//! runtime's side loads it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use engram_actors::config::Config;
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::runtime::Prepared;
use engram_actors::Runtime;
use engram_events::SessionId;
use engram_learning::embedder::{Embedder, EmbedderConfig};
use engram_learning::import;
use engram_learning::projections;
use engram_local_state::projector::Projector;
use engram_local_state::ActorCheckpoints;
use engram_storage::{LogConfig, OpenLog, SledLog};

fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).unwrap_or_else(|e| panic!("the embedding model: {e}")))
    })
    .clone()
}

/// Snapshots often (so every owner saves one), no session ended for
/// being idle (the imported ones are old).
fn config() -> Config {
    let mut config = Config::default();
    config.runtime.snapshot_every = 16;
    config.runtime.session_idle_secs = 0;
    config
}

fn offset() -> chrono::FixedOffset {
    chrono::FixedOffset::east_opt(3600).unwrap()
}

/// `n` turn records of sessions of five: most planned by a model with tool
/// steps, the rest fast-path turns, scored; every text distinct.
fn turn_records(n: usize, prefix: &str) -> String {
    let models = ["ollama:qwen3:8b", "openai:gpt-5-mini"];
    let tools = ["get_urls", "read_file", "list_dir"];
    let mut out = String::new();
    for i in 0..n {
        let planned = i % 4 != 3;
        let steps: Vec<serde_json::Value> = (0..if planned { 1 + i % 3 } else { i % 2 })
            .map(|s| serde_json::json!({"tool": tools[(i + s) % 3], "args": {"path": format!("/tmp/{i}/{s}")}}))
            .collect();
        let mut r = serde_json::json!({
            "session": format!("{prefix}-{}", i / 5),
            "turn": i % 5 + 1,
            "at": format!("2026-0{}-{:02}T{:02}:{:02}:00Z", 1 + i / 200 % 9, 1 + i / 8 % 28, i % 24, i % 60),
            "text": format!("request {i} about topic {}", i % 7),
            "steps": steps,
            "latency_ms": 100 + i,
            "score": (i % 10) as f64 / 10.0,
            "score_confidence": 0.9,
        });
        if planned {
            r["model"] = models[i % 2].into();
            r["planner_ms"] = (300 + i).into();
            r["cost_usd"] = "0.0002".into();
            r["pricing_version"] = "2026-11".into();
        }
        out.push_str(&r.to_string());
        out.push('\n');
    }
    out
}

fn open(data: &Path) -> OpenLog {
    OpenLog::from_sled(SledLog::open(data, LogConfig::default()).unwrap())
}

/// Imports `records` into `data` as `engram import` does (its checkpoints
/// moved past what it appended), without preparing any snapshot.
fn import(data: &Path, records: &str) {
    import_with(data, records, false);
}

/// Imports `records` into `data` as `engram import` does, the snapshots
/// folded beside the conversion: what `finish` reports.
fn import_beside(data: &Path, records: &str) -> Option<Prepared> {
    import_with(data, records, true)
}

fn import_with(data: &Path, records: &str, beside: bool) -> Option<Prepared> {
    let file = data.with_extension("jsonl");
    std::fs::write(&file, records).unwrap();
    let config = config();
    let plan = import::validate(&file, engram_storage::ImportSource::open(&file).unwrap()).unwrap();
    let log = open(data);
    let before = log.head();
    let projector = Projector::open(&log, projections::all(), |_, _| {}).unwrap();
    let reactors = |p: &Projector| import::reactors(p, &config.multi_tool_fast_path, &config.pattern);
    let builder = || Runtime::builder().config(config.clone()).offline().utc_offset(offset());
    let mut folding = beside.then(|| builder().prepare_snapshots_beside(&log).unwrap());
    let stats = import::run_beside(&plan, log.log().as_ref(), &projector, reactors, &mut folding, |_| {}).unwrap();
    assert_eq!(stats.events_appended, log.head().0 - before.0);
    log.flush().unwrap();
    ActorCheckpoints::open(log.local_db()).unwrap().advance(before, log.head()).unwrap();
    let prepared = folding.and_then(|f| f.finish(stats.events_appended).unwrap());
    log.flush().unwrap();
    prepared
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every snapshot file of `data`, by owner.
fn snapshots(data: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir: PathBuf = data.join("snapshots");
    let Ok(entries) = std::fs::read_dir(&dir) else { return BTreeMap::new() };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

fn checkpoints(data: &Path) -> BTreeMap<String, u64> {
    let log = open(data);
    let names = ["router", "planner", "reply_loop", "pattern_store", "judge", "summariser", "graph", "memory"];
    let checkpoints = ActorCheckpoints::open(log.local_db()).unwrap();
    names.iter().map(|n| (n.to_string(), checkpoints.get(n, log.head()).unwrap().0)).collect()
}

/// The same data dir taken twice: once through a runtime's start and
/// shutdown, once through `prepare_snapshots`; the snapshots and
/// checkpoints each leaves must be the same.
fn assert_prepared_as_a_start_would(data: &Path) {
    let (started, prepared) = (data.with_extension("started"), data.with_extension("prepared"));
    copy_dir(data, &started);
    copy_dir(data, &prepared);
    Runtime::builder()
        .data_dir(&started)
        .config(config())
        .offline()
        .embedder(embedder())
        .utc_offset(offset())
        .start()
        .unwrap()
        .shutdown()
        .unwrap();
    let report = {
        let log = open(&prepared);
        let report =
            Runtime::builder().config(config()).offline().utc_offset(offset()).prepare_snapshots(&log).unwrap();
        log.flush().unwrap();
        report
    };
    assert_eq!(report.owners, 9, "{report:?}");
    let (a, b) = (snapshots(&started), snapshots(&prepared));
    assert_eq!(a.len(), 9, "every owner saved a snapshot at the start: {:?}", a.keys().collect::<Vec<_>>());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (owner, bytes) in &a {
        assert!(bytes == &b[owner], "{owner}: the prepared snapshot differs from the one a start saves");
    }
    assert_eq!(checkpoints(&started), checkpoints(&prepared));
    assert_eq!(open(&started).head(), open(&prepared).head(), "neither appended anything");
}

/// A few turns lived in `data` through a runtime (one session ended), so
/// it holds the actors' snapshots and checkpoints of a lived history.
fn live_history(data: &Path) {
    let rt = Runtime::builder()
        .data_dir(data)
        .config(config())
        .offline()
        .embedder(embedder())
        .utc_offset(offset())
        .turn_timeout(Duration::from_secs(60))
        .start()
        .unwrap();
    for (s, text) in [("live-1", "what time is it"), ("live-1", "what day is it"), ("live-2", "what time is it")] {
        rt.handle_utterance(&SessionId::new(s), text).unwrap();
    }
    rt.end_session(&SessionId::new("live-1")).unwrap();
    rt.shutdown().unwrap();
}

#[test]
fn an_imported_history_is_prepared_as_a_start_would_fold_it() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    import(&data, &turn_records(300, "s"));
    assert_prepared_as_a_start_would(&data);
}

#[test]
fn a_history_imported_over_a_lived_one_is_prepared_as_a_start_would_fold_it() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    live_history(&data);
    assert!(!snapshots(&data).is_empty(), "the lived history left snapshots to restore");
    import(&data, &turn_records(120, "t"));
    assert_prepared_as_a_start_would(&data);
}

/// `records` imported into copies of `data` (or into new data dirs): one
/// with the fold beside the conversion, one with `prepare_snapshots` after
/// the import; the snapshots and checkpoints must be the same.
fn assert_beside_as_after(data: &Path, records: &str) {
    let (after, beside) = (data.with_extension("after"), data.with_extension("beside"));
    if data.exists() {
        copy_dir(data, &after);
        copy_dir(data, &beside);
    }
    import(&after, records);
    {
        let log = open(&after);
        Runtime::builder().config(config()).offline().utc_offset(offset()).prepare_snapshots(&log).unwrap();
        log.flush().unwrap();
    }
    let report = import_beside(&beside, records).expect("the log took exactly what was folded");
    assert_eq!(report.owners, 9, "{report:?}");
    let (a, b) = (snapshots(&after), snapshots(&beside));
    assert_eq!(a.len(), 9, "every owner saved a snapshot: {:?}", a.keys().collect::<Vec<_>>());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (owner, bytes) in &a {
        assert!(bytes == &b[owner], "{owner}: the snapshot folded beside the import differs from the one after it");
    }
    assert_eq!(checkpoints(&after), checkpoints(&beside));
    assert_eq!(open(&after).head(), open(&beside).head());
    // The same file again appends nothing: nothing is folded or saved.
    assert!(import_beside(&beside, records).is_none(), "a second import of the file folds nothing");
    assert_eq!(snapshots(&beside), b, "and leaves the snapshots as they were");
}

#[test]
fn snapshots_folded_beside_an_import_are_those_folded_after_it() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let tmp = tempfile::tempdir().unwrap();
    assert_beside_as_after(&tmp.path().join("data"), &turn_records(300, "s"));
}

#[test]
fn snapshots_folded_beside_an_import_over_a_lived_history_are_those_folded_after_it() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    live_history(&data);
    // Half the history imported before (its snapshots prepared), so the
    // fold beside the next import restores them and folds the rest of the
    // log first (rule 3).
    import(&data, &turn_records(60, "u"));
    {
        let log = open(&data);
        Runtime::builder().config(config()).offline().utc_offset(offset()).prepare_snapshots(&log).unwrap();
        log.flush().unwrap();
    }
    assert_beside_as_after(&data, &turn_records(120, "t"));
}

/// An envelope file whose events the log holds in part (as `engram
/// export` of another device's log would be): every line is converted,
/// the log skips the events it holds, so the seqs the fold gave the rest
/// are not theirs and nothing folded beside is saved (rule 1) — the
/// caller folds from the log instead.
#[test]
fn a_fold_beside_an_import_the_log_took_in_part_is_not_saved() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let tmp = tempfile::tempdir().unwrap();
    let (whole, part) = (tmp.path().join("whole"), tmp.path().join("part"));
    let records = turn_records(100, "s");
    import(&whole, &records);
    let half: String = records.lines().take(50).map(|l| format!("{l}\n")).collect();
    import(&part, &half);
    let envelopes: String = {
        let log = open(&whole);
        let lines: Vec<String> = log
            .log()
            .read_from(engram_events::Seq::FIRST)
            .map(|e| engram_events::codec::json::to_line(&e.unwrap()))
            .collect();
        lines.join("\n") + "\n"
    };
    let before = (snapshots(&part), open(&part).head());
    assert!(import_beside(&part, &envelopes).is_none(), "the log did not take every converted event");
    assert_eq!(snapshots(&part), before.0, "nothing was saved");
    assert_eq!(open(&part).head(), open(&whole).head(), "the import itself completed the log");
    assert!(open(&part).head() > before.1);
}
