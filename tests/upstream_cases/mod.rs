//! The upstream-mode checks that hold for any S3 store behind Sift: `tests/upstream.rs` runs
//! them against a second Sift gateway (local mode), `tests/seaweedfs.rs` against a real
//! SeaweedFS. Each takes Sift in front of the store, the store's address and keys, and a
//! bucket name of its own (on a store that outlives the test, names must not repeat).
#![allow(dead_code)] // each test binary uses a different part of it

use std::io::Write;

use aws_sdk_s3::types::{CompressionType, CsvInput, FileHeaderInfo, InputSerialization, ScanRange};
use aws_sdk_s3::Client;

use crate::common::{
    client_for, create_bucket, csv, get, multipart_put, put, select_csv as select, status_and_code,
    Gateway,
};

/// The S3 store behind Sift.
pub struct Store {
    pub endpoint: String,
    pub access: String,
    pub secret: String,
    /// Whether the store answers SelectObjectContent itself (a Sift gateway does, SeaweedFS
    /// does not): then Sift's answers are also compared with the store's own.
    pub selects: bool,
}

impl Store {
    /// A client of the store itself, signing with the store's keys.
    pub fn client(&self) -> Client {
        client_for(&self.endpoint, &self.access, &self.secret)
    }

    /// Sift in upstream mode in front of this store.
    pub fn front(&self, extra: &[&str]) -> Gateway {
        Gateway::start_upstream(&self.endpoint, &self.access, &self.secret, extra)
    }
}

/// Object calls through Sift reach the store and come back as the store answers them:
/// PUT, GET (whole and ranged), list, copy, multipart, and the store's own errors.
pub async fn every_call_goes_through(front: &Gateway, store: &Store, bucket: &str) {
    let s3 = front.client();
    let direct = store.client();

    create_bucket(&s3, bucket).await;
    put(&s3, bucket, "dir/a.csv", b"1,x\n2,y\n").await;
    // What Sift stored is on the upstream store, byte for byte.
    assert_eq!(get(&direct, bucket, "dir/a.csv").await, b"1,x\n2,y\n");
    put(&direct, bucket, "dir/b.csv", b"written upstream").await;
    assert_eq!(get(&s3, bucket, "dir/b.csv").await, b"written upstream");

    let ranged = s3
        .get_object()
        .bucket(bucket)
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
        .bucket(bucket)
        .prefix("dir/")
        .send()
        .await
        .expect("list");
    let keys: Vec<_> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["dir/a.csv", "dir/b.csv"]);
    let head = s3
        .head_object()
        .bucket(bucket)
        .key("dir/a.csv")
        .send()
        .await
        .expect("head");
    assert_eq!(head.content_length(), Some(8));

    s3.copy_object()
        .bucket(bucket)
        .key("copy.csv")
        .copy_source(format!("{bucket}/dir/a.csv"))
        .send()
        .await
        .expect("copy");
    assert_eq!(get(&direct, bucket, "copy.csv").await, b"1,x\n2,y\n");

    // Multipart through the proxy: bodies stream, ETags are the upstream's.
    let part1 = vec![b'z'; 5 * 1024 * 1024];
    let etag = multipart_put(&s3, bucket, "big", &[part1.clone(), b"end".to_vec()]).await;
    assert!(etag.ends_with("-2\""), "{etag}");
    let head = direct
        .head_object()
        .bucket(bucket)
        .key("big")
        .send()
        .await
        .expect("head upstream");
    assert_eq!(head.content_length(), Some(part1.len() as i64 + 3));
    let tail = s3
        .get_object()
        .bucket(bucket)
        .key("big")
        .range("bytes=5242879-")
        .send()
        .await
        .expect("ranged get across the parts")
        .body
        .collect()
        .await
        .expect("body")
        .into_bytes();
    assert_eq!(&tail[..], b"zend");

    // The upstream's errors keep their status and code.
    let err = s3
        .get_object()
        .bucket(bucket)
        .key("missing")
        .send()
        .await
        .expect_err("no such key");
    assert_eq!(status_and_code(&err), (404, "NoSuchKey".into()));
    let err = s3
        .get_object()
        .bucket(format!("{bucket}-missing"))
        .key("k")
        .send()
        .await
        .expect_err("no such bucket");
    assert_eq!(status_and_code(&err), (404, "NoSuchBucket".into()));
    // A PUT does not make a bucket that is not there (SeaweedFS would, unless told not to).
    let err = s3
        .put_object()
        .bucket(format!("{bucket}-missing"))
        .key("k")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"data"))
        .send()
        .await
        .expect_err("put into no such bucket");
    assert_eq!(status_and_code(&err), (404, "NoSuchBucket".into()));
    let err = s3
        .delete_bucket()
        .bucket(bucket)
        .send()
        .await
        .expect_err("not empty");
    assert_eq!(status_and_code(&err), (409, "BucketNotEmpty".into()));
    // Sift's own users sign requests to Sift: the upstream's keys are not Sift's.
    let err = front
        .client_with(&store.access, &store.secret)
        .list_buckets()
        .send()
        .await
        .expect_err("upstream keys are not Sift users");
    assert_eq!(status_and_code(&err).0, 403);
}

