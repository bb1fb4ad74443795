//! Integer `IN` lists evaluated as the gateway evaluates them: by Sift's [`IntSet`], a
//! bitmap over the list's span where it is dense, one bit test per row.
//!
//! In the run-time filter modes a scan carries its joins' key lists (`cluster::keys`):
//! hundreds of `d_date_sk` or `hd_demo_sk` values. When auto mode fetches such a scan the
//! client applies them to every fetched row, and DataFusion's `InListExpr` looks each row up
//! in a hash set — over a `store_sales` scan at SF 1 (2.9 M rows) that took longer than the
//! join it spared. [`with_key_sets`] puts a [`KeySet`] in place of each integer list of a
//! client filter. Fetch mode keeps DataFusion's own evaluation: it is the reference the
//! other modes' rows are checked against.
//!
//! Only lists whose members are all non-NULL integer literals are replaced; their SQL
//! semantics are then two-valued per row: NULL for a NULL value, else membership (negated
//! for `NOT IN`).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, BooleanArray};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::datatypes::{DataType, Int32Type, Int64Type, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::expressions::{InListExpr, Literal};
use datafusion::physical_expr::PhysicalExpr;
use sift_engine::IntSet;

/// `expr` with each integer `IN` list of non-NULL literals evaluated by a [`KeySet`].
pub(super) fn with_key_sets(expr: Arc<dyn PhysicalExpr>) -> DfResult<Arc<dyn PhysicalExpr>> {
    expr.transform_up(|e| {
        let set = e.downcast_ref::<InListExpr>().and_then(KeySet::of);
        Ok(match set {
            Some(set) => Transformed::yes(Arc::new(set) as Arc<dyn PhysicalExpr>),
            None => Transformed::no(e),
        })
    })
    .map(|t| t.data)
}

/// `value [NOT] IN (…)` over an Int32 or Int64 value, the list an [`IntSet`].
#[derive(Debug)]
struct KeySet {
    value: Arc<dyn PhysicalExpr>,
    set: IntSet,
    negated: bool,
}

impl KeySet {
    /// `list` as a key set, when its members are all non-NULL integer literals.
    fn of(list: &InListExpr) -> Option<KeySet> {
        let values = list
            .list()
            .iter()
            .map(|member| match member.downcast_ref::<Literal>()?.value() {
                ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
                ScalarValue::Int64(Some(v)) => Some(*v),
                _ => None,
            })
            .collect::<Option<Vec<i64>>>()?;
        Some(KeySet {
            value: Arc::clone(list.expr()),
            set: IntSet::new(values),
            negated: list.negated(),
        })
    }
}

impl PhysicalExpr for KeySet {
    fn data_type(&self, _input_schema: &Schema) -> DfResult<DataType> {
        Ok(DataType::Boolean)
    }

