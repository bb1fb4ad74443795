//! The test harness shared by the gateway's integration tests: the real `sift` binary on a
//! free port of 127.0.0.1, driven by the AWS SDK for Rust (path style, SigV4, us-east-1).
#![allow(dead_code)] // each test binary uses a different part of it

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::{Credentials, Region};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    CompletedMultipartUpload, CompletedPart, CsvInput, CsvOutput, ExpressionType, FileHeaderInfo,
    InputSerialization, OutputSerialization, ScanRange, SelectObjectContentEventStream,
};
use aws_sdk_s3::Client;

pub const ACCESS: &str = "sift-test-access";
pub const SECRET: &str = "sift-test-secret";
pub const MAX_RECORDS: usize = 128 * 1024 - 256;

/// A running gateway, stopped when dropped.
pub struct Gateway {
    pub child: Child,
    pub addr: String,
    pub data: PathBuf,
    /// `http`, or `https` when started with a certificate.
    pub scheme: &'static str,
}

impl Gateway {
    /// A gateway on its embedded store in a fresh temporary directory.
    pub fn start(extra: &[&str]) -> Gateway {
        let data = temp_dir("sift-gateway-test");
        let mut args = vec!["--data-dir".to_string(), data.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        Gateway::launch(&args, data, None, &[], true)
    }

    /// A gateway started with `args` (which name its backend) and the environment variables
    /// `env`, given the test user's keys as flags only if `user_flags`.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)], user_flags: bool) -> Gateway {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Gateway::launch(
            &args,
            temp_dir("sift-gateway-unused"),
            None,
            env,
            user_flags,
        )
    }

    /// A gateway on its embedded store whose log (RUST_LOG's default: warnings and the
    /// access log) goes to `log`.
    pub fn start_logging(extra: &[&str], log: &std::path::Path) -> Gateway {
        let data = temp_dir("sift-gateway-test");
        let mut args = vec!["--data-dir".to_string(), data.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        Gateway::launch(&args, data, Some(log), &[], true)
    }

    /// A gateway in front of the S3 store at `endpoint`, signing with `access`/`secret`.
    pub fn start_upstream(endpoint: &str, access: &str, secret: &str, extra: &[&str]) -> Gateway {
        let mut args: Vec<String> = [
            "--upstream",
            endpoint,
            "--upstream-access-key",
            access,
            "--upstream-secret-key",
            secret,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        Gateway::launch(&args, temp_dir("sift-gateway-unused"), None, &[], true)
    }

    fn launch(
        args: &[String],
        data: PathBuf,
        log: Option<&std::path::Path>,
        env: &[(&str, &str)],
        user_flags: bool,
    ) -> Gateway {
        let mut command = Command::new(env!("CARGO_BIN_EXE_sift"));
        command.args(["gateway", "--listen", "127.0.0.1:0"]);
        if user_flags {
            command.args(["--access-key", ACCESS, "--secret-key", SECRET]);
        }
        command
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped());
        match log {
            Some(path) => {
                command
                    .env_remove("RUST_LOG")
                    .stderr(std::fs::File::create(path).expect("log file"));
            }
            // Warnings only: an access-log line per request would drown the test output.
            None => {
                command.env("RUST_LOG", "warn").stderr(Stdio::inherit());
            }
        }
        let mut child = command.spawn().expect("sift gateway starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("startup line");
        let line = line.trim();
        let (scheme, addr) = [
            ("http", "listening on http://"),
            ("https", "listening on https://"),
        ]
        .into_iter()
        .find_map(|(scheme, prefix)| Some((scheme, line.strip_prefix(prefix)?)))
        .unwrap_or_else(|| panic!("unexpected startup line {line:?}"));
        Gateway {
            child,
            addr: addr.to_string(),
            data,
            scheme,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    pub fn client_with(&self, access: &str, secret: &str) -> Client {
        client_for(&self.endpoint(), access, secret)
    }

    pub fn client(&self) -> Client {
        self.client_with(ACCESS, SECRET)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// An SDK client for any S3 endpoint (path style, us-east-1, plain HTTP).
pub fn client_for(endpoint: &str, access: &str, secret: &str) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(access, secret, None, None, "test"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    Client::from_conf(config)
}

/// A file of the test PKI (tests/fixtures/tls: a CA, `server` for localhost and 127.0.0.1,
/// `wrong-name` for another host).
pub fn pki(name: &str) -> String {
    format!("{}/tests/fixtures/tls/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The gateway flags of HTTPS with the test PKI's certificate `name`.
pub fn tls_flags(name: &str) -> [String; 4] {
    [
        "--tls-cert".into(),
        pki(&format!("{name}.pem")),
        "--tls-key".into(),
        pki(&format!("{name}.key")),
    ]
}

/// An SDK client for an https:// endpoint that trusts only the test CA.
pub fn client_trusting_test_ca(endpoint: &str) -> Client {
    use aws_smithy_http_client::tls::{
        rustls_provider::CryptoMode, Provider, TlsContext, TrustStore,
    };
    let pem = std::fs::read(pki("ca.pem")).expect("test CA");
    let trust = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(pem);
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(
            TlsContext::builder()
                .with_trust_store(trust)
                .build()
                .expect("TLS context"),
        )
        .build_https();
    let config = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(ACCESS, SECRET, None, None, "test"))
        .http_client(http)
        .build();
    Client::from_conf(config)
}

/// The `tpcds load` and `tpcds run` arguments that reach `gateway`'s bucket `bench` as the
/// test user.
pub fn endpoint_args(gateway: &Gateway) -> Vec<String> {
    let endpoint = gateway.endpoint();
    [
        "--endpoint",
        &endpoint,
        "--bucket",
        "bench",
        "--access-key",
        ACCESS,
        "--secret-key",
        SECRET,
        "--region",
        "us-east-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A gateway on a fresh store with TPC-DS at scale `sf` loaded by `sift tpcds load`, and
/// the [`endpoint_args`] that reach it.
pub fn loaded_gateway(sf: &str) -> (Gateway, Vec<String>) {
    let gateway = Gateway::start(&[]);
    let endpoint = endpoint_args(&gateway);
    let mut load = vec!["tpcds", "load", "--sf", sf];
    load.extend(endpoint.iter().map(String::as_str));
    check(&sift(&load), "load");
    (gateway, endpoint)
}

/// `sift tpcds run` arguments: `mode` over `queries` at scale `sf` into `out`, reaching the
/// store with `endpoint` (its `--endpoint …` arguments), then `extra`.
pub fn tpcds_run_args(
    sf: &str,
    endpoint: &[String],
    mode: &str,
    queries: &str,
    out: &std::path::Path,
    extra: &[&str],
) -> Vec<String> {
    let out = out.display().to_string();
    let head = [
        "tpcds",
        "run",
        "--sf",
        sf,
        "--mode",
        mode,
        "--queries",
        queries,
        "--out",
        &out,
    ];
    let head = head.iter().map(|s| s.to_string());
    head.chain(endpoint.iter().cloned())
        .chain(extra.iter().map(|s| s.to_string()))
        .collect()
}

/// `args` as the `&str`s [`sift`] takes.
pub fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A new path under the temporary directory, unique to this process and moment.
pub fn temp_dir(prefix: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "{prefix}-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ))
}

/// A plain HTTP GET without a signature: the status line and the body.
pub fn raw_get(addr: &str, path_and_query: &str) -> (String, Vec<u8>) {
    let mut conn = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        conn,
        "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = Vec::new();
    conn.read_to_end(&mut response).expect("response");
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&response[..split]).to_string();
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, response[split + 4..].to_vec())
}

pub async fn create_bucket(client: &Client, bucket: &str) {
    client
        .create_bucket()
        .bucket(bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create bucket {bucket}: {e:?}"));
}

pub async fn put(client: &Client, bucket: &str, key: &str, body: &[u8]) {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("put {key}: {e:?}"));
}

/// Uploads `parts` as one multipart object; returns the completed object's ETag.
pub async fn multipart_put(client: &Client, bucket: &str, key: &str, parts: &[Vec<u8>]) -> String {
    let id = client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("create upload {key}: {e:?}"))
        .upload_id()
        .expect("upload id")
        .to_string();
    let mut completed = Vec::new();
    for (i, data) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        let out = client
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap_or_else(|e| panic!("upload part {n} of {key}: {e:?}"));
        completed.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(out.e_tag().expect("part etag"))
                .build(),
        );
    }
    client
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(completed))
                .build(),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("complete {key}: {e:?}"))
        .e_tag()
        .expect("object etag")
        .to_string()
}

pub async fn get(client: &Client, bucket: &str, key: &str) -> Vec<u8> {
    let out = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("get {key}: {e:?}"));
    out.body
        .collect()
        .await
        .expect("body")
        .into_bytes()
        .to_vec()
}

