//! Sift's TPC-DS client: generating the 24 tables in dsdgen's flat-file format ([`data`],
//! cut into parts by [`layout`]), loading them into any S3 endpoint ([`load`]), and running
//! the 99 queries ([`queries`]) on DataFusion with table scans fetched or pushed down through
//! S3 Select ([`scan`], [`pushdown`], [`run`]), then reporting ([`report`]).

pub mod data;
pub mod error;
pub mod layout;
pub mod load;
pub mod net;
pub mod parquet;
pub mod probe;
pub mod pushdown;
pub mod queries;
pub mod report;
pub mod run;
pub mod s3;
pub mod scan;
pub mod schema;

use sift_engine::{CsvInput, InputSerialization};

/// How a dsdgen file is described to S3 Select, as Trino's Hive connector does for a text
/// table: `|` between fields and U+FDD0 as the comment marker, so that no data line is ever
/// taken for a comment (AWS's default marker is `#`).
pub fn dsdgen_input() -> InputSerialization {
    InputSerialization::csv(
        CsvInput {
            field_delimiter: "|".into(),
            comments: "\u{FDD0}".into(),
            ..CsvInput::default()
        },
        Default::default(),
    )
}
