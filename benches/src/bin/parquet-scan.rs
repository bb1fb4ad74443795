//! Parquet input: how much of a file a selective query reads, and how fast.
//!
//! `parquet-scan [--runs 5]` writes TPC-DS store_sales (SF 1, from the dsdgen file the engine
//! benchmark uses) as Parquet (`bench-data/store_sales_sf1.parquet`, Snappy, 128 Ki rows per
//! row group, statistics on) if it is missing, then prints for each query the bytes the
//! select read (BytesScanned) against the file's size, the best time, and the rate in rows
//! and in file bytes per second, with one thread.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use sift_benches::measure::CountSink;
use sift_engine::{InputFormat, InputSerialization, Select, SelectRequest, SliceSource, Stats};
use sift_tpcds_data::data;
use sift_tpcds_data::parquet::{write_parquet, ROW_GROUP_ROWS};
use sift_tpcds_data::schema::table_schema;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    file: Option<PathBuf>,
    /// Runs per query; the best is kept.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Only the query of this name (q28_filter, q28_bucket, projection, ticket_lookup, count).
    #[arg(long)]
    query: Option<String>,
}

/// q28's filter and projection by name, one of q28's buckets as the TPC-DS client pushes it
/// down (an integer range AND an OR of decimal ranges, one column out), a projection of
/// three columns, a point lookup on a column the file is sorted by (so statistics skip row
/// groups), and a count.
const QUERIES: [(&str, &str); 5] = [
    (
        "q28_filter",
        "SELECT s.ss_wholesale_cost, s.ss_list_price, s.ss_coupon_amt FROM S3Object s \
         WHERE s.ss_quantity >= 0 AND s.ss_quantity <= 5",
    ),
    (
        "q28_bucket",
        "SELECT s.\"ss_list_price\" FROM S3Object s WHERE ((s.\"ss_quantity\" >= 0) AND \
         (s.\"ss_quantity\" <= 5) AND ((((s.\"ss_list_price\" >= 28.00) AND \
         (s.\"ss_list_price\" <= 38.00)) OR ((s.\"ss_coupon_amt\" >= 12573.00) AND \
         (s.\"ss_coupon_amt\" <= 13573.00))) OR ((s.\"ss_wholesale_cost\" >= 33.00) AND \
         (s.\"ss_wholesale_cost\" <= 53.00))))",
    ),
    (
        "projection",
        "SELECT s.ss_sold_date_sk, s.ss_item_sk, s.ss_sales_price FROM S3Object s",
    ),
    (
        "ticket_lookup",
        "SELECT * FROM S3Object s WHERE s.ss_ticket_number = 120000",
    ),
    ("count", "SELECT COUNT(*) FROM S3Object"),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let file = match args.file {
        Some(f) => f,
        None => {
            let f = PathBuf::from("bench-data/store_sales_sf1.parquet");
            if !f.exists() {
                let dat = data::generate_table("store_sales", 1.0, Path::new("bench-data"))?;
                let table = table_schema("store_sales").ok_or("no store_sales schema")?;
                let tmp = f.with_extension("partial");
                let out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
                let input = std::io::BufReader::new(std::fs::File::open(dat)?);
                write_parquet(table, input, out, ROW_GROUP_ROWS)?;
                std::fs::rename(tmp, &f)?;
            }
            f
        }
    };
    let input = std::fs::read(&file)?;
    let n = input.len();
    println!("file: {} ({n} bytes)", file.display());
    println!("| query | bytes read | share of file | rows out | best time | MB of file/s |");
    println!("|---|---|---|---|---|---|");
    for (name, sql) in QUERIES {
        if args.query.as_deref().is_some_and(|q| q != name) {
            continue;
        }
        let select = Select::new(SelectRequest {
            sql: sql.into(),
            input: InputSerialization {
                format: InputFormat::Parquet,
                ..Default::default()
            },
            ..Default::default()
        })?;
        let mut best = Duration::MAX;
        let mut stats = Stats::default();
        let mut rows = 0;
        for _ in 0..args.runs {
            let mut sink = LineSink(CountSink(0), 0);
            let t = Instant::now();
            stats = select.run(&SliceSource(&input), &mut sink)?;
            best = best.min(t.elapsed());
            rows = sink.1;
        }
        println!(
            "| {name} | {} | {:.1}% | {rows} | {:.3} s | {:.0} |",
            stats.bytes_scanned,
            100.0 * stats.bytes_scanned as f64 / n as f64,
            best.as_secs_f64(),
            n as f64 / best.as_secs_f64() / 1e6
        );
    }
    Ok(())
}

/// Counts output bytes and lines.
struct LineSink(CountSink, u64);

impl sift_engine::Sink for LineSink {
    fn write(&mut self, data: &[u8]) -> sift_engine::Result<()> {
        self.1 += data.iter().filter(|&&b| b == b'\n').count() as u64;
        self.0.write(data)
    }
}
