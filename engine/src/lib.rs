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
//! The public API is what the gateway, the CLI and the TPC-DS client use: a request
//! ([`SelectRequest`] and its parts), a validated [`Select`], the sources it reads
//! ([`ObjectSource`] and its implementations), the [`Sink`] it writes to, its [`Stats`]
//! and its errors ([`SelectError`], [`ErrorCode`]); and [`IntSet`], the set an integer `IN`
//! list is tested with, which the client's fetched scans use for the same lists. Everything
//! else is crate-internal.
//!
//! The pieces, in the order data flows through them: `source` (bytes, decompression) →
//! `csv` (record-aligned chunks, records, fields) → `eval` (the bound query) → `output`
//! (CSV/JSON rows) → a [`Sink`]; `exec` runs a select through them. `sql` parses the
//! statement and `value` holds the value types and their functions. JSON input goes through
//! `json` instead of `csv`, Parquet input through `parquet`. The property tests and fuzz
//! targets reach the readers and the parser (`csv`, `json`, `sql`), which are public for
//! them and hidden from the documentation: not API, free to change.

#[doc(hidden)]
pub mod csv;
mod error;
mod eval;
mod exec;
#[doc(hidden)]
pub mod json;
mod output;
mod parquet;
mod request;
mod source;
#[doc(hidden)]
pub mod sql;
mod value;

pub use error::{ErrorCode, Result, SelectError};
pub use eval::int_set::IntSet;
pub use exec::{Select, Sink, Stats, DEFAULT_CHUNK_SIZE};
pub use request::{
    ArrowOptions, Compression, CsvInput, CsvOutput, Dialect, FileHeaderInfo, InputFormat,
    InputSerialization, JsonInput, JsonOutput, JsonType, OutputSerialization, QuoteFields,
    ScanRange, SelectRequest,
};
pub use source::{FileSource, ObjectSource, SliceSource, StreamSource};
