//! Serialising result rows per the request's OutputSerialization: as CSV or JSON text
//! ([`RowWriter`], here), or as typed Arrow columns ([`arrow`]).

pub(crate) mod arrow;

pub(crate) use arrow::InputTypes;

use crate::error::Result;
use crate::eval::coerce::to_text;
use crate::json::{write_node, Node};
use crate::request::{
    option_bytes, CsvOutput, Dialect, JsonOutput, OutputSerialization, QuoteFields,
};
use crate::sql::ast::Query;
use crate::value::numeric::{format_f64, NumText};
use crate::value::Value;

/// How a select writes its result rows.
#[derive(Debug, Clone)]
pub(crate) enum Writer {
    /// CSV or JSON text, a row at a time into the chunk's bytes.
    Text(RowWriter),
    /// Arrow columns, a value at a time into the chunk's builders, encoded as IPC by the
    /// emitter.
    Arrow(arrow::ArrowOutput),
    /// Arrow output over Parquet input, whose column types are the file's: the Parquet
    /// select makes it [`Writer::Arrow`] once it has read the footer ([`Writer::new`] with
    /// [`InputTypes::File`]). Nothing writes with it.
    ArrowOfFile,
}

impl Writer {
    /// The writer `output` asks for, over an input whose columns have `input`'s types;
    /// `None` for Arrow output over Parquet input before its schema is known.
    pub(crate) fn new(
        output: &OutputSerialization,
        dialect: Dialect,
        query: &Query,
        input: Option<InputTypes<'_>>,
    ) -> Result<Writer> {
        let text = match (output, dialect) {
            (OutputSerialization::Arrow(options), _) => {
                let Some(input) = input else {
                    return Ok(Writer::ArrowOfFile);
                };
                let output = arrow::ArrowOutput::new(query, dialect, input, *options)?;
                return Ok(Writer::Arrow(output));
            }
            // Ceph RGW writes CSV whatever the OutputSerialization asks (a count over JSON
            // input comes back as `3`, not `{"_1":3}`), and its clients parse that.
            (OutputSerialization::Json(_), Dialect::Ceph) => {
                RowWriter::Csv(Box::new(CsvWriter::new(&CsvOutput::default())?))
            }
            (OutputSerialization::Csv(c), _) => RowWriter::Csv(Box::new(CsvWriter::new(c)?)),
            (OutputSerialization::Json(j), Dialect::Aws) => RowWriter::Json(JsonWriter::new(j)?),
        };
        Ok(Writer::Text(match dialect {
            Dialect::Ceph => text.writing_as_ceph(),
            Dialect::Aws => text,
        }))
    }
}

/// The error of writing with [`Writer::ArrowOfFile`], which a Parquet select replaces
/// before any row.
pub(crate) fn not_made() -> crate::error::SelectError {
    crate::err!(
        InternalError,
        "Arrow output over Parquet was not given the file's column types"
    )
}

/// Writes rows into an output buffer.
#[derive(Debug, Clone)]
pub enum RowWriter {
    Csv(Box<CsvWriter>),
    Json(JsonWriter),
}

impl RowWriter {
    /// CSV output as Ceph RGW writes it: NULL and MISSING as `null` instead of nothing, and
    /// no field quoted unless QuoteFields is ALWAYS (RGW's ASNEEDED quotes nothing, so a
    /// field holding the delimiter is written as it is). JSON output is unchanged.
    pub(crate) fn writing_as_ceph(self) -> Self {
        match self {
            RowWriter::Csv(mut w) => {
                w.null = "null";
                w.special = [false; 256];
                w.special_list.clear();
                RowWriter::Csv(w)
            }
            json => json,
        }
    }

    #[inline]
    pub fn begin_row(&self, out: &mut Vec<u8>) {
        if let RowWriter::Json(_) = self {
            out.push(b'{');
        }
    }

    /// Field `i` of the row: a string taken from the input as it is.
    #[inline]
    pub fn str_field(&self, out: &mut Vec<u8>, i: usize, name: &str, s: &str) {
        match self {
            RowWriter::Csv(w) => w.field(out, i, s, true),
            RowWriter::Json(w) => w.key(out, i, name, |out| json_string(out, s)),
        }
    }

