//! `run`: the TPC-DS queries in each scan mode, timed, metered and checked against fetch.
//!
//! Modes run one after another, each over all the selected queries, so that the gateway's
//! CPU time per mode can be read off its `/metrics` before and after. Within a mode the
//! queries run one at a time, so the bytes the link counted during a query are that query's.
//!
//! Results are compared as multisets of rows: TPC-DS queries often ORDER BY fewer columns
//! than they return, and DataFusion may break such ties differently when a plan's filters
//! sit elsewhere, so row order is not part of the comparison. Decimals and integers are
//! compared as printed (exactly); floating-point values (stddev, some ratios) are printed to
//! 12 significant digits first, because parallel aggregation sums them in varying order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::config::BALLISTA_SCHEDULER_MAX_PARTITIONS_PER_TASK;
use ballista_core::execution_plans::DistributedQueryExec;
use datafusion::arrow::array::{Array, Float32Array, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionContext;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{self, display::DisplayableExecutionPlan};
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::LogicalPlanNode;
use futures::FutureExt;
use md5::{Digest, Md5};
use serde::Serialize;

use crate::cluster::{keys, stages, subqueries, SchedulerUrl, SiftCodec};
use crate::error::{Error, Result};
use crate::layout::Format;
use crate::load::list_keys;
use crate::metrics;
use crate::net::Link;
use crate::probe::{self, SelectBehaviour};
use crate::queries;
use crate::s3::{table_prefix, EndpointArgs};
use crate::scan::{join_tree, with_key_statistics, Mode, Request, Results, S3Table, Sample, Store};
use crate::schema::SCHEMAS;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scale: f64,
    /// The format the data was loaded in.
    pub format: Format,
    pub modes: Vec<Mode>,
    pub queries: Vec<u32>,
    pub iterations: usize,
    /// S3 requests in flight for the whole client, across all scans.
    pub concurrency: usize,
    /// Bytes per ScanRange split in the pushdown modes (default: 32 MiB).
    pub split_bytes: Option<u64>,
    /// Emulated link rate in bytes per second.
    pub link_rate: Option<f64>,
    pub out: PathBuf,
    /// DataFusion partitions (default: the number of cores).
    pub partitions: Option<usize>,
    /// Print a line per query as it finishes.
    pub verbose: bool,
    /// Run on this Ballista scheduler's cluster instead of in this process.
    pub scheduler: Option<SchedulerUrl>,
    /// The memory pool of a single-process run: sorts and aggregations spill to disk beyond
    /// it, and a statement whose hash join does not fit runs again with sort-merge joins,
    /// which spill ([`MemoryUse`]). Unbounded when `None`.
    pub memory_limit: Option<u64>,
    /// How pushed-down scans ask for their answers.
    pub result_format: ResultFormat,
    /// Whether Arrow answers come compressed.
    pub result_compression: ResultCompression,
}

/// How pushed-down scans ask for their answers: as Arrow where the store writes it (Sift's
/// gateway, found by the store check before the run) and as CSV elsewhere; or always as CSV;
/// or as Arrow, failing the run if the store cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultFormat {
    #[default]
    Auto,
    Arrow,
    Csv,
}

/// Whether Arrow answers are asked for with their buffers LZ4-compressed: smaller on the
/// wire, at some CPU on the store and the client. `Auto` compresses when the client paces
/// an emulated link (`link_rate`), where the bytes are what costs; a real link that limits
/// the run (a cluster's hosts behind their network) asks with `Lz4`, loopback or a fast
/// network with `None`. CSV answers are never compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultCompression {
    #[default]
    Auto,
    Lz4,
    None,
}

impl ResultCompression {
    /// Whether to compress, given the emulated link the run paces (if any).
    fn compress(self, link_rate: Option<f64>) -> bool {
        match self {
            ResultCompression::Auto => link_rate.is_some(),
            ResultCompression::Lz4 => true,
            ResultCompression::None => false,
        }
    }
}

/// One query in one mode (`results.json`).
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub query: String,
    pub mode: Mode,
    /// Median wall time over the iterations.
    pub seconds: f64,
    /// Bytes received by the client over HTTP, headers included.
    pub bytes_received: u64,
    /// Object bytes the store read (GET bodies, or S3 Select's BytesScanned).
    pub bytes_scanned: u64,
    pub rows: u64,
    pub checksum: String,
    /// The error a statement failed with, recorded as its result (e.g. q90 divides by zero
    /// at small scale factors): every mode must fail the same way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Spill files written by its operators (`spill_count` summed over its plans).
    #[serde(skip_serializing_if = "is_zero")]
    pub spills: u64,
    /// Whether a statement ran again with sort-merge joins because a hash join's build side
    /// did not fit in the memory pool (its time and bytes include the first attempt).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sort_merge_retry: bool,
    /// Requests sent again after a transient failure, on the next endpoint.
    #[serde(skip_serializing_if = "is_zero")]
    pub retries: u64,
    /// Auto mode: scans pushed down, and scans fetched, by its choice.
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_pushed_by_choice: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_fetched_by_choice: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a memory-limited run used its pool (`summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryUse {
    /// The pool, in bytes.
    pub limit: u64,
    /// Queries whose operators spilled to disk, as `qN in MODE mode`.
    pub spilled: Vec<String>,
    /// Queries that ran again with sort-merge joins (DataFusion's hash join does not
    /// spill: its build side must fit), as `qN in MODE mode`.
    pub sort_merge_retries: Vec<String>,
}

/// Totals of one mode (`summary.json`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModeTotals {
    pub queries: usize,
    pub seconds: f64,
    pub bytes_received: u64,
    pub bytes_scanned: u64,
    /// CPU seconds the gateways spent during this mode, summed over those that publish
    /// `/metrics` and answered both before and after it.
    pub gateway_cpu_seconds: Option<f64>,
    /// Requests sent again after a transient failure (busy, unreachable, cut short).
    pub retries: u64,
    /// Auto mode: scans pushed down, and scans fetched, by its choice.
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_pushed_by_choice: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_fetched_by_choice: u64,
    /// Each endpoint's share, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointTotals>,
}

/// One endpoint's share of a mode's requests (`summary.json`): the requests it answered and
/// their response bytes (the scans' metrics: bodies, without HTTP framing).
#[derive(Debug, Clone, Serialize)]
pub struct EndpointTotals {
    pub endpoint: String,
    pub requests: u64,
    pub bytes_received: u64,
}

/// A mode against fetch (`summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub geomean_speedup: f64,
    pub max_speedup: f64,
    pub max_speedup_query: String,
    pub min_speedup: f64,
    /// 1 - bytes received in this mode / bytes received in fetch mode.
    pub bytes_reduction: f64,
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub scale_factor: f64,
    /// The endpoints, as given (comma-separated).
    pub endpoint: String,
    /// The Ballista scheduler the queries ran on; absent for a run in one process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// E.g. "1 Gbit/s emulated link", or "no link limit".
    pub link: String,
    /// The memory pool and what it made spill, for a run with `--memory-limit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
    pub iterations: usize,
    pub modes: BTreeMap<Mode, ModeTotals>,
    pub against_fetch: BTreeMap<Mode, Comparison>,
    /// Statements that returned no rows at this scale (in fetch mode, or the first mode).
    pub empty_statements: Vec<String>,
    /// Statements that failed (in the first mode), with their error.
    pub failed_statements: Vec<String>,
    /// Statements whose join tree ([`crate::scan::join_tree`]) differs from the first
    /// mode's, as `qN in MODE mode`. Empty when the modes' times compare their scans alone.
    pub differently_planned: Vec<String>,
    /// What the store's S3 Select does where stores differ ([`crate::probe`]): whether parts
    /// were split into ScanRanges, how empty fields were read, and the longest expression
    /// sent. AWS's behaviour when only fetch mode ran.
    pub select_behaviour: SelectBehaviour,
    /// Whether the pushed-down scans' Arrow answers came LZ4-compressed (false for CSV).
    pub answers_compressed: bool,
}

