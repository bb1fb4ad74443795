//! The client's HTTP transport: hyper over TCP (and TLS for https:// endpoints, see
//! [`crate::tls`]), with every byte the client receives counted on the socket and, when a
//! link rate is set, paced to that rate.
//!
//! Counting on the socket rather than on response bodies is what makes the benchmark's
//! "bytes received" honest: status lines, headers, S3 Select's event-stream framing,
//! retries and TLS records are all in it, as they would be on a storage network's wire.
//!
//! Pacing emulates a storage network on one machine. All connections of one [`Link`] share
//! one token bucket, as all of a client's connections share one NIC: a read that leaves the
//! bucket in debt makes the next read on any connection wait until the debt is repaid. The
//! kernel still buffers what the server sent, so the server sees a fast link while the client
//! sees the configured rate; that is the part that matters for the client's query time. For a
//! kernel-enforced link see the README (network namespaces and `tc tbf`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use aws_smithy_runtime_api::client::http::{
    http_client_fn, HttpConnector, HttpConnectorFuture, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::body::SdkBody;
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// One emulated network link: a byte counter and an optional rate limit shared by every
/// connection made through it.
#[derive(Debug, Default)]
pub struct Link {
    received: AtomicU64,
    bucket: Option<Mutex<Bucket>>,
}

impl Link {
    /// A link that only counts.
    pub fn unlimited() -> Arc<Link> {
        Arc::new(Link::default())
    }

    /// A link that delivers at most `bytes_per_second` to the client.
    pub fn paced(bytes_per_second: f64) -> Arc<Link> {
        Arc::new(Link {
            received: AtomicU64::new(0),
            bucket: Some(Mutex::new(Bucket::new(bytes_per_second))),
        })
    }

    /// Bytes received on all connections so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The configured rate, if the link is paced.
    pub fn rate(&self) -> Option<f64> {
        self.bucket.as_ref().map(|b| lock(b).rate)
    }

    /// How long a reader must wait before the bucket is out of debt.
    fn wait(&self) -> Option<Duration> {
        self.bucket.as_ref().and_then(|b| lock(b).wait())
    }

    fn record(&self, n: usize) {
        self.received.fetch_add(n as u64, Ordering::Relaxed);
        if let Some(b) = &self.bucket {
            lock(b).take(n as f64);
        }
    }
}

fn lock(bucket: &Mutex<Bucket>) -> std::sync::MutexGuard<'_, Bucket> {
    // A panic while holding this lock cannot leave the bucket inconsistent (two f64 fields),
    // so a poisoned lock is simply taken over.
    bucket.lock().unwrap_or_else(|e| e.into_inner())
}

/// A token bucket in bytes that may go into debt: reads are never split to fit the bucket,
/// the debt is paid by waiting afterwards, so the long-run rate is exact.
#[derive(Debug)]
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(rate: f64) -> Bucket {
        // A few milliseconds of traffic: enough to absorb timer granularity, small enough
        // that a burst does not hide the rate from short requests.
        let burst = (rate * 0.004).max(64.0 * 1024.0);
        Bucket {
            rate,
            burst,
            tokens: burst,
            last: Instant::now(),
        }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let earned = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.last = now;
    }

    fn wait(&mut self) -> Option<Duration> {
        self.refill();
        (self.tokens < 0.0).then(|| Duration::from_secs_f64(-self.tokens / self.rate))
    }

    fn take(&mut self, n: f64) {
        self.refill();
        self.tokens -= n;
    }
}