    /// Whether no field cut from `chunk` by the fast scanner (no quotes, split on
    /// `input_record`) could need quoting or escaping, so that such fields can be copied as
    /// they are ([`RowWriter::clean_field`]). One memchr pass per chunk instead of a check
    /// per field.
    pub fn chunk_is_clean(&self, chunk: &[u8], input_record: &[u8]) -> bool {
        let RowWriter::Csv(w) = self else {
            return false;
        };
        if w.always || w.quote.is_empty() {
            return false;
        }
        let mut probe: Vec<u8> = w.special_list.clone();
        // Fields of a record split on "\n" cannot contain "\n".
        if input_record == b"\n" {
            probe.retain(|&b| b != b'\n');
        }
        match probe.as_slice() {
            [] => true,
            [a] => memchr::memchr(*a, chunk).is_none(),
            [a, b] => memchr::memchr2(*a, *b, chunk).is_none(),
            [a, b, c] => memchr::memchr3(*a, *b, *c, chunk).is_none(),
            [a, b, c, rest @ ..] => {
                memchr::memchr3(*a, *b, *c, chunk).is_none()
                    && rest.iter().all(|&x| memchr::memchr(x, chunk).is_none())
            }
        }
    }

    /// Field `i`: a string known to need no quoting (see [`RowWriter::chunk_is_clean`]).
    #[inline]
    pub fn clean_field(&self, out: &mut Vec<u8>, i: usize, name: &str, s: &str) {
        match self {
            RowWriter::Csv(w) => {
                if i > 0 {
                    push_small(out, &w.field);
                }
                push_small(out, s.as_bytes());
            }
            RowWriter::Json(_) => self.str_field(out, i, name, s),
        }
    }

    /// Field `i` of the row: any value.
    pub fn value_field(&self, out: &mut Vec<u8>, i: usize, name: &str, v: &Value<'_>) {
        match self {
            RowWriter::Csv(w) => match v {
                Value::Str(s) => w.field(out, i, s, true),
                Value::Null | Value::Missing => w.field(out, i, w.null, false),
                Value::Int(n) => w.field(out, i, NumText::default().int(*n), true),
                Value::Decimal(d) => w.field(out, i, NumText::default().decimal(d), true),
                other => w.field(out, i, &to_text(other), true),
            },
            RowWriter::Json(w) => {
                if matches!(v, Value::Missing) {
                    return;
                }
                w.key(out, i, name, |out| json_value(out, v))
            }
        }
    }

    /// Field `i`: a JSON value from the input. JSON output copies it as written; CSV output
    /// writes scalars as text and arrays and objects as compact JSON.
    pub fn node_field(&self, out: &mut Vec<u8>, i: usize, name: &str, node: &Node<'_>) {
        match self {
            RowWriter::Csv(w) => match node {
                Node::String(s) => w.field(out, i, s, true),
                Node::Number(n) => w.field(out, i, n, true),
                Node::Null => w.field(out, i, w.null, false),
                Node::Scalar(v) => self.value_field(out, i, name, &v.value()),
                other => {
                    let mut text = Vec::new();
                    write_node(&mut text, other);
                    w.field(out, i, &String::from_utf8_lossy(&text), true);
                }
            },
            RowWriter::Json(w) => w.key(out, i, name, |out| write_node(out, node)),
        }
    }

    #[inline]
    pub fn end_row(&self, out: &mut Vec<u8>) {
        match self {
            RowWriter::Csv(w) => push_small(out, &w.record),
            RowWriter::Json(w) => {
                out.push(b'}');
                out.extend_from_slice(&w.record);
            }
        }
    }
}

/// Appends a short slice. Most fields are a few bytes long, and for them a call to memcpy
/// costs more than the copy. Up to 16 bytes are copied as two words that overlap in the
/// middle (8-byte words from 8 bytes up, 4-byte words from 4, single bytes below), the way
/// memcpy itself copies small sizes, but inline: a handful of instructions, no loop.
#[inline(always)]
fn push_small(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if n > 16 {
        out.extend_from_slice(bytes);
        return;
    }
    out.reserve(16);
    let len = out.len();
    let (src, dst) = (bytes.as_ptr(), out.as_mut_ptr());
    // SAFETY: `out` has 16 bytes of spare capacity from `len`, and every write below lands
    // in `len..len + n` with n <= 16; every read lands in `bytes` (each word starts at 0 or
    // ends at n, and is only used when n is at least its size). The first n spare bytes are
    // then initialised, so the length may cover them.
    unsafe {
        let dst = dst.add(len);
        if n >= 8 {
            let head = src.cast::<u64>().read_unaligned();
            let tail = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(head);
            dst.add(n - 8).cast::<u64>().write_unaligned(tail);
        } else if n >= 4 {
            let head = src.cast::<u32>().read_unaligned();
            let tail = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(head);
            dst.add(n - 4).cast::<u32>().write_unaligned(tail);
        } else if n > 0 {
            *dst = *src;
            *dst.add(n / 2) = *src.add(n / 2);
            *dst.add(n - 1) = *src.add(n - 1);
        }
        out.set_len(len + n);
    }
}

