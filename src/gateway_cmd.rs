//! `sift gateway`: the S3 endpoint over a local data directory or in front of another store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use sift_engine::Dialect;
use sift_gateway::config::{collect_users, Backend, GatewayConfig};
use sift_gateway::server;
use sift_gateway::upstream::UpstreamConfig;

#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Directory holding buckets and objects (created if missing): the embedded store.
    #[arg(
        long,
        required_unless_present = "upstream",
        conflicts_with = "upstream"
    )]
    data_dir: Option<PathBuf>,
    /// Forward every S3 call but SelectObjectContent to this S3 store (`http://host:port`)
    /// instead of serving from --data-dir.
    #[arg(
        long,
        requires = "upstream_access_key",
        requires = "upstream_secret_key"
    )]
    upstream: Option<String>,
    /// Access key Sift signs upstream requests with; or set SIFT_UPSTREAM_ACCESS_KEY.
    #[arg(long)]
    upstream_access_key: Option<String>,
    /// Secret key Sift signs upstream requests with; or set SIFT_UPSTREAM_SECRET_KEY.
    #[arg(long)]
    upstream_secret_key: Option<String>,
    /// Region of the upstream store's signatures.
    #[arg(long, default_value = "us-east-1")]
    upstream_region: String,
    /// Seconds the upstream may stay silent (connecting, answering, mid-body) before the
    /// request fails.
    #[arg(long, default_value_t = 30.0)]
    upstream_timeout: f64,
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
    /// Let unsigned requests read objects (GET, HEAD, list, select); they may never write.
    #[arg(long)]
    allow_anonymous_read: bool,
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
    // Logs on stderr, filtered by RUST_LOG; by default warnings plus one access-log line
    // per request (target sift::access). s3s logs every refused request as an ERROR, which
    // the access log already shows with its status, so it is off unless asked for.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,s3s=off,sift::access=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
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
    let backend = match (args.data_dir, args.upstream) {
        (Some(data_dir), None) => Backend::Local { data_dir },
        (None, Some(endpoint)) => {
            let key = |flag: Option<String>, env: &str| {
                flag.or_else(|| std::env::var(env).ok())
                    .filter(|k| !k.is_empty())
            };
            let (Some(access_key), Some(secret_key)) = (
                key(args.upstream_access_key, "SIFT_UPSTREAM_ACCESS_KEY"),
                key(args.upstream_secret_key, "SIFT_UPSTREAM_SECRET_KEY"),
            ) else {
                eprintln!("sift gateway: --upstream needs --upstream-access-key and --upstream-secret-key (or SIFT_UPSTREAM_ACCESS_KEY and SIFT_UPSTREAM_SECRET_KEY)");
                return ExitCode::from(2);
            };
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                eprintln!(
                    "sift gateway: --upstream {endpoint:?} must be an http:// or https:// URL"
                );
                return ExitCode::from(2);
            }
            if !(args.upstream_timeout.is_finite() && args.upstream_timeout > 0.0) {
                eprintln!("sift gateway: --upstream-timeout must be a positive number of seconds");
                return ExitCode::from(2);
            }
            Backend::Upstream(UpstreamConfig {
                endpoint,
                access_key,
                secret_key,
                region: args.upstream_region,
                timeout: Duration::from_secs_f64(args.upstream_timeout),
            })
        }
        // clap's required_unless_present / conflicts_with rule the other cases out.
        _ => {
            eprintln!("sift gateway: give exactly one of --data-dir and --upstream");
            return ExitCode::from(2);
        }
    };
    let mut config = GatewayConfig::new(args.listen, backend, users);
    config.domain = args.domain;
    config.allow_anonymous_read = args.allow_anonymous_read;
    config.dialect = match args.sql_dialect {
        SqlDialect::Aws => Dialect::Aws,
        SqlDialect::Ceph => Dialect::Ceph,
    };
    config.select_threads = args.select_threads.max(1);
    if let Some(n) = args.max_selects {
        config.max_selects = n.max(1);
    }

    crate::run_async("sift gateway", async {
        let service = server::build_service(&config)?;
        let listener = server::bind(&config).await?;
        let addr = listener.local_addr()?;
        let shutdown = server::shutdown_signal()?;
        println!("listening on http://{addr}");
        server::serve(listener, service, shutdown).await
    })
}
