//! Aggregate accumulators: COUNT, SUM, AVG, MIN, MAX.
//!
//! Each chunk of the input accumulates its own states, which are merged in order at the end,
//! so aggregate queries run in parallel like the others. Sums stay exact: integers widen to
//! DECIMAL on overflow and only a FLOAT input makes the sum a float.

use std::cmp::Ordering;

use crate::err;
use crate::error::Result;
use crate::eval::coerce::{compare, display_for_error, parse_number};
use crate::sql::ast::AggFunc;
use crate::value::{Decimal, Value};

/// An exact-where-possible running sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sum {
    Empty,
    Int(i64),
    Decimal(Decimal),
    Float(f64),
}

impl Sum {
    fn add(self, v: &Value<'_>) -> Result<Sum> {
        Ok(match (self, v) {
            (Sum::Empty, Value::Int(i)) => Sum::Int(*i),
            (Sum::Empty, Value::Decimal(d)) => Sum::Decimal(*d),
            (Sum::Empty, Value::Float(f)) => Sum::Float(*f),
            (Sum::Int(a), Value::Int(b)) => match a.checked_add(*b) {
                Some(s) => Sum::Int(s),
                None => Sum::Decimal(Decimal::from_i64(a).checked_add(&Decimal::from_i64(*b))?),
            },
            (Sum::Int(a), Value::Decimal(d)) => Sum::Decimal(Decimal::from_i64(a).checked_add(d)?),
            (Sum::Decimal(a), Value::Int(b)) => {
                Sum::Decimal(a.checked_add(&Decimal::from_i64(*b))?)
            }
            (Sum::Decimal(a), Value::Decimal(d)) => Sum::Decimal(a.checked_add(d)?),
            (s, Value::Float(f)) => Sum::Float(s.as_f64() + f),
            (Sum::Float(a), other) => Sum::Float(a + Sum::Empty.add(other)?.as_f64()),
            (_, other) => {
                return Err(err!(
                    InvalidDataType,
                    "SUM/AVG need numbers, got {} {}",
                    other.type_name(),
                    display_for_error(other)
                ))
            }
        })
    }

    fn merge(self, other: Sum) -> Result<Sum> {
        match other {
            Sum::Empty => Ok(self),
            Sum::Int(i) => self.add(&Value::Int(i)),
            Sum::Decimal(d) => self.add(&Value::Decimal(d)),
            Sum::Float(f) => self.add(&Value::Float(f)),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Sum::Empty => 0.0,
            Sum::Int(i) => i as f64,
            Sum::Decimal(d) => d.to_f64(),
            Sum::Float(f) => f,
        }
    }

    fn value(self) -> Value<'static> {
        match self {
            Sum::Empty => Value::Null,
            Sum::Int(i) => Value::Int(i),
            Sum::Decimal(d) => Value::Decimal(d),
            Sum::Float(f) => Value::Float(f),
        }
    }
}

/// The running state of one aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum AggState {
    Count(i64),
    Sum(Sum),
    Avg(Sum, i64),
    Min(Option<Value<'static>>),
    Max(Option<Value<'static>>),
}

/// A CSV string entering SUM/AVG is read as a number.
fn numeric_input<'v>(v: &'v Value<'_>) -> Result<std::borrow::Cow<'v, Value<'v>>> {
    match v {
        Value::Str(s) => parse_number(s).map(std::borrow::Cow::Owned).ok_or_else(|| {
            err!(
                CastFailed,
                "{} is not a number and cannot be summed",
                display_for_error(v)
            )
        }),
        other => Ok(std::borrow::Cow::Borrowed(other)),
    }
}

/// MIN/MAX read CSV strings as numbers when they are numbers, so that `MAX(_1)` over `9` and
/// `10` is 10, as a user of an untyped CSV column expects.
fn ordering_input(v: &Value<'_>) -> Value<'static> {
    match v {
        Value::Str(s) => parse_number(s).unwrap_or_else(|| v.clone().into_owned()),
        other => other.clone().into_owned(),
    }
}

impl AggState {
    pub fn new(func: AggFunc) -> Self {
        match func {
            AggFunc::Count => AggState::Count(0),
            AggFunc::Sum => AggState::Sum(Sum::Empty),
            AggFunc::Avg => AggState::Avg(Sum::Empty, 0),
            AggFunc::Min => AggState::Min(None),
            AggFunc::Max => AggState::Max(None),
        }
    }

    /// COUNT(*): one more row.
    pub fn count_row(&mut self) {
        if let AggState::Count(n) = self {
            *n += 1;
        }
    }

    /// Adds one row's argument value. NULL and MISSING are skipped, as SQL does.
    pub fn update(&mut self, v: &Value<'_>) -> Result<()> {
        if v.is_absent() {
            return Ok(());
        }
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Sum(s) => *s = s.add(numeric_input(v)?.as_ref())?,
            AggState::Avg(s, n) => {
                *s = s.add(numeric_input(v)?.as_ref())?;
                *n += 1;
            }
            AggState::Min(m) => keep(m, v, Ordering::Less),
            AggState::Max(m) => keep(m, v, Ordering::Greater),
        }
        Ok(())
    }

    /// Folds the state of a later chunk into this one.
    pub fn merge(&mut self, other: AggState) -> Result<()> {
        match (self, other) {
            (AggState::Count(a), AggState::Count(b)) => *a += b,
            (AggState::Sum(a), AggState::Sum(b)) => *a = a.merge(b)?,
            (AggState::Avg(a, n), AggState::Avg(b, m)) => {
                *a = a.merge(b)?;
                *n += m;
            }
            (AggState::Min(a), AggState::Min(Some(b))) => keep(a, &b, Ordering::Less),
            (AggState::Max(a), AggState::Max(Some(b))) => keep(a, &b, Ordering::Greater),
            _ => {}
        }
        Ok(())
    }

    pub fn finish(self) -> Result<Value<'static>> {
        Ok(match self {
            AggState::Count(n) => Value::Int(n),
            AggState::Sum(s) => s.value(),
            AggState::Avg(_, 0) => Value::Null,
            AggState::Avg(Sum::Float(f), n) => Value::Float(f / n as f64),
            AggState::Avg(s, n) => {
                let total = match s {
                    Sum::Int(i) => Decimal::from_i64(i),
                    Sum::Decimal(d) => d,
                    _ => return Ok(Value::Null),
                };
                match total.checked_div(&Decimal::from_i64(n)) {
                    Ok(d) => Value::Decimal(d),
                    Err(_) => Value::Float(total.to_f64() / n as f64),
                }
            }
            AggState::Min(m) | AggState::Max(m) => m.unwrap_or(Value::Null),
        })
    }
}

fn keep(slot: &mut Option<Value<'static>>, v: &Value<'_>, want: Ordering) {
    let v = ordering_input(v);
    match slot {
        None => *slot = Some(v),
        Some(cur) => {
            if compare(&v, cur) == Some(want) {
                *slot = Some(v);
            }
        }
    }
}