/// CSV output with AWS's quoting rules.
#[derive(Debug, Clone)]
pub struct CsvWriter {
    field: Vec<u8>,
    record: Vec<u8>,
    quote: Vec<u8>,
    escape: Vec<u8>,
    always: bool,
    /// Bytes that make an as-needed field quoted: the first byte of each delimiter, the quote
    /// and escape, and CR/LF.
    special: [bool; 256],
    /// The same bytes as a list, for memchr.
    special_list: Vec<u8>,
    /// What NULL and MISSING are written as: nothing, as AWS writes them.
    null: &'static str,
}

impl CsvWriter {
    pub fn new(c: &CsvOutput) -> Result<Self> {
        let field = option_bytes(&c.field_delimiter, "output FieldDelimiter", false, 1)?;
        let record = option_bytes(&c.record_delimiter, "output RecordDelimiter", false, 2)?;
        let quote = option_bytes(&c.quote_character, "output QuoteCharacter", true, 1)?;
        let mut escape = option_bytes(
            &c.quote_escape_character,
            "output QuoteEscapeCharacter",
            true,
            1,
        )?;
        if escape.is_empty() {
            escape = quote.clone();
        }
        let mut special = [false; 256];
        for b in [&field, &record, &quote, &escape] {
            if let Some(&c) = b.first() {
                special[c as usize] = true;
            }
        }
        special[b'\n' as usize] = true;
        special[b'\r' as usize] = true;
        let special_list = (0..=255u8).filter(|&b| special[b as usize]).collect();
        Ok(CsvWriter {
            field,
            record,
            quote,
            escape,
            always: c.quote_fields == QuoteFields::Always,
            special,
            special_list,
            null: "",
        })
    }

    /// Writes one field. `quotable` is false for NULL/MISSING, which stay empty even when
    /// every field is quoted.
    #[inline]
    fn field(&self, out: &mut Vec<u8>, i: usize, s: &str, quotable: bool) {
        if i > 0 {
            out.extend_from_slice(&self.field);
        }
        let bytes = s.as_bytes();
        let quote = !self.quote.is_empty()
            && quotable
            && (self.always || bytes.iter().any(|&b| self.special[b as usize]));
        if !quote {
            out.extend_from_slice(bytes);
            return;
        }
        out.extend_from_slice(&self.quote);
        let q = &self.quote;
        let mut rest = bytes;
        while let Some(at) = memchr::memmem::find(rest, q) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(&self.escape);
            out.extend_from_slice(q);
            rest = &rest[at + q.len()..];
        }
        out.extend_from_slice(rest);
        out.extend_from_slice(&self.quote);
    }
}

/// JSON output: one object per row.
#[derive(Debug, Clone)]
pub struct JsonWriter {
    record: Vec<u8>,
}

impl JsonWriter {
    pub fn new(j: &JsonOutput) -> Result<Self> {
        Ok(JsonWriter {
            record: option_bytes(&j.record_delimiter, "output RecordDelimiter", false, 2)?,
        })
    }

    #[inline]
    fn key(&self, out: &mut Vec<u8>, _i: usize, name: &str, value: impl FnOnce(&mut Vec<u8>)) {
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        json_string(out, name);
        out.push(b':');
        value(out);
    }
}

pub(crate) fn json_value(out: &mut Vec<u8>, v: &Value<'_>) {
    match v {
        Value::Null | Value::Missing => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(i) => out.extend_from_slice(NumText::default().int(*i).as_bytes()),
        Value::Decimal(d) => out.extend_from_slice(NumText::default().decimal(d).as_bytes()),
        Value::Float(f) if f.is_finite() => out.extend_from_slice(format_f64(*f).as_bytes()),
        Value::Float(_) => out.extend_from_slice(b"null"),
        Value::Str(s) => json_string(out, s),
        Value::Timestamp(t) => json_string(out, &t.to_string()),
        Value::Nested(n) => crate::json::write_node(out, n.node()),
    }
}

/// A JSON string literal with the escapes RFC 8259 requires.
pub fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::push_small;

    #[test]
    fn push_small_appends_exactly_the_bytes() {
        let source: Vec<u8> = (0..40u8)
            .map(|b| b.wrapping_mul(37).wrapping_add(1))
            .collect();
        for n in 0..=source.len() {
            for offset in [0, 3] {
                for before in [0, 1, 7, 15, 16, 17] {
                    let bytes = &source[offset.min(n)..n];
                    // Exact capacity, so the reserve inside has to grow the vector.
                    let mut out = Vec::with_capacity(before);
                    out.extend((0..before as u8).map(|b| b ^ 0xAA));
                    let mut want = out.clone();
                    want.extend_from_slice(bytes);
                    push_small(&mut out, bytes);
                    assert_eq!(out, want, "{} bytes after {before}", bytes.len());
                }
            }
        }
    }
}
