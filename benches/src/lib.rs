//! Benchmark support: the engine's benchmark queries.

pub mod queries;
