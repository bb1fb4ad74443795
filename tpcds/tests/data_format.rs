//! The generated files must be in dsdgen's format, which the engine benchmarks assume.

use std::fs;
use std::path::PathBuf;

use sift_tpcds::data::{self, Slice};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-bench-data-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Every row: `\n`-terminated, one `|` per column (the last one trailing), valid UTF-8.
fn check_format(bytes: &[u8], columns: usize) -> usize {
    assert!(bytes.ends_with(b"\n"));
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    let mut rows = 0;
    for line in text.split_terminator('\n') {
        assert!(line.ends_with('|'), "no trailing |: {line}");
        assert!(!line.ends_with('\r'));
        assert_eq!(line.matches('|').count(), columns, "{line}");
        rows += 1;
    }
    rows
}

#[test]
fn store_sales_small_scale_is_dsdgen_format() {
    let dir = temp_dir("store_sales");
    let scale = 0.001;
    let path = data::generate_table("store_sales", scale, &dir).unwrap();
    assert_eq!(path, dir.join("store_sales_sf0.001.dat"));
    let bytes = fs::read(&path).unwrap();
    let rows = check_format(&bytes, 23);
    assert!(rows > 1000, "{rows} rows");
    // No header: the first field is a date surrogate key or empty (NULL).
    let first = bytes.split(|&b| b == b'|').next().unwrap();
    assert!(first.iter().all(u8::is_ascii_digit));

    // A second call finds the complete file and leaves it alone.
    let again = data::generate_table_slice("store_sales", scale, Slice::WHOLE, &dir).unwrap();
    assert_eq!(again.rows, None);
    assert_eq!(again.bytes, bytes.len() as u64);
    assert!(fs::read_dir(&dir).unwrap().count() == 1, "temp file left");

    // Any split into source-row ranges concatenates back to the same bytes.
    let tickets = data::source_row_count("store_sales", scale).unwrap();
    let mut split = Vec::new();
    data::write_rows("store_sales", scale, 1..=tickets / 3, &mut split).unwrap();
    data::write_rows("store_sales", scale, tickets / 3 + 1..=tickets, &mut split).unwrap();
    assert!(split == bytes);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_table_small_scale_is_dsdgen_format() {
    for table in data::TABLES {
        let columns = data::column_count(table).unwrap();
        // Cap the big ones to a few source rows so the test stays fast.
        let rows = data::source_row_count(table, 0.01).unwrap().min(50);
        let mut out = Vec::new();
        let written = data::write_rows(table, 0.01, 1..=rows, &mut out).unwrap();
        assert!(written > 0, "{table}");
        assert_eq!(check_format(&out, columns), written as usize, "{table}");
    }
}
