//! Scalar functions called by name: `LOWER(x)`, `SUBSTRING(x, 2, 3)`, `COALESCE(…)`, …
//!
//! Functions with their own syntax (CAST, EXTRACT, TRIM, DATE_ADD, DATE_DIFF) are separate
//! `CExpr` variants; these are the ones written as plain calls.

use std::borrow::Cow;

use crate::err;
use crate::error::Result;
use crate::eval::coerce::{self, display_for_error, to_text};
use crate::sql::ast::{CastType, Pos};
use crate::sql::Dialect;
use crate::value::{strings, Timestamp, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    CharLength,
    Lower,
    Upper,
    Substring,
    Coalesce,
    NullIf,
    ToString,
    ToTimestamp,
    /// TO_TIMESTAMP as Ceph RGW reads its argument: also ISO 8601's basic form,
    /// `19500504T110806Z`.
    CephToTimestamp,
    UtcNow,
    /// Ceph's `int(x)`: CAST(x AS INT).
    CephInt,
    /// Ceph's `float(x)`: CAST(x AS FLOAT).
    CephFloat,
}

impl Func {
    /// Looks a function up by its upper-cased name, checking its argument count.
    pub fn resolve(name: &str, argc: usize, dialect: Dialect, pos: Pos) -> Result<Func> {
        let (f, min, max) = match name {
            "CHAR_LENGTH" | "CHARACTER_LENGTH" => (Func::CharLength, 1, 1),
            "LOWER" => (Func::Lower, 1, 1),
            "UPPER" => (Func::Upper, 1, 1),
            "SUBSTRING" => (Func::Substring, 2, 3),
            "COALESCE" => (Func::Coalesce, 1, usize::MAX),
            "NULLIF" => (Func::NullIf, 2, 2),
            "TO_STRING" => (Func::ToString, 2, 2),
            "TO_TIMESTAMP" if dialect == Dialect::Ceph => (Func::CephToTimestamp, 1, 1),
            "TO_TIMESTAMP" => (Func::ToTimestamp, 1, 1),
            "UTCNOW" => (Func::UtcNow, 0, 0),
            "INT" if dialect == Dialect::Ceph => (Func::CephInt, 1, 1),
            "FLOAT" if dialect == Dialect::Ceph => (Func::CephFloat, 1, 1),
            _ => {
                return Err(err!(
                    UnsupportedFunction,
                    "unknown function {name} at {pos}"
                ))
            }
        };
        if argc < min || argc > max {
            let want = if min == max {
                format!("{min}")
            } else if max == usize::MAX {
                format!("at least {min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(err!(
                EvaluatorInvalidArguments,
                "{name} takes {want} argument(s), got {argc} (at {pos})"
            ));
        }
        Ok(f)
    }

