//! The binder: resolves a parsed query against the input's columns and compiles it into a
//! [`Plan`].
//!
//! Binding happens once the header line (if any) is known, because `s.name` means a
//! position only then. It is also where the dialect's name rules apply: unquoted names match
//! the header case-insensitively and quoted ones exactly (several matches are
//! `AmbiguousFieldName`), and the Ceph dialect lets WHERE use the SELECT list's aliases.

use crate::err;
use crate::error::Result;
use crate::eval::expr::{ArithOp, CExpr, CmpOp, LikeSpec, DEC_FIELD_MIN_SCALE};
use crate::eval::func::Func;
use crate::eval::int_set::IntSet;
use crate::json::path::{KeySet, RowStep, Step};
use crate::sql::ast::{
    self, AggFunc, BinaryOp, CastType, ColumnRef, ColumnTarget, Expr, FromStep, Ident, Literal,
    PathStep, Projection, Query, Source, UnaryOp,
};
use crate::sql::Dialect;
use crate::value::like::{LikePattern, LikeSyntax};
use crate::value::{Decimal, Timestamp, Value};

/// One aggregate of the SELECT list.
#[derive(Debug, Clone)]
pub struct AggSpec {
    pub func: AggFunc,
    /// `None` for COUNT(*).
    pub arg: Option<CExpr>,
}

/// What to output for each row.
#[derive(Debug, Clone)]
pub enum Output {
    /// `SELECT *`: every field of the record.
    Star,
    Exprs(Vec<CExpr>),
}

/// What a query's names refer to.
#[derive(Debug, Clone, Copy)]
pub enum Columns<'h> {
    /// CSV records: positions, and names when the header is given (FileHeaderInfo=USE).
    Csv(Option<&'h [String]>),
    /// JSON values: names are keys, and paths lead into nested values.
    Json,
}

/// A query ready to run over records.
#[derive(Debug, Clone)]
pub struct Plan {
    /// JSON input: the rows each top-level value makes (the FROM path); empty for one row
    /// per value.
    pub rows: Vec<RowStep>,
    /// JSON input: the keys of a top-level object the query reads, so that the reader
    /// builds only those members; `None` when it needs them all.
    pub top_keys: Option<KeySet>,
    pub filter: Option<CExpr>,
    pub output: Output,
    /// Non-empty for an aggregate query; then `output` reads `CExpr::AggResult`s.
    pub aggs: Vec<AggSpec>,
    /// Output column names (JSON keys) for `Output::Exprs`.
    pub names: Vec<String>,
    pub limit: Option<u64>,
}

impl Plan {
    pub fn is_aggregate(&self) -> bool {
        !self.aggs.is_empty()
    }

    /// The plan for rows that have passed its filter elsewhere (a Parquet filter evaluated
    /// over whole columns): no filter, and only the keys the rest of the query reads.
    pub fn without_filter(&self) -> Plan {
        let top_keys = match (&self.output, self.rows.is_empty()) {
            (Output::Exprs(exprs), true) if self.top_keys.is_some() => read_keys(
                exprs
                    .iter()
                    .chain(self.aggs.iter().filter_map(|a| a.arg.as_ref())),
            ),
            _ => self.top_keys.clone(),
        };
        Plan {
            filter: None,
            top_keys,
            ..self.clone()
        }
    }
}

struct Binder<'q> {
    dialect: Dialect,
    header: Option<&'q [String]>,
    json: bool,
    alias: Option<&'q Ident>,
    /// JSON input without an alias: the name the row goes by, from the end of the FROM
    /// path (`price` in `S3Object[*].books[*].price`, `_1` after a wildcard).
    implicit_alias: Option<&'q str>,
    items: &'q [ast::SelectItem],
    /// Aliases being expanded (Ceph dialect), to refuse cycles.
    expanding: Vec<String>,
    aggs: Vec<AggSpec>,
    in_aggregate: bool,
}

/// The top-level key a column reference names in a row of JSON or Parquet input read
/// `FROM S3Object` (a Parquet column), as the binder resolves it: `None` for the row
/// itself, a nested path, or any reference under a FROM path.
pub(crate) fn top_level_key(
    query: &Query,
    dialect: Dialect,
    c: &ColumnRef,
) -> Option<(Box<str>, bool)> {
    if !query.from.path.is_empty() {
        return None;
    }
    let mut b = Binder {
        dialect,
        header: None,
        json: true,
        alias: query.from.alias.as_ref(),
        implicit_alias: None,
        items: &[],
        expanding: Vec::new(),
        aggs: Vec::new(),
        in_aggregate: false,
    };
    match b.json_column(c).ok()? {
        CExpr::Path { steps } => match steps.as_ref() {
            [Step::Key { name, exact }] => Some((name.clone(), *exact)),
            _ => None,
        },
        _ => None,
    }
}

