//! `sift gateway --upstream`: a second, real Sift gateway (local mode) is the upstream S3
//! store, and the AWS SDK for Rust talks to the first. Also an upstream that is down, and
//! one that stalls in the middle of an object (a hand-written HTTP server on 127.0.0.1).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompressionType, CsvInput, FileHeaderInfo, InputSerialization, ScanRange};
use common::{
    create_bucket, csv, get, multipart_put, put, raw_get, select_csv as select, status_and_code,
    Gateway,
};

const UP_ACCESS: &str = "upstream-access";
const UP_SECRET: &str = "upstream-secret";

/// The upstream store (a local-mode gateway with its own user) and Sift in front of it.
fn pair(extra: &[&str]) -> (Gateway, Gateway) {
    let store = Gateway::start(&["--credentials", &credentials_file()]);
    let front = Gateway::start_upstream(&store.endpoint(), UP_ACCESS, UP_SECRET, extra);
    (store, front)
}

fn credentials_file() -> String {
    let path = common::temp_dir("sift-upstream-users");
    std::fs::write(&path, format!("{UP_ACCESS} {UP_SECRET}\n")).expect("write users");
    path.display().to_string()
}

#[tokio::test]
async fn every_call_goes_through_to_the_upstream_store() {
    let (store, front) = pair(&[]);
    let s3 = front.client();
    let direct = store.client_with(UP_ACCESS, UP_SECRET);

    create_bucket(&s3, "through").await;
    put(&s3, "through", "dir/a.csv", b"1,x\n2,y\n").await;
    // What Sift stored is on the upstream store, byte for byte.
    assert_eq!(get(&direct, "through", "dir/a.csv").await, b"1,x\n2,y\n");
    put(&direct, "through", "dir/b.csv", b"written upstream").await;
    assert_eq!(get(&s3, "through", "dir/b.csv").await, b"written upstream");

    let ranged = s3
        .get_object()
        .bucket("through")
        .key("dir/b.csv")
        .range("bytes=8-15")
        .send()
        .await
        .expect("ranged get");
    assert_eq!(ranged.content_range(), Some("bytes 8-15/16"));
    let body = ranged.body.collect().await.expect("body").into_bytes();
    assert_eq!(body.as_ref(), b"upstream");

    let listed = s3
        .list_objects_v2()
        .bucket("through")
        .prefix("dir/")
        .send()
        .await
        .expect("list");
    let keys: Vec<_> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["dir/a.csv", "dir/b.csv"]);

    s3.copy_object()
        .bucket("through")
        .key("copy.csv")
        .copy_source("through/dir/a.csv")
        .send()
        .await
        .expect("copy");
    assert_eq!(get(&direct, "through", "copy.csv").await, b"1,x\n2,y\n");

    // Multipart through the proxy: bodies stream, ETags are the upstream's.
    let part1 = vec![b'z'; 5 * 1024 * 1024];
    let etag = multipart_put(&s3, "through", "big", &[part1.clone(), b"end".to_vec()]).await;
    assert!(etag.ends_with("-2\""), "{etag}");
    let head = direct
        .head_object()
        .bucket("through")
        .key("big")
        .send()
        .await
        .expect("head upstream");
    assert_eq!(head.content_length(), Some(part1.len() as i64 + 3));

    // The upstream's errors keep their status and code.
    let err = s3
        .get_object()
        .bucket("through")
        .key("missing")
        .send()
        .await
        .expect_err("no such key");
    assert_eq!(status_and_code(&err), (404, "NoSuchKey".into()));
    let err = s3
        .get_object()
        .bucket("no-such-bucket")
        .key("k")
        .send()
        .await
        .expect_err("no such bucket");
    assert_eq!(status_and_code(&err), (404, "NoSuchBucket".into()));
    let err = s3
        .delete_bucket()
        .bucket("through")
        .send()
        .await
        .expect_err("not empty");
    assert_eq!(status_and_code(&err), (409, "BucketNotEmpty".into()));
    // Sift's own users sign requests to Sift: the upstream's keys are not Sift's.
    let err = front
        .client_with(UP_ACCESS, UP_SECRET)
        .list_buckets()
        .send()
        .await
        .expect_err("upstream keys are not Sift users");
    assert_eq!(status_and_code(&err).0, 403);
}

