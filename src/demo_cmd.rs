//! `sift demo`: the whole benchmark on one machine, from nothing.
//!
//! It starts a gateway on its embedded store (random keys) as a child process on 127.0.0.1,
//! so that the gateway's CPU time is its own and the client reaches it over a real socket;
//! loads TPC-DS into it; runs the queries in every mode over an emulated storage link; and
//! writes the report. The store is `--data` (default `./sift-data`) rather than a temporary
//! directory, so that a second demo skips generation: loading SF 1 is a good part of the run.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Instant;

use clap::Args;
use sift_tpcds::error::{Error, Result};
use sift_tpcds::run::{self, RunOptions};
use sift_tpcds::s3::{EndpointArgs, Signing};
use sift_tpcds::{queries, scan::Mode};

use crate::tpcds_cmd::{self, DataArgs};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// TPC-DS scale factor (1 is about 1.2 GB of flat files).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// The gateway's store: generated data is kept here and reused by later demos.
    #[arg(long, default_value = "sift-data")]
    data: PathBuf,
    /// Queries: ceph72 (the Ceph/IBM benchmark's), all, or a list like 3,7,10-12.
    #[arg(long, default_value = "ceph72")]
    queries: String,
    /// Emulated storage-network rate between client and gateway.
    #[arg(long, default_value = "1Gbit")]
    link_bandwidth: String,
    /// Where results, rows and the report go.
    #[arg(long, default_value = "tpcds-results")]
    out: PathBuf,
}

/// A gateway child process, stopped when dropped.
struct GatewayProcess {
    child: Child,
    endpoint: String,
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn random_key(len: usize) -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..len)
        .map(|i| {
            let mut h = RandomState::new().build_hasher();
            h.write_usize(i);
            ALPHABET[(h.finish() % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// Requests the demo's client keeps in flight (`sift tpcds run --concurrency`).
const CLIENT_CONCURRENCY: usize = 8;

fn start_gateway(data: &std::path::Path, access: &str, secret: &str) -> Result<GatewayProcess> {
    let exe = std::env::current_exe()?;
    // Room for every request the client sends at once, twice over: the client takes its
    // next permit as soon as a body has arrived, a moment before the gateway has released
    // that select's place, and a full gateway answers SlowDown, which the SDK retries only
    // after a back-off.
    let max_selects = (2 * CLIENT_CONCURRENCY).to_string();
    let mut child = Command::new(exe)
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--max-selects",
            &max_selects,
        ])
        .arg("--data-dir")
        .arg(data)
        .env("SIFT_ACCESS_KEY", access)
        .env("SIFT_SECRET_KEY", secret)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::Invalid("gateway has no stdout".into()))?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let endpoint = match line.trim().strip_prefix("listening on ") {
        Some(url) => url.to_string(),
        None => {
            let _ = child.kill();
            return Err(Error::Invalid(format!(
                "the gateway did not start (said {line:?})"
            )));
        }
    };
    Ok(GatewayProcess { child, endpoint })
}

pub fn run(args: DemoArgs) -> ExitCode {
    crate::run_async("sift demo", demo(args))
}

async fn demo(args: DemoArgs) -> Result<()> {
    let started = Instant::now();
    std::fs::create_dir_all(&args.data)?;
    let (access, secret) = (random_key(20), random_key(40));
    let gateway = start_gateway(&args.data, &access, &secret)?;
    eprintln!(
        "gateway on {} (store: {})",
        gateway.endpoint,
        args.data.display()
    );
    let endpoint = EndpointArgs {
        endpoints: vec![gateway.endpoint.clone()],
        bucket: "tpcds".into(),
        prefix: "tpcds".into(),
        signing: Signing::keys(&access, &secret, "us-east-1"),
        virtual_hosted: false,
    };
    let data = DataArgs {
        sf: args.sf,
        part_size_mib: sift_tpcds::layout::DEFAULT_PART_SIZE >> 20,
        parallel: 1,
        child: 1,
        jobs: None,
        format: sift_tpcds::layout::Format::Csv,
    };
    eprintln!(
        "loading TPC-DS SF {} (parts already loaded are kept)…",
        args.sf
    );
    let loaded = tpcds_cmd::load_data(&data, &endpoint).await?;
    eprintln!(
        "  {} parts loaded ({:.1} MB), {} already there, {:.0} s so far",
        loaded.parts_written,
        loaded.bytes_written as f64 / 1e6,
        loaded.parts_skipped,
        started.elapsed().as_secs_f64()
    );
    let link_rate = run::parse_rate(&args.link_bandwidth)?;
    let options = RunOptions {
        scale: args.sf,
        format: sift_tpcds::layout::Format::Csv,
        modes: Mode::ALL.to_vec(),
        queries: queries::parse_set(&args.queries)?,
        iterations: 1,
        concurrency: CLIENT_CONCURRENCY,
        split_bytes: None,
        link_rate: Some(link_rate),
        out: args.out.clone(),
        partitions: None,
        verbose: true,
        scheduler: None,
        memory_limit: None,
        result_format: Default::default(),
        result_compression: Default::default(),
    };
    eprintln!(
        "running {} queries in fetch, pushdown and dynamic mode over a {} emulated link…",
        options.queries.len(),
        run::describe_rate(link_rate)
    );
    let summary = run::run(&endpoint, &options).await?;
    drop(gateway);
    tpcds_cmd::print_summary(&summary);
    println!("\nreport and charts:");
    tpcds_cmd::write_report(&args.out)?;
    println!("\ndone in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}
