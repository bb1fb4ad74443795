//! TPC-DS data exactly as the TPC-DS kit's dsdgen (v2.10 tools) writes it: the 24 tables
//! generated ([`data`]) and cut into parts ([`layout`]), their schema ([`schema`]), and the
//! same rows as Parquet ([`parquet`]).
//!
//! This crate depends on neither DataFusion nor the AWS SDK, so the benches and any tool
//! that only needs the data build without them; the TPC-DS client (`sift-tpcds`) re-exports
//! it.
//!
//! The dsdgen flat-file format is spelled once, here: `|` after every field (a line ends with
//! one), `\n` after every line, no quoting, an empty field for NULL.

pub mod data;
pub mod font;
pub mod layout;
pub mod parquet;
pub mod schema;

use sift_engine::{CsvInput, InputSerialization};

/// The byte after every field of a dsdgen line, the last one included.
pub const FIELD_DELIMITER: u8 = b'|';

/// A comment marker that never occurs in TPC-DS data, as Trino's Hive connector sends for a
/// text table (AWS's default marker, `#`, could start a data line).
pub const NO_COMMENTS: &str = "\u{FDD0}";

/// How a dsdgen file is described to S3 Select.
pub fn dsdgen_input() -> InputSerialization {
    InputSerialization::csv(
        CsvInput {
            field_delimiter: char::from(FIELD_DELIMITER).to_string(),
            comments: NO_COMMENTS.into(),
            ..CsvInput::default()
        },
        Default::default(),
    )
}
