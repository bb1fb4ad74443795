//! Number text in and out: the conversions behind `CAST(field AS INT/FLOAT)` and behind
//! writing floats into CSV output.

/// Room to write an INT or a DECIMAL as text without allocating: the output path formats
/// every number a Parquet row holds, and a `String` per value would be an allocation per
/// value. The text is what `Display` writes for [`super::Decimal`] and `i64`.
pub struct NumText {
    // 39 digits of a u128, a sign, a point and a leading `0.` fit.
    buf: [u8; 48],
}

impl Default for NumText {
    fn default() -> Self {
        NumText { buf: [0; 48] }
    }
}

impl NumText {
    pub fn int(&mut self, v: i64) -> &str {
        self.digits(u128::from(v.unsigned_abs()), v < 0, 0)
    }

    /// Plain notation with exactly `scale` fraction digits (`12.34`, `-0.05`, `0.00`).
    pub fn decimal(&mut self, d: &super::Decimal) -> &str {
        self.digits(d.mantissa.unsigned_abs(), d.mantissa < 0, d.scale)
    }

    /// Writes `m` right to left with a point before its last `scale` digits and at least
    /// one digit before the point.
    fn digits(&mut self, mut m: u128, negative: bool, scale: u8) -> &str {
        let scale = usize::from(scale).min(self.buf.len() - 3);
        let mut at = self.buf.len();
        let mut written = 0;
        loop {
            if scale > 0 && written == scale {
                at -= 1;
                self.buf[at] = b'.';
            }
            // u64 arithmetic while it fits: a u128 division is a library call.
            let digit = match u64::try_from(m) {
                Ok(small) => {
                    m = u128::from(small / 10);
                    small % 10
                }
                Err(_) => {
                    let d = (m % 10) as u64;
                    m /= 10;
                    d
                }
            };
            at -= 1;
            self.buf[at] = b'0' + digit as u8;
            written += 1;
            if (m == 0 && written > scale) || at < 2 {
                break;
            }
        }
        if negative {
            at -= 1;
            self.buf[at] = b'-';
        }
        // Only ASCII digits, '.' and '-' were written.
        std::str::from_utf8(&self.buf[at..]).unwrap_or_default()
    }
}

