//! Benchmark support: the benchmark queries, and charts of results.

pub mod chart;
pub mod queries;
