//! Arrow output (`OutputSerialization::Arrow`) against the engine's JSON output of the same
//! query: the JSON writer formats every value as text, so it is an independent reference for
//! what each typed column must hold, row by row, including NULLs, LIMIT's cut and the order
//! of a parallel run's batches.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Int64Type, TimestampNanosecondType};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_ipc::reader::StreamReader;
use arrow_schema::{DataType, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use serde_json::Value as Json;
use sift_engine::{
    Compression, CsvInput, ErrorCode, InputFormat, InputSerialization, JsonOutput,
    OutputSerialization, Select, SelectRequest, SliceSource,
};

/// `rows` CSV records `name,quantity,price`: names with the delimiter and quotes now and
/// then, empty quantities and prices (Trino's NULLs), prices at 0 to 3 fraction digits.
fn csv(rows: u64) -> Vec<u8> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = String::new();
    for i in 0..rows {
        let r = next();
        let name = match r % 7 {
            0 => format!("\"item, {i}\""),
            1 => format!("\"say \"\"{i}\"\"\""),
            _ => format!("item{i}"),
        };
        let quantity = match r % 11 {
            0 => String::new(),
            q => format!("{}", (r >> 8) % 1000 * (if q % 2 == 0 { 1 } else { 1000 })),
        };
        let price = match (r >> 20) % 13 {
            0 => String::new(),
            s => {
                let cents = (r >> 24) % 1_000_000;
                match s % 4 {
                    0 => format!("{}", cents / 100),
                    1 => format!("{}.{}", cents / 100, cents % 10),
                    2 => format!("{}.{:02}", cents / 100, cents % 100),
                    _ => format!("-{}.{:03}", cents / 1000, cents % 1000),
                }
            }
        };
        out.push_str(&format!("{name},{quantity},{price}\n"));
    }
    out.into_bytes()
}

fn request(sql: &str, input: InputFormat, output: OutputSerialization) -> SelectRequest {
    SelectRequest {
        sql: sql.into(),
        input: InputSerialization {
            format: input,
            compression: Compression::None,
        },
        output,
        ..Default::default()
    }
}

fn csv_input() -> InputFormat {
    InputFormat::Csv(CsvInput::default())
}

/// The Arrow stream of a run, decoded: its schema and its batches.
fn arrow_run(
    sql: &str,
    input: InputFormat,
    data: &[u8],
    threads: usize,
) -> sift_engine::Result<(Arc<Schema>, Vec<RecordBatch>)> {
    let select = Select::new(request(
        sql,
        input,
        OutputSerialization::Arrow(Default::default()),
    ))?
    .with_threads(threads)
    .with_chunk_size(4096);
    let mut out = Vec::new();
    let stats = select.run(&SliceSource(data), &mut out)?;
    assert_eq!(stats.bytes_returned, out.len() as u64, "{sql}");
    let reader = StreamReader::try_new(Cursor::new(out), None).expect("an IPC stream");
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .expect("whole batches and the end-of-stream marker");
    Ok((schema, batches))
}

/// The JSON output of the same query, a map per row.
fn json_run(sql: &str, input: InputFormat, data: &[u8]) -> Vec<serde_json::Map<String, Json>> {
    let select = Select::new(request(
        sql,
        input,
        OutputSerialization::Json(JsonOutput::default()),
    ))
    .expect("the reference query");
    let mut out = Vec::new();
    select
        .run(&SliceSource(data), &mut out)
        .expect("the reference run");
    String::from_utf8(out)
        .expect("UTF-8")
        .lines()
        .map(|line| match serde_json::from_str(line) {
            Ok(Json::Object(m)) => m,
            other => panic!("a JSON object per line, not {other:?}"),
        })
        .collect()
}

/// Asserts that the Arrow rows equal the JSON rows, column by column.
fn assert_same_rows(sql: &str, batches: &[RecordBatch], json: &[serde_json::Map<String, Json>]) {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, json.len(), "{sql}: row count");
    let mut i = 0;
    for batch in batches {
        for r in 0..batch.num_rows() {
            for (c, field) in batch.schema().fields().iter().enumerate() {
                let col = batch.column(c);
                let want = json[i].get(field.name()).unwrap_or(&Json::Null);
                assert_same_value(col, r, want, &format!("{sql}: row {i}, {}", field.name()));
            }
            i += 1;
        }
    }
}

