//! A TPC-DS table in S3 as a DataFusion table, scanned one of three ways ([`Mode`]).
//!
//! The table is the list of its part objects. A scan is a list of HTTP requests per
//! DataFusion partition; each partition runs its requests with a few in flight and in order,
//! and feeds the bodies, which are CSV text either way, through Arrow's push-based CSV decoder:
//!
//! * **fetch**: ranged GetObjects of whole parts; the client parses the text and applies the
//!   scan's filters itself, as Trino's scan-filter operator does without pushdown.
//! * **pushdown**: one SelectObjectContent per ScanRange split of a part, asking only for the
//!   columns the plan needs and the rows that pass every filter [`crate::pushdown`] can
//!   express exactly; filters it cannot express stay with DataFusion (and are declared so).
//! * **dynamic**: pushdown plus the filters DataFusion's hash joins derive from their build
//!   side while the query runs (min/max of the join keys, or the key list when small). The
//!   probe-side scan waits for them before sending its first request, so a fact-table scan
//!   asks only for rows that can find a join partner.
//!
//! Object bytes read by the store (GET bodies, or S3 Select's `BytesScanned`) are counted in
//! [`Store::scanned`]; bytes on the wire are counted by [`crate::net::Link`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_s3::types::{
    CompressionType, CsvInput, CsvOutput, ExpressionType, FileHeaderInfo, InputSerialization,
    OutputSerialization, ParquetInput, ScanRange, SelectObjectContentEventStream,
};
use aws_sdk_s3::Client;
use bytes::{Buf, Bytes, BytesMut};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::csv::reader::Decoder;
use datafusion::arrow::csv::ReaderBuilder;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::Session;
use datafusion::common::cast::as_boolean_array;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DFSchema, DataFusionError, Result as DfResult, Statistics};
use datafusion::config::ConfigOptions;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::DynamicFilterPhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{
    Boundedness, EmissionType, ReplaceChildrenOptions,
};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    apply_expression_roots, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, SendableRecordBatchStream, StatisticsArgs,
};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use regex::Regex;
use tokio::sync::Semaphore;

use crate::error::Error;
use crate::layout::Format;
use crate::probe::SelectBehaviour;
use crate::pushdown::{self, Naming, Pred};
use crate::schema::{key_domain, ColumnType, TableSchema};

/// Rows per Arrow batch the scan emits (DataFusion's default batch size).
const BATCH_ROWS: usize = 8192;

/// How table scans reach the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Fetch,
    Pushdown,
    Dynamic,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Fetch, Mode::Pushdown, Mode::Dynamic];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Fetch => "fetch",
            Mode::Pushdown => "pushdown",
            Mode::Dynamic => "dynamic",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode {s:?}; expected fetch, pushdown or dynamic"))
    }
}

/// What every table of a run shares: the S3 client, the bucket and the scan counters.
#[derive(Debug)]
pub struct Store {
    pub client: Client,
    pub bucket: String,
    /// Requests in flight for the whole client (see `permits`); a scan spreads its share
    /// over its partitions.
    pub concurrency: usize,
    /// One per request in flight across every scan of the client. A query with many scans
    /// at once (q9 has fifteen) would otherwise send `concurrency` requests per scan, past
    /// what a store admits: Sift's gateway answers SlowDown beyond twice its select threads,
    /// and the SDK's retries run out. Trino bounds its S3 connections the same way.
    permits: Arc<Semaphore>,
    /// Bytes per ranged GET in fetch mode.
    pub fetch_chunk: u64,
    /// Bytes per ScanRange in the pushdown modes.
    pub split_size: u64,
    /// What the store's S3 Select does where stores differ ([`crate::probe`]): a part is
    /// split into ScanRanges only if the store answers them as AWS does, and IS NULL and the
    /// answers' NULLs follow its reading of empty fields.
    pub behaviour: SelectBehaviour,
    scanned: AtomicU64,
}

impl Store {
    pub fn new(client: Client, bucket: String, concurrency: usize) -> Store {
        Store {
            client,
            bucket,
            concurrency: concurrency.max(1),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            fetch_chunk: 8 << 20,
            split_size: 32 << 20,
            behaviour: SelectBehaviour::AWS,
            scanned: AtomicU64::new(0),
        }
    }

    /// Object bytes the store has read for this client so far.
    pub fn scanned(&self) -> u64 {
        self.scanned.load(Ordering::Relaxed)
    }
}

/// One TPC-DS table: its schema and part objects.
#[derive(Debug)]
pub struct S3Table {
    name: &'static str,
    schema: SchemaRef,
    /// The schema of the files: the table's columns and the empty field after the trailing
    /// `|` of every dsdgen line.
    file_schema: SchemaRef,
    objects: Vec<(String, u64)>,
    /// The objects' total size.
    total_bytes: u64,
    /// Estimated rows (from the sampled line length), for DataFusion's join ordering.
    estimated_rows: usize,
    /// Estimated distinct values per column, where known (see [`S3Table::with_table_rows`]).
    distinct: Vec<Option<usize>>,
    store: Arc<Store>,
    mode: Mode,
    format: Format,
}

