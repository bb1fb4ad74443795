//! One CSV record as the evaluator sees it, and the scalar state machine that reads any
//! record in any format.
//!
//! A record's fields are found lazily: the fast scanner only walks the field delimiters up to
//! the highest column the query needs (`Record::ensure`), so `SELECT _1 … WHERE _2 = …` over a
//! 30-column file never looks at the other 28 delimiters of a row that the filter drops.
//!
//! # The scalar reader
//!
//! [`parse_record`] reads one record byte by byte and is the reference for every format
//! option. States, for each field:
//!
//! * *start* — a quote here opens a quoted field; anything else starts an unquoted one;
//! * *unquoted* — the field delimiter ends the field, the record delimiter ends the record,
//!   every other byte (a quote too: `5'10"` stays as written) belongs to the field;
//! * *quoted* — the escape followed by the quote (or by itself, when they differ) is a literal;
//!   with the escape equal to the quote, a doubled quote is a literal quote; a lone quote
//!   closes the field; the record delimiter belongs to the field only when
//!   AllowQuotedRecordDelimiter is set, and is an error (`CSVEscapingRecordDelimiter`)
//!   otherwise, because AWS then always ends a record at its delimiter;
//! * *after a closing quote* — bytes up to the next delimiter are appended as they are, and a
//!   further quote reopens quoting (lenient, like most CSV readers).
//!
//! A record that begins with the comment marker is skipped up to its delimiter, quotes and
//! all. An empty line is no record.

use crate::csv::format::{CsvFormat, MAX_RECORD_BYTES};
use crate::err;
use crate::error::Result;

/// Where a record's field values live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// Fields are spans of the input chunk, found lazily from the delimiter bitmask.
    Chunk,
    /// Fields were unescaped into `scratch` by the scalar reader; all are resolved.
    Scratch,
}

/// A record of the input. Valid for one callback; the reader reuses it for the next record.
#[derive(Debug)]
pub struct Record<'c> {
    chunk: &'c [u8],
    /// Delimiter bitmask of `chunk` (one bit per byte), for lazy field splitting.
    delims: &'c [u64],
    storage: Storage,
    /// Raw bytes of the record in `chunk`, without its delimiter.
    start: usize,
    end: usize,
    /// Resolved fields: `(start, end)` into `chunk` or `scratch`.
    spans: Vec<(u32, u32)>,
    complete: bool,
    /// Where the next field begins (fast storage).
    cursor: usize,
    scratch: Vec<u8>,
}

impl<'c> Record<'c> {
    pub(crate) fn new(chunk: &'c [u8], delims: &'c [u64]) -> Self {
        Record {
            chunk,
            delims,
            storage: Storage::Chunk,
            start: 0,
            end: 0,
            spans: Vec::with_capacity(64),
            complete: false,
            cursor: 0,
            scratch: Vec::new(),
        }
    }

    /// Points the record at `chunk[start..end]`, to be split lazily on the delimiter mask.
    #[inline]
    pub(crate) fn reset_fast(&mut self, start: usize, end: usize) {
        self.storage = Storage::Chunk;
        self.start = start;
        self.end = end;
        self.cursor = start;
        self.spans.clear();
        self.complete = false;
    }

    /// Prepares the record to be filled by the scalar reader.
    fn reset_scratch(&mut self, start: usize) {
        self.storage = Storage::Scratch;
        self.start = start;
        self.spans.clear();
        self.scratch.clear();
        self.complete = true;
    }

    /// Splits fields until at least `n` are known or the record is exhausted.
    #[inline]
    pub fn ensure(&mut self, n: usize) {
        if self.complete || self.spans.len() >= n {
            return;
        }
        while self.spans.len() < n {
            match next_bit(self.delims, self.cursor, self.end) {
                Some(d) => {
                    self.spans.push((self.cursor as u32, d as u32));
                    self.cursor = d + 1;
                }
                None => {
                    self.spans.push((self.cursor as u32, self.end as u32));
                    self.complete = true;
                    return;
                }
            }
        }
    }

    /// Splits every field.
    pub fn ensure_all(&mut self) {
        self.ensure(usize::MAX);
    }

    /// Field `i` (0-based), or `None` when the record has fewer fields. Only fields up to the
    /// last `ensure` are visible.
    #[inline]
    pub fn field(&self, i: usize) -> Option<&[u8]> {
        let &(s, e) = self.spans.get(i)?;
        let src = match self.storage {
            Storage::Chunk => self.chunk,
            Storage::Scratch => &self.scratch,
        };
        Some(&src[s as usize..e as usize])
    }

    /// Number of resolved fields; after `ensure_all`, the record's field count.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Byte offset of the record in its chunk, for error messages.
    pub fn offset(&self) -> usize {
        self.start
    }
}

