//! Data-driven conformance suite for the S3 Select engine.
//!
//! Every `tests/conformance/*.cases` file holds cases; each case is run with 1 and 2 threads
//! and with chunk sizes of 4096 bytes and the default, and must give the same expected result
//! under all four. All failures are collected and printed at the end; the test fails if any
//! case failed, or if fewer than [`MIN_CASES`] cases were found (so cases cannot silently
//! vanish through a format slip).
//!
//! # The `.cases` format
//!
//! ```text
//! -- a comment line (outside blocks); blank lines between cases are ignored
//! ### trino count(*) shape                         <- starts a case; the rest of the line names it
//! sql: SELECT ' ' FROM S3Object s                  <- the SQL, one line
//! options: field=| comments=\uFDD0                 <- zero or more lines of key=value pairs
//! input:                                           <- block: every following line is a line of
//! 1|a|                                                input, each ended by "\n", up to the
//! 2|b|                                                next `expect…` line
//! expect:                                          <- block: expected output, each line ended
//!                                                     by "\n", up to the next `###` line or a
//!                                                     stats line
//! bytes-scanned: 8                                 <- optional Stats checks
//! ```
//!
//! Blocks drop their trailing blank lines (so cases can be separated by blank lines); an empty
//! block is empty input/output. Where bytes must be exact — no final newline, `\r\n`,
//! trailing blank lines, raw bytes — use the one-line forms instead of (or together with,
//! concatenated in order) the blocks:
//!
//! * `input-escaped: "a,b\r\nc,d"` — a double-quoted string with escapes `\n \r \t \\ \"
//!   \0 \s` (space), `\uXXXX`, `\u{X…}` and `\xHH` (one raw byte). An optional suffix `* N`
//!   repeats the string N times: `input-escaped: "x,1\n" * 1000`. Several lines concatenate.
//! * `input-hex: 61 2c ff 0a` — raw bytes in hex (whitespace ignored).
//! * `expect-escaped: "…"` (also `* N`) and `expect-hex:` — the same for the expected output.
//! * `expect-error: CastFailed` — the run must fail with this AWS error code instead.
//! * `expect-ok` — the run must succeed; the output is not checked (UTCNOW).
//! * `parquet-schema: a Int64; b Utf8; c Decimal128(7, 2)` — with `format=parquet`: the
//!   input (JSON Lines, one row a line) is written as a Parquet file with these columns,
//!   each type as Arrow spells it (`Date32`, `Timestamp(µs, "UTC")`, `List(Int64)`,
//!   `Struct("x": Int64)`, …), by the parquet crate's writer (Snappy, statistics on).
//!
//! The `sql:` line may contain `{{N*text}}`, replaced by `text` repeated N times (for
//! ExpressionTooLong and long IN lists).
//!
//! Stats lines: `bytes-scanned: N`, `bytes-processed: N`, `bytes-returned: N`; instead of N,
//! `input-size` stands for the size of the object as the runner built it (after compression).
//!
//! ## Options
//!
//! Values take the same escapes as strings (`field=\t`, `record=\r\n`, `comments=\uFDD0`,
//! `field=\s` for a space); an empty value (`quote=`) is the empty string.
//!
//! | key                             | meaning                                              |
//! |---------------------------------|------------------------------------------------------|
//! | `header=none\|ignore\|use`       | FileHeaderInfo                                       |
//! | `field=` `record=` `quote=`     | FieldDelimiter, RecordDelimiter, QuoteCharacter      |
//! | `escape=` `comments=`           | QuoteEscapeCharacter, Comments                       |
//! | `allow-quoted-record-delimiter=true\|false` | AllowQuotedRecordDelimiter               |
//! | `compression=none\|gzip\|bzip2`  | the runner compresses the input itself               |
//! | `gzip-members=N`                | split the input into N gzip members, concatenated    |
//! | `truncate-compressed=N`         | drop the last N bytes of the compressed input        |
//! | `scan-range=S:E`, `S:`, `:E`    | ScanRange Start/End (either may be omitted)          |
//! | `output=csv\|json`               | OutputSerialization                                  |
//! | `out-quote-fields=always\|asneeded` | CSVOutput QuoteFields                            |
//! | `out-field=` `out-record=`      | output delimiters (CSV; `out-record` also for JSON)  |
//! | `out-quote=` `out-escape=`      | CSVOutput QuoteCharacter, QuoteEscapeCharacter       |
//! | `dialect=aws\|ceph`              | SQL dialect                                          |
//! | `format=csv\|json-lines\|json-document\|parquet` | InputSerialization CSV, JSON (Type LINES/DOCUMENT) or Parquet |
//! | `row-group-rows=N`              | Parquet: at most N rows per row group                |
//! | `parquet-compression=snappy\|gzip\|none\|lz4` | Parquet: the column chunks' codec   |
//! | `repeat=N`                      | repeat the whole input N times                       |
//! | `expect-repeat=N`               | repeat the whole expected output N times             |
//!
//! Expected results come from AWS's documentation (S3 Select SQL reference, the
//! SelectObjectContent API reference) and, where AWS is silent, from the rules the engine
//! documents (eval/coerce.rs, csv/record.rs). Never from what the engine happens to print.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sift_engine::{
    Compression, CsvInput, CsvOutput, Dialect, FileHeaderInfo, InputFormat, JsonInput, JsonOutput,
    JsonType, OutputSerialization, QuoteFields, ScanRange, Select, SelectRequest, SliceSource,
    Stats,
};

