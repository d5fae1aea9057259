//! The fast path's pure logic (seed 000): what the router runs before it
//! asks the planner.
//!
//! * [`l0`] — the closed table of literal phrases, EN + IT;
//! * [`extract`](mod@extract) — the deterministic argument extractor;
//! * [`placeholder`] — recorded arguments as placeholders, and their
//!   resolution from a new request (failing closed);
//! * [`decision`] — the decision: L0, L1, L2 or the planner, and why
//!   ([`FastPath::route`]); the router actor (`engram-actors`) asks it for
//!   every directed utterance;
//! * [`calibrate`] — thresholds per embedding model, from labelled pairs;
//! * [`gate`] — the second gate that keeps a cosine match from replaying
//!   the opposite request ("turn on" vs "turn off");
//! * [`lexicon`] — Italian content words as their English concept, so the
//!   gate lets a request learnt in one language serve its twin in the other;
//! * [`model_away`] — what the offline planner plans when a learnt phrasing
//!   was near the request (the model's choice, with the model away);
//! * [`second_reading`] — a learnt phrasing short of serving alone serves
//!   when the offline planner, reading the request by the descriptions,
//!   plans its call exactly.
//!
//! Its configuration is `[fast_path]` ([`FastPathConfig`], L0 and L1) and
//! `[multi_tool_fast_path]` ([`MultiToolConfig`], L2) of `engram.toml`.
//!
//! Text is normalised by [`crate::text`], the one normalisation the L0
//! table, canonical texts and the gate share. What the router *learns*
//! (`canonical.recorded`, `pipeline.recorded`, …) is
//! [`crate::reactors::FastPathReactor`]; the rows it learnt are the
//! [`crate::projections::CanonicalQueries`] and
//! [`crate::projections::Pipelines`] projections.

pub mod calibrate;
pub mod decision;
pub mod extract;
pub mod gate;
pub mod l0;
pub mod lexicon;
pub mod model_away;
pub mod numbers;
pub mod placeholder;
pub mod second_reading;
pub mod slots;
pub mod templates;

pub use decision::{Decision, FastPath, VectorSearch};
pub use extract::{extract, Extracted, SlotKind};
pub use l0::L0Table;

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Serialize};

use crate::embedder::{Calibration, EmbeddingModel};

/// A request's canonical form — normalised, with the values it carries
/// masked (`download URL and describe it`) — and those values.
pub fn canonical(text: &str, now: DateTime<FixedOffset>) -> (String, Extracted) {
    let ex = extract(text, now);
    (crate::text::normalize(&ex.masked()), ex)
}

/// A request's canonical form with its proper nouns as words, not values,
/// and those values: the form of a row whose call does not take the name
/// it was learnt with, and the text whose embedding stands for the
/// request's meaning beside the fast path (a mask is no word the model
/// knows: "how cold is it in Oslo" and "what's the forecast for Oslo" are
/// nearer with the city than with `propername`).
pub fn with_names_as_words(ex: &Extracted) -> (String, Extracted) {
    let ex = ex.without(SlotKind::ProperName);
    (crate::text::normalize(&ex.masked()), ex)
}

/// The id of a pipeline: a hash of its canonical text and its steps.
pub fn pipeline_id(canonical: &str, steps: &[engram_events::payloads::PlanStep]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(canonical.as_bytes());
    h.update(&[0]);
    for s in steps {
        h.update(s.tool.as_bytes());
        h.update(&[0]);
        h.update(s.args.to_json().as_bytes());
        h.update(&[0]);
    }
    h.finalize().to_hex()[..24].to_owned()
}

/// `[fast_path]`: L0 and L1 (seed 000).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FastPathConfig {
    /// L1 on.
    pub canonical_query_enabled: bool,
    /// Observations before a canonical query is a candidate.
    pub canonical_query_min_uses: u32,
    /// Smallest cosine for an L1 match. Unset: the embedding model's own
    /// calibration ([`Calibration::l1`]; `engram calibrate` derives one).
    pub canonical_query_threshold: Option<f64>,
    /// LLM argument extraction fallback (off: the rules cover ~90%).
    pub canonical_query_args_llm: bool,
    /// Extra L0 phrases: phrase → executor.
    pub l0_extra: BTreeMap<String, String>,
    /// The error rate an L1 action's own bar is set for (vCache): the
    /// estimated share of replays at its bar that would not be the model's
    /// call, by Laplace's rule over the model's answers to the requests
    /// near it ([`crate::projections::canonical_queries::ActionRow::bar`]).
    /// 0.25: three agreements and no disagreement at or above a similarity
    /// lower the action's bar to it.
    pub row_error_rate: f64,
    /// The lowest an action's own bar may fall. Unset: the L1 threshold
    /// less 0.25.
    pub row_bar_floor: Option<f64>,
    /// The replay gate's bar for two content words spelt differently to be
    /// the same word: their cosine by the embedding model (gate rule 4).
    /// Unset: the model's calibration ([`Calibration::same_word`]); 1.0:
    /// the lexicon alone.
    pub gate_word_similarity: Option<f64>,
    /// A learnt phrasing short of serving alone (under its bar, or only
    /// content words apart) serves when the offline planner, reading the
    /// request by the tools' descriptions, plans its call exactly
    /// ([`second_reading`]). Off: only the phrasing's own evidence serves.
    pub second_reading: bool,
}

