//! Select results as an Arrow IPC stream: typed columns instead of CSV or JSON text.
//!
//! A caller that asks for Arrow ([`OutputSerialization::Arrow`](crate::OutputSerialization))
//! gets one IPC stream (the Arrow "streaming format") as the select's output: the schema
//! message, a record batch for each chunk of input that produced rows, then the
//! end-of-stream marker. Pieces of it may be cut anywhere (the gateway cuts Records events
//! by size): the stream is the concatenation of everything written.
//!
//! Each column's type is fixed by the SQL and the input before any row is read
//! ([`ArrowOutput::new`]): a CSV field is text, a Parquet column has its file's type (the
//! second table; known once the footer is read), a CAST is its target type, Trino's
//! `CASE f WHEN '' THEN NULL ELSE CAST(f AS t) END` is `t`, a comparison is a boolean, COUNT
//! is an integer ([`col_type`]). What has no fixed type is refused with
//! UnsupportedSqlStructure (400) before the first row: a JSON value not cast (its type is
//! whatever each value holds), a Parquet column the file lacks, `SELECT *` (its width is
//! each record's), `CAST(x AS DECIMAL)` without a scale (it keeps each value's own),
//! arithmetic over text or decimals, a CASE whose branches differ.
//!
//! | SQL type | Arrow type |
//! |---|---|
//! | BOOL | Boolean |
//! | INT | Int64 |
//! | FLOAT | Float64 |
//! | DECIMAL(p,s), DECIMAL(p) | Decimal128(p, s), Decimal128(p, 0) |
//! | STRING, a CSV field | Utf8 |
//! | TIMESTAMP | Timestamp(Nanosecond, "UTC"): the instant; its written offset is dropped |
//!
//! | Parquet column (Arrow type in the file) | SQL type |
//! |---|---|
//! | Boolean | BOOL |
//! | Int8–Int64, UInt8–UInt32 | INT |
//! | Float16–Float64 | FLOAT |
//! | Decimal32–Decimal128(p, s) | DECIMAL(p, s) |
//! | Utf8, LargeUtf8, Utf8View | STRING |
//! | Date32, Date64, Timestamp | TIMESTAMP (a date at midnight UTC) |
//! | Dictionary of one of these | the values' type |
//!
//! Rows are appended value by value into one chunk's builders ([`Columns`]), never formatted
//! as text. A value that does not fit its column at run time — an INT SUM that overflowed
//! into a DECIMAL, a DECIMAL with more digits than its precision, a timestamp outside
//! 1677–2262 — fails the select with that value named, as a failing CAST does for text output.
//! Rescaling a DECIMAL to its column's scale rounds half away from zero, as CAST does.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Decimal128Builder, Float64Builder, Int64Builder, StringBuilder,
    TimestampNanosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_ipc::CompressionType;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::err;
use crate::error::{Result, SelectError};
use crate::eval::bind::{top_level_key, Output, Plan};
use crate::eval::coerce::display_for_error;
use crate::eval::expr::{field_text, CExpr, Row};
use crate::json::path::key_matches;
use crate::request::ArrowOptions;
use crate::sql::ast::{
    AggFunc, BinaryOp, CastType, ColumnRef, Expr, Literal, Projection, Query, UnaryOp,
};
use crate::sql::Dialect;
use crate::value::numeric::{parse_i64, parse_scaled_i64};
use crate::value::{Decimal, Value};

/// The Arrow type of one output column, fixed by the SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColType {
    Bool,
    Int,
    Float,
    Decimal { precision: u8, scale: u8 },
    Str,
    Timestamp,
}

impl ColType {
    fn data_type(self) -> DataType {
        match self {
            ColType::Bool => DataType::Boolean,
            ColType::Int => DataType::Int64,
            ColType::Float => DataType::Float64,
            // `scale <= precision <= 38`, checked when the type was made.
            ColType::Decimal { precision, scale } => DataType::Decimal128(precision, scale as i8),
            ColType::Str => DataType::Utf8,
            ColType::Timestamp => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        }
    }
}

