//! [`S3Table`], a TPC-DS table as a DataFusion table provider: which filters it takes, and
//! a scan's requests.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema as DfTableSchema;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::filter::FilterExecBuilder;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::ExecutionPlan;

use crate::layout::Format;
use crate::pushdown::Pred;
use crate::scan::choice::{Choice, PARQUET, TEXT};
use crate::scan::filter::{columns_read, lower, naming, ClientFilter, ScanFilters};
use crate::scan::request::{Request, Results};
use crate::scan::sample::{Prediction, Sample};
use crate::scan::source::{ScanSource, ScanUnit, SqlMetric};
use crate::scan::{Mode, Store, StoreSpec};
use crate::schema::{arrow_schema, key_domain, table_schema, TableSchema};

/// One TPC-DS table as a DataFusion table provider.
#[derive(Debug)]
pub struct S3Table {
    def: Arc<TableDef>,
    /// Each filter DataFusion offered, lowered to S3 Select ([`lower`]) when it was offered;
    /// the scan takes the lowered form from here.
    lowered: Mutex<HashMap<Expr, Option<Pred>>>,
}

/// What a table is: its schema, part objects and estimates, the store and the mode. The
/// provider and every scan planned from it share one; it is what a plan carries to another
/// process ([`TableWire`]).
#[derive(Debug, Clone)]
pub(crate) struct TableDef {
    pub(super) name: &'static str,
    pub(super) schema: SchemaRef,
    /// The schema of the files: the table's columns and the empty field after the trailing
    /// `|` of every dsdgen line.
    pub(super) file_schema: SchemaRef,
    objects: Vec<(String, u64)>,
    /// The objects' total size.
    pub(super) total_bytes: u64,
    /// Estimated rows (from the sampled line length), for DataFusion's join ordering.
    pub(super) estimated_rows: usize,
    /// Estimated distinct values per column, where known (see [`S3Table::with_table_rows`]).
    pub(super) distinct: Vec<Option<usize>>,
    pub(super) store: Arc<Store>,
    mode: Mode,
    pub(super) format: Format,
    /// Auto mode: the sample of the table to predict answers from, and the link's rate in
    /// bytes per second (unbounded when `None`). Another process gets text scans already
    /// chosen, and pushes Parquet scans down.
    pub(super) auto: Option<(Arc<Sample>, Option<f64>)>,
}

/// A [`TableDef`] as plans carry it between processes: the table by name (the schema is
/// Sift's own), its store without credentials.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct TableWire {
    name: String,
    objects: Vec<(String, u64)>,
    estimated_rows: usize,
    distinct: Vec<Option<usize>>,
    pub(crate) store: StoreSpec,
    mode: Mode,
    format: Format,
}

impl TableDef {
    fn new(
        table: &'static TableSchema,
        objects: Vec<(String, u64)>,
        estimated_rows: usize,
        store: Arc<Store>,
        mode: Mode,
        format: Format,
    ) -> TableDef {
        let schema = arrow_schema(table);
        let mut file_fields: Vec<Field> =
            schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        file_fields.push(Field::new("__trailing", DataType::Utf8, true));
        TableDef {
            name: table.name,
            schema: Arc::new(schema),
            file_schema: Arc::new(Schema::new(file_fields)),
            total_bytes: objects.iter().map(|(_, size)| size).sum(),
            objects,
            estimated_rows,
            distinct: vec![None; table.columns.len()],
            store,
            mode,
            format,
            auto: None,
        }
    }

    /// The table as another process rebuilds it; `None` when its store's location is not
    /// known.
    pub(crate) fn wire(&self) -> Option<TableWire> {
        Some(TableWire {
            name: self.name.to_string(),
            objects: self.objects.clone(),
            estimated_rows: self.estimated_rows,
            distinct: self.distinct.clone(),
            store: self.store.spec()?,
            mode: self.mode,
            format: self.format,
        })
    }

