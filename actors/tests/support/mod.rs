//! Helpers shared by the integration tests.

// Each test crate compiles this module and uses a different part of it.
#[allow(dead_code)]
pub mod fixtures;
#[allow(dead_code)]
pub mod llm_server;
