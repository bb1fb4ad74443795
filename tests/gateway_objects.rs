//! The gateway's object operations beyond PUT and GET: multipart uploads, conditional
//! requests and the unversioned ListObjectVersions, through the AWS SDK for Rust against
//! the real binary.

mod common;

use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use common::{create_bucket, get, put, status_and_code, Gateway};
use md5::{Digest, Md5};

async fn upload_part(s3: &Client, key: &str, id: &str, n: i32, data: &[u8]) -> CompletedPart {
    let out = s3
        .upload_part()
        .bucket("mpu")
        .key(key)
        .upload_id(id)
        .part_number(n)
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await
        .unwrap_or_else(|e| panic!("upload part {n}: {e:?}"));
    CompletedPart::builder()
        .part_number(n)
        .e_tag(out.e_tag().expect("part etag"))
        .build()
}

#[tokio::test]
async fn multipart_upload() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "mpu").await;

    let created = s3
        .create_multipart_upload()
        .bucket("mpu")
        .key("tables/big.csv")
        .content_type("text/csv")
        .metadata("origin", "test")
        .send()
        .await
        .expect("create upload");
    let id = created.upload_id().expect("upload id").to_string();

    let part1: Vec<u8> = (0..5 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let part2 = b"the last part may be small".to_vec();
    // A part uploaded twice keeps its second content.
    upload_part(&s3, "tables/big.csv", &id, 1, b"replaced").await;
    let p1 = upload_part(&s3, "tables/big.csv", &id, 1, &part1).await;
    let p2 = upload_part(&s3, "tables/big.csv", &id, 2, &part2).await;

    let uploads = s3
        .list_multipart_uploads()
        .bucket("mpu")
        .prefix("tables/")
        .send()
        .await
        .expect("list uploads");
    let listed: Vec<_> = uploads
        .uploads()
        .iter()
        .map(|u| (u.key().unwrap_or(""), u.upload_id().unwrap_or("")))
        .collect();
    assert_eq!(listed, [("tables/big.csv", id.as_str())]);

    let parts = s3
        .list_parts()
        .bucket("mpu")
        .key("tables/big.csv")
        .upload_id(&id)
        .send()
        .await
        .expect("list parts");
    let sizes: Vec<_> = parts
        .parts()
        .iter()
        .map(|p| (p.part_number(), p.size()))
        .collect();
    assert_eq!(
        sizes,
        [
            (Some(1), Some(part1.len() as i64)),
            (Some(2), Some(part2.len() as i64))
        ]
    );
    let page = s3
        .list_parts()
        .bucket("mpu")
        .key("tables/big.csv")
        .upload_id(&id)
        .max_parts(1)
        .send()
        .await
        .expect("first page of parts");
    assert_eq!(page.is_truncated(), Some(true));
    assert_eq!(page.next_part_number_marker(), Some("1"));

    // Parts out of order are refused and leave the upload as it was.
    let err = s3
        .complete_multipart_upload()
        .bucket("mpu")
        .key("tables/big.csv")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(p2.clone())
                .parts(p1.clone())
                .build(),
        )
        .send()
        .await
        .expect_err("out of order");
    assert_eq!(status_and_code(&err), (400, "InvalidPartOrder".into()));

    let done = s3
        .complete_multipart_upload()
        .bucket("mpu")
        .key("tables/big.csv")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(p1)
                .parts(p2)
                .build(),
        )
        .send()
        .await
        .expect("complete");
    let mut md5s = Vec::new();
    md5s.extend_from_slice(&Md5::digest(&part1));
    md5s.extend_from_slice(&Md5::digest(&part2));
    let want_etag = format!("\"{}-2\"", hex(&Md5::digest(&md5s)));
    assert_eq!(done.e_tag(), Some(want_etag.as_str()));

    let mut whole = part1.clone();
    whole.extend_from_slice(&part2);
    assert!(get(&s3, "mpu", "tables/big.csv").await == whole);
    let head = s3
        .head_object()
        .bucket("mpu")
        .key("tables/big.csv")
        .send()
        .await
        .expect("head");
    assert_eq!(head.e_tag(), Some(want_etag.as_str()));
    assert_eq!(head.content_type(), Some("text/csv"));
    assert_eq!(
        head.metadata()
            .and_then(|m| m.get("origin"))
            .map(String::as_str),
        Some("test")
    );

    // The upload is gone once completed.
    let err = s3
        .list_parts()
        .bucket("mpu")
        .key("tables/big.csv")
        .upload_id(&id)
        .send()
        .await
        .expect_err("no upload any more");
    assert_eq!(status_and_code(&err), (404, "NoSuchUpload".into()));
}

