//! Property tests of the CSV reader: every way of reading the same bytes must agree.
//!
//! * the bitmask scanner (`Scanner::new`) against the scalar reference (`Scanner::scalar`),
//!   record by record, on the whole input and on the chunks the `Chunker` cuts;
//! * `Select` with one thread and the default chunk size against two threads and 4 KiB
//!   chunks, and against other chunk sizes;
//! * ScanRange against an independent computation of which records start in the range;
//! * GZIP and BZIP2 input against the same bytes uncompressed.
//!
//! Inputs are drawn from a small alphabet that contains every delimiter, quote, escape and
//! comment marker the options can name, so that the interesting interactions are common.

use std::io::Write;

use proptest::prelude::*;
use proptest::test_runner::Config;
use sift_engine::csv::chunk::{ReadWindow, SliceWindow};
use sift_engine::csv::{ChunkBuf, Chunker, CsvFormat, Flow, Scanner};
use sift_engine::{
    Compression, CsvInput, ErrorCode, FileHeaderInfo, InputSerialization, ScanRange, Select,
    SelectRequest, SliceSource,
};

// ---------------------------------------------------------------------------------------------
// Generators

const FIELD_DELIMS: &[&str] = &[",", "|", ";", "\t", "§"];
const RECORD_DELIMS: &[&str] = &["\n", "\r\n", ";", "ab", "é"];
const QUOTES: &[&str] = &["\"", "'", ""];
/// `None`: the same as the quote (given as the quote itself or as the empty string).
const ESCAPES: &[Option<&str>] = &[None, Some("\\"), Some("")];
const COMMENTS: &[&str] = &["#", "", "\u{FDD0}"];
const HEADERS: &[FileHeaderInfo] = &[
    FileHeaderInfo::None,
    FileHeaderInfo::None,
    FileHeaderInfo::Ignore,
    FileHeaderInfo::Use,
];

/// The alphabet inputs are written in: one token is one character (or a CRLF pair).
const ALPHABET: &[&str] = &[
    "a", "b", ",", "|", ";", "\"", "'", "\\", "#", "\n", "\r", "\r\n", "\t", "é", "§", "\u{FDD0}",
];

fn csv_input() -> impl Strategy<Value = CsvInput> {
    (
        0..FIELD_DELIMS.len(),
        0..RECORD_DELIMS.len(),
        0..QUOTES.len(),
        0..ESCAPES.len(),
        0..COMMENTS.len(),
        any::<bool>(),
        0..HEADERS.len(),
    )
        .prop_map(|(f, r, q, e, c, allow, h)| {
            let quote = QUOTES[q].to_string();
            CsvInput {
                file_header_info: HEADERS[h],
                field_delimiter: FIELD_DELIMS[f].into(),
                record_delimiter: RECORD_DELIMS[r].into(),
                quote_escape_character: match ESCAPES[e] {
                    None => quote.clone(),
                    Some(s) => s.into(),
                },
                quote_character: quote,
                comments: COMMENTS[c].into(),
                allow_quoted_record_delimiter: allow,
            }
        })
}

/// Text over `ALPHABET`, with letters weighted up so that fields have content; `big` makes
/// inputs of several chunks (> 8 KiB).
fn text(max_tokens: usize) -> impl Strategy<Value = String> {
    let token = prop_oneof![
        6 => Just("a"),
        3 => Just("b"),
        4 => prop::sample::select(ALPHABET),
    ];
    prop::collection::vec(token, 0..max_tokens).prop_map(|v| v.concat())
}

fn small_or_big_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => text(80),
        1 => text(9000).prop_filter("want more than 8 KiB", |s| s.len() > 8 * 1024),
    ]
}

/// A text made of `lines` (each over `[ab,]`), joined with `\n`, possibly with empty lines
/// and without a final delimiter.
fn plain_lines() -> impl Strategy<Value = String> {
    let line = prop::collection::vec(
        prop_oneof![4 => Just("a"), 2 => Just("b"), 2 => Just(","), 1 => Just("\n")],
        0..24,
    )
    .prop_map(|v| v.concat());
    prop_oneof![
        3 => prop::collection::vec(line.clone(), 0..30),
        1 => prop::collection::vec(line, 400..900),
    ]
    .prop_map(|v| v.join("\n"))
}

