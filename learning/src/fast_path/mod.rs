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
//!   gate lets a request learnt in one language serve its twin in the other.
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
pub mod placeholder;
pub mod templates;

pub use decision::{Decision, FastPath, VectorSearch};
pub use extract::{extract, Extracted, SlotKind};
pub use l0::L0Table;

use chrono::{DateTime, FixedOffset};

/// A request's canonical form — normalised, with the values it carries
/// masked (`download URL and describe it`) — and those values.
pub fn canonical(text: &str, now: DateTime<FixedOffset>) -> (String, Extracted) {
    let ex = extract(text, now);
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