/// The first set bit of `mask` at a position in `[from, limit)`.
#[inline]
pub(crate) fn next_bit(mask: &[u64], from: usize, limit: usize) -> Option<usize> {
    if from >= limit {
        return None;
    }
    let mut word = from >> 6;
    let mut bits = *mask.get(word)? & (!0u64 << (from & 63));
    loop {
        if bits != 0 {
            let pos = (word << 6) + bits.trailing_zeros() as usize;
            return (pos < limit).then_some(pos);
        }
        word += 1;
        if word << 6 >= limit {
            return None;
        }
        bits = *mask.get(word)?;
    }
}

/// What [`parse_record`] found at `pos`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A record; the next one starts at `next`.
    Record { next: usize },
    /// A comment or an empty line, to be skipped; the next record starts at `next`.
    Skip { next: usize },
}

/// Reads one record of `buf` starting at `pos` into `rec` (scalar, any format). `at_eof` says
/// whether `buf` ends the input: a record may then end without its delimiter.
pub(crate) fn parse_record(
    fmt: &CsvFormat,
    buf: &[u8],
    pos: usize,
    rec: &mut Record<'_>,
) -> Result<Parsed> {
    let n = buf.len();
    let rd = &fmt.record;
    if buf[pos..].starts_with(rd) {
        return Ok(Parsed::Skip {
            next: pos + rd.len(),
        });
    }
    if !fmt.comment.is_empty() && buf[pos..].starts_with(&fmt.comment) {
        let next = match memchr::memmem::find(&buf[pos..], rd) {
            Some(i) => pos + i + rd.len(),
            None => n,
        };
        return Ok(Parsed::Skip { next });
    }
    rec.reset_scratch(pos);
    let quote = fmt.quote.as_slice();
    let escape = fmt.escape.as_slice();
    let escape_is_quote = escape == quote;
    let mut i = pos;
    let mut field_start = 0usize;
    #[derive(PartialEq)]
    enum St {
        Start,
        Unquoted,
        Quoted,
        AfterQuote,
    }
    let mut st = St::Start;
    loop {
        if i - pos > MAX_RECORD_BYTES {
            return Err(err!(
                OverMaxRecordSize,
                "a record is longer than the 1 MiB limit (at input offset {pos})"
            ));
        }
        if i >= n {
            if st == St::Quoted {
                return Err(err!(
                    CSVParsingError,
                    "a quoted field opened in the record at input offset {pos} is never closed"
                ));
            }
            rec.spans.push((field_start as u32, rec.scratch.len() as u32));
            rec.end = n;
            return Ok(Parsed::Record { next: n });
        }
        let rest = &buf[i..];
        match st {
            St::Start if !quote.is_empty() && rest.starts_with(quote) => {
                st = St::Quoted;
                i += quote.len();
                continue;
            }
            St::Start => st = St::Unquoted,
            St::Quoted => {
                if !escape_is_quote && rest.starts_with(escape) {
                    let after = &rest[escape.len()..];
                    if after.starts_with(quote) {
                        rec.scratch.extend_from_slice(quote);
                        i += escape.len() + quote.len();
                        continue;
                    }
                    if after.starts_with(escape) {
                        rec.scratch.extend_from_slice(escape);
                        i += 2 * escape.len();
                        continue;
                    }
                }
                if rest.starts_with(quote) {
                    if escape_is_quote && rest[quote.len()..].starts_with(quote) {
                        rec.scratch.extend_from_slice(quote);
                        i += 2 * quote.len();
                    } else {
                        st = St::AfterQuote;
                        i += quote.len();
                    }
                    continue;
                }
                if rest.starts_with(rd) && !fmt.allow_quoted_record_delimiter {
                    return Err(err!(
                        CSVEscapingRecordDelimiter,
                        "a quoted field in the record at input offset {pos} contains the record \
                         delimiter; set AllowQuotedRecordDelimiter to TRUE to allow it"
                    ));
                }
                rec.scratch.push(buf[i]);
                i += 1;
                continue;
            }
            St::AfterQuote if !quote.is_empty() && rest.starts_with(quote) => {
                st = St::Quoted;
                i += quote.len();
                continue;
            }
            St::Unquoted | St::AfterQuote => {}
        }
        // Unquoted text: delimiters end fields and records.
        if rest.starts_with(&fmt.field) {
            rec.spans.push((field_start as u32, rec.scratch.len() as u32));
            field_start = rec.scratch.len();
            i += fmt.field.len();
            st = St::Start;
        } else if rest.starts_with(rd) {
            rec.spans.push((field_start as u32, rec.scratch.len() as u32));
            rec.end = i;
            return Ok(Parsed::Record {
                next: i + rd.len(),
            });
        } else {
            rec.scratch.push(buf[i]);
            i += 1;
        }
    }
}
