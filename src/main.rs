//! `sift`: the command line of the Sift project.

mod demo_cmd;
mod gateway_cmd;
mod select_cmd;

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
    /// Generate TPC-DS store_sales and show what pushdown saves on Trino's scans.
    Demo(demo_cmd::DemoArgs),
    /// Serve an S3 endpoint over a local directory, with SelectObjectContent.
    Gateway(Box<gateway_cmd::GatewayArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Select(args) => select_cmd::run(*args),
        Command::Demo(args) => demo_cmd::run(args),
        Command::Gateway(args) => gateway_cmd::run(*args),
    }
}
