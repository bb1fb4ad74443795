//! [`S3Table`], a TPC-DS table as a DataFusion table provider: which filters it takes, and
//! a scan's requests.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{ExecutionPlan, Partitioning, PlanProperties};

use crate::layout::Format;
use crate::pushdown::Pred;
use crate::scan::exec::ScanExec;
use crate::scan::filter::{lower, naming, ClientFilter, ScanFilters};
use crate::scan::request::Request;
use crate::scan::{Mode, Store};
use crate::schema::{arrow_schema, key_domain, TableSchema};

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
    /// Each filter DataFusion offered, lowered to S3 Select ([`lower`]) when it was offered;
    /// the scan takes the lowered form from here.
    lowered: Mutex<HashMap<Expr, Option<Pred>>>,
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
            lowered: Mutex::new(HashMap::new()),
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
            .map(|expr| match self.lowered(expr) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
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
                self.lowered(f).ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "filter {f} was not accepted for pushdown but was pushed down"
                    ))
                })
            })
            .collect::<DfResult<_>>()?;
        let planned = (!preds.is_empty()).then_some(Pred::And(preds));
        let mode = self.scan_mode(projection.len(), planned.is_some());
        let client = match mode {
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
            filters: ScanFilters {
                planned,
                client,
                dynamic: Vec::new(),
            },
            partitions,
            estimated_rows: self.estimated_rows,
            distinct: projection_distinct,
            total_bytes: self.total_bytes,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }
}

impl S3Table {
    /// `expr` lowered to S3 Select, once per distinct filter: DataFusion asks which filters
    /// the table takes, then hands the scan those it took.
    fn lowered(&self, expr: &Expr) -> Option<Pred> {
        let lower_now = || lower(expr, &self.schema, self.naming());
        let Ok(mut lowered) = self.lowered.lock() else {
            return lower_now();
        };
        lowered
            .entry(expr.clone())
            .or_insert_with(lower_now)
            .clone()
    }

    fn naming(&self) -> crate::pushdown::Naming<'_> {
        naming(self.format, &self.schema, self.store.behaviour)
    }

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