/// Binds `query` to an input whose names are `columns`.
pub fn bind(query: &Query, dialect: Dialect, columns: Columns<'_>) -> Result<Plan> {
    let (header, json) = match columns {
        Columns::Csv(header) => (header, false),
        Columns::Json => (None, true),
    };
    if !json && !query.from.path.is_empty() {
        return Err(err!(
            ParseUnsupportedSyntax,
            "FROM S3Object[*]… applies to JSON input only; CSV is read FROM S3Object"
        ));
    }
    // The leading `[*]` is over the top-level values, which make rows anyway.
    let after_root = query.from.path.get(1..).unwrap_or_default();
    let mut rows = after_root.iter().map(row_step).collect::<Vec<_>>();
    // Ceph RGW makes a row of each element of the array a FROM path ends at.
    if dialect == Dialect::Ceph && matches!(after_root.last(), Some(FromStep::Key(_))) {
        rows.push(RowStep::ElementsOrValue);
    }
    let implicit_alias = match after_root.last() {
        _ if query.from.alias.is_some() => None,
        Some(FromStep::Key(k)) => Some(k.name.as_str()),
        Some(_) => Some("_1"),
        None => None,
    };
    if query.from.source == Source::Stdin && dialect != Dialect::Ceph {
        return Err(err!(
            InvalidDataSource,
            "FROM stdin is Ceph's dialect; use FROM S3Object, or the Ceph dialect"
        ));
    }
    let empty: &[ast::SelectItem] = &[];
    let items = match &query.projection {
        Projection::Items(items) => items.as_slice(),
        Projection::Star => empty,
    };
    let mut b = Binder {
        dialect,
        header,
        json,
        alias: query.from.alias.as_ref(),
        implicit_alias,
        items,
        expanding: Vec::new(),
        aggs: Vec::new(),
        in_aggregate: false,
    };
    let filter = match &query.where_clause {
        Some(w) => {
            let e = b.expr(w)?;
            if !b.aggs.is_empty() {
                return Err(err!(
                    UnsupportedSqlOperation,
                    "aggregate functions are not allowed in WHERE"
                ));
            }
            Some(e)
        }
        None => None,
    };
    let (output, names) = match &query.projection {
        Projection::Star => (Output::Star, Vec::new()),
        Projection::Items(items) => {
            let mut exprs = Vec::with_capacity(items.len());
            let mut names = Vec::with_capacity(items.len());
            let mut plain_columns = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let before = b.aggs.len();
                let e = b.expr(&item.expr)?;
                if b.aggs.len() == before && references_fields(&e) {
                    plain_columns.push(i);
                }
                exprs.push(e);
                names.push(output_name(item, i));
            }
            if !b.aggs.is_empty() {
                if let Some(&i) = plain_columns.first() {
                    return Err(err!(
                        UnsupportedSqlStructure,
                        "SELECT item {} reads a column outside an aggregate function; an \
                         aggregate query may only return aggregates and constants",
                        i + 1
                    ));
                }
            }
            (Output::Exprs(exprs), names)
        }
    };
    let top_keys = match (rows.first(), &output) {
        _ if !json => None,
        (Some(RowStep::Step(Step::Key { name, exact })), _) => {
            Some(KeySet::new([(name.clone(), *exact)]))
        }
        (Some(_), _) | (None, Output::Star) => None,
        (None, Output::Exprs(exprs)) => read_keys(
            exprs
                .iter()
                .chain(filter.iter())
                .chain(b.aggs.iter().filter_map(|a| a.arg.as_ref())),
        ),
    };
    Ok(Plan {
        rows,
        top_keys,
        filter,
        output,
        aggs: b.aggs,
        names,
        limit: query.limit,
    })
}

/// A SELECT item's output name: its alias, the column it names, or `_N` by position.
fn output_name(item: &ast::SelectItem, index: usize) -> String {
    if let Some(a) = &item.alias {
        return a.name.clone();
    }
    if let Expr::Column(ColumnRef { path, .. }) = &item.expr {
        match path.last() {
            Some(PathStep::Key(k)) => return k.name.clone(),
            Some(PathStep::Index(_)) => return format!("_{}", index + 1),
            None => {}
        }
    }
    match &item.expr {
        Expr::Column(ColumnRef {
            target: ColumnTarget::Position(n),
            ..
        }) => format!("_{n}"),
        Expr::Column(ColumnRef {
            target: ColumnTarget::Name(id),
            ..
        }) => id.name.clone(),
        _ => format!("_{}", index + 1),
    }
}

/// Whether an expression reads any field of the record.
fn references_fields(e: &CExpr) -> bool {
    let mut any = false;
    visit(e, &mut |x| {
        any |= matches!(
            x,
            CExpr::Field { .. }
                | CExpr::NullableField { .. }
                | CExpr::Path { .. }
                | CExpr::EmptyAsNullCast { .. }
                | CExpr::IntFieldCmp { .. }
                | CExpr::DecFieldCmp { .. }
                | CExpr::IntFieldIn { .. }
                | CExpr::StrFieldIn { .. }
                | CExpr::StrFieldCmp { .. }
        );
    });
    any
}

/// The top-level keys that `exprs` read, `None` when one of them reads the whole row.
fn read_keys<'e>(exprs: impl Iterator<Item = &'e CExpr>) -> Option<KeySet> {
    let mut keys = Some(Vec::new());
    for e in exprs {
        visit(e, &mut |x| {
            if let CExpr::Path { steps } = x {
                match (steps.first(), keys.as_mut()) {
                    (None, _) => keys = None,
                    (Some(Step::Key { name, exact }), Some(k)) => k.push((name.clone(), *exact)),
                    _ => {}
                }
            }
        });
    }
    keys.map(KeySet::new)
}

