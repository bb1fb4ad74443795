//! Chunk outputs, and the emitter that writes them to the sink in order.
//!
//! Each chunk (or Parquet row group) is filtered and projected into its own [`ChunkOut`],
//! possibly on another thread, without knowing what earlier chunks produced. The
//! [`Emitter`] sees the outputs in input order: it cuts LIMIT's last row, merges each
//! chunk's partial aggregates, and reports progress; [`finish`] writes an aggregate query's
//! one row at the end.

use arrow_array::RecordBatch;

use crate::csv::Flow;
use crate::err;
use crate::error::Result;
use crate::eval::agg::AggState;
use crate::eval::bind::Plan;
use crate::exec::row::{write_agg_row, RowCtx};
use crate::exec::{Sink, Stats};
use crate::output::arrow::{ArrowStream, Columns};
use crate::output::Writer;

/// What a chunk produced.
pub(crate) struct ChunkOut {
    /// Text output: the rows, written.
    pub(crate) bytes: Vec<u8>,
    /// Arrow output: the rows, column by column (made at the chunk's first row).
    pub(crate) columns: Option<Columns>,
    /// Arrow output made of input columns as they are (a Parquet select's plain names),
    /// after the rows in `columns`.
    pub(crate) batches: Vec<RecordBatch>,
    pub(crate) rows: u64,
    /// Rows of the chunk this one was reset from: what the next Arrow builders are sized
    /// for, since neighbouring chunks keep about as many rows (growing a builder as it
    /// fills copied each column about once more).
    pub(crate) rows_last: u64,
    /// Rows output by earlier chunks (set by the driver), for LIMIT.
    pub(crate) rows_before: u64,
    /// End offset of each row in `bytes`, kept only under LIMIT.
    pub(crate) row_ends: Vec<usize>,
    pub(crate) aggs: Vec<AggState>,
}

impl ChunkOut {
    pub(crate) fn new(plan: &Plan) -> Self {
        let mut o = ChunkOut {
            bytes: Vec::new(),
            columns: None,
            batches: Vec::new(),
            rows: 0,
            rows_last: 0,
            rows_before: 0,
            row_ends: Vec::new(),
            aggs: Vec::new(),
        };
        o.reset(plan, 0);
        o
    }

    /// How many rows this chunk may still write under LIMIT (aggregates apply LIMIT to
    /// their one result row, later).
    pub(crate) fn row_cap(&self, plan: &Plan) -> Option<u64> {
        match plan.limit {
            Some(l) if !plan.is_aggregate() => Some(l.saturating_sub(self.rows_before)),
            _ => None,
        }
    }

