//! # engram-learning
//!
//! What the assistant knows and how it learns it: every rule that turns
//! events into decisions, and every fold that turns the log into what the
//! runtime reads. Pure logic over `engram-events` and the
//! `engram-storage` framework — no threads, no actors, no network, no
//! model: the live actors (`engram-actors`) and `engram import` run this
//! same code, which is why an imported history and a lived one derive the
//! same events.
//!
//! * [`fast_path`] — seed 000: the L0 table, the argument extractor, L2
//!   placeholders, the replay gate, calibration, and the decision L0 → L1
//!   → L2 → planner.
//! * [`patterns`] — seed 001: fingerprints, similarity, Welford outcome
//!   accumulators, the K-NN index over fingerprints, recommendations;
//!   [`features`] — a turn's structural features.
//! * [`intent`] — the rule-based intent judge (wake words, stop phrases,
//!   hot window), the listener's fallback when no LLM judge is configured.
//! * [`memory`] — the offline summariser and graph fact extractor, the
//!   fallbacks of seed 002 #9 and #10.
//! * [`fence`] — the fence around untrusted text (a tool's output, a fact
//!   the user said) before a model reads it.
//! * [`step_resolver`] — the arguments a planned step leaves to the
//!   conversation (seed 002 #13).
//! * [`text`] — the one text normalisation and stop-word list all of the
//!   above share.
//! * [`routing`] — the routing chain of a planner turn and its exploration
//!   rule (seed 001 §9).
//! * [`colours`] — colour names, EN + IT, for a colour property.
//! * [`offline_planner`] — the plan of a turn when no model plans it: the
//!   tools nearest the request in meaning, arguments from the extractor;
//!   [`taught_phrasings`] — the requests the model answered well, as
//!   example phrasings of their tools.
//! * [`plan_check`] — a model's plan checked against the tools' schemas
//!   and the request: near-misses mended, the rest refused;
//!   [`model_budget`] — what a model's plan prompt may hold for its size,
//!   and its timeout from its measured speed.
//! * [`reactors`] — events derived from events (day activation, fast-path
//!   learning, pattern recording, verdicts, summaries, graph facts).
//! * [`projections`] — the folds the runtime and the CLI read: sessions,
//!   active days, canonical queries, pipelines, pattern outcomes, graph.
//! * [`import`] — turn records and envelopes into the log, validated
//!   first, with deterministic ids, through the same reactors.

#![warn(missing_docs)]

pub mod arguments;
pub mod calendar;
pub mod colours;
pub mod embedder;
pub mod fast_path;
pub mod features;
pub mod fence;
pub mod import;
pub mod intent;
pub mod lang;
pub mod memory;
pub mod model_budget;
pub mod mood;
pub mod offline_planner;
pub mod patterns;
pub mod places;
pub mod plan_check;
pub mod projections;
pub mod reactors;
pub mod reply_composition;
pub mod routing;
pub mod spoken;
pub mod step_resolver;
pub mod taught_phrasings;
pub mod text;
pub mod time_of_day;
pub mod tool_narrowing;
pub mod tool_words;
