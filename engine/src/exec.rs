//! Running a select: source → (decompression) → chunks of whole records → filter and
//! projection on each chunk → output in input order.
//!
//! With one thread, everything happens on the caller's thread. With `n`, the caller and
//! `n - 1` more threads take turns cutting the next chunk, scan chunks side by side, and
//! whoever finishes the next chunk in order writes it to the sink. Memory is bounded whatever
//! the object's size: at most `2n + 2` chunks (4 MiB buffers when the object is read rather
//! than mapped) are between cutting and writing.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};

use crate::csv::chunk::{ReadWindow, SliceWindow, Window};
use crate::csv::{ChunkBuf, Chunker, CsvFormat, Flow, Record, Scanner};
use crate::err;
use crate::error::{ErrorCode, Result, SelectError};
use crate::eval::agg::AggState;
use crate::eval::bind::{bind, Columns, Output, Plan};
use crate::eval::expr::{field_text, CExpr, Row};
use crate::json::path::{expand, walk};
use crate::json::{JsonError, Node};
use crate::output::RowWriter;
use crate::parquet::prune::RowGroupStats;
use crate::parquet::rows::BatchRows;
use crate::parquet::ParquetFile;
use crate::request::{Compression, FileHeaderInfo, InputFormat, JsonType, SelectRequest};
use crate::source::{decompress, Counting, ObjectSource};
use crate::sql::ast::Query;
use crate::value::Value;

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
pub struct Select {
    request: SelectRequest,
    query: Query,
    /// For JSON input, the format that cuts lines (see [`CsvFormat::json_lines`]).
    format: CsvFormat,
    /// `Some` for JSON input.
    json: Option<JsonType>,
    writer: RowWriter,
    threads: usize,
    chunk_size: usize,
    /// Parquet input: the largest row group read (uncompressed bytes).
    max_row_group_bytes: i64,
}

