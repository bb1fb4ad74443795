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
//! needs (`Record::field` finds field i from the delimiter bits). A record that contains a quote or escape byte is handed to the
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
    /// No byte of the chunk is 0x80 or above.
    ascii: bool,
    /// Some byte of the chunk is a quote or escape.
    any_special: bool,
}

/// The size of the blocks a chunk is scanned in (see [`Scanner::scan`]).
const SCAN_BLOCK: usize = 256 * 1024;

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
                && self
                    .specials
                    .iter()
                    .any(|&b| memchr::memchr(b, chunk).is_some()));
        if !use_fast {
            check_utf8(chunk, chunk.is_ascii())?;
            return scan_scalar(&self.fmt, chunk, &mut on_record);
        }
        // Large chunks (they keep threads busy for long between hand-offs) are scanned in
        // blocks cut at record delimiters, so that a block and its masks stay in L2 cache.
        // Without quoted record delimiters every delimiter ends a record, so the cuts are exact.
        let rd = self.fmt.record.clone();
        let mut start = 0;
        while start < chunk.len() {
            let mut end = chunk.len();
            if end - start > SCAN_BLOCK {
                let window = &chunk[start..start + SCAN_BLOCK];
                end = match memchr::memmem::rfind(window, &rd) {
                    Some(i) => start + i + rd.len(),
                    None => match memchr::memmem::find(&chunk[start + SCAN_BLOCK..], &rd) {
                        Some(i) => start + SCAN_BLOCK + i + rd.len(),
                        None => chunk.len(),
                    },
                };
            }
            if self.scan_block(&chunk[start..end], &mut on_record)? == Flow::Stop {
                return Ok(());
            }
            start = end;
        }
        Ok(())
    }

    /// The fast scan of one block of whole records.
    fn scan_block<F>(&mut self, chunk: &[u8], on_record: &mut F) -> Result<Flow>
    where
        F: FnMut(&mut Record<'_>) -> Result<Flow>,
    {
        build_masks(chunk, &self.fmt, &self.specials, &mut self.masks);
        let masks = &self.masks;
        check_utf8(chunk, masks.ascii)?;
        let mut rec = Record::new(chunk, &masks.delim);
        rec.set_utf8(true);
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
                        if rd.len() == 1 {
                            break (last, last + 1);
                        }
                        // A two-byte delimiter ends at `last` only if it also starts inside
                        // this record (checked first: `last` may be the chunk's first byte).
                        if last + 1 >= pos + rd.len() && chunk[last + 1 - rd.len()] == rd[0] {
                            break (last + 1 - rd.len(), last + 1);
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
            if end == pos || (!comment.is_empty() && starts_with(&chunk[pos..end], comment)) {
                pos = next;
                continue;
            }
            let flow = if masks.any_special && any_bit(&masks.special, pos, end) {
                match parse_record(&self.fmt, &chunk[..next], pos, &mut rec)? {
                    Parsed::Record { .. } => on_record(&mut rec)?,
                    Parsed::Skip { .. } => Flow::Continue,
                }
            } else {
                rec.reset_fast(pos, end);
                on_record(&mut rec)?
            };
            if flow == Flow::Stop {
                return Ok(Flow::Stop);
            }
            pos = next;
        }
        Ok(Flow::Continue)
    }
}

/// S3 Select reads UTF-8 only: a chunk with any invalid byte fails the request, whether or not
/// the query reads that field. All-ASCII chunks (found while building the masks) need no
/// further check.
fn check_utf8(chunk: &[u8], ascii: bool) -> Result<()> {
    if ascii {
        return Ok(());
    }
    match std::str::from_utf8(chunk) {
        Ok(_) => Ok(()),
        Err(e) => {
            let at = e.valid_up_to();
            let line_start = memchr::memrchr(b'\n', &chunk[..at]).map_or(0, |i| i + 1);
            let context = String::from_utf8_lossy(&chunk[line_start..at]);
            let context: String = context
                .chars()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Err(err!(
                InvalidTextEncoding,
                "the object is not valid UTF-8 (S3 Select reads UTF-8 only): invalid byte 0x{:02x} after {:?}",
                chunk[at],
                context
            ))
        }
    }
}

