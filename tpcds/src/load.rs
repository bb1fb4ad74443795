//! `gen` and `load`: generating the parts of [`crate::layout`] into files or straight into S3.
//!
//! Generation is CPU-bound and synchronous (the `tpcdsgen` row generators), uploading is
//! asynchronous, so each part runs as a blocking generator thread that cuts its output into
//! chunks and hands them over a small bounded channel to an async uploader: one chunk is
//! being generated while the previous one is on the wire, and memory stays at a few chunks
//! per part in flight, whatever the part size. Nothing is staged on disk.
//!
//! A part becomes visible atomically (PutObject, or CompleteMultipartUpload; a file is
//! renamed into place), so a part that exists is complete, and a re-run skips it.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use bytes::Bytes;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use tokio::sync::{mpsc, Semaphore};

use crate::data;
use crate::error::{Error, Result};
use crate::layout::{Format, Part};
use crate::parquet::{write_parquet, ROW_GROUP_ROWS};
use crate::s3::table_prefix;
use crate::schema::table_schema;

/// Size of one multipart-upload part (S3's minimum is 5 MiB for all but the last).
const CHUNK: usize = 16 << 20;

/// What a load or gen did.
#[derive(Debug, Default, Clone, Copy)]
pub struct LoadSummary {
    pub parts_written: usize,
    pub parts_skipped: usize,
    pub bytes_written: u64,
}

/// One progress bar per table, sized by the parts still to write.
fn table_bars(parts: &[Part], progress: &MultiProgress) -> HashMap<&'static str, ProgressBar> {
    let style = ProgressStyle::with_template(
        "{prefix:>22} {bar:30} {bytes:>10}/{total_bytes:<10} {binary_bytes_per_sec:>12} {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    let mut totals: Vec<(&'static str, u64)> = Vec::new();
    for part in parts {
        match totals.iter_mut().find(|(t, _)| *t == part.table) {
            Some((_, total)) => *total += part.estimated_bytes,
            None => totals.push((part.table, part.estimated_bytes)),
        }
    }
    totals
        .into_iter()
        .map(|(table, total)| {
            let bar = progress.add(ProgressBar::new(total));
            bar.set_style(style.clone());
            bar.set_prefix(table);
            (table, bar)
        })
        .collect()
}

/// Generates `parts` into `dir/<table>/part-NNNNN.dat` (or `.parquet`), `jobs` parts at a
/// time.
pub fn generate_files(
    parts: Vec<Part>,
    scale: f64,
    dir: &Path,
    format: Format,
    jobs: usize,
    progress: &MultiProgress,
) -> Result<LoadSummary> {
    let mut summary = LoadSummary::default();
    let mut todo = Vec::new();
    for part in parts {
        if dir.join(part.table).join(part.file_name(format)).exists() {
            summary.parts_skipped += 1;
        } else {
            todo.push(part);
        }
    }
    let bars = table_bars(&todo, progress);
    let queue = std::sync::Mutex::new(todo.into_iter());
    let results: Vec<Result<(usize, u64)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let (mut parts, mut bytes) = (0, 0);
                    loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some(part) = next else { break };
                        let bar = &bars[part.table];
                        bytes += write_part_file(&part, scale, dir, format, bar)?;
                        parts += 1;
                    }
                    Ok((parts, bytes))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Error::Invalid("generator thread panicked".into())))
            })
            .collect()
    });
    for bar in bars.values() {
        bar.finish();
    }
    for result in results {
        let (parts, bytes) = result?;
        summary.parts_written += parts;
        summary.bytes_written += bytes;
    }
    Ok(summary)
}

fn write_part_file(
    part: &Part,
    scale: f64,
    dir: &Path,
    format: Format,
    bar: &ProgressBar,
) -> Result<u64> {
    let folder = dir.join(part.table);
    fs::create_dir_all(&folder)?;
    let name = part.file_name(format);
    let path = folder.join(&name);
    let tmp = folder.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let file = fs::File::create(&tmp)?;
        let mut out = ProgressWriter {
            inner: io::BufWriter::with_capacity(1 << 20, &file),
            bar,
            written: 0,
        };
        write_part(part, scale, format, &mut out)?;
        out.flush()?;
        let written = out.written;
        drop(out);
        file.sync_all()?;
        fs::rename(&tmp, &path)?;
        Ok(written)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes one part's rows to `out` in `format`. A Parquet part is generated as text first
/// (in memory: one part, ~128 MiB at most) and converted, as a loader reading dsdgen's
/// output would.
fn write_part<W: Write + Send>(
    part: &Part,
    scale: f64,
    format: Format,
    mut out: W,
) -> io::Result<()> {
    match format {
        Format::Csv => {
            data::write_rows(part.table, scale, part.rows.clone(), &mut out)?;
            Ok(())
        }
        Format::CsvGzip => {
            // gzip's own default level, as `gzip` compresses.
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::new(6));
            data::write_rows(part.table, scale, part.rows.clone(), &mut gz)?;
            gz.finish()?;
            Ok(())
        }
        Format::Parquet => {
            let schema = table_schema(part.table).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("no schema for {}", part.table),
                )
            })?;
            let mut text = Vec::with_capacity(part.estimated_bytes as usize);
            data::write_rows(part.table, scale, part.rows.clone(), &mut text)?;
            write_parquet(schema, &text[..], out, ROW_GROUP_ROWS)?;
            Ok(())
        }
    }
}