/// The column types of a query's result, checked before the scan.
#[derive(Debug, Clone)]
pub(crate) struct ArrowOutput {
    types: Vec<ColType>,
    options: ArrowOptions,
}

/// What the input says of a column's type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InputTypes<'a> {
    /// CSV: a field is text, whatever it holds.
    Text,
    /// JSON: a value may have any type.
    Untyped,
    /// Parquet: a top-level column has its type in the file's schema.
    File(&'a Schema),
}

/// Types column references: the input's types, and the query (its alias) and dialect that
/// say which column a reference names.
struct Typing<'a> {
    input: InputTypes<'a>,
    query: &'a Query,
    dialect: Dialect,
}

impl Typing<'_> {
    fn column(&self, c: &ColumnRef) -> Result<ColType> {
        let any = || no_fixed_type(format!("the value at {} may have any type", c.pos));
        let schema = match self.input {
            InputTypes::Text if c.path.is_empty() => return Ok(ColType::Str),
            InputTypes::Text | InputTypes::Untyped => return Err(any()),
            InputTypes::File(schema) => schema,
        };
        let (name, exact) = top_level_key(self.query, self.dialect, c).ok_or_else(any)?;
        let field = schema
            .fields()
            .iter()
            .find(|f| key_matches(f.name().as_bytes(), name.as_bytes(), exact))
            .ok_or_else(|| {
                no_fixed_type(format!("the column {name} at {} is not in the file", c.pos))
            })?;
        file_type(field.data_type()).ok_or_else(|| {
            no_fixed_type(format!(
                "the column {name} at {} is {} in the file",
                c.pos,
                field.data_type()
            ))
        })
    }
}

/// The SQL type of a Parquet column of Arrow type `t` (the module's second table), as
/// `parquet::rows` reads its values; `None` for one it reads as nested or other values.
fn file_type(t: &DataType) -> Option<ColType> {
    Some(match t {
        DataType::Boolean => ColType::Bool,
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32 => ColType::Int,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => ColType::Float,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            ColType::Decimal {
                precision: *p,
                scale: u8::try_from(*s).ok().filter(|s| s <= p)?,
            }
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => ColType::Str,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) => ColType::Timestamp,
        DataType::Dictionary(_, values) => return file_type(values),
        _ => return None,
    })
}