/// Rows of one statement as text, and their order-independent checksum.
struct StatementRows {
    lines: Vec<String>,
}

impl StatementRows {
    fn digest(&self) -> [u8; 16] {
        rows_digest(&self.lines)
    }
}

/// The order-independent checksum of a statement's rows: MD5 of its sorted lines.
pub(crate) fn rows_digest(lines: &[String]) -> [u8; 16] {
    let mut sorted: Vec<&String> = lines.iter().collect();
    sorted.sort();
    let mut md5 = Md5::new();
    for line in sorted {
        md5.update(line.as_bytes());
        md5.update(b"\n");
    }
    md5.finalize().into()
}

/// Formats a rate like `1 Gbit/s` from bytes per second.
pub fn describe_rate(bytes_per_second: f64) -> String {
    let bits = bytes_per_second * 8.0;
    let (value, unit) = if bits >= 1e9 {
        (bits / 1e9, "Gbit/s")
    } else if bits >= 1e6 {
        (bits / 1e6, "Mbit/s")
    } else {
        (bits / 1e3, "kbit/s")
    };
    format!("{} {unit}", (value * 100.0).round() / 100.0)
}

/// Parses a link rate: `1Gbit`, `500Mbit`, `10Gbit/s`, `125MB` (bytes), a bare number of bits.
pub fn parse_rate(text: &str) -> Result<f64> {
    let t = text.trim().trim_end_matches("/s").trim_end_matches("ps");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        Error::Invalid(format!(
            "bad link rate {text:?}: expected e.g. 1Gbit or 500Mbit"
        ))
    })?;
    let bits = match unit.trim() {
        "" | "bit" | "b" => value,
        "k" | "kbit" | "Kbit" | "kb" => value * 1e3,
        "M" | "Mbit" | "mbit" | "Mb" => value * 1e6,
        "G" | "Gbit" | "gbit" | "Gb" => value * 1e9,
        "KB" | "kB" => value * 8e3,
        "MB" => value * 8e6,
        "GB" => value * 8e9,
        other => {
            return Err(Error::Invalid(format!(
                "bad link rate unit {other:?} in {text:?}: use bit, kbit, Mbit, Gbit, KB, MB or GB"
            )))
        }
    };
    if !(bits.is_finite() && bits > 0.0) {
        return Err(Error::Invalid(format!(
            "link rate must be positive, got {text:?}"
        )));
    }
    Ok(bits / 8.0)
}

