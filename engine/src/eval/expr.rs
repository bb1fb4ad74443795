//! Compiled expressions and their evaluation over one record.
//!
//! The binder (`eval::bind`) turns the AST into a [`CExpr`] tree whose column references are
//! field indexes and whose constant parts (LIKE patterns, literals) are prepared once. A field
//! is read as a string borrowed from the input buffer; nothing is allocated for a row unless
//! an expression builds a new string.

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::csv::Record;
use crate::err;
use crate::error::{Result, SelectError};
use crate::eval::coerce::{self, compare, to_text};
use crate::eval::func::Func;
use crate::eval::int_set::IntSet;
use crate::json::path::{node_value, walk, Step};
use crate::json::Node;
use crate::sql::ast::{CastType, DatePart, Pos, TrimSpec};
use crate::value::like::{LikePattern, LikeSyntax};
use crate::value::numeric::{parse_i64, parse_scaled_i64};
use crate::value::{Decimal, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// A LIKE pattern: compiled once when it is a literal, per row otherwise.
#[derive(Debug, Clone)]
pub enum LikeSpec {
    Const(LikePattern),
    Dynamic {
        pattern: Box<CExpr>,
        escape: Option<Box<CExpr>>,
        syntax: LikeSyntax,
    },
}

/// A bound, evaluable expression.
#[derive(Debug, Clone)]
pub enum CExpr {
    Const(Value<'static>),
    /// Field `index` (0-based) of the record; `name` is how the query wrote it.
    Field {
        index: usize,
    },
    /// Field `index` as Ceph RGW reads a CSV field: NULL when empty (Ceph dialect).
    NullableField {
        index: usize,
    },
    /// JSON input: the value at the end of `steps` from the row (the row itself when empty).
    Path {
        steps: Box<[Step]>,
    },
    /// `CASE f WHEN '' THEN NULL ELSE CAST(f AS t) END`: what Trino and Presto send for every
    /// typed column. Recognised by the binder so that the field is read once.
    EmptyAsNullCast {
        index: usize,
        to: CastType,
        pos: Pos,
    },
    /// `field op k` for an integer constant, where the field is read as CAST(… AS INT) (and,
    /// with `empty_is_null`, through Trino's empty-as-NULL CASE). The field's bytes are parsed
    /// straight to an i64; anything that is not a plain integer goes through the general
    /// path, so results and errors are those of the unspecialised expression.
    IntFieldCmp {
        index: usize,
        /// All must hold: `x >= lo AND x <= hi` is one node, so the field is parsed once.
        conds: Box<[(CmpOp, i64)]>,
        empty_is_null: bool,
        pos: Pos,
    },
    /// `field op k` for decimal (or integer) constants, where the field is read as
    /// `CAST(… AS DECIMAL(p,s))` or `CAST(… AS DECIMAL)` (which keep the value: see
    /// [`crate::value::Decimal::cast`]), through Trino's empty-as-NULL CASE with
    /// `empty_is_null`: Trino's price ranges. The constants are integers at `scale` (their
    /// deepest scale, at least [`DEC_FIELD_MIN_SCALE`]); a field of at most that many fraction
    /// digits is parsed straight to an integer at that scale, anything else goes through the
    /// general CAST and a decimal comparison, so results and errors are those of the
    /// unspecialised expression.
    DecFieldCmp {
        index: usize,
        scale: u8,
        /// All must hold, as in `IntFieldCmp`.
        conds: Box<[(CmpOp, i64)]>,
        empty_is_null: bool,
        pos: Pos,
    },
    /// `field IN (k1, k2, …)` for integer constants, the field read as in `IntFieldCmp`: one
    /// parse and one set lookup instead of a comparison per item (a join's key list, as
    /// Sift's TPC-DS client pushes down, holds up to 1,000).
    IntFieldIn {
        index: usize,
        set: IntSet,
        negated: bool,
        empty_is_null: bool,
        pos: Pos,
    },
    /// `field IN ('a', 'b', …)` for text constants: a binary search of the field's bytes
    /// among the constants' (equality as in `StrFieldCmp`), instead of a comparison per item
    /// (a join's key list of item ids, as Sift's TPC-DS client pushes down, holds up to
    /// 1,000).
    StrFieldIn {
        index: usize,
        /// Sorted, without duplicates.
        set: Box<[Box<[u8]>]>,
        negated: bool,
    },
    /// `field op 'text'`: compares the field's bytes without building a value (UTF-8 byte
    /// order is code point order).
    StrFieldCmp {
        index: usize,
        op: CmpOp,
        k: Box<str>,
    },
    /// The value of aggregate number `i` (only in an aggregate query's projection).
    AggResult(usize),
    Not(Box<CExpr>),
    Neg(Box<CExpr>),
    And(Box<CExpr>, Box<CExpr>),
    Or(Box<CExpr>, Box<CExpr>),
    Cmp(CmpOp, Box<CExpr>, Box<CExpr>),
    Arith(ArithOp, Box<CExpr>, Box<CExpr>),
    Concat(Box<CExpr>, Box<CExpr>),
    Like {
        expr: Box<CExpr>,
        pattern: LikeSpec,
        negated: bool,
    },
    Between {
        expr: Box<CExpr>,
        low: Box<CExpr>,
        high: Box<CExpr>,
        negated: bool,
    },
    InList {
        expr: Box<CExpr>,
        list: Vec<CExpr>,
        negated: bool,
    },
    IsNull {
        expr: Box<CExpr>,
        negated: bool,
    },
    IsMissing {
        expr: Box<CExpr>,
        negated: bool,
    },
    Case {
        operand: Option<Box<CExpr>>,
        whens: Vec<(CExpr, CExpr)>,
        else_expr: Option<Box<CExpr>>,
    },
    Cast {
        expr: Box<CExpr>,
        to: CastType,
        pos: Pos,
    },
    Extract {
        part: DatePart,
        expr: Box<CExpr>,
        pos: Pos,
    },
    DateAdd {
        part: DatePart,
        quantity: Box<CExpr>,
        timestamp: Box<CExpr>,
        pos: Pos,
    },
    DateDiff {
        part: DatePart,
        from: Box<CExpr>,
        to: Box<CExpr>,
        pos: Pos,
    },
    Trim {
        spec: TrimSpec,
        chars: Option<Box<CExpr>>,
        expr: Box<CExpr>,
    },
    Func {
        func: Func,
        args: Vec<CExpr>,
        pos: Pos,
    },
}

/// What an expression can see while it is evaluated.
pub struct Row<'r, 'c> {
    pub record: &'r Record<'c>,
    /// JSON input: the row's value (`None` for a MISSING row, and for CSV input).
    pub node: Option<&'r Node<'c>>,
    /// Final aggregate values, for an aggregate query's projection.
    pub aggs: &'r [Value<'static>],
}

/// Reads field `i` of the record as a string value (MISSING past the record's end).
#[inline]
pub fn field_value<'r>(record: &'r Record<'_>, i: usize) -> Result<Value<'r>> {
    Ok(match field_text(record, i)? {
        Some(s) => Value::Str(Cow::Borrowed(s)),
        None => Value::Missing,
    })
}

/// Field `i` of the record as text, `None` past the record's end. Inlined into the callers'
/// per-field loops, where a call and its `Result` per field would cost more than the lookup;
/// the error is built out of line.
#[inline(always)]
pub fn field_text<'r>(record: &'r Record<'_>, i: usize) -> Result<Option<&'r str>> {
    match record.field_str(i) {
        Some(Ok(s)) => Ok(Some(s)),
        Some(Err(_)) => Err(not_utf8(record, i)),
        None => Ok(None),
    }
}

#[cold]
#[inline(never)]
fn not_utf8(record: &Record<'_>, i: usize) -> SelectError {
    err!(
        InvalidTextEncoding,
        "field _{} of the record at offset {} is not valid UTF-8",
        i + 1,
        record.offset()
    )
}

/// SQL's three-valued truth: `Some(bool)` or unknown (NULL/MISSING).
#[inline]
pub fn truth(v: &Value<'_>) -> Result<Option<bool>> {
    match v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null | Value::Missing => Ok(None),
        other => Err(err!(
            InvalidDataType,
            "a condition must be a boolean, got {} {}",
            other.type_name(),
            coerce::display_for_error(other)
        )),
    }
}

