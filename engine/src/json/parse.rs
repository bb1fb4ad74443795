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
//! - **Strict grammar.** RFC 8259, with one leniency: no comments, no trailing commas, no
//!   `NaN`, no leading zeros, valid UTF-8, no lone surrogate escapes. Anything else is an
//!   error naming the byte offset, never a guess. The leniency: a control character (a tab,
//!   say) written raw inside a string is taken as it is, as MinIO's and Python's readers
//!   (non-strict) take it; RFC 8259 asks for `\t`. Data written by hand or by careless
//!   exporters has them, and refusing the whole object for a tab helps no one.
//! - **Bounded depth.** Nesting deeper than [`MAX_DEPTH`] is an error rather than a stack
//!   overflow: the parser recurses once per level.
//! - **Duplicate keys** are all kept, in order; a path lookup takes the first.
//! - **A fast path for rows.** JSON Lines rows are mostly compact objects of short keys and
//!   numbers, of which a query reads a few. Such a member is read with 16-byte block loads
//!   (`Parser::compact_member`) instead of byte by byte; anything unusual goes the general
//!   way, which also reports every error, so both paths agree on what is JSON (property
//!   tests and the `json_members` fuzz target hold them to it).

use super::path::KeySet;
use super::scan::{digit_run, digit_stops, load16, plain_run, plain_stops};
use crate::value::{Decimal, Timestamp, Value};
use std::borrow::Cow;

/// How deeply arrays and objects may nest. Deeper input fails with [`JsonError`].
pub const MAX_DEPTH: usize = 512;

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    /// A number as written; the text is known to match JSON's number grammar.
    Number(Cow<'a, str>),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Members in input order, duplicates included.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
    /// A typed value read from a columnar file (Parquet): an INT, FLOAT, DECIMAL or
    /// TIMESTAMP that never was text. JSON input never makes one.
    Scalar(Scalar),
}

/// The typed scalars a [`Node::Scalar`] holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Decimal(Decimal),
    Timestamp(Timestamp),
}

impl Scalar {
    pub fn value(self) -> Value<'static> {
        match self {
            Scalar::Int(i) => Value::Int(i),
            Scalar::Float(f) => Value::Float(f),
            Scalar::Decimal(d) => Value::Decimal(d),
            Scalar::Timestamp(t) => Value::Timestamp(t),
        }
    }
}

