//! Benchmarks and benchmark data for Sift.

pub mod data;