impl ArrowOutput {
    /// The result's column types, or UnsupportedSqlStructure when one has none fixed.
    pub(crate) fn new(
        query: &Query,
        dialect: Dialect,
        input: InputTypes<'_>,
        options: ArrowOptions,
    ) -> Result<ArrowOutput> {
        let typing = Typing {
            input,
            query,
            dialect,
        };
        let Projection::Items(items) = &query.projection else {
            return Err(err!(
                UnsupportedSqlStructure,
                "Arrow output needs a fixed schema, and SELECT * has as many columns as each \
                 record: name the columns"
            ));
        };
        let types = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                col_type(&item.expr, &typing)?.ok_or_else(|| {
                    no_fixed_type(format!("column {} is a NULL or MISSING literal", i + 1))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ArrowOutput { types, options })
    }

    pub(crate) fn options(&self) -> ArrowOptions {
        self.options
    }

    /// The schema of the stream: the plan's output names with the checked types.
    pub(crate) fn schema(&self, plan: &Plan) -> SchemaRef {
        let fields = self
            .types
            .iter()
            .zip(&plan.names)
            .map(|(t, name)| Field::new(name, t.data_type(), true))
            .collect::<Vec<_>>();
        Arc::new(Schema::new(fields))
    }

    /// Empty builders for one chunk's rows, with room for `rows` values each (at least
    /// Arrow's default room).
    pub(crate) fn columns(&self, rows: usize) -> Columns {
        Columns {
            builders: self.types.iter().map(|&t| Builder::new(t, rows)).collect(),
        }
    }

    /// Appends the row's projection to `columns`.
    pub(crate) fn append_row(
        &self,
        plan: &Plan,
        row: &Row<'_, '_>,
        columns: &mut Columns,
    ) -> Result<()> {
        let Output::Exprs(exprs) = &plan.output else {
            return Err(err!(
                InternalError,
                "Arrow output of SELECT * was not refused"
            ));
        };
        for ((e, b), name) in exprs.iter().zip(&mut columns.builders).zip(&plan.names) {
            match e {
                // A CSV field, read as text straight from the record.
                CExpr::Field { index } => match field_text(row.record, *index)? {
                    Some(s) => b.append(&Value::Str(s.into()), name)?,
                    None => b.append_null(),
                },
                // Trino's typed column: plain digits go straight into an INT or DECIMAL
                // column; anything else takes the general CAST, so values and errors are
                // the same either way.
                CExpr::EmptyAsNullCast { index, .. } => match field_text(row.record, *index)? {
                    Some("") => b.append_null(),
                    Some(s) if b.append_digits(s.as_bytes()) => {}
                    _ => b.append(&e.eval(row)?, name)?,
                },
                other => b.append(&other.eval(row)?, name)?,
            }
        }
        Ok(())
    }
}

fn no_fixed_type(why: String) -> SelectError {
    err!(
        UnsupportedSqlStructure,
        "Arrow output needs a fixed type for every column: {why}; CAST it to one"
    )
}

/// The type every value of `e` has, whatever the row; `None` for a NULL or MISSING literal
/// (which fits any column).
fn col_type(e: &Expr, typing: &Typing<'_>) -> Result<Option<ColType>> {
    let ty = |e: &Expr| col_type(e, typing);
    Ok(Some(match e {
        Expr::Literal(l) => match l {
            Literal::Null | Literal::Missing => return Ok(None),
            Literal::Bool(_) => ColType::Bool,
            Literal::Int(_) => ColType::Int,
            Literal::Float(_) => ColType::Float,
            Literal::String(_) => ColType::Str,
            Literal::Timestamp(_) => ColType::Timestamp,
            Literal::Decimal(text) => {
                let d = Decimal::parse(text)
                    .ok_or_else(|| no_fixed_type(format!("{text} is not a decimal")))?;
                ColType::Decimal {
                    precision: 38,
                    scale: d.scale,
                }
            }
        },
        Expr::Column(c) => typing.column(c)?,
        Expr::Unary {
            op: UnaryOp::Not, ..
        } => ColType::Bool,
        Expr::Unary { expr, .. } => match ty(expr)? {
            Some(t @ (ColType::Int | ColType::Float | ColType::Decimal { .. })) => t,
            _ => return Err(no_fixed_type("a sign applied to a non-number".into())),
        },
        Expr::Binary {
            op,
            left,
            right,
            pos,
        } => match op {
            BinaryOp::And
            | BinaryOp::Or
            | BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq => ColType::Bool,
            BinaryOp::Concat => ColType::Str,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => {
                match (ty(left)?, ty(right)?) {
                    (Some(ColType::Int), Some(ColType::Int)) => ColType::Int,
                    (Some(ColType::Float), Some(ColType::Int | ColType::Float))
                    | (Some(ColType::Int), Some(ColType::Float)) => ColType::Float,
                    _ => {
                        return Err(no_fixed_type(format!(
                            "the arithmetic at {pos} is not over INT or FLOAT values"
                        )))
                    }
                }
            }
        },
        Expr::Like { .. }
        | Expr::Between { .. }
        | Expr::InList { .. }
        | Expr::IsNull { .. }
        | Expr::IsMissing { .. } => ColType::Bool,
        Expr::Case {
            whens, else_expr, ..
        } => {
            let results = whens
                .iter()
                .map(|(_, then)| then)
                .chain(else_expr.as_deref());
            return common_type(results, typing, "the branches of a CASE");
        }
        Expr::Cast { to, pos, .. } => cast_type(*to, *pos)?,
        Expr::Extract { .. } | Expr::DateDiff { .. } => ColType::Int,
        Expr::DateAdd { .. } => ColType::Timestamp,
        Expr::Trim { .. } => ColType::Str,
        Expr::Function { name, args, .. } => match name.as_str() {
            "CHAR_LENGTH" | "CHARACTER_LENGTH" | "INT" => ColType::Int,
            "LOWER" | "UPPER" | "SUBSTRING" | "TO_STRING" => ColType::Str,
            "TO_TIMESTAMP" | "UTCNOW" => ColType::Timestamp,
            "FLOAT" => ColType::Float,
            "COALESCE" => return common_type(args.iter(), typing, "COALESCE's arguments"),
            "NULLIF" => match args.first() {
                Some(a) => return ty(a),
                None => return Ok(None),
            },
            other => return Err(no_fixed_type(format!("{other} is not known"))),
        },
        Expr::Aggregate { func, arg, pos } => match (func, arg) {
            (AggFunc::Count, _) => ColType::Int,
            (_, None) => return Err(err!(InternalError, "{func:?}(*) at {pos} was parsed")),
            (AggFunc::Avg, Some(arg)) => match ty(arg)? {
                Some(ColType::Int | ColType::Float | ColType::Decimal { .. }) => ColType::Float,
                _ => {
                    return Err(no_fixed_type(format!(
                        "AVG at {pos} is not over INT, FLOAT or DECIMAL values"
                    )))
                }
            },
            (AggFunc::Sum, Some(arg)) => match ty(arg)? {
                Some(ColType::Int) => ColType::Int,
                Some(ColType::Float) => ColType::Float,
                Some(ColType::Decimal { scale, .. }) => ColType::Decimal {
                    precision: 38,
                    scale,
                },
                _ => {
                    return Err(no_fixed_type(format!(
                        "SUM at {pos} is not over INT, FLOAT or DECIMAL values"
                    )))
                }
            },
            (AggFunc::Min | AggFunc::Max, Some(arg)) => return ty(arg),
        },
    }))
}

/// The one type of several expressions, NULL literals aside.
fn common_type<'e>(
    exprs: impl Iterator<Item = &'e Expr>,
    typing: &Typing<'_>,
    what: &str,
) -> Result<Option<ColType>> {
    let mut common = None;
    for e in exprs {
        match (common, col_type(e, typing)?) {
            (_, None) => {}
            (None, t) => common = t,
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                return Err(no_fixed_type(format!(
                    "{what} have the types {a:?} and {b:?}"
                )))
            }
        }
    }
    Ok(common)
}

