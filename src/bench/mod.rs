//! Benchmarks shared by `benches/` (criterion) and `engram bench`, each
//! measured beside its peer baseline in the same run.
pub mod fastpath;
pub mod knn;
pub mod log;
pub mod patterns;
