//! The syntax tree of one S3 Select statement.
//!
//! The parser produces it and nothing else does; the binder (`crate::plan`) resolves names
//! against the input and compiles it into an evaluable plan. Positions are kept where a later
//! error must name the place in the SQL text (a column that does not exist, a cast that fails).

use std::fmt;

/// A place in the SQL text, 1-based, as AWS reports it ("line 1, column 33").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// `SELECT <projection> FROM <from> [WHERE <expr>] [LIMIT <n>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub projection: Projection,
    pub from: From,
    pub where_clause: Option<Expr>,
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// `SELECT *` (also `SELECT s.*`).
    Star,
    Items(Vec<SelectItem>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectItem {
    pub expr: Expr,
    pub alias: Option<Ident>,
}

/// The FROM clause: `S3Object`, `S3Object s`, `S3Object AS s`, or (Ceph dialect) `stdin`;
/// for JSON input also `S3Object[*].path` with the same alias forms.
#[derive(Debug, Clone, PartialEq)]
pub struct From {
    pub source: Source,
    /// `S3Object[*]` and the steps after it, the first always [`FromStep::AnyIndex`] (over
    /// the object's top-level values); empty for plain `S3Object`.
    pub path: Vec<FromStep>,
    pub alias: Option<Ident>,
}

/// One step of a FROM path. The wildcards turn one value into many rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromStep {
    /// `.name`, `."Name"` or `['name']` (the last always exact).
    Key(Ident),
    /// `[n]`.
    Index(u64),
    /// `[*]`: every element of an array.
    AnyIndex,
    /// `.*`: every member value of an object.
    AnyKey,
}

/// One step of a path in an expression (`s.a.b`, `s.a[0]`, `s."Key"`, `s['key']`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathStep {
    Key(Ident),
    Index(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    S3Object,
    /// Ceph RGW's `FROM stdin`; accepted only in the Ceph dialect.
    Stdin,
}

/// An identifier. Unquoted identifiers match case-insensitively, double-quoted ones exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub quoted: bool,
    pub pos: Pos,
}

/// A reference to a field of the current record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnRef {
    /// The table alias it was written with (`s` in `s._1`), if any. For JSON input the
    /// binder treats a qualifier that is not the alias as the first key of the path.
    pub qualifier: Option<Ident>,
    pub target: ColumnTarget,
    /// Further steps into a JSON value (`b`, `[0]` in `s.a.b[0]`); always empty for CSV.
    pub path: Vec<PathStep>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnTarget {
    /// `_N`, 1-based as written. `_0` parses and is rejected by the binder (InvalidColumnIndex).
    Position(u64),
    /// A header name (FileHeaderInfo=USE), or an alias in the Ceph dialect.
    Name(Ident),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Missing,
    Bool(bool),
    /// An integer literal that fits in i64.
    Int(i64),
    /// A number with a decimal point and no exponent, kept as written (`0.05`, `12.500`).
    Decimal(String),
    /// A number with an exponent (`1e3`, `2.5E-1`), kept as written.
    Float(String),
    String(String),
    /// An Ion timestamp between backticks, without them (`2001-08-22`, `2007-04-05T14:30Z`).
    Timestamp(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Plus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    And,
    Or,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
}

/// The target of `CAST(x AS <type>)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastType {
    Bool,
    Int,
    Float,
    /// `DECIMAL`, `DECIMAL(p)`, `DECIMAL(p,s)` (also `NUMERIC`).
    Decimal {
        precision: Option<u8>,
        scale: Option<u8>,
    },
    String,
    Timestamp,
}

/// Date parts of EXTRACT, DATE_ADD and DATE_DIFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatePart {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    TimezoneHour,
    TimezoneMinute,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimSpec {
    Leading,
    Trailing,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Literal),
    Column(ColumnRef),
    Unary {
        op: UnaryOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
        pos: Pos,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: Option<Box<Expr>>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    IsMissing {
        expr: Box<Expr>,
        negated: bool,
    },
    /// `CASE [operand] WHEN … THEN … [ELSE …] END`; `operand` is set for the simple form.
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        else_expr: Option<Box<Expr>>,
    },
    Cast {
        expr: Box<Expr>,
        to: CastType,
        pos: Pos,
    },
    /// `EXTRACT(part FROM ts)`.
    Extract {
        part: DatePart,
        expr: Box<Expr>,
        pos: Pos,
    },
    /// `DATE_ADD(part, quantity, ts)`.
    DateAdd {
        part: DatePart,
        quantity: Box<Expr>,
        timestamp: Box<Expr>,
        pos: Pos,
    },
    /// `DATE_DIFF(part, ts1, ts2)`.
    DateDiff {
        part: DatePart,
        from: Box<Expr>,
        to: Box<Expr>,
        pos: Pos,
    },
    /// `TRIM([LEADING|TRAILING|BOTH] [chars] FROM expr)` and `TRIM(expr)`.
    Trim {
        spec: TrimSpec,
        chars: Option<Box<Expr>>,
        expr: Box<Expr>,
        pos: Pos,
    },
    /// Any other function call, the name upper-cased: `LOWER`, `SUBSTRING` (both the
    /// `FROM … FOR …` and the comma form become `[expr, start, len?]`), `CHAR_LENGTH`,
    /// `CHARACTER_LENGTH`, `COALESCE`, `NULLIF`, `TO_STRING`, `TO_TIMESTAMP`, `UTCNOW`, and
    /// in the Ceph dialect `INT`, `FLOAT`. Unknown names are rejected by the binder.
    Function {
        name: String,
        args: Vec<Expr>,
        pos: Pos,
    },
    /// `COUNT(*)` has `arg: None`.
    Aggregate {
        func: AggFunc,
        arg: Option<Box<Expr>>,
        pos: Pos,
    },
}
