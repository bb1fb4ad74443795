//! Unit tests of the SQL front end: every construct, every error, and the queries real
//! clients (Trino, Presto, the AWS CLI) send.
//!
//! Most expectations are written as the fully parenthesised SQL the printer produces for
//! the parsed tree, which shows the tree's shape at a glance; a few spell out the tree.

use crate::error::{ErrorCode, SelectError};
use crate::sql::ast::*;
use crate::sql::print::without_positions;
use crate::sql::{parse, Dialect, MAX_SQL_BYTES};

fn parse_ok(sql: &str, dialect: Dialect) -> Query {
    match parse(sql, dialect) {
        Ok(q) => q,
        Err(e) => panic!("{sql:?} should parse ({dialect:?}) but failed: {e}"),
    }
}

fn q(sql: &str) -> Query {
    parse_ok(sql, Dialect::Aws)
}

fn parse_err(sql: &str, dialect: Dialect) -> SelectError {
    match parse(sql, dialect) {
        Ok(q) => panic!("{sql:?} should fail ({dialect:?}) but parsed as {q:?}"),
        Err(e) => e,
    }
}

/// The error for `sql` in the AWS dialect, checked to carry `code` and to name a position.
fn fails(sql: &str, code: ErrorCode) -> SelectError {
    let e = parse_err(sql, Dialect::Aws);
    assert_eq!(e.code, code, "{sql:?}: {e}");
    assert!(
        e.message.contains("line ") && e.message.contains("column "),
        "{sql:?}: message does not name a position: {}",
        e.message
    );
    e
}

/// The only select item of `SELECT <expr> FROM S3Object`, positions zeroed.
fn expr_of(expr_sql: &str, dialect: Dialect) -> Expr {
    let query = without_positions(&parse_ok(
        &format!("SELECT {expr_sql} FROM S3Object"),
        dialect,
    ));
    match query.projection {
        Projection::Items(mut items) if items.len() == 1 => items.remove(0).expr,
        other => panic!("{expr_sql:?}: expected one item, got {other:?}"),
    }
}

/// `expr_sql` parsed and printed back, fully parenthesised.
fn shape(expr_sql: &str) -> String {
    expr_of(expr_sql, Dialect::Aws).to_string()
}

fn ident(name: &str, quoted: bool) -> Ident {
    Ident {
        name: name.to_string(),
        quoted,
        pos: Pos::default(),
    }
}

fn col(qualifier: Option<&str>, target: ColumnTarget) -> Expr {
    Expr::Column(ColumnRef {
        qualifier: qualifier.map(|q| ident(q, false)),
        target,
        path: Vec::new(),
        pos: Pos::default(),
    })
}

fn s_pos(n: u64) -> Expr {
    col(Some("s"), ColumnTarget::Position(n))
}

fn lit_str(s: &str) -> Expr {
    Expr::Literal(Literal::String(s.to_string()))
}

fn bin(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
        pos: Pos::default(),
    }
}

// --- real client queries ---------------------------------------------------------------------

#[test]
fn trino_case_cast_filter_parses_to_the_expected_tree() {
    let query = without_positions(&q(
        "SELECT s._1, s._2 FROM S3Object s WHERE (case s._3 when '' \
         then null else CAST(s._3 AS INT) end = 3)",
    ));
    let case = Expr::Case {
        operand: Some(Box::new(s_pos(3))),
        whens: vec![(lit_str(""), Expr::Literal(Literal::Null))],
        else_expr: Some(Box::new(Expr::Cast {
            expr: Box::new(s_pos(3)),
            to: CastType::Int,
            pos: Pos::default(),
        })),
    };
    let expected = Query {
        projection: Projection::Items(vec![
            SelectItem {
                expr: s_pos(1),
                alias: None,
            },
            SelectItem {
                expr: s_pos(2),
                alias: None,
            },
        ]),
        from: From {
            source: Source::S3Object,
            path: Vec::new(),
            alias: Some(ident("s", false)),
        },
        where_clause: Some(bin(BinaryOp::Eq, case, Expr::Literal(Literal::Int(3)))),
        limit: None,
    };
    assert_eq!(query, expected);
}

#[test]
fn real_client_queries_parse() {
    let queries = [
        "SELECT ' ' FROM S3Object s",
        "SELECT s._12, s._13, s._20 FROM S3Object s WHERE ((case s._11 when '' then null else \
         CAST(s._11 AS INT) end >= 0 AND case s._11 when '' then null else CAST(s._11 AS INT) \
         end <= 5))",
        "SELECT s._1 FROM S3Object s WHERE (case s._5 when '' then null else CAST(s._5 AS \
         DECIMAL(20,2)) end > 0.05)",
        "SELECT s._1 FROM S3Object s WHERE CAST(s._2 AS TIMESTAMP) >= `2001-08-22`",
        "SELECT s._1 FROM S3Object s WHERE s._2 = ''",
        "SELECT s._1 FROM S3Object s WHERE s._2 <> ''",
        "SELECT s._1 FROM S3Object s WHERE s._4 IN ('a', 'b')",
        "SELECT s._1 FROM S3Object s WHERE (s._3 != '' AND CAST(s._3 AS INT) = 3)",
        "select count(*) from s3object",
        "SELECT * FROM S3Object LIMIT 5",
        "SELECT * FROM S3Object s WHERE s.\"Customer Name\" LIKE 'A%'",
        "SELECT s.name, s.city FROM S3Object s WHERE s.age > 30 LIMIT 10;",
    ];
    for sql in queries {
        // Each also survives print → parse unchanged.
        let parsed = without_positions(&q(sql));
        let printed = parsed.to_string();
        assert_eq!(
            without_positions(&q(&printed)),
            parsed,
            "{sql} printed as {printed}"
        );
    }
}

