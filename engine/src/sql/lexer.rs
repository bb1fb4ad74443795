//! SQL text → tokens, each with the 1-based line and column where it starts.
//!
//! The lexer is dialect-neutral: it always produces [`TokenKind::QuotedIdent`] for `"…"` and
//! [`TokenKind::EqEq`] for `==`, and the parser decides what they mean (in the Ceph dialect
//! `"…"` is a string literal in expression position and `==` is equality; in the AWS dialect
//! `==` is an unknown operator). Keeping that decision in one place lets the parser give a
//! better message than "invalid character" for SQL written for the other dialect.
//!
//! Columns count characters, not bytes, because that is what a person counting along the
//! query sees (and what AWS reports).

use std::fmt;
use std::ops::Range;

use crate::err;
use crate::error::SelectError;
use crate::sql::ast::Pos;

/// Words the parser treats as syntax. They cannot be used as bare identifiers (quote them:
/// `"end"`). Words that only matter in one place (`S3Object`, `LEADING`, `YEAR`, `COUNT`, …)
/// stay identifiers, so that a CSV header called `year` or `count` still works unquoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Select,
    From,
    Where,
    Limit,
    As,
    And,
    Or,
    Not,
    Is,
    Null,
    Missing,
    True,
    False,
    In,
    Like,
    Escape,
    Between,
    Case,
    When,
    Then,
    Else,
    End,
    Cast,
}

impl Keyword {
    /// The keyword a bare word spells, ignoring case.
    pub fn from_word(word: &str) -> Option<Keyword> {
        use Keyword::*;
        const ALL: [(&str, Keyword); 23] = [
            ("SELECT", Select),
            ("FROM", From),
            ("WHERE", Where),
            ("LIMIT", Limit),
            ("AS", As),
            ("AND", And),
            ("OR", Or),
            ("NOT", Not),
            ("IS", Is),
            ("NULL", Null),
            ("MISSING", Missing),
            ("TRUE", True),
            ("FALSE", False),
            ("IN", In),
            ("LIKE", Like),
            ("ESCAPE", Escape),
            ("BETWEEN", Between),
            ("CASE", Case),
            ("WHEN", When),
            ("THEN", Then),
            ("ELSE", Else),
            ("END", End),
            ("CAST", Cast),
        ];
        ALL.iter()
            .find(|(text, _)| text.eq_ignore_ascii_case(word))
            .map(|&(_, kw)| kw)
    }

    pub fn as_str(self) -> &'static str {
        use Keyword::*;
        match self {
            Select => "SELECT",
            From => "FROM",
            Where => "WHERE",
            Limit => "LIMIT",
            As => "AS",
            And => "AND",
            Or => "OR",
            Not => "NOT",
            Is => "IS",
            Null => "NULL",
            Missing => "MISSING",
            True => "TRUE",
            False => "FALSE",
            In => "IN",
            Like => "LIKE",
            Escape => "ESCAPE",
            Between => "BETWEEN",
            Case => "CASE",
            When => "WHEN",
            Then => "THEN",
            Else => "ELSE",
            End => "END",
            Cast => "CAST",
        }
    }
}

/// Whether `word` is reserved, i.e. must be double-quoted to be used as a name.
pub fn is_reserved(word: &str) -> bool {
    Keyword::from_word(word).is_some()
}

#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    Keyword(Keyword),
    /// A bare identifier, as written (matching is case-insensitive later).
    Ident(String),
    /// `"…"` with `""` unescaped.
    QuotedIdent(String),
    /// `'…'` with `''` unescaped.
    Str(String),
    Int(i64),
    /// A number with a decimal point and no exponent, or an integer too large for i64.
    Decimal(String),
    /// A number with an exponent.
    Float(String),
    /// Backtick-quoted Ion timestamp, content kept raw.
    Timestamp(String),
    Eq,
    /// `==`, equality in the Ceph dialect only.
    EqEq,
    /// `!=` or `<>`.
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Concat,
    LParen,
    RParen,
    Comma,
    Dot,
    LBracket,
    RBracket,
    Semicolon,
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub pos: Pos,
    /// Byte range in the SQL text, so messages can quote the token exactly as written.
    pub span: Range<usize>,
}

