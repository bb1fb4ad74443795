//! Damaged Parquet files: a real file with bytes changed or cut off, or arbitrary bytes.
//!
//! The first byte chooses the mode and the query. In edit mode the rest of the input is a
//! list of (offset, byte) edits applied to a small real file (several types, nested columns,
//! a dictionary column, three row groups, Snappy); in raw mode the rest is the object. Every
//! run must end in a result or a Parquet error code: never a panic that escapes the engine.
//! (The engine runs the parquet crate's decoders under `catch_unwind`, and they do panic on
//! damaged files. libFuzzer's panic hook would abort on those too, so a hook that only
//! prints the panic replaces it; a panic that escapes the engine still fails the run.)
#![no_main]

use std::sync::{Arc, Once, OnceLock};

use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, DictionaryArray, Int64Array, RecordBatch,
    StringArray, StructArray,
};
use arrow_array::types::Int32Type;
use arrow_schema::{DataType, Field};
use libfuzzer_sys::fuzz_target;
use sift_engine::{
    ErrorCode, InputFormat, InputSerialization, JsonOutput, OutputSerialization, Select,
    SelectRequest, SliceSource,
};

const QUERIES: &[&str] = &[
    "SELECT * FROM S3Object s",
    "SELECT s.id, s.name FROM S3Object s WHERE s.id BETWEEN 3 AND 20 OR s.name = 'x'",
    "SELECT COUNT(*), SUM(s.price), MAX(s.day) FROM S3Object s WHERE s.tags[0] > 1",
    "SELECT s.who.a, s.color FROM S3Object s WHERE s.price IS NOT NULL LIMIT 7",
];

fn base() -> &'static [u8] {
    static BASE: OnceLock<Vec<u8>> = OnceLock::new();
    BASE.get_or_init(|| {
        let n = 30;
        let mut tags = ListBuilder::new(Int64Builder::new());
        for i in 0..n {
            for j in 0..(i % 3) {
                tags.values().append_value(i * 10 + j);
            }
            tags.append(i % 5 != 0);
        }
        let who = StructArray::from(vec![(
            Arc::new(Field::new("a", DataType::Utf8, true)),
            Arc::new(StringArray::from_iter((0..n).map(|i| (i % 4 != 0).then(|| format!("w{i}")))))
                as ArrayRef,
        )]);
        let colors: DictionaryArray<Int32Type> =
            (0..n).map(|i| ["red", "green", "blue"][i as usize % 3]).collect();
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef),
            (
                "name",
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| (i % 7 != 0).then(|| format!("n{i}"))),
                )) as ArrayRef,
            ),
            (
                "price",
                Arc::new(
                    Decimal128Array::from_iter((0..n).map(|i| (i % 6 != 0).then_some(i as i128 * 101)))
                        .with_precision_and_scale(9, 2)
                        .expect("valid decimal type"),
                ) as ArrayRef,
            ),
            ("day", Arc::new(Date32Array::from_iter_values((0..n).map(|i| 11_000 + i as i32))) as ArrayRef),
            ("tags", Arc::new(tags.finish()) as ArrayRef),
            ("who", Arc::new(who) as ArrayRef),
            ("color", Arc::new(colors) as ArrayRef),
        ])
        .expect("a valid batch");
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(10))
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props))
            .expect("a writer");
        w.write(&batch).expect("written");
        w.close().expect("closed");
        out
    })
}

fuzz_target!(|input: &[u8]| {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("{info}"))));
    let Some((&opts, rest)) = input.split_first() else {
        return;
    };
    let file = if opts & 1 == 0 {
        rest.to_vec()
    } else {
        let mut f = base().to_vec();
        for edit in rest.chunks_exact(3) {
            let at = usize::from(u16::from_le_bytes([edit[0], edit[1]])) % f.len();
            f[at] = edit[2];
        }
        if opts & 2 != 0 {
            // Cut the end off: a truncated upload.
            let cut = rest.len() % f.len();
            f.truncate(f.len() - cut);
        }
        f
    };
    let sql = QUERIES[usize::from(opts >> 2) % QUERIES.len()];
    let output = if opts & 0x80 == 0 {
        OutputSerialization::default()
    } else {
        OutputSerialization::Json(JsonOutput::default())
    };
    let select = Select::new(SelectRequest {
        sql: sql.into(),
        input: InputSerialization {
            format: InputFormat::Parquet,
            ..Default::default()
        },
        output,
        ..Default::default()
    })
    .expect("the queries are valid");
    let mut out = Vec::new();
    if let Err(e) = select.run(&SliceSource(&file), &mut out) {
        assert!(
            matches!(
                e.code,
                ErrorCode::ParquetParsingError
                    | ErrorCode::ParquetUnsupportedCompressionCodec
                    | ErrorCode::OverMaxParquetBlockSize
                    | ErrorCode::InvalidTextEncoding
                    | ErrorCode::OverMaxRecordSize
            ),
            "unexpected error {e}"
        );
    }
});
