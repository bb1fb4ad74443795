//! Reading the records of one chunk: a bitmask scanner for the common formats and the scalar
//! reader for the rest.
//!
//! A chunk always begins at the start of a record and ends at the end of one (the chunker in
//! `csv::chunk` guarantees it), so chunks can be scanned independently and in parallel.
//!
//! # Why bitmasks
//!
//! At GB/s a byte-at-a-time state machine costs several cycles per byte. Instead, one pass
//! compares 64 bytes at a time against the field delimiter, the last byte of the record
//! delimiter, and the quote/escape bytes, and keeps one bit per byte for each. Records are then
//! found by jumping from set bit to set bit, and fields are split only as far as the query
//! needs ([`Record::ensure`]). A record that contains a quote or escape byte is handed to the
//! scalar reader, which handles quoting exactly; in the common case (TPC-DS, logs) there are
//! none and each row costs a handful of bit operations per used field.
//!
//! With AllowQuotedRecordDelimiter, a quote may hide a record delimiter, so a chunk that
//! contains any quote byte is read entirely by the scalar reader; without quotes the two modes
//! read the same records.

use crate::csv::format::{CsvFormat, MAX_RECORD_BYTES};
use crate::csv::record::{next_bit, parse_record, Parsed, Record};
use crate::err;
use crate::error::Result;

/// Bitmasks of one chunk, one bit per byte, reused across chunks.
#[derive(Debug, Default)]
pub struct Masks {
    delim: Vec<u64>,
    record: Vec<u64>,
    special: Vec<u64>,
}

/// Whether the scan should go on after a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Reads records from chunks in one format.
#[derive(Debug)]
pub struct Scanner {
    fmt: CsvFormat,
    specials: Vec<u8>,
    fast: bool,
    masks: Masks,
    /// Always use the scalar reader (for differential tests).
    force_scalar: bool,
}

impl Scanner {
    pub fn new(fmt: CsvFormat) -> Self {
        let specials = fmt.special_bytes();
        let fast = fmt.fast_path();
        Scanner {
            fmt,
            specials,
            fast,
            masks: Masks::default(),
            force_scalar: false,
        }
    }

    /// A scanner that reads every record with the scalar reader: the reference the fast path
    /// is tested against.
    pub fn scalar(fmt: CsvFormat) -> Self {
        let mut s = Scanner::new(fmt);
        s.force_scalar = true;
        s
    }

    pub fn format(&self) -> &CsvFormat {
        &self.fmt
    }

