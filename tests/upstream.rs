//! `sift gateway --upstream`: a second, real Sift gateway (local mode) is the upstream S3
//! store, and the AWS SDK for Rust talks to the first. Also an upstream that is down, and
//! one that stalls in the middle of an object (a hand-written HTTP server on 127.0.0.1).
//! The checks that hold for any store are in `upstream_cases`, which `tests/seaweedfs.rs`
//! also runs against SeaweedFS.

mod common;
mod upstream_cases;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::FileHeaderInfo;
use common::{csv, raw_get, select_csv as select, status_and_code, Gateway};
use upstream_cases::Store;

const UP_ACCESS: &str = "upstream-access";
const UP_SECRET: &str = "upstream-secret";

/// The upstream store (a local-mode gateway with its own user), how to reach it, and Sift
/// in front of it.
fn pair(extra: &[&str]) -> (Gateway, Store, Gateway) {
    let store = Gateway::start(&["--credentials", &credentials_file()]);
    let up = Store {
        endpoint: store.endpoint(),
        access: UP_ACCESS.into(),
        secret: UP_SECRET.into(),
        selects: true,
    };
    let front = up.front(extra);
    (store, up, front)
}

fn credentials_file() -> String {
    let path = common::temp_dir("sift-upstream-users");
    std::fs::write(&path, format!("{UP_ACCESS} {UP_SECRET}\n")).expect("write users");
    path.display().to_string()
}

#[tokio::test]
async fn every_call_goes_through_to_the_upstream_store() {
    let (_store, up, front) = pair(&[]);
    upstream_cases::every_call_goes_through(&front, &up, "through").await;
}

#[tokio::test]
async fn select_reads_the_object_from_upstream() {
    let (_store, up, front) = pair(&[]);
    upstream_cases::select_reads_the_object_from_upstream(&front, &up, "sel").await;
}

#[tokio::test]
async fn parquet_select_fetches_only_the_column_chunks_it_needs() {
    let (_store, up, front) = pair(&[]);
    upstream_cases::parquet_select_fetches_only_the_column_chunks_it_needs(&front, &up, "pqt")
        .await;
}

#[tokio::test]
async fn an_upstream_that_is_down_is_503_and_sift_keeps_serving() {
    // A port nothing listens on: bind one, then close it.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let front = Gateway::start_upstream(
        &format!("http://127.0.0.1:{port}"),
        UP_ACCESS,
        UP_SECRET,
        &["--upstream-timeout", "2"],
    );
    let s3 = front.client();
    let started = Instant::now();
    let err = s3
        .put_object()
        .bucket("bkt")
        .key("k")
        .body(ByteStream::from_static(b"data"))
        .send()
        .await
        .expect_err("upstream down");
    assert_eq!(status_and_code(&err), (503, "ServiceUnavailable".into()));
    let err = select(
        &s3,
        "bkt",
        "k",
        "SELECT * FROM S3Object",
        csv(FileHeaderInfo::None),
        None,
    )
    .await
    .expect_err("select with upstream down");
    assert!(err.starts_with("503 ServiceUnavailable"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60));
    let (status, body) = raw_get(&front.addr, "/health");
    assert!(status.contains("200"), "{status}");
    assert_eq!(body, b"ok");
}

/// An S3 server that answers HEAD and GET of any object with a 1 MB body, sends the first
/// 64 KiB of a GET and then stops sending, holding the connection open.
fn stalling_upstream() -> String {
    const SIZE: usize = 1_000_000;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\nETag: \"stall\"\r\n\
                     Content-Type: text/csv\r\n\r\n"
                );
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                if request_line.starts_with("GET") {
                    let rows =
                        b"1,aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n";
                    let body: Vec<u8> = rows.iter().copied().cycle().take(64 * 1024).collect();
                    let _ = conn.write_all(&body);
                    let _ = conn.flush();
                    std::thread::sleep(Duration::from_secs(60));
                }
                let mut rest = Vec::new();
                let _ = reader.read_to_end(&mut rest);
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn an_upstream_that_stalls_mid_object_fails_the_request() {
    let front = Gateway::start_upstream(
        &stalling_upstream(),
        UP_ACCESS,
        UP_SECRET,
        &["--upstream-timeout", "1"],
    );
    let s3 = front.client();
    let started = Instant::now();
    // A select fails with a message naming the upstream, instead of ending as if the object
    // were shorter.
    let err = select(
        &s3,
        "bkt",
        "k",
        "SELECT s._1 FROM S3Object s",
        csv(FileHeaderInfo::None),
        None,
    )
    .await
    .expect_err("stalled select");
    assert!(err.contains("upstream store sent nothing"), "{err}");
    // A proxied GET's body fails rather than being cut short silently.
    let out = s3
        .get_object()
        .bucket("bkt")
        .key("k")
        .send()
        .await
        .expect("headers arrive");
    assert!(
        out.body.collect().await.is_err(),
        "a stalled body must not look complete"
    );
    assert!(started.elapsed() < Duration::from_secs(50));
    let (status, _) = raw_get(&front.addr, "/health");
    assert!(status.contains("200"), "{status}");
}
