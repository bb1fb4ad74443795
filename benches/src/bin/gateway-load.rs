//! The gateway under load, measured with the AWS SDK for Rust over loopback.
//!
//! `gateway-load [--file bench-data/store_sales_sf1.dat] [--seconds 8] [--clients 1,2,4,…]`
//! starts the release `sift` binary next to this one as a local-mode gateway, uploads
//! store_sales SF1, and prints (as Markdown tables, plus an SVG chart of the sweep):
//!
//! 1. one client's select throughput against the engine's in the same process on the same
//!    file, runs interleaved (the target: the gateway reaches ≥ 80% of the engine);
//! 2. the same select through a second gateway in upstream mode in front of the first,
//!    against the first directly (the cost of reading the object over HTTP);
//! 3. a sweep of concurrent clients, each running the select in a loop: aggregate input
//!    GB/s, latency percentiles, 503 SlowDown answers (clients back off and retry), and the
//!    gateway's peak memory (VmHWM counts the mapped object's pages; anonymous memory, the
//!    part the gateway allocates, is sampled every 20 ms);
//! 4. with `SIFT_RGW_ENDPOINT`/`SIFT_RGW_ACCESS_KEY`/`SIFT_RGW_SECRET_KEY` set (see
//!    scripts/ceph-rgw.sh): Ceph RGW's own S3 Select on the same object against Sift in
//!    front of that RGW.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::{
    Credentials, Region, RequestChecksumCalculation, StalledStreamProtectionConfig,
};
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    CsvInput, CsvOutput, ExpressionType, FileHeaderInfo, InputSerialization, OutputSerialization,
    SelectObjectContentEventStream,
};
use aws_sdk_s3::Client;
use clap::Parser;
use sift_benches::{chart, queries};
use sift_engine::{FileSource, Select, Sink};
use sift_tpcds_data::data;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    file: Option<PathBuf>,
    /// Seconds each point of the sweep runs.
    #[arg(long, default_value_t = 8.0)]
    seconds: f64,
    /// Concurrent clients at each point of the sweep.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
    clients: Vec<usize>,
    /// Interleaved runs of each single-client comparison; the median is kept.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Where the sweep's chart goes.
    #[arg(long, default_value = "docs/figures/gateway-sweep.svg")]
    chart: PathBuf,
}

const ACCESS: &str = "bench-access";
const SECRET: &str = "bench-secret";
const BUCKET: &str = "tpcds";
const KEY: &str = "store_sales/store_sales_sf1.dat";

/// A gateway process, killed when dropped.
struct Gateway {
    child: Child,
    endpoint: String,
    data: Option<PathBuf>,
}

impl Gateway {
    fn start(sift: &Path, backend: &[String]) -> Result<Gateway, Box<dyn std::error::Error>> {
        use std::io::BufRead;
        let mut child = Command::new(sift)
            .args(["gateway", "--listen", "127.0.0.1:0"])
            .args(["--access-key", ACCESS, "--secret-key", SECRET])
            .args(backend)
            .env("RUST_LOG", "warn,s3s=off")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first line {line:?}"))?;
        Ok(Gateway {
            child,
            endpoint: addr.to_string(),
            data: None,
        })
    }