fn bool_or_unknown(b: Option<bool>) -> Value<'static> {
    match b {
        Some(b) => Value::Bool(b),
        None => Value::Null,
    }
}

impl CExpr {
    /// Evaluates the expression for one row.
    pub fn eval<'r>(&'r self, row: &Row<'r, '_>) -> Result<Value<'r>> {
        match self {
            CExpr::Const(v) => Ok(v.clone()),
            CExpr::Field { index } => field_value(row.record, *index),
            CExpr::NullableField { index } => match field_value(row.record, *index)? {
                Value::Str(s) if s.is_empty() => Ok(Value::Null),
                v => Ok(v),
            },
            CExpr::Path { steps } => Ok(node_value(walk(row.node, steps))),
            CExpr::EmptyAsNullCast { index, to, pos } => {
                let v = field_value(row.record, *index)?;
                match &v {
                    Value::Str(s) if s.is_empty() => Ok(Value::Null),
                    _ => coerce::cast(v, *to, *pos),
                }
            }
            CExpr::AggResult(i) => Ok(row.aggs.get(*i).cloned().unwrap_or(Value::Null)),
            CExpr::IntFieldCmp { .. }
            | CExpr::DecFieldCmp { .. }
            | CExpr::IntFieldIn { .. }
            | CExpr::StrFieldIn { .. }
            | CExpr::StrFieldCmp { .. } => Ok(match self.test(row)? {
                Some(b) => Value::Bool(b),
                None => Value::Null,
            }),
            CExpr::Not(e) => {
                let v = e.eval(row)?;
                Ok(bool_or_unknown(truth(&v)?.map(|b| !b)))
            }
            CExpr::Neg(e) => coerce::negate(e.eval(row)?),
            CExpr::And(a, b) => {
                let l = truth(&a.eval(row)?)?;
                if l == Some(false) {
                    return Ok(Value::Bool(false));
                }
                let r = truth(&b.eval(row)?)?;
                Ok(match (l, r) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                })
            }
            CExpr::Or(a, b) => {
                let l = truth(&a.eval(row)?)?;
                if l == Some(true) {
                    return Ok(Value::Bool(true));
                }
                let r = truth(&b.eval(row)?)?;
                Ok(match (l, r) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                })
            }
            CExpr::Cmp(op, a, b) => {
                let l = a.eval(row)?;
                let r = b.eval(row)?;
                Ok(compare_op(*op, &l, &r))
            }
            CExpr::Arith(op, a, b) => coerce::arith(*op, a.eval(row)?, b.eval(row)?),
            CExpr::Concat(a, b) => {
                let l = a.eval(row)?;
                let r = b.eval(row)?;
                if l.is_absent() || r.is_absent() {
                    return Ok(absent_of(&l, &r));
                }
                let mut s = to_text(&l).into_owned();
                s.push_str(&to_text(&r));
                Ok(Value::Str(Cow::Owned(s)))
            }
            CExpr::Like {
                expr,
                pattern,
                negated,
            } => {
                let v = expr.eval(row)?;
                if v.is_absent() {
                    return Ok(v);
                }
                let text = to_text(&v);
                let matched = match pattern {
                    LikeSpec::Const(p) => p.matches(&text),
                    LikeSpec::Dynamic {
                        pattern,
                        escape,
                        syntax,
                    } => {
                        let p = pattern.eval(row)?;
                        if p.is_absent() {
                            return Ok(p);
                        }
                        if !matches!(p, Value::Str(_)) {
                            return Err(err!(
                                LikeInvalidInputs,
                                "the pattern of LIKE must be a string, got {} {}",
                                p.type_name(),
                                coerce::display_for_error(&p)
                            ));
                        }
                        let esc = match escape {
                            Some(e) => match e.eval(row)? {
                                v if v.is_absent() => return Ok(v),
                                v => Some(like_escape_char(&v)?),
                            },
                            None => None,
                        };
                        LikePattern::compile_in(&to_text(&p), esc, *syntax)?.matches(&text)
                    }
                };
                Ok(Value::Bool(matched != *negated))
            }
            CExpr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                let v = expr.eval(row)?;
                let lo = low.eval(row)?;
                let hi = high.eval(row)?;
                let ge = as_truth(compare_op(CmpOp::GtEq, &v, &lo));
                let le = as_truth(compare_op(CmpOp::LtEq, &v, &hi));
                let both = match (ge, le) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                Ok(bool_or_unknown(both.map(|b| b != *negated)))
            }
            CExpr::InList {
                expr,
                list,
                negated,
            } => {
                let v = expr.eval(row)?;
                if v.is_absent() {
                    return Ok(Value::Null);
                }
                let mut unknown = false;
                for item in list {
                    let c = item.eval(row)?;
                    match as_truth(compare_op(CmpOp::Eq, &v, &c)) {
                        Some(true) => return Ok(Value::Bool(!*negated)),
                        Some(false) => {}
                        None => unknown = true,
                    }
                }
                Ok(if unknown {
                    Value::Null
                } else {
                    Value::Bool(*negated)
                })
            }
            CExpr::IsNull { expr, negated } => {
                let v = expr.eval(row)?;
                Ok(Value::Bool(v.is_absent() != *negated))
            }
            CExpr::IsMissing { expr, negated } => {
                let v = expr.eval(row)?;
                Ok(Value::Bool(matches!(v, Value::Missing) != *negated))
            }
            CExpr::Case {
                operand,
                whens,
                else_expr,
            } => {
                match operand {
                    Some(op) => {
                        let v = op.eval(row)?;
                        for (w, then) in whens {
                            let c = w.eval(row)?;
                            if as_truth(compare_op(CmpOp::Eq, &v, &c)) == Some(true) {
                                return then.eval(row);
                            }
                        }
                    }
                    None => {
                        for (w, then) in whens {
                            if truth(&w.eval(row)?)? == Some(true) {
                                return then.eval(row);
                            }
                        }
                    }
                }
                match else_expr {
                    Some(e) => e.eval(row),
                    None => Ok(Value::Null),
                }
            }
            CExpr::Cast { expr, to, pos } => coerce::cast(expr.eval(row)?, *to, *pos),
            CExpr::Extract { part, expr, pos } => {
                let v = expr.eval(row)?;
                if v.is_absent() {
                    return Ok(v);
                }
                let ts = coerce::to_timestamp_arg(v, "EXTRACT", *pos)?;
                Ok(Value::Int(ts.extract(*part)?))
            }
            CExpr::DateAdd {
                part,
                quantity,
                timestamp,
                pos,
            } => {
                let q = quantity.eval(row)?;
                let t = timestamp.eval(row)?;
                if q.is_absent() || t.is_absent() {
                    return Ok(absent_of(&q, &t));
                }
                let n = coerce::to_int_arg(q, "DATE_ADD", *pos)?;
                let ts = coerce::to_timestamp_arg(t, "DATE_ADD", *pos)?;
                Ok(Value::Timestamp(ts.date_add(*part, n)?))
            }
            CExpr::DateDiff {
                part,
                from,
                to,
                pos,
            } => {
                let a = from.eval(row)?;
                let b = to.eval(row)?;
                if a.is_absent() || b.is_absent() {
                    return Ok(absent_of(&a, &b));
                }
                let a = coerce::to_timestamp_arg(a, "DATE_DIFF", *pos)?;
                let b = coerce::to_timestamp_arg(b, "DATE_DIFF", *pos)?;
                Ok(Value::Int(a.date_diff(*part, &b)?))
            }
            CExpr::Trim { spec, chars, expr } => {
                let v = expr.eval(row)?;
                if v.is_absent() {
                    return Ok(v);
                }
                let chars = match chars {
                    Some(c) => match c.eval(row)? {
                        c if c.is_absent() => return Ok(c),
                        c => Some(to_text(&c).into_owned()),
                    },
                    None => None,
                };
                let text = to_text(&v);
                let trimmed = crate::value::strings::trim(&text, *spec, chars.as_deref());
                Ok(Value::Str(Cow::Owned(trimmed.to_owned())))
            }
            CExpr::Func { func, args, pos } => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(a.eval(row)?);
                }
                func.call(vals, *pos)
            }
        }
    }

    /// The specialised comparisons: `Some(bool)`, or `None` for unknown.
    #[inline]
    fn test(&self, row: &Row<'_, '_>) -> Result<Option<bool>> {
        match self {
            CExpr::IntFieldCmp {
                index,
                conds,
                empty_is_null,
                pos,
            } => Ok(int_field(row, *index, *empty_is_null, *pos)?
                .map(|v| conds.iter().all(|(op, k)| apply(*op, v.cmp(k))))),
            CExpr::DecFieldCmp {
                index,
                scale,
                conds,
                empty_is_null,
                pos,
            } => dec_field_test(row, *index, *scale, conds, *empty_is_null, *pos),
            CExpr::IntFieldIn {
                index,
                set,
                negated,
                empty_is_null,
                pos,
            } => {
                Ok(int_field(row, *index, *empty_is_null, *pos)?
                    .map(|v| set.contains(v) != *negated))
            }
            CExpr::StrFieldIn {
                index,
                set,
                negated,
            } => Ok(row
                .record
                .field(*index)
                .map(|bytes| set.binary_search_by(|k| (**k).cmp(bytes)).is_ok() != *negated)),
            CExpr::StrFieldCmp { index, op, k } => match row.record.field(*index) {
                Some(bytes) => Ok(Some(apply(*op, bytes.cmp(k.as_bytes())))),
                None => Ok(None),
            },
            other => truth(&other.eval(row)?),
        }
    }

    /// Evaluates a WHERE clause: only TRUE keeps the row.
    #[inline]
    pub fn matches(&self, row: &Row<'_, '_>) -> Result<bool> {
        // The common shapes (comparisons joined by AND) short-circuit without building
        // intermediate boolean values.
        match self {
            CExpr::And(a, b) => Ok(a.matches(row)? && b.matches(row)?),
            CExpr::IntFieldCmp { .. }
            | CExpr::DecFieldCmp { .. }
            | CExpr::IntFieldIn { .. }
            | CExpr::StrFieldIn { .. }
            | CExpr::StrFieldCmp { .. } => Ok(self.test(row)? == Some(true)),
            CExpr::Cmp(op, a, b) => {
                let l = a.eval(row)?;
                let r = b.eval(row)?;
                Ok(as_truth(compare_op(*op, &l, &r)) == Some(true))
            }
            _ => Ok(truth(&self.eval(row)?)? == Some(true)),
        }
    }
}