impl<'a> Node<'a> {
    /// The first member named `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A copy that borrows nothing, for values that outlive the input buffer (aggregates,
    /// constants).
    pub fn to_static(&self) -> Node<'static> {
        let own = |s: &Cow<'_, str>| Cow::Owned(s.to_string());
        match self {
            Node::Null => Node::Null,
            Node::Bool(b) => Node::Bool(*b),
            Node::Number(n) => Node::Number(own(n)),
            Node::Scalar(v) => Node::Scalar(*v),
            Node::String(s) => Node::String(own(s)),
            Node::Array(items) => Node::Array(items.iter().map(Node::to_static).collect()),
            Node::Object(members) => Node::Object(
                members
                    .iter()
                    .map(|(k, v)| (own(k), v.to_static()))
                    .collect(),
            ),
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
    /// `input`, or `input` and the bytes after it in the same buffer when the first of them
    /// ends any token (see [`Parser::with_window`]): what 16-byte loads may read, so that
    /// the last member of a line takes the fast path too.
    window: &'a [u8],
    /// The input as text when it is known to be UTF-8 (checked once, in bulk), so that
    /// strings need no check of their own.
    text: Option<&'a str>,
    pos: usize,
}

type Result<T> = std::result::Result<T, JsonError>;

impl<'a> Parser<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Parser {
            input,
            window: input,
            text: None,
            pos: 0,
        }
    }

    /// A parser over text already known to be UTF-8.
    pub fn for_text(text: &'a str) -> Self {
        Parser {
            input: text.as_bytes(),
            window: text.as_bytes(),
            text: Some(text),
            pos: 0,
        }
    }

    /// Lets the parser's block loads read on into `buffer`, which must begin with the
    /// input (same address), and whose byte right after the input is whitespace: no key
    /// or number runs on over it, so nothing read there changes a result. Otherwise the
    /// window stays the input. (JSON Lines: the buffer is the rest of the chunk, and the
    /// line is followed by its newline.)
    pub fn with_window(mut self, buffer: &'a [u8]) -> Self {
        let follows = buffer.get(self.input.len());
        if std::ptr::eq(buffer.as_ptr(), self.input.as_ptr())
            && matches!(follows, Some(b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.window = buffer;
        }
        self
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
        self.value_at(0, None)
    }

    /// Like [`Parser::value`], but with `Some(keys)` a top-level object keeps only the
    /// members whose key is in `keys` (those a query reads); the others are checked for
    /// well-formedness and dropped, which saves building them. Errors are those of
    /// [`Parser::value`].
    pub fn value_keeping(&mut self, keep: Option<&KeySet>) -> Result<Node<'a>> {
        self.value_at(0, keep)
    }

    fn error<T>(&self, what: &'static str) -> Result<T> {
        Err(JsonError {
            offset: self.pos,
            what,
        })
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        // Compact JSON has none: test the next byte before looping.
        match self.input.get(self.pos) {
            Some(b' ' | b'\t' | b'\n' | b'\r') => {}
            _ => return,
        }
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

    fn value_at(&mut self, depth: usize, keep: Option<&KeySet>) -> Result<Node<'a>> {
        self.skip_whitespace();
        match self.peek() {
            None => self.error("expected a JSON value, found the end of the input"),
            Some(b'{') => self.object(depth + 1, keep),
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
        let n = digit_run(&self.input[self.pos..]);
        self.pos += n;
        n
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`: checks a number and returns
    /// where it starts.
    fn number_span(&mut self) -> Result<usize> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let first = self.peek();
        match self.digits() {
            0 => return self.error("expected a digit"),
            n if n > 1 && first == Some(b'0') => {
                self.pos -= n - 1;
                return self.error("a number may not have a leading zero");
            }
            _ => {}
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
        Ok(start)
    }

    fn number(&mut self) -> Result<Node<'a>> {
        let start = self.pos;
        match self.compact_number_len(start) {
            Some(n) => self.pos += n,
            None => {
                self.number_span()?;
            }
        }
        Ok(Node::Number(Cow::Borrowed(self.ascii(start, self.pos)?)))
    }

    /// `input[start..end]`, known to be ASCII, as text.
    fn ascii(&self, start: usize, end: usize) -> Result<&'a str> {
        if let Some(s) = self.text.and_then(|t| t.get(start..end)) {
            return Ok(s);
        }
        std::str::from_utf8(&self.input[start..end]).or_else(|_| self.error("invalid text"))
    }

    /// Checks the string starting at the opening quote and moves past it. Returns the
    /// offset of its first byte and whether it holds escapes. Escapes are checked here
    /// (surrogates included); UTF-8 is checked by the caller, or was checked in bulk.
    fn string_span(&mut self) -> Result<(usize, bool)> {
        self.pos += 1; // the opening quote
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.pos += plain_run(&self.input[self.pos..]);
            let Some(&b) = self.input.get(self.pos) else {
                return self.error("unterminated string");
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok((start, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            self.unicode_escape()?;
                        }
                        None => return self.error("unterminated string"),
                        Some(_) => return self.error("invalid escape in a string"),
                    }
                }
                _ => self.pos += 1,
            }
        }
    }

    /// A value checked and skipped without building it (members a query does not read).
    fn skip_value(&mut self, depth: usize) -> Result<()> {
        self.skip_whitespace();
        match self.peek() {
            None => self.error("expected a JSON value, found the end of the input"),
            Some(b'"') => {
                let (start, _) = self.string_span()?;
                if self.text.is_none() {
                    let end = self.pos - 1;
                    if let Err(e) = std::str::from_utf8(&self.input[start..end]) {
                        self.pos = start + e.valid_up_to();
                        return self.error("invalid UTF-8 in a string");
                    }
                }
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => self.number_span().map(drop),
            Some(b'{' | b'[') => self.value_at(depth, None).map(drop),
            Some(b't') => self.literal(b"true", Node::Null).map(drop),
            Some(b'f') => self.literal(b"false", Node::Null).map(drop),
            Some(b'n') => self.literal(b"null", Node::Null).map(drop),
            Some(_) => self.error("expected a JSON value"),
        }
    }

    /// A string starting at the opening quote. It is checked first ([`Parser::string_span`]);
    /// a string without escapes is then a slice of the input, one with escapes is decoded
    /// into a new buffer.
    fn string(&mut self) -> Result<Cow<'a, str>> {
        let open = self.pos;
        let (start, escaped) = self.string_span()?;
        if !escaped {
            let end = self.pos - 1;
            if let Some(s) = self.text.and_then(|t| t.get(start..end)) {
                return Ok(Cow::Borrowed(s));
            }
            return match std::str::from_utf8(&self.input[start..end]) {
                Ok(s) => Ok(Cow::Borrowed(s)),
                Err(e) => {
                    self.pos = start + e.valid_up_to();
                    self.error("invalid UTF-8 in a string")
                }
            };
        }
        // Escapes: decode (the span is known to be well-formed). Escapes are ASCII and
        // decode to whole characters, so the text is valid UTF-8 exactly when the raw span
        // is: check that first, to name the bad byte's offset as every other path does.
        if self.text.is_none() {
            if let Err(e) = std::str::from_utf8(&self.input[start..self.pos - 1]) {
                self.pos = start + e.valid_up_to();
                return self.error("invalid UTF-8 in a string");
            }
        }
        self.pos = open + 1;
        let mut decoded: Option<Vec<u8>> = None;
        loop {
            let Some(stop) = memchr::memchr2(b'"', b'\\', &self.input[self.pos..]) else {
                self.pos = self.input.len();
                return self.error("unterminated string");
            };
            let raw = &self.input[self.pos..self.pos + stop];
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
            items.push(self.value_at(depth, None)?);
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

    fn object(&mut self, depth: usize, keep: Option<&KeySet>) -> Result<Node<'a>> {
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
            let done = match keep {
                Some(keys) if self.text.is_some() => {
                    self.compact_member(depth, keys, &mut members)?
                }
                _ => false,
            };
            if !done {
                self.member(depth, keep, &mut members)?;
            }
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

impl<'a> Parser<'a> {
    /// One `"key": value` member of an object, added to `members` unless `keep` refuses it.
    fn member(
        &mut self,
        depth: usize,
        keep: Option<&KeySet>,
        members: &mut Vec<(Cow<'a, str>, Node<'a>)>,
    ) -> Result<()> {
        // With checked text and a key without escapes, the member is decided on the key's
        // bytes, and an unwanted one is skipped without making a string. Otherwise (escapes,
        // or text not checked in bulk) the key is read again as a string below.
        if let (Some(k), Some(text)) = (keep, self.text) {
            let key_start = self.pos;
            let (start, escaped) = self.string_span()?;
            let end = self.pos - 1;
            if !escaped {
                if !k.contains(&self.input[start..end]) {
                    self.colon()?;
                    return self.skip_value(depth);
                }
                if let Some(key) = text.get(start..end) {
                    return self.member_value(depth, Cow::Borrowed(key), members);
                }
            }
            self.pos = key_start;
        }
        let key = self.string()?;
        if keep.is_some_and(|k| !k.contains(key.as_bytes())) {
            self.colon()?;
            return self.skip_value(depth);
        }
        self.member_value(depth, key, members)
    }

    /// After a member's key: the colon and the value, added to `members`.
    fn member_value(
        &mut self,
        depth: usize,
        key: Cow<'a, str>,
        members: &mut Vec<(Cow<'a, str>, Node<'a>)>,
    ) -> Result<()> {
        self.colon()?;
        let value = self.value_at(depth, None)?;
        members.push((key, value));
        Ok(())
    }

    fn colon(&mut self) -> Result<()> {
        self.skip_whitespace();
        if self.peek() != Some(b':') {
            return self.error("expected ':' after an object key");
        }
        self.pos += 1;
        Ok(())
    }

    /// The common member of a JSON Lines row, at its key's opening quote: a key of under 32
    /// plain bytes, a colon right after it, and (when the query does not read it) most often
    /// a short number. Such a member is read with one or two 16-byte loads for the key, one
    /// word compare per wanted key (keys under 16 bytes), and one more load to skip the
    /// number.
    ///
    /// Returns false, having moved nothing, for anything else (escapes, whitespace, long
    /// keys, the end of the input near): [`Parser::member`] then reads the member the
    /// general way. Where this function hands over to a general routine itself, it is at
    /// the position and in the state that `member` would reach, so errors are the same.
    /// Text must be known UTF-8 (`self.text`), as keys are taken without a check.
    #[inline]
    fn compact_member(
        &mut self,
        depth: usize,
        keys: &KeySet,
        members: &mut Vec<(Cow<'a, str>, Node<'a>)>,
    ) -> Result<bool> {
        let start = self.pos + 1;
        let Some(block) = self.load16(start) else {
            return Ok(false);
        };
        let stops = plain_stops(block);
        let (len, wanted) = if stops != 0 {
            let len = stops.trailing_zeros() as usize;
            let word = u128::from_le_bytes(block) & ((1u128 << (8 * len)) - 1);
            (len, keys.contains_word(len, word))
        } else {
            // A longer key: one more load, and the general test (a length bit first).
            let Some(next) = self.load16(start + 16) else {
                return Ok(false);
            };
            let len = 16 + plain_stops(next).trailing_zeros() as usize;
            match self.input.get(start..start + len) {
                Some(key) if len < 32 => (len, keys.contains(key)),
                _ => return Ok(false),
            }
        };
        if self.input.get(start + len) != Some(&b'"') {
            return Ok(false);
        }
        let colon = start + len + 1;
        if self.input.get(colon) != Some(&b':') {
            return Ok(false);
        }
        self.pos = colon + 1;
        if wanted {
            let Some(key) = self.text.and_then(|t| t.get(start..start + len)) else {
                self.pos = start - 1;
                return Ok(false);
            };
            let value = self.value_at(depth, None)?;
            members.push((Cow::Borrowed(key), value));
            return Ok(true);
        }
        match self.compact_number_len(self.pos) {
            Some(n) => self.pos += n,
            None => self.skip_value(depth)?,
        }
        Ok(true)
    }

    /// Sixteen bytes from `at` in the window ([`Parser::with_window`]).
    #[inline]
    fn load16(&self, at: usize) -> Option<[u8; 16]> {
        load16(self.window, at)
    }

    /// The length of the number at `at` when it is short and plain enough to see in one
    /// 16-byte load: `-? (0 | [1-9][0-9]*) (. [0-9]+)?`, ending within the load at a byte
    /// that is not `e`, `E` or a digit. `None` for anything else, to be read by
    /// [`Parser::number_span`] (which also reports what is wrong).
    #[inline]
    fn compact_number_len(&self, at: usize) -> Option<usize> {
        let block = self.load16(at)?;
        // Bit i set: byte i is not a digit. Bit 16 stands for the byte past the load.
        let stops = digit_stops(block) | 1 << 16;
        let sign = usize::from(block[0] == b'-');
        let int = (stops >> sign).trailing_zeros() as usize;
        if int == 0 || (int > 1 && block[sign] == b'0') {
            return None;
        }
        let mut end = sign + int;
        if end < 16 && block[end] == b'.' {
            let frac = (stops >> (end + 1)).trailing_zeros() as usize;
            if frac == 0 {
                return None;
            }
            end += 1 + frac;
        }
        if end >= 16 || matches!(block[end], b'e' | b'E') {
            return None;
        }
        Some(end)
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
            assert_eq!(ok(n), Node::Number(n.into()));
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

        // Raw control characters are taken as they are, escaped or not.
        match ok("\"a\tb\u{1}\"") {
            Node::String(s) => assert_eq!(s, "a\tb\u{1}"),
            other => panic!("{other:?}"),
        }
        match ok("\"a\tb\\n\"") {
            Node::String(Cow::Owned(s)) => assert_eq!(s, "a\tb\n"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nesting_and_duplicates() {
        let v = ok(r#"{"a": [1, {"b": null}], "a": 2, "C": "x"}"#);
        assert_eq!(
            v.get("a"),
            Some(&Node::Array(vec![
                Node::Number("1".into()),
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
        assert_eq!(got[2], Node::Number("3".into()));
    }
}