#[tokio::test]
async fn multipart_errors_and_abort() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "mpu").await;
    let id = s3
        .create_multipart_upload()
        .bucket("mpu")
        .key("k")
        .send()
        .await
        .expect("create")
        .upload_id()
        .expect("id")
        .to_string();
    let p1 = upload_part(&s3, "k", &id, 1, b"too small to be a first part").await;
    let p2 = upload_part(&s3, "k", &id, 2, b"tail").await;
    let complete = |parts: Vec<CompletedPart>| {
        let s3 = s3.clone();
        let id = id.clone();
        async move {
            s3.complete_multipart_upload()
                .bucket("mpu")
                .key("k")
                .upload_id(id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
        }
    };
    let err = complete(vec![p1.clone(), p2.clone()])
        .await
        .expect_err("small part");
    assert_eq!(status_and_code(&err), (400, "EntityTooSmall".into()));
    let wrong = CompletedPart::builder()
        .part_number(2)
        .e_tag("\"00000000000000000000000000000000\"")
        .build();
    let err = complete(vec![wrong]).await.expect_err("wrong etag");
    assert_eq!(status_and_code(&err), (400, "InvalidPart".into()));

    // Part numbers outside 1..=10000, and unknown upload ids (including path tricks).
    let err = s3
        .upload_part()
        .bucket("mpu")
        .key("k")
        .upload_id(&id)
        .part_number(10_001)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .expect_err("part number");
    assert_eq!(status_and_code(&err), (400, "InvalidArgument".into()));
    for bad in ["../../../etc", "0123456789abcdef0123456789abcdef"] {
        let err = s3
            .upload_part()
            .bucket("mpu")
            .key("k")
            .upload_id(bad)
            .part_number(1)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .expect_err("unknown upload");
        assert_eq!(status_and_code(&err), (404, "NoSuchUpload".into()), "{bad}");
    }

    s3.abort_multipart_upload()
        .bucket("mpu")
        .key("k")
        .upload_id(&id)
        .send()
        .await
        .expect("abort");
    let err = complete(vec![p1, p2]).await.expect_err("aborted");
    assert_eq!(status_and_code(&err), (404, "NoSuchUpload".into()));
    let err = s3
        .head_object()
        .bucket("mpu")
        .key("k")
        .send()
        .await
        .expect_err("no object");
    assert_eq!(status_and_code(&err).0, 404);
    let uploads = s3
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .expect("list");
    assert!(uploads.uploads().is_empty());
}

#[tokio::test]
async fn conditional_get_and_head() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "cond").await;
    put(&s3, "cond", "k", b"hello").await;
    let etag = format!("\"{}\"", hex(&Md5::digest(b"hello")));
    let other = "\"0123456789abcdef0123456789abcdef\"";
    let past = DateTime::from_secs(1_000_000_000);
    let future = DateTime::from_secs(4_000_000_000);

    let ok = s3
        .get_object()
        .bucket("cond")
        .key("k")
        .if_match(&etag)
        .if_none_match(other)
        .if_modified_since(past)
        .send()
        .await
        .expect("conditions hold");
    assert_eq!(
        ok.body.collect().await.expect("body").into_bytes().as_ref(),
        b"hello"
    );

    let err = s3
        .get_object()
        .bucket("cond")
        .key("k")
        .if_match(other)
        .send()
        .await
        .expect_err("if-match fails");
    assert_eq!(status_and_code(&err).0, 412);
    let err = s3
        .get_object()
        .bucket("cond")
        .key("k")
        .if_unmodified_since(past)
        .send()
        .await
        .expect_err("modified since");
    assert_eq!(status_and_code(&err).0, 412);
    let err = s3
        .get_object()
        .bucket("cond")
        .key("k")
        .if_none_match(&etag)
        .send()
        .await
        .expect_err("not modified");
    assert_eq!(status_and_code(&err).0, 304);
    let err = s3
        .head_object()
        .bucket("cond")
        .key("k")
        .if_modified_since(future)
        .send()
        .await
        .expect_err("not modified since");
    assert_eq!(status_and_code(&err).0, 304);
    // If-Match holding overrides If-Unmodified-Since failing (RFC 9110, as S3).
    s3.head_object()
        .bucket("cond")
        .key("k")
        .if_match(&etag)
        .if_unmodified_since(past)
        .send()
        .await
        .expect("if-match wins");
}

