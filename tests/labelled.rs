//! The labelled sets through the real models (`engram_bench::labelled`, the
//! same scoring `engram bench fast-path` prints): no hard negative is ever
//! replayed, by either model, in any language; the default (multilingual)
//! model serves most paraphrases in English, in Italian and across the two,
//! and its offline planner picks the right built-in for nine natural
//! requests in ten.

use std::sync::Arc;

use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::learning::embedder::EmbeddingModel;
use engram::learning::embedder::{Embedder, EmbedderConfig};
use engram_bench::labelled;

fn embedder(model: EmbeddingModel) -> Arc<dyn Embedder> {
    Arc::new(
        OnnxEmbedder::open(&EmbedderConfig::default().with_model(model))
            .unwrap_or_else(|e| panic!("the embedding model {model}: {e}")),
    )
}

#[test]
fn no_wrong_replay_and_paraphrases_served_in_both_languages_and_across() {
    for model in EmbeddingModel::ALL {
        let scores = labelled::pairs(embedder(model)).unwrap();
        eprintln!("{model}: {scores:#?}");
        assert_eq!(scores.iter().map(|s| s.lang.as_str()).collect::<Vec<_>>(), ["en", "it", "x"]);
        for s in &scores {
            assert_eq!(s.wrong_replays, 0, "{model} {}: wrong replays {:#?}", s.lang, s.misses);
        }
        if model == EmbeddingModel::default() {
            for s in &scores {
                // At least 3 in 4 per language, the cross-language ones included.
                assert!(
                    s.served * 4 >= s.paraphrases * 3,
                    "{model} {}: {}/{}: {:#?}",
                    s.lang,
                    s.served,
                    s.paraphrases,
                    s.misses
                );
            }
        }
    }
}

#[test]
fn the_offline_planner_chooses_right_in_both_languages() {
    let scores = labelled::choices(embedder(EmbeddingModel::default())).unwrap();
    let (right, asked) = scores.iter().fold((0, 0), |(r, a), s| (r + s.right, a + s.requests));
    assert!(right * 10 >= asked * 9, "{right}/{asked}: {scores:#?}");
    for s in &scores {
        assert!(s.right * 10 >= s.requests * 8, "{}: {}/{}: {:#?}", s.lang, s.right, s.requests, s.misses);
    }
}

/// A month of natural EN + IT requests through the live offline runtime:
/// the fast path learns from the planner's turns and answers more and more
/// of them, never with tools other than the request's.
#[test]
fn a_month_of_use_has_no_wrong_fast_path_answer() {
    let m = labelled::month(embedder(EmbeddingModel::default()), 30, 12, 7).unwrap();
    eprintln!("{m:#?}");
    assert_eq!(m.turns, 30 * 12);
    assert_eq!(m.wrong_fast_path, 0, "{:#?}", m.misses);
    assert!(m.fast_path * 2 >= m.turns, "the fast path answers half or more: {m:?}");
    assert!(m.planner_right * 10 >= m.planner * 9, "{m:#?}");
}

/// The offline planner on requests written apart from the code
/// (`tests/fixtures/offline_planner/heldout.jsonl`, EN + IT + mixed, with
/// requests no tool serves): none of them is a phrase of the planner's code
/// (its tool phrasings, its small talk and general knowledge) or of the L0 table, so what is
/// measured is generalisation; the floor is today's figure, so a change
/// that loses held-out requests fails here. Never tuned on.
#[test]
fn the_offline_planner_on_held_out_requests() {
    use engram::learning::fast_path::L0Table;
    use engram::learning::offline_planner::{builtin_examples, GENERAL_KNOWLEDGE, SMALL_TALK};
    let l0 = L0Table::from_config(&Default::default());
    let norm = |s: &str| engram::learning::text::normalize(s);
    let code: Vec<String> = ["get_now", "get_date", "get_location", "list_dir", "read_file", "undo", "recall"]
        .iter()
        .flat_map(|t| builtin_examples(t).iter())
        .chain(SMALL_TALK.iter())
        .chain(GENERAL_KNOWLEDGE.iter())
        .map(|p| norm(p))
        .collect();
    let rows: Vec<serde_json::Value> = labelled::HELDOUT.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.len() >= 150, "{} held-out requests", rows.len());
    let clashes: Vec<&str> = rows
        .iter()
        .map(|r| r["text"].as_str().unwrap())
        .filter(|t| code.contains(&norm(t)) || l0.lookup(t).is_some())
        .collect();
    assert!(clashes.is_empty(), "phrases of the planner's code or the L0 table: {clashes:#?}");
    let scores = labelled::choices_on(embedder(EmbeddingModel::default()), labelled::HELDOUT).unwrap();
    let (right, asked) = scores.iter().fold((0, 0), |(r, a), s| (r + s.right, a + s.requests));
    eprintln!("held out: {right}/{asked}: {scores:#?}");
    assert!(right * 100 >= asked * 80, "{right}/{asked}: {scores:#?}");
}

/// The held-out pairs (`tests/fixtures/fast_path/heldout_pairs.jsonl`,
/// written apart from the code, never tuned on): no hard negative is
/// replayed with its candidate's call, by either model, in English, in
/// Italian or across the two. Before the gate's mood rule, nine were — a
/// question about a state ("are the kitchen lights on?") taken for its
/// command.
#[test]
fn held_out_hard_negatives_are_never_replayed() {
    for model in EmbeddingModel::ALL {
        let scores = labelled::heldout_pairs(embedder(model)).unwrap();
        for s in &scores {
            eprintln!("{model} {}: {}/{} paraphrases served", s.lang, s.served, s.paraphrases);
            let wrong: Vec<&String> = s.misses.iter().filter(|m| m.contains(" replayed ")).collect();
            assert_eq!(s.wrong_replays, 0, "{model} {}: {wrong:#?}", s.lang);
        }
    }
}