impl Select {
    /// Checks the request — SQL syntax, serialization options, ScanRange — before any byte
    /// of the object is read, so that these errors reach the client as plain S3 errors.
    pub fn new(request: SelectRequest) -> Result<Select> {
        let query = crate::sql::parse(&request.sql, request.dialect)?;
        let (format, json) = match &request.input.format {
            InputFormat::Csv(c) => (CsvFormat::new(c)?, None),
            InputFormat::Json(j) => (CsvFormat::json_lines(), Some(j.json_type)),
            // Parquet is not cut into chunks; the format is never used.
            InputFormat::Parquet => (CsvFormat::json_lines(), None),
        };
        if request.input.format == InputFormat::Parquet
            && request.input.compression != Compression::None
        {
            return Err(err!(
                InvalidCompressionFormat,
                "a Parquet object cannot be compressed as a whole ({:?}); its columns carry \
                 their own compression",
                request.input.compression
            ));
        }
        let writer = RowWriter::new(&request.output)?;
        if let Some(r) = &request.scan_range {
            if json == Some(JsonType::Document) {
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
            format,
            json,
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
    /// [`MAX_ROW_GROUP_BYTES`](crate::parquet::MAX_ROW_GROUP_BYTES)).
    pub fn with_max_row_group_bytes(mut self, bytes: i64) -> Self {
        self.max_row_group_bytes = bytes;
        self
    }

    pub fn query(&self) -> &Query {
        &self.query
    }

    /// Runs the select over `source`, writing the result to `sink`.
    pub fn run(&self, source: &dyn ObjectSource, sink: &mut (dyn Sink + Send)) -> Result<Stats> {
        if self.request.input.format == InputFormat::Parquet {
            return self.run_parquet(source, sink);
        }
        let scanned = Arc::new(AtomicU64::new(0));
        let processed = Arc::new(AtomicU64::new(0));
        let ranged = self.request.scan_range.is_some();
        let span = self.span(source)?;
        let in_memory = match source.bytes() {
            Some(b) if self.request.input.compression == Compression::None => Some(b),
            _ => None,
        };
        let mut chunker = match span {
            None => None,
            Some(span) => Some(self.open(source, in_memory, span, &scanned, &processed)?),
        };
        let header = self.header(source, span, chunker.as_mut())?;
        let names = match self.format.header {
            FileHeaderInfo::Use => header,
            _ => None,
        };
        let columns = match self.json {
            Some(_) => Columns::Json,
            None => Columns::Csv(names.as_deref()),
        };
        let plan = bind(&self.query, self.request.dialect, columns)?;
        let ctx = Ctx {
            plan: &plan,
            writer: &self.writer,
            header: names.as_deref().unwrap_or(&[]),
            json: self.json,
            nodes: self.json.is_some(),
        };

        // Counted at the chunker when it sees the object's own bytes (ranges, memory);
        // at the source and the decoder otherwise.
        let count_consumed = ranged || in_memory.is_some();
        let stats_now = |returned: u64, chunker_consumed: Option<u64>| {
            let (s, p) = match (count_consumed, chunker_consumed) {
                (true, Some(c)) => (c, c),
                _ => (
                    scanned.load(Ordering::Relaxed),
                    processed.load(Ordering::Relaxed),
                ),
            };
            Stats {
                bytes_scanned: s,
                bytes_processed: p,
                bytes_returned: returned,
            }
        };
        let mut emitter = Emitter::new(&plan, &stats_now);
        let nothing_to_read = plan.limit == Some(0) && !plan.is_aggregate();
        let consumed = match chunker.take() {
            _ if nothing_to_read => None,
            None => None,
            Some(AnyChunker::Slice(c)) => Some(self.drive(c, &ctx, sink, &mut emitter)?),
            Some(AnyChunker::Read(c)) => Some(self.drive(c, &ctx, sink, &mut emitter)?),
        };

        let returned = finish(&ctx, emitter, sink)?;
        let stats = stats_now(returned, consumed);
        sink.progress(&stats)?;
        Ok(stats)
    }

    /// Runs the select over a Parquet object: the footer, then the row groups that the
    /// ScanRange and the statistics leave, one after another, reading only the columns the
    /// query names.
    fn run_parquet(
        &self,
        source: &dyn ObjectSource,
        sink: &mut (dyn Sink + Send),
    ) -> Result<Stats> {
        let plan = bind(&self.query, self.request.dialect, Columns::Json)?;
        let ctx = Ctx {
            plan: &plan,
            writer: &self.writer,
            header: &[],
            json: None,
            nodes: true,
        };
        let file = ParquetFile::open(source)?;
        let stats_now = |returned: u64, _: Option<u64>| Stats {
            bytes_scanned: file.bytes_read(),
            bytes_processed: file.bytes_read(),
            bytes_returned: returned,
        };
        let mut emitter = Emitter::new(&plan, &stats_now);
        let mask = file.projection(plan.top_keys.as_ref());
        let nothing_to_read = plan.limit == Some(0) && !plan.is_aggregate();
        let groups = match nothing_to_read {
            true => Vec::new(),
            false => self.parquet_row_groups(&file, &plan, source.size())?,
        };
        let mut out = ChunkOut::new(&plan);
        let mut rows_before = 0;
        for g in groups {
            file.check_row_group(g, &mask, self.max_row_group_bytes)?;
            out.reset(&plan, rows_before);
            process_parquet_row_group(&ctx, &file, g, mask.clone(), &mut out)?;
            rows_before += out.rows;
            if !emitter.emit(&mut out, sink, 0)? {
                break;
            }
        }
        let returned = finish(&ctx, emitter, sink)?;
        let stats = stats_now(returned, None);
        sink.progress(&stats)?;
        Ok(stats)
    }

    /// The row groups a Parquet select reads: those that start inside the ScanRange (all
    /// when there is none), less those whose statistics rule the filter out.
    fn parquet_row_groups(
        &self,
        file: &ParquetFile<'_>,
        plan: &Plan,
        size: Option<u64>,
    ) -> Result<Vec<usize>> {
        let (first, last) = match &self.request.scan_range {
            None => (0, u64::MAX),
            Some(range) => match range.resolve(size)? {
                Some(span) => span,
                None => return Ok(Vec::new()),
            },
        };
        let stats = match (&plan.filter, plan.rows.is_empty()) {
            (Some(f), true) => Some((f, RowGroupStats::new(file, f))),
            _ => None,
        };
        Ok((0..file.row_groups().len())
            .filter(|&g| (first..=last).contains(&file.row_group_start(g)))
            .filter(|&g| stats.as_ref().is_none_or(|(f, s)| s.may_match(f, g)))
            .collect())
    }

    /// Where to read: `None` when a ScanRange selects nothing, else the offset to open the
    /// object at, whether to drop the partial record there, and the last offset at which a
    /// record may start.
    fn span(&self, source: &dyn ObjectSource) -> Result<Option<Span>> {
        let Some(range) = &self.request.scan_range else {
            return Ok(Some(Span {
                open_at: 0,
                skip_partial: false,
                last_start: None,
            }));
        };
        let Some((first, last)) = range.resolve(source.size())? else {
            return Ok(None);
        };
        let last_start = (last != u64::MAX).then_some(last);
        Ok(Some(if first == 0 {
            Span {
                open_at: 0,
                skip_partial: false,
                last_start,
            }
        } else {
            // Open a delimiter's length early, to see whether a record starts at `first`.
            Span {
                open_at: first.saturating_sub(self.format.record.len() as u64),
                skip_partial: true,
                last_start,
            }
        }))
    }

    /// The chunker for the run: an uncompressed object already in memory (or mapped) is
    /// chunked in place; anything else is read (and decompressed) into buffers, counting
    /// bytes on the way.
    fn open<'s>(
        &self,
        source: &'s dyn ObjectSource,
        in_memory: Option<&'s [u8]>,
        span: Span,
        scanned: &Arc<AtomicU64>,
        processed: &Arc<AtomicU64>,
    ) -> Result<AnyChunker<'s>> {
        let Span {
            open_at,
            skip_partial,
            last_start,
        } = span;
        if let Some(bytes) = in_memory {
            let from = usize::try_from(open_at)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            let window = SliceWindow::new(&bytes[from..]);
            return Ok(AnyChunker::Slice(self.chunker(
                window,
                open_at,
                skip_partial,
                last_start,
            )));
        }
        let raw = source.open(open_at).map_err(open_error)?;
        let counted = Counting::new(raw, scanned.clone());
        let decoded: Box<dyn Read + Send + 's> = Box::new(Counting::new(
            decompress(Box::new(counted), self.request.input.compression),
            processed.clone(),
        ));
        let window = ReadWindow::new(decoded, self.buffer_capacity());
        Ok(AnyChunker::Read(self.chunker(
            window,
            open_at,
            skip_partial,
            last_start,
        )))
    }

    /// The header line, when FileHeaderInfo asks for one: the object's first record, also
    /// when the range starts later (then read through a second, short-lived reader).
    fn header(
        &self,
        source: &dyn ObjectSource,
        span: Option<Span>,
        chunker: Option<&mut AnyChunker<'_>>,
    ) -> Result<Option<Vec<String>>> {
        if self.format.header == FileHeaderInfo::None {
            return Ok(None);
        }
        match (span, chunker) {
            (Some(Span { open_at: 0, .. }), Some(AnyChunker::Slice(c))) => c.take_first_record(),
            (Some(Span { open_at: 0, .. }), Some(AnyChunker::Read(c))) => c.take_first_record(),
            _ => {
                let raw = source.open(0).map_err(open_error)?;
                let window =
                    ReadWindow::new(decompress(raw, self.request.input.compression), 64 * 1024);
                self.chunker(window, 0, false, None).take_first_record()
            }
        }
    }

    fn buffer_capacity(&self) -> usize {
        self.chunk_size + 64 * 1024
    }

    fn chunker<'a, W: Window<'a>>(
        &self,
        window: W,
        offset: u64,
        skip_partial: bool,
        last_start: Option<u64>,
    ) -> Chunker<W> {
        let chunker = Chunker::new(
            window,
            self.format.clone(),
            self.chunk_size,
            offset,
            skip_partial,
            last_start,
        );
        match self.json {
            Some(JsonType::Document) => chunker.split_json_values(),
            _ => chunker,
        }
    }

    /// Processes every chunk, on this thread or on workers; returns the bytes consumed.
    fn drive<'a, W: Window<'a> + Send>(
        &self,
        chunker: Chunker<W>,
        ctx: &Ctx<'_>,
        sink: &mut (dyn Sink + Send),
        emitter: &mut Emitter<'_>,
    ) -> Result<u64> {
        if self.threads <= 1 {
            self.run_sequential(chunker, ctx, sink, emitter)
        } else {
            self.run_parallel(chunker, ctx, sink, emitter)
        }
    }

    fn run_sequential<'a, W: Window<'a>>(
        &self,
        mut chunker: Chunker<W>,
        ctx: &Ctx<'_>,
        sink: &mut (dyn Sink + Send),
        emitter: &mut Emitter<'_>,
    ) -> Result<u64> {
        let mut scanner = Scanner::new(self.format.clone());
        let mut spare = None;
        let mut out = ChunkOut::new(ctx.plan);
        let mut rows_before = 0;
        while let Some(chunk) = chunker.next_chunk(spare.take())? {
            out.reset(ctx.plan, rows_before);
            process_chunk(ctx, &mut scanner, chunk.bytes(), &mut out)?;
            rows_before += out.rows;
            let more = emitter.emit(&mut out, sink, chunker.consumed())?;
            if !more {
                break;
            }
            spare = chunk.into_buf();
        }
        Ok(chunker.consumed())
    }

    /// `threads` workers (this thread is one of them) take turns cutting the next chunk
    /// (under a lock: cutting is cheap next to scanning), scan it, and hand the output to
    /// [`Ordered`], which writes outputs to the sink in input order — whichever worker
    /// completes the next chunk in sequence writes it. No thread waits on another except to
    /// take a turn at a lock.
    fn run_parallel<'a, W: Window<'a> + Send>(
        &self,
        chunker: Chunker<W>,
        ctx: &Ctx<'_>,
        sink: &mut (dyn Sink + Send),
        emitter: &mut Emitter<'_>,
    ) -> Result<u64> {
        let threads = self.threads;
        let stop = AtomicBool::new(false);
        let consumed = AtomicU64::new(0);
        let feed = Mutex::new(Feed {
            chunker,
            seq: 0,
            done: false,
        });
        // Tokens bound the chunks between cutting and writing: a worker takes one before it
        // cuts a chunk and it comes back once that chunk's output is written, with the
        // chunk's buffer for reuse (`None` for borrowed chunks).
        let tokens = 2 * threads + 2;
        let (pool_tx, pool_rx) = sync_channel::<Option<ChunkBuf>>(tokens);
        for _ in 0..tokens {
            // The pool holds exactly `tokens`, so these sends cannot block or fail.
            let _ = pool_tx.send(None);
        }
        let pool_rx = Mutex::new(pool_rx);
        // Output buffers go back to the workers: a fresh buffer per chunk would be
        // page-faulted in and grown again every time.
        let (spent_tx, spent_rx) = sync_channel::<Vec<u8>>(tokens);
        let spent_rx = Mutex::new(spent_rx);
        let ordered = Mutex::new(Ordered {
            sink,
            emitter,
            waiting: BTreeMap::new(),
            next: 0,
            rows_before: 0,
            pool_tx: Some(pool_tx),
            spent_tx,
            error: None,
        });
        let work = || {
            let mut scanner = Scanner::new(self.format.clone());
            while !stop.load(Ordering::Relaxed) {
                let spare = match pool_rx.lock().map(|rx| rx.recv()) {
                    Ok(Ok(spare)) => spare,
                    _ => break,
                };
                let (seq, next) = {
                    let Ok(mut f) = feed.lock() else { break };
                    if f.done {
                        break;
                    }
                    let seq = f.seq;
                    f.seq += 1;
                    let next = f.chunker.next_chunk(spare);
                    consumed.store(f.chunker.consumed(), Ordering::Relaxed);
                    f.done = !matches!(next, Ok(Some(_)));
                    (seq, next)
                };
                let (res, buf) = match next {
                    Ok(None) => break,
                    Ok(Some(chunk)) => {
                        let mut out = ChunkOut::new(ctx.plan);
                        if let Some(mut bytes) =
                            spent_rx.lock().ok().and_then(|rx| rx.try_recv().ok())
                        {
                            bytes.clear();
                            out.bytes = bytes;
                        }
                        let r =
                            process_chunk(ctx, &mut scanner, chunk.bytes(), &mut out).map(|_| out);
                        (r, chunk.into_buf())
                    }
                    Err(e) => (Err(e), None),
                };
                let Ok(mut o) = ordered.lock() else { break };
                if !o.offer(seq, res, buf, consumed.load(Ordering::Relaxed)) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(work);
            }
            work();
        });
        let o = ordered
            .into_inner()
            .map_err(|_| err!(InternalError, "a scan thread panicked"))?;
        if let Some(e) = o.error {
            return Err(e);
        }
        Ok(consumed.load(Ordering::Relaxed))
    }
}