/// A TCP stream whose reads are counted (and paced) by a [`Link`].
struct MeteredTcp {
    tcp: TcpStream,
    link: Arc<Link>,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl AsyncRead for MeteredTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(sleep) = this.sleep.as_mut() {
                ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
            match this.link.wait() {
                Some(delay) => this.sleep = Some(Box::pin(tokio::time::sleep(delay))),
                None => break,
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.tcp).poll_read(cx, buf))?;
        this.link.record(buf.filled().len() - before);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for MeteredTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// A connection's byte stream: the metered socket, under TLS for https:// endpoints (so
/// the link counts and paces the encrypted bytes, as a NIC would).
enum Stream {
    Plain(MeteredTcp),
    Tls(Box<tokio_rustls::client::TlsStream<MeteredTcp>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// What hyper's client pool holds: the stream behind hyper's I/O traits.
struct Conn(TokioIo<Stream>);

impl Connection for Conn {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// Opens connections for hyper: TCP, then TLS for https:// URIs.
#[derive(Clone)]
struct Connector {
    link: Arc<Link>,
    tls: tokio_rustls::TlsConnector,
}

impl tower_service::Service<Uri> for Connector {
    type Response = Conn;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Conn>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (link, tls) = (Arc::clone(&self.link), self.tls.clone());
        Box::pin(async move {
            let https = uri.scheme_str() == Some("https");
            let host = uri
                .host()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "URI without host"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let tcp = TcpStream::connect((host, port)).await?;
            tcp.set_nodelay(true)?;
            let metered = MeteredTcp {
                tcp,
                link,
                sleep: None,
            };
            if !https {
                return Ok(Conn(TokioIo::new(Stream::Plain(metered))));
            }
            let name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            let stream = tls
                .connect(name, metered)
                .await
                .map_err(|e| crate::tls::handshake_error(&format!("{host}:{port}"), e))?;
            Ok(Conn(TokioIo::new(Stream::Tls(Box::new(stream)))))
        })
    }
}

#[derive(Clone)]
struct Transport {
    client: Client<Connector, SdkBody>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sift_tpcds::net::Transport")
    }
}

impl HttpConnector for Transport {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = self.client.clone();
        HttpConnectorFuture::new(async move {
            let request = request
                .try_into_http1x()
                .map_err(|e| ConnectorError::user(e.into()))?;
            let response = client.request(request).await.map_err(|e| {
                if e.is_connect() {
                    ConnectorError::io(e.into())
                } else {
                    ConnectorError::other(e.into(), None)
                }
            })?;
            Response::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

/// An HTTP client for the AWS SDK whose connections all go through `link`, checking
/// https:// servers with `tls`.
pub fn http_client(link: Arc<Link>, tls: Arc<rustls::ClientConfig>) -> SharedHttpClient {
    let connector = Connector {
        link,
        tls: tokio_rustls::TlsConnector::from(tls),
    };
    let client = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .build(connector);
    let transport = SharedHttpConnector::new(Transport { client });
    http_client_fn(move |_settings, _components| transport.clone())
}

/// The body of a plain-HTTP GET of `url` (a Ballista scheduler's REST API), or an error
/// naming the URL; at most 30 s.
pub async fn http_get(url: &str) -> crate::error::Result<Vec<u8>> {
    use http_body_util::BodyExt;
    let failed = |what: String| crate::error::Error::Invalid(format!("GET {url}: {what}"));
    let uri: Uri = url.parse().map_err(|e| failed(format!("{e}")))?;
    let client = Client::builder(TokioExecutor::new()).build_http::<String>();
    let fetch = async {
        let response = client.get(uri).await.map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(e.to_string()))?
            .to_bytes();
        if !status.is_success() {
            return Err(failed(format!(
                "{status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        Ok(body.to_vec())
    };
    tokio::time::timeout(Duration::from_secs(30), fetch)
        .await
        .map_err(|_| failed("no answer within 30 s".into()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_pays_debt_at_the_configured_rate() {
        let mut bucket = Bucket::new(1_000_000.0);
        bucket.take(bucket.burst + 500_000.0);
        let wait = bucket.wait().expect("in debt");
        // Half a megabyte of debt at 1 MB/s is about half a second (minus the few
        // microseconds since the debt was taken).
        assert!(wait > Duration::from_millis(490) && wait <= Duration::from_millis(500));
    }

    #[test]
    fn bucket_never_saves_more_than_a_burst() {
        let mut bucket = Bucket::new(1_000_000.0);
        bucket.last -= Duration::from_secs(10);
        bucket.refill();
        assert_eq!(bucket.tokens, bucket.burst);
    }
}