#[test]
fn printed_query_text() {
    assert_eq!(
        q("select s._1 as a, count(*) from s3object s where s._2 <> '' and s._3 like 'x%' limit 3;")
            .to_string(),
        "SELECT s._1 AS a, COUNT(*) FROM S3Object AS s WHERE ((s._2 <> '') AND (s._3 LIKE \
         'x%')) LIMIT 3"
    );
    assert_eq!(
        parse_ok("select \"it's\" from stdin", Dialect::Ceph).to_string(),
        "SELECT 'it''s' FROM stdin"
    );
}

#[test]
fn trino_range_filter_shape() {
    let query = q(
        "SELECT s._12 FROM S3Object s WHERE ((case s._11 when '' then null else \
         CAST(s._11 AS INT) end >= 0 AND case s._11 when '' then null else CAST(s._11 AS INT) \
         end <= 5))",
    );
    assert_eq!(
        query
            .where_clause
            .map(|w| w.to_string())
            .unwrap_or_default(),
        "((CASE s._11 WHEN '' THEN NULL ELSE CAST(s._11 AS INT) END >= 0) AND (CASE s._11 \
         WHEN '' THEN NULL ELSE CAST(s._11 AS INT) END <= 5))"
    );
}

#[test]
fn decimal_cast_and_literal() {
    assert_eq!(
        expr_of("CAST(s._5 AS DECIMAL(20,2)) > 0.05", Dialect::Aws),
        bin(
            BinaryOp::Gt,
            Expr::Cast {
                expr: Box::new(s_pos(5)),
                to: CastType::Decimal {
                    precision: Some(20),
                    scale: Some(2),
                },
                pos: Pos::default(),
            },
            Expr::Literal(Literal::Decimal("0.05".into())),
        )
    );
}

#[test]
fn count_star_lowercase() {
    let query = without_positions(&q("select count(*) from s3object"));
    assert_eq!(
        query.projection,
        Projection::Items(vec![SelectItem {
            expr: Expr::Aggregate {
                func: AggFunc::Count,
                arg: None,
                pos: Pos::default(),
            },
            alias: None,
        }])
    );
    assert_eq!(
        query.from,
        From {
            source: Source::S3Object,
            path: Vec::new(),
            alias: None
        }
    );
}

#[test]
fn star_with_limit() {
    let query = q("SELECT * FROM S3Object LIMIT 5");
    assert_eq!(query.projection, Projection::Star);
    assert_eq!(query.limit, Some(5));
    assert_eq!(query.where_clause, None);
}

// --- select list and FROM ----------------------------------------------------------------

#[test]
fn qualified_star_is_star() {
    assert_eq!(q("SELECT s.* FROM S3Object s").projection, Projection::Star);
}

#[test]
fn star_must_be_alone() {
    for sql in [
        "SELECT *, _1 FROM S3Object",
        "SELECT _1, * FROM S3Object",
        "SELECT s.*, _1 FROM S3Object s",
        "SELECT _1, s.* FROM S3Object s",
        "SELECT *, * FROM S3Object",
    ] {
        fails(sql, ErrorCode::ParseAsteriskIsNotAloneInSelectList);
    }
}

#[test]
fn aliases_with_and_without_as() {
    let query = without_positions(&q(
        "SELECT _1 AS a, _2 b, _3 AS \"Quoted Alias\" FROM S3Object AS t",
    ));
    let Projection::Items(items) = query.projection else {
        panic!("expected items");
    };
    let aliases: Vec<Option<Ident>> = items.into_iter().map(|i| i.alias).collect();
    assert_eq!(
        aliases,
        vec![
            Some(ident("a", false)),
            Some(ident("b", false)),
            Some(ident("Quoted Alias", true)),
        ]
    );
    assert_eq!(query.from.alias, Some(ident("t", false)));
}

#[test]
fn alias_after_as_must_be_an_identifier() {
    fails(
        "SELECT _1 AS FROM S3Object",
        ErrorCode::ParseExpectedIdentForAlias,
    );
    fails(
        "SELECT _1 FROM S3Object AS WHERE",
        ErrorCode::ParseExpectedIdentForAlias,
    );
}