struct ProgressWriter<'a, W> {
    inner: W,
    bar: &'a ProgressBar,
    written: u64,
}

impl<W: Write> Write for ProgressWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        self.bar.inc(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Which data set a load writes: its scale factor and its files' format.
#[derive(Debug, Clone, Copy)]
pub struct Dataset {
    pub scale: f64,
    pub format: Format,
}

/// Generates `parts` straight into `bucket` under `prefix`, `jobs` parts at a time.
pub async fn upload(
    client: &Client,
    bucket: &str,
    prefix: &str,
    dataset: Dataset,
    parts: Vec<Part>,
    jobs: usize,
    progress: &MultiProgress,
) -> Result<LoadSummary> {
    let Dataset { scale, format } = dataset;
    ensure_bucket(client, bucket).await?;
    let mut summary = LoadSummary::default();
    let mut existing: HashMap<&'static str, Vec<String>> = HashMap::new();
    for part in &parts {
        if !existing.contains_key(part.table) {
            let keys = list_keys(client, bucket, &table_prefix(prefix, scale, part.table)).await?;
            existing.insert(part.table, keys.into_iter().map(|(k, _)| k).collect());
        }
    }
    let todo: Vec<Part> = parts
        .into_iter()
        .filter(|part| {
            let key = format!(
                "{}{}",
                table_prefix(prefix, scale, part.table),
                part.file_name(format)
            );
            let done = existing[part.table].contains(&key);
            summary.parts_skipped += usize::from(done);
            !done
        })
        .collect();
    let bars = Arc::new(table_bars(&todo, progress));
    let permits = Arc::new(Semaphore::new(jobs.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for part in todo {
        let permit = Arc::clone(&permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Invalid("upload queue closed".into()))?;
        let client = client.clone();
        let bucket = bucket.to_string();
        let key = format!(
            "{}{}",
            table_prefix(prefix, scale, part.table),
            part.file_name(format)
        );
        let bars = Arc::clone(&bars);
        tasks.spawn(async move {
            let bar = &bars[part.table];
            let result = upload_part(&client, &bucket, &key, scale, format, &part, bar).await;
            drop(permit);
            result
        });
        // Surface a failure early instead of generating the rest of the data set first.
        while let Some(done) = tasks.try_join_next() {
            summary.bytes_written += joined(done)?;
            summary.parts_written += 1;
        }
    }
    while let Some(done) = tasks.join_next().await {
        summary.bytes_written += joined(done)?;
        summary.parts_written += 1;
    }
    for bar in bars.values() {
        bar.finish();
    }
    Ok(summary)
}

fn joined(done: Result<Result<u64>, tokio::task::JoinError>) -> Result<u64> {
    done.map_err(|e| Error::Invalid(format!("upload task failed: {e}")))?
}

async fn ensure_bucket(client: &Client, bucket: &str) -> Result<()> {
    if client.head_bucket().bucket(bucket).send().await.is_ok() {
        return Ok(());
    }
    match client.create_bucket().bucket(bucket).send().await {
        Ok(_) => Ok(()),
        Err(e) => {
            let owned = e
                .as_service_error()
                .is_some_and(|s| s.is_bucket_already_owned_by_you());
            if owned {
                Ok(())
            } else {
                Err(Error::s3("CreateBucket", bucket, e))
            }
        }
    }
}

/// Every key (and size) under `prefix`.
pub async fn list_keys(client: &Client, bucket: &str, prefix: &str) -> Result<Vec<(String, u64)>> {
    let mut keys = Vec::new();
    let mut pages = client
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| Error::s3("ListObjectsV2", format!("{bucket}/{prefix}"), e))?;
        for object in page.contents() {
            if let Some(key) = object.key() {
                keys.push((key.to_string(), object.size().unwrap_or(0).max(0) as u64));
            }
        }
    }
    Ok(keys)
}

/// Cuts the generator's output into [`CHUNK`]-sized pieces for the uploader.
struct ChunkSender {
    buf: Vec<u8>,
    /// `Some(chunk)`, then one `None` once the part is complete. A channel that closes
    /// without the `None` means the generator failed: the upload must not be completed.
    tx: mpsc::Sender<Option<Bytes>>,
}

impl Write for ChunkSender {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK {
            self.flush_chunk()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ChunkSender {
    fn flush_chunk(&mut self) -> io::Result<()> {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        self.tx
            .blocking_send(Some(Bytes::from(chunk)))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "uploader stopped"))
    }

    fn finish(mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.flush_chunk()?;
        }
        self.tx
            .blocking_send(None)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "uploader stopped"))
    }
}

