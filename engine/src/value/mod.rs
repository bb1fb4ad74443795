//! Runtime values of S3 Select's type system and the operations on them that do not depend
//! on where a value came from: decimal arithmetic, timestamps, LIKE matching, string
//! functions.
//!
//! CSV fields enter as strings ([`Value::Str`] borrowing the input buffer, so that a row that
//! is filtered out costs no allocation); everything else is made by literals, casts and
//! functions.

pub mod decimal;
pub mod like;
pub mod numeric;
pub mod strings;
pub mod timestamp;

use std::borrow::Cow;

pub use decimal::Decimal;
pub use like::LikePattern;
pub use timestamp::Timestamp;

/// One value. `Missing` is PartiQL's absent value (a column beyond the end of the record);
/// `Null` is SQL NULL. Both make comparisons unknown.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Missing,
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Decimal(Decimal),
    Str(Cow<'a, str>),
    Timestamp(Timestamp),
}

impl Value<'_> {
    /// The type's name as AWS error messages spell it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Missing => "MISSING",
            Value::Null => "NULL",
            Value::Bool(_) => "BOOL",
            Value::Int(_) => "INT",
            Value::Float(_) => "FLOAT",
            Value::Decimal(_) => "DECIMAL",
            Value::Str(_) => "STRING",
            Value::Timestamp(_) => "TIMESTAMP",
        }
    }

    pub fn is_absent(&self) -> bool {
        matches!(self, Value::Missing | Value::Null)
    }

    /// Detaches the value from the input buffer it may borrow.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Missing => Value::Missing,
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            Value::Int(i) => Value::Int(i),
            Value::Float(f) => Value::Float(f),
            Value::Decimal(d) => Value::Decimal(d),
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
            Value::Timestamp(t) => Value::Timestamp(t),
        }
    }
}