/// Runs the queries and writes `results.json`, `summary.json` and `rows/`.
pub async fn run(endpoint: &EndpointArgs, options: &RunOptions) -> Result<Summary> {
    if let Some(url) = &options.scheduler {
        crate::cluster::check(url).await?;
    }
    let link = match options.link_rate {
        Some(rate) => Link::paced(rate),
        None => Link::unlimited(),
    };
    let shared = endpoint.signing.shared_config(Arc::clone(&link)).await;
    let mut store = Store::connect(
        &shared,
        &endpoint.location(),
        endpoint.bucket.clone(),
        options.concurrency,
    );
    if let Some(bytes) = options.split_bytes {
        store.split_size = bytes.max(1);
    }
    let auto = options.modes.contains(&Mode::Auto);
    let tables = discover(
        &store,
        &endpoint.prefix,
        options.scale,
        options.format,
        auto,
    )
    .await?;
    store.compress_arrow = options.result_compression.compress(options.link_rate);
    let pushes = options.modes.iter().any(|&m| m != Mode::Fetch);
    if pushes && matches!(options.format, Format::Csv | Format::Parquet) {
        store.behaviour = match options.format {
            Format::Parquet => {
                let first = tables.first().and_then(|t| {
                    let (part, _) = t.objects.first()?;
                    let (column, _) = t.schema.columns.first()?;
                    Some((part, column))
                });
                let Some((part, column)) = first else {
                    return Err(Error::Invalid(
                        "no Parquet part to check the store on".into(),
                    ));
                };
                probe::check_parquet(&store, part, &format!("s.\"{column}\"")).await?
            }
            _ => {
                let parts: Vec<&(String, u64)> = tables.iter().flat_map(|t| &t.objects).collect();
                probe::check(&store, &parts).await?
            }
        };
        match options.result_format {
            ResultFormat::Auto => {}
            ResultFormat::Csv => store.behaviour.arrow_results = false,
            ResultFormat::Arrow if store.behaviour.arrow_results => {}
            ResultFormat::Arrow => {
                return Err(Error::Invalid(format!(
                    "--result-format arrow: {} does not answer selects in Arrow (only Sift's \
                     gateway does); leave it out to read CSV there",
                    endpoint.endpoints.join(", ")
                )))
            }
        }
        if !store.behaviour.scan_ranges {
            eprintln!(
                "note: {} does not answer a ScanRange with the records that start in it \
                 (as AWS defines it); pushed-down scans select each part whole",
                endpoint.endpoints.join(", ")
            );
        }
    }
    let store = Arc::new(store);
    std::fs::create_dir_all(&options.out)?;
    let cluster = match &options.scheduler {
        Some(url) => {
            let shared = endpoint.signing.shared_config(Link::unlimited()).await;
            Some(Cluster {
                url: url.clone(),
                codec: Arc::new(SiftCodec::new(shared)),
            })
        }
        None => None,
    };

    let mut results: Vec<QueryResult> = Vec::new();
    let mut modes = BTreeMap::new();
    let mut reference: BTreeMap<String, (String, Vec<u64>)> = BTreeMap::new();
    let mut mismatches = Vec::new();
    let mut empty_statements = Vec::new();
    let mut failed_statements = Vec::new();
    // Each statement's join tree in the first mode, and the statements planned otherwise.
    let mut reference_joins: BTreeMap<String, String> = BTreeMap::new();
    let mut differently_planned = Vec::new();
    for (mode_index, &mode) in options.modes.iter().enumerate() {
        let ctx = session(&store, &tables, mode, options, cluster.as_ref()).await?;
        if let (0, Some(cluster)) = (mode_index, &cluster) {
            cluster_runs_a_scan(&ctx, &tables, &cluster.url).await?;
        }
        let first = matches!(mode, Mode::Dynamic | Mode::Auto).then(|| PartsFirst {
            key_list_budget: keys::list_budget(store.behaviour.max_expression_bytes),
        });
        let cluster = cluster.as_ref();
        let rows_dir = options.out.join("rows").join(mode.name());
        std::fs::create_dir_all(&rows_dir)?;
        let plans_dir = options.out.join("plans").join(mode.name());
        std::fs::create_dir_all(&plans_dir)?;
        let cpu_before = gateways_cpu_seconds(&endpoint.endpoints).await;
        let mut totals = ModeTotals::default();
        let mut per_endpoint = vec![(0, 0); endpoint.endpoints.len()];
        for &n in &options.queries {
            let sql = queries::query(n).ok_or_else(|| Error::Invalid(format!("no query {n}")))?;
            let statements = queries::statements(sql);
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..options.iterations.max(1) {
                let (received0, scanned0) = (link.received(), store.scanned());
                let started = Instant::now();
                let mut outputs = Vec::new();
                let mut plans = Vec::new();
                let mut retried = false;
                for statement in &statements {
                    let run = run_statement(&ctx, statement, n, cluster, first).await;
                    let run = match run.0 {
                        // Only a memory pool refuses a build side: the client's
                        // (`--memory-limit`) or, on a cluster, an executor's.
                        Err(e) if hash_join_refused(&e) => {
                            retried = true;
                            run_with_sort_merge_joins(&ctx, statement, n, cluster, first).await
                        }
                        _ => run,
                    };
                    outputs.push(run.0);
                    plans.push(run.1);
                }
                times.push(started.elapsed().as_secs_f64());
                // On a cluster the executors counted, and their counts came back in the
                // stage plans' metrics (response bodies: no HTTP headers or framing).
                let (received, scanned) = match &cluster {
                    None => (link.received() - received0, store.scanned() - scanned0),
                    Some(_) => plans.iter().flatten().fold((0, 0), |(r, s), plan| {
                        (r + plan.bytes_received, s + plan.bytes_scanned)
                    }),
                };
                last = Some((outputs, plans, received, scanned, retried));
            }
            let Some((outputs, plans, bytes_received, bytes_scanned, sort_merge_retry)) = last
            else {
                continue;
            };
            let texts: Vec<StatementRows> = outputs
                .iter()
                .map(|output| match output {
                    Ok(batches) => rows_text(batches),
                    Err(e) => StatementRows {
                        lines: vec![format!("ERROR: {e}")],
                    },
                })
                .collect();
            let errors: Vec<String> = outputs
                .iter()
                .filter_map(|o| o.as_ref().err().cloned())
                .collect();
            if !errors.is_empty() {
                stop_if_store_gone(&store, &tables, &format!("q{n} in {mode} mode"), &errors)
                    .await?;
            }
            let mut md5 = Md5::new();
            let mut per_statement_rows = Vec::new();
            for (i, text) in texts.iter().enumerate() {
                md5.update(text.digest());
                per_statement_rows.push(text.lines.len() as u64);
                let name = if texts.len() == 1 {
                    format!("q{n}.txt")
                } else {
                    format!("q{n}_{}.txt", i + 1)
                };
                write_rows(&rows_dir.join(&name), &text.lines)?;
                let statement = name.trim_end_matches(".txt").to_string();
                if let Some(plan) = &plans[i] {
                    std::fs::write(plans_dir.join(&name), &plan.text)?;
                    match reference_joins.get(&statement) {
                        None => {
                            reference_joins.insert(statement.clone(), plan.joins.clone());
                        }
                        Some(joins) if *joins != plan.joins => {
                            differently_planned.push(format!("{statement} in {mode} mode"));
                        }
                        Some(_) => {}
                    }
                }
                if mode_index == 0 {
                    match &outputs[i] {
                        Err(e) => failed_statements.push(format!("{statement}: {e}")),
                        Ok(_) if text.lines.is_empty() => empty_statements.push(statement),
                        Ok(_) => {}
                    }
                }
            }
            let checksum = hex(&md5.finalize());
            let result = QueryResult {
                query: format!("q{n}"),
                mode,
                seconds: median(&mut times),
                bytes_received,
                bytes_scanned,
                rows: per_statement_rows.iter().sum(),
                checksum: checksum.clone(),
                error: (!errors.is_empty()).then(|| errors.join("; ")),
                spills: plan_total(&plans, "spill_count"),
                sort_merge_retry,
                retries: plan_total(&plans, "retries"),
                scans_pushed_by_choice: scans_chosen(&plans, true),
                scans_fetched_by_choice: scans_chosen(&plans, false),
            };
            if per_endpoint.len() > 1 {
                for (i, (requests, bytes)) in per_endpoint.iter_mut().enumerate() {
                    *requests += plan_total(&plans, &format!("requests_at_{i}"));
                    *bytes += plan_total(&plans, &format!("bytes_received_at_{i}"));
                }
            }
            match reference.get(&result.query) {
                None => {
                    reference.insert(result.query.clone(), (checksum, per_statement_rows));
                }
                Some((expected, expected_rows)) if *expected != checksum => {
                    mismatches.push(format!(
                        "{} in {mode} mode: checksum {checksum} ({per_statement_rows:?} rows) \
                         differs from {} mode's {expected} ({expected_rows:?} rows)",
                        result.query, options.modes[0]
                    ));
                }
                Some(_) => {}
            }
            if options.verbose {
                eprintln!(
                    "{mode:>8} {:>4} {:>8.3} s {:>14} B received {:>14} B scanned {:>7} rows",
                    result.query,
                    result.seconds,
                    result.bytes_received,
                    result.bytes_scanned,
                    result.rows
                );
            }
            totals.queries += 1;
            totals.seconds += result.seconds;
            totals.bytes_received += result.bytes_received;
            totals.bytes_scanned += result.bytes_scanned;
            totals.retries += result.retries;
            totals.scans_pushed_by_choice += result.scans_pushed_by_choice;
            totals.scans_fetched_by_choice += result.scans_fetched_by_choice;
            results.push(result);
        }
        let cpu_after = gateways_cpu_seconds(&endpoint.endpoints).await;
        totals.gateway_cpu_seconds = cpu_spent(&cpu_before, &cpu_after);
        if per_endpoint.len() > 1 {
            totals.endpoints = endpoint
                .endpoints
                .iter()
                .zip(&per_endpoint)
                .map(|(url, &(requests, bytes_received))| EndpointTotals {
                    endpoint: url.clone(),
                    requests,
                    bytes_received,
                })
                .collect();
        }
        modes.insert(mode, totals);
    }

    let summary = Summary {
        scale_factor: options.scale,
        endpoint: endpoint.endpoints.join(","),
        scheduler: options.scheduler.as_ref().map(|url| url.to_string()),
        link: match options.link_rate {
            Some(rate) => format!("{} emulated link", describe_rate(rate)),
            None => "no link limit".to_string(),
        },
        memory: options
            .memory_limit
            .map(|limit| memory_use(limit, &results)),
        iterations: options.iterations.max(1),
        against_fetch: compare_modes(&results),
        modes,
        empty_statements,
        failed_statements,
        differently_planned,
        select_behaviour: store.behaviour,
        answers_compressed: store.compress_arrow && store.behaviour.arrow_results,
    };
    write_json(&options.out.join("results.json"), &results)?;
    write_json(&options.out.join("summary.json"), &summary)?;
    if !mismatches.is_empty() {
        return Err(Error::Mismatch(format!(
            "{} result(s) differ between modes (rows in {}):\n  {}",
            mismatches.len(),
            options.out.join("rows").display(),
            mismatches.join("\n  ")
        )));
    }
    Ok(summary)
}

