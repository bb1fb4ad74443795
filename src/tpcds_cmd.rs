//! `sift tpcds gen|load|run|report`: the TPC-DS pushdown benchmark from the command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use indicatif::MultiProgress;
use sift_tpcds::cluster::process::{self, ExecutorOptions, SchedulerOptions, TaskDistribution};
use sift_tpcds::cluster::SchedulerUrl;
use sift_tpcds::data::Slice;
use sift_tpcds::error::{Error, Result};
use sift_tpcds::layout::{self, Format, DEFAULT_PART_SIZE};
use sift_tpcds::net::Link;
use sift_tpcds::run::{self, ResultCompression, ResultFormat, RunOptions};
use sift_tpcds::s3::{EndpointArgs, Signing};
use sift_tpcds::scan::Mode;
use sift_tpcds::{load, queries, report};

#[derive(Subcommand, Debug)]
pub enum TpcdsCommand {
    /// Generate the 24 tables as dsdgen flat files: DIR/<table>/part-NNNNN.dat (or .parquet).
    Gen(GenArgs),
    /// Generate the 24 tables straight into S3 objects PREFIX/sf<SF>/<table>/part-NNNNN.dat
    /// (or .parquet).
    Load(LoadArgs),
    /// Run TPC-DS queries with table scans fetched and/or pushed down through S3 Select.
    Run(Box<RunArgs>),
    /// Write report.md/.csv/.json and charts (SVG, PNG) for a run directory.
    Report(ReportArgs),
    /// Start a Apache DataFusion Ballista scheduler that plans Sift's table scans, for
    /// `run --scheduler`.
    Scheduler(SchedulerArgs),
    /// Start a Ballista executor of a scheduler's: it runs the scans, sending their requests
    /// straight to the storage endpoints with its own credentials.
    Executor(ExecutorArgs),
    /// Print the CREATE SCHEMA / CREATE TABLE statements that make Trino's Hive connector
    /// read the objects `load` wrote (with S3 Select pushdown possible on every table).
    TrinoDdl(crate::trino_cmd::DdlArgs),
    /// Run the queries through a Trino server with its S3 Select pushdown off and on, in
    /// `run`'s output layout.
    TrinoRun(Box<crate::trino_cmd::RunArgs>),
}

#[derive(Args, Debug)]
pub struct SchedulerArgs {
    /// Address to listen on (gRPC and Ballista's REST API).
    #[arg(long, default_value = "127.0.0.1:50050")]
    pub bind: SocketAddr,
    /// Seconds without a heartbeat after which an executor is lost and its tasks run on
    /// others; keep it two or three of the executors' --heartbeat-interval [default:
    /// Ballista's, 180]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub executor_timeout: Option<u64>,
    /// How a stage's tasks go to the executors: `round-robin` one per executor in turn, so
    /// that scans use every executor host's network; `bias` (Ballista's own default) fills
    /// one executor's slots before the next's.
    #[arg(long, value_enum, default_value_t = TaskDistributionArg::RoundRobin)]
    pub task_distribution: TaskDistributionArg,
}

/// `--task-distribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TaskDistributionArg {
    Bias,
    RoundRobin,
}

#[derive(Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler: http://HOST:PORT or df://HOST:PORT.
    #[arg(long, value_parser = SchedulerUrl::parse)]
    pub scheduler: SchedulerUrl,
    /// Address of its Arrow Flight service; its gRPC service takes the next port.
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub bind: SocketAddr,
    /// Memory for its tasks, e.g. 4GiB; beyond it sorts, joins and aggregations spill to
    /// --work-dir [default: Ballista's share of the machine's memory]
    #[arg(long, value_parser = parse_byte_size)]
    pub memory_limit: Option<u64>,
    /// Shuffle files and spills [default: a temporary directory]
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Tasks at once [default: the number of cores]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub slots: Option<u64>,
    /// Seconds between heartbeats to the scheduler [default: Ballista's, 60]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_interval: Option<u64>,
    #[command(flatten)]
    pub signing: Signing,
}