/// The suite must hold at least this many cases.
const MIN_CASES: usize = 400;
/// ... of which at least this many read JSON input (issue #5).
const MIN_JSON_CASES: usize = 150;
/// ... and at least this many Parquet input.
const MIN_PARQUET_CASES: usize = 50;

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Output(Vec<u8>),
    Error(String),
    Ok,
}

#[derive(Debug)]
struct Case {
    file: String,
    line: usize,
    name: String,
    sql: String,
    request: SelectRequest,
    input: Vec<u8>,
    expect: Expect,
    stats: Vec<(String, u64)>,
}

/// Options that change how the input bytes are prepared, not the request.
#[derive(Debug, Default)]
struct Prep {
    repeat: usize,
    expect_repeat: usize,
    gzip_members: usize,
    truncate_compressed: usize,
    /// Parquet input: the columns, and the writer's settings.
    parquet_schema: Option<arrow_schema::SchemaRef>,
    row_group_rows: usize,
    /// Snappy when not given, as pyarrow and DuckDB write by default.
    parquet_codec: Option<parquet::basic::Compression>,
}

/// Decodes the escapes of option values and quoted strings into bytes.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let e = it.next().ok_or("dangling backslash")?;
        match e {
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            '0' => out.push(0),
            's' => out.push(b' '),
            '\\' => out.push(b'\\'),
            '"' => out.push(b'"'),
            'x' => {
                let h: String = it.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&h, 16).map_err(|_| format!("bad \\x{h}"))?);
            }
            'u' => {
                let hex: String = if it.peek() == Some(&'{') {
                    it.next();
                    let h: String = it.by_ref().take_while(|&c| c != '}').collect();
                    h
                } else {
                    it.by_ref().take(4).collect()
                };
                let cp = u32::from_str_radix(&hex, 16).map_err(|_| format!("bad \\u{hex}"))?;
                let ch = char::from_u32(cp).ok_or(format!("bad code point {hex}"))?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            other => return Err(format!("unknown escape \\{other}")),
        }
    }
    Ok(out)
}

fn unescape_str(s: &str) -> Result<String, String> {
    String::from_utf8(unescape(s)?).map_err(|_| format!("option value {s:?} is not UTF-8"))
}

