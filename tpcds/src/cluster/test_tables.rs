//! Two small in-memory tables and a job runner that counts, for the tests of the rewrites
//! that run parts of a statement first ([`super::subqueries`], [`super::keys`]).

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Result as DfResult;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use futures::future::BoxFuture;
use futures::FutureExt;

use super::subqueries::RunJob;

/// A session with `dates(d_date, d_week)` (weeks 1, 1, 2) and `sales(date, amount)`
/// (dates a, b, c and a NULL).
pub(super) async fn session() -> SessionContext {
    let ctx = SessionContext::new();
    let table = |fields: Vec<Field>, columns: Vec<ArrayRef>| {
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).expect("batch");
        Arc::new(MemTable::try_new(schema, vec![vec![batch]]).expect("table"))
    };
    let dates = table(
        vec![
            Field::new("d_date", DataType::Utf8, false),
            Field::new("d_week", DataType::Int32, false),
        ],
        vec![
            Arc::new(StringArray::from(vec!["a", "b", "c"])),
            Arc::new(Int32Array::from(vec![1, 1, 2])),
        ],
    );
    let sales = table(
        vec![
            Field::new("date", DataType::Utf8, true),
            Field::new("amount", DataType::Int32, false),
        ],
        vec![
            Arc::new(StringArray::from(vec![
                Some("a"),
                Some("b"),
                Some("c"),
                None,
            ])),
            Arc::new(Int32Array::from(vec![10, 20, 30, 40])),
        ],
    );
    // Amounts by week number, an integer key with a gap (week 4) and a NULL.
    let weekly = table(
        vec![
            Field::new("week", DataType::Int32, true),
            Field::new("total", DataType::Int32, false),
        ],
        vec![
            Arc::new(Int32Array::from(vec![Some(1), Some(2), Some(4), None])),
            Arc::new(Int32Array::from(vec![100, 200, 400, 500])),
        ],
    );
    ctx.register_table("dates", dates).expect("dates");
    ctx.register_table("weekly", weekly).expect("weekly");
    ctx.register_table("sales", sales).expect("sales");
    ctx
}

/// A rewrite of a plan that runs jobs first.
pub(super) type Rewrite =
    for<'a> fn(LogicalPlan, &'a RunJob<'a>) -> BoxFuture<'a, DfResult<LogicalPlan>>;

/// `plan` rewritten by `rewrite` with jobs run in `ctx`, and how many jobs ran.
pub(super) async fn rewritten(
    ctx: &SessionContext,
    plan: LogicalPlan,
    rewrite: Rewrite,
) -> (DfResult<LogicalPlan>, usize) {
    let jobs = Arc::new(Mutex::new(0));
    let run_job = {
        let ctx = ctx.clone();
        let jobs = Arc::clone(&jobs);
        move |plan: LogicalPlan| {
            let ctx = ctx.clone();
            let jobs = Arc::clone(&jobs);
            async move {
                *jobs.lock().expect("jobs") += 1;
                ctx.execute_logical_plan(plan).await?.collect().await
            }
            .boxed()
        }
    };
    let plan = rewrite(plan, &run_job).await;
    let jobs = *jobs.lock().expect("jobs");
    (plan, jobs)
}

pub(super) async fn collect(ctx: &SessionContext, plan: LogicalPlan) -> Vec<RecordBatch> {
    let frame = ctx.execute_logical_plan(plan).await.expect("plan");
    frame.collect().await.expect("rows")
}

/// `batches` as a table's lines, sorted (the header's among them), to compare rows in any
/// order.
pub(super) fn sorted_lines(batches: &[RecordBatch]) -> Vec<String> {
    let mut lines: Vec<String> = pretty(batches).lines().map(String::from).collect();
    lines.sort();
    lines
}

pub(super) fn pretty(batches: &[RecordBatch]) -> String {
    datafusion::arrow::util::pretty::pretty_format_batches(batches)
        .expect("format")
        .to_string()
}
