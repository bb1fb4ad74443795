//! JSON text → a tree of [`Node`]s that borrows the input.
//!
//! S3 Select reads JSON in two shapes: LINES (one document per line) and DOCUMENT (top-level
//! values one after another, separated by whitespace, each possibly spanning many lines).
//! Both come down to "parse one value at this offset, then tell me where it ended", which is
//! what [`Parser`] does.
//!
//! Choices, and why:
//! - **Borrowing.** A string without escapes is a slice of the input and a number is kept as
//!   its text, so a document whose fields are mostly filtered out costs little more than the
//!   tree's vectors. Numbers are typed only when an expression reads them (`1.5` is a
//!   DECIMAL and `1e3` a FLOAT, as Ion reads JSON — see `crate::json::value`).
//! - **Strict grammar.** RFC 8259 exactly: no comments, no trailing commas, no `NaN`, no
//!   leading zeros, no unescaped control characters, valid UTF-8, no lone surrogate escapes.
//!   Anything else is an error naming the byte offset, never a guess.
//! - **Bounded depth.** Nesting deeper than [`MAX_DEPTH`] is an error rather than a stack
//!   overflow: the parser recurses once per level.
//! - **Duplicate keys** are all kept, in order; a path lookup takes the first.

use std::borrow::Cow;