/// The Arrow type a TPC-DS column is read as.
fn arrow_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Integer => DataType::Int32,
        ColumnType::Decimal(p, s) => DataType::Decimal128(p, s),
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Time => DataType::Utf8,
        ColumnType::Date => DataType::Date32,
    }
}

/// The table's Arrow schema: TPC-DS types, every column nullable (empty field = NULL).
pub fn arrow_schema(table: &TableSchema) -> Schema {
    Schema::new(
        table
            .columns
            .iter()
            .map(|(name, ty)| Field::new(*name, arrow_type(*ty), true))
            .collect::<Vec<_>>(),
    )
}

impl S3Table {
    /// A table over `objects` (key, size), whose average line is `line_bytes` long.
    pub fn new(
        table: &'static TableSchema,
        objects: Vec<(String, u64)>,
        line_bytes: f64,
        store: Arc<Store>,
        mode: Mode,
        format: Format,
    ) -> S3Table {
        let schema = arrow_schema(table);
        let mut file_fields: Vec<Field> =
            schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        file_fields.push(Field::new("__trailing", DataType::Utf8, true));
        let total_bytes: u64 = objects.iter().map(|(_, size)| size).sum();
        S3Table {
            name: table.name,
            schema: Arc::new(schema),
            file_schema: Arc::new(Schema::new(file_fields)),
            objects,
            total_bytes,
            estimated_rows: (total_bytes as f64 / line_bytes.max(1.0)) as usize,
            distinct: vec![None; table.columns.len()],
            store,
            mode,
            format,
        }
    }
}

#[async_trait]
impl TableProvider for S3Table {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The filters S3 Select can express exactly, in every mode: the three modes then plan
    /// the same tree and differ only in their scans. (When fetch mode left them to a
    /// `FilterExec`, its selectivity estimate gave 15 of the 74 `ceph72` statements another
    /// join order than the pushdown modes at SF 1, and the comparison was partly of plans.)
    /// A fetched scan applies them on the client ([`ClientFilter`]).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|expr| {
                let exact = pushdown::from_logical(expr, &self.schema)
                    .and_then(|p| {
                        p.to_sql_in(naming(self.format, &self.schema, self.store.behaviour))
                    })
                    .is_some();
                if exact {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let output_schema = Arc::new(self.schema.project(&projection)?);
        let projection_distinct = projection.iter().map(|&i| self.distinct[i]).collect();
        let preds: Vec<Pred> = filters
            .iter()
            .map(|f| {
                pushdown::from_logical(f, &self.schema).ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "filter {f} was accepted for pushdown but does not translate"
                    ))
                })
            })
            .collect::<DfResult<_>>()?;
        let static_filter = (!preds.is_empty()).then_some(Pred::And(preds));
        let mode = self.scan_mode(projection.len(), static_filter.is_some());
        let client_filter = match mode {
            Mode::Fetch if !filters.is_empty() => Some(ClientFilter::new(
                state,
                &self.schema,
                &projection,
                filters,
            )?),
            _ => None,
        };
        let target = state.config_options().execution.target_partitions.max(1);
        let partitions = self.plan_requests(mode, target);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&output_schema)),
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Arc::new(ScanExec {
            table: self.name,
            mode,
            format: self.format,
            store: Arc::clone(&self.store),
            schema: Arc::clone(&self.schema),
            file_schema: Arc::clone(&self.file_schema),
            projection,
            output_schema,
            static_filter,
            client_filter,
            dynamic_filters: Vec::new(),
            sent_where: Arc::new(OnceLock::new()),
            partitions,
            estimated_rows: self.estimated_rows,
            distinct: projection_distinct,
            total_bytes: self.total_bytes,
            properties: Arc::new(properties),
        }))
    }
}

/// One HTTP request of a scan.
#[derive(Debug, Clone)]
enum Request {
    /// A ranged GET of `key`, `start..end`.
    Get { key: String, start: u64, end: u64 },
    /// An S3 Select of the records of `key` that start in `range`, or of the whole object
    /// (no ScanRange sent) when `range` is `None`.
    Select {
        key: String,
        range: Option<(u64, u64)>,
    },
}

impl S3Table {
    /// The table's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The key columns' distinct-value estimates from `rows` (every table's estimated rows):
    /// a key has at most as many distinct values as the table it refers to has rows, and no
    /// more than its own table has rows.
    fn with_table_rows(mut self, rows: &BTreeMap<&'static str, usize>) -> S3Table {
        for (i, field) in self.schema.fields().iter().enumerate() {
            let domain = key_domain(field.name()).and_then(|table| rows.get(table));
            self.distinct[i] = domain.map(|&n| n.min(self.estimated_rows));
        }
        self
    }

    /// How one scan reads: in the table's mode, except that a scan needing every column
    /// under no filter is fetched in every mode. S3 Select would send the whole table back,
    /// re-serialised, after parsing it on the store: more work on both sides for the same
    /// bytes (q21 and q39 read all of `inventory`: 0.6× fetch's speed on loopback). A
    /// planner weighing pushdown skips it, and so does this one. In dynamic mode this also
    /// forgoes a filter the joins might derive later; on those scans none cut any bytes.
    fn scan_mode(&self, columns: usize, filtered: bool) -> Mode {
        if !filtered && columns == self.schema.fields().len() {
            Mode::Fetch
        } else {
            self.mode
        }
    }

