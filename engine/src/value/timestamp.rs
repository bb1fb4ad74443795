//! Ion timestamps: literals, casts, TO_STRING / TO_TIMESTAMP, DATE_ADD, DATE_DIFF, EXTRACT.
//!
//! A timestamp is stored as its UTC instant plus the local offset it was written with and the
//! precision it was written at, because both decide how it prints back (Ion text keeps them)
//! while comparisons only look at the instant.
//!
//! Semantics follow the AWS S3 Select "Date functions" page
//! (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-select-sql-reference-date.html>)
//! and, where it is silent, the PartiQL reference implementation S3 Select is built on (its
//! TO_STRING pattern lexer/parser and java.time formatting).

use std::cmp::Ordering;
use std::fmt;
use std::fmt::Write as _;

use crate::err;
use crate::error::SelectError;
use crate::sql::ast::DatePart;

/// How much of a timestamp was written; it decides how the value prints back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Precision {
    Year,
    Month,
    Day,
    Minute,
    Second,
    /// Fractional seconds with this many digits (1..=9).
    Fraction(u8),
}

/// A point in time with the local offset it was written with.
///
/// `PartialEq` is Ion equivalence: same instant, same offset, same precision (`2007T` and
/// `2007-01-01` differ). SQL comparison (`=`, `<`, ORDER BY, MIN/MAX) must use
/// [`Timestamp::cmp_instant`], under which `2007T` equals `2007-01-01T00:00Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z of the instant (UTC).
    pub seconds: i64,
    /// Nanoseconds within the second.
    pub nanos: u32,
    /// The local offset in minutes east of UTC; `None` for an unknown offset (`-00:00`) and for
    /// date-only values.
    pub offset_minutes: Option<i16>,
    pub precision: Precision,
}

pub(crate) const SECS_PER_DAY: i64 = 86_400;
const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (era-based day counting).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = (m as i64 + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d as i64 - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

/// Wall-clock fields of a timestamp at its own offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Local {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    nanos: u32,
}

fn out_of_range() -> SelectError {
    err!(
        IntegerOverflow,
        "timestamp arithmetic leaves the years 0001 to 9999"
    )
}

