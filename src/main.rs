//! `sift`: the command line of the Sift project.

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
    Select(select_cmd::SelectArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Select(args) => select_cmd::run(args),
    }
}
