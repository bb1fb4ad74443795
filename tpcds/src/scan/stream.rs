//! One stream type per request kind, each turning a partition's response bodies into the
//! scan's record batches:
//!
//! - [`FetchedCsv`]: GET chunks of dsdgen text through Arrow's push-based CSV decoder,
//!   reading the projection's columns and the filters', then filtered on the client;
//! - `fetched_parquet::FetchedParquet` (its own module): Parquet parts' footers and needed column
//!   chunks, decoded, then filtered;
//! - [`Selected`]: S3 Select answers (CSV text of the projection's columns, rows already
//!   filtered by the store), once the statement is known — in dynamic mode, only after the
//!   joins' build sides are done.
//!
//! Each partition keeps a few requests in flight and consumes their bodies in order.

use std::sync::Arc;

use bytes::{Buf, Bytes};
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::compute::{cast_with_options, filter_record_batch, CastOptions};
use datafusion::arrow::csv::reader::Decoder;
use datafusion::arrow::csv::ReaderBuilder;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamDecoder;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::cast::as_boolean_array;
use datafusion::common::{DataFusionError, Result as DfResult};
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use futures::Stream;
use regex::Regex;
use sift_tpcds_data::FIELD_DELIMITER;

use crate::layout::Format;
use crate::scan::filter::{ClientFilter, RunTimeFilter, Statement};
use crate::scan::request::{run_request, Body, Request, Results};
use crate::scan::source::ScanMetrics;
use crate::scan::{Store, BATCH_ROWS};

/// A partition's requests and how to send them.
pub(super) struct Requests {
    pub(super) list: Vec<Request>,
    pub(super) store: Arc<Store>,
    /// Requests of this partition in flight at once.
    pub(super) in_flight: usize,
    pub(super) metrics: ScanMetrics,
}

impl Requests {
    /// The GET bodies, in request order.
    fn fetched(self, format: Format) -> BoxStream<'static, DfResult<Bytes>> {
        self.answers(Arc::from(""), format, Results::Csv)
            .map_ok(|(body, _)| body.joined())
            .boxed()
    }

    /// The bodies, in request order, each with whether it is an Arrow IPC stream.
    fn answers(
        self,
        sql: Arc<str>,
        format: Format,
        results: Results,
    ) -> BoxStream<'static, DfResult<(Body, bool)>> {
        let Requests {
            list,
            store,
            in_flight,
            metrics,
        } = self;
        stream::iter(list)
            .map(move |request| {
                run_request(
                    Arc::clone(&store),
                    request,
                    Arc::clone(&sql),
                    format,
                    results,
                    metrics.clone(),
                )
            })
            .buffered(in_flight)
            .boxed()
    }
}

/// The rows a fetched scan keeps: those that pass its client filter, with the scan's output
/// columns (the first of those decoded), and of those the rows its joins' run-time filters
/// let through, where it has them.
#[derive(Clone)]
pub(super) struct Keep {
    pub(super) filter: Option<ClientFilter>,
    pub(super) output: SchemaRef,
    /// The hash joins' run-time filters over the scan's output columns: auto mode's fetched
    /// Parquet scans, which choose once these are complete. They only prune (each join
    /// still checks its rows), as in DataFusion's own Parquet scan; rows they drop here
    /// are rows no join above has to probe. Only their cheap parts are tested
    /// ([`RunTimeFilter`]).
    pub(super) run_time: Vec<RunTimeFilter>,
}

impl Keep {
    pub(super) fn apply(&self, batch: RecordBatch) -> DfResult<RecordBatch> {
        let mut batch = match &self.filter {
            Some(filter) => filter.apply(&batch, &self.output)?,
            None => batch,
        };
        for filter in &self.run_time {
            if batch.num_rows() == 0 {
                break;
            }
            let mask = filter
                .current()?
                .evaluate(&batch)?
                .into_array(batch.num_rows())?;
            batch = filter_record_batch(&batch, as_boolean_array(&mask)?)?;
        }
        Ok(batch)
    }
}

