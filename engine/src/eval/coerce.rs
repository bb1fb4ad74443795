//! S3 Select's typing rules: comparisons across types, implicit conversion of CSV strings,
//! CAST, and arithmetic. `docs/sql.md` states the rules for users; this is where they live.
//!
//! CSV fields are strings. A string meets a number in three places:
//!
//! * a comparison (`_1 > 5`): the string is read as a number; when it is not one, the
//!   comparison is unknown and the row does not match (no error, as a row with a stray header
//!   line or a blank should not fail a whole scan);
//! * arithmetic (`_1 + 1`) and SUM/AVG: the string is read as a number, and `CastFailed`
//!   otherwise;
//! * a string literal (`_1 > '5'`) compares as text, character by character, as AWS does
//!   (aws/aws-sdk-js#3343: `'5' >= '41'` is true).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::err;
use crate::error::Result;
use crate::eval::expr::ArithOp;
use crate::sql::ast::{CastType, Pos};
use crate::value::numeric::{format_f64, parse_f64, parse_i64};
use crate::value::{Decimal, Timestamp, Value};

/// A number read from text: an integer if it is one, else a decimal, else a float.
pub fn parse_number(s: &str) -> Option<Value<'static>> {
    let t = s.trim();
    if let Some(i) = parse_i64(t.as_bytes()) {
        return Some(Value::Int(i));
    }
    if let Some(d) = Decimal::parse(t) {
        return Some(Value::Decimal(d));
    }
    parse_f64(t).map(Value::Float)
}

fn is_number(v: &Value<'_>) -> bool {
    matches!(v, Value::Int(_) | Value::Decimal(_) | Value::Float(_))
}

/// Orders two numbers exactly where both are exact, through f64 otherwise.
fn cmp_numbers(a: &Value<'_>, b: &Value<'_>) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Decimal(y)) => Some(Decimal::from_i64(*x).cmp(y)),
        (Value::Decimal(x), Value::Int(y)) => Some(x.cmp(&Decimal::from_i64(*y))),
        (Value::Decimal(x), Value::Decimal(y)) => Some(x.cmp(y)),
        _ => to_f64(a)?.partial_cmp(&to_f64(b)?),
    }
}

fn to_f64(v: &Value<'_>) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Decimal(d) => Some(d.to_f64()),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// Orders two present values, or `None` when they cannot be ordered.
pub fn compare(l: &Value<'_>, r: &Value<'_>) -> Option<Ordering> {
    match (l, r) {
        (Value::Str(a), Value::Str(b)) => Some(a.as_ref().cmp(b.as_ref())),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Timestamp(a), Value::Timestamp(b)) => Some(a.cmp_instant(b)),
        (a, b) if is_number(a) && is_number(b) => cmp_numbers(a, b),
        (Value::Str(s), n) if is_number(n) => cmp_numbers(&parse_number(s)?, n),
        (n, Value::Str(s)) if is_number(n) => cmp_numbers(n, &parse_number(s)?),
        (Value::Str(s), Value::Timestamp(t)) => {
            Some(Timestamp::parse_ion(s.trim())?.cmp_instant(t))
        }
        (Value::Timestamp(t), Value::Str(s)) => {
            Some(t.cmp_instant(&Timestamp::parse_ion(s.trim())?))
        }
        _ => None,
    }
}

/// Whether two values are of types that no conversion relates (a boolean and a number, say):
/// they are simply not equal.
pub fn unrelated_types(l: &Value<'_>, r: &Value<'_>) -> bool {
    let class = |v: &Value<'_>| match v {
        Value::Str(_) => 0,
        Value::Bool(_) => 1,
        Value::Timestamp(_) => 2,
        Value::Nested(_) => 4,
        _ => 3,
    };
    let (a, b) = (class(l), class(r));
    a != b && a != 0 && b != 0
}

/// The text of a value, as CSV output and `||` show it.
pub fn to_text<'a>(v: &'a Value<'_>) -> Cow<'a, str> {
    match v {
        Value::Str(s) => Cow::Borrowed(s.as_ref()),
        Value::Int(i) => Cow::Owned(i.to_string()),
        Value::Float(f) => Cow::Owned(format_f64(*f)),
        Value::Decimal(d) => Cow::Owned(d.to_string()),
        Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Value::Timestamp(t) => Cow::Owned(t.to_string()),
        Value::Null | Value::Missing => Cow::Borrowed(""),
        // Nested values read as their JSON text, as in CSV output.
        Value::Nested(n) => {
            let mut text = Vec::new();
            crate::json::write_node(&mut text, n.node());
            Cow::Owned(String::from_utf8_lossy(&text).into_owned())
        }
    }
}

/// A value quoted for an error message.
pub fn display_for_error(v: &Value<'_>) -> String {
    let t = to_text(v);
    if t.chars().count() > 64 {
        let cut: String = t.chars().take(64).collect();
        format!("'{cut}…'")
    } else {
        format!("'{t}'")
    }
}