    /// The table `wire` describes, over `store` (which [`TableWire::store`] describes).
    pub(crate) fn from_wire(wire: TableWire, store: Arc<Store>) -> DfResult<TableDef> {
        let table = table_schema(&wire.name).ok_or_else(|| {
            DataFusionError::Plan(format!("no TPC-DS table {:?} in this Sift", wire.name))
        })?;
        if wire.distinct.len() != table.columns.len() {
            return Err(DataFusionError::Plan(format!(
                "table {} has {} columns here, {} in the plan: Sift versions differ",
                wire.name,
                table.columns.len(),
                wire.distinct.len()
            )));
        }
        let mut def = TableDef::new(
            table,
            wire.objects,
            wire.estimated_rows,
            store,
            wire.mode,
            wire.format,
        );
        def.distinct = wire.distinct;
        Ok(def)
    }

    /// Auto mode over Parquet: whether a scan decoding the table's columns `read` is fetched
    /// whatever its filters, a select of it not paying even if it answered nothing; false in
    /// the other modes and over text, where a filter can make any scan pushed.
    pub(super) fn fetched_whatever_the_filters(&self, read: &[usize]) -> bool {
        let Some((sample, link_rate)) = self.auto.as_ref() else {
            return false;
        };
        if self.format != Format::Parquet {
            return false;
        }
        let empty = Prediction {
            fetch_bytes: sample.fetch_bytes(read, self.total_bytes),
            answer_bytes: 0.0,
        };
        !Choice::new(Some(empty), *link_rate, PARQUET).pushed
    }

