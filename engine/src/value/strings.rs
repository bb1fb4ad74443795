//! String functions: SUBSTRING, TRIM, CHAR_LENGTH, LOWER, UPPER.
//!
//! Positions and lengths count characters (Unicode scalar values), not bytes, as AWS's
//! "number of characters" wording requires; results borrow from the input where they can
//! so that projecting a substring of a CSV field costs no allocation.
//! Reference: <https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-select-sql-reference-string.html>

use crate::err;
use crate::error::SelectError;
use crate::sql::ast::TrimSpec;

/// Byte offset of the character with 0-based index `n`, or `s.len()` past the end.
fn byte_at(s: &str, n: u64) -> usize {
    if n == 0 {
        return 0;
    }
    if s.is_ascii() {
        return (n.min(s.len() as u64)) as usize;
    }
    match s.char_indices().nth(n.min(usize::MAX as u64) as usize) {
        Some((i, _)) => i,
        None => s.len(),
    }
}

/// `SUBSTRING(s FROM start [FOR len])` with AWS's SQL-92 semantics: positions are 1-based and
/// the window `[start, start + len)` is clipped to the string, so a start below 1 eats into
/// the length (`SUBSTRING('123456789', -1, 3)` is `'1'`). A negative length is
/// `EvaluatorInvalidArguments`: SQL-92 calls it a "substring error" and there is no
/// sensible result.
pub fn substring(s: &str, start: i64, len: Option<i64>) -> Result<&str, SelectError> {
    let end: Option<i128> = match len {
        Some(l) if l < 0 => {
            return Err(err!(
                EvaluatorInvalidArguments,
                "SUBSTRING length must not be negative, got {l}"
            ))
        }
        Some(l) => Some(start as i128 + l as i128),
        None => None,
    };
    // 1-based inclusive start, exclusive end → 0-based char indexes clipped at 0.
    let from = (start as i128 - 1).max(0) as u64;
    let from_b = byte_at(s, from);
    let to_b = match end {
        None => s.len(),
        Some(e) => {
            let to = (e - 1).max(0);
            if to as u64 <= from {
                return Ok("");
            }
            // Count from `from_b` to avoid rescanning the prefix.
            from_b + byte_at(&s[from_b..], to as u64 - from)
        }
    };
    Ok(&s[from_b..to_b.max(from_b)])
}

/// `TRIM([LEADING|TRAILING|BOTH [chars] FROM] s)`. The default set is the space character
/// only — AWS's TRIM example keeps the tabs in `'      \tfoobar\t         '`; a given set
/// removes any of its characters (`TRIM(BOTH '12' FROM '1112211foobar22211122')` is
/// `'foobar'`).
pub fn trim<'a>(s: &'a str, spec: TrimSpec, chars: Option<&str>) -> &'a str {
    let set = chars.unwrap_or(" ");
    let in_set = |c: char| set.contains(c);
    match spec {
        TrimSpec::Leading => s.trim_start_matches(in_set),
        TrimSpec::Trailing => s.trim_end_matches(in_set),
        TrimSpec::Both => s.trim_start_matches(in_set).trim_end_matches(in_set),
    }
}

/// `CHAR_LENGTH(s)` / `CHARACTER_LENGTH(s)`: characters, not bytes (`'日本'` is 2).
pub fn char_length(s: &str) -> i64 {
    if s.is_ascii() {
        s.len() as i64
    } else {
        s.chars().count() as i64
    }
}

/// `LOWER(s)` with full Unicode case mapping; ASCII-only input takes the cheap path.
pub fn lower(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_lowercase()
    } else {
        s.to_lowercase()
    }
}

/// `UPPER(s)` with full Unicode case mapping (`'ß'` becomes `'SS'`).
pub fn upper(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_uppercase()
    } else {
        s.to_uppercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn sub(s: &str, start: i64, len: Option<i64>) -> String {
        match substring(s, start, len) {
            Ok(v) => v.to_string(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn substring_aws_examples() {
        assert_eq!(sub("123456789", 0, None), "123456789");
        assert_eq!(sub("123456789", 1, None), "123456789");
        assert_eq!(sub("123456789", 2, None), "23456789");
        assert_eq!(sub("123456789", -4, None), "123456789");
        assert_eq!(sub("123456789", 0, Some(999)), "123456789");
        assert_eq!(sub("123456789", 1, Some(5)), "12345");
    }

    #[test]
    fn substring_edges() {
        // AWS note: start < 1 with a length keeps `start + length - 1` characters.
        assert_eq!(sub("123456789", -1, Some(3)), "1");
        assert_eq!(sub("123456789", 0, Some(3)), "12");
        assert_eq!(sub("123456789", -5, Some(3)), "");
        assert_eq!(sub("123456789", 9, Some(5)), "9");
        assert_eq!(sub("123456789", 10, None), "");
        assert_eq!(sub("123456789", 100, Some(2)), "");
        assert_eq!(sub("123456789", 3, Some(0)), "");
        assert_eq!(sub("日本語テキスト", 2, Some(3)), "本語テ");
        assert_eq!(sub("日本語", 3, None), "語");
        assert_eq!(sub("", 1, Some(1)), "");
        assert_eq!(sub("abc", i64::MIN, Some(i64::MAX)), "");
        assert_eq!(sub("abc", i64::MAX, Some(i64::MAX)), "");
        assert_eq!(sub("abc", 2, Some(i64::MAX)), "bc");
        assert_eq!(
            substring("abc", 1, Some(-1)).map_err(|e| e.code),
            Err(ErrorCode::EvaluatorInvalidArguments)
        );
    }

    #[test]
    fn trim_aws_examples() {
        let s = "       foobar         ";
        assert_eq!(trim(s, TrimSpec::Both, None), "foobar");
        assert_eq!(
            trim("      \tfoobar\t         ", TrimSpec::Both, None),
            "\tfoobar\t"
        );
        assert_eq!(trim(s, TrimSpec::Leading, None), "foobar         ");
        assert_eq!(trim(s, TrimSpec::Trailing, None), "       foobar");
        assert_eq!(
            trim("1112211foobar22211122", TrimSpec::Both, Some("12")),
            "foobar"
        );
        assert_eq!(trim("xxaxx", TrimSpec::Both, Some("")), "xxaxx");
        assert_eq!(trim("ééaé", TrimSpec::Leading, Some("é")), "aé");
    }

    #[test]
    fn length_and_case_aws_examples() {
        assert_eq!(char_length(""), 0);
        assert_eq!(char_length("abcdefg"), 7);
        assert_eq!(char_length("日本"), 2);
        assert_eq!(lower("AbCdEfG!@#$"), "abcdefg!@#$");
        assert_eq!(upper("AbCdEfG!@#$"), "ABCDEFG!@#$");
        assert_eq!(upper("straße"), "STRASSE");
        assert_eq!(lower("ÀÉÎ"), "àéî");
    }
}
