//! A table scan as DataFusion's own file scan: a `DataSourceExec` over a [`FileScanConfig`]
//! whose file source is [`ScanSource`] and whose "files" are [`ScanUnit`]s, each a list of
//! HTTP requests run in order by [`ScanOpener`].
//!
//! Why DataFusion's file scan and not an execution plan of our own: a plan that other
//! processes run (a Ballista stage, `crate::cluster`) is cut into tasks by slicing its
//! leaves' partitions, and only the leaves a scheduler knows can be sliced — DataFusion's
//! file scan among them. An unknown leaf runs whole in every task, so its table is read once
//! per task. The same split serves a single process: the table provider decides what a scan
//! reads (`table`), the source says how a unit is read, the opener reads it.
//!
//! Invariants:
//! - one file group per partition, holding exactly one [`ScanUnit`]: a partition's requests
//!   stay together and in order (a fetched part's GET chunks must, since a chunk is not a
//!   whole record), and keep several requests in flight, which DataFusion's file stream —
//!   one file open at a time — would not;
//! - the source's table schema is the scan's output schema: the provider has already
//!   applied the projection, so DataFusion neither projects again nor repartitions the
//!   files (a unit has no byte ranges to split), and pushed filters name output columns;
//! - the file scan's object store is never used; its URL is the local filesystem's, which
//!   every DataFusion runtime has, only because a file scan must name one.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DfResult, Statistics};
use datafusion::config::ConfigOptions;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::object_store::ObjectStoreUrl;
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::logical_expr::Expr;
use datafusion::object_store::ObjectStore;
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::{
    Count, CustomMetricValue, ExecutionPlanMetricsSet, MetricBuilder, MetricValue, Time,
};
use datafusion::physical_plan::{apply_expression_roots, DisplayFormatType, ExecutionPlan};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use futures::FutureExt;
use tokio::sync::OnceCell;

use crate::layout::Format;
use crate::pushdown;
use crate::scan::choice::{Choice, PARQUET};
use crate::scan::fetched_parquet::FetchedParquet;
use crate::scan::filter::{naming, RunTimeFilter, ScanFilters, Statement};
use crate::scan::request::{Answer, Request, Results};
use crate::scan::stream::{FetchedCsv, Keep, Requests, Selected};
use crate::scan::table::TableDef;
use crate::scan::Mode;

/// What the file scan reports as its file type; plans show it as `file_type=sift`.
pub(crate) const FILE_TYPE: &str = "sift";

/// How a scan reads one table: in which mode, which columns, under which filters.
#[derive(Clone)]
pub(crate) struct ScanSource {
    pub(super) table: Arc<TableDef>,
    /// The table's mode, or fetch for a scan of every column under no filter.
    pub(super) mode: Mode,
    /// Table columns the scan outputs, in output order.
    pub(super) projection: Vec<usize>,
    /// The output columns, as DataFusion's file scan wants a table schema.
    pub(super) output: TableSchema,
    pub(super) filters: ScanFilters,
    /// The filters DataFusion planned the scan with (what `filters` was made from).
    pub(super) logical_filters: Vec<Expr>,
    pub(super) metrics: ExecutionPlanMetricsSet,
    /// How the statement sent shows in the plan's metrics.
    pub(super) sql_metric: SqlMetric,
    /// Auto mode's choice of `mode` made at planning (text), and what it was predicted
    /// from.
    pub(super) choice: Option<Choice>,
    /// Auto mode's choice made when the scan starts (Parquet, whose scans keep
    /// [`Mode::Auto`]): the first partition to start makes it for all.
    pub(super) at_start: Option<Arc<OnceCell<Choice>>>,
}

/// How a scan shows the statement its selects carried among the plan's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SqlMetric {
    /// A custom metric, `sql=SELECT …` (one process).
    Custom,
    /// A count named `sql: SELECT …`, of the partitions that sent it. A Ballista executor
    /// sends its metrics to the scheduler as protobuf, which carries only DataFusion's
    /// built-in kinds and drops a task's whole metric set over one custom metric; a count's
    /// name is free text, so the statement (with the run-time filters the executor filled
    /// in) still reaches the stage plans.
    NamedCount,
}

/// One partition's requests: the one "file" of its file group.
#[derive(Debug, Clone)]
pub(crate) struct ScanUnit(pub(super) Arc<[Request]>);

