//! Property tests of the SQL front end.
//!
//! 1. Nothing a client can send makes the parser panic or hang: arbitrary text, soups of
//!    SQL-ish tokens, and truncated valid queries all end in `Ok` or in an error that names
//!    a position.
//! 2. Printing loses nothing: for generated trees, `parse(print(tree)) == tree` (positions
//!    aside), which checks the printer and the parser against each other construct by
//!    construct.

use proptest::prelude::*;

use crate::error::ErrorCode;
use crate::sql::ast::*;
use crate::sql::lexer::is_reserved;
use crate::sql::print::without_positions;
use crate::sql::{parse, Dialect};

/// Either outcome is fine; a panic is not, and an error must say where it happened.
fn check_no_panic(sql: &str) -> Result<(), TestCaseError> {
    for dialect in [Dialect::Aws, Dialect::Ceph] {
        if let Err(e) = parse(sql, dialect) {
            prop_assert!(!e.message.is_empty());
            if e.code != ErrorCode::ExpressionTooLong {
                prop_assert!(
                    e.message.contains("line ") && e.message.contains("column "),
                    "{sql:?} → {e}"
                );
            }
        }
    }
    Ok(())
}

const VOCABULARY: &[&str] = &[
    "SELECT",
    "select",
    "FROM",
    "WHERE",
    "LIMIT",
    "AS",
    "AND",
    "OR",
    "NOT",
    "IS",
    "NULL",
    "MISSING",
    "TRUE",
    "FALSE",
    "IN",
    "LIKE",
    "ESCAPE",
    "BETWEEN",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "INT",
    "DECIMAL",
    "TIMESTAMP",
    "S3Object",
    "stdin",
    "s",
    "_1",
    "s._2",
    "name",
    "\"Q n\"",
    "COUNT",
    "SUM",
    "EXTRACT",
    "YEAR",
    "DATE_ADD",
    "DATE_DIFF",
    "TRIM",
    "LEADING",
    "BOTH",
    "SUBSTRING",
    "FOR",
    "lower",
    "DISTINCT",
    "0",
    "42",
    "0.05",
    ".5",
    "1e3",
    "99999999999999999999",
    "'x'",
    "''",
    "'it''s'",
    "`2001-08-22`",
    "=",
    "==",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "||",
    "(",
    ")",
    ",",
    ".",
    "[",
    "]",
    ";",
    "--",
    "/*",
    "*/",
    "'",
    "\"",
    "`",
    "!",
    "#",
    "é",
    "\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCABULARY), 0..40).prop_map(|t| t.join(" "))
}

// --- generated trees ---------------------------------------------------------------------

/// Function names the parser treats specially, which a generated plain call must avoid.
const SPECIAL_CALLS: &[&str] = &[
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "EXTRACT",
    "DATE_ADD",
    "DATE_DIFF",
    "TRIM",
    "SUBSTRING",
];

/// A bare identifier that lexes back as one: not reserved, not `_digits`, and not one of
/// the words the parser reads as a set quantifier.
fn bare_name() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9_]{0,6}".prop_filter("reserved word", |n| {
        !is_reserved(n) && !n.eq_ignore_ascii_case("distinct") && !n.eq_ignore_ascii_case("all")
    })
}

fn ident() -> impl Strategy<Value = Ident> {
    prop_oneof![
        bare_name().prop_map(|name| Ident {
            name,
            quoted: false,
            pos: Pos::default()
        }),
        "(?s).{0,8}".prop_map(|name| Ident {
            name,
            quoted: true,
            pos: Pos::default()
        }),
    ]
}

