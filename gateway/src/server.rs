//! The HTTP side: s3s's service on hyper, `/health`, and graceful shutdown.

use std::net::SocketAddr;

use hyper::{HeaderMap, Method, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use hyper_util::server::graceful::GracefulShutdown;
use s3s::route::S3Route;
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::{Body, S3Request, S3Response, S3Result};
use tokio::net::TcpListener;

use crate::config::{Backend, GatewayConfig};
use crate::local::LocalGateway;
use crate::select::SelectService;
use crate::store::LocalStore;
use crate::upstream::UpstreamGateway;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot open the data directory {path}: {source}")]
    DataDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("invalid --domain {0:?}")]
    Domain(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// `GET /health`: unauthenticated, for load balancers and container health checks.
struct Health;

#[async_trait::async_trait]
impl S3Route for Health {
    fn is_match(
        &self,
        method: &Method,
        uri: &Uri,
        _headers: &HeaderMap,
        _extensions: &mut hyper::http::Extensions,
    ) -> bool {
        method == Method::GET && uri.path() == "/health"
    }

    async fn check_access(&self, _req: &mut S3Request<Body>) -> S3Result<()> {
        Ok(())
    }

    async fn call(&self, _req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        Ok(S3Response::new(Body::from("ok".to_string())))
    }
}

/// Virtual-host addressing for `--domain D`: `bucket.D` names a bucket, and any other host
/// (`D` itself, an IP address, `localhost`) is path style. Ports are ignored, so a client
/// may reach the gateway on any address. (s3s's `SingleDomain` compares the Host header
/// including its port and reads any unknown host as a CNAME bucket, which breaks path-style
/// requests to `127.0.0.1:PORT`.)
#[derive(Debug)]
struct DomainHost {
    domain: String,
}

impl s3s::host::S3Host for DomainHost {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<s3s::host::VirtualHost<'a>> {
        let name = match host.rsplit_once(':') {
            // An IPv6 literal (`[::1]:9000` or `[::1]`) keeps its brackets.
            Some((name, port)) if !port.contains(']') => name,
            _ => host,
        };
        let vh = s3s::host::VirtualHost::new(self.domain.as_str());
        match name
            .strip_suffix(self.domain.as_str())
            .and_then(|rest| rest.strip_suffix('.'))
        {
            Some(bucket) if !bucket.is_empty() => Ok(vh.with_bucket(bucket)),
            _ => Ok(vh),
        }
    }
}

/// Builds the s3s service for `config`.
pub fn build_service(config: &GatewayConfig) -> Result<S3Service, ServeError> {
    let select = SelectService::new(config.dialect, config.select_threads, config.max_selects);
    let mut builder = match &config.backend {
        Backend::Local { data_dir } => {
            let store = LocalStore::open(data_dir).map_err(|source| ServeError::DataDir {
                path: data_dir.clone(),
                source,
            })?;
            S3ServiceBuilder::new(LocalGateway { store, select })
        }
        Backend::Upstream(upstream) => {
            S3ServiceBuilder::new(UpstreamGateway::new(upstream, select))
        }
    };
    builder.set_auth(crate::auth::Users::new(&config.users));
    builder.set_route(Health);
    if let Some(domain) = &config.domain {
        let valid = !domain.is_empty()
            && domain.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return Err(ServeError::Domain(domain.clone()));
        }
        builder.set_host(DomainHost {
            domain: domain.to_ascii_lowercase(),
        });
    }
    Ok(builder.build())
}

/// Binds the listener (so that `--listen 127.0.0.1:0` has a port to report).
pub async fn bind(config: &GatewayConfig) -> Result<TcpListener, ServeError> {
    TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })
}

/// Serves until `shutdown` completes, then stops accepting and waits for the requests in
/// flight (including streaming selects) to finish.
pub async fn serve(
    listener: TcpListener,
    service: S3Service,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    let conn_builder = ConnBuilder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                // Out of file descriptors and the like: keep serving the open connections.
                Err(e) => {
                    eprintln!("sift gateway: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = socket.set_nodelay(true);
        let conn = conn_builder.serve_connection(TokioIo::new(socket), service.clone());
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A future that completes at the first SIGINT or SIGTERM. The handlers are installed
/// here, before it is polled, so a signal that arrives right after the gateway prints its
/// address still stops it gracefully. Call it inside the runtime.
#[cfg(unix)]
pub fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// A future that completes at the first Ctrl-C.
#[cfg(not(unix))]
pub fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