/// Fetched dsdgen text: ranged chunks of plain parts, or gzip parts whole (each inflated
/// off the async threads before decoding).
pub(super) struct FetchedCsv {
    pub(super) requests: Requests,
    /// [`Format::Csv`] or [`Format::CsvGzip`].
    pub(super) format: Format,
    /// The file's columns: the table's, and the empty field after the trailing `|`.
    pub(super) file_schema: SchemaRef,
    /// The table columns decoded.
    pub(super) read: Vec<usize>,
    pub(super) keep: Keep,
}

impl FetchedCsv {
    pub(super) fn stream(self) -> BoxStream<'static, DfResult<RecordBatch>> {
        let decoder = ReaderBuilder::new(self.file_schema)
            .with_delimiter(FIELD_DELIMITER)
            .with_header(false)
            .with_batch_size(BATCH_ROWS)
            .with_projection(self.read)
            .build_decoder();
        let keep = self.keep;
        let bodies = self.requests.fetched(self.format);
        let bodies = match self.format {
            Format::CsvGzip => bodies
                .and_then(|body| async move {
                    tokio::task::spawn_blocking(move || gunzip(&body))
                        .await
                        .map_err(|e| DataFusionError::External(Box::new(e)))?
                })
                .boxed(),
            _ => bodies,
        };
        decode(bodies, decoder)
            .map(move |batch| batch.and_then(|b| keep.apply(b)))
            .boxed()
    }
}

/// A whole gzip part's text (every member, as `gzip -d` reads concatenated streams).
fn gunzip(body: &[u8]) -> DfResult<Bytes> {
    use std::io::Read;
    let mut text = Vec::with_capacity(body.len().saturating_mul(4));
    flate2::read::MultiGzDecoder::new(body)
        .read_to_end(&mut text)
        .map_err(|e| DataFusionError::Execution(format!("a gzip part does not inflate: {e}")))?;
    Ok(Bytes::from(text))
}

/// S3 Select answers.
pub(super) struct Selected {
    pub(super) requests: Requests,
    /// The statement every request sends, once known (in dynamic mode, once the joins'
    /// filters are: `ScanFilters::statement`).
    pub(super) sql: BoxFuture<'static, DfResult<String>>,
    /// What the statement asks for.
    pub(super) statement: Statement,
    /// The scan's output columns.
    pub(super) output: SchemaRef,
}

impl Selected {
    pub(super) fn stream(self) -> DfResult<BoxStream<'static, DfResult<RecordBatch>>> {
        let Selected {
            requests,
            sql,
            statement,
            output,
        } = self;
        let (format, results) = (statement.format, statement.results);
        let empty_is_null = statement.behaviour.empty_is_null;
        let metrics = requests.metrics.clone();
        let answers = stream::once(async move {
            let started = std::time::Instant::now();
            let sql = sql.await;
            metrics.statement_wait.add_elapsed(started);
            match sql {
                Ok(sql) => {
                    metrics.sent(&sql);
                    requests.answers(Arc::from(sql), format, results)
                }
                Err(e) => stream::iter(vec![Err(e)]).boxed(),
            }
        })
        .flatten()
        .boxed();
        if results == Results::Csv {
            let decoder = answer_decoder(&output, empty_is_null)?;
            return Ok(decode(
                text_pieces(answers.map_ok(|(body, _)| body)),
                decoder,
            ));
        }
        // Each answer on its own: an Arrow stream, decoded whole off the async threads, or
        // the CSV of a store that ignored the request for one, through the CSV decoder.
        Ok(answers
            .map_ok(move |(body, arrow)| match arrow {
                true => {
                    let output = Arc::clone(&output);
                    stream::once(async move {
                        tokio::task::spawn_blocking(move || arrow_batches(body, &output))
                            .await
                            .map_err(|e| DataFusionError::External(Box::new(e)))?
                    })
                    .map_ok(|batches| stream::iter(batches.into_iter().map(Ok)))
                    .try_flatten()
                    .boxed()
                }
                false => match answer_decoder(&output, empty_is_null) {
                    Ok(decoder) => {
                        decode(text_pieces(stream::once(async move { Ok(body) })), decoder)
                    }
                    Err(e) => stream::once(async move { Err(e) }).boxed(),
                },
            })
            .try_flatten()
            .boxed())
    }
}

