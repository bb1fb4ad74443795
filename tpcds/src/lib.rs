//! Sift's TPC-DS client. So far: generating the 24 tables in dsdgen's flat-file format
//! ([`data`]). Loading into S3 and running the queries on DataFusion come next.

pub mod data;

use sift_engine::{CsvInput, InputSerialization};

/// How a dsdgen file is described to S3 Select, as Trino's Hive connector does for a text
/// table: `|` between fields and U+FDD0 as the comment marker, so that no data line is ever
/// taken for a comment (AWS's default marker is `#`).
pub fn dsdgen_input() -> InputSerialization {
    InputSerialization {
        csv: CsvInput {
            field_delimiter: "|".into(),
            comments: "\u{FDD0}".into(),
            ..CsvInput::default()
        },
        ..InputSerialization::default()
    }
}
