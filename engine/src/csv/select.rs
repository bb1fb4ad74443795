//! The CSV row loop: every record of a chunk through the bound query.

use crate::csv::{Flow, Record, Scanner};
use crate::error::Result;
use crate::eval::bind::Output;
use crate::eval::expr::Row;
use crate::exec::emit::ChunkOut;
use crate::exec::row::{write_row, RowCtx, RowScratch};
use crate::output::Writer;

/// Filters and projects every record of one chunk into `out`.
///
/// This is `exec::row::take_row` written out for records: it is the engine's innermost
/// loop, and here a whole chunk can be found clean (no field needs quoting on output), so
/// that fields are copied without a check each.
pub(crate) fn rows(
    ctx: &RowCtx<'_>,
    scanner: &mut Scanner,
    chunk: &[u8],
    out: &mut ChunkOut,
) -> Result<()> {
    let plan = ctx.plan;
    let row_cap = out.row_cap(plan);
    let mut scratch = RowScratch::default();
    let clean = match ctx.writer {
        Writer::Text(w) => {
            matches!(plan.output, Output::Exprs(_))
                && w.chunk_is_clean(chunk, &scanner.format().record)
        }
        Writer::Arrow(_) | Writer::ArrowOfFile => false,
    };
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
        write_row(ctx, &row, out, &mut scratch, clean && rec.is_raw())?;
        Ok(out.row_written(row_cap))
    })
}
