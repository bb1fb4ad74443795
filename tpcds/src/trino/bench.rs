//! `trino-run`: the benchmark's queries through a Trino server, with its Hive connector's
//! S3 Select pushdown off ("fetch") and on ("pushdown"), written in `sift tpcds run`'s
//! layout (`results.json`, `summary.json`, `rows/MODE/qN.txt`) so that `sift tpcds report`
//! draws it and its rows compare line for line with Sift's own client.
//!
//! Trino's bytes cannot be counted or paced by Sift's client, so they come from one of two
//! places: the receive counter of a network interface (`--interface`, the link the
//! benchmark's namespaces shape), or, without one, Trino's own count of what its table scans
//! read (`physicalInputBytes`). When the S3 endpoint is a Sift gateway its `/metrics` also
//! give the gateway's CPU seconds and the SelectObjectContent requests each mode sent: a
//! pushdown mode that sent none fell back to GET, and the run fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use md5::{Digest, Md5};
use serde::Serialize;
use serde_json::Value;

use super::client::{Answer, TrinoClient};
use super::compare::{compare, Outcome};
use super::dialect;
use crate::error::{Error, Result};
use crate::metrics::{self, GatewayReading};
use crate::queries;
use crate::run::{compare_modes, format_float, hex, median, rows_digest, write_json, write_rows};
use crate::run::{Comparison, ModeTotals, QueryResult};
use crate::scan::Mode;

/// What to run.
#[derive(Debug, Clone)]
pub struct TrinoRunOptions {
    /// `http://HOST:PORT`.
    pub server: String,
    pub catalog: String,
    pub schema: String,
    pub scale: f64,
    /// [`Mode::Fetch`] (pushdown off) and/or [`Mode::Pushdown`] (on).
    pub modes: Vec<Mode>,
    pub queries: Vec<u32>,
    pub iterations: usize,
    pub out: PathBuf,
    /// The S3 endpoint Trino reads (its `/metrics`, when a Sift gateway's, are read).
    pub endpoint: Option<String>,
    /// Count bytes on this network interface's receive counter.
    pub interface: Option<String>,
    /// How the link is described in the summary (e.g. `1 Gbit/s tbf`).
    pub link: String,
    /// A `sift tpcds run --out` directory whose fetch rows every statement is compared with.
    pub compare_with: Option<PathBuf>,
    pub verbose: bool,
}

/// `summary.json` of a Trino run: the keys `sift tpcds report` reads, as `run` writes them,
/// and what only a Trino run has.
#[derive(Debug, Serialize)]
pub struct TrinoSummary {
    /// `Trino 368`.
    pub engine: String,
    pub server: String,
    pub scale_factor: f64,
    pub endpoint: String,
    pub link: String,
    /// Where `bytes_received` comes from.
    pub bytes_counted: String,
    pub iterations: usize,
    pub modes: BTreeMap<Mode, ModeTotals>,
    pub against_fetch: BTreeMap<Mode, Comparison>,
    /// SelectObjectContent requests the endpoint answered in each mode (a Sift endpoint).
    pub s3_select_requests: BTreeMap<Mode, u64>,
    pub empty_statements: Vec<String>,
    pub failed_statements: Vec<String>,
    /// The `sift tpcds run` directory the rows were compared with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<String>,
    /// Statements equal to that run's fetch rows only after rounding numeric columns to
    /// the coarser of the two engines' scales, with the columns and decimals.
    pub equal_after_rounding: Vec<String>,
    /// Statements whose rows differ from that run's fetch rows, or between Trino's modes.
    pub differences: Vec<String>,
    /// Statements that differ from Sift's rows for a cause listed in
    /// `tpcds/queries/trino-differences.tsv`, with the cause and what differs.
    pub known_differences: Vec<String>,
}