/// `"…"` or `"…" * N`.
fn quoted(rest: &str) -> Result<Vec<u8>, String> {
    let rest = rest.trim();
    let body = rest
        .strip_prefix('"')
        .ok_or("expected a double-quoted string")?;
    // Find the closing quote: the first `"` not preceded by an odd number of backslashes.
    let bytes = body.as_bytes();
    let mut i = 0;
    let close = loop {
        match bytes.get(i) {
            None => return Err("unterminated string".into()),
            Some(b'\\') => i += 2,
            Some(b'"') => break i,
            Some(_) => i += 1,
        }
    };
    let s = unescape(&body[..close])?;
    let tail = body[close + 1..].trim();
    if tail.is_empty() {
        return Ok(s);
    }
    let n: usize = tail
        .strip_prefix('*')
        .ok_or(format!("unexpected {tail:?} after string"))?
        .trim()
        .parse()
        .map_err(|_| format!("bad repeat count in {tail:?}"))?;
    Ok(s.repeat(n))
}

fn hex(rest: &str) -> Result<Vec<u8>, String> {
    let digits: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| "bad hex".to_string()))
        .collect()
}

/// Expands `{{N*text}}` in the SQL.
fn expand_sql(sql: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = sql;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or("unterminated {{")?;
        let inner = &after[..close];
        let (n, text) = inner.split_once('*').ok_or("{{N*text}} needs a *")?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("bad count in {{{{{inner}}}}}"))?;
        out.push_str(&text.repeat(n));
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn set_option(
    req: &mut SelectRequest,
    prep: &mut Prep,
    key: &str,
    value: &str,
) -> Result<(), String> {
    let v = unescape_str(value)?;
    if key == "format" {
        req.input.format = match v.as_str() {
            "csv" => InputFormat::Csv(CsvInput::default()),
            "json-lines" => InputFormat::Json(JsonInput {
                json_type: JsonType::Lines,
            }),
            "json-document" => InputFormat::Json(JsonInput {
                json_type: JsonType::Document,
            }),
            "parquet" => InputFormat::Parquet,
            _ => return Err(format!("format={v}?")),
        };
        return Ok(());
    }
    let csv_only = matches!(
        key,
        "header"
            | "field"
            | "record"
            | "quote"
            | "escape"
            | "comments"
            | "allow-quoted-record-delimiter"
    );
    let mut no_csv = CsvInput::default();
    let csv = match &mut req.input.format {
        InputFormat::Csv(c) => c,
        InputFormat::Json(_) | InputFormat::Parquet if csv_only => {
            return Err(format!(
                "{key} is a CSV option (put format= after it, or drop it)"
            ))
        }
        InputFormat::Json(_) | InputFormat::Parquet => &mut no_csv,
    };
    let num = |v: &str| {
        v.parse::<usize>()
            .map_err(|_| format!("{key}: bad number {v:?}"))
    };
    match key {
        "header" => {
            csv.file_header_info = match v.as_str() {
                "none" => FileHeaderInfo::None,
                "ignore" => FileHeaderInfo::Ignore,
                "use" => FileHeaderInfo::Use,
                _ => return Err(format!("header={v}?")),
            }
        }
        "field" => csv.field_delimiter = v,
        "record" => csv.record_delimiter = v,
        "quote" => csv.quote_character = v,
        "escape" => csv.quote_escape_character = v,
        "comments" => csv.comments = v,
        "allow-quoted-record-delimiter" => {
            csv.allow_quoted_record_delimiter = v.parse().map_err(|_| format!("{key}={v}?"))?
        }
        "compression" => {
            req.input.compression = match v.as_str() {
                "none" => Compression::None,
                "gzip" => Compression::Gzip,
                "bzip2" => Compression::Bzip2,
                _ => return Err(format!("compression={v}?")),
            }
        }
        "gzip-members" => prep.gzip_members = num(&v)?,
        "truncate-compressed" => prep.truncate_compressed = num(&v)?,
        "scan-range" => {
            let (s, e) = v.split_once(':').ok_or("scan-range=S:E")?;
            let p = |x: &str| -> Result<Option<u64>, String> {
                if x.is_empty() {
                    Ok(None)
                } else {
                    x.parse().map(Some).map_err(|_| format!("scan-range {x:?}"))
                }
            };
            req.scan_range = Some(ScanRange {
                start: p(s)?,
                end: p(e)?,
            });
        }
        "output" => {
            req.output = match v.as_str() {
                "csv" => OutputSerialization::Csv(CsvOutput::default()),
                "json" => OutputSerialization::Json(JsonOutput::default()),
                _ => return Err(format!("output={v}?")),
            }
        }
        "out-record" => match &mut req.output {
            OutputSerialization::Csv(c) => c.record_delimiter = v,
            OutputSerialization::Json(j) => j.record_delimiter = v,
            OutputSerialization::Arrow(_) => return Err(format!("{key} needs text output")),
        },
        "out-quote-fields" | "out-field" | "out-quote" | "out-escape" => {
            let OutputSerialization::Csv(c) = &mut req.output else {
                return Err(format!("{key} needs output=csv (put output= first)"));
            };
            match key {
                "out-quote-fields" => {
                    c.quote_fields = match v.as_str() {
                        "always" => QuoteFields::Always,
                        "asneeded" => QuoteFields::AsNeeded,
                        _ => return Err(format!("out-quote-fields={v}?")),
                    }
                }
                "out-field" => c.field_delimiter = v,
                "out-quote" => c.quote_character = v,
                _ => c.quote_escape_character = v,
            }
        }
        "dialect" => {
            req.dialect = match v.as_str() {
                "aws" => Dialect::Aws,
                "ceph" => Dialect::Ceph,
                _ => return Err(format!("dialect={v}?")),
            }
        }
        "repeat" => prep.repeat = num(&v)?,
        "row-group-rows" => prep.row_group_rows = num(&v)?,
        "parquet-compression" => {
            prep.parquet_codec = Some(match v.as_str() {
                "snappy" => parquet::basic::Compression::SNAPPY,
                "gzip" => parquet::basic::Compression::GZIP(Default::default()),
                "none" => parquet::basic::Compression::UNCOMPRESSED,
                "lz4" => parquet::basic::Compression::LZ4_RAW,
                _ => return Err(format!("parquet-compression={v}?")),
            })
        }
        "expect-repeat" => prep.expect_repeat = num(&v)?,
        _ => return Err(format!("unknown option {key:?}")),
    }
    Ok(())
}

