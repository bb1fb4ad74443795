//! `sift gateway` as a client sees it: the real binary on a free port, driven by the AWS
//! SDK for Rust (path style, SigV4, region us-east-1).

mod common;

use std::io::{Read, Write};
use std::process::Command;

use aws_sdk_s3::config::{Credentials, Region};
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    CompressionType, CsvInput, CsvOutput, Delete, ExpressionType, FileHeaderInfo,
    InputSerialization, JsonInput, JsonOutput, JsonType, ObjectIdentifier, OutputSerialization,
    RequestProgress, ScanRange, SelectObjectContentEventStream,
};
use aws_sdk_s3::Client;
use common::{
    client_trusting_test_ca, create_bucket, get, pki, put, raw_get, select_csv, status_and_code,
    temp_dir, tls_flags, Gateway, ACCESS, MAX_RECORDS, SECRET,
};
use md5::Digest;

#[tokio::test]
async fn buckets_and_objects() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();

    create_bucket(&s3, "data").await;
    // Re-creating one's own bucket succeeds, as in us-east-1.
    s3.create_bucket()
        .bucket("data")
        .send()
        .await
        .expect("create again");
    s3.create_bucket()
        .bucket("other")
        .send()
        .await
        .expect("create other");
    s3.head_bucket()
        .bucket("data")
        .send()
        .await
        .expect("head bucket");
    let missing = s3.head_bucket().bucket("missing").send().await;
    assert!(missing.is_err());
    let names: Vec<_> = s3
        .list_buckets()
        .send()
        .await
        .expect("list buckets")
        .buckets()
        .iter()
        .filter_map(|b| b.name().map(str::to_string))
        .collect();
    assert_eq!(names, ["data", "other"]);

    // Put and get, including a key with spaces, unicode, dots and slashes.
    let odd = "dir one/sub.dir/ünïcødé ✓/../file name.txt";
    put(&s3, "data", odd, b"odd key").await;
    assert_eq!(get(&s3, "data", odd).await, b"odd key");
    let body: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let put_out = s3
        .put_object()
        .bucket("data")
        .key("bin")
        .content_type("application/x-test")
        .metadata("color", "blue")
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .expect("put bin");
    let md5 = format!(
        "\"{}\"",
        md5::Md5::digest(&body)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    assert_eq!(put_out.e_tag(), Some(md5.as_str()));
    assert_eq!(get(&s3, "data", "bin").await, body);

    // A wrong Content-MD5 is BadDigest, and nothing is stored.
    let wrong_md5 = "XrY7u+Ae7tCTyyK7j1rNww=="; // MD5 of "hello world"
    let bad = s3
        .put_object()
        .bucket("data")
        .key("bad-digest")
        .content_md5(wrong_md5)
        .body(ByteStream::from_static(b"not hello world"))
        .send()
        .await
        .expect_err("BadDigest");
    assert_eq!(bad.into_service_error().code(), Some("BadDigest"));
    assert!(s3
        .head_object()
        .bucket("data")
        .key("bad-digest")
        .send()
        .await
        .is_err());

    // Range GET → 206 with exactly those bytes; an unsatisfiable range → 416.
    let ranged = s3
        .get_object()
        .bucket("data")
        .key("bin")
        .range("bytes=100-199")
        .send()
        .await
        .expect("range get");
    assert_eq!(ranged.content_range(), Some("bytes 100-199/10000"));
    let bytes = ranged.body.collect().await.expect("body").into_bytes();
    assert_eq!(&bytes[..], &body[100..200]);
    let bad = s3
        .get_object()
        .bucket("data")
        .key("bin")
        .range("bytes=20000-")
        .send()
        .await
        .expect_err("416");
    assert_eq!(bad.raw_response().map(|r| r.status().as_u16()), Some(416));

    // Head carries size, type, ETag and user metadata.
    let head = s3
        .head_object()
        .bucket("data")
        .key("bin")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_length(), Some(10_000));
    assert_eq!(head.content_type(), Some("application/x-test"));
    assert_eq!(head.e_tag(), Some(md5.as_str()));
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("color"))
            .map(String::as_str),
        Some("blue")
    );
    let no_key = s3.get_object().bucket("data").key("nope").send().await;
    let no_key = no_key.expect_err("missing key");
    assert_eq!(no_key.into_service_error().code(), Some("NoSuchKey"));

    // Copy keeps content and metadata.
    s3.copy_object()
        .bucket("other")
        .key("copied")
        .copy_source("data/bin")
        .send()
        .await
        .expect("copy");
    assert_eq!(get(&s3, "other", "copied").await, body);
    let head = s3
        .head_object()
        .bucket("other")
        .key("copied")
        .send()
        .await
        .expect("head copy");
    assert_eq!(head.content_type(), Some("application/x-test"));

    // Bucket not empty, then delete, batch delete, and the bucket goes.
    let not_empty = s3
        .delete_bucket()
        .bucket("other")
        .send()
        .await
        .expect_err("not empty");
    assert_eq!(
        not_empty.into_service_error().code(),
        Some("BucketNotEmpty")
    );
    s3.delete_object()
        .bucket("other")
        .key("copied")
        .send()
        .await
        .expect("delete");
    s3.delete_bucket()
        .bucket("other")
        .send()
        .await
        .expect("delete bucket");

    let ids: Vec<_> = [odd, "bin", "never-existed"]
        .iter()
        .map(|k| ObjectIdentifier::builder().key(*k).build().expect("id"))
        .collect();
    let deleted = s3
        .delete_objects()
        .bucket("data")
        .delete(
            Delete::builder()
                .set_objects(Some(ids))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .expect("batch delete");
    assert_eq!(deleted.deleted().len(), 3);
    let left = s3
        .list_objects_v2()
        .bucket("data")
        .send()
        .await
        .expect("list");
    assert_eq!(left.key_count(), Some(0));
}

