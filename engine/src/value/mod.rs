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
use std::sync::Arc;

use crate::json::Node;

pub use decimal::Decimal;
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
    /// A JSON array or object (JSON input only). Scalars read from JSON become the other
    /// variants.
    Nested(Nested<'a>),
}

/// A JSON array or object: borrowed from the input while a row is evaluated, shared once it
/// must outlive the input (an aggregate's MIN, say).
#[derive(Debug, Clone)]
pub enum Nested<'a> {
    Borrowed(&'a Node<'a>),
    Shared(Arc<Node<'static>>),
}

impl<'a> Nested<'a> {
    pub fn node(&self) -> &Node<'a> {
        match self {
            Nested::Borrowed(n) => n,
            Nested::Shared(n) => n,
        }
    }
}

impl PartialEq for Nested<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.node() == other.node()
    }
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
            Value::Nested(n) => match n.node() {
                Node::Array(_) => "LIST",
                _ => "STRUCT",
            },
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
            Value::Nested(Nested::Borrowed(n)) => {
                Value::Nested(Nested::Shared(Arc::new(n.to_static())))
            }
            Value::Nested(Nested::Shared(n)) => Value::Nested(Nested::Shared(n)),
        }
    }
}
