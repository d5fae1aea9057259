//! Actor snapshots end to end: a runtime that starts from its actors'
//! snapshots holds the state a start folding the whole log from seq 1
//! would, and a snapshot that is damaged, foreign or stale is not used.
//!
//! The check is byte for byte: each actor's state is saved the same way
//! (maps sorted) by a runtime that restored snapshots and handled the rest
//! live, and by one that folded everything from seq 1.
//!
//! Needs the model where `scripts/fetch-models.sh` installs it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use engram_actors::config::Config;
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::tools::{args, FnTool, ToolError, ToolOutput};
use engram_actors::Runtime;
use engram_events::payloads::FeedbackRating;
use engram_events::SessionId;
use engram_learning::embedder::{Embedder, EmbedderConfig};

/// Every actor that keeps a snapshot, and the listener.
const OWNERS: [&str; 9] =
    ["router", "planner", "reply_loop", "pattern_store", "judge", "summariser", "graph", "listener", "memory"];

fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| {
        Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).unwrap_or_else(|e| panic!("the embedding model: {e}")))
    })
    .clone()
}

/// `word_count {path}` over the fixture's files.
fn word_count(files: PathBuf) -> Arc<FnTool> {
    let tool = FnTool::new("word_count", "Count the words in a text file", move |args, _ctx| {
        let path = args::req_str(args, "word_count", "path")?;
        let file = Path::new(path).file_name().ok_or_else(|| ToolError::Failed("bad path".into()))?;
        let text = std::fs::read_to_string(files.join(file)).map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(ToolOutput::trusted(format!("{} words", text.split_whitespace().count())))
    });
    Arc::new(tool.with_arg("path", "the file"))
}

struct Fixture {
    dir: tempfile::TempDir,
    files: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    for (name, text) in [("a.txt", "one two three"), ("b.txt", "four five"), ("c.txt", "six")] {
        std::fs::write(files.join(name), text).unwrap();
    }
    Fixture { dir, files }
}

/// A runtime on `data` whose actors save a snapshot at every shutdown.
fn start(f: &Fixture, data: &Path) -> Runtime {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let mut config = Config::default();
    config.runtime.snapshot_every = 4;
    Runtime::builder()
        .data_dir(data)
        .config(config)
        .offline()
        .embedder(embedder())
        .tool(word_count(f.files.clone()))
        .turn_timeout(Duration::from_secs(60))
        .start()
        .unwrap()
}

