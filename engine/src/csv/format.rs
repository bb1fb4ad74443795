//! A CSV input configuration checked once and kept as bytes.

use crate::err;
use crate::error::Result;
use crate::request::{option_bytes, CsvInput, FileHeaderInfo};

/// AWS caps a record at 1 MiB (`OverMaxRecordSize`).
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// The delimiters and markers of one request, as byte strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvFormat {
    pub field: Vec<u8>,
    pub record: Vec<u8>,
    /// Empty: no quoting.
    pub quote: Vec<u8>,
    /// Empty or equal to `quote`: a doubled quote is the escape.
    pub escape: Vec<u8>,
    /// Empty: no comment lines.
    pub comment: Vec<u8>,
    pub allow_quoted_record_delimiter: bool,
    pub header: FileHeaderInfo,
    /// How quotes and the escape are read (the rules of the SQL dialect).
    pub quoting: Quoting,
}

/// How a record's quotes and escapes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quoting {
    /// AWS's: a quote opens a quoted field only at the field's start (see
    /// `csv::record`'s scalar reader).
    #[default]
    Aws,
    /// Ceph RGW's: a quote anywhere opens or closes a quoted run, and the escape outside
    /// quotes makes the next byte literal (see `parse_record_ceph`).
    Ceph,
}

impl CsvFormat {
    pub fn new(input: &CsvInput) -> Result<Self> {
        let field = option_bytes(&input.field_delimiter, "FieldDelimiter", false, 1)?;
        let record = option_bytes(&input.record_delimiter, "RecordDelimiter", false, 2)?;
        let quote = option_bytes(&input.quote_character, "QuoteCharacter", true, 1)?;
        let mut escape = option_bytes(
            &input.quote_escape_character,
            "QuoteEscapeCharacter",
            true,
            1,
        )?;
        let comment = option_bytes(&input.comments, "Comments", true, 1)?;
        if escape.is_empty() {
            escape = quote.clone();
        }
        if record.starts_with(&field) || field.starts_with(&record) {
            return Err(err!(
                InvalidRequestParameter,
                "FieldDelimiter {:?} and RecordDelimiter {:?} overlap",
                input.field_delimiter,
                input.record_delimiter
            ));
        }
        if !quote.is_empty() && (quote == field || record.starts_with(&quote)) {
            return Err(err!(
                InvalidRequestParameter,
                "QuoteCharacter {:?} must differ from the field and record delimiters",
                input.quote_character
            ));
        }
        Ok(CsvFormat {
            field,
            record,
            quote,
            escape,
            comment,
            allow_quoted_record_delimiter: input.allow_quoted_record_delimiter,
            header: input.file_header_info,
            quoting: Quoting::Aws,
        })
    }

    /// This format read with Ceph RGW's quoting rules. RGW reads a record to its delimiter
    /// whatever the quotes, so AllowQuotedRecordDelimiter does not apply.
    pub fn with_ceph_quoting(mut self) -> Self {
        self.quoting = Quoting::Ceph;
        self.allow_quoted_record_delimiter = false;
        self
    }

    /// The format that cuts JSON input into chunks at newlines: no quoting (a newline cannot
    /// occur inside a JSON string), no comments, no header. Only the chunker reads it.
    pub fn json_lines() -> Self {
        CsvFormat {
            field: vec![0],
            record: b"\n".to_vec(),
            quote: Vec::new(),
            escape: Vec::new(),
            comment: Vec::new(),
            allow_quoted_record_delimiter: false,
            header: FileHeaderInfo::None,
            quoting: Quoting::Aws,
        }
    }

    /// Whether the bitmask scanner can read this format: one-byte field delimiter, quote and
    /// escape, and a record delimiter of one or two bytes. Everything else (multi-byte
    /// characters as delimiters) goes through the scalar reader, which handles any format.
    pub fn fast_path(&self) -> bool {
        self.field.len() == 1
            && self.quote.len() <= 1
            && self.escape.len() <= 1
            && (1..=2).contains(&self.record.len())
    }

    /// Bytes that make a record need the scalar reader: the quote and the escape.
    pub fn special_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        for b in [&self.quote, &self.escape] {
            if let Some(&c) = b.first() {
                if !v.contains(&c) {
                    v.push(c);
                }
            }
        }
        v
    }

    /// Whether `buf[pos..]` begins with the record delimiter.
    #[inline]
    pub fn record_at(&self, buf: &[u8], pos: usize) -> bool {
        buf[pos..].starts_with(&self.record)
    }
}
