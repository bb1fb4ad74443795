//! What auto mode predicts a scan's answer from: a sample of each table, taken before the
//! run, through which a scan's own statement is run by Sift's engine, in process.
//!
//! - Text parts: whole lines from [`SAMPLE_PIECES`] places spread over the table. A fetch
//!   moves the whole table, so the prediction is the answer's share of the table's bytes.
//! - Parquet parts: every part's footer, and runs of rows from [`SAMPLE_PIECES`] places
//!   spread over the table's rows. A fetch moves only the column chunks of the columns the
//!   scan decodes, which the footers give exactly; the answer (Arrow, as Sift's gateway
//!   sends it) is the sample's answer per row times the table's rows.
//!
//! A sample that the engine cannot run a statement over predicts nothing; the scan is then
//! pushed down, as in dynamic mode. Both kinds also predict the rows a filter keeps
//! ([`Sample::kept_rows`]), for the join-key jobs auto mode runs before a statement: the
//! pieces are counted one by one.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, BooleanArray};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::compute::kernels::cmp;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::DataFusionError;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::file::metadata::ParquetMetaData;
use sift_engine::{
    ArrowOptions, CsvInput, InputFormat, InputSerialization, OutputSerialization, Select,
    SelectRequest, Sink, SliceSource,
};
use sift_tpcds_data::{FIELD_DELIMITER, NO_COMMENTS};

use crate::error::Result;
use crate::layout::Format;
use crate::scan::fetched_parquet::{decode, read_metadata};
use crate::scan::request::{Request, Results};
use crate::scan::Store;

/// Pieces a text table's sample is cut from, and the bytes of each: spread evenly over the
/// table's bytes, so that a table written in key or date order is seen across its range.
const SAMPLE_PIECES: u64 = 8;
const SAMPLE_PIECE_BYTES: u64 = 16 << 10;

/// Rows of each piece of a Parquet table's sample at most: [`SAMPLE_PIECES`] of them make
/// 32 Ki rows.
const PARQUET_PIECE_ROWS: u64 = 4 << 10;

/// A table's sample.
#[derive(Debug)]
pub(crate) enum Sample {
    /// Whole lines of dsdgen text, and where each piece's lines end in it.
    Lines {
        text: Bytes,
        piece_ends: Vec<usize>,
    },
    Parquet(ParquetSample),
}

/// A Parquet table's sample, and what its footers say.
#[derive(Debug)]
pub(crate) struct ParquetSample {
    /// The sampled rows, every column, as one Parquet file.
    file: Bytes,
    rows: usize,
    /// The pieces the sample was cut from, each as a Parquet file, with its rows.
    pieces: Vec<(Bytes, usize)>,
    /// The table's rows, over all its parts.
    table_rows: u64,
    /// For each table column, the compressed bytes of its column chunks over all parts.
    chunk_bytes: Vec<u64>,
    /// For each table column, how its values run along the sampled rows, which keep the
    /// table's order.
    runs: Vec<Run>,
}

/// How a column's values run along a sample's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Each value above the one before it, none NULL (and at least two): a key the table
    /// is sorted by.
    Increasing,
    /// Each value at least the one before it, none NULL.
    NonDecreasing,
    Unordered,
}

impl Run {
    /// How `column`'s values run. Taken for every column of every Parquet table before the
    /// run, where most columns are unordered: they cost one comparison of neighbours, the
    /// others a second.
    fn of(column: &dyn Array) -> Run {
        let n = column.len();
        // With a NULL, or too few rows, there is nothing to say.
        if column.null_count() > 0 || n < 2 {
            return Run::Unordered;
        }
        let (before, after) = (column.slice(0, n - 1), column.slice(1, n - 1));
        let all = |holds: std::result::Result<BooleanArray, _>| {
            holds.is_ok_and(|holds| holds.true_count() == n - 1)
        };
        if !all(cmp::lt_eq(&before, &after)) {
            Run::Unordered
        } else if all(cmp::lt(&before, &after)) {
            Run::Increasing
        } else {
            Run::NonDecreasing
        }
    }
}