fn assert_same_value(col: &ArrayRef, r: usize, want: &Json, what: &str) {
    if col.is_null(r) {
        assert_eq!(want, &Json::Null, "{what}");
        return;
    }
    match col.data_type() {
        DataType::Utf8 => assert_eq!(
            Some(col.as_string::<i32>().value(r)),
            want.as_str(),
            "{what}"
        ),
        DataType::Int64 => {
            assert_eq!(
                Some(col.as_primitive::<Int64Type>().value(r)),
                want.as_i64(),
                "{what}"
            )
        }
        DataType::Boolean => {
            assert_eq!(Some(col.as_boolean().value(r)), want.as_bool(), "{what}")
        }
        DataType::Decimal128(_, scale) => {
            let got = col.as_primitive::<Decimal128Type>().value(r);
            let Json::Number(n) = want else {
                panic!("{what}: {want} is not a number")
            };
            assert_eq!(
                got,
                mantissa_at(&n.to_string(), *scale as u32),
                "{what}: {n}"
            );
        }
        other => panic!("{what}: no comparison for {other}"),
    }
}

/// The decimal `text` (`-12.345`, `7`) as an integer at `scale`, rounded half away from zero,
/// as the engine rescales.
fn mantissa_at(text: &str, scale: u32) -> i128 {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let mut m: i128 = 0;
    for d in int.chars().chain(
        frac.chars()
            .chain(std::iter::repeat('0'))
            .take(scale as usize),
    ) {
        m = m * 10 + i128::from(d.to_digit(10).expect("a digit") as u8);
    }
    if frac.chars().nth(scale as usize).is_some_and(|d| d >= '5') {
        m += 1;
    }
    if negative {
        -m
    } else {
        m
    }
}

const TYPED: &str = "SELECT s._1 AS name, \
     CASE s._2 WHEN '' THEN NULL ELSE CAST(s._2 AS INT) END AS quantity, \
     CASE s._3 WHEN '' THEN NULL ELSE CAST(s._3 AS DECIMAL(12,2)) END AS price, \
     s._2 = '' AS no_quantity \
     FROM S3Object s";

#[test]
fn typed_columns_equal_the_json_output() {
    let data = csv(5_000);
    for sql in [
        TYPED.to_string(),
        format!("{TYPED} WHERE s._1 LIKE '%1%'"),
        format!("{TYPED} LIMIT 777"),
        format!("{TYPED} WHERE s._2 <> '' LIMIT 1234"),
    ] {
        let json = json_run(&sql, csv_input(), &data);
        for threads in [1, 2] {
            let (schema, batches) = arrow_run(&sql, csv_input(), &data, threads).expect(&sql);
            let types: Vec<_> = schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect();
            assert_eq!(
                types,
                [
                    DataType::Utf8,
                    DataType::Int64,
                    DataType::Decimal128(12, 2),
                    DataType::Boolean
                ],
                "{sql}"
            );
            assert!(
                batches.len() > 1,
                "{sql}: a batch per 4 KiB chunk with rows"
            );
            assert_same_rows(&sql, &batches, &json);
        }
    }
}

/// LZ4-compressed buffers (`ArrowOptions::lz4`): the same batches from fewer bytes.
#[test]
fn lz4_streams_hold_the_same_batches_in_fewer_bytes() {
    let data = csv(5_000);
    let run = |lz4| {
        let output = OutputSerialization::Arrow(sift_engine::ArrowOptions { lz4 });
        let select = Select::new(request(TYPED, csv_input(), output))
            .expect("valid")
            .with_chunk_size(4096);
        let mut out = Vec::new();
        let stats = select.run(&SliceSource(&data), &mut out).expect("runs");
        assert_eq!(stats.bytes_returned, out.len() as u64);
        out
    };
    let (plain, packed) = (run(false), run(true));
    assert!(
        packed.len() * 3 < plain.len() * 2,
        "{} vs {}",
        packed.len(),
        plain.len()
    );
    let read = |bytes: Vec<u8>| {
        StreamReader::try_new(Cursor::new(bytes), None)
            .expect("an IPC stream")
            .collect::<Result<Vec<_>, _>>()
            .expect("whole batches")
    };
    assert_eq!(read(packed), read(plain));
}