#[tokio::test]
async fn list_object_versions_is_unversioned() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "ver").await;
    for k in ["a", "b", "c/d"] {
        put(&s3, "ver", k, k.as_bytes()).await;
    }
    let out = s3
        .list_object_versions()
        .bucket("ver")
        .delimiter("/")
        .max_keys(2)
        .send()
        .await
        .expect("versions");
    let versions: Vec<_> = out
        .versions()
        .iter()
        .map(|v| (v.key().unwrap_or(""), v.version_id(), v.is_latest()))
        .collect();
    assert_eq!(
        versions,
        [
            ("a", Some("null"), Some(true)),
            ("b", Some("null"), Some(true))
        ]
    );
    assert_eq!(out.is_truncated(), Some(true));
    let rest = s3
        .list_object_versions()
        .bucket("ver")
        .delimiter("/")
        .key_marker(out.next_key_marker().expect("next key marker"))
        .send()
        .await
        .expect("rest");
    assert!(rest.versions().is_empty());
    let prefixes: Vec<_> = rest
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, ["c/"]);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn conditional_writes_copies_and_standard_headers() {
    use aws_sdk_s3::types::{Delete, ObjectIdentifier, ServerSideEncryption};
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "wrt").await;
    put(&s3, "wrt", "k", b"first").await;
    let etag = format!("\"{}\"", hex(&Md5::digest(b"first")));

    // If-None-Match: * and a wrong If-Match leave the object as it was.
    let err = s3
        .put_object()
        .bucket("wrt")
        .key("k")
        .if_none_match("*")
        .body(ByteStream::from_static(b"second"))
        .send()
        .await
        .expect_err("exists");
    assert_eq!(status_and_code(&err), (412, "PreconditionFailed".into()));
    let err = s3
        .put_object()
        .bucket("wrt")
        .key("k")
        .if_match("\"0123456789abcdef0123456789abcdef\"")
        .body(ByteStream::from_static(b"second"))
        .send()
        .await
        .expect_err("other etag");
    assert_eq!(status_and_code(&err), (412, "PreconditionFailed".into()));
    assert_eq!(get(&s3, "wrt", "k").await, b"first");
    s3.put_object()
        .bucket("wrt")
        .key("k")
        .if_match(&etag)
        .body(ByteStream::from_static(b"second"))
        .send()
        .await
        .expect("matching etag");
    s3.put_object()
        .bucket("wrt")
        .key("new")
        .if_none_match("*")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .expect("absent");

    // Encryption is refused, not ignored.
    let err = s3
        .put_object()
        .bucket("wrt")
        .key("secret")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .expect_err("sse");
    assert_eq!(status_and_code(&err), (501, "NotImplemented".into()));

    // Standard headers survive.
    s3.put_object()
        .bucket("wrt")
        .key("h")
        .cache_control("max-age=60")
        .content_disposition("attachment; filename=\"t.csv\"")
        .content_encoding("identity")
        .content_language("en")
        .expires(DateTime::from_secs(2_000_000_000))
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .expect("put with headers");
    let h = s3
        .head_object()
        .bucket("wrt")
        .key("h")
        .send()
        .await
        .expect("head");
    assert_eq!(h.cache_control(), Some("max-age=60"));
    assert_eq!(
        h.content_disposition(),
        Some("attachment; filename=\"t.csv\"")
    );
    assert_eq!(h.content_encoding(), Some("identity"));
    assert_eq!(h.content_language(), Some("en"));

    // Copy: source conditions are 412 when they fail, a copy onto itself needs REPLACE.
    let err = s3
        .copy_object()
        .bucket("wrt")
        .key("copy")
        .copy_source("wrt/k")
        .copy_source_if_match("\"0123456789abcdef0123456789abcdef\"")
        .send()
        .await
        .expect_err("copy condition");
    assert_eq!(status_and_code(&err), (412, "PreconditionFailed".into()));
    let err = s3
        .copy_object()
        .bucket("wrt")
        .key("k")
        .copy_source("wrt/k")
        .send()
        .await
        .expect_err("onto itself");
    assert_eq!(status_and_code(&err), (400, "InvalidRequest".into()));
    s3.copy_object()
        .bucket("wrt")
        .key("k")
        .copy_source("wrt/k")
        .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
        .metadata("v", "2")
        .send()
        .await
        .expect("onto itself with REPLACE");

    // A 304 names the ETag it refers to.
    let etag2 = format!("\"{}\"", hex(&Md5::digest(b"second")));
    let err = s3
        .get_object()
        .bucket("wrt")
        .key("k")
        .if_none_match(&etag2)
        .send()
        .await
        .expect_err("not modified");
    let raw = err.raw_response().expect("response");
    assert_eq!(raw.status().as_u16(), 304);
    assert_eq!(raw.headers().get("etag"), Some(etag2.as_str()));

    // Listings: max-keys=0 is an empty, untruncated page; fetch-owner names the owner;
    // DeleteObjects takes at most 1000 keys.
    let empty = s3
        .list_objects_v2()
        .bucket("wrt")
        .max_keys(0)
        .fetch_owner(true)
        .send()
        .await
        .expect("max-keys 0");
    assert_eq!(
        (empty.key_count(), empty.is_truncated()),
        (Some(0), Some(false))
    );
    let owned = s3
        .list_objects_v2()
        .bucket("wrt")
        .fetch_owner(true)
        .send()
        .await
        .expect("fetch owner");
    assert!(owned
        .contents()
        .iter()
        .all(|o| o.owner().and_then(|w| w.id()) == Some(common::ACCESS)));
    let keys: Vec<_> = (0..1001)
        .map(|i| {
            ObjectIdentifier::builder()
                .key(format!("k{i}"))
                .build()
                .expect("identifier")
        })
        .collect();
    let err = s3
        .delete_objects()
        .bucket("wrt")
        .delete(
            Delete::builder()
                .set_objects(Some(keys))
                .build()
                .expect("delete"),
        )
        .send()
        .await
        .expect_err("too many keys");
    assert_eq!(status_and_code(&err), (400, "MalformedXML".into()));
}

