//! Sift in front of a real Ceph RGW (18.2, standalone on its dbstore backend, started by
//! `scripts/ceph-rgw.sh`). These tests are `#[ignore]`d: `scripts/test.sh` runs them with
//! `--ignored` when the script could start RGW, and reports them as skipped (with the
//! script's reason) when it could not — never as passed.
//!
//! Two defects of RGW's dbstore backend shape them (seen with 18.2.7, reported in
//! docs/gateway.md): a ranged GET returns the object's first bytes instead of the range,
//! and reading back a multipart object hangs with radosgw spinning a core. So the objects
//! here are single PUTs, read whole, and no ScanRange goes through Sift to RGW.

mod common;

use aws_sdk_s3::types::FileHeaderInfo;
use aws_sdk_s3::Client;
use common::{
    client_for, create_bucket, csv, get, multipart_put, put, select_csv, status_and_code, Gateway,
};

struct Rgw {
    endpoint: String,
    access: String,
    secret: String,
}

fn rgw() -> Rgw {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run these tests through scripts/test.sh, which starts RGW")
        })
    };
    Rgw {
        endpoint: var("SIFT_RGW_ENDPOINT"),
        access: var("SIFT_RGW_ACCESS_KEY"),
        secret: var("SIFT_RGW_SECRET_KEY"),
    }
}

/// Sift in front of RGW, a client of Sift, a client of RGW, and a bucket name of this run.
fn setup() -> (Gateway, Client, Client, String) {
    let rgw = rgw();
    let front = Gateway::start_upstream(&rgw.endpoint, &rgw.access, &rgw.secret, &[]);
    let s3 = front.client();
    let direct = client_for(&rgw.endpoint, &rgw.access, &rgw.secret);
    let bucket = format!(
        "sift-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    (front, s3, direct, bucket)
}

async fn empty_and_delete(s3: &Client, bucket: &str) {
    let listed = s3
        .list_objects_v2()
        .bucket(bucket)
        .send()
        .await
        .expect("list for cleanup");
    for o in listed.contents() {
        if let Some(k) = o.key() {
            s3.delete_object()
                .bucket(bucket)
                .key(k)
                .send()
                .await
                .expect("delete");
        }
    }
    s3.delete_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect("delete bucket");
}

#[tokio::test]
#[ignore = "needs Ceph RGW: run through scripts/test.sh"]
async fn rgw_objects_through_sift() {
    let (_front, s3, direct, bucket) = setup();
    create_bucket(&s3, &bucket).await;
    put(&s3, &bucket, "dir/a.csv", b"1,x\n2,y\n").await;
    assert_eq!(get(&direct, &bucket, "dir/a.csv").await, b"1,x\n2,y\n");
    put(&direct, &bucket, "dir/b.csv", b"written on rgw").await;
    assert_eq!(get(&s3, &bucket, "dir/b.csv").await, b"written on rgw");

    let listed = s3
        .list_objects_v2()
        .bucket(&bucket)
        .prefix("dir/")
        .delimiter("/")
        .send()
        .await
        .expect("list");
    let keys: Vec<_> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["dir/a.csv", "dir/b.csv"]);
    let head = s3
        .head_object()
        .bucket(&bucket)
        .key("dir/a.csv")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_length(), Some(8));

    // RGW's own error codes and statuses come through.
    let err = s3
        .get_object()
        .bucket(&bucket)
        .key("missing")
        .send()
        .await
        .expect_err("missing key");
    assert_eq!(status_and_code(&err), (404, "NoSuchKey".into()));
    let err = s3
        .list_objects_v2()
        .bucket("sift-no-such-bucket")
        .send()
        .await
        .expect_err("missing bucket");
    assert_eq!(status_and_code(&err), (404, "NoSuchBucket".into()));
    let err = s3
        .delete_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect_err("not empty");
    assert_eq!(status_and_code(&err), (409, "BucketNotEmpty".into()));

    // A multipart upload through Sift lands on RGW (checked by HEAD: reading it back is
    // what hangs on dbstore).
    multipart_put(
        &s3,
        &bucket,
        "big",
        &[vec![b'r'; 5 * 1024 * 1024], b"end".to_vec()],
    )
    .await;
    let head = direct
        .head_object()
        .bucket(&bucket)
        .key("big")
        .send()
        .await
        .expect("head on rgw");
    assert_eq!(head.content_length(), Some(5 * 1024 * 1024 + 3));

    empty_and_delete(&s3, &bucket).await;
}

#[tokio::test]
#[ignore = "needs Ceph RGW: run through scripts/test.sh"]
async fn rgw_select_by_sift_matches_rgw_select() {
    let (_front, s3, direct, bucket) = setup();
    create_bucket(&direct, &bucket).await;
    let mut data = String::new();
    for i in 0..50_000 {
        data.push_str(&format!("{i},{},name-{i}\n", ["x", "y", "z"][i % 3]));
    }
    put(&direct, &bucket, "t.csv", data.as_bytes()).await;

    // Queries both dialects read the same way: Sift's answer (engine near the data, object
    // streamed from RGW) equals RGW's own S3 Select's.
    for sql in [
        "SELECT s._3 FROM S3Object s WHERE s._2 = 'y'",
        "SELECT count(*) FROM S3Object s WHERE s._2 <> 'x'",
        "SELECT s._1, s._3 FROM S3Object s WHERE CAST(s._1 AS INT) < 20",
    ] {
        let (sift, stats) = select_csv(&s3, &bucket, "t.csv", sql, csv(FileHeaderInfo::None), None)
            .await
            .unwrap_or_else(|e| panic!("{sql} via Sift: {e}"));
        let (theirs, _) = select_csv(
            &direct,
            &bucket,
            "t.csv",
            sql,
            csv(FileHeaderInfo::None),
            None,
        )
        .await
        .unwrap_or_else(|e| panic!("{sql} on RGW: {e}"));
        assert!(!sift.is_empty(), "{sql}");
        // Row for row: RGW leaves out the record delimiter after an aggregate's row, which
        // AWS (and Sift) write.
        let rows = |b: &[u8]| {
            String::from_utf8_lossy(b)
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(&sift), rows(&theirs), "{sql}");
        assert_eq!(stats.0, data.len() as i64, "{sql}: BytesScanned");
    }
    let err = select_csv(
        &s3,
        &bucket,
        "missing.csv",
        "SELECT * FROM S3Object",
        csv(FileHeaderInfo::None),
        None,
    )
    .await
    .expect_err("missing key");
    assert!(err.starts_with("404 NoSuchKey"), "{err}");

    empty_and_delete(&s3, &bucket).await;
}
