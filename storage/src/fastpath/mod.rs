//! The fast path's pure logic (seed 000): what the router runs before it
//! asks the planner.
//!
//! * [`normalize`] — the one text normalisation (lowercase, straight
//!   apostrophes, punctuation off);
//! * [`l0`] — the closed table of literal phrases, EN + IT;
//! * [`extract`] — the deterministic argument extractor;
//! * [`gate`] — the second gate that keeps a cosine match from replaying
//!   the opposite request ("turn on" vs "turn off").

pub mod extract;
pub mod gate;
pub mod l0;
pub mod normalize;

pub use extract::{extract, Extracted, SlotKind};
pub use l0::L0Table;
pub use normalize::normalize;
