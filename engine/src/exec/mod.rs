//! Running a select.
//!
//! A run has four parts, each in its own module, after DataFusion's split of an execution
//! plan from its data source and file opener:
//!
//! - [`Select`] (here) checks the request and holds what every run of it shares; its input
//!   is one [`Input`]: CSV with its format, JSON with its type, or Parquet.
//! - the opener: [`text`] opens CSV and JSON objects (the ScanRange, the header line,
//!   decompression, byte counts) as a stream of record-aligned chunks;
//!   [`crate::parquet::select`] opens a Parquet object as its row groups.
//! - the drivers ([`drive`]) take chunks through the row loop on one thread, or on `n`
//!   threads with output kept in input order;
//! - the row loops, next to their formats ([`crate::csv::select`], [`crate::json::select`],
//!   [`crate::parquet::select`]), take each row through the filter and then the aggregates
//!   or the output ([`row`]), and the emitter ([`emit`]) writes each chunk's output to the
//!   [`Sink`], applying LIMIT and merging aggregates.
//!
//! Memory is bounded whatever the object's size: a chunk (4 MiB by default) or a row group
//! (at most [`MAX_ROW_GROUP_BYTES`](crate::parquet::MAX_ROW_GROUP_BYTES)) is the unit of work,
//! and a parallel run holds at most `2n + 2` chunks between cutting and writing.

mod drive;
pub(crate) mod emit;
mod input;
pub(crate) mod row;
mod text;

use crate::err;
use crate::error::Result;
use crate::output::{InputTypes, Writer};
use crate::request::{Compression, JsonType, SelectRequest};
use crate::source::ObjectSource;
use crate::sql::ast::Query;

pub(crate) use input::Input;

/// The three byte counts S3 Select reports in its Stats and Progress events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes read from the object (compressed size for compressed objects).
    pub bytes_scanned: u64,
    /// Bytes after decompression.
    pub bytes_processed: u64,
    /// Bytes of output.
    pub bytes_returned: u64,
}

/// Where results go. The gateway frames them as event-stream messages; the CLI writes them to
/// stdout.
pub trait Sink {
    /// The next piece of output, in order. Pieces end at row boundaries.
    fn write(&mut self, data: &[u8]) -> Result<()>;

    /// Called after each chunk of input. An error (say, the client went away) stops the scan.
    fn progress(&mut self, _stats: &Stats) -> Result<()> {
        Ok(())
    }
}

impl Sink for Vec<u8> {
    fn write(&mut self, data: &[u8]) -> Result<()> {
        self.extend_from_slice(data);
        Ok(())
    }
}

/// Default chunk size: the unit of work handed to a thread. Large, because each hand-off
/// costs a thread wake-up (tens of microseconds on a virtual machine); the scanner works
/// through a chunk in cache-sized blocks.
pub const DEFAULT_CHUNK_SIZE: usize = 4 << 20;

/// A validated select, ready to run over any number of objects.
#[derive(Debug, Clone)]
///
/// Its fields are read by the openers and drivers of each input kind; they are set only here.
pub struct Select {
    pub(crate) request: SelectRequest,
    pub(crate) query: Query,
    pub(crate) input: Input,
    pub(crate) writer: Writer,
    pub(crate) threads: usize,
    pub(crate) chunk_size: usize,
    /// Parquet input: the largest row group read (uncompressed bytes).
    pub(crate) max_row_group_bytes: i64,
}

impl Select {
    /// Checks the request — SQL syntax, serialization options, ScanRange — before any byte
    /// of the object is read, so that these errors reach the client as plain S3 errors.
    pub fn new(request: SelectRequest) -> Result<Select> {
        let query = crate::sql::parse(&request.sql, request.dialect)?;
        let input = Input::new(&request.input.format, request.dialect)?;
        if input == Input::Parquet && request.input.compression != Compression::None {
            return Err(err!(
                InvalidCompressionFormat,
                "a Parquet object cannot be compressed as a whole ({:?}); its columns carry \
                 their own compression",
                request.input.compression
            ));
        }
        let types = match input {
            Input::Csv(_) => Some(InputTypes::Text),
            Input::Json(_) => Some(InputTypes::Untyped),
            // Known once the footer is read (`parquet::select`).
            Input::Parquet => None,
        };
        let writer = Writer::new(&request.output, request.dialect, &query, types)?;
        if let Some(r) = &request.scan_range {
            if input == Input::Json(JsonType::Document) {
                return Err(err!(
                    UnsupportedScanRangeInput,
                    "ScanRange applies to CSV and JSON LINES input, not JSON DOCUMENT"
                ));
            }
            if request.input.compression != Compression::None {
                return Err(err!(
                    UnsupportedScanRangeInput,
                    "ScanRange cannot be used with compressed input ({:?})",
                    request.input.compression
                ));
            }
            if r.start.is_none() && r.end.is_none() {
                return Err(err!(
                    InvalidScanRange,
                    "ScanRange must name a Start or an End"
                ));
            }
        }
        Ok(Select {
            request,
            query,
            input,
            writer,
            threads: 1,
            chunk_size: DEFAULT_CHUNK_SIZE,
            max_row_group_bytes: crate::parquet::MAX_ROW_GROUP_BYTES,
        })
    }

    /// Scans with `n` worker threads (chunks in parallel, output in order).
    pub fn with_threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    pub fn with_chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes.max(4096);
        self
    }

    /// Parquet input: refuses row groups over `bytes` uncompressed (default
    /// 256 MiB, AWS's limit).
    pub fn with_max_row_group_bytes(mut self, bytes: i64) -> Self {
        self.max_row_group_bytes = bytes;
        self
    }

    pub fn query(&self) -> &Query {
        &self.query
    }

    /// Runs the select over `source`, writing the result to `sink`.
    pub fn run(&self, source: &dyn ObjectSource, sink: &mut (dyn Sink + Send)) -> Result<Stats> {
        match &self.input {
            Input::Parquet => crate::parquet::select::run(self, source, sink),
            Input::Csv(_) | Input::Json(_) => text::run(self, source, sink),
        }
    }
}