/// Outputs of a parallel scan waiting for their turn to be written.
struct Ordered<'s, 'e> {
    sink: &'s mut (dyn Sink + Send),
    emitter: &'s mut Emitter<'e>,
    waiting: BTreeMap<u64, (Result<ChunkOut>, Option<ChunkBuf>)>,
    /// The sequence number to write next.
    next: u64,
    rows_before: u64,
    /// Dropped when the scan ends early, which wakes workers waiting for a token.
    pool_tx: Option<SyncSender<Option<ChunkBuf>>>,
    spent_tx: SyncSender<Vec<u8>>,
    error: Option<SelectError>,
}

impl Ordered<'_, '_> {
    /// Takes chunk `seq`'s result and writes every output that is now next in order.
    /// Returns false when the scan should stop (an error, or LIMIT reached).
    fn offer(
        &mut self,
        seq: u64,
        res: Result<ChunkOut>,
        buf: Option<ChunkBuf>,
        consumed: u64,
    ) -> bool {
        if self.pool_tx.is_none() {
            return false;
        }
        self.waiting.insert(seq, (res, buf));
        while let Some((res, buf)) = self.waiting.remove(&self.next) {
            if let Some(tx) = &self.pool_tx {
                let _ = tx.try_send(buf);
            }
            let written = res.and_then(|mut out| {
                out.rows_before = self.rows_before;
                self.rows_before += out.rows;
                let more = self.emitter.emit(&mut out, &mut *self.sink, consumed)?;
                let _ = self.spent_tx.try_send(std::mem::take(&mut out.bytes));
                Ok(more)
            });
            match written {
                Ok(true) => self.next += 1,
                Ok(false) => {
                    self.pool_tx = None;
                    return false;
                }
                Err(e) => {
                    self.error = Some(e);
                    self.pool_tx = None;
                    return false;
                }
            }
        }
        true
    }
}

