//! Run-time filters that cross stages: a statement's uncorrelated subqueries run first.
//!
//! On a cluster a run-time filter reaches only scans in its join's own stage
//! ([`super::engine`]). A subquery's answer is the case that matters most: TPC-DS q58 keeps
//! `d_date IN (SELECT d_date FROM date_dim WHERE d_week_seq = (SELECT d_week_seq …))` as a
//! semi-join above `store_sales ⋈ date_dim`, and in one process that join's run-time filter
//! narrows the `date_dim` scan, whose keys in turn narrow `store_sales`. On Ballista the
//! `date_dim` build side is a stage of its own that has finished before the semi-join
//! runs, so the chain breaks and `store_sales` is selected whole.
//!
//! So in the run-time filter modes a distributed statement's uncorrelated subqueries run as
//! jobs of their own before it, and their answers go into the statement as literals, as
//! Spark runs a scalar subquery before the plan that uses it:
//!
//! - a scalar subquery becomes its value (NULL when it has no row; more than one row is an
//!   error, as in DataFusion);
//! - `x IN (subquery)` becomes `x IN (v1, v2, …)` when the subquery joins nothing and,
//!   its own subqueries answered, has at most [`MAX_LIST`] distinct values. A larger answer
//!   keeps the subquery (a join's run-time filter then does what it can in its stage);
//!   a subquery that joins is not run first at all, since its answer is likely large and the
//!   work would be done twice.
//!
//! The literals are ordinary filters: Sift's scans lower them into the statement's S3 Select
//! SQL (standard SQL, as any store takes), and a join's run-time filter in the next stage
//! then starts from a narrow build side. Semantics are unchanged: a literal list has the
//! three-valued logic of `IN` over the same values, and the subquery is read once either way.
//! Negated `NOT IN`, `EXISTS` and correlated subqueries are left to the planner.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::expr::{InList, InSubquery};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, Subquery};
use futures::future::{try_join_all, BoxFuture};
use futures::FutureExt;

/// The most values an `IN` subquery's answer may have to become a literal list.
const MAX_LIST: usize = 1000;

/// Runs one job to its rows (on the cluster, recording its plan beside the statement's).
pub(crate) type RunJob<'a> =
    dyn Fn(LogicalPlan) -> BoxFuture<'a, DfResult<Vec<RecordBatch>>> + Send + Sync + 'a;

/// `plan` with its uncorrelated subqueries run by `run` and replaced by their answers
/// (module docs); what is not replaced stays as it was.
pub(crate) fn run_first<'a>(
    plan: LogicalPlan,
    run: &'a RunJob<'a>,
) -> BoxFuture<'a, DfResult<LogicalPlan>> {
    async move {
        // At once: Ballista runs jobs side by side (q9 has fifteen scalar subqueries).
        let subqueries = uncorrelated(&plan)?;
        let found = try_join_all(subqueries.iter().map(|s| answer(s, run))).await?;
        let answers: HashMap<Expr, Expr> = subqueries
            .into_iter()
            .zip(found)
            .filter_map(|(subquery, answer)| Some((subquery, answer?)))
            .collect();
        if answers.is_empty() {
            return Ok(plan);
        }
        replace(plan, &answers)
    }
    .boxed()
}

/// The uncorrelated scalar and `IN` subqueries in `plan`'s own expressions (not those
/// inside them: [`answer`] runs a subquery's own first), each once.
fn uncorrelated(plan: &LogicalPlan) -> DfResult<Vec<Expr>> {
    let mut found = Vec::new();
    plan.apply(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                let wanted = match e {
                    Expr::ScalarSubquery(s) => is_uncorrelated(s),
                    Expr::InSubquery(InSubquery {
                        subquery, negated, ..
                    }) => !negated && is_uncorrelated(subquery),
                    _ => false,
                };
                if wanted && !found.contains(e) {
                    found.push(e.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    Ok(found)
}

/// Whether `subquery` reads no column of a query around it, at any depth.
fn is_uncorrelated(subquery: &Subquery) -> bool {
    if !subquery.outer_ref_columns.is_empty() {
        return false;
    }
    let mut outer = false;
    let walked = subquery.subquery.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            outer |= e.exists(|e| Ok(matches!(e, Expr::OuterReferenceColumn(..))))?;
            Ok(TreeNodeRecursion::Continue)
        })
    });
    walked.is_ok() && !outer
}