/// Parses `[+-]digits` into an i64; `None` on anything else (no whitespace, no fraction, no
/// exponent) and on overflow. This runs once per row for `CAST(s._11 AS INT)`, so the common
/// case (≤ 18 digits, which cannot overflow) is a branch-light loop; only longer inputs pay
/// for checked arithmetic. Whether `' 12'` or `'12.0'` should still cast is the caller's
/// policy (e.g. retry through [`super::Decimal::parse`]).
#[inline]
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    if digits.len() <= 18 {
        let mut v: i64 = 0;
        for &c in digits {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + d as i64;
        }
        return Some(if neg { -v } else { v });
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    if neg {
        if v <= i64::MAX as u64 {
            Some(-(v as i64))
        } else if v == i64::MAX as u64 + 1 {
            Some(i64::MIN)
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// `10^n` for the scales [`parse_scaled_i64`] takes.
const POW10: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut n = 1;
    while n < 19 {
        t[n] = t[n - 1] * 10;
        n += 1;
    }
    t
};

/// `b` read as `[+-]digits[.digits]` and multiplied by `10^scale`: the integer a DECIMAL
/// field compares as against constants at that scale. `None` unless the text has at most
/// `scale` fraction digits and at most 18 digits in all once scaled (so nothing can
/// overflow), and for every other form (`.5`, `5.`, exponents, spaces), which the caller
/// reads the general way. `scale` is at most 18.
///
/// One pass: the digits are summed as they come, the point's place noted, and the form
/// checked once at the end. At most 19 bytes (18 digits and a point, or 19 digits, which
/// are refused) are read, so a sum that is returned is below `10^18`.
#[inline]
pub fn parse_scaled_i64(b: &[u8], scale: u8) -> Option<i64> {
    let (neg, digits) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    let mut dot = usize::MAX;
    for (k, &c) in digits.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d <= 9 {
            // Wraps only on 19 digits without a point, refused below.
            v = v.wrapping_mul(10).wrapping_add(i64::from(d));
        } else if c == b'.' && dot == usize::MAX {
            dot = k;
        } else {
            return None;
        }
    }
    let (int, frac) = if dot == usize::MAX {
        (digits.len(), 0)
    } else {
        (dot, digits.len() - dot - 1)
    };
    let scale = usize::from(scale);
    if int == 0 || (dot != usize::MAX && frac == 0) || frac > scale || int + scale > 18 {
        return None;
    }
    v *= POW10[scale - frac];
    Some(if neg { -v } else { v })
}

/// Parses decimal float text (`1.5`, `-2e10`, `.5`, `5.`, `+1`) as Rust does, correctly
/// rounded. Spellings of infinity and NaN are refused: a CSV field reading `inf` or `NaN` is
/// not a number a user meant to cast, and the decision is kept in one place should AWS
/// turn out to accept them. Whitespace is refused as in [`parse_i64`].
pub fn parse_f64(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    // Only digits, sign, point and exponent letters can form a finite number.
    if b.is_empty()
        || !b
            .iter()
            .all(|&c| c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.' | b'e' | b'E'))
    {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    // Overflowing literals like 1e999 parse to infinity; those are not representable.
    if v.is_finite() {
        Some(v)
    } else {
        None
    }
}

/// Float text for CSV output, in the style of Java's `Double.toString` (S3 Select runs on
/// the JVM): the shortest digits that read back as the same f64; plain notation with at least
/// one fraction digit when 10^-3 ≤ |v| < 10^7 (`80.5`, `2.0`, `0.001`), otherwise
/// computerized scientific notation (`1.0E7`, `1.234E-5`); `NaN`, `Infinity`, `-Infinity`.
/// This is a documented guess: AWS does not specify its float output format.
pub fn format_f64(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // `{:e}` yields the shortest round-trip digits as `d[.ddd]e[-]x`.
    let sci = format!("{:e}", v.abs());
    let (mant, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if v < 0.0 { "-" } else { "" };
    if (-3..7).contains(&exp) {
        let n = digits.len() as i32;
        let point = exp + 1; // digits before the decimal point
        let s = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point >= n {
            format!("{}{}.0", digits, "0".repeat((point - n) as usize))
        } else {
            let (i, f) = digits.split_at(point as usize);
            format!("{i}.{f}")
        };
        format!("{sign}{s}")
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exp}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_scaled_i64_cases() {
        assert_eq!(parse_scaled_i64(b"12.34", 2), Some(1234));
        assert_eq!(parse_scaled_i64(b"12.34", 4), Some(123_400));
        assert_eq!(parse_scaled_i64(b"-12.3", 2), Some(-1230));
        assert_eq!(parse_scaled_i64(b"+7", 2), Some(700));
        assert_eq!(parse_scaled_i64(b"-0.00", 2), Some(0));
        assert_eq!(parse_scaled_i64(b"0012.5", 1), Some(125));
        assert_eq!(parse_scaled_i64(b"5", 0), Some(5));
        assert_eq!(
            parse_scaled_i64(b"99999999999999.9999", 4),
            Some(999_999_999_999_999_999)
        );
        for (bad, scale) in [
            (&b""[..], 2),
            (b"-", 2),
            (b".5", 2),
            (b"5.", 2),
            (b"1.234", 2),
            (b"1.2.3", 4),
            (b"1e3", 2),
            (b" 1.5", 2),
            (b"1.5 ", 2),
            (b"1,5", 2),
            (b"999999999999999.9999", 4),
        ] {
            assert_eq!(
                parse_scaled_i64(bad, scale),
                None,
                "{:?} at scale {scale}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// The two-pass reading [`parse_scaled_i64`] replaced: find the point, check the form,
    /// then sum the digits. The fast one is checked against it.
    fn scaled_reference(b: &[u8], scale: u8) -> Option<i64> {
        let (neg, digits) = match b.first()? {
            b'-' => (true, &b[1..]),
            b'+' => (false, &b[1..]),
            _ => (false, b),
        };
        let (int, frac) = match digits.iter().position(|&c| c == b'.') {
            Some(dot) if dot + 1 < digits.len() => (&digits[..dot], &digits[dot + 1..]),
            Some(_) => return None,
            None => (digits, &[][..]),
        };
        let scale = usize::from(scale);
        if int.is_empty() || frac.len() > scale || int.len() + scale > 18 {
            return None;
        }
        let mut v: i64 = 0;
        for &c in int.iter().chain(frac) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + i64::from(d);
        }
        v *= POW10[scale - frac.len()];
        Some(if neg { -v } else { v })
    }

    /// Every string of up to five characters from digits, sign, point and a stray byte, and
    /// longer ones around the 18-digit limit, at every scale: the one-pass reading agrees
    /// with the two-pass one.
    #[test]
    fn parse_scaled_i64_matches_the_reference() {
        let alphabet = [b'0', b'7', b'9', b'.', b'-', b'+', b'e', b' '];
        let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
        let mut last = texts.clone();
        for _ in 0..5 {
            last = last
                .iter()
                .flat_map(|t| {
                    alphabet.iter().map(move |&c| {
                        let mut t = t.clone();
                        t.push(c);
                        t
                    })
                })
                .collect();
            texts.extend(last.iter().cloned());
        }
        for int in 14..=20 {
            for frac in 0..=5 {
                let mut t = vec![b'9'; int];
                if frac > 0 {
                    t.push(b'.');
                    t.extend(std::iter::repeat_n(b'9', frac));
                }
                texts.push(t.clone());
                t.insert(0, b'-');
                texts.push(t);
            }
        }
        for t in &texts {
            for scale in 0..=18 {
                assert_eq!(
                    parse_scaled_i64(t, scale),
                    scaled_reference(t, scale),
                    "{:?} at scale {scale}",
                    String::from_utf8_lossy(t)
                );
            }
        }
    }

    #[test]
    fn parse_i64_cases() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"123"), Some(123));
        assert_eq!(parse_i64(b"-123"), Some(-123));
        assert_eq!(parse_i64(b"+123"), Some(123));
        assert_eq!(parse_i64(b"000123"), Some(123));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_i64(b"99999999999999999999999"), None);
        assert_eq!(parse_i64(b"0000000000000000000000042"), Some(42));
        assert_eq!(
            parse_i64(b"999999999999999999"),
            Some(999_999_999_999_999_999)
        );
        for bad in [
            &b""[..],
            b"-",
            b"+",
            b" 1",
            b"1 ",
            b"1.0",
            b"1e3",
            b"--1",
            b"0x10",
            b"1_000",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn parse_i64_matches_std() {
        for s in [
            "1",
            "-1",
            "12345678901234567",
            "-123456789012345678",
            "1234567890123456789",
        ] {
            assert_eq!(parse_i64(s.as_bytes()), s.parse::<i64>().ok(), "{s}");
        }
    }

    #[test]
    fn parse_f64_cases() {
        assert_eq!(parse_f64("1.5"), Some(1.5));
        assert_eq!(parse_f64("+1.5"), Some(1.5));
        assert_eq!(parse_f64("-2e10"), Some(-2e10));
        assert_eq!(parse_f64(".5"), Some(0.5));
        assert_eq!(parse_f64("5."), Some(5.0));
        assert_eq!(parse_f64("0.1"), Some(0.1));
        for bad in [
            "", "inf", "-inf", "NaN", "infinity", " 1", "1 ", "1e999", "e5", "1,5", "0x1",
        ] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn format_f64_cases() {
        assert_eq!(format_f64(80.5), "80.5");
        assert_eq!(format_f64(2.0), "2.0");
        assert_eq!(format_f64(-2.0), "-2.0");
        assert_eq!(format_f64(0.0), "0.0");
        assert_eq!(format_f64(0.1), "0.1");
        assert_eq!(format_f64(0.001), "0.001");
        assert_eq!(format_f64(0.0001), "1.0E-4");
        assert_eq!(format_f64(1_234_567.0), "1234567.0");
        assert_eq!(format_f64(12_345_678.0), "1.2345678E7");
        assert_eq!(format_f64(1e21), "1.0E21");
        assert_eq!(format_f64(-1.5e-10), "-1.5E-10");
        assert_eq!(format_f64(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(format_f64(f64::NAN), "NaN");
        assert_eq!(format_f64(f64::NEG_INFINITY), "-Infinity");
        for v in [
            1.0 / 3.0,
            1e-300,
            123.456,
            6.02214076e23,
            f64::MAX,
            f64::MIN_POSITIVE,
        ] {
            assert_eq!(format_f64(v).parse::<f64>().ok(), Some(v));
        }
    }
}

#[cfg(test)]
mod num_text_tests {
    use super::*;
    use crate::value::Decimal;
    use proptest::prelude::*;

    #[test]
    fn writes_what_display_writes() {
        let mut t = NumText::default();
        assert_eq!(t.int(0), "0");
        assert_eq!(t.int(i64::MIN), i64::MIN.to_string());
        for (m, s) in [(5, 2), (0, 2), (-5, 2), (12345, 2), (-1, 0), (7, 38)] {
            let d = Decimal::new(m, s).unwrap();
            assert_eq!(t.decimal(&d), d.to_string(), "{m} scale {s}");
        }
        let big = Decimal::new(-(10i128.pow(38) - 1), 3).unwrap();
        assert_eq!(t.decimal(&big), big.to_string());
    }

    proptest! {
        #[test]
        fn matches_display(v in any::<i64>(), m in any::<i128>(), scale in 0u8..=38) {
            let mut t = NumText::default();
            prop_assert_eq!(t.int(v), v.to_string());
            if let Some(d) = Decimal::new(m, scale) {
                prop_assert_eq!(t.decimal(&d), d.to_string());
            }
        }
    }
}
