//! From JSON values to SQL: the rows a FROM path makes of each top-level value, the paths
//! expressions read (`s.a.b[0]`), and the SQL value a JSON value reads as.
//!
//! Rules (AWS's "SELECT command" reference, where it speaks):
//! - S3 Select treats the object as an array of its top-level values, so `FROM S3Object`
//!   and `FROM S3Object[*]` both make one row per top-level value.
//! - A path step that finds nothing gives MISSING. A wildcard step (`[*]` over an array,
//!   `.*` over an object) makes one row per element, and one MISSING row when there is
//!   none, so every top-level value yields at least one row ("wildcards always emit at least
//!   one record").
//! - Numbers are typed as Ion reads JSON: an integer that fits 64 bits is INT, a number with
//!   a fraction and no exponent is DECIMAL (exact), one with an exponent is FLOAT. Arrays and
//!   objects are `Value::Nested`.
//! - Keys written unquoted match case-insensitively (the first such member wins, as the
//!   first of duplicate keys does); double-quoted keys and `['key']` match exactly.

use std::borrow::Cow;

use crate::json::Node;
use crate::value::numeric::{parse_f64, parse_i64};
use crate::value::{Decimal, Nested, Value};

/// One bound step of a path in an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key { name: Box<str>, exact: bool },
    Index(usize),
}

/// One bound step of a FROM path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowStep {
    Step(Step),
    /// `[*]`
    EachElement,
    /// `.*`
    EachMember,
    /// The elements of an array, or any other value itself: how Ceph RGW reads a FROM path
    /// that ends in a key (`S3Object[*].root` is each element of `root`).
    ElementsOrValue,
}

/// Whether an object key is the name a query wrote: exactly, or ignoring ASCII case.
///
/// Called for every key of every row, so it rejects cheaply: lengths first, then eight bytes
/// at a time, where two words can only match ignoring case if they differ in no bit but
/// the case bit (0x20) of each byte.
#[inline]
pub fn key_matches(key: &[u8], name: &[u8], exact: bool) -> bool {
    let (k, n) = (key, name);
    if k.len() != n.len() {
        return false;
    }
    if k == n {
        return true;
    }
    if exact {
        return false;
    }
    const NOT_CASE: u64 = !CASE_BITS;
    let mut i = 0;
    while let (Some(a), Some(b)) = (k.get(i..i + 8), n.get(i..i + 8)) {
        let word = |c: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_le_bytes(w)
        };
        if (word(a) ^ word(b)) & NOT_CASE != 0 {
            return false;
        }
        i += 8;
    }
    let tail_differs = k[i..]
        .iter()
        .zip(&n[i..])
        .any(|(a, b)| (a ^ b) & !0x20 != 0);
    !tail_differs && k.eq_ignore_ascii_case(n)
}

/// The top-level keys a query reads, for the reader to keep (see `Parser::value_keeping`).
/// Asked about every key of every row, so a key whose length no wanted key has is refused
/// with one bit test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySet {
    keys: Vec<WantedKey>,
    /// Bit `n` (n < 63): some key is `n` bytes long; bit 63: some key is longer.
    lengths: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct WantedKey {
    name: Box<str>,
    exact: bool,
    /// The first eight bytes (zero-padded), for a one-word first test.
    head: u64,
    /// The first sixteen bytes (zero-padded), little-endian: for names of at most sixteen
    /// bytes, the whole name (see [`KeySet::contains_word`]).
    word: u128,
    /// The bits of `word` a match may differ in: the case bit of each ASCII letter when the
    /// name matches ignoring case, none when exactly.
    fold: u128,
}

/// Bits that differ between the two cases of an ASCII letter.
const CASE_BITS: u64 = 0x2020_2020_2020_2020;

