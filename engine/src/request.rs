//! What a caller asks for: the SQL, how to read the object, how to write the result.
//!
//! The shapes mirror SelectObjectContent's XML (`InputSerialization`, `OutputSerialization`,
//! `ScanRange`) so that the gateway maps one onto the other field by field, and each
//! `Default` is AWS's default for that element.

use crate::err;
use crate::error::Result;
pub use crate::sql::Dialect;

/// One SelectObjectContent request, as the engine needs it.
#[derive(Debug, Clone, Default)]
pub struct SelectRequest {
    pub sql: String,
    pub dialect: Dialect,
    pub input: InputSerialization,
    pub output: OutputSerialization,
    pub scan_range: Option<ScanRange>,
}

#[derive(Debug, Clone, Default)]
pub struct InputSerialization {
    pub format: InputFormat,
    pub compression: Compression,
}

/// The object's format: `InputSerialization`'s `CSV`, `JSON` or `Parquet` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputFormat {
    Csv(CsvInput),
    Json(JsonInput),
    /// AWS's `ParquetInput` has no options: the file describes itself.
    Parquet,
}

impl Default for InputFormat {
    fn default() -> Self {
        InputFormat::Csv(CsvInput::default())
    }
}

/// AWS's `JSONInput`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JsonInput {
    pub json_type: JsonType,
}

/// AWS's `JSONType`. AWS requires it; DOCUMENT is what a missing element means here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JsonType {
    /// Top-level values one after another, each possibly spanning lines.
    #[default]
    Document,
    /// One value per line.
    Lines,
}

impl InputSerialization {
    /// CSV input with these options.
    pub fn csv(csv: CsvInput, compression: Compression) -> Self {
        InputSerialization {
            format: InputFormat::Csv(csv),
            compression,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    /// Streamed; concatenated members are read as one stream, as `gzip -d` does.
    Gzip,
    Bzip2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileHeaderInfo {
    /// The first record is data; columns are `_1`, `_2`, …
    #[default]
    None,
    /// The first record is skipped; columns are positional.
    Ignore,
    /// The first record names the columns; both names and positions may be used.
    Use,
}

/// AWS's `CSVInput`. Delimiters, quote and comment markers are strings because AWS accepts
/// any character, including non-ASCII ones such as Trino's U+FDD0 comment marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvInput {
    pub file_header_info: FileHeaderInfo,
    pub field_delimiter: String,
    /// One or two characters (`\n`, `\r\n`, …).
    pub record_delimiter: String,
    /// Empty disables quoting.
    pub quote_character: String,
    /// Inside a quoted field, this followed by the quote character is a literal quote. Equal to
    /// the quote character by default, which gives the usual doubled-quote (`""`) escape.
    pub quote_escape_character: String,
    /// A record starting with this is skipped. AWS's default is `#`; empty disables comments.
    pub comments: String,
    /// When false (AWS's default) a record delimiter always ends the record, even inside
    /// quotes; when true, quoted fields may contain it.
    pub allow_quoted_record_delimiter: bool,
}

impl Default for CsvInput {
    fn default() -> Self {
        CsvInput {
            file_header_info: FileHeaderInfo::None,
            field_delimiter: ",".into(),
            record_delimiter: "\n".into(),
            quote_character: "\"".into(),
            quote_escape_character: "\"".into(),
            comments: "#".into(),
            allow_quoted_record_delimiter: false,
        }
    }
}

/// How results are written: AWS's `CSV` or `JSON` element, or Sift's own Arrow IPC stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputSerialization {
    Csv(CsvOutput),
    Json(JsonOutput),
    /// An Arrow IPC stream of typed columns, each column's type fixed by the SQL (not part
    /// of S3's XML: the gateway takes it from a request header, docs/gateway.md). A query
    /// whose columns have no fixed type is refused before the scan.
    Arrow(ArrowOptions),
}

/// How an Arrow IPC stream is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArrowOptions {
    /// Each batch's buffers compressed with LZ4 (frame format), as the IPC format allows:
    /// typed columns are larger than their text (an INT is 8 bytes, a DECIMAL 16), and
    /// compressed they are smaller than it, for some CPU on both ends. Readers decompress
    /// by themselves (pyarrow, arrow-rs with its `lz4` feature).
    pub lz4: bool,
}

impl Default for OutputSerialization {
    fn default() -> Self {
        OutputSerialization::Csv(CsvOutput::default())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuoteFields {
    Always,
    #[default]
    AsNeeded,
}

/// AWS's `CSVOutput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOutput {
    pub quote_fields: QuoteFields,
    pub quote_character: String,
    pub quote_escape_character: String,
    pub field_delimiter: String,
    pub record_delimiter: String,
}

impl Default for CsvOutput {
    fn default() -> Self {
        CsvOutput {
            quote_fields: QuoteFields::AsNeeded,
            quote_character: "\"".into(),
            quote_escape_character: "\"".into(),
            field_delimiter: ",".into(),
            record_delimiter: "\n".into(),
        }
    }
}

/// AWS's `JSONOutput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonOutput {
    pub record_delimiter: String,
}

impl Default for JsonOutput {
    fn default() -> Self {
        JsonOutput {
            record_delimiter: "\n".into(),
        }
    }
}

/// AWS's `ScanRange`: process exactly the records whose first byte lies in `[start, end]`
/// (both inclusive), reading past `end` to finish the last one.
///
/// `start` alone scans from there to the end of the object; `end` alone means the last `end`
/// bytes of the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScanRange {
    pub start: Option<u64>,
    pub end: Option<u64>,
}

impl ScanRange {
    /// The inclusive byte range `[first, last]` of record starts to process, given the
    /// object's size. `None` when the range selects nothing (an empty object, or a start
    /// beyond its end).
    pub fn resolve(&self, object_size: Option<u64>) -> Result<Option<(u64, u64)>> {
        let (first, last) = match (self.start, self.end) {
            (None, None) => {
                return Err(err!(
                    InvalidScanRange,
                    "ScanRange must name a Start or an End"
                ))
            }
            (Some(s), None) => (s, u64::MAX),
            (Some(s), Some(e)) => {
                if e < s {
                    return Err(err!(
                        InvalidScanRange,
                        "ScanRange End ({e}) is before its Start ({s})"
                    ));
                }
                (s, e)
            }
            (None, Some(n)) => {
                let size = object_size.ok_or_else(|| {
                    err!(
                        InvalidScanRange,
                        "a ScanRange with only an End needs the object's size, which is unknown here"
                    )
                })?;
                if n == 0 {
                    return Ok(None);
                }
                (size.saturating_sub(n), u64::MAX)
            }
        };
        match object_size {
            Some(size) if first >= size => Ok(None),
            _ => Ok(Some((first, last))),
        }
    }
}

/// A delimiter or marker given as a string, checked once and kept as bytes.
pub(crate) fn option_bytes(
    value: &str,
    what: &str,
    allow_empty: bool,
    max_chars: usize,
) -> Result<Vec<u8>> {
    let chars = value.chars().count();
    if chars == 0 && !allow_empty {
        return Err(err!(InvalidRequestParameter, "{what} must not be empty"));
    }
    if chars > max_chars {
        return Err(err!(
            InvalidRequestParameter,
            "{what} must be at most {max_chars} character(s), got {value:?}"
        ));
    }
    Ok(value.as_bytes().to_vec())
}
