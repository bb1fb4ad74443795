//! [`ScanExec`], the physical scan of one table: its statistics, the dynamic filters it
//! takes from hash joins, its metrics, and a stream per partition (`stream`).

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result as DfResult, Statistics};
use datafusion::config::ConfigOptions;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::execution_plan::ReplaceChildrenOptions;
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{
    Count, CustomMetricValue, ExecutionPlanMetricsSet, MetricBuilder, MetricValue, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    apply_expression_roots, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
    SendableRecordBatchStream, StatisticsArgs,
};

use crate::layout::Format;
use crate::pushdown;
use crate::scan::filter::{naming, ScanFilters, Statement};
use crate::scan::request::Request;
use crate::scan::stream::{FetchedCsv, FetchedParquet, Keep, Requests, Selected};
use crate::scan::{Mode, Store};

/// The physical scan of one table.
#[derive(Debug, Clone)]
pub struct ScanExec {
    pub(super) table: &'static str,
    pub(super) mode: Mode,
    pub(super) format: Format,
    pub(super) store: Arc<Store>,
    /// The table's columns.
    pub(super) schema: SchemaRef,
    /// The file's columns (CSV): the table's, and the empty field after the trailing `|`.
    pub(super) file_schema: SchemaRef,
    /// Table columns the scan outputs, in output order.
    pub(super) projection: Vec<usize>,
    pub(super) output_schema: SchemaRef,
    pub(super) filters: ScanFilters,
    /// Each partition's requests, in order.
    pub(super) partitions: Vec<Vec<Request>>,
    pub(super) estimated_rows: usize,
    /// Estimated distinct values of each output column, where known.
    pub(super) distinct: Vec<Option<usize>>,
    pub(super) total_bytes: u64,
    pub(super) properties: Arc<PlanProperties>,
    pub(super) metrics: ExecutionPlanMetricsSet,
}

impl ScanExec {
    /// The table columns a fetched scan decodes: its projection's, then those only its
    /// filters use.
    fn read_columns(&self) -> Vec<usize> {
        match &self.filters.client {
            Some(filter) => filter.read.clone(),
            None => self.projection.clone(),
        }
    }

    /// The SELECT list: the projected fields, or a constant when no column is needed (as
    /// Trino's `SELECT ' '` for count(*)).
    fn select_list(&self) -> String {
        if self.projection.is_empty() {
            return "' '".to_string();
        }
        let naming = naming(self.format, &self.schema, self.store.behaviour);
        self.projection
            .iter()
            .map(|&i| naming.column(i).unwrap_or_else(|| pushdown::field(i)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn statement(&self) -> Statement {
        Statement {
            columns: self.select_list(),
            projection: self.projection.clone(),
            schema: Arc::clone(&self.schema),
            format: self.format,
            behaviour: self.store.behaviour,
        }
    }
}

impl DisplayAs for ScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "S3ScanExec: table={}, mode={}, columns=[{}]",
            self.table,
            self.mode,
            self.select_list()
        )?;
        let naming = naming(self.format, &self.schema, self.store.behaviour);
        if let Some(sql) = self
            .filters
            .planned
            .as_ref()
            .and_then(|p| p.to_sql_in(naming))
        {
            write!(f, ", where={sql}")?;
        }
        if !self.filters.dynamic.is_empty() {
            write!(f, ", dynamic_filters={}", self.filters.dynamic.len())?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ScanExec {
    fn name(&self) -> &'static str {
        "S3ScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        // Listing the dynamic filters is what tells a hash join that a scan consumes its
        // filter, so that it computes one at all.
        apply_expression_roots(self.filters.dynamic.iter(), f)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn handle_child_pushdown_result(
        &self,
        phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let offered: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        // Every offered filter is reported unsupported: the static ones were already taken
        // exactly at planning time, and a dynamic one only prunes (its join still checks).
        let mut result = FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::No;
            offered.len()
        ]);
        if self.mode == Mode::Dynamic && phase == FilterPushdownPhase::Post {
            let dynamic: Vec<Arc<dyn PhysicalExpr>> = offered
                .into_iter()
                .filter(|f| f.is::<DynamicFilterPhysicalExpr>())
                .collect();
            if !dynamic.is_empty() {
                let mut updated = self.clone();
                updated.filters.dynamic.extend(dynamic);
                result = result.with_updated_node(Arc::new(updated) as Arc<dyn ExecutionPlan>);
            }
        }
        Ok(result)
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        // The same estimate in every mode, so that the three modes get the same join order
        // and the comparison is of scans, not of plans.
        let share = match args.partition() {
            Some(_) => self.partitions.len().max(1),
            None => 1,
        };
        let columns = self.projection.len().max(1) as f64 / self.schema.fields().len() as f64;
        let mut stats = Statistics::new_unknown(&self.output_schema);
        stats.num_rows = Precision::Inexact(self.estimated_rows / share);
        for (column, distinct) in stats.column_statistics.iter_mut().zip(&self.distinct) {
            if let Some(n) = distinct {
                column.distinct_count = Precision::Inexact(*n);
            }
        }
        stats.total_byte_size =
            Precision::Inexact((self.total_bytes as f64 * columns) as usize / share);
        Ok(Arc::new(stats))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let requests = Requests {
            list: self.partitions.get(partition).cloned().unwrap_or_default(),
            store: Arc::clone(&self.store),
            in_flight: (self.store.concurrency / self.partitions.len().max(1)).max(1),
            metrics: ScanMetrics::new(&self.metrics, partition, self.mode != Mode::Fetch),
        };
        let keep = Keep {
            filter: self.filters.client.clone(),
            output: Arc::clone(&self.output_schema),
        };
        let batches = match (self.mode, self.format) {
            (Mode::Fetch, Format::Csv) => FetchedCsv {
                requests,
                file_schema: Arc::clone(&self.file_schema),
                read: self.read_columns(),
                keep,
            }
            .stream(),
            (Mode::Fetch, Format::Parquet) => FetchedParquet {
                requests,
                schema: Arc::clone(&self.schema),
                read: self.read_columns(),
                keep,
            }
            .stream()?,
            (Mode::Pushdown | Mode::Dynamic, _) => Selected {
                requests,
                filters: self.filters.clone(),
                statement: self.statement(),
                output: Arc::clone(&self.output_schema),
            }
            .stream()?,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.output_schema),
            batches,
        )))
    }
}

