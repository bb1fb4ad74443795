//! The `sift` binary as a user runs it: real files, real process, exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn sift(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sift starts");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(data) = stdin {
        input.write_all(data).expect("write stdin");
    }
    drop(input);
    child.wait_with_output().expect("sift runs")
}

fn temp_file(name: &str, data: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("write temp file");
    path
}

#[test]
fn select_filters_a_file_and_reports_stats() {
    let path = temp_file("a.csv", b"id,name\n1,ann\n2,bob\n3,cy\n");
    let out = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "--header",
            "use",
            "--stats",
            "SELECT name FROM S3Object s WHERE CAST(s.id AS INT) >= 2",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"bob\ncy\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BytesScanned: 25"), "{err}");
    assert!(err.contains("BytesProcessed: 25"), "{err}");
    assert!(err.contains("BytesReturned: 7"), "{err}");
}

/// `--output arrow` writes an Arrow IPC stream (pyarrow reads it: tests/clients); a query
/// whose columns have no fixed type is refused before anything is written.
#[test]
fn select_writes_arrow_or_says_why_not() {
    let path = temp_file("typed.csv", b"1,ann\n2,bob\n3,\n");
    let sql = "SELECT CAST(s._1 AS INT) AS id, s._2 AS name FROM S3Object s";
    let out = sift(
        &[
            "select",
            "--output",
            "arrow",
            "--file",
            path.to_str().unwrap(),
            sql,
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reader = datafusion::arrow::ipc::reader::StreamReader::try_new(&out.stdout[..], None)
        .expect("an IPC stream");
    let batches = reader.collect::<Result<Vec<_>, _>>().expect("batches");
    let table = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
        .expect("printable")
        .to_string();
    assert_eq!(
        table,
        "+----+------+\n| id | name |\n+----+------+\n| 1  | ann  |\n| 2  | bob  |\n| 3  |      |\n+----+------+"
    );
    let out = sift(
        &[
            "select",
            "--output",
            "arrow",
            "--file",
            path.to_str().unwrap(),
            "SELECT * FROM S3Object",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("UnsupportedSqlStructure: Arrow output needs a fixed"),
        "{err}"
    );
}

#[test]
fn select_reads_json_lines_and_documents() {
    let lines = b"{\"id\":1,\"user\":{\"name\":\"ann\"}}\n{\"id\":2,\"user\":{\"name\":\"bob\"}}\n";
    let path = temp_file("a.jsonl", lines);
    let out = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "--input",
            "json-lines",
            "--output",
            "json",
            "SELECT s.user.name FROM S3Object s WHERE s.id > 1",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"{\"name\":\"bob\"}\n");
    let out = sift(
        &[
            "select",
            "--file",
            "-",
            "--input",
            "json-document",
            "SELECT COUNT(*) FROM S3Object[*].items[*]",
        ],
        Some(b"{\"items\": [1,\n 2]}\n{\"items\": [3]}"),
    );
    assert_eq!(
        out.stdout,
        b"3\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = sift(
        &[
            "select",
            "--file",
            "-",
            "--input",
            "json-lines",
            "SELECT * FROM S3Object",
        ],
        Some(b"{\"a\":1,}\n"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("JSONParsingError"), "{err}");
}

/// A two-row-group Parquet file: `id` Int64 and `name` Utf8.
fn parquet_file() -> Vec<u8> {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
        (
            "name",
            Arc::new(StringArray::from(vec!["ann", "bob", "cy"])) as ArrayRef,
        ),
    ])
    .expect("batch");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(2))
        .build();
    let mut out = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props))
        .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    out
}