/// Joins block lines, each ended by `\n`, after dropping trailing blank lines.
fn block(lines: &mut Vec<String>) -> Vec<u8> {
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut out = Vec::new();
    for l in lines.drain(..) {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
    }
    out
}

const STATS_KEYS: [&str; 3] = ["bytes-scanned", "bytes-processed", "bytes-returned"];

/// Marks a stats expectation of `input-size`.
const INPUT_SIZE: u64 = u64::MAX;

fn stats_value(v: &str) -> Option<u64> {
    match v.trim() {
        "input-size" => Some(INPUT_SIZE),
        n => n.parse().ok(),
    }
}

fn is_stats_line(l: &str) -> bool {
    STATS_KEYS.iter().any(|k| {
        l.strip_prefix(k)
            .and_then(|r| r.strip_prefix(':'))
            .is_some_and(|r| stats_value(r).is_some())
    })
}

fn is_expect_line(l: &str) -> bool {
    l == "expect:"
        || l == "expect-ok"
        || l.starts_with("expect-error:")
        || l.starts_with("expect-escaped:")
        || l.starts_with("expect-hex:")
}

#[derive(PartialEq)]
enum Mode {
    Head,
    Input,
    Expect,
}

struct Builder {
    file: String,
    line: usize,
    name: String,
    sql: Option<String>,
    request: SelectRequest,
    prep: Prep,
    input: Vec<u8>,
    input_lines: Vec<String>,
    expect: Option<Expect>,
    expect_lines: Vec<String>,
    stats: Vec<(String, u64)>,
}