    /// Splits the table's objects into the requests of a scan in `mode` and deals them to
    /// at most `target` partitions, keeping each object's requests together and in order.
    fn plan_requests(&self, mode: Mode, target: usize) -> Vec<Vec<Request>> {
        let step = match (mode, self.format) {
            // A Parquet file is read from its footer: fetched whole.
            (Mode::Fetch, Format::Parquet) => u64::MAX,
            (Mode::Fetch, Format::Csv) => self.store.fetch_chunk,
            (Mode::Pushdown | Mode::Dynamic, _) if self.store.behaviour.scan_ranges => {
                self.store.split_size
            }
            (Mode::Pushdown | Mode::Dynamic, _) => u64::MAX,
        }
        .max(1);
        let mut units: Vec<Vec<Request>> = Vec::new();
        for (key, size) in &self.objects {
            let mut requests = Vec::new();
            let mut start = 0;
            while start < *size {
                let end = start.saturating_add(step).min(*size);
                requests.push(match mode {
                    Mode::Fetch => Request::Get {
                        key: key.clone(),
                        start,
                        end,
                    },
                    _ => Request::Select {
                        key: key.clone(),
                        range: (end - start < *size).then_some((start, end)),
                    },
                });
                start = end;
            }
            match mode {
                // A GET chunk is not a whole record, so a part's chunks stay in one partition.
                Mode::Fetch => units.push(requests),
                // A select split is, so splits can be dealt out on their own.
                _ => units.extend(requests.into_iter().map(|r| vec![r])),
            }
        }
        let n = units.len().clamp(1, target);
        let mut partitions = vec![Vec::new(); n];
        for (i, unit) in units.into_iter().enumerate() {
            partitions[i % n].extend(unit);
        }
        partitions
    }
}

/// The session's tables with distinct-value estimates for their key columns (`*_sk`): each
/// at most the rows of the table it refers to (`schema::key_domain`), as a metastore's column
/// statistics would give Trino.
///
/// Without them DataFusion estimates a join's output as the smaller input (it takes the
/// larger side's row count as the key's distinct values), so three joins of a fact table with
/// small dimensions look smaller than `date_dim`, and the fact side became the hash table: 56
/// joins of the 72 queries at SF 1 built on 100 K–11.7 M fact rows and probed with a few dozen
/// dates, and a date filter that could have cut the fact scan was derived on `date_dim`
/// instead.
pub fn with_key_statistics(tables: Vec<S3Table>) -> Vec<S3Table> {
    let rows: BTreeMap<&'static str, usize> =
        tables.iter().map(|t| (t.name, t.estimated_rows)).collect();
    tables
        .into_iter()
        .map(|t| t.with_table_rows(&rows))
        .collect()
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

/// How the store's SQL names the columns of a table stored in `format`.
fn naming(format: Format, schema: &Schema, behaviour: SelectBehaviour) -> Naming<'_> {
    match format {
        Format::Csv => Naming::Positional {
            empty_is_null: behaviour.empty_is_null,
        },
        Format::Parquet => Naming::Named(schema),
    }
}

/// The physical scan of one table.
#[derive(Debug, Clone)]
pub struct ScanExec {
    table: &'static str,
    mode: Mode,
    format: Format,
    store: Arc<Store>,
    schema: SchemaRef,
    file_schema: SchemaRef,
    /// Table columns the scan outputs, in output order.
    projection: Vec<usize>,
    output_schema: SchemaRef,
    /// The filters the scan took at planning time; the store applies them unless the scan
    /// is fetched, and then `client_filter` does.
    static_filter: Option<Pred>,
    client_filter: Option<ClientFilter>,
    dynamic_filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The WHERE clause the scan's selects carried, once known (dynamic filters included):
    /// shown in the plans `sift tpcds run` writes, to see what a join's filter cut.
    sent_where: Arc<OnceLock<Option<String>>>,
    partitions: Vec<Vec<Request>>,
    estimated_rows: usize,
    /// Estimated distinct values of each output column, where known.
    distinct: Vec<Option<usize>>,
    total_bytes: u64,
    properties: Arc<PlanProperties>,
}

impl ScanExec {
    /// The table columns a fetched scan decodes: its projection's, then those only its
    /// filters use.
    fn read_columns(&self) -> Vec<usize> {
        match &self.client_filter {
            Some(filter) => filter.read.clone(),
            None => self.projection.clone(),
        }
    }

