//! `run`: the TPC-DS queries in each scan mode, timed, metered and checked against fetch.
//!
//! Each query runs in every mode (all its iterations in one mode, then the next mode) before
//! the next query starts: a shared host's speed drifts over minutes, and modes run one after
//! another would be compared on differently fast machines (docs/BENCHMARKS.md, "runs
//! interleaved by query"). Queries run one at a time, so the bytes the link counted during a
//! query are that query's, and the gateway's CPU time is read off its `/metrics` before and
//! after each query in each mode.
//!
//! Results are compared as multisets of rows: TPC-DS queries often ORDER BY fewer columns
//! than they return, and DataFusion may break such ties differently when a plan's filters
//! sit elsewhere, so row order is not part of the comparison. Decimals and integers are
//! compared as printed (exactly); floating-point values (stddev, some ratios) are printed to
//! 12 significant digits first, because parallel aggregation sums them in varying order.
//!
//! The parts: `setup` connects to the store and finds the tables before anything is
//! timed; `session` makes each mode's DataFusion session, in this process or on a Ballista
//! cluster; `statement` runs one statement and keeps its executed plan; `rows` turns its
//! rows into text and a checksum; `summary` is what the run writes about itself. This
//! module runs the modes and queries in order, times and meters each query, and checks every
//! mode against the first (`Checks`).

mod rows;
mod session;
mod setup;
mod statement;
mod summary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use datafusion::execution::context::SessionContext;

use md5::{Digest, Md5};

pub(crate) use rows::{format_float, hex, median, rows_digest, write_json, write_rows};
pub use summary::{
    compare_modes, Comparison, EndpointTotals, MemoryUse, ModeTotals, QueryResult, Summary,
};

use crate::cluster::{keys, SchedulerUrl, SiftCodec};
use crate::error::{Error, Result};
use crate::layout::Format;
use crate::metrics;
use crate::net::Link;
use crate::queries;
use crate::s3::EndpointArgs;
use crate::scan::{Mode, Store};
use rows::{rows_text, StatementRows};
use session::{cluster_runs_a_scan, session, Cluster};
use setup::TableData;
use statement::{plan_total, scans_chosen, PartsFirst, Plan, Statement, StatementRun};

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
    let (store, tables) = setup::connect(endpoint, options, &link).await?;
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
    let Some(&first_mode) = options.modes.first() else {
        return Err(Error::Flag {
            flag: "--mode",
            message: "no mode to run".into(),
        });
    };

    let mut results: Vec<QueryResult> = Vec::new();
    let mut checks = Checks::new(first_mode);
    let mut runs = Vec::new();
    for (mode_index, &mode) in options.modes.iter().enumerate() {
        let ctx = session(&store, &tables, mode, options, cluster.as_ref()).await?;
        if let (0, Some(cluster)) = (mode_index, &cluster) {
            cluster_runs_a_scan(&ctx, &tables, &cluster.url).await?;
        }
        runs.push(ModeRun {
            mode,
            ctx,
            out: ModeOut::create(&options.out, mode)?,
            first: matches!(mode, Mode::Dynamic | Mode::Auto).then(|| PartsFirst {
                key_list_budget: keys::list_budget(store.behaviour.max_expression_bytes),
            }),
            totals: ModeTotals::default(),
            per_endpoint: vec![(0, 0); endpoint.endpoints.len()],
        });
    }
    for &n in &options.queries {
        let sql = queries::query(n).ok_or_else(|| Error::Invalid(format!("no query {n}")))?;
        let statements = queries::statements(sql);
        for run in &mut runs {
            let query = Statement {
                ctx: &run.ctx,
                sql: "",
                n,
                cluster: cluster.as_ref(),
                first: run.first,
            };
            let cpu_before = gateways_cpu_seconds(&endpoint.endpoints).await;
            let measured =
                Measured::run(query, &statements, options.iterations, &link, &store).await;
            let cpu_after = gateways_cpu_seconds(&endpoint.endpoints).await;
            if let Some(spent) = cpu_spent(&cpu_before, &cpu_after) {
                *run.totals.gateway_cpu_seconds.get_or_insert(0.0) += spent;
            }
            let mode = run.mode;
            let errors = measured.errors();
            if !errors.is_empty() {
                stop_if_store_gone(&store, &tables, &format!("q{n} in {mode} mode"), &errors)
                    .await?;
            }
            let result = record(n, mode, &measured, errors, &run.out, &mut checks)?;
            if run.per_endpoint.len() > 1 {
                for (i, (requests, bytes)) in run.per_endpoint.iter_mut().enumerate() {
                    *requests += plan_total(measured.plans(), &format!("requests_at_{i}"));
                    *bytes += plan_total(measured.plans(), &format!("bytes_received_at_{i}"));
                }
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
            run.totals.add(&result);
            results.push(result);
        }
    }
    // results.json lists a mode's queries together, in the order the modes were given.
    let mode_order = |m: Mode| options.modes.iter().position(|&given| given == m);
    results.sort_by_key(|r| mode_order(r.mode));
    let mut modes = BTreeMap::new();
    for mut run in runs {
        if run.per_endpoint.len() > 1 {
            run.totals.endpoints = endpoint
                .endpoints
                .iter()
                .zip(&run.per_endpoint)
                .map(|(url, &(requests, bytes_received))| EndpointTotals {
                    endpoint: url.clone(),
                    requests,
                    bytes_received,
                })
                .collect();
        }
        modes.insert(run.mode, run.totals);
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
            .map(|limit| summary::memory_use(limit, &results)),
        iterations: options.iterations.max(1),
        against_fetch: compare_modes(&results),
        modes,
        empty_statements: checks.empty_statements,
        failed_statements: checks.failed_statements,
        differently_planned: checks.differently_planned,
        select_behaviour: store.behaviour,
        answers_compressed: store.compress_arrow && store.behaviour.arrow_results,
    };
    write_json(&options.out.join("results.json"), &results)?;
    write_json(&options.out.join("summary.json"), &summary)?;
    if !checks.mismatches.is_empty() {
        return Err(Error::Mismatch(format!(
            "{} result(s) differ between modes (rows in {}):\n  {}",
            checks.mismatches.len(),
            options.out.join("rows").display(),
            checks.mismatches.join("\n  ")
        )));
    }
    Ok(summary)
}

