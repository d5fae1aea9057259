//! engram's actor runtime.
//!
//! The actors (listener, router, planner, reply loop, judge, pattern store,
//! summariser, graph) land with the runtime issue; until then this crate only
//! fixes the dependency direction `actors -> storage -> events`, so nothing
//! below it can grow a dependency on actix.

pub use engram_storage as storage;