/// The chunker shared by the workers, with the next chunk's sequence number.
struct Feed<W> {
    chunker: Chunker<W>,
    seq: u64,
    done: bool,
}

/// Where a run reads the object (see [`Select::span`]).
#[derive(Debug, Clone, Copy)]
struct Span {
    open_at: u64,
    skip_partial: bool,
    last_start: Option<u64>,
}

/// Which kind of window a run reads through.
enum AnyChunker<'a> {
    Slice(Chunker<SliceWindow<'a>>),
    Read(Chunker<ReadWindow<Box<dyn Read + Send + 'a>>>),
}

/// Writes chunk outputs to the sink in order, applying LIMIT and merging aggregates.
struct Emitter<'s> {
    limit: Option<u64>,
    aggs: Vec<AggState>,
    returned: u64,
    stats_now: &'s (dyn Fn(u64, Option<u64>) -> Stats + Sync),
}

impl<'s> Emitter<'s> {
    /// LIMIT cuts rows as they are written; an aggregate's one row is cut in [`finish`].
    fn new(plan: &Plan, stats_now: &'s (dyn Fn(u64, Option<u64>) -> Stats + Sync)) -> Self {
        Emitter {
            limit: if plan.is_aggregate() {
                None
            } else {
                plan.limit
            },
            aggs: plan.aggs.iter().map(|a| AggState::new(a.func)).collect(),
            returned: 0,
            stats_now,
        }
    }