    /// The SELECT list: the projected fields, or a constant when no column is needed (as
    /// Trino's `SELECT ' '` for count(*)).
    fn select_list(&self) -> String {
        if self.projection.is_empty() {
            "' '".to_string()
        } else {
            let naming = naming(self.format, &self.schema, self.store.behaviour);
            self.projection
                .iter()
                .map(|&i| naming.column(i).unwrap_or_else(|| pushdown::field(i)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    /// The WHERE condition once the dynamic filters are final: the static filter and as many
    /// of the dynamic ones, in their order, as keep the expression (`SELECT {select_list}
    /// … WHERE …`) within what the store takes ([`SelectBehaviour::takes`]). A dynamic
    /// filter only prunes (its join still checks every row), so one left out costs bytes,
    /// not rows; the static filter is always sent.
    async fn where_clause(
        static_filter: Option<Pred>,
        dynamic: Vec<Arc<dyn PhysicalExpr>>,
        projection: Vec<usize>,
        schema: SchemaRef,
        format: Format,
        behaviour: SelectBehaviour,
        select_list: String,
    ) -> Option<String> {
        let mut dynamic_preds = Vec::new();
        for expr in dynamic {
            if let Some(dynamic) = expr.downcast_ref::<DynamicFilterPhysicalExpr>() {
                // The join completes its filter when its build side is done, which is before
                // it polls this (probe) side; the timeout only guards against a join that
                // never completes it, in which case the scan runs without it.
                let _ =
                    tokio::time::timeout(Duration::from_secs(120), dynamic.wait_complete()).await;
            }
            if let Some(pred) = pushdown::from_physical(&expr, &projection, &schema) {
                dynamic_preds.push(pred);
            }
        }
        let naming = naming(format, &schema, behaviour);
        loop {
            let preds: Vec<Pred> = static_filter
                .iter()
                .cloned()
                .chain(dynamic_preds.iter().cloned())
                .collect();
            if preds.is_empty() {
                return None;
            }
            let clause = Pred::conjunction(preds).to_sql_in(naming)?;
            let sql = format!("SELECT {select_list} FROM S3Object s WHERE {clause}");
            if behaviour.takes(&sql) || dynamic_preds.pop().is_none() {
                return Some(clause);
            }
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
            .static_filter
            .as_ref()
            .and_then(|p| p.to_sql_in(naming))
        {
            write!(f, ", where={sql}")?;
        }
        if !self.dynamic_filters.is_empty() {
            write!(f, ", dynamic_filters={}", self.dynamic_filters.len())?;
        }
        if self.mode != Mode::Fetch {
            match self.sent_where.get() {
                Some(Some(sql)) => write!(f, ", sent_where={sql}")?,
                Some(None) => write!(f, ", sent_where=none")?,
                None => {}
            }
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
        apply_expression_roots(self.dynamic_filters.iter(), f)
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
                updated.dynamic_filters.extend(dynamic);
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

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let requests = self.partitions.get(partition).cloned().unwrap_or_default();
        let store = Arc::clone(&self.store);
        let in_flight = (store.concurrency / self.partitions.len().max(1)).max(1);
        // A fetched scan decodes its projection's columns and its filters'; these are the rows
        // it keeps, with the projection's columns.
        let read = self.read_columns();
        let filter = self.client_filter.clone();
        let output = Arc::clone(&self.output_schema);
        let keep = move |batch: RecordBatch| match &filter {
            Some(filter) => filter.apply(&batch, &output),
            None => Ok(batch),
        };
        if (self.mode, self.format) == (Mode::Fetch, Format::Parquet) {
            // Whole files, decoded on the client with the projection applied.
            let schema = Arc::new(self.schema.project(&read)?);
            let batches = stream::iter(requests)
                .map(move |request| {
                    run_request(Arc::clone(&store), request, String::new(), Format::Parquet)
                })
                .buffered(in_flight)
                .map(move |body| {
                    let batches = body
                        .and_then(|b| parquet_batches(b, &read, &schema))
                        .and_then(|batches| {
                            batches.into_iter().map(&keep).collect::<DfResult<Vec<_>>>()
                        });
                    match batches {
                        Ok(batches) => stream::iter(batches.into_iter().map(Ok)).left_stream(),
                        Err(e) => stream::iter(vec![Err(e)]).right_stream(),
                    }
                })
                .flatten()
                .boxed();
            return Ok(Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(&self.output_schema),
                batches,
            )));
        }
        let decoder = match self.mode {
            Mode::Fetch => ReaderBuilder::new(Arc::clone(&self.file_schema))
                .with_delimiter(b'|')
                .with_header(false)
                .with_batch_size(BATCH_ROWS)
                .with_projection(read)
                .build_decoder(),
            Mode::Pushdown | Mode::Dynamic => {
                let schema = if self.projection.is_empty() {
                    // One field (the `' '`) per line, no column kept.
                    Arc::new(Schema::new(vec![Field::new("_", DataType::Utf8, true)]))
                } else {
                    Arc::clone(&self.output_schema)
                };
                let projection = if self.projection.is_empty() {
                    vec![]
                } else {
                    (0..self.projection.len()).collect()
                };
                let builder = ReaderBuilder::new(schema)
                    .with_delimiter(b'|')
                    .with_header(false)
                    .with_batch_size(BATCH_ROWS)
                    .with_projection(projection);
                if store.behaviour.empty_is_null {
                    // The store writes NULL as `null` (and an empty field is NULL to it).
                    let null = Regex::new("^(null)?$")
                        .map_err(|e| DataFusionError::Internal(format!("the NULL pattern: {e}")))?;
                    builder.with_null_regex(null).build_decoder()
                } else {
                    builder.build_decoder()
                }
            }
        };
        let select_list = self.select_list();
        let where_future = ScanExec::where_clause(
            self.static_filter.clone(),
            self.dynamic_filters.clone(),
            self.projection.clone(),
            Arc::clone(&self.schema),
            self.format,
            self.store.behaviour,
            select_list.clone(),
        );
        let format = self.format;
        let sent_where = Arc::clone(&self.sent_where);
        let bodies = stream::once(where_future)
            .map(move |where_clause| {
                // Every partition computes the same clause; the first one records it.
                let _ = sent_where.set(where_clause.clone());
                let sql = match where_clause {
                    Some(w) => format!("SELECT {select_list} FROM S3Object s WHERE {w}"),
                    None => format!("SELECT {select_list} FROM S3Object s"),
                };
                let store = Arc::clone(&store);
                stream::iter(requests.clone())
                    .map(move |request| {
                        run_request(Arc::clone(&store), request, sql.clone(), format)
                    })
                    .buffered(in_flight)
            })
            .flatten()
            .boxed();
        let batches = decode(bodies, decoder).map(move |batch| batch.and_then(&keep));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.output_schema),
            batches,
        )))
    }
}