// ---------------------------------------------------------------------------------------------
// Running

type Outcome = Result<Vec<u8>, ErrorCode>;

const STAR: &str = "SELECT * FROM S3Object s";
const COLS: &str = "SELECT s._1, s._3 FROM S3Object s";

fn request(sql: &str, csv: &CsvInput) -> SelectRequest {
    SelectRequest {
        sql: sql.into(),
        input: InputSerialization::csv(csv.clone(), Compression::None),
        ..Default::default()
    }
}

fn run_req(req: SelectRequest, data: &[u8], threads: usize, chunk: Option<usize>) -> Outcome {
    let mut select = Select::new(req).map_err(|e| e.code)?.with_threads(threads);
    if let Some(c) = chunk {
        select = select.with_chunk_size(c);
    }
    let mut out = Vec::new();
    select
        .run(&SliceSource(data), &mut out)
        .map_err(|e| e.code)?;
    Ok(out)
}

fn run(sql: &str, csv: &CsvInput, data: &[u8], threads: usize, chunk: Option<usize>) -> Outcome {
    run_req(request(sql, csv), data, threads, chunk)
}

type Records = Result<Vec<Vec<String>>, ErrorCode>;

/// Every record of `chunk`, every field, as `scanner` reads them.
fn records(scanner: &mut Scanner, chunk: &[u8]) -> Records {
    let mut all = Vec::new();
    scanner
        .scan(chunk, |rec| {
            let fields = (0..rec.len())
                .map(|i| String::from_utf8_lossy(rec.field(i).unwrap_or_default()).into_owned())
                .collect();
            all.push(fields);
            Ok(Flow::Continue)
        })
        .map_err(|e| e.code)?;
    Ok(all)
}

/// The chunks the chunker cuts `data` into with `target`-byte chunks, read as a stream. The
/// in-memory window may cut elsewhere (a stream reads as much as its buffer holds), but it
/// must hand out the same bytes.
fn chunks(fmt: &CsvFormat, data: &[u8], target: usize) -> Result<Vec<Vec<u8>>, ErrorCode> {
    let window = ReadWindow::new(data, target + 65536);
    let mut chunker = Chunker::new(window, fmt.clone(), target, 0, false, None);
    let mut spare: Option<ChunkBuf> = None;
    let mut out = Vec::new();
    while let Some(c) = chunker.next_chunk(spare.take()).map_err(|e| e.code)? {
        out.push(c.bytes().to_vec());
        spare = c.into_buf();
    }
    let mut in_memory = Chunker::new(SliceWindow::new(data), fmt.clone(), target, 0, false, None);
    let mut borrowed = Vec::new();
    while let Some(c) = in_memory.next_chunk(None).map_err(|e| e.code)? {
        borrowed.push(c.bytes().to_vec());
    }
    assert_eq!(
        out.concat(),
        borrowed.concat(),
        "stream and in-memory windows hand out different bytes"
    );
    Ok(out)
}

/// `cases` by default (kept small so the file runs in seconds in a debug build);
/// `PROPTEST_CASES=N` asks for a deeper run.
fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(config(192))]

    /// The bitmask scanner reads exactly the records and fields the scalar reader reads, on the
    /// whole input and chunk by chunk, and chunking loses or duplicates no record.
    #[test]
    fn fast_scanner_matches_scalar(csv in csv_input(), data in small_or_big_text()) {
        let Ok(fmt) = CsvFormat::new(&csv) else {
            // Invalid combinations are rejected before anything is read.
            prop_assert!(Select::new(request(STAR, &csv)).is_err());
            return Ok(());
        };
        let bytes = data.as_bytes();
        let scalar = records(&mut Scanner::scalar(fmt.clone()), bytes);
        let fast = records(&mut Scanner::new(fmt.clone()), bytes);
        prop_assert_eq!(&fast, &scalar, "whole input {:?} with {:?}", data, csv);

        // Chunk by chunk: the same records in the same order, or the same error.
        let chunked: Records = chunks(&fmt, bytes, 4096).and_then(|cs| {
            let mut fast = Scanner::new(fmt.clone());
            let mut scalar = Scanner::scalar(fmt.clone());
            let mut all = Vec::new();
            for c in &cs {
                let f = records(&mut fast, c);
                let s = records(&mut scalar, c);
                assert_eq!(f, s, "chunk {:?} of {:?} with {:?}", String::from_utf8_lossy(c), data, csv);
                all.extend(f?);
            }
            Ok(all)
        });
        if let (Ok(whole), Ok(pieces)) = (&scalar, &chunked) {
            prop_assert_eq!(pieces, whole, "4 KiB chunks of {:?} with {:?}", data, csv);
        } else {
            prop_assert_eq!(
                chunked.as_ref().err(), scalar.as_ref().err(),
                "error from chunking {:?} with {:?}", data, csv
            );
        }
    }

}

