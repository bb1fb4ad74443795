//! Parquet input beyond what the conformance cases show: which bytes a select reads
//! (projection, row-group statistics, filters over whole columns), the row-group size
//! limit, and damaged files.

use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use proptest::prelude::*;
use sift_engine::{
    ErrorCode, InputFormat, InputSerialization, Select, SelectRequest, SliceSource, Stats,
};

/// Row `i`'s `pad`: 200 hex digits that no codec shrinks much.
fn pad(i: i64) -> String {
    let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..25)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{:08x}", x as u32)
        })
        .collect()
}

/// `batch` as a Snappy-compressed Parquet file with chunk statistics, in row groups of
/// `group` rows.
fn parquet_file(batch: &RecordBatch, group: usize) -> Vec<u8> {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    out
}

/// `rows` rows of (`id` = 0.., `pad`), in row groups of `group` rows, sorted by id so that
/// each row group's id range is narrow.
fn wide_file(rows: i64, group: usize) -> Vec<u8> {
    let ids = Int64Array::from_iter_values(0..rows);
    let pads = StringArray::from_iter_values((0..rows).map(pad));
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("pad", Arc::new(pads) as ArrayRef),
    ])
    .unwrap();
    parquet_file(&batch, group)
}

/// `rows` rows in row groups of `group` rows: `k` = 2i (even, so that `k = 2j + 1` lies
/// inside a row group's statistics and matches no row), `q` = i % 7 and NULL every fifth
/// row, `price` cents as DECIMAL(7,2) and NULL every seventh, `name` (`n0`…`n12`, NULL
/// every eleventh), and the wide `pad`.
fn mixed_file(rows: i64, group: usize) -> Vec<u8> {
    let ks = Int64Array::from_iter_values((0..rows).map(|i| 2 * i));
    let qs: Int32Array = (0..rows)
        .map(|i| (i % 5 != 0).then_some((i % 7) as i32))
        .collect();
    let prices = (0..rows)
        .map(|i| (i % 7 != 3).then_some(i128::from((i * 37) % 3000)))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(7, 2)
        .unwrap();
    let names: StringArray = (0..rows)
        .map(|i| (i % 11 != 0).then(|| format!("n{}", i % 13)))
        .collect();
    let pads = StringArray::from_iter_values((0..rows).map(pad));
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(ks) as ArrayRef),
        ("q", Arc::new(qs) as ArrayRef),
        ("price", Arc::new(prices) as ArrayRef),
        ("name", Arc::new(names) as ArrayRef),
        ("pad", Arc::new(pads) as ArrayRef),
    ])
    .unwrap();
    parquet_file(&batch, group)
}