pub fn status_and_code<E: ProvideErrorMetadata>(e: &SdkError<E, HttpResponse>) -> (u16, String) {
    let status = e.raw_response().map_or(0, |r| r.status().as_u16());
    (status, e.code().unwrap_or("").to_string())
}

/// A select's records and stats, or the failure (an S3 error before the stream, or an error
/// event in it) as text.
pub async fn select_csv(
    s3: &Client,
    bucket: &str,
    key: &str,
    sql: &str,
    input: InputSerialization,
    range: Option<ScanRange>,
) -> Result<(Vec<u8>, (i64, i64, i64)), String> {
    let out = s3
        .select_object_content()
        .bucket(bucket)
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(input)
        .output_serialization(
            OutputSerialization::builder()
                .csv(CsvOutput::builder().build())
                .build(),
        )
        .set_scan_range(range)
        .send()
        .await;
    let mut out = out.map_err(|e| {
        let (status, code) = status_and_code(&e);
        format!("{status} {code} {}", e.message().unwrap_or(""))
    })?;
    let mut records = Vec::new();
    let mut stats = (0, 0, 0);
    loop {
        match out.payload.recv().await {
            Ok(Some(SelectObjectContentEventStream::Records(r))) => {
                records.extend_from_slice(r.payload().map(|b| b.as_ref()).unwrap_or_default())
            }
            Ok(Some(SelectObjectContentEventStream::Stats(s))) => {
                let d = s.details().expect("details");
                stats = (
                    d.bytes_scanned().unwrap_or(-1),
                    d.bytes_processed().unwrap_or(-1),
                    d.bytes_returned().unwrap_or(-1),
                );
            }
            Ok(Some(SelectObjectContentEventStream::End(_))) => return Ok((records, stats)),
            Ok(Some(_)) => {}
            Ok(None) => return Err("stream ended without End".into()),
            Err(e) => return Err(format!("error event: {e:?}")),
        }
    }
}

