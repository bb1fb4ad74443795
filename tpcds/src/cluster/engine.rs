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
use datafusion::physical_optimizer::filter_pushdown::FilterPushdown;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::metrics::MetricsSet;
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
        let stage = self.inner.create_query_stage_exec(
            job_id,
            stage_id,
            task_id,
            global_output_partition_ids,
            plan,
            work_dir,
            config,
        )?;
        Ok(Arc::new(JoinFiltersOn(stage)))
    }
}

/// A stage executor whose tasks run with join filters on ([`join_filters_on`]).
#[derive(Debug)]
struct JoinFiltersOn(Arc<dyn QueryStageExecutor>);

impl fmt::Display for JoinFiltersOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
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
        self.0.execute_query_stage(task_id, Arc::new(context)).await
    }

    fn collect_plan_metrics(&self) -> Vec<MetricsSet> {
        self.0.collect_plan_metrics()
    }

    fn collect_runtime_stats_reports(&self) -> Vec<RuntimeStatsReport> {
        self.0.collect_runtime_stats_reports()
    }

    fn collect_window_state_reports(&self) -> DfResult<Vec<WindowStateReport>> {
        self.0.collect_window_state_reports()
    }

    fn collect_column_stats(&self) -> Vec<TaskColumnStats> {
        self.0.collect_column_stats()
    }
}
