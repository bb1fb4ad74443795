//! How a table is cut into part files, and which parts a loader slice owns.
//!
//! A part is a contiguous range of the table's *source rows* (see [`crate::data`]), so every
//! part can be generated on its own, on any machine, in any order, and the parts of a table
//! concatenated in index order are exactly dsdgen's single file. The number of parts comes
//! from the table's estimated size (its row count times the bytes per row of a sample at the
//! start of the table) divided by the target part size, so the layout is a pure function of
//! the scale factor and the part size: two machines, or a re-run, agree on it without talking.
//!
//! Slicing for multi-machine loads (`--parallel N --child K`) hands out whole parts: the
//! parts of all tables are numbered in one sequence and child K takes every N-th, starting
//! at K-1. Concatenating all children's objects gives the whole data set, whatever N is.

use std::io::{self, Write};
use std::ops::RangeInclusive;

use crate::data::{self, Slice};

/// How part files are written: dsdgen's flat files, or Parquet.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `|`-delimited text with a trailing `|`, no header, uncompressed (as the Ceph
    /// benchmark loads it).
    #[default]
    Csv,
    /// One Parquet file per part (Snappy, statistics per row group; see [`crate::parquet`]).
    Parquet,
    /// The same text, each part one gzip stream (`.dat.gz`). A gzip stream cannot be
    /// entered in the middle, so every request reads a part whole: no ranged GETs, no
    /// ScanRange. (Trino up to 426 pushes S3 Select down only on compressed text.)
    #[serde(rename = "csv-gzip")]
    CsvGzip,
}

impl Format {
    /// The part files' extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "dat",
            Format::Parquet => "parquet",
            Format::CsvGzip => "dat.gz",
        }
    }

    /// How the format is spelt on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::CsvGzip => "csv-gzip",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "csv" => Ok(Format::Csv),
            "parquet" => Ok(Format::Parquet),
            "csv-gzip" => Ok(Format::CsvGzip),
            other => Err(format!(
                "unknown format {other:?}; expected csv, csv-gzip or parquet"
            )),
        }
    }
}

/// The default target size of one part object.
pub const DEFAULT_PART_SIZE: u64 = 128 << 20;

/// Source rows sampled to estimate a table's bytes per source row.
const SAMPLE_ROWS: u64 = 2_000;

/// One part of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub table: &'static str,
    pub index: u32,
    /// Source rows, 1-based and inclusive as the generator counts them.
    pub rows: RangeInclusive<u64>,
    /// Estimated size in bytes (for progress bars; the real size is known after writing).
    pub estimated_bytes: u64,
}

impl Part {
    /// The part's file or object name within its table's folder.
    pub fn file_name(&self, format: Format) -> String {
        part_file_name(self.index, format)
    }
}

/// `part-NNNNN.dat` (or `.parquet`), numbered from 0.
pub fn part_file_name(index: u32, format: Format) -> String {
    format!("part-{index:05}.{}", format.extension())
}

/// How a scale factor is written in paths: `1`, `10`, `0.01`.
pub fn scale_label(scale: f64) -> String {
    format!("{scale}")
}

/// Checks a scale factor the way the generator needs it: positive and finite.
pub fn check_scale(scale: f64) -> io::Result<()> {
    if scale.is_finite() && scale > 0.0 {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("scale factor must be a positive number, got {scale}"),
        ))
    }
}

/// The parts of `table` at `scale` for parts of about `part_size` bytes.
pub fn table_parts(table: &'static str, scale: f64, part_size: u64) -> io::Result<Vec<Part>> {
    check_scale(scale)?;
    let rows = data::source_row_count(table, scale)?;
    if rows == 0 {
        return Ok(Vec::new());
    }
    let sample = rows.min(SAMPLE_ROWS);
    let mut counter = ByteCounter(0);
    data::write_rows(table, scale, 1..=sample, &mut counter)?;
    let estimated_total = (counter.0 as f64 / sample as f64 * rows as f64) as u64;
    let parts = estimated_total.div_ceil(part_size.max(1)).clamp(1, rows);
    let per_part = rows.div_ceil(parts);
    let parts = rows.div_ceil(per_part);
    Ok((0..parts)
        .map(|i| {
            let first = i * per_part + 1;
            let last = ((i + 1) * per_part).min(rows);
            Part {
                table,
                index: i as u32,
                rows: first..=last,
                estimated_bytes: estimated_total * (last - first + 1) / rows,
            }
        })
        .collect())
}

/// The parts of all 24 tables, largest tables first, restricted to one loader slice.
pub fn plan(scale: f64, part_size: u64, slice: Slice) -> io::Result<Vec<Part>> {
    check_slice(slice)?;
    let mut all = Vec::new();
    for table in data::TABLES {
        all.extend(table_parts(table, scale, part_size)?);
    }
    let mut mine: Vec<Part> = all
        .into_iter()
        .enumerate()
        .filter(|(i, _)| (*i as u64 % slice.parallel as u64) + 1 == slice.child as u64)
        .map(|(_, part)| part)
        .collect();
    mine.sort_by_key(|part| std::cmp::Reverse(part.estimated_bytes));
    Ok(mine)
}

fn check_slice(slice: Slice) -> io::Result<()> {
    if slice.parallel == 0 || slice.child == 0 || slice.child > slice.parallel {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "--child must be between 1 and --parallel ({}), got {}",
                slice.parallel, slice.child
            ),
        ));
    }
    Ok(())
}

struct ByteCounter(u64);

impl Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_table_and_concatenate_to_the_whole_file() {
        let scale = 0.01;
        for table in ["store_sales", "customer", "inventory", "catalog_returns"] {
            // A tiny part size forces several parts even at SF 0.01.
            let parts = table_parts(table, scale, 64 << 10).unwrap();
            assert!(parts.len() > 1, "{table} should be split");
            let mut joined = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                assert_eq!(part.index as usize, i);
                data::write_rows(table, scale, part.rows.clone(), &mut joined).unwrap();
            }
            let mut whole = Vec::new();
            data::write_table(table, scale, Slice::WHOLE, &mut whole).unwrap();
            assert!(joined == whole, "{table}: parts differ from the whole file");
        }
    }

    #[test]
    fn slices_partition_the_plan() {
        let whole = plan(0.01, 1 << 20, Slice::WHOLE).unwrap();
        let mut union = Vec::new();
        for child in 1..=3 {
            union.extend(plan(0.01, 1 << 20, Slice { child, parallel: 3 }).unwrap());
        }
        let key = |p: &Part| (p.table, p.index);
        let mut a: Vec<_> = whole.iter().map(key).collect();
        let mut b: Vec<_> = union.iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        assert!(plan(
            0.01,
            1 << 20,
            Slice {
                child: 4,
                parallel: 3
            }
        )
        .is_err());
        assert!(check_scale(0.0).is_err() && check_scale(f64::NAN).is_err());
    }

    #[test]
    fn names_and_labels() {
        assert_eq!(part_file_name(7, Format::Csv), "part-00007.dat");
        assert_eq!(part_file_name(7, Format::Parquet), "part-00007.parquet");
        assert_eq!(scale_label(1.0), "1");
        assert_eq!(scale_label(0.01), "0.01");
        assert_eq!(scale_label(10.0), "10");
    }
}