fn visit(e: &CExpr, f: &mut dyn FnMut(&CExpr)) {
    f(e);
    let mut go = |c: &CExpr| visit(c, f);
    match e {
        CExpr::Const(_)
        | CExpr::Field { .. }
        | CExpr::NullableField { .. }
        | CExpr::Path { .. }
        | CExpr::EmptyAsNullCast { .. }
        | CExpr::IntFieldCmp { .. }
        | CExpr::DecFieldCmp { .. }
        | CExpr::IntFieldIn { .. }
        | CExpr::StrFieldIn { .. }
        | CExpr::StrFieldCmp { .. }
        | CExpr::AggResult(_) => {}
        CExpr::Not(a) | CExpr::Neg(a) => go(a),
        CExpr::And(a, b)
        | CExpr::Or(a, b)
        | CExpr::Cmp(_, a, b)
        | CExpr::Arith(_, a, b)
        | CExpr::Concat(a, b) => {
            go(a);
            go(b);
        }
        CExpr::Like { expr, pattern, .. } => {
            go(expr);
            if let LikeSpec::Dynamic {
                pattern, escape, ..
            } = pattern
            {
                go(pattern);
                if let Some(e) = escape {
                    go(e);
                }
            }
        }
        CExpr::Between {
            expr, low, high, ..
        } => {
            go(expr);
            go(low);
            go(high);
        }
        CExpr::InList { expr, list, .. } => {
            go(expr);
            list.iter().for_each(&mut go);
        }
        CExpr::IsNull { expr, .. } | CExpr::IsMissing { expr, .. } => go(expr),
        CExpr::Case {
            operand,
            whens,
            else_expr,
        } => {
            if let Some(o) = operand {
                go(o);
            }
            for (w, t) in whens {
                go(w);
                go(t);
            }
            if let Some(e) = else_expr {
                go(e);
            }
        }
        CExpr::Cast { expr, .. } | CExpr::Extract { expr, .. } => go(expr),
        CExpr::DateAdd {
            quantity,
            timestamp,
            ..
        } => {
            go(quantity);
            go(timestamp);
        }
        CExpr::DateDiff { from, to, .. } => {
            go(from);
            go(to);
        }
        CExpr::Trim { chars, expr, .. } => {
            if let Some(c) = chars {
                go(c);
            }
            go(expr);
        }
        CExpr::Func { args, .. } => args.iter().for_each(&mut go),
    }
}

/// A literal's value. A number with a point is a DECIMAL to AWS (as to Ion) and a double
/// to Ceph RGW, whose s3select computes in int64 and double only; so `1.5 * 2.0` cannot
/// overflow 38 digits there.
fn literal(l: &Literal, dialect: Dialect, pos: ast::Pos) -> Result<Value<'static>> {
    Ok(match l {
        Literal::Decimal(s) if dialect == Dialect::Ceph => Value::Float(
            crate::value::numeric::parse_f64(s)
                .ok_or_else(|| err!(LexerInvalidLiteral, "invalid number {s} (at {pos})"))?,
        ),
        Literal::Null => Value::Null,
        Literal::Missing => Value::Missing,
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Int(i) => Value::Int(*i),
        Literal::Decimal(s) => Value::Decimal(Decimal::parse(s).ok_or_else(|| {
            err!(
                LexerInvalidLiteral,
                "the number {s} has more than 38 digits (at {pos})"
            )
        })?),
        Literal::Float(s) => Value::Float(
            crate::value::numeric::parse_f64(s)
                .ok_or_else(|| err!(LexerInvalidLiteral, "invalid number {s} (at {pos})"))?,
        ),
        Literal::String(s) => Value::Str(s.clone().into()),
        Literal::Timestamp(s) => Value::Timestamp(Timestamp::parse_ion(s).ok_or_else(|| {
            err!(
                LexerInvalidLiteral,
                "`{s}` is not an Ion timestamp (at {pos})"
            )
        })?),
    })
}

fn key_step(k: &Ident) -> Step {
    Step::Key {
        name: k.name.as_str().into(),
        exact: k.quoted,
    }
}

/// An index too large for this machine finds nothing, as any index past the end does.
fn index_step(i: u64) -> Step {
    Step::Index(usize::try_from(i).unwrap_or(usize::MAX))
}

fn path_step(s: &PathStep) -> Step {
    match s {
        PathStep::Key(k) => key_step(k),
        PathStep::Index(i) => index_step(*i),
    }
}

fn row_step(s: &FromStep) -> RowStep {
    match s {
        FromStep::Key(k) => RowStep::Step(key_step(k)),
        FromStep::Index(i) => RowStep::Step(index_step(*i)),
        FromStep::AnyIndex => RowStep::EachElement,
        FromStep::AnyKey => RowStep::EachMember,
    }
}

impl<'q> Binder<'q> {
    /// Whether `name` is what the row goes by: the FROM alias, the implicit name at the end
    /// of a FROM path, or `S3Object` itself.
    fn names_row(&self, name: &Ident) -> bool {
        match (self.alias, self.implicit_alias) {
            (Some(a), _) if names_match(a, &name.name, name.quoted) => true,
            (None, Some(implicit)) if name.name.eq_ignore_ascii_case(implicit) => true,
            _ => name.name.eq_ignore_ascii_case("s3object") && !name.quoted,
        }
    }

    /// Whether the qualifier `q` names the row as `_1`, the first (and only) "column" of
    /// a JSON row: `_1.created FROM S3Object[*]`, `_1.c1 FROM S3Object[*].root`. MinIO and
    /// Ceph RGW read it so, whatever the FROM path; Sift does when the FROM clause has no
    /// alias. Only as a qualifier: a bare `_1` is still the key `_1` (the names JSON output
    /// gives CSV columns).
    fn row_by_position(&self, q: &Ident) -> bool {
        self.alias.is_none() && !q.quoted && q.name == "_1"
    }