/// What replaces subquery expression `expr`, or `None` to keep it.
async fn answer<'a>(expr: &Expr, run: &'a RunJob<'a>) -> DfResult<Option<Expr>> {
    match expr {
        Expr::ScalarSubquery(s) => {
            let inner = run_first(s.subquery.as_ref().clone(), run).await?;
            let field = inner.schema().field(0).clone();
            let job = LogicalPlanBuilder::from(inner).limit(0, Some(2))?.build()?;
            let values = column_values(&run(job).await?)?;
            let value = match values.as_slice() {
                [] => ScalarValue::try_from(field.data_type())?,
                [value] => value.clone(),
                _ => {
                    return Err(DataFusionError::Execution(
                        "Scalar subquery returned more than one row".to_string(),
                    ))
                }
            };
            Ok(Some(Expr::Literal(value, None)))
        }
        Expr::InSubquery(InSubquery {
            expr: probe,
            subquery,
            negated: false,
        }) => {
            if subquery
                .subquery
                .exists(|node| Ok(matches!(node, LogicalPlan::Join(_))))?
            {
                return Ok(None);
            }
            let inner = run_first(subquery.subquery.as_ref().clone(), run).await?;
            // Kept, the subquery keeps the answers its own subqueries got.
            let kept = |inner: LogicalPlan| {
                Expr::InSubquery(InSubquery {
                    expr: probe.clone(),
                    subquery: Subquery {
                        subquery: Arc::new(inner),
                        ..subquery.clone()
                    },
                    negated: false,
                })
            };
            if has_subquery(&inner)? {
                return Ok(Some(kept(inner)));
            }
            let job = LogicalPlanBuilder::from(inner.clone())
                .distinct()?
                .limit(0, Some(MAX_LIST + 1))?
                .build()?;
            let values = column_values(&run(job).await?)?;
            if values.len() > MAX_LIST {
                return Ok(Some(kept(inner)));
            }
            Ok(Some(Expr::InList(InList {
                expr: probe.clone(),
                list: values.into_iter().map(|v| Expr::Literal(v, None)).collect(),
                negated: false,
            })))
        }
        _ => Ok(None),
    }
}

/// Whether any expression of `plan` still holds a subquery.
pub(super) fn has_subquery(plan: &LogicalPlan) -> DfResult<bool> {
    plan.exists(|node| {
        let mut found = false;
        node.apply_expressions(|e| {
            found |= e.exists(|e| {
                Ok(matches!(
                    e,
                    Expr::ScalarSubquery(_) | Expr::InSubquery(_) | Expr::Exists(_)
                ))
            })?;
            Ok(TreeNodeRecursion::Continue)
        })?;
        Ok(found)
    })
}

/// The values of the first column of `batches`, in order.
pub(super) fn column_values(batches: &[RecordBatch]) -> DfResult<Vec<ScalarValue>> {
    let mut values = Vec::new();
    for batch in batches {
        let Some(column) = batch.columns().first() else {
            return Err(DataFusionError::Internal(
                "a subquery answered with no column".to_string(),
            ));
        };
        for row in 0..batch.num_rows() {
            values.push(ScalarValue::try_from_array(column, row)?);
        }
    }
    Ok(values)
}

