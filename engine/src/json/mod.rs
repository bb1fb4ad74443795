//! JSON input: the parser, the writer, and how JSON values become SQL rows and values.

pub mod parse;
pub mod path;
mod scan;
pub(crate) mod select;
pub mod split;
pub mod write;

#[cfg(test)]
mod proptests;

pub use parse::{parse_one, JsonError, Node, Parser, Scalar, MAX_DEPTH};
pub use write::write_node;
