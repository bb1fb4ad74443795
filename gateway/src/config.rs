//! What the gateway is started with: where to listen, where objects live, who may sign
//! requests, and how selects are run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sift_engine::Dialect;

use crate::tls::{self, TlsError};
use crate::upstream::UpstreamConfig;

/// One user allowed to sign requests (SigV4 access key and secret).
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for User {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// Where objects live.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The embedded store in a directory (created if missing).
    Local { data_dir: PathBuf },
    /// Another S3 store, which every operation but SelectObjectContent is forwarded to.
    Upstream(UpstreamConfig),
}

/// Everything [`crate::server::serve`] needs.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub listen: SocketAddr,
    pub backend: Backend,
    /// Base domain for virtual-host style requests (`bucket.DOMAIN`); path style always works.
    pub domain: Option<String>,
    pub users: Vec<User>,
    pub dialect: Dialect,
    /// Engine threads per select.
    pub select_threads: usize,
    /// Selects running at once; more wait in a queue of the same length, and beyond that the
    /// gateway answers 503 SlowDown so that clients back off instead of piling up.
    pub max_selects: usize,
    /// Let unsigned requests read (GET, HEAD, list, select).
    pub allow_anonymous_read: bool,
    /// Serve HTTPS with this identity instead of plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// The gateway's settings as `sift gateway` parses them (flags, or their environment
/// variables, with the command line's defaults filled in), before they are checked:
/// [`GatewayConfig::from_flags`] turns them into a configuration or says what is wrong.
pub struct GatewayFlags {
    pub listen: SocketAddr,
    pub data_dir: Option<PathBuf>,
    pub upstream: Option<String>,
    pub upstream_access_key: Option<String>,
    pub upstream_secret_key: Option<String>,
    pub upstream_region: String,
    /// Seconds.
    pub upstream_timeout: f64,
    pub domain: Option<String>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub credentials: Option<PathBuf>,
    pub dialect: Dialect,
    pub select_threads: usize,
    pub allow_anonymous_read: bool,
    pub max_selects: Option<usize>,
    /// The certificate chain and private key of HTTPS (PEM files).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// The certificate authorities the upstream client trusts (PEM), instead of the
    /// system's; only used with an https:// upstream.
    pub ca_file: Option<PathBuf>,
}

impl GatewayConfig {
    /// Checks the flags and builds the configuration: exactly one backend, upstream keys
    /// with an upstream, an http(s) upstream URL and a positive timeout, at least one user,
    /// and readable, consistent TLS files. An empty key (a variable set to "") counts as not
    /// given.
    pub fn from_flags(flags: GatewayFlags) -> Result<GatewayConfig, ConfigError> {
        let given = |value: Option<String>| value.filter(|v| !v.is_empty());
        let users = collect_users(
            given(flags.access_key),
            given(flags.secret_key),
            flags.credentials.as_deref(),
        )?;
        let backend = match (flags.data_dir, flags.upstream) {
            (Some(data_dir), None) => Backend::Local { data_dir },
            (None, Some(endpoint)) => {
                let (Some(access_key), Some(secret_key)) = (
                    given(flags.upstream_access_key),
                    given(flags.upstream_secret_key),
                ) else {
                    return Err(ConfigError::UpstreamKeys);
                };
                if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                    return Err(ConfigError::UpstreamUrl(endpoint));
                }
                if !(flags.upstream_timeout.is_finite() && flags.upstream_timeout > 0.0) {
                    return Err(ConfigError::UpstreamTimeout);
                }
                let ca_bundle = match &flags.ca_file {
                    Some(path) => Some(tls::read_ca_bundle(path)?),
                    None => None,
                };
                Backend::Upstream(UpstreamConfig {
                    endpoint,
                    access_key,
                    secret_key,
                    region: flags.upstream_region,
                    timeout: Duration::from_secs_f64(flags.upstream_timeout),
                    ca_bundle,
                })
            }
            _ => return Err(ConfigError::Backend),
        };
        let tls = match (&flags.tls_cert, &flags.tls_key) {
            (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
            (None, None) => None,
            _ => return Err(TlsError::Half.into()),
        };
        let mut config = GatewayConfig::new(flags.listen, backend, users);
        config.tls = tls;
        config.domain = flags.domain;
        config.allow_anonymous_read = flags.allow_anonymous_read;
        config.dialect = flags.dialect;
        config.select_threads = flags.select_threads.max(1);
        if let Some(n) = flags.max_selects {
            config.max_selects = n.max(1);
        }
        Ok(config)
    }