#[test]
fn select_reads_parquet_from_a_file_and_stdin() {
    let data = parquet_file();
    let path = temp_file("a.parquet", &data);
    let out = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "--input",
            "parquet",
            "--output",
            "json",
            "--stats",
            "SELECT s.name FROM S3Object s WHERE s.id >= 2",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"{\"name\":\"bob\"}\n{\"name\":\"cy\"}\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BytesScanned: "), "{err}");
    let out = sift(
        &[
            "select",
            "--file",
            "-",
            "--input",
            "parquet",
            "SELECT COUNT(*) FROM S3Object",
        ],
        Some(&data),
    );
    assert_eq!(
        out.stdout,
        b"3\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = sift(
        &[
            "select",
            "--file",
            "-",
            "--input",
            "parquet",
            "SELECT * FROM S3Object",
        ],
        Some(b"id,name\n1,ann\n"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ParquetParsingError"), "{err}");
}

#[test]
fn select_reads_stdin_with_dsdgen_options_and_json_output() {
    let out = sift(
        &[
            "select",
            "--file",
            "-",
            "--field-delimiter",
            "|",
            "--output",
            "json",
            "SELECT s._2 AS name, CAST(s._1 AS INT) * 2 FROM S3Object s",
        ],
        Some(b"1|a|\n2|b|\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\"name\":\"a\",\"_2\":2}\n{\"name\":\"b\",\"_2\":4}\n"
    );
}

#[test]
fn select_writes_csv_with_the_output_quote_flags() {
    let out = sift(
        &[
            "select",
            "--file",
            "-",
            "--quote-fields",
            "always",
            "--output-quote",
            "'",
            "--output-quote-escape",
            "\\",
            "SELECT s._1 FROM S3Object s",
        ],
        Some(b"it's\nplain\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "'it\\'s'\n'plain'\n");
}

#[test]
fn select_applies_scan_range_and_threads() {
    let data: Vec<u8> = (0..5000)
        .flat_map(|i| format!("{i},x\n").into_bytes())
        .collect();
    let path = temp_file("range.csv", &data);
    let whole = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "--threads",
            "2",
            "SELECT _1 FROM S3Object",
        ],
        None,
    );
    assert!(whole.status.success());
    assert_eq!(whole.stdout.len(), data.len() - 5000 * 2);
    // Bytes 0..=9 hold "0,x\n1,x\n2," — records 0, 1 and 2 start in the range.
    let part = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "--scan-range",
            "0:9",
            "SELECT _1 FROM S3Object",
        ],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&part.stdout), "0\n1\n2\n");
}

#[test]
fn select_errors_print_the_s3_code_and_exit_1() {
    let path = temp_file("e.csv", b"x\n");
    let out = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "SELECT FROM S3Object",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("Parse"), "{err}");
    assert!(err.contains("line 1, column"), "{err}");

    let out = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "SELECT CAST(_1 AS INT) FROM S3Object",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("CastFailed: "));

    let out = sift(
        &[
            "select",
            "--file",
            "/nonexistent/file.csv",
            "SELECT * FROM S3Object",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn select_reads_gzip() {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"a,1\nb,2\n").unwrap();
    let path = temp_file("z.csv.gz", &gz.finish().unwrap());
    let out = sift(
        &[
            "select",
            "--file",
            path.to_str().unwrap(),
            "--compression",
            "gzip",
            "SELECT SUM(_2) FROM S3Object",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"3\n");
}

#[test]
fn a_closed_stdout_ends_the_scan_quietly() {
    let data: Vec<u8> = (0..200_000)
        .flat_map(|i| format!("{i},x\n").into_bytes())
        .collect();
    let path = temp_file("big.csv", &data);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args([
            "select",
            "--file",
            path.to_str().unwrap(),
            "SELECT * FROM S3Object",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sift starts");
    // Read a little, then hang up, as `| head -1` does.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut stdout, &mut first).expect("some output");
    drop(stdout);
    let out = child.wait_with_output().expect("sift exits");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn demo_runs_gateway_load_queries_and_report_end_to_end() {
    let dir = std::env::temp_dir().join(format!("sift-demo-{}", std::process::id()));
    let results = dir.join("results");
    let out = sift(
        &[
            "demo",
            "--sf",
            "0.01",
            "--data",
            dir.join("store").to_str().unwrap(),
            "--out",
            results.to_str().unwrap(),
            "--queries",
            "3,96",
            "--link-bandwidth",
            "10Gbit",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("10 Gbit/s emulated link"), "{text}");
    // Over a link, Arrow answers come LZ4-compressed; every mode's rows equal fetch's (the
    // run checks).
    for mode in ["fetch", "pushdown", "dynamic", "auto"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(mode)),
            "{mode} missing: {text}"
        );
    }
    assert!(
        text.contains("pushdown vs fetch: geomean speedup"),
        "{text}"
    );
    assert!(text.contains("speedup-pushdown.svg"), "{text}");
    assert!(results.join("report.md").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
