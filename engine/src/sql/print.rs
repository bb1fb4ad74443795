//! [`Query`] → SQL text that parses back to the same tree (positions aside).
//!
//! Every compound expression is printed in parentheses, so the output never depends on
//! precedence and a printed-then-parsed tree keeps its shape exactly. The output is AWS
//! dialect SQL: `"…"` is always an identifier and `'…'` always a string.
//!
//! [`without_positions`] zeroes every [`Pos`] so that trees parsed from different texts
//! can be compared.

use std::fmt::{self, Display, Formatter, Write};

use crate::sql::ast::{
    AggFunc, BinaryOp, CastType, ColumnRef, ColumnTarget, DatePart, Expr, From, FromStep, Ident,
    Literal, PathStep, Pos, Projection, Query, SelectItem, Source, TrimSpec, UnaryOp,
};

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        match &self.projection {
            Projection::Star => f.write_str("*")?,
            Projection::Items(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
            }
        }
        write!(f, " FROM {}", self.from)?;
        if let Some(condition) = &self.where_clause {
            write!(f, " WHERE {condition}")?;
        }
        if let Some(limit) = self.limit {
            write!(f, " LIMIT {limit}")?;
        }
        Ok(())
    }
}

impl Display for SelectItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        if let Some(alias) = &self.alias {
            write!(f, " AS {alias}")?;
        }
        Ok(())
    }
}

impl Display for From {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self.source {
            Source::S3Object => "S3Object",
            Source::Stdin => "stdin",
        })?;
        for step in &self.path {
            match step {
                FromStep::Key(k) => write!(f, ".{k}")?,
                FromStep::Index(i) => write!(f, "[{i}]")?,
                FromStep::AnyIndex => f.write_str("[*]")?,
                FromStep::AnyKey => f.write_str(".*")?,
            }
        }
        if let Some(alias) = &self.alias {
            write!(f, " AS {alias}")?;
        }
        Ok(())
    }
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.quoted {
            write_quoted(f, '"', &self.name)
        } else {
            f.write_str(&self.name)
        }
    }
}

/// `q` + text with every `q` doubled + `q`.
fn write_quoted(f: &mut Formatter<'_>, q: char, text: &str) -> fmt::Result {
    f.write_char(q)?;
    for c in text.chars() {
        if c == q {
            f.write_char(q)?;
        }
        f.write_char(c)?;
    }
    f.write_char(q)
}

impl Display for ColumnRef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(qualifier) = &self.qualifier {
            write!(f, "{qualifier}.")?;
        }
        match &self.target {
            ColumnTarget::Position(n) => write!(f, "_{n}")?,
            ColumnTarget::Name(name) => write!(f, "{name}")?,
        }
        for step in &self.path {
            match step {
                PathStep::Key(k) => write!(f, ".{k}")?,
                PathStep::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("NULL"),
            Literal::Missing => f.write_str("MISSING"),
            Literal::Bool(true) => f.write_str("TRUE"),
            Literal::Bool(false) => f.write_str("FALSE"),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Decimal(text) | Literal::Float(text) => f.write_str(text),
            Literal::String(text) => write_quoted(f, '\'', text),
            Literal::Timestamp(text) => write!(f, "`{text}`"),
        }
    }
}

impl BinaryOp {
    pub fn as_sql(self) -> &'static str {
        match self {
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Concat => "||",
        }
    }
}

impl Display for CastType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CastType::Bool => f.write_str("BOOL"),
            CastType::Int => f.write_str("INT"),
            CastType::Float => f.write_str("FLOAT"),
            CastType::String => f.write_str("STRING"),
            CastType::Timestamp => f.write_str("TIMESTAMP"),
            CastType::Decimal { precision, scale } => {
                f.write_str("DECIMAL")?;
                match (precision, scale) {
                    (Some(p), Some(s)) => write!(f, "({p},{s})"),
                    (Some(p), None) => write!(f, "({p})"),
                    // A scale without a precision cannot be written; the parser never
                    // produces it.
                    (None, _) => Ok(()),
                }
            }
        }
    }
}

impl Display for DatePart {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DatePart::Year => "YEAR",
            DatePart::Month => "MONTH",
            DatePart::Day => "DAY",
            DatePart::Hour => "HOUR",
            DatePart::Minute => "MINUTE",
            DatePart::Second => "SECOND",
            DatePart::TimezoneHour => "TIMEZONE_HOUR",
            DatePart::TimezoneMinute => "TIMEZONE_MINUTE",
        })
    }
}

impl Display for AggFunc {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AggFunc::Count => "COUNT",
            AggFunc::Sum => "SUM",
            AggFunc::Avg => "AVG",
            AggFunc::Min => "MIN",
            AggFunc::Max => "MAX",
        })
    }
}

