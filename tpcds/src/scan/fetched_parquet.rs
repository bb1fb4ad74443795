//! Fetched Parquet parts, read as a query engine reads Parquet from an object store: the
//! footer first (one ranged GET of the part's last [`FOOTER_GUESS`] bytes, a second if the
//! metadata is longer), then only the column chunks of the columns the scan decodes, row
//! group by row group — the parquet crate's push decoder says which byte ranges it needs,
//! and ranges closer than [`COALESCE_GAP`] go in one GET, gap included. Trino and
//! DataFusion read so; a fetch of whole parts would move every column and make pushdown's
//! gain look larger than it is.
//!
//! The batches are then filtered on the client ([`Keep`]), as every fetched scan's are.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{DataFusionError, Result as DfResult};
use futures::stream::{self, BoxStream, StreamExt};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, RowSelection};
use parquet::arrow::push_decoder::ParquetPushDecoderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData};
use parquet::DecodeResult;

use crate::layout::Format;
use crate::scan::request::{run_request, Request, Results};
use crate::scan::source::ScanMetrics;
use crate::scan::stream::{batch_of, Keep, Requests};
use crate::scan::table::TableDef;
use crate::scan::{Store, BATCH_ROWS};

/// The bytes at a part's end read first: the footer of a TPC-DS part (a few KiB) and
/// the 8-byte tail that gives its length.
const FOOTER_GUESS: u64 = 64 << 10;

/// Column-chunk ranges at most this far apart are read in one GET (DataFusion's object
/// store reader coalesces at 1 MiB too).
const COALESCE_GAP: u64 = 1 << 20;

/// Parquet parts fetched, decoded to the table columns `read`, then filtered. A request is
/// a whole part (`Request::Get` of the object, in fetch mode) or a select split whose
/// row groups a fetch reads instead (auto mode's choice made at run time); consecutive
/// splits of one part are read as one ([`joined`]).
pub(super) struct FetchedParquet {
    pub(super) requests: Requests,
    /// The table: its columns, and its parts' sizes.
    pub(super) table: Arc<TableDef>,
    /// The table columns decoded.
    pub(super) read: Vec<usize>,
    pub(super) keep: Keep,
}

