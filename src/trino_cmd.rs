//! `sift tpcds trino-ddl` and `trino-run`: the benchmark's tables and queries in Trino, the
//! engine the Ceph benchmark ran (docs/trino.md).

use std::path::PathBuf;

use clap::Args;
use sift_tpcds::error::{Error, Result};
use sift_tpcds::queries;
use sift_tpcds::trino::bench::{self, TrinoRunOptions, TrinoSummary};
use sift_tpcds::trino::ddl::{self, DdlOptions};

#[derive(Args, Debug)]
pub struct DdlArgs {
    /// Scale factor of the loaded data.
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// The bucket `sift tpcds load` wrote to.
    #[arg(long)]
    pub bucket: String,
    /// The key prefix `sift tpcds load` wrote under.
    #[arg(long, default_value = "tpcds")]
    pub prefix: String,
    /// Trino's catalog of the Hive connector.
    #[arg(long, default_value = "hive")]
    pub catalog: String,
    /// The schema to create the tables in [default: <prefix>_sf<SF>, other characters than
    /// letters and digits as underscores]
    #[arg(long)]
    pub schema: Option<String>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The Trino server: http://HOST:PORT.
    #[arg(long)]
    pub server: String,
    /// Scale factor of the loaded data.
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// Trino's catalog of the Hive connector.
    #[arg(long, default_value = "hive")]
    pub catalog: String,
    /// The schema `trino-ddl` created [default: <prefix>_sf<SF>, as `trino-ddl` names it]
    #[arg(long)]
    pub schema: Option<String>,
    /// The key prefix of the data, for the default schema name.
    #[arg(long, default_value = "tpcds")]
    pub prefix: String,
    /// fetch (S3 Select pushdown off), pushdown (on), or both.
    #[arg(long, default_value = "fetch,pushdown")]
    pub mode: String,
    /// all, ceph72, or a list like 3,7,10-12.
    #[arg(long, default_value = "ceph72")]
    pub queries: String,
    /// Runs per query and mode; the median time is reported.
    #[arg(long, default_value_t = 1)]
    pub iterations: usize,
    /// Directory for results.json, summary.json and rows/.
    #[arg(long, default_value = "trino-results")]
    pub out: PathBuf,
    /// The S3 endpoint Trino reads; when it is a Sift gateway, its CPU seconds and the
    /// selects it answered are reported, and pushdown mode must have sent selects.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Count the bytes received on this network interface (e.g. the shaped link's veth)
    /// [default: Trino's own count of what its scans read]
    #[arg(long)]
    pub interface: Option<String>,
    /// How to describe the link in the summary, e.g. "1 Gbit/s tbf".
    #[arg(long, default_value = "no link limit")]
    pub link: String,
    /// A `sift tpcds run --out` directory: every statement's rows must equal its fetch rows.
    #[arg(long)]
    pub compare_with: Option<PathBuf>,
    /// Also write the report (Markdown, CSV, JSON, charts) when the run ends.
    #[arg(long)]
    pub report: bool,
}

/// Turns the flags into the run's options; every flag error names its flag.
pub fn run_options(args: &RunArgs) -> Result<TrinoRunOptions> {
    let flag = |flag: &'static str| move |message: String| Error::Flag { flag, message };
    // `bench::run` refuses dynamic mode (Sift's own) before it connects.
    let modes = crate::tpcds_cmd::parse_modes(&args.mode).map_err(flag("--mode"))?;
    let queries =
        queries::parse_set(&args.queries).map_err(|e| flag("--queries")(e.to_string()))?;
    if let Some(dir) = &args.compare_with {
        if !dir.join("rows").join("fetch").is_dir() {
            return Err(flag("--compare-with")(format!(
                "{} has no rows/fetch: give the --out directory of a `sift tpcds run` with fetch mode",
                dir.display()
            )));
        }
    }
    Ok(TrinoRunOptions {
        server: args.server.clone(),
        catalog: args.catalog.clone(),
        schema: args
            .schema
            .clone()
            .unwrap_or_else(|| ddl::default_schema(&args.prefix, args.sf)),
        scale: args.sf,
        modes,
        queries,
        iterations: args.iterations,
        out: args.out.clone(),
        endpoint: args.endpoint.clone(),
        interface: args.interface.clone(),
        link: args.link.clone(),
        compare_with: args.compare_with.clone(),
        verbose: true,
    })
}

pub fn ddl(args: &DdlArgs) -> Result<()> {
    sift_tpcds::layout::check_scale(args.sf).map_err(|e| Error::Flag {
        flag: "--sf",
        message: e.to_string(),
    })?;
    print!(
        "{}",
        ddl::ddl(&DdlOptions {
            catalog: args.catalog.clone(),
            schema: args
                .schema
                .clone()
                .unwrap_or_else(|| ddl::default_schema(&args.prefix, args.sf)),
            bucket: args.bucket.clone(),
            prefix: args.prefix.clone(),
            scale: args.sf,
        })
    );
    Ok(())
}

pub async fn run(args: RunArgs) -> Result<()> {
    let options = run_options(&args)?;
    let summary = bench::run(&options).await?;
    print_summary(&summary);
    if args.report {
        crate::tpcds_cmd::write_report(&args.out)?;
    }
    if !summary.all_equal() {
        return Err(Error::Mismatch(format!(
            "{} statement(s) differ (rows in {}):\n  {}",
            summary.differences.len(),
            args.out.join("rows").display(),
            summary.differences.join("\n  ")
        )));
    }
    Ok(())
}

fn print_summary(summary: &TrinoSummary) {
    println!(
        "\n{} on TPC-DS SF {} over {} ({}; bytes: {}):",
        summary.engine, summary.scale_factor, summary.endpoint, summary.link, summary.bytes_counted
    );
    println!(
        "{:>9} {:>8} {:>10} {:>14} {:>10} {:>12}",
        "mode", "queries", "time (s)", "received (MB)", "selects", "gateway CPU"
    );
    for (mode, t) in &summary.modes {
        println!(
            "{:>9} {:>8} {:>10.2} {:>14.1} {:>10} {:>12}",
            mode.name(),
            t.queries,
            t.seconds,
            t.bytes_received as f64 / 1e6,
            summary
                .s3_select_requests
                .get(mode)
                .map_or("–".to_string(), |n| n.to_string()),
            t.gateway_cpu_seconds
                .map_or("–".to_string(), |c| format!("{c:.1} s"))
        );
    }
    for (mode, c) in &summary.against_fetch {
        println!(
            "{} vs fetch: geomean speedup {:.2}x, max {:.2}x ({}), bytes -{:.1}%",
            mode.name(),
            c.geomean_speedup,
            c.max_speedup,
            c.max_speedup_query,
            c.bytes_reduction * 100.0
        );
    }
    for failed in &summary.failed_statements {
        println!("failed: {failed}");
    }
    if let Some(dir) = &summary.compared_with {
        println!(
            "rows compared with {dir}: {} differ, {} equal after rounding numeric columns, \
             {} differ for a known cause (summary.json)",
            summary.differences.len(),
            summary.equal_after_rounding.len(),
            summary.known_differences.len()
        );
    }
}