impl Builder {
    fn new(file: &str, line: usize, name: &str) -> Self {
        Builder {
            file: file.into(),
            line,
            name: name.into(),
            sql: None,
            request: SelectRequest::default(),
            prep: Prep::default(),
            input: Vec::new(),
            input_lines: Vec::new(),
            expect: None,
            expect_lines: Vec::new(),
            stats: Vec::new(),
        }
    }

    fn flush_input(&mut self) {
        let b = block(&mut self.input_lines);
        self.input.extend_from_slice(&b);
    }

    fn expect_bytes(&mut self) -> Result<&mut Vec<u8>, String> {
        if self.expect.is_none() {
            self.expect = Some(Expect::Output(Vec::new()));
        }
        match &mut self.expect {
            Some(Expect::Output(v)) => Ok(v),
            _ => Err("output expectation mixed with expect-error/expect-ok".into()),
        }
    }

    fn flush_expect(&mut self) -> Result<(), String> {
        if self.expect_lines.is_empty() {
            return Ok(());
        }
        let b = block(&mut self.expect_lines);
        self.expect_bytes()?.extend_from_slice(&b);
        Ok(())
    }

    fn finish(mut self) -> Result<Case, String> {
        self.flush_input();
        self.flush_expect()?;
        let sql = self.sql.ok_or("no sql:")?;
        let mut expect = self.expect.ok_or("no expect:/expect-error:/expect-ok")?;
        let mut input = self.input;
        if self.prep.repeat > 1 {
            input = input.repeat(self.prep.repeat);
        }
        if self.request.input.format == InputFormat::Parquet {
            input = to_parquet(&input, &self.prep)?;
        }
        if self.prep.expect_repeat > 1 {
            if let Expect::Output(o) = &mut expect {
                *o = o.repeat(self.prep.expect_repeat);
            }
        }
        input = compress(
            &input,
            self.request.input.compression,
            self.prep.gzip_members.max(1),
        );
        input.truncate(input.len().saturating_sub(self.prep.truncate_compressed));
        let mut request = self.request;
        request.sql = sql.clone();
        Ok(Case {
            file: self.file,
            line: self.line,
            name: self.name,
            sql,
            request,
            input,
            expect,
            stats: self.stats,
        })
    }
}

/// Writes JSON Lines rows as a Parquet file with the case's schema.
fn to_parquet(json_lines: &[u8], prep: &Prep) -> Result<Vec<u8>, String> {
    // Without a schema the input is taken as the file's bytes (for malformed files).
    let Some(schema) = prep.parquet_schema.clone() else {
        return Ok(json_lines.to_vec());
    };
    // The JSON reader has no dictionary columns: read their values, then encode.
    let plain = arrow_schema::Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                arrow_schema::DataType::Dictionary(_, v) => {
                    f.as_ref().clone().with_data_type(*v.clone())
                }
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
    );
    let reader = arrow_json::ReaderBuilder::new(std::sync::Arc::new(plain))
        .build(json_lines)
        .map_err(|e| format!("parquet input: {e}"))?;
    let mut props = parquet::file::properties::WriterProperties::builder()
        .set_compression(
            prep.parquet_codec
                .unwrap_or(parquet::basic::Compression::SNAPPY),
        )
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk);
    if prep.row_group_rows > 0 {
        props = props.set_max_row_group_row_count(Some(prep.row_group_rows));
    }
    let mut out = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut out, schema.clone(), Some(props.build()))
            .map_err(|e| format!("parquet writer: {e}"))?;
    for batch in reader {
        let batch = batch.map_err(|e| format!("parquet input: {e}"))?;
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| arrow_cast::cast(c, f.data_type()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("parquet input: {e}"))?;
        let batch = arrow_array::RecordBatch::try_new(schema.clone(), columns)
            .map_err(|e| format!("parquet input: {e}"))?;
        // One batch per row: the writer cuts row groups between writes.
        for i in 0..batch.num_rows() {
            writer
                .write(&batch.slice(i, 1))
                .map_err(|e| format!("parquet writer: {e}"))?;
        }
    }
    writer.close().map_err(|e| format!("parquet writer: {e}"))?;
    Ok(out)
}

