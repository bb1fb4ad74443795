//! Tokens → [`Query`], by recursive descent.
//!
//! Operator precedence, lowest first, follows the original (pre-ANTLR) `SqlParser` of
//! PartiQL's reference implementation, the PartiQL that AWS shipped S3 Select with, whose
//! infix table is
//! `OR` 10, `AND` 20, `NOT` 30, `= <> IS IN` 40, `< <= > >= BETWEEN LIKE` 50, `+ - ||` 60,
//! `* / %` 70. That also agrees with AWS's documented table (which ranks `=` below `< >`
//! and both below LIKE/BETWEEN, and does not list `||`):
//!
//! | level          | operators                                                      |
//! |----------------|----------------------------------------------------------------|
//! | or             | `OR`                                                           |
//! | and            | `AND`                                                          |
//! | not            | `NOT` (prefix)                                                 |
//! | equality       | `= != <> ==`, `IS [NOT] NULL/MISSING`, `[NOT] IN (…)`          |
//! | comparison     | `< <= > >=`, `[NOT] BETWEEN … AND …`, `[NOT] LIKE … [ESCAPE …]`|
//! | additive       | `+ - \|\|`                                                     |
//! | multiplicative | `* / %`                                                        |
//! | unary          | `- +` (prefix)                                                 |
//! | primary        | literals, columns, `( … )`, CASE, CAST, function calls         |
//!
//! Binary operators are left-associative, including those of one predicate level
//! (`a = b IN (…)` is `(a = b) IN (…)`). The newer ANTLR PartiQL grammar differs (it puts
//! `||` below `+ -` and all predicates on one level); we follow what AWS ran.
//!
//! Every error names the offending token and its position.

use crate::err;
use crate::error::{ErrorCode, SelectError};
use crate::sql::ast::{
    AggFunc, BinaryOp, CastType, ColumnRef, ColumnTarget, DatePart, Expr, From, FromStep, Ident,
    Literal, PathStep, Pos, Projection, Query, SelectItem, Source, TrimSpec, UnaryOp,
};
use crate::sql::lexer::{tokenize, Keyword, Token, TokenKind};
use crate::sql::Dialect;

/// The longest SQL text S3 Select accepts, in bytes (256 KiB); longer is ExpressionTooLong.
pub const MAX_SQL_BYTES: usize = 256 * 1024;

/// Budget for how deep the parser may recurse and how deep the tree it builds may be.
///
/// Every nesting (parentheses, a function argument, a prefix operator) costs
/// [`NESTING_COST`]; every further operand of a left-associative chain (`a OR b OR c …`)
/// costs 1, because such a chain becomes a tree as deep as it is long. Without a bound, a
/// 256 KiB query of `((((…` or `1+1+1…` would overflow the stack here, or later when the
/// tree is dropped, bound or evaluated — all of which recurse. About 100 levels of
/// parentheses, or an operator chain of about 1000 terms, is far beyond anything a client
/// generates. Exceeding the budget is ParseUnsupportedSyntax ("nested too deeply").
const MAX_DEPTH: u32 = 1000;
const NESTING_COST: u32 = 10;

/// Parses one S3 Select statement.
///
/// Checks the 256 KiB limit before anything else, so an over-long text is reported as
/// ExpressionTooLong even if it is also malformed, and is never tokenized.
pub fn parse(sql: &str, dialect: Dialect) -> Result<Query, SelectError> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(err!(
            ExpressionTooLong,
            "The SQL expression is {} bytes long; the limit is {MAX_SQL_BYTES} bytes",
            sql.len()
        ));
    }
    let tokens = tokenize(sql)?;
    let eof = tokens.last().cloned().unwrap_or(Token {
        kind: TokenKind::Eof,
        pos: Pos { line: 1, column: 1 },
        span: 0..0,
    });
    let mut parser = Parser {
        sql,
        tokens,
        at: 0,
        eof,
        dialect,
        depth: 0,
    };
    parser.query()
}

struct Parser<'a> {
    sql: &'a str,
    tokens: Vec<Token>,
    at: usize,
    /// Returned by `peek` past the end, so no lookup needs to unwrap.
    eof: Token,
    dialect: Dialect,
    depth: u32,
}

/// The date parts EXTRACT, DATE_ADD and DATE_DIFF accept, by name.
const DATE_PARTS: [(&str, DatePart); 8] = [
    ("YEAR", DatePart::Year),
    ("MONTH", DatePart::Month),
    ("DAY", DatePart::Day),
    ("HOUR", DatePart::Hour),
    ("MINUTE", DatePart::Minute),
    ("SECOND", DatePart::Second),
    ("TIMEZONE_HOUR", DatePart::TimezoneHour),
    ("TIMEZONE_MINUTE", DatePart::TimezoneMinute),
];

