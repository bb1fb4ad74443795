//! Runs of bytes of one class, sixteen at a time: the parser's inner loops.
//!
//! Keys and numbers in JSON rows are short (a dozen bytes), so a `memchr` call costs more
//! than it saves, while a byte-at-a-time loop spends most of its work on bounds checks and
//! branches. One SSE2 compare of sixteen bytes finds the end of almost every key and number
//! in a single step. SSE2 is part of every x86-64 CPU, so nothing is detected at run time;
//! other targets, and the last bytes of a buffer, take the portable loop.

/// Bytes a string may hold without a closer look: not `"`, not `\`, not a control character.
#[inline]
fn is_plain(b: u8) -> bool {
    b != b'"' && b != b'\\' && b >= 0x20
}

/// Sixteen bytes of `bytes` from `at`, if there are that many.
#[inline]
pub fn load16(bytes: &[u8], at: usize) -> Option<[u8; 16]> {
    let block = bytes.get(at..at.checked_add(16)?)?;
    block.try_into().ok()
}

/// Bit `i` set: byte `i` of `block` is not plain (see [`is_plain`]).
#[inline]
pub fn plain_stops(block: [u8; 16]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; the load has no alignment need.
        unsafe {
            let x = _mm_loadu_si128(block.as_ptr().cast());
            let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
            // Unsigned x <= 0x1f exactly when min(x, 0x1f) == x.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        stops_where(block, |b| !is_plain(b))
    }
}

/// Bit `i` set: byte `i` of `block` is not an ASCII digit.
#[inline]
pub fn digit_stops(block: [u8; 16]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; the load has no alignment need.
        unsafe {
            let x = _mm_loadu_si128(block.as_ptr().cast());
            // Signed compares: bytes from 0x80 up are negative, so below '0' too.
            let below = _mm_cmplt_epi8(x, _mm_set1_epi8(b'0' as i8));
            let above = _mm_cmpgt_epi8(x, _mm_set1_epi8(b'9' as i8));
            _mm_movemask_epi8(_mm_or_si128(below, above)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        stops_where(block, |b| !b.is_ascii_digit())
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn stops_where(block: [u8; 16], stop: impl Fn(u8) -> bool) -> u32 {
    (0..16)
        .filter(|&i| stop(block[i]))
        .fold(0, |m, i| m | 1 << i)
}

/// The length of the run of plain string bytes (see [`is_plain`]) at the start of `bytes`.
#[inline]
pub fn plain_run(bytes: &[u8]) -> usize {
    run(bytes, is_plain, plain_stops)
}

/// The length of the run of ASCII digits at the start of `bytes`.
#[inline]
pub fn digit_run(bytes: &[u8]) -> usize {
    run(bytes, |b| b.is_ascii_digit(), digit_stops)
}

/// The length of the run of bytes at the start of `bytes` that `keep` accepts; `stops` marks
/// the bytes of a block that `keep` refuses.
#[inline(always)]
fn run(bytes: &[u8], keep: impl Fn(u8) -> bool, stops: impl Fn([u8; 16]) -> u32) -> usize {
    let mut i = 0;
    while let Some(block) = load16(bytes, i) {
        let mask = stops(block);
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    let tail = &bytes[i..];
    i + tail.iter().position(|&b| !keep(b)).unwrap_or(tail.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stop byte at every offset of texts around the block size, against a plain
    /// byte-at-a-time answer.
    #[test]
    fn runs_end_at_the_first_stop_byte() {
        let plain = |v: &[u8]| v.iter().position(|&b| !is_plain(b)).unwrap_or(v.len());
        let digits = |v: &[u8]| {
            v.iter()
                .position(|b| !b.is_ascii_digit())
                .unwrap_or(v.len())
        };
        for len in [0, 1, 7, 15, 16, 17, 31, 32, 33, 40] {
            for at in 0..=len {
                for stop in [b'"', b'\\', 0x00, 0x1f, b'\n', b'a', b'/', b':', 0x80, 0xff] {
                    let mut text = b"0123456789".repeat(4)[..len].to_vec();
                    text.insert(at, stop);
                    assert_eq!(plain_run(&text), plain(&text), "{text:?}");
                    assert_eq!(digit_run(&text), digits(&text), "{text:?}");
                }
            }
        }
        let wide = "é\u{7f}\u{ff}😀xyz012345 and more than sixteen bytes";
        assert_eq!(plain_run(wide.as_bytes()), wide.len());
        assert_eq!(digit_run(b"12345678901234567890123"), 23);
    }
}
