//! SelectObjectContent: maps s3s's request onto the engine's [`SelectRequest`], runs the
//! engine on a blocking thread, and turns its output into the select event stream.
//!
//! The engine is synchronous and CPU-bound, so it runs under `spawn_blocking` and talks to
//! the response stream through a bounded channel: when the client reads slowly the engine
//! waits, and when the client goes away the channel closes and the engine's next `write` or
//! `progress` fails, which stops the scan. Memory per select is therefore the engine's chunk
//! buffers plus at most [`CHANNEL_DEPTH`] Records payloads.
//!
//! Admission: at most `max_running` selects scan at once and as many again wait for a turn;
//! beyond, 503 SlowDown. A select whose client stops reading steps aside ([`Slot`]): while
//! its engine waits on the full channel it holds no turn, and it takes one again, as
//! queued selects do, once the client reads. A client may open many selects and read them
//! in its own order: Trino opens the selects of a join's probe side and reads none of them
//! until the build side, whose selects it opens later, is done. Had the unread selects kept
//! their turns, the build side's would have waited forever. [`MAX_OPEN`] bounds the
//! selects open at all (each holds an engine thread).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use hyper::header::{HeaderMap, HeaderValue};
use s3s::dto::{
    self, ContinuationEvent, EndEvent, ProgressEvent, RecordsEvent, SelectObjectContentEvent,
    SelectObjectContentEventStream, SelectObjectContentInput, SelectObjectContentOutput,
    StatsEvent,
};
use s3s::{s3_error, S3Error, S3ErrorCode, S3Response, S3Result};
use sift_engine::{
    ArrowOptions, Compression, CsvInput, CsvOutput, Dialect, FileHeaderInfo, InputFormat,
    InputSerialization, JsonInput, JsonOutput, JsonType, ObjectSource, OutputSerialization,
    QuoteFields, ScanRange, Select, SelectError, SelectRequest, Sink, Stats,
};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;

/// Opens the object a select reads, on the engine's thread (mapping a file or starting a
/// download may block). The object was looked up before, so failing here is unexpected.
pub type OpenSource = Box<dyn FnOnce() -> std::io::Result<Box<dyn ObjectSource + Send>> + Send>;

/// Largest Records payload: the AWS Java SDK v1 (Trino 405's) fails on events of 128 KiB
/// and more, and the event's own framing needs some room.
pub const MAX_RECORDS_PAYLOAD: usize = 128 * 1024 - 256;

/// Records payloads buffered between the engine and the client.
pub const CHANNEL_DEPTH: usize = 8;

/// Selects open at once, scanning, queued or waiting for their clients: each holds a
/// blocking thread (tokio's pool has 512) and its buffers.
pub const MAX_OPEN: usize = 256;

/// How long the stream may stay silent before a Cont event tells the client (and any proxy)
/// that the scan is still going.
pub const KEEP_ALIVE: Duration = Duration::from_secs(2);

/// Runs selects with a cap on how many scan at once.
#[derive(Debug, Clone)]
pub struct SelectService {
    dialect: Dialect,
    threads: usize,
    /// Permits to run.
    running: Arc<Semaphore>,
    /// Permits to be admitted at all (running plus queued).
    admitted: Arc<Semaphore>,
    /// Permits to be open ([`MAX_OPEN`]).
    open: Arc<Semaphore>,
    metrics: Arc<Metrics>,
}

impl SelectService {
    /// At most `max_running` selects scan at once and as many again wait; further requests
    /// are refused with 503 SlowDown.
    pub fn new(dialect: Dialect, threads: usize, max_running: usize) -> Self {
        let max_running = max_running.max(1);
        SelectService {
            dialect,
            threads: threads.max(1),
            running: Arc::new(Semaphore::new(max_running)),
            admitted: Arc::new(Semaphore::new(2 * max_running)),
            open: Arc::new(Semaphore::new(MAX_OPEN)),
            metrics: Arc::default(),
        }
    }

