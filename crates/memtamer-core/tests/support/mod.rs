//! Shared by the integration tests and the benches.
pub mod mg_problem;