/// One partition's counters, in the plan's metrics: object bytes the store read
/// (`bytes_scanned`), response bytes (`bytes_received`), requests, and the statement sent
/// (`sql`, for a scan that selects).
#[derive(Debug, Clone)]
pub(super) struct ScanMetrics {
    bytes_scanned: Count,
    bytes_received: Count,
    requests: Count,
    sql: Option<Arc<SentSql>>,
}

impl ScanMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize, selects: bool) -> ScanMetrics {
        let sql = selects.then(|| {
            let sql = Arc::new(SentSql::default());
            MetricBuilder::new(set)
                .with_partition(partition)
                .build(MetricValue::Custom {
                    name: "sql".into(),
                    value: Arc::clone(&sql) as Arc<dyn CustomMetricValue>,
                });
            sql
        });
        ScanMetrics {
            bytes_scanned: MetricBuilder::new(set).counter("bytes_scanned", partition),
            bytes_received: MetricBuilder::new(set).counter("bytes_received", partition),
            requests: MetricBuilder::new(set).counter("requests", partition),
            sql,
        }
    }

    /// Counts a request answered with `received` bytes, for which the store read `scanned`.
    pub(super) fn request_done(&self, received: u64, scanned: u64) {
        self.requests.add(1);
        self.bytes_received.add(received as usize);
        self.bytes_scanned.add(scanned as usize);
    }

    /// Records the statement the partition's selects carry.
    pub(super) fn sent(&self, sql: &str) {
        if let Some(sent) = &self.sql {
            sent.set(sql);
        }
    }
}

/// The statement a scan's selects carried, as a plan metric. Every partition sends the same
/// statement, so partitions' values merge into the first one set.
#[derive(Debug, Default)]
pub(super) struct SentSql(Mutex<String>);

impl SentSql {
    fn set(&self, sql: &str) {
        if let Ok(mut s) = self.0.lock() {
            if s.is_empty() {
                s.push_str(sql);
            }
        }
    }

    fn get(&self) -> String {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl fmt::Display for SentSql {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.get())
    }
}

impl CustomMetricValue for SentSql {
    fn new_empty(&self) -> Arc<dyn CustomMetricValue> {
        Arc::new(SentSql::default())
    }

    fn aggregate(&self, other: Arc<dyn CustomMetricValue + 'static>) {
        if let Some(other) = other.as_any().downcast_ref::<SentSql>() {
            self.set(&other.get());
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn is_eq(&self, other: &Arc<dyn CustomMetricValue>) -> bool {
        other
            .as_any()
            .downcast_ref::<SentSql>()
            .is_some_and(|o| o.get() == self.get())
    }
}

/// The join tree of a physical plan: each join as its operator's name over its inputs, in
/// child order (a hash join's build side first), down to the tables scanned, as in
/// `HashJoinExec(date_dim, HashJoinExec(item, store_sales))`. Everything else is left out:
/// repartitions, sorts and merges follow from how many partitions each scan has, which
/// depends on the mode (a part is one fetch unit but several select splits), while the join
/// tree is what the statistics decide — and must be the same in every mode.
pub fn join_tree(plan: &Arc<dyn ExecutionPlan>) -> String {
    if let Some(scan) = plan.downcast_ref::<ScanExec>() {
        return scan.table.to_string();
    }
    let inputs: Vec<String> = plan
        .children()
        .into_iter()
        .map(join_tree)
        .filter(|tree| !tree.is_empty())
        .collect();
    if plan.name().contains("Join") {
        format!("{}({})", plan.name(), inputs.join(", "))
    } else {
        inputs.join(", ")
    }
}