impl ScanSource {
    /// The name of the table scanned.
    pub(crate) fn table_name(&self) -> &'static str {
        self.table.name
    }

    /// The scan's output columns.
    pub(super) fn output_schema(&self) -> &SchemaRef {
        self.output.file_schema()
    }

    /// The table columns a fetched scan decodes: its projection's, then those only its
    /// filters use.
    pub(super) fn read_columns(&self) -> Vec<usize> {
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
        let naming = naming(
            self.table.format,
            &self.table.schema,
            self.table.store.behaviour,
        );
        self.projection
            .iter()
            .map(|&i| naming.column(i).unwrap_or_else(|| pushdown::field(i)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The SELECT list of a scan answered in Arrow, whose columns the store types (INT as
    /// Int64, DECIMAL(p,s), dates as timestamps, text) and the client only casts to the
    /// table's: over text each column read as its conditions read it
    /// ([`pushdown::typed_field`]); over Parquet the plain names, which keep the file's
    /// types. `None` when Arrow answers do not apply: the store does not write them, the
    /// parts are gzip text, no column is needed, or a column has no typed form.
    fn typed_list(&self) -> Option<String> {
        let arrow = self.table.store.behaviour.arrow_results && !self.projection.is_empty();
        match self.table.format {
            _ if !arrow => return None,
            Format::Parquet => return Some(self.select_list()),
            Format::CsvGzip => return None,
            Format::Csv => {}
        }
        let schema = &self.table.schema;
        let columns = self
            .projection
            .iter()
            .map(|&i| pushdown::typed_field(i, schema.field(i).data_type()))
            .collect::<Option<Vec<_>>>()?;
        Some(columns.join(", "))
    }

    /// The scan's statement with its planned filters only, answered in CSV: what auto mode
    /// predicts the answer of.
    pub(super) fn planned_sql(&self) -> String {
        let statement = Statement {
            columns: self.select_list(),
            results: Results::Csv,
            ..self.statement()
        };
        statement.sql(self.planned_clause().as_deref())
    }

    /// Whether the store takes the scan's statement with its planned filters (its run-time
    /// ones are dropped as far as needed, [`ScanFilters::statement`]).
    pub(super) fn planned_fits(&self) -> bool {
        let statement = self.statement();
        let sql = statement.sql(self.planned_clause().as_deref());
        statement.behaviour.takes(&sql)
    }

    /// The planned filters as the store's SQL, when there are any.
    fn planned_clause(&self) -> Option<String> {
        let naming = naming(
            self.table.format,
            &self.table.schema,
            self.table.store.behaviour,
        );
        self.filters.planned.as_ref()?.to_sql_in(naming)
    }

    fn statement(&self) -> Statement {
        let (columns, results) = match self.typed_list() {
            Some(typed) => (typed, Results::arrow(self.table.store.compress_arrow)),
            None => (self.select_list(), Results::Csv),
        };
        Statement {
            columns,
            results,
            projection: self.projection.clone(),
            schema: Arc::clone(&self.table.schema),
            format: self.table.format,
            behaviour: self.table.store.behaviour,
        }
    }

    /// A partition of a scan that chooses when it starts. The first partition to start
    /// chooses for all: a scan that no answer could make pay for a select (a small one) is
    /// fetched at once; any other waits for the joins' run-time filters and predicts its
    /// whole statement's answer ([`ScanSource::predict`]). Every partition then selects
    /// with that statement or fetches its requests' row groups.
    fn chosen_at_start(
        self,
        requests: Requests,
        keep: Keep,
    ) -> BoxStream<'static, DfResult<RecordBatch>> {
        stream::once(async move {
            let started = std::time::Instant::now();
            let chosen = self.at_start.clone().unwrap_or_default();
            let statement = self.statement();
            let mut sql = None;
            let choice = *chosen
                .get_or_try_init(|| async {
                    if let Some(fetch) = self.fetched_whatever_the_filters() {
                        return Ok(fetch);
                    }
                    let full = self.filters.clone().statement(statement.clone()).await?;
                    let choice = self.predict(&full).await;
                    sql = Some(full);
                    choice
                })
                .await?;
            requests.metrics.statement_wait.add_elapsed(started);
            if !choice.pushed {
                // Its run-time filters are complete unless it was fetched without waiting.
                let keep = Keep {
                    run_time: self
                        .filters
                        .dynamic
                        .iter()
                        .cloned()
                        .map(RunTimeFilter::new)
                        .collect(),
                    ..keep
                };
                return FetchedParquet {
                    requests,
                    table: Arc::clone(&self.table),
                    read: self.read_columns(),
                    keep,
                }
                .stream();
            }
            // The partition that chose has the statement; the others make it (their
            // filters are complete by now).
            let sql = match sql {
                Some(sql) => futures::future::ready(Ok(sql)).boxed(),
                None => self.filters.clone().statement(statement.clone()).boxed(),
            };
            Selected {
                requests,
                sql,
                statement,
                output: Arc::clone(self.output_schema()),
            }
            .stream()
        })
        .try_flatten()
        .boxed()
    }

    /// Auto mode's choice of fetch for a Parquet scan whose select would not pay even if
    /// it answered nothing: made before its run-time filters are known, so that it does
    /// not wait for them.
    fn fetched_whatever_the_filters(&self) -> Option<Choice> {
        self.table
            .fetched_whatever_the_filters(&self.read_columns())
            .then(Choice::too_small)
    }

    /// Auto mode's choice for this scan sending `sql`, predicted over the table's sample
    /// (pushed down when there is none).
    async fn predict(&self, sql: &str) -> DfResult<Choice> {
        let Some((sample, link_rate)) = self.table.auto.clone() else {
            return Ok(Choice::new(None, None, PARQUET));
        };
        if self.table.format != Format::Parquet {
            return Ok(Choice::new(None, link_rate, PARQUET));
        }
        let (sql, results) = (sql.to_string(), self.statement().results);
        let (read, bytes) = (self.read_columns(), self.table.total_bytes);
        let predicted =
            tokio::task::spawn_blocking(move || sample.predict(&sql, results, &read, bytes))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(Choice::new(predicted, link_rate, PARQUET))
    }

    /// The scan's plan: a file scan with one file group per partition of `partitions`, each
    /// holding that partition's requests. A scan of no requests has one empty partition,
    /// as a plan needs one.
    pub(super) fn into_plan(self, mut partitions: Vec<Vec<Request>>) -> Arc<DataSourceExec> {
        if partitions.is_empty() {
            partitions.push(Vec::new());
        }
        let units = partitions.into_iter().map(ScanUnit::from).collect();
        self.into_plan_of_units(units, None)
    }

    /// The scan's plan over `units`, one partition each, each stopping after `limit` rows
    /// when there is one. No units is no partitions: that is what a Ballista task is sent
    /// for a scan under a `UNION ALL` branch it does not run, and adding one would shift the
    /// union's partitions onto the wrong branch.
    pub(super) fn into_plan_of_units(
        self,
        units: Vec<ScanUnit>,
        limit: Option<usize>,
    ) -> Arc<DataSourceExec> {
        let share = units.len();
        let table_stats = self.statistics(1);
        let unit_stats = Arc::new(self.statistics(share));
        let name = self.table.name;
        let groups = units
            .into_iter()
            .enumerate()
            .map(|(i, unit)| {
                let file = PartitionedFile::new(format!("{name}/partition-{i}"), unit.bytes())
                    .with_extension(unit);
                FileGroup::new(vec![file]).with_statistics(Arc::clone(&unit_stats))
            })
            .collect();
        let config = FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(self))
            .with_file_groups(groups)
            .with_statistics(table_stats)
            .with_limit(limit)
            .build();
        DataSourceExec::from_data_source(config)
    }

    /// The scan's estimates, for `share` of its partitions: the same in every mode, so that
    /// the three modes get the same join order and the comparison is of scans, not of
    /// plans.
    fn statistics(&self, share: usize) -> Statistics {
        let share = share.max(1);
        let columns = self.projection.len().max(1) as f64 / self.table.schema.fields().len() as f64;
        let mut stats = Statistics::new_unknown(self.output_schema());
        stats.num_rows = Precision::Inexact(self.table.estimated_rows / share);
        for (column, &i) in stats.column_statistics.iter_mut().zip(&self.projection) {
            if let Some(n) = self.table.distinct[i] {
                column.distinct_count = Precision::Inexact(n);
            }
        }
        stats.total_byte_size =
            Precision::Inexact((self.table.total_bytes as f64 * columns) as usize / share);
        stats
    }
}

impl ScanUnit {
    /// Object bytes the unit's requests cover (a select of a whole object counts as 0: its
    /// size is not in the request).
    fn bytes(&self) -> u64 {
        self.0.iter().map(Request::bytes).sum()
    }

    pub(super) fn requests(&self) -> &[Request] {
        &self.0
    }
}

impl From<Vec<Request>> for ScanUnit {
    fn from(requests: Vec<Request>) -> ScanUnit {
        ScanUnit(Arc::from(requests))
    }
}

/// The source and the file scan of `plan`, when it is a Sift scan.
pub(crate) fn sift_scan(plan: &dyn ExecutionPlan) -> Option<(&ScanSource, &FileScanConfig)> {
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let config = (exec.data_source().as_ref() as &dyn Any).downcast_ref::<FileScanConfig>()?;
    Some((config.file_source().downcast_ref::<ScanSource>()?, config))
}

/// The units of a Sift scan's file groups, in partition order.
pub(crate) fn scan_units(config: &FileScanConfig) -> DfResult<Vec<ScanUnit>> {
    config
        .file_groups
        .iter()
        .map(|group| match group.files() {
            [file] => unit_of(file).cloned(),
            files => Err(DataFusionError::Internal(format!(
                "a Sift scan partition holds {} units, not one",
                files.len()
            ))),
        })
        .collect()
}

fn unit_of(file: &PartitionedFile) -> DfResult<&ScanUnit> {
    file.extension::<ScanUnit>().ok_or_else(|| {
        DataFusionError::Internal(format!("{} is not a Sift scan unit", file.path()))
    })
}

impl fmt::Debug for ScanSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScanSource")
            .field("table", &self.table.name)
            .field("mode", &self.mode)
            .field("projection", &self.projection)
            .finish_non_exhaustive()
    }
}

