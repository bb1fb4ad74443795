//! Binding a parsed query to the input and evaluating it row by row.

pub mod agg;
pub mod bind;
pub mod coerce;
pub mod expr;
pub mod func;
pub mod int_set;
