//! Generates TPC-DS tables in dsdgen's flat-file format for the benchmarks.
//!
//! `tpcds-gen [--sf 1] [--out bench-data] [--parallel N --child K] [TABLE...]`
//! (default table: store_sales). Prints one line per table: path, size, rows, time.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use sift_tpcds::data::{self, Slice};

#[derive(Parser)]
#[command(about = "Generate TPC-DS tables as dsdgen-format .dat files")]
struct Args {
    /// Scale factor (fractions such as 0.01 are allowed).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Output directory.
    #[arg(long, default_value = "bench-data")]
    out: PathBuf,
    /// Split each table into this many slices (dsdgen -parallel); needs --child.
    #[arg(long, default_value_t = 1, requires = "child")]
    parallel: u32,
    /// Which slice to write, 1-based (dsdgen -child).
    #[arg(long, default_value_t = 1)]
    child: u32,
    /// Tables to generate, or `all`.
    #[arg(default_values_t = ["store_sales".to_string()])]
    tables: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let slice = Slice {
        child: args.child,
        parallel: args.parallel,
    };
    let tables: Vec<&str> = if args.tables.iter().any(|t| t == "all") {
        data::TABLES.to_vec()
    } else {
        args.tables.iter().map(String::as_str).collect()
    };
    for table in tables {
        let start = Instant::now();
        match data::generate_table_slice(table, args.sf, slice, &args.out) {
            Ok(g) => {
                let rows = g
                    .rows
                    .map_or_else(|| "existing".to_string(), |r| format!("rows={r}"));
                println!(
                    "{}\tbytes={}\t{rows}\tsecs={:.2}",
                    g.path.display(),
                    g.bytes,
                    start.elapsed().as_secs_f64()
                );
            }
            Err(e) => {
                eprintln!("bench-data: {table}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