/// The bytes of field `index`, or `None` when it is missing or, with `empty_is_null` (Trino's
/// empty-as-NULL CASE), empty: the field a specialised comparison reads.
#[inline]
fn guarded_field<'r>(row: &Row<'r, '_>, index: usize, empty_is_null: bool) -> Option<&'r [u8]> {
    let bytes = row.record.field(index)?;
    (!bytes.is_empty() || !empty_is_null).then_some(bytes)
}

/// Field `index` read as `CAST(… AS INT)` (through Trino's empty-as-NULL CASE when
/// `empty_is_null`): `None` when the field is missing or, so guarded, empty. A plain integer
/// is parsed from the bytes; anything else (decimals, spaces, garbage) goes through the
/// general CAST, so results and errors are the unspecialised expression's.
#[inline]
fn int_field(
    row: &Row<'_, '_>,
    index: usize,
    empty_is_null: bool,
    pos: Pos,
) -> Result<Option<i64>> {
    let Some(bytes) = guarded_field(row, index, empty_is_null) else {
        return Ok(None);
    };
    match parse_i64(bytes) {
        Some(v) => Ok(Some(v)),
        None => {
            let f = field_value(row.record, index)?;
            coerce::cast_int(&f, pos).map(Some)
        }
    }
}

/// The least scale a [`CExpr::DecFieldCmp`] compares at, so that a field with a few more
/// fraction digits than the constants (prices against `10`) still takes the fast path.
pub const DEC_FIELD_MIN_SCALE: u8 = 4;

