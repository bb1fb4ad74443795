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
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use clap::Args;

use crate::net::{self, Link};
use crate::scan::Location;
use crate::tls::{self, CaBundle};

/// Where the objects live and how to sign requests (shared by `load` and `run`).
#[derive(Args, Debug, Clone)]
pub struct EndpointArgs {
    /// The S3 endpoint, e.g. http://127.0.0.1:9000, or several separated by commas, all in
    /// front of the same objects (a gateway on every storage node): `run` spreads its
    /// requests over them and sends one that fails on one to the next; `load` writes through
    /// the first.
    #[arg(long = "endpoint", value_name = "URL[,URL…]", value_delimiter = ',', required = true,
          value_parser = parse_endpoint)]
    pub endpoints: Vec<String>,
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

/// How a process signs its requests and which servers it trusts: shared by `load`, `run`
/// and `executor`.
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
    /// Certificate authorities (PEM) that https:// endpoints are checked against, instead of
    /// the system's.
    #[arg(long, env = "AWS_CA_BUNDLE", value_parser = CaBundle::read)]
    pub ca_file: Option<CaBundle>,
}

impl Signing {
    /// Static keys in `region`.
    pub fn keys(access: &str, secret: &str, region: &str) -> Signing {
        Signing {
            access_key: Some(access.into()),
            secret_key: Some(secret.into()),
            session_token: None,
            region: Some(region.into()),
            ca_file: None,
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
        let http = net::http_client(link, tls::client_config(self.ca_file.as_ref()));
        shared_config(self.credentials(), self.region.clone(), http).await
    }
}

impl EndpointArgs {
    /// The first endpoint, through which `load` writes.
    pub fn first(&self) -> &str {
        self.endpoints.first().map_or("", String::as_str)
    }

    /// The store's endpoints and addressing.
    pub fn location(&self) -> Location {
        Location {
            endpoints: self.endpoints.clone(),
            virtual_hosted: self.virtual_hosted,
        }
    }
}

/// An endpoint URL as `--endpoint` takes it: `http://` or `https://`, a host, an optional
/// port and path; a trailing `/` is dropped.
pub fn parse_endpoint(text: &str) -> Result<String, String> {
    let text = text.trim();
    let uri: hyper::Uri = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => {
            return Err(format!(
                "{text:?}: expected http://HOST[:PORT] or https://…"
            ))
        }
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("{text:?}: no host"));
    }
    // hyper takes any text after the host's `:` and then has no port.
    let authority = uri.authority().map_or("", |a| a.as_str());
    let after_host = authority
        .rsplit_once(']')
        .map_or(authority, |(_, rest)| rest);
    if let Some((_, port)) = after_host.rsplit_once(':') {
        if port.parse::<u16>().is_err() {
            return Err(format!("{text:?}: {port:?} is not a port number"));
        }
    }
    Ok(text.trim_end_matches('/').to_string())
}

/// An S3 client of the first endpoint whose traffic goes through `link` (for `load`).
pub async fn client(args: &EndpointArgs, link: Arc<Link>) -> Client {
    let shared = args.signing.shared_config(link).await;
    client_for(&shared, args.first(), args.virtual_hosted)
}

/// What every client of a process shares: credentials (`None`: the AWS chain), region and
/// the HTTP client.
async fn shared_config(
    credentials: Option<Credentials>,
    region: Option<String>,
    http: SharedHttpClient,
) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
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
    // A store busy with PUTs may answer 503 SlowDown: the S3 contract is to back off and
    // retry, and the SDK's default of three attempts can run out within a second or two.
    let retry = RetryConfig::standard()
        .with_max_attempts(10)
        .with_max_backoff(Duration::from_secs(10));
    build(shared, endpoint, virtual_hosted, retry)
}

/// A client of `endpoint` that makes every request once: for a [`crate::scan::Store`],
/// which retries a failed request on the next of its endpoints rather than on this one.
pub(crate) fn client_without_retries(
    shared: &SdkConfig,
    endpoint: &str,
    virtual_hosted: bool,
) -> Client {
    build(shared, endpoint, virtual_hosted, RetryConfig::disabled())
}

fn build(shared: &SdkConfig, endpoint: &str, virtual_hosted: bool, retry: RetryConfig) -> Client {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked_urls() {
        assert_eq!(
            parse_endpoint("http://10.0.0.1:9000/").as_deref(),
            Ok("http://10.0.0.1:9000")
        );
        assert!(parse_endpoint("http://[::1]:9000").is_ok());
        assert!(parse_endpoint("https://gw1.example").is_ok());
        for bad in [
            "10.0.0.1:9000",
            "ftp://h:1",
            "https://",
            "http://",
            "http://h:port",
            "",
        ] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }
}