fn cast_failed(v: &Value<'_>, to: &str, pos: Pos) -> crate::error::SelectError {
    err!(
        CastFailed,
        "cannot cast {} {} to {to} (at {pos})",
        v.type_name(),
        display_for_error(v)
    )
}

/// `CAST(v AS to)`.
pub fn cast<'a>(v: Value<'a>, to: CastType, pos: Pos) -> Result<Value<'a>> {
    if v.is_absent() {
        return Ok(v);
    }
    if matches!(v, Value::Nested(_)) && to != CastType::String {
        return Err(cast_failed(&v, &to.to_string(), pos));
    }
    match to {
        CastType::String => Ok(match v {
            Value::Str(s) => Value::Str(s),
            other => Value::Str(Cow::Owned(to_text(&other).into_owned())),
        }),
        CastType::Int => cast_int(&v, pos).map(Value::Int),
        CastType::Float => match &v {
            Value::Str(s) => parse_f64(s.trim())
                .map(Value::Float)
                .ok_or_else(|| cast_failed(&v, "FLOAT", pos)),
            Value::Bool(b) => Ok(Value::Float(if *b { 1.0 } else { 0.0 })),
            n => to_f64(n)
                .map(Value::Float)
                .ok_or_else(|| cast_failed(&v, "FLOAT", pos)),
        },
        CastType::Decimal { precision, scale } => Ok(Value::Decimal(
            cast_decimal(&v, pos)?.cast(precision, scale)?,
        )),
        CastType::Bool => match &v {
            Value::Bool(b) => Ok(Value::Bool(*b)),
            Value::Str(s) => {
                let t = s.trim();
                if t.eq_ignore_ascii_case("true") {
                    Ok(Value::Bool(true))
                } else if t.eq_ignore_ascii_case("false") {
                    Ok(Value::Bool(false))
                } else {
                    Err(cast_failed(&v, "BOOL", pos))
                }
            }
            Value::Int(i) => Ok(Value::Bool(*i != 0)),
            Value::Decimal(d) => Ok(Value::Bool(d.mantissa != 0)),
            Value::Float(f) => Ok(Value::Bool(*f != 0.0)),
            _ => Err(cast_failed(&v, "BOOL", pos)),
        },
        CastType::Timestamp => match &v {
            Value::Timestamp(t) => Ok(Value::Timestamp(*t)),
            Value::Str(s) => Timestamp::parse_ion(s.trim())
                .map(Value::Timestamp)
                .ok_or_else(|| cast_failed(&v, "TIMESTAMP", pos)),
            _ => Err(cast_failed(&v, "TIMESTAMP", pos)),
        },
    }
}

/// `CAST(v AS DECIMAL)` of a value that is not NULL or MISSING (a string is trimmed).
pub fn cast_decimal(v: &Value<'_>, pos: Pos) -> Result<Decimal> {
    match v {
        Value::Int(i) => Ok(Decimal::from_i64(*i)),
        Value::Decimal(d) => Ok(*d),
        Value::Float(f) => {
            Decimal::parse(&format!("{f}")).ok_or_else(|| cast_failed(v, "DECIMAL", pos))
        }
        Value::Str(s) => Decimal::parse(s.trim()).ok_or_else(|| cast_failed(v, "DECIMAL", pos)),
        Value::Bool(b) => Ok(Decimal::from_i64(*b as i64)),
        _ => Err(cast_failed(v, "DECIMAL", pos)),
    }
}

/// `CAST(v AS INT)`: 64-bit, fractions truncated toward zero.
pub fn cast_int(v: &Value<'_>, pos: Pos) -> Result<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Str(s) => {
            if let Some(i) = parse_i64(s.as_bytes()) {
                return Ok(i);
            }
            match parse_number(s) {
                Some(n @ (Value::Decimal(_) | Value::Float(_))) => cast_int(&n, pos),
                Some(Value::Int(i)) => Ok(i),
                _ => Err(cast_failed(v, "INT", pos)),
            }
        }
        Value::Decimal(d) => d.to_i64_trunc().ok_or_else(|| {
            err!(
                IntegerOverflow,
                "{d} does not fit in a 64-bit INT (at {pos})"
            )
        }),
        Value::Float(f) => {
            let t = f.trunc();
            // [-2^63, 2^63): both bounds are exact in f64.
            let min = i64::MIN as f64;
            if (min..-min).contains(&t) {
                Ok(t as i64)
            } else {
                Err(err!(
                    IntegerOverflow,
                    "{f} does not fit in a 64-bit INT (at {pos})"
                ))
            }
        }
        Value::Bool(b) => Ok(*b as i64),
        _ => Err(cast_failed(v, "INT", pos)),
    }
}

