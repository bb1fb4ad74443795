//! Parquet input beyond what the conformance cases show: which bytes a select reads
//! (projection and row-group statistics), the row-group size limit, and damaged files.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
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
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    out
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
