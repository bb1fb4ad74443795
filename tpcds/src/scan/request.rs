//! The HTTP side of a scan: its requests, each run as a task under the client-wide limit
//! and sent to its home endpoint or, when that one is busy or down, to the next
//! ([`Store::send`]), and the two S3 calls, checked to be complete.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_s3::error::BoxError;
use aws_sdk_s3::types::{
    CompressionType, CsvInput, CsvOutput, ExpressionType, FileHeaderInfo, InputSerialization,
    OutputSerialization, ParquetInput, ScanRange, SelectObjectContentEventStream,
};
use aws_sdk_s3::Client;
use bytes::{Bytes, BytesMut};
use datafusion::common::{DataFusionError, Result as DfResult};
use sift_tpcds_data::{FIELD_DELIMITER, NO_COMMENTS};

use crate::error::{Error, Retry};
use crate::layout::Format;
use crate::scan::source::ScanMetrics;
use crate::scan::Store;

/// One HTTP request of a scan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Request {
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
    results: Results,
    metrics: ScanMetrics,
) -> DfResult<(Body, bool)> {
    let mut task = AbortOnDrop(tokio::spawn(async move {
        let _permit = Arc::clone(&store.permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Invalid("the request limiter was closed".into()))?;
        let sent = std::time::Instant::now();
        let answer = store.send(&request, &sql, format, results).await?;
        metrics.request_time.add_elapsed(sent);
        metrics.request_done(&answer);
        Ok::<_, Error>((answer.body, answer.arrow))
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

/// Attempts per request, over all endpoints, before its query fails: with the pauses of
/// [`backoff`], about half a minute for a store that stays busy or down.
pub(crate) const MAX_ATTEMPTS: usize = 10;

/// How long an endpoint that failed a request is passed over by the next requests (unless
/// every endpoint is), so that a gateway that went down costs one failed attempt per this
/// period rather than one per request.
pub(super) const DOWN_FOR: Duration = Duration::from_secs(5);

/// The pause before attempt `attempt` (the first retry is attempt 1) when it goes to an
/// endpoint this request already tried: `first`, doubling, at most 10 s.
fn backoff(first: Duration, attempt: usize) -> Duration {
    let factor = 1u32 << attempt.saturating_sub(1).min(10);
    (first * factor).min(Duration::from_secs(10))
}

/// How a select asks for its answer: CSV text (what every store writes), or Sift's Arrow
/// IPC stream (the `x-sift-result-format` header, docs/gateway.md), plain or with its
/// buffers LZ4-compressed, which a store that does not know the header ignores, answering
/// CSV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Results {
    Csv,
    Arrow,
    ArrowLz4,
}

impl Results {
    /// Arrow, compressed when `lz4`.
    pub(crate) fn arrow(lz4: bool) -> Results {
        match lz4 {
            true => Results::ArrowLz4,
            false => Results::Arrow,
        }
    }

    /// The request header's value asking for these answers.
    fn header(self) -> Option<&'static str> {
        match self {
            Results::Csv => None,
            Results::Arrow => Some("arrow"),
            Results::ArrowLz4 => Some("arrow; compression=lz4"),
        }
    }
}

/// The request header asking for Arrow results, which Sift's answer carries back.
const RESULT_FORMAT: &str = "x-sift-result-format";

/// A response body as it arrived: a GET's bytes in one piece, a select's Records payloads
/// in order. A select's answer is kept in its pieces rather than appended to a buffer that
/// grows as they come (each growth copies what is there): CSV text is decoded piece by
/// piece, and an Arrow stream is joined once, into a buffer of its full size
/// ([`Body::joined`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Body {
    pieces: Vec<Bytes>,
    len: usize,
}

impl Body {
    fn push(&mut self, piece: Bytes) {
        if !piece.is_empty() {
            self.len += piece.len();
            self.pieces.push(piece);
        }
    }

    /// The bytes in all.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The pieces, in order.
    pub(crate) fn into_pieces(self) -> Vec<Bytes> {
        self.pieces
    }

    /// The body in one buffer: its only piece as it is, or its pieces copied once into a
    /// new one.
    pub(crate) fn joined(self) -> Bytes {
        match <[Bytes; 1]>::try_from(self.pieces) {
            Ok([one]) => one,
            Err(pieces) => {
                let mut all = BytesMut::with_capacity(self.len);
                for piece in &pieces {
                    all.extend_from_slice(piece);
                }
                all.freeze()
            }
        }
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Body {
        std::iter::once(bytes).collect()
    }
}

impl FromIterator<Bytes> for Body {
    fn from_iter<I: IntoIterator<Item = Bytes>>(pieces: I) -> Body {
        let mut body = Body::default();
        for piece in pieces {
            body.push(piece);
        }
        body
    }
}

/// A request's answer: the body, the object bytes the store read for it, and where it came
/// from.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) body: Body,
    /// The body is an Arrow IPC stream: asked for, and the store said so. Otherwise it is
    /// the CSV text (or the object bytes, for a GET).
    pub(crate) arrow: bool,
    pub(crate) scanned: u64,
    /// The index of the endpoint that answered.
    pub(crate) endpoint: usize,
    /// Attempts before this one that failed (on this endpoint or others).
    pub(crate) retries: usize,
}

impl Request {
    /// The endpoint (of `endpoints`) a request is first sent to: a hash of its object and
    /// where its range starts, the same in every run and every process (FNV-1a, not the
    /// standard library's seeded hasher).
    pub(crate) fn home(&self, endpoints: usize) -> usize {
        let (key, start) = match self {
            Request::Get { key, start, .. } => (key, *start),
            Request::Select { key, range } => (key, range.map_or(0, |(start, _)| start)),
        };
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in key.bytes().chain(start.to_le_bytes()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        (hash % endpoints.max(1) as u64) as usize
    }
}

impl Store {
    /// Sends `request` (with `sql`, for a select) to its home endpoint, or the next one up.
    /// When the answer is a transient failure the request goes to the next endpoint up,
    /// after a pause if this request already tried that one, up to [`MAX_ATTEMPTS`]; an
    /// endpoint that failed it (unreachable, cut short) is passed over by every request for
    /// [`DOWN_FOR`], one that was only busy is not ([`Retry`]): passing a busy gateway over
    /// sent all the load to the others, which then refused it in turn. A failure that
    /// sending again cannot mend (an unknown key, a refused statement) ends it at once. Only
    /// a complete answer is returned, so a request that failed midway is sent again whole.
    pub(crate) async fn send(
        &self,
        request: &Request,
        sql: &str,
        format: Format,
        results: Results,
    ) -> Result<Answer, Error> {
        let mut next = request.home(self.endpoints.len());
        let mut tried: Vec<usize> = Vec::new();
        let mut attempt = 0;
        loop {
            let at = self.next_up(next);
            if tried.contains(&at) {
                tokio::time::sleep(backoff(self.retry_pause, attempt)).await;
            }
            let endpoint = &self.endpoints[at];
            let sent = match request {
                Request::Get { key, start, end } => {
                    get(&endpoint.client, &self.bucket, key, *start, *end)
                        .await
                        .map(|body| {
                            let scanned = body.len() as u64;
                            (Body::from(body), scanned, false)
                        })
                }
                Request::Select { key, range } => {
                    let client = &endpoint.client;
                    select(client, &self.bucket, key, *range, sql, format, results).await
                }
            };
            let error = match sent {
                Ok((body, scanned, arrow)) => {
                    self.scanned.fetch_add(scanned, Ordering::Relaxed);
                    return Ok(Answer {
                        body,
                        arrow,
                        scanned,
                        endpoint: at,
                        retries: attempt,
                    });
                }
                Err(e) if !e.is_transient() => return Err(e),
                Err(e) => e,
            };
            if !error.is_busy() {
                endpoint.mark_down();
            }
            if !tried.contains(&at) {
                tried.push(at);
            }
            attempt += 1;
            if attempt == MAX_ATTEMPTS {
                let tried: Vec<&str> = tried
                    .iter()
                    .map(|&i| self.endpoints[i].url.as_str())
                    .collect();
                return Err(Error::GaveUp {
                    attempts: attempt,
                    tried: tried.join(", "),
                    last: Box::new(error),
                });
            }
            next = at + 1;
        }
    }

    /// The first endpoint from `from` on (cyclically) that is not passed over; `from` itself
    /// when all are.
    fn next_up(&self, from: usize) -> usize {
        let count = self.endpoints.len();
        (from..from + count)
            .map(|i| i % count)
            .find(|&i| !self.endpoints[i].is_down())
            .unwrap_or(from % count)
    }
}

/// A ranged GET of `start..end` of `key`, checked to be complete.
async fn get(
    client: &Client,
    bucket: &str,
    key: &str,
    start: u64,
    end: u64,
) -> Result<Bytes, Error> {
    let response = client
        .get_object()
        .bucket(bucket)
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
    Ok(body)
}

/// The records of `key` (those that start in `range`, or all) that `sql` selects, as the store sent them — CSV text, or an
/// Arrow IPC stream when `results` asked for one and the store's answer says it is (the
/// third value) — with the bytes the store scanned for them. Only a stream that ended
/// with the End event is a result: one cut short, by the server or the connection, is a
/// (transient) error naming the object and the range.
async fn select(
    client: &Client,
    bucket: &str,
    key: &str,
    range: Option<(u64, u64)>,
    sql: &str,
    format: Format,
    results: Results,
) -> Result<(Body, u64, bool), Error> {
    let target = match range {
        Some((start, end)) => format!("{key} (ScanRange {start}-{})", end - 1),
        None => key.to_string(),
    };
    // Options equal to AWS's defaults (a newline between records, in and out) are left out,
    // not spelt: the SDK writes a newline in XML as `&#xA;`, and Ceph RGW 18.2 reads its
    // serialization options as the raw text between the tags, decoding only `&#10;`. It took
    // the `&` of `&#xA;` for the record delimiter and answered every select with no rows.
    // Left out, the option means the same to every store.
    let compression = match format {
        Format::CsvGzip => CompressionType::Gzip,
        Format::Csv | Format::Parquet => CompressionType::None,
    };
    let input = match format {
        Format::Csv | Format::CsvGzip => InputSerialization::builder().csv(
            CsvInput::builder()
                .file_header_info(FileHeaderInfo::None)
                .field_delimiter(char::from(FIELD_DELIMITER))
                // As Trino: a comment marker that never occurs in data.
                .comments(NO_COMMENTS)
                .build(),
        ),
        Format::Parquet => InputSerialization::builder().parquet(ParquetInput::builder().build()),
    }
    .compression_type(compression)
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
    let answered_arrow = SeeArrow::default();
    let mut response = client
        .select_object_content()
        .bucket(bucket)
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(input)
        .output_serialization(output)
        .set_scan_range(scan_range)
        .customize()
        .interceptor(answered_arrow.clone())
        .mutate_request(move |r| {
            if let Some(value) = results.header() {
                r.headers_mut().insert(RESULT_FORMAT, value);
            }
        })
        .send()
        .await
        .map_err(|e| Error::s3("SelectObjectContent", &target, e))?;
    let mut records = Body::default();
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
                    records.push(payload.into_bytes());
                }
            }
            SelectObjectContentEventStream::Stats(s) => {
                let bytes = s.details.and_then(|d| d.bytes_scanned).unwrap_or(0).max(0) as u64;
                scanned += bytes;
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
            retry: Retry::Failed,
        });
    }
    let arrow = results != Results::Csv && answered_arrow.0.load(Ordering::Relaxed);
    Ok((records, scanned, arrow))
}

/// Notes whether a select's response says its records are Arrow.
#[derive(Debug, Clone, Default)]
struct SeeArrow(Arc<AtomicBool>);

impl Intercept for SeeArrow {
    fn name(&self) -> &'static str {
        "SeeArrow"
    }

    fn read_before_deserialization(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let format = context
            .response()
            .headers()
            .get(RESULT_FORMAT)
            .unwrap_or("");
        let arrow = format.split(';').next().map(str::trim) == Some("arrow");
        self.0.store(arrow, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_joins_its_pieces_in_order_and_keeps_a_lone_one_as_it_is() {
        let body: Body = ["ab", "", "cde", "f"]
            .into_iter()
            .map(Bytes::from)
            .collect();
        assert_eq!(body.len(), 6);
        assert_eq!(
            body.clone().into_pieces().len(),
            3,
            "empty pieces are dropped"
        );
        assert_eq!(&body.joined()[..], b"abcdef");

        let one = Bytes::from(vec![7u8; 100]);
        let joined = Body::from(one.clone()).joined();
        assert_eq!(joined.as_ptr(), one.as_ptr(), "one piece is not copied");
        assert!(Body::default().joined().is_empty());
    }
}