impl TrinoSummary {
    /// Statements compared and equal (exactly or after rounding).
    pub fn all_equal(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Runs the queries and writes the run directory.
pub async fn run(options: &TrinoRunOptions) -> Result<TrinoSummary> {
    if let Some(mode) = options
        .modes
        .iter()
        .find(|m| matches!(m, Mode::Dynamic | Mode::Auto))
    {
        return Err(Error::Flag {
            flag: "--mode",
            message: format!("{mode}: Trino runs fetch (pushdown off) and pushdown only"),
        });
    }
    let mut client = TrinoClient::new(&options.server, "sift", &options.catalog, &options.schema)?;
    let engine = engine_version(&options.server).await?;
    // Every query file in Trino's dialect before anything runs: a bad rule fails the run now.
    let mut sql = BTreeMap::new();
    for &n in &options.queries {
        let text = queries::query(n).ok_or_else(|| Error::Invalid(format!("no query {n}")))?;
        sql.insert(n, queries::statements(&dialect::to_trino(n, text)?));
    }
    std::fs::create_dir_all(&options.out)?;
    let mut results = Vec::new();
    let mut modes = BTreeMap::new();
    let mut selects = BTreeMap::new();
    let mut empty_statements = Vec::new();
    let mut failed_statements = Vec::new();
    let mut checks = Checks::new(
        options.compare_with.clone(),
        options.modes.first().copied().unwrap_or(Mode::Fetch),
    );
    for (mode_index, &mode) in options.modes.iter().enumerate() {
        client.set_session(
            &format!("{}.s3_select_pushdown_enabled", options.catalog),
            if mode == Mode::Pushdown {
                "true"
            } else {
                "false"
            },
        );
        let rows_dir = options.out.join("rows").join(mode.name());
        std::fs::create_dir_all(&rows_dir)?;
        let before = gateway_reading(options).await;
        let mut totals = ModeTotals::default();
        for (&n, statements) in &sql {
            let mut times = Vec::new();
            let mut last = None;
            for _ in 0..options.iterations.max(1) {
                let received0 = interface_bytes(options)?;
                let started = Instant::now();
                let mut answers = Vec::new();
                for statement in statements {
                    answers.push(client.execute(statement).await);
                }
                times.push(started.elapsed().as_secs_f64());
                let scanned: u64 = answers
                    .iter()
                    .flatten()
                    .map(|a| a.stats.physical_input_bytes)
                    .sum();
                let received = match (received0, interface_bytes(options)?) {
                    (Some(before), Some(after)) => after.saturating_sub(before),
                    _ => scanned,
                };
                last = Some((answers, received, scanned));
            }
            let Some((answers, bytes_received, bytes_scanned)) = last else {
                continue;
            };
            let mut digest = Md5::new();
            let mut rows = 0;
            let mut errors = Vec::new();
            for (i, answer) in answers.iter().enumerate() {
                let name = if answers.len() == 1 {
                    format!("q{n}")
                } else {
                    format!("q{n}_{}", i + 1)
                };
                let lines = match answer {
                    Ok(answer) => rows_text(answer),
                    Err(e) => {
                        errors.push(e.to_string());
                        vec![format!("ERROR: {e}")]
                    }
                };
                digest.update(rows_digest(&lines));
                rows += lines.len() as u64;
                write_rows(&rows_dir.join(format!("{name}.txt")), &lines)?;
                if mode_index == 0 {
                    match answer {
                        Err(e) => failed_statements.push(format!("{name}: {e}")),
                        Ok(_) if lines.is_empty() => empty_statements.push(name.clone()),
                        Ok(_) => {}
                    }
                }
                checks.check(name, mode, lines)?;
            }
            let result = QueryResult {
                query: format!("q{n}"),
                mode,
                seconds: median(&mut times),
                bytes_received,
                bytes_scanned,
                rows,
                checksum: hex(&digest.finalize()),
                error: (!errors.is_empty()).then(|| errors.join("; ")),
                spills: 0,
                sort_merge_retry: false,
                retries: 0,
                scans_pushed_by_choice: 0,
                scans_fetched_by_choice: 0,
            };
            if options.verbose {
                eprintln!(
                    "trino {mode:>8} {:>4} {:>8.3} s {:>14} B received {:>7} rows{}",
                    result.query,
                    result.seconds,
                    result.bytes_received,
                    result.rows,
                    result
                        .error
                        .as_deref()
                        .map(|e| format!("  {e}"))
                        .unwrap_or_default()
                );
            }
            totals.queries += 1;
            totals.seconds += result.seconds;
            totals.bytes_received += result.bytes_received;
            totals.bytes_scanned += result.bytes_scanned;
            results.push(result);
        }
        let after = gateway_reading(options).await;
        if let (Some(before), Some(after)) = (before, after) {
            totals.gateway_cpu_seconds = Some(after.cpu_seconds - before.cpu_seconds);
            selects.insert(
                mode,
                after.select_requests.saturating_sub(before.select_requests),
            );
        }
        modes.insert(mode, totals);
    }
    let summary = TrinoSummary {
        engine,
        server: options.server.clone(),
        scale_factor: options.scale,
        endpoint: options.endpoint.clone().unwrap_or_else(|| "?".into()),
        link: options.link.clone(),
        bytes_counted: match &options.interface {
            Some(interface) => format!("received on network interface {interface}"),
            None => "Trino's physicalInputBytes (what its table scans read)".into(),
        },
        iterations: options.iterations.max(1),
        against_fetch: compare_modes(&results),
        modes,
        s3_select_requests: selects,
        empty_statements,
        failed_statements,
        compared_with: options
            .compare_with
            .as_ref()
            .map(|d| d.display().to_string()),
        equal_after_rounding: checks.rounded,
        differences: checks.differences,
        known_differences: checks.known,
    };
    write_json(&options.out.join("results.json"), &results)?;
    write_json(&options.out.join("summary.json"), &summary)?;
    if summary.s3_select_requests.get(&Mode::Pushdown) == Some(&0) {
        return Err(Error::Mismatch(format!(
            "Trino sent no SelectObjectContent request to {} in pushdown mode: its scans fell \
             back to GET (is hive.s3select-pushdown.enabled set, and are all columns of the \
             tables of a pushable type?)",
            summary.endpoint
        )));
    }
    Ok(summary)
}

/// `Trino 368`, from the server's `/v1/info`.
async fn engine_version(server: &str) -> Result<String> {
    let body = crate::net::http_get(&format!("{}/v1/info", server.trim_end_matches('/')))
        .await
        .map_err(|e| Error::Flag {
            flag: "--server",
            message: format!("does not answer: {e}"),
        })?;
    let info: Value = serde_json::from_slice(&body)?;
    let version = info["nodeVersion"]["version"].as_str().unwrap_or("?");
    if info["starting"].as_bool() == Some(true) {
        return Err(Error::Flag {
            flag: "--server",
            message: format!("Trino {version} is still starting"),
        });
    }
    Ok(format!("Trino {version}"))
}

async fn gateway_reading(options: &TrinoRunOptions) -> Option<GatewayReading> {
    metrics::read(options.endpoint.as_deref()?).await
}

/// The interface's received bytes, when one was named.
fn interface_bytes(options: &TrinoRunOptions) -> Result<Option<u64>> {
    let Some(interface) = &options.interface else {
        return Ok(None);
    };
    let path = format!("/sys/class/net/{interface}/statistics/rx_bytes");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Flag {
        flag: "--interface",
        message: format!("{interface}: {path}: {e}"),
    })?;
    text.trim().parse().map(Some).map_err(|_| Error::Flag {
        flag: "--interface",
        message: format!("{path} holds {text:?}"),
    })
}

/// An answer's rows as `sift tpcds run` writes its own: `|`-separated, NULL empty, floats to
/// 12 significant digits.
fn rows_text(answer: &Answer) -> Vec<String> {
    let float: Vec<bool> = answer
        .columns
        .iter()
        .map(|c| c.type_name == "double" || c.type_name == "real")
        .collect();
    answer
        .rows
        .iter()
        .map(|row| {
            let mut line = String::new();
            for (i, value) in row.iter().enumerate() {
                if i > 0 {
                    line.push('|');
                }
                match value {
                    Value::Null => {}
                    Value::String(s) => line.push_str(s),
                    Value::Number(x) if float.get(i) == Some(&true) => {
                        line.push_str(&x.as_f64().map(format_float).unwrap_or_default())
                    }
                    other => line.push_str(&other.to_string()),
                }
            }
            line
        })
        .collect()
}

/// Every statement's rows against Sift's (in the first mode) and against the first mode's
/// (in the others), sorted into the summary's lists.
struct Checks {
    /// A `sift tpcds run` directory.
    compare_with: Option<PathBuf>,
    first_mode: Mode,
    /// Each statement's rows in the first mode.
    first_rows: BTreeMap<String, Vec<String>>,
    rounded: Vec<String>,
    differences: Vec<String>,
    known: Vec<String>,
}

impl Checks {
    fn new(compare_with: Option<PathBuf>, first_mode: Mode) -> Checks {
        Checks {
            compare_with,
            first_mode,
            first_rows: BTreeMap::new(),
            rounded: Vec::new(),
            differences: Vec::new(),
            known: Vec::new(),
        }
    }