fn cast_type(to: CastType, pos: crate::sql::ast::Pos) -> Result<ColType> {
    Ok(match to {
        CastType::Bool => ColType::Bool,
        CastType::Int => ColType::Int,
        CastType::Float => ColType::Float,
        CastType::String => ColType::Str,
        CastType::Timestamp => ColType::Timestamp,
        CastType::Decimal {
            precision: Some(p),
            scale,
        } => {
            let s = scale.unwrap_or(0);
            if p == 0 || p > 38 || s > p {
                return Err(err!(
                    ParseInvalidTypeParam,
                    "DECIMAL({p},{s}) at {pos} is not a type Arrow has (1 <= precision <= 38, \
                     scale <= precision)"
                ));
            }
            ColType::Decimal {
                precision: p,
                scale: s,
            }
        }
        CastType::Decimal {
            precision: None, ..
        } => {
            return Err(no_fixed_type(format!(
                "CAST(… AS DECIMAL) at {pos} keeps each value's own scale; give DECIMAL(p,s)"
            )))
        }
    })
}

/// One chunk's result rows, a builder per column.
pub(crate) struct Columns {
    builders: Vec<Builder>,
}

impl Columns {
    /// The rows appended so far as a batch of `schema`; the builders are left empty.
    pub(crate) fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        let arrays = self.builders.iter_mut().map(Builder::finish).collect();
        RecordBatch::try_new(Arc::clone(schema), arrays)
            .map_err(|e| err!(InternalError, "an Arrow result batch: {e}"))
    }
}