#[tokio::test]
async fn list_v2_prefix_delimiter_and_pages() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "lst").await;
    let keys = ["a/1", "a/2", "b/x/1", "b/y", "c", "d/1", "e"];
    for k in keys {
        put(&s3, "lst", k, k.as_bytes()).await;
    }

    let top = s3
        .list_objects_v2()
        .bucket("lst")
        .delimiter("/")
        .send()
        .await
        .expect("list /");
    let prefixes: Vec<_> = top
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    let files: Vec<_> = top.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(prefixes, ["a/", "b/", "d/"]);
    assert_eq!(files, ["c", "e"]);

    let under_b = s3
        .list_objects_v2()
        .bucket("lst")
        .prefix("b/")
        .delimiter("/")
        .send()
        .await
        .expect("list b/");
    let prefixes: Vec<_> = under_b
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    let files: Vec<_> = under_b.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(prefixes, ["b/x/"]);
    assert_eq!(files, ["b/y"]);

    // Pages of two, following continuation tokens, give every key once and in order.
    let mut seen = Vec::new();
    let mut token = None;
    loop {
        let page = s3
            .list_objects_v2()
            .bucket("lst")
            .max_keys(2)
            .set_continuation_token(token.clone())
            .send()
            .await
            .expect("page");
        seen.extend(
            page.contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_string)),
        );
        if page.is_truncated() != Some(true) {
            break;
        }
        token = page.next_continuation_token().map(str::to_string);
        assert!(token.is_some());
    }
    assert_eq!(seen, keys);

    let after = s3
        .list_objects_v2()
        .bucket("lst")
        .start_after("b/y")
        .send()
        .await
        .expect("start after");
    let files: Vec<_> = after.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(files, ["c", "d/1", "e"]);

    // ListObjects (v1) with a marker.
    let v1 = s3
        .list_objects()
        .bucket("lst")
        .marker("c")
        .max_keys(1)
        .send()
        .await
        .expect("v1");
    let files: Vec<_> = v1.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(files, ["d/1"]);
    assert_eq!(v1.is_truncated(), Some(true));
}

/// What a select returned, event by event.
#[derive(Default, Debug)]
struct SelectResult {
    records: Vec<Vec<u8>>,
    progress_events: usize,
    stats: Option<(i64, i64, i64)>,
    ended: bool,
}

impl SelectResult {
    fn output(&self) -> Vec<u8> {
        self.records.concat()
    }
}

fn csv_input() -> CsvInput {
    CsvInput::builder().build()
}

async fn select(
    s3: &Client,
    key: &str,
    sql: &str,
    input: InputSerialization,
    output: OutputSerialization,
    configure: impl FnOnce(
        aws_sdk_s3::operation::select_object_content::builders::SelectObjectContentFluentBuilder,
    ) -> aws_sdk_s3::operation::select_object_content::builders::SelectObjectContentFluentBuilder,
) -> Result<
    SelectResult,
    aws_sdk_s3::error::SdkError<
        aws_sdk_s3::operation::select_object_content::SelectObjectContentError,
    >,
> {
    let request = s3
        .select_object_content()
        .bucket("sel")
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(input)
        .output_serialization(output);
    let mut out = configure(request).send().await?;
    let mut result = SelectResult::default();
    while let Some(event) = out.payload.recv().await.expect("event stream") {
        match event {
            SelectObjectContentEventStream::Records(r) => {
                result
                    .records
                    .push(r.payload().map(|b| b.as_ref().to_vec()).unwrap_or_default());
            }
            SelectObjectContentEventStream::Progress(_) => result.progress_events += 1,
            SelectObjectContentEventStream::Stats(s) => {
                let d = s.details().expect("stats details");
                result.stats = Some((
                    d.bytes_scanned().unwrap_or(-1),
                    d.bytes_processed().unwrap_or(-1),
                    d.bytes_returned().unwrap_or(-1),
                ));
            }
            SelectObjectContentEventStream::End(_) => result.ended = true,
            _ => {}
        }
    }
    Ok(result)
}