/// The next chunk of a part, `None` at its end, or an error if the generator stopped early.
async fn next_chunk(rx: &mut mpsc::Receiver<Option<Bytes>>, key: &str) -> Result<Option<Bytes>> {
    rx.recv()
        .await
        .ok_or_else(|| Error::Invalid(format!("generating {key} stopped before the end")))
}

async fn upload_part(
    client: &Client,
    bucket: &str,
    key: &str,
    scale: f64,
    format: Format,
    part: &Part,
    bar: &ProgressBar,
) -> Result<u64> {
    let (tx, mut rx) = mpsc::channel::<Option<Bytes>>(2);
    let part_to_write = part.clone();
    let generator = tokio::task::spawn_blocking(move || -> io::Result<()> {
        let mut out = ChunkSender {
            buf: Vec::with_capacity(CHUNK),
            tx,
        };
        write_part(&part_to_write, scale, format, &mut out)?;
        out.finish()
    });
    let uploaded = async {
        let Some(first) = next_chunk(&mut rx, key).await? else {
            // An empty part (a table with no rows in this range) is still an object, so
            // that a re-run sees the part as done.
            return put_whole(client, bucket, key, Bytes::new(), bar).await;
        };
        let Some(second) = next_chunk(&mut rx, key).await? else {
            return put_whole(client, bucket, key, first, bar).await;
        };
        multipart(client, bucket, key, [first, second], &mut rx, bar).await
    }
    .await;
    // Dropping the receiver unblocks a generator whose upload failed.
    drop(rx);
    let generated = generator
        .await
        .map_err(|e| Error::Invalid(format!("generator for {key} failed: {e}")))?;
    // The generator's own error explains an early end better than the uploader's.
    match (generated, uploaded) {
        (Err(e), _) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(Error::Invalid(format!("generating {key}: {e}")))
        }
        (_, uploaded) => uploaded,
    }
}

/// A part small enough for one PutObject.
async fn put_whole(
    client: &Client,
    bucket: &str,
    key: &str,
    body: Bytes,
    bar: &ProgressBar,
) -> Result<u64> {
    let len = body.len() as u64;
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body))
        .send()
        .await
        .map_err(|e| Error::s3("PutObject", key, e))?;
    bar.inc(len);
    Ok(len)
}

async fn multipart(
    client: &Client,
    bucket: &str,
    key: &str,
    first: [Bytes; 2],
    rx: &mut mpsc::Receiver<Option<Bytes>>,
    bar: &ProgressBar,
) -> Result<u64> {
    let created = client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .map_err(|e| Error::s3("CreateMultipartUpload", key, e))?;
    let upload_id = created
        .upload_id()
        .ok_or_else(|| Error::Invalid(format!("CreateMultipartUpload {key}: no UploadId")))?
        .to_string();
    let result = async {
        let mut completed = Vec::new();
        let mut total = 0u64;
        let mut pending = first.into_iter().collect::<std::collections::VecDeque<_>>();
        let mut number = 0;
        loop {
            let chunk = match pending.pop_front() {
                Some(chunk) => chunk,
                None => match next_chunk(rx, key).await? {
                    Some(chunk) => chunk,
                    None => break,
                },
            };
            number += 1;
            let len = chunk.len() as u64;
            let part = client
                .upload_part()
                .bucket(bucket)
                .key(key)
                .upload_id(&upload_id)
                .part_number(number)
                .body(ByteStream::from(chunk))
                .send()
                .await
                .map_err(|e| Error::s3("UploadPart", key, e))?;
            completed.push(
                CompletedPart::builder()
                    .part_number(number)
                    .set_e_tag(part.e_tag().map(str::to_string))
                    .build(),
            );
            total += len;
            bar.inc(len);
        }
        client
            .complete_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(&upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(completed))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| Error::s3("CompleteMultipartUpload", key, e))?;
        Ok(total)
    }
    .await;
    if result.is_err() {
        let _ = client
            .abort_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(&upload_id)
            .send()
            .await;
    }
    result
}
