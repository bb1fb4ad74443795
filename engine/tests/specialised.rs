//! The binder's specialised comparisons against the general path they stand for.
//!
//! `CAST(field AS INT) op k`, `CAST(field AS DECIMAL(p,s)) op k`, their empty-as-NULL CASE
//! forms (what Trino sends) and ANDs of them over one field are bound to nodes that parse the
//! field's bytes straight to an integer; integer IN lists and a bare field's text IN lists
//! are bound to a binary search, and a list split into pieces joined by OR (NOT IN pieces by
//! AND) is bound as one. The reference is the same predicate with the field
//! written as `(field || '')`: the same string, but no longer a bare field, so the binder
//! keeps the general CAST and comparison. Both must select the same rows and fail with the
//! same error code, on fields drawn from every form a number can take in a CSV file and some
//! it cannot.

use proptest::prelude::*;
use proptest::test_runner::Config;
use sift_engine::{
    Compression, CsvInput, ErrorCode, InputSerialization, Select, SelectRequest, SliceSource,
};

/// Field texts: plain numbers at several scales, the forms only the general CAST reads
/// (`.5`, `5.`, exponents, spaces, `+`), too many digits, the empty field and garbage.
const FIELDS: &[&str] = &[
    "",
    "0",
    "-0",
    "5",
    "10",
    "10.00",
    "12.34",
    "-3.5",
    "+7",
    "1.234",
    "20.001",
    "9.999",
    "19.995",
    "-20.00",
    "00012.30",
    "0.00001",
    ".5",
    "5.",
    "1e1",
    " 12",
    "12 ",
    "abc",
    "1.2.3",
    "-",
    "99999999999999999999",
    "123456789012345.6789",
    "9223372036854775807",
];

/// Constants: integers, decimals of several scales, one deeper than the fast path's
/// minimum, one too large for it.
const DEC_CONSTANTS: &[&str] = &[
    "0",
    "10",
    "-3",
    "10.00",
    "-3.5",
    "0.001",
    "12.34",
    "19.995",
    "1.23456",
    "99999999999999.99",
    "123456789012345678901",
];
const INT_CONSTANTS: &[&str] = &["0", "5", "-3", "12", "20", "9223372036854775807"];
const OPS: &[&str] = &["<", "<=", ">", ">=", "=", "<>"];
const TYPES: &[&str] = &["DECIMAL(7,2)", "DECIMAL(38,4)", "DECIMAL", "INT"];

type Outcome = Result<Vec<u8>, ErrorCode>;

fn run(sql: &str, data: &[u8]) -> Outcome {
    let request = SelectRequest {
        sql: sql.into(),
        input: InputSerialization::csv(CsvInput::default(), Compression::None),
        ..Default::default()
    };
    let select = Select::new(request).map_err(|e| e.code)?;
    let mut out = Vec::new();
    select
        .run(&SliceSource(data), &mut out)
        .map_err(|e| e.code)?;
    Ok(out)
}

/// One comparison of field `f` read as `ty`, in the plain or the empty-as-NULL form, with
/// the constant on either side.
/// Runs `sql(field)` over rows whose first field is each of `fields`: once with the field read
/// as it is (`s._1`, which the binder specialises) and once through `(s._1 || '')`, which keeps
/// the general path. Returns both outcomes, output as text.
fn fast_and_general(
    sql: impl Fn(&str) -> String,
    fields: &[&str],
) -> (Result<String, ErrorCode>, Result<String, ErrorCode>) {
    let data: String = fields
        .iter()
        .enumerate()
        .map(|(row, f)| format!("{f},row{row}\n"))
        .collect();
    let text =
        |sql: String| run(&sql, data.as_bytes()).map(|b| String::from_utf8_lossy(&b).into_owned());
    (text(sql("s._1")), text(sql("(s._1 || '')")))
}

fn comparison(f: &str, ty: &str, trino: bool, flipped: bool, op: &str, k: &str) -> String {
    let read = if trino {
        format!("case {f} when '' then null else CAST({f} AS {ty}) end")
    } else {
        format!("CAST({f} AS {ty})")
    };
    if flipped {
        format!("{k} {op} {read}")
    } else {
        format!("{read} {op} {k}")
    }
}

#[derive(Debug, Clone)]
struct Predicate {
    ty: &'static str,
    trino: bool,
    conds: Vec<(bool, &'static str, &'static str)>,
}

impl Predicate {
    fn sql(&self, field: &str) -> String {
        let conds: Vec<String> = self
            .conds
            .iter()
            .map(|&(flipped, op, k)| comparison(field, self.ty, self.trino, flipped, op, k))
            .collect();
        format!(
            "SELECT s._2 FROM S3Object s WHERE ({})",
            conds.join(" AND ")
        )
    }
}

