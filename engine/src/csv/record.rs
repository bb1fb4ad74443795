//! One CSV record as the evaluator sees it, and the scalar state machine that reads any
//! record in any format.
//!
//! A record's fields are found on demand: field `i` of a quote-free record starts after its
//! `i`-th delimiter bit, which is found by counting bits a 64-byte word at a time rather than
//! by visiting every delimiter before it. A filter on column 11 of a 23-column row thus costs
//! two or three popcounts, and a row the filter drops is never split further. A cursor
//! remembers the last field found, so reading fields in increasing order (as projections and
//! `SELECT *` do) costs one step each.
//!
//! # The scalar reader
//!
//! `parse_record` reads one record byte by byte and is the reference for every format
//! option. States, for each field:
//!
//! * *start* — a quote here opens a quoted field; anything else starts an unquoted one;
//! * *unquoted* — the field delimiter ends the field, the record delimiter ends the record,
//!   every other byte (a quote too: `5'10"` stays as written) belongs to the field;
//! * *quoted* — the escape (when it differs from the quote) is dropped and the byte after it
//!   kept, so `\"` is a quote and `\B` is `B`;
//!   with the escape equal to the quote, a doubled quote is a literal quote; a lone quote
//!   closes the field; the record delimiter belongs to the field only when
//!   AllowQuotedRecordDelimiter is set, and is an error (`CSVEscapingRecordDelimiter`)
//!   otherwise, because AWS then always ends a record at its delimiter;
//! * *after a closing quote* — bytes up to the next delimiter are appended as they are, and a
//!   further quote reopens quoting (lenient, like most CSV readers).
//!
//! A record that begins with the comment marker is skipped up to its delimiter, quotes and
//! all. An empty line is no record.
//!
//! # Ceph RGW's rules
//!
//! The Ceph dialect reads quotes as RGW does (`parse_record_ceph`), with two states:
//!
//! * *unquoted* — the field delimiter ends the field, the record delimiter the record; a
//!   quote (anywhere in the field, not only at its start) is dropped and opens a quoted run;
//!   the escape is dropped and the byte after it is taken as it is (`\,` is a comma);
//! * *quoted* — a quote is dropped and closes the run (so `"a""b"` is `ab`); every other
//!   byte, the escape and the field delimiter included, belongs to the field; the record
//!   delimiter is an error (`CSVParsingError`): RGW's "escaped_string_not_closed".
//!
//! Records without a quote or escape byte read the same under both rules, so the fast path
//! serves both; only records that hold one come here.

use std::cell::Cell;

use crate::csv::format::{CsvFormat, Quoting, MAX_RECORD_BYTES};
use crate::err;
use crate::error::Result;

/// Where a record's field values live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// Fields are spans of the input chunk, found from the delimiter bitmask.
    Chunk,
    /// Fields were unescaped into `scratch` by the scalar reader and listed in `spans`.
    Scratch,
}