/// `a Int64; b Utf8` → an Arrow schema (nullable columns).
fn parquet_schema(spec: &str) -> Result<arrow_schema::SchemaRef, String> {
    let fields = spec
        .split(';')
        .filter(|c| !c.trim().is_empty())
        .map(|c| {
            let (name, ty) = c
                .trim()
                .split_once(' ')
                .ok_or(format!("parquet-schema column {c:?}: NAME TYPE"))?;
            let ty: arrow_schema::DataType = ty
                .trim()
                .parse()
                .map_err(|e| format!("parquet-schema type {ty:?}: {e}"))?;
            Ok(arrow_schema::Field::new(name, ty, true))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(std::sync::Arc::new(arrow_schema::Schema::new(fields)))
}

fn compress(data: &[u8], c: Compression, members: usize) -> Vec<u8> {
    match c {
        Compression::None => data.to_vec(),
        Compression::Gzip => {
            let mut out = Vec::new();
            let per = data.len().div_ceil(members).max(1);
            let parts: Vec<&[u8]> = if data.is_empty() {
                vec![data]
            } else {
                data.chunks(per).collect()
            };
            for part in parts {
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(part).unwrap();
                out.extend(enc.finish().unwrap());
            }
            out
        }
        Compression::Bzip2 => {
            let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        }
    }
}

fn parse_file(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cases = Vec::new();
    let mut cur: Option<Builder> = None;
    let mut mode = Mode::Head;
    let err = |line: usize, m: String| format!("{file}:{line}: {m}");
    for (i, raw) in text.split('\n').enumerate() {
        let n = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(name) = line.strip_prefix("### ") {
            if let Some(b) = cur.take() {
                let l = b.line;
                cases.push(b.finish().map_err(|m| err(l, m))?);
            }
            cur = Some(Builder::new(&file, n, name.trim()));
            mode = Mode::Head;
            continue;
        }
        if mode == Mode::Input && !is_expect_line(line) {
            if let Some(b) = cur.as_mut() {
                b.input_lines.push(line.to_string());
            }
            continue;
        }
        if mode == Mode::Expect && !is_stats_line(line) {
            if let Some(b) = cur.as_mut() {
                b.expect_lines.push(line.to_string());
            }
            continue;
        }
        let Some(b) = cur.as_mut() else {
            if line.trim().is_empty() || line.starts_with("--") {
                continue;
            }
            return Err(err(n, format!("text outside a case: {line:?}")));
        };
        if line.trim().is_empty() || line.starts_with("--") {
            continue;
        }
        if mode == Mode::Input {
            b.flush_input();
            mode = Mode::Head;
        }
        if mode == Mode::Expect {
            b.flush_expect().map_err(|m| err(n, m))?;
            mode = Mode::Head;
        }
        let (key, rest) = match line.split_once(':') {
            Some((k, r)) => (k.trim(), r.strip_prefix(' ').unwrap_or(r)),
            None => (line.trim(), ""),
        };
        let r: Result<(), String> = (|| {
            match key {
                "sql" => b.sql = Some(expand_sql(rest.trim())?),
                "options" => {
                    for kv in rest.split_whitespace() {
                        let (k, v) = kv.split_once('=').ok_or(format!("option {kv:?}: no ="))?;
                        set_option(&mut b.request, &mut b.prep, k, v)?;
                    }
                }
                "input" => {
                    if !rest.trim().is_empty() {
                        return Err("input: takes a block on the following lines".into());
                    }
                    mode = Mode::Input;
                }
                "input-escaped" => {
                    let s = quoted(rest)?;
                    b.input.extend_from_slice(&s);
                }
                "parquet-schema" => b.prep.parquet_schema = Some(parquet_schema(rest)?),
                "input-hex" => {
                    let s = hex(rest)?;
                    b.input.extend_from_slice(&s);
                }
                "expect" => {
                    b.expect_bytes()?;
                    mode = Mode::Expect;
                }
                "expect-escaped" => {
                    let s = quoted(rest)?;
                    b.expect_bytes()?.extend_from_slice(&s);
                }
                "expect-hex" => {
                    let s = hex(rest)?;
                    b.expect_bytes()?.extend_from_slice(&s);
                }
                "expect-error" => {
                    if b.expect.is_some() {
                        return Err("two expectations".into());
                    }
                    b.expect = Some(Expect::Error(rest.trim().to_string()));
                }
                "expect-ok" => {
                    if b.expect.is_some() {
                        return Err("two expectations".into());
                    }
                    b.expect = Some(Expect::Ok);
                }
                k if STATS_KEYS.contains(&k) => {
                    let v = stats_value(rest).ok_or(format!("{k}: bad number"))?;
                    b.stats.push((k.to_string(), v));
                }
                other => return Err(format!("unknown directive {other:?}")),
            }
            Ok(())
        })();
        r.map_err(|m| err(n, m))?;
    }
    if let Some(b) = cur.take() {
        let l = b.line;
        cases.push(b.finish().map_err(|m| err(l, m))?);
    }
    Ok(cases)
}

/// Shows bytes as an escaped string, for failure messages.
fn show(b: &[u8]) -> String {
    let mut s = String::from("\"");
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => s.push_str("\\n"),
                '\r' => s.push_str("\\r"),
                '\t' => s.push_str("\\t"),
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                c if c.is_control() => {
                    let _ = write!(s, "\\u{{{:x}}}", c as u32);
                }
                c => s.push(c),
            }
        }
        for &x in chunk.invalid() {
            let _ = write!(s, "\\x{x:02x}");
        }
    }
    s.push('"');
    if s.len() > 600 {
        let cut: String = s.chars().take(600).collect();
        return format!("{cut}… ({} bytes)", b.len());
    }
    s
}

