//! Exact base-10 numbers: DECIMAL/NUMERIC literals, casts and arithmetic.

/// `mantissa × 10^-scale`, up to 38 significant digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    pub mantissa: i128,
    pub scale: u8,
}