    /// A column of JSON input: a path from the row. `s.a.b` starts at the row when `s`
    /// names it and is the path `s.a.b` otherwise (a JSON key may be called anything).
    fn json_column(&mut self, c: &ColumnRef) -> Result<CExpr> {
        let target = match &c.target {
            ColumnTarget::Name(id) => id.clone(),
            // `_3` is just a key for JSON; `_1` names the row after a wildcard FROM path.
            ColumnTarget::Position(n) => Ident {
                name: format!("_{n}"),
                quoted: false,
                pos: c.pos,
            },
        };
        let mut steps = Vec::with_capacity(c.path.len() + 2);
        match &c.qualifier {
            Some(q) if self.names_row(q) || self.row_by_position(q) => {
                steps.push(key_step(&target))
            }
            Some(q) => {
                steps.push(key_step(q));
                steps.push(key_step(&target));
            }
            None if self.names_row(&target) => {}
            None => steps.push(key_step(&target)),
        }
        steps.extend(c.path.iter().map(path_step));
        Ok(CExpr::Path {
            steps: steps.into(),
        })
    }

    fn column(&mut self, c: &ColumnRef) -> Result<CExpr> {
        if self.json {
            return self.json_column(c);
        }
        if !c.path.is_empty() {
            return Err(err!(
                UnsupportedSqlStructure,
                "the path at {} leads into a nested value, which CSV input does not have",
                c.pos
            ));
        }
        if let Some(q) = &c.qualifier {
            let ok = match self.alias {
                Some(a) => {
                    names_match(a, &q.name, q.quoted) || q.name.eq_ignore_ascii_case("s3object")
                }
                None => q.name.eq_ignore_ascii_case("s3object"),
            };
            if !ok {
                return Err(err!(
                    InvalidTableAlias,
                    "'{}' at {} is not the table alias of the FROM clause",
                    q.name,
                    q.pos
                ));
            }
        }
        let field = match &c.target {
            ColumnTarget::Position(0) => {
                return Err(err!(
                    InvalidColumnIndex,
                    "column _0 at {} does not exist: positions start at _1",
                    c.pos
                ))
            }
            ColumnTarget::Position(n) => {
                let index = usize::try_from(*n - 1).unwrap_or(usize::MAX);
                CExpr::Field { index }
            }
            ColumnTarget::Name(id) => self.named_column(id)?,
        };
        // Ceph RGW reads an empty CSV field as NULL (`int(_3)` of an empty field is NULL,
        // not a cast error), and writes it back as `null`.
        Ok(match field {
            CExpr::Field { index } if self.dialect == Dialect::Ceph => {
                CExpr::NullableField { index }
            }
            other => other,
        })
    }