    /// Applies the function to evaluated arguments.
    pub fn call<'a>(self, mut args: Vec<Value<'a>>, pos: Pos) -> Result<Value<'a>> {
        // NULL/MISSING in, NULL out, for every function that is not about absence.
        let propagates = !matches!(self, Func::Coalesce | Func::NullIf);
        if propagates {
            if let Some(a) = args.iter().find(|a| a.is_absent()) {
                return Ok(a.clone());
            }
        }
        match self {
            Func::CharLength => Ok(Value::Int(strings::char_length(&string_arg(
                &args[0],
                "CHAR_LENGTH",
                pos,
            )?))),
            Func::Lower => Ok(Value::Str(Cow::Owned(crate::value::strings::lower(
                &string_arg(&args[0], "LOWER", pos)?,
            )))),
            Func::Upper => Ok(Value::Str(Cow::Owned(crate::value::strings::upper(
                &string_arg(&args[0], "UPPER", pos)?,
            )))),
            Func::Substring => {
                let s = string_arg(&args[0], "SUBSTRING", pos)?;
                let start = coerce::to_int_arg(args[1].clone(), "SUBSTRING", pos)?;
                let len = match args.get(2) {
                    Some(l) => Some(coerce::to_int_arg(l.clone(), "SUBSTRING", pos)?),
                    None => None,
                };
                let out = strings::substring(&s, start, len)?;
                Ok(Value::Str(Cow::Owned(out.to_string())))
            }
            Func::Coalesce => Ok(args
                .into_iter()
                .find(|a| !a.is_absent())
                .unwrap_or(Value::Null)),
            Func::NullIf => {
                let b = args.pop().unwrap_or(Value::Null);
                let a = args.pop().unwrap_or(Value::Null);
                // AWS documents NULLIF(1, '1') as 1 and NULLIF(1.0, 1) as null: NULLIF
                // compares with typed equality, so a string never equals a non-string here,
                // unlike `=` where a CSV string meets a number as a number.
                let mixed = matches!(a, Value::Str(_)) != matches!(b, Value::Str(_));
                let eq = !mixed
                    && crate::eval::expr::compare_op(crate::eval::expr::CmpOp::Eq, &a, &b)
                        == Value::Bool(true);
                Ok(if eq { Value::Null } else { a })
            }
            Func::ToString => {
                let ts = coerce::to_timestamp_arg(args[0].clone(), "TO_STRING", pos)?;
                let pattern = string_arg(&args[1], "TO_STRING", pos)?;
                Ok(Value::Str(Cow::Owned(ts.to_string_with(&pattern)?)))
            }
            Func::ToTimestamp => {
                let s = string_arg(&args[0], "TO_TIMESTAMP", pos)?;
                Ok(Value::Timestamp(Timestamp::to_timestamp(&s)?))
            }
            Func::CephToTimestamp => {
                let s = string_arg(&args[0], "TO_TIMESTAMP", pos)?;
                let extended = iso_basic_to_extended(&s);
                Ok(Value::Timestamp(Timestamp::to_timestamp(
                    extended.as_deref().unwrap_or(&s),
                )?))
            }
            Func::UtcNow => Ok(Value::Timestamp(Timestamp::utc_now())),
            Func::CephInt => coerce::cast(args.swap_remove(0), CastType::Int, pos),
            Func::CephFloat => coerce::cast(args.swap_remove(0), CastType::Float, pos),
        }
    }
}

/// `YYYYMMDDTHHMMSS[.f…](Z|±HHMM)`, ISO 8601's basic form, in the extended form
/// (`YYYY-MM-DDTHH:MM:SS…`); `None` for any other text.
fn iso_basic_to_extended(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if !(digits(0..8) && b.get(8) == Some(&b'T') && digits(9..15)) {
        return None;
    }
    let mut rest = &s[15..];
    let mut fraction = "";
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.bytes().take_while(u8::is_ascii_digit).count();
        fraction = &rest[..n + 1];
        rest = &f[n..];
    }
    let offset = match rest.as_bytes() {
        [b'Z'] => "Z".to_string(),
        [sign @ (b'+' | b'-'), h1, h2, m1, m2]
            if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()) =>
        {
            format!(
                "{}{}{}:{}{}",
                *sign as char, *h1 as char, *h2 as char, *m1 as char, *m2 as char
            )
        }
        _ => return None,
    };
    Some(format!(
        "{}-{}-{}T{}:{}:{}{fraction}{offset}",
        &s[0..4],
        &s[4..6],
        &s[6..8],
        &s[9..11],
        &s[11..13],
        &s[13..15]
    ))
}

/// A string argument; other scalars are taken by their text.
fn string_arg<'v>(v: &'v Value<'_>, func: &str, pos: Pos) -> Result<Cow<'v, str>> {
    match v {
        Value::Str(s) => Ok(Cow::Borrowed(s.as_ref())),
        Value::Int(_) | Value::Decimal(_) | Value::Float(_) | Value::Bool(_) => Ok(to_text(v)),
        other => Err(err!(
            IncorrectSqlFunctionArgumentType,
            "{func} needs a string, got {} {} (at {pos})",
            other.type_name(),
            display_for_error(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nullif(a: Value<'static>, b: Value<'static>) -> Value<'static> {
        Func::NullIf.call(vec![a, b], Pos::default()).unwrap()
    }

    #[test]
    fn nullif_follows_the_aws_examples() {
        let s = |t: &'static str| Value::Str(Cow::Borrowed(t));
        assert_eq!(nullif(Value::Int(1), Value::Int(1)), Value::Null);
        assert_eq!(nullif(Value::Int(1), Value::Int(2)), Value::Int(1));
        assert_eq!(nullif(Value::Int(1), s("1")), Value::Int(1));
        assert_eq!(nullif(s("1"), Value::Int(1)), s("1"));
        assert_eq!(nullif(s("a"), s("a")), Value::Null);
        assert_eq!(nullif(Value::Int(1), Value::Null), Value::Int(1));
        assert_eq!(nullif(Value::Null, Value::Int(1)), Value::Null);
    }
}