/// What a scan moves when fetched, and what its answer is predicted to be when pushed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prediction {
    pub(crate) fetch_bytes: u64,
    pub(crate) answer_bytes: f64,
}

impl Sample {
    /// Lines from [`SAMPLE_PIECES`] places of the text table `objects` make (the whole
    /// table when it is smaller than the pieces).
    pub(crate) async fn of_text(store: &Store, objects: &[(String, u64)]) -> Result<Sample> {
        let total: u64 = objects.iter().map(|(_, size)| size).sum();
        let step = (total / SAMPLE_PIECES).max(SAMPLE_PIECE_BYTES);
        let mut pieces = Vec::new();
        let (mut object_start, mut at) = (0u64, 0u64);
        for (key, size) in objects {
            let object_end = object_start + size;
            while at < object_end {
                let start = at - object_start;
                let end = (start + SAMPLE_PIECE_BYTES).min(*size);
                let request = Request::Get {
                    key: key.clone(),
                    start,
                    end,
                };
                let body = store
                    .send(&request, "", Format::Csv, Results::Csv)
                    .await?
                    .body
                    .joined();
                pieces.push((start, body));
                at += step;
            }
            object_start = object_end;
        }
        Ok(Sample::from_pieces(pieces))
    }

    /// The Parquet sample made of `pieces` (rows of one schema, in the table's order), of a
    /// table of `table_rows` rows whose column chunks take `chunk_bytes`.
    #[cfg(test)]
    pub(crate) fn of_parquet_pieces(
        pieces: &[RecordBatch],
        table_rows: u64,
        chunk_bytes: Vec<u64>,
    ) -> Sample {
        Sample::Parquet(ParquetSample::new(pieces, table_rows, chunk_bytes).expect("a sample"))
    }

    /// The sample made of `pieces`: byte ranges of the table's objects, each with the
    /// offset it starts at. A piece that does not start an object starts at its first whole
    /// line; every piece ends at its last line end.
    pub(crate) fn from_pieces(pieces: impl IntoIterator<Item = (u64, Bytes)>) -> Sample {
        let (mut text, mut piece_ends) = (Vec::new(), Vec::new());
        for (offset, piece) in pieces {
            let start = match offset {
                0 => 0,
                _ => match memchr::memchr(b'\n', &piece) {
                    Some(i) => i + 1,
                    None => continue,
                },
            };
            let Some(end) = memchr::memrchr(b'\n', &piece).map(|i| i + 1) else {
                continue;
            };
            if start < end {
                text.extend_from_slice(&piece[start..end]);
                piece_ends.push(text.len());
            }
        }
        Sample::Lines {
            text: text.into(),
            piece_ends,
        }
    }

    /// Runs of rows of the Parquet table `objects`, whose `footers` are read: at most
    /// [`PARQUET_PIECE_ROWS`] from the start of each of [`SAMPLE_PIECES`] equal spans of its
    /// rows, each within one row group (only the selected rows are decoded).
    pub(crate) async fn of_parquet(
        store: &Store,
        objects: &[(String, u64)],
        footers: &ParquetFooters,
    ) -> Result<Sample> {
        let table_rows = footers.rows();
        let footers = &footers.0;
        let columns = footers
            .first()
            .map_or(0, |f| f.parquet_schema().num_columns());
        let mut chunk_bytes = vec![0u64; columns];
        for footer in footers {
            for group in footer.metadata().row_groups() {
                for (c, chunk) in group.columns().iter().enumerate() {
                    if let Some(bytes) = chunk_bytes.get_mut(c) {
                        *bytes += u64::try_from(chunk.compressed_size()).unwrap_or(0);
                    }
                }
            }
        }
        let mut pieces = Vec::new();
        let mut first_row = 0;
        for ((key, _), footer) in objects.iter().zip(footers) {
            for (g, group) in footer.metadata().row_groups().iter().enumerate() {
                let group_rows = u64::try_from(group.num_rows()).unwrap_or(0);
                let runs = piece_runs(table_rows, first_row, group_rows);
                first_row += group_rows;
                if runs.is_empty() {
                    continue;
                }
                let get = |ranges: Vec<std::ops::Range<u64>>| {
                    futures::future::try_join_all(
                        ranges.into_iter().map(|r| get_range(store, key, r)),
                    )
                };
                let selection = RowSelection::from_consecutive_ranges(
                    runs.iter().map(|r| r.start as usize..r.end as usize),
                    group_rows as usize,
                );
                let schema = Arc::clone(footer.schema());
                let batches = decode(
                    footer.clone(),
                    ProjectionMask::all(),
                    vec![g],
                    Some(selection),
                    get,
                )
                .await?;
                let rows = concat_batches(&schema, &batches).map_err(DataFusionError::from)?;
                let mut at = 0;
                for run in runs {
                    let n = (run.end - run.start) as usize;
                    if at + n <= rows.num_rows() {
                        pieces.push(rows.slice(at, n));
                    }
                    at += n;
                }
            }
        }
        Ok(Sample::Parquet(ParquetSample::new(
            &pieces,
            table_rows,
            chunk_bytes,
        )?))
    }