fn json_input(json_type: JsonType) -> InputSerialization {
    InputSerialization::builder()
        .json(JsonInput::builder().r#type(json_type).build())
        .build()
}

fn csv_out() -> OutputSerialization {
    OutputSerialization::builder()
        .csv(CsvOutput::builder().build())
        .build()
}

#[tokio::test]
async fn select_object_content() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "sel").await;

    // A Trino-shaped scan: `|` fields, U+FDD0 comments, CASE-wrapped casts, ' ' projections.
    let pipe = "1|ann|10.50|\n2|bob||\n\u{FDD0}comment|x|y|\n3|cy|7.25|\n";
    put(&s3, "sel", "t/pipe.dat", pipe.as_bytes()).await;
    let trino_csv = CsvInput::builder()
        .field_delimiter("|")
        .record_delimiter("\n")
        .comments("\u{FDD0}")
        .build();
    let r = select(
        &s3,
        "t/pipe.dat",
        "SELECT s._1, s._2 FROM S3Object s WHERE (case s._3 when '' then null else CAST(s._3 AS DECIMAL(10,2)) end) >= 7.25",
        InputSerialization::builder()
            .csv(trino_csv.clone())
            .compression_type(CompressionType::None)
            .build(),
        OutputSerialization::builder()
            .csv(CsvOutput::builder().field_delimiter("|").record_delimiter("\n").build())
            .build(),
        |b| b,
    )
    .await
    .expect("trino select");
    assert_eq!(String::from_utf8_lossy(&r.output()), "1|ann\n3|cy\n");
    assert!(r.ended);
    let (scanned, processed, returned) = r.stats.expect("stats");
    assert_eq!(scanned, pipe.len() as i64);
    assert_eq!(processed, pipe.len() as i64);
    assert_eq!(returned, r.output().len() as i64);

    // Header USE with named columns, and JSON output.
    put(&s3, "sel", "people.csv", b"name,age\nann,31\nbob,17\n").await;
    let r = select(
        &s3,
        "people.csv",
        "SELECT s.name FROM S3Object s WHERE CAST(s.age AS INT) > 18",
        InputSerialization::builder()
            .csv(
                CsvInput::builder()
                    .file_header_info(FileHeaderInfo::Use)
                    .build(),
            )
            .build(),
        OutputSerialization::builder()
            .json(JsonOutput::builder().build())
            .build(),
        |b| b,
    )
    .await
    .expect("json select");
    assert_eq!(String::from_utf8_lossy(&r.output()), "{\"name\":\"ann\"}\n");

    // ScanRange: only records starting inside [start, end].
    let lines = b"a,1\nb,2\nc,3\nd,4\n";
    put(&s3, "sel", "range.csv", lines).await;
    let r = select(
        &s3,
        "range.csv",
        "SELECT s._1 FROM S3Object s",
        InputSerialization::builder().csv(csv_input()).build(),
        csv_out(),
        |b| b.scan_range(ScanRange::builder().start(4).end(8).build()),
    )
    .await
    .expect("range select");
    assert_eq!(String::from_utf8_lossy(&r.output()), "b\nc\n");

    // A GZIP object, with progress events requested.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..1000 {
        writeln!(gz, "{i},row{i}").expect("gzip");
    }
    let gz = gz.finish().expect("gzip");
    put(&s3, "sel", "rows.csv.gz", &gz).await;
    let r = select(
        &s3,
        "rows.csv.gz",
        "SELECT count(*) FROM S3Object s WHERE CAST(s._1 AS INT) % 10 = 0",
        InputSerialization::builder()
            .csv(csv_input())
            .compression_type(CompressionType::Gzip)
            .build(),
        csv_out(),
        |b| b.request_progress(RequestProgress::builder().enabled(true).build()),
    )
    .await
    .expect("gzip select");
    assert_eq!(String::from_utf8_lossy(&r.output()).trim_end(), "100");
    assert!(r.progress_events >= 1, "progress was requested");
    let (scanned, processed, _) = r.stats.expect("stats");
    assert_eq!(scanned, gz.len() as i64);
    assert!(processed > scanned);

    // An output far above one Records event: every event under the limit, nothing lost.
    let mut big = String::new();
    for i in 0..40_000 {
        big.push_str(&format!("{i},some text for row {i}\n"));
    }
    put(&s3, "sel", "big.csv", big.as_bytes()).await;
    let r = select(
        &s3,
        "big.csv",
        "SELECT * FROM S3Object s",
        InputSerialization::builder().csv(csv_input()).build(),
        csv_out(),
        |b| b,
    )
    .await
    .expect("big select");
    assert!(r.records.len() > 4, "{} events", r.records.len());
    assert!(r.records.iter().all(|p| p.len() <= MAX_RECORDS));
    assert_eq!(r.output(), big.as_bytes());

    // A SQL error is a plain S3 error with the engine's code.
    let bad_sql = "SELECT s._1 FROM S3Object s WHERE";
    let expected = sift_engine::Select::new(sift_engine::SelectRequest {
        sql: bad_sql.into(),
        ..Default::default()
    })
    .expect_err("engine rejects it");
    let err = select(
        &s3,
        "range.csv",
        bad_sql,
        InputSerialization::builder().csv(csv_input()).build(),
        csv_out(),
        |b| b,
    )
    .await
    .expect_err("sql error");
    assert_eq!(
        err.raw_response().map(|r| r.status().as_u16()),
        Some(expected.http_status())
    );
    assert_eq!(
        err.into_service_error().code(),
        Some(expected.code.as_str())
    );

    // JSON LINES input with paths, through a wildcard FROM path; and DOCUMENT input.
    let lines = "{\"id\":1,\"tags\":[{\"k\":\"a\"},{\"k\":\"b\"}]}\n{\"id\":2,\"tags\":[]}\n";
    put(&s3, "sel", "t.jsonl", lines.as_bytes()).await;
    let r = select(
        &s3,
        "t.jsonl",
        "SELECT t.k FROM S3Object[*].tags[*] t WHERE t.k IS NOT MISSING",
        json_input(JsonType::Lines),
        OutputSerialization::builder()
            .json(JsonOutput::builder().build())
            .build(),
        |b| b,
    )
    .await
    .expect("json lines select");
    assert_eq!(
        String::from_utf8_lossy(&r.output()),
        "{\"k\":\"a\"}\n{\"k\":\"b\"}\n"
    );
    assert_eq!(r.stats.expect("stats").0, lines.len() as i64);
    let doc = "{\n  \"a\": {\"b\": [10, 20]}\n}\n{\"a\": {\"b\": [30]}}\n";
    put(&s3, "sel", "t.json", doc.as_bytes()).await;
    let r = select(
        &s3,
        "t.json",
        "SELECT s.a.b[0], s.a FROM S3Object s",
        json_input(JsonType::Document),
        csv_out(),
        |b| b,
    )
    .await
    .expect("json document select");
    assert_eq!(
        String::from_utf8_lossy(&r.output()),
        "10,\"{\"\"b\"\":[10,20]}\"\n30,\"{\"\"b\"\":[30]}\"\n"
    );
    // Malformed JSON is JSONParsingError (an error event: the stream has begun).
    put(&s3, "sel", "bad.jsonl", b"{\"a\":1}\n{\"a\":}\n").await;
    let err = select(
        &s3,
        "bad.jsonl",
        "SELECT * FROM S3Object",
        json_input(JsonType::Lines),
        csv_out(),
        |b| b,
    )
    .await
    .expect_err("malformed json");
    assert_eq!(err.into_service_error().code(), Some("JSONParsingError"));

    // A missing key is NoSuchKey.
    let err = select(
        &s3,
        "absent.csv",
        "SELECT * FROM S3Object",
        InputSerialization::builder().csv(csv_input()).build(),
        csv_out(),
        |b| b,
    )
    .await
    .expect_err("missing");
    assert_eq!(err.into_service_error().code(), Some("NoSuchKey"));
}

