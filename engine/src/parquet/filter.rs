//! WHERE over whole columns: a Parquet select's filter, evaluated a batch at a time before
//! the columns it does not read are decoded.
//!
//! Given a row filter, the parquet crate decodes a row group in two steps: first the
//! columns the filter reads, every row of them; then the other columns the query names,
//! only for the rows the filter kept (and none at all for a row group where it kept none).
//! [`ColumnFilter`] is that filter: the bound WHERE clause compiled, when its shape allows,
//! into a tree of tests over a batch's columns. Each test gives every row's three-valued
//! truth as two bitmaps ([`Truth`]: true, false; neither is unknown), combined by SQL's
//! AND, OR and NOT; the rows kept are those where the whole clause is true.
//!
//! What compiles: AND, OR and NOT over leaves, a leaf being a comparison, BETWEEN, IN,
//! IS [NOT] NULL or LIKE of one top-level column against constants. Anything else (a
//! nested path, a function, a CAST, a column the file does not have, a FROM path) leaves
//! the whole filter to the row evaluator.
//!
//! Exactness. The row evaluator is the reference. A leaf is evaluated by it element by
//! element ([`Kernel::Rows`]): the leaf's column path emptied, so that it reads each
//! element as the row path would read that column, made the value the row path makes of
//! it. The leaves that TPC-DS-like filters are made of have typed kernels instead — integer
//! and decimal columns against numeric constants (the comparisons of one column ANDed
//! folded into one range test), strings against strings and lists of them, dates against
//! timestamps, IS [NOT] NULL of flat columns — tested against it. No compiled leaf can
//! fail, so evaluating every leaf on every row (where the row path stops at AND's first
//! false) gives the same answers; AND and OR skip their right side only for a batch whose
//! left side alone decides every row (false for AND, true for OR).
//!
//! One predicate. The whole clause is one row filter over all its columns, not its
//! conjuncts one after another (q28's `ss_quantity` range, then its price ranges over the
//! rows it keeps): a later conjunct's columns would be decoded at the scattered rows the
//! earlier ones keep, which costs the parquet crate more than testing every row.
//!
//! Dates. The row path reads a Date32 value as the instant of its midnight UTC and compares
//! instants, so a comparison with a timestamp constant is one with a whole number of days:
//! `day >= k` holds from the first midnight at or after `k`, `day = k` only when `k` is a
//! midnight ([`on_days`]). Date columns then take the integer kernels, over their days.

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer};
use arrow_schema::{DataType, Schema};

use crate::csv::Record;
use crate::err;
use crate::error::Result;
use crate::eval::expr::{truth, CExpr, CmpOp, LikeSpec, Row};
use crate::eval::int_set::IntSet;
use crate::json::path::{key_matches, Step};
use crate::parquet::rows::{BatchRows, Column};
use crate::value::timestamp::SECS_PER_DAY;
use crate::value::{Timestamp, Value};

/// A WHERE clause compiled to tests over a batch of the columns it reads.
#[derive(Debug, Clone)]
pub struct ColumnFilter {
    test: Test,
    /// The file's top-level columns the filter reads, ascending: the batch the filter is
    /// given holds those columns, in this order.
    roots: Vec<usize>,
}

#[derive(Debug, Clone)]
enum Test {
    And(Box<Test>, Box<Test>),
    Or(Box<Test>, Box<Test>),
    Not(Box<Test>),
    /// A condition on one column: `root` is the column's index in the file's schema.
    Leaf {
        root: usize,
        kernel: Kernel,
    },
}

/// How a leaf is evaluated over its column.
#[derive(Debug, Clone)]
enum Kernel {
    /// An Int32, Int64 or Date32 column (a date as its days since 1970-01-01): every
    /// comparison holds.
    Ints(Box<[(CmpOp, i64)]>),
    /// An Int32, Int64 or Date32 column within `lo..=hi` (empty when `lo > hi`):
    /// comparisons other than `<>` folded into two bounds, one branch-free test per value.
    IntRange { lo: i64, hi: i64 },
    /// An Int32, Int64 or Date32 column `IN` (or `NOT IN`) a set of integers.
    IntSet { set: IntSet, negated: bool },
    /// A Decimal128 column of scale ≥ 0: every comparison holds, the constants at the
    /// column's scale. A batch holding a value the row path does not read as a DECIMAL
    /// (over 38 digits) is left to `rows`, the leaf for the row evaluator.
    Decimals {
        conds: Box<[(CmpOp, i128)]>,
        rows: Box<CExpr>,
    },
    /// A Decimal128 column of scale ≥ 0 within `lo..=hi` (`lo <= hi`), the bounds at the
    /// column's scale: comparisons other than `<>` folded, as for [`Kernel::IntRange`], one
    /// test per value. `rows` as for [`Kernel::Decimals`].
    DecimalRange {
        lo: i128,
        hi: i128,
        rows: Box<CExpr>,
    },
    /// `IS NULL` (`IS NOT NULL` when `negated`) of a column of a flat type: the column's
    /// null bitmap, never unknown.
    IsNull { negated: bool },
    /// A Utf8 column compared with a string: byte order, as strings compare.
    Text(CmpOp, Box<str>),
    /// A Utf8 column `IN` (or `NOT IN`) a set of strings, sorted by their bytes.
    TextSet {
        sorted: Box<[Box<str>]>,
        negated: bool,
    },
    /// The row evaluator, element by element; the leaf's column path is empty, so it reads
    /// the element as the row.
    Rows(CExpr),
}

