//! Property tests of the JSON parser: whatever tree is written, it reads back the same; no
//! input, however mangled, makes it panic; and it agrees with serde_json on what is JSON.
//! And of the JSON readers end to end: `SELECT *` writes every value back as it was, however
//! the object is cut into chunks and on however many threads.

use std::borrow::Cow;

use proptest::prelude::*;

use crate::json::path::KeySet;
use crate::json::{parse_one, write_node, Node, Parser};

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (any::<i32>(), 0u32..1_000_000).prop_map(|(i, f)| format!("{i}.{f}")),
        (-9i32..10, 0u32..100, -30i32..30).prop_map(|(m, f, e)| format!("{m}.{f}e{e}")),
        Just("-0".to_string()),
        Just("1E+2".to_string()),
    ]
}

fn leaf() -> impl Strategy<Value = Node<'static>> {
    prop_oneof![
        Just(Node::Null),
        any::<bool>().prop_map(Node::Bool),
        number().prop_map(|n| Node::Number(n.into())),
        any::<String>().prop_map(|s| Node::String(Cow::Owned(s))),
        "[a-z\"\\\\\n\t\u{0}-\u{1f}é😀]{0,12}".prop_map(|s| Node::String(Cow::Owned(s))),
    ]
}

fn tree() -> impl Strategy<Value = Node<'static>> {
    leaf().prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Node::Array),
            prop::collection::vec(("[a-zA-Z_ \"]{0,6}", inner), 0..8).prop_map(|members| {
                Node::Object(
                    members
                        .into_iter()
                        .map(|(k, v)| (Cow::Owned(k), v))
                        .collect(),
                )
            }),
        ]
    })
}

/// Structural equality that ignores whether a string was borrowed or decoded.
fn same(a: &Node<'_>, b: &Node<'_>) -> bool {
    match (a, b) {
        (Node::Array(x), Node::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Node::Object(x), Node::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => a == b,
    }
}

/// Writes `node` with arbitrary whitespace between tokens.
fn write_spaced(out: &mut Vec<u8>, node: &Node<'_>, ws: &mut impl Iterator<Item = u8>) {
    fn space(out: &mut Vec<u8>, ws: &mut impl Iterator<Item = u8>) {
        for _ in 0..ws.next().unwrap_or(0) % 3 {
            out.push(b" \t\n\r"[usize::from(ws.next().unwrap_or(0) % 4)]);
        }
    }
    space(out, ws);
    match node {
        Node::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_spaced(out, item, ws);
            }
            space(out, ws);
            out.push(b']');
        }
        Node::Object(members) => {
            out.push(b'{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                space(out, ws);
                crate::output::json_string(out, k);
                space(out, ws);
                out.push(b':');
                write_spaced(out, v, ws);
            }
            space(out, ws);
            out.push(b'}');
        }
        other => write_node(out, other),
    }
    space(out, ws);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn what_is_written_reads_back(node in tree(), ws in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut compact = Vec::new();
        write_node(&mut compact, &node);
        let back = parse_one(&compact).map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&compact))))?;
        prop_assert!(same(&node, &back), "{node:?} came back as {back:?}");

        let mut spaced = Vec::new();
        let mut ws = ws.into_iter().cycle();
        write_spaced(&mut spaced, &node, &mut ws);
        let back = parse_one(&spaced).map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&spaced))))?;
        prop_assert!(same(&node, &back));
    }

    #[test]
    fn agrees_with_serde_json_on_what_is_json(bytes in prop::collection::vec(
        prop_oneof![Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b':'),
                    Just(b','), Just(b'\\'), Just(b'1'), Just(b'0'), Just(b'-'), Just(b'.'),
                    Just(b'e'), Just(b'u'), Just(b'a'), Just(b' '), Just(b'n'), any::<u8>()],
        0..40)) {
        let ours = parse_one(&bytes);
        let theirs = serde_json::from_slice::<serde_json::Value>(&bytes);
        // serde_json refuses numbers beyond f64's range; JSON's grammar (and this parser,
        // which keeps a number's text) does not.
        prop_assume!(!matches!(&theirs, Err(e) if e.to_string().contains("out of range")));
        // A raw control character inside a string is taken as it is, on purpose (mint's
        // string cases send them; docs/sql.md): the one place this parser is laxer than JSON.
        prop_assume!(!matches!(&theirs, Err(e) if e.to_string().contains("control character")));
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?}: ours {:?}, serde_json {:?}",
            String::from_utf8_lossy(&bytes), ours, theirs.map_err(|e| e.to_string()));
    }

    #[test]
    fn mangled_documents_never_panic(node in tree(), cut in any::<prop::sample::Index>(),
                                     flip in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut text = Vec::new();
        write_node(&mut text, &node);
        text.push(b'\n');
        let i = flip.index(text.len());
        text[i] = byte;
        let text = &text[..cut.index(text.len() + 1)];
        let mut p = Parser::new(text);
        // Read values until the end or the first error; each step must advance.
        while !p.at_end() {
            let before = p.position();
            if p.value().is_err() {
                break;
            }
            prop_assert!(p.position() > before);
        }
    }
}