    /// Defaults for everything but the address, the backend and the users.
    pub fn new(listen: SocketAddr, backend: Backend, users: Vec<User>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        GatewayConfig {
            listen,
            backend,
            domain: None,
            users,
            dialect: Dialect::default(),
            select_threads: 1,
            max_selects: 2 * cores,
            allow_anonymous_read: false,
            tls: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read credentials file {path}: {source}")]
    ReadCredentials {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: expected `ACCESS_KEY SECRET_KEY`")]
    BadCredentialsLine { path: PathBuf, line: usize },
    #[error("access key {0:?} is given more than once")]
    DuplicateAccessKey(String),
    #[error(
        "no credentials: give --access-key and --secret-key, set SIFT_ACCESS_KEY and \
         SIFT_SECRET_KEY, or name a --credentials file (lines `ACCESS SECRET`); the gateway \
         does not serve anonymous requests"
    )]
    NoCredentials,
    #[error("--access-key and --secret-key must be given together")]
    HalfCredentials,
    #[error(
        "give exactly one of --data-dir (the embedded store) and --upstream (another S3 store)"
    )]
    Backend,
    #[error(
        "--upstream needs --upstream-access-key and --upstream-secret-key (or \
         SIFT_UPSTREAM_ACCESS_KEY and SIFT_UPSTREAM_SECRET_KEY)"
    )]
    UpstreamKeys,
    #[error("--upstream {0:?} must be an http:// or https:// URL")]
    UpstreamUrl(String),
    #[error("--upstream-timeout must be a positive number of seconds")]
    UpstreamTimeout,
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// Reads a credentials file: one `ACCESS SECRET` pair per line; blank lines and lines
/// starting with `#` are ignored.
pub fn read_credentials_file(path: &Path) -> Result<Vec<User>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadCredentials {
        path: path.to_path_buf(),
        source,
    })?;
    parse_credentials(&text, path)
}

fn parse_credentials(text: &str, path: &Path) -> Result<Vec<User>, ConfigError> {
    let mut users = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some(access), Some(secret), None) => users.push(User {
                access_key: access.to_string(),
                secret_key: secret.to_string(),
            }),
            _ => {
                return Err(ConfigError::BadCredentialsLine {
                    path: path.to_path_buf(),
                    line: n + 1,
                })
            }
        }
    }
    Ok(users)
}

