//! Exact base-10 numbers: DECIMAL/NUMERIC literals, casts and arithmetic.
//!
//! Invariants kept by every constructor in this module: `|mantissa| < 10^38` (AWS: "maximum
//! precision of 38") and `scale <= 38`. Values built by hand outside those bounds are handled
//! without panicking, but arithmetic on them may report overflow.
//!
//! Equality and ordering are by numeric value, so `1.0 == 1.00` and `0.05 < 0.1`: SQL compares
//! decimals by value and the scale is only a matter of how the value prints.

use std::cmp::Ordering;
use std::fmt;

use crate::err;
use crate::error::SelectError;

/// Most significant digits a decimal may carry (AWS: "maximum precision of 38").
pub const MAX_PRECISION: u32 = 38;
/// Largest scale this implementation produces; deeper fractions are rounded (arithmetic) or
/// refused (parsing).
pub const MAX_SCALE: u8 = 38;

/// `10^38`, the first magnitude that no longer fits 38 digits.
const LIMIT: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// Significant digits of an inexact quotient: IEEE 754 decimal128's, Java's
/// `MathContext.DECIMAL128`.
const DIV_DIGITS: u32 = 34;

/// `mantissa × 10^-scale`, up to 38 significant digits.
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    pub mantissa: i128,
    pub scale: u8,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

fn upow10(n: u32) -> Option<u128> {
    10u128.checked_pow(n)
}

