//! Opening a CSV or JSON object: where to read (the ScanRange), the header line, the window
//! the chunker reads through, and the byte counts; then the driver over its chunks.
//!
//! An uncompressed object already in memory (or mapped) is chunked in place; anything else
//! is read (and decompressed) into buffers. Bytes are counted at the chunker when it sees
//! the object's own bytes (a ScanRange, or memory), otherwise at the source (scanned) and
//! after the decoder (processed).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::csv::chunk::{ReadWindow, SliceWindow, Window};
use crate::csv::{Chunker, CsvFormat, Scanner};
use crate::err;
use crate::error::{ErrorCode, Result, SelectError};
use crate::eval::bind::{bind, Columns};
use crate::exec::drive::drive;
use crate::exec::emit::{finish, ChunkOut, Emitter};
use crate::exec::row::RowCtx;
use crate::exec::{Input, Select, Sink, Stats};
use crate::request::{Compression, FileHeaderInfo, JsonType};
use crate::source::{decompress, Counting, ObjectSource};

/// Runs `select` (CSV or JSON input) over `source`.
pub(super) fn run(
    select: &Select,
    source: &dyn ObjectSource,
    sink: &mut (dyn Sink + Send),
) -> Result<Stats> {
    let opener = Opener::new(select);
    let scanned = Arc::new(AtomicU64::new(0));
    let processed = Arc::new(AtomicU64::new(0));
    let span = opener.span(source)?;
    let in_memory = match source.bytes() {
        Some(b) if select.request.input.compression == Compression::None => Some(b),
        _ => None,
    };
    let mut chunker = match span {
        None => None,
        Some(span) => Some(opener.open(source, in_memory, span, &scanned, &processed)?),
    };
    let header = opener.header(source, span, chunker.as_mut())?;
    let names = match opener.format.header {
        FileHeaderInfo::Use => header,
        _ => None,
    };
    let columns = match select.input {
        Input::Csv(_) => Columns::Csv(names.as_deref()),
        Input::Json(_) | Input::Parquet => Columns::Json,
    };
    let plan = bind(&select.query, select.request.dialect, columns)?;
    let ctx = RowCtx {
        plan: &plan,
        writer: &select.writer,
        header: names.as_deref().unwrap_or(&[]),
        input: &select.input,
    };

    let count_consumed = select.request.scan_range.is_some() || in_memory.is_some();
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
    let mut emitter = Emitter::new(&ctx, &stats_now)?;
    let nothing_to_read = plan.limit == Some(0) && !plan.is_aggregate();
    let consumed = match chunker.take() {
        _ if nothing_to_read => None,
        None => None,
        Some(AnyChunker::Slice(c)) => Some(drive_rows(select, c, &ctx, sink, &mut emitter)?),
        Some(AnyChunker::Read(c)) => Some(drive_rows(select, c, &ctx, sink, &mut emitter)?),
    };
    let returned = finish(&ctx, emitter, sink)?;
    let stats = stats_now(returned, consumed);
    sink.progress(&stats)?;
    Ok(stats)
}

/// Drives the chunks through the input's row loop.
fn drive_rows<'a, W: Window<'a> + Send>(
    select: &Select,
    chunker: Chunker<W>,
    ctx: &RowCtx<'_>,
    sink: &mut (dyn Sink + Send),
    emitter: &mut Emitter<'_>,
) -> Result<u64> {
    let threads = select.threads;
    match &select.input {
        Input::Csv(format) => {
            let new_loop = || {
                let mut scanner = Scanner::new(format.clone());
                move |chunk: &[u8], out: &mut ChunkOut| {
                    crate::csv::select::rows(ctx, &mut scanner, chunk, out)
                }
            };
            drive(chunker, threads, ctx.plan, &new_loop, sink, emitter)
        }
        Input::Json(json) => {
            let new_loop = || {
                |chunk: &[u8], out: &mut ChunkOut| crate::json::select::rows(ctx, *json, chunk, out)
            };
            drive(chunker, threads, ctx.plan, &new_loop, sink, emitter)
        }
        Input::Parquet => Err(err!(
            InternalError,
            "Parquet input is read by row group, not as text"
        )),
    }
}

/// Where a run reads the object (see [`Opener::span`]).
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

/// Opens a text object for one run.
struct Opener<'s> {
    select: &'s Select,
    /// The format that cuts the object into records.
    format: CsvFormat,
}

impl<'s> Opener<'s> {
    fn new(select: &'s Select) -> Self {
        Opener {
            select,
            format: select.input.chunk_format(),
        }
    }

    /// Where to read: `None` when a ScanRange selects nothing, else the offset to open the
    /// object at, whether to drop the partial record there, and the last offset at which a
    /// record may start.
    fn span(&self, source: &dyn ObjectSource) -> Result<Option<Span>> {
        let Some(range) = &self.select.request.scan_range else {
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

    /// The chunker for the run: in place over memory, or over a counted (and decompressed)
    /// read of the object.
    fn open<'a>(
        &self,
        source: &'a dyn ObjectSource,
        in_memory: Option<&'a [u8]>,
        span: Span,
        scanned: &Arc<AtomicU64>,
        processed: &Arc<AtomicU64>,
    ) -> Result<AnyChunker<'a>> {
        let Span {
            open_at,
            skip_partial,
            last_start,
        } = span;
        if let Some(bytes) = in_memory {
            source.will_read(open_at, last_start);
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
        let decoded: Box<dyn Read + Send + 'a> = Box::new(Counting::new(
            decompress(Box::new(counted), self.select.request.input.compression),
            processed.clone(),
        ));
        let window = ReadWindow::new(decoded, self.select.chunk_size + 64 * 1024);
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
                let compression = self.select.request.input.compression;
                let window = ReadWindow::new(decompress(raw, compression), 64 * 1024);
                self.chunker(window, 0, false, None).take_first_record()
            }
        }
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
            self.select.chunk_size,
            offset,
            skip_partial,
            last_start,
        );
        match self.select.input {
            Input::Json(JsonType::Document) => chunker.split_json_values(),
            _ => chunker,
        }
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
