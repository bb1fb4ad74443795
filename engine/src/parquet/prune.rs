//! Skipping row groups by their statistics: a row group whose columns' minimum, maximum and
//! null count prove that no row passes the WHERE clause is not read at all.
//!
//! The test is conservative: it says "no row can match" only when that follows from the
//! statistics under the engine's own comparison rules, and "maybe" for every expression it
//! does not understand. Only comparisons between values of one kind are judged — numbers
//! with numbers, strings with strings, timestamps with timestamps — because that is where
//! a column's minimum and maximum bound the comparison: a string column compared with a
//! number is compared numerically, row by row, and its text order says nothing about that.

use std::cmp::Ordering;

use arrow_array::{Array, UInt64Array};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;

use crate::eval::coerce::compare;
use crate::eval::expr::{CExpr, CmpOp};
use crate::json::path::{key_matches, node_value, Step};
use crate::parquet::rows::node_at;
use crate::parquet::ParquetFile;
use crate::value::Value;

/// What the statistics say about one column in one row group.
#[derive(Debug, Clone, Default)]
struct ColumnStats {
    min: Option<Value<'static>>,
    max: Option<Value<'static>>,
    nulls: Option<u64>,
    rows: u64,
}

/// The statistics of the top-level columns a filter reads, for every row group.
pub struct RowGroupStats {
    /// `(column name, stats per row group)`.
    columns: Vec<(String, Vec<ColumnStats>)>,
}

impl RowGroupStats {
    /// Collects the statistics of the columns `filter` compares.
    pub fn new(file: &ParquetFile<'_>, filter: &CExpr) -> RowGroupStats {
        let mut names: Vec<(&str, bool)> = Vec::new();
        collect_columns(filter, &mut names);
        let schema = file.schema();
        let groups = file.row_groups();
        let mut columns = Vec::new();
        for field in schema.fields() {
            let name = field.name();
            if !names.iter().any(|&(n, exact)| names_column(name, n, exact)) {
                continue;
            }
            // A list's or a struct's statistics describe its leaf values, not the column's
            // values (an empty list counts as a null element): only flat columns are judged.
            if field.data_type().is_nested() {
                continue;
            }
            let Ok(conv) =
                StatisticsConverter::try_new(name, schema, file.arrow_metadata().parquet_schema())
            else {
                continue;
            };
            let mins = conv.row_group_mins(groups.iter()).ok();
            let maxes = conv.row_group_maxes(groups.iter()).ok();
            let nulls: Option<UInt64Array> = conv.row_group_null_counts(groups.iter()).ok();
            let stats = (0..groups.len())
                .map(|g| {
                    let bound = |a: &Option<arrow_array::ArrayRef>| {
                        a.as_ref()
                            .filter(|a| g < a.len())
                            .and_then(|a| node_at(a.as_ref(), g).ok())
                            .map(|n| node_value(Some(&n)).into_owned())
                            .filter(|v| !v.is_absent() && !is_nan(v))
                    };
                    ColumnStats {
                        min: bound(&mins),
                        max: bound(&maxes),
                        nulls: nulls
                            .as_ref()
                            .filter(|n| g < n.len() && n.is_valid(g))
                            .map(|n| n.value(g)),
                        rows: u64::try_from(groups[g].num_rows()).unwrap_or(0),
                    }
                })
                .collect();
            columns.push((name.clone(), stats));
        }
        RowGroupStats { columns }
    }

    /// Whether row group `g` may hold a row `filter` accepts.
    pub fn may_match(&self, filter: &CExpr, g: usize) -> bool {
        match filter {
            CExpr::And(a, b) => self.may_match(a, g) && self.may_match(b, g),
            CExpr::Or(a, b) => self.may_match(a, g) || self.may_match(b, g),
            CExpr::Cmp(op, a, b) => match (self.column(a, g), constant(b)) {
                (Some(c), Some(k)) => may_compare(c, *op, k),
                _ => match (constant(a), self.column(b, g)) {
                    (Some(k), Some(c)) => may_compare(c, op.flipped(), k),
                    _ => true,
                },
            },
            CExpr::Between {
                expr,
                low,
                high,
                negated: false,
            } => match (self.column(expr, g), constant(low), constant(high)) {
                (Some(c), Some(lo), Some(hi)) => {
                    may_compare(c, CmpOp::GtEq, lo) && may_compare(c, CmpOp::LtEq, hi)
                }
                _ => true,
            },
            CExpr::InList {
                expr,
                list,
                negated: false,
            } => match self.column(expr, g) {
                Some(c) => list.iter().any(|k| match constant(k) {
                    Some(k) => may_compare(c, CmpOp::Eq, k),
                    None => true,
                }),
                None => true,
            },
            CExpr::IsNull { expr, negated } => match self.column(expr, g) {
                Some(c) => match (c.nulls, negated) {
                    (Some(n), false) => n > 0,
                    (Some(n), true) => n < c.rows,
                    (None, _) => true,
                },
                None => true,
            },
            _ => true,
        }
    }