fn head(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = bytes.len().min(8);
    w[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(w)
}

impl KeySet {
    /// `(name, exact)` pairs; duplicates are dropped.
    pub fn new(keys: impl IntoIterator<Item = (Box<str>, bool)>) -> Self {
        let mut set = KeySet {
            keys: Vec::new(),
            lengths: 0,
        };
        for (name, exact) in keys {
            if set.keys.iter().any(|k| k.name == name && k.exact == exact) {
                continue;
            }
            set.lengths |= 1 << name.len().min(63);
            let bytes = name.as_bytes();
            let mut word = [0u8; 16];
            let mut fold = [0u8; 16];
            for (i, &b) in bytes.iter().take(16).enumerate() {
                word[i] = b;
                if !exact && b.is_ascii_alphabetic() {
                    fold[i] = 0x20;
                }
            }
            set.keys.push(WantedKey {
                head: head(bytes),
                word: u128::from_le_bytes(word),
                fold: u128::from_le_bytes(fold),
                name,
                exact,
            });
        }
        set
    }

    /// Whether the key (as raw bytes from checked text) is one the query reads.
    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        if self.lengths & 1 << key.len().min(63) == 0 {
            return false;
        }
        let h = head(key);
        self.keys.iter().any(|k| {
            let mask = if k.exact { !0 } else { !CASE_BITS };
            k.name.len() == key.len()
                && (h ^ k.head) & mask == 0
                && key_matches(key, k.name.as_bytes(), k.exact)
        })
    }

    /// [`KeySet::contains`] for a key of `len` bytes, `len` at most sixteen, given as those
    /// bytes in a little-endian word that is zero above them: the parser has the key in a
    /// register already, so the test is a compare per wanted key.
    #[inline]
    pub fn contains_word(&self, len: usize, word: u128) -> bool {
        debug_assert!(len <= 16 && (len == 16 || word >> (8 * len) == 0));
        if self.lengths & 1 << len == 0 {
            return false;
        }
        self.keys
            .iter()
            .any(|k| k.name.len() == len && (word ^ k.word) & !k.fold == 0)
    }
}

impl Step {
    #[inline]
    fn apply<'r, 'c>(&self, node: &'r Node<'c>) -> Option<&'r Node<'c>> {
        match self {
            Step::Key { name, exact } => match node {
                Node::Object(members) => members
                    .iter()
                    .find(|(k, _)| key_matches(k.as_bytes(), name.as_bytes(), *exact))
                    .map(|(_, v)| v),
                _ => None,
            },
            Step::Index(i) => match node {
                Node::Array(items) => items.get(*i),
                _ => None,
            },
        }
    }
}

/// Follows `steps` from `node`; `None` (MISSING) as soon as a step finds nothing.
#[inline]
pub fn walk<'r, 'c>(node: Option<&'r Node<'c>>, steps: &[Step]) -> Option<&'r Node<'c>> {
    steps.iter().try_fold(node?, |n, step| step.apply(n))
}

/// Appends the rows a FROM path makes of one top-level value; `None` is a MISSING row.
pub fn expand<'r, 'c>(
    node: Option<&'r Node<'c>>,
    steps: &[RowStep],
    rows: &mut Vec<Option<&'r Node<'c>>>,
) {
    let Some((first, rest)) = steps.split_first() else {
        rows.push(node);
        return;
    };
    match first {
        RowStep::Step(s) => expand(node.and_then(|n| s.apply(n)), rest, rows),
        RowStep::EachElement => match node {
            Some(Node::Array(items)) if !items.is_empty() => {
                for item in items {
                    expand(Some(item), rest, rows);
                }
            }
            _ => rows.push(None),
        },
        RowStep::EachMember => match node {
            Some(Node::Object(members)) if !members.is_empty() => {
                for (_, value) in members {
                    expand(Some(value), rest, rows);
                }
            }
            _ => rows.push(None),
        },
        RowStep::ElementsOrValue => match node {
            Some(Node::Array(items)) => {
                for item in items {
                    expand(Some(item), rest, rows);
                }
            }
            other => expand(other, rest, rows),
        },
    }
}

/// The SQL value of a JSON value (MISSING for `None`).
pub fn node_value<'r>(node: Option<&'r Node<'_>>) -> Value<'r> {
    match node {
        None => Value::Missing,
        Some(Node::Null) => Value::Null,
        Some(Node::Bool(b)) => Value::Bool(*b),
        Some(Node::String(s)) => Value::Str(Cow::Borrowed(s.as_ref())),
        Some(Node::Number(n)) => number_value(n),
        Some(Node::Scalar(v)) => v.value(),
        Some(n @ (Node::Array(_) | Node::Object(_))) => Value::Nested(Nested::Borrowed(n)),
    }
}

