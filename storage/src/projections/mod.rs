//! The projections engram keeps (DESIGN, "Projections").

pub mod active_days;
pub mod pattern_outcomes;
pub mod sessions;

use crate::projection::Projection;

pub use active_days::ActiveDays;
pub use pattern_outcomes::PatternOutcomes;
pub use sessions::Sessions;

/// Every projection, fresh, in a fixed order.
pub fn all() -> Vec<Box<dyn Projection>> {
    vec![Box::new(Sessions::default()), Box::new(ActiveDays::default()), Box::new(PatternOutcomes::default())]
}

/// The names of [`all`], in order.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|p| p.name()).collect()
}
