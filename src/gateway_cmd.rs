//! `sift gateway`: the S3 endpoint over a local data directory or in front of another store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use sift_engine::Dialect;
use sift_gateway::config::{GatewayConfig, GatewayFlags};
use sift_gateway::server;

#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// Address to listen on; port 0 picks a free port (the chosen one is printed).
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Directory holding buckets and objects (created if missing): the embedded store. Give
    /// it or --upstream.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Serve in front of this S3 store (`http://host:port`, e.g. Ceph RGW or MinIO): every
    /// call but SelectObjectContent is forwarded; selects run in Sift. Give it or --data-dir.
    #[arg(long)]
    upstream: Option<String>,
    /// Access key Sift signs upstream requests with.
    #[arg(long, env = "SIFT_UPSTREAM_ACCESS_KEY", hide_env_values = true)]
    upstream_access_key: Option<String>,
    /// Secret key Sift signs upstream requests with.
    #[arg(long, env = "SIFT_UPSTREAM_SECRET_KEY", hide_env_values = true)]
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
    /// Access key of a user (with --secret-key).
    #[arg(long, env = "SIFT_ACCESS_KEY", hide_env_values = true)]
    access_key: Option<String>,
    /// Secret key of that user (with --access-key).
    #[arg(long, env = "SIFT_SECRET_KEY", hide_env_values = true)]
    secret_key: Option<String>,
    /// File of users, one `ACCESS SECRET` per line, `#` comments.
    #[arg(long)]
    credentials: Option<PathBuf>,
    /// The SQL dialect of selects: AWS's, or Ceph RGW's (docs/sql.md).
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
    /// Serve HTTPS with this certificate chain (PEM, leaf first; with --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Certificate authorities (PEM) an https:// --upstream is checked against, instead of
    /// the system's.
    #[arg(long, env = "AWS_CA_BUNDLE")]
    ca_file: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SqlDialect {
    Aws,
    Ceph,
}

impl GatewayArgs {
    /// The parsed flags as the gateway library takes them.
    fn flags(self) -> GatewayFlags {
        GatewayFlags {
            listen: self.listen,
            data_dir: self.data_dir,
            upstream: self.upstream,
            upstream_access_key: self.upstream_access_key,
            upstream_secret_key: self.upstream_secret_key,
            upstream_region: self.upstream_region,
            upstream_timeout: self.upstream_timeout,
            domain: self.domain,
            access_key: self.access_key,
            secret_key: self.secret_key,
            credentials: self.credentials,
            dialect: match self.sql_dialect {
                SqlDialect::Aws => Dialect::Aws,
                SqlDialect::Ceph => Dialect::Ceph,
            },
            select_threads: self.select_threads,
            allow_anonymous_read: self.allow_anonymous_read,
            max_selects: self.max_selects,
            tls_cert: self.tls_cert,
            tls_key: self.tls_key,
            ca_file: self.ca_file,
        }
    }
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
    let config = match GatewayConfig::from_flags(args.flags()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("sift gateway: {e}");
            return ExitCode::from(2);
        }
    };

    crate::run_async("sift gateway", async {
        let service = server::build_service(&config)?;
        let listener = server::bind(&config).await?;
        let addr = listener.local_addr()?;
        let shutdown = server::shutdown_signal()?;
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        println!("listening on {scheme}://{addr}");
        server::serve(listener, service, config.tls.clone(), shutdown).await
    })
}