/// A record of the input. Valid for one callback; the reader reuses it for the next record.
#[derive(Debug)]
pub struct Record<'c> {
    chunk: &'c [u8],
    /// Delimiter bitmask of `chunk` (one bit per byte).
    delims: &'c [u64],
    storage: Storage,
    /// Raw bytes of the record in `chunk`, without its delimiter.
    start: usize,
    end: usize,
    /// Fields of a scratch record: `(start, end)` into `scratch`.
    spans: Vec<(u32, u32)>,
    scratch: Vec<u8>,
    /// The last field located in a chunk record: (field index, its start, its end).
    cursor: Cell<(usize, usize, usize)>,
    /// The chunk was checked to be valid UTF-8, so every field is too.
    utf8: bool,
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
            scratch: Vec::new(),
            cursor: Cell::new((usize::MAX, 0, 0)),
            utf8: false,
        }
    }

    /// Declares that the whole chunk is valid UTF-8 (checked by the caller), which lets
    /// [`Record::field_str`] skip validation.
    pub(crate) fn set_utf8(&mut self, valid: bool) {
        self.utf8 = valid;
    }

    /// Points the record at `chunk[start..end]`, to be split on the delimiter mask.
    #[inline]
    pub(crate) fn reset_fast(&mut self, start: usize, end: usize) {
        self.storage = Storage::Chunk;
        self.start = start;
        self.end = end;
        self.cursor.set((usize::MAX, 0, 0));
    }

    /// Prepares the record to be filled by the scalar reader.
    fn reset_scratch(&mut self, start: usize) {
        self.storage = Storage::Scratch;
        self.start = start;
        self.spans.clear();
        self.scratch.clear();
    }

    /// Locates field `i` of a chunk record: `(start, end)` in the chunk.
    ///
    /// One pass over the delimiter words: from the last field found (or the record's start),
    /// pass `skip` delimiters by counting bits, then take the next one as the field's end.
    #[inline(always)]
    fn locate(&self, i: usize) -> Option<(usize, usize)> {
        let (ci, cs, ce) = self.cursor.get();
        if ci == i {
            return Some((cs, ce));
        }
        let limit = self.end;
        let (from, mut skip) = if ci != usize::MAX && i > ci {
            if ce >= limit {
                return None;
            }
            (ce + 1, i - ci - 1)
        } else {
            (self.start, i)
        };
        let mut word = from >> 6;
        // `from` is the record's end when the previous field was its last delimiter: then
        // the field is there and empty (`a|b|`).
        let mut bits = if from < limit {
            *self.delims.get(word)? & (!0u64 << (from & 63))
        } else {
            0
        };
        let mut start = from;
        if skip > 0 {
            loop {
                let c = bits.count_ones() as usize;
                if skip <= c {
                    let d = (word << 6) + select_bit(bits, (skip - 1) as u32) as usize;
                    if d >= limit {
                        return None;
                    }
                    start = d + 1;
                    // Keep only the delimiters after `d`.
                    bits &= (!0u64 << (d & 63)) << 1;
                    break;
                }
                skip -= c;
                word += 1;
                if word << 6 >= limit {
                    return None;
                }
                bits = *self.delims.get(word)?;
            }
        }
        while bits == 0 {
            word += 1;
            if word << 6 >= limit {
                self.cursor.set((i, start, limit));
                return Some((start, limit));
            }
            bits = *self.delims.get(word)?;
        }
        let end = ((word << 6) + bits.trailing_zeros() as usize).min(limit);
        self.cursor.set((i, start, end));
        Some((start, end))
    }

    /// Field `i` (0-based), or `None` when the record has fewer fields.
    #[inline(always)]
    pub fn field(&self, i: usize) -> Option<&[u8]> {
        match self.storage {
            Storage::Chunk => {
                let (s, e) = self.locate(i)?;
                Some(&self.chunk[s..e])
            }
            Storage::Scratch => {
                let &(s, e) = self.spans.get(i)?;
                Some(&self.scratch[s as usize..e as usize])
            }
        }
    }

    /// Field `i` as text: `None` past the record's end, `Err` if it is not valid UTF-8.
    #[inline(always)]
    pub fn field_str(&self, i: usize) -> Option<Result<&str, std::str::Utf8Error>> {
        let bytes = self.field(i)?;
        if self.utf8 {
            // SAFETY: `utf8` is only set for chunks that are valid UTF-8. Fields are cut at
            // delimiters, which are whole characters, and `scratch` holds the chunk's bytes
            // minus whole quote characters, so every field is valid UTF-8 too.
            Some(Ok(unsafe { std::str::from_utf8_unchecked(bytes) }))
        } else {
            Some(std::str::from_utf8(bytes))
        }
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        match self.storage {
            Storage::Scratch => self.spans.len(),
            Storage::Chunk => {
                let (s, e) = (self.start, self.end);
                if s >= e {
                    return 1;
                }
                let (first, last) = (s >> 6, (e - 1) >> 6);
                let mut n = 1;
                for w in first..=last {
                    let mut bits = self.delims.get(w).copied().unwrap_or(0);
                    if w == first {
                        bits &= !0u64 << (s & 63);
                    }
                    if w == last && (e & 63) != 0 {
                        bits &= !0u64 >> (64 - (e & 63));
                    }
                    n += bits.count_ones() as usize;
                }
                n
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the fields are cut straight from the chunk (no quote was read).
    pub fn is_raw(&self) -> bool {
        self.storage == Storage::Chunk
    }

    /// Byte offset of the record in its chunk, for error messages.
    pub fn offset(&self) -> usize {
        self.start
    }
}

/// The position of the `k`-th (0-based) set bit of `bits`, which has more than `k` set.
#[inline]
fn select_bit(mut bits: u64, k: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if k > 1 && std::arch::is_x86_feature_detected!("bmi2") {
        // SAFETY: the CPU supports BMI2, checked just above.
        return unsafe { select_bit_bmi2(bits, k) };
    }
    for _ in 0..k {
        bits &= bits - 1;
    }
    bits.trailing_zeros()
}

/// PDEP deposits a single bit at the position of the `k`-th set bit of `bits`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
fn select_bit_bmi2(bits: u64, k: u32) -> u32 {
    std::arch::x86_64::_pdep_u64(1u64 << k, bits).trailing_zeros()
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
    if let Some(next) = skipped_line(fmt, buf, pos) {
        return Ok(Parsed::Skip { next });
    }
    if fmt.quoting == Quoting::Ceph {
        return parse_record_ceph(fmt, buf, pos, rec);
    }
    let n = buf.len();
    let rd = &fmt.record;
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
            rec.spans
                .push((field_start as u32, rec.scratch.len() as u32));
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
                    // Before any other byte the escape is dropped and the byte kept, as
                    // Python's csv and MinIO read it (`"A\B"` is `AB`); the record
                    // delimiter is left to the rules below.
                    if let Some(&b) = after.first() {
                        if !after.starts_with(rd) {
                            rec.scratch.push(b);
                            i += escape.len() + 1;
                            continue;
                        }
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
            rec.spans
                .push((field_start as u32, rec.scratch.len() as u32));
            field_start = rec.scratch.len();
            i += fmt.field.len();
            st = St::Start;
        } else if rest.starts_with(rd) {
            rec.spans
                .push((field_start as u32, rec.scratch.len() as u32));
            rec.end = i;
            return Ok(Parsed::Record { next: i + rd.len() });
        } else {
            rec.scratch.push(buf[i]);
            i += 1;
        }
    }
}

/// Where the next record starts when the line at `pos` is no record: an empty line, or a
/// comment line (skipped whole, quotes and all).
fn skipped_line(fmt: &CsvFormat, buf: &[u8], pos: usize) -> Option<usize> {
    let rd = &fmt.record;
    if buf[pos..].starts_with(rd) {
        return Some(pos + rd.len());
    }
    if !fmt.comment.is_empty() && buf[pos..].starts_with(&fmt.comment) {
        return Some(match memchr::memmem::find(&buf[pos..], rd) {
            Some(i) => pos + i + rd.len(),
            None => buf.len(),
        });
    }
    None
}

/// [`parse_record`] with Ceph RGW's quoting rules (see the module documentation), for a line
/// that is a record.
fn parse_record_ceph(
    fmt: &CsvFormat,
    buf: &[u8],
    pos: usize,
    rec: &mut Record<'_>,
) -> Result<Parsed> {
    let rd = &fmt.record;
    rec.reset_scratch(pos);
    let quote = fmt.quote.as_slice();
    // An escape equal to the quote (the default) is no escape here: a quote toggles.
    let escape = match fmt.escape.as_slice() {
        e if e == quote => &[][..],
        e => e,
    };
    let mut quoted = false;
    let mut field_start = 0usize;
    let mut i = pos;
    loop {
        if i - pos > MAX_RECORD_BYTES {
            return Err(err!(
                OverMaxRecordSize,
                "a record is longer than the 1 MiB limit (at input offset {pos})"
            ));
        }
        let rest = &buf[i..];
        if rest.is_empty() || rest.starts_with(rd) {
            if quoted {
                return Err(err!(
                    CSVParsingError,
                    "a quote opened in the record at input offset {pos} is not closed before \
                     the record ends (escaped_string_not_closed)"
                ));
            }
            rec.spans
                .push((field_start as u32, rec.scratch.len() as u32));
            rec.end = i;
            let next = if rest.is_empty() { i } else { i + rd.len() };
            return Ok(Parsed::Record { next });
        }
        if !quote.is_empty() && rest.starts_with(quote) {
            quoted = !quoted;
            i += quote.len();
        } else if quoted {
            rec.scratch.push(buf[i]);
            i += 1;
        } else if !escape.is_empty() && rest.starts_with(escape) {
            // The escape takes the next byte as it is, but never the record's delimiter.
            i += escape.len();
            match buf.get(i) {
                Some(&b) if !buf[i..].starts_with(rd) => {
                    rec.scratch.push(b);
                    i += 1;
                }
                _ => {}
            }
        } else if rest.starts_with(&fmt.field) {
            rec.spans
                .push((field_start as u32, rec.scratch.len() as u32));
            field_start = rec.scratch.len();
            i += fmt.field.len();
        } else {
            rec.scratch.push(buf[i]);
            i += 1;
        }
    }
}
