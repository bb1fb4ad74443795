//! The 99 TPC-DS queries (SQLBench-DS, see `queries/README.md`) and the named sets of them.

use crate::error::{Error, Result};

macro_rules! queries {
    ($($n:literal),*) => {
        /// `(number, SQL text)` of the 99 queries, in order.
        pub const QUERIES: [(u32, &str); 99] = [
            $(($n, include_str!(concat!("../queries/q", stringify!($n), ".sql")))),*
        ];
    };
}

queries!(
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50,
    51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74,
    75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98,
    99
);

/// The 72 queries of the Ceph/IBM S3 Select benchmark (Trino 405 on Ceph RGW).
pub const CEPH72: [u32; 72] = [
    1, 2, 5, 7, 8, 9, 10, 12, 13, 15, 18, 20, 21, 22, 24, 26, 27, 28, 30, 31, 32, 33, 34, 35, 36,
    37, 38, 39, 40, 41, 44, 45, 46, 48, 49, 50, 51, 56, 58, 59, 60, 61, 62, 64, 65, 66, 67, 68, 69,
    70, 71, 73, 76, 77, 79, 80, 81, 83, 84, 85, 86, 87, 88, 90, 91, 92, 93, 94, 96, 97, 98, 99,
];

/// The SQL text of query `n`.
pub fn query(n: u32) -> Option<&'static str> {
    QUERIES.iter().find(|(m, _)| *m == n).map(|(_, sql)| *sql)
}

/// Parses a query set: `all`, `ceph72`, or a list such as `3,7,10-12`.
pub fn parse_set(spec: &str) -> Result<Vec<u32>> {
    match spec.trim() {
        "all" => return Ok((1..=99).collect()),
        "ceph72" => return Ok(CEPH72.to_vec()),
        _ => {}
    }
    let bad = |item: &str| {
        Error::Invalid(format!(
            "bad query list item {item:?}: expected all, ceph72, or numbers 1-99 like 3,7,10-12"
        ))
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let item = item.trim_start_matches(['q', 'Q']);
        let (lo, hi) = match item.split_once('-') {
            Some((lo, hi)) => (lo, hi.trim_start_matches(['q', 'Q'])),
            None => (item, item),
        };
        let lo: u32 = lo.trim().parse().map_err(|_| bad(item))?;
        let hi: u32 = hi.trim().parse().map_err(|_| bad(item))?;
        if !(1..=99).contains(&lo) || !(lo..=99).contains(&hi) {
            return Err(bad(item));
        }
        out.extend(lo..=hi);
    }
    if out.is_empty() {
        return Err(bad(spec));
    }
    out.dedup();
    Ok(out)
}

/// Splits a query file into its statements: `;` ends a statement unless it is inside a
/// string literal or a `--` comment. Comments are dropped, empty statements skipped.
pub fn statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = sql.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            current.push(c);
            if c == '\'' {
                in_string = false;
            }
            continue;
        }
        match c {
            '\'' => {
                in_string = true;
                current.push(c);
            }
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        current.push('\n');
                        break;
                    }
                }
            }
            ';' => {
                let statement = current.trim();
                if !statement.is_empty() {
                    out.push(statement.to_string());
                }
                current.clear();
            }
            c => current.push(c),
        }
    }
    let statement = current.trim();
    if !statement.is_empty() {
        out.push(statement.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_file_is_there_with_its_header() {
        for (n, sql) in QUERIES {
            assert!(
                sql.starts_with(&format!("-- SQLBench-DS query {n} ")),
                "q{n} lost its header"
            );
        }
    }

    #[test]
    fn there_are_103_statements() {
        let total: usize = QUERIES.iter().map(|(_, sql)| statements(sql).len()).sum();
        assert_eq!(total, 103);
        for n in [14, 23, 24, 39] {
            assert_eq!(statements(query(n).unwrap()).len(), 2, "q{n}");
        }
    }

    #[test]
    fn sets() {
        assert_eq!(parse_set("all").unwrap().len(), 99);
        assert_eq!(parse_set("ceph72").unwrap().len(), 72);
        assert_eq!(parse_set("3, q7,10-12").unwrap(), vec![3, 7, 10, 11, 12]);
        assert!(parse_set("0").is_err());
        assert!(parse_set("12-10").is_err());
        assert!(parse_set("x").is_err());
        let mut sorted = CEPH72.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 72);
    }

    #[test]
    fn statement_splitting_respects_strings_and_comments() {
        let sql = "-- a; comment\nselect ';' as x; -- trailing;\nselect 2;\n\n";
        assert_eq!(statements(sql), vec!["select ';' as x", "select 2"]);
    }
}