/// The decoder of CSV answers: the output columns, or one ignored field per line when no
/// column is asked for (the SELECT list is then a constant). `empty_is_null`: the store
/// writes NULL as `null` (see [`SelectBehaviour`](crate::probe::SelectBehaviour)).
fn answer_decoder(output: &SchemaRef, empty_is_null: bool) -> DfResult<Decoder> {
    let (schema, projection) = match output.fields().len() {
        0 => (
            Arc::new(Schema::new(vec![Field::new("_", DataType::Utf8, true)])),
            vec![],
        ),
        n => (Arc::clone(output), (0..n).collect()),
    };
    let builder = ReaderBuilder::new(schema)
        .with_delimiter(FIELD_DELIMITER)
        .with_header(false)
        .with_batch_size(BATCH_ROWS)
        .with_projection(projection);
    if empty_is_null {
        // The store writes NULL as `null` (and an empty field is NULL to it).
        let null = Regex::new("^(null)?$")
            .map_err(|e| DataFusionError::Internal(format!("the NULL pattern: {e}")))?;
        Ok(builder.with_null_regex(null).build_decoder())
    } else {
        Ok(builder.build_decoder())
    }
}

/// Casts that fail on a value they cannot carry, rather than making it NULL.
const EXACT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: datafusion::arrow::util::display::FormatOptions::new(),
};

/// The pieces of CSV answers, in order: the decoder takes a line cut between two pieces.
fn text_pieces(
    bodies: impl Stream<Item = DfResult<Body>> + Send + 'static,
) -> BoxStream<'static, DfResult<Bytes>> {
    bodies
        .map_ok(|body| stream::iter(body.into_pieces().into_iter().map(Ok)))
        .try_flatten()
        .boxed()
}

/// One whole Arrow answer as batches of the scan's `output` columns. The store's columns
/// are the types the statement cast to (`ScanSource::typed_list`): Int64 for the table's
/// integers, timestamps for its dates; each is cast to the table's type.
///
/// The answer is decoded from one buffer, so that the batches' columns are slices of it
/// rather than copies (the decoder copies only a column buffer not aligned for its type;
/// Sift's gateway pads each to 64 bytes).
fn arrow_batches(body: Body, output: &SchemaRef) -> DfResult<Vec<RecordBatch>> {
    let mut decoder = StreamDecoder::new();
    let mut bytes = Buffer::from(body.joined());
    let mut batches = Vec::new();
    while !bytes.is_empty() {
        let Some(batch) = decoder.decode(&mut bytes)? else {
            continue;
        };
        if batch.num_columns() != output.fields().len() {
            return Err(DataFusionError::Execution(format!(
                "an Arrow answer has {} columns, the scan {}",
                batch.num_columns(),
                output.fields().len()
            )));
        }
        let columns = batch
            .columns()
            .iter()
            .zip(output.fields())
            .map(|(column, field)| cast_with_options(column, field.data_type(), &EXACT))
            .collect::<Result<Vec<_>, _>>()?;
        batches.push(batch_of(output, columns, batch.num_rows())?);
    }
    decoder.finish()?;
    Ok(batches)
}

/// A batch of the scan's `output` columns with `rows` rows (which a batch of no columns
/// cannot tell by itself).
pub(super) fn batch_of(
    output: &SchemaRef,
    columns: Vec<ArrayRef>,
    rows: usize,
) -> DfResult<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(output),
        columns,
        &options,
    )?)
}

