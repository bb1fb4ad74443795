//! `LIKE` patterns: compiled once per query, matched against every row.
//!
//! Most real patterns are an exact string, a prefix (`'abc%'`), a suffix (`'%abc'`) or an
//! infix (`'%abc%'`); those get dedicated matchers (the infix one uses memchr's SIMD
//! substring search). Anything else runs a wildcard matcher that backtracks only to the most
//! recent `%`, which is O(len(pattern) × len(input)) in the worst case and never exponential.
//!
//! Ceph RGW's s3select turns a LIKE pattern into a regular expression, so its patterns also
//! take bracket classes (`[a-z]`, `[^0-9]`); [`LikeSyntax::CephClasses`] reads them, for the
//! Ceph dialect only. (Every other regex character is a regex character to RGW too — `.`
//! matches anything — which is a defect, not a dialect, and is not copied: here they are
//! literals.)

use memchr::memmem;

use crate::err;
use crate::error::SelectError;

/// How a pattern is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeSyntax {
    /// SQL's: `%`, `_` and the ESCAPE character.
    Sql,
    /// SQL's, and bracket classes as Ceph RGW reads them: `[abc]`, `[a-z]`, `[^a-z]`; a `]`
    /// right after `[` or `[^` is a member.
    CephClasses,
}

/// One element of a pattern after escapes are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    /// A character that must match exactly.
    Lit(char),
    /// `_`: exactly one character (a Unicode scalar value, not a byte).
    One,
    /// `%`: any sequence of characters, including none.
    Any,
    /// A bracket class: one character in (or, negated, not in) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Tok {
    /// Whether this single-character token takes `c`.
    fn takes(&self, c: char) -> bool {
        match self {
            Tok::Lit(l) => *l == c,
            Tok::One => true,
            Tok::Any => false,
            Tok::Class { negated, ranges } => {
                ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != *negated
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Matcher {
    Exact(String),
    Prefix(String),
    Suffix(String),
    Contains(Box<memmem::Finder<'static>>),
    /// `%` alone (or `%%…`): everything matches.
    All,
    General(Vec<Tok>),
}

/// A compiled LIKE pattern.
#[derive(Debug, Clone)]
pub struct LikePattern {
    matcher: Matcher,
}

impl LikePattern {
    /// Compiles `pattern` with an optional escape character. An escape must be followed by
    /// `%`, `_` or the escape itself; anything else (including an escape at the end) is
    /// `LikeInvalidInputs`, as it is an unambiguous user error better reported than guessed.
    #[cfg(test)]
    pub fn compile(pattern: &str, escape: Option<char>) -> Result<LikePattern, SelectError> {
        LikePattern::compile_in(pattern, escape, LikeSyntax::Sql)
    }

    /// [`LikePattern::compile`] for a pattern written in `syntax`.
    pub fn compile_in(
        pattern: &str,
        escape: Option<char>,
        syntax: LikeSyntax,
    ) -> Result<LikePattern, SelectError> {
        let mut toks = Vec::with_capacity(pattern.len());
        let mut it = pattern.chars();
        while let Some(c) = it.next() {
            if Some(c) == escape {
                match it.next() {
                    Some(n) if n == '%' || n == '_' || Some(n) == escape => toks.push(Tok::Lit(n)),
                    Some(n) => {
                        return Err(err!(
                            LikeInvalidInputs,
                            "invalid escape sequence '{c}{n}' in LIKE pattern '{pattern}'"
                        ))
                    }
                    None => {
                        return Err(err!(
                            LikeInvalidInputs,
                            "LIKE pattern '{pattern}' ends with its escape character"
                        ))
                    }
                }
                continue;
            }
            match c {
                '%' => {
                    if toks.last() != Some(&Tok::Any) {
                        toks.push(Tok::Any);
                    }
                }
                '_' => toks.push(Tok::One),
                '[' if syntax == LikeSyntax::CephClasses => toks.push(class(&mut it, pattern)?),
                _ => toks.push(Tok::Lit(c)),
            }
        }
        Ok(LikePattern {
            matcher: classify(toks),
        })
    }

    /// Like [`LikePattern::compile`] but takes the ESCAPE operand as the SQL string it is; it
    /// must be exactly one character (`LikeInvalidInputs` otherwise).
    #[cfg(test)]
    pub fn compile_with_escape_str(
        pattern: &str,
        escape: Option<&str>,
    ) -> Result<LikePattern, SelectError> {
        let esc = match escape {
            None => None,
            Some(e) => {
                let mut cs = e.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) => Some(c),
                    _ => {
                        return Err(err!(
                            LikeInvalidInputs,
                            "LIKE escape '{e}' must be exactly one character"
                        ))
                    }
                }
            }
        };
        LikePattern::compile(pattern, esc)
    }

    /// Whether `s` matches the whole pattern.
    pub fn matches(&self, s: &str) -> bool {
        match &self.matcher {
            Matcher::Exact(p) => s == p,
            Matcher::Prefix(p) => s.starts_with(p.as_str()),
            Matcher::Suffix(p) => s.ends_with(p.as_str()),
            Matcher::Contains(f) => f.find(s.as_bytes()).is_some(),
            Matcher::All => true,
            Matcher::General(toks) => general_match(toks, s),
        }
    }
}

/// A bracket class, read after its `[`.
fn class(it: &mut std::str::Chars<'_>, pattern: &str) -> Result<Tok, SelectError> {
    let unterminated = || {
        err!(
            LikeInvalidInputs,
            "LIKE pattern '{pattern}' has a '[' class without its ']'"
        )
    };
    let mut negated = false;
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = it.next().ok_or_else(unterminated)?;
        match c {
            '^' if first && !negated && ranges.is_empty() => {
                negated = true;
                continue;
            }
            ']' if !first => return Ok(Tok::Class { negated, ranges }),
            _ => {}
        }
        first = false;
        // `a-z`, unless the `-` is last (`[a-]` holds `a` and `-`).
        let mut ahead = it.clone();
        match (ahead.next(), ahead.next()) {
            (Some('-'), Some(hi)) if hi != ']' => {
                if hi < c {
                    return Err(err!(
                        LikeInvalidInputs,
                        "LIKE pattern '{pattern}' has the empty range '{c}-{hi}'"
                    ));
                }
                *it = ahead;
                ranges.push((c, hi));
            }
            _ => ranges.push((c, c)),
        }
    }
}

fn literal(toks: &[Tok]) -> Option<String> {
    toks.iter()
        .map(|t| match t {
            Tok::Lit(c) => Some(*c),
            _ => None,
        })
        .collect()
}

fn classify(toks: Vec<Tok>) -> Matcher {
    let n = toks.len();
    if n >= 1 && toks.iter().all(|t| *t == Tok::Any) {
        return Matcher::All;
    }
    if let Some(s) = literal(&toks) {
        return Matcher::Exact(s);
    }
    if n >= 2 && toks[n - 1] == Tok::Any {
        if let Some(s) = literal(&toks[..n - 1]) {
            return Matcher::Prefix(s);
        }
    }
    if n >= 2 && toks[0] == Tok::Any {
        if let Some(s) = literal(&toks[1..]) {
            return Matcher::Suffix(s);
        }
    }
    if n >= 3 && toks[0] == Tok::Any && toks[n - 1] == Tok::Any {
        if let Some(s) = literal(&toks[1..n - 1]) {
            return Matcher::Contains(Box::new(memmem::Finder::new(s.as_bytes()).into_owned()));
        }
    }
    Matcher::General(toks)
}

/// Wildcard matching with backtracking to the last `%` only: when a later step fails, the
/// last `%` absorbs one more character and matching resumes after it. Earlier `%`s never
/// need revisiting, because any match found by moving them can be found by moving the last.
fn general_match(toks: &[Tok], s: &str) -> bool {
    let mut p = 0usize; // byte position in s
    let mut t = 0usize; // token index
    let mut star: Option<(usize, usize)> = None; // (token after %, position % resumes at)
    loop {
        if t < toks.len() {
            match &toks[t] {
                Tok::Any => {
                    if t + 1 == toks.len() {
                        return true;
                    }
                    star = Some((t + 1, p));
                    t += 1;
                    continue;
                }
                one => {
                    if let Some(c) = s[p..].chars().next() {
                        if one.takes(c) {
                            p += c.len_utf8();
                            t += 1;
                            continue;
                        }
                    }
                }
            }
        } else if p == s.len() {
            return true;
        }
        match star {
            Some((st, sp)) => match s[sp..].chars().next() {
                Some(c) => {
                    let np = sp + c.len_utf8();
                    star = Some((st, np));
                    t = st;
                    p = np;
                }
                None => return false,
            },
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use proptest::prelude::*;

    fn m(p: &str, s: &str) -> bool {
        match LikePattern::compile(p, Some('\\')) {
            Ok(l) => l.matches(s),
            Err(e) => panic!("{e}"),
        }
    }

    /// Reference semantics: dynamic programming over (pattern prefix, input prefix).
    fn reference(toks: &[Tok], s: &str) -> bool {
        let cs: Vec<char> = s.chars().collect();
        let mut dp = vec![vec![false; cs.len() + 1]; toks.len() + 1];
        dp[0][0] = true;
        for i in 1..=toks.len() {
            for j in 0..=cs.len() {
                dp[i][j] = match &toks[i - 1] {
                    Tok::Any => dp[i - 1][j] || (j > 0 && dp[i][j - 1]),
                    one => j > 0 && one.takes(cs[j - 1]) && dp[i - 1][j - 1],
                };
            }
        }
        dp[toks.len()][cs.len()]
    }

    #[test]
    fn shapes() {
        assert!(m("abc", "abc"));
        assert!(!m("abc", "abcd"));
        assert!(m("abc%", "abcd"));
        assert!(!m("abc%", "xabc"));
        assert!(m("%abc", "xabc"));
        assert!(!m("%abc", "abcx"));
        assert!(m("%abc%", "xxabcxx"));
        assert!(!m("%abc%", "xxabxcxx"));
        assert!(m("%", ""));
        assert!(m("%%", "anything"));
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("a_c", "abc"));
        assert!(m("a_c", "aéc"));
        assert!(!m("a_c", "ac"));
        assert!(m("%a%b%c%", "xxaxxbxxcxx"));
        assert!(!m("%a%b%c%", "xxaxxcxxbxx"));
        assert!(m("a%b%c", "aXbYbZc"));
        assert!(!m("a%b%c", "aXbYbZcd"));
        assert!(m("_%_", "ab"));
        assert!(!m("_%_", "a"));
        assert!(m("日本%", "日本語"));
        assert!(m("%本_", "日本語"));
    }

    #[test]
    fn escapes() {
        assert!(m("100\\%", "100%"));
        assert!(!m("100\\%", "1000"));
        assert!(m("a\\_b", "a_b"));
        assert!(!m("a\\_b", "axb"));
        assert!(m("a\\\\b", "a\\b"));
        assert!(m("%\\%%", "50% off"));
        let code = |p: &str, e: Option<char>| LikePattern::compile(p, e).err().map(|e| e.code);
        assert_eq!(code("a\\b", Some('\\')), Some(ErrorCode::LikeInvalidInputs));
        assert_eq!(code("ab\\", Some('\\')), Some(ErrorCode::LikeInvalidInputs));
        assert_eq!(code("a!%", Some('!')), None);
        let code2 = |p: &str, e: Option<&str>| {
            LikePattern::compile_with_escape_str(p, e)
                .err()
                .map(|e| e.code)
        };
        assert_eq!(code2("a", Some("")), Some(ErrorCode::LikeInvalidInputs));
        assert_eq!(code2("a", Some("!!")), Some(ErrorCode::LikeInvalidInputs));
        assert_eq!(code2("a!%", Some("!")), None);
        assert_eq!(code2("a", None), None);
        // Without an ESCAPE clause a backslash is an ordinary character.
        assert!(LikePattern::compile("a\\b", None)
            .map(|l| l.matches("a\\b"))
            .unwrap_or(false));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let s = "a".repeat(10_000);
        let p = format!("{}b", "%a".repeat(20));
        let l = LikePattern::compile(&p, None);
        assert!(l.map(|l| !l.matches(&s)).unwrap_or(false));
    }

    fn tok_strategy() -> impl Strategy<Value = Tok> {
        let class = (
            any::<bool>(),
            prop::sample::select(vec![('a', 'a'), ('a', 'b'), ('b', 'é')]),
        )
            .prop_map(|(negated, range)| Tok::Class {
                negated,
                ranges: vec![range],
            });
        prop_oneof![
            3 => prop::sample::select(vec!['a', 'b', 'é']).prop_map(Tok::Lit),
            1 => Just(Tok::One),
            1 => Just(Tok::Any),
            1 => class,
        ]
    }

    fn render(toks: &[Tok]) -> String {
        let mut out = String::new();
        for t in toks {
            match t {
                Tok::Lit(c) => out.push(*c),
                Tok::One => out.push('_'),
                Tok::Any => out.push('%'),
                Tok::Class { negated, ranges } => {
                    out.push('[');
                    if *negated {
                        out.push('^');
                    }
                    for (lo, hi) in ranges {
                        out.push(*lo);
                        if lo != hi {
                            out.push('-');
                            out.push(*hi);
                        }
                    }
                    out.push(']');
                }
            }
        }
        out
    }

    proptest! {
        /// Every pattern shape (the Ceph syntax, which adds classes, covers the SQL one)
        /// agrees with the dynamic-programming reference.
        #[test]
        fn agrees_with_reference(
            toks in prop::collection::vec(tok_strategy(), 0..8),
            s in "[abé]{0,10}",
        ) {
            let p = render(&toks);
            let l = LikePattern::compile_in(&p, None, LikeSyntax::CephClasses);
            prop_assert!(l.is_ok());
            if let Ok(l) = l {
                prop_assert_eq!(l.matches(&s), reference(&toks, &s), "pattern {:?} input {:?}", p, s);
            }
        }
    }

    #[test]
    fn ceph_bracket_classes() {
        let ceph = |p: &str, s: &str| {
            LikePattern::compile_in(p, None, LikeSyntax::CephClasses)
                .expect("compiles")
                .matches(s)
        };
        assert!(ceph("%y[y-z]", "xyz"));
        assert!(ceph("%y[y-z]", "yy"));
        assert!(!ceph("%y[y-z]", "yx"));
        assert!(ceph("[^0-9]_", "ab"));
        assert!(!ceph("[^0-9]_", "1b"));
        assert!(ceph("[]a]", "]"));
        assert!(ceph("[a-]", "-"));
        assert!(ceph("[abc]%", "cat"));
        // A class is SQL text in the AWS dialect.
        assert!(m("[a-z]", "[a-z]"));
        assert!(!m("[a-z]", "q"));
        let bad = |p: &str| {
            LikePattern::compile_in(p, None, LikeSyntax::CephClasses)
                .err()
                .map(|e| e.code)
        };
        assert_eq!(bad("a[bc"), Some(ErrorCode::LikeInvalidInputs));
        assert_eq!(bad("[z-a]"), Some(ErrorCode::LikeInvalidInputs));
    }
}