#[test]
fn aggregates_are_one_typed_row() {
    let data = csv(3_000);
    let sql = "SELECT COUNT(*) AS n, \
         SUM(CASE s._2 WHEN '' THEN NULL ELSE CAST(s._2 AS INT) END) AS total, \
         MAX(s._1) AS last_name, \
         MIN(CASE s._3 WHEN '' THEN NULL ELSE CAST(s._3 AS DECIMAL(12,3)) END) AS cheapest \
         FROM S3Object s WHERE s._2 <> ''";
    let (schema, batches) = arrow_run(sql, csv_input(), &data, 2).expect("aggregate");
    assert_eq!(
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        ["n", "total", "last_name", "cheapest"]
    );
    assert_same_rows(sql, &batches, &json_run(sql, csv_input(), &data));
}

#[test]
fn an_empty_result_is_the_schema_and_the_end_marker() {
    let data = csv(100);
    let sql = format!("{TYPED} WHERE s._1 = 'nobody'");
    let (schema, batches) = arrow_run(&sql, csv_input(), &data, 1).expect("empty");
    assert_eq!(schema.fields().len(), 4);
    assert!(batches.iter().all(|b| b.num_rows() == 0));
    let (_, batches) = arrow_run(&sql, csv_input(), b"", 1).expect("empty object");
    assert!(batches.is_empty());
}

#[test]
fn timestamps_are_utc_nanoseconds() {
    let sql = "SELECT CAST(s._1 AS TIMESTAMP) AS t FROM S3Object s";
    let (schema, batches) =
        arrow_run(sql, csv_input(), b"2001-08-22T01:02:03.5+02:00\n", 1).expect("timestamps");
    assert_eq!(
        schema.field(0).data_type(),
        &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
    );
    let t = batches[0]
        .column(0)
        .as_primitive::<TimestampNanosecondType>();
    assert_eq!(t.value(0), 998_434_923_500_000_000);
}

#[test]
fn what_has_no_fixed_type_is_refused_before_the_scan() {
    for sql in [
        "SELECT * FROM S3Object",
        "SELECT CAST(s._1 AS DECIMAL) FROM S3Object s",
        "SELECT s._1 + 1 FROM S3Object s",
    ] {
        let e = Select::new(request(
            sql,
            csv_input(),
            OutputSerialization::Arrow(Default::default()),
        ))
        .expect_err(sql);
        assert_eq!(e.code, ErrorCode::UnsupportedSqlStructure, "{sql}: {e}");
        assert!(e.message.contains("fixed"), "{sql}: {e}");
    }
    let json = InputFormat::Json(Default::default());
    let e = Select::new(request(
        "SELECT s.a FROM S3Object s",
        json,
        OutputSerialization::Arrow(Default::default()),
    ))
    .expect_err("an uncast JSON value");
    assert_eq!(e.code, ErrorCode::UnsupportedSqlStructure, "{e}");
}

#[test]
fn a_value_that_does_not_fit_its_column_fails_the_select() {
    let sql = "SELECT CAST(s._1 AS DECIMAL(3,2)) AS d FROM S3Object s";
    let e = arrow_run(sql, csv_input(), b"1.25\n12.5\n", 1).expect_err("12.5 needs 4 digits");
    assert_eq!(e.code, ErrorCode::CastFailed, "{e}");
    assert!(e.message.contains("DECIMAL(3,2)"), "{e}");
}

#[test]
fn parquet_values_cast_to_typed_columns() {
    let ids = Int64Array::from_iter_values(0..2_000);
    let names = StringArray::from_iter((0..2_000).map(|i| (i % 5 != 0).then(|| format!("n{i}"))));
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("name", Arc::new(names) as ArrayRef),
    ])
    .expect("batch");
    let mut file = Vec::new();
    let mut w = ArrowWriter::try_new(&mut file, batch.schema(), None).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    let sql = "SELECT CAST(s.id AS INT) AS id, CAST(s.name AS STRING) AS name \
               FROM S3Object s WHERE s.id % 3 = 0";
    let (_, batches) = arrow_run(sql, InputFormat::Parquet, &file, 1).expect("parquet");
    assert_same_rows(sql, &batches, &json_run(sql, InputFormat::Parquet, &file));
}