impl FileSource for ScanSource {
    fn create_file_opener(
        &self,
        _object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        Ok(Arc::new(ScanOpener {
            source: self.clone(),
            partitions: base_config.file_groups.len().max(1),
            partition,
        }))
    }

    fn table_schema(&self) -> &TableSchema {
        &self.output
    }

    fn with_batch_size(&self, _batch_size: usize) -> Arc<dyn FileSource> {
        // Batches are as the decoders make them (`BATCH_ROWS`, DataFusion's default).
        Arc::new(self.clone())
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        FILE_TYPE
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            ", table={}, mode={}, columns=[{}]",
            self.table.name,
            self.mode,
            self.select_list()
        )?;
        if let Some(sql) = self.planned_clause() {
            write!(f, ", where={sql}")?;
        }
        if !self.filters.dynamic.is_empty() {
            write!(f, ", dynamic_filters={}", self.filters.dynamic.len())?;
        }
        let at_start = self.at_start.as_ref().and_then(|chosen| chosen.get());
        if let Some(choice) = self.choice.as_ref().or(at_start) {
            write!(f, ", auto={choice}")?;
        }
        Ok(())
    }

    /// A unit is a list of requests, not a byte range of one file: it is never split.
    fn supports_repartitioning(&self) -> bool {
        false
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        // Every offered filter is reported unsupported: the static ones were already taken
        // exactly at planning time, and a dynamic one only prunes (its join still checks).
        let dynamic: Vec<Arc<dyn PhysicalExpr>> = match self.mode {
            Mode::Dynamic | Mode::Auto => filters
                .iter()
                .filter(|f| f.is::<DynamicFilterPhysicalExpr>())
                .cloned()
                .collect(),
            Mode::Fetch | Mode::Pushdown => Vec::new(),
        };
        let mut result = FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::No;
            filters.len()
        ]);
        if !dynamic.is_empty() {
            let mut updated = self.clone();
            updated.filters.dynamic.extend(dynamic);
            result = result.with_updated_node(Arc::new(updated) as Arc<dyn FileSource>);
        }
        Ok(result)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        // Listing the dynamic filters is what tells a hash join that a scan consumes its
        // filter, so that it computes one at all.
        apply_expression_roots(self.filters.dynamic.iter(), f)
    }
}