enum Builder {
    Bool(BooleanBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    Decimal {
        b: Decimal128Builder,
        precision: u8,
        scale: u8,
        /// `10^precision`, saturated: the bound of a mantissa parsed from digits.
        limit: u64,
    },
    Str(StringBuilder),
    Timestamp(TimestampNanosecondBuilder),
}

/// The values a builder has room for when no earlier chunk says better (Arrow's default).
const DEFAULT_ROWS: usize = 1024;

/// The bytes of text a string builder starts with (Arrow's default): a chunk's text size is
/// not known ahead.
const DEFAULT_TEXT_BYTES: usize = 1024;

impl Builder {
    /// A builder with room for `rows` values, or its default room when that is less.
    fn new(t: ColType, rows: usize) -> Builder {
        let rows = rows.max(DEFAULT_ROWS);
        match t {
            ColType::Bool => Builder::Bool(BooleanBuilder::with_capacity(rows)),
            ColType::Int => Builder::Int(Int64Builder::with_capacity(rows)),
            ColType::Float => Builder::Float(Float64Builder::with_capacity(rows)),
            ColType::Decimal { precision, scale } => Builder::Decimal {
                b: Decimal128Builder::with_capacity(rows).with_data_type(t.data_type()),
                precision,
                scale,
                limit: 10u64.saturating_pow(u32::from(precision)),
            },
            ColType::Str => Builder::Str(StringBuilder::with_capacity(rows, DEFAULT_TEXT_BYTES)),
            ColType::Timestamp => Builder::Timestamp(
                TimestampNanosecondBuilder::with_capacity(rows).with_timezone("UTC"),
            ),
        }
    }

    fn append_null(&mut self) {
        match self {
            Builder::Bool(b) => b.append_null(),
            Builder::Int(b) => b.append_null(),
            Builder::Float(b) => b.append_null(),
            Builder::Decimal { b, .. } => b.append_null(),
            Builder::Str(b) => b.append_null(),
            Builder::Timestamp(b) => b.append_null(),
        }
    }