    /// The statistics of the column `e` reads, when `e` is a plain top-level column.
    fn column(&self, e: &CExpr, g: usize) -> Option<&ColumnStats> {
        let (name, exact) = top_column(e)?;
        let mut found = self
            .columns
            .iter()
            .filter(|(n, _)| names_column(n, name, exact));
        let (_, stats) = found.next()?;
        // Two columns that both answer to the name: leave the choice to the evaluator.
        if found.next().is_some() {
            return None;
        }
        stats.get(g)
    }
}

/// Whether `column op k` can hold for some row with these statistics.
fn may_compare(c: &ColumnStats, op: CmpOp, k: &Value<'_>) -> bool {
    if c.nulls == Some(c.rows) {
        // Every value is NULL, and a comparison with NULL is never true.
        return false;
    }
    let (Some(min), Some(max)) = (&c.min, &c.max) else {
        return true;
    };
    if !same_kind(min, k) || !same_kind(max, k) {
        return true;
    }
    let (Some(lo), Some(hi)) = (compare(min, k), compare(max, k)) else {
        return true;
    };
    match op {
        CmpOp::Eq => lo != Ordering::Greater && hi != Ordering::Less,
        CmpOp::NotEq => !(lo == Ordering::Equal && hi == Ordering::Equal),
        CmpOp::Lt => lo == Ordering::Less,
        CmpOp::LtEq => lo != Ordering::Greater,
        CmpOp::Gt => hi == Ordering::Greater,
        CmpOp::GtEq => hi != Ordering::Less,
    }
}

fn same_kind(a: &Value<'_>, b: &Value<'_>) -> bool {
    let kind = |v: &Value<'_>| match v {
        Value::Int(_) | Value::Float(_) | Value::Decimal(_) => Some(0),
        Value::Str(_) => Some(1),
        Value::Timestamp(_) => Some(2),
        _ => None,
    };
    kind(a).is_some() && kind(a) == kind(b)
}

fn is_nan(v: &Value<'_>) -> bool {
    matches!(v, Value::Float(f) if f.is_nan())
}

fn constant(e: &CExpr) -> Option<&Value<'static>> {
    match e {
        CExpr::Const(v) => Some(v),
        _ => None,
    }
}

/// Whether a column name answers to a name in the query (unquoted names ignore case), as a
/// JSON key does.
fn names_column(column: &str, name: &str, exact: bool) -> bool {
    key_matches(column.as_bytes(), name.as_bytes(), exact)
}

/// The name (and whether it was quoted) of the top-level column `e` reads, when `e` is
/// nothing but that column.
fn top_column(e: &CExpr) -> Option<(&str, bool)> {
    let CExpr::Path { steps } = e else {
        return None;
    };
    match &steps[..] {
        [Step::Key { name, exact }] => Some((name, *exact)),
        _ => None,
    }
}

/// The top-level names a filter compares.
fn collect_columns<'e>(e: &'e CExpr, out: &mut Vec<(&'e str, bool)>) {
    let mut add = |x: &'e CExpr| out.extend(top_column(x));
    match e {
        CExpr::And(a, b) | CExpr::Or(a, b) => {
            collect_columns(a, out);
            collect_columns(b, out);
        }
        CExpr::Cmp(_, a, b) => {
            add(a);
            add(b);
        }
        CExpr::Between { expr, .. } | CExpr::InList { expr, .. } | CExpr::IsNull { expr, .. } => {
            add(expr)
        }
        _ => {}
    }
}
