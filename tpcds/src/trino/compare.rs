//! Comparing another engine's rows with Sift's, as multisets of `|`-separated lines.
//!
//! Two engines agree on the values but not always on their printed scale: Trino's
//! `avg(decimal(7,2))` is a `decimal(7,2)` (`12.35`) where DataFusion's is a
//! `decimal(11,6)` (`12.345679`), and their decimal divisions pick different scales. So a
//! column whose values are all numbers on both sides is compared at the smaller of the two
//! sides' scales (each side's scale being the most decimals any of its values shows), with
//! every value rounded half-up to it on its decimal text, never through binary floating
//! point. Everything else is compared as text. The comparison says which columns it had to
//! round, so an equality that needed rounding is visible as such. Rounded values may still
//! differ by one unit of the coarser scale where an engine rounded an intermediate result
//! (Trino's `decimal(7,2)` quotient of two sums against DataFusion's at a finer scale):
//! rows that pair up in sorted order and differ only so are equal, and said to be.

use std::collections::BTreeMap;

/// How two row sets compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The same lines.
    Equal,
    /// The same lines once the numeric columns listed (0-based) were rounded to the given
    /// decimals.
    EqualRounded(Vec<(usize, usize)>),
    /// As [`Outcome::EqualRounded`], but some values differ by one unit of that scale.
    EqualWithinOneUnit(Vec<(usize, usize)>),
    /// Different: what differs, for a person to read.
    Differ(String),
}

impl Outcome {
    pub fn is_equal(&self) -> bool {
        !matches!(self, Outcome::Differ(_))
    }
}

/// Compares `ours` (the reference) with `theirs`.
pub fn compare(ours: &[String], theirs: &[String]) -> Outcome {
    if sorted(ours.iter().cloned()) == sorted(theirs.iter().cloned()) {
        return Outcome::Equal;
    }
    if ours.len() != theirs.len() {
        return Outcome::Differ(
            format!("{} rows against {}", theirs.len(), ours.len()) + &examples(ours, theirs),
        );
    }
    let split = |lines: &[String]| -> Vec<Vec<String>> {
        lines
            .iter()
            .map(|l| l.split('|').map(str::to_string).collect())
            .collect()
    };
    let (a, b) = (split(ours), split(theirs));
    let width = a.first().or(b.first()).map_or(0, Vec::len);
    if a.iter().chain(&b).any(|row| row.len() != width) {
        return Outcome::Differ(format!(
            "rows of different widths{}",
            examples(ours, theirs)
        ));
    }
    let mut rounded = Vec::new();
    for column in 0..width {
        let (Some(scale_a), Some(scale_b)) = (numeric_scale(&a, column), numeric_scale(&b, column))
        else {
            continue;
        };
        if scale_a != scale_b {
            rounded.push((column, scale_a.min(scale_b)));
        }
    }
    let normalise = |rows: &[Vec<String>]| -> Vec<String> {
        sorted(rows.iter().map(|row| {
            let mut row = row.clone();
            for &(column, decimals) in &rounded {
                if let Some(value) = round_half_up(&row[column], decimals) {
                    row[column] = value;
                }
            }
            row.join("|")
        }))
    };
    let (na, nb) = (normalise(&a), normalise(&b));
    if rounded.is_empty() {
        return Outcome::Differ(examples(&na, &nb));
    }
    if na == nb {
        return Outcome::EqualRounded(rounded);
    }
    let within_one_unit = na.iter().zip(&nb).all(|(x, y)| {
        let (x, y): (Vec<&str>, Vec<&str>) = (x.split('|').collect(), y.split('|').collect());
        (0..width).all(|c| {
            x[c] == y[c]
                || rounded
                    .iter()
                    .find(|(column, _)| *column == c)
                    .is_some_and(|&(_, decimals)| one_unit_apart(x[c], y[c], decimals))
        })
    });
    if within_one_unit {
        return Outcome::EqualWithinOneUnit(rounded);
    }
    Outcome::Differ(examples(&na, &nb))
}

/// Whether two numbers with `decimals` decimals differ by exactly one unit of the last
/// place, on their digits.
fn one_unit_apart(a: &str, b: &str, decimals: usize) -> bool {
    let units = |s: &str| -> Option<i128> {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        (frac.len() == decimals).then_some(())?;
        format!("{int}{frac}").parse().ok()
    };
    matches!((units(a), units(b)), (Some(x), Some(y)) if (x - y).abs() == 1)
}

fn sorted(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut lines: Vec<String> = lines.collect();
    lines.sort();
    lines
}

