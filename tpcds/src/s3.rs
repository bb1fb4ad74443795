//! Connecting to an S3 endpoint: where, as whom, and through which [`Link`].
//!
//! Credentials and region come from the standard AWS chain (environment, profiles, …) unless
//! given explicitly; addressing is path-style by default because Sift, Ceph RGW and MinIO are
//! usually reached by IP address or a single host name without wildcard DNS.

use std::sync::Arc;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
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
    #[command(flatten)]
    pub signing: Signing,
    /// Use virtual-hosted addressing (bucket in the host name) instead of path-style.
    #[arg(long)]
    pub virtual_hosted: bool,
}

/// How a process signs its requests: shared by `load`, `run` and `executor`.
#[derive(Args, Debug, Clone, Default)]
pub struct Signing {
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
}

impl Signing {
    /// Static keys in `region`.
    pub fn keys(access: &str, secret: &str, region: &str) -> Signing {
        Signing {
            access_key: Some(access.into()),
            secret_key: Some(secret.into()),
            session_token: None,
            region: Some(region.into()),
        }
    }

    /// The keys given on the command line or in the environment, if any.
    pub fn credentials(&self) -> Option<Credentials> {
        match (&self.access_key, &self.secret_key) {
            (Some(access), Some(secret)) => Some(Credentials::new(
                access.clone(),
                secret.clone(),
                self.session_token.clone(),
                None,
                "sift-command-line",
            )),
            _ => None,
        }
    }

    /// What every client of this process shares, through `link`.
    pub async fn shared_config(&self, link: Arc<Link>) -> SdkConfig {
        shared_config(self.credentials(), self.region.clone(), link).await
    }
}

/// An S3 client whose traffic goes through `link`.
pub async fn client(args: &EndpointArgs, link: Arc<Link>) -> Client {
    let shared = args.signing.shared_config(link).await;
    client_for(&shared, &args.endpoint, args.virtual_hosted)
}

/// What every client of a process shares: credentials (`None`: the AWS chain), region and
/// the HTTP client through `link`.
async fn shared_config(
    credentials: Option<Credentials>,
    region: Option<String>,
    link: Arc<Link>,
) -> SdkConfig {
    let mut loader =
        aws_config::defaults(BehaviorVersion::latest()).http_client(net::http_client(link));
    if let Some(region) = region {
        loader = loader.region(Region::new(region));
    }
    if let Some(credentials) = credentials {
        loader = loader.credentials_provider(credentials);
    }
    loader.load().await
}

/// A client of the store at `endpoint`, with `shared`'s credentials and HTTP client.
pub fn client_for(shared: &SdkConfig, endpoint: &str, virtual_hosted: bool) -> Client {
    // A store busy with selects answers 503 SlowDown (Sift's gateway beyond twice its select
    // threads): the S3 contract is to back off and retry, and the SDK's default of three
    // attempts ran out within a second or two while a query with fifteen scans (q9) kept
    // the store full.
    let retry = RetryConfig::standard()
        .with_max_attempts(10)
        .with_max_backoff(Duration::from_secs(10));
    let mut config = aws_sdk_s3::config::Builder::from(shared)
        .endpoint_url(endpoint)
        .force_path_style(!virtual_hosted)
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