#[test]
fn column_references() {
    use ColumnTarget::*;
    assert_eq!(expr_of("_3", Dialect::Aws), col(None, Position(3)));
    assert_eq!(expr_of("_0", Dialect::Aws), col(None, Position(0)));
    assert_eq!(expr_of("s._3", Dialect::Aws), s_pos(3));
    assert_eq!(
        expr_of("name", Dialect::Aws),
        col(None, Name(ident("name", false)))
    );
    assert_eq!(
        expr_of("s.name", Dialect::Aws),
        col(Some("s"), Name(ident("name", false)))
    );
    assert_eq!(
        expr_of("s.\"Quoted Name\"", Dialect::Aws),
        col(Some("s"), Name(ident("Quoted Name", true)))
    );
    assert_eq!(
        expr_of("\"Quoted\"", Dialect::Aws),
        col(None, Name(ident("Quoted", true)))
    );
    // Only an unquoted `_digits` is positional.
    assert_eq!(
        expr_of("\"_1\"", Dialect::Aws),
        col(None, Name(ident("_1", true)))
    );
    assert_eq!(
        expr_of("_1a", Dialect::Aws),
        col(None, Name(ident("_1a", false)))
    );
    // Words that are only special in one place are still column names.
    assert_eq!(
        expr_of("count + year", Dialect::Aws).to_string(),
        "(count + year)"
    );
}

#[test]
fn column_reference_positions() {
    let query = q("SELECT\n  s._1 FROM S3Object s WHERE   x = 1");
    let Projection::Items(items) = &query.projection else {
        panic!("expected items");
    };
    let Expr::Column(c) = &items[0].expr else {
        panic!("expected a column");
    };
    assert_eq!(c.pos, Pos { line: 2, column: 3 });
    let Some(Expr::Binary { left, pos, .. }) = &query.where_clause else {
        panic!("expected a comparison");
    };
    assert_eq!(
        *pos,
        Pos {
            line: 2,
            column: 34
        }
    );
    let Expr::Column(c) = left.as_ref() else {
        panic!("expected a column");
    };
    assert_eq!(
        c.pos,
        Pos {
            line: 2,
            column: 32
        }
    );
}

#[test]
fn paths_into_json_values() {
    let query = q("SELECT s.a.b[2]['c d'] FROM S3Object s");
    let Projection::Items(items) = &query.projection else {
        panic!("items expected")
    };
    let Expr::Column(c) = &items[0].expr else {
        panic!("column expected")
    };
    assert_eq!(c.qualifier.as_ref().map(|q| q.name.as_str()), Some("s"));
    assert!(matches!(&c.target, ColumnTarget::Name(id) if id.name == "a"));
    let steps: Vec<String> = c
        .path
        .iter()
        .map(|p| match p {
            PathStep::Key(k) => format!("{}:{}", k.name, k.quoted),
            PathStep::Index(i) => format!("[{i}]"),
        })
        .collect();
    assert_eq!(steps, ["b:false", "[2]", "c d:true"]);
    // Wildcards belong to FROM.
    fails(
        "SELECT _1 FROM S3Object s WHERE s.* = 1",
        ErrorCode::ParseUnsupportedSyntax,
    );
    fails(
        "SELECT s.a[*] FROM S3Object s",
        ErrorCode::ParseUnsupportedSyntax,
    );
    fails(
        "SELECT s.a[-1] FROM S3Object s",
        ErrorCode::ParseUnexpectedToken,
    );
}

#[test]
fn reserved_word_after_dot_is_a_key() {
    q("SELECT s.end, s.date FROM S3Object s");
    q("SELECT s.\"end\" FROM S3Object s");
}

#[test]
fn from_clause_variants() {
    for sql in [
        "SELECT * FROM S3Object",
        "SELECT * FROM s3object",
        "SELECT * FROM S3OBJECT s",
        "SELECT * FROM S3Object AS s",
        "SELECT * FROM S3Object \"S\"",
    ] {
        assert_eq!(q(sql).from.source, Source::S3Object, "{sql}");
    }
}

#[test]
fn from_stdin_only_in_ceph() {
    let query = parse_ok("select _1 from stdin", Dialect::Ceph);
    assert_eq!(query.from.source, Source::Stdin);
    let e = fails("select _1 from stdin", ErrorCode::ParseUnsupportedSyntax);
    assert!(e.message.contains("stdin"), "{}", e.message);
    assert_eq!(
        parse_ok("select _1 from s3object", Dialect::Ceph)
            .from
            .source,
        Source::S3Object
    );
}

