//! Arbitrary bytes as a CSV object, read in arbitrary formats.
//!
//! The first bytes of the input choose the options (delimiters, quote, escape, comment
//! marker, AllowQuotedRecordDelimiter, header handling, compression); the rest is the object.
//! Each case runs `SELECT *` and a filtered projection through `Select` with one thread and
//! 4 KiB chunks. Nothing may panic, and where the format is valid the bitmask scanner must
//! read exactly the records the scalar reference reader reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sift_engine::csv::{CsvFormat, Flow, Scanner};
use sift_engine::{
    Compression, CsvInput, ErrorCode, FileHeaderInfo, InputSerialization, Select, SelectRequest,
    SliceSource,
};

const FIELD: &[&str] = &[",", "|", ";", "\t", "§", "ab"];
const RECORD: &[&str] = &["\n", "\r\n", ";", "ab", "é", "\u{FDD0}"];
const QUOTE: &[&str] = &["\"", "'", "", "é"];
const ESCAPE: &[&str] = &["", "\\", "\"", "'"];
const COMMENT: &[&str] = &["#", "", "\u{FDD0}", "a"];
const HEADER: &[FileHeaderInfo] = &[
    FileHeaderInfo::None,
    FileHeaderInfo::Ignore,
    FileHeaderInfo::Use,
];
const QUERIES: &[&str] = &[
    "SELECT * FROM S3Object s",
    "SELECT s._1, s._3 FROM S3Object s WHERE s._2 LIKE '%a%' OR CHAR_LENGTH(s._1) > 2",
    "SELECT COUNT(*) FROM S3Object s WHERE s._1 <> '' LIMIT 3",
];

fn pick<T: Copy>(options: &[T], b: u8) -> T {
    options[b as usize % options.len()]
}

type Records = Result<Vec<Vec<Vec<u8>>>, ErrorCode>;

fn records(mut scanner: Scanner, data: &[u8]) -> Records {
    let mut all = Vec::new();
    scanner
        .scan(data, |rec| {
            all.push(
                (0..rec.len())
                    .map(|i| rec.field(i).unwrap_or_default().to_vec())
                    .collect(),
            );
            Ok(Flow::Continue)
        })
        .map_err(|e| e.code)?;
    Ok(all)
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let (opts, data) = input.split_at(4);
    let csv = CsvInput {
        file_header_info: pick(HEADER, opts[2] >> 4),
        field_delimiter: pick(FIELD, opts[0]).into(),
        record_delimiter: pick(RECORD, opts[0] >> 4).into(),
        quote_character: pick(QUOTE, opts[1]).into(),
        quote_escape_character: pick(ESCAPE, opts[1] >> 4).into(),
        comments: pick(COMMENT, opts[2]).into(),
        allow_quoted_record_delimiter: opts[3] & 1 != 0,
    };
    // Mostly plain input; sometimes the bytes are read as a (most likely corrupt) GZIP or
    // BZIP2 stream.
    let compression = match opts[3] >> 1 & 7 {
        6 => Compression::Gzip,
        7 => Compression::Bzip2,
        _ => Compression::None,
    };

    if compression == Compression::None {
        if let Ok(fmt) = CsvFormat::new(&csv) {
            let fast = records(Scanner::new(fmt.clone()), data);
            let scalar = records(Scanner::scalar(fmt), data);
            assert_eq!(
                fast, scalar,
                "fast and scalar scanners disagree with {csv:?}"
            );
        }
    }

    for sql in QUERIES {
        let req = SelectRequest {
            sql: (*sql).into(),
            input: InputSerialization::csv(csv.clone(), compression),
            ..Default::default()
        };
        let Ok(select) = Select::new(req) else {
            continue;
        };
        let select = select.with_threads(1).with_chunk_size(4096);
        let mut out = Vec::new();
        let _ = select.run(&SliceSource(data), &mut out);
    }
});
