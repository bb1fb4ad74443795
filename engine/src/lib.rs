//! Sift's S3 Select engine: AWS's SQL dialect over CSV and JSON streams and Parquet files.
//!
//! ```
//! use sift_engine::{Select, SelectRequest, SliceSource};
//!
//! let request = SelectRequest {
//!     sql: "SELECT s._2 FROM S3Object s WHERE CAST(s._1 AS INT) > 1".into(),
//!     ..Default::default()
//! };
//! let select = Select::new(request)?;
//! let mut out = Vec::new();
//! let stats = select.run(&SliceSource(b"1,a\n2,b\n3,c\n"), &mut out)?;
//! assert_eq!(out, b"b\nc\n");
//! assert_eq!(stats.bytes_scanned, 12);
//! # Ok::<(), sift_engine::SelectError>(())
//! ```
//!
//! The pieces, in the order data flows through them:
//! [`source`] (bytes, decompression) → [`csv`] (record-aligned chunks, records, fields) →
//! [`eval`] (the bound query) → [`output`] (CSV/JSON rows) → a [`Sink`]. [`sql`] parses the
//! statement and [`value`] holds the value types and their functions. JSON input goes
//! through [`json`] instead of [`csv`], Parquet input through [`parquet`].

pub mod csv;
pub mod error;
pub mod eval;
pub mod exec;
pub mod json;
pub mod output;
pub mod parquet;
pub mod request;
pub mod source;
pub mod sql;
pub mod value;

pub use error::{ErrorCode, Result, SelectError};
pub use exec::{Select, Sink, Stats};
pub use request::{
    Compression, CsvInput, CsvOutput, Dialect, FileHeaderInfo, InputFormat, InputSerialization,
    JsonInput, JsonOutput, JsonType, OutputSerialization, QuoteFields, ScanRange, SelectRequest,
};
pub use source::{FileSource, ObjectSource, SliceSource, StreamSource};