fn snapshot(data: &Path, owner: &str) -> Vec<u8> {
    let path = data.join("snapshots").join(format!("{owner}.snap"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first life of a data dir: two sessions, tools, feedback, one
/// session ended (so the pattern store records and the summariser writes).
fn first_life(f: &Fixture, data: &Path) {
    let rt = start(f, data);
    let (a, b) = (SessionId::new("s-a"), SessionId::new("s-b"));
    rt.handle_utterance(&a, "count the words in ~/a.txt").unwrap();
    rt.handle_utterance(&b, "count the words in ~/b.txt").unwrap();
    rt.handle_utterance(&a, "what time is it").unwrap();
    rt.feedback(&b, FeedbackRating::Positive, Some("thanks")).unwrap();
    rt.end_session(&a).unwrap();
    assert!(rt.settle(Duration::from_secs(30)));
    rt.shutdown().unwrap();
}

/// Every actor's snapshot in `data` (taken at its last shutdown) is the
/// one a runtime folding the same log from seq 1 saves.
fn assert_same_as_a_fold_from_seq_1(f: &Fixture, data: &Path) {
    let fresh = f.dir.path().join(format!("fresh-{}", data.file_name().unwrap().to_string_lossy()));
    engram_storage::data_dir::copy_tree(data, &fresh).unwrap();
    std::fs::remove_dir_all(fresh.join("snapshots")).unwrap();
    let rt = start(f, &fresh);
    assert!(rt.settle(Duration::from_secs(30)));
    assert!(rt.restored_snapshots().iter().all(|(_, seq)| *seq == 0), "without snapshots every actor folds from seq 1");
    assert!(rt.settle(Duration::from_secs(30)));
    rt.shutdown().unwrap();
    for owner in OWNERS {
        let (restored, folded) = (snapshot(data, owner), snapshot(&fresh, owner));
        assert!(restored.len() > 52, "{owner}: a snapshot holds more than its header");
        let first_difference = restored.iter().zip(&folded).position(|(a, b)| a != b);
        assert!(
            restored == folded,
            "{owner}: the state after a restore and live turns differs from a fold from seq 1 \
             ({} vs {} bytes, first difference at byte {first_difference:?})",
            restored.len(),
            folded.len()
        );
    }
}

#[test]
fn a_start_from_snapshots_holds_what_a_fold_from_seq_1_would() {
    let f = fixture();
    let data = f.dir.path().join("data");
    first_life(&f, &data);
    for owner in OWNERS {
        snapshot(&data, owner);
    }
    // The second life starts from the snapshots and lives on: a session
    // carries on, another starts and ends.
    let rt = start(&f, &data);
    assert!(rt.settle(Duration::from_secs(30)), "the warm-ups end");
    let restored = rt.restored_snapshots();
    assert_eq!(restored.len(), OWNERS.len() - 1);
    assert!(restored.iter().all(|(_, seq)| *seq > 0), "every actor starts from its snapshot: {restored:?}");
    let (b, c) = (SessionId::new("s-b"), SessionId::new("s-c"));
    let r = rt.handle_utterance(&b, "count the words in ~/c.txt").unwrap();
    assert_eq!(r.heard.turn_number, 2, "the listener's snapshot knows session b had a turn");
    rt.handle_utterance(&c, "count the words in ~/a.txt").unwrap();
    rt.feedback(&c, FeedbackRating::Negative, None).unwrap();
    rt.end_session(&c).unwrap();
    assert!(rt.settle(Duration::from_secs(30)));
    rt.shutdown().unwrap();
    assert_same_as_a_fold_from_seq_1(&f, &data);
}

#[test]
fn a_damaged_foreign_or_stale_snapshot_is_not_used() {
    let f = fixture();
    let data = f.dir.path().join("data");
    first_life(&f, &data);
    // Another data dir's snapshots: whole, but of another log.
    let other = f.dir.path().join("other");
    first_life(&f, &other);
    let snaps = data.join("snapshots");
    // The listener's: one flipped bit in the body.
    let mut listener = snapshot(&data, "listener");
    let at = listener.len() - 3;
    listener[at] ^= 0x01;
    std::fs::write(snaps.join("listener.snap"), listener).unwrap();
    // The router's: another log's.
    std::fs::copy(other.join("snapshots/router.snap"), snaps.join("router.snap")).unwrap();
    // The planner's: cut short, as a power loss may leave it.
    let planner = snapshot(&data, "planner");
    std::fs::write(snaps.join("planner.snap"), &planner[..planner.len() / 2]).unwrap();
    // The judge's: its header's version field changed.
    let mut judge = snapshot(&data, "judge");
    judge[12] = judge[12].wrapping_add(1);
    std::fs::write(snaps.join("judge.snap"), judge).unwrap();

    let rt = start(&f, &data);
    assert!(rt.settle(Duration::from_secs(30)), "the warm-ups end");
    let restored: std::collections::BTreeMap<_, _> = rt.restored_snapshots().into_iter().collect();
    for owner in ["router", "planner", "judge"] {
        assert_eq!(restored[owner], 0, "{owner}: its snapshot is refused and it folds from seq 1");
    }
    assert!(restored["reply_loop"] > 0, "an intact snapshot is still used");
    // The listener folded from seq 1: session b goes on at turn 2.
    let b = SessionId::new("s-b");
    assert_eq!(rt.handle_utterance(&b, "count the words in ~/c.txt").unwrap().heard.turn_number, 2);
    // The refused ones were saved afresh at the warm-up, and every
    // snapshot now holds what a fold from seq 1 holds.
    assert!(rt.settle(Duration::from_secs(30)));
    rt.shutdown().unwrap();
    assert_same_as_a_fold_from_seq_1(&f, &data);
}
