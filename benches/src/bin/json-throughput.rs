//! JSON Lines throughput against `wc -l` on the same file, measured in one run.
//!
//! `json-throughput [--file bench-data/store_sales_sf1.jsonl] [--mb 400] [--runs 5]` makes the
//! file if it is missing — TPC-DS store_sales rows (SF 1, from the dsdgen file the engine
//! benchmark uses) as JSON objects keyed by column name, numbers unquoted, empty fields
//! `null`, until the file holds about `--mb` MB — then prints, for each query and thread
//! count, the best MB/s in memory and its ratio to `wc -l`.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use sift_benches::measure::{wc_l, CountSink};
use sift_engine::{
    InputFormat, InputSerialization, JsonInput, JsonType, Select, SelectRequest, SliceSource,
};
use sift_tpcds_data::data;
use sift_tpcds_data::schema::{table_schema, ColumnType};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    file: Option<PathBuf>,
    /// Size of the generated file, in MB.
    #[arg(long, default_value_t = 400)]
    mb: u64,
    /// Runs per measurement; the best is kept.
    #[arg(long, default_value_t = 5)]
    runs: usize,
}

/// The queries: q28's filter and a projection, written for JSON input.
const QUERIES: [(&str, &str); 2] = [
    (
        "json_filter",
        "SELECT s.ss_wholesale_cost, s.ss_list_price, s.ss_coupon_amt FROM S3Object s \
         WHERE s.ss_quantity >= 0 AND s.ss_quantity <= 5",
    ),
    (
        "json_projection",
        "SELECT s.ss_sold_date_sk, s.ss_item_sk, s.ss_sales_price FROM S3Object s",
    ),
];

/// Writes store_sales rows as JSON Lines until `limit` bytes.
fn make_jsonl(out: &Path, limit: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dat = data::generate_table("store_sales", 1.0, Path::new("bench-data"))?;
    let schema = table_schema("store_sales").ok_or("no store_sales schema")?;
    let reader = BufReader::new(std::fs::File::open(dat)?);
    let tmp = out.with_extension("partial");
    let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
    let mut written = 0u64;
    let mut line = Vec::new();
    for row in reader.split(b'\n') {
        let row = row?;
        line.clear();
        line.push(b'{');
        let fields = row.split(|&b| b == b'|');
        for (i, ((name, ty), value)) in schema.columns.iter().zip(fields).enumerate() {
            if i > 0 {
                line.push(b',');
            }
            line.push(b'"');
            line.extend_from_slice(name.as_bytes());
            line.extend_from_slice(b"\":");
            match ty {
                _ if value.is_empty() => line.extend_from_slice(b"null"),
                ColumnType::Integer | ColumnType::Decimal(..) => line.extend_from_slice(value),
                _ => {
                    line.push(b'"');
                    line.extend_from_slice(value);
                    line.push(b'"');
                }
            }
        }
        line.extend_from_slice(b"}\n");
        w.write_all(&line)?;
        written += line.len() as u64;
        if written >= limit {
            break;
        }
    }
    w.flush()?;
    std::fs::rename(tmp, out)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let file = match args.file {
        Some(f) => f,
        None => {
            let f = PathBuf::from(format!("bench-data/store_sales_sf1_{}mb.jsonl", args.mb));
            if !f.exists() {
                make_jsonl(&f, args.mb * 1_000_000)?;
            }
            f
        }
    };
    let input = std::fs::read(&file)?;
    let n = input.len();
    let mbps = |d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    let wc = wc_l(&file, args.runs);
    println!("file: {} ({n} bytes)", file.display());
    println!("wc -l: {:.0} MB/s", mbps(wc));
    println!("| query | threads | MB/s | MB/s per thread | ratio to wc -l | output bytes |");
    println!("|---|---|---|---|---|---|");
    for (name, sql) in QUERIES {
        let selects = [1usize, 2].map(|t| {
            Select::new(SelectRequest {
                sql: sql.into(),
                input: InputSerialization {
                    format: InputFormat::Json(JsonInput {
                        json_type: JsonType::Lines,
                    }),
                    ..Default::default()
                },
                ..Default::default()
            })
            .map(|s| s.with_threads(t))
        });
        let mut times = [Duration::MAX; 2];
        let mut out = 0;
        // One and two threads alternate run by run so that both see the same machine.
        for _ in 0..args.runs {
            for (i, select) in selects.iter().enumerate() {
                let select = select.as_ref().map_err(|e| e.to_string())?;
                let mut sink = CountSink(0);
                let t = Instant::now();
                select.run(&SliceSource(&input), &mut sink)?;
                times[i] = times[i].min(t.elapsed());
                out = sink.0;
            }
        }
        for (i, threads) in [1usize, 2].into_iter().enumerate() {
            let m = mbps(times[i]);
            println!(
                "| {name} | {threads} | {m:.0} | {:.0} | {:.2} | {out} |",
                m / threads as f64,
                m / mbps(wc)
            );
        }
    }
    Ok(())
}
