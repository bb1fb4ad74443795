//! Dynamic filters inside a stage: the executors' execution engine.
//!
//! Ballista turns DataFusion's dynamic filter pushdown off for the whole query, because a
//! filter whose join and scan land in different stages would never be filled and the scan
//! would wait for ever (apache/datafusion-ballista#1375). The scheduler plans accordingly,
//! and a stage reaches an executor with no dynamic filter in it.
//!
//! Within one stage, though, a join and its probe-side scan run in the same task: a hash
//! join that collects its build side (`CollectLeft`, the usual join of a fact table with a
//! dimension) reads that side from the previous stage's shuffle files and probes the scan
//! right below it. [`SiftEngine`] runs DataFusion's own filter pushdown again on each
//! stage, with join filters on, before Ballista's engine executes it: every join whose
//! probe scan is in the stage gives that scan its run-time filter, exactly as in one
//! process. A filter never reaches a scan in another stage, since the pass sees one stage
//! only, so nothing waits across a stage boundary. The join's filter waits for all of the
//! join's partitions to report their build side; Ballista runs a task's partitions at once
//! (one spawned stream each), and a task's plan holds only its own partitions, so the wait
//! ends.
//!
//! The pass changes only which rows a scan asks the store for: the join still checks every
//! row, so the results are those of the stage as planned.
//!
//! # Metrics that line up with the scheduler's plan
//!
//! The scheduler shows a finished stage with its tasks' metrics by position: the n-th
//! operator with metrics in its own copy of the plan gets the n-th metric set a task sent.
//! The executor's copy is decoded from protobuf, and decoding a `UnionExec` is not the
//! identity: `UnionExec::try_new` puts a relabelling `ProjectionExec` above every branch
//! whose fields differ from the union's in nullability or name (a `CAST(0.00 AS …)` branch
//! beside a nullable column). The scheduler's copy has no such projection, the counts differ,
//! and Ballista then shows the stage bare, without the scans' bytes (TPC-DS q5's union
//! stages). [`JoinFiltersOn::collect_plan_metrics`] leaves those projections' metric sets
//! out ([`decoded_relabels`]), so every task sends one set per operator of the scheduler's
//! plan. A relabelling projection the planner itself left right under a union would be
//! left out too; the stage then comes back bare as before, and `run` warns.

use std::fmt;
use std::sync::Arc;

use ballista_core::serde::protobuf::{
    RuntimeStatsReport, ShuffleWritePartition, TaskColumnStats, WindowStateReport,
};
use ballista_core::JobId;
use ballista_executor::execution_engine::{
    DefaultExecutionEngine, ExecutionEngine, QueryStageExecutor,
};
use datafusion::common::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_optimizer::filter_pushdown::FilterPushdown;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::union::{InterleaveExec, UnionExec};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionConfig;

/// Ballista's default engine, with join filters pushed into each stage's scans first.
/// (Without Ballista's shuffle-client pool, which its executor does not export: a stage
/// that reads shuffle files opens its own connections.)
#[derive(Default)]
pub struct SiftEngine {
    inner: DefaultExecutionEngine,
}

/// `config` with hash joins' run-time filters on: for the pushdown pass, and for the
/// task, whose joins fill a filter only when its session allows them.
fn join_filters_on(config: &SessionConfig) -> SessionConfig {
    let mut config = config.clone();
    config
        .options_mut()
        .optimizer
        .enable_join_dynamic_filter_pushdown = true;
    config
}

/// `stage` with every hash join's run-time filter pushed into the scans below it in the
/// same stage.
pub(crate) fn with_join_filters(
    stage: Arc<dyn ExecutionPlan>,
    config: &SessionConfig,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let config = join_filters_on(config);
    FilterPushdown::new_post_optimization().optimize(stage, config.options())
}

impl ExecutionEngine for SiftEngine {
    fn create_query_stage_exec(
        &self,
        job_id: JobId,
        stage_id: usize,
        task_id: usize,
        global_output_partition_ids: Vec<usize>,
        plan: Arc<dyn ExecutionPlan>,
        work_dir: &str,
        config: &SessionConfig,
    ) -> DfResult<Arc<dyn QueryStageExecutor>> {
        let plan = with_join_filters(plan, config)?;
        let relabels = decoded_relabels(plan.as_ref());
        let stage = self.inner.create_query_stage_exec(
            job_id,
            stage_id,
            task_id,
            global_output_partition_ids,
            plan,
            work_dir,
            config,
        )?;
        Ok(Arc::new(JoinFiltersOn { stage, relabels }))
    }
}

/// Where `plan` has a relabelling projection right under a union, as positions among its
/// operators with metrics (pre-order, as Ballista collects them), and how many such operators
/// it has. The default engine keeps the plan's shape (it only points the shuffle readers at
/// the work directory), so the positions hold for the plan it runs.
#[derive(Debug, Default, PartialEq)]
struct Relabels {
    positions: Vec<usize>,
    with_metrics: usize,
}

fn decoded_relabels(plan: &dyn ExecutionPlan) -> Relabels {
    fn walk(plan: &dyn ExecutionPlan, under_union: bool, found: &mut Relabels) {
        if plan.metrics().is_some() {
            if under_union && is_relabel(plan) {
                found.positions.push(found.with_metrics);
            }
            found.with_metrics += 1;
        }
        let union = plan.is::<UnionExec>() || plan.is::<InterleaveExec>();
        for child in plan.children() {
            walk(child.as_ref(), union, found);
        }
    }
    let mut found = Relabels::default();
    walk(plan, false, &mut found);
    found
}