    /// What a scan reading the table columns `read` moves when fetched (`table_bytes` for
    /// text, read whole), and what its statement `sql` answers when pushed down, scaled up
    /// from the sample (over text as CSV; over Parquet as `results` ask); `None` when the
    /// engine does not run `sql` over the sample.
    pub(crate) fn predict(
        &self,
        sql: &str,
        results: Results,
        read: &[usize],
        table_bytes: u64,
    ) -> Option<Prediction> {
        let answer_bytes = match self {
            Sample::Lines { text, .. } => lines_answer_share(text, sql)? * table_bytes as f64,
            Sample::Parquet(sample) => sample.answer_bytes(sql, results)?,
        };
        Some(Prediction {
            fetch_bytes: self.fetch_bytes(read, table_bytes),
            answer_bytes,
        })
    }

    /// The rows of a table of `table_rows` that pass `where_clause` (the store's SQL),
    /// scaled up from the sample's pieces'. The piece that keeps the most rows is left out: a
    /// filter whose rows all come from one piece, such as a year of `date_dim` (sorted by
    /// date; a text piece holds about a hundred days at SF 1), says nothing of the rest of
    /// the table, and scaling that piece up would predict an eighth of it.
    ///
    /// `None` when the engine does not run the count, or when no rows are left to scale.
    pub(crate) fn kept_rows(&self, where_clause: &str, table_rows: usize) -> Option<f64> {
        let sql = format!("SELECT COUNT(*) FROM S3Object s WHERE {where_clause}");
        let mut pieces = Vec::new();
        match self {
            Sample::Lines { text, piece_ends } => {
                let mut start = 0;
                for &end in piece_ends {
                    let piece = &text[start..end];
                    let lines = memchr::memchr_iter(b'\n', piece).count();
                    pieces.push((count(piece, &sql, dsdgen())?, lines));
                    start = end;
                }
            }
            Sample::Parquet(sample) => {
                for (file, rows) in &sample.pieces {
                    pieces.push((count(file, &sql, InputFormat::Parquet)?, *rows));
                }
            }
        }
        let densest = (0..pieces.len()).max_by_key(|&i| pieces[i].0)?;
        pieces.swap_remove(densest);
        let kept: u64 = pieces.iter().map(|(kept, _)| kept).sum();
        let sampled: usize = pieces.iter().map(|(_, rows)| rows).sum();
        (sampled > 0).then(|| kept as f64 / sampled as f64 * table_rows as f64)
    }

    /// Whether a sampled row passes `where_clause` (the store's SQL): then the table has
    /// such a row. False when none does or the engine does not run the count.
    pub(crate) fn keeps_any(&self, where_clause: &str) -> bool {
        let sql = format!("SELECT COUNT(*) FROM S3Object s WHERE {where_clause}");
        let kept = match self {
            Sample::Lines { text, .. } => count(text, &sql, dsdgen()),
            Sample::Parquet(sample) => count(&sample.file, &sql, InputFormat::Parquet),
        };
        kept.is_some_and(|kept| kept > 0)
    }