#[test]
fn from_paths() {
    assert_eq!(
        q("SELECT * FROM S3Object[*]").from.path,
        [FromStep::AnyIndex]
    );
    let from = q("SELECT * FROM S3Object[*].a[*].*['b'][3] AS x").from;
    assert_eq!(from.path.len(), 6);
    assert_eq!(from.path[2], FromStep::AnyIndex);
    assert_eq!(from.path[3], FromStep::AnyKey);
    assert_eq!(from.path[5], FromStep::Index(3));
    assert_eq!(from.alias.map(|a| a.name), Some("x".to_string()));
    fails(
        "SELECT * FROM S3Object.a",
        ErrorCode::ParseUnsupportedSyntax,
    );
    fails(
        "SELECT * FROM S3Object[0]",
        ErrorCode::ParseUnsupportedSyntax,
    );
    fails(
        "SELECT * FROM S3Object[*].",
        ErrorCode::ParseUnexpectedToken,
    );
}

#[test]
fn unknown_source() {
    let e = fails("SELECT * FROM mytable", ErrorCode::ParseUnexpectedToken);
    assert!(e.message.contains("'mytable'"), "{}", e.message);
}

#[test]
fn where_limit_and_semicolon() {
    let query = q("SELECT _1 FROM S3Object WHERE _2 = 'x' LIMIT 0;");
    assert_eq!(query.limit, Some(0));
    assert!(query.where_clause.is_some());
    assert_eq!(
        q("SELECT _1 FROM S3Object LIMIT 99999999999999999999999").limit,
        Some(u64::MAX)
    );
}

#[test]
fn limit_errors() {
    let e = fails(
        "SELECT * FROM S3Object LIMIT -1",
        ErrorCode::EvaluatorNegativeLimit,
    );
    assert!(e.message.contains("line 1, column 30"), "{}", e.message);
    fails(
        "SELECT * FROM S3Object LIMIT 'a'",
        ErrorCode::ParseExpectedNumber,
    );
    fails(
        "SELECT * FROM S3Object LIMIT 1.5",
        ErrorCode::ParseExpectedNumber,
    );
    fails(
        "SELECT * FROM S3Object LIMIT",
        ErrorCode::ParseExpectedNumber,
    );
}

#[test]
fn trailing_tokens_are_rejected() {
    let e = fails(
        "SELECT * FROM S3Object LIMIT 5 5",
        ErrorCode::ParseUnexpectedToken,
    );
    assert!(e.message.contains("line 1, column 32"), "{}", e.message);
    fails("SELECT * FROM S3Object;;", ErrorCode::ParseUnexpectedToken);
    fails(
        "SELECT * FROM S3Object s t",
        ErrorCode::ParseUnexpectedToken,
    );
    fails(
        "SELECT * FROM S3Object WHERE _1 = 1 _2",
        ErrorCode::ParseUnexpectedToken,
    );
}

#[test]
fn missing_from() {
    let e = fails("SELECT * FORM S3Object", ErrorCode::ParseSelectMissingFrom);
    assert_eq!(
        e.message,
        "Unexpected token 'FORM' at line 1, column 10, expected FROM"
    );
    let e = fails("SELECT _1", ErrorCode::ParseSelectMissingFrom);
    assert!(e.message.contains("end of input"), "{}", e.message);
}

#[test]
fn empty_select_and_non_select() {
    fails("SELECT FROM S3Object", ErrorCode::ParseEmptySelect);
    fails("select", ErrorCode::ParseEmptySelect);
    fails(
        "SELECT _1, FROM S3Object",
        ErrorCode::ParseExpectedExpression,
    );
    fails("", ErrorCode::ParseUnexpectedToken);
    fails("DELETE FROM S3Object", ErrorCode::ParseUnexpectedToken);
    fails(
        "SELECT DISTINCT _1 FROM S3Object",
        ErrorCode::ParseUnsupportedSyntax,
    );
    fails(
        "SELECT ALL * FROM S3Object",
        ErrorCode::ParseUnsupportedSyntax,
    );
    // Columns that happen to be called `distinct` or `all` still work.
    q("SELECT distinct FROM S3Object");
    q("SELECT all, distinct + 1 FROM S3Object");
    q("SELECT COUNT(distinct) FROM S3Object");
}

#[test]
fn expression_too_long_is_checked_first() {
    let base = "SELECT * FROM S3Object";
    let at_limit = format!("{base}{}", " ".repeat(MAX_SQL_BYTES - base.len()));
    q(&at_limit);
    // One byte over, and malformed too: the length is what is reported.
    let over = format!("{}#", at_limit);
    let e = parse_err(&over, Dialect::Aws);
    assert_eq!(e.code, ErrorCode::ExpressionTooLong, "{e}");
}

// --- literals and operators ----------------------------------------------------------------

#[test]
fn literals() {
    use Literal::*;
    let cases = [
        ("TRUE", Bool(true)),
        ("false", Bool(false)),
        ("NULL", Null),
        ("missing", Missing),
        ("42", Int(42)),
        ("0.05", Decimal("0.05".into())),
        (".5", Decimal(".5".into())),
        ("5.", Decimal("5.".into())),
        ("1e3", Float("1e3".into())),
        ("2.5E-1", Float("2.5E-1".into())),
        ("9223372036854775808", Decimal("9223372036854775808".into())),
        ("'it''s'", String("it's".into())),
        ("`2001-08-22`", Timestamp("2001-08-22".into())),
    ];
    for (sql, literal) in cases {
        assert_eq!(expr_of(sql, Dialect::Aws), Expr::Literal(literal), "{sql}");
    }
}