#[tokio::test]
async fn upload_part_copy_and_bucket_location() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    create_bucket(&s3, "upc").await;
    let source: Vec<u8> = (0..6 * 1024 * 1024).map(|i| (i % 241) as u8).collect();
    put(&s3, "upc", "src", &source).await;
    let id = s3
        .create_multipart_upload()
        .bucket("upc")
        .key("dst")
        .send()
        .await
        .expect("create")
        .upload_id()
        .expect("id")
        .to_string();
    let copy = |n: i32, range: Option<&str>| {
        let mut r = s3
            .upload_part_copy()
            .bucket("upc")
            .key("dst")
            .upload_id(&id)
            .part_number(n)
            .copy_source("upc/src");
        if let Some(range) = range {
            r = r.copy_source_range(range);
        }
        r.send()
    };
    // The whole source as part 1, then its first 100 bytes as part 2.
    let p1 = copy(1, None).await.expect("copy part 1");
    let p2 = copy(2, Some("bytes=0-99")).await.expect("copy part 2");
    let etag = |o: &aws_sdk_s3::operation::upload_part_copy::UploadPartCopyOutput| {
        o.copy_part_result()
            .and_then(|r| r.e_tag())
            .expect("etag")
            .to_string()
    };
    assert_eq!(etag(&p1), format!("\"{}\"", hex(&Md5::digest(&source))));
    assert_eq!(
        etag(&p2),
        format!("\"{}\"", hex(&Md5::digest(&source[..100])))
    );
    for bad in ["bytes=100-99", "bytes=0-6291456", "lines=1-2"] {
        let err = copy(3, Some(bad)).await.expect_err("bad range");
        assert_eq!(
            status_and_code(&err),
            (400, "InvalidArgument".into()),
            "{bad}"
        );
    }
    s3.complete_multipart_upload()
        .bucket("upc")
        .key("dst")
        .upload_id(&id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(
                    CompletedPart::builder()
                        .part_number(1)
                        .e_tag(etag(&p1))
                        .build(),
                )
                .parts(
                    CompletedPart::builder()
                        .part_number(2)
                        .e_tag(etag(&p2))
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .expect("complete");
    let mut want = source.clone();
    want.extend_from_slice(&source[..100]);
    assert!(get(&s3, "upc", "dst").await == want);

    let location = s3
        .get_bucket_location()
        .bucket("upc")
        .send()
        .await
        .expect("location");
    assert!(location
        .location_constraint()
        .is_none_or(|c| c.as_str().is_empty()));
}

#[tokio::test]
async fn list_buckets_in_pages() {
    let gw = Gateway::start(&[]);
    let s3 = gw.client();
    for b in ["pg-a", "pg-b", "pg-c", "other"] {
        create_bucket(&s3, b).await;
    }
    let mut names = Vec::new();
    let mut token = None;
    loop {
        let page = s3
            .list_buckets()
            .prefix("pg-")
            .max_buckets(2)
            .set_continuation_token(token.clone())
            .send()
            .await
            .expect("page");
        names.extend(
            page.buckets()
                .iter()
                .filter_map(|b| b.name())
                .map(str::to_string),
        );
        token = page.continuation_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    assert_eq!(names, ["pg-a", "pg-b", "pg-c"]);
}
