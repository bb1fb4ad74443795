//! JSON input (issue #5, under construction): the parser and writer come first; JSON paths
//! in SQL and the LINES/DOCUMENT readers build on them.

pub mod parse;
pub mod write;

#[cfg(test)]
mod proptests;

pub use parse::{parse_one, JsonError, Node, Parser, MAX_DEPTH};
pub use write::write_node;
