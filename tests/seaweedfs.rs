//! Sift in upstream mode in front of a real SeaweedFS S3 server (started by
//! `scripts/seaweedfs.sh`): the upstream checks of `tests/upstream.rs` that hold for any store,
//! and TPC-DS `ceph72` in every mode with the tables on SeaweedFS, whose rows must equal a run
//! against Sift's own store. SeaweedFS has no S3 Select: Sift runs every select, reading the
//! objects from SeaweedFS with (ranged) GETs.
//!
//! These tests are `#[ignore]`d: `scripts/test.sh` runs them with `--ignored` when the script
//! could start SeaweedFS, and reports them as skipped (with the script's reason) when it could
//! not — never as passed.

mod common;
mod upstream_cases;

use std::path::Path;

use common::{check, sift, sorted_rows, temp_dir, Gateway, ACCESS, SECRET};
use upstream_cases::{empty_and_delete, Store};

/// The SeaweedFS the script started, from its env file's variables.
fn seaweedfs() -> Store {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!(
                "{name} is not set: run these tests through scripts/test.sh, which starts SeaweedFS"
            )
        })
    };
    Store {
        endpoint: var("SIFT_SEAWEEDFS_ENDPOINT"),
        access: var("SIFT_SEAWEEDFS_ACCESS_KEY"),
        secret: var("SIFT_SEAWEEDFS_SECRET_KEY"),
        selects: false,
    }
}

/// A bucket name of this run: SeaweedFS keeps its buckets from one run to the next.
fn bucket_name(what: &str) -> String {
    format!(
        "sift-{what}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

#[tokio::test]
#[ignore = "needs SeaweedFS: run through scripts/test.sh"]
async fn seaweedfs_every_call_goes_through() {
    let store = seaweedfs();
    let front = store.front(&[]);
    let bucket = bucket_name("through");
    upstream_cases::every_call_goes_through(&front, &store, &bucket).await;
    empty_and_delete(&store.client(), &bucket).await;
}

#[tokio::test]
#[ignore = "needs SeaweedFS: run through scripts/test.sh"]
async fn seaweedfs_select_reads_the_object_from_upstream() {
    let store = seaweedfs();
    let front = store.front(&[]);
    let bucket = bucket_name("sel");
    upstream_cases::select_reads_the_object_from_upstream(&front, &store, &bucket).await;
    empty_and_delete(&store.client(), &bucket).await;
}

#[tokio::test]
#[ignore = "needs SeaweedFS: run through scripts/test.sh"]
async fn seaweedfs_parquet_select_fetches_only_the_column_chunks_it_needs() {
    let store = seaweedfs();
    let front = store.front(&[]);
    let bucket = bucket_name("pqt");
    upstream_cases::parquet_select_fetches_only_the_column_chunks_it_needs(&front, &store, &bucket)
        .await;
    empty_and_delete(&store.client(), &bucket).await;
}

/// `sift tpcds load` and `run` at SF 0.01 through the Sift gateway at `endpoint` into
/// `bucket`: `ceph72` in fetch, pushdown and dynamic mode (the run fails if a pushed-down
/// mode's rows differ from fetch mode's). The run's output directory.
fn load_and_run(endpoint: &str, bucket: &str, what: &str) -> std::path::PathBuf {
    let target = [
        "--endpoint",
        endpoint,
        "--bucket",
        bucket,
        "--access-key",
        ACCESS,
        "--secret-key",
        SECRET,
        "--region",
        "us-east-1",
    ];
    let mut load = vec!["tpcds", "load", "--sf", "0.01"];
    load.extend(target);
    check(&sift(&load), &format!("load into {what}"));

    let out = temp_dir(&format!("sift-seaweedfs-tpcds-{what}"));
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
    run.extend(target);
    check(&sift(&run), &format!("run against {what}"));
    out
}

/// TPC-DS with the tables on SeaweedFS behind Sift gives, in every mode, the rows of the same
/// run with the tables in Sift's own store. The load goes through Sift too (multipart
/// uploads proxied to SeaweedFS).
#[tokio::test]
#[ignore = "needs SeaweedFS: run through scripts/test.sh"]
async fn tpcds_through_sift_on_seaweedfs_gives_the_local_store_rows() {
    let store = seaweedfs();
    let front = store.front(&[]);
    let bucket = bucket_name("tpcds");
    let local = Gateway::start(&[]);

    let (on_seaweedfs, on_local) = std::thread::scope(|s| {
        let remote = s.spawn(|| load_and_run(&front.endpoint(), &bucket, "SeaweedFS"));
        let own = load_and_run(&local.endpoint(), "bench", "the local store");
        (remote.join().expect("the SeaweedFS run"), own)
    });

    for mode in ["fetch", "pushdown", "dynamic"] {
        let rows = |out: &Path| sorted_rows(&out.join("rows").join(mode));
        let theirs = rows(&on_seaweedfs);
        assert_eq!(
            theirs.len(),
            74,
            "{mode}: 72 queries, two of them with two statements"
        );
        assert_eq!(theirs, rows(&on_local), "{mode}");
    }
    for out in [on_seaweedfs, on_local] {
        std::fs::remove_dir_all(out).ok();
    }
    empty_and_delete(&store.client(), &bucket).await;
}