/// One mode's share of a run: its session, what its statements run first, where their rows
/// and plans go, and its totals so far (with each endpoint's requests and bytes, when there
/// are several).
struct ModeRun {
    mode: Mode,
    ctx: SessionContext,
    first: Option<PartsFirst>,
    out: ModeOut,
    totals: ModeTotals,
    per_endpoint: Vec<(u64, u64)>,
}

/// Where a mode's statements' rows and plans go: `rows/<mode>/`, `plans/<mode>/`.
struct ModeOut {
    rows: PathBuf,
    plans: PathBuf,
}

impl ModeOut {
    fn create(out: &Path, mode: Mode) -> Result<ModeOut> {
        let dirs = ModeOut {
            rows: out.join("rows").join(mode.name()),
            plans: out.join("plans").join(mode.name()),
        };
        std::fs::create_dir_all(&dirs.rows)?;
        std::fs::create_dir_all(&dirs.plans)?;
        Ok(dirs)
    }
}

/// A query's statements, run `iterations` times: the last time's runs and bytes, and the
/// median time.
struct Measured {
    runs: Vec<StatementRun>,
    seconds: f64,
    bytes_received: u64,
    bytes_scanned: u64,
}

impl Measured {
    /// In one process the bytes are what `link` and `store` counted during each run (the
    /// runs are one at a time); on a cluster the executors counted, and their counts came
    /// back in the stage plans' metrics (response bodies: no HTTP headers or framing).
    /// `query` is the statements' context; its `sql` is replaced by each of `statements`.
    async fn run(
        query: Statement<'_>,
        statements: &[String],
        iterations: usize,
        link: &Link,
        store: &Store,
    ) -> Measured {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..iterations.max(1) {
            let (received0, scanned0) = (link.received(), store.scanned());
            let started = Instant::now();
            let mut runs = Vec::new();
            for sql in statements {
                runs.push(Statement { sql, ..query }.run().await);
            }
            times.push(started.elapsed().as_secs_f64());
            let (received, scanned) = match query.cluster {
                None => (link.received() - received0, store.scanned() - scanned0),
                Some(_) => runs
                    .iter()
                    .filter_map(|run| run.plan.as_ref())
                    .fold((0, 0), |(r, s), plan| {
                        (r + plan.bytes_received, s + plan.bytes_scanned)
                    }),
            };
            last = Some((runs, received, scanned));
        }
        let (runs, bytes_received, bytes_scanned) = last.unwrap_or_default();
        Measured {
            runs,
            seconds: median(&mut times),
            bytes_received,
            bytes_scanned,
        }
    }

    fn plans(&self) -> impl Iterator<Item = &Plan> {
        self.runs.iter().filter_map(|run| run.plan.as_ref())
    }

    fn errors(&self) -> Vec<String> {
        self.runs
            .iter()
            .filter_map(|run| run.rows.as_ref().err().cloned())
            .collect()
    }
}