/// `4GiB`, `512MiB`, `100MB`, `1000000`: bytes, at least one.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let unit_bytes: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        other => {
            return Err(format!(
                "unknown unit {other:?} (use B, KB, MB, GB, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 4GiB"))?;
    match n.checked_mul(unit_bytes) {
        Some(0) => Err("must be more than 0 bytes".into()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("{text:?} is too large")),
    }
}

#[derive(Args, Debug, Clone)]
pub struct DataArgs {
    /// Scale factor: 0.01, 0.1, 1, 10, … (1 is about 1.2 GB of flat files).
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// Target size of one part file, in MiB.
    #[arg(long, default_value_t = DEFAULT_PART_SIZE >> 20)]
    pub part_size_mib: u64,
    /// Split the data set in N slices (for loading from several machines)...
    #[arg(long, default_value_t = 1)]
    pub parallel: u32,
    /// ...and generate only slice K (1-based).
    #[arg(long, default_value_t = 1)]
    pub child: u32,
    /// Parts generated at once (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// csv (dsdgen's flat files, as the Ceph benchmark), csv-gzip (the same, each part
    /// gzipped: what Trino up to 426 pushes S3 Select down on; load it under its own
    /// --prefix) or parquet (one Parquet file per part, Snappy).
    #[arg(long, default_value = "csv")]
    pub format: Format,
}

impl DataArgs {
    fn plan(&self) -> Result<Vec<layout::Part>> {
        Ok(layout::plan(
            self.sf,
            self.part_size_mib.max(1) << 20,
            Slice {
                child: self.child,
                parallel: self.parallel,
            },
        )?)
    }