    /// Counts selects in `metrics` (a private table otherwise).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Runs the select of `input` on the object that `open` opens, with results as an Arrow
    /// IPC stream when `arrow` says how ([`wants_arrow`]). The caller has already checked that the
    /// object exists, so that a missing one is a plain 404.
    pub async fn run(
        &self,
        input: SelectObjectContentInput,
        arrow: Option<ArrowOptions>,
        open: OpenSource,
    ) -> S3Result<S3Response<SelectObjectContentOutput>> {
        let progress = input
            .request
            .request_progress
            .as_ref()
            .and_then(|p| p.enabled)
            .unwrap_or(false);
        let mut request = map_request(input.request, self.dialect)?;
        if let Some(options) = arrow {
            request.output = OutputSerialization::Arrow(options);
        }
        let select = Select::new(request)
            .map_err(engine_error)?
            .with_threads(self.threads);

        let (open_permit, admitted) = self.admit()?;
        let running = self
            .running
            .clone()
            .acquire_owned()
            .await
            .map_err(S3Error::internal_error)?;

        let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
        // The permits go with the engine, not the response: a select counts against the
        // limit for as long as it scans, even after its client has gone.
        let slot = Slot {
            admitted: Some(admitted),
            running: Some(running),
            turns: Arc::clone(&self.running),
            _open: open_permit,
        };
        let metrics = self.metrics.clone();
        let started = std::time::Instant::now();
        tokio::task::spawn_blocking(move || {
            let in_flight = metrics.select_started();
            scan(select, open, tx, slot, progress, |stats| {
                drop(in_flight);
                metrics.select_finished(stats, started.elapsed());
            });
        });

        let mut stream = EventStream::new(rx);
        stream.wait_for_start().await?;
        let mut response = S3Response::new(SelectObjectContentOutput {
            payload: Some(SelectObjectContentEventStream::new(stream)),
        });
        if let Some(options) = arrow {
            let value = match options.lz4 {
                true => ARROW_LZ4,
                false => "arrow",
            };
            response
                .headers
                .insert(RESULT_FORMAT_HEADER, HeaderValue::from_static(value));
        }
        Ok(response)
    }
}

/// The request header by which a client asks for select results as an Arrow IPC stream
/// instead of what OutputSerialization names (docs/gateway.md). The response carries it
/// back when the results are Arrow, so that a client can tell Sift's answer from a store's
/// that ignored the header and wrote CSV.
pub const RESULT_FORMAT_HEADER: &str = "x-sift-result-format";

/// The header's value for an Arrow stream whose buffers are LZ4-compressed.
pub const ARROW_LZ4: &str = "arrow; compression=lz4";

/// How a select request asks for Arrow results (`arrow`, or [`ARROW_LZ4`]), `None` when it
/// does not; any other value is refused rather than ignored.
pub fn wants_arrow(headers: &HeaderMap) -> S3Result<Option<ArrowOptions>> {
    let Some(value) = headers.get(RESULT_FORMAT_HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").to_ascii_lowercase();
    let mut parts = text.split(';').map(str::trim);
    let format = parts.next().unwrap_or("");
    let params: Vec<&str> = parts.collect();
    match (format, params.as_slice()) {
        ("arrow", []) => Ok(Some(ArrowOptions { lz4: false })),
        ("arrow", [p]) if p.replace(' ', "") == "compression=lz4" => {
            Ok(Some(ArrowOptions { lz4: true }))
        }
        _ => Err(s3_error!(
            InvalidArgument,
            "{RESULT_FORMAT_HEADER}: {value:?} is not a result format; it takes `arrow` or \
             `{ARROW_LZ4}`"
        )),
    }
}

impl SelectService {
    /// A place among the open selects and among the running and queued ones, or 503
    /// SlowDown when there is none.
    fn admit(&self) -> S3Result<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let slow_down = |_| {
            let mut e = s3_error!(
                SlowDown,
                "too many selects are running or queued; retry with backoff"
            );
            e.set_status_code(hyper::StatusCode::SERVICE_UNAVAILABLE);
            e
        };
        let open = self.open.clone().try_acquire_owned().map_err(slow_down)?;
        let admitted = self
            .admitted
            .clone()
            .try_acquire_owned()
            .map_err(slow_down)?;
        Ok((open, admitted))
    }
}