    /// The SELECT item whose alias is `id` (Ceph dialect: aliases are names everywhere).
    fn select_alias(&self, id: &Ident) -> Option<&'q ast::SelectItem> {
        self.items.iter().find(|it| {
            it.alias
                .as_ref()
                .is_some_and(|a| names_match(a, &id.name, id.quoted))
        })
    }

    fn named_column(&mut self, id: &Ident) -> Result<CExpr> {
        if let Some(header) = self.header {
            let hits: Vec<usize> = header
                .iter()
                .enumerate()
                .filter(|(_, h)| {
                    if id.quoted {
                        **h == id.name
                    } else {
                        h.eq_ignore_ascii_case(&id.name)
                    }
                })
                .map(|(i, _)| i)
                .collect();
            match hits.as_slice() {
                [_] if self.dialect == Dialect::Ceph && self.select_alias(id).is_some() => {
                    return Err(err!(
                        ProcessingTimeError,
                        "multiple definition of column {{{}}} as schema-column and alias (at {})",
                        id.name,
                        id.pos
                    ));
                }
                [i] => return Ok(CExpr::Field { index: *i }),
                [] => {}
                _ => {
                    return Err(err!(
                        AmbiguousFieldName,
                        "the header has {} columns named '{}' (at {})",
                        hits.len(),
                        id.name,
                        id.pos
                    ))
                }
            }
        }
        if self.dialect == Dialect::Ceph {
            if let Some(item) = self.select_alias(id) {
                if self
                    .expanding
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(&id.name))
                {
                    // RGW's words, which its clients look for.
                    return Err(err!(
                        ProcessingTimeError,
                        "alias '{}' refers to itself (at {}): number of calls exceed maximum \
                         size, probably a cyclic reference to alias",
                        id.name,
                        id.pos
                    ));
                }
                self.expanding.push(id.name.clone());
                let e = self.expr(&item.expr);
                self.expanding.pop();
                return e;
            }
            return Err(err!(
                ProcessingTimeError,
                "alias {{{}}} or column not exist in schema (at {})",
                id.name,
                id.pos
            ));
        }
        Err(match self.header {
            Some(h) => err!(
                EvaluatorBindingDoesNotExist,
                "column '{}' (at {}) is not in the header; the columns are: {}",
                id.name,
                id.pos,
                h.join(", ")
            ),
            None => err!(
                EvaluatorBindingDoesNotExist,
                "column '{}' (at {}) has no header to name it; set FileHeaderInfo to USE or use \
                 positions (_1, _2, …)",
                id.name,
                id.pos
            ),
        })
    }

    fn boxed(&mut self, e: &Expr) -> Result<Box<CExpr>> {
        Ok(Box::new(self.expr(e)?))
    }

    fn expr(&mut self, e: &Expr) -> Result<CExpr> {
        Ok(match e {
            Expr::Literal(l) => CExpr::Const(literal(l, self.dialect, ast::Pos::default())?),
            Expr::Column(c) => self.column(c)?,
            Expr::Unary { op, expr } => {
                let inner = self.boxed(expr)?;
                match op {
                    UnaryOp::Not => CExpr::Not(inner),
                    UnaryOp::Neg => match *inner {
                        CExpr::Const(v) => {
                            CExpr::Const(crate::eval::coerce::negate(v)?.into_owned())
                        }
                        other => CExpr::Neg(Box::new(other)),
                    },
                    UnaryOp::Plus => *inner,
                }
            }
            Expr::Binary {
                op, left, right, ..
            } => {
                let l = self.boxed(left)?;
                let r = self.boxed(right)?;
                match op {
                    BinaryOp::And => merge_and(l, r),
                    BinaryOp::Or => merge_or(l, r),
                    BinaryOp::Eq => specialise_cmp(CmpOp::Eq, l, r),
                    BinaryOp::NotEq => specialise_cmp(CmpOp::NotEq, l, r),
                    BinaryOp::Lt => specialise_cmp(CmpOp::Lt, l, r),
                    BinaryOp::LtEq => specialise_cmp(CmpOp::LtEq, l, r),
                    BinaryOp::Gt => specialise_cmp(CmpOp::Gt, l, r),
                    BinaryOp::GtEq => specialise_cmp(CmpOp::GtEq, l, r),
                    BinaryOp::Add => CExpr::Arith(ArithOp::Add, l, r),
                    BinaryOp::Sub => CExpr::Arith(ArithOp::Sub, l, r),
                    BinaryOp::Mul => CExpr::Arith(ArithOp::Mul, l, r),
                    BinaryOp::Div => CExpr::Arith(ArithOp::Div, l, r),
                    BinaryOp::Mod => CExpr::Arith(ArithOp::Mod, l, r),
                    BinaryOp::Concat => CExpr::Concat(l, r),
                }
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                let expr = self.boxed(expr)?;
                let pat = self.expr(pattern)?;
                let esc = match escape {
                    Some(e) => Some(self.expr(e)?),
                    None => None,
                };
                if let CExpr::Const(p) = &pat {
                    if !matches!(p, Value::Str(_) | Value::Null | Value::Missing) {
                        return Err(err!(
                            LikeInvalidInputs,
                            "the pattern of LIKE must be a string, got {} {}",
                            p.type_name(),
                            crate::eval::coerce::display_for_error(p)
                        ));
                    }
                }
                // Ceph RGW reads bracket classes in a pattern (see `LikeSyntax`).
                let syntax = match self.dialect {
                    Dialect::Ceph => LikeSyntax::CephClasses,
                    Dialect::Aws => LikeSyntax::Sql,
                };
                let pattern = match (&pat, &esc) {
                    (CExpr::Const(p), None) if !p.is_absent() => LikeSpec::Const(
                        LikePattern::compile_in(&crate::eval::coerce::to_text(p), None, syntax)?,
                    ),
                    (CExpr::Const(p), Some(CExpr::Const(e)))
                        if !p.is_absent() && !e.is_absent() =>
                    {
                        let esc = crate::eval::expr::like_escape_char(e)?;
                        LikeSpec::Const(LikePattern::compile_in(
                            &crate::eval::coerce::to_text(p),
                            Some(esc),
                            syntax,
                        )?)
                    }
                    _ => LikeSpec::Dynamic {
                        pattern: Box::new(pat),
                        escape: esc.map(Box::new),
                        syntax,
                    },
                };
                CExpr::Like {
                    expr,
                    pattern,
                    negated: *negated,
                }
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => CExpr::Between {
                expr: self.boxed(expr)?,
                low: self.boxed(low)?,
                high: self.boxed(high)?,
                negated: *negated,
            },
            Expr::InList {
                expr,
                list,
                negated,
            } => specialise_in(
                self.boxed(expr)?,
                list.iter().map(|x| self.expr(x)).collect::<Result<_>>()?,
                *negated,
            ),
            Expr::IsNull { expr, negated } => CExpr::IsNull {
                expr: self.boxed(expr)?,
                negated: *negated,
            },
            Expr::IsMissing { expr, negated } => CExpr::IsMissing {
                expr: self.boxed(expr)?,
                negated: *negated,
            },
            Expr::Case {
                operand,
                whens,
                else_expr,
            } => {
                let operand = match operand {
                    Some(o) => Some(self.boxed(o)?),
                    None => None,
                };
                let whens = whens
                    .iter()
                    .map(|(w, t)| Ok((self.expr(w)?, self.expr(t)?)))
                    .collect::<Result<Vec<_>>>()?;
                let else_expr = match else_expr {
                    Some(e) => Some(self.boxed(e)?),
                    None => None,
                };
                empty_as_null_cast(&operand, &whens, &else_expr).unwrap_or(CExpr::Case {
                    operand,
                    whens,
                    else_expr,
                })
            }
            Expr::Cast { expr, to, pos } => CExpr::Cast {
                expr: self.boxed(expr)?,
                to: *to,
                pos: *pos,
            },
            Expr::Extract { part, expr, pos } => CExpr::Extract {
                part: *part,
                expr: self.boxed(expr)?,
                pos: *pos,
            },
            Expr::DateAdd {
                part,
                quantity,
                timestamp,
                pos,
            } => CExpr::DateAdd {
                part: *part,
                quantity: self.boxed(quantity)?,
                timestamp: self.boxed(timestamp)?,
                pos: *pos,
            },
            Expr::DateDiff {
                part,
                from,
                to,
                pos,
            } => CExpr::DateDiff {
                part: *part,
                from: self.boxed(from)?,
                to: self.boxed(to)?,
                pos: *pos,
            },
            Expr::Trim {
                spec, chars, expr, ..
            } => CExpr::Trim {
                spec: *spec,
                chars: match chars {
                    Some(c) => Some(self.boxed(c)?),
                    None => None,
                },
                expr: self.boxed(expr)?,
            },
            Expr::Function { name, args, pos } => {
                let func = Func::resolve(name, args.len(), self.dialect, *pos)?;
                CExpr::Func {
                    func,
                    args: args.iter().map(|a| self.expr(a)).collect::<Result<_>>()?,
                    pos: *pos,
                }
            }
            Expr::Aggregate { func, arg, pos } => {
                if self.in_aggregate {
                    return Err(err!(
                        UnsupportedSqlOperation,
                        "aggregate functions cannot be nested (at {pos})"
                    ));
                }
                self.in_aggregate = true;
                let arg = arg.as_ref().map(|a| self.expr(a)).transpose();
                self.in_aggregate = false;
                self.aggs.push(AggSpec {
                    func: *func,
                    arg: arg?,
                });
                CExpr::AggResult(self.aggs.len() - 1)
            }
        })
    }
}