/// Reads every record of `chunk` with the scalar reader.
fn scan_scalar<F>(fmt: &CsvFormat, chunk: &[u8], on_record: &mut F) -> Result<()>
where
    F: FnMut(&mut Record<'_>) -> Result<Flow>,
{
    let mut rec = Record::new(chunk, &[]);
    rec.set_utf8(true);
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

/// `hay.starts_with(prefix)` without a call to memcmp for the one-byte case.
#[inline(always)]
fn starts_with(hay: &[u8], prefix: &[u8]) -> bool {
    match prefix {
        [b] => hay.first() == Some(b),
        // A multi-byte marker (Trino's U+FDD0) almost never matches: test its first byte
        // before paying for a memcmp call on every record.
        [b, ..] => hay.first() == Some(b) && hay.starts_with(prefix),
        [] => true,
    }
}

/// Whether `mask` has a bit in `[from, to)`.
#[inline]
fn any_bit(mask: &[u64], from: usize, to: usize) -> bool {
    next_bit(mask, from, to).is_some()
}

/// Fills the masks for `chunk`.
fn build_masks(chunk: &[u8], fmt: &CsvFormat, specials: &[u8], m: &mut Masks) {
    // Every word is overwritten below (the special mask only when there is a quote byte to
    // look for; otherwise `any_special` keeps it unread), so no zeroing is needed.
    let words = chunk.len().div_ceil(64);
    for v in [&mut m.delim, &mut m.record, &mut m.special] {
        if v.len() < words {
            v.resize(words, 0);
        }
    }
    let d = fmt.field[0];
    let r = *fmt.record.last().unwrap_or(&b'\n');
    let (q, e) = match specials {
        [] => (None, None),
        [q] => (Some(*q), Some(*q)),
        [q, e, ..] => (Some(*q), Some(*e)),
    };
    let (blocks, tail) = chunk.as_chunks::<64>();
    #[cfg(target_arch = "x86_64")]
    let (mut high, mut special) = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { masks_avx2(blocks, d, r, q, e, m) }
    } else {
        masks_portable(blocks, d, r, q, e, m)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (mut high, mut special) = masks_portable(blocks, d, r, q, e, m);
    if !tail.is_empty() {
        let full = blocks.len();
        let (md, mr, ms, hi) = word_masks(tail, d, r, q, e);
        m.delim[full] = md;
        m.record[full] = mr;
        m.special[full] = ms;
        special |= ms;
        high |= hi as u64;
    }
    m.ascii = high == 0;
    m.any_special = special != 0;
}

/// The masks of whole 64-byte blocks, one byte at a time; returns (any high bit, any special).
fn masks_portable(
    blocks: &[[u8; 64]],
    d: u8,
    r: u8,
    q: Option<u8>,
    e: Option<u8>,
    m: &mut Masks,
) -> (u64, u64) {
    let (mut high, mut special) = (0u64, 0u64);
    for (w, block) in blocks.iter().enumerate() {
        let (md, mr, ms, hi) = word_masks(block, d, r, q, e);
        m.delim[w] = md;
        m.record[w] = mr;
        m.special[w] = ms;
        special |= ms;
        high |= hi as u64;
    }
    (high, special)
}

/// The masks of up to 64 bytes, one byte at a time: (delimiter, record, special, any byte
/// at or above 0x80).
#[inline]
fn word_masks(bytes: &[u8], d: u8, r: u8, q: Option<u8>, e: Option<u8>) -> (u64, u64, u64, bool) {
    let (mut md, mut mr, mut ms, mut high) = (0u64, 0u64, 0u64, false);
    for (i, &b) in bytes.iter().enumerate() {
        md |= ((b == d) as u64) << i;
        mr |= ((b == r) as u64) << i;
        ms |= ((Some(b) == q || Some(b) == e) as u64) << i;
        high |= b >= 0x80;
    }
    (md, mr, ms, high)
}

/// The masks of whole 64-byte blocks with AVX2: two 32-byte compares per mask.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn masks_avx2(
    blocks: &[[u8; 64]],
    d: u8,
    r: u8,
    q: Option<u8>,
    e: Option<u8>,
    m: &mut Masks,
) -> (u64, u64) {
    use std::arch::x86_64::*;
    let vd = _mm256_set1_epi8(d as i8);
    let vr = _mm256_set1_epi8(r as i8);
    // Without quoting, compare against the delimiter again: it adds no bits we keep.
    let vq = _mm256_set1_epi8(q.unwrap_or(d) as i8);
    let ve = _mm256_set1_epi8(e.unwrap_or(d) as i8);
    let quoting = q.is_some();
    let mut high = _mm256_setzero_si256();
    let mut special = 0u64;
    let mask = |v: __m256i| _mm256_movemask_epi8(v) as u32 as u64;
    for (w, block) in blocks.iter().enumerate() {
        let p = block.as_ptr();
        // SAFETY: both 32-byte loads are inside the 64-byte block.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(p as *const __m256i),
                _mm256_loadu_si256(p.add(32) as *const __m256i),
            )
        };
        high = _mm256_or_si256(high, _mm256_or_si256(lo, hi));
        m.delim[w] = mask(_mm256_cmpeq_epi8(lo, vd)) | mask(_mm256_cmpeq_epi8(hi, vd)) << 32;
        m.record[w] = mask(_mm256_cmpeq_epi8(lo, vr)) | mask(_mm256_cmpeq_epi8(hi, vr)) << 32;
        if quoting {
            let sl = _mm256_or_si256(_mm256_cmpeq_epi8(lo, vq), _mm256_cmpeq_epi8(lo, ve));
            let sh = _mm256_or_si256(_mm256_cmpeq_epi8(hi, vq), _mm256_cmpeq_epi8(hi, ve));
            let ms = mask(sl) | mask(sh) << 32;
            m.special[w] = ms;
            special |= ms;
        }
    }
    (mask(high), special)
}
