//! Bad requests and bad objects: each must end in the AWS error code a client expects, with a
//! message that names the problem — never a panic, never a hang.

use std::io::Write;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use sift_engine::{
    Compression, CsvInput, ErrorCode, FileHeaderInfo, InputSerialization, ScanRange, Select,
    SelectError, SelectRequest, SliceSource,
};

/// How long one select may take before the test calls it a hang (debug build, shared CI).
const TIMEOUT: Duration = Duration::from_secs(60);

fn request(sql: &str) -> SelectRequest {
    SelectRequest {
        sql: sql.into(),
        ..Default::default()
    }
}

/// Runs `req` over `data` on another thread, so that a panic or a hang fails the test with a
/// clear message instead of taking the harness down or blocking it.
fn run_with(
    req: SelectRequest,
    data: Vec<u8>,
    threads: usize,
    chunk: usize,
) -> Result<Vec<u8>, SelectError> {
    let (tx, rx) = mpsc::channel();
    let what = format!(
        "{:?} over {} bytes",
        req.sql.chars().take(80).collect::<String>(),
        data.len()
    );
    let handle = thread::spawn(move || {
        let r = Select::new(req).and_then(|s| {
            let s = s.with_threads(threads).with_chunk_size(chunk);
            let mut out = Vec::new();
            s.run(&SliceSource(&data), &mut out).map(|_| out)
        });
        let _ = tx.send(r);
    });
    match rx.recv_timeout(TIMEOUT) {
        Ok(r) => {
            handle.join().expect("select thread");
            r
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let panic = handle.join().err().map(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            panic!("select panicked on {what}: {panic:?}")
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("select hung (> {TIMEOUT:?}) on {what}"),
    }
}

fn run(req: SelectRequest, data: &[u8]) -> Result<Vec<u8>, SelectError> {
    run_with(req, data.to_vec(), 1, 1 << 20)
}

/// Asserts that `r` failed with `code` and that the message mentions every one of `words`
/// (case-insensitively).
#[track_caller]
fn assert_error<T: std::fmt::Debug>(r: Result<T, SelectError>, code: ErrorCode, words: &[&str]) {
    let e = match r {
        Ok(v) => panic!("expected {code}, got success: {v:?}"),
        Err(e) => e,
    };
    assert_eq!(e.code, code, "wrong code; message: {}", e.message);
    let msg = e.message.to_lowercase();
    for w in words {
        assert!(
            msg.contains(&w.to_lowercase()),
            "the {code} message should mention {w:?}: {}",
            e.message
        );
    }
}

/// Select::new alone (errors found before reading the object).
fn prepare(sql: &str) -> Result<Select, SelectError> {
    Select::new(request(sql))
}

fn csv(f: impl FnOnce(&mut CsvInput)) -> InputSerialization {
    let mut c = CsvInput::default();
    f(&mut c);
    InputSerialization::csv(c, Compression::None)
}

fn compressed(c: Compression) -> InputSerialization {
    InputSerialization::csv(CsvInput::default(), c)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Some thousand lines of CSV that compress well.
fn sample_csv() -> Vec<u8> {
    (0..5000)
        .map(|i| format!("{i},name{i},{}\n", i * 7))
        .collect::<String>()
        .into_bytes()
}

// ---------------------------------------------------------------------------------------------
// Malformed SQL

#[test]
fn sql_missing_select_list() {
    assert_error(
        prepare("SELECT FROM S3Object"),
        ErrorCode::ParseEmptySelect,
        &[],
    );
}

#[test]
fn sql_missing_from() {
    assert_error(
        prepare("SELECT *"),
        ErrorCode::ParseSelectMissingFrom,
        &["FROM"],
    );
}

#[test]
fn sql_misspelled_select() {
    assert_error(
        prepare("SELEC * FROM S3Object"),
        ErrorCode::ParseUnexpectedToken,
        &["SELEC"],
    );
}

#[test]
fn sql_where_without_condition() {
    assert_error(
        prepare("SELECT * FROM S3Object WHERE"),
        ErrorCode::ParseExpectedExpression,
        &[],
    );
}

#[test]
fn sql_unclosed_parenthesis() {
    assert_error(
        prepare("SELECT (s._1 FROM S3Object s"),
        ErrorCode::ParseUnexpectedToken,
        &["FROM", "expected ')'"],
    );
}

#[test]
fn sql_unterminated_string_literal() {
    assert_error(
        prepare("SELECT * FROM S3Object s WHERE s._1 = 'abc"),
        ErrorCode::LexerInvalidLiteral,
        &[],
    );
}

#[test]
fn sql_invalid_character() {
    assert_error(
        prepare("SELECT * FROM S3Object s WHERE s._1 = ~1"),
        ErrorCode::LexerInvalidChar,
        &["~"],
    );
}

#[test]
fn sql_trailing_garbage() {
    assert_error(
        prepare("SELECT * FROM S3Object s s2 s3"),
        ErrorCode::ParseUnexpectedToken,
        &[],
    );
}

#[test]
fn sql_star_not_alone() {
    assert_error(
        prepare("SELECT *, s._1 FROM S3Object s"),
        ErrorCode::ParseAsteriskIsNotAloneInSelectList,
        &[],
    );
}

#[test]
fn sql_empty() {
    let r = prepare("");
    assert!(r.is_err(), "empty SQL must be rejected");
}

#[test]
fn sql_over_256_kib_is_expression_too_long() {
    let mut sql = String::from("SELECT * FROM S3Object s WHERE s._1 = '");
    sql.push_str(&"x".repeat(256 * 1024));
    sql.push('\'');
    assert_error(
        prepare(&sql),
        ErrorCode::ExpressionTooLong,
        &["262144", "bytes"],
    );
}

// ---------------------------------------------------------------------------------------------
// Functions, casts, columns

#[test]
fn unknown_function() {
    assert_error(
        run(request("SELECT FROBNICATE(s._1) FROM S3Object s"), b"a\n"),
        ErrorCode::UnsupportedFunction,
        &["FROBNICATE"],
    );
}

#[test]
fn wrong_arity() {
    assert_error(
        run(
            request("SELECT UPPER(s._1, s._2) FROM S3Object s"),
            b"a,b\n",
        ),
        ErrorCode::EvaluatorInvalidArguments,
        &["UPPER", "2"],
    );
    assert_error(
        run(request("SELECT NULLIF(s._1) FROM S3Object s"), b"a,b\n"),
        ErrorCode::EvaluatorInvalidArguments,
        &["NULLIF", "takes 2"],
    );
}

#[test]
fn bad_cast() {
    assert_error(
        run(
            request("SELECT CAST(s._1 AS INT) FROM S3Object s"),
            b"12\nabc\n",
        ),
        ErrorCode::CastFailed,
        &["abc"],
    );
}

#[test]
fn column_zero_is_invalid_column_index() {
    assert_error(
        run(request("SELECT s._0 FROM S3Object s"), b"a,b\n"),
        ErrorCode::InvalidColumnIndex,
        &["_0"],
    );
}

#[test]
fn header_name_not_found() {
    let mut req = request("SELECT s.nope FROM S3Object s");
    req.input = csv(|c| c.file_header_info = FileHeaderInfo::Use);
    assert_error(
        run(req, b"id,name\n1,x\n"),
        ErrorCode::EvaluatorBindingDoesNotExist,
        &["nope", "header"],
    );
}

#[test]
fn ambiguous_header_name() {
    let mut req = request("SELECT s.name FROM S3Object s");
    req.input = csv(|c| c.file_header_info = FileHeaderInfo::Use);
    assert_error(
        run(req, b"id,name,NAME\n1,x,y\n"),
        ErrorCode::AmbiguousFieldName,
        &["name"],
    );
}

// ---------------------------------------------------------------------------------------------
// CSV data

#[test]
fn unterminated_quote_at_eof_with_quoted_record_delimiters_allowed() {
    let mut req = request("SELECT * FROM S3Object");
    req.input = csv(|c| c.allow_quoted_record_delimiter = true);
    assert_error(
        run(req, b"a,b\n1,\"never closed\n2,x\n"),
        ErrorCode::CSVParsingError,
        &["quoted field", "never closed"],
    );
}

#[test]
fn unterminated_quote_crossing_a_record_delimiter_when_not_allowed() {
    let req = request("SELECT * FROM S3Object");
    assert_error(
        run(req, b"a,b\n1,\"never closed\n2,x\n"),
        ErrorCode::CSVEscapingRecordDelimiter,
        &["AllowQuotedRecordDelimiter"],
    );
}

#[test]
fn unterminated_quote_in_last_record_without_delimiter() {
    let req = request("SELECT * FROM S3Object");
    assert_error(
        run(req, b"a,b\n1,\"never closed"),
        ErrorCode::CSVParsingError,
        &["never closed"],
    );
}

fn over_long_record(threads: usize) {
    // A few ordinary records, then one of 1 MiB + 100 bytes, then more ordinary ones.
    let mut data = b"1,a\n2,b\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', (1 << 20) + 100));
    data.extend(b"\n3,c\n");
    assert_error(
        run_with(request("SELECT * FROM S3Object"), data, threads, 64 * 1024),
        ErrorCode::OverMaxRecordSize,
        &["1 MiB"],
    );
}

#[test]
fn over_long_record_one_thread() {
    over_long_record(1);
}

#[test]
fn over_long_record_two_threads() {
    over_long_record(2);
}

#[test]
fn over_long_record_at_default_chunk_size() {
    let mut data = vec![b'y'; (1 << 20) + 1];
    data.push(b'\n');
    for threads in [1, 2] {
        assert_error(
            run_with(
                request("SELECT * FROM S3Object"),
                data.clone(),
                threads,
                1 << 20,
            ),
            ErrorCode::OverMaxRecordSize,
            &["1 MiB"],
        );
    }
}

#[test]
fn over_long_quoted_record_with_quoted_record_delimiters_allowed() {
    let mut data = b"1,\"".to_vec();
    for _ in 0..(1 << 20) / 8 {
        data.extend(b"abc\ndef,");
    }
    data.extend(b"\"\n");
    for threads in [1, 2] {
        let mut req = request("SELECT * FROM S3Object");
        req.input = csv(|c| c.allow_quoted_record_delimiter = true);
        assert_error(
            run_with(req, data.clone(), threads, 4096),
            ErrorCode::OverMaxRecordSize,
            &["1 MiB"],
        );
    }
}

#[test]
fn over_long_header_record() {
    let mut data = vec![b'h'; (1 << 20) + 10];
    data.extend(b"\n1\n");
    let mut req = request("SELECT * FROM S3Object");
    req.input = csv(|c| c.file_header_info = FileHeaderInfo::Use);
    assert_error(run(req, &data), ErrorCode::OverMaxRecordSize, &["1 MiB"]);
}

#[test]
fn invalid_utf8_in_selected_field() {
    assert_error(
        run(request("SELECT s._2 FROM S3Object s"), b"ok,\xff\xfebad\n"),
        ErrorCode::InvalidTextEncoding,
        &["UTF-8", "0xff", "ok,"],
    );
}

#[test]
fn invalid_utf8_under_select_star() {
    assert_error(
        run(request("SELECT * FROM S3Object"), b"a,b\nok,\xc3(\n"),
        ErrorCode::InvalidTextEncoding,
        &["UTF-8"],
    );
}

/// AWS reads UTF-8 only, so a bad byte anywhere fails the request, read or not.
#[test]
fn invalid_utf8_in_a_field_that_is_not_selected_still_fails() {
    assert_error(
        run(request("SELECT s._1 FROM S3Object s"), b"ok,\xff\n"),
        ErrorCode::InvalidTextEncoding,
        &["UTF-8"],
    );
}

#[test]
fn invalid_utf8_in_header() {
    let mut req = request("SELECT s.id FROM S3Object s");
    req.input = csv(|c| c.file_header_info = FileHeaderInfo::Use);
    assert_error(
        run(req, b"id,\xffname\n1,x\n"),
        ErrorCode::InvalidTextEncoding,
        &["header", "UTF-8"],
    );
}

// ---------------------------------------------------------------------------------------------
// Compression

#[test]
fn gzip_garbage_is_truncated_input() {
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Gzip);
    assert_error(
        run(req, b"this is not a gzip stream at all\n"),
        ErrorCode::TruncatedInput,
        &["decompression"],
    );
}

#[test]
fn gzip_truncated_stream_is_truncated_input() {
    let z = gzip(&sample_csv());
    for cut in [z.len() / 2, z.len() - 4, 12] {
        for threads in [1, 2] {
            let mut req = request("SELECT * FROM S3Object");
            req.input = compressed(Compression::Gzip);
            assert_error(
                run_with(req, z[..cut].to_vec(), threads, 4096),
                ErrorCode::TruncatedInput,
                &["decompression"],
            );
        }
    }
}

#[test]
fn gzip_corrupt_body_is_truncated_input() {
    let mut z = gzip(&sample_csv());
    let mid = z.len() / 2;
    for b in &mut z[mid..mid + 16] {
        *b ^= 0x5a;
    }
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Gzip);
    assert_error(run(req, &z), ErrorCode::TruncatedInput, &["decompression"]);
}

#[test]
fn gzip_second_member_corrupt_is_truncated_input() {
    let mut z = gzip(b"1,a\n2,b\n");
    z.extend(b"\x1f\x8b garbage after a good member");
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Gzip);
    assert_error(run(req, &z), ErrorCode::TruncatedInput, &["decompression"]);
}