impl Token {
    /// The token as written, shortened if long, for error messages: `'FORM'`, or
    /// `end of input`.
    pub fn describe(&self, sql: &str) -> String {
        if self.kind == TokenKind::Eof {
            return "end of input".to_string();
        }
        let text = sql.get(self.span.clone()).unwrap_or("");
        const MAX_CHARS: usize = 40;
        if text.chars().count() > MAX_CHARS {
            let short: String = text.chars().take(MAX_CHARS).collect();
            format!("'{short}…'")
        } else {
            format!("'{text}'")
        }
    }
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TokenKind::*;
        let s = match self {
            Keyword(k) => return f.write_str(k.as_str()),
            Ident(s) => return f.write_str(s),
            QuotedIdent(s) => return write!(f, "\"{s}\""),
            Str(s) => return write!(f, "'{s}'"),
            Int(i) => return write!(f, "{i}"),
            Decimal(s) | Float(s) => return f.write_str(s),
            Timestamp(s) => return write!(f, "`{s}`"),
            Eq => "=",
            EqEq => "==",
            NotEq => "<>",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            GtEq => ">=",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            Concat => "||",
            LParen => "(",
            RParen => ")",
            Comma => ",",
            Dot => ".",
            LBracket => "[",
            RBracket => "]",
            Semicolon => ";",
            Eof => "end of input",
        };
        f.write_str(s)
    }
}

/// Splits `sql` into tokens; the last one is always [`TokenKind::Eof`].
pub fn tokenize(sql: &str) -> Result<Vec<Token>, SelectError> {
    let mut lexer = Lexer {
        sql,
        chars: sql.char_indices().peekable(),
        line: 1,
        column: 1,
    };
    let mut tokens = Vec::new();
    loop {
        let token = lexer.next_token()?;
        let done = token.kind == TokenKind::Eof;
        tokens.push(token);
        if done {
            return Ok(tokens);
        }
    }
}