impl Parser<'_> {
    // --- token access ----------------------------------------------------------------------

    fn peek(&self) -> &Token {
        self.tokens.get(self.at).unwrap_or(&self.eof)
    }

    fn peek_nth(&self, n: usize) -> &Token {
        self.tokens.get(self.at + n).unwrap_or(&self.eof)
    }

    fn kind(&self) -> &TokenKind {
        &self.peek().kind
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if self.at < self.tokens.len() {
            self.at += 1;
        }
        token
    }

    fn is_kw(&self, kw: Keyword) -> bool {
        *self.kind() == TokenKind::Keyword(kw)
    }

    fn eat_kw(&mut self, kw: Keyword) -> bool {
        let found = self.is_kw(kw);
        if found {
            self.advance();
        }
        found
    }

    /// Whether the next token is the bare (non-reserved) word `word`, ignoring case.
    fn is_word(&self, word: &str) -> bool {
        matches!(self.kind(), TokenKind::Ident(w) if w.eq_ignore_ascii_case(word))
    }

    fn eat(&mut self, kind: &TokenKind) -> bool {
        let found = self.kind() == kind;
        if found {
            self.advance();
        }
        found
    }

    /// Consumes a token of `kind` or fails with `code`, saying what was expected.
    fn expect(
        &mut self,
        kind: &TokenKind,
        code: ErrorCode,
        expected: &str,
    ) -> Result<Token, SelectError> {
        if self.kind() == kind {
            Ok(self.advance())
        } else {
            Err(self.unexpected(code, expected))
        }
    }

    fn expect_kw(&mut self, kw: Keyword, code: ErrorCode) -> Result<Token, SelectError> {
        self.expect(&TokenKind::Keyword(kw), code, kw.as_str())
    }

    fn expect_rparen(&mut self) -> Result<Token, SelectError> {
        self.expect(
            &TokenKind::RParen,
            ErrorCode::ParseExpectedRightParenBuiltinFunctionCall,
            "')'",
        )
    }

    fn expect_lparen_after(&mut self, name: &str) -> Result<Token, SelectError> {
        self.expect(
            &TokenKind::LParen,
            ErrorCode::ParseExpectedLeftParenBuiltinFunctionCall,
            &format!("'(' after {name}"),
        )
    }

    fn expect_comma(&mut self) -> Result<Token, SelectError> {
        self.expect(
            &TokenKind::Comma,
            ErrorCode::ParseExpectedArgumentDelimiter,
            "','",
        )
    }

    /// "token 'X'" or "end of input", for messages.
    fn describe(&self, token: &Token) -> String {
        match token.kind {
            TokenKind::Eof => "end of input".to_string(),
            _ => format!("token {}", token.describe(self.sql)),
        }
    }

    /// An error about the next token: `Unexpected token 'X' at line L, column C, expected …`.
    fn unexpected(&self, code: ErrorCode, expected: &str) -> SelectError {
        let token = self.peek();
        SelectError::new(
            code,
            format!(
                "Unexpected {} at {}, expected {expected}",
                self.describe(token),
                token.pos
            ),
        )
    }

    /// An error about the next token with a free-form explanation.
    fn error_here(&self, code: ErrorCode, why: &str) -> SelectError {
        let token = self.peek();
        SelectError::new(
            code,
            format!(
                "{} at {}: {why}",
                capitalize(&self.describe(token)),
                token.pos
            ),
        )
    }

    // --- depth accounting ------------------------------------------------------------------

    fn charge(&mut self, cost: u32) -> Result<(), SelectError> {
        self.depth = self.depth.saturating_add(cost);
        if self.depth > MAX_DEPTH {
            return Err(self.error_here(
                ErrorCode::ParseUnsupportedSyntax,
                "the expression is nested too deeply",
            ));
        }
        Ok(())
    }

    fn refund(&mut self, cost: u32) {
        self.depth = self.depth.saturating_sub(cost);
    }

    /// Runs `f` one nesting level deeper.
    fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, SelectError>,
    ) -> Result<T, SelectError> {
        self.charge(NESTING_COST)?;
        let result = f(self);
        self.refund(NESTING_COST);
        result
    }

    /// Whether `DISTINCT` or `ALL` is next and used as a set quantifier (`DISTINCT x`)
    /// rather than as a column name (`distinct + 1`, `SELECT all FROM …`): it is one when
    /// the token after it starts an expression.
    fn at_set_quantifier(&self) -> bool {
        (self.is_word("DISTINCT") || self.is_word("ALL"))
            && matches!(
                self.peek_nth(1).kind,
                TokenKind::Ident(_)
                    | TokenKind::QuotedIdent(_)
                    | TokenKind::Str(_)
                    | TokenKind::Int(_)
                    | TokenKind::Decimal(_)
                    | TokenKind::Float(_)
                    | TokenKind::Timestamp(_)
                    | TokenKind::LParen
                    | TokenKind::Star
                    | TokenKind::Keyword(
                        Keyword::Null
                            | Keyword::Missing
                            | Keyword::True
                            | Keyword::False
                            | Keyword::Case
                            | Keyword::Cast
                            | Keyword::Not
                    )
            )
    }

    // --- statement -------------------------------------------------------------------------

    fn query(&mut self) -> Result<Query, SelectError> {
        self.expect_kw(Keyword::Select, ErrorCode::ParseUnexpectedToken)?;
        if self.at_set_quantifier() {
            return Err(self.error_here(
                ErrorCode::ParseUnsupportedSyntax,
                "SELECT DISTINCT/ALL is not supported by S3 Select",
            ));
        }
        if self.is_kw(Keyword::From) || *self.kind() == TokenKind::Eof {
            return Err(self.error_here(ErrorCode::ParseEmptySelect, "the SELECT list is empty"));
        }
        let projection = self.projection()?;
        if !self.eat_kw(Keyword::From) {
            return Err(self.unexpected(ErrorCode::ParseSelectMissingFrom, "FROM"));
        }
        let from = self.source_clause()?;
        let where_clause = if self.eat_kw(Keyword::Where) {
            Some(self.expr()?)
        } else {
            None
        };
        let limit = if self.eat_kw(Keyword::Limit) {
            Some(self.limit()?)
        } else {
            None
        };
        self.eat(&TokenKind::Semicolon);
        if *self.kind() != TokenKind::Eof {
            return Err(self.unexpected(ErrorCode::ParseUnexpectedToken, "end of statement"));
        }
        Ok(Query {
            projection,
            from,
            where_clause,
            limit,
        })
    }

    /// Whether a `*` or `alias.*` starts here; consumes it if so.
    fn eat_star_item(&mut self) -> bool {
        if *self.kind() == TokenKind::Star {
            self.advance();
            return true;
        }
        let qualified_star = matches!(self.kind(), TokenKind::Ident(_) | TokenKind::QuotedIdent(_))
            && self.peek_nth(1).kind == TokenKind::Dot
            && self.peek_nth(2).kind == TokenKind::Star;
        if qualified_star {
            self.at += 3;
        }
        qualified_star
    }

    fn projection(&mut self) -> Result<Projection, SelectError> {
        let mut items = Vec::new();
        let mut star = false;
        loop {
            let start = self.at;
            if self.eat_star_item() {
                if star || !items.is_empty() {
                    self.at = start;
                    return Err(self.error_here(
                        ErrorCode::ParseAsteriskIsNotAloneInSelectList,
                        "'*' must be the only item in the SELECT list",
                    ));
                }
                star = true;
            } else {
                if star {
                    return Err(self.error_here(
                        ErrorCode::ParseAsteriskIsNotAloneInSelectList,
                        "'*' must be the only item in the SELECT list",
                    ));
                }
                items.push(self.select_item()?);
            }
            if !self.eat(&TokenKind::Comma) {
                break;
            }
        }
        Ok(if star {
            Projection::Star
        } else {
            Projection::Items(items)
        })
    }

    fn select_item(&mut self) -> Result<SelectItem, SelectError> {
        let expr = self.expr()?;
        let alias = self.alias()?;
        Ok(SelectItem { expr, alias })
    }

    /// `AS name`, or a bare `name` (an identifier, never a keyword), or nothing.
    fn alias(&mut self) -> Result<Option<Ident>, SelectError> {
        if self.eat_kw(Keyword::As) {
            return match self.ident_token() {
                Some(ident) => Ok(Some(ident)),
                None => Err(self.unexpected(ErrorCode::ParseExpectedIdentForAlias, "an alias")),
            };
        }
        Ok(self.ident_token())
    }

    /// Consumes an identifier (bare or double-quoted) if one is next.
    fn ident_token(&mut self) -> Option<Ident> {
        let token = self.peek();
        let (name, quoted) = match &token.kind {
            TokenKind::Ident(name) => (name.clone(), false),
            TokenKind::QuotedIdent(name) => (name.clone(), true),
            _ => return None,
        };
        let pos = token.pos;
        self.advance();
        Some(Ident { name, quoted, pos })
    }

    fn source_clause(&mut self) -> Result<From, SelectError> {
        let source = if self.is_word("S3Object") {
            Source::S3Object
        } else if self.is_word("stdin") {
            if self.dialect != Dialect::Ceph {
                return Err(self.error_here(
                    ErrorCode::ParseUnsupportedSyntax,
                    "FROM stdin is only accepted in the Ceph dialect; S3 Select reads FROM S3Object",
                ));
            }
            Source::Stdin
        } else {
            return Err(self.unexpected(ErrorCode::ParseUnexpectedToken, "S3Object"));
        };
        self.advance();
        let path = self.source_path()?;
        let alias = self.alias()?;
        Ok(From {
            source,
            path,
            alias,
        })
    }

    /// `[*]` followed by steps, after `S3Object` (JSON input only; the binder checks that).
    /// AWS lets `[*]` alone be omitted, but a path must start with it. The path returned
    /// starts with that `[*]` (over the object's top-level values).
    fn source_path(&mut self) -> Result<Vec<FromStep>, SelectError> {
        match self.kind() {
            TokenKind::LBracket => {}
            TokenKind::Dot => {
                return Err(self.error_here(
                    ErrorCode::ParseUnsupportedSyntax,
                    "a path into the object starts with S3Object[*], as in S3Object[*].a.b",
                ))
            }
            _ => return Ok(Vec::new()),
        }
        self.advance();
        if !self.eat(&TokenKind::Star) {
            return Err(self.unexpected(
                ErrorCode::ParseUnsupportedSyntax,
                "'*': a path into the object starts with S3Object[*]",
            ));
        }
        self.expect(&TokenKind::RBracket, ErrorCode::ParseUnexpectedToken, "']'")?;
        let mut path = vec![FromStep::AnyIndex];
        path.extend(self.path_steps(true)?);
        Ok(path)
    }

    /// Steps into a JSON value: `.name`, `."Name"`, `['name']`, `[n]`, and with `wildcards`
    /// (FROM) also `.*` and `[*]`; elsewhere a wildcard is ParseUnsupportedSyntax.
    fn path_steps(&mut self, wildcards: bool) -> Result<Vec<FromStep>, SelectError> {
        let mut path = Vec::new();
        loop {
            let step = match self.kind() {
                TokenKind::Dot => {
                    self.advance();
                    match self.kind() {
                        TokenKind::Star => FromStep::AnyKey,
                        _ => {
                            path.push(FromStep::Key(self.path_key()?));
                            continue;
                        }
                    }
                }
                TokenKind::LBracket => {
                    self.advance();
                    match self.kind().clone() {
                        TokenKind::Star => FromStep::AnyIndex,
                        TokenKind::Int(n) => FromStep::Index(u64::try_from(n).unwrap_or(0)),
                        TokenKind::Str(name) => FromStep::Key(Ident {
                            name,
                            quoted: true,
                            pos: self.peek().pos,
                        }),
                        _ => {
                            let what = if wildcards {
                                "'*', an array index or a quoted key"
                            } else {
                                "an array index or a quoted key"
                            };
                            return Err(self.unexpected(ErrorCode::ParseUnexpectedToken, what));
                        }
                    }
                }
                _ => return Ok(path),
            };
            if !wildcards && matches!(step, FromStep::AnyKey | FromStep::AnyIndex) {
                return Err(self.error_here(
                    ErrorCode::ParseUnsupportedSyntax,
                    "wildcards ('.*', '[*]') are only allowed in the FROM clause",
                ));
            }
            self.advance();
            if !matches!(step, FromStep::AnyKey) {
                self.expect(&TokenKind::RBracket, ErrorCode::ParseUnexpectedToken, "']'")?;
            }
            path.push(step);
        }
    }

    /// A key after a dot: an identifier, a double-quoted name (exact), or a reserved word
    /// used as a name (`s.date`), taken as written.
    fn path_key(&mut self) -> Result<Ident, SelectError> {
        if let Some(ident) = self.ident_token() {
            return Ok(ident);
        }
        if let TokenKind::Keyword(_) = self.kind() {
            let token = self.advance();
            return Ok(Ident {
                name: self.sql[token.span.clone()].to_string(),
                quoted: false,
                pos: token.pos,
            });
        }
        Err(self.unexpected(ErrorCode::ParseUnexpectedToken, "a name"))
    }

    /// The number after LIMIT.
    ///
    /// A negative limit is reported as EvaluatorNegativeLimit, the code AWS's clients know
    /// for it, rather than as a generic "expected a number".
    fn limit(&mut self) -> Result<u64, SelectError> {
        let limit = match self.kind() {
            // The lexer never produces a negative Int.
            TokenKind::Int(n) => u64::try_from(*n).unwrap_or(0),
            // An integer beyond i64 is as good as no limit at all.
            TokenKind::Decimal(text) if text.bytes().all(|b| b.is_ascii_digit()) => {
                text.parse::<u64>().unwrap_or(u64::MAX)
            }
            TokenKind::Minus
                if matches!(
                    self.peek_nth(1).kind,
                    TokenKind::Int(_) | TokenKind::Decimal(_) | TokenKind::Float(_)
                ) =>
            {
                return Err(self.error_here(
                    ErrorCode::EvaluatorNegativeLimit,
                    "LIMIT must not be negative",
                ));
            }
            _ => {
                return Err(
                    self.unexpected(ErrorCode::ParseExpectedNumber, "a non-negative integer")
                )
            }
        };
        self.advance();
        Ok(limit)
    }

    // --- expressions -----------------------------------------------------------------------

    fn expr(&mut self) -> Result<Expr, SelectError> {
        self.nested(Self::or_expr)
    }

    /// A left-associative chain `next (op next)*`, with `op_of` choosing the operators.
    fn binary_chain(
        &mut self,
        op_of: fn(&TokenKind) -> Option<BinaryOp>,
        next: fn(&mut Self) -> Result<Expr, SelectError>,
    ) -> Result<Expr, SelectError> {
        let mut left = next(self)?;
        let mut chain = 0;
        while let Some(op) = op_of(self.kind()) {
            let pos = self.advance().pos;
            self.charge(1)?;
            chain += 1;
            let right = next(self)?;
            left = Expr::Binary {
                op,
                left: Box::new(left),
                right: Box::new(right),
                pos,
            };
        }
        self.refund(chain);
        Ok(left)
    }

    fn or_expr(&mut self) -> Result<Expr, SelectError> {
        self.binary_chain(
            |k| (*k == TokenKind::Keyword(Keyword::Or)).then_some(BinaryOp::Or),
            Self::and_expr,
        )
    }

    fn and_expr(&mut self) -> Result<Expr, SelectError> {
        self.binary_chain(
            |k| (*k == TokenKind::Keyword(Keyword::And)).then_some(BinaryOp::And),
            Self::not_expr,
        )
    }

    fn not_expr(&mut self) -> Result<Expr, SelectError> {
        if self.eat_kw(Keyword::Not) {
            let expr = self.nested(Self::not_expr)?;
            return Ok(Expr::Unary {
                op: UnaryOp::Not,
                expr: Box::new(expr),
            });
        }
        self.equality_expr()
    }

    /// Whether the next tokens are `NOT` followed by one of `kws` (`NOT IN`, `NOT LIKE`, …).
    fn at_negated(&self, kws: &[Keyword]) -> bool {
        self.is_kw(Keyword::Not)
            && matches!(self.peek_nth(1).kind, TokenKind::Keyword(k) if kws.contains(&k))
    }

    /// `a OP b` for a comparison operator at the current token: the operator's position.
    fn binary(op: BinaryOp, left: Expr, right: Expr, pos: Pos) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
            pos,
        }
    }

    /// The equality level: `= != <> ==`, `IS [NOT] NULL|MISSING`, `[NOT] IN (…)`, any number
    /// of them left to right (`a = b = c` is `(a = b) = c`).
    fn equality_expr(&mut self) -> Result<Expr, SelectError> {
        let mut left = self.comparison_expr()?;
        let mut chain = 0;
        loop {
            let pos = self.peek().pos;
            let op = match self.kind() {
                TokenKind::Eq => Some(BinaryOp::Eq),
                TokenKind::EqEq if self.dialect == Dialect::Ceph => Some(BinaryOp::Eq),
                TokenKind::EqEq => {
                    return Err(self.error_here(
                        ErrorCode::ParseUnknownOperator,
                        "unknown operator '=='; use '=' for equality",
                    ))
                }
                TokenKind::NotEq => Some(BinaryOp::NotEq),
                _ => None,
            };
            if let Some(op) = op {
                self.advance();
                self.charge(1)?;
                chain += 1;
                let right = self.comparison_expr()?;
                left = Self::binary(op, left, right, pos);
                continue;
            }
            let negated = self.at_negated(&[Keyword::In]);
            if negated {
                self.advance();
            }
            let expr = Box::new(left);
            left = if self.eat_kw(Keyword::In) {
                let list = self.in_list()?;
                Expr::InList {
                    expr,
                    list,
                    negated,
                }
            } else if self.eat_kw(Keyword::Is) {
                let negated = self.eat_kw(Keyword::Not);
                if self.eat_kw(Keyword::Null) {
                    Expr::IsNull { expr, negated }
                } else if self.eat_kw(Keyword::Missing) {
                    Expr::IsMissing { expr, negated }
                } else {
                    return Err(self.unexpected(ErrorCode::ParseExpectedKeyword, "NULL or MISSING"));
                }
            } else {
                left = *expr;
                break;
            };
            self.charge(1)?;
            chain += 1;
        }
        self.refund(chain);
        Ok(left)
    }

    /// The comparison level: `< <= > >=`, `[NOT] BETWEEN … AND …`, `[NOT] LIKE … [ESCAPE …]`.
    /// Their operands are additive expressions, so the `AND` of BETWEEN is never taken for
    /// a conjunction.
    fn comparison_expr(&mut self) -> Result<Expr, SelectError> {
        let mut left = self.additive_expr()?;
        let mut chain = 0;
        loop {
            let pos = self.peek().pos;
            let op = match self.kind() {
                TokenKind::Lt => Some(BinaryOp::Lt),
                TokenKind::LtEq => Some(BinaryOp::LtEq),
                TokenKind::Gt => Some(BinaryOp::Gt),
                TokenKind::GtEq => Some(BinaryOp::GtEq),
                _ => None,
            };
            if let Some(op) = op {
                self.advance();
                self.charge(1)?;
                chain += 1;
                let right = self.additive_expr()?;
                left = Self::binary(op, left, right, pos);
                continue;
            }
            let negated = self.at_negated(&[Keyword::Between, Keyword::Like]);
            if negated {
                self.advance();
            }
            let expr = Box::new(left);
            left = if self.eat_kw(Keyword::Between) {
                let low = Box::new(self.additive_expr()?);
                self.expect_kw(Keyword::And, ErrorCode::ParseExpectedKeyword)?;
                let high = Box::new(self.additive_expr()?);
                Expr::Between {
                    expr,
                    low,
                    high,
                    negated,
                }
            } else if self.eat_kw(Keyword::Like) {
                let pattern = Box::new(self.additive_expr()?);
                let escape = if self.eat_kw(Keyword::Escape) {
                    Some(Box::new(self.additive_expr()?))
                } else {
                    None
                };
                Expr::Like {
                    expr,
                    pattern,
                    escape,
                    negated,
                }
            } else {
                left = *expr;
                break;
            };
            self.charge(1)?;
            chain += 1;
        }
        self.refund(chain);
        Ok(left)
    }

    /// `( e1, e2, … )` after IN.
    fn in_list(&mut self) -> Result<Vec<Expr>, SelectError> {
        self.expect(
            &TokenKind::LParen,
            ErrorCode::ParseUnexpectedToken,
            "'(' after IN",
        )?;
        if *self.kind() == TokenKind::RParen {
            return Err(self.unexpected(ErrorCode::ParseExpectedExpression, "an expression"));
        }
        let list = self.expr_list()?;
        self.expect(
            &TokenKind::RParen,
            ErrorCode::ParseUnexpectedToken,
            "',' or ')'",
        )?;
        Ok(list)
    }

    /// `e1, e2, …` (at least one).
    fn expr_list(&mut self) -> Result<Vec<Expr>, SelectError> {
        let mut list = vec![self.expr()?];
        while self.eat(&TokenKind::Comma) {
            list.push(self.expr()?);
        }
        Ok(list)
    }

    fn additive_expr(&mut self) -> Result<Expr, SelectError> {
        self.binary_chain(
            |k| match k {
                TokenKind::Plus => Some(BinaryOp::Add),
                TokenKind::Minus => Some(BinaryOp::Sub),
                TokenKind::Concat => Some(BinaryOp::Concat),
                _ => None,
            },
            Self::multiplicative_expr,
        )
    }

    fn multiplicative_expr(&mut self) -> Result<Expr, SelectError> {
        self.binary_chain(
            |k| match k {
                TokenKind::Star => Some(BinaryOp::Mul),
                TokenKind::Slash => Some(BinaryOp::Div),
                TokenKind::Percent => Some(BinaryOp::Mod),
                _ => None,
            },
            Self::unary_expr,
        )
    }

    fn unary_expr(&mut self) -> Result<Expr, SelectError> {
        let op = match self.kind() {
            TokenKind::Minus => UnaryOp::Neg,
            TokenKind::Plus => UnaryOp::Plus,
            _ => return self.primary(),
        };
        self.advance();
        let expr = self.nested(Self::unary_expr)?;
        Ok(Expr::Unary {
            op,
            expr: Box::new(expr),
        })
    }

    fn primary(&mut self) -> Result<Expr, SelectError> {
        let token = self.peek().clone();
        let literal = match &token.kind {
            TokenKind::Keyword(Keyword::Null) => Literal::Null,
            TokenKind::Keyword(Keyword::Missing) => Literal::Missing,
            TokenKind::Keyword(Keyword::True) => Literal::Bool(true),
            TokenKind::Keyword(Keyword::False) => Literal::Bool(false),
            TokenKind::Int(i) => Literal::Int(*i),
            TokenKind::Decimal(text) => Literal::Decimal(text.clone()),
            TokenKind::Float(text) => Literal::Float(text.clone()),
            TokenKind::Str(text) => Literal::String(text.clone()),
            TokenKind::Timestamp(text) => Literal::Timestamp(text.clone()),
            // Ceph's s3select reads "…" as a string, not an identifier.
            TokenKind::QuotedIdent(text) if self.dialect == Dialect::Ceph => {
                Literal::String(text.clone())
            }
            TokenKind::QuotedIdent(_) => return self.column_ref(),
            TokenKind::Ident(_) if self.peek_nth(1).kind == TokenKind::LParen => {
                return self.call()
            }
            TokenKind::Ident(_) => return self.column_ref(),
            TokenKind::LParen => {
                self.advance();
                let expr = self.expr()?;
                self.expect(&TokenKind::RParen, ErrorCode::ParseUnexpectedToken, "')'")?;
                return Ok(expr);
            }
            TokenKind::Keyword(Keyword::Case) => return self.case_expr(),
            TokenKind::Keyword(Keyword::Cast) => return self.cast_expr(),
            _ => return Err(self.unexpected(ErrorCode::ParseExpectedExpression, "an expression")),
        };
        self.advance();
        Ok(Expr::Literal(literal))
    }

    /// `name`, `"name"`, `_3`, `alias.name`, `alias._3`, `alias."name"`.
    fn column_ref(&mut self) -> Result<Expr, SelectError> {
        let pos = self.peek().pos;
        let Some(first) = self.ident_token() else {
            return Err(self.unexpected(ErrorCode::ParseExpectedExpression, "an expression"));
        };
        let (qualifier, target) = if self.eat(&TokenKind::Dot) {
            if *self.kind() == TokenKind::Star {
                return Err(self.error_here(
                    ErrorCode::ParseUnsupportedSyntax,
                    "'alias.*' is only allowed alone in the SELECT list",
                ));
            }
            let second = self.path_key()?;
            (Some(first), column_target(second))
        } else {
            (None, column_target(first))
        };
        let path = self
            .path_steps(false)?
            .into_iter()
            .filter_map(|step| match step {
                FromStep::Key(k) => Some(PathStep::Key(k)),
                FromStep::Index(i) => Some(PathStep::Index(i)),
                // path_steps(false) refuses wildcards.
                FromStep::AnyIndex | FromStep::AnyKey => None,
            })
            .collect();
        Ok(Expr::Column(ColumnRef {
            qualifier,
            target,
            path,
            pos,
        }))
    }

    /// `name(…)`: the special forms by name, everything else as a plain function call.
    fn call(&mut self) -> Result<Expr, SelectError> {
        let name_token = self.advance();
        let pos = name_token.pos;
        let TokenKind::Ident(name) = name_token.kind else {
            return Err(self.unexpected(ErrorCode::ParseExpectedExpression, "a function name"));
        };
        let upper = name.to_ascii_uppercase();
        let aggregate = match upper.as_str() {
            "COUNT" => Some(AggFunc::Count),
            "SUM" => Some(AggFunc::Sum),
            "AVG" => Some(AggFunc::Avg),
            "MIN" => Some(AggFunc::Min),
            "MAX" => Some(AggFunc::Max),
            _ => None,
        };
        if let Some(func) = aggregate {
            return self.aggregate(func, &upper, pos);
        }
        match upper.as_str() {
            "EXTRACT" => self.extract(pos),
            "DATE_ADD" | "DATE_DIFF" => self.date_function(&upper, pos),
            "TRIM" => self.trim(pos),
            "SUBSTRING" => self.substring(pos),
            _ => {
                self.expect_lparen_after(&upper)?;
                if *self.kind() == TokenKind::Star {
                    return Err(self.error_here(
                        ErrorCode::ParseUnsupportedCallWithStar,
                        &format!("{upper} cannot be called with '*'"),
                    ));
                }
                let args = if *self.kind() == TokenKind::RParen {
                    Vec::new()
                } else {
                    self.nested(Self::expr_list)?
                };
                self.expect_rparen()?;
                Ok(Expr::Function {
                    name: upper,
                    args,
                    pos,
                })
            }
        }
    }

    fn aggregate(&mut self, func: AggFunc, name: &str, pos: Pos) -> Result<Expr, SelectError> {
        self.expect_lparen_after(name)?;
        if *self.kind() == TokenKind::Star {
            if func != AggFunc::Count {
                return Err(self.error_here(
                    ErrorCode::ParseUnsupportedCallWithStar,
                    &format!("{name} cannot be called with '*'; only COUNT(*) can"),
                ));
            }
            self.advance();
            self.expect_rparen()?;
            return Ok(Expr::Aggregate {
                func,
                arg: None,
                pos,
            });
        }
        if self.at_set_quantifier() {
            return Err(self.error_here(
                ErrorCode::ParseUnsupportedSyntax,
                "DISTINCT/ALL in aggregate functions is not supported",
            ));
        }
        if *self.kind() == TokenKind::RParen {
            return Err(self.error_here(
                ErrorCode::ParseNonUnaryAgregateFunctionCall,
                &format!("{name} takes exactly one argument"),
            ));
        }
        let arg = self.expr()?;
        if *self.kind() == TokenKind::Comma {
            return Err(self.error_here(
                ErrorCode::ParseNonUnaryAgregateFunctionCall,
                &format!("{name} takes exactly one argument"),
            ));
        }
        self.expect_rparen()?;
        Ok(Expr::Aggregate {
            func,
            arg: Some(Box::new(arg)),
            pos,
        })
    }

    fn date_part(&mut self) -> Result<DatePart, SelectError> {
        let part = match self.kind() {
            TokenKind::Ident(word) => DATE_PARTS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(word))
                .map(|&(_, part)| part),
            _ => None,
        };
        match part {
            Some(part) => {
                self.advance();
                Ok(part)
            }
            None => Err(self.unexpected(
                ErrorCode::ParseExpectedDatePart,
                "a date part (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, TIMEZONE_HOUR, \
                 TIMEZONE_MINUTE)",
            )),
        }
    }

    /// `EXTRACT(part FROM ts)`.
    fn extract(&mut self, pos: Pos) -> Result<Expr, SelectError> {
        self.expect_lparen_after("EXTRACT")?;
        let part = self.date_part()?;
        self.expect_kw(Keyword::From, ErrorCode::ParseExpectedKeyword)?;
        let expr = self.expr()?;
        self.expect_rparen()?;
        Ok(Expr::Extract {
            part,
            expr: Box::new(expr),
            pos,
        })
    }

    /// `DATE_ADD(part, quantity, ts)` and `DATE_DIFF(part, ts1, ts2)`.
    fn date_function(&mut self, name: &str, pos: Pos) -> Result<Expr, SelectError> {
        self.expect_lparen_after(name)?;
        let part = self.date_part()?;
        self.expect_comma()?;
        let first = Box::new(self.expr()?);
        self.expect_comma()?;
        let second = Box::new(self.expr()?);
        self.expect_rparen()?;
        Ok(if name == "DATE_ADD" {
            Expr::DateAdd {
                part,
                quantity: first,
                timestamp: second,
                pos,
            }
        } else {
            Expr::DateDiff {
                part,
                from: first,
                to: second,
                pos,
            }
        })
    }

    /// `TRIM([LEADING|TRAILING|BOTH] [chars] FROM x)` or `TRIM(x)`.
    fn trim(&mut self, pos: Pos) -> Result<Expr, SelectError> {
        self.expect_lparen_after("TRIM")?;
        // A spec word directly before ')' is a column of that name: TRIM(both).
        let spec = if self.peek_nth(1).kind == TokenKind::RParen {
            None
        } else if self.is_word("LEADING") {
            Some(TrimSpec::Leading)
        } else if self.is_word("TRAILING") {
            Some(TrimSpec::Trailing)
        } else if self.is_word("BOTH") {
            Some(TrimSpec::Both)
        } else {
            None
        };
        if spec.is_some() {
            self.advance();
        }
        let (chars, expr) = if self.eat_kw(Keyword::From) {
            (None, self.expr()?)
        } else {
            let first = self.expr()?;
            if self.eat_kw(Keyword::From) {
                (Some(Box::new(first)), self.expr()?)
            } else if spec.is_some() {
                return Err(self.unexpected(ErrorCode::ParseExpectedKeyword, "FROM"));
            } else {
                (None, first)
            }
        };
        self.expect_rparen()?;
        Ok(Expr::Trim {
            spec: spec.unwrap_or(TrimSpec::Both),
            chars,
            expr: Box::new(expr),
            pos,
        })
    }

    /// `SUBSTRING(x FROM start [FOR len])` or `SUBSTRING(x, start [, len])`, both as
    /// `Function { name: "SUBSTRING", args: [x, start, len?] }`.
    fn substring(&mut self, pos: Pos) -> Result<Expr, SelectError> {
        self.expect_lparen_after("SUBSTRING")?;
        let mut args = vec![self.expr()?];
        if self.eat_kw(Keyword::From) {
            args.push(self.expr()?);
            if self.is_word("FOR") {
                self.advance();
                args.push(self.expr()?);
            }
        } else {
            self.expect_comma()?;
            args.push(self.expr()?);
            if self.eat(&TokenKind::Comma) {
                args.push(self.expr()?);
            }
        }
        self.expect_rparen()?;
        Ok(Expr::Function {
            name: "SUBSTRING".to_string(),
            args,
            pos,
        })
    }

    /// `CASE [operand] WHEN … THEN … [WHEN …]* [ELSE …] END`.
    fn case_expr(&mut self) -> Result<Expr, SelectError> {
        self.advance();
        let operand = if self.is_kw(Keyword::When) {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_kw(Keyword::When) {
            let condition = self.expr()?;
            self.expect_kw(Keyword::Then, ErrorCode::ParseExpectedKeyword)?;
            let result = self.expr()?;
            whens.push((condition, result));
        }
        if whens.is_empty() {
            return Err(self.unexpected(ErrorCode::ParseExpectedWhenClause, "WHEN"));
        }
        let else_expr = if self.eat_kw(Keyword::Else) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect(
            &TokenKind::Keyword(Keyword::End),
            ErrorCode::ParseExpectedKeyword,
            "WHEN, ELSE or END",
        )?;
        Ok(Expr::Case {
            operand,
            whens,
            else_expr,
        })
    }

    /// `CAST(x AS type)`.
    fn cast_expr(&mut self) -> Result<Expr, SelectError> {
        let pos = self.advance().pos;
        self.expect(
            &TokenKind::LParen,
            ErrorCode::ParseExpectedLeftParenAfterCast,
            "'(' after CAST",
        )?;
        let expr = self.expr()?;
        if matches!(self.kind(), TokenKind::RParen | TokenKind::Comma) {
            return Err(self.error_here(
                ErrorCode::ParseCastArity,
                "CAST takes one expression and a type: CAST(x AS type)",
            ));
        }
        self.expect_kw(Keyword::As, ErrorCode::ParseExpectedKeyword)?;
        let to = self.cast_type()?;
        if *self.kind() == TokenKind::Comma {
            return Err(self.error_here(
                ErrorCode::ParseCastArity,
                "CAST takes one expression and a type: CAST(x AS type)",
            ));
        }
        self.expect_rparen()?;
        Ok(Expr::Cast {
            expr: Box::new(expr),
            to,
            pos,
        })
    }

    /// The type names S3 Select documents (bool, int/integer, string, float,
    /// decimal/numeric, timestamp) plus BOOLEAN, PartiQL's spelling of bool. Other SQL type
    /// names (VARCHAR, BIGINT, DOUBLE, …) are ParseExpectedTypeName.
    fn cast_type(&mut self) -> Result<CastType, SelectError> {
        const EXPECTED: &str = "a type name (BOOL, INT, INTEGER, FLOAT, DECIMAL, NUMERIC, STRING, \
                                TIMESTAMP)";
        let to = match self.kind() {
            TokenKind::Ident(word) => match word.to_ascii_uppercase().as_str() {
                "BOOL" | "BOOLEAN" => CastType::Bool,
                "INT" | "INTEGER" => CastType::Int,
                "FLOAT" => CastType::Float,
                "STRING" => CastType::String,
                "TIMESTAMP" => CastType::Timestamp,
                "DECIMAL" | "NUMERIC" => CastType::Decimal {
                    precision: None,
                    scale: None,
                },
                _ => return Err(self.unexpected(ErrorCode::ParseExpectedTypeName, EXPECTED)),
            },
            _ => return Err(self.unexpected(ErrorCode::ParseExpectedTypeName, EXPECTED)),
        };
        let type_token = self.advance();
        if *self.kind() != TokenKind::LParen {
            return Ok(to);
        }
        if !matches!(to, CastType::Decimal { .. }) {
            return Err(self.error_here(
                ErrorCode::ParseInvalidTypeParam,
                &format!("type {} takes no parameters", type_token.describe(self.sql)),
            ));
        }
        self.advance();
        let precision = self.type_param(1, 38, "precision")?;
        let scale = if self.eat(&TokenKind::Comma) {
            Some(self.type_param(0, precision, "scale")?)
        } else {
            None
        };
        self.expect(&TokenKind::RParen, ErrorCode::ParseInvalidTypeParam, "')'")?;
        Ok(CastType::Decimal {
            precision: Some(precision),
            scale,
        })
    }

    /// A DECIMAL precision or scale: an integer in `min..=max`.
    fn type_param(&mut self, min: u8, max: u8, what: &str) -> Result<u8, SelectError> {
        let value = match self.kind() {
            TokenKind::Int(n) => u8::try_from(*n).ok().filter(|v| (min..=max).contains(v)),
            _ => None,
        };
        match value {
            Some(v) => {
                self.advance();
                Ok(v)
            }
            None => Err(self.unexpected(
                ErrorCode::ParseInvalidTypeParam,
                &format!("a DECIMAL {what} between {min} and {max}"),
            )),
        }
    }
}

/// `_N` (unquoted, digits only after the underscore) is the N-th column; anything else is a
/// name. A position too large for u64 saturates; the binder rejects it as out of range.
fn column_target(ident: Ident) -> ColumnTarget {
    if !ident.quoted {
        if let Some(digits) = ident.name.strip_prefix('_') {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return ColumnTarget::Position(digits.parse().unwrap_or(u64::MAX));
            }
        }
    }
    ColumnTarget::Name(ident)
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