proptest! {
    #![proptest_config(config(128))]

    /// `Select` gives the same output (or error code) with one thread and one chunk as with
    /// two threads and 4 KiB chunks.
    #[test]
    fn select_threads_and_chunks_agree(csv in csv_input(), data in small_or_big_text(), cols in any::<bool>()) {
        let sql = if cols { COLS } else { STAR };
        let bytes = data.as_bytes();
        let one = run(sql, &csv, bytes, 1, None);
        let two = run(sql, &csv, bytes, 2, Some(4096));
        prop_assert_eq!(&two, &one, "{} over {:?} with {:?}", sql, data, csv);
    }

}

proptest! {
    #![proptest_config(config(40))]

    /// Output does not depend on the chunk size or the thread count, for plain, LIMIT and
    /// aggregate queries.
    #[test]
    fn chunking_invariance(
        csv in csv_input(),
        data in prop_oneof![1 => text(200), 2 => text(30000).prop_filter("> 12 KiB", |s| s.len() > 12 * 1024)],
        q in 0..4usize,
    ) {
        let sql = [
            STAR,
            COLS,
            "SELECT s._2 FROM S3Object s WHERE s._1 LIKE '%a%' LIMIT 7",
            "SELECT COUNT(*), MAX(CHAR_LENGTH(s._1)) FROM S3Object s",
        ][q];
        let bytes = data.as_bytes();
        let reference = run(sql, &csv, bytes, 1, None);
        for threads in [1, 2] {
            for chunk in [Some(4096), Some(5000), Some(65536), None] {
                let got = run(sql, &csv, bytes, threads, chunk);
                prop_assert_eq!(
                    &got, &reference,
                    "{} with threads {} chunk {:?} over {:?} with {:?}", sql, threads, chunk, data, csv
                );
            }
        }
    }
}

/// The records of `data` (`\n`-delimited, no quotes, no comments) with the offset of their
/// first byte, computed without the engine: empty lines are no record.
fn records_with_offsets(data: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in data.split('\n') {
        if !line.is_empty() {
            out.push((start, line));
        }
        start += line.len() + 1;
    }
    out
}

fn ranged(data: &str, start: u64, end: u64, threads: usize, chunk: usize) -> Outcome {
    let csv = CsvInput {
        comments: String::new(),
        ..CsvInput::default()
    };
    let mut req = request(STAR, &csv);
    req.scan_range = Some(ScanRange {
        start: Some(start),
        end: Some(end),
    });
    run_req(req, data.as_bytes(), threads, Some(chunk))
}

fn expected_in_range(data: &str, start: usize, end: usize) -> String {
    records_with_offsets(data)
        .into_iter()
        .filter(|&(off, _)| off >= start && off <= end)
        .map(|(_, r)| format!("{r}\n"))
        .collect()
}

proptest! {
    #![proptest_config(config(128))]

    /// A ScanRange returns exactly the records whose first byte lies in [start, end].
    #[test]
    fn scan_range_selects_records_starting_inside(
        data in plain_lines(),
        a in 0..20_000usize,
        len in prop_oneof![0..40usize, 0..20_000usize],
        threads in 1..=2usize,
        chunk in prop::sample::select(vec![4096usize, 5000, 1 << 20]),
    ) {
        let size = data.len().max(1);
        let start = a % (size + 8);
        let end = start + len;
        let got = ranged(&data, start as u64, end as u64, threads, chunk);
        let want = expected_in_range(&data, start, end);
        prop_assert_eq!(
            got.map(|o| String::from_utf8(o).unwrap()),
            Ok(want),
            "range [{}, {}] of {:?}", start, end, data
        );
    }

}