    /// The size of the table's part `key`; `None` when it is not one.
    pub(super) fn object_size(&self, key: &str) -> Option<u64> {
        self.objects
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, size)| *size)
    }

    fn naming(&self) -> crate::pushdown::Naming<'_> {
        naming(self.format, &self.schema, self.store.behaviour)
    }

    /// `expr` lowered to S3 Select, or an error for a filter the table never took.
    fn lower(&self, expr: &Expr) -> DfResult<Pred> {
        lower(expr, &self.schema, self.naming()).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "filter {expr} was not accepted for pushdown but was pushed down"
            ))
        })
    }
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
        let total_bytes: u64 = objects.iter().map(|(_, size)| size).sum();
        let estimated_rows = (total_bytes as f64 / line_bytes.max(1.0)) as usize;
        S3Table::from_def(Arc::new(TableDef::new(
            table,
            objects,
            estimated_rows,
            store,
            mode,
            format,
        )))
    }

    pub(crate) fn from_def(def: Arc<TableDef>) -> S3Table {
        S3Table {
            def,
            lowered: Mutex::new(HashMap::new()),
        }
    }

    /// The table's rows, as estimated from its objects' sizes.
    pub(crate) fn estimated_rows(&self) -> usize {
        self.def.estimated_rows
    }

    /// Auto mode: the rows that pass `filters` (each one the table takes,
    /// [`Self::lowered`]), predicted over the table's sample ([`Sample::kept_rows`]); `None`
    /// in the other modes, over gzip text (which has no sample), for a filter the store
    /// cannot apply, or when the sample cannot tell.
    pub(crate) fn predicted_rows(&self, filters: &[Expr]) -> Option<f64> {
        let (sample, _) = self.def.auto.as_ref()?;
        sample.kept_rows(&self.where_clause(filters)?, self.def.estimated_rows)
    }

    /// `filters` (each one the table takes) as the store's WHERE clause; `None` for a
    /// filter the store cannot apply.
    fn where_clause(&self, filters: &[Expr]) -> Option<String> {
        let preds = filters
            .iter()
            .map(|f| self.lowered(f))
            .collect::<Option<Vec<_>>>()?;
        match preds.is_empty() {
            true => Some("TRUE".to_string()),
            false => Pred::And(preds).to_sql_in(self.def.naming()),
        }
    }

    /// Auto mode over Parquet: whether a scan of the columns `projection` (every column
    /// when `None`) under `filters` is fetched whatever its filters
    /// ([`TableDef::fetched_whatever_the_filters`]).
    pub(crate) fn fetched_whatever_the_filters(
        &self,
        projection: Option<&[usize]>,
        filters: &[Expr],
    ) -> bool {
        let all: Vec<usize>;
        let projection = match projection {
            Some(columns) => columns,
            None => {
                all = (0..self.def.schema.fields().len()).collect();
                &all
            }
        };
        columns_read(&self.def.schema, projection, filters)
            .is_ok_and(|read| self.def.fetched_whatever_the_filters(&read))
    }

    /// Auto mode over Parquet: whether `filters` (each one the table takes) keep the rows of
    /// a range of the column `key`, and some rows. Each filter is a comparison of a column
    /// with a value, a range or `IS NOT NULL`, and in the table's sample either every
    /// column they name grows with `key` ([`Sample::grows_with`]: a year, a span of months
    /// or of dates of `date_dim`), or the columns held to one value each, then the one
    /// held to a range, grow with `key` taken together, in some order
    /// ([`Sample::grows_in_order_with`]: a year's quarter, `d_year` then `d_qoy`; half an
    /// hour of `time_dim`, `t_hour` then `t_minute`), for rows equal in their first
    /// columns and in a range in the last are neighbours in that order. And a sampled row
    /// passes them, as a row of the table. False with no filter, when no sampled row passes
    /// (the rows kept may be none), and in the other modes.
    pub(crate) fn keeps_a_key_range(&self, filters: &[Expr], key: &str) -> bool {
        let Some((sample, _)) = self.def.auto.as_ref() else {
            return false;
        };
        let index = |name: &str| self.def.schema.index_of(name).ok();
        let Some(key) = index(key) else {
            return false;
        };
        let mut named = Vec::new();
        if filters.is_empty() || !filters.iter().all(|f| range_columns(f, &mut named)) {
            return false;
        }
        let Some(held) = named
            .iter()
            .map(|&(c, how)| Some((index(c)?, how)))
            .collect::<Option<Vec<_>>>()
        else {
            return false;
        };
        let each_grows = held.iter().all(|&(c, _)| sample.grows_with(key, c));
        (each_grows
            || orders_of_a_range(key, &held)
                .iter()
                .any(|columns| sample.grows_in_order_with(key, columns)))
            && self
                .where_clause(filters)
                .is_some_and(|clause| sample.keeps_any(&clause))
    }

    /// Auto mode over Parquet: whether `column`'s values increase along the table's sample,
    /// as a key the table is sorted by does (no two rows share one).
    pub(crate) fn is_increasing(&self, column: &str) -> bool {
        let Some((sample, _)) = self.def.auto.as_ref() else {
            return false;
        };
        self.def
            .schema
            .index_of(column)
            .is_ok_and(|c| sample.grows_with(c, c))
    }

    /// Auto mode over Parquet: whether a scan of the columns `projection` (every column
    /// when `None`) under `filters` chooses once its run-time filters are known, rather
    /// than being fetched whole as planned ([`TableDef::scan_mode`]).
    pub(crate) fn chooses_after_run_time_filters(
        &self,
        projection: Option<&[usize]>,
        filters: &[Expr],
    ) -> bool {
        let columns = projection.map_or(self.def.schema.fields().len(), <[usize]>::len);
        self.def.auto.is_some()
            && self.def.format == Format::Parquet
            && self.def.scan_mode(columns, !filters.is_empty()) == Mode::Auto
    }

    pub(crate) fn def(&self) -> &Arc<TableDef> {
        &self.def
    }

    /// In auto mode, the sample each scan's choice is predicted from and the link's rate in
    /// bytes per second (unbounded when `None`).
    pub(crate) fn with_sample(mut self, sample: Arc<Sample>, link_rate: Option<f64>) -> S3Table {
        Arc::make_mut(&mut self.def).auto = Some((sample, link_rate));
        self
    }
}