    fn local(sift: &Path) -> Result<Gateway, Box<dyn std::error::Error>> {
        let dir = std::env::temp_dir().join(format!("sift-gateway-load-{}", std::process::id()));
        let mut g = Gateway::start(sift, &["--data-dir".into(), dir.display().to_string()])?;
        g.data = Some(dir);
        Ok(g)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = &self.data {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn client(endpoint: &str, access: &str, secret: &str) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(access, secret, None, None, "bench"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        // The sweep does its own backing off, so that it can count the SlowDowns.
        .retry_config(RetryConfig::disabled())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        // Checksums only where S3 requires them, as the gateway's own upstream client does:
        // not every store (RGW 18, older MinIO) takes the SDK's newer trailing checksums.
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .build();
    Client::from_conf(config)
}

fn input() -> InputSerialization {
    // dsdgen's format as Trino sends it (see sift_tpcds_data::dsdgen_input), with the record
    // delimiter left at its default "\n": the Rust SDK writes a newline into the XML as
    // `&#xA;`, and Ceph RGW 18.2, which reads the raw text between the tags and decodes only
    // `&#10;`, would take `&` for the delimiter (as the TPC-DS client's select does).
    InputSerialization::builder()
        .csv(
            CsvInput::builder()
                .file_header_info(FileHeaderInfo::None)
                .field_delimiter("|")
                .comments("\u{FDD0}")
                .build(),
        )
        .build()
}

/// Why a select did not complete.
#[derive(Debug)]
enum Failure {
    SlowDown,
    Other(String),
}

/// Runs one select to its End; the rows (newlines) it returned.
async fn select_once(s3: &Client, bucket: &str, key: &str, sql: &str) -> Result<u64, Failure> {
    let sent = s3
        .select_object_content()
        .bucket(bucket)
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(input())
        .output_serialization(
            OutputSerialization::builder()
                .csv(CsvOutput::builder().build())
                .build(),
        )
        .send()
        .await;
    let mut out = match sent {
        Ok(out) => out,
        Err(e) if e.code() == Some("SlowDown") => return Err(Failure::SlowDown),
        Err(e) => return Err(Failure::Other(format!("{e:?}"))),
    };
    let mut returned = 0u64;
    loop {
        match out.payload.recv().await {
            Ok(Some(SelectObjectContentEventStream::Records(r))) => {
                let bytes = r.payload().map_or(&[][..], |b| b.as_ref());
                returned += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            }
            Ok(Some(SelectObjectContentEventStream::End(_))) => return Ok(returned),
            Ok(Some(_)) => {}
            Ok(None) => return Err(Failure::Other("stream ended without End".into())),
            Err(e) => return Err(Failure::Other(format!("{e:?}"))),
        }
    }
}

async fn timed_select(s3: &Client, bucket: &str, key: &str, sql: &str) -> Duration {
    let t = Instant::now();
    if let Err(e) = select_once(s3, bucket, key, sql).await {
        panic!("select failed: {e:?}");
    }
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

struct CountSink;

impl Sink for CountSink {
    fn write(&mut self, _data: &[u8]) -> sift_engine::Result<()> {
        Ok(())
    }
}

/// One field of /proc/PID/status, in bytes.
fn proc_status_bytes(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// One point of the sweep.
struct Point {
    clients: usize,
    completed: usize,
    slowdowns: u64,
    gbps: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    peak_rss: u64,
    peak_anon: u64,
}

async fn sweep_point(gw: &Gateway, s3: &Client, size: u64, clients: usize, seconds: f64) -> Point {
    // Reset the peak resident set (VmHWM) so that each point reports its own.
    let _ = std::fs::write(format!("/proc/{}/clear_refs", gw.pid()), "5");
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let slowdowns = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (s3, slowdowns) = (s3.clone(), slowdowns.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut backoff = Duration::from_millis(20);
            while Instant::now() < deadline {
                let t = Instant::now();
                match select_once(&s3, BUCKET, KEY, queries::Q28_FILTER).await {
                    Ok(_) => {
                        latencies.push(t.elapsed());
                        backoff = Duration::from_millis(20);
                    }
                    Err(Failure::SlowDown) => {
                        slowdowns.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                    Err(Failure::Other(e)) => panic!("select failed under load: {e}"),
                }
            }
            latencies
        }));
    }
    let pid = gw.pid();
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        while Instant::now() < deadline {
            peak = peak.max(proc_status_bytes(pid, "RssAnon:").unwrap_or(0));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak
    });
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.expect("client task"));
    }
    let wall = started.elapsed();
    let peak_anon = sampler.await.unwrap_or(0);
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    Point {
        clients,
        completed: latencies.len(),
        slowdowns: slowdowns.load(Ordering::Relaxed),
        gbps: gbps(size * latencies.len() as u64, wall),
        p50: pct(0.5),
        p99: pct(0.99),
        max: latencies.last().copied().unwrap_or_default(),
        peak_rss: proc_status_bytes(pid, "VmHWM:").unwrap_or(0),
        peak_anon,
    }
}