    /// Whether, along the sample's rows, the table column `key` increases and `column` never
    /// decreases: then a range of `column`'s values is held by a range of `key`'s, in a
    /// table that keeps the order the sample shows (`date_dim` holds its dates in key
    /// order, so a year, a month or a span of dates is a span of its keys). Known over
    /// Parquet only; false over text.
    pub(crate) fn grows_with(&self, key: usize, column: usize) -> bool {
        let Sample::Parquet(sample) = self else {
            return false;
        };
        let run = |c: usize| sample.runs.get(c).copied().unwrap_or(Run::Unordered);
        run(key) == Run::Increasing && run(column) != Run::Unordered
    }

    /// Whether, along the sample's rows, the table column `key` increases and the values of
    /// `columns` never decrease taken together, compared column by column in that order
    /// (the first that differs decides), none NULL: then rows whose first columns equal
    /// values and whose last lies in a range hold a range of `key`'s values (a quarter of
    /// `date_dim`'s years, `d_year` then `d_qoy`). Known over Parquet only; false over text.
    pub(crate) fn grows_in_order_with(&self, key: usize, columns: &[usize]) -> bool {
        let Sample::Parquet(sample) = self else {
            return false;
        };
        // Taken together, the columns can only grow if the first does on its own: the
        // sample's runs say so without decoding it again (most orders tried fail here).
        let first_grows = columns
            .first()
            .and_then(|&c| sample.runs.get(c))
            .is_some_and(|&run| run != Run::Unordered);
        sample.runs.get(key) == Some(&Run::Increasing)
            && first_grows
            && sample.in_order(columns).unwrap_or(false)
    }

    /// What a scan reading the table columns `read` moves when fetched: the whole table's
    /// `table_bytes` when it is text, the columns' chunks when it is Parquet.
    pub(crate) fn fetch_bytes(&self, read: &[usize], table_bytes: u64) -> u64 {
        match self {
            Sample::Lines { .. } => table_bytes,
            Sample::Parquet(sample) => read.iter().filter_map(|&c| sample.chunk_bytes.get(c)).sum(),
        }
    }
}

impl ParquetSample {
    /// The sample of the rows of `pieces` (of one schema), of a table of `table_rows` whose
    /// columns' chunks take `chunk_bytes`.
    fn new(
        pieces: &[RecordBatch],
        table_rows: u64,
        chunk_bytes: Vec<u64>,
    ) -> Result<ParquetSample> {
        let Some(first) = pieces.first() else {
            return Ok(ParquetSample {
                file: Bytes::new(),
                rows: 0,
                pieces: Vec::new(),
                table_rows,
                chunk_bytes,
                runs: Vec::new(),
            });
        };
        let all = concat_batches(&first.schema(), pieces).map_err(DataFusionError::from)?;
        Ok(ParquetSample {
            file: parquet_file(&all)?,
            rows: all.num_rows(),
            pieces: pieces
                .iter()
                .map(|p| Ok((parquet_file(p)?, p.num_rows())))
                .collect::<Result<_>>()?,
            table_rows,
            chunk_bytes,
            runs: all.columns().iter().map(|c| Run::of(c.as_ref())).collect(),
        })
    }

    /// Whether the sampled rows' values of `columns`, taken together in that order, never
    /// decrease, none NULL; `None` when they cannot be read or compared.
    fn in_order(&self, columns: &[usize]) -> Option<bool> {
        let builder = ParquetRecordBatchReaderBuilder::try_new(self.file.clone()).ok()?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
        let batches = builder
            .with_projection(mask)
            .build()
            .ok()?
            .collect::<std::result::Result<Vec<_>, _>>()
            .ok()?;
        let schema = batches.first()?.schema();
        let read = concat_batches(&schema, &batches).ok()?;
        // The reader gives the columns in the file's order; the tuple takes them in
        // `columns`'.
        let mut in_file = columns.to_vec();
        in_file.sort_unstable();
        in_file.dedup();
        let arrays = columns
            .iter()
            .map(|c| Some(Arc::clone(read.column(in_file.binary_search(c).ok()?))))
            .collect::<Option<Vec<_>>>()?;
        if arrays.iter().any(|a| a.null_count() > 0) {
            return Some(false);
        }
        let fields = arrays
            .iter()
            .map(|a| SortField::new(a.data_type().clone()))
            .collect();
        let rows = RowConverter::new(fields)
            .ok()?
            .convert_columns(&arrays)
            .ok()?;
        Some((1..rows.num_rows()).all(|i| rows.row(i - 1) <= rows.row(i)))
    }