/// Whether identifier `a` (as declared) is referred to by `name` written quoted or not.
fn names_match(a: &Ident, name: &str, quoted: bool) -> bool {
    if quoted || a.quoted {
        a.name == name
    } else {
        a.name.eq_ignore_ascii_case(name)
    }
}

/// `a AND b`, with the integer or decimal comparisons of one field merged into one node
/// (Trino's ranges).
///
/// Merging is exact: both nodes read the field the same way, and a row for which either is
/// unknown (an empty or missing field) is unknown or false for both. Decimal conditions are
/// brought to the deeper of the two scales; if a constant does not fit there, the two nodes
/// stay apart.
fn merge_and(l: Box<CExpr>, r: Box<CExpr>) -> CExpr {
    if let Some(merged) = union_in(&l, &r, true) {
        return merged;
    }
    match (l.as_ref(), r.as_ref()) {
        (
            CExpr::IntFieldCmp {
                index: i1,
                conds: c1,
                empty_is_null: e1,
                pos,
            },
            CExpr::IntFieldCmp {
                index: i2,
                conds: c2,
                empty_is_null: e2,
                ..
            },
        ) if i1 == i2 && e1 == e2 => CExpr::IntFieldCmp {
            index: *i1,
            conds: c1.iter().chain(c2.iter()).copied().collect(),
            empty_is_null: *e1,
            pos: *pos,
        },
        (
            CExpr::DecFieldCmp {
                index: i1,
                scale: s1,
                conds: c1,
                empty_is_null: e1,
                pos,
            },
            CExpr::DecFieldCmp {
                index: i2,
                scale: s2,
                conds: c2,
                empty_is_null: e2,
                ..
            },
        ) if i1 == i2 && e1 == e2 => {
            let scale = (*s1).max(*s2);
            let rescaled: Option<Box<[(CmpOp, i64)]>> = c1
                .iter()
                .map(|&(op, k)| Some((op, rescale_i64(k, *s1, scale)?)))
                .chain(
                    c2.iter()
                        .map(|&(op, k)| Some((op, rescale_i64(k, *s2, scale)?))),
                )
                .collect();
            match rescaled {
                Some(conds) => CExpr::DecFieldCmp {
                    index: *i1,
                    scale,
                    conds,
                    empty_is_null: *e1,
                    pos: *pos,
                },
                None => CExpr::And(l, r),
            }
        }
        _ => CExpr::And(l, r),
    }
}

/// `k` at scale `from` written at the deeper scale `to`, if it fits an i64.
fn rescale_i64(k: i64, from: u8, to: u8) -> Option<i64> {
    k.checked_mul(10i64.checked_pow(u32::from(to.checked_sub(from)?))?)
}

/// The constant of a [`CExpr::DecFieldCmp`]: `k` as an integer at its scale (the deeper of
/// its own and [`DEC_FIELD_MIN_SCALE`]), if that fits the fast path's 18 digits.
fn dec_constant(k: &Value<'_>) -> Option<(i64, u8)> {
    let (mantissa, own_scale) = match k {
        Value::Int(i) => (i128::from(*i), 0),
        Value::Decimal(d) => (d.mantissa, d.scale),
        _ => return None,
    };
    let scale = own_scale.max(DEC_FIELD_MIN_SCALE);
    if scale > 18 {
        return None;
    }
    let k = mantissa.checked_mul(10i128.checked_pow(u32::from(scale - own_scale))?)?;
    Some((i64::try_from(k).ok()?, scale))
}