/// Runs one case under one configuration; `Err` describes the mismatch.
fn run_one(case: &Case, threads: usize, chunk: Option<usize>) -> Result<(), String> {
    let result = Select::new(case.request.clone()).and_then(|s| {
        let mut s = s.with_threads(threads);
        if let Some(c) = chunk {
            s = s.with_chunk_size(c);
        }
        let mut out = Vec::new();
        let stats = s.run(&SliceSource(&case.input), &mut out)?;
        Ok((out, stats))
    });
    match (&case.expect, result) {
        (Expect::Error(code), Err(e)) if e.code.as_str() == code => Ok(()),
        (Expect::Error(code), Err(e)) => Err(format!(
            "expected error {code}\n     got error {}: {}",
            e.code, e.message
        )),
        (Expect::Error(code), Ok((out, _))) => Err(format!(
            "expected error {code}\n     got output {}",
            show(&out)
        )),
        (_, Err(e)) => Err(format!("unexpected error {}: {}", e.code, e.message)),
        (Expect::Ok, Ok((_, stats))) => check_stats(case, &stats),
        (Expect::Output(want), Ok((out, stats))) => {
            if &out != want {
                Err(format!(
                    "expected {}\n     got      {}",
                    show(want),
                    show(&out)
                ))
            } else {
                check_stats(case, &stats)
            }
        }
    }
}