/// Per-table part objects, sampled lines and line length, read once before any query is
/// timed.
struct TableData {
    schema: &'static crate::schema::TableSchema,
    objects: Vec<(String, u64)>,
    line_bytes: f64,
    /// Text and Parquet parts in auto mode: the sample it predicts answers from.
    sample: Option<Arc<Sample>>,
}

/// The tables at `prefix`, with a sample of each text or Parquet table when `sample` (auto
/// mode predicts from it).
async fn discover(
    store: &Store,
    prefix: &str,
    scale: f64,
    format: Format,
    sample: bool,
) -> Result<Vec<TableData>> {
    let mut tables = Vec::new();
    let extension = format!(".{}", format.extension());
    for schema in SCHEMAS.iter() {
        let table_prefix = table_prefix(prefix, scale, schema.name);
        let mut objects: Vec<(String, u64)> = list_on_any(store, &table_prefix)
            .await?
            .into_iter()
            .filter(|(key, _)| key.ends_with(&extension))
            .collect();
        objects.sort();
        if objects.is_empty() {
            let flag = match format {
                Format::Csv => String::new(),
                other => format!(" --format {}", other.name()),
            };
            return Err(Error::Invalid(format!(
                "no data for table {} at s3://{}/{table_prefix}: run `sift tpcds load --sf {scale}{flag}` first",
                schema.name, store.bucket
            )));
        }
        let sample = match (format, sample) {
            (Format::Csv, true) => Some(Arc::new(Sample::of_text(store, &objects).await?)),
            (Format::Parquet, true) => Some(Arc::new(Sample::of_parquet(store, &objects).await?)),
            _ => None,
        };
        let line_bytes = match format {
            Format::Csv => sample_line_bytes(store, &objects[0]).await?,
            // A Parquet file has no lines, and a gzip part's lines are known only once it is
            // inflated: bytes of the object per generated row, for the same purpose
            // (DataFusion's row estimates from object sizes).
            Format::Parquet | Format::CsvGzip => {
                let total: u64 = objects.iter().map(|(_, size)| size).sum();
                let rows = crate::data::source_row_count(schema.name, scale)?.max(1);
                total as f64 / rows as f64
            }
        };
        tables.push(TableData {
            schema,
            objects,
            line_bytes,
            sample,
        });
    }
    Ok(tables)
}

async fn sample_line_bytes(store: &Store, (key, size): &(String, u64)) -> Result<f64> {
    if *size == 0 {
        return Ok(100.0);
    }
    let sample = Request::Get {
        key: key.clone(),
        start: 0,
        end: (*size).min(64 << 10),
    };
    let body = store
        .send(&sample, "", Format::Csv, Results::Csv)
        .await?
        .body;
    let lines = body.iter().filter(|&&b| b == b'\n').count().max(1);
    Ok(body.len() as f64 / lines as f64)
}

/// On a cluster, the largest estimated build side of a hash join that is broadcast to its
/// probe tasks rather than shuffled with the probe side (see [`session`]), in bytes and rows.
const BROADCAST_BYTES: usize = 16 << 20;
const BROADCAST_ROWS: usize = 1 << 20;

/// The Ballista cluster a run submits its statements to.
#[derive(Clone)]
struct Cluster {
    url: SchedulerUrl,
    codec: Arc<SiftCodec>,
}

/// Parts of a statement that run before it, their answers going into it as literals: the
/// run-time filter modes' filters that reach a scan whatever the joins and stages between
/// ([`parts_first`]).
#[derive(Clone, Copy)]
struct PartsFirst {
    /// The longest join-key list the store takes, in bytes of SQL (`cluster::keys`).
    key_list_budget: Option<usize>,
}