/// A condition's value for each row of a batch: `yes` where it is true, `no` where it is
/// false, neither where it is unknown.
#[derive(Debug)]
pub struct Truth {
    yes: BooleanBuffer,
    no: BooleanBuffer,
}

impl ColumnFilter {
    /// Compiles `filter` over a file whose columns are `schema`, or `None` when some part
    /// of it is not a shape this module evaluates.
    pub fn compile(filter: &CExpr, schema: &Schema) -> Option<ColumnFilter> {
        ColumnFilter::build(filter, schema, true)
    }

    /// As [`ColumnFilter::compile`], every leaf left to the row evaluator: the reference
    /// the typed kernels are tested against.
    #[cfg(test)]
    pub fn compile_reference(filter: &CExpr, schema: &Schema) -> Option<ColumnFilter> {
        ColumnFilter::build(filter, schema, false)
    }

    fn build(filter: &CExpr, schema: &Schema, typed: bool) -> Option<ColumnFilter> {
        let mut roots = Vec::new();
        let test = compile(filter, schema, &mut roots, typed)?;
        roots.sort_unstable();
        roots.dedup();
        Some(ColumnFilter { test, roots })
    }

    /// The file's top-level columns the filter reads, ascending.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// The rows of `batch` (the columns of [`ColumnFilter::roots`], in that order) where
    /// the filter is true.
    pub fn keep(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let truth = self.truth(batch)?;
        Ok(BooleanArray::new(truth.yes, None))
    }

    /// Each row's truth.
    pub fn truth(&self, batch: &RecordBatch) -> Result<Truth> {
        if batch.num_columns() != self.roots.len() {
            return Err(err!(
                InternalError,
                "the Parquet filter reads {} columns and was given {}",
                self.roots.len(),
                batch.num_columns()
            ));
        }
        let rows = BatchRows::new(batch)?;
        self.test.eval(self, rows.arrays())
    }
}

#[cfg(test)]
impl Truth {
    pub fn is_true(&self, i: usize) -> bool {
        self.yes.value(i)
    }

    pub fn is_false(&self, i: usize) -> bool {
        self.no.value(i)
    }
}

fn compile(e: &CExpr, schema: &Schema, roots: &mut Vec<usize>, typed: bool) -> Option<Test> {
    let mut sub = |e: &CExpr| compile(e, schema, roots, typed).map(Box::new);
    Some(match e {
        CExpr::And(a, b) => {
            let (a, b) = (sub(a)?, sub(b)?);
            one_test(&a, &b, true).unwrap_or(Test::And(a, b))
        }
        CExpr::Or(a, b) => {
            let (a, b) = (sub(a)?, sub(b)?);
            one_test(&a, &b, false).unwrap_or(Test::Or(a, b))
        }
        CExpr::Not(a) => Test::Not(sub(a)?),
        leaf => {
            let (root, kernel) = compile_leaf(leaf, schema, typed)?;
            roots.push(root);
            Test::Leaf { root, kernel }
        }
    })
}

/// `a AND b` (`a OR b` when not `and`) as one test of one column, where two tests of it
/// combine exactly: `c IN A OR c IN B` is `c IN A∪B` and `c NOT IN A AND c NOT IN B` is
/// `c NOT IN A∪B` (a key list longer than a store takes in one expression arrives split
/// into such pieces); two ranges ANDed are their intersection (`c >= 1 AND c <= 9`). NULLs
/// stay unknown either way.
fn one_test(a: &Test, b: &Test, and: bool) -> Option<Test> {
    let (
        Test::Leaf {
            root: r1,
            kernel: k1,
        },
        Test::Leaf {
            root: r2,
            kernel: k2,
        },
    ) = (a, b)
    else {
        return None;
    };
    if r1 != r2 {
        return None;
    }
    let kernel = match (k1, k2) {
        (
            Kernel::IntSet {
                set: s1,
                negated: n1,
            },
            Kernel::IntSet {
                set: s2,
                negated: n2,
            },
        ) if *n1 == and && *n2 == and => Kernel::IntSet {
            set: s1.union(s2),
            negated: and,
        },
        (Kernel::IntRange { lo: l1, hi: h1 }, Kernel::IntRange { lo: l2, hi: h2 }) if and => {
            Kernel::IntRange {
                lo: *l1.max(l2),
                hi: *h1.min(h2),
            }
        }
        (
            Kernel::DecimalRange {
                lo: l1,
                hi: h1,
                rows: r1,
            },
            Kernel::DecimalRange {
                lo: l2,
                hi: h2,
                rows: r2,
            },
        ) if and => decimal_range(
            (*l1.max(l2), *h1.min(h2)),
            CExpr::And(r1.clone(), r2.clone()),
        ),
        _ => return None,
    };
    Some(Test::Leaf { root: *r1, kernel })
}

