//! The fast path's pure logic (seed 000): what the router runs before it
//! asks the planner.
//!
//! * [`normalize`](mod@normalize) — the one text normalisation (lowercase, straight
//!   apostrophes, punctuation off);
//! * [`l0`] — the closed table of literal phrases, EN + IT;
//! * [`extract`](mod@extract) — the deterministic argument extractor;
//! * [`placeholder`] — recorded arguments as placeholders, and their
//!   resolution from a new request (failing closed);
//! * [`router`] — the decision: L0, L1, L2 or the planner, and why;
//! * [`calibrate`] — thresholds per embedding model, from labelled pairs;
//! * [`gate`] — the second gate that keeps a cosine match from replaying
//!   the opposite request ("turn on" vs "turn off").

pub mod calibrate;
pub mod extract;
pub mod gate;
pub mod l0;
pub mod normalize;
pub mod placeholder;
pub mod router;

pub use extract::{extract, Extracted, SlotKind};
pub use l0::L0Table;
pub use normalize::normalize;
pub use router::{Decision, FastPath, VectorSearch};

use chrono::{DateTime, FixedOffset};

/// A request's canonical form — normalised, with the values it carries
/// masked (`download URL and describe it`) — and those values.
pub fn canonical(text: &str, now: DateTime<FixedOffset>) -> (String, Extracted) {
    let ex = extract(text, now);
    (normalize(&ex.masked()), ex)
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
