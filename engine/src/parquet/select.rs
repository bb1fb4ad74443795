//! A select over a Parquet object: the footer, then the row groups that the ScanRange and
//! the statistics leave, one after another, reading only the columns the query names; each
//! row, as a value, through the bound query.

use parquet::arrow::ProjectionMask;

use crate::csv::Flow;
use crate::error::Result;
use crate::eval::bind::{bind, Columns, Plan};
use crate::exec::emit::{finish, ChunkOut, Emitter};
use crate::exec::row::{take_value, RowCtx, RowScratch};
use crate::exec::{Select, Sink, Stats};
use crate::json::Node;
use crate::parquet::prune::RowGroupStats;
use crate::parquet::rows::BatchRows;
use crate::parquet::ParquetFile;
use crate::source::ObjectSource;

/// Runs `select` (Parquet input) over `source`.
pub(crate) fn run(
    select: &Select,
    source: &dyn ObjectSource,
    sink: &mut (dyn Sink + Send),
) -> Result<Stats> {
    let plan = bind(&select.query, select.request.dialect, Columns::Json)?;
    let ctx = RowCtx {
        plan: &plan,
        writer: &select.writer,
        header: &[],
        input: &select.input,
    };
    let file = ParquetFile::open(source)?;
    let stats_now = |returned: u64, _: Option<u64>| Stats {
        bytes_scanned: file.bytes_read(),
        bytes_processed: file.bytes_read(),
        bytes_returned: returned,
    };
    let mut emitter = Emitter::new(&ctx, &stats_now)?;
    let mask = file.projection(plan.top_keys.as_ref());
    let nothing_to_read = plan.limit == Some(0) && !plan.is_aggregate();
    let groups = match nothing_to_read {
        true => Vec::new(),
        false => row_groups(select, &file, &plan, source.size())?,
    };
    let mut out = ChunkOut::new(&plan);
    let mut rows_before = 0;
    for g in groups {
        file.check_row_group(g, &mask, select.max_row_group_bytes)?;
        out.reset(&plan, rows_before);
        rows(&ctx, &file, g, mask.clone(), &mut out)?;
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

/// The row groups a Parquet select reads: those that start inside the ScanRange (all when
/// there is none), less those whose statistics rule the filter out.
fn row_groups(
    select: &Select,
    file: &ParquetFile<'_>,
    plan: &Plan,
    size: Option<u64>,
) -> Result<Vec<usize>> {
    let (first, last) = match &select.request.scan_range {
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

/// Filters and projects every row of one row group. Without a filter or a FROM path, the
/// decoder stops at LIMIT's row.
fn rows(
    ctx: &RowCtx<'_>,
    file: &ParquetFile<'_>,
    group: usize,
    mask: ProjectionMask,
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