/// The filters a fetched scan took, applied by the client to each batch it decodes with
/// DataFusion's own evaluation of them (what a `FilterExec` would do), so that fetch mode
/// stays the reference the pushdown modes are checked against.
#[derive(Debug, Clone)]
struct ClientFilter {
    /// The table columns to decode: the scan's projection, then the columns only the filters
    /// use (dropped again once the filters have run).
    read: Vec<usize>,
    /// The conjunction of the filters, over the columns `read`.
    predicate: Arc<dyn PhysicalExpr>,
}

impl ClientFilter {
    fn new(
        state: &dyn Session,
        schema: &SchemaRef,
        projection: &[usize],
        filters: &[Expr],
    ) -> DfResult<ClientFilter> {
        let mut only_filtered = BTreeSet::new();
        for filter in filters {
            for column in filter.column_refs() {
                let i = schema.index_of(&column.name)?;
                if !projection.contains(&i) {
                    only_filtered.insert(i);
                }
            }
        }
        let read: Vec<usize> = projection.iter().copied().chain(only_filtered).collect();
        let columns = DFSchema::try_from(schema.project(&read)?)?;
        // The scan's filters name the table's columns with its qualifier; `columns` has none.
        let conjunction = conjunction(filters.iter().cloned().map(unnormalize_col))
            .ok_or_else(|| DataFusionError::Internal("a client filter of no filters".into()))?;
        let predicate = state.create_physical_expr(conjunction, &columns)?;
        Ok(ClientFilter { read, predicate })
    }

    /// The rows of `batch` (the columns `read`) that pass, as `output`'s columns, which are
    /// the first ones of `read`.
    fn apply(&self, batch: &RecordBatch, output: &SchemaRef) -> DfResult<RecordBatch> {
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

/// Runs one request as its own task, once a client-wide permit is free. A task, so that a
/// request holding a permit finishes (and frees it) even when its scan is not being polled —
/// a hash join reads its build side before it polls the probe side, and the build side may
/// need that permit.
///
/// The task lives no longer than the scan that wants its body: when a query is done before
/// its scans are (a LIMIT met, an empty join side), dropping the scan aborts its requests.
/// Left running, they went on reading into the next query — on its clock, on its link, and
/// in its byte counts (q44 at SF 1 handed 17.5 MB of its GETs to q45).
async fn run_request(
    store: Arc<Store>,
    request: Request,
    sql: String,
    format: Format,
) -> DfResult<Bytes> {
    let mut task = AbortOnDrop(tokio::spawn(async move {
        let _permit = Arc::clone(&store.permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Invalid("the request limiter was closed".into()))?;
        send(&store, request, &sql, format).await
    }));
    match (&mut task.0).await {
        Ok(result) => result.map_err(DataFusionError::from),
        Err(e) => Err(DataFusionError::External(Box::new(e))),
    }
}

/// A spawned task that is aborted when its handle is dropped before the task is done.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn send(store: &Store, request: Request, sql: &str, format: Format) -> Result<Bytes, Error> {
    match request {
        Request::Get { key, start, end } => get(store, &key, start, end).await,
        Request::Select { key, range } => select(store, &key, range, sql, format).await,
    }
}

/// A whole Parquet part as record batches of the scan's output columns, in its order.
fn parquet_batches(
    file: Bytes,
    projection: &[usize],
    output: &SchemaRef,
) -> DfResult<Vec<RecordBatch>> {
    let external = |e: parquet::errors::ParquetError| DataFusionError::External(Box::new(e));
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(external)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), projection.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(external)?;
    // The reader gives the projected columns in file order; the scan's order is
    // `projection`'s.
    let mut in_file = projection.to_vec();
    in_file.sort_unstable();
    let order: Vec<usize> = projection
        .iter()
        .map(|p| in_file.binary_search(p).unwrap_or(0))
        .collect();
    let mut batches = Vec::new();
    for batch in reader {
        let batch = batch?;
        let columns = order.iter().map(|&i| Arc::clone(batch.column(i))).collect();
        let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        batches.push(RecordBatch::try_new_with_options(
            Arc::clone(output),
            columns,
            &options,
        )?);
    }
    Ok(batches)
}

