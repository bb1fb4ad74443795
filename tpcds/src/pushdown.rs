//! Turning DataFusion predicates into S3 Select SQL, in the form Trino 405 sends.
//!
//! S3 Select sees every CSV field as a string, and an empty field as an empty string, while
//! the client's schema says the field is an INT, a DECIMAL or a DATE and that empty means
//! NULL. A translated predicate must select exactly the rows DataFusion would keep, so each
//! column is read through the same guard Trino uses, which makes an empty field NULL before
//! it is cast: `case s._N when '' then null else CAST(s._N AS INT) end`. Three-valued logic
//! then does the rest: a comparison with NULL is not true, in S3 Select as in DataFusion.
//! The one shortcut is Trino's for strings: `s._N = 'x'` (and `IN`) with a non-empty literal
//! cannot match an empty field, so it needs no guard.
//!
//! Predicates arrive in two shapes, logical [`Expr`]s offered to the table provider (static
//! filters from the query) and [`PhysicalExpr`]s pushed into the scan at run time (dynamic
//! join filters). Both are first lowered to [`Pred`], a small predicate language over file
//! columns and literals, which is then rendered; anything that does not lower is not pushed
//! down and stays with DataFusion.

use std::cmp::Ordering::{Equal, Greater, Less};
use std::collections::HashSet;
use std::fmt::Write;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use datafusion::physical_expr::expressions as phys;
use datafusion::physical_expr::PhysicalExpr;

/// A file column (0-based field position) read as `ty`.
#[derive(Debug, Clone, PartialEq)]
pub struct Col {
    pub index: usize,
    pub ty: DataType,
}

/// Comparison operators S3 Select shares with DataFusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl Cmp {
    fn from_operator(op: Operator) -> Option<Cmp> {
        Some(match op {
            Operator::Eq => Cmp::Eq,
            Operator::NotEq => Cmp::NotEq,
            Operator::Lt => Cmp::Lt,
            Operator::LtEq => Cmp::LtEq,
            Operator::Gt => Cmp::Gt,
            Operator::GtEq => Cmp::GtEq,
            _ => return None,
        })
    }

    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    fn flip(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::LtEq => Cmp::GtEq,
            Cmp::Gt => Cmp::Lt,
            Cmp::GtEq => Cmp::LtEq,
            other => other,
        }
    }

    fn sql(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::NotEq => "<>",
            Cmp::Lt => "<",
            Cmp::LtEq => "<=",
            Cmp::Gt => ">",
            Cmp::GtEq => ">=",
        }
    }
}

/// A predicate S3 Select can evaluate with DataFusion's meaning.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    Compare(Col, Cmp, ScalarValue),
    Between {
        col: Col,
        low: ScalarValue,
        high: ScalarValue,
        negated: bool,
    },
    In {
        col: Col,
        list: Vec<ScalarValue>,
        negated: bool,
    },
    IsNull(Col, bool),
    Like {
        col: Col,
        pattern: String,
        escape: Option<char>,
        negated: bool,
    },
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
}

impl Pred {
    /// The conjunction of `preds`, arranged for a row-at-a-time store that stops at the first
    /// false conjunct: nested ANDs flattened, key lists first, and every range bound that a
    /// key list on the same column already implies dropped.
    ///
    /// A join's run-time filter arrives as `k >= min AND k <= max AND k IN (…)`, several per
    /// scan, most of their ranges spanning the whole key domain. In the order DataFusion
    /// gives them, the store would check a dozen guarded CASTs on every row before the one
    /// list that rejects nearly all of them.
    ///
    /// Key lists on one column are one list, their intersection: the join keys read before
    /// the statement and the same join's run-time filter are the same list twice, which a
    /// store would check twice on every row.
    ///
    /// The result is the same in SQL's three-valued logic: a bound dropped beside `k IN
    /// (…)` (a list without NULLs) is true whenever the list is, and NULL exactly when it
    /// is (k NULL); `k IN A AND k IN B` is `k IN A∩B` for lists without NULLs (both NULL
    /// when k is), kept apart when A∩B is empty, as `IN ()` is no SQL.
    pub fn conjunction(preds: Vec<Pred>) -> Pred {
        fn flatten(pred: Pred, into: &mut Vec<Pred>) {
            match pred {
                Pred::And(parts) => parts.into_iter().for_each(|p| flatten(p, into)),
                other => into.push(other),
            }
        }
        let mut parts = Vec::new();
        preds.into_iter().for_each(|p| flatten(p, &mut parts));
        let lists: Vec<(usize, ScalarValue, ScalarValue)> = parts
            .iter()
            .filter_map(|p| match p {
                Pred::In {
                    col,
                    list,
                    negated: false,
                } if !list.iter().any(ScalarValue::is_null) => {
                    let min = list
                        .iter()
                        .min_by(|a, b| a.partial_cmp(b).unwrap_or(Equal))?;
                    let max = list
                        .iter()
                        .max_by(|a, b| a.partial_cmp(b).unwrap_or(Equal))?;
                    Some((col.index, min.clone(), max.clone()))
                }
                _ => None,
            })
            .collect();
        let implied = |p: &Pred| match p {
            Pred::Compare(col, cmp, bound) => lists.iter().any(|(index, min, max)| {
                *index == col.index
                    && match cmp {
                        Cmp::GtEq => bound.partial_cmp(min).is_some_and(|o| o != Greater),
                        Cmp::LtEq => bound.partial_cmp(max).is_some_and(|o| o != Less),
                        _ => false,
                    }
            }),
            _ => false,
        };
        parts.retain(|p| !implied(p));
        intersect_lists(&mut parts);
        // Stable: the other conjuncts keep their order.
        parts.sort_by_key(|p| !matches!(p, Pred::In { negated: false, .. }));
        match parts.len() {
            1 => parts.pop().unwrap_or(Pred::And(Vec::new())),
            _ => Pred::And(parts),
        }
    }
}