async fn session(
    store: &Arc<Store>,
    tables: &[TableData],
    mode: Mode,
    options: &RunOptions,
    cluster: Option<&Cluster>,
) -> Result<SessionContext> {
    let (format, memory_limit) = (options.format, options.memory_limit);
    let partitions = options.partitions.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let mut config = match cluster {
        None => SessionConfig::new(),
        // Remote shuffle reads over Arrow Flight: Ballista 55's default block reader skips
        // IPC validation and failed on unaligned buffers ("Ipc error: … Unaligned"), after
        // which the resubmitted stage never finished and the query hung.
        //
        // Ballista's static planner, not its adaptive one (its default): the adaptive planner
        // re-plans a job after each stage and drops what it then believes empty, and it
        // answered TPC-DS q49 with no rows at SF 1 (docs/cluster.md). The static planner
        // plans each job once, from the plan a single process would run.
        //
        // One partition per task: by default Ballista's scheduler packs as many of a stage's
        // partitions into one task as the executor it picks has free slots, so a scan of
        // two partitions ran as one task on one executor behind one link whatever the
        // scheduler's `--task-distribution`. One per task lets the scheduler deal them.
        Some(cluster) => SessionConfig::new_with_ballista()
            .with_ballista_logical_extension_codec(Arc::clone(&cluster.codec) as _)
            .with_ballista_physical_extension_codec(Arc::clone(&cluster.codec) as _)
            .with_ballista_shuffle_reader_remote_prefer_flight(true)
            .with_ballista_adaptive_query_planner(false)
            .set_u64(BALLISTA_SCHEDULER_MAX_PARTITIONS_PER_TASK, 1),
    }
    .with_target_partitions(partitions)
    .with_information_schema(false);
    // Only hash joins' dynamic filters are final before their consumer runs (the join builds
    // first, then probes). A TopK's or an aggregate's filter tightens while the scan it
    // prunes is still being read, so a scan that waited for it to be complete would wait
    // for itself; they are off in every mode, so the modes keep identical plans.
    let optimizer = &mut config.options_mut().optimizer;
    optimizer.enable_topk_dynamic_filter_pushdown = false;
    optimizer.enable_aggregate_dynamic_filter_pushdown = false;
    if let Some(limit) = memory_limit {
        // An external sort holds this much back to merge its spill files, per partition:
        // DataFusion's 10 MiB assumes a pool of gigabytes, and a smaller pool failed every
        // sort that spilled ("Not enough memory to continue external sort").
        let execution = &mut config.options_mut().execution;
        let share = usize::try_from(limit / 16).unwrap_or(usize::MAX);
        execution.sort_spill_reservation_bytes = execution.sort_spill_reservation_bytes.min(share);
    }
    // A Ballista task runs its share of a stage's partitions on its own; a file scan that
    // let one partition's stream take another's files (DataFusion's default, which balances
    // a single process) would read them in a task that does not own them, and another task
    // would read them again or not at all (q71's sums came back halved).
    if cluster.is_some() {
        config
            .options_mut()
            .execution
            .enable_file_stream_work_stealing = false;
        let optimizer = &mut config.options_mut().optimizer;
        // Hash joins, as in one process (Ballista's session defaults to sort-merge joins,
        // which its adaptive planner would replace from measured sizes, but its static
        // planner keeps): only a hash join fills a run-time filter, and the modes of a
        // cluster run then plan as a single process does. A build side an executor's pool
        // refuses is run again with sort-merge joins, as under the client's own pool.
        optimizer.prefer_hash_join = true;
        // A join's run-time filter reaches its probe scan only within a stage. A join that
        // collects its build side (`CollectLeft`: the build side broadcast to every probe
        // task) probes the scan right below it, in the same task; a partitioned join
        // shuffles the probe side, so its scan ran in an earlier stage, unfiltered. On a
        // cluster, build sides estimated up to BROADCAST_BYTES are therefore collected,
        // where DataFusion's 1 MB default (made for one process, where a filter reaches
        // through partitioned joins too) partitions the joins of most dimensions at SF 1.
        optimizer.hash_join_single_partition_threshold = optimizer
            .hash_join_single_partition_threshold
            .max(BROADCAST_BYTES);
        optimizer.hash_join_single_partition_threshold_rows = optimizer
            .hash_join_single_partition_threshold_rows
            .max(BROADCAST_ROWS);
    }
    let ctx = match cluster {
        None => {
            let mut runtime = RuntimeEnvBuilder::new();
            if let Some(limit) = memory_limit {
                // Fair shares: every spilling operator of a statement gets an equal part,
                // rather than the first one taking the pool from the rest.
                let bytes = usize::try_from(limit).unwrap_or(usize::MAX);
                runtime = runtime.with_memory_pool(Arc::new(FairSpillPool::new(bytes)));
            }
            SessionContext::new_with_config_rt(config, runtime.build_arc()?)
        }
        Some(cluster) => {
            let state = SessionStateBuilder::new()
                .with_config(config)
                .with_default_features()
                .build();
            SessionContext::remote_with_state(&cluster.url.http(), state)
                .await
                .map_err(|e| Error::Invalid(format!("--scheduler {}: {e}", cluster.url)))?
        }
    };
    let providers = tables.iter().map(|table| {
        let provider = S3Table::new(
            table.schema,
            table.objects.clone(),
            table.line_bytes,
            Arc::clone(store),
            mode,
            format,
        );
        match (&table.sample, mode) {
            (Some(sample), Mode::Auto) => {
                provider.with_sample(Arc::clone(sample), options.link_rate)
            }
            _ => provider,
        }
    });
    for provider in with_key_statistics(providers.collect()) {
        ctx.register_table(provider.name(), Arc::new(provider))?;
    }
    Ok(ctx)
}

/// Queries whose hash joins build one string array over 2 GiB at SF 1 (`Arrow error: Offset
/// overflow error`); they run with sort-merge joins instead, as the issue suggests.
const SORT_MERGE_QUERIES: [u32; 1] = [72];

/// A statement's executed plan.
struct Plan {
    /// The plan with DataFusion's metrics (`plans/<mode>/qN.txt`); on a cluster, its stages'.
    text: String,
    /// Its join tree, compared across modes.
    joins: String,
    /// On a cluster, its scans' response bytes and the object bytes the store read.
    bytes_received: u64,
    bytes_scanned: u64,
}

/// A statement's rows (a failure is its result, as text) and its executed plan, when it got
/// as far as a plan.
type StatementRun = (std::result::Result<Vec<RecordBatch>, String>, Option<Plan>);

/// Runs one statement: its rows (a failure is the statement's result, reported as text),
/// and its executed plan when it got as far as a plan.
async fn run_statement(
    ctx: &SessionContext,
    sql: &str,
    n: u32,
    cluster: Option<&Cluster>,
    first: Option<PartsFirst>,
) -> StatementRun {
    match SORT_MERGE_QUERIES.contains(&n) {
        true => run_with_sort_merge_joins(ctx, sql, n, cluster, first).await,
        false => run_planned(ctx, sql, n, cluster, first).await,
    }
}

/// Whether a statement failed because a hash join's build side did not fit in the memory
/// pool: DataFusion's hash join does not spill, and says `Resources exhausted`.
fn hash_join_refused(error: &str) -> bool {
    error.contains("Resources exhausted") && error.contains("HashJoin")
}