    /// Writes one chunk's output; returns whether to go on.
    fn emit(&mut self, out: &mut ChunkOut, sink: &mut dyn Sink, consumed: u64) -> Result<bool> {
        for (acc, part) in self.aggs.iter_mut().zip(out.aggs.drain(..)) {
            acc.merge(part)?;
        }
        let mut bytes = &out.bytes[..];
        let mut more = true;
        if let Some(l) = self.limit {
            let left = l.saturating_sub(out.rows_before);
            if out.rows >= left {
                let cut = match left {
                    0 => 0,
                    n => out.row_ends[(n - 1) as usize],
                };
                bytes = &out.bytes[..cut];
                more = false;
            }
        }
        if !bytes.is_empty() {
            sink.write(bytes)?;
            self.returned += bytes.len() as u64;
        }
        sink.progress(&(self.stats_now)(self.returned, Some(consumed)))?;
        Ok(more)
    }
}

fn open_error(e: std::io::Error) -> SelectError {
    let inner = crate::csv::chunk::read_error(e);
    if inner.code == ErrorCode::TruncatedInput {
        return inner;
    }
    SelectError::new(
        inner.code,
        format!("opening the object failed: {}", inner.message),
    )
}

/// What a chunk produced.
struct ChunkOut {
    bytes: Vec<u8>,
    rows: u64,
    /// Rows output by earlier chunks (set by the collector), for LIMIT.
    rows_before: u64,
    /// End offset of each row in `bytes`, kept only under LIMIT.
    row_ends: Vec<usize>,
    aggs: Vec<AggState>,
}

