//! What the gateway is started with: where to listen, where objects live, who may sign
//! requests, and how selects are run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use sift_engine::Dialect;

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
}

impl GatewayConfig {
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

/// Merges the three ways of naming users (flags, environment, file) and refuses an empty
/// result: a gateway that accepted unsigned requests would expose every object.
pub fn collect_users(
    flag_access: Option<String>,
    flag_secret: Option<String>,
    env_access: Option<String>,
    env_secret: Option<String>,
    file: Option<&Path>,
) -> Result<Vec<User>, ConfigError> {
    let mut users = Vec::new();
    match (flag_access, flag_secret) {
        (Some(access_key), Some(secret_key)) => users.push(User {
            access_key,
            secret_key,
        }),
        (None, None) => {
            if let (Some(access_key), Some(secret_key)) = (env_access, env_secret) {
                users.push(User {
                    access_key,
                    secret_key,
                });
            }
        }
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

    #[test]
    fn refuses_no_credentials() {
        assert!(matches!(
            collect_users(None, None, None, None, None),
            Err(ConfigError::NoCredentials)
        ));
        assert!(matches!(
            collect_users(Some("a".into()), None, None, None, None),
            Err(ConfigError::HalfCredentials)
        ));
        let users = collect_users(None, None, Some("e".into()), Some("s".into()), None)
            .expect("env credentials");
        assert_eq!(users[0].access_key, "e");
    }
}
