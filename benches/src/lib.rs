//! Benchmark support: the benchmark queries, timing helpers, and charts of results.

pub mod chart;
pub mod measure;
pub mod queries;
