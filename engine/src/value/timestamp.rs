//! Ion timestamps: literals, casts, TO_STRING / TO_TIMESTAMP, DATE_ADD, DATE_DIFF, EXTRACT.

/// How much of a timestamp was written; it decides how the value prints back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