fn select(sql: &str) -> Select {
    Select::new(SelectRequest {
        sql: sql.into(),
        input: InputSerialization {
            format: InputFormat::Parquet,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap()
}

fn run(s: &Select, file: &[u8]) -> sift_engine::Result<(String, Stats)> {
    let mut out = Vec::new();
    let stats = s.run(&SliceSource(file), &mut out)?;
    Ok((String::from_utf8(out).unwrap(), stats))
}

#[test]
fn projection_reads_only_the_named_columns() {
    let file = wide_file(20_000, 5_000);
    let (all, all_stats) = run(&select("SELECT * FROM S3Object"), &file).unwrap();
    assert_eq!(all.lines().count(), 20_000);
    let (ids, id_stats) = run(&select("SELECT s.id FROM S3Object s"), &file).unwrap();
    assert_eq!(ids.lines().count(), 20_000);
    assert_eq!(ids.lines().nth(12_345), Some("12345"));
    // `pad` is almost all of the file; without it a select reads a small part.
    assert!(
        id_stats.bytes_scanned * 10 < all_stats.bytes_scanned,
        "id only: {id_stats:?}; all: {all_stats:?}"
    );
    assert!(all_stats.bytes_scanned <= file.len() as u64);
    assert!(all_stats.bytes_scanned * 10 > file.len() as u64 * 9);
}

#[test]
fn statistics_skip_row_groups_that_cannot_match() {
    let file = wide_file(20_000, 2_000);
    // Every row group may hold an id >= 0: nothing is skipped.
    let (all, all_stats) = run(
        &select("SELECT s.pad FROM S3Object s WHERE s.id >= 0"),
        &file,
    )
    .unwrap();
    assert_eq!(all.lines().count(), 20_000);
    let (one, one_stats) = run(
        &select("SELECT s.pad FROM S3Object s WHERE s.id = 12345"),
        &file,
    )
    .unwrap();
    assert_eq!(one, format!("{}\n", pad(12345)));
    // One row group of ten is read.
    assert!(
        one_stats.bytes_scanned * 5 < all_stats.bytes_scanned,
        "filtered: {one_stats:?}; all: {all_stats:?}"
    );
    // A filter the statistics cannot judge reads everything, and still finds the row.
    let (same, same_stats) = run(
        &select("SELECT s.pad FROM S3Object s WHERE s.id + 0 = 12345"),
        &file,
    )
    .unwrap();
    assert_eq!(same, one);
    assert_eq!(same_stats.bytes_scanned, all_stats.bytes_scanned);
}

#[test]
fn limit_stops_reading_row_groups() {
    let file = wide_file(20_000, 2_000);
    let (out, stats) = run(&select("SELECT s.id FROM S3Object s LIMIT 3"), &file).unwrap();
    assert_eq!(out, "0\n1\n2\n");
    let (_, all) = run(&select("SELECT s.id FROM S3Object s"), &file).unwrap();
    assert!(
        stats.bytes_scanned < all.bytes_scanned / 5,
        "{stats:?} vs {all:?}"
    );
}

/// A filter the decoder evaluates over whole columns keeps the rows the row evaluator
/// keeps: each filter against the same filter hidden in a CASE (which only the row path
/// evaluates), in projections, `SELECT *`, counts, LIMIT and JSON output.
#[test]
fn column_filters_keep_the_rows_the_row_path_keeps() {
    let file = mixed_file(6_000, 1_000);
    let filters = [
        "s.q >= 2 AND s.q <= 4",
        "s.q BETWEEN 1 AND 3 OR s.name = 'n5'",
        "NOT (s.q IN (1, 2, 6))",
        "s.k IN (10, 2000, 2001, 11998) OR s.price IS NULL",
        "s.price >= 10.00 AND s.price <= 20.00",
        "s.price > 5 AND s.name <> 'n3'",
        "s.name LIKE 'n1%' AND s.q = 1",
        "s.name IS NOT NULL AND s.q < 0",
        "s.q = 'x' OR s.k < 20",
    ];
    let shapes = [
        "SELECT s.k, s.q, s.price, s.name FROM S3Object s WHERE {f}",
        "SELECT * FROM S3Object s WHERE {f}",
        "SELECT COUNT(*), SUM(s.price) FROM S3Object s WHERE {f}",
        "SELECT s.name FROM S3Object s WHERE {f} LIMIT 1500",
        "SELECT 1 FROM S3Object s WHERE {f} LIMIT 3",
    ];
    for f in filters {
        let hidden = format!("CASE WHEN {f} THEN true ELSE false END");
        for shape in shapes {
            let fast = run(&select(&shape.replace("{f}", f)), &file).unwrap().0;
            let slow = run(&select(&shape.replace("{f}", &hidden)), &file)
                .unwrap()
                .0;
            assert_eq!(fast, slow, "{shape} with {f}");
        }
        let json = |sql: &str| {
            let s = Select::new(SelectRequest {
                sql: sql.into(),
                input: InputSerialization {
                    format: InputFormat::Parquet,
                    ..Default::default()
                },
                output: sift_engine::OutputSerialization::Json(Default::default()),
                ..Default::default()
            })
            .unwrap();
            run(&s, &file).unwrap().0
        };
        let sql = "SELECT s.q, s.name, s.price FROM S3Object s WHERE ";
        assert_eq!(json(&format!("{sql}{f}")), json(&format!("{sql}{hidden}")));
    }
    // Rows with nothing to evaluate are written from the columns: against the row path
    // (a WHERE it must evaluate), with a column the file lacks and names of another case.
    for sql in [
        "SELECT * FROM S3Object s",
        "SELECT s.NAME, s.nope, s.k, s.\"price\" FROM S3Object s",
        "SELECT s.q AS x, s.q FROM S3Object s LIMIT 2500",
    ] {
        let fast = run(&select(sql), &file).unwrap().0;
        let slow = format!("{sql} WHERE CASE WHEN 1 = 1 THEN true ELSE false END");
        let slow = slow.replace(" LIMIT 2500 WHERE", " WHERE");
        let slow = match sql.contains("LIMIT") {
            true => format!("{slow} LIMIT 2500"),
            false => slow,
        };
        assert_eq!(fast, run(&select(&slow), &file).unwrap().0, "{sql}");
        assert!(fast.lines().count() >= 2500, "{sql}");
    }
}

/// The columns a query projects are decoded, and read, only for the row groups where its
/// filter keeps a row.
#[test]
fn column_filters_read_projected_columns_only_where_rows_pass() {
    let file = mixed_file(20_000, 2_000);
    // Statistics leave row group 0 (k 0..3998) for both; 2000 is in it, 2001 is not.
    let (one, one_stats) = run(
        &select("SELECT s.pad FROM S3Object s WHERE s.k = 2000"),
        &file,
    )
    .unwrap();
    assert_eq!(one, format!("{}\n", pad(1000)));
    let (none, none_stats) = run(
        &select("SELECT s.pad FROM S3Object s WHERE s.k = 2001"),
        &file,
    )
    .unwrap();
    assert_eq!(none, "");
    // `pad` is most of a row group's bytes.
    assert!(
        none_stats.bytes_scanned * 3 < one_stats.bytes_scanned,
        "no row: {none_stats:?}; one row: {one_stats:?}"
    );
}

#[test]
fn row_groups_over_the_limit_are_refused() {
    let file = wide_file(1_000, 1_000);
    let e = run(
        &select("SELECT s.id FROM S3Object s").with_max_row_group_bytes(100_000),
        &file,
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::OverMaxParquetBlockSize);
    assert!(e.message.contains("row group 0"), "{e}");
    // Under the default limit (256 MiB) the same file reads.
    assert!(run(&select("SELECT s.id FROM S3Object s"), &file).is_ok());
}

#[test]
fn truncated_files_are_parsing_errors() {
    let file = wide_file(100, 50);
    for cut in [1, 4, 8, 9, 100, file.len() - 4] {
        let e = run(&select("SELECT * FROM S3Object"), &file[..file.len() - cut]).unwrap_err();
        assert_eq!(e.code, ErrorCode::ParquetParsingError, "cut {cut}: {e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Bytes changed anywhere in a real file: an error or a result, never a panic.
    #[test]
    fn damaged_files_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut file = wide_file(300, 100);
        for (at, byte) in edits {
            let i = at.index(file.len());
            file[i] = byte;
        }
        let r = run(&select("SELECT * FROM S3Object s WHERE s.id > 10"), &file);
        if let Err(e) = r {
            prop_assert!(
                matches!(
                    e.code,
                    ErrorCode::ParquetParsingError
                        | ErrorCode::ParquetUnsupportedCompressionCodec
                        | ErrorCode::OverMaxParquetBlockSize
                        | ErrorCode::InvalidTextEncoding
                ),
                "{e}"
            );
        }
    }
}
