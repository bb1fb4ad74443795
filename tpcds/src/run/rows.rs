//! A statement's rows as text, and its order-independent checksum (module docs of
//! [`super`]); the files a run writes them to.

use std::path::Path;

use datafusion::arrow::array::{Array, Float32Array, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use md5::{Digest, Md5};
use serde::Serialize;

use crate::error::Result;

/// Rows of one statement as text, and their order-independent checksum.
pub(super) struct StatementRows {
    pub(super) lines: Vec<String>,
}

impl StatementRows {
    pub(super) fn digest(&self) -> [u8; 16] {
        rows_digest(&self.lines)
    }
}

/// The order-independent checksum of a statement's rows: MD5 of its sorted lines.
pub(crate) fn rows_digest(lines: &[String]) -> [u8; 16] {
    let mut sorted: Vec<&String> = lines.iter().collect();
    sorted.sort();
    let mut md5 = Md5::new();
    for line in sorted {
        md5.update(line.as_bytes());
        md5.update(b"\n");
    }
    md5.finalize().into()
}

/// Rows as `|`-separated text, NULL as empty, floats to 12 significant digits.
pub(super) fn rows_text(batches: &[RecordBatch]) -> StatementRows {
    let options = FormatOptions::default().with_null("");
    let mut lines = Vec::new();
    for batch in batches {
        let columns: Vec<Column> = batch
            .columns()
            .iter()
            .map(|array| Column::new(array.as_ref(), &options))
            .collect();
        for row in 0..batch.num_rows() {
            let mut line = String::new();
            for (i, column) in columns.iter().enumerate() {
                if i > 0 {
                    line.push('|');
                }
                column.write(row, &mut line);
            }
            lines.push(line);
        }
    }
    StatementRows { lines }
}

enum Column<'a> {
    Float(Vec<Option<f64>>),
    Other(Option<ArrayFormatter<'a>>),
}

impl<'a> Column<'a> {
    fn new(array: &'a dyn Array, options: &'a FormatOptions<'a>) -> Column<'a> {
        match array.data_type() {
            DataType::Float64 => {
                let values = array.as_any().downcast_ref::<Float64Array>();
                Column::Float(values.map(|v| v.iter().collect()).unwrap_or_default())
            }
            DataType::Float32 => {
                let values = array.as_any().downcast_ref::<Float32Array>();
                Column::Float(
                    values
                        .map(|v| v.iter().map(|x| x.map(f64::from)).collect())
                        .unwrap_or_default(),
                )
            }
            _ => Column::Other(ArrayFormatter::try_new(array, options).ok()),
        }
    }

    fn write(&self, row: usize, out: &mut String) {
        use std::fmt::Write;
        match self {
            Column::Float(values) => {
                if let Some(Some(v)) = values.get(row) {
                    out.push_str(&format_float(*v));
                }
            }
            Column::Other(Some(formatter)) => {
                let _ = write!(out, "{}", formatter.value(row));
            }
            Column::Other(None) => out.push('?'),
        }
    }
}

/// A float as rows files show it: rounded to 12 significant digits, then the shortest form.
pub(crate) fn format_float(v: f64) -> String {
    let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
    format!("{rounded}")
}

pub(crate) fn write_rows(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(path, text)?;
    Ok(())
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text)?;
    Ok(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_ignore_row_order() {
        let a = StatementRows {
            lines: vec!["1|x".into(), "2|y".into()],
        };
        let b = StatementRows {
            lines: vec!["2|y".into(), "1|x".into()],
        };
        assert_eq!(a.digest(), b.digest());
    }
}
