//! Benchmark support: TPC-DS data generation and the engine's benchmark queries.

pub mod data;
pub mod queries;