struct Lexer<'a> {
    sql: &'a str,
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    line: u32,
    column: u32,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    /// Byte offset of the next character (the end of the text when there is none).
    fn offset(&mut self) -> usize {
        self.chars.peek().map_or(self.sql.len(), |&(i, _)| i)
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().map(|&(_, c)| c)
    }

    /// The character after the next one.
    fn peek2(&mut self) -> Option<char> {
        let at = self.offset();
        let mut rest = self.sql.get(at..)?.chars();
        rest.next();
        rest.next()
    }

    fn bump(&mut self) -> Option<char> {
        let (_, c) = self.chars.next()?;
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.column = 1;
        } else {
            self.column = self.column.saturating_add(1);
        }
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Skips whitespace, `-- …` line comments and `/* … */` block comments.
    fn skip_trivia(&mut self) -> Result<(), SelectError> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('-') if self.peek2() == Some('-') => {
                    while let Some(c) = self.bump() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                Some('/') if self.peek2() == Some('*') => {
                    let start = self.pos();
                    self.bump();
                    self.bump();
                    loop {
                        match self.bump() {
                            Some('*') if self.eat('/') => break,
                            Some(_) => {}
                            None => {
                                return Err(err!(
                                    LexerInvalidLiteral,
                                    "Unterminated comment starting at {start}"
                                ))
                            }
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn next_token(&mut self) -> Result<Token, SelectError> {
        self.skip_trivia()?;
        let pos = self.pos();
        let start = self.offset();
        let Some(c) = self.bump() else {
            return Ok(Token {
                kind: TokenKind::Eof,
                pos,
                span: start..start,
            });
        };
        use TokenKind as T;
        let kind = match c {
            '(' => T::LParen,
            ')' => T::RParen,
            ',' => T::Comma,
            '[' => T::LBracket,
            ']' => T::RBracket,
            ';' => T::Semicolon,
            '+' => T::Plus,
            '-' => T::Minus,
            '*' => T::Star,
            '/' => T::Slash,
            '%' => T::Percent,
            '=' => {
                if self.eat('=') {
                    T::EqEq
                } else {
                    T::Eq
                }
            }
            '!' if self.eat('=') => T::NotEq,
            '<' => {
                if self.eat('=') {
                    T::LtEq
                } else if self.eat('>') {
                    T::NotEq
                } else {
                    T::Lt
                }
            }
            '>' => {
                if self.eat('=') {
                    T::GtEq
                } else {
                    T::Gt
                }
            }
            '|' if self.eat('|') => T::Concat,
            '\'' => T::Str(self.quoted('\'', pos, "string literal")?),
            '"' => T::QuotedIdent(self.quoted('"', pos, "quoted identifier")?),
            '`' => T::Timestamp(self.timestamp(pos)?),
            '.' if self.peek().is_some_and(|d| d.is_ascii_digit()) => self.number(start, pos)?,
            '.' => T::Dot,
            '0'..='9' => self.number(start, pos)?,
            c if is_ident_start(c) => {
                while self.peek().is_some_and(is_ident_continue) {
                    self.bump();
                }
                let word = self.sql.get(start..self.offset()).unwrap_or("");
                match Keyword::from_word(word) {
                    Some(kw) => T::Keyword(kw),
                    None => T::Ident(word.to_string()),
                }
            }
            other => {
                return Err(err!(
                    LexerInvalidChar,
                    "Invalid character '{}' at {pos}",
                    other.escape_default()
                ))
            }
        };
        Ok(Token {
            kind,
            pos,
            span: start..self.offset(),
        })
    }

    /// The body of a `'…'` or `"…"` token after its opening quote; a doubled quote stands
    /// for one.
    fn quoted(&mut self, quote: char, start: Pos, what: &str) -> Result<String, SelectError> {
        let mut text = String::new();
        loop {
            match self.bump() {
                Some(c) if c == quote => {
                    if self.eat(quote) {
                        text.push(quote);
                    } else {
                        return Ok(text);
                    }
                }
                Some(c) => text.push(c),
                None => {
                    return Err(err!(
                        LexerInvalidLiteral,
                        "Unterminated {what} starting at {start}"
                    ))
                }
            }
        }
    }

    /// The body of a `` `…` `` Ion timestamp, kept raw for the value layer to check.
    fn timestamp(&mut self, start: Pos) -> Result<String, SelectError> {
        let mut text = String::new();
        loop {
            match self.bump() {
                Some('`') => return Ok(text),
                Some(c) => text.push(c),
                None => {
                    return Err(err!(
                        LexerInvalidLiteral,
                        "Unterminated timestamp literal starting at {start}"
                    ))
                }
            }
        }
    }

    /// A number whose first character (a digit, or `.` before a digit) is already consumed.
    ///
    /// `12` → Int, `12.`/`.5`/`1.25` → Decimal, `1e3`/`1.5E-2` → Float. Integers beyond i64
    /// stay exact as Decimal text rather than losing digits.
    fn number(&mut self, start: usize, start_pos: Pos) -> Result<TokenKind, SelectError> {
        let mut seen_dot = self.sql.get(start..).is_some_and(|s| s.starts_with('.'));
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() {
                self.bump();
            } else if c == '.' && !seen_dot {
                seen_dot = true;
                self.bump();
            } else {
                break;
            }
        }
        let mut exponent = false;
        if matches!(self.peek(), Some('e' | 'E')) {
            let after = self.peek2();
            let signed_digit = matches!(after, Some('+' | '-')) && {
                let at = self.offset();
                self.sql
                    .get(at..)
                    .and_then(|s| s.chars().nth(2))
                    .is_some_and(|d| d.is_ascii_digit())
            };
            if after.is_some_and(|d| d.is_ascii_digit()) || signed_digit {
                exponent = true;
                self.bump();
                if matches!(self.peek(), Some('+' | '-')) {
                    self.bump();
                }
                while self.peek().is_some_and(|d| d.is_ascii_digit()) {
                    self.bump();
                }
            } else {
                return Err(err!(
                    LexerInvalidLiteral,
                    "Malformed number at {start_pos}: exponent without digits"
                ));
            }
        }
        let text = self.sql.get(start..self.offset()).unwrap_or("").to_string();
        Ok(if exponent {
            TokenKind::Float(text)
        } else if seen_dot {
            TokenKind::Decimal(text)
        } else {
            match text.parse::<i64>() {
                Ok(i) => TokenKind::Int(i),
                Err(_) => TokenKind::Decimal(text),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn kinds(sql: &str) -> Vec<TokenKind> {
        match tokenize(sql) {
            Ok(tokens) => tokens.into_iter().map(|t| t.kind).collect(),
            Err(e) => panic!("lexing {sql:?} failed: {e}"),
        }
    }

    fn lex_err(sql: &str) -> SelectError {
        match tokenize(sql) {
            Ok(tokens) => panic!("lexing {sql:?} unexpectedly succeeded: {tokens:?}"),
            Err(e) => e,
        }
    }

    use TokenKind as T;

    #[test]
    fn keywords_are_case_insensitive_and_other_words_are_identifiers() {
        assert_eq!(
            kinds("select FrOm s3object"),
            vec![
                T::Keyword(Keyword::Select),
                T::Keyword(Keyword::From),
                T::Ident("s3object".into()),
                T::Eof
            ]
        );
    }

    #[test]
    fn strings_and_quoted_identifiers_unescape_doubled_quotes() {
        assert_eq!(
            kinds(r#"'it''s' "a ""b""" ''"#),
            vec![
                T::Str("it's".into()),
                T::QuotedIdent("a \"b\"".into()),
                T::Str(String::new()),
                T::Eof
            ]
        );
    }

    #[test]
    fn timestamps_are_kept_raw() {
        assert_eq!(
            kinds("`2001-08-22` `2007-04-05T14:30Z`"),
            vec![
                T::Timestamp("2001-08-22".into()),
                T::Timestamp("2007-04-05T14:30Z".into()),
                T::Eof
            ]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("12 0.05 .5 5. 1e3 2.5E-1 1e+2 9223372036854775807 9223372036854775808"),
            vec![
                T::Int(12),
                T::Decimal("0.05".into()),
                T::Decimal(".5".into()),
                T::Decimal("5.".into()),
                T::Float("1e3".into()),
                T::Float("2.5E-1".into()),
                T::Float("1e+2".into()),
                T::Int(i64::MAX),
                T::Decimal("9223372036854775808".into()),
                T::Eof
            ]
        );
    }

    #[test]
    fn operators() {
        assert_eq!(
            kinds("= == != <> < <= > >= + - * / % || ( ) , . [ ] ;"),
            vec![
                T::Eq,
                T::EqEq,
                T::NotEq,
                T::NotEq,
                T::Lt,
                T::LtEq,
                T::Gt,
                T::GtEq,
                T::Plus,
                T::Minus,
                T::Star,
                T::Slash,
                T::Percent,
                T::Concat,
                T::LParen,
                T::RParen,
                T::Comma,
                T::Dot,
                T::LBracket,
                T::RBracket,
                T::Semicolon,
                T::Eof
            ]
        );
    }

    #[test]
    fn qualified_positional_column() {
        assert_eq!(
            kinds("s._3"),
            vec![T::Ident("s".into()), T::Dot, T::Ident("_3".into()), T::Eof]
        );
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            kinds("1 -- one\n/* two\n */ 3"),
            vec![T::Int(1), T::Int(3), T::Eof]
        );
    }

    #[test]
    fn positions_are_one_based_lines_and_character_columns() {
        let tokens = match tokenize("SELECT\n  'é' x") {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        let positions: Vec<(u32, u32)> =
            tokens.iter().map(|t| (t.pos.line, t.pos.column)).collect();
        assert_eq!(positions, vec![(1, 1), (2, 3), (2, 7), (2, 8)]);
    }

    #[test]
    fn number_positions() {
        let tokens = match tokenize("a 12.5") {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(tokens[1].pos, Pos { line: 1, column: 3 });
    }

    #[test]
    fn invalid_character_is_named_with_position() {
        let e = lex_err("SELECT # FROM");
        assert_eq!(e.code, ErrorCode::LexerInvalidChar);
        assert!(e.message.contains("'#'"), "{}", e.message);
        assert!(e.message.contains("line 1, column 8"), "{}", e.message);
        assert_eq!(lex_err("a ! b").code, ErrorCode::LexerInvalidChar);
        assert_eq!(lex_err("a | b").code, ErrorCode::LexerInvalidChar);
    }

    #[test]
    fn unterminated_literals() {
        for (sql, what) in [
            ("SELECT 'abc", "string"),
            ("SELECT \"abc", "identifier"),
            ("SELECT `2001", "timestamp"),
            ("SELECT /* x", "comment"),
        ] {
            let e = lex_err(sql);
            assert_eq!(e.code, ErrorCode::LexerInvalidLiteral, "{sql}");
            assert!(e.message.contains(what), "{}", e.message);
            assert!(e.message.contains("line 1, column 8"), "{}", e.message);
        }
    }

    #[test]
    fn exponent_without_digits_is_malformed() {
        let e = lex_err("SELECT 1e FROM");
        assert_eq!(e.code, ErrorCode::LexerInvalidLiteral);
        assert!(e.message.contains("line 1, column 8"), "{}", e.message);
    }
}
