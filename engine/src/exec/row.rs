//! One row through the bound query: the filter, then the aggregates or an output row.
//!
//! The per-format row loops (`csv::select`, `json::select`, `parquet::select`) make rows
//! and hand them here; [`write_row`] writes the projection in the output format.

use crate::csv::{Flow, Record};
use crate::err;
use crate::error::Result;
use crate::eval::bind::{Output, Plan};
use crate::eval::expr::{field_text, field_value, CExpr, Row};
use crate::exec::emit::ChunkOut;
use crate::exec::Input;
use crate::json::path::{expand, walk};
use crate::json::Node;
use crate::output::Writer;
use crate::value::Value;

/// Read-only state shared by every thread of a run.
pub(crate) struct RowCtx<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) writer: &'a Writer,
    /// CSV input with a header line: the column names (`SELECT *` writes them as JSON keys).
    pub(crate) header: &'a [String],
    pub(crate) input: &'a Input,
}

/// Per-chunk buffers reused from row to row.
#[derive(Default)]
pub(crate) struct RowScratch {
    /// `SELECT *` names `_N` without a header.
    names: Vec<String>,
}

/// One JSON or Parquet row through the plan: the filter, then the aggregates or the output.
/// `row_cap` is how many rows the chunk may still write under LIMIT. The CSV loop has its
/// own copy (`csv::select`), which also copies clean fields without quoting checks.
pub(crate) fn take_row(
    ctx: &RowCtx<'_>,
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
    write_row(ctx, row, out, scratch, false)?;
    Ok(out.row_written(row_cap))
}

/// One top-level value (a JSON value, a Parquet row) through the FROM path, then each row
/// it makes through the plan.
pub(crate) fn take_value(
    ctx: &RowCtx<'_>,
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

/// Writes one output row. `clean`: the record's fields need no quoting (see
/// `RowWriter::chunk_is_clean`).
pub(crate) fn write_row(
    ctx: &RowCtx<'_>,
    row: &Row<'_, '_>,
    out: &mut ChunkOut,
    scratch: &mut RowScratch,
    clean: bool,
) -> Result<()> {
    let w = match ctx.writer {
        Writer::Text(w) => w,
        Writer::Arrow(a) => {
            let rows = usize::try_from(out.rows_last).unwrap_or(0);
            let columns = out.columns.get_or_insert_with(|| a.columns(rows));
            return a.append_row(ctx.plan, row, columns);
        }
        Writer::ArrowOfFile => return Err(crate::output::not_made()),
    };
    let out = &mut out.bytes;
    let row_start = out.len();
    w.begin_row(out);
    match &ctx.plan.output {
        Output::Star if ctx.input.rows_are_values() => match row.node {
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
                let s = field_value(row.record, i)?;
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

/// Writes an aggregate query's result row.
pub(crate) fn write_agg_row(
    ctx: &RowCtx<'_>,
    values: &[Value<'static>],
    out: &mut ChunkOut,
) -> Result<()> {
    let empty = Record::new(&[], &[]);
    let row = Row {
        record: &empty,
        node: None,
        aggs: values,
    };
    write_row(ctx, &row, out, &mut RowScratch::default(), false)?;
    out.row_written(None);
    Ok(())
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

/// AWS caps result records at 1 MiB, as it does input records.
pub(crate) fn check_row_size(len: usize) -> Result<()> {
    if len > crate::csv::MAX_RECORD_BYTES {
        return Err(err!(
            OverMaxRecordSize,
            "a result record is {len} bytes, over the 1 MiB limit"
        ));
    }
    Ok(())
}