/// A comparison, specialised when one side reads a field and the other is a constant of the
/// matching kind: the shapes Trino and Presto send for every pushed-down predicate.
fn specialise_cmp(op: CmpOp, l: Box<CExpr>, r: Box<CExpr>) -> CExpr {
    let (op2, field, k) = match (l.as_ref(), r.as_ref()) {
        (_, CExpr::Const(_)) => (op, l.as_ref(), r.as_ref()),
        (CExpr::Const(_), _) => (op.flipped(), r.as_ref(), l.as_ref()),
        _ => return CExpr::Cmp(op, l, r),
    };
    let CExpr::Const(k) = k else {
        return CExpr::Cmp(op, l, r);
    };
    match (field, k) {
        (
            CExpr::EmptyAsNullCast {
                index,
                to: CastType::Int,
                pos,
            },
            Value::Int(k),
        ) => CExpr::IntFieldCmp {
            index: *index,
            conds: Box::new([(op2, *k)]),
            empty_is_null: true,
            pos: *pos,
        },
        (
            CExpr::Cast {
                expr,
                to: CastType::Int,
                pos,
            },
            Value::Int(k),
        ) => match expr.as_ref() {
            CExpr::Field { index } => CExpr::IntFieldCmp {
                index: *index,
                conds: Box::new([(op2, *k)]),
                empty_is_null: false,
                pos: *pos,
            },
            _ => CExpr::Cmp(op, l, r),
        },
        (
            CExpr::EmptyAsNullCast {
                index,
                to: to @ CastType::Decimal { .. },
                pos,
            },
            k,
        ) if keeps_value(*to) => match dec_constant(k) {
            Some((k, scale)) => CExpr::DecFieldCmp {
                index: *index,
                scale,
                conds: Box::new([(op2, k)]),
                empty_is_null: true,
                pos: *pos,
            },
            None => CExpr::Cmp(op, l, r),
        },
        (
            CExpr::Cast {
                expr,
                to: to @ CastType::Decimal { .. },
                pos,
            },
            k,
        ) if keeps_value(*to) => match (expr.as_ref(), dec_constant(k)) {
            (CExpr::Field { index }, Some((k, scale))) => CExpr::DecFieldCmp {
                index: *index,
                scale,
                conds: Box::new([(op2, k)]),
                empty_is_null: false,
                pos: *pos,
            },
            _ => CExpr::Cmp(op, l, r),
        },
        (CExpr::Field { index }, Value::Str(k)) => CExpr::StrFieldCmp {
            index: *index,
            op: op2,
            k: k.as_ref().into(),
        },
        _ => CExpr::Cmp(op, l, r),
    }
}

/// Whether a DECIMAL cast leaves a value as it is: `DECIMAL` and `DECIMAL(p,s)` do (AWS
/// ignores p and s given together), `DECIMAL(p)` rounds to an integer.
fn keeps_value(to: CastType) -> bool {
    matches!(
        to,
        CastType::Decimal {
            precision: Some(_),
            scale: Some(_)
        } | CastType::Decimal {
            precision: None,
            scale: None
        }
    )
}

/// An IN list, specialised when it tests a field read as an integer against integer
/// constants only, or a bare field against text constants only. A NULL in the list makes a
/// miss unknown rather than false, so such a list keeps the general path.
fn specialise_in(expr: Box<CExpr>, list: Vec<CExpr>, negated: bool) -> CExpr {
    if let CExpr::Field { index } = expr.as_ref() {
        let texts: Option<Vec<Box<[u8]>>> = list
            .iter()
            .map(|item| match item {
                CExpr::Const(Value::Str(k)) => Some(k.as_bytes().into()),
                _ => None,
            })
            .collect();
        if let Some(mut set) = texts.filter(|set| !set.is_empty()) {
            set.sort_unstable();
            set.dedup();
            return CExpr::StrFieldIn {
                index: *index,
                set: set.into(),
                negated,
            };
        }
    }
    let field = match expr.as_ref() {
        CExpr::EmptyAsNullCast {
            index,
            to: CastType::Int,
            pos,
        } => Some((*index, true, *pos)),
        CExpr::Cast {
            expr: inner,
            to: CastType::Int,
            pos,
        } => match inner.as_ref() {
            CExpr::Field { index } => Some((*index, false, *pos)),
            _ => None,
        },
        _ => None,
    };
    let ints: Option<Vec<i64>> = list
        .iter()
        .map(|item| match item {
            CExpr::Const(Value::Int(k)) => Some(*k),
            _ => None,
        })
        .collect();
    match (field, ints) {
        (Some((index, empty_is_null, pos)), Some(set)) if !set.is_empty() => CExpr::IntFieldIn {
            index,
            set: IntSet::new(set),
            negated,
            empty_is_null,
            pos,
        },
        _ => CExpr::InList {
            expr,
            list,
            negated,
        },
    }
}

/// `l OR r`, as one [`CExpr::IntFieldIn`] or [`CExpr::StrFieldIn`] when both are IN lists of
/// the same field: a list longer than a store takes in one piece arrives split and joined by
/// OR (Sift's TPC-DS client sends at most 255 values per list), and one binary search over
/// the union costs a third of evaluating the pieces through the general OR.
fn merge_or(l: Box<CExpr>, r: Box<CExpr>) -> CExpr {
    union_in(&l, &r, false).unwrap_or(CExpr::Or(l, r))
}

