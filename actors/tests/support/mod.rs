//! Helpers shared by the integration tests.

pub mod llm_server;