async fn upload(s3: &Client, bucket: &str, file: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let _ = s3.create_bucket().bucket(bucket).send().await;
    s3.put_object()
        .bucket(bucket)
        .key(KEY)
        .body(ByteStream::from_path(file).await?)
        .send()
        .await?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let file = match args.file.clone() {
        Some(f) => f,
        None => data::generate_table("store_sales", 1.0, Path::new("bench-data"))?,
    };
    let size = std::fs::metadata(&file)?.len();
    let sift = std::env::current_exe()?.with_file_name("sift");
    if !sift.exists() {
        return Err(format!(
            "{} is missing: build it first with cargo build --release --bin sift",
            sift.display()
        )
        .into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(args, file, size, sift))
}

async fn run(
    args: Args,
    file: PathBuf,
    size: u64,
    sift: PathBuf,
) -> Result<(), Box<dyn std::error::Error>> {
    let local = Gateway::local(&sift)?;
    let s3 = client(&local.endpoint, ACCESS, SECRET);
    upload(&s3, BUCKET, &file).await?;
    println!(
        "object: {} ({size} bytes), query: q28_filter",
        file.display()
    );

    // 1. One client against the engine in this process, alternating run by run.
    let select = Select::new(queries::dsdgen_request(queries::Q28_FILTER))?;
    // SAFETY: the benchmark's data file is not modified while it runs.
    let source = unsafe { FileSource::mapped(&file)? };
    let (mut engine, mut gateway) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        let t = Instant::now();
        select.run(&source, &mut CountSink)?;
        engine.push(t.elapsed());
        gateway.push(timed_select(&s3, BUCKET, KEY, queries::Q28_FILTER).await);
    }
    let (engine, gateway) = (median(engine), median(gateway));
    println!();
    println!("| path | median of {} | input GB/s | ratio |", args.runs);
    println!("|---|---|---|---|");
    println!(
        "| engine in process (1 thread, mapped file) | {:.0} ms | {:.2} | 1.00 |",
        engine.as_secs_f64() * 1e3,
        gbps(size, engine)
    );
    println!(
        "| gateway over loopback (1 client, AWS SDK) | {:.0} ms | {:.2} | {:.2} |",
        gateway.as_secs_f64() * 1e3,
        gbps(size, gateway),
        engine.as_secs_f64() / gateway.as_secs_f64()
    );

    // 2. Upstream mode in front of the local gateway, against the local gateway.
    let upstream = Gateway::start(
        &sift,
        &[
            "--upstream".into(),
            local.endpoint.clone(),
            "--upstream-access-key".into(),
            ACCESS.into(),
            "--upstream-secret-key".into(),
            SECRET.into(),
        ],
    )?;
    let via = client(&upstream.endpoint, ACCESS, SECRET);
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        direct.push(timed_select(&s3, BUCKET, KEY, queries::Q28_FILTER).await);
        proxied.push(timed_select(&via, BUCKET, KEY, queries::Q28_FILTER).await);
    }
    let (direct, proxied) = (median(direct), median(proxied));
    println!(
        "| upstream mode in front of a local gateway | {:.0} ms | {:.2} | {:.2} |",
        proxied.as_secs_f64() * 1e3,
        gbps(size, proxied),
        engine.as_secs_f64() / proxied.as_secs_f64()
    );
    println!(
        "\nupstream mode / local mode (same run, interleaved): {:.2} of the throughput",
        direct.as_secs_f64() / proxied.as_secs_f64()
    );
    drop(upstream);

    // 3. The sweep.
    println!();
    println!("| clients | selects | SlowDown | input GB/s | p50 s | p99 s | max s | peak RSS MiB | peak anon MiB |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut points = Vec::new();
    for &n in &args.clients {
        let p = sweep_point(&local, &s3, size, n, args.seconds).await;
        println!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} |",
            p.clients,
            p.completed,
            p.slowdowns,
            p.gbps,
            p.p50.as_secs_f64(),
            p.p99.as_secs_f64(),
            p.max.as_secs_f64(),
            p.peak_rss as f64 / 1048576.0,
            p.peak_anon as f64 / 1048576.0
        );
        points.push(p);
    }
    let series = chart::Sweep {
        clients: points.iter().map(|p| p.clients as f64).collect(),
        gbps: points.iter().map(|p| p.gbps).collect(),
        p50: points.iter().map(|p| p.p50.as_secs_f64()).collect(),
        p99: points.iter().map(|p| p.p99.as_secs_f64()).collect(),
    };
    if let Some(dir) = args.chart.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&args.chart, chart::sweep_svg(&series))?;
    println!("\nchart: {}", args.chart.display());
    drop(local);

    // 4. Ceph RGW's own select against Sift in front of the same RGW.
    match (
        std::env::var("SIFT_RGW_ENDPOINT"),
        std::env::var("SIFT_RGW_ACCESS_KEY"),
        std::env::var("SIFT_RGW_SECRET_KEY"),
    ) {
        (Ok(endpoint), Ok(access), Ok(secret)) => {
            rgw(&sift, &file, size, args.runs, &endpoint, &access, &secret).await?
        }
        _ => println!("\nRGW comparison skipped: SIFT_RGW_ENDPOINT, SIFT_RGW_ACCESS_KEY and SIFT_RGW_SECRET_KEY are not set (see scripts/ceph-rgw.sh)"),
    }
    Ok(())
}