/// `l` and `r` as one list when both are [`CExpr::IntFieldIn`] of the same field, read the
/// same way, or both [`CExpr::StrFieldIn`] of the same field, and both `negated`: `f IN A OR f IN B` is `f IN A∪B`, and `f NOT IN A AND f NOT
/// IN B` is `f NOT IN A∪B`, NULL fields and cast errors included (the lists hold no NULL,
/// and `l`'s position is where either would report a cast error first).
fn union_in(l: &CExpr, r: &CExpr, negated: bool) -> Option<CExpr> {
    match (l, r) {
        (
            CExpr::IntFieldIn {
                index: i1,
                set: s1,
                negated: n1,
                empty_is_null: e1,
                pos,
            },
            CExpr::IntFieldIn {
                index: i2,
                set: s2,
                negated: n2,
                empty_is_null: e2,
                ..
            },
        ) if i1 == i2 && e1 == e2 && *n1 == negated && *n2 == negated => Some(CExpr::IntFieldIn {
            index: *i1,
            set: s1.union(s2),
            negated,
            empty_is_null: *e1,
            pos: *pos,
        }),
        (
            CExpr::StrFieldIn {
                index: i1,
                set: s1,
                negated: n1,
            },
            CExpr::StrFieldIn {
                index: i2,
                set: s2,
                negated: n2,
            },
        ) if i1 == i2 && *n1 == negated && *n2 == negated => {
            let mut set: Vec<Box<[u8]>> = s1.iter().chain(s2.iter()).cloned().collect();
            set.sort_unstable();
            set.dedup();
            Some(CExpr::StrFieldIn {
                index: *i1,
                set: set.into(),
                negated,
            })
        }
        _ => None,
    }
}

/// Recognises `CASE f WHEN '' THEN NULL ELSE CAST(f AS t) END`.
fn empty_as_null_cast(
    operand: &Option<Box<CExpr>>,
    whens: &[(CExpr, CExpr)],
    else_expr: &Option<Box<CExpr>>,
) -> Option<CExpr> {
    let CExpr::Field { index } = operand.as_deref()? else {
        return None;
    };
    let [(CExpr::Const(Value::Str(w)), CExpr::Const(Value::Null))] = whens else {
        return None;
    };
    if !w.is_empty() {
        return None;
    }
    let CExpr::Cast { expr, to, pos } = else_expr.as_deref()? else {
        return None;
    };
    match expr.as_ref() {
        CExpr::Field { index: i } if i == index => Some(CExpr::EmptyAsNullCast {
            index: *index,
            to: *to,
            pos: *pos,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parser::parse;

    fn filter(sql: &str) -> CExpr {
        let query = parse(sql, Dialect::Aws).expect("parse");
        bind(&query, Dialect::Aws, Columns::Csv(None))
            .expect("bind")
            .filter
            .expect("a WHERE clause")
    }

    /// Trino's price range is one decimal test at the constants' scale (at least the
    /// minimum), so that the field is parsed once; `engine/tests/specialised.rs` checks it
    /// against the general path.
    #[test]
    fn trino_decimal_range_is_one_node() {
        let range = "SELECT s._1 FROM S3Object s WHERE ((case s._14 when '' then null else \
                     CAST(s._14 AS DECIMAL(7,2)) end >= 10.00 AND case s._14 when '' then \
                     null else CAST(s._14 AS DECIMAL(7,2)) end <= 20.005))";
        match filter(range) {
            CExpr::DecFieldCmp {
                index: 13,
                scale: 4,
                conds,
                empty_is_null: true,
                ..
            } => assert_eq!(&*conds, &[(CmpOp::GtEq, 100_000), (CmpOp::LtEq, 200_050)]),
            other => panic!("not one DecFieldCmp: {other:?}"),
        }
        // DECIMAL(p) rounds, and a constant deeper than 18 digits does not fit: both keep
        // the general path.
        for general in [
            "SELECT s._1 FROM S3Object s WHERE CAST(s._2 AS DECIMAL(7)) > 10",
            "SELECT s._1 FROM S3Object s WHERE CAST(s._2 AS DECIMAL) > 0.0000000000000000001",
        ] {
            assert!(
                matches!(filter(general), CExpr::Cmp(..)),
                "{general} was specialised"
            );
        }
    }

    /// A key list split into pieces is bound as one list over their union: joined by OR,
    /// or under NOT by AND. Pieces over different fields, or one IN and one NOT IN, stay
    /// apart; `engine/tests/specialised.rs` checks the results against the general path.
    #[test]
    fn split_in_lists_are_one_node() {
        let read = "case s._1 when '' then null else CAST(s._1 AS INT) end";
        let split = format!(
            "SELECT s._1 FROM S3Object s WHERE (({read} IN (5, 3)) OR ({read} IN (9, 3)) OR \
             ({read} IN (1)))"
        );
        match filter(&split) {
            CExpr::IntFieldIn {
                index: 0,
                set,
                negated: false,
                empty_is_null: true,
                ..
            } => assert_eq!(set.values(), &[1, 3, 5, 9]),
            other => panic!("not one IntFieldIn: {other:?}"),
        }
        let split = format!(
            "SELECT s._1 FROM S3Object s WHERE (({read} NOT IN (5)) AND ({read} NOT IN (7)))"
        );
        assert!(
            matches!(filter(&split), CExpr::IntFieldIn { negated: true, ref set, .. } if set.values() == [5, 7]),
            "{split}"
        );
        let split = "SELECT s._1 FROM S3Object s WHERE ((s._2 IN ('b', 'a')) OR (s._2 IN ('c')))";
        assert!(
            matches!(filter(split), CExpr::StrFieldIn { index: 1, negated: false, ref set }
                if set.iter().map(|k| &**k).eq([&b"a"[..], b"b", b"c"])),
            "{split}"
        );
        for apart in [
            "SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) IN (1) OR CAST(s._2 AS INT) IN (2)",
            "SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) IN (1) OR CAST(s._1 AS INT) NOT IN (2)",
            "SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) IN (1) AND CAST(s._1 AS INT) IN (2)",
        ] {
            assert!(
                matches!(filter(apart), CExpr::Or(..) | CExpr::And(..)),
                "{apart} was merged"
            );
        }
    }
}
