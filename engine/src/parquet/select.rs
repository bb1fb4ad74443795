//! A select over a Parquet object: the footer, then the row groups that the ScanRange and
//! the statistics leave, one after another, reading only the columns the query names; each
//! row, as a value, through the bound query. A filter of the shapes [`ColumnFilter`]
//! compiles is evaluated over whole columns by the decoder instead, so that only the rows
//! it keeps are decoded and made values, and those go through the query without it. Rows
//! that then need no evaluation at all (the SELECT list is `*` or plain column names) are
//! written from the batch's columns ([`Direct`]) without being made objects: as text field
//! by field, or as Arrow output the columns themselves, cast to their output types.
//!
//! Arrow output's column types are the file's (`output::arrow`), so its writer is made here,
//! once the footer is read.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{ArrowError, DataType, SchemaRef};
use parquet::arrow::ProjectionMask;

use crate::csv::Flow;
use crate::err;
use crate::error::Result;
use crate::eval::bind::{bind, Columns, Output, Plan};
use crate::eval::expr::CExpr;
use crate::exec::emit::{finish, ChunkOut, Emitter};
use crate::exec::row::{check_row_size, take_value, RowCtx, RowScratch};
use crate::exec::{Select, Sink, Stats};
use crate::json::path::{key_matches, Step};
use crate::json::Node;
use crate::output::{InputTypes, RowWriter, Writer};
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
    let of_file;
    let writer = match &select.writer {
        Writer::ArrowOfFile => {
            let types = Some(InputTypes::File(file.schema()));
            let request = &select.request;
            of_file = Writer::new(&request.output, request.dialect, &select.query, types)?;
            &of_file
        }
        writer => writer,
    };
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
        writer,
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
    let direct = Direct::of(plan);
    let arrow_schema = match ctx.writer {
        Writer::Arrow(a) => Some(a.schema(plan)),
        _ => None,
    };
    let mut scratch = RowScratch::default();
    file.read_row_group(group, mask, filter, decode_limit, |batch| {
        if let (Some(Direct::Names(names)), Some(schema)) = (&direct, &arrow_schema) {
            return arrow_direct(names, schema, batch, out, row_cap);
        }
        let rows = BatchRows::new(batch)?;
        let columns = rows.columns();
        if let (Some(direct), Writer::Text(writer)) = (&direct, ctx.writer) {
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

/// Writes rows of `batch` as Arrow output of `schema`: each output column is the batch
/// column its name picks (as [`Direct::write`] finds it), cast to the output's type (an
/// INT column of Int32 values widens, a date becomes its midnight) — never made values.
/// False once LIMIT's row is taken.
fn arrow_direct(
    names: &[(&str, bool)],
    schema: &SchemaRef,
    batch: &RecordBatch,
    out: &mut ChunkOut,
    row_cap: Option<u64>,
) -> Result<bool> {
    let mut rows = batch.num_rows();
    let mut more = true;
    if let Some(cap) = row_cap {
        let left = usize::try_from(cap.saturating_sub(out.rows)).unwrap_or(usize::MAX);
        if rows >= left {
            (rows, more) = (left, false);
        }
    }
    let fields = batch.schema_ref().fields();
    let columns = names
        .iter()
        .zip(schema.fields())
        .map(|((name, exact), output)| {
            let i = fields
                .iter()
                .position(|f| key_matches(f.name().as_bytes(), name.as_bytes(), *exact))
                .ok_or_else(|| err!(InternalError, "the typed column {name} was not read"))?;
            let column = batch.column(i).slice(0, rows);
            output_column(&column, output.data_type()).map_err(|e| {
                err!(
                    CastFailed,
                    "column {name} does not fit its Arrow output type {}: {e}",
                    output.data_type()
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    let taken = RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)
        .map_err(|e| err!(InternalError, "an Arrow result batch: {e}"))?;
    out.batches.push(taken);
    out.rows += rows as u64;
    Ok(more)
}

/// `column` cast to the output type `to`. A timestamp output column is Timestamp(ns, "UTC"):
/// a zoned timestamp's stored values are UTC instants already and a local one's are taken
/// as UTC (as the row path takes them), so the zone is renamed, never converted (which
/// would need a time-zone database).
fn output_column(column: &ArrayRef, to: &DataType) -> Result<ArrayRef, ArrowError> {
    let DataType::Timestamp(unit, Some(zone)) = to else {
        return cast_with_options(column, to, &EXACT);
    };
    let column = match column.data_type() {
        DataType::Dictionary(_, values) => cast_with_options(column, values, &EXACT)?,
        _ => Arc::clone(column),
    };
    let local = match column.data_type() {
        DataType::Timestamp(unit, Some(_)) => {
            let data = column.to_data().into_builder();
            make_array(data.data_type(DataType::Timestamp(*unit, None)).build()?)
        }
        _ => column,
    };
    let local = cast_with_options(&local, &DataType::Timestamp(*unit, None), &EXACT)?;
    let data = local.to_data().into_builder();
    Ok(make_array(
        data.data_type(DataType::Timestamp(*unit, Some(Arc::clone(zone))))
            .build()?,
    ))
}

/// Casts that fail on a value the output type cannot hold (a timestamp outside what
/// nanoseconds reach), as the row path's builders do, rather than make it NULL.
const EXACT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: arrow_cast::display::FormatOptions::new(),
};

/// Output rows that are a batch's columns as they are: `SELECT *`, or plain top-level names,
/// with no filter or aggregate left to evaluate and no FROM path. In text output each field
/// is written as the row path writes the member it would find ([`write_row`]); in Arrow
/// output (plain names only) the columns are the output ([`arrow_direct`]).
///
/// [`write_row`]: crate::exec::row::write_row
enum Direct<'p> {
    Star,
    /// The key each output column names.
    Names(Vec<(&'p str, bool)>),
}

impl<'p> Direct<'p> {
    fn of(plan: &'p Plan) -> Option<Direct<'p>> {
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
        Some(direct)
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