    fn nullable(&self, input_schema: &Schema) -> DfResult<bool> {
        self.value.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> DfResult<ColumnarValue> {
        let array = self.value.evaluate(batch)?.into_array(batch.num_rows())?;
        let (set, negated) = (&self.set, self.negated);
        let n = array.len();
        let holds = match array.data_type() {
            DataType::Int32 => {
                let v = array.as_primitive::<Int32Type>().values();
                BooleanBuffer::collect_bool(n, |i| set.contains(i64::from(v[i])) != negated)
            }
            DataType::Int64 => {
                let v = array.as_primitive::<Int64Type>().values();
                BooleanBuffer::collect_bool(n, |i| set.contains(v[i]) != negated)
            }
            other => {
                return Err(DataFusionError::Internal(format!(
                    "an integer key list over a {other} value"
                )))
            }
        };
        let truth = BooleanArray::new(holds, array.nulls().cloned());
        Ok(ColumnarValue::Array(Arc::new(truth)))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.value]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> DfResult<Arc<dyn PhysicalExpr>> {
        let [value] = <[_; 1]>::try_from(children).map_err(|c| {
            DataFusionError::Internal(format!("a key list has one child, given {}", c.len()))
        })?;
        Ok(Arc::new(KeySet {
            value,
            set: self.set.clone(),
            negated: self.negated,
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt_sql(f)?;
        f.write_str(if self.negated { " NOT IN (" } else { " IN (" })?;
        for (i, v) in self.set.values().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let not = if self.negated { " NOT" } else { "" };
        let n = self.set.values().len();
        write!(f, "{}{not} IN <{n} keys>", self.value)
    }
}

impl PartialEq for KeySet {
    fn eq(&self, other: &Self) -> bool {
        self.value.as_ref() == other.value.as_ref()
            && self.negated == other.negated
            && self.set == other.set
    }
}

impl Eq for KeySet {}

impl Hash for KeySet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.value.hash(state);
        self.negated.hash(state);
        self.set.hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::physical_expr::expressions::{col, in_list, lit};
    use proptest::prelude::*;

    /// `IN` over column `k` of `schema`, through DataFusion and through [`with_key_sets`].
    fn both(
        schema: &Schema,
        list: Vec<ScalarValue>,
        negated: bool,
    ) -> (Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>) {
        let k = col("k", schema).unwrap();
        let list = list.into_iter().map(lit).collect();
        let datafusion = in_list(k, list, &negated, schema).unwrap();
        let ours = with_key_sets(Arc::clone(&datafusion)).unwrap();
        (datafusion, ours)
    }

    fn truth(expr: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> BooleanArray {
        let out = expr.evaluate(batch).unwrap();
        out.into_array(batch.num_rows())
            .unwrap()
            .as_boolean()
            .clone()
    }

    proptest! {
        /// Over Int32 and Int64 columns with NULLs, with and without NOT, a key set gives
        /// DataFusion's `IN` truth row for row, dense lists (a bitmap) and sparse ones
        /// (a binary search) alike.
        #[test]
        fn key_sets_agree_with_datafusion_in_lists(
            rows in prop::collection::vec(prop::option::of(-50i64..2_000), 0..300),
            members in prop::collection::vec(-60i64..2_100, 1..40),
            far in prop::option::of(Just(1i64 << 40)),
            negated: bool,
            wide: bool,
        ) {
            let (field, array): (_, ArrayRef) = match wide {
                true => (DataType::Int64, Arc::new(Int64Array::from(rows.clone()))),
                false => {
                    let narrow = rows.iter().map(|r| r.map(|v| v as i32));
                    (DataType::Int32, Arc::new(Int32Array::from_iter(narrow)))
                }
            };
            let schema = Schema::new(vec![Field::new("k", field, true)]);
            let batch = RecordBatch::try_new(Arc::new(schema.clone()), vec![array]).unwrap();
            // A member 2^40 away makes an Int64 set sparse (no bitmap).
            let list = members
                .iter()
                .copied()
                .chain(far.filter(|_| wide))
                .map(|v| match wide {
                    true => ScalarValue::Int64(Some(v)),
                    false => ScalarValue::Int32(Some(v as i32)),
                })
                .collect();
            let (datafusion, ours) = both(&schema, list, negated);
            prop_assert!(ours.downcast_ref::<KeySet>().is_some());
            prop_assert_eq!(truth(&ours, &batch), truth(&datafusion, &batch));
        }
    }

    #[test]
    fn only_lists_of_integer_literals_without_null_become_key_sets() {
        let schema = Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let with_null = vec![ScalarValue::Int32(Some(1)), ScalarValue::Int32(None)];
        let (_, ours) = both(&schema, with_null, false);
        assert!(ours.downcast_ref::<InListExpr>().is_some(), "{ours}");

        let s = col("s", &schema).unwrap();
        let strings = in_list(s, vec![lit("a"), lit("b")], &false, &schema).unwrap();
        let ours = with_key_sets(strings).unwrap();
        assert!(ours.downcast_ref::<InListExpr>().is_some(), "{ours}");

        let keys = vec![ScalarValue::Int32(Some(7)), ScalarValue::Int32(Some(3))];
        let (_, ours) = both(&schema, keys, true);
        let set = ours.downcast_ref::<KeySet>().expect("a key set");
        assert_eq!(set.to_string(), "k@0 NOT IN <2 keys>");
    }
}