    /// The bytes `sql` answers, as `results` ask, over the whole table, from its answer
    /// over the sample.
    fn answer_bytes(&self, sql: &str, results: Results) -> Option<f64> {
        if self.rows == 0 {
            return None;
        }
        let output = match results {
            Results::Csv => OutputSerialization::default(),
            Results::Arrow => OutputSerialization::Arrow(ArrowOptions { lz4: false }),
            Results::ArrowLz4 => OutputSerialization::Arrow(ArrowOptions { lz4: true }),
        };
        let returned = run(&self.file, sql, InputFormat::Parquet, output, &mut Discard)?;
        Some(returned as f64 / self.rows as f64 * self.table_rows as f64)
    }
}

/// `batch` as a Parquet file.
fn parquet_file(batch: &RecordBatch) -> Result<Bytes> {
    let mut file = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut file, batch.schema(), None)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    writer
        .write(batch)
        .and_then(|_| writer.close().map(drop))
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(file.into())
}

/// The rows of the pieces a Parquet sample takes from the row group of `group_rows` rows
/// that starts at row `first_row` of a table of `table_rows`, relative to the group's
/// start: piece `i` starts at row `i * table_rows / SAMPLE_PIECES` and holds at most
/// [`PARQUET_PIECE_ROWS`], no row of the next piece and none past its row group.
fn piece_runs(table_rows: u64, first_row: u64, group_rows: u64) -> Vec<std::ops::Range<u64>> {
    let start = |i: u64| i * table_rows / SAMPLE_PIECES;
    let group_end = first_row + group_rows;
    (0..SAMPLE_PIECES)
        .filter(|&i| (first_row..group_end).contains(&start(i)))
        .filter_map(|i| {
            let next = if i + 1 < SAMPLE_PIECES {
                start(i + 1)
            } else {
                table_rows
            };
            let end = (start(i) + PARQUET_PIECE_ROWS).min(next).min(group_end);
            (start(i) < end).then(|| start(i) - first_row..end - first_row)
        })
        .collect()
}

/// Every part's footer of a Parquet table, read before any query is timed: what the table's
/// row count is taken from (in every mode, so that all plan alike) and auto mode's sample.
pub(crate) struct ParquetFooters(Vec<ArrowReaderMetadata>);

impl ParquetFooters {
    /// The footers of the parts `objects` (one or two ranged GETs each).
    pub(crate) async fn read(store: &Store, objects: &[(String, u64)]) -> Result<ParquetFooters> {
        let mut footers = Vec::with_capacity(objects.len());
        for (key, size) in objects {
            footers.push(read_metadata(key, *size, |range| get_range(store, key, range)).await?);
        }
        Ok(ParquetFooters(footers))
    }

    /// The table's rows, over all its parts.
    pub(crate) fn rows(&self) -> u64 {
        self.0.iter().map(|f| rows(f.metadata())).sum()
    }
}

/// Bytes `range` of object `key`.
async fn get_range(
    store: &Store,
    key: &str,
    range: std::ops::Range<u64>,
) -> std::result::Result<Bytes, DataFusionError> {
    let request = Request::Get {
        key: key.to_string(),
        start: range.start,
        end: range.end,
    };
    let answer = store
        .send(&request, "", Format::Parquet, Results::Csv)
        .await;
    answer
        .map(|a| a.body.joined())
        .map_err(|e| DataFusionError::External(Box::new(e)))
}

fn rows(metadata: &ParquetMetaData) -> u64 {
    u64::try_from(metadata.file_metadata().num_rows()).unwrap_or(0)
}

/// The share of `text` that `sql`'s answer (CSV, as a scan of text asks for it) is.
fn lines_answer_share(text: &[u8], sql: &str) -> Option<f64> {
    if text.is_empty() {
        return None;
    }
    let returned = run(
        text,
        sql,
        dsdgen(),
        OutputSerialization::default(),
        &mut Discard,
    )?;
    Some(returned as f64 / text.len() as f64)
}