/// Merges the two ways of naming users (a key pair, a file) and refuses an empty result: a
/// gateway that accepted unsigned requests would expose every object.
fn collect_users(
    access: Option<String>,
    secret: Option<String>,
    file: Option<&Path>,
) -> Result<Vec<User>, ConfigError> {
    let mut users = Vec::new();
    match (access, secret) {
        (Some(access_key), Some(secret_key)) => users.push(User {
            access_key,
            secret_key,
        }),
        (None, None) => {}
        _ => return Err(ConfigError::HalfCredentials),
    }
    if let Some(path) = file {
        users.extend(read_credentials_file(path)?);
    }
    if users.is_empty() {
        return Err(ConfigError::NoCredentials);
    }
    let mut seen = std::collections::HashSet::new();
    for u in &users {
        if !seen.insert(u.access_key.as_str()) {
            return Err(ConfigError::DuplicateAccessKey(u.access_key.clone()));
        }
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_file_lines() {
        let users = parse_credentials(
            "# users\n\nmain secret1\n  alt   secret2  \n",
            Path::new("c"),
        )
        .expect("valid file");
        assert_eq!(users.len(), 2);
        assert_eq!(users[1].access_key, "alt");
        assert_eq!(users[1].secret_key, "secret2");
        assert!(matches!(
            parse_credentials("a b c\n", Path::new("c")),
            Err(ConfigError::BadCredentialsLine { line: 1, .. })
        ));
    }

    /// Flags for an embedded store with one user.
    fn local() -> GatewayFlags {
        GatewayFlags {
            listen: "127.0.0.1:0".parse().expect("address"),
            data_dir: Some("data".into()),
            upstream: None,
            upstream_access_key: None,
            upstream_secret_key: None,
            upstream_region: "us-east-1".into(),
            upstream_timeout: 30.0,
            domain: None,
            access_key: Some("a".into()),
            secret_key: Some("s".into()),
            credentials: None,
            dialect: Dialect::Aws,
            select_threads: 1,
            allow_anonymous_read: false,
            max_selects: None,
            tls_cert: None,
            tls_key: None,
            ca_file: None,
        }
    }

    /// A file of the test PKI (tests/fixtures/tls, made by its make.sh).
    fn pki(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/tls")
            .join(name)
    }

    #[test]
    fn tls_files_are_checked_at_start() {
        let mut flags = local();
        flags.tls_cert = Some(pki("server.pem"));
        flags.tls_key = Some(pki("server.key"));
        let config = GatewayConfig::from_flags(flags).expect("a valid identity");
        assert!(config.tls.is_some());

        let error = |change: &dyn Fn(&mut GatewayFlags)| {
            let mut flags = local();
            flags.tls_cert = Some(pki("server.pem"));
            flags.tls_key = Some(pki("server.key"));
            change(&mut flags);
            GatewayConfig::from_flags(flags)
                .expect_err("refused")
                .to_string()
        };
        let half = error(&|f| f.tls_key = None);
        assert!(half.contains("--tls-cert and --tls-key"), "{half}");
        let missing = error(&|f| f.tls_cert = Some(pki("absent.pem")));
        assert!(missing.starts_with("cannot read --tls-cert"), "{missing}");
        let no_key = error(&|f| f.tls_key = Some(pki("server.pem")));
        assert!(no_key.starts_with("--tls-key"), "{no_key}");
        // The CA's key does not belong to the server's certificate.
        let mismatch = error(&|f| f.tls_key = Some(pki("ca.key")));
        assert!(mismatch.contains("server identity"), "{mismatch}");
        let not_a_certificate = error(&|f| f.tls_cert = Some(pki("server.key")));
        assert!(
            not_a_certificate.contains("no PEM certificate"),
            "{not_a_certificate}"
        );

        let mut flags = upstream();
        flags.ca_file = Some(pki("ca.pem"));
        let config = GatewayConfig::from_flags(flags).expect("a CA bundle");
        let Backend::Upstream(up) = config.backend else {
            panic!("an upstream backend");
        };
        assert!(up.ca_bundle.is_some());
        let mut flags = upstream();
        flags.ca_file = Some(pki("make.sh"));
        let refused = GatewayConfig::from_flags(flags)
            .expect_err("not PEM")
            .to_string();
        assert!(refused.starts_with("--ca-file"), "{refused}");
    }

    /// Flags for an upstream store with its keys.
    fn upstream() -> GatewayFlags {
        let mut flags = local();
        flags.data_dir = None;
        flags.upstream = Some("http://127.0.0.1:7480".into());
        flags.upstream_access_key = Some("ua".into());
        flags.upstream_secret_key = Some("us".into());
        flags
    }

    #[test]
    fn flags_become_a_configuration() {
        let mut flags = local();
        flags.select_threads = 0;
        flags.max_selects = Some(3);
        flags.dialect = Dialect::Ceph;
        let config = GatewayConfig::from_flags(flags).expect("valid");
        assert!(matches!(config.backend, Backend::Local { .. }));
        assert_eq!(config.users[0].access_key, "a");
        assert_eq!((config.select_threads, config.max_selects), (1, 3));
        assert_eq!(config.dialect, Dialect::Ceph);

        let mut flags = upstream();
        flags.upstream_timeout = 2.5;
        let config = GatewayConfig::from_flags(flags).expect("valid");
        let Backend::Upstream(up) = config.backend else {
            panic!("an upstream backend");
        };
        assert_eq!(
            (up.access_key.as_str(), up.secret_key.as_str()),
            ("ua", "us")
        );
        assert_eq!(up.timeout, Duration::from_millis(2500));
    }

    #[test]
    fn flags_that_cannot_serve_say_why() {
        let error = |flags: GatewayFlags| GatewayConfig::from_flags(flags).expect_err("refused");
        let mut flags = local();
        flags.upstream = Some("http://x".into());
        assert!(matches!(error(flags), ConfigError::Backend));
        let mut flags = local();
        flags.data_dir = None;
        assert!(matches!(error(flags), ConfigError::Backend));
        let mut flags = upstream();
        flags.upstream_secret_key = Some(String::new());
        assert!(matches!(error(flags), ConfigError::UpstreamKeys));
        let mut flags = upstream();
        flags.upstream = Some("127.0.0.1:7480".into());
        assert!(matches!(error(flags), ConfigError::UpstreamUrl(_)));
        let mut flags = upstream();
        flags.upstream_timeout = 0.0;
        assert!(matches!(error(flags), ConfigError::UpstreamTimeout));
        let mut flags = local();
        flags.access_key = None;
        assert!(matches!(error(flags), ConfigError::HalfCredentials));
        let mut flags = local();
        (flags.access_key, flags.secret_key) = (Some(String::new()), Some(String::new()));
        assert!(matches!(error(flags), ConfigError::NoCredentials));
    }
}
