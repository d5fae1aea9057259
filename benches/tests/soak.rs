//! Memory under long use, CI-sized (issue 31, item 3): a few hundred turns
//! of `engram bench soak`'s workload through the live runtime, offline,
//! with the real embedding model. After warm-up, only the learnt tables may
//! grow, and only with what is new; everything else the actors hold must
//! stay bounded however many turns go by. `soak_long` (ignored: minutes)
//! runs the same check over thousands of turns and bounds RSS too.

use std::collections::BTreeMap;
use std::sync::Arc;

use engram::actors::config::Config;
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::learning::embedder::{Embedder, EmbedderConfig};
use engram_bench::soak::workload::Shape;
use engram_bench::soak::{drive, Checkpoint, Report, Run};

/// `turns` turns of today's mix (seed 7), a checkpoint every `every`.
fn run(turns: usize, every: usize) -> Run {
    Run { turns, every, seed: 7, shape: Shape::default() }
}

fn embedder() -> Arc<dyn Embedder> {
    Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).unwrap_or_else(|e| panic!("the embedding model: {e}")))
}

/// Structures that hold what was learnt, and what each grows with:
/// they may grow after warm-up (by what is new, which the soak's bounded
/// pools make a small share of turns). Everything else must not.
const LEARNT: &[(&str, &str)] = &[
    ("router.canonical_rows", "a new canonical request"),
    ("router.pipeline_rows", "a new pipeline"),
    ("router.l1_rows", "a new canonical request"),
    ("router.l2_rows", "a new pipeline"),
    ("router.patterns.fingerprints", "a new kind of turn"),
    ("router.patterns.outcomes", "a new (kind of turn, model)"),
    ("router.patterns.by_age", "a new (kind of turn, model)"),
    ("router.patterns.families", "a new kind of turn"),
    ("pattern_store.fingerprints", "a new kind of turn"),
    ("pattern_store.outcomes", "a new (kind of turn, model)"),
    ("pattern_store.by_age", "a new (kind of turn, model)"),
    ("pattern_store.families", "a new kind of turn"),
    ("reply_loop.passages", "a new passage"),
    ("reply_loop.passages.slots", "a new passage"),
    ("reply_loop.passages.postings", "a new passage"),
    ("reply_loop.passages.terms", "a new word"),
    ("reply_loop.passages.vectors", "a new passage"),
    ("reply_loop.passages.sessions", "a session that said something new"),
    ("reply_loop.passages.pending", "a new passage since the last search"),
    ("reply_loop.passages.follow_ups", "a new passage that follows up another"),
    ("graph.graph.nodes", "a new fact"),
    // Per turn, bounded by the pattern store's cap on outcomes (a turn's
    // score is kept while its outcome row is: a late verdict replaces it).
    ("router.patterns.history", "a recorded turn"),
    ("router.patterns.turns_of", "a recorded turn"),
    ("pattern_store.history", "a recorded turn"),
    ("pattern_store.turns_of", "a recorded turn"),
    // Per session: that it ended (a session ends once).
    ("router.patterns.ended", "an ended session"),
    ("pattern_store.ended", "an ended session"),
    ("listener.sessions", "an ended session"),
];

/// Structures that fill up to a fixed cap, then stay there.
const CAPPED: &[(&str, usize)] = &[
    ("bridge.order", 4_096),
    ("router.recent_lessons", 256),
    ("summariser.diary.summaries", 64),
    ("reply_loop.diary.summaries", 64),
];

fn learnt(name: &str) -> bool {
    LEARNT.iter().any(|(n, _)| *n == name)
        || CAPPED.iter().any(|(n, _)| *n == name)
        // The bytes of a learnt table, and the memo, capped below.
        || name.ends_with(".bytes")
        || name == "embedding_memo.rows"
}

/// Structures other than the learnt ones that grew from `from` to `to`
/// by more than `slack` entries.
fn grown(from: &Checkpoint, to: &Checkpoint, slack: usize) -> BTreeMap<String, (usize, usize)> {
    to.sizes
        .iter()
        .filter(|(name, _)| !learnt(name))
        .filter_map(|(name, &n)| {
            let before = from.sizes.get(name).copied().unwrap_or(0);
            (n > before + slack).then(|| (name.clone(), (before, n)))
        })
        .collect()
}

fn check(report: &Report, slack: usize) {
    let (warm, last) = (&report.checkpoints[0], report.checkpoints.last().expect("checkpoints"));
    let grew = grown(warm, last, slack);
    assert!(grew.is_empty(), "grew after warm-up ({} → {} turns): {grew:?}", warm.turns, last.turns);
    let sizes = &last.sizes;
    for (name, cap) in CAPPED {
        assert!(sizes[*name] <= *cap, "{name}: {} entries, over its cap of {cap}", sizes[*name]);
    }
    // The memo stays within its cap (and a trim's 5 % margin), and the
    // accounted bytes are the `….bytes` entries.
    assert!(sizes["embedding_memo.rows"] <= sizes["embedding_memo.rows_cap"] * 21 / 20);
    assert!(last.learnt_bytes >= sizes["reply_loop.passages.bytes"] + sizes["pattern_store.history.bytes"]);
    assert!(last.learnt_bytes > warm.learnt_bytes, "the learnt tables learnt nothing");
    // No actor's mailbox backs up: its lag at a checkpoint is at most the
    // events of the turns since the last session end (which settles).
    assert!(!last.lags.is_empty(), "no actor's lag read");
    for c in &report.checkpoints {
        let behind: Vec<_> = c.lags.iter().filter(|(_, &lag)| lag > 256).collect();
        assert!(behind.is_empty(), "actors behind the log at {} turns: {behind:?}", c.turns);
    }
    // Rule 4 of the memory index: a repeat keeps its slot.
    assert_eq!(
        sizes["reply_loop.passages.slots"], sizes["reply_loop.passages"],
        "dropped slots in the memory index (repeats stored again)"
    );
    // A repeated request does not grow the learnt tables: most turns
    // repeat, so they grow far slower than turns.
    let span = (last.turns - warm.turns) as f64;
    for name in ["router.l1_rows", "reply_loop.passages", "pattern_store.fingerprints"] {
        let per_turn = (sizes[name] as f64 - warm.sizes[name] as f64) / span;
        assert!(per_turn < 0.5, "{name} grew by {per_turn:.2} a turn");
    }
}

#[test]
fn what_the_actors_hold_stays_bounded_after_warm_up() {
    let report = drive(Config::default(), embedder(), run(500, 250), |_, _| {}).expect("the soak");
    assert_eq!(report.checkpoints.len(), 2);
    check(&report, 2);
}

/// `cargo test -p engram-bench --release --test soak -- --ignored`: 6,000
/// turns, and RSS after warm-up bounded per turn.
#[test]
#[ignore = "minutes: the long soak"]
fn soak_long() {
    let report = drive(Config::default(), embedder(), run(6_000, 1_000), |_, _| {}).expect("the soak");
    check(&report, 2);
    assert!(
        report.rss_bytes_per_turn_after_warmup < 2_048.0,
        "RSS grew {:.0} bytes a turn after warm-up",
        report.rss_bytes_per_turn_after_warmup
    );
}