/// [`CExpr::DecFieldCmp`] over one row: `None` when the field is missing or, so guarded,
/// empty; otherwise whether every condition holds.
#[inline]
fn dec_field_test(
    row: &Row<'_, '_>,
    index: usize,
    scale: u8,
    conds: &[(CmpOp, i64)],
    empty_is_null: bool,
    pos: Pos,
) -> Result<Option<bool>> {
    let Some(bytes) = guarded_field(row, index, empty_is_null) else {
        return Ok(None);
    };
    if let Some(v) = parse_scaled_i64(bytes, scale) {
        return Ok(Some(conds.iter().all(|(op, k)| apply(*op, v.cmp(k)))));
    }
    let value = field_value(row.record, index)?;
    if value.is_absent() {
        return Ok(None);
    }
    let d = coerce::cast_decimal(&value, pos)?;
    Ok(Some(conds.iter().all(|(op, k)| {
        apply(
            *op,
            d.cmp(&Decimal {
                mantissa: i128::from(*k),
                scale,
            }),
        )
    })))
}

#[inline]
fn apply(op: CmpOp, ord: Ordering) -> bool {
    match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::NotEq => ord != Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::LtEq => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::GtEq => ord != Ordering::Less,
    }
}

impl CmpOp {
    /// The operator with its operands swapped: `k < x` is `x > k`.
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }
}