fn not(negated: bool) -> &'static str {
    if negated {
        "NOT "
    } else {
        ""
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(literal) => write!(f, "{literal}"),
            Expr::Column(column) => write!(f, "{column}"),
            Expr::Unary { op, expr } => {
                // The operand is parenthesised too, so `-(-1)` never prints as a `--` comment.
                let op = match op {
                    UnaryOp::Not => "NOT ",
                    UnaryOp::Neg => "-",
                    UnaryOp::Plus => "+",
                };
                write!(f, "({op}({expr}))")
            }
            Expr::Binary {
                op, left, right, ..
            } => write!(f, "({left} {} {right})", op.as_sql()),
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                write!(f, "({expr} {}LIKE {pattern}", not(*negated))?;
                if let Some(escape) = escape {
                    write!(f, " ESCAPE {escape}")?;
                }
                f.write_str(")")
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => write!(f, "({expr} {}BETWEEN {low} AND {high})", not(*negated)),
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                write!(f, "({expr} {}IN (", not(*negated))?;
                write_list(f, list)?;
                f.write_str("))")
            }
            Expr::IsNull { expr, negated } => write!(f, "({expr} IS {}NULL)", not(*negated)),
            Expr::IsMissing { expr, negated } => {
                write!(f, "({expr} IS {}MISSING)", not(*negated))
            }
            Expr::Case {
                operand,
                whens,
                else_expr,
            } => {
                f.write_str("CASE")?;
                if let Some(operand) = operand {
                    write!(f, " {operand}")?;
                }
                for (condition, result) in whens {
                    write!(f, " WHEN {condition} THEN {result}")?;
                }
                if let Some(else_expr) = else_expr {
                    write!(f, " ELSE {else_expr}")?;
                }
                f.write_str(" END")
            }
            Expr::Cast { expr, to, .. } => write!(f, "CAST({expr} AS {to})"),
            Expr::Extract { part, expr, .. } => write!(f, "EXTRACT({part} FROM {expr})"),
            Expr::DateAdd {
                part,
                quantity,
                timestamp,
                ..
            } => write!(f, "DATE_ADD({part}, {quantity}, {timestamp})"),
            Expr::DateDiff { part, from, to, .. } => {
                write!(f, "DATE_DIFF({part}, {from}, {to})")
            }
            Expr::Trim {
                spec, chars, expr, ..
            } => {
                let spec = match spec {
                    TrimSpec::Leading => "LEADING",
                    TrimSpec::Trailing => "TRAILING",
                    TrimSpec::Both => "BOTH",
                };
                match chars {
                    Some(chars) => write!(f, "TRIM({spec} {chars} FROM {expr})"),
                    None => write!(f, "TRIM({spec} FROM {expr})"),
                }
            }
            Expr::Function { name, args, .. } => {
                write!(f, "{name}(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            Expr::Aggregate { func, arg, .. } => match arg {
                Some(arg) => write!(f, "{func}({arg})"),
                None => write!(f, "{func}(*)"),
            },
        }
    }
}

fn write_list(f: &mut Formatter<'_>, list: &[Expr]) -> fmt::Result {
    for (i, e) in list.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

/// A copy of `query` with every position set to the default, for comparing trees parsed
/// from different texts.
pub fn without_positions(query: &Query) -> Query {
    let mut q = query.clone();
    if let Projection::Items(items) = &mut q.projection {
        for item in items {
            zero_expr(&mut item.expr);
            if let Some(alias) = &mut item.alias {
                alias.pos = Pos::default();
            }
        }
    }
    if let Some(alias) = &mut q.from.alias {
        alias.pos = Pos::default();
    }
    for step in &mut q.from.path {
        if let FromStep::Key(k) = step {
            k.pos = Pos::default();
        }
    }
    if let Some(condition) = &mut q.where_clause {
        zero_expr(condition);
    }
    q
}

fn zero_expr(e: &mut Expr) {
    match e {
        Expr::Literal(_) => {}
        Expr::Column(column) => {
            column.pos = Pos::default();
            if let Some(qualifier) = &mut column.qualifier {
                qualifier.pos = Pos::default();
            }
            if let ColumnTarget::Name(name) = &mut column.target {
                name.pos = Pos::default();
            }
            for step in &mut column.path {
                if let PathStep::Key(k) = step {
                    k.pos = Pos::default();
                }
            }
        }
        Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } | Expr::IsMissing { expr, .. } => {
            zero_expr(expr)
        }
        Expr::Binary {
            left, right, pos, ..
        } => {
            *pos = Pos::default();
            zero_expr(left);
            zero_expr(right);
        }
        Expr::Like {
            expr,
            pattern,
            escape,
            ..
        } => {
            zero_expr(expr);
            zero_expr(pattern);
            if let Some(escape) = escape {
                zero_expr(escape);
            }
        }
        Expr::Between {
            expr, low, high, ..
        } => {
            zero_expr(expr);
            zero_expr(low);
            zero_expr(high);
        }
        Expr::InList { expr, list, .. } => {
            zero_expr(expr);
            list.iter_mut().for_each(zero_expr);
        }
        Expr::Case {
            operand,
            whens,
            else_expr,
        } => {
            if let Some(operand) = operand {
                zero_expr(operand);
            }
            for (condition, result) in whens {
                zero_expr(condition);
                zero_expr(result);
            }
            if let Some(else_expr) = else_expr {
                zero_expr(else_expr);
            }
        }
        Expr::Cast { expr, pos, .. } | Expr::Extract { expr, pos, .. } => {
            *pos = Pos::default();
            zero_expr(expr);
        }
        Expr::DateAdd {
            quantity: a,
            timestamp: b,
            pos,
            ..
        }
        | Expr::DateDiff {
            from: a,
            to: b,
            pos,
            ..
        } => {
            *pos = Pos::default();
            zero_expr(a);
            zero_expr(b);
        }
        Expr::Trim {
            chars, expr, pos, ..
        } => {
            *pos = Pos::default();
            if let Some(chars) = chars {
                zero_expr(chars);
            }
            zero_expr(expr);
        }
        Expr::Function { args, pos, .. } => {
            *pos = Pos::default();
            args.iter_mut().for_each(zero_expr);
        }
        Expr::Aggregate { arg, pos, .. } => {
            *pos = Pos::default();
            if let Some(arg) = arg {
                zero_expr(arg);
            }
        }
    }
}