/// Reads the units of one partition: sends their requests and decodes the answers.
struct ScanOpener {
    source: ScanSource,
    /// The scan's partitions, which share the store's requests in flight.
    partitions: usize,
    partition: usize,
}

impl FileOpener for ScanOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let source = &self.source;
        let requests = Requests {
            list: unit_of(&file)?.0.to_vec(),
            store: Arc::clone(&source.table.store),
            in_flight: (source.table.store.concurrency / self.partitions).max(1),
            metrics: ScanMetrics::new(
                &source.metrics,
                self.partition,
                (source.mode != Mode::Fetch).then_some(source.sql_metric),
                source.table.store.endpoints().len(),
            ),
        };
        let output = Arc::clone(source.output_schema());
        let keep = Keep {
            filter: source.filters.client.clone(),
            output: Arc::clone(&output),
            run_time: Vec::new(),
        };
        let batches = match (source.mode, source.table.format) {
            (Mode::Fetch, Format::Csv | Format::CsvGzip) => FetchedCsv {
                requests,
                format: source.table.format,
                file_schema: Arc::clone(&source.table.file_schema),
                read: source.read_columns(),
                keep,
            }
            .stream(),
            (Mode::Fetch, Format::Parquet) => FetchedParquet {
                requests,
                table: Arc::clone(&source.table),
                read: source.read_columns(),
                keep,
            }
            .stream()?,
            (Mode::Auto, _) => source.clone().chosen_at_start(requests, keep),
            (Mode::Pushdown | Mode::Dynamic, _) => Selected {
                requests,
                sql: source.filters.clone().statement(source.statement()).boxed(),
                statement: source.statement(),
                output,
            }
            .stream()?,
        };
        Ok(futures::future::ready(Ok(batches)).boxed())
    }
}

