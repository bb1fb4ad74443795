//! Where top-level JSON values end, without parsing them: how JSON DOCUMENT input is cut
//! into chunks that workers parse independently.
//!
//! A byte-level state machine tracks only what decides a boundary — inside a string (and
//! after a backslash there), the nesting depth, inside a top-level scalar. A top-level
//! number or literal counts as ended only once a byte that cannot continue it follows
//! (`12` at the end of a buffer may be the start of `123`). Malformed input never stalls the
//! cut: a stray `}` at depth 0 ends a "value" there, and the parser then reports the error.

/// The offset just past the last complete top-level value in `bytes`, if any.
pub fn last_value_end(bytes: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut in_scalar = false;
    let mut last = None;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                if depth == 0 {
                    last = Some(i + 1);
                }
            }
            continue;
        }
        if in_scalar {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-') {
                continue;
            }
            in_scalar = false;
            last = Some(i);
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    last = Some(i + 1);
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' => {}
            _ if depth == 0 => in_scalar = true,
            _ => {}
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_last_complete_value() {
        assert_eq!(last_value_end(b"{\"a\":1} {\"b\""), Some(7));
        assert_eq!(last_value_end(b"[1,[2]]\n[3"), Some(7));
        assert_eq!(last_value_end(b"{\"s\":\"}\\\"{\"}\n"), Some(12));
        assert_eq!(last_value_end(b"{\"a\":"), None);
        // A scalar is complete only once something that cannot extend it follows.
        assert_eq!(last_value_end(b"1 23"), Some(1));
        assert_eq!(last_value_end(b"true\n"), Some(4));
        assert_eq!(last_value_end(b"\"x\""), Some(3));
        assert_eq!(last_value_end(b"  "), None);
    }

    #[test]
    fn every_cut_is_a_boundary_of_valid_input() {
        let text = b"{\"a\":[1,2,{\"b\":\"x]}\"}]}\n  7 \"s\" [true,null]\n{\"c\":{}} -1.5e3 ";
        let mut values = Vec::new();
        let mut p = crate::json::Parser::new(text);
        let mut ends = Vec::new();
        while !p.at_end() {
            values.push(p.value().unwrap());
            ends.push(p.position());
        }
        for cut in 0..=text.len() {
            if let Some(end) = last_value_end(&text[..cut]) {
                assert!(ends.contains(&end), "cut {cut}: {end} is not a value end");
            }
        }
        assert_eq!(values.len(), 6);
    }
}