/// CSV input with the given FileHeaderInfo and otherwise AWS's defaults.
pub fn csv(header: FileHeaderInfo) -> InputSerialization {
    InputSerialization::builder()
        .csv(CsvInput::builder().file_header_info(header).build())
        .build()
}

/// Runs the `sift` command line with `args` to its end.
pub fn sift(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(args)
        .output()
        .expect("sift runs")
}

/// Fails the test, with the command's output, unless it succeeded. The error comes first
/// and the output's last lines after it, few: a CI log keeps a failure's first and last lines,
/// and a run's reason is the last line of its stderr.
pub fn check(output: &std::process::Output, what: &str) {
    let tail = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    assert!(
        output.status.success(),
        "{what} failed ({}); the last lines of its stderr:\n{}\nof its stdout:\n{}",
        output.status,
        tail(&output.stderr),
        tail(&output.stdout)
    );
}

/// Each statement's rows, lines sorted (row order is free where ORDER BY leaves ties).
pub fn sorted_rows(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<String>> {
    std::fs::read_dir(dir)
        .expect("rows dir")
        .map(|e| {
            let path = e.expect("entry").path();
            let mut lines: Vec<String> = std::fs::read_to_string(&path)
                .expect("rows")
                .lines()
                .map(str::to_string)
                .collect();
            lines.sort();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                lines,
            )
        })
        .collect()
}