/// What `SELECT *` with JSON output writes for one top-level value.
fn star_row(node: &Node<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    match node {
        Node::Object(_) => write_node(&mut out, node),
        other => {
            out.extend_from_slice(b"{\"_1\":");
            write_node(&mut out, other);
            out.push(b'}');
        }
    }
    out.push(b'\n');
    out
}

fn select_star(data: &[u8], json_type: crate::JsonType, threads: usize, chunk: usize) -> Vec<u8> {
    let req = crate::SelectRequest {
        sql: "SELECT * FROM S3Object".into(),
        input: crate::InputSerialization {
            format: crate::InputFormat::Json(crate::JsonInput { json_type }),
            compression: crate::Compression::None,
        },
        output: crate::OutputSerialization::Json(crate::JsonOutput::default()),
        ..Default::default()
    };
    let select = crate::Select::new(req)
        .expect("valid request")
        .with_threads(threads)
        .with_chunk_size(chunk);
    let mut out = Vec::new();
    match select.run(&crate::SliceSource(data), &mut out) {
        Ok(_) => out,
        Err(e) => panic!("{e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn lines_select_star_writes_every_value_back(
        values in prop::collection::vec(tree(), 0..40),
        threads in 1usize..3,
    ) {
        let mut data = Vec::new();
        let mut expected = Vec::new();
        for v in &values {
            write_node(&mut data, v);
            data.push(b'\n');
            expected.extend(star_row(v));
        }
        let got = select_star(&data, crate::JsonType::Lines, threads, 4096);
        prop_assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expected));
    }

    #[test]
    fn document_select_star_is_independent_of_chunking(
        values in prop::collection::vec(tree(), 0..40),
        ws in prop::collection::vec(any::<u8>(), 0..64),
        threads in 1usize..3,
    ) {
        let mut data = Vec::new();
        let mut expected = Vec::new();
        let mut ws = ws.into_iter().cycle();
        for v in &values {
            write_spaced(&mut data, v, &mut ws);
            // Top-level scalars need a separator: `1` `2` is not `12`.
            data.push(b'\n');
            expected.extend(star_row(v));
        }
        let got = select_star(&data, crate::JsonType::Document, threads, 4096);
        prop_assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&expected));
    }

    #[test]
    fn mangled_json_objects_never_panic(
        data in prop::collection::vec(
            prop_oneof![Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'),
                        Just(b'\\'), Just(b'\n'), Just(b','), Just(b':'), Just(b'1'),
                        Just(b'a'), Just(b' '), any::<u8>()],
            0..400),
        lines in any::<bool>(),
    ) {
        let json_type = if lines { crate::JsonType::Lines } else { crate::JsonType::Document };
        for sql in ["SELECT * FROM S3Object", "SELECT s.a[0] FROM S3Object[*].*[*] s"] {
            let req = crate::SelectRequest {
                sql: sql.into(),
                input: crate::InputSerialization {
                    format: crate::InputFormat::Json(crate::JsonInput { json_type }),
                    compression: crate::Compression::None,
                },
                ..Default::default()
            };
            let select = crate::Select::new(req).expect("valid").with_chunk_size(4096);
            let mut out = Vec::new();
            let _ = select.run(&crate::SliceSource(&data), &mut out);
        }
    }
}