/// Whether `plan` is a projection of the kind `UnionExec::try_new` adds to align a branch's
/// fields with the union's: every input column passed through in place, under its own name
/// where its field is unchanged, cast to its own type where the field changes (nullability,
/// name), and at least one such cast. A projection that renames a bare column (q2's
/// `ws_sold_date_sk@0 as sold_date_sk`) is the planner's and is in the scheduler's copy too.
fn is_relabel(plan: &dyn ExecutionPlan) -> bool {
    let Some(projection) = plan.downcast_ref::<ProjectionExec>() else {
        return false;
    };
    let input = projection.input().schema();
    let exprs = projection.expr();
    let in_place = |expr: &dyn datafusion::physical_expr::PhysicalExpr, i: usize| {
        expr.downcast_ref::<Column>()
            .is_some_and(|c| c.index() == i)
    };
    exprs.len() == input.fields().len()
        && exprs.iter().any(|p| p.expr.is::<CastExpr>())
        && exprs.iter().enumerate().all(|(i, p)| {
            let field = input.field(i);
            match p.expr.downcast_ref::<CastExpr>() {
                Some(cast) => {
                    in_place(cast.expr().as_ref(), i) && cast.cast_type() == field.data_type()
                }
                None => in_place(p.expr.as_ref(), i) && &p.alias == field.name(),
            }
        })
}

/// A stage executor whose tasks run with join filters on ([`join_filters_on`]) and whose
/// metrics line up with the scheduler's copy of the plan (module docs).
#[derive(Debug)]
struct JoinFiltersOn {
    stage: Arc<dyn QueryStageExecutor>,
    relabels: Relabels,
}

impl fmt::Display for JoinFiltersOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.stage, f)
    }
}

#[async_trait::async_trait]
impl QueryStageExecutor for JoinFiltersOn {
    async fn execute_query_stage(
        &self,
        task_id: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<Vec<ShuffleWritePartition>> {
        let context = TaskContext::new(
            context.task_id(),
            context.session_id(),
            join_filters_on(context.session_config()),
            context.scalar_functions().clone(),
            context.higher_order_functions().clone(),
            context.aggregate_functions().clone(),
            context.window_functions().clone(),
            context.runtime_env(),
        );
        self.stage
            .execute_query_stage(task_id, Arc::new(context))
            .await
    }

    fn collect_plan_metrics(&self) -> Vec<MetricsSet> {
        let metrics = self.stage.collect_plan_metrics();
        // A plan of another shape than the one walked: send what Ballista collected.
        if metrics.len() != self.relabels.with_metrics {
            return metrics;
        }
        metrics
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !self.relabels.positions.contains(i))
            .map(|(_, set)| set)
            .collect()
    }

    fn collect_runtime_stats_reports(&self) -> Vec<RuntimeStatsReport> {
        self.stage.collect_runtime_stats_reports()
    }

    fn collect_window_state_reports(&self) -> DfResult<Vec<WindowStateReport>> {
        self.stage.collect_window_state_reports()
    }

    fn collect_column_stats(&self) -> Vec<TaskColumnStats> {
        self.stage.collect_column_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::common::ScalarValue;
    use datafusion::physical_expr::expressions::Literal;
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion::physical_plan::projection::ProjectionExpr;
    use datafusion_proto::bytes::{physical_plan_from_bytes, physical_plan_to_bytes};

    /// `SELECT CAST(0.00 AS DECIMAL(7,2)) UNION ALL SELECT x` with `x` nullable: the shape of
    /// TPC-DS q5's union stages.
    fn union_of_a_constant_and_a_nullable_column() -> Arc<dyn ExecutionPlan> {
        let decimal = DataType::Decimal128(7, 2);
        let constant = ProjectionExec::try_new(
            [ProjectionExpr {
                expr: Arc::new(Literal::new(ScalarValue::Decimal128(Some(0), 7, 2))),
                alias: "x".into(),
            }],
            Arc::new(EmptyExec::new(Arc::new(Schema::empty()))),
        )
        .expect("projection");
        let column = EmptyExec::new(Arc::new(Schema::new(vec![Field::new("x", decimal, true)])));
        UnionExec::try_new(vec![Arc::new(constant), Arc::new(column)]).expect("union")
    }

    #[test]
    fn metrics_left_out_are_what_decoding_added() {
        let planned = union_of_a_constant_and_a_nullable_column();
        let bytes = physical_plan_to_bytes(Arc::clone(&planned)).expect("encoded");
        let decoded = physical_plan_from_bytes(&bytes, &TaskContext::default()).expect("decoded");
        let sent = ballista_core::utils::collect_plan_metrics(planned.as_ref()).len();
        let relabels = decoded_relabels(decoded.as_ref());
        // Decoding is not the identity (else this test no longer guards anything) ...
        assert!(relabels.with_metrics > sent, "{relabels:?}, {sent}");
        // ... and leaving out the relabels gives the planned plan's count back.
        assert_eq!(relabels.with_metrics - relabels.positions.len(), sent);
    }

    #[test]
    fn a_projection_that_computes_is_no_relabel() {
        let planned = union_of_a_constant_and_a_nullable_column();
        let relabel = Arc::clone(planned.children()[0]);
        assert!(is_relabel(relabel.as_ref()), "the union's own");
        assert!(!is_relabel(relabel.children()[0].as_ref()), "the constant");
        let column = Arc::clone(planned.children()[1]);
        let rename = |name: &str| {
            ProjectionExec::try_new(
                [ProjectionExpr {
                    expr: Arc::new(Column::new("x", 0)),
                    alias: name.into(),
                }],
                Arc::clone(&column),
            )
            .expect("projection")
        };
        assert!(!is_relabel(&rename("y")), "a rename is the planner's");
        assert!(!is_relabel(&rename("x")), "an identity changes nothing");
        // Only right under a union.
        assert_eq!(
            decoded_relabels(relabel.as_ref()).positions,
            Vec::<usize>::new()
        );
    }
}