fn column() -> impl Strategy<Value = Expr> {
    let target = prop_oneof![
        any::<u64>().prop_map(ColumnTarget::Position),
        ident().prop_map(ColumnTarget::Name),
    ];
    let step = prop_oneof![
        3 => ident().prop_map(PathStep::Key),
        1 => (0..=i64::MAX as u64).prop_map(PathStep::Index),
    ];
    (
        prop::option::of(ident()),
        target,
        prop::collection::vec(step, 0..3),
    )
        .prop_map(|(qualifier, target, mut path)| {
            // `x.k` always parses as qualifier `x` and column `k`: without a qualifier, a
            // path may only start with an index.
            if qualifier.is_none() && matches!(path.first(), Some(PathStep::Key(_))) {
                path.clear();
            }
            Expr::Column(ColumnRef {
                qualifier,
                target,
                path,
                pos: Pos::default(),
            })
        })
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![
        Just(Literal::Null),
        Just(Literal::Missing),
        any::<bool>().prop_map(Literal::Bool),
        (0..=i64::MAX).prop_map(Literal::Int),
        "[0-9]{1,8}\\.[0-9]{0,5}|\\.[0-9]{1,5}|[1-9][0-9]{19,24}".prop_map(Literal::Decimal),
        "[0-9]{1,4}(\\.[0-9]{0,3})?[eE][+-]?[0-9]{1,3}".prop_map(Literal::Float),
        "(?s).{0,10}".prop_map(Literal::String),
        "[0-9TZ:.+-]{0,24}".prop_map(Literal::Timestamp),
    ]
}

fn cast_type() -> impl Strategy<Value = CastType> {
    prop_oneof![
        Just(CastType::Bool),
        Just(CastType::Int),
        Just(CastType::Float),
        Just(CastType::String),
        Just(CastType::Timestamp),
        Just(CastType::Decimal {
            precision: None,
            scale: None
        }),
        (1u8..=38).prop_map(|p| CastType::Decimal {
            precision: Some(p),
            scale: None
        }),
        (1u8..=38)
            .prop_flat_map(|p| (Just(p), 0..=p))
            .prop_map(|(p, s)| CastType::Decimal {
                precision: Some(p),
                scale: Some(s)
            }),
    ]
}

fn date_part() -> impl Strategy<Value = DatePart> {
    prop::sample::select(vec![
        DatePart::Year,
        DatePart::Month,
        DatePart::Day,
        DatePart::Hour,
        DatePart::Minute,
        DatePart::Second,
        DatePart::TimezoneHour,
        DatePart::TimezoneMinute,
    ])
}

fn binary_op() -> impl Strategy<Value = BinaryOp> {
    use BinaryOp::*;
    prop::sample::select(vec![
        And, Or, Eq, NotEq, Lt, LtEq, Gt, GtEq, Add, Sub, Mul, Div, Mod, Concat,
    ])
}

fn function_name() -> impl Strategy<Value = String> {
    "[A-Z][A-Z0-9_]{0,8}".prop_filter("reserved or special", |n| {
        !is_reserved(n) && !SPECIAL_CALLS.contains(&n.as_str())
    })
}

fn boxed(e: Expr) -> Box<Expr> {
    Box::new(e)
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![literal().prop_map(Expr::Literal), column()];
    leaf.prop_recursive(4, 48, 4, |inner| {
        let e = || inner.clone();
        let b = || inner.clone().prop_map(boxed);
        let list = |min: usize| prop::collection::vec(inner.clone(), min..4);
        prop_oneof![
            (
                prop::sample::select(vec![UnaryOp::Not, UnaryOp::Neg, UnaryOp::Plus]),
                b()
            )
                .prop_map(|(op, expr)| Expr::Unary { op, expr }),
            (binary_op(), b(), b()).prop_map(|(op, left, right)| Expr::Binary {
                op,
                left,
                right,
                pos: Pos::default()
            }),
            (b(), b(), prop::option::of(b()), any::<bool>()).prop_map(
                |(expr, pattern, escape, negated)| Expr::Like {
                    expr,
                    pattern,
                    escape,
                    negated
                }
            ),
            (b(), b(), b(), any::<bool>()).prop_map(|(expr, low, high, negated)| {
                Expr::Between {
                    expr,
                    low,
                    high,
                    negated,
                }
            }),
            (b(), list(1), any::<bool>()).prop_map(|(expr, list, negated)| Expr::InList {
                expr,
                list,
                negated
            }),
            (b(), any::<bool>()).prop_map(|(expr, negated)| Expr::IsNull { expr, negated }),
            (b(), any::<bool>()).prop_map(|(expr, negated)| Expr::IsMissing { expr, negated }),
            (
                prop::option::of(b()),
                prop::collection::vec((e(), e()), 1..3),
                prop::option::of(b())
            )
                .prop_map(|(operand, whens, else_expr)| Expr::Case {
                    operand,
                    whens,
                    else_expr
                }),
            (b(), cast_type()).prop_map(|(expr, to)| Expr::Cast {
                expr,
                to,
                pos: Pos::default()
            }),
            (date_part(), b()).prop_map(|(part, expr)| Expr::Extract {
                part,
                expr,
                pos: Pos::default()
            }),
            (date_part(), b(), b()).prop_map(|(part, quantity, timestamp)| Expr::DateAdd {
                part,
                quantity,
                timestamp,
                pos: Pos::default()
            }),
            (date_part(), b(), b()).prop_map(|(part, from, to)| Expr::DateDiff {
                part,
                from,
                to,
                pos: Pos::default()
            }),
            (
                prop::sample::select(vec![TrimSpec::Leading, TrimSpec::Trailing, TrimSpec::Both]),
                prop::option::of(b()),
                b()
            )
                .prop_map(|(spec, chars, expr)| Expr::Trim {
                    spec,
                    chars,
                    expr,
                    pos: Pos::default()
                }),
            (function_name(), list(0)).prop_map(|(name, args)| Expr::Function {
                name,
                args,
                pos: Pos::default()
            }),
            prop::collection::vec(inner.clone(), 2..=3).prop_map(|args| Expr::Function {
                name: "SUBSTRING".to_string(),
                args,
                pos: Pos::default()
            }),
            (
                prop::sample::select(vec![
                    AggFunc::Count,
                    AggFunc::Sum,
                    AggFunc::Avg,
                    AggFunc::Min,
                    AggFunc::Max
                ]),
                b()
            )
                .prop_map(|(func, arg)| Expr::Aggregate {
                    func,
                    arg: Some(arg),
                    pos: Pos::default()
                }),
            Just(Expr::Aggregate {
                func: AggFunc::Count,
                arg: None,
                pos: Pos::default()
            }),
        ]
    })
}

