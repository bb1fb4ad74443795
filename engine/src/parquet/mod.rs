//! Parquet input: the footer, the row groups a query needs, and their rows.
//!
//! A Parquet file is read out of order. Its footer, at the end, says where every row group's
//! column chunks lie and what each chunk's statistics are. So a select reads the footer
//! first, drops the row groups a ScanRange leaves out and those whose statistics rule the
//! WHERE clause out ([`prune`]), and then reads only the column chunks of the columns the
//! query names. The parquet crate's push decoder decodes without doing any I/O: it names the
//! byte ranges it needs, and [`ParquetFile`] reads exactly those from the [`ObjectSource`].
//!
//! Rows reach the evaluator as JSON-like objects ([`rows`]): a Parquet row is a struct, so
//! names, nested paths, `*`, NULL and MISSING mean what they mean for JSON input, while
//! numbers and timestamps keep the types the file gives them ([`Node::Scalar`]).
//!
//! [`Node::Scalar`]: crate::json::Node::Scalar

pub(crate) mod filter;
pub mod prune;
pub mod rows;
pub(crate) mod select;

use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, RowFilter,
};
use parquet::arrow::push_decoder::ParquetPushDecoderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::basic::Compression as Codec;
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataPushDecoder,
    RowGroupMetaData,
};
use parquet::DecodeResult;

use crate::err;
use crate::error::{ErrorCode, Result, SelectError};
use crate::json::path::KeySet;
use crate::parquet::filter::ColumnFilter;
use crate::source::ObjectSource;

/// The largest row group a select reads, uncompressed. A row group is decoded whole (the
/// columns the query names), so this bounds a select's memory the way the chunk size does
/// for CSV; AWS rejects bigger row groups with the same error.
pub const MAX_ROW_GROUP_BYTES: i64 = 256 << 20;

/// Rows per decoded batch: small enough that a batch's columns stay in cache while its rows
/// are evaluated.
const BATCH_ROWS: usize = 4096;

/// `PAR1`, at both ends of every Parquet file.
const MAGIC: &[u8; 4] = b"PAR1";

/// An open Parquet object: its footer, decoded, and where its bytes come from.
pub struct ParquetFile<'s> {
    source: &'s dyn ObjectSource,
    size: u64,
    meta: ArrowReaderMetadata,
    /// Bytes read from the object so far (footer and column chunks).
    read: AtomicU64,
}

impl<'s> ParquetFile<'s> {
    /// Reads and decodes the footer.
    pub fn open(source: &'s dyn ObjectSource) -> Result<Self> {
        let size = source.size().ok_or_else(|| {
            err!(
                InternalError,
                "Parquet input needs the object's size, and this source does not know it"
            )
        })?;
        if size < 12 {
            return Err(err!(
                ParquetParsingError,
                "the object is {size} bytes long, too short for a Parquet file (at least 12)"
            ));
        }
        let read = AtomicU64::new(0);
        let fetch = |r: Range<u64>| read_range(source, size, &read, r);
        if &fetch(0..4)?[..] != MAGIC {
            return Err(err!(
                ParquetParsingError,
                "the object does not start with Parquet's magic bytes PAR1"
            ));
        }
        // The footer's last eight bytes: the metadata's length, then the magic again. Checked
        // here, because the decoder trusts the length (and underflows on a lying one).
        let tail = fetch(size - 8..size)?;
        if &tail[4..] != MAGIC {
            return Err(err!(
                ParquetParsingError,
                "the object does not end with Parquet's magic bytes PAR1"
            ));
        }
        let metadata_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
        if metadata_len + 12 > size {
            return Err(err!(
                ParquetParsingError,
                "the Parquet footer claims {metadata_len} bytes of metadata, more than the \
                 {size}-byte object holds"
            ));
        }
        let mut decoder = ParquetMetaDataPushDecoder::try_new(size)
            .map_err(parse_error)?
            .with_page_index_policy(PageIndexPolicy::Skip);
        decoder
            .push_range(size - 8..size, tail)
            .map_err(parse_error)?;
        let metadata = loop {
            match guarded(|| decoder.try_decode())? {
                DecodeResult::NeedsData(ranges) => {
                    let data = ranges
                        .iter()
                        .map(|r| fetch(r.clone()))
                        .collect::<Result<Vec<_>>>()?;
                    decoder.push_ranges(ranges, data).map_err(parse_error)?;
                }
                DecodeResult::Data(m) => break m,
                DecodeResult::Finished => {
                    return Err(err!(ParquetParsingError, "the Parquet footer is empty"))
                }
            }
        };
        check_chunk_ranges(&metadata, size)?;
        let meta = guarded(|| {
            ArrowReaderMetadata::try_new(Arc::new(metadata), ArrowReaderOptions::new())
        })?;
        Ok(ParquetFile {
            source,
            size,
            meta,
            read,
        })
    }