/// A select through Sift: the object is read from the store (plain, gzip, and by ScanRange
/// with a ranged GET), and the store's errors and the engine's come back before the stream.
pub async fn select_reads_the_object_from_upstream(front: &Gateway, store: &Store, bucket: &str) {
    let s3 = front.client();
    let direct = store.client();
    create_bucket(&direct, bucket).await;
    let mut data = String::from("id,name\n");
    for i in 0..20_000 {
        data.push_str(&format!("{i},name-{i}\n"));
    }
    put(&direct, bucket, "t.csv", data.as_bytes()).await;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data.as_bytes()).expect("gzip");
    put(&direct, bucket, "t.csv.gz", &gz.finish().expect("gzip")).await;

    let sql = "SELECT s.name FROM S3Object s WHERE CAST(s.id AS INT) % 5000 = 0";
    let want = b"name-0\nname-5000\nname-10000\nname-15000\n".to_vec();
    let (through, stats) = select(&s3, bucket, "t.csv", sql, csv(FileHeaderInfo::Use), None)
        .await
        .expect("select via upstream");
    assert_eq!(through, want);
    assert_eq!(stats.0, data.len() as i64);
    if store.selects {
        // The same answer from Sift in front of the store as from the store itself.
        let (local, local_stats) = select(
            &direct,
            bucket,
            "t.csv",
            sql,
            csv(FileHeaderInfo::Use),
            None,
        )
        .await
        .expect("select on the store");
        assert_eq!(local, want);
        assert_eq!(stats, local_stats);
    }

    let gzip = InputSerialization::builder()
        .csv(
            CsvInput::builder()
                .file_header_info(FileHeaderInfo::Use)
                .build(),
        )
        .compression_type(CompressionType::Gzip)
        .build();
    let (records, _) = select(&s3, bucket, "t.csv.gz", sql, gzip, None)
        .await
        .expect("gzip select via upstream");
    assert_eq!(records, want);

    // A ScanRange is read with a ranged GET: the records starting in [100, 200], and
    // BytesScanned counts only what was fetched (from the range's start to the end of the
    // last record, plus the header read from the start).
    let range = ScanRange::builder().start(100).end(200).build();
    let (through, stats) = select(
        &s3,
        bucket,
        "t.csv",
        "SELECT s._1 FROM S3Object s",
        csv(FileHeaderInfo::None),
        Some(range.clone()),
    )
    .await
    .expect("ranged select via upstream");
    let mut starts_in_range = String::new();
    let mut offset = 0;
    for line in data.split_inclusive('\n') {
        if (100..=200).contains(&offset) {
            let first = line.split(',').next().unwrap_or_default();
            starts_in_range.push_str(first);
            starts_in_range.push('\n');
        }
        offset += line.len();
    }
    assert!(!through.is_empty());
    assert_eq!(String::from_utf8_lossy(&through), starts_in_range);
    assert!(stats.0 < 1024 * 1024, "scanned {} bytes", stats.0);
    if store.selects {
        let (local, _) = select(
            &direct,
            bucket,
            "t.csv",
            "SELECT s._1 FROM S3Object s",
            csv(FileHeaderInfo::None),
            Some(range),
        )
        .await
        .expect("ranged select on the store");
        assert_eq!(through, local);
    }

    // Errors before the stream: the upstream's NoSuchKey, and the engine's SQL errors.
    let err = select(
        &s3,
        bucket,
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
        &format!("{bucket}-missing"),
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
        bucket,
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

/// A Parquet select through Sift reads the footer and the one needed column chunk with
/// ranged GETs: a small part of the object.
pub async fn parquet_select_fetches_only_the_column_chunks_it_needs(
    front: &Gateway,
    store: &Store,
    bucket: &str,
) {
    let s3 = front.client();
    let direct = store.client();
    create_bucket(&direct, bucket).await;
    let data = parquet_file();
    put(&direct, bucket, "t.parquet", &data).await;
    let parquet = || {
        InputSerialization::builder()
            .parquet(aws_sdk_s3::types::ParquetInput::builder().build())
            .build()
    };
    let sql = "SELECT s.id FROM S3Object s WHERE s.id BETWEEN 12000 AND 12002";
    let (through, stats) = select(&s3, bucket, "t.parquet", sql, parquet(), None)
        .await
        .expect("parquet select via upstream");
    assert_eq!(through, b"12000\n12001\n12002\n");
    // Ranged GETs for the footer and one row group's `id` chunk, a small part of the object.
    assert!(
        stats.0 * 20 < data.len() as i64,
        "scanned {} of {}",
        stats.0,
        data.len()
    );
    if store.selects {
        // The same bytes the store reads from its own disk.
        let (local, local_stats) = select(&direct, bucket, "t.parquet", sql, parquet(), None)
            .await
            .expect("parquet select on the store");
        assert_eq!(local, through);
        assert_eq!(stats, local_stats);
    }
}

/// Deletes every object of `bucket` (listing page by page) and then the bucket.
pub async fn empty_and_delete(s3: &Client, bucket: &str) {
    loop {
        let listed = s3
            .list_objects_v2()
            .bucket(bucket)
            .send()
            .await
            .expect("list for cleanup");
        let keys: Vec<String> = listed
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_string))
            .collect();
        if keys.is_empty() {
            break;
        }
        for k in keys {
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