#[async_trait]
impl TableProvider for S3Table {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.def.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The filters S3 Select can express exactly, in every mode: the three modes then plan
    /// the same tree and differ only in their scans. (When fetch mode left them to a
    /// `FilterExec`, its selectivity estimate gave 15 of the 74 `ceph72` statements another
    /// join order than the pushdown modes at SF 1, and the comparison was partly of plans.)
    /// A fetched scan applies them on the client (`ClientFilter`).
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
            None => (0..self.def.schema.fields().len()).collect(),
        };
        let preds: Vec<Pred> = filters
            .iter()
            .map(|f| self.lowered(f).map_or_else(|| self.def.lower(f), Ok))
            .collect::<DfResult<_>>()?;
        let fitted = self.def.fit(state, &projection, filters, preds)?;
        let Some(over) = fitted.over else {
            return self.def.plan(state, projection, fitted.pushed);
        };
        // Read the columns the filters left over use too, apply them, and drop those
        // columns again: the scan's output is as DataFusion planned it.
        let scan = self.def.plan(state, over.read.clone(), fitted.pushed)?;
        let output: Vec<usize> = (0..projection.len()).collect();
        let filter = FilterExecBuilder::new(over.predicate, scan).apply_projection(Some(output))?;
        Ok(Arc::new(filter.build()?))
    }
}

/// The filters one scan's statement takes, and those it leaves over.
struct Fitted {
    /// The filters the store applies, each with its S3 Select form.
    pushed: (Vec<Expr>, Vec<Pred>),
    /// The filters that would make the statement longer than the store takes, applied by
    /// DataFusion over the scan; `None` when the statement takes them all.
    over: Option<ClientFilter>,
}

impl TableDef {
    /// Which of a scan's filters its statement can carry: all of them, unless the store has
    /// a limit on the expression's length (Ceph RGW's 4 KiB) and they exceed it — say an IN
    /// list of a subquery's thousand answers. Then the filters are taken in their order,
    /// each one while the statement still fits, and the others are left over. The statement
    /// checked is the select a pushed-down scan would send reading the projection's columns
    /// and every filter's (the most a scan with filters left over reads); it is checked in
    /// every mode, fetch too, so that all modes plan the same tree. Run-time filters are not
    /// counted: they are dropped as needed when the scan starts ([`ScanFilters::statement`]).
    fn fit(
        self: &Arc<TableDef>,
        state: &dyn Session,
        projection: &[usize],
        filters: &[Expr],
        preds: Vec<Pred>,
    ) -> DfResult<Fitted> {
        let all = (filters.to_vec(), preds);
        let fits =
            |columns: &[usize], (filters, preds): &(Vec<Expr>, Vec<Pred>)| -> DfResult<bool> {
                let pushed = ScanSource::new(
                    Arc::clone(self),
                    state,
                    Mode::Pushdown,
                    columns.to_vec(),
                    filters.clone(),
                    preds.clone(),
                )?;
                Ok(pushed.planned_fits())
            };
        if self.store.behaviour.max_expression_bytes.is_none() || fits(projection, &all)? {
            return Ok(Fitted {
                pushed: all,
                over: None,
            });
        }
        let widest = columns_read(&self.schema, projection, filters)?;
        let (mut pushed, mut over) = ((Vec::new(), Vec::new()), Vec::new());
        for (filter, pred) in all.0.into_iter().zip(all.1) {
            pushed.0.push(filter);
            pushed.1.push(pred);
            if !fits(&widest, &pushed)? {
                pushed.1.pop();
                over.extend(pushed.0.pop());
            }
        }
        tracing::debug!(
            "{}: {} of {} filters make the select longer than the store takes; DataFusion applies them",
            self.name,
            over.len(),
            filters.len()
        );
        let over = match over.is_empty() {
            true => None,
            false => Some(ClientFilter::new(state, &self.schema, projection, &over)?),
        };
        Ok(Fitted { pushed, over })
    }