    /// Appends the number `text` holds when it is plain digits that fit an INT column, or
    /// digits with at most the scale's fraction digits that fit a DECIMAL column; false
    /// (nothing appended) otherwise.
    fn append_digits(&mut self, text: &[u8]) -> bool {
        match self {
            Builder::Int(b) => match parse_i64(text) {
                Some(v) => {
                    b.append_value(v);
                    true
                }
                None => false,
            },
            Builder::Decimal {
                b, scale, limit, ..
            } if *scale <= 18 => match parse_scaled_i64(text, *scale) {
                Some(m) if m.unsigned_abs() < *limit => {
                    b.append_value(i128::from(m));
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Appends `v`, widening INT to FLOAT or DECIMAL and rescaling a DECIMAL; any other
    /// value of another type fails naming the column.
    fn append(&mut self, v: &Value<'_>, column: &str) -> Result<()> {
        match (self, v) {
            (b, Value::Null | Value::Missing) => b.append_null(),
            (Builder::Bool(b), Value::Bool(x)) => b.append_value(*x),
            (Builder::Int(b), Value::Int(x)) => b.append_value(*x),
            (Builder::Float(b), Value::Float(x)) => b.append_value(*x),
            (Builder::Float(b), Value::Int(x)) => b.append_value(*x as f64),
            (Builder::Float(b), Value::Decimal(d)) => b.append_value(d.to_f64()),
            (
                Builder::Decimal {
                    b,
                    precision,
                    scale,
                    ..
                },
                Value::Int(x),
            ) => b.append_value(decimal_at(
                Decimal::from_i64(*x),
                *precision,
                *scale,
                column,
            )?),
            (
                Builder::Decimal {
                    b,
                    precision,
                    scale,
                    ..
                },
                Value::Decimal(d),
            ) => b.append_value(decimal_at(*d, *precision, *scale, column)?),
            (Builder::Str(b), Value::Str(s)) => b.append_value(s),
            (Builder::Timestamp(b), Value::Timestamp(t)) => {
                let nanos = t
                    .seconds
                    .checked_mul(1_000_000_000)
                    .and_then(|n| n.checked_add(i64::from(t.nanos)))
                    .ok_or_else(|| {
                        err!(
                            CastFailed,
                            "column {column}: {} is outside the range of an Arrow timestamp \
                             in nanoseconds (1677-09-21 to 2262-04-11)",
                            display_for_error(v)
                        )
                    })?;
                b.append_value(nanos);
            }
            (b, other) => {
                return Err(err!(
                    InvalidDataType,
                    "column {column} is {} in the Arrow schema, but a row gives the {} {}",
                    b.type_name(),
                    other.type_name(),
                    display_for_error(other)
                ))
            }
        }
        Ok(())
    }

    fn type_name(&self) -> &'static str {
        match self {
            Builder::Bool(_) => "BOOL",
            Builder::Int(_) => "INT",
            Builder::Float(_) => "FLOAT",
            Builder::Decimal { .. } => "DECIMAL",
            Builder::Str(_) => "STRING",
            Builder::Timestamp(_) => "TIMESTAMP",
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::Decimal { b, .. } => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Timestamp(b) => Arc::new(b.finish()),
        }
    }
}

/// `d` as the mantissa of a DECIMAL(precision, scale), or CastFailed when it has more digits.
fn decimal_at(d: Decimal, precision: u8, scale: u8, column: &str) -> Result<i128> {
    let fail = || {
        err!(
            CastFailed,
            "column {column}: {d} does not fit DECIMAL({precision},{scale})"
        )
    };
    let r = d.rescale(scale).ok_or_else(fail)?;
    if r.mantissa.unsigned_abs() >= 10u128.pow(u32::from(precision)) {
        return Err(fail());
    }
    Ok(r.mantissa)
}

/// The IPC stream of a run: the schema first, batches in order, the end marker last. It
/// buffers what it encodes until [`ArrowStream::take`] hands the bytes on.
pub(crate) struct ArrowStream {
    schema: SchemaRef,
    writer: StreamWriter<Vec<u8>>,
}

impl ArrowStream {
    /// A stream whose first bytes, the schema message, are buffered.
    pub(crate) fn new(schema: SchemaRef, options: ArrowOptions) -> Result<ArrowStream> {
        let compression = options.lz4.then_some(CompressionType::LZ4_FRAME);
        let ipc = IpcWriteOptions::default()
            .try_with_compression(compression)
            .map_err(ipc_error)?;
        let writer =
            StreamWriter::try_new_with_options(Vec::new(), &schema, ipc).map_err(ipc_error)?;
        Ok(ArrowStream { schema, writer })
    }

    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Encodes a batch; an empty one is skipped.
    pub(crate) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.writer.write(batch).map_err(ipc_error)
    }

    /// Encodes the end-of-stream marker.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.writer.finish().map_err(ipc_error)
    }

    /// The bytes encoded since the last call.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.writer.get_mut())
    }
}

fn ipc_error(e: arrow_schema::ArrowError) -> SelectError {
    err!(InternalError, "encoding the Arrow IPC stream: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn types_over(sql: &str, input: InputTypes<'_>) -> Result<Vec<ColType>> {
        let q = crate::sql::parse(sql, Dialect::Aws)?;
        ArrowOutput::new(&q, Dialect::Aws, input, ArrowOptions::default()).map(|a| a.types)
    }

    /// The types over CSV (`text_fields`) or JSON input.
    fn types(sql: &str, text_fields: bool) -> Result<Vec<ColType>> {
        let input = match text_fields {
            true => InputTypes::Text,
            false => InputTypes::Untyped,
        };
        types_over(sql, input)
    }

    #[test]
    fn a_parquet_column_has_its_file_type() {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("Price", DataType::Decimal128(7, 2), true),
            Field::new("day", DataType::Date32, true),
            Field::new(
                "name",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
            Field::new("tags", DataType::new_list(DataType::Utf8, true), true),
        ]);
        let file = InputTypes::File(&schema);
        let t = types_over(
            "SELECT s.id, price, S3Object.day, s.name, SUM(s.price), s.id + 1 FROM S3Object s",
            file,
        );
        let price = ColType::Decimal {
            precision: 7,
            scale: 2,
        };
        let sum = ColType::Decimal {
            precision: 38,
            scale: 2,
        };
        assert_eq!(
            t.expect("fixed"),
            [
                ColType::Int,
                price,
                ColType::Timestamp,
                ColType::Str,
                sum,
                ColType::Int
            ]
        );
        for sql in [
            // Not in the file, a quoted name of another case, a nested value, a path into
            // one, a FROM path.
            "SELECT s.missing FROM S3Object s",
            "SELECT s.\"price\" FROM S3Object s",
            "SELECT s.tags FROM S3Object s",
            "SELECT s.id.x FROM S3Object s",
            "SELECT s.id FROM S3Object[*].x s",
        ] {
            let e = types_over(sql, file).expect_err(sql);
            assert_eq!(e.code, crate::ErrorCode::UnsupportedSqlStructure, "{sql}");
        }
    }