/// A select's place: the admission it came in by and its turn to scan, until it first
/// steps aside, and its place among the open selects for its whole life.
struct Slot {
    admitted: Option<OwnedSemaphorePermit>,
    running: Option<OwnedSemaphorePermit>,
    turns: Arc<Semaphore>,
    _open: OwnedSemaphorePermit,
}

impl Slot {
    /// Gives the turn (and the admission) up while the client is not reading.
    fn step_aside(&mut self) {
        self.running = None;
        self.admitted = None;
    }

    /// Waits for a turn again, on the engine's blocking thread. The select is in already,
    /// so it needs no admission, only a turn.
    fn come_back(&mut self) {
        if self.running.is_none() {
            let turns = Arc::clone(&self.turns);
            self.running = tokio::runtime::Handle::current()
                .block_on(turns.acquire_owned())
                .ok();
        }
    }
}

/// What the engine's thread sends to the response stream.
enum Msg {
    Records(Bytes),
    Progress(Stats),
    Done(Result<Stats, SelectError>),
}

/// Runs the scan, sending its output and end to `tx`. `finished` gets its stats (when it
/// succeeded) before the end is sent, so that the gateway's metrics count a select by the
/// time its client has the whole answer.
fn scan(
    select: Select,
    open: OpenSource,
    tx: mpsc::Sender<Msg>,
    slot: Slot,
    progress: bool,
    finished: impl FnOnce(Option<&Stats>),
) {
    let source = match open() {
        Ok(s) => s,
        Err(e) => {
            finished(None);
            let _ = tx.blocking_send(Msg::Done(Err(SelectError::new(
                sift_engine::ErrorCode::InternalError,
                format!("cannot open the object: {e}"),
            ))));
            return;
        }
    };
    let mut sink = ChannelSink {
        tx: tx.clone(),
        slot,
        buf: Vec::with_capacity(MAX_RECORDS_PAYLOAD),
        progress,
        last_progress: Stats::default(),
    };
    let result = select.run(&*source, &mut sink).and_then(|stats| {
        sink.flush()?;
        Ok(stats)
    });
    // The scan is over: its turn goes before the end waits for the client to read.
    drop(sink);
    finished(result.as_ref().ok());
    // If the client is gone this fails, which is fine: nobody is listening.
    let _ = tx.blocking_send(Msg::Done(result));
}

/// The engine's [`Sink`]: packs output into Records payloads of at most
/// [`MAX_RECORDS_PAYLOAD`] bytes (a payload may end mid-row, as S3's do).
struct ChannelSink {
    tx: mpsc::Sender<Msg>,
    slot: Slot,
    buf: Vec<u8>,
    progress: bool,
    /// The last Progress sent (none yet: zeros): the engine reports again after its last
    /// chunk, and an unchanged count is not worth an event.
    last_progress: Stats,
}

fn client_gone() -> SelectError {
    SelectError::new(
        sift_engine::ErrorCode::InternalError,
        "the client closed the connection",
    )
}

impl ChannelSink {
    /// Sends `msg`, stepping aside while the client lets the channel fill.
    fn send(&mut self, msg: Msg) -> Result<(), SelectError> {
        let msg = match self.tx.try_send(msg) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(_)) => return Err(client_gone()),
            Err(TrySendError::Full(msg)) => msg,
        };
        self.slot.step_aside();
        self.tx.blocking_send(msg).map_err(|_| client_gone())?;
        self.slot.come_back();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SelectError> {
        if !self.buf.is_empty() {
            let payload = Bytes::from(std::mem::replace(
                &mut self.buf,
                Vec::with_capacity(MAX_RECORDS_PAYLOAD),
            ));
            self.send(Msg::Records(payload))?;
        }
        Ok(())
    }
}

