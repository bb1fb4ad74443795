//! A scan's filters: lowered to S3 Select's SQL once, at planning; applied by the store, or
//! by the client when the scan is fetched; joined at run time by the hash joins' dynamic
//! filters (dynamic mode), which a fetched scan applies in their cheap form
//! ([`RunTimeFilter`]).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::Session;
use datafusion::common::cast::as_boolean_array;
use datafusion::common::{DFSchema, DataFusionError, Result as DfResult};
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    lit, BinaryExpr, CaseExpr, DynamicFilterPhysicalExpr, InListExpr, IsNotNullExpr, IsNullExpr,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::{
    snapshot_generation, snapshot_physical_expr,
};

use crate::layout::Format;
use crate::probe::SelectBehaviour;
use crate::pushdown::{self, Naming, Pred};
use crate::scan::key_set::with_key_sets;
use crate::scan::request::Results;

/// How the store's SQL names the columns of a table stored in `format`.
pub(super) fn naming(format: Format, schema: &Schema, behaviour: SelectBehaviour) -> Naming<'_> {
    match format {
        Format::Csv | Format::CsvGzip => Naming::Positional {
            empty_is_null: behaviour.empty_is_null,
        },
        Format::Parquet => Naming::Named(schema),
    }
}

/// `expr` as a predicate the store's SQL expresses exactly, or `None` when some part of it
/// has no exact S3 Select form (then DataFusion keeps it).
pub(super) fn lower(expr: &Expr, schema: &Schema, naming: Naming<'_>) -> Option<Pred> {
    let pred = pushdown::from_logical(expr, schema)?;
    pred.to_sql_in(naming).map(|_| pred)
}

/// The filters of one scan.
#[derive(Debug, Clone)]
pub(super) struct ScanFilters {
    /// What the scan took at planning, lowered: the store applies it, unless the scan is
    /// fetched (then `client` does).
    pub(super) planned: Option<Pred>,
    /// A fetched scan's filters, applied by the client.
    pub(super) client: Option<ClientFilter>,
    /// The hash joins' filters (dynamic mode), known once their build sides are done. They
    /// only prune: the join still checks every row.
    pub(super) dynamic: Vec<Arc<dyn PhysicalExpr>>,
}

/// What a select statement is made of, besides its WHERE clause.
#[derive(Debug, Clone)]
pub(super) struct Statement {
    /// The SELECT list: the columns as they are, or cast to typed columns for Arrow
    /// answers.
    pub(super) columns: String,
    /// How the answers are asked for.
    pub(super) results: Results,
    /// The table columns the scan outputs (the dynamic filters name these, in this order).
    pub(super) projection: Vec<usize>,
    pub(super) schema: SchemaRef,
    pub(super) format: Format,
    pub(super) behaviour: SelectBehaviour,
}

impl Statement {
    /// `SELECT … FROM S3Object s`, with `WHERE where_clause` when there is one.
    pub(super) fn sql(&self, where_clause: Option<&str>) -> String {
        match where_clause {
            Some(w) => format!("SELECT {} FROM S3Object s WHERE {w}", self.columns),
            None => format!("SELECT {} FROM S3Object s", self.columns),
        }
    }
}

impl ScanFilters {
    /// The statement every request of the scan sends, once the dynamic filters are final:
    /// the planned filter and as many of the dynamic ones, in their order, as keep it within
    /// what the store takes ([`SelectBehaviour::takes`]). A dynamic filter left out (or one
    /// with no S3 Select form) costs bytes, not rows; the planned filter is always sent (the
    /// table planned no more of it than the store takes, `TableDef::fit`).
    pub(super) async fn statement(self, statement: Statement) -> DfResult<String> {
        let naming = naming(statement.format, &statement.schema, statement.behaviour);
        let mut dynamic_preds = Vec::new();
        for expr in self.dynamic {
            if let Some(dynamic) = expr.downcast_ref::<DynamicFilterPhysicalExpr>() {
                // The join completes its filter when its build side is done, which is before
                // it polls this (probe) side; the timeout only guards against a join that
                // never completes it, in which case the scan runs without it.
                let _ =
                    tokio::time::timeout(Duration::from_secs(120), dynamic.wait_complete()).await;
            }
            tracing::debug!("run-time filter when complete: {expr}");
            let pred = pushdown::from_physical(&expr, &statement.projection, &statement.schema);
            if let Some(pred) = pred.filter(|p| p.to_sql_in(naming).is_some()) {
                dynamic_preds.push(pred);
            }
        }
        loop {
            let preds: Vec<Pred> = self
                .planned
                .iter()
                .cloned()
                .chain(dynamic_preds.iter().cloned())
                .collect();
            let clause = match preds.is_empty() {
                true => None,
                false => Some(Pred::conjunction(preds).to_sql_in(naming).ok_or_else(|| {
                    DataFusionError::Internal(
                        "a filter lowered at planning no longer renders as SQL".into(),
                    )
                })?),
            };
            let sql = statement.sql(clause.as_deref());
            if statement.behaviour.takes(&sql) || dynamic_preds.pop().is_none() {
                return Ok(sql);
            }
        }
    }
}

