//! The HTTP side of a scan: its requests, each run as a task under the client-wide limit,
//! and the two S3 calls, checked to be complete.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aws_sdk_s3::types::{
    CompressionType, CsvInput, CsvOutput, ExpressionType, FileHeaderInfo, InputSerialization,
    OutputSerialization, ParquetInput, ScanRange, SelectObjectContentEventStream,
};
use bytes::{Bytes, BytesMut};
use datafusion::common::{DataFusionError, Result as DfResult};
use sift_tpcds_data::{FIELD_DELIMITER, NO_COMMENTS};

use crate::error::Error;
use crate::layout::Format;
use crate::scan::source::ScanMetrics;
use crate::scan::Store;

/// One HTTP request of a scan.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) enum Request {
    /// A ranged GET of `key`, `start..end`.
    Get { key: String, start: u64, end: u64 },
    /// An S3 Select of the records of `key` that start in `range`, or of the whole object
    /// (no ScanRange sent) when `range` is `None`.
    Select {
        key: String,
        range: Option<(u64, u64)>,
    },
}

impl Request {
    /// The object bytes the request names: a GET's range, a select's ScanRange, or 0 for a
    /// select of a whole object (whose size the request does not carry).
    pub(super) fn bytes(&self) -> u64 {
        match self {
            Request::Get { start, end, .. } => end - start,
            Request::Select {
                range: Some((start, end)),
                ..
            } => end - start,
            Request::Select { range: None, .. } => 0,
        }
    }
}

/// Runs one request as its own task, once a client-wide permit is free. A task, so that a
/// request holding a permit finishes (and frees it) even when its scan is not being polled —
/// a hash join reads its build side before it polls the probe side, and the build side may
/// need that permit.
///
/// The task lives no longer than the scan that wants its body: when a query is done before
/// its scans are (a LIMIT met, an empty join side), dropping the scan aborts its requests.
/// Left running, they went on reading into the next query — on its clock, on its link, and
/// in its byte counts (q44 at SF 1 handed 17.5 MB of its GETs to q45).
pub(super) async fn run_request(
    store: Arc<Store>,
    request: Request,
    sql: Arc<str>,
    format: Format,
    metrics: ScanMetrics,
) -> DfResult<Bytes> {
    let mut task = AbortOnDrop(tokio::spawn(async move {
        let _permit = Arc::clone(&store.permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Invalid("the request limiter was closed".into()))?;
        let (body, scanned) = send(&store, request, &sql, format).await?;
        metrics.request_done(body.len() as u64, scanned);
        Ok::<_, Error>(body)
    }));
    match (&mut task.0).await {
        Ok(result) => result.map_err(DataFusionError::from),
        Err(e) => Err(DataFusionError::External(Box::new(e))),
    }
}

/// A spawned task that is aborted when its handle is dropped before the task is done.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends `request`; returns its body and the object bytes the store read for it.
async fn send(
    store: &Store,
    request: Request,
    sql: &str,
    format: Format,
) -> Result<(Bytes, u64), Error> {
    match request {
        Request::Get { key, start, end } => {
            let body = get(store, &key, start, end).await?;
            let scanned = body.len() as u64;
            Ok((body, scanned))
        }
        Request::Select { key, range } => select(store, &key, range, sql, format).await,
    }
}

/// A ranged GET of `start..end` of `key`, checked to be complete and counted as scanned.
pub(crate) async fn get(store: &Store, key: &str, start: u64, end: u64) -> Result<Bytes, Error> {
    let response = store
        .client
        .get_object()
        .bucket(&store.bucket)
        .key(key)
        .range(format!("bytes={}-{}", start, end - 1))
        .send()
        .await
        .map_err(|e| Error::s3("GetObject", key, e))?;
    let body = response
        .body
        .collect()
        .await
        .map_err(|e| Error::body("GetObject", key, e))?
        .into_bytes();
    if body.len() as u64 != end - start {
        return Err(Error::Invalid(format!(
            "GetObject {key} bytes={start}-{}: got {} bytes",
            end - 1,
            body.len()
        )));
    }
    store
        .scanned
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    Ok(body)
}

/// The records of `key` (those that start in `range`, or all) that `sql` selects, as the CSV
/// text the store sent, with the bytes the store scanned for them (also counted in the
/// store). Only a stream that ended with the End event is a result: one cut
/// short, by the server or the connection, is an error naming the object and the range.
pub(crate) async fn select(
    store: &Store,
    key: &str,
    range: Option<(u64, u64)>,
    sql: &str,
    format: Format,
) -> Result<(Bytes, u64), Error> {
    let target = match range {
        Some((start, end)) => format!("{key} (ScanRange {start}-{})", end - 1),
        None => key.to_string(),
    };
    // Options equal to AWS's defaults (a newline between records, in and out) are left out,
    // not spelt: the SDK writes a newline in XML as `&#xA;`, and Ceph RGW 18.2 reads its
    // serialization options as the raw text between the tags, decoding only `&#10;`. It took
    // the `&` of `&#xA;` for the record delimiter and answered every select with no rows.
    // Left out, the option means the same to every store.
    let input = match format {
        Format::Csv => InputSerialization::builder().csv(
            CsvInput::builder()
                .file_header_info(FileHeaderInfo::None)
                .field_delimiter(char::from(FIELD_DELIMITER))
                // As Trino: a comment marker that never occurs in data.
                .comments(NO_COMMENTS)
                .build(),
        ),
        Format::Parquet => InputSerialization::builder().parquet(ParquetInput::builder().build()),
    }
    .compression_type(CompressionType::None)
    .build();
    let output = OutputSerialization::builder()
        .csv(
            CsvOutput::builder()
                .field_delimiter(char::from(FIELD_DELIMITER))
                .build(),
        )
        .build();
    // AWS's End is inclusive: a record that starts at byte `end` belongs to the next split,
    // so this one ends a byte before it. (Trino 405 sent `end` itself, and a record starting
    // exactly on a boundary was read by both splits: at SF 10 one catalog_sales row was, and
    // q77 summed it twice.)
    let scan_range = range.map(|(start, end)| {
        ScanRange::builder()
            .start(start as i64)
            .end(end as i64 - 1)
            .build()
    });
    let mut response = store
        .client
        .select_object_content()
        .bucket(&store.bucket)
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(input)
        .output_serialization(output)
        .set_scan_range(scan_range)
        .send()
        .await
        .map_err(|e| Error::s3("SelectObjectContent", &target, e))?;
    let mut records = BytesMut::new();
    let mut scanned = 0;
    let mut ended = false;
    while let Some(event) = response
        .payload
        .recv()
        .await
        .map_err(|e| Error::s3("SelectObjectContent", &target, e))?
    {
        match event {
            SelectObjectContentEventStream::Records(r) => {
                if let Some(payload) = r.payload {
                    records.extend_from_slice(payload.as_ref());
                }
            }
            SelectObjectContentEventStream::Stats(s) => {
                let bytes = s.details.and_then(|d| d.bytes_scanned).unwrap_or(0).max(0) as u64;
                scanned += bytes;
                store.scanned.fetch_add(bytes, Ordering::Relaxed);
            }
            SelectObjectContentEventStream::End(_) => ended = true,
            _ => {}
        }
    }
    if !ended {
        // Without the End event the result may be cut short; never use it as if complete.
        return Err(Error::S3 {
            operation: "SelectObjectContent",
            target,
            message: "the event stream ended without an End event: the result may be cut short"
                .into(),
        });
    }
    Ok((records.freeze(), scanned))
}
