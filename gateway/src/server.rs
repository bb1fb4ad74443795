//! The HTTP side: s3s's service on hyper (over TLS when the gateway has a certificate),
//! `/health` and `/metrics`, one access-log line and one metrics count per request, and
//! graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::{HeaderMap, Method, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use hyper_util::server::graceful::GracefulShutdown;
use s3s::route::S3Route;
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::{Body, S3Request, S3Response, S3Result};
use tokio::net::TcpListener;

use crate::auth::{Access, RequestSlot, Users};
use crate::config::{Backend, GatewayConfig};
use crate::local::LocalGateway;
use crate::metrics::Metrics;
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

/// `GET /health` and `GET /metrics`: unauthenticated, for load balancers, container health
/// checks and Prometheus.
struct Routes {
    metrics: Arc<Metrics>,
}

#[async_trait::async_trait]
impl S3Route for Routes {
    fn is_match(
        &self,
        method: &Method,
        uri: &Uri,
        _headers: &HeaderMap,
        _extensions: &mut hyper::http::Extensions,
    ) -> bool {
        method == Method::GET && matches!(uri.path(), "/health" | "/metrics")
    }

    async fn check_access(&self, _req: &mut S3Request<Body>) -> S3Result<()> {
        Ok(())
    }

    async fn call(&self, req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let metrics = req.uri.path() == "/metrics";
        if let Some(slot) = req.extensions.get::<RequestSlot>() {
            let mut info = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            info.operation = Some(if metrics { "Metrics" } else { "Health" }.to_string());
        }
        if !metrics {
            return Ok(S3Response::new(Body::from("ok".to_string())));
        }
        let mut resp = S3Response::new(Body::from(self.metrics.render()));
        resp.headers.insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        Ok(resp)
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

/// The gateway's HTTP service: s3s's, wrapped to count and log every request.
#[derive(Clone)]
pub struct Service {
    s3: S3Service,
    metrics: Arc<Metrics>,
}

/// Builds the service for `config`.
pub fn build_service(config: &GatewayConfig) -> Result<Service, ServeError> {
    let metrics = Arc::new(Metrics::default());
    let select = SelectService::new(config.dialect, config.select_threads, config.max_selects)
        .with_metrics(metrics.clone());
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
    builder.set_auth(Users::new(&config.users));
    builder.set_access(Access {
        allow_anonymous_read: config.allow_anonymous_read,
    });
    builder.set_route(Routes {
        metrics: metrics.clone(),
    });
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
    Ok(Service {
        s3: builder.build(),
        metrics,
    })
}

/// The largest XML request body s3s reads (its default `xml_max_body_size`).
const MAX_XML_BODY: u64 = 20 * 1024 * 1024;

/// POST requests carry XML that s3s reads whole (select, batch delete, multipart
/// completion), except browser form uploads. Beyond its limit s3s answers 500; S3's answer
/// is 400 MaxMessageLengthExceeded, given here before the body is read.
fn oversized_xml<B>(req: &hyper::Request<B>) -> Option<s3s::HttpResponse> {
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let length: u64 = header(hyper::header::CONTENT_LENGTH)?.parse().ok()?;
    let form =
        header(hyper::header::CONTENT_TYPE).is_some_and(|t| t.starts_with("multipart/form-data"));
    if req.method() != Method::POST || form || length <= MAX_XML_BODY {
        return None;
    }
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>MaxMessageLengthExceeded</Code>\
         <Message>Your request was too big: {length} bytes of XML, at most {MAX_XML_BODY}.</Message></Error>"
    );
    let mut resp = hyper::Response::new(Body::from(body));
    *resp.status_mut() = hyper::StatusCode::BAD_REQUEST;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/xml"),
    );
    // The unread body would otherwise be drained or make the next request unparsable.
    resp.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    Some(resp)
}

/// A request id for `x-amz-request-id` and the access log: unique within the process (a
/// counter) and, across restarts, very likely unique (a random start).
fn next_request_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static BASE: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    });
    format!(
        "{:016X}",
        base.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed))
    )
}

