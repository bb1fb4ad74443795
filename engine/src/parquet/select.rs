//! A select over a Parquet object: the footer, then the row groups that the ScanRange and
//! the statistics leave, one after another, reading only the columns the query names; each
//! row, as a value, through the bound query. A filter of the shapes [`ColumnFilter`]
//! compiles is evaluated over whole columns by the decoder instead, so that only the rows
//! it keeps are decoded and made values, and those go through the query without it. Rows
//! that then need no evaluation at all (the SELECT list is `*` or plain column names, text
//! output) are written from the batch's columns ([`Direct`]) without being made objects.

use std::borrow::Cow;

use parquet::arrow::ProjectionMask;

use crate::csv::Flow;
use crate::error::Result;
use crate::eval::bind::{bind, Columns, Output, Plan};
use crate::eval::expr::CExpr;
use crate::exec::emit::{finish, ChunkOut, Emitter};
use crate::exec::row::{check_row_size, take_value, RowCtx, RowScratch};
use crate::exec::{Select, Sink, Stats};
use crate::json::path::{key_matches, Step};
use crate::json::Node;
use crate::output::{RowWriter, Writer};
use crate::parquet::filter::ColumnFilter;
use crate::parquet::prune::RowGroupStats;
use crate::parquet::rows::{BatchRows, Column};
use crate::parquet::ParquetFile;
use crate::source::ObjectSource;
use crate::value::Value;

/// Runs `select` (Parquet input) over `source`.
pub(crate) fn run(
    select: &Select,
    source: &dyn ObjectSource,
    sink: &mut (dyn Sink + Send),
) -> Result<Stats> {
    let plan = bind(&select.query, select.request.dialect, Columns::Json)?;
    let file = ParquetFile::open(source)?;
    let filter = match (&plan.filter, plan.rows.is_empty()) {
        (Some(f), true) => ColumnFilter::compile(f, file.schema()),
        _ => None,
    };
    // The rows the decoder hands over have passed a column filter already.
    let row_plan = match &filter {
        Some(_) => Cow::Owned(plan.without_filter()),
        None => Cow::Borrowed(&plan),
    };
    let ctx = RowCtx {
        plan: &row_plan,
        writer: &select.writer,
        header: &[],
        input: &select.input,
    };
    let stats_now = |returned: u64, _: Option<u64>| Stats {
        bytes_scanned: file.bytes_read(),
        bytes_processed: file.bytes_read(),
        bytes_returned: returned,
    };
    let mut emitter = Emitter::new(&ctx, &stats_now)?;
    // Every column the query reads is checked; the rows read those the filter leaves.
    let read = file.projection(plan.top_keys.as_ref());
    let mask = file.projection(row_plan.top_keys.as_ref());
    let nothing_to_read = plan.limit == Some(0) && !plan.is_aggregate();
    let groups = match nothing_to_read {
        true => Vec::new(),
        false => row_groups(select, &file, &plan, source.size())?,
    };
    let mut out = ChunkOut::new(&row_plan);
    let mut rows_before = 0;
    for g in groups {
        file.check_row_group(g, &read, select.max_row_group_bytes)?;
        out.reset(&row_plan, rows_before);
        rows(&ctx, &file, g, mask.clone(), filter.as_ref(), &mut out)?;
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

/// Filters and projects every row of one row group (those `filter` keeps, when the decoder
/// evaluates it). Without a filter left for the rows or a FROM path, the decoder stops at
/// LIMIT's row.
fn rows(
    ctx: &RowCtx<'_>,
    file: &ParquetFile<'_>,
    group: usize,
    mask: ProjectionMask,
    filter: Option<&ColumnFilter>,
    out: &mut ChunkOut,
) -> Result<()> {
    let plan = ctx.plan;
    let row_cap = out.row_cap(plan);
    let decode_limit = match (&plan.filter, plan.rows.is_empty()) {
        (None, true) => row_cap.map(|c| usize::try_from(c).unwrap_or(usize::MAX)),
        _ => None,
    };
    let direct = Direct::of(ctx);
    let mut scratch = RowScratch::default();
    file.read_row_group(group, mask, filter, decode_limit, |batch| {
        let rows = BatchRows::new(batch)?;
        let columns = rows.columns();
        if let Some((writer, direct)) = &direct {
            return direct.write(writer, ctx, &columns, rows.len(), out, row_cap);
        }
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

/// Output rows that are a batch's columns as they are: `SELECT *`, or plain top-level names,
/// in text output, with no filter or aggregate left to evaluate and no FROM path. Each
/// field is written as the row path writes the member it would find ([`write_row`]).
///
/// [`write_row`]: crate::exec::row::write_row
enum Direct<'p> {
    Star,
    /// The key each output column names.
    Names(Vec<(&'p str, bool)>),
}

impl<'p> Direct<'p> {
    fn of<'c>(ctx: &'c RowCtx<'p>) -> Option<(&'c RowWriter, Direct<'p>)> {
        let plan = ctx.plan;
        let Writer::Text(writer) = ctx.writer else {
            return None;
        };
        if plan.filter.is_some() || plan.is_aggregate() || !plan.rows.is_empty() {
            return None;
        }
        let direct = match &plan.output {
            Output::Star => Direct::Star,
            Output::Exprs(exprs) => Direct::Names(
                exprs
                    .iter()
                    .map(|e| match e {
                        CExpr::Path { steps } => match steps.as_ref() {
                            [Step::Key { name, exact }] => Some((name.as_ref(), *exact)),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect::<Option<_>>()?,
            ),
        };
        Some((writer, direct))
    }

    /// Writes rows `0..len` of `columns`; false once LIMIT's row is written.
    fn write(
        &self,
        w: &RowWriter,
        ctx: &RowCtx<'_>,
        columns: &[(&str, Column<'_>)],
        len: usize,
        out: &mut ChunkOut,
        row_cap: Option<u64>,
    ) -> Result<bool> {
        // Each output column's batch column, found as the row path finds a key: the first
        // member whose name matches; `None` is MISSING.
        let picked: Vec<(usize, &str, Option<&Column<'_>>)> = match self {
            Direct::Star => columns
                .iter()
                .enumerate()
                .map(|(i, (name, c))| (i, *name, Some(c)))
                .collect(),
            Direct::Names(names) => names
                .iter()
                .enumerate()
                .map(|(i, (name, exact))| {
                    let column = columns
                        .iter()
                        .find(|(k, _)| key_matches(k.as_bytes(), name.as_bytes(), *exact))
                        .map(|(_, c)| c);
                    (i, ctx.plan.names[i].as_str(), column)
                })
                .collect(),
        };
        for r in 0..len {
            let bytes = &mut out.bytes;
            let row_start = bytes.len();
            w.begin_row(bytes);
            for (i, name, column) in &picked {
                match column {
                    Some(c) => w.node_field(bytes, *i, name, &c.node(r)?),
                    None => w.value_field(bytes, *i, name, &Value::Missing),
                }
            }
            w.end_row(bytes);
            check_row_size(bytes.len() - row_start)?;
            if let Flow::Stop = out.row_written(row_cap) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