impl Timestamp {
    /// Builds a timestamp from wall-clock fields at `offset_minutes` (unknown offset: the
    /// fields are UTC). Validates the calendar and Ion's year range 0001..=9999 so every
    /// value in the engine prints as valid Ion.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        year: i64,
        month: u32,
        day: u32,
        hour: u32,
        minute: u32,
        second: u32,
        nanos: u32,
        offset_minutes: Option<i16>,
        precision: Precision,
    ) -> Option<Timestamp> {
        if !(1..=9999).contains(&year)
            || !(1..=12).contains(&month)
            || day == 0
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 59
            || nanos > 999_999_999
        {
            return None;
        }
        if let Some(o) = offset_minutes {
            if o.unsigned_abs() >= 24 * 60 {
                return None;
            }
        }
        if let Precision::Fraction(n) = precision {
            if !(1..=9).contains(&n) {
                return None;
            }
        }
        let local = days_from_civil(year, month, day) * SECS_PER_DAY
            + (hour as i64) * 3600
            + (minute as i64) * 60
            + second as i64;
        let seconds = local - offset_minutes.unwrap_or(0) as i64 * 60;
        Some(Timestamp {
            seconds,
            nanos,
            offset_minutes,
            precision,
        })
    }

    /// A date-precision value (`2007-02-23`), as CSV dates become after a cast and as the
    /// `DATE_ADD(day, …)` examples expect; date-only values have no offset.
    pub fn from_date_ymd(year: i64, month: u32, day: u32) -> Option<Timestamp> {
        Timestamp::from_parts(year, month, day, 0, 0, 0, 0, None, Precision::Day)
    }

    fn local(&self) -> Local {
        let local = self.seconds + self.offset_minutes.unwrap_or(0) as i64 * 60;
        let days = local.div_euclid(SECS_PER_DAY);
        let sod = local.rem_euclid(SECS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Local {
            year,
            month,
            day,
            hour: (sod / 3600) as u32,
            minute: (sod / 60 % 60) as u32,
            second: (sod % 60) as u32,
            nanos: self.nanos,
        }
    }

    /// Rebuilds from local fields keeping this value's offset; `None` outside 0001..9999.
    fn with_local(&self, l: Local, precision: Precision) -> Option<Timestamp> {
        Timestamp::from_parts(
            l.year,
            l.month,
            l.day,
            l.hour,
            l.minute,
            l.second,
            l.nanos,
            self.offset_minutes,
            precision,
        )
    }

    /// Parses Ion timestamp text — the form of backtick literals, `CAST(s AS TIMESTAMP)` and
    /// `TO_TIMESTAMP` — keeping precision and offset so that the value prints back exactly:
    /// `2007T`, `2007-02T`, `2007-02-23`, `2007-02-23T`, `2007-02-23T12:14Z`,
    /// `2007-02-23T12:14:33.079-08:00`. An offset is required once there is a time of day
    /// (`-00:00` is the unknown offset); fractions have 1 to 9 digits; `T`/`Z` are upper case.
    pub fn parse_ion(s: &str) -> Option<Timestamp> {
        let b = s.as_bytes();
        let num = |from: usize, len: usize| -> Option<u32> {
            let part = b.get(from..from + len)?;
            let mut v = 0u32;
            for &c in part {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + (c - b'0') as u32;
            }
            Some(v)
        };
        let year = num(0, 4)? as i64;
        let date =
            |m: u32, d: u32, p: Precision| Timestamp::from_parts(year, m, d, 0, 0, 0, 0, None, p);
        match b.get(4) {
            Some(b'T') if b.len() == 5 => return date(1, 1, Precision::Year),
            Some(b'-') => {}
            _ => return None,
        }
        let month = num(5, 2)?;
        match b.get(7) {
            Some(b'T') if b.len() == 8 => return date(month, 1, Precision::Month),
            Some(b'-') => {}
            _ => return None,
        }
        let day = num(8, 2)?;
        match b.get(10) {
            None => return date(month, day, Precision::Day),
            Some(b'T') if b.len() == 11 => return date(month, day, Precision::Day),
            Some(b'T') => {}
            _ => return None,
        }
        let hour = num(11, 2)?;
        if b.get(13) != Some(&b':') {
            return None;
        }
        let minute = num(14, 2)?;
        let mut i = 16;
        let mut second = 0;
        let mut nanos = 0;
        let mut precision = Precision::Minute;
        if b.get(i) == Some(&b':') {
            second = num(i + 1, 2)?;
            i += 3;
            precision = Precision::Second;
            if b.get(i) == Some(&b'.') {
                i += 1;
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n = i - start;
                if n == 0 || n > 9 {
                    return None;
                }
                let mut v = num(start, n)?;
                for _ in n..9 {
                    v *= 10;
                }
                nanos = v;
                precision = Precision::Fraction(n as u8);
            }
        }
        let offset = match b.get(i) {
            Some(b'Z') if b.len() == i + 1 => Some(0),
            Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 => {
                let oh = num(i + 1, 2)?;
                if b[i + 3] != b':' {
                    return None;
                }
                let om = num(i + 4, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                let total = (oh * 60 + om) as i16;
                if sign == b'-' {
                    if total == 0 {
                        None
                    } else {
                        Some(-total)
                    }
                } else {
                    Some(total)
                }
            }
            _ => return None,
        };
        Timestamp::from_parts(
            year, month, day, hour, minute, second, nanos, offset, precision,
        )
    }

    /// `TO_TIMESTAMP(string)`: the string must be Ion timestamp text (AWS: "the inverse
    /// operation of TO_STRING" with the default format). Failure is `CastFailed` naming the
    /// string so the user can find the bad field.
    pub fn to_timestamp(s: &str) -> Result<Timestamp, SelectError> {
        Timestamp::parse_ion(s).ok_or_else(|| err!(CastFailed, "cannot convert '{s}' to TIMESTAMP"))
    }

    /// `UTCNOW()`: the current instant at millisecond precision with offset `Z`, as the AWS
    /// example `2017-10-13T16:02:11.123Z` shows.
    pub fn utc_now() -> Timestamp {
        let (seconds, nanos) =
            match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
                Err(e) => {
                    // Clock before 1970: count backwards.
                    let d = e.duration();
                    let mut s = -(d.as_secs() as i64);
                    let mut n = d.subsec_nanos();
                    if n > 0 {
                        s -= 1;
                        n = 1_000_000_000 - n;
                    }
                    (s, n)
                }
            };
        Timestamp {
            seconds,
            nanos: nanos / 1_000_000 * 1_000_000,
            offset_minutes: Some(0),
            precision: Precision::Fraction(3),
        }
    }

    /// Order of the instants, ignoring offset and precision: this is SQL's `<`/`=` on
    /// timestamps (`2007-02-23T12:14Z` equals `2007-02-23T04:14-08:00`).
    pub fn cmp_instant(&self, other: &Timestamp) -> Ordering {
        (self.seconds, self.nanos).cmp(&(other.seconds, other.nanos))
    }

    /// `DATE_ADD(part, n, ts)`. Year and month move the local calendar date (clamping the
    /// day: Jan 31 + 1 month = Feb 28/29); day, hour, minute and second move the instant.
    /// Precision widens just enough to show the change ("result will add precision as
    /// necessary"): month on a year value gives month precision, day on a year/month value
    /// gives day precision, hours/minutes on a date give minute precision (with the date's
    /// unknown offset, hence `2017-01-01T01:00-00:00`), seconds give second precision.
    pub fn date_add(&self, part: DatePart, n: i64) -> Result<Timestamp, SelectError> {
        let p = self.precision;
        let secs = |unit: i64, min_p: Precision| -> Result<Timestamp, SelectError> {
            let delta = n.checked_mul(unit).ok_or_else(out_of_range)?;
            let seconds = self.seconds.checked_add(delta).ok_or_else(out_of_range)?;
            let t = Timestamp {
                seconds,
                nanos: self.nanos,
                offset_minutes: self.offset_minutes,
                precision: p.max(min_p),
            };
            let l = t.local();
            if !(1..=9999).contains(&l.year) {
                return Err(out_of_range());
            }
            Ok(t)
        };
        match part {
            DatePart::Year | DatePart::Month => {
                let mut l = self.local();
                let months = if part == DatePart::Year {
                    n.checked_mul(12).ok_or_else(out_of_range)?
                } else {
                    n
                };
                let total = (l.year * 12 + (l.month as i64 - 1))
                    .checked_add(months)
                    .ok_or_else(out_of_range)?;
                l.year = total.div_euclid(12);
                l.month = (total.rem_euclid(12) + 1) as u32;
                if !(1..=9999).contains(&l.year) {
                    return Err(out_of_range());
                }
                l.day = l.day.min(days_in_month(l.year, l.month));
                let precision = if part == DatePart::Month {
                    p.max(Precision::Month)
                } else {
                    p
                };
                self.with_local(l, precision).ok_or_else(out_of_range)
            }
            DatePart::Day => secs(SECS_PER_DAY, Precision::Day),
            DatePart::Hour => secs(3600, Precision::Minute),
            DatePart::Minute => secs(60, Precision::Minute),
            DatePart::Second => secs(1, Precision::Second),
            DatePart::TimezoneHour | DatePart::TimezoneMinute => Err(err!(
                IllegalSqlFunctionArgument,
                "DATE_ADD does not accept date part {part:?}"
            )),
        }
    }

    /// `DATE_DIFF(part, self, other)`: whole units from `self` to `other`, negative when
    /// `other` is earlier. Day and smaller count elapsed time truncated toward zero ("need to
    /// be at least 24h apart to be 1 day apart"); months and years count whole calendar
    /// months with `other` seen at `self`'s offset, as java.time's `MONTHS.between` does for
    /// the PartiQL implementation (Jan 31 → Feb 28 is 0 months; years = months / 12).
    pub fn date_diff(&self, part: DatePart, other: &Timestamp) -> Result<i64, SelectError> {
        let nanos_between = || -> i128 {
            (other.seconds as i128 - self.seconds as i128) * 1_000_000_000
                + (other.nanos as i128 - self.nanos as i128)
        };
        let by = |unit_secs: i128| -> i64 {
            // |result| <= 2^64 seconds / unit, fits i64 for any valid pair of timestamps.
            (nanos_between() / (unit_secs * 1_000_000_000)) as i64
        };
        match part {
            DatePart::Second => Ok(by(1)),
            DatePart::Minute => Ok(by(60)),
            DatePart::Hour => Ok(by(3600)),
            DatePart::Day => Ok(by(SECS_PER_DAY as i128)),
            DatePart::Month | DatePart::Year => {
                let a = self.local();
                let b = Timestamp {
                    offset_minutes: self.offset_minutes,
                    ..*other
                }
                .local();
                let mut months = (b.year * 12 + b.month as i64) - (a.year * 12 + a.month as i64);
                let rest = |l: &Local| (l.day, l.hour, l.minute, l.second, l.nanos);
                if months > 0 && rest(&b) < rest(&a) {
                    months -= 1;
                } else if months < 0 && rest(&b) > rest(&a) {
                    months += 1;
                }
                Ok(if part == DatePart::Year {
                    months / 12
                } else {
                    months
                })
            }
            DatePart::TimezoneHour | DatePart::TimezoneMinute => Err(err!(
                IllegalSqlFunctionArgument,
                "DATE_DIFF does not accept date part {part:?}"
            )),
        }
    }

    /// `EXTRACT(part FROM ts)`: fields of the local (written) time, so
    /// `EXTRACT(HOUR FROM `2017-01-02T03:04:05+07:08`)` is 3. Fields below the value's
    /// precision are their defaults (month 1, day 1, hour 0…). TIMEZONE_HOUR/MINUTE split the
    /// offset keeping its sign (-01:30 gives -1 and -30); an unknown offset counts as 0.
    pub fn extract(&self, part: DatePart) -> Result<i64, SelectError> {
        let l = self.local();
        let off = self.offset_minutes.unwrap_or(0) as i64;
        Ok(match part {
            DatePart::Year => l.year,
            DatePart::Month => l.month as i64,
            DatePart::Day => l.day as i64,
            DatePart::Hour => l.hour as i64,
            DatePart::Minute => l.minute as i64,
            DatePart::Second => l.second as i64,
            DatePart::TimezoneHour => off / 60,
            DatePart::TimezoneMinute => off % 60,
        })
    }

    /// `TO_STRING(ts, pattern)`.
    ///
    /// Pattern grammar as S3 Select's PartiQL lexer/parser accepts it: runs of the letters
    /// `y M d a h H m s S X x n` are fields; `' '`, `/`, `-`, `,`, `:` and `.` are copied;
    /// text in single quotes is copied (`''` is a literal quote, inside or outside quotes);
    /// any other character is `EvaluatorInvalidTimestampFormatPatternToken`; a field run of
    /// an unsupported length (`yyyyy`, `ddd`, `SSSSSSSSSS`, …) or an unterminated quote is
    /// `EvaluatorInvalidTimestampFormatPattern`. Fields render as java.time does (which
    /// formats for that implementation): `y` unpadded, `yy` two digits, `yyy`/`yyyy` padded;
    /// `MMMMM` the month's first letter; `S…` the fraction truncated; `n` nanoseconds; `X…`
    /// offsets with `Z` for zero, `x…` with `+00`, except that one `X` prints `+HHmm` as AWS
    /// documents (`+0800`), not java.time's `+HH`. Date-only and unknown-offset values
    /// format at UTC.
    pub fn to_string_with(self, pattern: &str) -> Result<String, SelectError> {
        let l = self.local();
        let off = self.offset_minutes.unwrap_or(0) as i32;
        let mut out = String::with_capacity(pattern.len() + 8);
        let chars: Vec<char> = pattern.chars().collect();
        let bad_symbol = |sym: &str| {
            err!(
                EvaluatorInvalidTimestampFormatPattern,
                "invalid symbol '{sym}' in timestamp format pattern '{pattern}'"
            )
        };
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '\'' => {
                    if chars.get(i + 1) == Some(&'\'') {
                        out.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    loop {
                        match chars.get(i) {
                            None => {
                                return Err(err!(
                                EvaluatorInvalidTimestampFormatPattern,
                                "unterminated quoted text in timestamp format pattern '{pattern}'"
                            ))
                            }
                            Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                                out.push('\'');
                                i += 2;
                            }
                            Some('\'') => {
                                i += 1;
                                break;
                            }
                            Some(&q) => {
                                out.push(q);
                                i += 1;
                            }
                        }
                    }
                }
                ' ' | '/' | '-' | ',' | ':' | '.' => {
                    out.push(c);
                    i += 1;
                }
                'y' | 'M' | 'd' | 'a' | 'h' | 'H' | 'm' | 's' | 'S' | 'X' | 'x' | 'n' => {
                    let start = i;
                    while i < chars.len() && chars[i] == c {
                        i += 1;
                    }
                    let n = i - start;
                    let sym: String = chars[start..i].iter().collect();
                    let two = |out: &mut String, v: u32, n: usize| {
                        if n == 1 {
                            let _ = write!(out, "{v}");
                        } else {
                            let _ = write!(out, "{v:02}");
                        }
                    };
                    match (c, n) {
                        ('y', 1) => {
                            let _ = write!(out, "{}", l.year);
                        }
                        ('y', 2) => {
                            let _ = write!(out, "{:02}", l.year.rem_euclid(100));
                        }
                        ('y', 3) => {
                            let _ = write!(out, "{:03}", l.year);
                        }
                        ('y', 4) => {
                            let _ = write!(out, "{:04}", l.year);
                        }
                        ('M', 1 | 2) => two(&mut out, l.month, n),
                        ('M', 3) => out.push_str(&MONTH_NAMES[(l.month - 1) as usize][..3]),
                        ('M', 4) => out.push_str(MONTH_NAMES[(l.month - 1) as usize]),
                        ('M', 5) => out.push_str(&MONTH_NAMES[(l.month - 1) as usize][..1]),
                        ('d', 1 | 2) => two(&mut out, l.day, n),
                        ('a', 1) => out.push_str(if l.hour < 12 { "AM" } else { "PM" }),
                        ('h', 1 | 2) => {
                            let h = match l.hour % 12 {
                                0 => 12,
                                h => h,
                            };
                            two(&mut out, h, n)
                        }
                        ('H', 1 | 2) => two(&mut out, l.hour, n),
                        ('m', 1 | 2) => two(&mut out, l.minute, n),
                        ('s', 1 | 2) => two(&mut out, l.second, n),
                        ('S', 1..=9) => {
                            let digits = format!("{:09}", l.nanos);
                            out.push_str(&digits[..n]);
                        }
                        ('n', 1) => {
                            let _ = write!(out, "{}", l.nanos);
                        }
                        ('X', 1..=5) => {
                            if off == 0 {
                                out.push('Z');
                            } else {
                                // AWS documents a single X as `+0800` for +08:00
                                // (TO_STRING examples on the Date functions page), where
                                // java.time would print `+08`: one X is written like XX.
                                write_offset(&mut out, off, n.max(2));
                            }
                        }
                        ('x', 1..=5) => write_offset(&mut out, off, n),
                        _ => return Err(bad_symbol(&sym)),
                    }
                }
                _ => {
                    return Err(err!(
                        EvaluatorInvalidTimestampFormatPatternToken,
                        "invalid token '{c}' in timestamp format pattern '{pattern}'"
                    ))
                }
            }
        }
        Ok(out)
    }
}

