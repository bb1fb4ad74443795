//! `sift`: the command line of the Sift project.

mod demo_cmd;
mod gateway_cmd;
mod select_cmd;
mod tpcds_cmd;
mod trino_cmd;

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sift",
    version,
    about = "S3 Select near the data: engine, gateway and TPC-DS pushdown client"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an S3 Select query over a local file and print the result.
    Select(Box<select_cmd::SelectArgs>),
    /// The whole benchmark on this machine: a gateway, TPC-DS data, every mode, the report.
    Demo(demo_cmd::DemoArgs),
    /// TPC-DS: generate and load data, run the queries fetched or pushed down, report.
    #[command(subcommand)]
    Tpcds(tpcds_cmd::TpcdsCommand),
    /// Serve an S3 endpoint with SelectObjectContent: over its own store in a directory, or
    /// in front of another S3 store (Ceph RGW, MinIO), running selects next to the data.
    Gateway(Box<gateway_cmd::GatewayArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Select(args) => select_cmd::run(*args),
        Command::Demo(args) => demo_cmd::run(args),
        Command::Gateway(args) => gateway_cmd::run(*args),
        Command::Tpcds(command) => tpcds_cmd::run(command),
    }
}

/// Runs an async subcommand to completion on a multi-threaded runtime; a failure is printed
/// as `prefix: error` and becomes the exit status 1.
fn run_async<E: Display>(prefix: &str, work: impl Future<Output = Result<(), E>>) -> ExitCode {
    run_async_with(prefix, work, |_| 1)
}

/// [`run_async`] with the exit status of a failure chosen by `status` (2 for a usage error).
fn run_async_with<E: Display>(
    prefix: &str,
    work: impl Future<Output = Result<(), E>>,
    status: impl Fn(&E) -> u8,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{prefix}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{prefix}: {e}");
            ExitCode::from(status(&e))
        }
    }
}
