//! Fetched Parquet parts, read as a query engine reads Parquet from an object store: the
//! footer first (one ranged GET of the part's last [`FOOTER_GUESS`] bytes, a second if the
//! metadata is longer), then only the column chunks of the columns the scan decodes, row
//! group by row group — the parquet crate's push decoder says which byte ranges it needs,
//! and ranges closer than [`COALESCE_GAP`] go in one GET, gap included. Trino and
//! DataFusion read so; a fetch of whole parts would move every column and make pushdown's
//! gain look larger than it is.
//!
//! The batches are then filtered on the client ([`Keep`]), as every fetched scan's are.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DataFusionError, Result as DfResult};
use futures::stream::{self, BoxStream, StreamExt};
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::arrow::push_decoder::ParquetPushDecoderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::DecodeResult;

use crate::layout::Format;
use crate::scan::request::{run_request, Request, Results};
use crate::scan::source::ScanMetrics;
use crate::scan::stream::{batch_of, Keep, Requests};
use crate::scan::{Store, BATCH_ROWS};

/// The bytes at a part's end read first: the footer of a TPC-DS part (a few KiB) and
/// the 8-byte tail that gives its length.
const FOOTER_GUESS: u64 = 64 << 10;

/// Column-chunk ranges at most this far apart are read in one GET (DataFusion's object
/// store reader coalesces at 1 MiB too).
const COALESCE_GAP: u64 = 1 << 20;

/// Parquet parts fetched (one `Request::Get` of the whole part each), decoded to the
/// table columns `read`, then filtered.
pub(super) struct FetchedParquet {
    pub(super) requests: Requests,
    /// The table's columns.
    pub(super) schema: SchemaRef,
    /// The table columns decoded.
    pub(super) read: Vec<usize>,
    pub(super) keep: Keep,
}

impl FetchedParquet {
    pub(super) fn stream(self) -> DfResult<BoxStream<'static, DfResult<RecordBatch>>> {
        let output = Arc::new(self.schema.project(&self.read)?);
        let Requests {
            list,
            store,
            in_flight,
            metrics,
        } = self.requests;
        // The decoder gives the projected columns in file order; the scan's order is `read`'s.
        let mut in_file = self.read.clone();
        in_file.sort_unstable();
        let order = self
            .read
            .iter()
            .map(|c| in_file.binary_search(c).unwrap_or(0))
            .collect();
        let part = Arc::new(PartReader {
            store,
            metrics,
            read: self.read,
            order,
            output,
        });
        let keep = self.keep;
        Ok(stream::iter(list)
            .map(move |request| Arc::clone(&part).batches(request))
            .buffered(in_flight)
            .map(move |batches| {
                let batches = batches.and_then(|batches| {
                    batches
                        .into_iter()
                        .map(|b| keep.apply(b))
                        .collect::<DfResult<Vec<_>>>()
                });
                match batches {
                    Ok(batches) => stream::iter(batches.into_iter().map(Ok)).left_stream(),
                    Err(e) => stream::iter(vec![Err(e)]).right_stream(),
                }
            })
            .flatten()
            .boxed())
    }
}

/// What every part of a scan is read with.
struct PartReader {
    store: Arc<Store>,
    metrics: ScanMetrics,
    /// The table columns decoded, in the scan's order.
    read: Vec<usize>,
    /// For each of them, its place among the decoded columns (which are in file order).
    order: Vec<usize>,
    /// Their schema.
    output: SchemaRef,
}

