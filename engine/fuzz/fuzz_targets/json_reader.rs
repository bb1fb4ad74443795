//! Arbitrary bytes as a JSON object, read as LINES and as DOCUMENT.
//!
//! The first byte chooses the query, the JSON type and the chunk size; the rest is the
//! object. Nothing may panic or hang, and the result must not depend on how the object is
//! cut into chunks or on the number of threads: a 4 KiB-chunk, two-thread run must give
//! exactly what one whole-object, one-thread run gives (output or error code).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sift_engine::{
    Compression, InputFormat, InputSerialization, JsonInput, JsonOutput, JsonType,
    OutputSerialization, Select, SelectRequest, SliceSource,
};

const QUERIES: &[&str] = &[
    "SELECT * FROM S3Object s",
    "SELECT s.a, s.b[1], s.\"c d\".e FROM S3Object s WHERE s.a IS NOT MISSING OR s.b[0] > 1",
    "SELECT COUNT(*), SUM(s.n), MAX(s.k) FROM S3Object[*].list[*] s",
    "SELECT d FROM S3Object[*].*[*] d LIMIT 5",
];

fuzz_target!(|input: &[u8]| {
    let Some((&opts, data)) = input.split_first() else {
        return;
    };
    let json_type = if opts & 1 == 0 {
        JsonType::Lines
    } else {
        JsonType::Document
    };
    let sql = QUERIES[usize::from(opts >> 1) % QUERIES.len()];
    let output = if opts & 0x40 == 0 {
        OutputSerialization::default()
    } else {
        OutputSerialization::Json(JsonOutput::default())
    };
    let req = SelectRequest {
        sql: sql.into(),
        input: InputSerialization {
            format: InputFormat::Json(JsonInput { json_type }),
            compression: Compression::None,
        },
        output,
        ..Default::default()
    };
    let run = |threads: usize, chunk: usize| {
        let select = Select::new(req.clone())
            .expect("the queries are valid")
            .with_threads(threads)
            .with_chunk_size(chunk);
        let mut out = Vec::new();
        select
            .run(&SliceSource(data), &mut out)
            .map(|_| out)
            .map_err(|e| e.code)
    };
    let whole = run(1, 64 << 20);
    let chunked = run(2, 4096);
    // An over-long record is found by whichever check meets it first; otherwise the two
    // must agree exactly.
    if whole.as_ref().err() != Some(&sift_engine::ErrorCode::OverMaxRecordSize)
        && chunked.as_ref().err() != Some(&sift_engine::ErrorCode::OverMaxRecordSize)
    {
        assert_eq!(whole, chunked, "chunking changed the result of {sql}");
    }
});