/// Marks a response with its request id: the `x-amz-request-id` header, and in an XML error
/// body the `<RequestId>` element S3 writes there (SDKs report it from the body: the AWS SDK
/// for Java v1 says "Request ID: null" without it). Error bodies are small and whole in
/// memory; a streamed body (a select's events) is left as it is.
fn identify(resp: &mut s3s::HttpResponse, request_id: &str) {
    if let Ok(id) = hyper::header::HeaderValue::from_str(request_id) {
        resp.headers_mut().insert("x-amz-request-id", id);
    }
    if resp.status().as_u16() < 300 {
        return;
    }
    let Some(bytes) = resp.body().bytes() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return;
    };
    let Some(end) = text.rfind("</Error>") else {
        return;
    };
    if text.contains("<RequestId>") {
        return;
    }
    let body = format!(
        "{}<RequestId>{request_id}</RequestId>{}",
        &text[..end],
        &text[end..]
    );
    resp.headers_mut().remove(hyper::header::CONTENT_LENGTH);
    *resp.body_mut() = Body::from(body);
}

/// One connection's view of the [`Service`]: knows the peer, for the access log.
struct Connection {
    service: Service,
    peer: SocketAddr,
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for Connection {
    type Response = s3s::HttpResponse;
    type Error = s3s::HttpError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn call(&self, mut req: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let request_id = next_request_id();
        if let Some(mut refusal) = oversized_xml(&req) {
            self.service.metrics.request("Unknown", 400);
            identify(&mut refusal, &request_id);
            return Box::pin(std::future::ready(Ok(refusal)));
        }
        let slot = RequestSlot::default();
        req.extensions_mut().insert(slot.clone());
        let (method, uri) = (req.method().clone(), req.uri().clone());
        let started = std::time::Instant::now();
        let (s3, metrics, peer) = (
            self.service.s3.clone(),
            self.service.metrics.clone(),
            self.peer,
        );
        Box::pin(async move {
            let mut result = hyper::service::Service::call(&s3, req).await;
            if let Ok(resp) = result.as_mut() {
                identify(resp, &request_id);
            }
            let status = result.as_ref().map_or(500, |r| r.status().as_u16());
            let info = slot
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone();
            // No operation means the request never passed the signature check (or s3s
            // could not route it).
            let operation = info.operation.as_deref().unwrap_or("Unauthenticated");
            metrics.request(operation, status);
            // The body's length when known before it is sent (not for a select's stream).
            let length = result
                .as_ref()
                .ok()
                .and_then(|r| hyper::body::Body::size_hint(r.body()).exact())
                .map_or_else(|| "-".to_string(), |n| n.to_string());
            tracing::info!(
                target: "sift::access",
                "{peer} {} {method} {uri} {status} {operation} {length} {:.1}ms {request_id}",
                info.access_key.as_deref().unwrap_or("-"),
                started.elapsed().as_secs_f64() * 1e3,
            );
            result
        })
    }
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

/// How long a client may take to complete the TLS handshake before its connection is
/// dropped, so that silent sockets do not pile up.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves until `shutdown` completes, then stops accepting and waits for the requests in
/// flight (including streaming selects) to finish. With `tls`, every connection is a TLS
/// one; a failed handshake is logged and closes only that connection.
pub async fn serve(
    listener: TcpListener,
    service: Service,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    let conn_builder = ConnBuilder::new(TokioExecutor::new());
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (socket, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
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
        let connection = Connection {
            service: service.clone(),
            peer,
        };
        let (conn_builder, watcher) = (conn_builder.clone(), graceful.watcher());
        match &acceptor {
            None => {
                let conn = conn_builder.serve_connection(TokioIo::new(socket), connection);
                let conn = watcher.watch(conn.into_owned());
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            Some(acceptor) => {
                let handshake = acceptor.accept(socket);
                tokio::spawn(async move {
                    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(e)) => {
                            tracing::warn!("TLS handshake with {peer} failed: {e}");
                            return;
                        }
                        Err(_) => {
                            tracing::warn!(
                                "TLS handshake with {peer}: no answer within {HANDSHAKE_TIMEOUT:?}"
                            );
                            return;
                        }
                    };
                    let conn = conn_builder.serve_connection(TokioIo::new(stream), connection);
                    let _ = watcher.watch(conn.into_owned()).await;
                });
            }
        }
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