    /// The file's columns as Arrow sees them.
    pub fn schema(&self) -> &SchemaRef {
        self.meta.schema()
    }

    pub fn row_groups(&self) -> &[RowGroupMetaData] {
        self.meta.metadata().row_groups()
    }

    pub fn arrow_metadata(&self) -> &ArrowReaderMetadata {
        &self.meta
    }

    /// Bytes read from the object so far.
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// The offset of row group `i`'s first byte: where its earliest column chunk starts. A
    /// ScanRange takes the row groups that start inside it, as it takes CSV records.
    pub fn row_group_start(&self, i: usize) -> u64 {
        self.row_groups()[i]
            .columns()
            .iter()
            .filter_map(|c| chunk_range(c).map(|(start, _)| start))
            .min()
            .unwrap_or(0)
    }

    /// The mask of the top-level columns named in `keys` (every column when `None`: the
    /// query reads them all).
    pub fn projection(&self, keys: Option<&KeySet>) -> ProjectionMask {
        match keys {
            None => ProjectionMask::all(),
            Some(keys) => {
                let roots = self
                    .schema()
                    .fields()
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| keys.contains(f.name().as_bytes()))
                    .map(|(i, _)| i);
                ProjectionMask::roots(self.meta.parquet_schema(), roots)
            }
        }
    }

    /// Refuses a row group AWS would refuse: over `max_bytes` uncompressed, or with a column
    /// chunk in a codec S3 Select does not read. Only the columns in `mask` are checked for codecs.
    pub fn check_row_group(&self, i: usize, mask: &ProjectionMask, max_bytes: i64) -> Result<()> {
        let rg = &self.row_groups()[i];
        if rg.total_byte_size() > max_bytes {
            return Err(err!(
                OverMaxParquetBlockSize,
                "row group {i} is {} bytes uncompressed, over the limit of {max_bytes} bytes",
                rg.total_byte_size()
            ));
        }
        for (c, column) in rg.columns().iter().enumerate() {
            if !mask.leaf_included(c) {
                continue;
            }
            match column.compression() {
                Codec::UNCOMPRESSED | Codec::SNAPPY | Codec::GZIP(_) => {}
                other => {
                    return Err(err!(
                        ParquetUnsupportedCompressionCodec,
                        "column {} is compressed with {other}; S3 Select reads Parquet \
                         columns compressed with GZIP or Snappy, or not compressed",
                        column.column_path()
                    ))
                }
            }
        }
        Ok(())
    }

    /// Decodes the columns in `mask` of row group `i`, handing each batch of rows to
    /// `each` until it returns false. With a `filter`, its columns are decoded first and
    /// the batches hold only the rows where it is true; `limit` counts those.
    pub fn read_row_group(
        &self,
        i: usize,
        mask: ProjectionMask,
        filter: Option<&ColumnFilter>,
        limit: Option<usize>,
        mut each: impl FnMut(&RecordBatch) -> Result<bool>,
    ) -> Result<()> {
        let mut builder = ParquetPushDecoderBuilder::new_with_metadata(self.meta.clone())
            .with_row_groups(vec![i])
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS);
        // The decoder carries a predicate's error as text; the select's own error, with
        // its code, waits here.
        let failed: Arc<Mutex<Option<SelectError>>> = Arc::default();
        if let Some(filter) = filter {
            let columns =
                ProjectionMask::roots(self.meta.parquet_schema(), filter.roots().iter().copied());
            let (filter, failed) = (filter.clone(), failed.clone());
            let predicate = ArrowPredicateFn::new(columns, move |batch| {
                filter.keep(&batch).map_err(|e| {
                    let message = e.to_string();
                    if let Ok(mut slot) = failed.lock() {
                        slot.get_or_insert(e);
                    }
                    ArrowError::ComputeError(message)
                })
            });
            builder = builder.with_row_filter(RowFilter::new(vec![Box::new(predicate)]));
        }
        if let Some(n) = limit {
            builder = builder.with_limit(n);
        }
        let mut decoder = guarded(|| builder.build())?;
        let filter_error = |e: SelectError| match failed.lock().ok().and_then(|mut f| f.take()) {
            Some(first) => first,
            None => e,
        };
        loop {
            match guarded(|| decoder.try_decode()).map_err(filter_error)? {
                DecodeResult::NeedsData(ranges) => {
                    let data = ranges
                        .iter()
                        .map(|r| self.read_range(r.clone()))
                        .collect::<Result<Vec<_>>>()?;
                    decoder.push_ranges(ranges, data).map_err(parse_error)?;
                }
                DecodeResult::Data(batch) => {
                    if !each(&batch)? {
                        return Ok(());
                    }
                }
                DecodeResult::Finished => return Ok(()),
            }
        }
    }

    fn read_range(&self, range: Range<u64>) -> Result<Bytes> {
        read_range(self.source, self.size, &self.read, range)
    }
}