/// The table columns a scan of `projection` under `filters` reads: the projection's, then
/// those only the filters use.
pub(super) fn columns_read(
    schema: &Schema,
    projection: &[usize],
    filters: &[Expr],
) -> DfResult<Vec<usize>> {
    let mut only_filtered = BTreeSet::new();
    for filter in filters {
        for column in filter.column_refs() {
            let i = schema.index_of(&column.name)?;
            if !projection.contains(&i) {
                only_filtered.insert(i);
            }
        }
    }
    Ok(projection.iter().copied().chain(only_filtered).collect())
}

/// The filters a fetched scan took, applied by the client to each batch it decodes with
/// DataFusion's own evaluation of them (what a `FilterExec` would do), so that fetch mode
/// stays the reference the pushdown modes are checked against. Auto mode's fetched scans
/// test integer lists with the gateway's sets instead ([`ClientFilter::with_key_sets`]).
#[derive(Debug, Clone)]
pub(super) struct ClientFilter {
    /// The table columns to decode: the scan's projection, then the columns only the filters
    /// use (dropped again once the filters have run).
    pub(super) read: Vec<usize>,
    /// The conjunction of the filters, over the columns `read`.
    pub(super) predicate: Arc<dyn PhysicalExpr>,
}

impl ClientFilter {
    pub(super) fn new(
        state: &dyn Session,
        schema: &SchemaRef,
        projection: &[usize],
        filters: &[Expr],
    ) -> DfResult<ClientFilter> {
        let read = columns_read(schema, projection, filters)?;
        let columns = DFSchema::try_from(schema.project(&read)?)?;
        // The scan's filters name the table's columns with its qualifier; `columns` has none.
        let conjunction = conjunction(filters.iter().cloned().map(unnormalize_col))
            .ok_or_else(|| DataFusionError::Internal("a client filter of no filters".into()))?;
        let predicate = state.create_physical_expr(conjunction, &columns)?;
        Ok(ClientFilter { read, predicate })
    }

    /// The filter with its integer `IN` lists (auto mode's join-key lists) tested as the
    /// gateway tests them ([`with_key_sets`]).
    pub(super) fn with_key_sets(self) -> DfResult<ClientFilter> {
        Ok(ClientFilter {
            predicate: with_key_sets(self.predicate)?,
            ..self
        })
    }

    /// The rows of `batch` (the columns `read`) that pass, as `output`'s columns, which are
    /// the first ones of `read`.
    pub(super) fn apply(&self, batch: &RecordBatch, output: &SchemaRef) -> DfResult<RecordBatch> {
        let mask = self
            .predicate
            .evaluate(batch)?
            .into_array(batch.num_rows())?;
        let passed = filter_record_batch(batch, as_boolean_array(&mask)?)?;
        let columns = passed.columns()[..output.fields().len()].to_vec();
        let options = RecordBatchOptions::new().with_row_count(Some(passed.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(output),
            columns,
            &options,
        )?)
    }
}

/// A hash join's run-time filter as a fetched scan applies it: its cheap part only
/// ([`cheap_part`]), made anew whenever the join updates the filter.
///
/// DataFusion's filter for a join's probe side is the build side's key bounds AND their
/// membership: a short list, or else a lookup in the join's hash table, which costs about
/// what the join's own probe of the row does — and the join probes every row the filter
/// passes again. Bounds and short lists are cheap and prune the rows a date range or a few
/// stores leave; a lookup on a scan under five joins (q46's `store_sales`) costs five probes
/// of each row before the joins probe the rows it passes once more.
#[derive(Debug, Clone)]
pub(super) struct RunTimeFilter {
    filter: Arc<dyn PhysicalExpr>,
    /// The cheap part of the filter's form of one generation.
    cheap: Arc<Mutex<Option<CheapPart>>>,
}

/// The cheap part of a run-time filter's form, and the form's generation.
type CheapPart = (u64, Arc<dyn PhysicalExpr>);

impl RunTimeFilter {
    pub(super) fn new(filter: Arc<dyn PhysicalExpr>) -> RunTimeFilter {
        RunTimeFilter {
            filter,
            cheap: Arc::default(),
        }
    }

    /// The cheap part of the filter's current form.
    pub(super) fn current(&self) -> DfResult<Arc<dyn PhysicalExpr>> {
        let generation = snapshot_generation(&self.filter);
        let mut cached = self
            .cheap
            .lock()
            .map_err(|_| DataFusionError::Internal("a run-time filter's cache poisoned".into()))?;
        if let Some((of, cheap)) = cached.as_ref() {
            if *of == generation {
                return Ok(Arc::clone(cheap));
            }
        }
        let cheap = cheap_part(snapshot_physical_expr(Arc::clone(&self.filter))?);
        *cached = Some((generation, Arc::clone(&cheap)));
        Ok(cheap)
    }
}

