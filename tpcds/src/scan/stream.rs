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
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::csv::reader::Decoder;
use datafusion::arrow::csv::ReaderBuilder;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::{DataFusionError, Result as DfResult};
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use regex::Regex;
use sift_tpcds_data::FIELD_DELIMITER;

use crate::layout::Format;
use crate::scan::filter::{ClientFilter, Statement};
use crate::scan::request::{run_request, Request, Results};
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
            .map_ok(|(body, _)| body)
            .boxed()
    }

    /// The bodies, in request order, each with whether it is an Arrow IPC stream.
    fn answers(
        self,
        sql: Arc<str>,
        format: Format,
        results: Results,
    ) -> BoxStream<'static, DfResult<(Bytes, bool)>> {
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
/// columns (the first of those decoded).
#[derive(Clone)]
pub(super) struct Keep {
    pub(super) filter: Option<ClientFilter>,
    pub(super) output: SchemaRef,
}

impl Keep {
    pub(super) fn apply(&self, batch: RecordBatch) -> DfResult<RecordBatch> {
        match &self.filter {
            Some(filter) => filter.apply(&batch, &self.output),
            None => Ok(batch),
        }
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
            match sql.await {
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
            return Ok(decode(answers.map_ok(|(body, _)| body).boxed(), decoder));
        }
        // Each answer on its own: an Arrow stream, decoded whole off the async threads, or
        // the CSV of a store that ignored the request for one, through the CSV decoder.
        Ok(answers
            .map_ok(move |(body, arrow)| match arrow {
                true => {
                    let output = Arc::clone(&output);
                    stream::once(async move {
                        tokio::task::spawn_blocking(move || arrow_batches(&body, &output))
                            .await
                            .map_err(|e| DataFusionError::External(Box::new(e)))?
                    })
                    .map_ok(|batches| stream::iter(batches.into_iter().map(Ok)))
                    .try_flatten()
                    .boxed()
                }
                false => match answer_decoder(&output, empty_is_null) {
                    Ok(decoder) => decode(stream::once(async move { Ok(body) }).boxed(), decoder),
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

/// One whole Arrow answer as batches of the scan's `output` columns. The store's columns
/// are the types the statement cast to (`ScanSource::typed_list`): Int64 for the table's
/// integers, timestamps for its dates; each is cast to the table's type.
fn arrow_batches(body: &[u8], output: &SchemaRef) -> DfResult<Vec<RecordBatch>> {
    let reader = StreamReader::try_new(body, None)?;
    let mut batches = Vec::new();
    for batch in reader {
        let batch = batch?;
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
