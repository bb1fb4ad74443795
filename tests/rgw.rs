//! Sift against a real Ceph RGW (18.2 on a one-OSD RADOS cluster, started by
//! `scripts/ceph-rgw.sh`): Sift in front of it, and the TPC-DS client straight at RGW's own
//! S3 Select. These tests are `#[ignore]`d: `scripts/test.sh` runs them with `--ignored` when
//! the script could start RGW, and reports them as skipped (with the script's reason) when it
//! could not — never as passed.

mod common;
mod upstream_cases;

use aws_sdk_s3::types::FileHeaderInfo;
use aws_sdk_s3::Client;
use common::{
    check, create_bucket, csv, get, multipart_put, put, select_csv, sift, status_and_code, Gateway,
};
use upstream_cases::{empty_and_delete, Store};

/// The RGW `scripts/test.sh` started, from the environment it exported.
fn rgw() -> Store {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run these tests through scripts/test.sh, which starts RGW")
        })
    };
    Store {
        endpoint: var("SIFT_RGW_ENDPOINT"),
        access: var("SIFT_RGW_ACCESS_KEY"),
        secret: var("SIFT_RGW_SECRET_KEY"),
        selects: true,
    }
}

/// Sift in front of RGW, a client of Sift, a client of RGW, and a bucket name of this run.
fn setup() -> (Gateway, Client, Client, String) {
    let rgw = rgw();
    let front = rgw.front(&[]);
    let s3 = front.client();
    (front, s3, rgw.client(), bucket_name())
}

/// A bucket name of this run.
fn bucket_name() -> String {
    format!(
        "sift-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
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

    // A multipart upload through Sift lands on RGW, and reads back whole and by range.
    let parts = [vec![b'r'; 5 * 1024 * 1024], b"end".to_vec()];
    multipart_put(&s3, &bucket, "big", &parts).await;
    assert_eq!(get(&direct, &bucket, "big").await, parts.concat());
    let tail = s3
        .get_object()
        .bucket(&bucket)
        .key("big")
        .range("bytes=5242879-")
        .send()
        .await
        .expect("ranged get")
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes();
    assert_eq!(&tail[..], b"rend");

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

/// The benchmark's storage side as the benchmark ran it: the TPC-DS client straight at
/// RGW's own S3 Select. SF 0.01 is loaded into RGW by `sift tpcds load` (multipart parts),
/// and the 72 `ceph72` queries run fetched, pushed down and with run-time filters; the run
/// fails if a pushed-down mode's rows differ from fetch mode's.
#[tokio::test]
#[ignore = "needs Ceph RGW: run through scripts/test.sh"]
async fn tpcds_pushdown_to_rgw_select_returns_fetch_rows() {
    let rgw = rgw();
    let direct = rgw.client();
    let bucket = bucket_name();
    let endpoint = [
        "--endpoint",
        &rgw.endpoint,
        "--bucket",
        &bucket,
        "--access-key",
        &rgw.access,
        "--secret-key",
        &rgw.secret,
        "--region",
        "us-east-1",
    ];
    let mut load = vec!["tpcds", "load", "--sf", "0.01"];
    load.extend(endpoint);
    check(&sift(&load), "load into RGW");

    let out = common::temp_dir("sift-rgw-tpcds");
    let out_arg = out.display().to_string();
    let mut run = vec![
        "tpcds",
        "run",
        "--sf",
        "0.01",
        "--mode",
        "all",
        "--queries",
        "ceph72",
        "--out",
        &out_arg,
    ];
    run.extend(endpoint);
    let output = sift(&run);
    check(&output, "run against RGW");

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    // RGW 18.2 does not answer a ScanRange with the records that start in it, reads an
    // empty field as NULL, and reads at most 4 KiB of a request: the client finds all three
    // out, selects each part whole, asks IS NULL as RGW reads it, takes its `null` for NULL
    // and keeps its expressions short enough.
    let behaviour = &summary["select_behaviour"];
    assert_eq!(behaviour["scan_ranges"], false, "{summary}");
    assert_eq!(behaviour["empty_is_null"], true, "{summary}");
    let max = behaviour["max_expression_bytes"].as_u64().unwrap_or(0);
    assert!((2048..4096).contains(&max), "{summary}");
    // RGW ignores the request for Arrow answers and says nothing of it: the client reads CSV
    // there, and refuses to run when told to insist on Arrow.
    assert_eq!(behaviour["arrow_results"], false, "{summary}");
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("pushed-down scans select each part whole"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for mode in ["fetch", "pushdown", "dynamic"] {
        let files = std::fs::read_dir(out.join("rows").join(mode))
            .expect("rows")
            .count();
        assert_eq!(
            files, 74,
            "{mode}: 72 queries, two of them with two statements"
        );
    }
    let c = &summary["against_fetch"]["pushdown"];
    assert!(c["bytes_reduction"].as_f64().unwrap() > 0.5, "{summary}");
    let mut insist = run.clone();
    insist.extend(["--result-format", "arrow"]);
    let refused = sift(&insist);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--result-format arrow")
            && stderr.contains("does not answer selects in Arrow"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&out).ok();
    empty_and_delete(&direct, &bucket).await;
}

/// `scripts/rgw-crash.sh`'s request — a select whose IN list has 256 values, which ends
/// radosgw 18.2.7 — sent to Sift in front of RGW: Sift runs the select itself on the object it
/// streams from RGW, answers it, and RGW never sees the expression.
#[test]
#[ignore = "needs Ceph RGW: run through scripts/test.sh"]
fn sift_in_front_of_rgw_answers_the_select_that_ends_radosgw() {
    let rgw = rgw();
    let front = rgw.front(&[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/rgw-crash.sh");
    let output = std::process::Command::new(script)
        .args([
            "--endpoint",
            &front.endpoint(),
            "--access-key",
            common::ACCESS,
            "--secret-key",
            common::SECRET,
        ])
        .output()
        .expect("the script runs");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && said.starts_with("survived") && said.contains("HTTP 200"),
        "{said}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // RGW itself is still up: the object the script wrote through Sift reads back from it.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let direct = rgw.client();
    let body = rt.block_on(get(&direct, "sift-crash", "crash.csv"));
    assert_eq!(body, b"1|a|\n2|b|\n3|c|\n");
}