impl PartReader {
    /// The part `request` names (the whole object), as batches of the `read` columns.
    async fn batches(self: Arc<Self>, request: Request) -> DfResult<Vec<RecordBatch>> {
        // A Parquet part is one request, the whole object (`TableDef`'s split size).
        let Request::Get {
            key,
            start: 0,
            end: size,
        } = request
        else {
            return Err(DataFusionError::Internal(format!(
                "a fetched Parquet scan takes whole parts, not {request:?}"
            )));
        };
        let corrupt = |what: String| {
            DataFusionError::Execution(format!("Parquet part {key} ({size} bytes): {what}"))
        };
        let tail_start = size.saturating_sub(FOOTER_GUESS);
        let mut tail = self.get(&key, tail_start..size).await?;
        if tail.len() < 8 || &tail[tail.len() - 4..] != b"PAR1" {
            return Err(corrupt("it does not end with Parquet's magic bytes".into()));
        }
        let length = &tail[tail.len() - 8..tail.len() - 4];
        let footer = u64::from(u32::from_le_bytes([
            length[0], length[1], length[2], length[3],
        ])) + 8;
        if footer + 4 > size {
            return Err(corrupt(format!("its footer claims {footer} bytes")));
        }
        if footer > tail.len() as u64 {
            let head = self.get(&key, size - footer..tail_start).await?;
            let mut whole = BytesMut::from(&head[..]);
            whole.extend_from_slice(&tail);
            tail = whole.freeze();
        }
        let metadata = &tail[tail.len() - footer as usize..tail.len() - 8];
        let metadata = ParquetMetaDataReader::decode_metadata(metadata).map_err(external)?;
        let metadata = ArrowReaderMetadata::try_new(Arc::new(metadata), Default::default())
            .map_err(external)?;
        let mask = ProjectionMask::roots(metadata.parquet_schema(), self.read.iter().copied());
        let mut decoder = ParquetPushDecoderBuilder::new_with_metadata(metadata)
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(external)?;
        let mut batches = Vec::new();
        loop {
            match decoder.try_decode().map_err(external)? {
                DecodeResult::NeedsData(ranges) => {
                    let data = self.get_ranges(&key, &ranges).await?;
                    decoder.push_ranges(ranges, data).map_err(external)?;
                }
                DecodeResult::Data(batch) => batches.push(self.in_scan_order(&batch)?),
                DecodeResult::Finished => return Ok(batches),
            }
        }
    }

    /// The bytes of `ranges` of `key`, read in coalesced GETs.
    async fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> DfResult<Vec<Bytes>> {
        let reads = coalesce(ranges);
        let bodies =
            futures::future::try_join_all(reads.iter().map(|r| self.get(key, r.clone()))).await?;
        ranges
            .iter()
            .map(|r| {
                let i = reads.partition_point(|read| read.end < r.end);
                let (Some(read), Some(body)) = (reads.get(i), bodies.get(i)) else {
                    return Err(DataFusionError::Internal(format!(
                        "bytes {r:?} of {key} are in no read"
                    )));
                };
                let start = (r.start - read.start) as usize;
                let end = (r.end - read.start) as usize;
                match body.get(start..end) {
                    Some(_) => Ok(body.slice(start..end)),
                    None => Err(DataFusionError::Execution(format!(
                        "GET {key} bytes {read:?} returned {} bytes",
                        body.len()
                    ))),
                }
            })
            .collect()
    }

    async fn get(&self, key: &str, range: Range<u64>) -> DfResult<Bytes> {
        let request = Request::Get {
            key: key.to_string(),
            start: range.start,
            end: range.end,
        };
        let store = Arc::clone(&self.store);
        let sql = Arc::from("");
        let results = Results::Csv;
        let (body, _) = run_request(
            store,
            request,
            sql,
            Format::Parquet,
            results,
            self.metrics.clone(),
        )
        .await?;
        Ok(body)
    }

    /// A decoded batch (projected columns in file order) in the scan's column order.
    fn in_scan_order(&self, batch: &RecordBatch) -> DfResult<RecordBatch> {
        let columns = self
            .order
            .iter()
            .map(|&i| Arc::clone(batch.column(i)))
            .collect();
        batch_of(&self.output, columns, batch.num_rows())
    }
}

/// `ranges` merged where they overlap or lie at most [`COALESCE_GAP`] apart, in order of
/// their starts; every range lies inside one of them.
fn coalesce(ranges: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE_GAP) => {
                last.end = last.end.max(r.end);
            }
            _ => merged.push(r),
        }
    }
    merged
}

fn external(e: parquet::errors::ParquetError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_ranges_are_read_together_and_each_lies_in_one_read() {
        let mb = 1 << 20;
        let ranges = [10..20, 0..5, 30..40, 40 + 2 * mb..50 + 2 * mb, 35..38];
        let reads = coalesce(&ranges);
        assert_eq!(reads, [0..40, 40 + 2 * mb..50 + 2 * mb]);
        for r in &ranges {
            let i = reads.partition_point(|read| read.end < r.end);
            assert!(reads[i].start <= r.start && r.end <= reads[i].end, "{r:?}");
        }
    }
}
