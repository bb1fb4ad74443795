//! `sift gateway`: the S3 endpoint over a local data directory.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use sift_engine::Dialect;
use sift_gateway::config::{collect_users, GatewayConfig};
use sift_gateway::server;

#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Directory holding buckets and objects (created if missing).
    #[arg(long)]
    data_dir: PathBuf,
    /// Base domain for virtual-host style requests (`bucket.DOMAIN`).
    #[arg(long)]
    domain: Option<String>,
    /// Access key of the single user (with --secret-key); or set SIFT_ACCESS_KEY.
    #[arg(long)]
    access_key: Option<String>,
    /// Secret key of the single user (with --access-key); or set SIFT_SECRET_KEY.
    #[arg(long)]
    secret_key: Option<String>,
    /// File of users, one `ACCESS SECRET` per line, `#` comments.
    #[arg(long)]
    credentials: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = SqlDialect::Aws)]
    sql_dialect: SqlDialect,
    /// Engine threads per select.
    #[arg(long, default_value_t = 1)]
    select_threads: usize,
    /// Selects scanning at once (as many more may queue; beyond, 503 SlowDown).
    /// Default: twice the number of cores.
    #[arg(long)]
    max_selects: Option<usize>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SqlDialect {
    Aws,
    Ceph,
}

pub fn run(args: GatewayArgs) -> ExitCode {
    let users = match collect_users(
        args.access_key,
        args.secret_key,
        std::env::var("SIFT_ACCESS_KEY").ok(),
        std::env::var("SIFT_SECRET_KEY").ok(),
        args.credentials.as_deref(),
    ) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("sift gateway: {e}");
            return ExitCode::from(2);
        }
    };
    let mut config = GatewayConfig::new(args.listen, args.data_dir, users);
    config.domain = args.domain;
    config.dialect = match args.sql_dialect {
        SqlDialect::Aws => Dialect::Aws,
        SqlDialect::Ceph => Dialect::Ceph,
    };
    config.select_threads = args.select_threads.max(1);
    if let Some(n) = args.max_selects {
        config.max_selects = n.max(1);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sift gateway: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let service = server::build_service(&config)?;
        let listener = server::bind(&config).await?;
        let addr = listener.local_addr()?;
        println!("listening on http://{addr}");
        server::serve(listener, service, server::shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sift gateway: {e}");
            ExitCode::FAILURE
        }
    }
}
