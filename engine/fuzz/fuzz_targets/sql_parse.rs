//! Arbitrary text as SQL, in both dialects.
//!
//! Parsing must never panic or overflow the stack; a statement that parses must print back to
//! text that parses to the same tree (when the printed form is within the nesting budget), and
//! must bind and run over a small object without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sift_engine::sql::print::without_positions;
use sift_engine::sql::{parse, Dialect};
use sift_engine::{
    CsvInput, FileHeaderInfo, InputSerialization, Select, SelectRequest, SliceSource,
};

const OBJECT: &[u8] = b"id,name,price,when\n1,ab,1.5,2024-01-02T03:04:05Z\n2,,-7,\n3,x\n";

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    for dialect in [Dialect::Aws, Dialect::Ceph] {
        let Ok(query) = parse(sql, dialect) else {
            continue;
        };
        let printed = query.to_string();
        // The printed form adds parentheses, so it may exceed the nesting budget; when it
        // parses, it must be the same statement.
        if let Ok(again) = parse(&printed, dialect) {
            assert_eq!(
                without_positions(&again),
                without_positions(&query),
                "{sql:?} printed as {printed:?} parses differently"
            );
        }
        for header in [FileHeaderInfo::Use, FileHeaderInfo::None] {
            let req = SelectRequest {
                sql: sql.to_owned(),
                dialect,
                input: InputSerialization {
                    csv: CsvInput {
                        file_header_info: header,
                        ..CsvInput::default()
                    },
                    ..Default::default()
                },
                ..Default::default()
            };
            let Ok(select) = Select::new(req) else {
                continue;
            };
            let mut out = Vec::new();
            let _ = select.run(&SliceSource(OBJECT), &mut out);
        }
    }
});