impl FetchedParquet {
    pub(super) fn stream(self) -> DfResult<BoxStream<'static, DfResult<RecordBatch>>> {
        let output = Arc::new(self.table.schema.project(&self.read)?);
        let Requests {
            list,
            store,
            in_flight,
            metrics,
        } = self.requests;
        let parts = list
            .into_iter()
            .map(|request| Part::of_request(request, &self.table))
            .collect::<DfResult<Vec<_>>>()?;
        let parts = joined(parts);
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
        Ok(stream::iter(parts)
            .map(move |p| Arc::clone(&part).batches(p))
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
    /// The rows of `part`, as batches of the `read` columns.
    async fn batches(self: Arc<Self>, part: Part) -> DfResult<Vec<RecordBatch>> {
        let get = |range| self.get(&part.key, range);
        let metadata = read_metadata(&part.key, part.size, get).await?;
        let groups = part.row_groups(metadata.metadata());
        let columns = self.read.iter().copied();
        let mask = ProjectionMask::roots(metadata.parquet_schema(), columns);
        let (reader, key) = (&self, &part.key);
        let get_ranges =
            |ranges: Vec<Range<u64>>| async move { reader.get_ranges(key, &ranges).await };
        decode(metadata, mask, groups, None, get_ranges)
            .await?
            .iter()
            .map(|batch| self.in_scan_order(batch))
            .collect()
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
        Ok(body.joined())
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

/// One Parquet part a fetched scan reads: the whole object, or the row groups that start
/// inside `range` (as a ScanRange takes them, so that the splits of a part read each row
/// group once).
#[derive(Debug, Clone)]
pub(super) struct Part {
    pub(super) key: String,
    pub(super) size: u64,
    pub(super) range: Option<(u64, u64)>,
}

impl Part {
    /// The part `request` of `table` names: a GET of the whole object, or a select (of a
    /// split, or of the whole object).
    fn of_request(request: Request, table: &TableDef) -> DfResult<Part> {
        match request {
            Request::Get {
                key,
                start: 0,
                end: size,
            } => Ok(Part {
                key,
                size,
                range: None,
            }),
            Request::Select { key, range } => match table.object_size(&key) {
                Some(size) => Ok(Part { key, size, range }),
                None => Err(DataFusionError::Internal(format!(
                    "{key} is not a part of table {}",
                    table.name
                ))),
            },
            request => Err(DataFusionError::Internal(format!(
                "a fetched Parquet scan takes whole parts, not {request:?}"
            ))),
        }
    }

    /// The row groups of the part: those whose first byte (their earliest column chunk's)
    /// lies in `range`, every one without a range.
    fn row_groups(&self, metadata: &ParquetMetaData) -> Vec<usize> {
        let Some((start, end)) = self.range else {
            return (0..metadata.num_row_groups()).collect();
        };
        let first_byte = |group: &RowGroupMetaData| {
            group
                .columns()
                .iter()
                .map(|c| c.dictionary_page_offset().unwrap_or(c.data_page_offset()))
                .min()
                .map_or(0, |offset| u64::try_from(offset).unwrap_or(0))
        };
        metadata
            .row_groups()
            .iter()
            .enumerate()
            .filter(|(_, group)| (start..end).contains(&first_byte(group)))
            .map(|(i, _)| i)
            .collect()
    }
}

/// `parts` with each run of consecutive splits of one object (each range starting where the
/// one before ended) read as one part, the whole object when they cover it.
fn joined(parts: Vec<Part>) -> Vec<Part> {
    let mut joined: Vec<Part> = Vec::with_capacity(parts.len());
    for part in parts {
        if let Some(last) = joined.last_mut() {
            if let (true, Some((start, end)), Some((next_start, next_end))) =
                (last.key == part.key, last.range, part.range)
            {
                if end == next_start {
                    let whole = start == 0 && next_end == last.size;
                    last.range = (!whole).then_some((start, next_end));
                    continue;
                }
            }
        }
        joined.push(part);
    }
    joined
}

/// The footer of the Parquet object `key` of `size` bytes, read with `get`: its last
/// [`FOOTER_GUESS`] bytes, and the bytes before them when the metadata is longer.
pub(super) async fn read_metadata<G, F>(
    key: &str,
    size: u64,
    get: G,
) -> DfResult<ArrowReaderMetadata>
where
    G: Fn(Range<u64>) -> F,
    F: Future<Output = DfResult<Bytes>>,
{
    let corrupt = |what: String| {
        DataFusionError::Execution(format!("Parquet part {key} ({size} bytes): {what}"))
    };
    let tail_start = size.saturating_sub(FOOTER_GUESS);
    let mut tail = get(tail_start..size).await?;
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
        let head = get(size - footer..tail_start).await?;
        let mut whole = BytesMut::from(&head[..]);
        whole.extend_from_slice(&tail);
        tail = whole.freeze();
    }
    let metadata = &tail[tail.len() - footer as usize..tail.len() - 8];
    let metadata = ParquetMetaDataReader::decode_metadata(metadata).map_err(external)?;
    ArrowReaderMetadata::try_new(Arc::new(metadata), Default::default()).map_err(external)
}

/// The rows of `row_groups` (those of `selection` among them, when there is one), the
/// columns of `mask`, decoded by the parquet crate's push decoder; `get_ranges` reads the
/// byte ranges it asks for.
pub(super) async fn decode<G, F>(
    metadata: ArrowReaderMetadata,
    mask: ProjectionMask,
    row_groups: Vec<usize>,
    selection: Option<RowSelection>,
    get_ranges: G,
) -> DfResult<Vec<RecordBatch>>
where
    G: Fn(Vec<Range<u64>>) -> F,
    F: Future<Output = DfResult<Vec<Bytes>>>,
{
    let mut builder = ParquetPushDecoderBuilder::new_with_metadata(metadata)
        .with_projection(mask)
        .with_row_groups(row_groups)
        .with_batch_size(BATCH_ROWS);
    if let Some(selection) = selection {
        builder = builder.with_row_selection(selection);
    }
    let mut decoder = builder.build().map_err(external)?;
    let mut batches = Vec::new();
    loop {
        match decoder.try_decode().map_err(external)? {
            DecodeResult::NeedsData(ranges) => {
                let data = get_ranges(ranges.clone()).await?;
                decoder.push_ranges(ranges, data).map_err(external)?;
            }
            DecodeResult::Data(batch) => batches.push(batch),
            DecodeResult::Finished => return Ok(batches),
        }
    }
}

fn external(e: parquet::errors::ParquetError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part's splits, read as fetches, read each row group once — the ones a select of
    /// the same split reads (those that start inside it).
    #[test]
    fn the_splits_of_a_part_read_each_row_group_once() {
        use datafusion::arrow::array::Int64Array;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::WriterProperties;

        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build();
        let mut file = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut file, schema.clone(), Some(props)).unwrap();
        let keys = Int64Array::from_iter_values(0..1000);
        writer
            .write(&RecordBatch::try_new(schema, vec![Arc::new(keys)]).unwrap())
            .unwrap();
        writer.close().unwrap();
        let size = file.len() as u64;
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&Bytes::from(file))
            .unwrap();
        assert_eq!(metadata.num_row_groups(), 10);
        let part = |range| Part {
            key: "t/part-0.parquet".into(),
            size,
            range,
        };
        assert_eq!(
            part(None).row_groups(&metadata),
            (0..10).collect::<Vec<_>>()
        );
        for step in [1, 7, 500, size] {
            let mut read = Vec::new();
            let mut start = 0;
            while start < size {
                let end = (start + step).min(size);
                read.extend(part(Some((start, end))).row_groups(&metadata));
                start = end;
            }
            assert_eq!(read, (0..10).collect::<Vec<_>>(), "splits of {step} bytes");
        }
    }

    #[test]
    fn consecutive_splits_of_a_part_are_read_as_one() {
        let part = |key: &str, range| Part {
            key: key.into(),
            size: 100,
            range,
        };
        let ranges = |parts: Vec<Part>| {
            joined(parts)
                .into_iter()
                .map(|p| (p.key, p.range))
                .collect::<Vec<_>>()
        };
        // All of a part's splits: the whole part; a part's later splits only: their range.
        let parts = vec![
            part("a", Some((0, 40))),
            part("a", Some((40, 80))),
            part("a", Some((80, 100))),
            part("b", Some((40, 80))),
            part("b", Some((80, 100))),
        ];
        let want = vec![("a".into(), None), ("b".into(), Some((40, 100)))];
        assert_eq!(ranges(parts), want);
        // Splits that do not follow each other, or whole parts, stay apart.
        let parts = vec![
            part("a", Some((0, 40))),
            part("a", Some((80, 100))),
            part("b", None),
            part("b", None),
        ];
        let want = vec![
            ("a".into(), Some((0, 40))),
            ("a".into(), Some((80, 100))),
            ("b".into(), None),
            ("b".into(), None),
        ];
        assert_eq!(ranges(parts), want);
    }

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