/// `plan` with each expression of `answers` replaced, every node keeping its columns' names.
fn replace(plan: LogicalPlan, answers: &HashMap<Expr, Expr>) -> DfResult<LogicalPlan> {
    plan.transform_up(|node| {
        let names = NamePreserver::new(&node);
        let node = node.map_expressions(|expr| {
            let saved = names.save(&expr);
            let replaced = expr.transform_down(|e| match answers.get(&e) {
                Some(answer) => Ok(Transformed::new(
                    answer.clone(),
                    true,
                    TreeNodeRecursion::Jump,
                )),
                None => Ok(Transformed::no(e)),
            })?;
            Ok(replaced.update_data(|e| saved.restore(e)))
        })?;
        match node.transformed {
            true => Ok(Transformed::yes(node.data.recompute_schema()?)),
            false => Ok(node),
        }
    })
    .map(|t| t.data)
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_tables::{collect, pretty, rewritten, session, sorted_lines};
    use datafusion::prelude::SessionContext;

    /// `sql` planned in `ctx` with its subqueries run first by jobs of `ctx`, and how many
    /// jobs ran.
    async fn planned_with_subqueries_first(
        ctx: &SessionContext,
        sql: &str,
    ) -> (DfResult<LogicalPlan>, usize) {
        let plan = ctx.sql(sql).await.expect("planned").into_unoptimized_plan();
        rewritten(ctx, plan, run_first).await
    }

    /// `sql` with its subqueries run first: its plan, its rows, and the jobs run before it.
    async fn run_with_subqueries_first(sql: &str) -> (String, Vec<RecordBatch>, usize) {
        let ctx = session().await;
        let (plan, jobs) = planned_with_subqueries_first(&ctx, sql).await;
        let plan = plan.expect("subqueries run");
        let text = plan.display_indent().to_string();
        (text, collect(&ctx, plan).await, jobs)
    }

    /// The rows of `sql` as DataFusion answers it alone.
    async fn rows(sql: &str) -> Vec<RecordBatch> {
        let ctx = session().await;
        let plan = ctx.sql(sql).await.expect("sql").into_unoptimized_plan();
        collect(&ctx, plan).await
    }

    #[tokio::test]
    async fn nested_subqueries_become_literals_with_the_same_rows() {
        // q58's shape: an IN subquery whose filter is a scalar subquery.
        let sql = "SELECT sum(amount) AS total FROM sales WHERE date IN \
                   (SELECT d_date FROM dates WHERE d_week = \
                    (SELECT d_week FROM dates WHERE d_date = 'c'))";
        let (plan, got, jobs) = run_with_subqueries_first(sql).await;
        assert_eq!(jobs, 2, "the scalar, then the list");
        assert!(!plan.contains("Subquery"), "{plan}");
        assert!(plan.contains("IN ([Utf8(\"c\")])"), "{plan}");
        assert_eq!(pretty(&got), pretty(&rows(sql).await));
    }

    #[tokio::test]
    async fn an_empty_scalar_is_null_and_names_are_kept() {
        let sql = "SELECT amount, (SELECT d_week FROM dates WHERE d_date = 'none') AS w \
                   FROM sales ORDER BY amount";
        let (_, got, jobs) = run_with_subqueries_first(sql).await;
        assert_eq!(jobs, 1);
        // (DataFusion 55 itself fails this statement: its physical scalar subquery declares
        // `w` non-nullable, as `d_week` is, and then meets the NULL.)
        let expected = [
            "+--------+---+",
            "| amount | w |",
            "+--------+---+",
            "| 10     |   |",
            "| 20     |   |",
            "| 30     |   |",
            "| 40     |   |",
            "+--------+---+",
        ];
        assert_eq!(pretty(&got), expected.join("\n"));
    }

    #[tokio::test]
    async fn a_scalar_of_many_rows_is_an_error() {
        let ctx = session().await;
        let sql = "SELECT amount FROM sales WHERE amount > (SELECT d_week FROM dates)";
        let (plan, _) = planned_with_subqueries_first(&ctx, sql).await;
        let error = plan.expect_err("two rows");
        assert!(error.to_string().contains("more than one row"), "{error}");
    }

    #[tokio::test]
    async fn joins_correlations_and_negations_stay_subqueries() {
        for sql in [
            // joins: not run first
            "SELECT amount FROM sales WHERE date IN \
             (SELECT d_date FROM dates JOIN sales ON d_date = date)",
            // correlated
            "SELECT amount FROM sales s WHERE amount > \
             (SELECT max(d_week) FROM dates WHERE d_date = s.date)",
            // negated
            "SELECT amount FROM sales WHERE date NOT IN (SELECT d_date FROM dates)",
        ] {
            let (plan, got, jobs) = run_with_subqueries_first(sql).await;
            assert_eq!(jobs, 0, "{sql}");
            assert!(plan.contains("Subquery"), "{plan}");
            assert_eq!(sorted_lines(&got), sorted_lines(&rows(sql).await), "{sql}");
        }
    }
}