/// Runs a statement with sort-merge joins, which sort (and spill) their inputs instead of
/// holding a build side in memory; the session's own choice is restored after.
async fn run_with_sort_merge_joins(
    ctx: &SessionContext,
    sql: &str,
    n: u32,
    cluster: Option<&Cluster>,
    first: Option<PartsFirst>,
) -> StatementRun {
    let before = ctx.copied_config().options().optimizer.prefer_hash_join;
    if let Err(e) = set_prefer_hash_join(ctx, false).await {
        return (Err(e), None);
    }
    let (result, plan) = run_planned(ctx, sql, n, cluster, first).await;
    match set_prefer_hash_join(ctx, before).await {
        Ok(()) => (result, plan),
        Err(e) => (Err(e), plan),
    }
}

/// Which queries spilled and which ran again with sort-merge joins.
fn memory_use(limit: u64, results: &[QueryResult]) -> MemoryUse {
    let named = |r: &QueryResult| format!("{} in {} mode", r.query, r.mode);
    MemoryUse {
        limit,
        spilled: results.iter().filter(|r| r.spills > 0).map(named).collect(),
        sort_merge_retries: results
            .iter()
            .filter(|r| r.sort_merge_retry)
            .map(named)
            .collect(),
    }
}

async fn set_prefer_hash_join(ctx: &SessionContext, on: bool) -> std::result::Result<(), String> {
    let sql = format!("SET datafusion.optimizer.prefer_hash_join = {on}");
    ctx.sql(&sql)
        .await
        .map_err(|e| format!("{sql}: {}", first_line(&e.to_string())))?;
    Ok(())
}

async fn run_planned(
    ctx: &SessionContext,
    sql: &str,
    n: u32,
    cluster: Option<&Cluster>,
    first: Option<PartsFirst>,
) -> StatementRun {
    let planning =
        |e: DataFusionError| format!("q{n}: planning failed: {}", first_line(&e.to_string()));
    let frame = match ctx.sql(sql).await {
        Ok(frame) => frame,
        Err(e) => return (Err(planning(e)), None),
    };
    // The plans of the jobs that ran parts of the statement first, if any.
    let (frame, run_first) = match first {
        Some(first) => match parts_first(ctx, frame, cluster, first).await {
            Ok(done) => done,
            Err(e) => {
                let e = e.to_string();
                let e = format!(
                    "q{n}: a part run first failed: {}",
                    without_job(first_line(&e))
                );
                return (Err(e), None);
            }
        },
        None => (frame, String::new()),
    };
    let plan = match frame.create_physical_plan().await {
        Ok(plan) => plan,
        Err(e) => return (Err(planning(e)), None),
    };
    let rows = physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .map_err(|e| {
            let e = e.to_string();
            format!("q{n}: execution failed: {}", without_job(first_line(&e)))
        });
    let local = || {
        DisplayableExecutionPlan::with_metrics(plan.as_ref())
            .indent(true)
            .to_string()
    };
    let job = plan
        .downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()
        .and_then(|exec| exec.job_id());
    let (text, joins) = match (cluster, job) {
        (Some(cluster), Some(job)) => match stages::plans(&cluster.url, job.as_ref()).await {
            Ok(text) => {
                let joins = stages::join_tree(&text);
                (run_first + &text, joins)
            }
            Err(e) => {
                return (
                    Err(format!("q{n}: the stage plans of job {job}: {e}")),
                    None,
                )
            }
        },
        // A statement the planner answered without a job (its subqueries' answers made it
        // empty) ran here.
        _ => (run_first + &local(), join_tree(&plan)),
    };
    let (bytes_received, bytes_scanned) = match cluster {
        Some(_) => {
            let uncounted = crate::plan_text::uncounted_scans(&text);
            if uncounted > 0 {
                eprintln!(
                    "warning: q{n}: {uncounted} scans came back from the scheduler without \
                     metrics; their bytes are not counted"
                );
            }
            (
                crate::plan_text::scan_metric(&text, "bytes_received"),
                crate::plan_text::scan_metric(&text, "bytes_scanned"),
            )
        }
        None => (0, 0),
    };
    (
        rows,
        Some(Plan {
            text,
            joins,
            bytes_received,
            bytes_scanned,
        }),
    )
}

/// `frame` with parts of it run first, the run-time filter modes' way to filters that reach
/// a scan across joins and stages: on a cluster its uncorrelated subqueries, replaced by
/// their answers (`cluster::subqueries`); then, on a cluster or not, its filtered
/// dimensions' join keys, put as filters on the sides they join (`cluster::keys`). Also
/// those jobs' plans, each under a line naming what it ran (`Subquery run first, job ID:`
/// or `Join keys read first`), in the order they finished.
async fn parts_first(
    ctx: &SessionContext,
    frame: DataFrame,
    cluster: Option<&Cluster>,
    first: PartsFirst,
) -> std::result::Result<(DataFrame, String), DataFusionError> {
    let plans = std::sync::Mutex::new(String::new());
    let runner = |what: &'static str| {
        let plans = &plans;
        move |plan: LogicalPlan| {
            async move {
                let physical = ctx.state().create_physical_plan(&plan).await?;
                let rows = physical_plan::collect(Arc::clone(&physical), ctx.task_ctx()).await?;
                let job = physical
                    .downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()
                    .and_then(|exec| exec.job_id());
                let text = match (cluster, job) {
                    (Some(cluster), Some(job)) => {
                        let stages = stages::plans(&cluster.url, job.as_ref())
                            .await
                            .map_err(|e| DataFusionError::External(Box::new(e)))?;
                        format!("{what}, job {job}:\n{stages}")
                    }
                    _ => format!(
                        "{what}:\n{}",
                        DisplayableExecutionPlan::with_metrics(physical.as_ref()).indent(true)
                    ),
                };
                if let Ok(mut plans) = plans.lock() {
                    plans.push_str(&text);
                }
                Ok(rows)
            }
            .boxed()
        }
    };
    let run_subquery = runner("Subquery run first");
    let plan = match cluster {
        Some(_) => subqueries::run_first(frame.into_unoptimized_plan(), &run_subquery).await?,
        None => frame.into_unoptimized_plan(),
    };
    let read_keys = runner("Join keys read first");
    // The statement is planned again from the narrowed plan, and on a cluster an optimized
    // plan optimized again does not always survive Ballista's protobuf round trip to the
    // scheduler (q32's decorrelated subquery): such a statement goes as it was, and reads
    // no keys it could not use. The narrowed plan is checked too, as it has filters more.
    let sendable = |plan: &LogicalPlan| -> std::result::Result<bool, DataFusionError> {
        Ok(match cluster {
            Some(cluster) => round_trips(ctx, &ctx.state().optimize(plan)?, cluster),
            None => true,
        })
    };
    let optimized = ctx.state().optimize(&plan)?;
    let narrowed = match sendable(&optimized)? {
        true => keys::narrow(optimized, &read_keys, first.key_list_budget).await?,
        false => None,
    };
    let plan = match narrowed {
        Some(narrowed) if sendable(&narrowed)? => narrowed,
        _ => plan,
    };
    let plans = plans.into_inner().unwrap_or_default();
    Ok((DataFrame::new(ctx.state(), plan), plans))
}