impl ChunkOut {
    fn new(plan: &Plan) -> Self {
        let mut o = ChunkOut {
            bytes: Vec::new(),
            rows: 0,
            rows_before: 0,
            row_ends: Vec::new(),
            aggs: Vec::new(),
        };
        o.reset(plan, 0);
        o
    }

    /// How many rows this chunk may still write under LIMIT (aggregates apply LIMIT to
    /// their one result row, later).
    fn row_cap(&self, plan: &Plan) -> Option<u64> {
        match plan.limit {
            Some(l) if !plan.is_aggregate() => Some(l.saturating_sub(self.rows_before)),
            _ => None,
        }
    }

    fn reset(&mut self, plan: &Plan, rows_before: u64) {
        self.bytes.clear();
        self.rows = 0;
        self.rows_before = rows_before;
        self.row_ends.clear();
        self.aggs = plan.aggs.iter().map(|a| AggState::new(a.func)).collect();
    }
}

/// Writes an aggregate query's one result row (unless LIMIT 0); returns the bytes returned
/// in all.
fn finish(ctx: &Ctx<'_>, emitter: Emitter<'_>, sink: &mut (dyn Sink + Send)) -> Result<u64> {
    let plan = ctx.plan;
    let mut returned = emitter.returned;
    if plan.is_aggregate() && plan.limit != Some(0) {
        let values = emitter
            .aggs
            .into_iter()
            .map(AggState::finish)
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::new();
        write_agg_row(ctx, &values, &mut out)?;
        sink.write(&out)?;
        returned += out.len() as u64;
    }
    Ok(returned)
}

/// Read-only state shared by every thread of a run.
struct Ctx<'a> {
    plan: &'a Plan,
    writer: &'a RowWriter,
    header: &'a [String],
    /// JSON input: how values are laid out.
    json: Option<JsonType>,
    /// Rows are values ([`Row::node`]: JSON and Parquet input), not CSV records.
    nodes: bool,
}