/// Each non-negated, NULL-free `IN` list of `parts` joined with the first such list on its
/// column into their intersection, where that is not empty.
fn intersect_lists(parts: &mut Vec<Pred>) {
    let list_of = |p: &Pred| match p {
        Pred::In {
            col,
            list,
            negated: false,
        } if !list.iter().any(ScalarValue::is_null) => Some((col.index, list.clone())),
        _ => None,
    };
    let mut i = 0;
    while i < parts.len() {
        let Some((column, list)) = list_of(&parts[i]) else {
            i += 1;
            continue;
        };
        let values: HashSet<&ScalarValue> = list.iter().collect();
        let earlier = parts[..i].iter_mut().find_map(|p| match p {
            Pred::In {
                col,
                list: first,
                negated: false,
            } if col.index == column
                && !first.iter().any(ScalarValue::is_null)
                && first.iter().any(|v| values.contains(v)) =>
            {
                Some(first)
            }
            _ => None,
        });
        match earlier {
            Some(first) => {
                first.retain(|v| values.contains(v));
                parts.remove(i);
            }
            None => i += 1,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Logical expressions (static filters)

/// Lowers a filter DataFusion offers to the table. `None`: not expressible exactly.
pub fn from_logical(expr: &Expr, schema: &Schema) -> Option<Pred> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => Some(Pred::And(vec![
                from_logical(left, schema)?,
                from_logical(right, schema)?,
            ])),
            Operator::Or => Some(Pred::Or(vec![
                from_logical(left, schema)?,
                from_logical(right, schema)?,
            ])),
            op => {
                let cmp = Cmp::from_operator(*op)?;
                if let (Some(col), Some(value)) = (logical_col(left, schema), logical_lit(right)) {
                    compare(col, cmp, value)
                } else if let (Some(value), Some(col)) =
                    (logical_lit(left), logical_col(right, schema))
                {
                    compare(col, cmp.flip(), value)
                } else {
                    None
                }
            }
        },
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => between(
            logical_col(expr, schema)?,
            logical_lit(low)?,
            logical_lit(high)?,
            *negated,
        ),
        Expr::InList(list) => in_list(
            logical_col(&list.expr, schema)?,
            list.list.iter().map(logical_lit).collect::<Option<_>>()?,
            list.negated,
        ),
        Expr::IsNull(e) => Some(Pred::IsNull(logical_col(e, schema)?, true)),
        Expr::IsNotNull(e) => Some(Pred::IsNull(logical_col(e, schema)?, false)),
        Expr::Like(Like {
            negated,
            expr,
            pattern,
            escape_char,
            case_insensitive: false,
        }) => like(
            logical_col(expr, schema)?,
            logical_lit(pattern)?,
            *escape_char,
            *negated,
        ),
        Expr::Not(e) => Some(Pred::Not(Box::new(from_logical(e, schema)?))),
        _ => None,
    }
}

fn logical_col(expr: &Expr, schema: &Schema) -> Option<Col> {
    match expr {
        Expr::Column(c) => {
            let index = schema.index_of(&c.name).ok()?;
            Some(Col {
                index,
                ty: schema.field(index).data_type().clone(),
            })
        }
        Expr::Cast(cast) => widen(logical_col(&cast.expr, schema)?, cast.field.data_type()),
        _ => None,
    }
}