/// One partition's counters, in the plan's metrics: object bytes the store read
/// (`bytes_scanned`), response bytes (`bytes_received`), requests, requests sent again after
/// a transient failure (`retries`), and the statement sent (for a scan that selects; see
/// [`SqlMetric`]).
/// Two times tell where a scan's wall time went: `statement_wait`, from the partition's
/// start until its statement was known (the joins' run-time filters, and auto mode's choice
/// made at scan start), and `request_time`, the requests' time from sending to the whole
/// answer (summed over requests in flight together, so it can exceed the scan's wall
/// time).
/// A store with several endpoints also counts each endpoint's answers and their bytes, as
/// `requests_at_N` and `bytes_received_at_N` for the Nth endpoint (from 0, in the order
/// given): a metric's name is all that reaches the plan text, labels are merged away.
#[derive(Debug, Clone)]
pub(super) struct ScanMetrics {
    bytes_scanned: Count,
    bytes_received: Count,
    requests: Count,
    retries: Count,
    pub(super) statement_wait: Time,
    pub(super) request_time: Time,
    /// Requests and bytes received per endpoint, when there are several.
    per_endpoint: Arc<[(Count, Count)]>,
    sql: Option<SqlSink>,
}

/// Where [`ScanMetrics::sent`] records the statement.
#[derive(Debug, Clone)]
enum SqlSink {
    Custom(Arc<SentSql>),
    /// The set and partition to add a count named after the statement to.
    NamedCount(ExecutionPlanMetricsSet, usize),
}

impl ScanMetrics {
    fn new(
        set: &ExecutionPlanMetricsSet,
        partition: usize,
        sql: Option<SqlMetric>,
        endpoints: usize,
    ) -> ScanMetrics {
        let sql = sql.map(|kind| match kind {
            SqlMetric::Custom => {
                let sql = Arc::new(SentSql::default());
                MetricBuilder::new(set)
                    .with_partition(partition)
                    .build(MetricValue::Custom {
                        name: "sql".into(),
                        value: Arc::clone(&sql) as Arc<dyn CustomMetricValue>,
                    });
                SqlSink::Custom(sql)
            }
            SqlMetric::NamedCount => SqlSink::NamedCount(set.clone(), partition),
        });
        let per_endpoint = match endpoints {
            0 | 1 => Vec::new(),
            n => (0..n)
                .map(|i| {
                    (
                        MetricBuilder::new(set).counter(format!("requests_at_{i}"), partition),
                        MetricBuilder::new(set)
                            .counter(format!("bytes_received_at_{i}"), partition),
                    )
                })
                .collect(),
        };
        ScanMetrics {
            bytes_scanned: MetricBuilder::new(set).counter("bytes_scanned", partition),
            bytes_received: MetricBuilder::new(set).counter("bytes_received", partition),
            requests: MetricBuilder::new(set).counter("requests", partition),
            retries: MetricBuilder::new(set).counter("retries", partition),
            statement_wait: MetricBuilder::new(set).subset_time("statement_wait", partition),
            request_time: MetricBuilder::new(set).subset_time("request_time", partition),
            per_endpoint: per_endpoint.into(),
            sql,
        }
    }

    /// Counts a request's answer.
    pub(super) fn request_done(&self, answer: &Answer) {
        let received = answer.body.len();
        self.requests.add(1);
        self.bytes_received.add(received);
        self.bytes_scanned.add(answer.scanned as usize);
        self.retries.add(answer.retries);
        if let Some((requests, bytes)) = self.per_endpoint.get(answer.endpoint) {
            requests.add(1);
            bytes.add(received);
        }
    }

    /// Records the statement the partition's selects carry.
    pub(super) fn sent(&self, sql: &str) {
        match &self.sql {
            Some(SqlSink::Custom(sent)) => sent.set(sql),
            Some(SqlSink::NamedCount(set, partition)) => MetricBuilder::new(set)
                .counter(format!("sql: {sql}"), *partition)
                .add(1),
            None => {}
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
    if let Some((scan, _)) = sift_scan(plan.as_ref()) {
        return scan.table.name.to_string();
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