fn check_stats(case: &Case, stats: &Stats) -> Result<(), String> {
    for (k, want) in &case.stats {
        let want = if *want == INPUT_SIZE {
            &(case.input.len() as u64)
        } else {
            want
        };
        let got = match k.as_str() {
            "bytes-scanned" => stats.bytes_scanned,
            "bytes-processed" => stats.bytes_processed,
            _ => stats.bytes_returned,
        };
        if got != *want {
            return Err(format!("expected {k} {want}, got {got}"));
        }
    }
    Ok(())
}

fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cases"))
        .collect();
    files.sort();
    files
}

#[test]
fn conformance() {
    let filter = std::env::var("CONFORMANCE_FILTER").ok();
    let mut cases = Vec::new();
    let mut by_file = Vec::new();
    for f in case_files() {
        let c = parse_file(&f).unwrap_or_else(|e| panic!("{e}"));
        by_file.push((
            f.file_name().unwrap().to_string_lossy().into_owned(),
            c.len(),
        ));
        cases.extend(c);
    }
    let mut names = std::collections::HashSet::new();
    for c in &cases {
        assert!(
            names.insert((c.file.clone(), c.name.clone())),
            "{}:{}: duplicate case name {:?}",
            c.file,
            c.line,
            c.name
        );
    }
    let configs = [(1, Some(4096)), (1, None), (2, Some(4096)), (2, None)];
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        if filter.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        ran += 1;
        let mut problems = Vec::new();
        for (threads, chunk) in configs {
            if let Err(m) = run_one(case, threads, chunk) {
                let cfg = format!(
                    "threads={threads} chunk={}",
                    chunk.map_or("default".to_string(), |c| c.to_string())
                );
                // Group configurations that fail the same way.
                match problems
                    .iter_mut()
                    .find(|(_, pm): &&mut (Vec<String>, String)| *pm == m)
                {
                    Some((cfgs, _)) => cfgs.push(cfg),
                    None => problems.push((vec![cfg], m)),
                }
            }
        }
        if !problems.is_empty() {
            let mut msg = format!(
                "--- {}:{} [{}]\n    sql: {}\n",
                case.file,
                case.line,
                case.name,
                if case.sql.len() > 300 {
                    format!("{}… ({} bytes)", &case.sql[..300], case.sql.len())
                } else {
                    case.sql.clone()
                }
            );
            for (cfgs, m) in problems {
                let _ = writeln!(msg, "    ({})\n     {m}", cfgs.join(", "));
            }
            failures.push(msg);
        }
    }
    println!(
        "conformance: {} cases in {} files",
        cases.len(),
        by_file.len()
    );
    for (f, n) in &by_file {
        println!("  {f}: {n}");
    }
    if !failures.is_empty() {
        println!("\n{} of {ran} cases FAILED:\n", failures.len());
        for f in &failures {
            println!("{f}");
        }
        let names: Vec<&str> = failures
            .iter()
            .map(|f| f.lines().next().unwrap_or(""))
            .collect();
        panic!(
            "{} of {ran} conformance cases failed:\n{}",
            failures.len(),
            names.join("\n")
        );
    }
    if filter.is_none() {
        assert!(
            cases.len() >= MIN_CASES,
            "only {} conformance cases found; expected at least {MIN_CASES}",
            cases.len()
        );
        let json = cases
            .iter()
            .filter(|c| matches!(c.request.input.format, InputFormat::Json(_)))
            .count();
        assert!(
            json >= MIN_JSON_CASES,
            "only {json} JSON conformance cases found; expected at least {MIN_JSON_CASES}"
        );
        let parquet = cases
            .iter()
            .filter(|c| c.request.input.format == InputFormat::Parquet)
            .count();
        assert!(
            parquet >= MIN_PARQUET_CASES,
            "only {parquet} Parquet conformance cases found; expected at least \
             {MIN_PARQUET_CASES}"
        );
    }
}
