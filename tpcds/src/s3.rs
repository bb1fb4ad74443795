//! Connecting to an S3 endpoint: where, as whom, and through which [`Link`].
//!
//! Credentials and region come from the standard AWS chain (environment, profiles, …) unless
//! given explicitly; addressing is path-style by default because Sift, Ceph RGW and MinIO are
//! usually reached by IP address or a single host name without wildcard DNS.

use std::sync::Arc;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_s3::config::Credentials;
use aws_sdk_s3::Client;
use clap::Args;

use crate::net::{self, Link};

/// Where the objects live and how to sign requests (shared by `load` and `run`).
#[derive(Args, Debug, Clone)]
pub struct EndpointArgs {
    /// The S3 endpoint, e.g. http://127.0.0.1:9000.
    #[arg(long)]
    pub endpoint: String,
    /// Bucket holding the data (created by `load` if missing).
    #[arg(long)]
    pub bucket: String,
    /// Key prefix under the bucket; objects are `PREFIX/sf<SF>/<table>/part-NNNNN.dat`.
    #[arg(long, default_value = "tpcds")]
    pub prefix: String,
    /// Access key (with --secret-key); without either, the rest of the AWS credential
    /// chain (profiles, instance roles) is asked.
    #[arg(
        long,
        env = "AWS_ACCESS_KEY_ID",
        hide_env_values = true,
        requires = "secret_key"
    )]
    pub access_key: Option<String>,
    /// Secret key (with --access-key).
    #[arg(
        long,
        env = "AWS_SECRET_ACCESS_KEY",
        hide_env_values = true,
        requires = "access_key"
    )]
    pub secret_key: Option<String>,
    /// Session token of temporary keys (with --access-key and --secret-key).
    #[arg(
        long,
        env = "AWS_SESSION_TOKEN",
        hide_env_values = true,
        requires = "access_key"
    )]
    pub session_token: Option<String>,
    /// Region (default: the profile's; us-east-1 if none is set).
    #[arg(long, env = "AWS_REGION")]
    pub region: Option<String>,
    /// Use virtual-hosted addressing (bucket in the host name) instead of path-style.
    #[arg(long)]
    pub virtual_hosted: bool,
}

/// An S3 client whose traffic goes through `link`.
pub async fn client(args: &EndpointArgs, link: Arc<Link>) -> Client {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(net::http_client(link))
        .endpoint_url(&args.endpoint);
    if let Some(region) = &args.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if let (Some(access), Some(secret)) = (&args.access_key, &args.secret_key) {
        loader = loader.credentials_provider(Credentials::new(
            access.clone(),
            secret.clone(),
            args.session_token.clone(),
            None,
            "sift-command-line",
        ));
    }
    let shared = loader.load().await;
    // A store busy with selects answers 503 SlowDown (Sift's gateway beyond twice its select
    // threads): the S3 contract is to back off and retry, and the SDK's default of three
    // attempts ran out within a second or two while a query with fifteen scans (q9) kept
    // the store full.
    let retry = RetryConfig::standard()
        .with_max_attempts(10)
        .with_max_backoff(Duration::from_secs(10));
    let mut config = aws_sdk_s3::config::Builder::from(&shared)
        .force_path_style(!args.virtual_hosted)
        .retry_config(retry);
    if shared.region().is_none() {
        config = config.region(Region::new("us-east-1"));
    }
    Client::from_conf(config.build())
}

/// The key prefix of one table's parts.
pub fn table_prefix(prefix: &str, scale: f64, table: &str) -> String {
    let prefix = prefix.trim_matches('/');
    let scale = crate::layout::scale_label(scale);
    if prefix.is_empty() {
        format!("sf{scale}/{table}/")
    } else {
        format!("{prefix}/sf{scale}/{table}/")
    }
}