#[tokio::test]
async fn select_reads_the_object_from_upstream() {
    let (store, front) = pair(&[]);
    let s3 = front.client();
    let direct = store.client_with(UP_ACCESS, UP_SECRET);
    create_bucket(&direct, "sel").await;
    let mut data = String::from("id,name\n");
    for i in 0..20_000 {
        data.push_str(&format!("{i},name-{i}\n"));
    }
    put(&direct, "sel", "t.csv", data.as_bytes()).await;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data.as_bytes()).expect("gzip");
    put(&direct, "sel", "t.csv.gz", &gz.finish().expect("gzip")).await;

    let sql = "SELECT s.name FROM S3Object s WHERE CAST(s.id AS INT) % 5000 = 0";
    let want = b"name-0\nname-5000\nname-10000\nname-15000\n".to_vec();
    // The same answer from Sift in front of the store as from the store itself.
    let (through, stats) = select(&s3, "sel", "t.csv", sql, csv(FileHeaderInfo::Use), None)
        .await
        .expect("select via upstream");
    let (local, local_stats) = select(&direct, "sel", "t.csv", sql, csv(FileHeaderInfo::Use), None)
        .await
        .expect("select on the store");
    assert_eq!(through, want);
    assert_eq!(local, want);
    assert_eq!(stats, local_stats);
    assert_eq!(stats.0, data.len() as i64);

    let gzip = InputSerialization::builder()
        .csv(
            CsvInput::builder()
                .file_header_info(FileHeaderInfo::Use)
                .build(),
        )
        .compression_type(CompressionType::Gzip)
        .build();
    let (records, _) = select(&s3, "sel", "t.csv.gz", sql, gzip, None)
        .await
        .expect("gzip select via upstream");
    assert_eq!(records, want);

    // A ScanRange is read with a ranged GET: the records starting in [100, 200], and
    // BytesScanned counts only what was fetched (from the range's start to the end of the
    // last record, plus the header read from the start).
    let range = ScanRange::builder().start(100).end(200).build();
    let (through, stats) = select(
        &s3,
        "sel",
        "t.csv",
        "SELECT s._1 FROM S3Object s",
        csv(FileHeaderInfo::None),
        Some(range.clone()),
    )
    .await
    .expect("ranged select via upstream");
    let (local, _) = select(
        &direct,
        "sel",
        "t.csv",
        "SELECT s._1 FROM S3Object s",
        csv(FileHeaderInfo::None),
        Some(range),
    )
    .await
    .expect("ranged select on the store");
    assert_eq!(through, local);
    assert!(!through.is_empty());
    assert!(stats.0 < 1024 * 1024, "scanned {} bytes", stats.0);

    // Errors before the stream: the upstream's NoSuchKey, and the engine's SQL errors.
    let err = select(
        &s3,
        "sel",
        "missing.csv",
        sql,
        csv(FileHeaderInfo::Use),
        None,
    )
    .await
    .expect_err("missing key");
    assert!(err.starts_with("404 NoSuchKey"), "{err}");
    let err = select(
        &s3,
        "nobucket",
        "t.csv",
        sql,
        csv(FileHeaderInfo::Use),
        None,
    )
    .await
    .expect_err("missing bucket");
    assert!(err.starts_with("404 NoSuchBucket"), "{err}");
    let err = select(
        &s3,
        "sel",
        "t.csv",
        "SELEC x",
        csv(FileHeaderInfo::Use),
        None,
    )
    .await
    .expect_err("bad sql");
    assert!(err.starts_with("400 "), "{err}");
}

/// 20,000 rows of `id` and a 64-character `text`, in row groups of 5,000.
fn parquet_file() -> Vec<u8> {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    let ids = Int64Array::from_iter_values(0..20_000);
    let text = StringArray::from_iter_values(
        (0..20_000u64).map(|i| format!("{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).repeat(4)),
    );
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(ids) as ArrayRef),
        ("text", Arc::new(text) as ArrayRef),
    ])
    .expect("batch");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(5_000))
        .build();
    let mut out = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props))
        .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    out
}

#[tokio::test]
async fn parquet_select_fetches_only_the_column_chunks_it_needs() {
    let (store, front) = pair(&[]);
    let s3 = front.client();
    let direct = store.client_with(UP_ACCESS, UP_SECRET);
    create_bucket(&direct, "pqt").await;
    let data = parquet_file();
    put(&direct, "pqt", "t.parquet", &data).await;
    let parquet = || {
        InputSerialization::builder()
            .parquet(aws_sdk_s3::types::ParquetInput::builder().build())
            .build()
    };
    let sql = "SELECT s.id FROM S3Object s WHERE s.id BETWEEN 12000 AND 12002";
    let (through, stats) = select(&s3, "pqt", "t.parquet", sql, parquet(), None)
        .await
        .expect("parquet select via upstream");
    let (local, local_stats) = select(&direct, "pqt", "t.parquet", sql, parquet(), None)
        .await
        .expect("parquet select on the store");
    assert_eq!(through, b"12000\n12001\n12002\n");
    assert_eq!(local, through);
    // Ranged GETs for the footer and one row group's `id` chunk: the same bytes the store
    // reads from its own disk, a small part of the object.
    assert_eq!(stats, local_stats);
    assert!(
        stats.0 * 20 < data.len() as i64,
        "scanned {} of {}",
        stats.0,
        data.len()
    );
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