/// A column chunk's `(start, length)`, `None` when the footer gives a negative one. (The
/// parquet crate's own `byte_range` asserts instead.)
fn chunk_range(c: &ColumnChunkMetaData) -> Option<(u64, u64)> {
    let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
    Some((
        u64::try_from(start).ok()?,
        u64::try_from(c.compressed_size()).ok()?,
    ))
}

/// Refuses a footer whose column chunks lie outside the object, before anything (the
/// decoders included) takes their offsets for granted.
fn check_chunk_ranges(metadata: &ParquetMetaData, size: u64) -> Result<()> {
    for (g, rg) in metadata.row_groups().iter().enumerate() {
        for c in rg.columns() {
            let inside = chunk_range(c)
                .and_then(|(start, len)| start.checked_add(len))
                .is_some_and(|end| end <= size);
            if !inside {
                return Err(err!(
                    ParquetParsingError,
                    "the Parquet footer puts column {} of row group {g} outside the \
                     {size}-byte object",
                    c.column_path()
                ));
            }
        }
    }
    Ok(())
}

/// Reads bytes `range` of a `size`-byte object, adding their number to `read`.
fn read_range(
    source: &dyn ObjectSource,
    size: u64,
    read: &AtomicU64,
    range: Range<u64>,
) -> Result<Bytes> {
    if range.start > range.end || range.end > size {
        return Err(err!(
            ParquetParsingError,
            "the Parquet footer points at bytes {}..{}, outside the {size}-byte object",
            range.start,
            range.end
        ));
    }
    let len = usize::try_from(range.end - range.start)
        .map_err(|_| err!(ParquetParsingError, "a Parquet column chunk is too large"))?;
    let bytes = match source.bytes() {
        // `range.end <= size`, and `size` is the mapped length.
        Some(all) => Bytes::copy_from_slice(&all[range.start as usize..range.end as usize]),
        None => {
            let mut buf = vec![0; len];
            let mut r = source
                .open_range(range.start, range.end - range.start)
                .map_err(io_error)?;
            r.read_exact(&mut buf).map_err(io_error)?;
            Bytes::from(buf)
        }
    };
    read.fetch_add(len as u64, Ordering::Relaxed);
    Ok(bytes)
}

/// Runs a step of the parquet crate's decoders. They index by lengths and counts the file
/// states, and not every path checks them first: a panic there is a malformed file, not a
/// reason to take the gateway's thread down.
fn guarded<T>(step: impl FnOnce() -> Result<T, ParquetError>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)) {
        Ok(r) => r.map_err(parse_error),
        Err(_) => Err(err!(
            ParquetParsingError,
            "the Parquet file is malformed: its decoder failed on it"
        )),
    }
}

/// A malformed file, as S3 Select reports it. (The decoders do no I/O of their own, so
/// their errors are always about the file's bytes.)
pub fn parse_error(e: ParquetError) -> SelectError {
    err!(ParquetParsingError, "the Parquet file is malformed: {e}")
}

fn io_error(e: std::io::Error) -> SelectError {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<SelectError>()) {
        return inner.clone();
    }
    SelectError::new(
        ErrorCode::InternalError,
        format!("reading the Parquet object failed: {e}"),
    )
}