/// `filter` (a run-time filter's current form) with what is not cheap to test per row
/// replaced by `true`: under its ANDs and ORs, comparisons of a column with a value, key
/// lists and NULL tests are kept, anything else (a hash table lookup) passes every row. A
/// partitioned join's `CASE hash(key) % n WHEN i THEN filter_i …` becomes the OR of its
/// branches, without the hash. Replacing a part under AND and OR by `true` only lets more
/// rows through, so the result passes every row the filter passes: a weaker filter, as
/// correct where the join still checks each row.
pub(super) fn cheap_part(filter: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
    let pass = || lit(true);
    if let Some(binary) = filter.downcast_ref::<BinaryExpr>() {
        let op = *binary.op();
        if matches!(op, Operator::And | Operator::Or) {
            let (left, right) = (
                cheap_part(Arc::clone(binary.left())),
                cheap_part(Arc::clone(binary.right())),
            );
            return Arc::new(BinaryExpr::new(left, op, right));
        }
        let plain = |e: &Arc<dyn PhysicalExpr>| e.children().is_empty();
        let comparison = matches!(
            op,
            Operator::Eq
                | Operator::NotEq
                | Operator::Lt
                | Operator::LtEq
                | Operator::Gt
                | Operator::GtEq
                | Operator::IsDistinctFrom
                | Operator::IsNotDistinctFrom
        );
        return match comparison && plain(binary.left()) && plain(binary.right()) {
            true => filter,
            false => pass(),
        };
    }
    if let Some(case) = filter.downcast_ref::<CaseExpr>() {
        let branches = case
            .when_then_expr()
            .iter()
            .map(|(_, then)| then)
            .chain(case.else_expr());
        return branches
            .map(|branch| cheap_part(Arc::clone(branch)))
            .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::Or, b)))
            .unwrap_or_else(pass);
    }
    let flat = |e: &Arc<dyn PhysicalExpr>| e.children().iter().all(|c| c.children().is_empty());
    let cheap = (filter.downcast_ref::<InListExpr>().is_some()
        || filter.downcast_ref::<IsNullExpr>().is_some()
        || filter.downcast_ref::<IsNotNullExpr>().is_some())
        && flat(&filter);
    match cheap || filter.children().is_empty() {
        true => filter,
        false => pass(),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ArrayRef, BooleanArray, Int32Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::{col, BinaryExpr, CaseExpr};
    use datafusion::physical_plan::joins::{HashExpr, SeededRandomState};

    use super::*;

    fn and(
        a: Arc<dyn PhysicalExpr>,
        op: Operator,
        b: Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(a, op, b))
    }

    /// The rows of `a` = 0..10 that `filter` passes.
    fn passed(filter: &Arc<dyn PhysicalExpr>) -> Vec<i32> {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, false)]));
        let a: ArrayRef = Arc::new(Int32Array::from_iter_values(0..10));
        let batch = RecordBatch::try_new(schema, vec![a]).unwrap();
        let mask = filter.evaluate(&batch).unwrap().into_array(10).unwrap();
        let mask = mask.as_any().downcast_ref::<BooleanArray>().unwrap();
        (0..10).filter(|&i| mask.value(i as usize)).collect()
    }

    #[test]
    fn a_run_time_filter_keeps_its_bounds_and_lists_and_drops_its_hashing() {
        let schema = Schema::new(vec![Field::new("a", DataType::Int32, false)]);
        let a = || col("a", &schema).unwrap();
        let bounds = |lo: i32, hi: i32| {
            and(
                and(a(), Operator::GtEq, lit(lo)),
                Operator::And,
                and(a(), Operator::LtEq, lit(hi)),
            )
        };
        // A membership test that is no plain comparison: `a + 1 = 4` stands for a lookup.
        let lookup = and(and(a(), Operator::Plus, lit(1)), Operator::Eq, lit(4));
        let filter = and(bounds(2, 7), Operator::And, lookup);
        assert_eq!(passed(&filter), [3]);
        assert_eq!(passed(&cheap_part(filter)), [2, 3, 4, 5, 6, 7]);
        // A partitioned join's routing by hash: the OR of its branches.
        let hash = Arc::new(HashExpr::new(
            vec![a()],
            SeededRandomState::with_seed(1),
            "test".into(),
        ));
        let routed: Arc<dyn PhysicalExpr> = Arc::new(
            CaseExpr::try_new(
                Some(and(hash, Operator::Modulo, lit(2u64))),
                vec![(lit(0u64), bounds(1, 2)), (lit(1u64), bounds(8, 8))],
                Some(lit(false)),
            )
            .unwrap(),
        );
        let cheap = cheap_part(Arc::clone(&routed));
        assert!(!format!("{cheap}").contains("test"), "{cheap}");
        assert_eq!(passed(&cheap), [1, 2, 8]);
        assert!(passed(&routed).iter().all(|r| [1, 2, 8].contains(r)));
        // Lists and NULL tests stay.
        let list: Arc<dyn PhysicalExpr> = datafusion::physical_expr::expressions::in_list(
            a(),
            vec![lit(4), lit(9)],
            &false,
            &schema,
        )
        .unwrap();
        let listed = and(list, Operator::And, Arc::new(IsNotNullExpr::new(a())));
        assert_eq!(passed(&cheap_part(listed)), [4, 9]);
    }
}