/// How deeply arrays and objects may nest. Deeper input fails with [`JsonError`].
pub const MAX_DEPTH: usize = 512;

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    /// A number as written; the text is known to match JSON's number grammar.
    Number(&'a str),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Members in input order, duplicates included.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The first member named `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The first member whose name equals `key` ignoring ASCII case (unquoted SQL names).
    pub fn get_ignore_case(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(members) => members
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Malformed JSON: what was wrong, and the byte offset (from the start of the parsed text)
/// where the parser saw it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {offset}")]
pub struct JsonError {
    pub offset: usize,
    pub what: &'static str,
}

/// A cursor over JSON text.
#[derive(Debug, Clone)]
pub struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
}

type Result<T> = std::result::Result<T, JsonError>;

impl<'a> Parser<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Parser { input, pos: 0 }
    }

    /// The offset of the next unread byte.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Skips whitespace; true when nothing but whitespace was left.
    pub fn at_end(&mut self) -> bool {
        self.skip_whitespace();
        self.pos >= self.input.len()
    }

    /// Parses the value that starts at the next non-whitespace byte.
    pub fn value(&mut self) -> Result<Node<'a>> {
        self.value_at(0)
    }

    fn error<T>(&self, what: &'static str) -> Result<T> {
        Err(JsonError {
            offset: self.pos,
            what,
        })
    }

    fn skip_whitespace(&mut self) {
        while let Some(&b) = self.input.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn value_at(&mut self, depth: usize) -> Result<Node<'a>> {
        self.skip_whitespace();
        match self.peek() {
            None => self.error("expected a JSON value, found the end of the input"),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Node::String(self.string()?)),
            Some(b't') => self.literal(b"true", Node::Bool(true)),
            Some(b'f') => self.literal(b"false", Node::Bool(false)),
            Some(b'n') => self.literal(b"null", Node::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.error("expected a JSON value"),
        }
    }

    fn literal(&mut self, word: &'static [u8], node: Node<'a>) -> Result<Node<'a>> {
        if self.input[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(node)
        } else {
            self.error("invalid literal (expected true, false or null)")
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Result<Node<'a>> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return self.error("a number may not have a leading zero");
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.error("expected a digit"),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return self.error("expected a digit after the decimal point");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.error("expected a digit in the exponent");
            }
        }
        // Only ASCII bytes were consumed, so the slice is valid UTF-8.
        match std::str::from_utf8(&self.input[start..self.pos]) {
            Ok(text) => Ok(Node::Number(text)),
            Err(_) => self.error("invalid number"),
        }
    }

    /// A string starting at the opening quote. Until the first escape the text is only
    /// scanned; a string without escapes is then a slice of the input. From the first escape
    /// on, the text is decoded into a new buffer.
    fn string(&mut self) -> Result<Cow<'a, str>> {
        self.pos += 1; // the opening quote
        let start = self.pos;
        let mut decoded: Option<Vec<u8>> = None;
        loop {
            let Some(stop) = memchr::memchr2(b'"', b'\\', &self.input[self.pos..]) else {
                self.pos = self.input.len();
                return self.error("unterminated string");
            };
            let raw = &self.input[self.pos..self.pos + stop];
            if let Some(i) = raw.iter().position(|&b| b < 0x20) {
                self.pos += i;
                return self.error("unescaped control character in a string");
            }
            if let Some(out) = decoded.as_mut() {
                out.extend_from_slice(raw);
            }
            self.pos += stop;
            if self.input[self.pos] == b'"' {
                let end = self.pos;
                self.pos += 1;
                return match decoded {
                    None => match std::str::from_utf8(&self.input[start..end]) {
                        Ok(s) => Ok(Cow::Borrowed(s)),
                        Err(e) => {
                            self.pos = start + e.valid_up_to();
                            self.error("invalid UTF-8 in a string")
                        }
                    },
                    Some(out) => match String::from_utf8(out) {
                        Ok(s) => Ok(Cow::Owned(s)),
                        Err(_) => {
                            self.pos = start;
                            self.error("invalid UTF-8 in a string")
                        }
                    },
                };
            }
            // A backslash: the first one copies the text scanned so far.
            let input = self.input;
            let out = decoded.get_or_insert_with(|| input[start..self.pos].to_vec());
            self.pos += 1;
            let Some(e) = self.peek() else {
                return self.error("unterminated string");
            };
            self.pos += 1;
            match e {
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                b'/' => out.push(b'/'),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0c),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'u' => {
                    let c = self.unicode_escape()?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                _ => {
                    self.pos -= 1;
                    return self.error("invalid escape in a string");
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u16> {
        let Some(digits) = self.input.get(self.pos..self.pos + 4) else {
            return self.error("expected four hex digits after \\u");
        };
        let mut v = 0u16;
        for &d in digits {
            let n = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return self.error("expected four hex digits after \\u"),
            };
            v = v << 4 | u16::from(n);
        }
        self.pos += 4;
        Ok(v)
    }

    /// After `\u`: one code point, joining a surrogate pair written as two escapes.
    fn unicode_escape(&mut self) -> Result<char> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.input[self.pos..].starts_with(b"\\u") {
                    return self.error("a high surrogate escape must be followed by a low one");
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return self.error("a high surrogate escape must be followed by a low one");
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            0xDC00..=0xDFFF => return self.error("a low surrogate escape without a high one"),
            c => u32::from(c),
        };
        match char::from_u32(code) {
            Some(c) => Ok(c),
            None => self.error("invalid \\u escape"),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Node<'a>> {
        if depth > MAX_DEPTH {
            return self.error("JSON nested too deeply");
        }
        self.pos += 1; // [
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Node::Array(items));
        }
        loop {
            items.push(self.value_at(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Node::Array(items));
                }
                None => return self.error("unterminated array"),
                Some(_) => return self.error("expected ',' or ']' in an array"),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node<'a>> {
        if depth > MAX_DEPTH {
            return self.error("JSON nested too deeply");
        }
        self.pos += 1; // {
        let mut members = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Node::Object(members));
        }
        loop {
            self.skip_whitespace();
            match self.peek() {
                Some(b'"') => {}
                None => return self.error("unterminated object"),
                Some(_) => return self.error("expected a string key in an object"),
            }
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return self.error("expected ':' after an object key");
            }
            self.pos += 1;
            let value = self.value_at(depth)?;
            members.push((key, value));
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Node::Object(members));
                }
                None => return self.error("unterminated object"),
                Some(_) => return self.error("expected ',' or '}' in an object"),
            }
        }
    }
}