/// A ranged GET of `start..end` of `key`, checked to be complete and counted as scanned.
pub(crate) async fn get(store: &Store, key: &str, start: u64, end: u64) -> Result<Bytes, Error> {
    let response = store
        .client
        .get_object()
        .bucket(&store.bucket)
        .key(key)
        .range(format!("bytes={}-{}", start, end - 1))
        .send()
        .await
        .map_err(|e| Error::s3("GetObject", key, e))?;
    let body = response
        .body
        .collect()
        .await
        .map_err(|e| Error::body("GetObject", key, e))?
        .into_bytes();
    if body.len() as u64 != end - start {
        return Err(Error::Invalid(format!(
            "GetObject {key} bytes={start}-{}: got {} bytes",
            end - 1,
            body.len()
        )));
    }
    store
        .scanned
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    Ok(body)
}

/// The records of `key` (those that start in `range`, or all) that `sql` selects, as the CSV
/// text the store sent. Only a stream that ended with the End event is a result: one cut
/// short, by the server or the connection, is an error naming the object and the range.
pub(crate) async fn select(
    store: &Store,
    key: &str,
    range: Option<(u64, u64)>,
    sql: &str,
    format: Format,
) -> Result<Bytes, Error> {
    let target = match range {
        Some((start, end)) => format!("{key} (ScanRange {start}-{})", end - 1),
        None => key.to_string(),
    };
    // Options equal to AWS's defaults (a newline between records, in and out) are left out,
    // not spelt: the SDK writes a newline in XML as `&#xA;`, and Ceph RGW 18.2 reads its
    // serialization options as the raw text between the tags, decoding only `&#10;`. It took
    // the `&` of `&#xA;` for the record delimiter and answered every select with no rows.
    // Left out, the option means the same to every store.
    let input = match format {
        Format::Csv => InputSerialization::builder().csv(
            CsvInput::builder()
                .file_header_info(FileHeaderInfo::None)
                .field_delimiter("|")
                // As Trino: a comment marker that never occurs in data.
                .comments("\u{FDD0}")
                .build(),
        ),
        Format::Parquet => InputSerialization::builder().parquet(ParquetInput::builder().build()),
    }
    .compression_type(CompressionType::None)
    .build();
    let output = OutputSerialization::builder()
        .csv(CsvOutput::builder().field_delimiter("|").build())
        .build();
    // AWS's End is inclusive: a record that starts at byte `end` belongs to the next split,
    // so this one ends a byte before it. (Trino 405 sent `end` itself, and a record starting
    // exactly on a boundary was read by both splits: at SF 10 one catalog_sales row was, and
    // q77 summed it twice.)
    let scan_range = range.map(|(start, end)| {
        ScanRange::builder()
            .start(start as i64)
            .end(end as i64 - 1)
            .build()
    });
    let mut response = store
        .client
        .select_object_content()
        .bucket(&store.bucket)
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(input)
        .output_serialization(output)
        .set_scan_range(scan_range)
        .send()
        .await
        .map_err(|e| Error::s3("SelectObjectContent", &target, e))?;
    let mut records = BytesMut::new();
    let mut ended = false;
    while let Some(event) = response
        .payload
        .recv()
        .await
        .map_err(|e| Error::s3("SelectObjectContent", &target, e))?
    {
        match event {
            SelectObjectContentEventStream::Records(r) => {
                if let Some(payload) = r.payload {
                    records.extend_from_slice(payload.as_ref());
                }
            }
            SelectObjectContentEventStream::Stats(s) => {
                let scanned = s.details.and_then(|d| d.bytes_scanned).unwrap_or(0);
                store
                    .scanned
                    .fetch_add(scanned.max(0) as u64, Ordering::Relaxed);
            }
            SelectObjectContentEventStream::End(_) => ended = true,
            _ => {}
        }
    }
    if !ended {
        // Without the End event the result may be cut short; never use it as if complete.
        return Err(Error::S3 {
            operation: "SelectObjectContent",
            target,
            message: "the event stream ended without an End event: the result may be cut short"
                .into(),
        });
    }
    Ok(records.freeze())
}