/// java.time offset forms: 1 letter `+HH` (plus `mm` when minutes are non-zero), 2 and 4
/// letters `+HHmm`, 3 and 5 letters `+HH:mm`.
fn write_offset(out: &mut String, off: i32, letters: usize) {
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.unsigned_abs();
    let (h, m) = (a / 60, a % 60);
    let _ = match letters {
        1 if m == 0 => write!(out, "{sign}{h:02}"),
        1 | 2 | 4 => write!(out, "{sign}{h:02}{m:02}"),
        _ => write!(out, "{sign}{h:02}:{m:02}"),
    };
}

impl fmt::Display for Timestamp {
    /// Ion text at the value's own precision and offset, so that it parses back to the same
    /// value: `2007T`, `2007-02T`, `2007-02-23`, `2007-04-05T14:30Z`,
    /// `2007-02-23T12:14:33.079-08:00`; the unknown offset prints as `-00:00`, zero as `Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = self.local();
        match self.precision {
            Precision::Year => return write!(f, "{:04}T", l.year),
            Precision::Month => return write!(f, "{:04}-{:02}T", l.year, l.month),
            Precision::Day => return write!(f, "{:04}-{:02}-{:02}", l.year, l.month, l.day),
            _ => {}
        }
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}",
            l.year, l.month, l.day, l.hour, l.minute
        )?;
        match self.precision {
            Precision::Second => write!(f, ":{:02}", l.second)?,
            Precision::Fraction(n) => {
                let digits = format!("{:09}", l.nanos);
                let n = (n as usize).clamp(1, 9);
                write!(f, ":{:02}.{}", l.second, &digits[..n])?
            }
            _ => {}
        }
        match self.offset_minutes {
            None => f.write_str("-00:00"),
            Some(0) => f.write_str("Z"),
            Some(o) => {
                let sign = if o < 0 { '-' } else { '+' };
                let a = o.unsigned_abs();
                write!(f, "{sign}{:02}:{:02}", a / 60, a % 60)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn ts(s: &str) -> Timestamp {
        match Timestamp::parse_ion(s) {
            Some(t) => t,
            None => panic!("test literal {s} did not parse"),
        }
    }

    fn add(part: DatePart, n: i64, s: &str) -> String {
        match ts(s).date_add(part, n) {
            Ok(t) => t.to_string(),
            Err(e) => e.to_string(),
        }
    }

    fn diff(part: DatePart, a: &str, b: &str) -> i64 {
        match ts(a).date_diff(part, &ts(b)) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn ext(part: DatePart, s: &str) -> i64 {
        match ts(s).extract(part) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn fmt_with(s: &str, p: &str) -> Result<String, ErrorCode> {
        ts(s).to_string_with(p).map_err(|e| e.code)
    }

    #[test]
    fn civil_round_trip() {
        for days in [-719_468i64, -1, 0, 1, 10_957, 11_016, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn parse_and_print_round_trip() {
        for s in [
            "2007T",
            "2007-02T",
            "2007-02-23",
            "2007-02-23T12:14Z",
            "2007-02-23T12:14:33Z",
            "2007-02-23T12:14:33.079-08:00",
            "2007-02-23T12:14:33.000000001+05:30",
            "2007-02-23T12:14-00:00",
            "0001-01-01",
            "9999-12-31T23:59:59.999999999Z",
        ] {
            assert_eq!(ts(s).to_string(), s);
        }
        assert_eq!(ts("2007-02-23T").to_string(), "2007-02-23");
        assert_eq!(
            ts("2007-02-23T20:14:33.079+00:00").to_string(),
            "2007-02-23T20:14:33.079Z"
        );
        // AWS data types page: CAST('2007-04-05T14:30Z' AS TIMESTAMP) prints as written.
        assert_eq!(ts("2007-04-05T14:30Z").to_string(), "2007-04-05T14:30Z");
        let t = ts("2007-02-23T12:14:33.079-08:00");
        assert_eq!(t.offset_minutes, Some(-480));
        assert_eq!(t.nanos, 79_000_000);
        assert_eq!(t.precision, Precision::Fraction(3));
        assert_eq!(ts("2007-02-23T12:14-00:00").offset_minutes, None);
    }

    #[test]
    fn parse_rejects() {
        for s in [
            "",
            "2007",
            "2007-02",
            "2007-02-23T12:14",
            "2007-02-23T12:14:33",
            "2007-02-30",
            "2007-02-29",
            "2007-13-01",
            "2007-00T",
            "0000T",
            "2007-02-23T24:00Z",
            "2007-02-23T12:60Z",
            "2007-02-23T12:14:60Z",
            "2007-02-23T12:14:33.Z",
            "2007-02-23T12:14:33.0123456789Z",
            "2007-02-23T12:14+24:00",
            "2007-02-23T12:14+0800",
            "2007-02-23T12:14z",
            "2007t",
            " 2007T",
            "2007T ",
            "2007-02-23Z",
            // The AWS TO_STRING example `1969-07-20T20:18+08:00Z` is not Ion; it is rejected.
            "1969-07-20T20:18+08:00Z",
        ] {
            assert_eq!(Timestamp::parse_ion(s), None, "{s:?}");
        }
        assert!(Timestamp::parse_ion("2008-02-29").is_some());
        assert!(Timestamp::parse_ion("2000-02-29").is_some());
        assert_eq!(Timestamp::parse_ion("1900-02-29"), None);
    }

    #[test]
    fn instant_comparison_and_equality() {
        assert_eq!(
            ts("2007-02-23T12:14Z").cmp_instant(&ts("2007-02-23T04:14-08:00")),
            Ordering::Equal
        );
        assert_ne!(ts("2007-02-23T12:14Z"), ts("2007-02-23T04:14-08:00"));
        assert_eq!(
            ts("2007T").cmp_instant(&ts("2007-01-01T00:00Z")),
            Ordering::Equal
        );
        assert_eq!(
            ts("2007T").cmp_instant(&ts("2007-01-01T00:00:00.001Z")),
            Ordering::Less
        );
        assert_eq!(
            ts("1969-12-31T23:59:59.5Z").cmp_instant(&ts("1970T")),
            Ordering::Less
        );
    }

    #[test]
    fn to_timestamp_aws_examples() {
        // AWS Date functions page, TO_TIMESTAMP examples.
        let r = |s: &str| Timestamp::to_timestamp(s).map(|t| t.to_string()).ok();
        assert_eq!(r("2007T"), Some("2007T".into()));
        assert_eq!(
            r("2007-02-23T12:14:33.079-08:00"),
            Some("2007-02-23T12:14:33.079-08:00".into())
        );
        let e = Timestamp::to_timestamp("yesterday");
        assert_eq!(e.clone().map_err(|e| e.code), Err(ErrorCode::CastFailed));
        assert!(e.map_err(|e| e.message.contains("yesterday")).is_err());
    }

    #[test]
    fn date_add_aws_examples() {
        use DatePart::*;
        assert_eq!(add(Year, 5, "2010-01-01T"), "2015-01-01");
        assert_eq!(add(Month, 1, "2010T"), "2010-02T");
        assert_eq!(add(Month, 13, "2010T"), "2011-02T");
        assert_eq!(add(Day, -1, "2017-01-10T"), "2017-01-09");
        assert_eq!(add(Hour, 1, "2017T"), "2017-01-01T01:00-00:00");
        assert_eq!(add(Hour, 1, "2017-01-02T03:04Z"), "2017-01-02T04:04Z");
        assert_eq!(
            add(Minute, 1, "2017-01-02T03:04:05.006Z"),
            "2017-01-02T03:05:05.006Z"
        );
        assert_eq!(
            add(Second, 1, "2017-01-02T03:04:05.006Z"),
            "2017-01-02T03:04:06.006Z"
        );
    }

    #[test]
    fn date_add_more() {
        use DatePart::*;
        assert_eq!(add(Month, 1, "2011-01-31"), "2011-02-28");
        assert_eq!(add(Month, 1, "2012-01-31"), "2012-02-29");
        assert_eq!(add(Year, 1, "2012-02-29"), "2013-02-28");
        assert_eq!(add(Month, -1, "2010T"), "2009-12T");
        assert_eq!(add(Day, 1, "2010T"), "2010-01-02");
        assert_eq!(add(Second, 1, "2010-01-01"), "2010-01-01T00:00:01-00:00");
        assert_eq!(
            add(Hour, 1, "2017-01-02T23:30-08:00"),
            "2017-01-03T00:30-08:00"
        );
        assert_eq!(
            add(Month, 1, "2017-01-31T23:30-08:00"),
            "2017-02-28T23:30-08:00"
        );
        assert_eq!(add(Year, 1, "2017T"), "2018T");
        let code = |r: Result<Timestamp, SelectError>| r.map_err(|e| e.code).err();
        assert_eq!(
            code(ts("9999T").date_add(Year, 1)),
            Some(ErrorCode::IntegerOverflow)
        );
        assert_eq!(
            code(ts("2000T").date_add(Second, i64::MAX)),
            Some(ErrorCode::IntegerOverflow)
        );
        assert_eq!(
            code(ts("2000T").date_add(Month, i64::MIN)),
            Some(ErrorCode::IntegerOverflow)
        );
        assert_eq!(
            code(ts("2000T").date_add(TimezoneHour, 1)),
            Some(ErrorCode::IllegalSqlFunctionArgument)
        );
    }

    #[test]
    fn date_diff_aws_examples() {
        use DatePart::*;
        assert_eq!(diff(Year, "2010-01-01T", "2011-01-01T"), 1);
        // The page prints 4 for DATE_DIFF(year, `2010T`, `2010-05T`), which is the number of
        // *months*; whole years between January and May of one year are 0.
        assert_eq!(diff(Year, "2010T", "2010-05T"), 0);
        assert_eq!(diff(Month, "2010T", "2010-05T"), 4);
        assert_eq!(diff(Month, "2010T", "2011T"), 12);
        assert_eq!(diff(Month, "2011T", "2010T"), -12);
        // The page writes the operands without offsets (not valid Ion); with Z: 0, because
        // the instants are only two hours apart.
        assert_eq!(diff(Day, "2010-01-01T23:00Z", "2010-01-02T01:00Z"), 0);
    }

    #[test]
    fn date_diff_more() {
        use DatePart::*;
        assert_eq!(diff(Month, "2011-01-31", "2011-02-28"), 0);
        assert_eq!(diff(Month, "2011-01-31", "2011-03-01"), 1);
        assert_eq!(diff(Month, "2011-03-01", "2011-01-31"), -1);
        assert_eq!(diff(Year, "2010-06-15", "2011-06-14"), 0);
        assert_eq!(diff(Year, "2010-06-15", "2011-06-15"), 1);
        assert_eq!(diff(Year, "2011-06-15", "2010-06-16"), 0);
        assert_eq!(diff(Day, "2010-01-01T00:00Z", "2010-01-03T00:00Z"), 2);
        assert_eq!(diff(Day, "2010-01-03T00:00Z", "2010-01-01T00:00:01Z"), -1);
        assert_eq!(diff(Hour, "2010-01-01T00:00Z", "2010-01-01T00:00-08:00"), 8);
        assert_eq!(
            diff(Minute, "2010-01-01T00:00:30Z", "2010-01-01T00:01:29Z"),
            0
        );
        assert_eq!(
            diff(Second, "2010-01-01T00:00:00.9Z", "2010-01-01T00:00:01.1Z"),
            0
        );
        assert_eq!(diff(Second, "0001T", "9999T"), 315_506_361_600);
    }

    #[test]
    fn extract_aws_examples() {
        use DatePart::*;
        assert_eq!(ext(Year, "2010-01-01T"), 2010);
        assert_eq!(ext(Month, "2010T"), 1);
        assert_eq!(ext(Month, "2010-10T"), 10);
        assert_eq!(ext(Hour, "2017-01-02T03:04:05+07:08"), 3);
        assert_eq!(ext(Minute, "2017-01-02T03:04:05+07:08"), 4);
        assert_eq!(ext(TimezoneHour, "2017-01-02T03:04:05+07:08"), 7);
        assert_eq!(ext(TimezoneMinute, "2017-01-02T03:04:05+07:08"), 8);
        assert_eq!(ext(TimezoneHour, "2017-01-02T03:04:05-01:30"), -1);
        assert_eq!(ext(TimezoneMinute, "2017-01-02T03:04:05-01:30"), -30);
        assert_eq!(ext(Second, "2017-01-02T03:04:05.9Z"), 5);
        assert_eq!(ext(Day, "2017-01-02T23:04:05-08:00"), 2);
        assert_eq!(ext(TimezoneHour, "2017-01-02"), 0);
    }

    #[test]
    fn to_string_aws_examples() {
        let s = "1969-07-20T20:18Z";
        assert_eq!(fmt_with(s, "MMMM d, y"), Ok("July 20, 1969".into()));
        assert_eq!(fmt_with(s, "MMM d, yyyy"), Ok("Jul 20, 1969".into()));
        assert_eq!(fmt_with(s, "M-d-yy"), Ok("7-20-69".into()));
        assert_eq!(fmt_with(s, "MM-d-y"), Ok("07-20-1969".into()));
        assert_eq!(
            fmt_with(s, "MMMM d, y h:m a"),
            Ok("July 20, 1969 8:18 PM".into())
        );
        // SQL 'y-MM-dd''T''H:m:ssX' is the pattern y-MM-dd'T'H:m:ssX.
        assert_eq!(
            fmt_with(s, "y-MM-dd'T'H:m:ssX"),
            Ok("1969-07-20T20:18:00Z".into())
        );
        let p8 = "1969-07-20T20:18+08:00";
        assert_eq!(
            fmt_with(p8, "y-MM-dd'T'H:m:ssX"),
            Ok("1969-07-20T20:18:00+0800".into())
        );
        assert_eq!(
            fmt_with(p8, "y-MM-dd'T'H:m:ssXXXX"),
            Ok("1969-07-20T20:18:00+0800".into())
        );
        assert_eq!(
            fmt_with(p8, "y-MM-dd'T'H:m:ssXXXXX"),
            Ok("1969-07-20T20:18:00+08:00".into())
        );
    }

    #[test]
    fn to_string_fields() {
        let t = "2007-02-03T04:05:06.789-07:08";
        assert_eq!(fmt_with(t, "yy yyy yyyy"), Ok("07 2007 2007".into()));
        assert_eq!(
            fmt_with("0042T", "y yy yyy yyyy"),
            Ok("42 42 042 0042".into())
        );
        assert_eq!(
            fmt_with(t, "M MM MMM MMMM MMMMM"),
            Ok("2 02 Feb February F".into())
        );
        assert_eq!(fmt_with(t, "d dd"), Ok("3 03".into()));
        assert_eq!(fmt_with(t, "h hh H HH a"), Ok("4 04 4 04 AM".into()));
        assert_eq!(
            fmt_with("2007-02-03T00:05Z", "h hh H HH a"),
            Ok("12 12 0 00 AM".into())
        );
        assert_eq!(fmt_with("2007-02-03T12:05Z", "h a"), Ok("12 PM".into()));
        assert_eq!(fmt_with(t, "m mm s ss"), Ok("5 05 6 06".into()));
        assert_eq!(
            fmt_with(t, "S SS SSS SSSS SSSSSSSSS"),
            Ok("7 78 789 7890 789000000".into())
        );
        assert_eq!(fmt_with(t, "n"), Ok("789000000".into()));
        assert_eq!(
            fmt_with(t, "X XX XXX XXXX XXXXX"),
            Ok("-0708 -0708 -07:08 -0708 -07:08".into())
        );
        assert_eq!(
            fmt_with(t, "x xx xxx xxxx xxxxx"),
            Ok("-0708 -0708 -07:08 -0708 -07:08".into())
        );
        let p7 = "2007-02-03T04:05+07:00";
        assert_eq!(fmt_with(p7, "X XX XXX"), Ok("+0700 +0700 +07:00".into()));
        assert_eq!(fmt_with(p7, "x xx xxx"), Ok("+07 +0700 +07:00".into()));
        let z = "2007-02-03T04:05Z";
        assert_eq!(fmt_with(z, "X XX XXX XXXX XXXXX"), Ok("Z Z Z Z Z".into()));
        assert_eq!(
            fmt_with(z, "x xx xxx xxxx xxxxx"),
            Ok("+00 +0000 +00:00 +0000 +00:00".into())
        );
        assert_eq!(
            fmt_with("2007-02-03", "yyyy-MM-dd HH:mm X"),
            Ok("2007-02-03 00:00 Z".into())
        );
        assert_eq!(
            fmt_with(t, "'at' H 'o''clock' ''"),
            Ok("at 4 o'clock '".into())
        );
        assert_eq!(fmt_with(t, ""), Ok("".into()));
    }

    #[test]
    fn to_string_errors() {
        let t = "2007-02-03T04:05Z";
        for p in ["yyyy_MM", "q", "EEE", "yyyy T", "Y", "%Y"] {
            assert_eq!(
                fmt_with(t, p),
                Err(ErrorCode::EvaluatorInvalidTimestampFormatPatternToken),
                "{p}"
            );
        }
        for p in [
            "yyyyy",
            "MMMMMM",
            "ddd",
            "aa",
            "hhh",
            "HHH",
            "mmm",
            "sss",
            "nn",
            "SSSSSSSSSS",
            "XXXXXX",
            "'open",
        ] {
            assert_eq!(
                fmt_with(t, p),
                Err(ErrorCode::EvaluatorInvalidTimestampFormatPattern),
                "{p}"
            );
        }
    }

    #[test]
    fn utc_now_is_sane() {
        let t = Timestamp::utc_now();
        assert_eq!(t.offset_minutes, Some(0));
        assert_eq!(t.precision, Precision::Fraction(3));
        assert!(t.cmp_instant(&ts("2020T")) == Ordering::Greater);
        assert_eq!(t.nanos % 1_000_000, 0);
        assert!(Timestamp::parse_ion(&t.to_string()).is_some());
    }

    #[test]
    fn from_date_ymd_validates() {
        assert_eq!(
            Timestamp::from_date_ymd(2007, 2, 23).map(|t| t.to_string()),
            Some("2007-02-23".into())
        );
        assert_eq!(Timestamp::from_date_ymd(2007, 2, 29), None);
        assert_eq!(Timestamp::from_date_ymd(10_000, 1, 1), None);
    }
}
