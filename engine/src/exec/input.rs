//! What kind of object a select reads, decided once from the request.

use crate::csv::CsvFormat;
use crate::error::Result;
use crate::request::{Dialect, InputFormat, JsonType};

/// The input kind, with what reading it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Input {
    /// CSV records; rows are records of fields.
    Csv(CsvFormat),
    /// JSON values, one per line or concatenated; rows are values.
    Json(JsonType),
    /// A Parquet file; rows are values (a struct per row), read by row group.
    Parquet,
}

impl Input {
    /// The input kind a request names, its CSV options checked. CSV is read with the
    /// quoting rules of the dialect.
    pub(crate) fn new(format: &InputFormat, dialect: Dialect) -> Result<Input> {
        Ok(match format {
            InputFormat::Csv(c) => Input::Csv(match dialect {
                Dialect::Aws => CsvFormat::new(c)?,
                Dialect::Ceph => CsvFormat::new(c)?.with_ceph_quoting(),
            }),
            InputFormat::Json(j) => Input::Json(j.json_type),
            InputFormat::Parquet => Input::Parquet,
        })
    }

    /// The format that cuts text input into chunks of whole records: the CSV format, or
    /// lines for JSON (see [`CsvFormat::json_lines`]). Parquet is not cut into chunks.
    pub(crate) fn chunk_format(&self) -> CsvFormat {
        match self {
            Input::Csv(format) => format.clone(),
            Input::Json(_) | Input::Parquet => CsvFormat::json_lines(),
        }
    }

    /// Whether rows are values ([`Row::node`](crate::eval::expr::Row)) rather than CSV
    /// records.
    pub(crate) fn rows_are_values(&self) -> bool {
        !matches!(self, Input::Csv(_))
    }
}