/// The column a leaf reads and its kernel, when the leaf is one this module evaluates.
fn compile_leaf(leaf: &CExpr, schema: &Schema, typed: bool) -> Option<(usize, Kernel)> {
    let constant = |e: &CExpr| matches!(e, CExpr::Const(_));
    let subject = match leaf {
        CExpr::Cmp(_, a, b) if constant(b) => a,
        CExpr::Cmp(_, a, b) if constant(a) => b,
        CExpr::Between {
            expr, low, high, ..
        } if constant(low) && constant(high) => expr,
        CExpr::InList { expr, list, .. } if list.iter().all(constant) => expr,
        CExpr::IsNull { expr, .. } => expr,
        CExpr::Like {
            expr,
            pattern: LikeSpec::Const(_),
            ..
        } => expr,
        _ => return None,
    };
    let root = column_of(subject, schema)?;
    let ty = schema.field(root).data_type();
    let kernel = match typed.then(|| typed_kernel(leaf, ty)).flatten() {
        Some(k) => k,
        None => Kernel::Rows(as_row(leaf)),
    };
    Some((root, kernel))
}

/// The file column a top-level path names: the first whose name matches, as the row path
/// finds an object's key.
fn column_of(e: &CExpr, schema: &Schema) -> Option<usize> {
    let CExpr::Path { steps } = e else {
        return None;
    };
    let [Step::Key { name, exact }] = steps.as_ref() else {
        return None;
    };
    schema
        .fields()
        .iter()
        .position(|f| key_matches(f.name().as_bytes(), name.as_bytes(), *exact))
}

/// The leaf with its column path emptied: evaluated with the element as the row.
fn as_row(leaf: &CExpr) -> CExpr {
    let row = || Box::new(CExpr::Path { steps: [].into() });
    let mut leaf = leaf.clone();
    match &mut leaf {
        CExpr::Cmp(_, a, b) => {
            if matches!(**a, CExpr::Path { .. }) {
                *a = row();
            } else {
                *b = row();
            }
        }
        CExpr::Between { expr, .. }
        | CExpr::InList { expr, .. }
        | CExpr::IsNull { expr, .. }
        | CExpr::Like { expr, .. } => *expr = row(),
        _ => {}
    }
    leaf
}

/// A typed kernel for the leaf over a column of type `ty`, where one exists.
fn typed_kernel(leaf: &CExpr, ty: &DataType) -> Option<Kernel> {
    if let CExpr::IsNull { negated, .. } = leaf {
        return (!ty.is_nested()).then_some(Kernel::IsNull { negated: *negated });
    }
    let consts: Vec<(CmpOp, &Value<'static>)> = match leaf {
        CExpr::Cmp(op, a, b) => match (&**a, &**b) {
            (_, CExpr::Const(k)) => vec![(*op, k)],
            (CExpr::Const(k), _) => vec![(op.flipped(), k)],
            _ => return None,
        },
        CExpr::Between {
            low,
            high,
            negated: false,
            ..
        } => match (&**low, &**high) {
            (CExpr::Const(lo), CExpr::Const(hi)) => vec![(CmpOp::GtEq, lo), (CmpOp::LtEq, hi)],
            _ => return None,
        },
        CExpr::InList { list, negated, .. } if *ty == DataType::Utf8 => {
            let mut sorted = list
                .iter()
                .map(|e| match e {
                    CExpr::Const(Value::Str(k)) => Some(k.as_ref().into()),
                    _ => None,
                })
                .collect::<Option<Vec<Box<str>>>>()?;
            sorted.sort_unstable();
            return Some(Kernel::TextSet {
                sorted: sorted.into(),
                negated: *negated,
            });
        }
        CExpr::InList { list, negated, .. } => {
            // Each constant as the integer a column value equal to it has; `None` for a
            // constant no value of the column equals (a timestamp between midnights).
            let key = |e: &CExpr| match (ty, e) {
                (DataType::Int32 | DataType::Int64, CExpr::Const(Value::Int(k))) => Some(Some(*k)),
                (DataType::Date32, CExpr::Const(Value::Timestamp(t))) => Some(whole_days(t)),
                _ => None,
            };
            let keys = list.iter().map(key).collect::<Option<Vec<Option<i64>>>>()?;
            return Some(Kernel::IntSet {
                set: IntSet::new(keys.into_iter().flatten().collect()),
                negated: *negated,
            });
        }
        _ => return None,
    };
    match ty {
        DataType::Int32 | DataType::Int64 => consts
            .into_iter()
            .map(|(op, k)| match k {
                Value::Int(k) => Some((op, *k)),
                _ => None,
            })
            .collect::<Option<Box<[_]>>>()
            .map(|conds| int_range(&conds).unwrap_or(Kernel::Ints(conds))),
        DataType::Date32 => consts
            .into_iter()
            .map(|(op, k)| match k {
                Value::Timestamp(t) => Some(on_days(op, t)),
                _ => None,
            })
            .collect::<Option<Box<[_]>>>()
            .map(|conds| int_range(&conds).unwrap_or(Kernel::Ints(conds))),
        DataType::Decimal128(_, scale) => {
            let scale = u8::try_from(*scale).ok()?;
            consts
                .into_iter()
                .map(|(op, k)| Some((op, at_scale(k, scale)?)))
                .collect::<Option<Box<[_]>>>()
                .map(|conds| match fold_range(conds.iter().copied()) {
                    Some(range) => decimal_range(range, as_row(leaf)),
                    None => Kernel::Decimals {
                        conds,
                        rows: Box::new(as_row(leaf)),
                    },
                })
        }
        DataType::Utf8 => match consts.as_slice() {
            [(op, Value::Str(k))] => Some(Kernel::Text(*op, k.as_ref().into())),
            _ => None,
        },
        _ => None,
    }
}