/// dsdgen's text as the engine reads it.
fn dsdgen() -> InputFormat {
    InputFormat::Csv(CsvInput {
        field_delimiter: char::from(FIELD_DELIMITER).to_string(),
        comments: NO_COMMENTS.to_string(),
        ..Default::default()
    })
}

/// The number a `SELECT COUNT(*)` statement `sql` answers over `object`; `None` when the
/// engine refuses or fails it.
fn count(object: &[u8], sql: &str, format: InputFormat) -> Option<u64> {
    let mut answer = Vec::new();
    run(
        object,
        sql,
        format,
        OutputSerialization::default(),
        &mut answer,
    )?;
    std::str::from_utf8(&answer).ok()?.trim().parse().ok()
}

/// The bytes `sql` returns over `object`, written to `sink`; `None` when the engine refuses
/// or fails it.
fn run(
    object: &[u8],
    sql: &str,
    format: InputFormat,
    output: OutputSerialization,
    sink: &mut (dyn Sink + Send),
) -> Option<u64> {
    let select = Select::new(SelectRequest {
        sql: sql.to_string(),
        input: InputSerialization {
            format,
            ..Default::default()
        },
        output,
        ..Default::default()
    })
    .ok()?;
    let stats = select.run(&SliceSource(object), sink).ok()?;
    Some(stats.bytes_returned)
}

/// An answer only counted (the engine's stats count it).
struct Discard;

impl Sink for Discard {
    fn write(&mut self, _data: &[u8]) -> sift_engine::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    #[test]
    fn pieces_keep_whole_lines() {
        let s = Sample::from_pieces([
            (0, Bytes::from_static(b"a|1|\nb|2|\nc|")),
            (40, Bytes::from_static(b"|9|\nd|4|\ne|5")),
            (90, Bytes::from_static(b"no line end")),
        ]);
        let Sample::Lines { text, piece_ends } = s else {
            panic!("{s:?}")
        };
        assert_eq!(&text[..], b"a|1|\nb|2|\nd|4|\n");
        assert_eq!(piece_ends, [10, 15]);
    }

    #[test]
    fn the_answer_share_of_lines_is_what_the_engine_returns() {
        let lines: String = (0..100).map(|i| format!("{i}|name{i}|\n")).collect();
        let s = Sample::from_pieces([(0, Bytes::from(lines.clone()))]);
        let table = 1_000_000;
        let all = s
            .predict(
                "SELECT s._1, s._2 FROM S3Object s",
                Results::Csv,
                &[],
                table,
            )
            .unwrap();
        assert_eq!(all.fetch_bytes, table);
        // The answer drops each line's trailing delimiter.
        let share = (lines.len() - 100) as f64 / lines.len() as f64;
        assert!(
            (all.answer_bytes - share * table as f64).abs() < 1e-3,
            "{all:?}"
        );
        let tenth = s
            .predict(
                "SELECT s._2 FROM S3Object s WHERE CAST(s._1 AS INT) < 10",
                Results::Csv,
                &[],
                table,
            )
            .unwrap();
        assert!(tenth.answer_bytes < 0.1 * all.answer_bytes, "{tenth:?}");
        assert_eq!(s.predict("SELECT nonsense", Results::Csv, &[], table), None);
    }