fn predicate() -> impl Strategy<Value = Predicate> {
    (prop::sample::select(TYPES), any::<bool>()).prop_flat_map(|(ty, trino)| {
        let constants = if ty == "INT" {
            INT_CONSTANTS
        } else {
            DEC_CONSTANTS
        };
        prop::collection::vec(
            (
                any::<bool>(),
                prop::sample::select(OPS),
                prop::sample::select(constants),
            ),
            1..=3,
        )
        .prop_map(move |conds| Predicate { ty, trino, conds })
    })
}

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn specialised_comparisons_match_the_general_path(
        predicate in predicate(),
        fields in prop::collection::vec(prop::sample::select(FIELDS), 1..12),
    ) {
        let (fast, general) = fast_and_general(|f| predicate.sql(f), &fields);
        prop_assert_eq!(fast, general, "{}", predicate.sql("s._1"));
    }
}

/// How an IN list reads its field.
#[derive(Debug, Clone, Copy)]
enum Read {
    Int,
    /// Through the empty-as-NULL CASE.
    TrinoInt,
    /// As it is, against text constants.
    Text,
}

/// An IN list over `f`, split into `pieces` joined by OR, or under NOT by AND, as Sift's
/// TPC-DS client sends a long list.
#[derive(Debug, Clone)]
struct InLists {
    read: Read,
    negated: bool,
    pieces: Vec<Vec<&'static str>>,
}

impl InLists {
    fn sql(&self, f: &str) -> String {
        let read = match self.read {
            Read::TrinoInt => format!("case {f} when '' then null else CAST({f} AS INT) end"),
            Read::Int => format!("CAST({f} AS INT)"),
            Read::Text => f.to_string(),
        };
        let item = |k: &&str| match self.read {
            Read::Text => format!("'{k}'"),
            _ => k.to_string(),
        };
        let not = if self.negated { "NOT " } else { "" };
        let lists: Vec<String> = self
            .pieces
            .iter()
            .map(|piece| {
                let items: Vec<String> = piece.iter().map(item).collect();
                format!("({read} {not}IN ({}))", items.join(", "))
            })
            .collect();
        let join = if self.negated { " AND " } else { " OR " };
        format!("SELECT s._2 FROM S3Object s WHERE ({})", lists.join(join))
    }
}

fn in_lists() -> impl Strategy<Value = InLists> {
    prop::sample::select(&[Read::Int, Read::TrinoInt, Read::Text][..]).prop_flat_map(|read| {
        let constants = match read {
            Read::Text => FIELDS,
            _ => INT_CONSTANTS,
        };
        let piece = prop::collection::vec(prop::sample::select(constants), 1..4);
        (any::<bool>(), prop::collection::vec(piece, 1..4)).prop_map(move |(negated, pieces)| {
            InLists {
                read,
                negated,
                pieces,
            }
        })
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn split_in_lists_match_the_general_path(
        lists in in_lists(),
        fields in prop::collection::vec(prop::sample::select(FIELDS), 1..12),
    ) {
        let (fast, general) = fast_and_general(|f| lists.sql(f), &fields);
        prop_assert_eq!(fast, general, "{}", lists.sql("s._1"));
    }
}

/// Trino's price range over every numeric field form above, with constants the fast path
/// takes, one deeper than its minimum scale and one at the edge of a field's fraction.
#[test]
fn trino_price_range() {
    let data: String = FIELDS
        .iter()
        .filter(|f| f.parse::<f64>().is_ok())
        .map(|f| format!("{f}\n"))
        .collect();
    let range = |f: &str, lo: &str, hi: &str| {
        format!(
            "SELECT s._1 FROM S3Object s WHERE ((case {f} when '' then null else \
             CAST({f} AS DECIMAL(7,2)) end >= {lo} AND case {f} when '' then null else \
             CAST({f} AS DECIMAL(7,2)) end <= {hi}))"
        )
    };
    for (lo, hi, expected) in [
        (
            "10.00",
            "20.00",
            "10\n10.00\n12.34\n19.995\n00012.30\n1e1\n",
        ),
        (
            "9.999",
            "19.995",
            "10\n10.00\n12.34\n9.999\n19.995\n00012.30\n1e1\n",
        ),
        ("0.00001", "1.23456", "1.234\n0.00001\n.5\n"),
    ] {
        for field in ["s._1", "(s._1 || '')"] {
            let out = run(&range(field, lo, hi), data.as_bytes()).expect("select");
            assert_eq!(
                String::from_utf8_lossy(&out),
                expected,
                "{field} in {lo}..{hi}"
            );
        }
    }
}
