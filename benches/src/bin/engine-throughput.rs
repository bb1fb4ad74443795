//! Engine throughput against `wc -l` on the same file, measured in one run so that the ratio
//! holds on any machine.
//!
//! `engine-throughput [--file bench-data/store_sales_sf1.dat] [--runs 5]` generates the file
//! if it is missing, then prints, for each benchmark query and thread count, the best GB/s
//! (in memory, and whole-process through `sift select` when the binary is next to this one)
//! and its ratio to `wc -l`; then how two threads scale over one (see [`Scaling`] for why
//! it reports the median of paired runs and the CPU-time ratio beside best over best).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use sift_benches::measure::{best, children_cpu, process_cpu, wc_l, CountSink, Round, Scaling};
use sift_benches::queries;
use sift_engine::{OutputSerialization, Select, SliceSource};
use sift_tpcds_data::data;

#[derive(Parser)]
struct Args {
    #[arg(long)]
    file: Option<PathBuf>,
    /// Engine chunk size in KiB (default: the engine's).
    #[arg(long)]
    chunk_kib: Option<usize>,
    /// Runs per measurement; the best is kept.
    #[arg(long, default_value_t = 10)]
    runs: usize,
}

fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let file = match args.file {
        Some(f) => f,
        None => data::generate_table("store_sales", 1.0, Path::new("bench-data"))?,
    };
    let input = std::fs::read(&file)?;
    let n = input.len();
    let wc = wc_l(&file, args.runs);
    let wc_gbps = gbps(n, wc);
    println!("file: {} ({n} bytes)", file.display());
    println!("wc -l: {wc_gbps:.2} GB/s");
    println!(
        "| query | threads | in-memory GB/s | ratio to wc -l | sift select GB/s | ratio to wc -l |"
    );
    println!("|---|---|---|---|---|---|");
    let sift = std::env::current_exe()?.with_file_name("sift");
    let mut scaling = Vec::new();
    let text = queries::QUERIES.map(|(name, sql)| (name, sql, false));
    for (name, sql, arrow) in text.into_iter().chain(queries::OUTPUT_QUERIES) {
        let mut request = queries::dsdgen_request(sql);
        if arrow {
            request.output = OutputSerialization::Arrow(Default::default());
        }
        let selects = [1, 2].map(|t| {
            Select::new(request.clone()).map(|s| {
                let s = s.with_threads(t);
                match args.chunk_kib {
                    Some(k) => s.with_chunk_size(k * 1024),
                    None => s,
                }
            })
        });
        // One and two threads alternate run by run, so that both see the same machine: on a
        // shared host the speed of a core drifts from one second to the next.
        let mut mem = Vec::new();
        let mut process = Vec::new();
        for _ in 0..args.runs {
            let mut m = Round {
                wall: [Duration::ZERO; 2],
                cpu: [Duration::ZERO; 2],
            };
            let mut p = m;
            for (i, threads) in [1usize, 2].into_iter().enumerate() {
                let select = selects[i].as_ref().map_err(|e| e.to_string())?;
                let (t, c) = (Instant::now(), process_cpu());
                let mut sink = CountSink(0);
                if let Err(e) = select.run(&SliceSource(&input), &mut sink) {
                    eprintln!("{name}: {e}");
                }
                (m.wall[i], m.cpu[i]) = (t.elapsed(), process_cpu() - c);
                if sift.exists() {
                    let (t, c) = (Instant::now(), children_cpu());
                    let _ = Command::new(&sift)
                        .args(["select", "--field-delimiter", "|", "--comments", "\u{FDD0}"])
                        .args(["--output", if arrow { "arrow" } else { "csv" }])
                        .arg("--threads")
                        .arg(threads.to_string())
                        .arg("--file")
                        .arg(&file)
                        .arg(sql)
                        .stdout(Stdio::null())
                        .status();
                    (p.wall[i], p.cpu[i]) = (t.elapsed(), children_cpu() - c);
                }
            }
            mem.push(m);
            if sift.exists() {
                process.push(p);
            }
        }
        for (i, threads) in [1usize, 2].into_iter().enumerate() {
            let m = gbps(n, Scaling::best(&mem, i));
            let p = if process.is_empty() {
                "- | -".to_string()
            } else {
                let g = gbps(n, Scaling::best(&process, i));
                format!("{g:.2} | {:.2}", g / wc_gbps)
            };
            println!("| {name} | {threads} | {m:.2} | {:.2} | {p} |", m / wc_gbps);
        }
        scaling.push((name, "in memory", Scaling::of(&mem)));
        if !process.is_empty() {
            scaling.push((name, "sift select", Scaling::of(&process)));
        }
    }
    println!();
    println!(
        "| query | run | 2 threads / 1 thread: best over best | median of paired runs \
         | CPU time 2t / 1t | two cores busy |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, run, s) in scaling {
        println!(
            "| {name} | {run} | {:.2}× | {:.2}× | {:.2} | {:.0}% |",
            s.best_ratio,
            s.paired_ratio,
            s.cpu_ratio,
            s.busy * 100.0
        );
    }
    // What a record-at-a-time reader does on the same data: the `csv` crate (csv-core, the
    // parser under csv-async too) with the q28 filter written by hand, no SQL at all.
    let d = best(args.runs, || {
        let mut rdr = csv::ReaderBuilder::new()
            .delimiter(b'|')
            .has_headers(false)
            .flexible(true)
            .from_reader(&input[..]);
        let mut rec = csv::ByteRecord::new();
        let mut out = 0usize;
        while rdr.read_byte_record(&mut rec).unwrap_or(false) {
            let q = rec
                .get(10)
                .and_then(|f| std::str::from_utf8(f).ok()?.parse::<i64>().ok());
            if matches!(q, Some(0..=5)) {
                out += rec.get(11).map_or(0, |f| f.len());
            }
        }
        std::hint::black_box(out);
    });
    let g = gbps(n, d);
    println!(
        "| q28_filter, hand-written over the csv crate (record at a time) | 1 | {g:.2} | {:.2} | - | - |",
        g / wc_gbps
    );
    Ok(())
}