    #[test]
    fn kept_rows_scale_a_text_samples_count_to_the_table() {
        // Four pieces of 25 lines; every fourth line is `a`. A piece after the first starts
        // with the end of a line it does not hold.
        let piece = |p: usize| {
            let lines: String = (25 * p..25 * (p + 1))
                .map(|i| format!("{i}|{}|\n", if i % 4 == 0 { "a" } else { "b" }))
                .collect();
            let cut = if p == 0 { "" } else { "x|\n" };
            (p as u64 * 1000, Bytes::from(format!("{cut}{lines}")))
        };
        let text = Sample::from_pieces((0..4).map(piece));
        let near = |rows: Option<f64>, expected: f64| {
            assert!(
                rows.is_some_and(|r| (r - expected).abs() < 1e-6),
                "{rows:?}"
            );
        };
        // Pieces 2 to 4 keep 6 of their 25 lines each (piece 1 keeps 7, and is left out).
        near(text.kept_rows("s._2 = 'a'", 8_000), 18.0 / 75.0 * 8_000.0);
        near(text.kept_rows("TRUE", 8_000), 8_000.0);
        // The rows of one piece say nothing of the rest of the table.
        near(text.kept_rows("CAST(s._1 AS INT) < 25", 8_000), 0.0);
        assert_eq!(text.kept_rows("s._1 <> ", 8_000), None);
        let one_piece = Sample::from_pieces([(0, Bytes::from_static(b"1|a|\n"))]);
        assert_eq!(one_piece.kept_rows("TRUE", 8_000), None);
    }