/// Number of decimal digits of `v` (0 has one digit).
fn digit_count(mut v: u128) -> u32 {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// `num / den` rounded half away from zero; `den > 0`.
fn div_round_half_away(num: i128, den: i128) -> i128 {
    let q = num / den;
    let r = num % den;
    // |r| >= den/2, written without overflow: 2|r| >= den  <=>  |r| >= den - |r|.
    let ar = r.unsigned_abs();
    let ad = den.unsigned_abs();
    if ar >= ad - ar {
        if num < 0 {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

fn overflow(op: &str) -> SelectError {
    err!(
        IntegerOverflow,
        "decimal {op} overflows 38 digits of precision"
    )
}

impl Decimal {
    /// Builds a decimal if it respects the 38-digit / scale-38 limits; literal and cast code
    /// should go through here so that every later operation can rely on the bounds.
    pub fn new(mantissa: i128, scale: u8) -> Option<Decimal> {
        if mantissa.unsigned_abs() >= LIMIT || scale > MAX_SCALE {
            None
        } else {
            Some(Decimal { mantissa, scale })
        }
    }

    /// Integers become decimals exactly (an i64 has at most 19 digits), which is how
    /// `INT + DECIMAL` is evaluated.
    pub fn from_i64(v: i64) -> Decimal {
        Decimal {
            mantissa: v as i128,
            scale: 0,
        }
    }

    /// The shortest decimal that reads back as `v`, for `CAST(float AS DECIMAL)`; `None` for
    /// NaN, infinities and magnitudes beyond 38 digits or below scale 38.
    pub fn from_f64(v: f64) -> Option<Decimal> {
        if !v.is_finite() {
            return None;
        }
        // `{:e}` gives the shortest round-trip digits, e.g. `1.5e-7`, which parse accepts.
        let s = format!("{v:e}");
        Decimal::parse(&s).or_else(|| {
            // Shortest digits reach below scale 38: round at scale 38 instead, then drop the
            // trailing zeros the fixed-width formatting added.
            if v.abs() >= 1.0 {
                return None;
            }
            let mut d = Decimal::parse(&format!("{v:.38}"))?;
            while d.scale > 0 && d.mantissa % 10 == 0 {
                d.mantissa /= 10;
                d.scale -= 1;
            }
            Some(d)
        })
    }

    /// Parses SQL/Ion decimal text: `[+-]digits[.digits][(e|E)[+-]digits]`, also `.5` and
    /// `5.`. Surrounding whitespace is rejected: CSV fields are handed over verbatim and AWS
    /// refuses `' 1.5'` in casts, so trimming is the caller's decision. Leading zeros are
    /// free; more than 38 significant digits (after dropping zeros that do not change the
    /// value) gives `None`, as does a fraction deeper than 38 digits.
    pub fn parse(s: &str) -> Option<Decimal> {
        let b = s.as_bytes();
        let mut i = 0;
        let neg = match b.first() {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let mut mant: u128 = 0;
        let mut sig = 0u32; // significant digits accumulated in `mant`
        let mut frac_digits: i64 = 0; // fraction digits represented in `mant`
        let mut any = false;
        while i < b.len() && b[i].is_ascii_digit() {
            let d = (b[i] - b'0') as u128;
            any = true;
            if mant != 0 || d != 0 {
                // Every integer digit after the first non-zero one is significant.
                if sig >= MAX_PRECISION {
                    return None;
                }
                mant = mant * 10 + d;
                sig += 1;
            }
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let mut pending_zeros: u32 = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                let d = (b[i] - b'0') as u128;
                any = true;
                if d == 0 {
                    // Zeros are held back: trailing ones may be dropped if space runs out.
                    pending_zeros += 1;
                } else {
                    for _ in 0..pending_zeros {
                        if mant != 0 {
                            if sig >= MAX_PRECISION {
                                return None;
                            }
                            sig += 1;
                        }
                        mant *= 10;
                        frac_digits += 1;
                    }
                    pending_zeros = 0;
                    if sig >= MAX_PRECISION {
                        return None;
                    }
                    mant = mant * 10 + d;
                    sig += 1;
                    frac_digits += 1;
                }
                i += 1;
            }
            // Trailing zeros are kept (they make the scale) as far as digits allow.
            for _ in 0..pending_zeros {
                if mant != 0 && sig >= MAX_PRECISION {
                    break;
                }
                if frac_digits >= MAX_SCALE as i64 {
                    break;
                }
                if mant != 0 {
                    sig += 1;
                }
                mant *= 10;
                frac_digits += 1;
            }
        }
        if !any {
            return None;
        }
        let mut exp: i64 = 0;
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            let eneg = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                exp = exp.saturating_mul(10).saturating_add((b[i] - b'0') as i64);
                i += 1;
            }
            if i == start {
                return None;
            }
            if eneg {
                exp = -exp;
            }
        }
        if i != b.len() {
            return None;
        }
        let mut scale = frac_digits.saturating_sub(exp);
        if mant == 0 {
            let scale = scale.clamp(0, MAX_SCALE as i64) as u8;
            return Some(Decimal { mantissa: 0, scale });
        }
        if scale < 0 {
            let m = mant.checked_mul(upow10(u32::try_from(-scale).ok()?)?)?;
            if m >= LIMIT {
                return None;
            }
            mant = m;
            scale = 0;
        }
        if scale > MAX_SCALE as i64 {
            // Deeper than scale 38: only acceptable if trailing zeros can be shed.
            while scale > MAX_SCALE as i64 && mant.is_multiple_of(10) {
                mant /= 10;
                scale -= 1;
            }
            if scale > MAX_SCALE as i64 {
                return None;
            }
        }
        let m = mant as i128;
        Some(Decimal {
            mantissa: if neg { -m } else { m },
            scale: scale as u8,
        })
    }

    /// Zero at any scale; callers test it before dividing or to print signs.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Nearest f64, correctly rounded (via the decimal text, so `0.1` becomes the f64 `0.1`).
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// The integer part (truncated toward zero, as `CAST(1.9 AS INT)` gives 1); `None` when it
    /// does not fit an i64.
    pub fn to_i64_trunc(self) -> Option<i64> {
        let q = match pow10(self.scale as u32) {
            Some(p) => self.mantissa / p,
            None => 0,
        };
        i64::try_from(q).ok()
    }

    /// The same value at another scale, rounding half away from zero when digits are dropped
    /// (`1.25 → 1.3`, `-1.25 → -1.3`); `None` if the result needs more than 38 digits or a scale
    /// above 38.
    pub fn rescale(&self, new_scale: u8) -> Option<Decimal> {
        if new_scale > MAX_SCALE {
            return None;
        }
        match new_scale.cmp(&self.scale) {
            Ordering::Equal => Decimal::new(self.mantissa, new_scale),
            Ordering::Greater => {
                let f = pow10((new_scale - self.scale) as u32)?;
                Decimal::new(self.mantissa.checked_mul(f)?, new_scale)
            }
            Ordering::Less => {
                let diff = (self.scale - new_scale) as u32;
                let m = match pow10(diff) {
                    Some(f) => div_round_half_away(self.mantissa, f),
                    None => 0,
                };
                Decimal::new(m, new_scale)
            }
        }
    }

    /// `CAST(x AS DECIMAL[(p[,s])])`.
    ///
    /// AWS: "Amazon S3 Select ignores scale and precision when you provide both at the same
    /// time" (S3 user guide, SQL reference, Data types). S3 Select is built on the PartiQL
    /// reference implementation whose legacy cast behaviour drops DECIMAL parameters, so
    /// `DECIMAL(p,s)` returns the value unchanged — which is also what makes Trino's
    /// `CAST(x AS DECIMAL(20,2)) = 0.05` compare exactly. With only a precision the SQL
    /// meaning `DECIMAL(p) = DECIMAL(p,0)` is applied: round to an integer, and more than `p`
    /// digits is `CastFailed`. A scale alone (not expressible in SQL) only rescales.
    pub fn cast(&self, precision: Option<u8>, scale: Option<u8>) -> Result<Decimal, SelectError> {
        match (precision, scale) {
            (Some(_), Some(_)) | (None, None) => Ok(*self),
            (Some(p), None) => {
                let fail = || err!(CastFailed, "cannot cast {self} to DECIMAL({p})");
                if p == 0 || p as u32 > MAX_PRECISION {
                    return Err(fail());
                }
                let r = self.rescale(0).ok_or_else(fail)?;
                if r.mantissa != 0 && digit_count(r.mantissa.unsigned_abs()) > p as u32 {
                    return Err(fail());
                }
                Ok(r)
            }
            (None, Some(s)) => self
                .rescale(s)
                .ok_or_else(|| err!(CastFailed, "cannot cast {self} to DECIMAL with scale {s}")),
        }
    }

    /// Brings both operands to a common scale for addition/subtraction/remainder: the larger
    /// scale when both mantissas still fit 38 digits there, otherwise the largest scale at
    /// which they do, rounding the deeper operand (an integer part of 30 digits leaves room
    /// for only 8 fraction digits, as SQL engines also trade fraction digits for range).
    fn aligned(&self, other: &Decimal) -> Option<(i128, i128, u8)> {
        let hi = self.scale.max(other.scale).min(MAX_SCALE);
        let lo = self.scale.min(other.scale).min(MAX_SCALE);
        (lo..=hi).rev().find_map(|s| {
            let a = self.rescale(s)?;
            let b = other.rescale(s)?;
            Some((a.mantissa, b.mantissa, s))
        })
    }

    /// Fits an exact result into 38 digits by dropping fraction digits (rounded), as SQL
    /// engines do rather than failing when only precision below the point is lost.
    fn fit(mut m: i128, mut scale: u32, op: &str) -> Result<Decimal, SelectError> {
        while scale > MAX_SCALE as u32 || (m.unsigned_abs() >= LIMIT && scale > 0) {
            m = div_round_half_away(m, 10);
            scale -= 1;
        }
        Decimal::new(m, scale as u8).ok_or_else(|| overflow(op))
    }

    /// Exact sum at the larger scale; `IntegerOverflow` past 38 digits.
    pub fn checked_add(&self, other: &Decimal) -> Result<Decimal, SelectError> {
        let (a, b, s) = self.aligned(other).ok_or_else(|| overflow("addition"))?;
        let m = a.checked_add(b).ok_or_else(|| overflow("addition"))?;
        Decimal::fit(m, s as u32, "addition")
    }

    /// Exact difference at the larger scale; `IntegerOverflow` past 38 digits.
    pub fn checked_sub(&self, other: &Decimal) -> Result<Decimal, SelectError> {
        let (a, b, s) = self.aligned(other).ok_or_else(|| overflow("subtraction"))?;
        let m = a.checked_sub(b).ok_or_else(|| overflow("subtraction"))?;
        Decimal::fit(m, s as u32, "subtraction")
    }

    /// Exact product (scale `s1 + s2`), with fraction digits rounded away when the product
    /// needs more than 38 digits; `IntegerOverflow` if the integer part alone does not fit.
    pub fn checked_mul(&self, other: &Decimal) -> Result<Decimal, SelectError> {
        let m = self
            .mantissa
            .checked_mul(other.mantissa)
            .ok_or_else(|| overflow("multiplication"))?;
        Decimal::fit(m, self.scale as u32 + other.scale as u32, "multiplication")
    }

    /// Quotient as Java's `BigDecimal.divide(divisor, MathContext.DECIMAL128)` gives it —
    /// the arithmetic of the PartiQL engines S3 Select descends from: an exact quotient at
    /// the scale closest to `s1 - s2` that holds it (`1.00 / 8 = 0.125`, `6.0 / 2.0 = 3`,
    /// `1.00 / 1 = 1.00`), otherwise 34 significant digits rounded half to even
    /// (`1 / 3 = 0.3333333333333333333333333333333333`). Results never print with a negative
    /// scale (`10 / 0.01 = 1000`). Division by zero is `EvaluatorInvalidArguments` — AWS's
    /// public code list has no divide-by-zero code, and this is the evaluator's "bad
    /// operand" code.
    pub fn checked_div(&self, other: &Decimal) -> Result<Decimal, SelectError> {
        if other.mantissa == 0 {
            return Err(err!(EvaluatorInvalidArguments, "division by zero"));
        }
        let neg = (self.mantissa < 0) != (other.mantissa < 0);
        let den = other.mantissa.unsigned_abs();
        let mut q = self.mantissa.unsigned_abs() / den;
        let mut rem = self.mantissa.unsigned_abs() % den;
        // value = (q.rem/den) × 10^(s2 - s1): each fraction digit produced adds one to the
        // scale, which starts at s1 - s2.
        let preferred = self.scale as i64 - other.scale as i64;
        let mut scale = preferred;
        let significant = |q: u128| if q == 0 { 0 } else { digit_count(q) };
        while rem != 0 && significant(q) < DIV_DIGITS {
            q = q * 10 + next_digit(&mut rem, den) as u128;
            scale += 1;
        }
        let excess = significant(q)
            .saturating_sub(DIV_DIGITS)
            .min(u32::try_from(scale.max(0)).unwrap_or(0));
        if excess > 0 {
            // More than 34 digits already (a long dividend): drop fraction digits, rounding
            // half to even, with what is left of the division as the sticky part. Integer
            // digits are never dropped.
            let f = 10u128.pow(excess);
            let (tail, half) = (q % f, f / 2);
            q /= f;
            scale -= excess as i64;
            if tail > half || (tail == half && (rem != 0 || q % 2 == 1)) {
                q += 1;
            }
        } else if rem != 0 {
            // Inexact: round the 34 digits half to even on the next digit and what follows.
            let d = next_digit(&mut rem, den);
            if d > 5 || (d == 5 && (rem != 0 || q % 2 == 1)) {
                q += 1;
            }
        }
        if scale < 0 {
            // An integral quotient of a dividend with fewer fraction digits than the divisor.
            let f = pow10(u32::try_from(-scale).map_err(|_| overflow("division"))?)
                .and_then(|f| u128::try_from(f).ok())
                .ok_or_else(|| overflow("division"))?;
            q = q.checked_mul(f).ok_or_else(|| overflow("division"))?;
            scale = 0;
        }
        let m = i128::try_from(q).map_err(|_| overflow("division"))?;
        let scale = u32::try_from(scale).map_err(|_| overflow("division"))?;
        Decimal::fit(if neg { -m } else { m }, scale, "division")
    }

    /// Remainder with the sign of the dividend (`-7 % 3 = -1`, as SQL and Java's BigDecimal
    /// do); zero divisor is `EvaluatorInvalidArguments` like division.
    pub fn checked_rem(&self, other: &Decimal) -> Result<Decimal, SelectError> {
        if other.mantissa == 0 {
            return Err(err!(EvaluatorInvalidArguments, "division by zero"));
        }
        let (a, b, s) = self.aligned(other).ok_or_else(|| overflow("remainder"))?;
        Decimal::fit(a % b, s as u32, "remainder")
    }

    /// Negation cannot overflow within the 38-digit bound.
    pub fn neg(&self) -> Decimal {
        Decimal {
            mantissa: self.mantissa.wrapping_neg(),
            scale: self.scale,
        }
    }

    /// Value comparison across scales without overflow: integer parts first, then the
    /// fractions brought to a common scale (both below 10^38, so they fit an i128).
    fn cmp_value(&self, other: &Decimal) -> Ordering {
        let (sa, sb) = (
            self.scale.min(MAX_SCALE) as u32,
            other.scale.min(MAX_SCALE) as u32,
        );
        let a = if self.scale > MAX_SCALE {
            self.rescale(MAX_SCALE).map_or(0, |d| d.mantissa)
        } else {
            self.mantissa
        };
        let b = if other.scale > MAX_SCALE {
            other.rescale(MAX_SCALE).map_or(0, |d| d.mantissa)
        } else {
            other.mantissa
        };
        let (pa, pb) = (pow10(sa).unwrap_or(1), pow10(sb).unwrap_or(1));
        let (qa, ra, qb, rb) = (a / pa, a % pa, b / pb, b % pb);
        match qa.cmp(&qb) {
            Ordering::Equal => {}
            o => return o,
        }
        let s = sa.max(sb);
        let fa = ra * pow10(s - sa).unwrap_or(1);
        let fb = rb * pow10(s - sb).unwrap_or(1);
        fa.cmp(&fb)
    }
}

/// One long-division step: the next quotient digit of `rem × 10 / den` (with `rem < den`),
/// computed by repeated addition so that `rem × 10` never has to exist (it can exceed u128).
fn next_digit(rem: &mut u128, den: u128) -> u8 {
    let r = *rem;
    let mut acc: u128 = 0;
    let mut d = 0u8;
    for _ in 0..10 {
        // acc < den and r < den, so acc + r < 2·den < 2^128.
        acc += r;
        if acc >= den {
            acc -= den;
            d += 1;
        }
    }
    *rem = acc;
    d
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_value(other)
    }
}

impl fmt::Display for Decimal {
    /// Plain notation with exactly `scale` fraction digits (`12.34`, `-0.05`, `0.00`): this is
    /// how S3 Select writes decimals into CSV, never with an exponent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.mantissa.unsigned_abs().to_string();
        let scale = self.scale as usize;
        if self.mantissa < 0 {
            f.write_str("-")?;
        }
        if scale == 0 {
            return f.write_str(&digits);
        }
        if digits.len() <= scale {
            f.write_str("0.")?;
            for _ in 0..(scale - digits.len()) {
                f.write_str("0")?;
            }
            f.write_str(&digits)
        } else {
            let (i, frac) = digits.split_at(digits.len() - scale);
            write!(f, "{i}.{frac}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn d(s: &str) -> Decimal {
        match Decimal::parse(s) {
            Some(v) => v,
            None => panic!("test literal {s} did not parse"),
        }
    }

    #[test]
    fn parse_forms() {
        assert_eq!(
            Decimal::parse("12.34").map(|v| (v.mantissa, v.scale)),
            Some((1234, 2))
        );
        assert_eq!(
            Decimal::parse("-0.05").map(|v| (v.mantissa, v.scale)),
            Some((-5, 2))
        );
        assert_eq!(
            Decimal::parse("+7").map(|v| (v.mantissa, v.scale)),
            Some((7, 0))
        );
        assert_eq!(
            Decimal::parse(".5").map(|v| (v.mantissa, v.scale)),
            Some((5, 1))
        );
        assert_eq!(
            Decimal::parse("5.").map(|v| (v.mantissa, v.scale)),
            Some((5, 0))
        );
        assert_eq!(
            Decimal::parse("1.5e2").map(|v| (v.mantissa, v.scale)),
            Some((150, 0))
        );
        assert_eq!(
            Decimal::parse("1.5E-2").map(|v| (v.mantissa, v.scale)),
            Some((15, 3))
        );
        assert_eq!(
            Decimal::parse("00012.50").map(|v| (v.mantissa, v.scale)),
            Some((1250, 2))
        );
        assert_eq!(
            Decimal::parse("0e-100").map(|v| (v.mantissa, v.scale)),
            Some((0, 38))
        );
        for bad in [
            "", "-", ".", "e5", "1e", "1.2.3", " 1", "1 ", "1x", "--1", "1e+", "inf",
        ] {
            assert_eq!(Decimal::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parse_precision_limit() {
        let p38 = "9".repeat(38);
        assert!(Decimal::parse(&p38).is_some());
        assert_eq!(Decimal::parse(&"9".repeat(39)), None);
        assert_eq!(Decimal::parse(&format!("0.{}", "1".repeat(39))), None);
        // Leading zeros are not significant.
        assert!(Decimal::parse(&format!("{}{}", "0".repeat(20), p38)).is_some());
        // Trailing fraction zeros that do not fit are dropped without changing the value.
        let v = d(&format!("1.{}", "0".repeat(45)));
        assert_eq!(v, Decimal::from_i64(1));
        assert_eq!(Decimal::parse("1e38"), None);
        assert!(Decimal::parse("1e37").is_some());
        assert_eq!(Decimal::parse("1e-39"), None);
    }

    #[test]
    fn display() {
        assert_eq!(
            Decimal {
                mantissa: 1234,
                scale: 2
            }
            .to_string(),
            "12.34"
        );
        assert_eq!(
            Decimal {
                mantissa: -5,
                scale: 2
            }
            .to_string(),
            "-0.05"
        );
        assert_eq!(
            Decimal {
                mantissa: 0,
                scale: 2
            }
            .to_string(),
            "0.00"
        );
        assert_eq!(
            Decimal {
                mantissa: 7,
                scale: 0
            }
            .to_string(),
            "7"
        );
        assert_eq!(
            Decimal {
                mantissa: i128::MIN,
                scale: 0
            }
            .to_string()
            .len(),
            40
        );
        for s in [
            "12.34",
            "-0.05",
            "0.000001",
            "123456789012345678901234567890.12345678",
        ] {
            assert_eq!(d(s).to_string(), s);
        }
    }

    #[test]
    fn value_equality_and_order() {
        assert_eq!(d("1.0"), d("1.00"));
        assert_eq!(d("0.05"), d("5e-2"));
        assert!(d("0.05") < d("0.1"));
        assert!(d("-0.05") < d("0.01"));
        assert!(d("-1.5") < d("-1.25"));
        assert!(d("-2") < d("-1.99"));
        assert!(d(&"9".repeat(38)) > d(&format!("0.{}", "9".repeat(38))));
        let tiny = Decimal {
            mantissa: 1,
            scale: 38,
        };
        assert!(tiny > Decimal::from_i64(0));
        assert!(tiny.neg() < Decimal::from_i64(0));
    }

    #[test]
    fn conversions() {
        assert_eq!(d("0.1").to_f64(), 0.1);
        assert_eq!(d("-12.5").to_f64(), -12.5);
        assert_eq!(d("1.9").to_i64_trunc(), Some(1));
        assert_eq!(d("-1.9").to_i64_trunc(), Some(-1));
        assert_eq!(d("9223372036854775807").to_i64_trunc(), Some(i64::MAX));
        assert_eq!(d("9223372036854775808").to_i64_trunc(), None);
        assert_eq!(
            Decimal::from_i64(i64::MIN).to_string(),
            i64::MIN.to_string()
        );
        assert_eq!(Decimal::from_f64(0.1), Some(d("0.1")));
        assert_eq!(Decimal::from_f64(f64::NAN), None);
        assert_eq!(Decimal::from_f64(1e300), None);
        assert_eq!(Decimal::from_f64(1.5e-7), Some(d("0.00000015")));
        let tiny = Decimal::from_f64(1.2345678901234567e-25);
        assert_eq!(tiny.map(|t| t.scale), Some(38));
        assert_eq!(Decimal::from_f64(1e-40), Some(d("0")));
    }

    #[test]
    fn rescale_rounds_half_away() {
        assert_eq!(
            d("1.25").rescale(1).map(|v| v.to_string()),
            Some("1.3".into())
        );
        assert_eq!(
            d("-1.25").rescale(1).map(|v| v.to_string()),
            Some("-1.3".into())
        );
        assert_eq!(
            d("1.24").rescale(1).map(|v| v.to_string()),
            Some("1.2".into())
        );
        assert_eq!(
            d("1.5").rescale(3).map(|v| v.to_string()),
            Some("1.500".into())
        );
        assert_eq!(d("0.5").rescale(0).map(|v| v.to_string()), Some("1".into()));
        assert_eq!(d(&"9".repeat(38)).rescale(1), None);
        assert_eq!(d("1").rescale(39), None);
    }

    #[test]
    fn cast_semantics() {
        // Both parameters: ignored (AWS data types page), so Trino's comparison is exact.
        let v = d("0.05");
        let c = v.cast(Some(20), Some(2)).ok();
        assert_eq!(c, Some(d("0.05")));
        assert_eq!(
            d("123.456")
                .cast(Some(2), Some(1))
                .map(|v| v.to_string())
                .ok(),
            Some("123.456".into())
        );
        assert_eq!(
            d("123.5").cast(Some(4), None).map(|v| v.to_string()).ok(),
            Some("124".into())
        );
        let e = d("12345").cast(Some(4), None);
        assert_eq!(e.map_err(|e| e.code), Err(ErrorCode::CastFailed));
        assert_eq!(
            d("1.5").cast(None, Some(3)).map(|v| v.to_string()).ok(),
            Some("1.500".into())
        );
        assert_eq!(d("1.5").cast(None, None).ok(), Some(d("1.5")));
    }

    #[test]
    fn arithmetic() {
        let s = |r: Result<Decimal, SelectError>| r.map(|v| v.to_string()).map_err(|e| e.code);
        assert_eq!(s(d("1.5").checked_add(&d("0.25"))), Ok("1.75".into()));
        assert_eq!(s(d("1.5").checked_sub(&d("2.25"))), Ok("-0.75".into()));
        assert_eq!(s(d("1.5").checked_mul(&d("-0.2"))), Ok("-0.30".into()));
        // Java's BigDecimal.divide(_, MathContext.DECIMAL128): 34 digits, half to even.
        let thirds = |d: char, last: char| format!("0.{}{last}", d.to_string().repeat(33));
        assert_eq!(s(d("1").checked_div(&d("3"))), Ok(thirds('3', '3')));
        assert_eq!(s(d("2").checked_div(&d("3"))), Ok(thirds('6', '7')));
        assert_eq!(
            s(d("-2").checked_div(&d("3"))),
            Ok(format!("-{}", thirds('6', '7')))
        );
        // Exact quotients at the scale nearest s1 - s2 that holds them.
        assert_eq!(s(d("1.00").checked_div(&d("8"))), Ok("0.125".into()));
        assert_eq!(s(d("6.0").checked_div(&d("2.0"))), Ok("3".into()));
        assert_eq!(s(d("1.00").checked_div(&d("1"))), Ok("1.00".into()));
        assert_eq!(s(d("10").checked_div(&d("0.01"))), Ok("1000".into()));
        // s3-tests' projection case: 45.0/97.0 keeps its digits.
        assert_eq!(
            s(d("45.0").checked_div(&d("97.0"))),
            Ok("0.4639175257731958762886597938144330".into())
        );
        // Half to even on an exact tie at the 35th digit: odd rounds up, even stays.
        let div1 = |x: String| d(&x).checked_div(&d("1")).map(|v| v.to_string());
        let ones = "1".repeat(33);
        assert_eq!(div1(format!("0.{ones}15")), Ok(format!("0.{ones}2")));
        assert_eq!(div1(format!("0.{ones}25")), Ok(format!("0.{ones}2")));
        assert_eq!(div1(format!("0.{ones}251")), Ok(format!("0.{ones}3")));
        assert_eq!(
            s(d("1.123456789").checked_div(&d("1"))),
            Ok("1.123456789".into())
        );
        assert_eq!(s(d("7").checked_rem(&d("3"))), Ok("1".into()));
        assert_eq!(s(d("-7").checked_rem(&d("3"))), Ok("-1".into()));
        assert_eq!(s(d("7.5").checked_rem(&d("2"))), Ok("1.5".into()));
        assert_eq!(
            s(d("1").checked_div(&d("0"))),
            Err(ErrorCode::EvaluatorInvalidArguments)
        );
        assert_eq!(
            s(d("1").checked_rem(&d("0.0"))),
            Err(ErrorCode::EvaluatorInvalidArguments)
        );
        // Alignment gives up fraction digits rather than failing when the integer part is long.
        let long = d(&"1".repeat(30));
        let r = s(long.checked_add(&d("0.123456789012")));
        assert_eq!(r, Ok(format!("{}.12345679", "1".repeat(30))));
        let big = d(&"9".repeat(38));
        assert_eq!(s(big.checked_add(&d("1"))), Err(ErrorCode::IntegerOverflow));
        assert_eq!(s(big.checked_mul(&big)), Err(ErrorCode::IntegerOverflow));
        // Large quotient: fraction digits give way to integer digits.
        let q = big.checked_div(&d("3")).map(|v| v.to_string());
        assert_eq!(q, Ok("3".repeat(38)));
        // Divisor close to 10^38 exercises the overflow-free long division.
        let q = d("1").checked_div(&big).map(|v| v.to_string());
        assert_eq!(q, Ok(format!("0.{}1", "0".repeat(37))));
        let q = big.checked_div(&big).map(|v| v.to_string());
        assert_eq!(q, Ok("1".into()));
        // Product with too many fraction digits is rounded into 38 digits.
        let p = d("0.1234567890123456789").checked_mul(&d("0.1234567890123456789"));
        assert!(p.is_ok());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn dec() -> impl Strategy<Value = Decimal> {
            (-10i128.pow(18)..10i128.pow(18), 0u8..=18).prop_map(|(m, s)| Decimal {
                mantissa: m,
                scale: s,
            })
        }

        proptest! {
            #[test]
            fn display_parse_round_trip(a in dec()) {
                let back = Decimal::parse(&a.to_string());
                prop_assert_eq!(back.map(|b| (b.mantissa, b.scale)), Some((a.mantissa, a.scale)));
            }

            #[test]
            fn order_matches_aligned_mantissas(a in dec(), b in dec()) {
                // With 18-digit mantissas and scales <= 18 the aligned values fit 36 digits.
                let s = a.scale.max(b.scale) as u32;
                let am = a.mantissa * 10i128.pow(s - a.scale as u32);
                let bm = b.mantissa * 10i128.pow(s - b.scale as u32);
                prop_assert_eq!(a.cmp(&b), am.cmp(&bm));
            }

            #[test]
            fn add_then_sub_is_identity(a in dec(), b in dec()) {
                let r = a.checked_add(&b).and_then(|x| x.checked_sub(&b));
                prop_assert_eq!(r.ok(), Some(a));
            }

            #[test]
            fn div_is_close(a in dec(), b in dec()) {
                prop_assume!(!b.is_zero());
                if let Ok(q) = a.checked_div(&b) {
                    let expect = a.to_f64() / b.to_f64();
                    let got = q.to_f64();
                    let tol = expect.abs() * 1e-9 + 10f64.powi(-(q.scale as i32)) ;
                    prop_assert!((got - expect).abs() <= tol, "{} / {} = {}", a, b, q);
                }
            }
        }
    }
}