impl Default for FastPathConfig {
    fn default() -> Self {
        FastPathConfig {
            canonical_query_enabled: true,
            canonical_query_min_uses: 3,
            canonical_query_threshold: None,
            canonical_query_args_llm: false,
            l0_extra: BTreeMap::new(),
            gate_word_similarity: None,
            row_error_rate: 0.25,
            row_bar_floor: None,
            second_reading: true,
        }
    }
}

impl FastPathConfig {
    /// The L1 threshold: the configured one, else the default model's
    /// calibration (a runtime first fills it from its own model's with
    /// `Config::calibrate_for`).
    pub fn l1_threshold(&self) -> f64 {
        self.canonical_query_threshold.unwrap_or(EmbeddingModel::default().spec().calibration.l1)
    }

    /// The lowest an L1 action's own bar may fall: the configured floor,
    /// else the L1 threshold less 0.25.
    pub fn row_bar_floor(&self) -> f64 {
        self.row_bar_floor.unwrap_or(self.l1_threshold() - 0.25)
    }

    /// The gate's word bar: the configured one, else the default model's
    /// calibration.
    pub fn word_threshold(&self) -> f64 {
        self.gate_word_similarity.unwrap_or(EmbeddingModel::default().spec().calibration.same_word)
    }

    /// Fills the L1 threshold and the gate's word bar, if the configuration
    /// leaves them unset, with the calibration of the model whose vectors
    /// they will compare.
    pub fn calibrate(&mut self, cal: &Calibration) {
        self.canonical_query_threshold.get_or_insert(cal.l1);
        self.gate_word_similarity.get_or_insert(cal.same_word);
    }
}

/// `[multi_tool_fast_path]`: L2 (seed 000).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MultiToolConfig {
    /// L2 on (engram's default; the replay gate makes it safe).
    pub enabled: bool,
    /// Hand the rest of a multi-verb request to the planner after the replay.
    pub chain_to_planner: bool,
    /// Smallest cosine for an L2 match. Unset: the embedding model's own
    /// calibration ([`Calibration::l2`]).
    pub threshold: Option<f64>,
    /// Identical passes before a pipeline is a candidate.
    pub min_uses: u32,
    /// Active days without use after which a pipeline expires.
    pub ttl_active_days: u32,
    /// Uses at which a pipeline is promoted to a synthesis candidate.
    pub k_synth: u32,
}

impl Default for MultiToolConfig {
    fn default() -> Self {
        MultiToolConfig {
            enabled: true,
            chain_to_planner: false,
            threshold: None,
            min_uses: 3,
            ttl_active_days: 30,
            k_synth: 50,
        }
    }
}

impl MultiToolConfig {
    /// The L2 threshold: the configured one, else the default model's
    /// calibration (see [`FastPathConfig::l1_threshold`]).
    pub fn l2_threshold(&self) -> f64 {
        self.threshold.unwrap_or(EmbeddingModel::default().spec().calibration.l2)
    }

    /// Fills the L2 threshold, if the configuration leaves it unset, with
    /// the calibration of the model whose vectors it will compare.
    pub fn calibrate(&mut self, cal: &Calibration) {
        self.threshold.get_or_insert(cal.l2);
    }
}

/// Whether two calls are the same: same tools, same arguments, strings
/// compared without regard to case or surrounding space, numbers by value.
pub fn steps_agree(a: &[engram_events::payloads::PlanStep], b: &[engram_events::payloads::PlanStep]) -> bool {
    fn same(x: &serde_json::Value, y: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (x, y) {
            (Value::String(p), Value::String(q)) => p.trim().eq_ignore_ascii_case(q.trim()),
            (Value::Number(p), Value::Number(q)) => p.as_f64() == q.as_f64(),
            (Value::Array(p), Value::Array(q)) => p.len() == q.len() && p.iter().zip(q).all(|(p, q)| same(p, q)),
            (Value::Object(p), Value::Object(q)) => {
                p.len() == q.len() && p.iter().all(|(k, v)| q.get(k).is_some_and(|w| same(v, w)))
            }
            _ => x == y,
        }
    }
    a.len() == b.len()
        && a.iter().zip(b).all(|(p, q)| {
            p.tool == q.tool
                && p.args.0.len() == q.args.0.len()
                && p.args.0.iter().all(|(k, v)| q.args.0.get(k).is_some_and(|w| same(v, w)))
        })
}