    #[test]
    fn kept_rows_scale_a_parquet_samples_count_to_the_table() {
        // Four pieces of 250 keys, 1000 apart, as from a table sorted by key.
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int32, true)]));
        let pieces: Vec<RecordBatch> = (0..4)
            .map(|p| {
                let keys = Int32Array::from_iter_values(p * 1000..p * 1000 + 250);
                RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(keys)]).unwrap()
            })
            .collect();
        let sample = Sample::Parquet(ParquetSample::new(&pieces, 4_000, vec![300]).unwrap());
        let kept = |clause| sample.kept_rows(clause, 4_000);
        assert_eq!(kept("TRUE"), Some(4_000.0));
        // Every piece keeps a fifth: 50 of each 250.
        assert_eq!(kept("s.k % 5 = 0"), Some(800.0));
        // The keys of one piece say nothing of the rest of the table.
        assert_eq!(kept("s.k < 1000"), Some(0.0));
        assert_eq!(kept("s.k <> "), None);
        // Whether a sampled row passes, the densest piece counted too.
        assert!(sample.keeps_any("s.k < 1000"));
        assert!(!sample.keeps_any("s.k BETWEEN 300 AND 900"));
        assert!(!sample.keeps_any("s.k <> "));
    }

    #[test]
    fn parquet_pieces_spread_over_the_rows_and_stay_in_their_row_groups() {
        // 80 Ki rows in row groups of 32 Ki: pieces start every 10 Ki rows.
        let runs = |first, rows| piece_runs(80 << 10, first, rows);
        let k = |n: u64| n << 10;
        assert_eq!(
            runs(0, k(32)),
            [0..k(4), k(10)..k(14), k(20)..k(24), k(30)..k(32)]
        );
        assert_eq!(
            runs(k(32), k(32)),
            [k(8)..k(12), k(18)..k(22), k(28)..k(32)]
        );
        assert_eq!(runs(k(64), k(16)), vec![k(6)..k(10)]);
        // A table of 10 rows: each piece's rows end where the next piece's begin.
        assert_eq!(
            runs_of(10),
            [0..1, 1..2, 2..3, 3..5, 5..6, 6..7, 7..8, 8..10]
        );
        // Fewer rows than pieces: no piece is empty.
        assert_eq!(runs_of(3), [0..1, 1..2, 2..3]);
        assert!(runs_of(0).is_empty());
    }

    /// The pieces of a table of `rows` rows in one row group.
    fn runs_of(rows: u64) -> Vec<std::ops::Range<u64>> {
        piece_runs(rows, 0, rows)
    }

    #[test]
    fn columns_grow_with_a_key_the_sample_keeps_in_order() {
        // A key, a year of it, a day of the week, and a year with a NULL, over two pieces
        // in the table's order.
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("year", DataType::Int32, true),
            Field::new("dow", DataType::Int32, true),
            Field::new("nullable", DataType::Utf8, true),
        ]));
        let piece = |keys: std::ops::Range<i32>, nulls: bool| {
            let year = Int32Array::from_iter_values(keys.clone().map(|k| 2000 + k / 7));
            let dow = Int32Array::from_iter_values(keys.clone().map(|k| k % 7));
            let nullable: StringArray = keys
                .clone()
                .map(|k| (!nulls || k % 5 != 0).then(|| format!("{:04}", k)))
                .collect();
            let keys = Int32Array::from_iter_values(keys);
            let columns: Vec<ArrayRef> = vec![
                Arc::new(keys),
                Arc::new(year),
                Arc::new(dow),
                Arc::new(nullable),
            ];
            RecordBatch::try_new(Arc::clone(&schema), columns).unwrap()
        };
        let sample = |pieces: &[RecordBatch]| {
            Sample::Parquet(ParquetSample::new(pieces, 100_000, vec![0; 4]).unwrap())
        };
        let ordered = sample(&[piece(0..50, false), piece(900..950, true)]);
        assert!(ordered.grows_with(0, 1), "the year grows with the key");
        assert!(ordered.grows_with(0, 0), "the key with itself");
        assert!(!ordered.grows_with(0, 2), "the day of the week does not");
        assert!(
            !ordered.grows_with(0, 3),
            "a column with a NULL says nothing"
        );
        assert!(!ordered.grows_with(1, 0), "the year repeats: it is no key");
        // Pieces out of the key's order, a single row, and text say nothing.
        let swapped = sample(&[piece(900..950, false), piece(0..50, false)]);
        assert!(!swapped.grows_with(0, 1));
        assert!(!sample(&[piece(3..4, false)]).grows_with(0, 1));
        assert!(
            !Sample::from_pieces([(0, Bytes::from_static(b"1|2000|\n2|2000|\n"))]).grows_with(0, 1)
        );
        // The year, then the day of the week, grow together (a week of a year is a span
        // of days); the day, then the year, do not; a column with a NULL says nothing.
        assert!(ordered.grows_in_order_with(0, &[1, 2]));
        assert!(ordered.grows_in_order_with(0, &[1]));
        assert!(!ordered.grows_in_order_with(0, &[2, 1]));
        assert!(!ordered.grows_in_order_with(0, &[2]));
        assert!(!ordered.grows_in_order_with(0, &[1, 3]));
        assert!(
            !ordered.grows_in_order_with(1, &[1, 2]),
            "the year is no key"
        );
        assert!(!swapped.grows_in_order_with(0, &[1, 2]));
        assert!(!ordered.grows_in_order_with(0, &[]));
    }

    #[test]
    fn a_parquet_prediction_scales_the_sample_to_the_table() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let keys = Int32Array::from_iter_values(0..1000);
        let names = StringArray::from_iter_values((0..1000).map(|i| format!("name{i}")));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(keys), Arc::new(names)]).unwrap();
        let sample =
            Sample::Parquet(ParquetSample::new(&[batch], 100_000, vec![300, 5000]).unwrap());
        let predict = |sql: &str, results, read: &[usize]| sample.predict(sql, results, read, 0);
        // Fetch reads the chunks of the columns decoded, as the footers give them.
        let all = predict("SELECT s.k FROM S3Object s", Results::Arrow, &[0]).unwrap();
        assert_eq!(all.fetch_bytes, 300);
        let both = predict(
            "SELECT s.k, s.name FROM S3Object s",
            Results::Arrow,
            &[0, 1],
        )
        .unwrap();
        assert_eq!(both.fetch_bytes, 5300);
        assert!(both.answer_bytes > all.answer_bytes, "{both:?} {all:?}");
        // The keys as Int64, for a hundred times the sample's rows.
        assert!(all.answer_bytes > 100_000.0 * 8.0, "{all:?}");
        // Compressed as the store would send them over a paced link, they are smaller.
        let lz4 = predict("SELECT s.k FROM S3Object s", Results::ArrowLz4, &[0]).unwrap();
        assert!(lz4.answer_bytes < all.answer_bytes, "{lz4:?} {all:?}");
        let tenth = predict(
            "SELECT s.k FROM S3Object s WHERE s.k < 100",
            Results::Arrow,
            &[0],
        )
        .unwrap();
        assert!(
            tenth.answer_bytes < 0.2 * all.answer_bytes,
            "{tenth:?} {all:?}"
        );
        assert_eq!(
            predict("SELECT s.nothing FROM S3Object s", Results::Arrow, &[0]),
            None
        );
    }
}