    /// The scan of the columns `projection` with the filters `pushed` (and their S3 Select
    /// forms), in the table's mode.
    fn plan(
        self: &Arc<TableDef>,
        state: &dyn Session,
        projection: Vec<usize>,
        (filters, preds): (Vec<Expr>, Vec<Pred>),
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mode = self.scan_mode(projection.len(), !preds.is_empty());
        let source = |mode| {
            ScanSource::new(
                Arc::clone(self),
                state,
                mode,
                projection.clone(),
                filters.clone(),
                preds.clone(),
            )
        };
        let source = match mode {
            // A Parquet scan chooses when it starts, once its run-time filters are known.
            Mode::Auto if self.format == Format::Parquet => source(Mode::Auto)?,
            Mode::Auto => {
                let pushed = source(Mode::Dynamic)?;
                let choice = pushed.choose();
                ScanSource {
                    choice: Some(choice),
                    ..match choice.pushed {
                        true => pushed,
                        false => source(Mode::Fetch)?,
                    }
                }
            }
            mode => source(mode)?,
        };
        let target = state.config_options().execution.target_partitions.max(1);
        let partitions = self.plan_requests(source.mode, target);
        Ok(source.into_plan(partitions))
    }
}

impl ScanSource {
    /// The scan of `def` in `mode`, of the columns `projection` and the rows that pass
    /// `filters` (whose S3 Select forms are `preds`).
    pub(super) fn new(
        def: Arc<TableDef>,
        state: &dyn Session,
        mode: Mode,
        projection: Vec<usize>,
        filters: Vec<Expr>,
        preds: Vec<Pred>,
    ) -> DfResult<ScanSource> {
        let output = Arc::new(def.schema.project(&projection)?);
        let client = || ClientFilter::new(state, &def.schema, &projection, &filters);
        let client = match mode {
            _ if filters.is_empty() => None,
            Mode::Fetch => Some(client()?),
            Mode::Auto => Some(client()?.with_key_sets()?),
            Mode::Pushdown | Mode::Dynamic => None,
        };
        Ok(ScanSource {
            table: def,
            mode,
            projection,
            output: DfTableSchema::from(output),
            filters: ScanFilters {
                planned: (!preds.is_empty()).then_some(Pred::And(preds)),
                client,
                dynamic: Vec::new(),
            },
            logical_filters: filters,
            metrics: ExecutionPlanMetricsSet::new(),
            sql_metric: SqlMetric::Custom,
            choice: None,
            at_start: (mode == Mode::Auto).then(Default::default),
        })
    }

    /// Auto mode's choice for this text scan (planned as pushed down): pushed down when its
    /// answer, predicted over the table's sample, makes that the faster way at the link's
    /// rate ([`Choice`]).
    fn choose(&self) -> Choice {
        let Some((sample, link_rate)) = &self.table.auto else {
            return Choice::new(None, None, TEXT);
        };
        let predicted = match self.table.format {
            Format::Csv => sample.predict(
                &self.planned_sql(),
                Results::Csv,
                &self.read_columns(),
                self.table.total_bytes,
            ),
            Format::CsvGzip | Format::Parquet => None,
        };
        Choice::new(predicted, *link_rate, TEXT)
    }

    /// The scan of `units`, each partition stopping after `limit` rows when there is one,
    /// as another process rebuilds it ([`ScanSource::from_wire`]), apart from its filters
    /// ([`ScanSource::logical_filters`]); `None` when its store's location is unknown.
    pub(crate) fn wire(&self, units: &[ScanUnit], limit: Option<usize>) -> Option<ScanWire> {
        Some(ScanWire {
            table: self.table.wire()?,
            mode: self.mode,
            projection: self.projection.clone(),
            partitions: units.iter().map(|u| u.requests().to_vec()).collect(),
            choice: self.choice,
            limit,
        })
    }

    /// The filters the scan was planned with, as DataFusion gave them.
    pub(crate) fn logical_filters(&self) -> &[Expr] {
        &self.logical_filters
    }