/// Comparisons that all hold as one range `lo..=hi` of integers (empty when `lo > hi`),
/// when none of them is `<>`.
fn fold_range(conds: impl IntoIterator<Item = (CmpOp, i128)>) -> Option<(i128, i128)> {
    let (mut lo, mut hi) = (i128::MIN, i128::MAX);
    let empty = (1, 0);
    for (op, k) in conds {
        match op {
            CmpOp::Eq => (lo, hi) = (lo.max(k), hi.min(k)),
            CmpOp::GtEq => lo = lo.max(k),
            CmpOp::LtEq => hi = hi.min(k),
            CmpOp::Gt => match k.checked_add(1) {
                Some(k) => lo = lo.max(k),
                None => return Some(empty),
            },
            CmpOp::Lt => match k.checked_sub(1) {
                Some(k) => hi = hi.min(k),
                None => return Some(empty),
            },
            CmpOp::NotEq => return None,
        }
    }
    Some((lo, hi))
}

/// Integer comparisons that all hold as one range, when none of them is `<>`.
fn int_range(conds: &[(CmpOp, i64)]) -> Option<Kernel> {
    let (lo, hi) = fold_range(conds.iter().map(|&(op, k)| (op, i128::from(k))))?;
    // Every value is an i64: bounds past its ends narrow to them, and a range wholly past
    // them holds nothing.
    let (lo, hi) = (lo.max(i64::MIN.into()), hi.min(i64::MAX.into()));
    Some(match (i64::try_from(lo), i64::try_from(hi)) {
        (Ok(lo), Ok(hi)) => Kernel::IntRange { lo, hi },
        _ => Kernel::IntRange { lo: 1, hi: 0 },
    })
}

/// The decimal kernel for values in `lo..=hi`; for an empty range, a comparison no value
/// meets (the range kernel's one test needs `lo <= hi`).
fn decimal_range((lo, hi): (i128, i128), rows: CExpr) -> Kernel {
    if lo > hi {
        return Kernel::Decimals {
            conds: [(CmpOp::Lt, i128::MIN)].into(),
            rows: Box::new(rows),
        };
    }
    Kernel::DecimalRange {
        lo,
        hi,
        rows: Box::new(rows),
    }
}

/// `k` as days since 1970-01-01 when it is a midnight UTC, the instant a Date32 value is
/// to the row path; `None` otherwise.
fn whole_days(k: &Timestamp) -> Option<i64> {
    (k.nanos == 0 && k.seconds.rem_euclid(SECS_PER_DAY) == 0)
        .then(|| k.seconds.div_euclid(SECS_PER_DAY))
}

/// `date op k` as a comparison of the date's days (module docs, "Dates"). Between two
/// midnights, with `d` the day `k` falls in: no date equals `k`, every date differs from it,
/// and a date is before `k` when it is at most `d`, after it when it is after `d`.
fn on_days(op: CmpOp, k: &Timestamp) -> (CmpOp, i64) {
    if let Some(days) = whole_days(k) {
        return (op, days);
    }
    let day = k.seconds.div_euclid(SECS_PER_DAY);
    match op {
        CmpOp::Eq => (CmpOp::Lt, i64::MIN),
        CmpOp::NotEq => (CmpOp::GtEq, i64::MIN),
        CmpOp::Lt | CmpOp::LtEq => (CmpOp::LtEq, day),
        CmpOp::Gt | CmpOp::GtEq => (CmpOp::Gt, day),
    }
}

/// A numeric constant as an integer at `scale`, when it is one exactly.
fn at_scale(k: &Value<'_>, scale: u8) -> Option<i128> {
    let (mantissa, from) = match k {
        Value::Int(v) => (i128::from(*v), 0),
        Value::Decimal(d) => (d.mantissa, d.scale),
        _ => return None,
    };
    let up = scale.checked_sub(from)?;
    10i128
        .checked_pow(u32::from(up))
        .and_then(|p| mantissa.checked_mul(p))
}

/// Values of a Decimal128 column at or past this magnitude are not DECIMAL values to the
/// row path (which reads them as FLOAT), so the decimal kernel leaves them to it.
const DECIMAL_LIMIT: u128 = 10u128.pow(38);

impl Test {
    fn eval(&self, filter: &ColumnFilter, arrays: &[ArrayRef]) -> Result<Truth> {
        Ok(match self {
            Test::And(a, b) => {
                let a = a.eval(filter, arrays)?;
                if a.no.count_set_bits() == a.no.len() {
                    return Ok(a);
                }
                let b = b.eval(filter, arrays)?;
                Truth {
                    yes: &a.yes & &b.yes,
                    no: &a.no | &b.no,
                }
            }
            Test::Or(a, b) => {
                let a = a.eval(filter, arrays)?;
                if a.yes.count_set_bits() == a.yes.len() {
                    return Ok(a);
                }
                let b = b.eval(filter, arrays)?;
                Truth {
                    yes: &a.yes | &b.yes,
                    no: &a.no & &b.no,
                }
            }
            Test::Not(a) => {
                let a = a.eval(filter, arrays)?;
                Truth {
                    yes: a.no,
                    no: a.yes,
                }
            }
            Test::Leaf { root, kernel } => {
                let at = filter
                    .roots
                    .binary_search(root)
                    .map_err(|_| err!(InternalError, "the Parquet filter lost a column"))?;
                kernel.eval(&arrays[at])?
            }
        })
    }
}