#[test]
fn negative_numbers_are_negation() {
    assert_eq!(
        expr_of("-5", Dialect::Aws),
        Expr::Unary {
            op: UnaryOp::Neg,
            expr: Box::new(Expr::Literal(Literal::Int(5))),
        }
    );
    assert_eq!(shape("- -5"), "(-((-(5))))");
    assert_eq!(shape("+5"), "(+(5))");
}

#[test]
fn precedence() {
    let cases = [
        ("a OR b AND c", "(a OR (b AND c))"),
        ("a AND b OR c", "((a AND b) OR c)"),
        ("NOT a = b", "(NOT ((a = b)))"),
        ("NOT a AND b", "((NOT (a)) AND b)"),
        ("NOT NOT a", "(NOT ((NOT (a))))"),
        ("a = b + c * d", "(a = (b + (c * d)))"),
        ("a - b - c", "((a - b) - c)"),
        ("a / b % c", "((a / b) % c)"),
        ("-a * b", "((-(a)) * b)"),
        ("'a' || 1 + 2", "(('a' || 1) + 2)"),
        ("a + b || c", "((a + b) || c)"),
        ("a * b || c", "((a * b) || c)"),
        ("a = b < c", "(a = (b < c))"),
        ("a <> b >= c", "(a <> (b >= c))"),
        ("a = b LIKE 'x'", "(a = (b LIKE 'x'))"),
        ("a = b BETWEEN 1 AND 2", "(a = (b BETWEEN 1 AND 2))"),
        ("a BETWEEN 1 AND 2 = TRUE", "((a BETWEEN 1 AND 2) = TRUE)"),
        ("a = b IN (1)", "((a = b) IN (1))"),
        ("a < b IN (1)", "((a < b) IN (1))"),
        ("a IN (1) = b", "((a IN (1)) = b)"),
        ("a IS NULL = b", "((a IS NULL) = b)"),
        ("a < b IS NULL", "((a < b) IS NULL)"),
        ("a LIKE b < c", "((a LIKE b) < c)"),
        ("a < b < c", "((a < b) < c)"),
        ("a || b = c", "((a || b) = c)"),
        ("a < b = TRUE", "((a < b) = TRUE)"),
        ("a BETWEEN 1 AND 2 AND c", "((a BETWEEN 1 AND 2) AND c)"),
        ("a NOT BETWEEN 1 + 1 AND 2", "(a NOT BETWEEN (1 + 1) AND 2)"),
        ("a IN (1, 2) OR b", "((a IN (1, 2)) OR b)"),
        ("a NOT IN ('x')", "(a NOT IN ('x'))"),
        ("a LIKE 'x%' ESCAPE '!'", "(a LIKE 'x%' ESCAPE '!')"),
        ("a NOT LIKE b || '%'", "(a NOT LIKE (b || '%'))"),
        ("a IS NULL", "(a IS NULL)"),
        ("a IS NOT NULL AND b", "((a IS NOT NULL) AND b)"),
        ("a IS MISSING", "(a IS MISSING)"),
        ("a IS NOT MISSING", "(a IS NOT MISSING)"),
        ("NOT a IS NULL", "(NOT ((a IS NULL)))"),
        ("a + b IS NULL", "((a + b) IS NULL)"),
        ("(a OR b) AND c", "((a OR b) AND c)"),
        ("a != b", "(a <> b)"),
        ("a <> b", "(a <> b)"),
        ("a <= b", "(a <= b)"),
        ("a >= b", "(a >= b)"),
    ];
    for (sql, expected) in cases {
        assert_eq!(shape(sql), expected, "{sql}");
    }
}

#[test]
fn predicate_errors() {
    fails(
        "SELECT * FROM S3Object WHERE a IS 5",
        ErrorCode::ParseExpectedKeyword,
    );
    fails(
        "SELECT * FROM S3Object WHERE a BETWEEN 1 OR 2",
        ErrorCode::ParseExpectedKeyword,
    );
    fails(
        "SELECT * FROM S3Object WHERE a IN ()",
        ErrorCode::ParseExpectedExpression,
    );
    fails(
        "SELECT * FROM S3Object WHERE a IN 1",
        ErrorCode::ParseUnexpectedToken,
    );
    fails(
        "SELECT * FROM S3Object WHERE a IN (1, 2",
        ErrorCode::ParseUnexpectedToken,
    );
    fails(
        "SELECT * FROM S3Object WHERE a NOT = 1",
        ErrorCode::ParseUnexpectedToken,
    );
    fails(
        "SELECT * FROM S3Object WHERE",
        ErrorCode::ParseExpectedExpression,
    );
    fails(
        "SELECT * FROM S3Object WHERE a = ",
        ErrorCode::ParseExpectedExpression,
    );
    fails(
        "SELECT * FROM S3Object WHERE (a = 1",
        ErrorCode::ParseUnexpectedToken,
    );
    fails(
        "SELECT _1 + * FROM S3Object",
        ErrorCode::ParseExpectedExpression,
    );
}