    /// The scan plan `wire` and `filters` describe, over `store` (which `wire.table.store`
    /// describes). Dynamic filters are not carried: they cannot cross processes.
    pub(crate) fn from_wire(
        wire: ScanWire,
        filters: Vec<Expr>,
        store: Arc<Store>,
        state: &dyn Session,
    ) -> DfResult<Arc<DataSourceExec>> {
        let def = Arc::new(TableDef::from_wire(wire.table, store)?);
        if let Some(&i) = wire
            .projection
            .iter()
            .find(|&&i| i >= def.schema.fields().len())
        {
            return Err(DataFusionError::Plan(format!(
                "column {i} of table {} in the plan does not exist here",
                def.name
            )));
        }
        let preds = filters
            .iter()
            .map(|f| def.lower(f))
            .collect::<DfResult<_>>()?;
        let source = ScanSource::new(def, state, wire.mode, wire.projection, filters, preds)?;
        let source = ScanSource {
            sql_metric: SqlMetric::NamedCount,
            choice: wire.choice,
            ..source
        };
        let units = wire.partitions.into_iter().map(ScanUnit::from).collect();
        Ok(source.into_plan_of_units(units, wire.limit))
    }
}

/// A Sift scan as plans carry it between processes: its source, and the requests of the
/// partitions it still has (a Ballista task's share).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct ScanWire {
    pub(crate) table: TableWire,
    mode: Mode,
    projection: Vec<usize>,
    partitions: Vec<Vec<Request>>,
    /// Auto mode's choice of `mode`, for the plans the executors show.
    #[serde(default)]
    choice: Option<Choice>,
    /// The rows after which each partition stops: DataFusion puts a LIMIT's fetch on the
    /// scan and may drop the limit above it within the stage.
    #[serde(default)]
    limit: Option<usize>,
}

impl S3Table {
    /// `expr` lowered to S3 Select, once per distinct filter: DataFusion asks which filters
    /// the table takes, then hands the scan those it took.
    fn lowered(&self, expr: &Expr) -> Option<Pred> {
        let lower_now = || lower(expr, &self.def.schema, self.def.naming());
        let Ok(mut lowered) = self.lowered.lock() else {
            return lower_now();
        };
        lowered
            .entry(expr.clone())
            .or_insert_with(lower_now)
            .clone()
    }

    /// The table's name.
    pub fn name(&self) -> &'static str {
        self.def.name
    }

    /// The key columns' distinct-value estimates from `rows` (every table's estimated rows):
    /// a key has at most as many distinct values as the table it refers to has rows, and no
    /// more than its own table has rows.
    fn with_table_rows(mut self, rows: &BTreeMap<&'static str, usize>) -> S3Table {
        let def = Arc::make_mut(&mut self.def);
        for (i, field) in def.schema.fields().iter().enumerate() {
            let domain = key_domain(field.name()).and_then(|table| rows.get(table));
            def.distinct[i] = domain.map(|&n| n.min(def.estimated_rows));
        }
        self
    }
}

/// How a comparison with values holds its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// To one value (`=`).
    One,
    /// To a range (`<`, `<=`, `>`, `>=`, `BETWEEN`).
    Range,
    /// To its values (`IS NOT NULL`).
    NotNull,
}