fn query() -> impl Strategy<Value = Query> {
    let item =
        (expr(), prop::option::of(ident())).prop_map(|(expr, alias)| SelectItem { expr, alias });
    let projection = prop_oneof![
        1 => Just(Projection::Star),
        4 => prop::collection::vec(item, 1..4).prop_map(Projection::Items),
    ];
    let step = prop_oneof![
        3 => ident().prop_map(FromStep::Key),
        1 => (0..=i64::MAX as u64).prop_map(FromStep::Index),
        1 => Just(FromStep::AnyIndex),
        1 => Just(FromStep::AnyKey),
    ];
    let path = prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(step, 0..3).prop_map(|steps| {
            let mut path = vec![FromStep::AnyIndex];
            path.extend(steps);
            path
        }),
    ];
    let from = (prop::option::of(ident()), path).prop_map(|(alias, path)| From {
        source: Source::S3Object,
        path,
        alias,
    });
    (
        projection,
        from,
        prop::option::of(expr()),
        prop::option::of(any::<u64>()),
    )
        .prop_map(|(projection, from, where_clause, limit)| Query {
            projection,
            from,
            where_clause,
            limit,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(sql in any::<String>()) {
        check_no_panic(&sql)?;
    }

    #[test]
    fn select_prefixed_text_never_panics(tail in "(?s).{0,80}") {
        check_no_panic(&format!("SELECT {tail}"))?;
    }

    #[test]
    fn token_soup_never_panics(sql in token_soup()) {
        check_no_panic(&sql)?;
        check_no_panic(&format!("SELECT {sql}"))?;
        check_no_panic(&format!("SELECT * FROM S3Object WHERE {sql}"))?;
    }

    #[test]
    fn truncated_queries_never_panic(q in query(), cut in any::<prop::sample::Index>()) {
        let sql = q.to_string();
        let boundaries: Vec<usize> = sql.char_indices().map(|(i, _)| i).collect();
        let end = if boundaries.is_empty() { 0 } else { boundaries[cut.index(boundaries.len())] };
        check_no_panic(&sql[..end])?;
    }

    #[test]
    fn print_then_parse_is_identity(q in query()) {
        let sql = q.to_string();
        let parsed = parse(&sql, Dialect::Aws);
        prop_assert!(parsed.is_ok(), "{sql}\n→ {parsed:?}");
        if let Ok(parsed) = parsed {
            prop_assert_eq!(without_positions(&parsed), q, "{}", sql);
        }
    }
}