/// Up to three lines only one side has, each way.
fn examples(ours: &[String], theirs: &[String]) -> String {
    fn count(lines: &[String]) -> BTreeMap<&str, i64> {
        let mut counts = BTreeMap::new();
        for line in lines {
            *counts.entry(line.as_str()).or_default() += 1;
        }
        counts
    }
    let (a, b) = (count(ours), count(theirs));
    let only = |x: &BTreeMap<&str, i64>, y: &BTreeMap<&str, i64>| -> Vec<String> {
        x.iter()
            .filter(|(line, n)| y.get(*line).copied().unwrap_or(0) < **n)
            .map(|(line, _)| format!("{line:?}"))
            .take(3)
            .collect()
    };
    format!(
        "; only in Sift's: [{}]; only in the other's: [{}]",
        only(&a, &b).join(", "),
        only(&b, &a).join(", ")
    )
}

/// The most decimals a column's values show, when every non-empty value is a plain decimal
/// number (`-12.30`, `7`); `None` for a text column or one without values.
fn numeric_scale(rows: &[Vec<String>], column: usize) -> Option<usize> {
    let mut scale = None;
    for row in rows {
        let value = &row[column];
        if value.is_empty() {
            continue;
        }
        let digits = value.strip_prefix('-').unwrap_or(value);
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        let numeric = !int.is_empty()
            && int.bytes().all(|b| b.is_ascii_digit())
            && frac.bytes().all(|b| b.is_ascii_digit());
        if !numeric {
            return None;
        }
        scale = Some(scale.unwrap_or(0).max(frac.len()));
    }
    scale
}

/// `value` rounded half-up (away from zero) to `decimals`, on its text; `None` if it is not
/// a plain decimal number. `-0.00` becomes `0.00`.
pub fn round_half_up(value: &str, decimals: usize) -> Option<String> {
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // All the kept digits, as one number's digits; the first dropped one decides.
    let mut kept: Vec<u8> = int.bytes().collect();
    kept.extend(frac.bytes().take(decimals));
    kept.resize(int.len() + decimals, b'0');
    if frac.as_bytes().get(decimals).is_some_and(|&d| d >= b'5') {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let int_len = kept.len() - decimals;
    let mut out = String::new();
    let zero = kept.iter().all(|&d| d == b'0');
    if negative && !zero {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&kept[..int_len]).ok()?);
    if decimals > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&kept[int_len..]).ok()?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn rounding_is_half_up_on_the_text() {
        assert_eq!(round_half_up("12.345", 2).as_deref(), Some("12.35"));
        assert_eq!(round_half_up("12.344999", 2).as_deref(), Some("12.34"));
        assert_eq!(round_half_up("-0.004", 2).as_deref(), Some("0.00"));
        assert_eq!(round_half_up("-2.5", 0).as_deref(), Some("-3"));
        assert_eq!(round_half_up("99.995", 2).as_deref(), Some("100.00"));
        assert_eq!(round_half_up("7", 2).as_deref(), Some("7.00"));
        assert_eq!(round_half_up("AAAA", 2), None);
        assert_eq!(round_half_up("1e5", 2), None);
    }

    #[test]
    fn order_does_not_matter() {
        assert_eq!(
            compare(&lines(&["a|1", "b|2"]), &lines(&["b|2", "a|1"])),
            Outcome::Equal
        );
    }

    #[test]
    fn scales_meet_at_the_coarser_one() {
        let sift = lines(&["Books|12.345679|3", "Music||4"]);
        let trino = lines(&["Music||4", "Books|12.35|3"]);
        assert_eq!(compare(&sift, &trino), Outcome::EqualRounded(vec![(1, 2)]));
        let wrong = lines(&["Music||4", "Books|12.33|3"]);
        assert!(!compare(&sift, &wrong).is_equal());
    }

    #[test]
    fn an_intermediate_rounding_may_cost_one_unit() {
        let sift = lines(&["w1|2.495001|7"]);
        let trino = lines(&["w1|2.49|7"]);
        assert_eq!(
            compare(&sift, &trino),
            Outcome::EqualWithinOneUnit(vec![(1, 2)])
        );
        let two_units = lines(&["w1|2.48|7"]);
        assert!(!compare(&sift, &two_units).is_equal());
        assert!(one_unit_apart("-0.01", "0.00", 2));
        assert!(!one_unit_apart("1.0", "1.01", 2));
    }

    #[test]
    fn text_is_never_rounded_and_row_counts_must_match() {
        assert!(!compare(&lines(&["AAAB|1"]), &lines(&["AAAC|1"])).is_equal());
        let outcome = compare(&lines(&["a|1", "a|1"]), &lines(&["a|1"]));
        assert!(matches!(&outcome, Outcome::Differ(d) if d.starts_with("1 rows against 2")));
    }
}