#[test]
fn expected_expression_names_the_token() {
    let e = fails(
        "SELECT * FROM S3Object WHERE = 1",
        ErrorCode::ParseExpectedExpression,
    );
    assert_eq!(
        e.message,
        "Unexpected token '=' at line 1, column 30, expected an expression"
    );
}

#[test]
fn double_equals_is_ceph_only() {
    let e = fails(
        "SELECT * FROM S3Object WHERE a == 1",
        ErrorCode::ParseUnknownOperator,
    );
    assert!(e.message.contains("'=='"), "{}", e.message);
    assert_eq!(expr_of("a == 1", Dialect::Ceph).to_string(), "(a = 1)");
}

#[test]
fn double_quotes_are_strings_in_ceph() {
    assert_eq!(expr_of("\"abc\"", Dialect::Ceph), lit_str("abc"));
    assert_eq!(
        expr_of("_1 = \"x\"", Dialect::Ceph),
        bin(
            BinaryOp::Eq,
            col(None, ColumnTarget::Position(1)),
            lit_str("x")
        )
    );
    // Aliases and names after a dot stay identifiers.
    let query = without_positions(&parse_ok(
        "select s.\"a b\" as \"x\" from stdin s",
        Dialect::Ceph,
    ));
    let Projection::Items(items) = query.projection else {
        panic!("expected items");
    };
    assert_eq!(items[0].alias, Some(ident("x", true)));
    assert_eq!(
        items[0].expr,
        col(Some("s"), ColumnTarget::Name(ident("a b", true)))
    );
}

#[test]
fn ceph_function_calls() {
    assert_eq!(
        shape("int(_1) + float(_2)"),
        "(INT(_1) + FLOAT(_2))",
        "int()/float() are ordinary calls"
    );
}

// --- CASE, CAST and the special functions ----------------------------------------------------

#[test]
fn case_forms() {
    assert_eq!(
        shape("CASE _1 WHEN 'a' THEN 1 WHEN 'b' THEN 2 ELSE 3 END"),
        "CASE _1 WHEN 'a' THEN 1 WHEN 'b' THEN 2 ELSE 3 END"
    );
    assert_eq!(
        shape("case when _1 > 1 then 'big' end"),
        "CASE WHEN (_1 > 1) THEN 'big' END"
    );
    assert_eq!(
        shape("CASE WHEN a THEN b END = c"),
        "(CASE WHEN a THEN b END = c)"
    );
}

#[test]
fn case_errors() {
    fails(
        "SELECT CASE _1 END FROM S3Object",
        ErrorCode::ParseExpectedWhenClause,
    );
    fails(
        "SELECT CASE ELSE 1 END FROM S3Object",
        ErrorCode::ParseExpectedExpression,
    );
    fails(
        "SELECT CASE WHEN 1 THEN 2 FROM S3Object",
        ErrorCode::ParseExpectedKeyword,
    );
    fails(
        "SELECT CASE WHEN 1 2 END FROM S3Object",
        ErrorCode::ParseExpectedKeyword,
    );
}

#[test]
fn cast_types() {
    let cases = [
        ("BOOL", CastType::Bool),
        ("boolean", CastType::Bool),
        ("INT", CastType::Int),
        ("integer", CastType::Int),
        ("FLOAT", CastType::Float),
        ("STRING", CastType::String),
        ("TIMESTAMP", CastType::Timestamp),
        (
            "DECIMAL",
            CastType::Decimal {
                precision: None,
                scale: None,
            },
        ),
        (
            "numeric(10)",
            CastType::Decimal {
                precision: Some(10),
                scale: None,
            },
        ),
        (
            "DECIMAL(38, 0)",
            CastType::Decimal {
                precision: Some(38),
                scale: Some(0),
            },
        ),
    ];
    for (sql, to) in cases {
        assert_eq!(
            expr_of(&format!("CAST(_1 AS {sql})"), Dialect::Aws),
            Expr::Cast {
                expr: Box::new(col(None, ColumnTarget::Position(1))),
                to,
                pos: Pos::default(),
            },
            "{sql}"
        );
    }
}