/// Filters and projects every record of one chunk.
fn process_chunk(
    ctx: &Ctx<'_>,
    scanner: &mut Scanner,
    chunk: &[u8],
    out: &mut ChunkOut,
) -> Result<()> {
    if let Some(json) = ctx.json {
        return process_json_chunk(ctx, json, chunk, out);
    }
    let plan = ctx.plan;
    let row_cap = out.row_cap(plan);
    let mut scratch = RowScratch::default();
    let clean = matches!(plan.output, Output::Exprs(_))
        && ctx.writer.chunk_is_clean(chunk, &scanner.format().record);
    // What `take_row` does, written out: routed through it, every record cost 2.4% more
    // instructions on q28 (callgrind: 402M -> 412M), with or without #[inline(always)].
    scanner.scan(chunk, |rec: &mut Record<'_>| {
        let row = Row {
            record: rec,
            node: None,
            aggs: &[],
        };
        if let Some(f) = &plan.filter {
            if !f.matches(&row)? {
                return Ok(Flow::Continue);
            }
        }
        if plan.is_aggregate() {
            for (spec, state) in plan.aggs.iter().zip(out.aggs.iter_mut()) {
                match &spec.arg {
                    None => state.count_row(),
                    Some(e) => state.update(&e.eval(&row)?)?,
                }
            }
            return Ok(Flow::Continue);
        }
        write_row(
            ctx,
            &row,
            &mut out.bytes,
            &mut scratch,
            clean && rec.is_raw(),
        )?;
        out.rows += 1;
        if let Some(cap) = row_cap {
            out.row_ends.push(out.bytes.len());
            if out.rows >= cap {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    })
}

/// One JSON or Parquet row through the plan: the filter, then the aggregates or the output.
/// `row_cap` is how many rows the chunk may still write under LIMIT. The CSV scan has its own copy
/// (see `process_chunk`), which also copies clean fields without quoting checks.
fn take_row(
    ctx: &Ctx<'_>,
    row: &Row<'_, '_>,
    out: &mut ChunkOut,
    scratch: &mut RowScratch,
    row_cap: Option<u64>,
) -> Result<Flow> {
    let plan = ctx.plan;
    if let Some(f) = &plan.filter {
        if !f.matches(row)? {
            return Ok(Flow::Continue);
        }
    }
    if plan.is_aggregate() {
        for (spec, state) in plan.aggs.iter().zip(out.aggs.iter_mut()) {
            match &spec.arg {
                None => state.count_row(),
                Some(e) => state.update(&e.eval(row)?)?,
            }
        }
        return Ok(Flow::Continue);
    }
    write_row(ctx, row, &mut out.bytes, scratch, false)?;
    out.rows += 1;
    if let Some(cap) = row_cap {
        out.row_ends.push(out.bytes.len());
        if out.rows >= cap {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// Filters and projects every row of one chunk of JSON input: each line (LINES) or each
/// top-level value (DOCUMENT) is parsed, and the FROM path makes its rows.
fn process_json_chunk(
    ctx: &Ctx<'_>,
    json: JsonType,
    chunk: &[u8],
    out: &mut ChunkOut,
) -> Result<()> {
    let plan = ctx.plan;
    let row_cap = out.row_cap(plan);
    let mut scratch = RowScratch::default();
    let mut value =
        |node: &Node<'_>| -> Result<Flow> { take_value(ctx, node, out, &mut scratch, row_cap) };
    match json {
        JsonType::Lines => {
            let mut rest = chunk;
            while !rest.is_empty() {
                let window = rest;
                let (line, next) = match memchr::memchr(b'\n', rest) {
                    Some(i) => (&rest[..i], &rest[i + 1..]),
                    None => (rest, &rest[rest.len()..]),
                };
                rest = next;
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                check_json_record_size(line.len())?;
                // One UTF-8 check for the line instead of one per string; invalid text is
                // parsed as bytes, which finds and reports the bad string.
                let mut parser = match std::str::from_utf8(line) {
                    Ok(text) => crate::json::Parser::for_text(text),
                    Err(_) => crate::json::Parser::new(line),
                }
                .with_window(window);
                let node = parser
                    .value_keeping(plan.top_keys.as_ref())
                    .and_then(|node| match parser.at_end() {
                        true => Ok(node),
                        false => Err(crate::json::JsonError {
                            offset: parser.position(),
                            what: "unexpected text after the JSON value",
                        }),
                    })
                    .map_err(|e| json_error(&e, line))?;
                if let Flow::Stop = value(&node)? {
                    break;
                }
            }
        }
        JsonType::Document => {
            let mut parser = match std::str::from_utf8(chunk) {
                Ok(text) => crate::json::Parser::for_text(text),
                Err(_) => crate::json::Parser::new(chunk),
            };
            while !parser.at_end() {
                let start = parser.position();
                let node = parser
                    .value_keeping(plan.top_keys.as_ref())
                    .map_err(|e| json_error(&e, &chunk[start..]))?;
                check_json_record_size(parser.position() - start)?;
                if let Flow::Stop = value(&node)? {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// One top-level value (a JSON value, a Parquet row) through the FROM path, then each row
/// it makes through the plan.
fn take_value(
    ctx: &Ctx<'_>,
    node: &Node<'_>,
    out: &mut ChunkOut,
    scratch: &mut RowScratch,
    row_cap: Option<u64>,
) -> Result<Flow> {
    let empty = Record::new(&[], &[]);
    let row_of = |node| Row {
        record: &empty,
        node,
        aggs: &[],
    };
    if ctx.plan.rows.is_empty() {
        return take_row(ctx, &row_of(Some(node)), out, scratch, row_cap);
    }
    let mut rows = Vec::new();
    expand(Some(node), &ctx.plan.rows, &mut rows);
    for r in rows {
        if let Flow::Stop = take_row(ctx, &row_of(r), out, scratch, row_cap)? {
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}

/// Filters and projects every row of one Parquet row group. Without a filter or a FROM
/// path, the decoder stops at LIMIT's row.
fn process_parquet_row_group(
    ctx: &Ctx<'_>,
    file: &ParquetFile<'_>,
    group: usize,
    mask: parquet::arrow::ProjectionMask,
    out: &mut ChunkOut,
) -> Result<()> {
    let plan = ctx.plan;
    let row_cap = out.row_cap(plan);
    let decode_limit = match (&plan.filter, plan.rows.is_empty()) {
        (None, true) => row_cap.map(|c| usize::try_from(c).unwrap_or(usize::MAX)),
        _ => None,
    };
    let mut scratch = RowScratch::default();
    file.read_row_group(group, mask, decode_limit, |batch| {
        let rows = BatchRows::new(batch)?;
        let columns = rows.columns();
        let mut members = Vec::new();
        for i in 0..rows.len() {
            BatchRows::row(&columns, i, &mut members)?;
            let node = Node::Object(std::mem::take(&mut members));
            let flow = take_value(ctx, &node, out, &mut scratch, row_cap)?;
            if let Node::Object(m) = node {
                // The next row reuses the allocation.
                members = m;
            }
            if let Flow::Stop = flow {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// A JSON record (a line, or a top-level value) is capped at 1 MiB as a CSV record is. The
/// chunker finds most over-long records; this catches those inside one chunk.
fn check_json_record_size(len: usize) -> Result<()> {
    if len > crate::csv::MAX_RECORD_BYTES {
        return Err(err!(
            OverMaxRecordSize,
            "a JSON record is {len} bytes long, over the 1 MiB limit"
        ));
    }
    Ok(())
}

/// JSONParsingError naming the problem and showing where the record starts.
fn json_error(e: &JsonError, record: &[u8]) -> SelectError {
    let head = &record[..record.len().min(40)];
    let ellipsis = if record.len() > head.len() { "…" } else { "" };
    SelectError::new(
        ErrorCode::JSONParsingError,
        format!(
            "malformed JSON: {} at byte {} of the record starting {:?}{ellipsis}",
            e.what,
            e.offset,
            String::from_utf8_lossy(head)
        ),
    )
}

/// `_N` names for `SELECT *` without a header, made once per chunk.
fn star_name<'n>(header: &'n [String], names: &'n mut Vec<String>, i: usize) -> &'n str {
    if let Some(h) = header.get(i) {
        return h;
    }
    while names.len() <= i {
        names.push(format!("_{}", names.len() + 1));
    }
    &names[i]
}

/// Writes one output row. `clean`: the record's fields need no quoting (see
/// `RowWriter::chunk_is_clean`).
fn write_row(
    ctx: &Ctx<'_>,
    row: &Row<'_, '_>,
    out: &mut Vec<u8>,
    scratch: &mut RowScratch,
    clean: bool,
) -> Result<()> {
    let w = ctx.writer;
    let row_start = out.len();
    w.begin_row(out);
    match &ctx.plan.output {
        Output::Star if ctx.nodes => match row.node {
            // A MISSING row is an empty record.
            None => {}
            Some(Node::Object(members)) => {
                for (i, (key, value)) in members.iter().enumerate() {
                    w.node_field(out, i, key, value);
                }
            }
            Some(other) => w.node_field(out, 0, "_1", other),
        },
        Output::Star => {
            for i in 0..row.record.len() {
                let s = crate::eval::expr::field_value(row.record, i)?;
                let name = star_name(ctx.header, &mut scratch.names, i);
                w.value_field(out, i, name, &s);
            }
        }
        Output::Exprs(exprs) => {
            for (i, e) in exprs.iter().enumerate() {
                let name = &ctx.plan.names[i];
                match e {
                    CExpr::Field { index } => match field_text(row.record, *index)? {
                        Some(s) => {
                            if clean {
                                w.clean_field(out, i, name, s);
                            } else {
                                w.str_field(out, i, name, s);
                            }
                        }
                        None => w.value_field(out, i, name, &Value::Missing),
                    },
                    // A JSON value is copied as written (numbers keep their text).
                    CExpr::Path { steps } => match walk(row.node, steps) {
                        Some(node) => w.node_field(out, i, name, node),
                        None => w.value_field(out, i, name, &Value::Missing),
                    },
                    other => {
                        let v = other.eval(row)?;
                        w.value_field(out, i, name, &v);
                    }
                }
            }
        }
    }
    w.end_row(out);
    check_row_size(out.len() - row_start)
}

/// AWS caps result records at 1 MiB too.
fn check_row_size(len: usize) -> Result<()> {
    if len > crate::csv::MAX_RECORD_BYTES {
        return Err(err!(
            OverMaxRecordSize,
            "a result record is {len} bytes, over the 1 MiB limit"
        ));
    }
    Ok(())
}

/// Per-chunk buffers reused from row to row.
#[derive(Default)]
struct RowScratch {
    /// `SELECT *` names `_N` without a header.
    names: Vec<String>,
}

fn write_agg_row(ctx: &Ctx<'_>, values: &[Value<'static>], out: &mut Vec<u8>) -> Result<()> {
    let empty = Record::new(&[], &[]);
    let row = Row {
        record: &empty,
        node: None,
        aggs: values,
    };
    write_row(ctx, &row, out, &mut RowScratch::default(), false)
}