async fn rgw(
    sift: &Path,
    file: &Path,
    size: u64,
    runs: usize,
    endpoint: &str,
    access: &str,
    secret: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let direct = client(endpoint, access, secret);
    let bucket = "sift-bench";
    upload(&direct, bucket, file).await?;
    let front = Gateway::start(
        sift,
        &[
            "--upstream".into(),
            endpoint.to_string(),
            "--upstream-access-key".into(),
            access.to_string(),
            "--upstream-secret-key".into(),
            secret.to_string(),
        ],
    )?;
    let via = client(&front.endpoint, ACCESS, SECRET);
    println!();
    println!("| query | Ceph RGW's S3 Select GB/s | Sift in front of RGW GB/s | Sift / RGW | same row count |");
    println!("|---|---|---|---|---|");
    for (name, sql) in queries::QUERIES {
        let theirs = select_once(&direct, bucket, KEY, sql).await;
        let ours = select_once(&via, bucket, KEY, sql).await;
        let (theirs, ours) = match (theirs, ours) {
            (Ok(t), Ok(o)) => (t, o),
            (t, o) => {
                println!("| {name} | {t:?} | {o:?} | - | - |");
                continue;
            }
        };
        let (mut rgw_times, mut sift_times) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            rgw_times.push(timed_select(&direct, bucket, KEY, sql).await);
            sift_times.push(timed_select(&via, bucket, KEY, sql).await);
        }
        let (r, s) = (median(rgw_times), median(sift_times));
        println!(
            "| {name} | {:.2} | {:.2} | {:.1}× | {} |",
            gbps(size, r),
            gbps(size, s),
            r.as_secs_f64() / s.as_secs_f64(),
            if theirs == ours {
                format!("yes, {ours}")
            } else {
                format!("no: RGW {theirs}, Sift {ours}")
            }
        );
    }
    let _ = direct.delete_object().bucket(bucket).key(KEY).send().await;
    let _ = direct.delete_bucket().bucket(bucket).send().await;
    Ok(())
}
