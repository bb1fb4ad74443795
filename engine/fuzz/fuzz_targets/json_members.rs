//! Arbitrary bytes as one JSON Lines row, read keeping only some top-level members (the
//! parser's fast path for compact rows) and read whole: the kept members must be exactly
//! the whole read's members with those keys, and a malformed row must fail both ways with
//! the same error at the same offset.
//!
//! The first byte chooses the wanted keys; the row is followed by a newline and more text,
//! as in a chunk, so the fast path's 16-byte loads may look past the row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sift_engine::json::path::KeySet;
use sift_engine::json::{Node, Parser};

const KEYS: &[(&str, bool)] = &[
    ("a", true),
    ("ss_quantity", false),
    ("SS_LIST_PRICE", false),
    ("fifteen_bytes_k", true),
    ("sixteen_bytes_ke", true),
    ("ss_ext_wholesale_cost", false),
];

fuzz_target!(|input: &[u8]| {
    let Some((&pick, row)) = input.split_first() else {
        return;
    };
    let wanted: Vec<(&str, bool)> = (0..KEYS.len())
        .filter(|i| pick >> i & 1 == 1)
        .map(|i| KEYS[i])
        .collect();
    let keys = KeySet::new(wanted.iter().map(|&(k, exact)| (k.into(), exact)));
    let keep = |k: &str| {
        wanted.iter().any(|&(w, exact)| match exact {
            true => k == w,
            false => k.eq_ignore_ascii_case(w),
        })
    };
    let mut buffer = row.to_vec();
    buffer.extend_from_slice(b"\n123456789012345678\"x\":1}");
    let row = &buffer[..row.len()];
    let parser = || match std::str::from_utf8(row) {
        Ok(text) => Parser::for_text(text),
        Err(_) => Parser::new(row),
    };
    let whole = parser().value();
    let kept = parser().with_window(&buffer).value_keeping(Some(&keys));
    match (whole, kept) {
        (Ok(Node::Object(all)), Ok(got)) => {
            let want: Vec<_> = all.into_iter().filter(|(k, _)| keep(k)).collect();
            assert_eq!(Node::Object(want), got);
        }
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a, b),
        (a, b) => panic!("whole {a:?} but kept {b:?}"),
    }
});