impl Kernel {
    fn eval(&self, array: &ArrayRef) -> Result<Truth> {
        let n = array.len();
        let mismatch = || {
            err!(
                InternalError,
                "a Parquet column decoded as {} where the filter expected another type",
                array.data_type()
            )
        };
        match self {
            Kernel::Ints(conds) => {
                let values = int_test(array, |v| conds.iter().all(|&(op, k)| cmp(op, v, k)))
                    .ok_or_else(mismatch)?;
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::IntRange { lo, hi } => {
                let values = int_test(array, |v| *lo <= v && v <= *hi).ok_or_else(mismatch)?;
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::IntSet { set, negated } => {
                let values =
                    int_test(array, |v| set.contains(v) != *negated).ok_or_else(mismatch)?;
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::Decimals { conds, rows } => {
                let v = match decimal_values(array, rows)? {
                    Ok(v) => v,
                    Err(by_rows) => return Ok(by_rows),
                };
                let values = BooleanBuffer::collect_bool(v.len(), |i| {
                    conds.iter().all(|&(op, k)| cmp(op, v[i], k))
                });
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::DecimalRange { lo, hi, rows } => {
                let v = match decimal_values(array, rows)? {
                    Ok(v) => v,
                    Err(by_rows) => return Ok(by_rows),
                };
                // `lo <= x <= hi` as one unsigned comparison of the distance from `lo`.
                let width = hi.wrapping_sub(*lo) as u128;
                let values = BooleanBuffer::collect_bool(v.len(), |i| {
                    (v[i].wrapping_sub(*lo) as u128) <= width
                });
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::IsNull { negated } => {
                let null = match array.logical_nulls() {
                    Some(valid) => !valid.inner(),
                    None => BooleanBuffer::new_unset(n),
                };
                let yes = if *negated { !&null } else { null };
                Ok(Truth { no: !&yes, yes })
            }
            Kernel::Text(op, k) => {
                let a = array.as_string_opt::<i32>().ok_or_else(mismatch)?;
                let k = k.as_bytes();
                let values = BooleanBuffer::collect_bool(n, |i| cmp(*op, a.value(i).as_bytes(), k));
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::TextSet { sorted, negated } => {
                let a = array.as_string_opt::<i32>().ok_or_else(mismatch)?;
                let values = BooleanBuffer::collect_bool(n, |i| {
                    let v = a.value(i).as_bytes();
                    sorted.binary_search_by(|k| k.as_bytes().cmp(v)).is_ok() != *negated
                });
                Ok(Truth::known(values, array.nulls()))
            }
            Kernel::Rows(leaf) => rows_truth(leaf, array),
        }
    }
}

/// The values of a Decimal128 array (NULLs' slots included), or, when one of them is past
/// what the row path reads as a DECIMAL, the truth of the leaf `rows` by the row evaluator.
#[inline]
fn decimal_values<'a>(array: &'a ArrayRef, rows: &CExpr) -> Result<Result<&'a [i128], Truth>> {
    let a = array.as_primitive_opt::<Decimal128Type>().ok_or_else(|| {
        err!(
            InternalError,
            "a Parquet column decoded as {} where the filter expected a decimal",
            array.data_type()
        )
    })?;
    let v = &a.values()[..array.len()];
    match decimals_in_limit(v) {
        true => Ok(Ok(v)),
        false => rows_truth(rows, array).map(Err),
    }
}

/// Whether every value is one the row path reads as a DECIMAL (NULLs' slots included).
/// Decimals written as INT32 or INT64, as most are, lie far inside the limit: a test of
/// each value's high word, without a branch, settles them, and only a batch that fails
/// it is compared value by value.
fn decimals_in_limit(v: &[i128]) -> bool {
    // -2^126 <= x < 2^126, so that |x| < 10^38, exactly when bits 126 and 127 of x agree.
    let small = |x: &i128| {
        let high = (*x >> 64) as i64;
        (high >> 62) == (high >> 63)
    };
    v.iter().fold(true, |all, x| all & small(x))
        || v.iter().all(|x| x.unsigned_abs() < DECIMAL_LIMIT)
}

/// `holds` of each value of an Int32, Int64 or Date32 array (NULLs' slots included); `None`
/// for an array of another type.
fn int_test(array: &ArrayRef, holds: impl Fn(i64) -> bool) -> Option<BooleanBuffer> {
    let n = array.len();
    Some(match array.data_type() {
        DataType::Int32 => {
            let v = &array.as_primitive_opt::<Int32Type>()?.values()[..n];
            BooleanBuffer::collect_bool(n, |i| holds(i64::from(v[i])))
        }
        DataType::Date32 => {
            let v = &array.as_primitive_opt::<Date32Type>()?.values()[..n];
            BooleanBuffer::collect_bool(n, |i| holds(i64::from(v[i])))
        }
        DataType::Int64 => {
            let v = &array.as_primitive_opt::<Int64Type>()?.values()[..n];
            BooleanBuffer::collect_bool(n, |i| holds(v[i]))
        }
        _ => return None,
    })
}

/// The leaf's truth for each element, by the row evaluator.
fn rows_truth(leaf: &CExpr, array: &ArrayRef) -> Result<Truth> {
    let column = Column::new(array.as_ref());
    let empty = Record::new(&[], &[]);
    let mut yes = BooleanBufferBuilder::new(array.len());
    let mut no = BooleanBufferBuilder::new(array.len());
    for i in 0..array.len() {
        let node = column.node(i)?;
        let row = Row {
            record: &empty,
            node: Some(&node),
            aggs: &[],
        };
        let t = truth(&leaf.eval(&row)?)?;
        yes.append(t == Some(true));
        no.append(t == Some(false));
    }
    Ok(Truth {
        yes: yes.finish(),
        no: no.finish(),
    })
}

impl Truth {
    /// A condition that is `values` where the column has a value, unknown where it is NULL.
    fn known(values: BooleanBuffer, nulls: Option<&NullBuffer>) -> Truth {
        match nulls {
            None => Truth {
                no: !&values,
                yes: values,
            },
            Some(valid) => Truth {
                yes: &values & valid.inner(),
                no: &!&values & valid.inner(),
            },
        }
    }
}

#[inline(always)]
fn cmp<T: PartialOrd>(op: CmpOp, v: T, k: T) -> bool {
    match op {
        CmpOp::Eq => v == k,
        CmpOp::NotEq => v != k,
        CmpOp::Lt => v < k,
        CmpOp::LtEq => v <= k,
        CmpOp::Gt => v > k,
        CmpOp::GtEq => v >= k,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::StringArray;
    use arrow_array::{Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array};
    use arrow_schema::Field;
    use proptest::prelude::*;

    use super::*;
    use crate::eval::bind::{bind, Columns};
    use crate::sql::{parser::parse, Dialect};

    /// One row of the test batch: (i32, i64, price in cents, name, days, float).
    type TestRow = (
        Option<i32>,
        Option<i64>,
        Option<i128>,
        Option<String>,
        Option<i32>,
        Option<f64>,
    );

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("qty", DataType::Int32, true),
            Field::new("id", DataType::Int64, true),
            Field::new("price", DataType::Decimal128(7, 2), true),
            Field::new("name", DataType::Utf8, true),
            Field::new("day", DataType::Date32, true),
            Field::new("ratio", DataType::Float64, true),
        ])
    }

    fn batch(rows: &[TestRow]) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(rows.iter().map(|r| r.0).collect::<Int32Array>()),
            Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()),
            Arc::new(
                rows.iter()
                    .map(|r| r.2)
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(7, 2)
                    .unwrap(),
            ),
            Arc::new(rows.iter().map(|r| r.3.clone()).collect::<StringArray>()),
            Arc::new(rows.iter().map(|r| r.4).collect::<Date32Array>()),
            Arc::new(rows.iter().map(|r| r.5).collect::<Float64Array>()),
        ];
        RecordBatch::try_new(Arc::new(schema()), columns).unwrap()
    }

    fn filter_of(sql_where: &str) -> CExpr {
        let sql = format!("SELECT s.id FROM S3Object s WHERE {sql_where}");
        let query = parse(&sql, Dialect::Aws).unwrap();
        bind(&query, Dialect::Aws, Columns::Json)
            .unwrap()
            .filter
            .unwrap()
    }

    /// The columns `f` reads, out of `b`, as the decoder hands them over.
    fn columns_for(f: &ColumnFilter, b: &RecordBatch) -> RecordBatch {
        b.project(f.roots()).unwrap()
    }

    /// Each row's truth as (true, false).
    fn truths(f: &ColumnFilter, b: &RecordBatch) -> Vec<(bool, bool)> {
        let t = f.truth(&columns_for(f, b)).unwrap();
        (0..b.num_rows())
            .map(|i| (t.is_true(i), t.is_false(i)))
            .collect()
    }

    fn kernels(f: &ColumnFilter) -> String {
        format!("{:?}", f.test)
    }

    #[test]
    fn typed_kernels_for_trino_shapes() {
        let schema = schema();
        for (sql, kernel) in [
            ("s.qty >= 0 AND s.qty <= 5", "IntRange"),
            ("s.id BETWEEN 3 AND 9", "IntRange"),
            ("s.id <> 3", "Ints"),
            ("s.id IN (1, 5, 3, 5)", "IntSet"),
            ("s.price >= 10.00 AND 20 >= s.price", "DecimalRange"),
            ("s.price BETWEEN 1 AND 2.5", "DecimalRange"),
            ("s.price <> 10.00", "Decimals"),
            ("s.name = 'ab'", "Text"),
            ("s.name IN ('b', 'ab', '')", "TextSet"),
            ("s.name IN ('b', 1)", "Rows"),
            ("s.qty IS NULL", "IsNull"),
            ("s.name IS NOT NULL", "IsNull"),
            ("s.day < `2000-01-01`", "IntRange"),
            (
                "s.day BETWEEN `2000-01-01` AND `2000-02-01T12:00Z`",
                "IntRange",
            ),
            ("s.day <> `2000-01-01`", "Ints"),
            (
                "s.day IN (`2000-01-01`, `2000-01-02T01:00+01:00`)",
                "IntSet",
            ),
            ("s.day = '2000-01-01'", "Rows"),
            ("s.name LIKE 'a%'", "Rows"),
        ] {
            let f = ColumnFilter::compile(&filter_of(sql), &schema).unwrap();
            assert!(kernels(&f).contains(kernel), "{sql}: {}", kernels(&f));
        }
        // A decimal constant finer than the column's scale has no typed kernel.
        let f = ColumnFilter::compile(&filter_of("s.price = 1.005"), &schema).unwrap();
        assert!(kernels(&f).contains("Rows"), "{}", kernels(&f));
    }

    #[test]
    fn other_shapes_are_left_to_the_rows() {
        let schema = schema();
        for sql in [
            "CAST(s.name AS INT) = 1",
            "s.qty + 1 = 2",
            "s.nope = 1",
            "s.qty = s.id",
            "s.name.inner = 'x'",
            "CASE WHEN s.qty = 1 THEN true ELSE false END",
            "UPPER(s.name) = 'A'",
        ] {
            assert!(
                ColumnFilter::compile(&filter_of(sql), &schema).is_none(),
                "{sql} compiled"
            );
        }
    }

    #[test]
    fn pieces_of_one_key_list_are_one_set() {
        let schema = schema();
        for (sql, sets) in [
            ("s.qty IN (1, 2) OR s.qty IN (5) OR s.qty IN (2, 9)", 1),
            ("s.qty NOT IN (1) AND s.qty NOT IN (5)", 1),
            ("s.qty IN (1) OR s.qty NOT IN (5)", 2),
            ("s.qty IN (1) AND s.qty IN (5)", 2),
            ("s.qty IN (1) OR s.id IN (5)", 2),
        ] {
            let f = ColumnFilter::compile(&filter_of(sql), &schema).unwrap();
            assert_eq!(
                kernels(&f).matches("kernel: IntSet").count(),
                sets,
                "{sql}: {}",
                kernels(&f)
            );
        }
    }

    #[test]
    fn comparisons_fold_into_one_range() {
        let range = |conds: &[(CmpOp, i64)]| match int_range(conds) {
            Some(Kernel::IntRange { lo, hi }) => Some((lo, hi)),
            _ => None,
        };
        use CmpOp::*;
        assert_eq!(range(&[(GtEq, 1), (LtEq, 9), (Gt, 2)]), Some((3, 9)));
        assert_eq!(range(&[(Eq, 4), (Lt, 10)]), Some((4, 4)));
        assert_eq!(range(&[(Lt, i64::MIN)]), Some((1, 0)));
        assert_eq!(range(&[(Gt, i64::MAX)]), Some((1, 0)));
        assert_eq!(range(&[(LtEq, i64::MIN)]), Some((i64::MIN, i64::MIN)));
        assert_eq!(range(&[(GtEq, 1), (NotEq, 3)]), None);
        let f = ColumnFilter::compile(&filter_of("s.qty >= 2 AND s.qty < 7"), &schema()).unwrap();
        assert_eq!(
            kernels(&f).matches("IntRange").count(),
            1,
            "{}",
            kernels(&f)
        );
    }

    /// Values past 38 digits are FLOATs to the row path; a batch holding one is left to it,
    /// and one whose values pass only the exact test (between 2^126 and 10^38) is not.
    #[test]
    fn decimals_past_38_digits_are_left_to_the_rows() {
        let schema = Schema::new(vec![Field::new("big", DataType::Decimal128(38, 0), true)]);
        let limit = 10i128.pow(38);
        let batches = [
            vec![Some(0), Some(5), Some(limit - 1), Some(-(limit - 1)), None],
            vec![Some(5), Some(1 << 126), Some(-(1 << 126) - 1), None],
            vec![
                Some(5),
                Some(limit),
                Some(-limit),
                Some(i128::MAX),
                Some(i128::MIN),
            ],
        ];
        let fits = batches.iter().map(|b| {
            let v: Vec<i128> = b.iter().map(|x| x.unwrap_or(0)).collect();
            decimals_in_limit(&v)
        });
        assert_eq!(fits.collect::<Vec<_>>(), [true, true, false]);
        for sql in [
            "s.big > 5",
            "s.big BETWEEN 1 AND 99999999999999999999999999999999999999",
            "s.big >= -5 AND s.big < 6",
            "s.big <> 5",
            "s.big > 7 AND s.big < 6",
        ] {
            let e = filter_of(sql);
            let fast = ColumnFilter::compile(&e, &schema).unwrap();
            let reference = ColumnFilter::compile_reference(&e, &schema).unwrap();
            for values in &batches {
                let array = values
                    .iter()
                    .copied()
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(38, 0)
                    .unwrap();
                let b =
                    RecordBatch::try_new(Arc::new(schema.clone()), vec![Arc::new(array)]).unwrap();
                assert_eq!(
                    truths(&fast, &b),
                    truths(&reference, &b),
                    "{sql} {values:?}"
                );
            }
        }
    }

    #[test]
    fn decimal_comparisons_fold_into_one_range() {
        use CmpOp::*;
        assert_eq!(
            fold_range([(GtEq, 100), (LtEq, 900), (Gt, 200)]),
            Some((201, 900))
        );
        assert_eq!(fold_range([(Gt, i128::MAX)]), Some((1, 0)));
        assert_eq!(fold_range([(Lt, 5), (NotEq, 3)]), None);
        for (sql, ranges) in [
            ("s.price >= 1.50 AND s.price <= 2", 1),
            (
                "(s.price >= 1 AND s.price <= 2) OR (s.price > 3 AND s.price < 4)",
                2,
            ),
            ("s.price >= 1 AND s.qty <= 2", 1),
        ] {
            let f = ColumnFilter::compile(&filter_of(sql), &schema()).unwrap();
            assert_eq!(
                kernels(&f).matches("DecimalRange").count(),
                ranges,
                "{sql}: {}",
                kernels(&f)
            );
        }
        let f = ColumnFilter::compile(&filter_of("s.price BETWEEN 1.5 AND 2"), &schema()).unwrap();
        assert!(kernels(&f).contains("lo: 150, hi: 200"), "{}", kernels(&f));
    }

    #[test]
    fn roots_are_the_columns_read_in_file_order() {
        let f = ColumnFilter::compile(
            &filter_of("s.name = 'x' OR s.qty = 1 OR s.name = 'y'"),
            &schema(),
        )
        .unwrap();
        assert_eq!(f.roots(), &[0, 3]);
    }

    fn test_row() -> impl Strategy<Value = TestRow> {
        (
            proptest::option::weighted(0.9, -3i32..12),
            proptest::option::weighted(0.9, -3i64..12),
            proptest::option::weighted(0.9, -1500i128..2500),
            proptest::option::weighted(0.9, "[ab]{0,2}"),
            proptest::option::weighted(0.9, 10_950i32..10_960),
            proptest::option::weighted(0.9, -2.0f64..10.0),
        )
    }

    /// A timestamp literal near the test rows' days: a date, a midnight written another
    /// way, or an instant between midnights.
    fn timestamp() -> impl Strategy<Value = String> {
        let time = prop_oneof![
            Just(""),
            Just("T00:00Z"),
            Just("T00:00:00.000000001Z"),
            Just("T12:30Z"),
            Just("T23:59:59.5Z"),
            Just("T01:00+01:00"),
            Just("T00:00+05:00"),
            Just("T22:00-02:00"),
        ];
        (10_949i32..10_961, time).prop_map(|(d, time)| {
            let day =
                chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + chrono::Days::new(d as u64);
            format!("`{day}{time}`")
        })
    }

    /// Conditions with constants drawn to meet the data's values.
    fn condition() -> impl Strategy<Value = String> {
        let op = prop_oneof![
            Just("="),
            Just("<>"),
            Just("!="),
            Just("<"),
            Just("<="),
            Just(">"),
            Just(">=")
        ];
        let int = -4i64..13;
        let price = (-1600i64..2600).prop_map(|c| {
            let sign = if c < 0 { "-" } else { "" };
            format!("{sign}{}.{:02}", c.abs() / 100, c.abs() % 100)
        });
        prop_oneof![
            (
                prop_oneof![Just("qty"), Just("id")],
                op.clone(),
                int.clone()
            )
                .prop_map(|(c, o, k)| format!("s.{c} {o} {k}")),
            (op.clone(), int.clone()).prop_map(|(o, k)| format!("{k} {o} s.qty")),
            (int.clone(), int.clone(), any::<bool>()).prop_map(|(a, b, n)| format!(
                "s.id {}BETWEEN {a} AND {b}",
                if n { "NOT " } else { "" }
            )),
            (proptest::collection::vec(int.clone(), 1..5), any::<bool>()).prop_map(|(l, n)| {
                let l: Vec<String> = l.iter().map(|k| k.to_string()).collect();
                format!("s.qty {}IN ({})", if n { "NOT " } else { "" }, l.join(", "))
            }),
            (op.clone(), price.clone()).prop_map(|(o, p)| format!("s.price {o} {p}")),
            (op.clone(), int.clone()).prop_map(|(o, k)| format!("s.price {o} {k}")),
            (price.clone(), price).prop_map(|(a, b)| format!("s.price BETWEEN {a} AND {b}")),
            (op.clone(), "[ab]{0,2}").prop_map(|(o, k)| format!("s.name {o} '{k}'")),
            (proptest::collection::vec("[ab]{0,2}", 1..4), any::<bool>()).prop_map(|(l, n)| {
                let l: Vec<String> = l.iter().map(|k| format!("'{k}'")).collect();
                format!(
                    "s.name {}IN ({})",
                    if n { "NOT " } else { "" },
                    l.join(", ")
                )
            }),
            (op.clone(), timestamp()).prop_map(|(o, t)| format!("s.day {o} {t}")),
            (timestamp(), timestamp()).prop_map(|(a, b)| format!("s.day BETWEEN {a} AND {b}")),
            (proptest::collection::vec(timestamp(), 1..4), any::<bool>()).prop_map(|(l, n)| {
                format!("s.day {}IN ({})", if n { "NOT " } else { "" }, l.join(", "))
            }),
            (op, -2i64..10).prop_map(|(o, k)| format!("s.ratio {o} {k}")),
            (
                prop_oneof![
                    Just("qty"),
                    Just("id"),
                    Just("price"),
                    Just("name"),
                    Just("day"),
                    Just("ratio")
                ],
                any::<bool>()
            )
                .prop_map(|(c, n)| format!("s.{c} IS {}NULL", if n { "NOT " } else { "" })),
            Just("s.name LIKE 'a%'".to_string()),
            Just("s.qty = 'x'".to_string()),
        ]
    }

    fn clause() -> impl Strategy<Value = String> {
        condition().prop_recursive(3, 8, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) AND ({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) OR ({b})")),
                inner.prop_map(|a| format!("NOT ({a})")),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The typed kernels give each row the truth the row evaluator gives it.
        #[test]
        fn kernels_agree_with_the_row_evaluator(
            rows in proptest::collection::vec(test_row(), 0..80),
            sql in clause(),
        ) {
            let b = batch(&rows);
            let e = filter_of(&sql);
            let fast = ColumnFilter::compile(&e, &schema()).unwrap();
            let reference = ColumnFilter::compile_reference(&e, &schema()).unwrap();
            prop_assert_eq!(truths(&fast, &b), truths(&reference, &b), "{}", sql);
        }
    }
}
