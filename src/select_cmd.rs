//! `sift select`: the engine on a local file, with every SelectObjectContent option as a flag.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use sift_engine::{
    Compression, CsvInput, CsvOutput, Dialect, FileHeaderInfo, FileSource, InputFormat,
    InputSerialization, JsonInput, JsonOutput, JsonType, ObjectSource, OutputSerialization,
    QuoteFields, ScanRange, Select, SelectError, SelectRequest, Sink, SliceSource, StreamSource,
};

#[derive(Args, Debug)]
pub struct SelectArgs {
    /// The object to query; `-` reads standard input.
    #[arg(long)]
    file: PathBuf,
    /// The object's format (InputSerialization CSV, JSON with Type LINES or DOCUMENT, or
    /// Parquet). The CSV options below apply to CSV only.
    #[arg(long, value_enum, default_value_t = InFormat::Csv)]
    input: InFormat,
    /// The SQL statement (or use --sql-file).
    #[arg(required_unless_present = "sql_file", conflicts_with = "sql_file")]
    sql: Option<String>,
    /// Read the SQL statement from a file.
    #[arg(long)]
    sql_file: Option<PathBuf>,
    #[arg(long, default_value = ",")]
    field_delimiter: String,
    /// Record delimiter; `\n`, `\r\n`, `\r` and `\t` are understood as escapes.
    #[arg(long, default_value = "\\n")]
    record_delimiter: String,
    /// Quote character; an empty string disables quoting.
    #[arg(long, default_value = "\"")]
    quote: String,
    #[arg(long, default_value = "\"")]
    quote_escape: String,
    /// Comment marker; an empty string disables comment lines.
    #[arg(long, default_value = "#")]
    comments: String,
    #[arg(long, value_enum, default_value_t = Header::None)]
    header: Header,
    /// Allow record delimiters inside quoted fields (AllowQuotedRecordDelimiter).
    #[arg(long)]
    allow_quoted_record_delimiter: bool,
    #[arg(long, value_enum, default_value_t = Compress::None)]
    compression: Compress,
    /// ScanRange as START:END, START: or :END (bytes, END inclusive).
    #[arg(long)]
    scan_range: Option<String>,
    /// Result format: CSV or JSON text, or `arrow`, an Arrow IPC stream of typed columns
    /// (every selected column needs a fixed type: docs/sql.md).
    #[arg(long, value_enum, default_value_t = OutFormat::Csv)]
    output: OutFormat,
    #[arg(long, value_enum, default_value_t = QuoteMode::Asneeded)]
    quote_fields: QuoteMode,
    /// Output field delimiter (CSV output).
    #[arg(long, default_value = ",")]
    output_field_delimiter: String,
    /// Output record delimiter.
    #[arg(long, default_value = "\\n")]
    output_record_delimiter: String,
    /// Output quote character (CSV output).
    #[arg(long, default_value = "\"")]
    output_quote: String,
    /// Output quote escape character (CSV output).
    #[arg(long, default_value = "\"")]
    output_quote_escape: String,
    #[arg(long, value_enum, default_value_t = SqlDialect::Aws)]
    dialect: SqlDialect,
    /// Worker threads (chunks in parallel, output in order).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Print BytesScanned, BytesProcessed and BytesReturned on stderr.
    #[arg(long)]
    stats: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum InFormat {
    Csv,
    JsonLines,
    JsonDocument,
    Parquet,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Header {
    None,
    Ignore,
    Use,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Compress {
    None,
    Gzip,
    Bzip2,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum OutFormat {
    Csv,
    Json,
    Arrow,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum QuoteMode {
    Always,
    Asneeded,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SqlDialect {
    Aws,
    Ceph,
}

/// `\n`, `\r`, `\t` and `\\` written on a command line.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn parse_scan_range(s: &str) -> Result<ScanRange, String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("--scan-range {s:?}: expected START:END, START: or :END"))?;
    let num = |t: &str| -> Result<Option<u64>, String> {
        if t.is_empty() {
            Ok(None)
        } else {
            t.parse()
                .map(Some)
                .map_err(|_| format!("--scan-range {s:?}: {t:?} is not a byte offset"))
        }
    };
    Ok(ScanRange {
        start: num(a)?,
        end: num(b)?,
    })
}

/// Writes results to stdout; a closed pipe (`| head`) ends the scan quietly.
struct StdoutSink {
    out: io::BufWriter<io::Stdout>,
    /// The reader went away: not an error of the query.
    closed: bool,
}

impl Sink for StdoutSink {
    fn write(&mut self, data: &[u8]) -> sift_engine::Result<()> {
        self.out.write_all(data).map_err(|e| {
            self.closed = e.kind() == io::ErrorKind::BrokenPipe;
            SelectError::new(
                sift_engine::ErrorCode::InternalError,
                format!("stdout: {e}"),
            )
        })
    }
}

fn build_request(args: &SelectArgs) -> Result<SelectRequest, String> {
    let sql = match (&args.sql, &args.sql_file) {
        (Some(s), _) => s.clone(),
        (None, Some(p)) => std::fs::read_to_string(p)
            .map_err(|e| format!("cannot read --sql-file {}: {e}", p.display()))?,
        (None, None) => return Err("no SQL given".into()),
    };
    let csv = CsvInput {
        file_header_info: match args.header {
            Header::None => FileHeaderInfo::None,
            Header::Ignore => FileHeaderInfo::Ignore,
            Header::Use => FileHeaderInfo::Use,
        },
        field_delimiter: unescape(&args.field_delimiter),
        record_delimiter: unescape(&args.record_delimiter),
        quote_character: args.quote.clone(),
        quote_escape_character: args.quote_escape.clone(),
        comments: args.comments.clone(),
        allow_quoted_record_delimiter: args.allow_quoted_record_delimiter,
    };
    let output = match args.output {
        OutFormat::Csv => OutputSerialization::Csv(CsvOutput {
            quote_fields: match args.quote_fields {
                QuoteMode::Always => QuoteFields::Always,
                QuoteMode::Asneeded => QuoteFields::AsNeeded,
            },
            field_delimiter: unescape(&args.output_field_delimiter),
            record_delimiter: unescape(&args.output_record_delimiter),
            quote_character: args.output_quote.clone(),
            quote_escape_character: args.output_quote_escape.clone(),
        }),
        OutFormat::Json => OutputSerialization::Json(JsonOutput {
            record_delimiter: unescape(&args.output_record_delimiter),
        }),
        OutFormat::Arrow => OutputSerialization::Arrow(Default::default()),
    };
    Ok(SelectRequest {
        sql,
        dialect: match args.dialect {
            SqlDialect::Aws => Dialect::Aws,
            SqlDialect::Ceph => Dialect::Ceph,
        },
        input: InputSerialization {
            format: match args.input {
                InFormat::Csv => InputFormat::Csv(csv),
                InFormat::JsonLines => InputFormat::Json(JsonInput {
                    json_type: JsonType::Lines,
                }),
                InFormat::JsonDocument => InputFormat::Json(JsonInput {
                    json_type: JsonType::Document,
                }),
                InFormat::Parquet => InputFormat::Parquet,
            },
            compression: match args.compression {
                Compress::None => Compression::None,
                Compress::Gzip => Compression::Gzip,
                Compress::Bzip2 => Compression::Bzip2,
            },
        },
        output,
        scan_range: args
            .scan_range
            .as_deref()
            .map(parse_scan_range)
            .transpose()?,
    })
}

pub fn run(args: SelectArgs) -> ExitCode {
    let request = match build_request(&args) {
        Ok(r) => r,
        Err(msg) => {
            eprintln!("sift select: {msg}");
            return ExitCode::from(2);
        }
    };
    let select = match Select::new(request) {
        Ok(s) => s.with_threads(args.threads),
        Err(e) => return report(&e),
    };
    let stdin_source;
    let stdin_bytes;
    let memory_source;
    let file_source;
    let source: &dyn ObjectSource = if args.file.as_os_str() == "-" {
        if matches!(args.input, InFormat::Parquet) {
            // Parquet is read from its end: take the whole stream first.
            let mut all = Vec::new();
            if let Err(e) = io::stdin().read_to_end(&mut all) {
                eprintln!("sift select: reading standard input: {e}");
                return ExitCode::from(1);
            }
            stdin_bytes = all;
            memory_source = SliceSource(&stdin_bytes);
            &memory_source
        } else {
            stdin_source = StreamSource::new(io::stdin(), None);
            &stdin_source
        }
    } else {
        // SAFETY: like grep and ripgrep, `sift select` maps the file it is given and assumes
        // nothing rewrites it during the scan.
        match unsafe { FileSource::mapped(&args.file) } {
            Ok(f) => {
                file_source = f;
                &file_source
            }
            Err(e) => {
                eprintln!("sift select: cannot open {}: {e}", args.file.display());
                return ExitCode::from(1);
            }
        }
    };
    let mut sink = StdoutSink {
        out: io::BufWriter::with_capacity(1 << 16, io::stdout()),
        closed: false,
    };
    let result = select.run(source, &mut sink);
    if sink.closed {
        return ExitCode::SUCCESS;
    }
    let flushed = sink.out.flush();
    match result {
        Ok(stats) => {
            if let Err(e) = flushed {
                if e.kind() != io::ErrorKind::BrokenPipe {
                    eprintln!("sift select: stdout: {e}");
                    return ExitCode::from(1);
                }
            }
            if args.stats {
                eprintln!("BytesScanned: {}", stats.bytes_scanned);
                eprintln!("BytesProcessed: {}", stats.bytes_processed);
                eprintln!("BytesReturned: {}", stats.bytes_returned);
            }
            ExitCode::SUCCESS
        }
        Err(e) => report(&e),
    }
}

fn report(e: &SelectError) -> ExitCode {
    eprintln!("{}: {}", e.code, e.message);
    ExitCode::from(1)
}