    /// Counts the row just written to `bytes`; under LIMIT (`row_cap`, from
    /// [`ChunkOut::row_cap`]) records where it ends, and stops the chunk at the cap.
    #[inline]
    pub(crate) fn row_written(&mut self, row_cap: Option<u64>) -> Flow {
        self.rows += 1;
        if let Some(cap) = row_cap {
            self.row_ends.push(self.bytes.len());
            if self.rows >= cap {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    pub(crate) fn reset(&mut self, plan: &Plan, rows_before: u64) {
        self.bytes.clear();
        self.columns = None;
        self.batches.clear();
        self.rows_last = std::mem::take(&mut self.rows);
        self.rows_before = rows_before;
        self.row_ends.clear();
        self.aggs = plan.aggs.iter().map(|a| AggState::new(a.func)).collect();
    }
}

/// The run's byte counts so far, given the bytes returned and, when the chunker counts the
/// input, the bytes it consumed.
pub(crate) type StatsNow<'s> = &'s (dyn Fn(u64, Option<u64>) -> Stats + Sync);

/// Writes chunk outputs to the sink in order, applying LIMIT and merging aggregates.
pub(crate) struct Emitter<'s> {
    limit: Option<u64>,
    aggs: Vec<AggState>,
    returned: u64,
    stats_now: StatsNow<'s>,
    /// The counts after the previous chunk: what the next progress report says.
    previous: Stats,
    /// Arrow output: the IPC stream, which alone encodes batches, in order.
    arrow: Option<ArrowStream>,
}

impl<'s> Emitter<'s> {
    /// LIMIT cuts rows as they are written; an aggregate's one row is cut in [`finish`].
    pub(crate) fn new(ctx: &RowCtx<'_>, stats_now: StatsNow<'s>) -> Result<Self> {
        let plan = ctx.plan;
        let arrow = match ctx.writer {
            Writer::Arrow(a) => Some(ArrowStream::new(a.schema(plan), a.options())?),
            Writer::Text(_) => None,
            Writer::ArrowOfFile => return Err(crate::output::not_made()),
        };
        Ok(Emitter {
            limit: if plan.is_aggregate() {
                None
            } else {
                plan.limit
            },
            aggs: plan.aggs.iter().map(|a| AggState::new(a.func)).collect(),
            returned: 0,
            stats_now,
            previous: Stats::default(),
            arrow,
        })
    }

    /// Writes one chunk's output and reports progress; returns whether to go on. `consumed`
    /// is the input the chunker has consumed.
    ///
    /// The report is one chunk behind: it gives the counts after the previous chunk. The
    /// last chunk's are given once the run is done, after an aggregate's row is written, so
    /// that the first report to show the whole input scanned also shows all that was
    /// returned (clients such as ceph/s3-tests read the figures so).
    pub(crate) fn emit(
        &mut self,
        out: &mut ChunkOut,
        sink: &mut dyn Sink,
        consumed: u64,
    ) -> Result<bool> {
        for (acc, part) in self.aggs.iter_mut().zip(out.aggs.drain(..)) {
            acc.merge(part)?;
        }
        let mut keep = out.rows;
        let mut more = true;
        if let Some(l) = self.limit {
            let left = l.saturating_sub(out.rows_before);
            if out.rows >= left {
                keep = left;
                more = false;
            }
        }
        self.write_rows(out, keep, sink)?;
        let now = (self.stats_now)(self.returned, Some(consumed));
        sink.progress(&std::mem::replace(&mut self.previous, now))?;
        Ok(more)
    }

    /// Writes the first `keep` rows of `out` to the sink.
    fn write_rows(&mut self, out: &mut ChunkOut, keep: u64, sink: &mut dyn Sink) -> Result<()> {
        let Some(stream) = &mut self.arrow else {
            let cut = match keep {
                _ if keep >= out.rows => out.bytes.len(),
                0 => 0,
                n => out.row_ends[(n - 1) as usize],
            };
            return self.send(&out.bytes[..cut], sink);
        };
        if let Some(mut columns) = out.columns.take() {
            let batch = columns.finish(stream.schema())?;
            out.batches.insert(0, batch);
        }
        // One IPC batch per chunk: a Parquet row group's rows come in many small batches.
        let batch = match out.batches.len() {
            0 => None,
            1 => out.batches.pop(),
            _ => Some(
                arrow_select::concat::concat_batches(stream.schema(), &out.batches)
                    .map_err(|e| err!(InternalError, "joining Arrow result batches: {e}"))?,
            ),
        };
        out.batches.clear();
        if let Some(batch) = batch {
            let keep = usize::try_from(keep).unwrap_or(usize::MAX);
            stream.write(&batch.slice(0, keep.min(batch.num_rows())))?;
        }
        let bytes = stream.take();
        self.send(&bytes, sink)
    }

    fn send(&mut self, bytes: &[u8], sink: &mut dyn Sink) -> Result<()> {
        if !bytes.is_empty() {
            sink.write(bytes)?;
            self.returned += bytes.len() as u64;
        }
        Ok(())
    }
}

/// Writes an aggregate query's one result row (unless LIMIT 0) and, for Arrow output, the
/// end of the stream; returns the bytes returned in all.
pub(crate) fn finish(
    ctx: &RowCtx<'_>,
    mut emitter: Emitter<'_>,
    sink: &mut (dyn Sink + Send),
) -> Result<u64> {
    let plan = ctx.plan;
    if plan.is_aggregate() && plan.limit != Some(0) {
        let values = std::mem::take(&mut emitter.aggs)
            .into_iter()
            .map(AggState::finish)
            .collect::<Result<Vec<_>>>()?;
        let mut out = ChunkOut::new(plan);
        write_agg_row(ctx, &values, &mut out)?;
        emitter.write_rows(&mut out, 1, sink)?;
    }
    if let Some(stream) = &mut emitter.arrow {
        stream.finish()?;
        let bytes = stream.take();
        emitter.send(&bytes, sink)?;
    }
    Ok(emitter.returned)
}