/// Whether `plan` comes back from protobuf as the scheduler will decode it.
fn round_trips(ctx: &SessionContext, plan: &LogicalPlan, cluster: &Cluster) -> bool {
    use datafusion_proto::logical_plan::AsLogicalPlan;
    LogicalPlanNode::try_from_logical_plan(plan, cluster.codec.as_ref())
        .and_then(|node| node.try_into_logical_plan(&ctx.task_ctx(), cluster.codec.as_ref()))
        .is_ok()
}

/// A Ballista job's error without the job's id and stage number (`Job 038HMGFCP4000 failed:
/// Job failed due to stage 7 failed: …` → `Job failed: …`), which differ from run to run
/// and from mode to mode while the error is the same.
fn without_job(text: &str) -> String {
    const STAGE: &str = " failed: Task failed due to runtime execution error: ";
    match (text.find("Job "), text.find(STAGE)) {
        (Some(start), Some(end)) if start < end => {
            format!(
                "{}Job failed: {}",
                &text[..start],
                &text[end + STAGE.len()..]
            )
        }
        _ => text.to_string(),
    }
}

/// DataFusion appends a backtrace to some errors; the first line is the error.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

/// Rows as `|`-separated text, NULL as empty, floats to 12 significant digits.
fn rows_text(batches: &[RecordBatch]) -> StatementRows {
    let options = FormatOptions::default().with_null("");
    let mut lines = Vec::new();
    for batch in batches {
        let columns: Vec<Column> = batch
            .columns()
            .iter()
            .map(|array| Column::new(array.as_ref(), &options))
            .collect();
        for row in 0..batch.num_rows() {
            let mut line = String::new();
            for (i, column) in columns.iter().enumerate() {
                if i > 0 {
                    line.push('|');
                }
                column.write(row, &mut line);
            }
            lines.push(line);
        }
    }
    StatementRows { lines }
}

enum Column<'a> {
    Float(Vec<Option<f64>>),
    Other(Option<ArrayFormatter<'a>>),
}