#[test]
fn cast_errors() {
    for ty in [
        "VARCHAR", "BIGINT", "DOUBLE", "CHAR", "DATE", "\"INT\"", "1",
    ] {
        let e = fails(
            &format!("SELECT CAST(_1 AS {ty}) FROM S3Object"),
            ErrorCode::ParseExpectedTypeName,
        );
        assert!(e.message.contains("line 1, column 19"), "{}", e.message);
    }
    fails("SELECT CAST(_1) FROM S3Object", ErrorCode::ParseCastArity);
    fails(
        "SELECT CAST(_1, INT) FROM S3Object",
        ErrorCode::ParseCastArity,
    );
    fails(
        "SELECT CAST(_1 AS INT, 2) FROM S3Object",
        ErrorCode::ParseCastArity,
    );
    fails(
        "SELECT CAST(_1 INT) FROM S3Object",
        ErrorCode::ParseExpectedKeyword,
    );
    fails(
        "SELECT CAST _1 AS INT FROM S3Object",
        ErrorCode::ParseExpectedLeftParenAfterCast,
    );
    for params in ["(0)", "(39)", "(10, 11)", "(a)", "(1.5)", "(10,", "(10 2)"] {
        fails(
            &format!("SELECT CAST(_1 AS DECIMAL{params}) FROM S3Object"),
            ErrorCode::ParseInvalidTypeParam,
        );
    }
    fails(
        "SELECT CAST(_1 AS INT(3)) FROM S3Object",
        ErrorCode::ParseInvalidTypeParam,
    );
    fails(
        "SELECT CAST(_1 AS INT FROM S3Object",
        ErrorCode::ParseExpectedRightParenBuiltinFunctionCall,
    );
}

#[test]
fn date_functions() {
    assert_eq!(
        shape("EXTRACT(year FROM `2001-08-22`)"),
        "EXTRACT(YEAR FROM `2001-08-22`)"
    );
    assert_eq!(
        shape("DATE_ADD(timezone_hour, 1 + 1, _1)"),
        "DATE_ADD(TIMEZONE_HOUR, (1 + 1), _1)"
    );
    assert_eq!(
        shape("date_diff(Second, _1, _2)"),
        "DATE_DIFF(SECOND, _1, _2)"
    );
    for part in [
        "YEAR",
        "MONTH",
        "DAY",
        "HOUR",
        "MINUTE",
        "SECOND",
        "TIMEZONE_HOUR",
        "TIMEZONE_MINUTE",
    ] {
        shape(&format!("EXTRACT({part} FROM _1)"));
    }
}

#[test]
fn date_function_errors() {
    for sql in [
        "SELECT EXTRACT(WEEK FROM _1) FROM S3Object",
        "SELECT EXTRACT('YEAR' FROM _1) FROM S3Object",
        "SELECT DATE_ADD(CENTURY, 1, _1) FROM S3Object",
        "SELECT DATE_DIFF(_1, _1, _2) FROM S3Object",
    ] {
        fails(sql, ErrorCode::ParseExpectedDatePart);
    }
    fails(
        "SELECT EXTRACT(YEAR, _1) FROM S3Object",
        ErrorCode::ParseExpectedKeyword,
    );
    fails(
        "SELECT DATE_ADD(YEAR _1, _2) FROM S3Object",
        ErrorCode::ParseExpectedArgumentDelimiter,
    );
    fails(
        "SELECT DATE_ADD(YEAR, 1) FROM S3Object",
        ErrorCode::ParseExpectedArgumentDelimiter,
    );
}

#[test]
fn trim_forms() {
    let cases = [
        ("TRIM(_1)", "TRIM(BOTH FROM _1)"),
        ("TRIM(BOTH FROM _1)", "TRIM(BOTH FROM _1)"),
        ("trim(leading FROM _1)", "TRIM(LEADING FROM _1)"),
        ("TRIM(TRAILING 'x' FROM _1)", "TRIM(TRAILING 'x' FROM _1)"),
        ("TRIM('xy' FROM _1)", "TRIM(BOTH 'xy' FROM _1)"),
        // A column called `both` still works.
        ("TRIM(both)", "TRIM(BOTH FROM both)"),
    ];
    for (sql, expected) in cases {
        assert_eq!(shape(sql), expected, "{sql}");
    }
    let Expr::Trim { spec, chars, .. } = expr_of("TRIM(LEADING '0' FROM _1)", Dialect::Aws) else {
        panic!("expected TRIM");
    };
    assert_eq!(spec, TrimSpec::Leading);
    assert_eq!(chars, Some(Box::new(lit_str("0"))));
    fails(
        "SELECT TRIM(LEADING _1) FROM S3Object",
        ErrorCode::ParseExpectedKeyword,
    );
}

#[test]
fn substring_forms_agree() {
    assert_eq!(
        expr_of("SUBSTRING(_1 FROM 2 FOR 3)", Dialect::Aws),
        expr_of("substring(_1, 2, 3)", Dialect::Aws)
    );
    assert_eq!(
        expr_of("SUBSTRING(_1 FROM 2)", Dialect::Aws),
        expr_of("SUBSTRING(_1, 2)", Dialect::Aws)
    );
    assert_eq!(shape("SUBSTRING(_1, 2, 3)"), "SUBSTRING(_1, 2, 3)");
    fails(
        "SELECT SUBSTRING(_1) FROM S3Object",
        ErrorCode::ParseExpectedArgumentDelimiter,
    );
}

