//! TPC-DS tables as Parquet: dsdgen's rows read with the table's Arrow schema (TPC-DS types,
//! empty field = NULL) and written by the parquet crate, Snappy-compressed with statistics per
//! row group — the layout S3 Select reads, and the one Spark or Trino would write.

use std::io::{self, Read, Write};
use std::sync::Arc;

use arrow_csv::ReaderBuilder;
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::schema::{arrow_schema, TableSchema};
use crate::FIELD_DELIMITER;

/// Rows per row group: about 10–20 MB of store_sales, so that statistics can skip row groups
/// and one row group stays far under S3 Select's 256 MiB limit.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;

/// Writes dsdgen rows (`|`-separated, trailing `|`) of `table` from `input` to `out` as one
/// Parquet file; returns the number of rows.
pub fn write_parquet<R: Read, W: Write + Send>(
    table: &TableSchema,
    input: R,
    out: W,
    row_group_rows: usize,
) -> io::Result<u64> {
    let schema = Arc::new(arrow_schema(table));
    // dsdgen ends every line with the delimiter: one more, always empty, field.
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("__trailing", DataType::Utf8, true));
    let columns: Vec<usize> = (0..schema.fields().len()).collect();
    let reader = ReaderBuilder::new(Arc::new(Schema::new(fields)))
        .with_delimiter(FIELD_DELIMITER)
        .with_header(false)
        .with_batch_size(8192)
        .with_projection(columns)
        .build(input)
        .map_err(io::Error::other)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    let mut writer = ArrowWriter::try_new(out, schema, Some(props)).map_err(io::Error::other)?;
    let mut rows = 0;
    for batch in reader {
        let batch = batch.map_err(io::Error::other)?;
        rows += batch.num_rows() as u64;
        writer.write(&batch).map_err(io::Error::other)?;
    }
    writer.close().map_err(io::Error::other)?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::table_schema;

    #[test]
    fn dsdgen_rows_become_typed_parquet_rows() {
        let table = table_schema("income_band").expect("income_band");
        let dat = b"1|0|10000|\n2|10001|20000|\n3|||\n";
        let mut file = Vec::new();
        let rows = write_parquet(table, &dat[..], &mut file, 2).expect("written");
        assert_eq!(rows, 3);
        let select = sift_engine::Select::new(sift_engine::SelectRequest {
            sql: "SELECT s.ib_upper_bound FROM S3Object s WHERE s.ib_income_band_sk >= 2".into(),
            input: sift_engine::InputSerialization {
                format: sift_engine::InputFormat::Parquet,
                ..Default::default()
            },
            ..Default::default()
        })
        .expect("valid");
        let mut out = Vec::new();
        select
            .run(&sift_engine::SliceSource(&file), &mut out)
            .expect("runs");
        assert_eq!(out, b"20000\n\n");
    }
}