/// A Parquet file of `rows` rows in row groups of 1,000: `id` Int32, `price`
/// DECIMAL(7,2) with NULLs, `day` Date32, `name` text with NULLs.
fn typed_parquet(rows: i32) -> Vec<u8> {
    use arrow_array::{Date32Array, Decimal128Array, Int32Array};
    let ids = Int32Array::from_iter_values(0..rows);
    let prices = Decimal128Array::from_iter(
        (0..rows).map(|i| (i % 7 != 0).then_some(i as i128 * 13 % 5_000)),
    )
    .with_precision_and_scale(7, 2)
    .expect("DECIMAL(7,2)");
    let days = Date32Array::from_iter_values((0..rows).map(|i| 11_000 + i % 400));
    let names = StringArray::from_iter((0..rows).map(|i| (i % 5 != 0).then(|| format!("n{i}"))));
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("price", Arc::new(prices) as ArrayRef),
        ("day", Arc::new(days) as ArrayRef),
        ("name", Arc::new(names) as ArrayRef),
    ])
    .expect("batch");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(1_000))
        .build();
    let mut file = Vec::new();
    let mut w = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    file
}

/// All batches of a run as one.
fn joined(schema: &Arc<Schema>, batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(schema, batches).expect("one schema")
}

/// Plain Parquet column names in Arrow output have the file's types (INT widened to Int64,
/// dates as timestamps): written from the decoder's columns (a filter evaluated over whole
/// columns, nothing left for the rows), they equal the row path's answer to the same filter
/// hidden in a CASE, and the JSON output's values.
#[test]
fn parquet_columns_keep_their_file_types_on_either_path() {
    let file = typed_parquet(5_000);
    for (filter, limit) in [
        ("s.price > 10.00", ""),
        ("s.price BETWEEN 5 AND 20 OR s.name LIKE 'n1%'", ""),
        ("s.price > 10.00", " LIMIT 1234"),
        ("s.id < 0", ""),
    ] {
        let columns = "SELECT s.id, s.price, S3Object.name FROM S3Object s";
        let direct = format!("{columns} WHERE {filter}{limit}");
        let hidden = format!("{columns} WHERE CASE WHEN {filter} THEN true ELSE false END{limit}");
        let (schema, batches) = arrow_run(&direct, InputFormat::Parquet, &file, 1).expect(&direct);
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(
            types,
            [
                &DataType::Int64,
                &DataType::Decimal128(7, 2),
                &DataType::Utf8
            ],
            "{direct}"
        );
        let (_, row_path) = arrow_run(&hidden, InputFormat::Parquet, &file, 2).expect(&hidden);
        assert_eq!(
            joined(&schema, &batches),
            joined(&schema, &row_path),
            "{direct}"
        );
        assert_same_rows(
            &direct,
            &batches,
            &json_run(&direct, InputFormat::Parquet, &file),
        );
    }
    // A date is midnight UTC of its day on both paths: the decoder's column cast, and the
    // row path's values.
    for sql in [
        "SELECT s.day FROM S3Object s WHERE s.id = 3",
        "SELECT s.day FROM S3Object s WHERE CASE WHEN s.id = 3 THEN true ELSE false END",
    ] {
        let (schema, batches) = arrow_run(sql, InputFormat::Parquet, &file, 1).expect(sql);
        assert_eq!(
            schema.field(0).data_type(),
            &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            "{sql}"
        );
        let day = batches[0]
            .column(0)
            .as_primitive::<TimestampNanosecondType>()
            .value(0);
        assert_eq!(
            day,
            11_003 * 86_400 * 1_000_000_000,
            "{sql}: midnight UTC of day 11,003"
        );
    }
}

/// A Parquet column the file lacks, or one holding nested values, has no fixed type: the
/// select fails before its first row, with the column named.
#[test]
fn a_parquet_column_without_a_type_is_refused() {
    let file = typed_parquet(10);
    for (sql, named) in [
        ("SELECT s.id, s.nothing FROM S3Object s", "nothing"),
        ("SELECT s.id.x FROM S3Object s", "any type"),
    ] {
        let e = arrow_run(sql, InputFormat::Parquet, &file, 1).expect_err(sql);
        assert_eq!(e.code, ErrorCode::UnsupportedSqlStructure, "{sql}: {e}");
        assert!(e.message.contains(named), "{sql}: {e}");
    }
}