#[tokio::test]
async fn bad_secret_is_refused() {
    let gw = Gateway::start(&[]);
    let intruder = gw.client_with(ACCESS, "not-the-secret");
    let err = intruder.list_buckets().send().await.expect_err("403");
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(403));
    let stranger = gw.client_with("unknown-key", SECRET);
    let err = stranger.list_buckets().send().await.expect_err("403");
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(403));
}

#[test]
fn health_is_unauthenticated() {
    let gw = Gateway::start(&[]);
    let mut conn = std::net::TcpStream::connect(&gw.addr).expect("connect");
    conn.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("request");
    let mut response = String::new();
    conn.read_to_string(&mut response).expect("response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("ok"), "{response}");
}

#[test]
fn refuses_to_start_without_credentials() {
    let out = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(["gateway", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(std::env::temp_dir().join("sift-gateway-never-used"))
        .env_remove("SIFT_ACCESS_KEY")
        .env_remove("SIFT_SECRET_KEY")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no credentials"), "{err}");
}

/// `SIFT_ACCESS_KEY` and `SIFT_SECRET_KEY` name the user when the flags do not.
#[tokio::test]
async fn the_user_can_come_from_the_environment() {
    let data = temp_dir("sift-gateway-env");
    let gw = Gateway::start_with_env(
        &["--data-dir", &data.display().to_string()],
        &[
            ("SIFT_ACCESS_KEY", "env-access"),
            ("SIFT_SECRET_KEY", "env-secret"),
        ],
        false,
    );
    create_bucket(&gw.client_with("env-access", "env-secret"), "from-env").await;
    let err = gw
        .client()
        .list_objects_v2()
        .bucket("from-env")
        .send()
        .await
        .expect_err("the flags' user is not this gateway's");
    assert_eq!(status_and_code(&err).0, 403);
    drop(gw);
    std::fs::remove_dir_all(&data).ok();
}

/// `SIFT_UPSTREAM_ACCESS_KEY` and `SIFT_UPSTREAM_SECRET_KEY` are the keys Sift signs
/// upstream requests with when the flags do not give them.
#[tokio::test]
async fn upstream_keys_can_come_from_the_environment() {
    let store = Gateway::start(&[]);
    let front = Gateway::start_with_env(
        &["--upstream", &store.endpoint()],
        &[
            ("SIFT_UPSTREAM_ACCESS_KEY", ACCESS),
            ("SIFT_UPSTREAM_SECRET_KEY", SECRET),
        ],
        true,
    );
    create_bucket(&front.client(), "up-env").await;
    put(&front.client(), "up-env", "k", b"through").await;
    assert_eq!(get(&store.client(), "up-env", "k").await, b"through");
}

/// With a certificate the gateway serves HTTPS: an SDK client that trusts the test CA
/// writes, reads and selects; a gateway in front of it reaches it over HTTPS when its
/// --ca-file names the CA, and without it answers 503 with the refusal (at once); a
/// certificate the CA did not sign for this name, or bad TLS files, are refused clearly.
#[tokio::test]
async fn https_with_a_certificate() {
    let tls = tls_flags("server");
    let tls: Vec<&str> = tls.iter().map(String::as_str).collect();
    let store = Gateway::start(&tls);
    assert!(store.endpoint().starts_with("https://127.0.0.1:"));
    let s3 = client_trusting_test_ca(&store.endpoint());
    create_bucket(&s3, "tls").await;
    put(&s3, "tls", "t.csv", b"a,1\nb,2\n").await;
    assert_eq!(get(&s3, "tls", "t.csv").await, b"a,1\nb,2\n");
    let (records, _) = select_csv(
        &s3,
        "tls",
        "t.csv",
        "SELECT s._1 FROM S3Object s WHERE CAST(s._2 AS INT) > 1",
        InputSerialization::builder().csv(csv_input()).build(),
        None,
    )
    .await
    .expect("select over https");
    assert_eq!(records, b"b\n");

    let ca = pki("ca.pem");
    let front = Gateway::start_upstream(&store.endpoint(), ACCESS, SECRET, &["--ca-file", &ca]);
    assert_eq!(get(&front.client(), "tls", "t.csv").await, b"a,1\nb,2\n");
    let untrusting = Gateway::start_upstream(&store.endpoint(), ACCESS, SECRET, &[]);
    let started = std::time::Instant::now();
    let err = untrusting
        .client()
        .get_object()
        .bucket("tls")
        .key("t.csv")
        .send()
        .await
        .expect_err("the store's certificate is not trusted");
    let (status, code) = status_and_code(&err);
    assert_eq!((status, code.as_str()), (503, "ServiceUnavailable"));
    let message = err.message().unwrap_or_default();
    assert!(message.contains("UnknownIssuer"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    let elsewhere = tls_flags("wrong-name");
    let elsewhere: Vec<&str> = elsewhere.iter().map(String::as_str).collect();
    let misnamed = Gateway::start(&elsewhere);
    let err = client_trusting_test_ca(&misnamed.endpoint())
        .list_buckets()
        .send()
        .await
        .expect_err("a certificate for another name");
    let chain = format!("{}", aws_sdk_s3::error::DisplayErrorContext(&err));
    assert!(chain.contains("NotValidForName"), "{chain}");

    for (flags, named) in [
        (vec!["--tls-cert", &tls[1]], "--tls-key"),
        (
            vec!["--tls-cert", &ca, "--tls-key", &tls[3]],
            "--tls-cert and --tls-key",
        ),
        (
            vec!["--tls-cert", "/nonexistent.pem", "--tls-key", &tls[3]],
            "--tls-cert",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sift"))
            .args([
                "gateway",
                "--listen",
                "127.0.0.1:0",
                "--access-key",
                "a",
                "--secret-key",
                "s",
            ])
            .arg("--data-dir")
            .arg(std::env::temp_dir().join("sift-gateway-never-used"))
            .args(&flags)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{flags:?}: {err}");
    }
}

/// Every variable is named in `--help`, and no secret's value is printed there.
#[test]
fn help_names_the_environment_variables_and_hides_their_values() {
    let out = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(["gateway", "--help"])
        .env("SIFT_SECRET_KEY", "do-not-print-me")
        .env("SIFT_UPSTREAM_SECRET_KEY", "nor-me")
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for var in [
        "SIFT_ACCESS_KEY",
        "SIFT_SECRET_KEY",
        "SIFT_UPSTREAM_ACCESS_KEY",
        "SIFT_UPSTREAM_SECRET_KEY",
    ] {
        assert!(help.contains(&format!("[env: {var}]")), "{var}: {help}");
    }
    assert!(
        !help.contains("do-not-print-me") && !help.contains("nor-me"),
        "{help}"
    );
}

/// An upstream without its keys is refused with the flags and variables that would give
/// them, exit status 2.
#[test]
fn an_upstream_without_keys_names_what_is_missing() {
    let out = Command::new(env!("CARGO_BIN_EXE_sift"))
        .args(["gateway", "--listen", "127.0.0.1:0", "--upstream"])
        .arg("http://127.0.0.1:1")
        .args(["--access-key", ACCESS, "--secret-key", SECRET])
        .env_remove("SIFT_UPSTREAM_ACCESS_KEY")
        .env_remove("SIFT_UPSTREAM_SECRET_KEY")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--upstream-access-key") && err.contains("SIFT_UPSTREAM_ACCESS_KEY"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_gateway() {
    let mut gw = Gateway::start(&[]);
    let pid = gw.child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = gw.child.wait().expect("wait");
    assert!(exit.success(), "{exit:?}");
}

/// A plain HTTP/1.1 GET of `path_and_query`, returning the status line and the body.
#[tokio::test]
async fn presigned_get() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "pre").await;
    put(&s3, "pre", "note.txt", b"presigned!").await;
    let presigned = s3
        .get_object()
        .bucket("pre")
        .key("note.txt")
        .presigned(
            aws_sdk_s3::presigning::PresigningConfig::expires_in(std::time::Duration::from_secs(
                300,
            ))
            .expect("config"),
        )
        .await
        .expect("presign");
    let url = presigned.uri().to_string();
    let path = url
        .strip_prefix(&format!("http://{}", gw.addr))
        .expect("url on the gateway");
    let (status, body) = raw_get(&gw.addr, path);
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, b"presigned!");

    // Tampering with the signed URL is refused.
    let (status, _) = raw_get(&gw.addr, &path.replace("note.txt", "other.txt"));
    assert!(status.contains(" 403 "), "{status}");
    // And an unsigned request too.
    let (status, _) = raw_get(&gw.addr, "/pre/note.txt");
    assert!(status.contains(" 403 "), "{status}");
}

/// An error after output has started can only be an error event: the rows before it arrive,
/// then the stream fails with the engine's code (and no End).
#[tokio::test]
async fn error_after_output_is_an_error_event() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "sel").await;
    // More than one 4 MiB engine chunk, with the bad value in the last one.
    let mut data = String::new();
    let mut i = 0;
    while data.len() < 6 << 20 {
        data.push_str(&format!("{i},padding padding padding padding\n"));
        i += 1;
    }
    data.push_str("oops,bad\n");
    put(&s3, "sel", "late-error.csv", data.as_bytes()).await;
    let mut out = s3
        .select_object_content()
        .bucket("sel")
        .key("late-error.csv")
        .expression("SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) % 1000 = 0")
        .expression_type(ExpressionType::Sql)
        .input_serialization(InputSerialization::builder().csv(csv_input()).build())
        .output_serialization(csv_out())
        .send()
        .await
        .expect("the stream starts");
    let mut records = 0;
    let failure = loop {
        match out.payload.recv().await {
            Ok(Some(SelectObjectContentEventStream::Records(_))) => records += 1,
            Ok(Some(SelectObjectContentEventStream::End(_))) => panic!("End after an error"),
            Ok(Some(_)) => {}
            Ok(None) => panic!("stream ended without the error"),
            Err(e) => break e,
        }
    };
    assert!(records >= 1, "rows before the error arrive");
    let expected = {
        let select = sift_engine::Select::new(sift_engine::SelectRequest {
            sql: "SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) % 1000 = 0".into(),
            ..Default::default()
        })
        .expect("valid");
        select
            .run(&sift_engine::SliceSource(b"oops,bad\n"), &mut Vec::new())
            .expect_err("bad value")
    };
    // The Rust SDK does not model `:message-type: error` (AWS's request-level error
    // message) and reports it as an unmarshalling failure carrying the raw message, so the
    // code is read from the raw headers.
    let raw = format!("{failure:?}");
    assert!(
        raw.contains(r#"b":error-code" }, value: String(StrBytes { bytes: b""#),
        "{raw}"
    );
    assert!(
        raw.contains(&format!(r#"b"{}""#, expected.code.as_str())),
        "{raw}"
    );
}

/// A client that hangs up mid-stream stops its scan: with room for one running select, the
/// next select still runs (it would wait forever behind an engine blocked on a dead client).
#[tokio::test]
async fn disconnect_stops_the_scan() {
    let gw = Gateway::start(&["--max-selects", "1"]);
    let s3 = gw.client();
    create_bucket(&s3, "sel").await;
    let row = "0123456789,abcdefghijklmnopqrstuvwxyz,abcdefghijklmnopqrstuvwxyz\n";
    let big = row.repeat((24 << 20) / row.len());
    put(&s3, "sel", "big.csv", big.as_bytes()).await;
    put(&s3, "sel", "small.csv", b"1\n2\n").await;

    let mut out = s3
        .select_object_content()
        .bucket("sel")
        .key("big.csv")
        .expression("SELECT * FROM S3Object s")
        .expression_type(ExpressionType::Sql)
        .input_serialization(InputSerialization::builder().csv(csv_input()).build())
        .output_serialization(csv_out())
        .send()
        .await
        .expect("big select starts");
    let first = out.payload.recv().await.expect("first event");
    assert!(matches!(
        first,
        Some(SelectObjectContentEventStream::Records(_))
    ));
    drop(out); // hang up with most of the output unread

    let next = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        select(
            &s3,
            "small.csv",
            "SELECT count(*) FROM S3Object",
            InputSerialization::builder().csv(csv_input()).build(),
            csv_out(),
            |b| b,
        ),
    )
    .await
    .expect("the abandoned scan released its place")
    .expect("select");
    assert_eq!(String::from_utf8_lossy(&next.output()).trim_end(), "2");
}

/// With `--domain`, `bucket.DOMAIN` addresses the bucket (virtual-host style); path style
/// keeps working.
#[tokio::test]
async fn virtual_host_style() {
    let gw = Gateway::start(&["--domain", "s3.sift.test"]);
    let s3 = gw.client();
    create_bucket(&s3, "vhb").await;
    put(&s3, "vhb", "dir/k.txt", b"virtual").await;

    // Sign for the virtual host, then send to the loopback address with that Host header.
    let port = gw.addr.rsplit(':').next().expect("port");
    let vh_config = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(Region::new("us-east-1"))
        .endpoint_url(format!("http://s3.sift.test:{port}"))
        .force_path_style(false)
        .credentials_provider(Credentials::new(ACCESS, SECRET, None, None, "test"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    let presigned = Client::from_conf(vh_config)
        .get_object()
        .bucket("vhb")
        .key("dir/k.txt")
        .presigned(
            aws_sdk_s3::presigning::PresigningConfig::expires_in(std::time::Duration::from_secs(
                300,
            ))
            .expect("config"),
        )
        .await
        .expect("presign");
    let host = format!("vhb.s3.sift.test:{port}");
    let url = presigned.uri().to_string();
    let path = url
        .strip_prefix(&format!("http://{host}"))
        .unwrap_or_else(|| panic!("virtual-host URL, got {url}"));
    let mut conn = std::net::TcpStream::connect(&gw.addr).expect("connect");
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    conn.read_to_string(&mut response).expect("response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("virtual"), "{response}");
}

#[tokio::test]
async fn metrics_and_access_log() {
    let log = common::temp_dir("sift-access-log");
    let gw = Gateway::start_logging(&[], &log);
    let s3 = gw.client();
    create_bucket(&s3, "sel").await;
    put(&s3, "sel", "t.csv", b"1,a\n2,b\n3,c\n").await;
    s3.get_object()
        .bucket("sel")
        .key("missing")
        .send()
        .await
        .expect_err("missing");
    let input = InputSerialization::builder().csv(csv_input()).build();
    let out = select(
        &s3,
        "t.csv",
        "SELECT s._2 FROM S3Object s",
        input,
        csv_out(),
        |r| r,
    )
    .await
    .expect("select");
    assert_eq!(out.records.concat(), b"a\nb\nc\n");

    let (status, body) = raw_get(&gw.addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    let text = String::from_utf8(body).expect("utf-8");
    for line in [
        "sift_requests_total{operation=\"PutObject\",status=\"200\"} 1\n",
        "sift_requests_total{operation=\"GetObject\",status=\"404\"} 1\n",
        "sift_requests_total{operation=\"SelectObjectContent\",status=\"200\"} 1\n",
        "sift_select_bytes_scanned_total 12\n",
        "sift_select_bytes_returned_total 6\n",
        "sift_select_duration_seconds_count 1\n",
        "sift_selects_in_flight 0\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    assert!(text.contains("process_cpu_seconds_total "), "{text}");

    // Unsigned requests are counted too, and refused; the error body names the request as
    // S3's does, with the id the access log and x-amz-request-id carry.
    let (status, body) = raw_get(&gw.addr, "/sel/t.csv");
    assert!(status.contains("403"), "{status}");
    let body = String::from_utf8(body).expect("utf-8");
    let refused_id = body
        .split_once("<RequestId>")
        .and_then(|(_, rest)| rest.split_once("</RequestId></Error>"))
        .map(|(id, _)| id.to_string())
        .unwrap_or_else(|| panic!("no <RequestId> at the end of the error: {body}"));

    drop(gw);
    let log = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("sift::access")).collect();
    for want in [
        "PUT /sel/t.csv?x-id=PutObject 200 PutObject",
        "GET /sel/missing?x-id=GetObject 404 GetObject",
        "POST /sel/t.csv?select&select-type=2 200 SelectObjectContent",
        "- GET /sel/t.csv 403 GetObject",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(want)),
            "no access-log line with {want:?} in\n{log}"
        );
    }
    assert!(lines.iter().any(|l| l.contains(ACCESS)), "{log}");
    // Every line ends with the request id the response carried in x-amz-request-id.
    assert!(
        lines.iter().all(|l| l
            .rsplit(' ')
            .next()
            .is_some_and(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("- GET /sel/t.csv 403") && l.ends_with(&refused_id)),
        "no access-log line of the refused GET with id {refused_id} in\n{log}"
    );
}

#[tokio::test]
async fn anonymous_reads_only_when_allowed() {
    let gw = Gateway::start(&["--allow-anonymous-read"]);
    let s3 = gw.client();
    create_bucket(&s3, "pub").await;
    put(&s3, "pub", "k", b"public bytes").await;
    let (status, body) = raw_get(&gw.addr, "/pub/k");
    assert!(status.contains("200"), "{status}");
    assert_eq!(body, b"public bytes");
    let (status, _) = raw_get(&gw.addr, "/pub?list-type=2");
    assert!(status.contains("200"), "{status}");
    // Writing is never anonymous.
    let mut conn = std::net::TcpStream::connect(&gw.addr).expect("connect");
    write!(
        conn,
        "PUT /pub/new HTTP/1.1\r\nHost: {}\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
        gw.addr
    )
    .expect("send");
    let mut response = String::new();
    conn.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("AccessDenied"), "{response}");
    assert_eq!(get(&s3, "pub", "k").await, b"public bytes");
}

/// A raw HTTP request; returns the status line and the body.
fn raw_request(addr: &str, method: &str, path: &str, body: &[u8]) -> (String, String) {
    let mut conn = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        conn,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .expect("send head");
    // The gateway may answer (and close) before reading a large body: that is fine.
    let _ = conn.write_all(body);
    let mut response = Vec::new();
    let _ = conn.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

#[tokio::test]
async fn bad_requests_get_s3_errors_and_the_gateway_keeps_serving() {
    // Anonymous reads let this test send select bodies no SDK would write.
    let gw = Gateway::start(&["--allow-anonymous-read"]);
    let s3 = gw.client();
    create_bucket(&s3, "sel").await;
    put(&s3, "sel", "t.csv", b"a,1\nb,2\n").await;
    let select_body = |csv_fields: &str, sql: &str| {
        format!(
            "<SelectObjectContentRequest xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <Expression>{sql}</Expression><ExpressionType>SQL</ExpressionType>\
             <InputSerialization><CSV>{csv_fields}</CSV></InputSerialization>\
             <OutputSerialization><CSV/></OutputSerialization></SelectObjectContentRequest>"
        )
    };
    let path = "/sel/t.csv?select&select-type=2";
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "malformed XML",
            "<SelectObjectContentRequest><Expression>".into(),
            "400",
            "MalformedXML",
        ),
        (
            "unknown FileHeaderInfo",
            select_body(
                "<FileHeaderInfo>MAYBE</FileHeaderInfo>",
                "SELECT * FROM S3Object",
            ),
            "400",
            "",
        ),
        (
            "SQL error",
            select_body("", "SELECT FROM WHERE"),
            "400",
            "Parse",
        ),
        (
            "oversized XML body",
            format!(
                "<SelectObjectContentRequest>{}",
                " ".repeat(21 * 1024 * 1024)
            ),
            "400",
            "MaxMessageLengthExceeded",
        ),
    ];
    for (what, body, status, code) in cases {
        let (line, text) = raw_request(&gw.addr, "POST", path, body.as_bytes());
        assert!(
            !line.contains(" 200 ") && !line.contains(" 500 "),
            "{what}: {line} {text}"
        );
        assert!(line.contains(status), "{what}: {line}");
        assert!(text.contains(code), "{what}: {text}");
    }
    let (line, text) = raw_request(
        &gw.addr,
        "POST",
        "/sel/missing.csv?select&select-type=2",
        select_body("", "SELECT * FROM S3Object").as_bytes(),
    );
    assert!(
        line.contains("404") && text.contains("NoSuchKey"),
        "{line} {text}"
    );
    let (line, text) = raw_request(
        &gw.addr,
        "POST",
        "/nobucket/t.csv?select&select-type=2",
        select_body("", "SELECT * FROM S3Object").as_bytes(),
    );
    assert!(
        line.contains("404") && text.contains("NoSuchBucket"),
        "{line} {text}"
    );

    // A request signed an hour in the past (clock skew).
    let skewed = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(Region::new("us-east-1"))
        .endpoint_url(gw.endpoint())
        .force_path_style(true)
        .credentials_provider(Credentials::new(ACCESS, SECRET, None, None, "test"))
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .time_source(aws_smithy_async::time::StaticTimeSource::new(
            std::time::SystemTime::now() - std::time::Duration::from_secs(3600),
        ))
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .build();
    let err = Client::from_conf(skewed)
        .list_objects_v2()
        .bucket("sel")
        .send()
        .await
        .expect_err("skewed clock");
    assert_eq!(
        common::status_and_code(&err),
        (403, "RequestTimeTooSkewed".into())
    );

    // An expired presigned URL.
    let presigned = s3
        .get_object()
        .bucket("sel")
        .key("t.csv")
        .presigned(
            aws_sdk_s3::presigning::PresigningConfig::expires_in(std::time::Duration::from_secs(1))
                .expect("presigning config"),
        )
        .await
        .expect("presign");
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let uri = presigned.uri();
    let path_and_query = &uri[uri.find("/sel/").expect("path")..];
    let (line, text) = raw_request(&gw.addr, "GET", path_and_query, b"");
    assert!(line.contains("403"), "{line} {text}");
    assert!(text.contains("AccessDenied"), "{text}");

    // Nothing above changed the stored object, and the gateway still answers.
    assert_eq!(get(&s3, "sel", "t.csv").await, b"a,1\nb,2\n");
    let out = select(
        &s3,
        "t.csv",
        "SELECT s._1 FROM S3Object s",
        InputSerialization::builder().csv(csv_input()).build(),
        csv_out(),
        |r| r,
    )
    .await
    .expect("select after bad requests");
    assert_eq!(out.output(), b"a\nb\n");
}

/// Reads one response header of each request it sees.
#[derive(Debug, Clone)]
struct SeeHeader(
    &'static str,
    std::sync::Arc<std::sync::Mutex<Option<String>>>,
);

impl aws_sdk_s3::config::Intercept for SeeHeader {
    fn name(&self) -> &'static str {
        "SeeHeader"
    }

    fn read_before_deserialization(
        &self,
        ctx: &aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextRef<'_>,
        _: &aws_sdk_s3::config::RuntimeComponents,
        _: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let value = ctx.response().headers().get(self.0).map(str::to_owned);
        *self.1.lock().expect("not poisoned") = value;
        Ok(())
    }
}

/// A select with `x-sift-result-format: VALUE` (none when `None`): the concatenated Records
/// payloads and the response's `x-sift-result-format`, or the S3 error as "status code".
async fn select_with_format(
    s3: &Client,
    key: &str,
    sql: &str,
    format: Option<&'static str>,
) -> Result<(Vec<u8>, Option<String>), String> {
    let seen = SeeHeader("x-sift-result-format", Default::default());
    let out = s3
        .select_object_content()
        .bucket("sel")
        .key(key)
        .expression(sql)
        .expression_type(ExpressionType::Sql)
        .input_serialization(InputSerialization::builder().csv(csv_input()).build())
        .output_serialization(csv_out())
        .customize()
        .interceptor(seen.clone())
        .mutate_request(move |r| {
            if let Some(v) = format {
                r.headers_mut().insert("x-sift-result-format", v);
            }
        })
        .send()
        .await;
    let mut out = out.map_err(|e| {
        let (status, code) = status_and_code(&e);
        format!("{status} {code}")
    })?;
    let mut records = Vec::new();
    loop {
        match out.payload.recv().await {
            Ok(Some(SelectObjectContentEventStream::Records(r))) => {
                records.extend_from_slice(r.payload().map(|b| b.as_ref()).unwrap_or_default())
            }
            Ok(Some(SelectObjectContentEventStream::End(_))) => break,
            Ok(Some(_)) => {}
            Ok(None) => return Err("no End event".into()),
            Err(e) => return Err(format!("error event: {e:?}")),
        }
    }
    let header = seen.1.lock().expect("not poisoned").clone();
    Ok((records, header))
}

/// Arrow results on request (docs/gateway.md): the header turns the Records payloads into the
/// engine's Arrow IPC stream, byte for byte, and the response says so; without it nothing
/// changes; a query without a fixed schema or an unknown format is a 400 before the stream.
#[tokio::test]
async fn arrow_results_when_the_header_asks() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "sel").await;
    let mut data = String::new();
    for i in 0..40_000 {
        let price = if i % 9 == 0 {
            String::new()
        } else {
            format!("{}.{:02}", i % 500, i % 100)
        };
        data.push_str(&format!("item {i},{},{price}\n", i % 1000));
    }
    put(&s3, "sel", "typed.csv", data.as_bytes()).await;
    let sql = "SELECT s._1 AS name, CAST(s._2 AS INT) AS quantity, \
               CASE s._3 WHEN '' THEN NULL ELSE CAST(s._3 AS DECIMAL(7,2)) END AS price \
               FROM S3Object s WHERE CAST(s._2 AS INT) < 700";

    let (stream, header) = select_with_format(&s3, "typed.csv", sql, Some("arrow"))
        .await
        .expect("an Arrow select");
    assert_eq!(header.as_deref(), Some("arrow"));
    let expected = {
        let select = sift_engine::Select::new(sift_engine::SelectRequest {
            sql: sql.into(),
            output: sift_engine::OutputSerialization::Arrow(Default::default()),
            ..Default::default()
        })
        .expect("valid");
        let mut out = Vec::new();
        select
            .run(&sift_engine::SliceSource(data.as_bytes()), &mut out)
            .expect("in process");
        out
    };
    assert!(
        stream.len() > MAX_RECORDS,
        "the stream spans several Records events"
    );
    assert!(
        stream == expected,
        "the payloads are the engine's IPC stream"
    );
    let reader = datafusion::arrow::ipc::reader::StreamReader::try_new(&stream[..], None)
        .expect("an IPC stream");
    let batches: Vec<_> = reader.map(|b| b.expect("a batch")).collect();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 28_000);

    // Compressed: the same batches in fewer bytes, and the header says so.
    let (lz4, header) = select_with_format(&s3, "typed.csv", sql, Some("Arrow; compression=LZ4"))
        .await
        .expect("an LZ4 Arrow select");
    assert_eq!(header.as_deref(), Some("arrow; compression=lz4"));
    assert!(
        lz4.len() * 2 < stream.len(),
        "{} vs {} bytes",
        lz4.len(),
        stream.len()
    );
    let unpacked: Vec<_> = datafusion::arrow::ipc::reader::StreamReader::try_new(&lz4[..], None)
        .expect("an IPC stream")
        .map(|b| b.expect("a batch"))
        .collect();
    assert_eq!(unpacked, batches);

    let (csv, header) = select_with_format(&s3, "typed.csv", sql, None)
        .await
        .expect("a CSV select");
    assert_eq!(header, None, "no Arrow without the header");
    assert_eq!(csv.iter().filter(|&&b| b == b'\n').count(), 28_000);

    let refused = select_with_format(&s3, "typed.csv", "SELECT * FROM S3Object", Some("arrow"))
        .await
        .expect_err("SELECT * has no fixed schema");
    assert_eq!(refused, "400 UnsupportedSqlStructure");
    let refused = select_with_format(&s3, "typed.csv", sql, Some("parquet"))
        .await
        .expect_err("an unknown format");
    assert_eq!(refused, "400 InvalidArgument");
    let refused = select_with_format(&s3, "typed.csv", sql, Some("arrow; compression=zstd"))
        .await
        .expect_err("an unknown compression");
    assert_eq!(refused, "400 InvalidArgument");
}