    fn jobs(&self) -> usize {
        self.jobs.unwrap_or_else(cores)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

#[derive(Args, Debug)]
pub struct GenArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    /// Scale factor of the loaded data.
    #[arg(long, default_value_t = 1.0)]
    pub sf: f64,
    /// fetch, pushdown, dynamic, auto, or all (comma-separated lists allowed).
    #[arg(long, default_value = "all")]
    pub mode: String,
    /// all, ceph72 (the Ceph/IBM benchmark's 72), or a list like 3,7,10-12.
    #[arg(long, default_value = "ceph72")]
    pub queries: String,
    /// The format the data was loaded in: csv, csv-gzip or parquet.
    #[arg(long, default_value = "csv")]
    pub format: Format,
    /// Runs per query and mode; the median time is reported.
    #[arg(long, default_value_t = 1)]
    pub iterations: usize,
    /// S3 requests in flight for the whole client, across all table scans.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Emulate a storage network of this rate (e.g. 1Gbit, 10Gbit, 500Mbit) by pacing the
    /// bytes the client receives.
    #[arg(long)]
    pub link_bandwidth: Option<String>,
    /// DataFusion partitions (default: the number of cores).
    #[arg(long)]
    pub partitions: Option<usize>,
    /// How pushed-down scans of text parts ask for their answers: `auto` asks for Arrow
    /// (typed columns, no text to parse) where the store writes it — Sift's gateway — and
    /// CSV elsewhere; `csv` always CSV; `arrow` fails the run if the store cannot.
    #[arg(long, value_enum, default_value_t = ResultFormatArg::Auto)]
    pub result_format: ResultFormatArg,
    /// Whether Arrow answers come LZ4-compressed: `auto` when --link-bandwidth paces the
    /// client, `lz4` over a real network link that limits the run (a cluster's hosts),
    /// `none` where the CPU to compress costs more than the bytes (loopback, a fast network).
    #[arg(long, value_enum, default_value_t = ResultCompressionArg::Auto)]
    pub result_compression: ResultCompressionArg,
    /// Bytes per ScanRange split of a pushed-down scan [default: 32 MiB]
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub split_bytes: Option<u64>,
    /// Directory for results.json, summary.json and rows/.
    #[arg(long, default_value = "tpcds-results")]
    pub out: PathBuf,
    /// Also write the report (Markdown, CSV, JSON, charts) when the run ends.
    #[arg(long)]
    pub report: bool,
    /// Run on the Ballista cluster of this scheduler (http://HOST:PORT or df://HOST:PORT)
    /// instead of in this process; see `sift tpcds scheduler` and `executor`.
    #[arg(long, value_parser = SchedulerUrl::parse)]
    pub scheduler: Option<SchedulerUrl>,
    /// Memory for the queries, e.g. 2GiB: beyond it sorts and aggregations spill to the
    /// temporary directory, and a query whose hash join does not fit runs again with
    /// sort-merge joins. On a cluster, give it to each executor instead. [default: no limit]
    #[arg(long, value_parser = parse_byte_size, conflicts_with = "scheduler")]
    pub memory_limit: Option<u64>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The --out directory of `sift tpcds run`.
    pub dir: PathBuf,
}

pub fn parse_modes(text: &str) -> Result<Vec<Mode>, String> {
    if text.trim() == "all" {
        return Ok(Mode::ALL.to_vec());
    }
    let mut modes: Vec<Mode> = text
        .split(',')
        .map(|m| m.trim().parse())
        .collect::<Result<_, _>>()?;
    modes.sort();
    modes.dedup();
    Ok(modes)
}

pub fn run(command: TpcdsCommand) -> ExitCode {
    let status = |e: &Error| match e {
        Error::Flag { .. } => 2,
        _ => 1,
    };
    crate::run_async_with(
        "error",
        async {
            match command {
                TpcdsCommand::Gen(args) => gen(args).await,
                TpcdsCommand::Load(args) => load(args).await,
                TpcdsCommand::Run(args) => run_queries(*args).await,
                TpcdsCommand::Report(args) => write_report(&args.dir),
                TpcdsCommand::TrinoDdl(args) => crate::trino_cmd::ddl(&args),
                TpcdsCommand::TrinoRun(args) => crate::trino_cmd::run(*args).await,
                TpcdsCommand::Scheduler(args) => {
                    log_to_stderr();
                    // The scheduler plans scans but sends no request: any region will do, and
                    // naming one keeps the SDK from asking an instance-metadata service.
                    let signing = Signing {
                        region: Some("us-east-1".into()),
                        ..Signing::default()
                    };
                    let shared = signing.shared_config(Link::unlimited()).await;
                    let options = SchedulerOptions {
                        bind: args.bind,
                        executor_timeout: args.executor_timeout,
                        task_distribution: match args.task_distribution {
                            TaskDistributionArg::Bias => TaskDistribution::Bias,
                            TaskDistributionArg::RoundRobin => TaskDistribution::RoundRobin,
                        },
                    };
                    process::scheduler(options, shared).await
                }
                TpcdsCommand::Executor(args) => {
                    log_to_stderr();
                    let shared = args.signing.shared_config(Link::unlimited()).await;
                    let options = ExecutorOptions {
                        scheduler: args.scheduler,
                        bind: args.bind,
                        memory_limit: args.memory_limit,
                        work_dir: args.work_dir,
                        slots: args.slots.map(|n| n as usize),
                        heartbeat_interval: args.heartbeat_interval,
                    };
                    process::executor(options, shared).await
                }
            }
        },
        status,
    )
}

/// Ballista's logs (and Sift's) on stderr, filtered by RUST_LOG; warnings by default.
fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

async fn gen(args: GenArgs) -> Result<()> {
    let parts = args.data.plan()?;
    let progress = MultiProgress::new();
    let (scale, jobs, out) = (args.data.sf, args.data.jobs(), args.out.clone());
    let format = args.data.format;
    let summary = tokio::task::spawn_blocking(move || {
        load::generate_files(parts, scale, &out, format, jobs, &progress)
    })
    .await
    .map_err(|e| Error::Invalid(format!("generator failed: {e}")))??;
    eprintln!(
        "wrote {} parts ({:.1} MB) to {}, {} already there",
        summary.parts_written,
        summary.bytes_written as f64 / 1e6,
        args.out.display(),
        summary.parts_skipped
    );
    Ok(())
}

/// `load`, callable from the demo with its own endpoint.
pub async fn load_data(data: &DataArgs, endpoint: &EndpointArgs) -> Result<load::LoadSummary> {
    let parts = data.plan()?;
    let client = sift_tpcds::s3::client(endpoint, sift_tpcds::net::Link::unlimited()).await;
    let progress = MultiProgress::new();
    load::upload(
        &client,
        &endpoint.bucket,
        &endpoint.prefix,
        load::Dataset {
            scale: data.sf,
            format: data.format,
        },
        parts,
        data.jobs(),
        &progress,
    )
    .await
}

async fn load(args: LoadArgs) -> Result<()> {
    let summary = load_data(&args.data, &args.endpoint).await?;
    eprintln!(
        "loaded {} parts ({:.1} MB) into s3://{}/{}, {} already there",
        summary.parts_written,
        summary.bytes_written as f64 / 1e6,
        args.endpoint.bucket,
        args.endpoint.prefix,
        summary.parts_skipped
    );
    Ok(())
}

/// The options of `run` as the library takes them.
pub fn run_options(args: &RunArgs) -> Result<RunOptions> {
    Ok(RunOptions {
        scale: args.sf,
        format: args.format,
        modes: parse_modes(&args.mode).map_err(Error::Invalid)?,
        queries: queries::parse_set(&args.queries)?,
        iterations: args.iterations,
        concurrency: args.concurrency,
        split_bytes: args.split_bytes,
        link_rate: args
            .link_bandwidth
            .as_deref()
            .map(run::parse_rate)
            .transpose()?,
        out: args.out.clone(),
        partitions: args.partitions,
        verbose: true,
        scheduler: args.scheduler.clone(),
        memory_limit: args.memory_limit,
        result_format: match args.result_format {
            ResultFormatArg::Auto => ResultFormat::Auto,
            ResultFormatArg::Arrow => ResultFormat::Arrow,
            ResultFormatArg::Csv => ResultFormat::Csv,
        },
        result_compression: match args.result_compression {
            ResultCompressionArg::Auto => ResultCompression::Auto,
            ResultCompressionArg::Lz4 => ResultCompression::Lz4,
            ResultCompressionArg::None => ResultCompression::None,
        },
    })
}

/// `--result-compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ResultCompressionArg {
    Auto,
    Lz4,
    None,
}