/// A query's result: its statements' rows and plans written to `out`, and checked against
/// the first mode's.
fn record(
    n: u32,
    mode: Mode,
    measured: &Measured,
    errors: Vec<String>,
    out: &ModeOut,
    checks: &mut Checks,
) -> Result<QueryResult> {
    let texts: Vec<StatementRows> = measured
        .runs
        .iter()
        .map(|run| match &run.rows {
            Ok(batches) => rows_text(batches),
            Err(e) => StatementRows {
                lines: vec![format!("ERROR: {e}")],
            },
        })
        .collect();
    let mut md5 = Md5::new();
    let mut per_statement_rows = Vec::new();
    for (i, (text, run)) in texts.iter().zip(&measured.runs).enumerate() {
        md5.update(text.digest());
        per_statement_rows.push(text.lines.len() as u64);
        let name = match texts.len() {
            1 => format!("q{n}.txt"),
            _ => format!("q{n}_{}.txt", i + 1),
        };
        write_rows(&out.rows.join(&name), &text.lines)?;
        if let Some(plan) = &run.plan {
            std::fs::write(out.plans.join(&name), &plan.text)?;
        }
        checks.statement(name.trim_end_matches(".txt"), mode, run, text.lines.len());
    }
    let query = format!("q{n}");
    let checksum = hex(&md5.finalize());
    checks.query(&query, mode, &checksum, &per_statement_rows);
    Ok(QueryResult {
        query,
        mode,
        seconds: measured.seconds,
        bytes_received: measured.bytes_received,
        bytes_scanned: measured.bytes_scanned,
        rows: per_statement_rows.iter().sum(),
        checksum,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        spills: plan_total(measured.plans(), "spill_count"),
        sort_merge_retry: measured.runs.iter().any(|run| run.sort_merge_retry),
        retries: plan_total(measured.plans(), "retries"),
        scans_pushed_by_choice: scans_chosen(measured.plans(), true),
        scans_fetched_by_choice: scans_chosen(measured.plans(), false),
    })
}

/// What a run checks across its modes, each against the first: every query's rows (as its
/// checksum) and every statement's join tree; and what the first mode found empty or
/// failing.
struct Checks {
    first: Mode,
    /// Each query's checksum and rows per statement in the first mode.
    rows: BTreeMap<String, (String, Vec<u64>)>,
    mismatches: Vec<String>,
    /// Each statement's join tree in the first mode.
    joins: BTreeMap<String, String>,
    differently_planned: Vec<String>,
    empty_statements: Vec<String>,
    failed_statements: Vec<String>,
}

impl Checks {
    fn new(first: Mode) -> Checks {
        Checks {
            first,
            rows: BTreeMap::new(),
            mismatches: Vec::new(),
            joins: BTreeMap::new(),
            differently_planned: Vec::new(),
            empty_statements: Vec::new(),
            failed_statements: Vec::new(),
        }
    }

    /// One statement's run, which gave `rows` rows.
    fn statement(&mut self, statement: &str, mode: Mode, run: &StatementRun, rows: usize) {
        if let Some(plan) = &run.plan {
            match self.joins.get(statement) {
                None => {
                    self.joins.insert(statement.to_string(), plan.joins.clone());
                }
                Some(joins) if *joins != plan.joins => {
                    self.differently_planned
                        .push(format!("{statement} in {mode} mode"));
                }
                Some(_) => {}
            }
        }
        if mode == self.first {
            match &run.rows {
                Err(e) => self.failed_statements.push(format!("{statement}: {e}")),
                Ok(_) if rows == 0 => self.empty_statements.push(statement.to_string()),
                Ok(_) => {}
            }
        }
    }

    /// One query's rows, as the checksum of its statements' and their row counts.
    fn query(&mut self, query: &str, mode: Mode, checksum: &str, rows: &[u64]) {
        match self.rows.get(query) {
            None => {
                self.rows
                    .insert(query.to_string(), (checksum.to_string(), rows.to_vec()));
            }
            Some((expected, expected_rows)) if expected != checksum => {
                self.mismatches.push(format!(
                    "{query} in {mode} mode: checksum {checksum} ({rows:?} rows) differs from \
                     {} mode's {expected} ({expected_rows:?} rows)",
                    self.first
                ));
            }
            Some(_) => {}
        }
    }
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
    fn rates() {
        assert_eq!(parse_rate("1Gbit").unwrap(), 125e6);
        assert_eq!(parse_rate("500Mbit/s").unwrap(), 62.5e6);
        assert_eq!(parse_rate("125MB").unwrap(), 125e6);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0Gbit").is_err());
        assert_eq!(describe_rate(125e6), "1 Gbit/s");
    }
}