/// MISSING if either side is MISSING, else NULL.
fn absent_of(a: &Value<'_>, b: &Value<'_>) -> Value<'static> {
    if matches!(a, Value::Missing) || matches!(b, Value::Missing) {
        Value::Missing
    } else {
        Value::Null
    }
}

fn as_truth(v: Value<'_>) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

/// A comparison under S3 Select's typing rules (see `docs/sql.md`): unknown when either side
/// is NULL or MISSING or when the two cannot be ordered; `=`/`<>` of values of unrelated types
/// are false/true.
pub fn compare_op(op: CmpOp, l: &Value<'_>, r: &Value<'_>) -> Value<'static> {
    if l.is_absent() || r.is_absent() {
        return absent_of(l, r);
    }
    if matches!(l, Value::Nested(_)) || matches!(r, Value::Nested(_)) {
        // Arrays and objects are equal when their JSON values are; they have no order.
        return match op {
            CmpOp::Eq => Value::Bool(l == r),
            CmpOp::NotEq => Value::Bool(l != r),
            _ => Value::Missing,
        };
    }
    match compare(l, r) {
        Some(ord) => Value::Bool(apply(op, ord)),
        None => match op {
            CmpOp::Eq if coerce::unrelated_types(l, r) => Value::Bool(false),
            CmpOp::NotEq if coerce::unrelated_types(l, r) => Value::Bool(true),
            _ => Value::Missing,
        },
    }
}

/// The ESCAPE argument of LIKE: exactly one character.
pub fn like_escape_char(v: &Value<'_>) -> Result<char> {
    let text = to_text(v);
    let mut it = text.chars();
    match (it.next(), it.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(err!(
            LikeInvalidInputs,
            "the ESCAPE of LIKE must be exactly one character, got '{text}'"
        )),
    }
}