impl Sink for ChannelSink {
    fn write(&mut self, mut data: &[u8]) -> Result<(), SelectError> {
        while !data.is_empty() {
            let room = MAX_RECORDS_PAYLOAD - self.buf.len();
            let (now, rest) = data.split_at(room.min(data.len()));
            self.buf.extend_from_slice(now);
            data = rest;
            if self.buf.len() == MAX_RECORDS_PAYLOAD {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn progress(&mut self, stats: &Stats) -> Result<(), SelectError> {
        // Rows found so far go out now rather than waiting for a full payload, so that a
        // selective scan streams instead of arriving at the end.
        self.flush()?;
        if self.progress && self.last_progress != *stats {
            self.last_progress = *stats;
            self.send(Msg::Progress(*stats))?;
        }
        if self.tx.is_closed() {
            return Err(client_gone());
        }
        Ok(())
    }
}

/// The response body: engine messages as select events, with Cont events during silences.
struct EventStream {
    rx: mpsc::Receiver<Msg>,
    pending: VecDeque<S3Result<SelectObjectContentEvent>>,
    keep_alive: Pin<Box<tokio::time::Sleep>>,
    finished: bool,
}

impl EventStream {
    fn new(rx: mpsc::Receiver<Msg>) -> Self {
        EventStream {
            rx,
            pending: VecDeque::new(),
            keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
            finished: false,
        }
    }

    /// Waits until the engine has produced output or finished, or [`KEEP_ALIVE`] has
    /// passed. An error by then becomes a plain S3 error response (the status line is not
    /// yet sent); after it, errors can only be error events.
    async fn wait_for_start(&mut self) -> S3Result<()> {
        let deadline = tokio::time::sleep(KEEP_ALIVE);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                msg = self.rx.recv() => match msg {
                    Some(Msg::Done(Err(e))) => return Err(engine_error(e)),
                    Some(Msg::Progress(stats)) => {
                        // Keep only the latest: older ones carry no extra information.
                        self.pending.retain(|e| !matches!(e, Ok(SelectObjectContentEvent::Progress(_))));
                        self.push(Msg::Progress(stats));
                    }
                    Some(msg) => {
                        self.push(msg);
                        return Ok(());
                    }
                    None => return Err(worker_died()),
                },
                () = &mut deadline => return Ok(()),
            }
        }
    }

    fn push(&mut self, msg: Msg) {
        match msg {
            Msg::Records(payload) => {
                self.pending
                    .push_back(Ok(SelectObjectContentEvent::Records(RecordsEvent {
                        payload: Some(payload),
                    })))
            }
            Msg::Progress(s) => self
                .pending
                .push_back(Ok(SelectObjectContentEvent::Progress(ProgressEvent {
                    details: Some(dto::Progress {
                        bytes_scanned: Some(s.bytes_scanned as i64),
                        bytes_processed: Some(s.bytes_processed as i64),
                        bytes_returned: Some(s.bytes_returned as i64),
                    }),
                }))),
            Msg::Done(Ok(s)) => {
                self.pending
                    .push_back(Ok(SelectObjectContentEvent::Stats(StatsEvent {
                        details: Some(dto::Stats {
                            bytes_scanned: Some(s.bytes_scanned as i64),
                            bytes_processed: Some(s.bytes_processed as i64),
                            bytes_returned: Some(s.bytes_returned as i64),
                        }),
                    })));
                self.pending
                    .push_back(Ok(SelectObjectContentEvent::End(EndEvent {})));
                self.finished = true;
            }
            Msg::Done(Err(e)) => {
                // An error event, and no End after it.
                self.pending.push_back(Err(engine_error(e)));
                self.finished = true;
            }
        }
    }
}

impl Stream for EventStream {
    type Item = S3Result<SelectObjectContentEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(ev) = this.pending.pop_front() {
                this.keep_alive
                    .as_mut()
                    .reset(tokio::time::Instant::now() + KEEP_ALIVE);
                return Poll::Ready(Some(ev));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(msg)) => this.push(msg),
                Poll::Ready(None) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(worker_died())));
                }
                Poll::Pending => {
                    if this.keep_alive.as_mut().poll(cx).is_ready() {
                        this.pending
                            .push_back(Ok(SelectObjectContentEvent::Cont(ContinuationEvent {})));
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

fn worker_died() -> S3Error {
    s3_error!(InternalError, "the select stopped unexpectedly")
}

/// An engine error as an S3 error with the engine's code and HTTP status.
pub fn engine_error(e: SelectError) -> S3Error {
    let code: S3ErrorCode = e
        .code
        .as_str()
        .parse()
        .unwrap_or(S3ErrorCode::InternalError);
    let mut err = S3Error::with_message(code, e.message.clone());
    if let Ok(status) = hyper::StatusCode::from_u16(e.http_status()) {
        err.set_status_code(status);
    }
    err
}

/// The request as the engine wants it; anything the engine cannot do yet is refused here
/// with the S3 error a client can act on.
pub fn map_request(
    req: dto::SelectObjectContentRequest,
    dialect: Dialect,
) -> S3Result<SelectRequest> {
    if req.expression_type.as_str() != dto::ExpressionType::SQL {
        return Err(s3_error!(
            InvalidExpressionType,
            "ExpressionType must be SQL, got {:?}",
            req.expression_type.as_str()
        ));
    }
    let inp = req.input_serialization;
    let named = [inp.csv.is_some(), inp.json.is_some(), inp.parquet.is_some()];
    if named.iter().filter(|&&n| n).count() > 1 {
        return Err(s3_error!(
            ObjectSerializationConflict,
            "InputSerialization must name only one of CSV, JSON and Parquet"
        ));
    }
    let compression = match inp.compression_type.as_ref().map(|c| c.as_str()) {
        None | Some(dto::CompressionType::NONE) => Compression::None,
        Some(dto::CompressionType::GZIP) => Compression::Gzip,
        Some(dto::CompressionType::BZIP2) => Compression::Bzip2,
        Some(other) => {
            return Err(s3_error!(
                InvalidCompressionFormat,
                "CompressionType {other:?} is not one of NONE, GZIP, BZIP2"
            ))
        }
    };
    let format = if inp.parquet.is_some() {
        InputFormat::Parquet
    } else if let Some(j) = inp.json {
        let json_type = match j.type_.as_ref().map(|t| t.as_str().to_ascii_uppercase()) {
            None => JsonType::Document,
            Some(t) if t == dto::JSONType::DOCUMENT => JsonType::Document,
            Some(t) if t == dto::JSONType::LINES => JsonType::Lines,
            Some(other) => {
                return Err(engine_error(SelectError::new(
                    sift_engine::ErrorCode::InvalidJsonType,
                    format!("JSON Type {other:?} is not one of DOCUMENT, LINES"),
                )))
            }
        };
        InputFormat::Json(JsonInput { json_type })
    } else if let Some(c) = inp.csv {
        let mut csv = CsvInput::default();
        if let Some(h) = c.file_header_info {
            csv.file_header_info = match h.as_str() {
                dto::FileHeaderInfo::NONE => FileHeaderInfo::None,
                dto::FileHeaderInfo::IGNORE => FileHeaderInfo::Ignore,
                dto::FileHeaderInfo::USE => FileHeaderInfo::Use,
                other => {
                    return Err(s3_error!(
                        InvalidFileHeaderInfo,
                        "FileHeaderInfo {other:?} is not one of NONE, IGNORE, USE"
                    ))
                }
            };
        }
        set(&mut csv.field_delimiter, c.field_delimiter);
        set(&mut csv.record_delimiter, c.record_delimiter);
        set(&mut csv.quote_character, c.quote_character);
        set(&mut csv.quote_escape_character, c.quote_escape_character);
        set(&mut csv.comments, c.comments);
        if let Some(a) = c.allow_quoted_record_delimiter {
            csv.allow_quoted_record_delimiter = a;
        }
        InputFormat::Csv(csv)
    } else {
        return Err(s3_error!(
            MissingRequiredParameter,
            "InputSerialization must name CSV, JSON or Parquet"
        ));
    };

    let out = req.output_serialization;
    let output = match (out.csv, out.json) {
        (Some(_), Some(_)) => {
            return Err(s3_error!(
                ObjectSerializationConflict,
                "OutputSerialization must name only one of CSV and JSON"
            ))
        }
        (_, Some(j)) => {
            let mut json = JsonOutput::default();
            set(&mut json.record_delimiter, j.record_delimiter);
            OutputSerialization::Json(json)
        }
        (Some(c), None) => {
            let mut csv = CsvOutput::default();
            if let Some(q) = c.quote_fields {
                csv.quote_fields = match q.as_str() {
                    dto::QuoteFields::ALWAYS => QuoteFields::Always,
                    dto::QuoteFields::ASNEEDED => QuoteFields::AsNeeded,
                    other => {
                        return Err(s3_error!(
                            InvalidQuoteFields,
                            "QuoteFields {other:?} is not one of ALWAYS, ASNEEDED"
                        ))
                    }
                };
            }
            set(&mut csv.field_delimiter, c.field_delimiter);
            set(&mut csv.record_delimiter, c.record_delimiter);
            set(&mut csv.quote_character, c.quote_character);
            set(&mut csv.quote_escape_character, c.quote_escape_character);
            OutputSerialization::Csv(csv)
        }
        (None, None) => {
            return Err(s3_error!(
                MissingRequiredParameter,
                "OutputSerialization must name CSV or JSON"
            ))
        }
    };

    let scan_range = match req.scan_range {
        None => None,
        Some(r) => {
            let non_negative = |v: Option<i64>, what: &str| -> S3Result<Option<u64>> {
                v.map(|v| {
                    u64::try_from(v).map_err(|_| {
                        s3_error!(
                            InvalidRequestParameter,
                            "ScanRange {what} must not be negative"
                        )
                    })
                })
                .transpose()
            };
            Some(ScanRange {
                start: non_negative(r.start, "Start")?,
                end: non_negative(r.end, "End")?,
            })
        }
    };

    Ok(SelectRequest {
        sql: req.expression,
        dialect,
        input: InputSerialization {
            format,
            compression,
        },
        output,
        scan_range,
    })
}

/// An optional XML element overrides the engine's default (which is AWS's default); an
/// element present but empty is kept as empty (it disables quoting or comments).
fn set(field: &mut String, value: Option<String>) {
    if let Some(v) = value {
        *field = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_splits_payloads() {
        let (tx, mut rx) = mpsc::channel(64);
        let mut sink = ChannelSink {
            tx,
            slot: scanning_slot(&SelectService::new(Dialect::Aws, 1, 1)),
            buf: Vec::new(),
            progress: false,
            last_progress: Stats::default(),
        };
        let data = vec![b'x'; 3 * MAX_RECORDS_PAYLOAD + 10];
        let handle = std::thread::spawn(move || {
            sink.write(&data).expect("write");
            sink.flush().expect("flush");
        });
        handle.join().expect("thread");
        let mut sizes = Vec::new();
        while let Ok(Msg::Records(b)) = rx.try_recv() {
            sizes.push(b.len());
        }
        assert_eq!(
            sizes,
            [
                MAX_RECORDS_PAYLOAD,
                MAX_RECORDS_PAYLOAD,
                MAX_RECORDS_PAYLOAD,
                10
            ]
        );
    }

    #[test]
    fn closed_channel_stops_the_scan() {
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        let mut sink = ChannelSink {
            tx,
            slot: scanning_slot(&SelectService::new(Dialect::Aws, 1, 1)),
            buf: Vec::new(),
            progress: false,
            last_progress: Stats::default(),
        };
        assert!(sink.progress(&Stats::default()).is_err());
    }

    /// A slot of `service`'s that is scanning.
    fn scanning_slot(service: &SelectService) -> Slot {
        let (open, admitted) = service.admit().expect("room");
        Slot {
            admitted: Some(admitted),
            running: Some(service.running.clone().try_acquire_owned().expect("a turn")),
            turns: Arc::clone(&service.running),
            _open: open,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_select_its_client_does_not_read_lets_others_scan() {
        let service = SelectService::new(Dialect::Aws, 1, 1);
        let (tx, mut rx) = mpsc::channel(1);
        let mut sink = ChannelSink {
            tx,
            slot: scanning_slot(&service),
            buf: Vec::new(),
            progress: false,
            last_progress: Stats::default(),
        };
        assert_eq!(service.running.available_permits(), 0);
        // The first payload fills the channel; the second waits for a client that does not
        // read, without the turn.
        let engine = tokio::task::spawn_blocking(move || {
            sink.send(Msg::Records(Bytes::from_static(b"a")))?;
            sink.send(Msg::Records(Bytes::from_static(b"b")))?;
            Ok::<_, SelectError>(sink)
        });
        let other = tokio::time::timeout(Duration::from_secs(10), service.running.acquire())
            .await
            .expect("another select gets the turn while the client does not read")
            .expect("open semaphore");
        drop(other);
        // Reading lets the first select go on, with a turn again.
        assert!(rx.recv().await.is_some());
        let sink = engine.await.expect("engine thread").expect("sent");
        assert!(sink.slot.running.is_some());
        assert_eq!(service.running.available_permits(), 0);
    }

    #[test]
    fn slow_down_beyond_running_plus_queued() {
        let service = SelectService::new(Dialect::Aws, 1, 2);
        let held: Vec<_> = (0..4).map(|_| service.admit().expect("room")).collect();
        let refused = service.admit().expect_err("full");
        assert_eq!(refused.code().as_str(), "SlowDown");
        assert_eq!(refused.status_code().map(|s| s.as_u16()), Some(503));
        drop(held);
        assert!(service.admit().is_ok());
    }

    #[tokio::test]
    async fn cont_events_during_silence() {
        use futures::StreamExt;
        let (tx, rx) = mpsc::channel(1);
        let mut stream = EventStream::new(rx);
        let started = std::time::Instant::now();
        let first = stream
            .next()
            .await
            .expect("an event")
            .expect("not an error");
        assert!(matches!(first, SelectObjectContentEvent::Cont(_)));
        assert!(started.elapsed() >= KEEP_ALIVE);
        tx.send(Msg::Done(Ok(Stats::default())))
            .await
            .expect("send");
        let rest: Vec<_> = stream.collect().await;
        assert!(matches!(rest[0], Ok(SelectObjectContentEvent::Stats(_))));
        assert!(matches!(rest[1], Ok(SelectObjectContentEvent::End(_))));
        assert_eq!(rest.len(), 2);
    }

    #[test]
    fn maps_every_csv_field() {
        let req = dto::SelectObjectContentRequest {
            expression: "SELECT * FROM S3Object".into(),
            expression_type: dto::ExpressionType::from_static(dto::ExpressionType::SQL),
            input_serialization: dto::InputSerialization {
                csv: Some(dto::CSVInput {
                    allow_quoted_record_delimiter: Some(true),
                    comments: Some("\u{FDD0}".into()),
                    field_delimiter: Some("|".into()),
                    file_header_info: Some(dto::FileHeaderInfo::from_static(
                        dto::FileHeaderInfo::USE,
                    )),
                    quote_character: Some("'".into()),
                    quote_escape_character: Some("\\".into()),
                    record_delimiter: Some("\r\n".into()),
                }),
                compression_type: Some(dto::CompressionType::from_static(
                    dto::CompressionType::BZIP2,
                )),
                json: None,
                parquet: None,
            },
            output_serialization: dto::OutputSerialization {
                csv: Some(dto::CSVOutput {
                    field_delimiter: Some(";".into()),
                    quote_character: Some("`".into()),
                    quote_escape_character: Some("`".into()),
                    quote_fields: Some(dto::QuoteFields::from_static(dto::QuoteFields::ALWAYS)),
                    record_delimiter: Some("\r".into()),
                }),
                json: None,
            },
            request_progress: None,
            scan_range: Some(dto::ScanRange {
                start: Some(5),
                end: None,
            }),
        };
        let mapped = map_request(req, Dialect::Ceph).expect("valid");
        let InputFormat::Csv(csv) = &mapped.input.format else {
            panic!("CSV input expected")
        };
        assert!(csv.allow_quoted_record_delimiter);
        assert_eq!(csv.comments, "\u{FDD0}");
        assert_eq!(csv.field_delimiter, "|");
        assert_eq!(csv.file_header_info, FileHeaderInfo::Use);
        assert_eq!(csv.quote_character, "'");
        assert_eq!(csv.quote_escape_character, "\\");
        assert_eq!(csv.record_delimiter, "\r\n");
        assert_eq!(mapped.input.compression, Compression::Bzip2);
        assert_eq!(mapped.dialect, Dialect::Ceph);
        assert_eq!(
            mapped.output,
            OutputSerialization::Csv(CsvOutput {
                quote_fields: QuoteFields::Always,
                quote_character: "`".into(),
                quote_escape_character: "`".into(),
                field_delimiter: ";".into(),
                record_delimiter: "\r".into(),
            })
        );
        assert_eq!(
            mapped.scan_range,
            Some(ScanRange {
                start: Some(5),
                end: None
            })
        );
    }

    #[test]
    fn maps_json_input_and_refuses_negative_ranges() {
        let base = || dto::SelectObjectContentRequest {
            expression: "SELECT * FROM S3Object".into(),
            expression_type: dto::ExpressionType::from_static(dto::ExpressionType::SQL),
            input_serialization: dto::InputSerialization {
                csv: Some(dto::CSVInput::default()),
                compression_type: None,
                json: None,
                parquet: None,
            },
            output_serialization: dto::OutputSerialization {
                csv: None,
                json: Some(dto::JSONOutput::default()),
            },
            request_progress: None,
            scan_range: None,
        };
        let json = |t: Option<&'static str>| {
            let mut r = base();
            r.input_serialization.csv = None;
            r.input_serialization.json = Some(dto::JSONInput {
                type_: t.map(dto::JSONType::from_static),
            });
            map_request(r, Dialect::Aws)
        };
        let lines = json(Some("LINES")).expect("valid");
        assert_eq!(
            lines.input.format,
            InputFormat::Json(JsonInput {
                json_type: JsonType::Lines
            })
        );
        let document = json(None).expect("valid");
        assert_eq!(
            document.input.format,
            InputFormat::Json(JsonInput {
                json_type: JsonType::Document
            })
        );
        let err = json(Some("ARRAY")).expect_err("bad type");
        assert_eq!(err.code().as_str(), "InvalidJsonType");
        let mut both = base();
        both.input_serialization.json = Some(dto::JSONInput::default());
        let err = map_request(both, Dialect::Aws).expect_err("conflict");
        assert_eq!(err.code().as_str(), "ObjectSerializationConflict");
        let mut negative = base();
        negative.scan_range = Some(dto::ScanRange {
            start: Some(-1),
            end: None,
        });
        assert!(map_request(negative, Dialect::Aws).is_err());
        assert!(matches!(
            map_request(base(), Dialect::Aws)
                .expect("json output")
                .output,
            OutputSerialization::Json(_)
        ));
    }

    #[test]
    fn engine_errors_keep_code_and_status() {
        let e = engine_error(SelectError::new(
            sift_engine::ErrorCode::ParseUnexpectedToken,
            "bad",
        ));
        assert_eq!(e.code().as_str(), "ParseUnexpectedToken");
        assert_eq!(e.status_code().map(|s| s.as_u16()), Some(400));
    }
}