#[test]
fn aggregates() {
    assert_eq!(shape("COUNT(*)"), "COUNT(*)");
    assert_eq!(shape("count(_1)"), "COUNT(_1)");
    assert_eq!(shape("Sum(_1 + 1)"), "SUM((_1 + 1))");
    assert_eq!(shape("avg(_1)"), "AVG(_1)");
    assert_eq!(shape("MIN(_1)"), "MIN(_1)");
    assert_eq!(shape("MAX(_1)"), "MAX(_1)");
    let Expr::Aggregate { func, arg, .. } = expr_of("sum(_2)", Dialect::Aws) else {
        panic!("expected an aggregate");
    };
    assert_eq!(func, AggFunc::Sum);
    assert_eq!(arg, Some(Box::new(col(None, ColumnTarget::Position(2)))));
}

#[test]
fn aggregate_errors() {
    for f in ["SUM", "AVG", "MIN", "MAX"] {
        fails(
            &format!("SELECT {f}(*) FROM S3Object"),
            ErrorCode::ParseUnsupportedCallWithStar,
        );
    }
    fails(
        "SELECT LOWER(*) FROM S3Object",
        ErrorCode::ParseUnsupportedCallWithStar,
    );
    fails(
        "SELECT COUNT() FROM S3Object",
        ErrorCode::ParseNonUnaryAgregateFunctionCall,
    );
    fails(
        "SELECT SUM(_1, _2) FROM S3Object",
        ErrorCode::ParseNonUnaryAgregateFunctionCall,
    );
    fails(
        "SELECT COUNT(DISTINCT _1) FROM S3Object",
        ErrorCode::ParseUnsupportedSyntax,
    );
}

#[test]
fn plain_functions_are_upper_cased() {
    assert_eq!(
        expr_of("lower(_1)", Dialect::Aws),
        Expr::Function {
            name: "LOWER".into(),
            args: vec![col(None, ColumnTarget::Position(1))],
            pos: Pos::default(),
        }
    );
    assert_eq!(shape("utcnow()"), "UTCNOW()");
    assert_eq!(shape("coalesce(_1, _2, 'x')"), "COALESCE(_1, _2, 'x')");
    assert_eq!(shape("no_such_fn(1)"), "NO_SUCH_FN(1)");
    fails(
        "SELECT lower(_1 FROM S3Object",
        ErrorCode::ParseExpectedRightParenBuiltinFunctionCall,
    );
}

#[test]
fn function_position_is_its_name() {
    let query = q("SELECT  lower(_1) FROM S3Object");
    let Projection::Items(items) = &query.projection else {
        panic!("expected items");
    };
    let Expr::Function { pos, .. } = &items[0].expr else {
        panic!("expected a function");
    };
    assert_eq!(*pos, Pos { line: 1, column: 9 });
}

// --- robustness ------------------------------------------------------------------------------

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let half = MAX_SQL_BYTES / 2 - 40;
    let cases = [
        format!("SELECT {} FROM S3Object", "(".repeat(half)),
        format!("SELECT {}1 FROM S3Object", "- ".repeat(half / 2)),
        format!("SELECT * FROM S3Object WHERE {} a", "NOT ".repeat(half / 4)),
        format!("SELECT {}1 FROM S3Object", "1+".repeat(half / 2)),
        format!("SELECT * FROM S3Object WHERE {}1", "1 = ".repeat(half / 4)),
        format!(
            "SELECT * FROM S3Object WHERE {}a",
            "a IS NULL AND ".repeat(half / 16)
        ),
        format!("SELECT {} FROM S3Object", "lower(".repeat(half / 6)),
        format!("SELECT {} FROM S3Object", "CASE WHEN ".repeat(half / 10)),
    ];
    for sql in &cases {
        let e = parse_err(sql, Dialect::Aws);
        assert_eq!(e.code, ErrorCode::ParseUnsupportedSyntax, "{e}");
        assert!(e.message.contains("nested too deeply"), "{e}");
    }
}

#[test]
fn reasonable_nesting_is_fine() {
    // The deepest nesting the budget allows must not overflow a test thread's 2 MiB stack
    // in a debug build.
    let depth = 99;
    q(&format!(
        "SELECT {}1{} FROM S3Object",
        "(".repeat(depth),
        ")".repeat(depth)
    ));
    let ors: Vec<String> = (0..500).map(|i| format!("_1 = '{i}'")).collect();
    q(&format!(
        "SELECT * FROM S3Object WHERE {}",
        ors.join(" OR ")
    ));
    let list: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    q(&format!(
        "SELECT * FROM S3Object WHERE _1 IN ({})",
        list.join(",")
    ));
}

#[test]
fn lexer_errors_surface_from_parse() {
    let e = fails("SELECT ^ FROM S3Object", ErrorCode::LexerInvalidChar);
    assert!(e.message.contains("'^'"), "{}", e.message);
    fails("SELECT 'abc FROM S3Object", ErrorCode::LexerInvalidLiteral);
}

#[test]
fn comments_are_allowed() {
    q("SELECT * -- everything\nFROM S3Object /* the object */ LIMIT 1");
}