/// The orders of columns in which, taken together, they must grow with `key` for the
/// comparisons `held` to keep a range of it: those held to one value, in any order, then
/// the one held to a range, if any. `IS NOT NULL` of the key, which has no NULLs when it
/// grows, holds nothing. None when two columns are held to ranges, and none tried for
/// more than three columns held to one value each.
fn orders_of_a_range(key: usize, held: &[(usize, Held)]) -> Vec<Vec<usize>> {
    let mut one: Vec<usize> = Vec::new();
    let mut range: Vec<usize> = Vec::new();
    for &(c, how) in held {
        match how {
            Held::NotNull if c == key => {}
            Held::One => one.push(c),
            Held::Range | Held::NotNull => range.push(c),
        }
    }
    for columns in [&mut one, &mut range] {
        columns.sort_unstable();
        columns.dedup();
    }
    one.retain(|c| !range.contains(c));
    if range.len() > 1 || one.len() > 3 {
        return Vec::new();
    }
    let mut orders = vec![Vec::new()];
    for _ in 0..one.len() {
        orders = orders
            .into_iter()
            .flat_map(|order: Vec<usize>| {
                one.iter()
                    .filter(|c| !order.contains(c))
                    .map(|&c| [order.as_slice(), &[c]].concat())
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    for order in &mut orders {
        order.extend(&range);
    }
    orders
}

/// Whether `filter` compares plain columns with values only (`=`, `<`, `<=`, `>`, `>=`,
/// `BETWEEN`, `IS NOT NULL`, under AND), each of which then keeps a range of its column;
/// the columns are added to `columns` with how each comparison holds its column.
fn range_columns<'a>(filter: &'a Expr, columns: &mut Vec<(&'a str, Held)>) -> bool {
    use datafusion::logical_expr::{Between, BinaryExpr, Operator};
    let column = |e: &'a Expr| match e {
        Expr::Column(c) => Some(c.name.as_str()),
        _ => None,
    };
    let value = |e: &Expr| matches!(e, Expr::Literal(v, _) if !v.is_null());
    let found = match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => {
                return range_columns(left, columns) && range_columns(right, columns);
            }
            Operator::Eq | Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => {
                let how = match op {
                    Operator::Eq => Held::One,
                    _ => Held::Range,
                };
                match (column(left), column(right)) {
                    (Some(c), None) if value(right) => Some((c, how)),
                    (None, Some(c)) if value(left) => Some((c, how)),
                    _ => None,
                }
            }
            _ => None,
        },
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if value(low) && value(high) => column(expr).map(|c| (c, Held::Range)),
        Expr::IsNotNull(e) => column(e).map(|c| (c, Held::NotNull)),
        _ => None,
    };
    found.map(|c| columns.push(c)).is_some()
}

impl TableDef {
    /// How one scan reads: in the table's mode, except that a scan needing every column
    /// under no filter is fetched in every mode. S3 Select would send the whole table back,
    /// re-serialised, after parsing it on the store: more work on both sides for the same
    /// bytes (q21 and q39 read all of `inventory`: 0.6× fetch's speed on loopback). A
    /// planner weighing pushdown skips it, and so does this one. In the run-time filter
    /// modes such a scan is pushed down when a filtered dimension's join keys, read before
    /// the statement (`cluster::keys`), give it a filter.
    fn scan_mode(&self, columns: usize, filtered: bool) -> Mode {
        if !filtered && columns == self.schema.fields().len() {
            Mode::Fetch
        } else {
            self.mode
        }
    }