/// Parses text that must hold exactly one value (whitespace around it allowed).
pub fn parse_one(input: &[u8]) -> Result<Node<'_>> {
    let mut p = Parser::new(input);
    let v = p.value()?;
    if !p.at_end() {
        return p.error("unexpected text after the JSON value");
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Node<'_> {
        parse_one(text.as_bytes()).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn bad(text: &str) -> JsonError {
        match parse_one(text.as_bytes()) {
            Ok(v) => panic!("{text:?} parsed as {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn scalars() {
        assert_eq!(ok("null"), Node::Null);
        assert_eq!(ok(" true "), Node::Bool(true));
        assert_eq!(ok("false"), Node::Bool(false));
        for n in ["0", "-0", "12", "-3.25", "1e3", "2.5E-7", "0.0", "1E+2"] {
            assert_eq!(ok(n), Node::Number(n));
        }
        assert_eq!(ok(r#""plain""#), Node::String(Cow::Borrowed("plain")));
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        match ok(r#""no escapes here""#) {
            Node::String(Cow::Borrowed(s)) => assert_eq!(s, "no escapes here"),
            other => panic!("{other:?}"),
        }
        match ok(r#""tab\there \"q\" \\ \/ \u00e9 \ud83d\ude00""#) {
            Node::String(Cow::Owned(s)) => assert_eq!(s, "tab\there \"q\" \\ / é 😀"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nesting_and_duplicates() {
        let v = ok(r#"{"a": [1, {"b": null}], "a": 2, "C": "x"}"#);
        assert_eq!(
            v.get("a"),
            Some(&Node::Array(vec![
                Node::Number("1"),
                Node::Object(vec![(Cow::Borrowed("b"), Node::Null)])
            ]))
        );
        assert_eq!(v.get("c"), None);
        assert_eq!(
            v.get_ignore_case("c"),
            Some(&Node::String(Cow::Borrowed("x")))
        );
        assert_eq!(ok("[]"), Node::Array(vec![]));
        assert_eq!(ok("{ }"), Node::Object(vec![]));
    }

    #[test]
    fn errors_name_the_offset() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 0, "end of the input"),
            ("{", 1, "unterminated object"),
            ("[1,", 3, "end of the input"),
            ("[1 2]", 3, "expected ',' or ']'"),
            (r#"{"a" 1}"#, 5, "expected ':'"),
            ("{a:1}", 1, "string key"),
            ("01", 1, "leading zero"),
            ("1.", 2, "after the decimal point"),
            ("1e", 2, "exponent"),
            ("-", 1, "expected a digit"),
            ("tru", 0, "invalid literal"),
            ("NaN", 0, "expected a JSON value"),
            ("[1,]", 3, "expected a JSON value"),
            ("\"abc", 4, "unterminated string"),
            ("\"a\\", 3, "unterminated string"),
            ("\"a\tb\"", 2, "control character"),
            (r#""\x""#, 2, "invalid escape"),
            (r#""\u12""#, 3, "four hex digits"),
            (r#""\ud800""#, 7, "followed by a low one"),
            (r#""\udc00""#, 7, "low surrogate"),
            ("1 2", 2, "after the JSON value"),
        ];
        for &(text, offset, what) in cases {
            let e = bad(text);
            assert!(e.what.contains(what), "{text:?}: {e}");
            assert_eq!(e.offset, offset, "{text:?}: {e}");
        }
        let e = parse_one(b"\"\xff\"").unwrap_err();
        assert!(e.what.contains("UTF-8"), "{e}");
    }

    #[test]
    fn depth_is_bounded() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_one(deep(MAX_DEPTH).as_bytes()).is_ok());
        let e = bad(&deep(MAX_DEPTH + 1));
        assert!(e.what.contains("too deeply"), "{e}");
        // Far deeper than the limit: an error, not a stack overflow.
        assert!(parse_one(deep(1_000_000).as_bytes()).is_err());
    }

    #[test]
    fn a_stream_of_documents() {
        let text = b" {\"a\":1}\n[2]  3\n\"x\" ";
        let mut p = Parser::new(text);
        let mut got = Vec::new();
        while !p.at_end() {
            got.push(p.value().unwrap());
        }
        assert_eq!(got.len(), 4);
        assert_eq!(got[2], Node::Number("3"));
    }
}
