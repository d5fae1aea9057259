//! The projections engram keeps (DESIGN, "Projections").

pub mod active_days;
pub mod canonical_queries;
pub mod graph;
pub mod pattern_outcomes;
pub mod pipelines;
pub mod sessions;

use engram_local_state::projector::Projection;

pub use active_days::ActiveDays;
pub use canonical_queries::CanonicalQueries;
pub use graph::Graph;
pub use pattern_outcomes::PatternOutcomes;
pub use pipelines::Pipelines;
pub use sessions::Sessions;

/// Every projection, fresh, in a fixed order.
pub fn all() -> Vec<Box<dyn Projection>> {
    vec![
        Box::new(Sessions::default()),
        Box::new(ActiveDays::default()),
        Box::new(PatternOutcomes::default()),
        Box::new(CanonicalQueries::default()),
        Box::new(Pipelines::default()),
        Box::new(Graph::default()),
    ]
}

/// The names of [`all`], in order.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|p| p.name()).collect()
}