    /// Splits the table's objects into the requests of a scan in `mode` and deals them to
    /// at most `target` partitions, in order: a unit at a time, a unit being an object's
    /// requests where they must or should stay together, a select split elsewhere.
    pub(super) fn plan_requests(&self, mode: Mode, target: usize) -> Vec<Vec<Request>> {
        let step = match (mode, self.format) {
            // A Parquet file is read from its footer, a gzip stream from its start: whole.
            (_, Format::CsvGzip) | (Mode::Fetch, Format::Parquet) => u64::MAX,
            (Mode::Fetch, Format::Csv) => self.store.fetch_chunk,
            (Mode::Pushdown | Mode::Dynamic | Mode::Auto, _)
                if self.store.behaviour.scan_ranges =>
            {
                self.store.split_size
            }
            (Mode::Pushdown | Mode::Dynamic | Mode::Auto, _) => u64::MAX,
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
            match (mode, self.format) {
                // A GET chunk is not a whole record, so a part's chunks stay in one partition.
                (Mode::Fetch, _) => units.push(requests),
                // Auto fetches a Parquet scan's splits when a select would not pay; a part's
                // splits in one partition are then read as the part (one footer, its chunks
                // in coalesced GETs), as fetch mode reads it, not split by split with a
                // footer and a decoder each. Pushed, a partition's splits still go out
                // several at once.
                (Mode::Auto, Format::Parquet) => units.push(requests),
                // A select split is a whole record, so splits can be dealt out on their own.
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
    let rows: BTreeMap<&'static str, usize> = tables
        .iter()
        .map(|t| (t.def.name, t.def.estimated_rows))
        .collect();
    tables
        .into_iter()
        .map(|t| t.with_table_rows(&rows))
        .collect()
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{col, lit, Expr};

    use super::{orders_of_a_range, range_columns, Held};

    /// The columns `filter` keeps a range of, or `None` when it is not only such ranges.
    fn ranges(filter: Expr) -> Option<Vec<String>> {
        let mut columns = Vec::new();
        range_columns(&filter, &mut columns)
            .then(|| columns.iter().map(|(c, _)| c.to_string()).collect())
    }

    #[test]
    fn columns_held_to_one_value_come_before_the_one_held_to_a_range() {
        let held = |filter: Expr| {
            let mut columns = Vec::new();
            assert!(range_columns(&filter, &mut columns));
            columns.into_iter().map(|(_, how)| how).collect::<Vec<_>>()
        };
        let year = || col("d_year");
        assert_eq!(
            held(year().eq(lit(2000)).and(col("d_qoy").lt(lit(4)))),
            [Held::One, Held::Range]
        );
        assert_eq!(held(year().between(lit(1), lit(2))), [Held::Range]);
        assert_eq!(held(year().is_not_null()), [Held::NotNull]);
        use Held::*;
        // Key 0; a quarter of a year, the key not NULL: the year, then the quarter.
        assert_eq!(
            orders_of_a_range(0, &[(1, One), (2, One), (0, NotNull)]),
            [vec![1, 2], vec![2, 1]]
        );
        assert_eq!(
            orders_of_a_range(0, &[(1, One), (2, Range), (2, Range)]),
            [vec![1, 2]]
        );
        // A column held to a value and to a range is one of a range.
        assert_eq!(orders_of_a_range(0, &[(2, One), (2, Range)]), [vec![2]]);
        assert!(orders_of_a_range(0, &[(1, Range), (2, Range)]).is_empty());
        assert!(orders_of_a_range(0, &[(1, Range), (3, NotNull)]).is_empty());
        assert_eq!(
            orders_of_a_range(0, &[(1, One), (2, One), (3, One)]).len(),
            6
        );
        assert!(orders_of_a_range(0, &[(1, One), (2, One), (3, One), (4, One)]).is_empty());
    }

    #[test]
    fn comparisons_with_values_are_ranges_of_their_columns() {
        let year = || col("d_year");
        assert_eq!(ranges(year().eq(lit(2000))), Some(vec!["d_year".into()]));
        assert_eq!(ranges(lit(2000).lt_eq(year())), Some(vec!["d_year".into()]));
        assert_eq!(
            ranges(col("d_month_seq").between(lit(1200), lit(1211))),
            Some(vec!["d_month_seq".into()])
        );
        assert_eq!(
            ranges(year().eq(lit(2001)).and(col("d_qoy").eq(lit(2)))),
            Some(vec!["d_year".into(), "d_qoy".into()])
        );
        assert_eq!(ranges(year().is_not_null()), Some(vec!["d_year".into()]));
        // Lists, other columns, NULL, negations, OR and functions keep no single range.
        for filter in [
            year().in_list(vec![lit(1999), lit(2001)], false),
            year().eq(col("d_moy")),
            year().eq(lit(datafusion::common::ScalarValue::Int32(None))),
            year().not_eq(lit(2000)),
            col("d_month_seq").not_between(lit(1200), lit(1211)),
            year().eq(lit(2000)).or(year().eq(lit(2002))),
            (year() + lit(1)).eq(lit(2001)),
        ] {
            assert_eq!(ranges(filter.clone()), None, "{filter}");
        }
    }
}