proptest! {
    #![proptest_config(config(48))]

    /// Consecutive ranges [0,k-1], [k,2k-1], … together return every record exactly once.
    #[test]
    fn scan_ranges_partition_the_object(
        data in plain_lines(),
        k in prop_oneof![1..16usize, 16..6000usize],
        threads in 1..=2usize,
    ) {
        let whole = ranged(&data, 0, u64::MAX / 2, threads, 4096).unwrap();
        prop_assert_eq!(String::from_utf8(whole.clone()).unwrap(), expected_in_range(&data, 0, usize::MAX));
        // At most ~100 ranges per case, to keep the test fast.
        let k = k.max(data.len() / 100);
        let mut union = Vec::new();
        let mut start = 0;
        while start < data.len() {
            union.extend(ranged(&data, start as u64, (start + k - 1) as u64, threads, 4096).unwrap());
            start += k;
        }
        prop_assert_eq!(
            String::from_utf8(union).unwrap(),
            String::from_utf8(whole).unwrap(),
            "ranges of {} bytes over {:?}", k, data
        );
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn run_compressed(
    sql: &str,
    csv: &CsvInput,
    data: &[u8],
    compression: Compression,
    threads: usize,
) -> Outcome {
    let mut req = request(sql, csv);
    req.input.compression = compression;
    run_req(req, data, threads, Some(4096))
}

proptest! {
    #![proptest_config(config(40))]

    /// GZIP (one member or several) and BZIP2 input read as the plain bytes do.
    #[test]
    fn compressed_input_reads_as_plain(
        csv in csv_input(),
        data in small_or_big_text(),
        split in any::<prop::sample::Index>(),
        cols in any::<bool>(),
        threads in 1..=2usize,
    ) {
        let sql = if cols { COLS } else { STAR };
        let bytes = data.as_bytes();
        let plain = run(sql, &csv, bytes, threads, Some(4096));
        let cut = split.index(bytes.len() + 1);
        let mut multi = gzip(&bytes[..cut]);
        multi.extend(gzip(&bytes[cut..]));
        for (what, z, c) in [
            ("gzip", gzip(bytes), Compression::Gzip),
            ("multi-member gzip", multi, Compression::Gzip),
            ("bzip2", bzip2(bytes), Compression::Bzip2),
        ] {
            let got = run_compressed(sql, &csv, &z, c, threads);
            prop_assert_eq!(&got, &plain, "{} of {:?} with {:?}", what, data, csv);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions

fn fast_and_scalar(csv: &CsvInput, data: &[u8]) -> (Records, Records) {
    let fmt = CsvFormat::new(csv).unwrap();
    (
        records(&mut Scanner::new(fmt.clone()), data),
        records(&mut Scanner::scalar(fmt), data),
    )
}

/// Found by `fast_scanner_matches_scalar` and the `csv_reader` fuzz target: with a two-byte
/// record delimiter, a chunk whose first byte is the delimiter's last byte made the bitmask
/// scanner compute `last + 1 - rd.len()` = `0 + 1 - 2` (scan.rs), which panics with overflow
/// checks on (debug builds, `cargo fuzz`) and only works by wrapping in release.
#[test]
fn crlf_input_starting_with_lf() {
    let csv = CsvInput {
        record_delimiter: "\r\n".into(),
        ..CsvInput::default()
    };
    let want: Records = Ok(vec![vec!["\nx".into(), "1".into()]]);
    let (fast, scalar) = fast_and_scalar(&csv, b"\nx,1\r\n");
    assert_eq!(scalar, want);
    assert_eq!(fast, want);
}

#[test]
fn two_byte_delimiter_record_starting_with_its_last_byte() {
    let csv = CsvInput {
        record_delimiter: "ab".into(),
        ..CsvInput::default()
    };
    let want: Records = Ok(vec![vec!["b".into(), "1".into()], vec!["c".into()]]);
    let (fast, scalar) = fast_and_scalar(&csv, b"b,1abc");
    assert_eq!(scalar, want);
    assert_eq!(fast, want);
    // The same input through the whole engine.
    assert_eq!(
        run(COLS, &csv, b"b,1abc", 1, None),
        Ok(b"b,\nc,\n".to_vec())
    );
}