    /// Calls `on_record` for each record of `chunk` in order, until it returns `Flow::Stop`.
    pub fn scan<F>(&mut self, chunk: &[u8], mut on_record: F) -> Result<()>
    where
        F: FnMut(&mut Record<'_>) -> Result<Flow>,
    {
        let use_fast = self.fast
            && !self.force_scalar
            && !(self.fmt.allow_quoted_record_delimiter
                && self.specials.iter().any(|&b| memchr::memchr(b, chunk).is_some()));
        if !use_fast {
            return scan_scalar(&self.fmt, chunk, &mut on_record);
        }
        build_masks(chunk, &self.fmt, &self.specials, &mut self.masks);
        let masks = &self.masks;
        let mut rec = Record::new(chunk, &masks.delim);
        let rd = &self.fmt.record;
        let comment = &self.fmt.comment;
        let n = chunk.len();
        let mut pos = 0usize;
        while pos < n {
            // The record ends at the next record delimiter; a two-byte delimiter is found by its
            // last byte and checked backwards.
            let mut probe = pos;
            let (end, next) = loop {
                match next_bit(&masks.record, probe, n) {
                    Some(last) => {
                        let first = last + 1 - rd.len();
                        if last + 1 >= pos + rd.len() && chunk[first..=last] == rd[..] {
                            break (first, last + 1);
                        }
                        probe = last + 1;
                    }
                    None => break (n, n),
                }
            };
            if end - pos > MAX_RECORD_BYTES {
                return Err(err!(
                    OverMaxRecordSize,
                    "a record is longer than the 1 MiB limit (at input offset {pos})"
                ));
            }
            if end == pos || (!comment.is_empty() && chunk[pos..end].starts_with(comment)) {
                pos = next;
                continue;
            }
            let flow = if any_bit(&masks.special, pos, end) {
                match parse_record(&self.fmt, &chunk[..next], pos, &mut rec)? {
                    Parsed::Record { .. } => on_record(&mut rec)?,
                    Parsed::Skip { .. } => Flow::Continue,
                }
            } else {
                rec.reset_fast(pos, end);
                on_record(&mut rec)?
            };
            if flow == Flow::Stop {
                return Ok(());
            }
            pos = next;
        }
        Ok(())
    }
}

/// Reads every record of `chunk` with the scalar reader.
fn scan_scalar<F>(fmt: &CsvFormat, chunk: &[u8], on_record: &mut F) -> Result<()>
where
    F: FnMut(&mut Record<'_>) -> Result<Flow>,
{
    let mut rec = Record::new(chunk, &[]);
    let mut pos = 0;
    while pos < chunk.len() {
        match parse_record(fmt, chunk, pos, &mut rec)? {
            Parsed::Record { next } => {
                if on_record(&mut rec)? == Flow::Stop {
                    return Ok(());
                }
                pos = next;
            }
            Parsed::Skip { next } => pos = next,
        }
    }
    Ok(())
}

/// Whether `mask` has a bit in `[from, to)`.
#[inline]
fn any_bit(mask: &[u64], from: usize, to: usize) -> bool {
    next_bit(mask, from, to).is_some()
}

/// Fills the three masks for `chunk`.
fn build_masks(chunk: &[u8], fmt: &CsvFormat, specials: &[u8], m: &mut Masks) {
    let words = chunk.len().div_ceil(64);
    for v in [&mut m.delim, &mut m.record, &mut m.special] {
        v.clear();
        v.resize(words, 0);
    }
    let d = fmt.field[0];
    let r = *fmt.record.last().unwrap_or(&b'\n');
    let (q, e) = match specials {
        [] => (None, None),
        [q] => (Some(*q), None),
        [q, e, ..] => (Some(*q), Some(*e)),
    };
    let (blocks, tail) = chunk.as_chunks::<64>();
    let full = blocks.len();
    for (w, block) in blocks.iter().enumerate() {
        let (md, mr, ms) = block_masks(block, d, r, q, e);
        m.delim[w] = md;
        m.record[w] = mr;
        m.special[w] = ms;
    }
    if !tail.is_empty() {
        let (mut md, mut mr, mut ms) = (0u64, 0u64, 0u64);
        for (i, &b) in tail.iter().enumerate() {
            md |= ((b == d) as u64) << i;
            mr |= ((b == r) as u64) << i;
            ms |= ((Some(b) == q || Some(b) == e) as u64) << i;
        }
        m.delim[full] = md;
        m.record[full] = mr;
        m.special[full] = ms;
    }
}

/// The masks of one 64-byte block. SSE2 is part of x86-64, so no runtime detection is needed;
/// other targets use the portable loop, which compilers vectorise reasonably.
#[inline(always)]
fn block_masks(
    block: &[u8; 64],
    d: u8,
    r: u8,
    q: Option<u8>,
    e: Option<u8>,
) -> (u64, u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is always available on x86_64, and every load reads 16 bytes inside
        // the 64-byte array.
        unsafe { block_masks_sse2(block, d, r, q, e) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (mut md, mut mr, mut ms) = (0u64, 0u64, 0u64);
        for (i, &b) in block.iter().enumerate() {
            md |= ((b == d) as u64) << i;
            mr |= ((b == r) as u64) << i;
            ms |= ((Some(b) == q || Some(b) == e) as u64) << i;
        }
        (md, mr, ms)
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block_masks_sse2(
    block: &[u8; 64],
    d: u8,
    r: u8,
    q: Option<u8>,
    e: Option<u8>,
) -> (u64, u64, u64) {
    use std::arch::x86_64::*;
    let vd = _mm_set1_epi8(d as i8);
    let vr = _mm_set1_epi8(r as i8);
    let (md, mr, ms) = (0u64, 0u64, 0u64);
    let mut out = (md, mr, ms);
    let p = block.as_ptr();
    for i in 0..4 {
        let v = _mm_loadu_si128(p.add(16 * i) as *const __m128i);
        let bd = _mm_movemask_epi8(_mm_cmpeq_epi8(v, vd)) as u16 as u64;
        let br = _mm_movemask_epi8(_mm_cmpeq_epi8(v, vr)) as u16 as u64;
        out.0 |= bd << (16 * i);
        out.1 |= br << (16 * i);
        if let Some(q) = q {
            let mut s = _mm_cmpeq_epi8(v, _mm_set1_epi8(q as i8));
            if let Some(e) = e {
                s = _mm_or_si128(s, _mm_cmpeq_epi8(v, _mm_set1_epi8(e as i8)));
            }
            out.2 |= (_mm_movemask_epi8(s) as u16 as u64) << (16 * i);
        }
    }
    out
}