impl<'a> Column<'a> {
    fn new(array: &'a dyn Array, options: &'a FormatOptions<'a>) -> Column<'a> {
        match array.data_type() {
            DataType::Float64 => {
                let values = array.as_any().downcast_ref::<Float64Array>();
                Column::Float(values.map(|v| v.iter().collect()).unwrap_or_default())
            }
            DataType::Float32 => {
                let values = array.as_any().downcast_ref::<Float32Array>();
                Column::Float(
                    values
                        .map(|v| v.iter().map(|x| x.map(f64::from)).collect())
                        .unwrap_or_default(),
                )
            }
            _ => Column::Other(ArrayFormatter::try_new(array, options).ok()),
        }
    }

    fn write(&self, row: usize, out: &mut String) {
        use std::fmt::Write;
        match self {
            Column::Float(values) => {
                if let Some(Some(v)) = values.get(row) {
                    out.push_str(&format_float(*v));
                }
            }
            Column::Other(Some(formatter)) => {
                let _ = write!(out, "{}", formatter.value(row));
            }
            Column::Other(None) => out.push('?'),
        }
    }
}

/// A float as rows files show it: rounded to 12 significant digits, then the shortest form.
pub(crate) fn format_float(v: f64) -> String {
    let rounded: f64 = format!("{v:.11e}").parse().unwrap_or(v);
    format!("{rounded}")
}

pub(crate) fn write_rows(path: &Path, lines: &[String]) -> Result<()> {
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(path, text)?;
    Ok(())
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text)?;
    Ok(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Speedups of every non-fetch mode over fetch, per query and overall. A query that failed
/// in either mode is left out: the time to an error is no speedup.
pub fn compare_modes(results: &[QueryResult]) -> BTreeMap<Mode, Comparison> {
    let fetch: BTreeMap<&str, &QueryResult> = results
        .iter()
        .filter(|r| r.mode == Mode::Fetch)
        .map(|r| (r.query.as_str(), r))
        .collect();
    let mut out = BTreeMap::new();
    for mode in [Mode::Pushdown, Mode::Dynamic, Mode::Auto] {
        let mut log_sum = 0.0;
        let mut count = 0;
        let mut max = (f64::MIN, String::new());
        let mut min = f64::MAX;
        let (mut bytes, mut fetch_bytes) = (0u64, 0u64);
        for r in results.iter().filter(|r| r.mode == mode) {
            let Some(base) = fetch.get(r.query.as_str()) else {
                continue;
            };
            if r.error.is_some() || base.error.is_some() {
                continue;
            }
            let speedup = base.seconds / r.seconds.max(1e-9);
            log_sum += speedup.ln();
            count += 1;
            if speedup > max.0 {
                max = (speedup, r.query.clone());
            }
            min = min.min(speedup);
            bytes += r.bytes_received;
            fetch_bytes += base.bytes_received;
        }
        if count > 0 {
            out.insert(
                mode,
                Comparison {
                    geomean_speedup: (log_sum / count as f64).exp(),
                    max_speedup: max.0,
                    max_speedup_query: max.1,
                    min_speedup: min,
                    bytes_reduction: 1.0 - bytes as f64 / fetch_bytes.max(1) as f64,
                },
            );
        }
    }
    out
}

/// Runs a count of the smallest table on the cluster before any query is timed: a cluster
/// whose executors cannot decode Sift's scans (another version of sift) or reach the store
/// would otherwise fail every query, in every mode alike.
async fn cluster_runs_a_scan(
    ctx: &SessionContext,
    tables: &[TableData],
    scheduler: &SchedulerUrl,
) -> Result<()> {
    let size = |t: &&TableData| t.objects.iter().map(|(_, size)| size).sum::<u64>();
    let Some(smallest) = tables.iter().min_by_key(size) else {
        return Ok(());
    };
    let sql = format!("SELECT COUNT(*) FROM {}", smallest.schema.name);
    let counted = async { ctx.sql(&sql).await?.collect().await };
    counted.await.map(|_| ()).map_err(|e| Error::Flag {
        flag: "--scheduler",
        message: format!("{scheduler}: the cluster could not run `{sql}`: {e}"),
    })
}

/// After a failed query: an error, which ends the run, if the store no longer answers at
/// any endpoint. Every query left would fail too, each only after its retries (a crashed
/// radosgw turned a two-minute run into a quarter of an hour of failures).
async fn stop_if_store_gone(
    store: &Store,
    tables: &[TableData],
    failed: &str,
    errors: &[String],
) -> Result<()> {
    let Some((key, _)) = tables.first().and_then(|t| t.objects.first()) else {
        return Ok(());
    };
    if store.answers(key).await {
        return Ok(());
    }
    let endpoints: Vec<&str> = store.endpoints().iter().map(|e| e.url.as_str()).collect();
    Err(Error::Invalid(format!(
        "{failed} failed and the store no longer answers at {}; the run stops there: {}",
        endpoints.join(", "),
        errors.join("; ")
    )))
}

/// The keys and sizes under `prefix`, listed at the first endpoint that answers.
async fn list_on_any(store: &Store, prefix: &str) -> Result<Vec<(String, u64)>> {
    let mut failures = Vec::new();
    for endpoint in store.endpoints() {
        match list_keys(&endpoint.client, &store.bucket, prefix).await {
            Ok(keys) => return Ok(keys),
            Err(e) if e.is_transient() => failures.push(format!("{}: {e}", endpoint.url)),
            Err(e) => return Err(e),
        }
    }
    Err(Error::Invalid(format!(
        "no endpoint could list s3://{}/{prefix}: {}",
        store.bucket,
        failures.join("; ")
    )))
}

/// The sum of metric `name` over a query's plans.
fn plan_total(plans: &[Option<Plan>], name: &str) -> u64 {
    plans
        .iter()
        .flatten()
        .map(|plan| crate::plan_text::total(&plan.text, name))
        .sum()
}

/// The scans of `plans` that auto mode pushed down (`pushed`) or fetched, as the plans show
/// its choices (`auto=pushed …`).
fn scans_chosen(plans: &[Option<Plan>], pushed: bool) -> u64 {
    let shown = if pushed {
        ", auto=pushed"
    } else {
        ", auto=fetched"
    };
    plans
        .iter()
        .flatten()
        .map(|plan| plan.text.matches(shown).count() as u64)
        .sum()
}

/// Each endpoint's gateway CPU seconds, where it publishes them ([`metrics::read`]).
async fn gateways_cpu_seconds(endpoints: &[String]) -> Vec<Option<f64>> {
    let readings = futures::future::join_all(endpoints.iter().map(|e| metrics::read(e))).await;
    readings
        .into_iter()
        .map(|r| r.map(|r| r.cpu_seconds))
        .collect()
}

/// CPU seconds spent between two readings, over the gateways read both times; `None` when
/// none was.
fn cpu_spent(before: &[Option<f64>], after: &[Option<f64>]) -> Option<f64> {
    let spent: Vec<f64> = before
        .iter()
        .zip(after)
        .filter_map(|(b, a)| Some(a.as_ref()? - b.as_ref()?))
        .collect();
    (!spent.is_empty()).then(|| spent.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_not_part_of_an_error() {
        assert_eq!(
            without_job(
                "Execution error: Job 038HMGFCP4000 failed: Job failed due to stage 7 failed: \
                 Task failed due to runtime execution error: DataFusionError(DivideByZero)"
            ),
            "Execution error: Job failed: DataFusionError(DivideByZero)"
        );
        assert_eq!(
            without_job("Arrow error: Divide by zero error"),
            "Arrow error: Divide by zero error"
        );
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1Gbit").unwrap(), 125e6);
        assert_eq!(parse_rate("500Mbit/s").unwrap(), 62.5e6);
        assert_eq!(parse_rate("125MB").unwrap(), 125e6);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0Gbit").is_err());
        assert_eq!(describe_rate(125e6), "1 Gbit/s");
    }

    #[test]
    fn speedups_against_fetch() {
        let r = |query: &str, mode, seconds, bytes| QueryResult {
            query: query.into(),
            mode,
            seconds,
            bytes_received: bytes,
            bytes_scanned: 0,
            rows: 0,
            checksum: String::new(),
            error: None,
            spills: 0,
            sort_merge_retry: false,
            retries: 0,
            scans_pushed_by_choice: 0,
            scans_fetched_by_choice: 0,
        };
        let results = vec![
            r("q1", Mode::Fetch, 4.0, 1000),
            r("q2", Mode::Fetch, 1.0, 1000),
            r("q1", Mode::Pushdown, 1.0, 100),
            r("q2", Mode::Pushdown, 1.0, 100),
            r("q3", Mode::Fetch, 9.0, 1000),
            QueryResult {
                error: Some("SlowDown".into()),
                ..r("q3", Mode::Pushdown, 0.01, 10)
            },
        ];
        let c = &compare_modes(&results)[&Mode::Pushdown];
        assert!((c.geomean_speedup - 2.0).abs() < 1e-9);
        assert_eq!(c.max_speedup, 4.0);
        assert_eq!(c.max_speedup_query, "q1");
        assert!((c.bytes_reduction - 0.9).abs() < 1e-9);

        let mut spilled = r("q4", Mode::Dynamic, 1.0, 10);
        spilled.spills = 3;
        let mut retried = r("q5", Mode::Fetch, 1.0, 10);
        retried.sort_merge_retry = true;
        let memory = memory_use(1 << 20, &[spilled, retried, r("q6", Mode::Fetch, 1.0, 1)]);
        assert_eq!(memory.spilled, ["q4 in dynamic mode"]);
        assert_eq!(memory.sort_merge_retries, ["q5 in fetch mode"]);
    }

    #[test]
    fn only_a_hash_join_out_of_memory_is_retried() {
        let refused = "Resources exhausted: Additional allocation failed for HashJoinInput[3] \
                       with top memory consumers (across reservations) as: ...";
        assert!(hash_join_refused(refused));
        assert!(!hash_join_refused(
            "Resources exhausted: Failed to allocate for ExternalSorter[0]"
        ));
        assert!(!hash_join_refused("HashJoin: schema mismatch"));
    }

    #[test]
    fn checksums_ignore_row_order() {
        let a = StatementRows {
            lines: vec!["1|x".into(), "2|y".into()],
        };
        let b = StatementRows {
            lines: vec!["2|y".into(), "1|x".into()],
        };
        assert_eq!(a.digest(), b.digest());
    }
}