fn logical_lit(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(value, _) if !value.is_null() => Some(value.clone()),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Physical expressions (dynamic filters)

/// Lowers a filter pushed into the scan at run time, whose columns index the scan's output
/// (`output_to_file[i]` is the file column of output column `i`).
///
/// Dynamic filters only prune (the join that produced one still checks every row), so a
/// conjunction keeps the conjuncts that lower and drops the rest: a weaker filter is still a
/// correct one. `None` means nothing could be kept.
pub fn from_physical(
    expr: &Arc<dyn PhysicalExpr>,
    output_to_file: &[usize],
    schema: &Schema,
) -> Option<Pred> {
    if let Some(dynamic) = expr.downcast_ref::<phys::DynamicFilterPhysicalExpr>() {
        let current = dynamic.current().ok()?;
        return from_physical(&current, output_to_file, schema);
    }
    if let Some(binary) = expr.downcast_ref::<phys::BinaryExpr>() {
        let (left, right) = (binary.left(), binary.right());
        return match binary.op() {
            Operator::And => {
                let kept: Vec<Pred> = [left, right]
                    .into_iter()
                    .filter_map(|side| from_physical(side, output_to_file, schema))
                    .collect();
                match kept.len() {
                    0 => None,
                    1 => kept.into_iter().next(),
                    _ => Some(Pred::And(kept)),
                }
            }
            Operator::Or => Some(Pred::Or(vec![
                from_physical(left, output_to_file, schema)?,
                from_physical(right, output_to_file, schema)?,
            ])),
            op => {
                let cmp = Cmp::from_operator(*op)?;
                if let (Some(col), Some(value)) = (
                    physical_col(left, output_to_file, schema),
                    physical_lit(right),
                ) {
                    compare(col, cmp, value)
                } else if let (Some(value), Some(col)) = (
                    physical_lit(left),
                    physical_col(right, output_to_file, schema),
                ) {
                    compare(col, cmp.flip(), value)
                } else {
                    None
                }
            }
        };
    }
    if let Some(case) = expr.downcast_ref::<phys::CaseExpr>() {
        // A partitioned hash join routes each row to its partition's filter with
        // `CASE hash(key) % n WHEN i THEN filter_i … END`. S3 Select cannot hash like
        // DataFusion, but a row passes only if it passes some branch, so the OR of the
        // branches is a correct (weaker) filter.
        let branches = case
            .when_then_expr()
            .iter()
            .map(|(_, then)| then)
            .chain(case.else_expr());
        let mut kept = Vec::new();
        for branch in branches {
            match boolean_literal(branch) {
                Some(false) => continue,
                Some(true) => return None,
                None => kept.push(from_physical(branch, output_to_file, schema)?),
            }
        }
        return match kept.len() {
            0 => None,
            1 => kept.into_iter().next(),
            _ => Some(Pred::Or(kept)),
        };
    }
    if let Some(list) = expr.downcast_ref::<phys::InListExpr>() {
        // A join's key list holds a NULL when a build row's key is NULL (a nullable foreign
        // key, e.g. q85's wr_refunded_cdemo_sk). `k IN (…, NULL)` is NULL, never true, where
        // `k` matches no other member, so as a filter it passes exactly the rows `k IN (…)`
        // passes. (Under NOT it would pass none; such a list is not lowered.)
        let is_null = |e: &Arc<dyn PhysicalExpr>| {
            e.downcast_ref::<phys::Literal>()
                .is_some_and(|l| l.value().is_null())
        };
        let values: Vec<ScalarValue> = list
            .list()
            .iter()
            .filter(|e| list.negated() || !is_null(e))
            .map(physical_lit)
            .collect::<Option<_>>()?;
        return in_list(
            physical_col(list.expr(), output_to_file, schema)?,
            values,
            list.negated(),
        );
    }
    None
}

fn boolean_literal(expr: &Arc<dyn PhysicalExpr>) -> Option<bool> {
    match expr.downcast_ref::<phys::Literal>()?.value() {
        ScalarValue::Boolean(Some(b)) => Some(*b),
        _ => None,
    }
}

fn physical_col(
    expr: &Arc<dyn PhysicalExpr>,
    output_to_file: &[usize],
    schema: &Schema,
) -> Option<Col> {
    if let Some(column) = expr.downcast_ref::<phys::Column>() {
        let index = *output_to_file.get(column.index())?;
        return Some(Col {
            index,
            ty: schema.field(index).data_type().clone(),
        });
    }
    if let Some(cast) = expr.downcast_ref::<phys::CastExpr>() {
        return widen(
            physical_col(cast.expr(), output_to_file, schema)?,
            cast.cast_type(),
        );
    }
    None
}

fn physical_lit(expr: &Arc<dyn PhysicalExpr>) -> Option<ScalarValue> {
    let literal = expr.downcast_ref::<phys::Literal>()?;
    let value = literal.value();
    (!value.is_null()).then(|| value.clone())
}

// ---------------------------------------------------------------------------------------
// Building predicates: only where the column and literal types agree

/// A cast of a column that changes no value: an integer to a wider integer or to a decimal
/// that holds it, a decimal to a decimal with at least its scale and integer digits.
fn widen(col: Col, to: &DataType) -> Option<Col> {
    let fits = match (&col.ty, to) {
        (DataType::Int32, DataType::Int64) => true,
        (DataType::Int32, DataType::Decimal128(p, s)) => (*p as i16 - *s as i16) >= 10,
        (DataType::Int64, DataType::Decimal128(p, s)) => (*p as i16 - *s as i16) >= 19,
        (DataType::Decimal128(p1, s1), DataType::Decimal128(p2, s2)) => {
            s2 >= s1 && (*p2 as i16 - *s2 as i16) >= (*p1 as i16 - *s1 as i16)
        }
        (a, b) => a == b,
    };
    fits.then(|| Col {
        index: col.index,
        ty: to.clone(),
    })
}

#[derive(PartialEq)]
enum Family {
    Integer,
    Decimal,
    Date,
    Text,
}

fn column_family(ty: &DataType) -> Option<Family> {
    Some(match ty {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Family::Integer,
        DataType::Decimal128(..) => Family::Decimal,
        DataType::Date32 => Family::Date,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Family::Text,
        _ => return None,
    })
}

/// Whether a literal can be compared with a column read as `ty` with numeric or string
/// semantics that match DataFusion's.
fn literal_fits(ty: &DataType, value: &ScalarValue) -> bool {
    let family = column_family(ty);
    let literal = column_family(&value.data_type());
    match (family, literal) {
        (Some(Family::Decimal), Some(Family::Integer | Family::Decimal)) => true,
        (Some(Family::Integer), Some(Family::Integer)) => true,
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn compare(col: Col, cmp: Cmp, value: ScalarValue) -> Option<Pred> {
    literal_fits(&col.ty, &value).then_some(Pred::Compare(col, cmp, value))
}

fn between(col: Col, low: ScalarValue, high: ScalarValue, negated: bool) -> Option<Pred> {
    (literal_fits(&col.ty, &low) && literal_fits(&col.ty, &high)).then_some(Pred::Between {
        col,
        low,
        high,
        negated,
    })
}

/// A list predicate, its values sorted and each named once: a join's run-time key list
/// holds a value per build row (q2's date_dim select listed each week 7 times).
fn in_list(col: Col, mut list: Vec<ScalarValue>, negated: bool) -> Option<Pred> {
    if list.is_empty() || !list.iter().all(|v| literal_fits(&col.ty, v)) {
        return None;
    }
    list.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    list.dedup();
    Some(Pred::In { col, list, negated })
}

fn like(col: Col, pattern: ScalarValue, escape: Option<char>, negated: bool) -> Option<Pred> {
    if column_family(&col.ty) != Some(Family::Text) {
        return None;
    }
    let pattern = text_value(&pattern)?.to_string();
    Some(Pred::Like {
        col,
        pattern,
        escape,
        negated,
    })
}

fn text_value(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Rendering

/// `s._N` for a 0-based file column.
pub fn field(index: usize) -> String {
    format!("s._{}", index + 1)
}

/// Values in one IN list at most; a longer list is asked as several, joined by OR (by AND
/// under NOT). Ceph RGW 18.2 aborts — the whole radosgw process, every client's requests
/// with it — on a list of 256 values or more (`scripts/rgw-crash.sh`).
const MAX_LIST_ITEMS: usize = 255;

/// How the store's SQL names a table column.
#[derive(Debug, Clone, Copy)]
pub enum Naming<'a> {
    /// dsdgen text: `s._N`, every value a string to be cast (Trino's form). An empty field
    /// is the empty string, or NULL for a store that reads it so (Ceph RGW; see
    /// [`crate::probe`]), which changes how IS NULL is asked.
    Positional { empty_is_null: bool },
    /// Parquet: `s."name"`, values already typed and NULL where DataFusion sees NULL.
    Named(&'a Schema),
}

impl Naming<'_> {
    /// The column as the SELECT list and conditions name it.
    pub fn column(self, index: usize) -> Option<String> {
        match self {
            Naming::Positional { .. } => Some(field(index)),
            Naming::Named(schema) => {
                let name = schema.fields().get(index)?.name();
                (!name.contains('"')).then(|| format!("s.\"{name}\""))
            }
        }
    }
}

/// The column read with DataFusion's meaning: empty is NULL, then cast to its type.
fn guarded(col: &Col, naming: Naming<'_>) -> Option<String> {
    if let Naming::Named(_) = naming {
        // Typed already; only the types rendered below are pushed down either way.
        return match &col.ty {
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Decimal128(..)
            | DataType::Date32
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View => naming.column(col.index),
            _ => None,
        };
    }
    typed_field(col.index, &col.ty)
}

/// Text field `index` read as a value of `ty`, as DataFusion reads it: empty is NULL, then
/// cast (`case s._N when '' then null else CAST(s._N AS INT) end`). The conditions compare
/// it; a scan answered in Arrow selects it, so that the store sends typed columns. `None`
/// for a type with no S3 Select form.
pub fn typed_field(index: usize, ty: &DataType) -> Option<String> {
    let f = field(index);
    let cast = match ty {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            format!("CAST({f} AS INT)")
        }
        DataType::Decimal128(p, s) => format!("CAST({f} AS DECIMAL({p},{s}))"),
        DataType::Date32 => format!("CAST({f} AS TIMESTAMP)"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => f.clone(),
        _ => return None,
    };
    Some(format!("case {f} when '' then null else {cast} end"))
}

fn literal(value: &ScalarValue) -> Option<String> {
    Some(match value {
        ScalarValue::Int8(Some(v)) => v.to_string(),
        ScalarValue::Int16(Some(v)) => v.to_string(),
        ScalarValue::Int32(Some(v)) => v.to_string(),
        ScalarValue::Int64(Some(v)) => v.to_string(),
        ScalarValue::Decimal128(Some(v), _, scale) => decimal_text(*v, *scale),
        ScalarValue::Date32(Some(days)) => {
            let date = chrono_date(*days)?;
            format!("`{date}`")
        }
        other => {
            let text = text_value(other)?;
            format!("'{}'", text.replace('\'', "''"))
        }
    })
}

fn decimal_text(value: i128, scale: i8) -> String {
    if scale <= 0 {
        let zeros = "0".repeat(scale.unsigned_abs() as usize);
        return if value == 0 {
            "0".into()
        } else {
            format!("{value}{zeros}")
        };
    }
    let scale = scale as usize;
    let digits = value.unsigned_abs().to_string();
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = digits.split_at(digits.len() - scale);
    let sign = if value < 0 { "-" } else { "" };
    format!("{sign}{int}.{frac}")
}

/// `YYYY-MM-DD` for days since 1970-01-01 (proleptic Gregorian, as Arrow's Date32).
fn chrono_date(days: i32) -> Option<String> {
    // Civil-from-days (Howard Hinnant's algorithm): exact for every Date32 value.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (0..=9999)
        .contains(&year)
        .then(|| format!("{year:04}-{month:02}-{day:02}"))
}

/// Whether a string literal lets `s._N` be compared without the empty-is-NULL guard.
fn unguarded_text(col: &Col, values: &[ScalarValue]) -> bool {
    column_family(&col.ty) == Some(Family::Text)
        && values
            .iter()
            .all(|v| text_value(v).is_some_and(|s| !s.is_empty()))
}

impl Pred {
    /// The predicate as an S3 Select WHERE condition (parenthesised), or `None` if some
    /// part cannot be rendered.
    pub fn to_sql(&self) -> Option<String> {
        self.to_sql_in(Naming::Positional {
            empty_is_null: false,
        })
    }

    /// The same for a store that names columns as `naming` says.
    pub fn to_sql_in(&self, naming: Naming<'_>) -> Option<String> {
        let mut out = String::new();
        self.render(&mut out, true, naming)?;
        Some(out)
    }

    /// `positive` is false under an odd number of NOTs, where the unguarded string shortcut
    /// would turn an empty field's `false` into a `true` (DataFusion's NULL stays NULL).
    fn render(&self, out: &mut String, positive: bool, naming: Naming<'_>) -> Option<()> {
        let positional = matches!(naming, Naming::Positional { .. });
        match self {
            Pred::Compare(col, cmp, value) => {
                let lhs = if positional
                    && positive
                    && *cmp == Cmp::Eq
                    && unguarded_text(col, std::slice::from_ref(value))
                {
                    field(col.index)
                } else {
                    guarded(col, naming)?
                };
                write!(out, "({lhs} {} {})", cmp.sql(), literal(value)?).ok()
            }
            Pred::Between {
                col,
                low,
                high,
                negated,
            } => {
                let c = guarded(col, naming)?;
                let not = if *negated { "NOT " } else { "" };
                write!(
                    out,
                    "({not}({c} >= {} AND {c} <= {}))",
                    literal(low)?,
                    literal(high)?
                )
                .ok()
            }
            Pred::In { col, list, negated } => {
                let lhs = if positional && positive && !negated && unguarded_text(col, list) {
                    field(col.index)
                } else {
                    guarded(col, naming)?
                };
                let items = list.iter().map(literal).collect::<Option<Vec<_>>>()?;
                let not = if *negated { "NOT " } else { "" };
                let lists: Vec<String> = items
                    .chunks(MAX_LIST_ITEMS)
                    .map(|chunk| format!("{lhs} {not}IN ({})", chunk.join(", ")))
                    .collect();
                let join = if *negated { ") AND (" } else { ") OR (" };
                match lists.as_slice() {
                    [one] => write!(out, "({one})").ok(),
                    many => write!(out, "(({}))", many.join(join)).ok(),
                }
            }
            Pred::IsNull(col, true)
                if matches!(
                    naming,
                    Naming::Positional {
                        empty_is_null: false
                    }
                ) =>
            {
                write!(out, "({} = '')", field(col.index)).ok()
            }
            Pred::IsNull(col, false) if positional => {
                write!(out, "({} <> '')", field(col.index)).ok()
            }
            Pred::IsNull(col, null) => {
                let not = if *null { "" } else { "NOT " };
                write!(out, "({} IS {not}NULL)", naming.column(col.index)?).ok()
            }
            Pred::Like {
                col,
                pattern,
                escape,
                negated,
            } => {
                let not = if *negated { "NOT " } else { "" };
                write!(
                    out,
                    "({} {not}LIKE '{}'",
                    guarded(col, naming)?,
                    pattern.replace('\'', "''")
                )
                .ok()?;
                if let Some(e) = escape {
                    let e = e.to_string().replace('\'', "''");
                    write!(out, " ESCAPE '{e}'").ok()?;
                }
                out.push(')');
                Some(())
            }
            Pred::And(parts) | Pred::Or(parts) => {
                let joiner = if matches!(self, Pred::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                out.push('(');
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        out.push_str(joiner);
                    }
                    part.render(out, positive, naming)?;
                }
                out.push(')');
                Some(())
            }
            Pred::Not(inner) => {
                out.push_str("(NOT ");
                inner.render(out, !positive, naming)?;
                out.push(')');
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("price", DataType::Decimal128(7, 2), true),
            Field::new("day", DataType::Date32, true),
            Field::new("name", DataType::Utf8, true),
        ])
    }

    fn sql(expr: Expr) -> Option<String> {
        from_logical(&expr, &schema())?.to_sql()
    }

    fn parquet_sql(expr: Expr) -> Option<String> {
        let schema = schema();
        from_logical(&expr, &schema)?.to_sql_in(Naming::Named(&schema))
    }

    fn k() -> Col {
        Col {
            index: 0,
            ty: DataType::Int32,
        }
    }

    fn ge(v: i32) -> Pred {
        Pred::Compare(k(), Cmp::GtEq, ScalarValue::Int32(Some(v)))
    }

    fn le(v: i32) -> Pred {
        Pred::Compare(k(), Cmp::LtEq, ScalarValue::Int32(Some(v)))
    }

    fn list(values: &[i32]) -> Pred {
        Pred::In {
            col: k(),
            list: values
                .iter()
                .map(|&v| ScalarValue::Int32(Some(v)))
                .collect(),
            negated: false,
        }
    }

    #[test]
    fn key_lists_on_one_column_are_their_intersection() {
        assert_eq!(
            Pred::conjunction(vec![list(&[3, 5, 9]), ge(1), list(&[9, 5, 3])]),
            list(&[3, 5, 9])
        );
        assert_eq!(
            Pred::conjunction(vec![list(&[3, 5, 9]), list(&[5, 7])]),
            list(&[5])
        );
        // Lists with nothing in common stay apart (no `IN ()`), as does a negated one.
        let apart = Pred::conjunction(vec![list(&[3]), list(&[5])]);
        assert_eq!(apart, Pred::And(vec![list(&[3]), list(&[5])]));
        let not_in = Pred::In {
            col: k(),
            list: vec![ScalarValue::Int32(Some(3))],
            negated: true,
        };
        assert_eq!(
            Pred::conjunction(vec![list(&[3]), not_in.clone()]),
            Pred::And(vec![list(&[3]), not_in])
        );
    }

    /// A join filter's shape: its range is implied by its list and goes; the list comes
    /// first; a bound that narrows more than the list does stays, as do other columns'.
    #[test]
    fn conjunctions_put_key_lists_first_and_drop_the_bounds_they_imply() {
        let price = Pred::IsNull(
            Col {
                index: 1,
                ty: DataType::Decimal128(7, 2),
            },
            true,
        );
        let joined = Pred::conjunction(vec![
            price.clone(),
            Pred::And(vec![Pred::And(vec![ge(3), le(9)]), list(&[3, 5, 9])]),
            ge(4),
        ]);
        assert_eq!(joined, Pred::And(vec![list(&[3, 5, 9]), price, ge(4)]));
        // Nothing to simplify: the same conjuncts.
        assert_eq!(
            Pred::conjunction(vec![ge(1), le(2)]),
            Pred::And(vec![ge(1), le(2)])
        );
        assert_eq!(Pred::conjunction(vec![ge(1), list(&[1])]), list(&[1]));
        // A negated list implies nothing.
        let not_in = Pred::In {
            col: k(),
            list: vec![ScalarValue::Int32(Some(5))],
            negated: true,
        };
        assert_eq!(
            Pred::conjunction(vec![ge(5), not_in.clone()]),
            Pred::And(vec![ge(5), not_in])
        );
    }

    #[test]
    fn parquet_columns_are_named_and_typed() {
        assert_eq!(
            parquet_sql(col("k").between(lit(0), lit(5))).as_deref(),
            Some("((s.\"k\" >= 0 AND s.\"k\" <= 5))")
        );
        assert_eq!(
            parquet_sql(col("name").eq(lit("x")).or(col("name").is_null())).as_deref(),
            Some("((s.\"name\" = 'x') OR (s.\"name\" IS NULL))")
        );
        assert_eq!(
            parquet_sql(col("k").is_not_null()).as_deref(),
            Some("(s.\"k\" IS NOT NULL)")
        );
    }

    #[test]
    fn integers_use_trinos_guarded_cast() {
        assert_eq!(
            sql(col("k").between(lit(0), lit(5))).unwrap(),
            "((case s._1 when '' then null else CAST(s._1 AS INT) end >= 0 AND \
             case s._1 when '' then null else CAST(s._1 AS INT) end <= 5))"
        );
        assert_eq!(
            sql(lit(3).lt(col("k"))).unwrap(),
            "(case s._1 when '' then null else CAST(s._1 AS INT) end > 3)"
        );
    }

    #[test]
    fn decimals_dates_and_strings() {
        let price = ScalarValue::Decimal128(Some(-5), 7, 2);
        assert_eq!(
            sql(col("price").gt(lit(price))).unwrap(),
            "(case s._2 when '' then null else CAST(s._2 AS DECIMAL(7,2)) end > -0.05)"
        );
        let day = ScalarValue::Date32(Some(10_644)); // 1999-02-22
        assert_eq!(
            sql(col("day").eq(lit(day))).unwrap(),
            "(case s._3 when '' then null else CAST(s._3 AS TIMESTAMP) end = `1999-02-22`)"
        );
        assert_eq!(
            sql(col("name").eq(lit("it's"))).unwrap(),
            "(s._4 = 'it''s')"
        );
        // <> must not keep empty (NULL) fields, so it is guarded.
        assert_eq!(
            sql(col("name").not_eq(lit("x"))).unwrap(),
            "(case s._4 when '' then null else s._4 end <> 'x')"
        );
        assert_eq!(
            sql(col("name").in_list(vec![lit("a"), lit("b")], false)).unwrap(),
            "(s._4 IN ('a', 'b'))"
        );
        assert_eq!(sql(col("name").is_null()).unwrap(), "(s._4 = '')");
        assert_eq!(
            sql(col("name").like(lit("a%"))).unwrap(),
            "(case s._4 when '' then null else s._4 end LIKE 'a%')"
        );
    }

    #[test]
    fn a_store_that_reads_empty_fields_as_null_is_asked_is_null() {
        let ceph = |expr: Expr| {
            from_logical(&expr, &schema())?.to_sql_in(Naming::Positional {
                empty_is_null: true,
            })
        };
        assert_eq!(ceph(col("name").is_null()).unwrap(), "(s._4 IS NULL)");
        // `<> ''` keeps no empty field either way: '' <> '' is false, NULL <> '' is NULL.
        assert_eq!(ceph(col("name").is_not_null()).unwrap(), "(s._4 <> '')");
    }

    #[test]
    fn key_lists_name_each_value_once_and_in_lists_a_store_can_parse() {
        let keys = |values: Vec<i32>| values.into_iter().map(lit).collect::<Vec<_>>();
        assert_eq!(
            sql(col("k").in_list(keys(vec![9, 5, 9, 5, 7]), false)).unwrap(),
            "(case s._1 when '' then null else CAST(s._1 AS INT) end IN (5, 7, 9))"
        );
        let guard = "case s._1 when '' then null else CAST(s._1 AS INT) end";
        let many = sql(col("k").in_list(keys((0..600).collect()), false)).unwrap();
        let list = |range: std::ops::Range<i32>| {
            let items: Vec<String> = range.map(|v| v.to_string()).collect();
            format!("{guard} IN ({})", items.join(", "))
        };
        assert_eq!(
            many,
            format!(
                "(({}) OR ({}) OR ({}))",
                list(0..255),
                list(255..510),
                list(510..600)
            )
        );
        let none = sql(col("k").in_list(keys((0..300).collect()), true)).unwrap();
        assert!(
            none.starts_with(&format!("(({guard} NOT IN (0, 1,")),
            "{none}"
        );
        assert!(none.contains(") AND ("), "{none}");
    }

    #[test]
    fn what_does_not_translate_stays_with_datafusion() {
        // A string literal against an integer column, a column against a column, a function.
        assert!(sql(col("k").eq(lit("5"))).is_none());
        assert!(sql(col("k").eq(col("price"))).is_none());
        assert!(sql(datafusion::functions::expr_fn::upper(col("name")).eq(lit("A"))).is_none());
        // Under NOT, an empty field must stay NULL, so the string shortcut is not taken.
        assert_eq!(
            sql(!col("name").eq(lit("x"))).unwrap(),
            "(NOT (case s._4 when '' then null else s._4 end = 'x'))"
        );
        // An OR is pushed only when both sides are.
        assert!(sql(col("k").eq(lit(1)).or(col("k").eq(col("k")))).is_none());
    }

    #[test]
    fn join_filters_keep_what_translates() {
        use datafusion::physical_expr::expressions::{
            col as pcol, lit as plit, BinaryExpr as PBin, CaseExpr, InListExpr,
        };
        let schema = schema();
        // The scan outputs (name, k): output column 1 is file column 0.
        let output = Schema::new(vec![schema.field(3).clone(), schema.field(0).clone()]);
        let k = pcol("k", &output).unwrap();
        let range: Arc<dyn PhysicalExpr> = Arc::new(PBin::new(
            Arc::new(PBin::new(Arc::clone(&k), Operator::GtEq, plit(5))),
            Operator::And,
            Arc::new(PBin::new(Arc::clone(&k), Operator::LtEq, plit(9))),
        ));
        let list: Arc<dyn PhysicalExpr> = Arc::new(
            InListExpr::try_new(Arc::clone(&k), vec![plit(5), plit(9)], false, &output).unwrap(),
        );
        // Something S3 Select cannot evaluate (a column compared with a column) is dropped
        // from a conjunction, not the whole filter.
        let opaque: Arc<dyn PhysicalExpr> =
            Arc::new(PBin::new(Arc::clone(&k), Operator::Eq, Arc::clone(&k)));
        let all: Arc<dyn PhysicalExpr> = Arc::new(PBin::new(
            Arc::new(PBin::new(range, Operator::And, opaque)),
            Operator::And,
            Arc::clone(&list),
        ));
        let guard = "case s._1 when '' then null else CAST(s._1 AS INT) end";
        assert_eq!(
            from_physical(&all, &[3, 0], &schema)
                .unwrap()
                .to_sql()
                .unwrap(),
            format!("((({guard} >= 5) AND ({guard} <= 9)) AND ({guard} IN (5, 9)))")
        );
        // A partitioned join's CASE becomes the OR of its branches; a `false` branch
        // (an empty partition) adds nothing, a `true` one means no filter at all.
        let case = |other: Arc<dyn PhysicalExpr>| -> Arc<dyn PhysicalExpr> {
            Arc::new(
                CaseExpr::try_new(
                    Some(Arc::clone(&k)),
                    vec![(plit(0), Arc::clone(&list)), (plit(1), other)],
                    Some(plit(false)),
                )
                .unwrap(),
            )
        };
        // A NULL key in the list (a build row with a NULL foreign key) lets no row through:
        // it is left out rather than the whole list.
        let with_null: Arc<dyn PhysicalExpr> = Arc::new(
            InListExpr::try_new(
                Arc::clone(&k),
                vec![plit(9), plit(ScalarValue::Int32(None)), plit(5)],
                false,
                &output,
            )
            .unwrap(),
        );
        assert_eq!(
            from_physical(&with_null, &[3, 0], &schema)
                .unwrap()
                .to_sql()
                .unwrap(),
            format!("({guard} IN (5, 9))")
        );
        let two = case(Arc::new(PBin::new(Arc::clone(&k), Operator::Eq, plit(7))));
        assert_eq!(
            from_physical(&two, &[3, 0], &schema)
                .unwrap()
                .to_sql()
                .unwrap(),
            format!("(({guard} IN (5, 9)) OR ({guard} = 7))")
        );
        assert!(from_physical(&case(plit(true)), &[3, 0], &schema).is_none());
    }

    #[test]
    fn decimal_and_date_literals_render_exactly() {
        assert_eq!(decimal_text(5, 2), "0.05");
        assert_eq!(decimal_text(-12345, 2), "-123.45");
        assert_eq!(decimal_text(7, 0), "7");
        assert_eq!(decimal_text(7, -2), "700");
        assert_eq!(chrono_date(0).unwrap(), "1970-01-01");
        assert_eq!(chrono_date(-1).unwrap(), "1969-12-31");
        assert_eq!(chrono_date(11_016).unwrap(), "2000-02-29");
    }
}