proptest! {
    /// Keeping only some top-level members gives the full parse with the others removed,
    /// and the same verdict on malformed text: skipping a member still checks it.
    #[test]
    fn keeping_members_is_filtering_them(
        node in tree(),
        wanted in prop::collection::vec("[a-zA-Z_ \"]{0,6}", 0..4),
        cut in any::<prop::sample::Index>(),
        text in any::<bool>(),
    ) {
        let mut bytes = Vec::new();
        write_node(&mut bytes, &node);
        let keys = KeySet::new(wanted.iter().map(|w| (w.as_str().into(), true)));
        let keep = |k: &[u8]| wanted.iter().any(|w| w.as_bytes() == k);
        // The whole text, and a prefix of it (most prefixes are malformed).
        for input in [&bytes[..], &bytes[..cut.index(bytes.len() + 1)]] {
            let parser = || match (text, std::str::from_utf8(input)) {
                (true, Ok(t)) => Parser::for_text(t),
                _ => Parser::new(input),
            };
            let full = parser().value();
            let kept = parser().value_keeping(Some(&keys));
            match (full, kept) {
                (Ok(Node::Object(members)), Ok(Node::Object(got))) => {
                    let want: Vec<_> = members
                        .into_iter()
                        .filter(|(k, _)| keep(k.as_bytes()))
                        .collect();
                    prop_assert!(same(&Node::Object(want), &Node::Object(got)));
                }
                (Ok(a), Ok(b)) => prop_assert!(same(&a, &b)),
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "full {a:?} but kept {b:?}"),
            }
        }
    }

    /// The same on rows shaped like real JSON Lines (compact, short keys, mostly numbers:
    /// the parser's fast path), with one byte replaced to reach its every way out.
    #[test]
    fn keeping_members_of_compact_rows(
        members in prop::collection::vec(
            (
                prop::sample::select(ROW_KEYS.to_vec()),
                prop_oneof![
                    4 => number().prop_map(|n| Node::Number(n.into())),
                    1 => leaf(),
                ],
            ),
            0..12,
        ),
        wanted in prop::collection::vec(
            (prop::sample::select(ROW_KEYS.to_vec()), any::<bool>(), any::<bool>()),
            0..4,
        ),
        damage in prop::option::of((any::<prop::sample::Index>(), prop::sample::select(DAMAGE.to_vec()))),
    ) {
        let row = Node::Object(members.into_iter().map(|(k, v)| (Cow::Borrowed(k), v)).collect());
        let mut bytes = Vec::new();
        write_node(&mut bytes, &row);
        if let Some((at, b)) = damage {
            let at = at.index(bytes.len());
            bytes[at] = b;
        }
        // Wanted names as written, or with their case changed (matched ignoring case).
        let names: Vec<(Box<str>, bool)> = wanted
            .iter()
            .map(|&(k, upper, exact)| {
                let name = if upper { k.to_ascii_uppercase() } else { k.to_string() };
                (name.into(), exact)
            })
            .collect();
        let keys = KeySet::new(names.iter().cloned());
        let keep = |k: &str| {
            names.iter().any(|(n, exact)| match exact {
                true => k == n.as_ref(),
                false => k.eq_ignore_ascii_case(n),
            })
        };
        // As in a chunk of JSON Lines: the next line follows, and the kept parse may look
        // into it.
        let n = bytes.len();
        bytes.extend_from_slice(b"\n12345678901234567890\"x\":1.5e3}");
        let parser = || match std::str::from_utf8(&bytes[..n]) {
            Ok(t) => Parser::for_text(t),
            Err(_) => Parser::new(&bytes[..n]),
        };
        let full = parser().value();
        let kept = parser().with_window(&bytes).value_keeping(Some(&keys));
        match (full, kept) {
            (Ok(Node::Object(all)), Ok(Node::Object(got))) => {
                let want: Vec<_> = all.into_iter().filter(|(k, _)| keep(k)).collect();
                prop_assert!(same(&Node::Object(want), &Node::Object(got)));
            }
            (Ok(a), Ok(b)) => prop_assert!(same(&a, &b)),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "full {a:?} but kept {b:?}"),
        }
    }

    /// The parser's one-word key test agrees with the general one.
    #[test]
    fn key_words_match_as_keys_do(
        names in prop::collection::vec(("[aA@`_0-9]{0,17}|[aA@`_é0-9]{0,8}", any::<bool>()), 0..4),
        key in "[aA@`_0-9]{0,16}|[aA@`_é0-9]{0,8}",
        like in prop::option::of((any::<prop::sample::Index>(), any::<u16>())),
    ) {
        // Most often the key is one of the names with some letters' case turned, or some
        // '@' turned '`' (the same bit apart).
        let key = match like {
            Some((i, flips)) if !names.is_empty() => names[i.index(names.len())]
                .0
                .bytes()
                .enumerate()
                .map(|(j, b)| match flips >> (j % 16) & 1 {
                    1 if b.is_ascii_alphabetic() || b == b'@' || b == b'`' => b ^ 0x20,
                    _ => b,
                })
                .collect::<Vec<u8>>(),
            _ => key.into_bytes(),
        };
        prop_assume!(key.len() <= 16);
        let set = KeySet::new(names.into_iter().map(|(n, exact)| (n.into(), exact)));
        let bytes = &key[..];
        let mut word = [0u8; 16];
        word[..bytes.len()].copy_from_slice(bytes);
        prop_assert_eq!(
            set.contains_word(bytes.len(), u128::from_le_bytes(word)),
            set.contains(bytes)
        );
    }
}

/// Keys of the lengths the fast path takes (up to fifteen bytes) and beyond it.
const ROW_KEYS: [&str; 8] = [
    "a",
    "ss_item_sk",
    "ss_quantity",
    "SS_Quantity",
    "ss_list_price",
    "fifteen_bytes_k",
    "sixteen_bytes_ke",
    "ss_ext_wholesale_cost",
];

/// Bytes that end, or break, a key or a number early.
const DAMAGE: [u8; 16] = [
    b'"', b'\\', b':', b',', b'.', b'e', b'E', b'0', b'-', b'+', b' ', b'}', b'{', 0x01, 0xff, b'9',
];