/// Types a JSON number's text (already known to match JSON's grammar).
pub fn number_value(text: &str) -> Value<'static> {
    // Digits only (parse_i64 refuses '.', 'e' and 'E'), the common case: no scan first.
    if let Some(i) = parse_i64(text.as_bytes()) {
        return Value::Int(i);
    }
    let exponent = text.bytes().any(|b| b == b'e' || b == b'E');
    if !exponent {
        // Integers beyond 64 bits and fractions stay exact while they fit 38 digits.
        if let Some(d) = Decimal::parse(text) {
            return Value::Decimal(d);
        }
    }
    // JSON's grammar is a subset of what parse_f64 reads; huge exponents become ±inf.
    Value::Float(parse_f64(text).unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_one;

    fn key(name: &str, exact: bool) -> Step {
        Step::Key {
            name: name.into(),
            exact,
        }
    }

    #[test]
    fn key_matching() {
        assert!(key_matches(
            "ss_quantity".as_bytes(),
            "SS_Quantity".as_bytes(),
            false
        ));
        assert!(!key_matches(
            "ss_quantity".as_bytes(),
            "SS_Quantity".as_bytes(),
            true
        ));
        assert!(key_matches(
            "ss_quantity".as_bytes(),
            "ss_quantity".as_bytes(),
            true
        ));
        assert!(!key_matches(
            "ss_cdemo_sk".as_bytes(),
            "ss_quantity".as_bytes(),
            false
        ));
        assert!(!key_matches("a".as_bytes(), "ab".as_bytes(), false));
        // Differ only in bit 0x20, but not a letter: '@' (0x40) vs '`' (0x60).
        assert!(!key_matches("x@".as_bytes(), "x`".as_bytes(), false));
        assert!(!key_matches(
            "long_key_name_@".as_bytes(),
            "LONG_KEY_NAME_`".as_bytes(),
            false
        ));
        assert!(key_matches("Prénom".as_bytes(), "prénom".as_bytes(), false));
        assert!(!key_matches(
            "PRÉNOM".as_bytes(),
            "prénom".as_bytes(),
            false
        ));
    }

    #[test]
    fn numbers_are_typed_as_ion_reads_them() {
        assert_eq!(number_value("12"), Value::Int(12));
        assert_eq!(number_value("-0"), Value::Int(0));
        assert_eq!(
            number_value("1.50"),
            Value::Decimal(Decimal::parse("1.50").unwrap())
        );
        assert_eq!(
            number_value("99999999999999999999"),
            Value::Decimal(Decimal::parse("99999999999999999999").unwrap())
        );
        assert_eq!(number_value("1e3"), Value::Float(1000.0));
        assert_eq!(number_value("2.5E-1"), Value::Float(0.25));
    }

    #[test]
    fn walk_follows_keys_and_indexes() {
        let doc = parse_one(br#"{"a":{"B":[10,{"c":true}]},"A":1}"#).unwrap();
        let got = walk(
            Some(&doc),
            &[
                key("a", false),
                key("b", false),
                Step::Index(1),
                key("c", true),
            ],
        );
        assert_eq!(node_value(got), Value::Bool(true));
        assert_eq!(
            node_value(walk(Some(&doc), &[key("A", true)])),
            Value::Int(1)
        );
        // Unquoted: the first member whose name matches ignoring case.
        assert!(matches!(
            node_value(walk(Some(&doc), &[key("A", false)])),
            Value::Nested(_)
        ));
        assert_eq!(
            node_value(walk(Some(&doc), &[key("b", true)])),
            Value::Missing
        );
        assert_eq!(
            node_value(walk(Some(&doc), &[key("a", true), Step::Index(0)])),
            Value::Missing
        );
    }

    #[test]
    fn wildcards_emit_at_least_one_row() {
        let doc = parse_one(br#"{"r":[{"id":1},{"x":2}],"o":{"p":1,"q":2},"e":[]}"#).unwrap();
        let rows = |steps: &[RowStep]| {
            let mut out = Vec::new();
            expand(Some(&doc), steps, &mut out);
            out.into_iter()
                .map(|n| node_value(n).into_owned())
                .collect::<Vec<_>>()
        };
        let each = |k: &str| vec![RowStep::Step(key(k, true)), RowStep::EachElement];
        let mut ids = each("r");
        ids.push(RowStep::Step(key("id", true)));
        assert_eq!(rows(&ids), vec![Value::Int(1), Value::Missing]);
        assert_eq!(rows(&each("e")), vec![Value::Missing]);
        assert_eq!(rows(&each("nope")), vec![Value::Missing]);
        assert_eq!(
            rows(&[RowStep::Step(key("o", true)), RowStep::EachMember]),
            vec![Value::Int(1), Value::Int(2)]
        );
        assert_eq!(rows(&[]).len(), 1);
    }
}