    #[test]
    fn types_come_from_the_sql() {
        let t = types(
            "SELECT s._1, CAST(s._2 AS INT), CASE s._3 WHEN '' THEN NULL \
             ELSE CAST(s._3 AS DECIMAL(7,2)) END, s._4 > 3, COUNT(*) \
             FROM S3Object s",
            true,
        );
        // COUNT(*) beside columns is refused later, by the binder; the types are known.
        assert_eq!(
            t.expect("fixed"),
            vec![
                ColType::Str,
                ColType::Int,
                ColType::Decimal {
                    precision: 7,
                    scale: 2
                },
                ColType::Bool,
                ColType::Int,
            ]
        );
        assert_eq!(
            types(
                "SELECT SUM(CAST(s.a AS FLOAT)), UPPER(s.b || 'x') FROM S3Object s",
                false
            )
            .expect("fixed"),
            vec![ColType::Float, ColType::Str]
        );
    }

    #[test]
    fn what_has_no_fixed_type_is_refused_before_the_scan() {
        for (sql, text_fields) in [
            ("SELECT * FROM S3Object", true),
            ("SELECT s.a FROM S3Object s", false),
            ("SELECT CAST(s._1 AS DECIMAL) FROM S3Object s", true),
            ("SELECT s._1 + 1 FROM S3Object s", true),
            (
                "SELECT CASE WHEN s._1 = '' THEN 1 ELSE 'x' END FROM S3Object s",
                true,
            ),
            ("SELECT NULL FROM S3Object s", true),
        ] {
            let e = types(sql, text_fields).expect_err(sql);
            assert_eq!(e.code, crate::ErrorCode::UnsupportedSqlStructure, "{sql}");
        }
        let e = types("SELECT CAST(s._1 AS DECIMAL(40,2)) FROM S3Object s", true)
            .expect_err("precision");
        assert_eq!(e.code, crate::ErrorCode::ParseInvalidTypeParam);
    }

    #[test]
    fn values_are_widened_rescaled_or_refused() {
        let decimal = ColType::Decimal {
            precision: 5,
            scale: 2,
        };
        let mut b = Builder::new(decimal, 0);
        let dec = |s: &str| Value::Decimal(Decimal::parse(s).expect("decimal"));
        b.append(&dec("1.005"), "c").expect("rounds");
        b.append(&Value::Int(7), "c").expect("widens");
        b.append(&Value::Null, "c").expect("null");
        let e = b.append(&dec("1000.5"), "c").expect_err("too many digits");
        assert_eq!(e.code, crate::ErrorCode::CastFailed);
        let e = b
            .append(&Value::Str("x".into()), "c")
            .expect_err("a string");
        assert_eq!(e.code, crate::ErrorCode::InvalidDataType);
        let a = b.finish();
        let a = a
            .as_any()
            .downcast_ref::<arrow_array::Decimal128Array>()
            .expect("decimal array");
        assert_eq!(a.len(), 3);
        assert_eq!((a.value(0), a.value(1)), (101, 700));
        assert!(a.is_null(2));
    }
}