    fn check(&mut self, name: String, mode: Mode, lines: Vec<String>) -> Result<()> {
        let Some(reference) = self.first_rows.get(&name) else {
            if let Some(dir) = &self.compare_with {
                match compare_with_sift(dir, &name, &lines)? {
                    Outcome::Equal => {}
                    Outcome::EqualRounded(columns) => {
                        self.rounded.push(format!("{name}: {}", describe(&columns)))
                    }
                    Outcome::EqualWithinOneUnit(columns) => self.rounded.push(format!(
                        "{name}: {}, some one unit apart",
                        describe(&columns)
                    )),
                    Outcome::Differ(what) => self.differ(
                        &name,
                        format!("{name} in {mode} mode vs Sift's fetch"),
                        what,
                    ),
                }
            }
            self.first_rows.insert(name, lines);
            return Ok(());
        };
        // A known cause (ties at a coarser scale) may also make a LIMIT cut either way.
        if let Outcome::Differ(what) = compare(reference, &lines) {
            let vs = format!("{name} in {mode} mode vs {}", self.first_mode);
            self.differ(&name, vs, what);
        }
        Ok(())
    }

    /// Files a difference under its known cause, if `trino-differences.tsv` lists one.
    fn differ(&mut self, name: &str, what_vs_what: String, what: String) {
        match dialect::known_difference(name) {
            Some(cause) => self.known.push(format!("{what_vs_what}: {cause} ({what})")),
            None => self.differences.push(format!("{what_vs_what}: {what}")),
        }
    }
}

fn compare_with_sift(dir: &Path, name: &str, lines: &[String]) -> Result<Outcome> {
    let path = dir.join("rows").join("fetch").join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Flag {
        flag: "--compare-with",
        message: format!("{}: {e}", path.display()),
    })?;
    let reference: Vec<String> = text.lines().map(str::to_string).collect();
    // Both engines refusing a statement (q90's division by zero at small scales) agree.
    let failed = |lines: &[String]| lines.len() == 1 && lines[0].starts_with("ERROR: ");
    if failed(&reference) && failed(lines) {
        return Ok(Outcome::Equal);
    }
    Ok(compare(&reference, lines))
}

fn describe(columns: &[(usize, usize)]) -> String {
    columns
        .iter()
        .map(|(c, d)| format!("column {} at {d} decimals", c + 1))
        .collect::<Vec<_>>()
        .join(", ")
}