#[test]
fn bzip2_garbage_is_truncated_input() {
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Bzip2);
    assert_error(
        run(req, b"BZh9 but then nothing that bzip2 can read\n"),
        ErrorCode::TruncatedInput,
        &["decompression"],
    );
}

#[test]
fn bzip2_truncated_stream_is_truncated_input() {
    let z = bzip2(&sample_csv());
    for threads in [1, 2] {
        let mut req = request("SELECT * FROM S3Object");
        req.input = compressed(Compression::Bzip2);
        assert_error(
            run_with(req, z[..z.len() / 2].to_vec(), threads, 4096),
            ErrorCode::TruncatedInput,
            &["decompression"],
        );
    }
}

#[test]
fn bzip2_corrupt_body_is_truncated_input() {
    let mut z = bzip2(&sample_csv());
    let mid = z.len() / 2;
    for b in &mut z[mid..mid + 16] {
        *b ^= 0x5a;
    }
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Bzip2);
    assert_error(run(req, &z), ErrorCode::TruncatedInput, &["decompression"]);
}

// ---------------------------------------------------------------------------------------------
// ScanRange

#[test]
fn scan_range_with_gzip_is_unsupported() {
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Gzip);
    req.scan_range = Some(ScanRange {
        start: Some(0),
        end: Some(10),
    });
    assert_error(
        Select::new(req),
        ErrorCode::UnsupportedScanRangeInput,
        &["ScanRange", "compressed"],
    );
}

#[test]
fn scan_range_with_bzip2_is_unsupported() {
    let mut req = request("SELECT * FROM S3Object");
    req.input = compressed(Compression::Bzip2);
    req.scan_range = Some(ScanRange {
        start: Some(5),
        end: None,
    });
    assert_error(
        Select::new(req),
        ErrorCode::UnsupportedScanRangeInput,
        &["ScanRange"],
    );
}

#[test]
fn scan_range_end_before_start() {
    let mut req = request("SELECT * FROM S3Object");
    req.scan_range = Some(ScanRange {
        start: Some(10),
        end: Some(3),
    });
    assert_error(
        run(req, b"1,a\n2,b\n3,c\n4,d\n"),
        ErrorCode::InvalidScanRange,
        &["End", "Start"],
    );
}

#[test]
fn scan_range_without_start_or_end() {
    let mut req = request("SELECT * FROM S3Object");
    req.scan_range = Some(ScanRange {
        start: None,
        end: None,
    });
    assert_error(
        Select::new(req),
        ErrorCode::InvalidScanRange,
        &["Start", "End"],
    );
}