/// `--result-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ResultFormatArg {
    Auto,
    Arrow,
    Csv,
}

async fn run_queries(args: RunArgs) -> Result<()> {
    let options = run_options(&args)?;
    let summary = run::run(&args.endpoint, &options).await?;
    print_summary(&summary);
    if args.report {
        write_report(&args.out)?;
    }
    Ok(())
}

/// The summary table printed at the end of a run and of the demo.
pub fn print_summary(summary: &run::Summary) {
    println!(
        "\nTPC-DS SF {} over {} ({}):",
        summary.scale_factor, summary.endpoint, summary.link
    );
    println!(
        "{:>9} {:>8} {:>10} {:>14} {:>14} {:>12}",
        "mode", "queries", "time (s)", "received (MB)", "scanned (MB)", "gateway CPU"
    );
    for (mode, t) in &summary.modes {
        println!(
            "{:>9} {:>8} {:>10.2} {:>14.1} {:>14.1} {:>12}",
            mode.name(),
            t.queries,
            t.seconds,
            t.bytes_received as f64 / 1e6,
            t.bytes_scanned as f64 / 1e6,
            t.gateway_cpu_seconds
                .map_or("–".to_string(), |c| format!("{c:.1} s"))
        );
    }
    for (mode, t) in &summary.modes {
        for e in &t.endpoints {
            println!(
                "{:>9} at {}: {} requests, {:.1} MB",
                mode.name(),
                e.endpoint,
                e.requests,
                e.bytes_received as f64 / 1e6
            );
        }
        if t.retries > 0 {
            println!(
                "{:>9}: {} requests sent again after a busy or failed endpoint",
                mode.name(),
                t.retries
            );
        }
    }
    for (mode, c) in &summary.against_fetch {
        println!(
            "{} vs fetch: geomean speedup {:.2}x, max {:.2}x ({}), bytes received {}",
            mode.name(),
            c.geomean_speedup,
            c.max_speedup,
            c.max_speedup_query,
            sift_tpcds::report::bytes_change(c.bytes_reduction)
        );
    }
}

pub fn write_report(dir: &std::path::Path) -> Result<()> {
    let written = report::report(dir)?;
    for file in written.files {
        println!("{}", file.display());
    }
    Ok(())
}
