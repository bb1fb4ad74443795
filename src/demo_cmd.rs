//! `sift demo`: what pushdown saves, on TPC-DS data generated on the spot.
//!
//! This is the engine stage of the demo: it generates store_sales, runs the scans that
//! Trino 405 pushes down for TPC-DS queries through the engine, and reports for each how many
//! bytes a client would receive with pushdown against fetching the whole object. The gateway
//! (network) and DataFusion (whole queries) stages extend it as they land.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use sift_engine::{FileSource, Select, SelectRequest, Sink};

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// TPC-DS scale factor (1 = about 388 MB of store_sales).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Where generated data is kept (reused by later runs).
    #[arg(long, default_value = "sift-data")]
    data: PathBuf,
    /// Engine threads per scan (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// Scans of store_sales in the exact form Trino 405 pushes them down (see docs/sql.md).
const SCANS: [(&str, &str); 5] = [
    (
        "q28: quantity 0..5, three columns",
        "SELECT s._12, s._13, s._20 FROM S3Object s WHERE ((case s._11 when '' then null else CAST(s._11 AS INT) end >= 0 AND case s._11 when '' then null else CAST(s._11 AS INT) end <= 5))",
    ),
    (
        "q96-like: one store, count(*)",
        "SELECT ' ' FROM S3Object s WHERE (case s._8 when '' then null else CAST(s._8 AS INT) end = 1)",
    ),
    (
        "date range on the sold-date key",
        "SELECT s._1, s._3, s._14 FROM S3Object s WHERE ((case s._1 when '' then null else CAST(s._1 AS INT) end >= 2451180 AND case s._1 when '' then null else CAST(s._1 AS INT) end <= 2451269))",
    ),
    (
        "decimal filter: net profit > 5000",
        "SELECT s._3, s._23 FROM S3Object s WHERE (case s._23 when '' then null else CAST(s._23 AS DECIMAL(7,2)) end > 5000.00)",
    ),
    (
        "projection: three columns of every row",
        "SELECT s._1, s._3, s._14 FROM S3Object s",
    ),
];

struct CountSink(u64);

impl Sink for CountSink {
    fn write(&mut self, data: &[u8]) -> sift_engine::Result<()> {
        self.0 += data.len() as u64;
        Ok(())
    }
}

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

pub fn run(args: DemoArgs) -> ExitCode {
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    eprintln!(
        "generating TPC-DS store_sales at SF {} into {} (reused if present)…",
        args.sf,
        args.data.display()
    );
    let started = Instant::now();
    let path = match sift_tpcds::data::generate_table("store_sales", args.sf, &args.data) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sift demo: generating store_sales failed: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "  {} ready in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    // SAFETY: the generated file is written once (to a temporary name, then renamed) before
    // this point and not touched again.
    let source = match unsafe { FileSource::mapped(&path) } {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sift demo: {}: {e}", path.display());
            return ExitCode::from(1);
        }
    };

    println!(
        "\nPushdown scans of store_sales (SF {}), {threads} engine thread(s):\n",
        args.sf
    );
    println!("| scan | fetched without pushdown | returned with pushdown | reduction | engine time | engine GB/s |");
    println!("|---|---|---|---|---|---|");
    let (mut fetched, mut returned) = (0u64, 0u64);
    for (name, sql) in SCANS {
        let request = SelectRequest {
            sql: sql.into(),
            input: sift_tpcds::dsdgen_input(),
            ..SelectRequest::default()
        };
        let select = match Select::new(request) {
            Ok(s) => s.with_threads(threads),
            Err(e) => {
                eprintln!("sift demo: {name}: {e}");
                return ExitCode::from(1);
            }
        };
        let mut sink = CountSink(0);
        let t = Instant::now();
        let stats = match select.run(&source, &mut sink) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("sift demo: {name}: {e}");
                return ExitCode::from(1);
            }
        };
        let secs = t.elapsed().as_secs_f64();
        fetched += stats.bytes_scanned;
        returned += stats.bytes_returned;
        let reduction = match stats.bytes_returned {
            0 => "all filtered".to_string(),
            r => format!("{:.1}×", stats.bytes_scanned as f64 / r as f64),
        };
        println!(
            "| {name} | {} | {} | {reduction} | {:.2} s | {:.2} |",
            human(stats.bytes_scanned),
            human(stats.bytes_returned),
            secs,
            stats.bytes_scanned as f64 / secs / 1e9
        );
    }
    println!(
        "\nIn all: {} fetched without pushdown, {} with it ({:.1}× less over the network).",
        human(fetched),
        human(returned),
        fetched as f64 / returned.max(1) as f64
    );
    ExitCode::SUCCESS
}