/// Feeds response bodies through the CSV decoder, yielding a batch whenever it is full.
fn decode(
    bodies: BoxStream<'static, DfResult<Bytes>>,
    decoder: Decoder,
) -> BoxStream<'static, DfResult<RecordBatch>> {
    struct State {
        bodies: BoxStream<'static, DfResult<Bytes>>,
        decoder: Decoder,
        buf: Bytes,
        finished: bool,
    }
    let state = State {
        bodies,
        decoder,
        buf: Bytes::new(),
        finished: false,
    };
    stream::try_unfold(state, |mut st| async move {
        loop {
            if st.finished {
                return Ok(None);
            }
            if !st.buf.is_empty() {
                let used = st.decoder.decode(&st.buf)?;
                if used == 0 && st.decoder.capacity() > 0 {
                    return Err(DataFusionError::Internal(
                        "CSV decoder made no progress".to_string(),
                    ));
                }
                st.buf.advance(used);
                if st.decoder.capacity() == 0 {
                    if let Some(batch) = st.decoder.flush()? {
                        return Ok(Some((batch, st)));
                    }
                }
                continue;
            }
            match st.bodies.try_next().await? {
                Some(body) => st.buf = body,
                None => {
                    // End of input: let the decoder finish a last line without a newline.
                    st.decoder.decode(&[])?;
                    st.finished = true;
                    if let Some(batch) = st.decoder.flush()? {
                        return Ok(Some((batch, st)));
                    }
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Date32Array, Decimal128Array, Int32Array, Int64Array};
    use datafusion::arrow::array::{StringArray, TimestampNanosecondArray};
    use datafusion::arrow::ipc::writer::StreamWriter;

    /// The columns a Sift gateway answers for `(k INT, price DECIMAL(7,2), name, day DATE)`
    /// with `rows` rows: Int64, Decimal128, Utf8 and timestamps, as `typed_field` casts.
    fn answer(rows: usize) -> (SchemaRef, RecordBatch) {
        let day_ns = 86_400_000_000_000i64;
        let store = Arc::new(Schema::new(vec![
            Field::new("_1", DataType::Int64, true),
            Field::new("_2", DataType::Decimal128(7, 2), true),
            Field::new("_3", DataType::Utf8, true),
            Field::new(
                "_4",
                DataType::Timestamp(
                    datafusion::arrow::datatypes::TimeUnit::Nanosecond,
                    Some("UTC".into()),
                ),
                true,
            ),
        ]));
        let n = rows as i64;
        let batch = RecordBatch::try_new(
            Arc::clone(&store),
            vec![
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| (i % 7 != 3).then_some(i)),
                )),
                Arc::new(
                    Decimal128Array::from_iter_values((0..n).map(|i| i128::from(i) * 101))
                        .with_precision_and_scale(7, 2)
                        .expect("decimal type"),
                ),
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("n{i}")),
                )),
                Arc::new(
                    TimestampNanosecondArray::from_iter_values((0..n).map(|i| i * day_ns))
                        .with_timezone("UTC"),
                ),
            ],
        )
        .expect("batch");
        let table = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("price", DataType::Decimal128(7, 2), true),
            Field::new("name", DataType::Utf8, true),
            Field::new("day", DataType::Date32, true),
        ]));
        (table, batch)
    }

    fn ipc(batches: &[RecordBatch]) -> Vec<u8> {
        let mut writer =
            StreamWriter::try_new(Vec::new(), &batches[0].schema()).expect("IPC writer");
        for b in batches {
            writer.write(b).expect("IPC batch");
        }
        writer.finish().expect("IPC end");
        writer.into_inner().expect("IPC bytes")
    }

    /// `bytes` cut every `step` bytes, as Records payloads cut an answer anywhere.
    fn pieces(bytes: &[u8], step: usize) -> Body {
        bytes.chunks(step).map(Bytes::copy_from_slice).collect()
    }

    #[test]
    fn an_arrow_answer_decodes_the_same_however_its_payloads_cut_it() {
        let (table, first) = answer(1000);
        let (_, second) = answer(10);
        let bytes = ipc(&[first, second]);
        for step in [1, 7, 64, 1000, bytes.len()] {
            let batches = arrow_batches(pieces(&bytes, step), &table).expect("decoded");
            assert_eq!(batches.len(), 2, "cut every {step} bytes");
            let b = &batches[0];
            assert_eq!(b.num_rows(), 1000);
            assert_eq!(b.schema(), table);
            let k = b
                .column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .expect("Int32");
            assert_eq!((k.value(999), k.is_null(3)), (999, true));
            let day = b
                .column(3)
                .as_any()
                .downcast_ref::<Date32Array>()
                .expect("Date32");
            assert_eq!(day.value(999), 999);
            assert_eq!(batches[1].num_rows(), 10);
        }
    }

    #[test]
    fn an_arrow_answer_cut_short_is_an_error() {
        let (table, batch) = answer(100);
        let bytes = ipc(&[batch]);
        // The last 20 bytes: the 8-byte end marker and the end of the batch's body, so the
        // decoder is left inside a message.
        let cut = &bytes[..bytes.len() - 20];
        assert!(arrow_batches(pieces(cut, 64), &table).is_err());
    }
}