/// A value used as a number: strings are read as numbers, or `CastFailed`.
fn numeric<'a>(v: Value<'a>) -> Result<Value<'a>> {
    match v {
        Value::Str(ref s) => parse_number(s).ok_or_else(|| {
            err!(
                CastFailed,
                "{} is not a number and cannot be used in arithmetic",
                display_for_error(&v)
            )
        }),
        Value::Int(_) | Value::Decimal(_) | Value::Float(_) | Value::Null | Value::Missing => Ok(v),
        other => Err(err!(
            InvalidDataType,
            "arithmetic needs numbers, got {} {}",
            other.type_name(),
            display_for_error(&other)
        )),
    }
}

pub fn negate(v: Value<'_>) -> Result<Value<'_>> {
    match numeric(v)? {
        Value::Int(i) => i
            .checked_neg()
            .map(Value::Int)
            .ok_or_else(|| err!(IntegerOverflow, "-({i}) does not fit in a 64-bit INT")),
        Value::Decimal(d) => Ok(Value::Decimal(Decimal {
            mantissa: -d.mantissa,
            scale: d.scale,
        })),
        Value::Float(f) => Ok(Value::Float(-f)),
        other => Ok(other),
    }
}

fn div_by_zero() -> crate::error::SelectError {
    err!(EvaluatorInvalidArguments, "division by zero")
}

/// `a op b` with numeric promotion INT → DECIMAL → FLOAT.
pub fn arith(op: ArithOp, a: Value<'_>, b: Value<'_>) -> Result<Value<'static>> {
    let a = numeric(a)?;
    let b = numeric(b)?;
    if a.is_absent() || b.is_absent() {
        return Ok(
            if matches!(a, Value::Missing) || matches!(b, Value::Missing) {
                Value::Missing
            } else {
                Value::Null
            },
        );
    }
    let overflow = || err!(IntegerOverflow, "integer arithmetic overflowed 64 bits");
    match (&a, &b) {
        (Value::Int(x), Value::Int(y)) => {
            let (x, y) = (*x, *y);
            let r = match op {
                ArithOp::Add => x.checked_add(y),
                ArithOp::Sub => x.checked_sub(y),
                ArithOp::Mul => x.checked_mul(y),
                ArithOp::Div if y == 0 => return Err(div_by_zero()),
                ArithOp::Div => x.checked_div(y),
                ArithOp::Mod if y == 0 => return Err(div_by_zero()),
                ArithOp::Mod => x.checked_rem(y),
            };
            r.map(Value::Int).ok_or_else(overflow)
        }
        (Value::Float(_), _) | (_, Value::Float(_)) => {
            let (x, y) = (
                to_f64(&a).unwrap_or(f64::NAN),
                to_f64(&b).unwrap_or(f64::NAN),
            );
            Ok(Value::Float(match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div if y == 0.0 => return Err(div_by_zero()),
                ArithOp::Div => x / y,
                ArithOp::Mod if y == 0.0 => return Err(div_by_zero()),
                ArithOp::Mod => x % y,
            }))
        }
        _ => {
            let as_dec = |v: &Value<'_>| match v {
                Value::Int(i) => Decimal::from_i64(*i),
                Value::Decimal(d) => *d,
                _ => Decimal::from_i64(0),
            };
            let (x, y) = (as_dec(&a), as_dec(&b));
            let r = match op {
                ArithOp::Add => x.checked_add(&y),
                ArithOp::Sub => x.checked_sub(&y),
                ArithOp::Mul => x.checked_mul(&y),
                ArithOp::Div if y.mantissa == 0 => return Err(div_by_zero()),
                ArithOp::Div => x.checked_div(&y),
                ArithOp::Mod if y.mantissa == 0 => return Err(div_by_zero()),
                ArithOp::Mod => x.checked_rem(&y),
            };
            r.map(Value::Decimal)
        }
    }
}

/// A function argument that must be a timestamp (strings are read as Ion timestamps).
pub fn to_timestamp_arg(v: Value<'_>, func: &str, pos: Pos) -> Result<Timestamp> {
    match &v {
        Value::Timestamp(t) => Ok(*t),
        Value::Str(s) => Timestamp::parse_ion(s.trim()).ok_or_else(|| {
            err!(
                CastFailed,
                "{func} needs a timestamp, and {} is not one (at {pos})",
                display_for_error(&v)
            )
        }),
        other => Err(err!(
            IncorrectSqlFunctionArgumentType,
            "{func} needs a timestamp, got {} {} (at {pos})",
            other.type_name(),
            display_for_error(other)
        )),
    }
}

/// A function argument that must be an integer (strings are read as numbers).
pub fn to_int_arg(v: Value<'_>, func: &str, pos: Pos) -> Result<i64> {
    match &v {
        Value::Int(i) => Ok(*i),
        Value::Str(_) | Value::Decimal(_) | Value::Float(_) => cast_int(&v, pos),
        other => Err(err!(
            IncorrectSqlFunctionArgumentType,
            "{func} needs an integer, got {} {} (at {pos})",
            other.type_name(),
            display_for_error(other)
        )),
    }
}