/// Feeds response bodies through the CSV decoder, yielding a batch whenever it is full.
fn decode(
    bodies: BoxStream<'static, DfResult<Bytes>>,
    decoder: Decoder,
) -> BoxStream<'static, DfResult<RecordBatch>> {
    struct State {
        bodies: BoxStream<'static, DfResult<Bytes>>,
        decoder: Decoder,
        buf: Bytes,
        finished: bool,
    }
    let state = State {
        bodies,
        decoder,
        buf: Bytes::new(),
        finished: false,
    };
    stream::try_unfold(state, |mut st| async move {
        loop {
            if st.finished {
                return Ok(None);
            }
            if !st.buf.is_empty() {
                let used = st.decoder.decode(&st.buf)?;
                if used == 0 && st.decoder.capacity() > 0 {
                    return Err(DataFusionError::Internal(
                        "CSV decoder made no progress".to_string(),
                    ));
                }
                st.buf.advance(used);
                if st.decoder.capacity() == 0 {
                    if let Some(batch) = st.decoder.flush()? {
                        return Ok(Some((batch, st)));
                    }
                }
                continue;
            }
            match st.bodies.try_next().await? {
                Some(body) => st.buf = body,
                None => {
                    // End of input: let the decoder finish a last line without a newline.
                    st.decoder.decode(&[])?;
                    st.finished = true;
                    if let Some(batch) = st.decoder.flush()? {
                        return Ok(Some((batch, st)));
                    }
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};
    use datafusion::physical_plan::joins::HashJoinExec;
    use datafusion::prelude::SessionContext;

    /// A store for planning only: no request is ever sent.
    fn offline_store() -> Arc<Store> {
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .build();
        Arc::new(Store::new(Client::from_conf(config), "b".into(), 4))
    }

    /// A store whose endpoint is a TCP server that answers every request with `response`
    /// and closes the connection: a select answered in part.
    async fn store_answering(response: Vec<u8>) -> Store {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let response = response.clone();
                tokio::spawn(async move {
                    // The request: headers, then as many body bytes as they announce.
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        let Ok(n) = socket.read(&mut buf).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        request.extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let length = text
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if request.len() >= end + 4 + length {
                                break;
                            }
                        }
                    }
                    let _ = socket.write_all(&response).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        let args = crate::s3::EndpointArgs {
            endpoint: format!("http://{addr}"),
            bucket: "b".into(),
            prefix: String::new(),
            access_key: Some("a".into()),
            secret_key: Some("s".into()),
            session_token: None,
            region: Some("us-east-1".into()),
            virtual_hosted: false,
        };
        let client = crate::s3::client(&args, crate::net::Link::unlimited()).await;
        Store::new(client, "b".into(), 1)
    }

    /// One event-stream message of `event_type` with `payload`.
    fn event(event_type: &str, payload: &[u8]) -> Vec<u8> {
        use aws_smithy_eventstream::frame::write_message_to;
        use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
        let message = Message::new(Bytes::copy_from_slice(payload))
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String(event_type.to_string().into()),
            ))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".to_string().into()),
            ))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/octet-stream".to_string().into()),
            ));
        let mut out = Vec::new();
        write_message_to(&message, &mut out).expect("encode");
        out
    }

    /// A select answered with rows but no End event, or cut off mid-body, is an error that
    /// names the object and the range — never rows.
    #[tokio::test]
    async fn a_select_stream_cut_short_is_an_error_naming_object_and_range() {
        let records = event("Records", b"1|a\n2|b\n");
        let head = |length: usize| {
            format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n").into_bytes()
        };
        // A complete body without End.
        let no_end = [head(records.len()), records.clone()].concat();
        // A body that stops half-way through what its Content-Length announced.
        let cut = [head(records.len() * 2), records].concat();
        for (response, what) in [(no_end, "End event"), (cut, "")] {
            let store = store_answering(response).await;
            let error = select(
                &store,
                "t/part-1.dat",
                Some((0, 100)),
                "SELECT s._1",
                Format::Csv,
            )
            .await
            .expect_err("a result cut short is an error")
            .to_string();
            assert!(
                error.contains("t/part-1.dat (ScanRange 0-99)") && error.contains(what),
                "{error}"
            );
        }
    }

    /// `inventory` (four columns) as one 100 MiB part in `mode`, for planning.
    fn inventory(mode: Mode) -> S3Table {
        let schema = crate::schema::table_schema("inventory").expect("a TPC-DS table");
        let objects = vec![("inventory/part-00000.dat".to_string(), 100 << 20)];
        S3Table::new(schema, objects, 20.0, offline_store(), mode, Format::Csv)
    }

    /// The mode each scan of `inventory` is planned in, for a table in `mode`.
    async fn planned(mode: Mode, projection: Option<Vec<usize>>, filters: &[Expr]) -> Mode {
        let table = inventory(mode);
        let state = SessionContext::new().state();
        let plan = table
            .scan(&state, projection.as_ref(), filters, None)
            .await
            .expect("planned");
        let scan = plan.downcast_ref::<ScanExec>().expect("a ScanExec");
        if scan.mode == Mode::Fetch {
            assert!(
                scan.partitions
                    .iter()
                    .flatten()
                    .all(|r| matches!(r, Request::Get { .. })),
                "a fetched scan sends GETs"
            );
        }
        scan.mode
    }

    /// The tables scanned under `plan`.
    fn tables_under(plan: &Arc<dyn ExecutionPlan>) -> Vec<&'static str> {
        let mut tables = Vec::new();
        if let Some(scan) = plan.downcast_ref::<ScanExec>() {
            tables.push(scan.table);
        }
        for child in plan.children() {
            tables.extend(tables_under(child));
        }
        tables
    }

    /// The build side of every hash join under `plan`, as the tables it scans.
    fn build_sides(plan: &Arc<dyn ExecutionPlan>) -> Vec<Vec<&'static str>> {
        let mut sides = Vec::new();
        if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
            sides.push(tables_under(join.left()));
        }
        for child in plan.children() {
            sides.extend(build_sides(child));
        }
        sides
    }

    /// With the key columns' distinct values known, a fact table joined to several
    /// dimensions is probed, never built into a hash table (q39's core at SF 1: it was
    /// built on 11.7 M inventory rows and probed with 31 dates).
    #[tokio::test]
    async fn joins_build_on_the_dimensions_not_the_fact_table() {
        let store = offline_store();
        // SF 1 sizes and line lengths, roughly.
        let sizes = [
            ("inventory", 235_000_000u64, 20.0),
            ("item", 5_000_000, 280.0),
            ("warehouse", 600, 120.0),
            ("date_dim", 10_000_000, 140.0),
        ];
        let tables: Vec<S3Table> = sizes
            .iter()
            .map(|&(name, bytes, line)| {
                let schema = crate::schema::table_schema(name).expect("a TPC-DS table");
                let objects = vec![(format!("{name}/part-00000.dat"), bytes)];
                S3Table::new(
                    schema,
                    objects,
                    line,
                    Arc::clone(&store),
                    Mode::Dynamic,
                    Format::Csv,
                )
            })
            .collect();
        let ctx = SessionContext::new();
        for table in with_key_statistics(tables) {
            ctx.register_table(table.name(), Arc::new(table))
                .expect("registered");
        }
        let plan = ctx
            .sql(
                "SELECT w_warehouse_name, i_item_sk, d_moy, avg(inv_quantity_on_hand) \
                 FROM inventory, item, warehouse, date_dim \
                 WHERE inv_item_sk = i_item_sk AND inv_warehouse_sk = w_warehouse_sk \
                 AND inv_date_sk = d_date_sk AND d_year = 2001 AND d_moy = 1 \
                 GROUP BY w_warehouse_name, i_item_sk, d_moy",
            )
            .await
            .expect("planned")
            .create_physical_plan()
            .await
            .expect("a physical plan");
        let sides = build_sides(&plan);
        assert_eq!(sides.len(), 3, "three hash joins");
        for side in sides {
            assert!(!side.contains(&"inventory"), "a join builds on {side:?}");
        }
    }

    /// Fetch mode takes the filters the pushdown modes send and applies them itself: it
    /// reads the columns they need, keeps the rows that pass (a NULL does not) and drops
    /// those columns again.
    #[tokio::test]
    async fn a_fetched_scan_applies_the_filters_the_pushdown_modes_send() {
        use datafusion::arrow::array::{Array, Int32Array};
        // Qualified, as DataFusion hands a scan its filters.
        let quantity = col("inventory.inv_quantity_on_hand").gt(lit(5));
        let two_columns = (col("inv_item_sk") + col("inv_warehouse_sk")).gt(lit(5));
        let offered = [&quantity, &two_columns];
        let accepted = |mode| {
            inventory(mode)
                .supports_filters_pushdown(&offered)
                .expect("answers")
        };
        let fetch = accepted(Mode::Fetch);
        assert_eq!(fetch, accepted(Mode::Pushdown));
        assert!(matches!(
            fetch[..],
            [
                TableProviderFilterPushDown::Exact,
                TableProviderFilterPushDown::Unsupported
            ]
        ));

        let state = SessionContext::new().state();
        let plan = inventory(Mode::Fetch)
            .scan(
                &state,
                Some(&vec![1]),
                std::slice::from_ref(&quantity),
                None,
            )
            .await
            .expect("planned");
        let scan = plan.downcast_ref::<ScanExec>().expect("a ScanExec");
        let filter = scan
            .client_filter
            .as_ref()
            .expect("fetch applies its filter");
        assert_eq!(filter.read, [1, 3], "the item key, then the quantity");

        let items = Int32Array::from(vec![10, 20, 30, 40]);
        let quantities = Int32Array::from(vec![Some(3), Some(6), None, Some(9)]);
        let batch = RecordBatch::try_new(
            Arc::new(scan.schema.project(&filter.read).expect("columns")),
            vec![Arc::new(items), Arc::new(quantities)],
        )
        .expect("a batch");
        let kept = filter.apply(&batch, &scan.output_schema).expect("filtered");
        assert_eq!(kept.schema(), scan.output_schema);
        let kept = kept.column(0).as_any().downcast_ref::<Int32Array>();
        assert_eq!(kept.expect("ints").values(), &[20, 40]);
    }

    #[tokio::test]
    async fn a_scan_of_every_column_under_no_filter_is_fetched() {
        let some_quantity = col("inv_quantity_on_hand").gt(lit(5));
        for mode in [Mode::Pushdown, Mode::Dynamic] {
            assert_eq!(planned(mode, None, &[]).await, Mode::Fetch);
            assert_eq!(
                planned(mode, Some(vec![0, 1, 2, 3]), &[]).await,
                Mode::Fetch
            );
            assert_eq!(planned(mode, Some(vec![0, 3]), &[]).await, mode);
            assert_eq!(planned(mode, Some(vec![]), &[]).await, mode);
            assert_eq!(
                planned(mode, None, std::slice::from_ref(&some_quantity)).await,
                mode
            );
        }
        assert_eq!(planned(Mode::Fetch, Some(vec![0]), &[]).await, Mode::Fetch);
    }
}
