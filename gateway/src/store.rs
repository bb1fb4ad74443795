//! The local backend: buckets and objects in a directory, served through s3s's `S3` trait.
//!
//! Layout under the data directory:
//!
//! ```text
//! .tmp/                               uploads in progress, buckets being created or deleted
//! buckets/<bucket>/bucket.json        owner and creation time
//! buckets/<bucket>/meta/<h>.json      one object's key, size, ETag, type, user metadata and data file
//! buckets/<bucket>/data/<h>-<n>       the object's bytes, written once and never modified
//! ```
//!
//! `<h>` is the SHA-256 of the key in hex, so no key — whatever its dots, slashes or length
//! (up to S3's 1024 bytes, beyond a file name's 255) — becomes a path of its own, and the
//! metadata lives beside the namespace rather than in it. A PUT writes a fresh data file,
//! fsyncs it, then renames the new metadata over the old: the rename is the commit, readers
//! see the old object or the new one, and a data file that a select has mapped is never
//! changed under it (only unlinked, which leaves the mapping intact).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::StreamExt;
use md5::{Digest, Md5};
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use crate::select::SelectService;

/// Failures of the local store, each mapped to the S3 error a client expects.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("The specified bucket does not exist")]
    NoSuchBucket,
    #[error("The specified key does not exist.")]
    NoSuchKey,
    #[error("The requested bucket name is not available")]
    BucketAlreadyExists,
    #[error("The bucket you tried to delete is not empty")]
    BucketNotEmpty,
    #[error("The specified bucket is not valid: {0}")]
    InvalidBucketName(String),
    #[error("Your key is too long (at most 1024 bytes)")]
    KeyTooLong,
    #[error("The Content-MD5 you specified did not match what we received.")]
    BadDigest,
    #[error("The Content-MD5 you specified is not valid.")]
    InvalidDigest,
    #[error("The requested range is not satisfiable")]
    InvalidRange,
    #[error("object metadata is corrupt: {0}")]
    CorruptMetadata(#[from] serde_json::Error),
    #[error("storage I/O error: {0}")]
    Io(#[from] io::Error),
}

impl From<StoreError> for S3Error {
    fn from(e: StoreError) -> S3Error {
        let code = match &e {
            StoreError::NoSuchBucket => S3ErrorCode::NoSuchBucket,
            StoreError::NoSuchKey => S3ErrorCode::NoSuchKey,
            StoreError::BucketAlreadyExists => S3ErrorCode::BucketAlreadyExists,
            StoreError::BucketNotEmpty => S3ErrorCode::BucketNotEmpty,
            StoreError::InvalidBucketName(_) => S3ErrorCode::InvalidBucketName,
            StoreError::KeyTooLong => S3ErrorCode::KeyTooLongError,
            StoreError::BadDigest => S3ErrorCode::BadDigest,
            StoreError::InvalidDigest => S3ErrorCode::InvalidDigest,
            StoreError::InvalidRange => S3ErrorCode::InvalidRange,
            StoreError::CorruptMetadata(_) | StoreError::Io(_) => {
                return S3Error::internal_error(e);
            }
        };
        S3Error::with_message(code, e.to_string())
    }
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Serialize, Deserialize)]
struct BucketMeta {
    owner: String,
    created_unix_ms: u64,
}

/// What the sidecar file records about one object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectMeta {
    pub key: String,
    pub size: u64,
    /// Hex MD5 of the content, without quotes.
    pub etag: String,
    pub content_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub modified_unix_ms: u64,
    /// File name under the bucket's `data/` directory.
    data: String,
}

impl ObjectMeta {
    fn last_modified(&self) -> Timestamp {
        Timestamp::from(UNIX_EPOCH + Duration::from_millis(self.modified_unix_ms))
    }
    fn e_tag(&self) -> ETag {
        ETag::Strong(self.etag.clone())
    }
}

/// The directory-backed store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LocalStore {
    inner: Arc<StoreInner>,
}

#[derive(Debug)]
struct StoreInner {
    root: PathBuf,
    counter: AtomicU64,
    /// Serialises metadata commits so that replacing an object removes exactly the data file
    /// it replaced (two racing PUTs of one key would otherwise leak one).
    commit: std::sync::Mutex<()>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn key_hash(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

/// S3's bucket naming rules (3–63 characters of lowercase letters, digits, dots and hyphens,
/// starting and ending with a letter or digit, not shaped like an IP address). They also
/// make every valid name a safe directory name.
pub fn validate_bucket_name(name: &str) -> Result<()> {
    let bad = |why: &str| Err(StoreError::InvalidBucketName(format!("{name:?}: {why}")));
    if !(3..=63).contains(&name.len()) {
        return bad("must be 3 to 63 characters long");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return bad("may only contain lowercase letters, digits, dots and hyphens");
    }
    let edge_ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    if !edge_ok(bytes[0]) || !edge_ok(bytes[bytes.len() - 1]) {
        return bad("must begin and end with a letter or digit");
    }
    if name.contains("..") {
        return bad("must not contain two adjacent dots");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return bad("must not be formatted as an IP address");
    }
    Ok(())
}

fn validate_key(key: &str) -> Result<()> {
    if key.len() > 1024 {
        return Err(StoreError::KeyTooLong);
    }
    Ok(())
}

fn not_found_as(e: io::Error, err: StoreError) -> StoreError {
    if e.kind() == io::ErrorKind::NotFound {
        err
    } else {
        StoreError::Io(e)
    }
}

/// Runs filesystem work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Io(io::Error::other(e)))?
}

/// What a writer knows about an object it is committing.
#[derive(Debug, Clone, Default)]
pub struct NewObject {
    pub size: u64,
    /// Hex MD5 of the content.
    pub etag: String,
    pub content_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

/// One page of a listing.
#[derive(Debug, Default)]
pub struct Listing {
    pub objects: Vec<ObjectMeta>,
    pub common_prefixes: Vec<String>,
    pub truncated: bool,
    /// The last key or common prefix returned: where the next page starts after.
    pub last: Option<String>,
}

impl LocalStore {
    /// Opens (creating if needed) a store rooted at `root`, and clears uploads that a
    /// previous run left unfinished.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().to_path_buf();
        fs::create_dir_all(root.join("buckets"))?;
        let tmp = root.join(".tmp");
        if tmp.exists() {
            fs::remove_dir_all(&tmp)?;
        }
        fs::create_dir_all(&tmp)?;
        Ok(LocalStore {
            inner: Arc::new(StoreInner {
                root,
                counter: AtomicU64::new(0),
                commit: std::sync::Mutex::new(()),
            }),
        })
    }

    fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.inner.root.join("buckets").join(bucket)
    }

    fn unique_name(&self) -> String {
        let n = self.inner.counter.fetch_add(1, Ordering::Relaxed);
        format!("{}-{}-{n}", std::process::id(), now_ms())
    }

    fn tmp_path(&self) -> PathBuf {
        self.inner.root.join(".tmp").join(self.unique_name())
    }

    fn check_bucket(&self, bucket: &str) -> Result<PathBuf> {
        validate_bucket_name(bucket).map_err(|_| StoreError::NoSuchBucket)?;
        let dir = self.bucket_dir(bucket);
        if dir.join("bucket.json").is_file() {
            Ok(dir)
        } else {
            Err(StoreError::NoSuchBucket)
        }
    }

    fn read_bucket_meta(&self, bucket: &str) -> Result<BucketMeta> {
        let dir = self.check_bucket(bucket)?;
        let text = fs::read(dir.join("bucket.json"))
            .map_err(|e| not_found_as(e, StoreError::NoSuchBucket))?;
        Ok(serde_json::from_slice(&text)?)
    }

    /// Creates `bucket` for `owner`. Re-creating one's own bucket succeeds, as in AWS's
    /// us-east-1; someone else's is `BucketAlreadyExists`.
    pub fn create_bucket(&self, bucket: &str, owner: &str) -> Result<()> {
        validate_bucket_name(bucket)?;
        let staging = self.tmp_path();
        fs::create_dir_all(staging.join("meta"))?;
        fs::create_dir_all(staging.join("data"))?;
        let meta = BucketMeta {
            owner: owner.to_string(),
            created_unix_ms: now_ms(),
        };
        fs::write(staging.join("bucket.json"), serde_json::to_vec(&meta)?)?;
        // rename(2) onto an existing non-empty directory fails, so two creators race safely.
        match fs::rename(&staging, self.bucket_dir(bucket)) {
            Ok(()) => Ok(()),
            Err(_) if self.bucket_dir(bucket).exists() => {
                let _ = fs::remove_dir_all(&staging);
                let existing = self.read_bucket_meta(bucket)?;
                if existing.owner == owner {
                    Ok(())
                } else {
                    Err(StoreError::BucketAlreadyExists)
                }
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&staging);
                Err(e.into())
            }
        }
    }

    pub fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.check_bucket(bucket).map(drop)
    }

    /// The buckets `owner` owns, sorted by name, with their creation times.
    pub fn list_buckets(&self, owner: &str) -> Result<Vec<(String, SystemTime)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(self.inner.root.join("buckets"))? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let Ok(meta) = self.read_bucket_meta(&name) else {
                continue;
            };
            if meta.owner == owner {
                out.push((
                    name,
                    UNIX_EPOCH + Duration::from_millis(meta.created_unix_ms),
                ));
            }
        }
        out.sort();
        Ok(out)
    }

    pub fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let dir = self.check_bucket(bucket)?;
        if fs::read_dir(dir.join("meta"))?.next().is_some() {
            return Err(StoreError::BucketNotEmpty);
        }
        // Move it out of the namespace first so that it disappears at once.
        let grave = self.tmp_path();
        fs::rename(&dir, &grave).map_err(|e| not_found_as(e, StoreError::NoSuchBucket))?;
        fs::remove_dir_all(&grave)?;
        Ok(())
    }

    /// The object's metadata.
    pub fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectMeta> {
        validate_key(key)?;
        let dir = self.check_bucket(bucket)?;
        let path = dir.join("meta").join(format!("{}.json", key_hash(key)));
        let text = fs::read(path).map_err(|e| not_found_as(e, StoreError::NoSuchKey))?;
        let meta: ObjectMeta = serde_json::from_slice(&text)?;
        if meta.key != key {
            // Only a SHA-256 collision could get here.
            return Err(StoreError::NoSuchKey);
        }
        Ok(meta)
    }

    /// The object's metadata and the path of its (immutable) data file.
    pub fn object_file(&self, bucket: &str, key: &str) -> Result<(ObjectMeta, PathBuf)> {
        let meta = self.head_object(bucket, key)?;
        let path = self.bucket_dir(bucket).join("data").join(&meta.data);
        Ok((meta, path))
    }

    /// Opens the object's data, retrying once if a concurrent overwrite removed the file
    /// between reading the metadata and opening it.
    pub fn open_object(&self, bucket: &str, key: &str) -> Result<(ObjectMeta, fs::File)> {
        for _ in 0..2 {
            let (meta, path) = self.object_file(bucket, key)?;
            match fs::File::open(&path) {
                Ok(f) => return Ok((meta, f)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::NoSuchKey)
    }

    /// A new temporary file for an object's bytes.
    pub fn create_temp(&self) -> Result<(PathBuf, fs::File)> {
        let path = self.tmp_path();
        let file = fs::File::create(&path)?;
        Ok((path, file))
    }

    /// Makes a fully written and synced temporary file the content of `bucket/key`.
    pub fn commit_object(
        &self,
        bucket: &str,
        key: &str,
        temp: &Path,
        new: NewObject,
    ) -> Result<ObjectMeta> {
        validate_key(key)?;
        let dir = match self.check_bucket(bucket) {
            Ok(dir) => dir,
            Err(e) => {
                let _ = fs::remove_file(temp);
                return Err(e);
            }
        };
        let h = key_hash(key);
        let data = format!("{h}-{}", self.unique_name());
        let meta = ObjectMeta {
            key: key.to_string(),
            size: new.size,
            etag: new.etag,
            content_type: new.content_type,
            metadata: new.metadata,
            modified_unix_ms: now_ms(),
            data: data.clone(),
        };
        let meta_tmp = self.tmp_path();
        {
            let mut f = fs::File::create(&meta_tmp)?;
            f.write_all(&serde_json::to_vec(&meta)?)?;
            f.sync_all()?;
        }
        let meta_path = dir.join("meta").join(format!("{h}.json"));
        let _guard = self
            .inner
            .commit
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let old = fs::read(&meta_path)
            .ok()
            .and_then(|t| serde_json::from_slice::<ObjectMeta>(&t).ok());
        fs::rename(temp, dir.join("data").join(&data))?;
        fs::rename(&meta_tmp, &meta_path)?;
        if let Ok(d) = fs::File::open(dir.join("meta")) {
            let _ = d.sync_all();
        }
        if let Some(old) = old {
            let _ = fs::remove_file(dir.join("data").join(old.data));
        }
        Ok(meta)
    }

    pub fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        validate_key(key)?;
        let dir = self.check_bucket(bucket)?;
        let meta_path = dir.join("meta").join(format!("{}.json", key_hash(key)));
        let _guard = self
            .inner
            .commit
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let old = match fs::read(&meta_path) {
            Ok(t) => serde_json::from_slice::<ObjectMeta>(&t).ok(),
            // Deleting a missing key succeeds in S3.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        fs::remove_file(&meta_path).or_else(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        if let Some(old) = old {
            let _ = fs::remove_file(dir.join("data").join(old.data));
        }
        Ok(())
    }

    /// One page of the keys starting with `prefix` that sort after `after`, rolled up into
    /// common prefixes at `delimiter`, at most `max_keys` entries (keys plus prefixes).
    ///
    /// Every listing reads all of the bucket's metadata: fine for the first increment's
    /// buckets of table files, not for millions of keys.
    pub fn list(
        &self,
        bucket: &str,
        prefix: &str,
        delimiter: Option<&str>,
        after: Option<&str>,
        max_keys: usize,
    ) -> Result<Listing> {
        let dir = self.check_bucket(bucket)?;
        let mut all = Vec::new();
        for entry in fs::read_dir(dir.join("meta"))? {
            let entry = entry?;
            let text = match fs::read(entry.path()) {
                Ok(t) => t,
                // Deleted while we listed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let meta: ObjectMeta = serde_json::from_slice(&text)?;
            if meta.key.starts_with(prefix) {
                all.push(meta);
            }
        }
        all.sort_by(|a, b| a.key.cmp(&b.key));

        let delimiter = delimiter.filter(|d| !d.is_empty());
        let mut page = Listing::default();
        let mut count = 0;
        for meta in all {
            let rolled = delimiter.and_then(|d| {
                meta.key[prefix.len()..]
                    .find(d)
                    .map(|i| meta.key[..prefix.len() + i + d.len()].to_string())
            });
            let entry = rolled.as_deref().unwrap_or(&meta.key);
            if after.is_some_and(|a| entry <= a) {
                continue;
            }
            if page.last.as_deref() == Some(entry) {
                continue; // another key under the same common prefix
            }
            if count == max_keys {
                page.truncated = true;
                break;
            }
            count += 1;
            page.last = Some(entry.to_string());
            match rolled {
                Some(p) => page.common_prefixes.push(p),
                None => page.objects.push(meta),
            }
        }
        Ok(page)
    }
}

/// The gateway's `S3` implementation: the local store plus the select runner.
#[derive(Debug, Clone)]
pub struct Gateway {
    pub store: LocalStore,
    pub select: SelectService,
}

fn owner_of<T>(req: &S3Request<T>) -> S3Result<String> {
    req.credentials
        .as_ref()
        .map(|c| c.access_key.clone())
        .ok_or_else(|| s3_error!(AccessDenied, "anonymous requests are not served"))
}

fn owner_dto(id: &str) -> Owner {
    Owner {
        display_name: Some(id.to_string()),
        id: Some(id.to_string()),
    }
}

/// Decodes standard base64 (Content-MD5's encoding).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let s = s.trim().trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// S3's `encoding-type=url`: percent-encode everything but unreserved characters and `/`.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

struct ListParams<'a> {
    bucket: &'a str,
    prefix: String,
    delimiter: Option<String>,
    after: Option<String>,
    max_keys: Option<i32>,
    url: bool,
}

impl Gateway {
    async fn list_page(
        &self,
        p: &ListParams<'_>,
    ) -> S3Result<(Listing, Vec<Object>, Vec<CommonPrefix>)> {
        let max = p.max_keys.unwrap_or(1000).clamp(0, 1000) as usize;
        let store = self.store.clone();
        let (bucket, prefix, delimiter, after) = (
            p.bucket.to_string(),
            p.prefix.clone(),
            p.delimiter.clone(),
            p.after.clone(),
        );
        let page = blocking(move || {
            store.list(
                &bucket,
                &prefix,
                delimiter.as_deref(),
                after.as_deref(),
                max,
            )
        })
        .await?;
        let enc = |s: &str| if p.url { url_encode(s) } else { s.to_string() };
        let objects = page
            .objects
            .iter()
            .map(|m| Object {
                key: Some(enc(&m.key)),
                size: Some(m.size as i64),
                e_tag: Some(m.e_tag()),
                last_modified: Some(m.last_modified()),
                storage_class: Some(ObjectStorageClass::from_static(
                    ObjectStorageClass::STANDARD,
                )),
                ..Default::default()
            })
            .collect();
        let prefixes = page
            .common_prefixes
            .iter()
            .map(|cp| CommonPrefix {
                prefix: Some(enc(cp)),
            })
            .collect();
        Ok((page, objects, prefixes))
    }
}

fn is_url_encoding(e: &Option<EncodingType>) -> bool {
    e.as_ref().is_some_and(|e| e.as_str() == EncodingType::URL)
}

/// Streams `len` bytes of `file` from `start` as a response body, 64 KiB at a time.
fn file_body(file: fs::File, start: u64, len: u64) -> StreamingBlob {
    let file = tokio::fs::File::from_std(file);
    let stream = futures::stream::try_unfold(
        (file, start, len, false),
        |(mut file, start, remaining, seeked)| async move {
            if remaining == 0 {
                return Ok(None);
            }
            if !seeked {
                file.seek(io::SeekFrom::Start(start)).await?;
            }
            let want = remaining.min(64 * 1024) as usize;
            let mut buf = vec![0u8; want];
            let n = file.read(&mut buf).await?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "object file is shorter than its metadata says",
                ));
            }
            buf.truncate(n);
            Ok::<_, io::Error>(Some((
                Bytes::from(buf),
                (file, start, remaining - n as u64, true),
            )))
        },
    );
    StreamingBlob::wrap(SyncStream::new(stream))
}

/// Makes a `Send` stream `Sync` (s3s asks for both) by only ever polling it through `&mut`.
struct SyncStream<S>(std::sync::Mutex<std::pin::Pin<Box<S>>>);

impl<S> SyncStream<S> {
    fn new(s: S) -> Self {
        SyncStream(std::sync::Mutex::new(Box::pin(s)))
    }
}

impl<S: futures::Stream> futures::Stream for SyncStream<S> {
    type Item = S::Item;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let this = self.get_mut();
        let inner = this
            .0
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.as_mut().poll_next(cx)
    }
}

#[async_trait::async_trait]
impl S3 for Gateway {
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let owner = owner_of(&req)?;
        let bucket = req.input.bucket.clone();
        let store = self.store.clone();
        let b = bucket.clone();
        blocking(move || store.create_bucket(&b, &owner)).await?;
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(format!("/{bucket}")),
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        let store = self.store.clone();
        let bucket = req.input.bucket;
        blocking(move || store.head_bucket(&bucket)).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let owner = owner_of(&req)?;
        let store = self.store.clone();
        let o = owner.clone();
        let buckets = blocking(move || store.list_buckets(&o)).await?;
        let buckets = buckets
            .into_iter()
            .map(|(name, created)| Bucket {
                name: Some(name),
                creation_date: Some(Timestamp::from(created)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(owner_dto(&owner)),
            ..Default::default()
        }))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let store = self.store.clone();
        let bucket = req.input.bucket;
        blocking(move || store.delete_bucket(&bucket)).await?;
        Ok(S3Response::new(DeleteBucketOutput {}))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let input = req.input;
        validate_key(&input.key)?;
        let expected_md5 = match &input.content_md5 {
            Some(s) => Some(
                base64_decode(s)
                    .filter(|d| d.len() == 16)
                    .ok_or(StoreError::InvalidDigest)?,
            ),
            None => None,
        };
        {
            // Fail before reading the body.
            let store = self.store.clone();
            let bucket = input.bucket.clone();
            blocking(move || store.head_bucket(&bucket)).await?;
        }
        let store = self.store.clone();
        let (temp, file) = blocking(move || store.create_temp()).await?;
        let mut file = tokio::fs::File::from_std(file);
        let mut md5 = Md5::new();
        let mut size = 0u64;
        let written: S3Result<()> = async {
            if let Some(mut body) = input.body {
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(|e| {
                        S3Error::with_message(S3ErrorCode::IncompleteBody, e.to_string())
                    })?;
                    md5.update(&chunk);
                    size += chunk.len() as u64;
                    file.write_all(&chunk).await.map_err(StoreError::Io)?;
                }
            }
            file.sync_all().await.map_err(StoreError::Io)?;
            Ok(())
        }
        .await;
        drop(file);
        let digest = md5.finalize();
        let check = written.and_then(|()| match expected_md5 {
            Some(want) if want.as_slice() != digest.as_slice() => Err(StoreError::BadDigest.into()),
            _ => Ok(()),
        });
        if let Err(e) = check {
            let _ = tokio::fs::remove_file(&temp).await;
            return Err(e);
        }
        let etag = hex(&digest);
        let metadata: BTreeMap<String, String> =
            input.metadata.unwrap_or_default().into_iter().collect();
        let store = self.store.clone();
        let (bucket, key, content_type) = (input.bucket, input.key, input.content_type);
        let meta = blocking(move || {
            store.commit_object(
                &bucket,
                &key,
                &temp,
                NewObject {
                    size,
                    etag,
                    content_type,
                    metadata,
                },
            )
        })
        .await?;
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(meta.e_tag()),
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let input = req.input;
        let store = self.store.clone();
        let (bucket, key) = (input.bucket, input.key);
        let (meta, file) = blocking(move || store.open_object(&bucket, &key)).await?;
        let (start, len, content_range) = match &input.range {
            None => (0, meta.size, None),
            Some(range) => {
                let r = range
                    .check(meta.size)
                    .map_err(|_| StoreError::InvalidRange)?;
                let cr = format!(
                    "bytes {}-{}/{}",
                    r.start,
                    r.end.saturating_sub(1),
                    meta.size
                );
                (r.start, r.end - r.start, Some(cr))
            }
        };
        Ok(S3Response::new(GetObjectOutput {
            body: Some(file_body(file, start, len)),
            content_length: Some(len as i64),
            content_range,
            accept_ranges: Some("bytes".to_string()),
            content_type: meta.content_type.clone(),
            e_tag: Some(meta.e_tag()),
            last_modified: Some(meta.last_modified()),
            metadata: Some(meta.metadata.into_iter().collect()),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let store = self.store.clone();
        let (bucket, key) = (req.input.bucket, req.input.key);
        let meta = blocking(move || store.head_object(&bucket, &key)).await?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(meta.size as i64),
            accept_ranges: Some("bytes".to_string()),
            content_type: meta.content_type.clone(),
            e_tag: Some(meta.e_tag()),
            last_modified: Some(meta.last_modified()),
            metadata: Some(meta.metadata.into_iter().collect()),
            ..Default::default()
        }))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let store = self.store.clone();
        let (bucket, key) = (req.input.bucket, req.input.key);
        blocking(move || store.delete_object(&bucket, &key)).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let input = req.input;
        let quiet = input.delete.quiet.unwrap_or(false);
        let store = self.store.clone();
        let bucket = input.bucket;
        let keys: Vec<String> = input.delete.objects.into_iter().map(|o| o.key).collect();
        let results = blocking(move || {
            store.head_bucket(&bucket)?;
            Ok(keys
                .into_iter()
                .map(|k| {
                    let r = store.delete_object(&bucket, &k);
                    (k, r)
                })
                .collect::<Vec<_>>())
        })
        .await?;
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for (key, r) in results {
            match r {
                Ok(()) if !quiet => deleted.push(DeletedObject {
                    key: Some(key),
                    ..Default::default()
                }),
                Ok(()) => {}
                Err(e) => {
                    let e = S3Error::from(e);
                    errors.push(Error {
                        code: Some(e.code().as_str().to_string()),
                        key: Some(key),
                        message: e.message().map(str::to_string),
                        version_id: None,
                    });
                }
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: Some(errors),
            ..Default::default()
        }))
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let input = req.input;
        let CopySource::Bucket {
            bucket: src_bucket,
            key: src_key,
            ..
        } = &input.copy_source
        else {
            return Err(s3_error!(
                NotImplemented,
                "copying from an access point is not supported"
            ));
        };
        let (src_bucket, src_key) = (src_bucket.to_string(), src_key.to_string());
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        let store = self.store.clone();
        let (dst_bucket, dst_key) = (input.bucket, input.key);
        let (new_type, new_meta) = (input.content_type, input.metadata);
        let meta = blocking(move || {
            validate_key(&dst_key)?;
            store.head_bucket(&dst_bucket)?;
            let (src, mut file) = store.open_object(&src_bucket, &src_key)?;
            let (temp, mut out) = store.create_temp()?;
            let copied = io::copy(&mut file, &mut out).and_then(|_| out.sync_all());
            if let Err(e) = copied {
                let _ = fs::remove_file(&temp);
                return Err(e.into());
            }
            let (content_type, metadata) = if replace {
                (new_type, new_meta.unwrap_or_default().into_iter().collect())
            } else {
                (src.content_type, src.metadata)
            };
            let new = NewObject {
                size: src.size,
                etag: src.etag,
                content_type,
                metadata,
            };
            store.commit_object(&dst_bucket, &dst_key, &temp, new)
        })
        .await?;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(meta.e_tag()),
                last_modified: Some(meta.last_modified()),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let input = req.input;
        let params = ListParams {
            bucket: &input.bucket,
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: input.delimiter.clone(),
            after: input.marker.clone().filter(|m| !m.is_empty()),
            max_keys: input.max_keys,
            url: is_url_encoding(&input.encoding_type),
        };
        let (page, contents, prefixes) = self.list_page(&params).await?;
        let next_marker = if page.truncated {
            page.last.clone()
        } else {
            None
        };
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(input.bucket.clone()),
            prefix: Some(input.prefix.unwrap_or_default()),
            marker: input.marker,
            max_keys: Some(input.max_keys.unwrap_or(1000)),
            is_truncated: Some(page.truncated),
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            delimiter: input.delimiter,
            next_marker,
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let input = req.input;
        // The continuation token is the hex of the last entry returned: opaque to clients
        // and safe for any key.
        let token_after = match &input.continuation_token {
            Some(t) => Some(decode_token(t).ok_or_else(|| {
                s3_error!(
                    InvalidArgument,
                    "The continuation token provided is incorrect"
                )
            })?),
            None => None,
        };
        let after = token_after.or_else(|| input.start_after.clone().filter(|s| !s.is_empty()));
        let params = ListParams {
            bucket: &input.bucket,
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: input.delimiter.clone(),
            after,
            max_keys: input.max_keys,
            url: is_url_encoding(&input.encoding_type),
        };
        let (page, contents, prefixes) = self.list_page(&params).await?;
        let next = if page.truncated {
            page.last.as_deref().map(|l| hex(l.as_bytes()))
        } else {
            None
        };
        let count = (contents.len() + prefixes.len()) as i32;
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket.clone()),
            prefix: Some(input.prefix.unwrap_or_default()),
            max_keys: Some(input.max_keys.unwrap_or(1000)),
            key_count: Some(count),
            continuation_token: input.continuation_token,
            is_truncated: Some(page.truncated),
            next_continuation_token: next,
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            delimiter: input.delimiter,
            encoding_type: input.encoding_type,
            start_after: input.start_after,
            ..Default::default()
        }))
    }

    async fn select_object_content(
        &self,
        req: S3Request<SelectObjectContentInput>,
    ) -> S3Result<S3Response<SelectObjectContentOutput>> {
        self.select.run(&self.store, req.input).await
    }
}

fn decode_token(t: &str) -> Option<String> {
    if !t.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..t.len())
        .step_by(2)
        .map(|i| t.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (LocalStore, PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "sift-store-test-{}-{}",
            std::process::id(),
            now_ms() ^ u64::from(rand_u32())
        ));
        (LocalStore::open(&dir).expect("open store"), dir)
    }

    fn rand_u32() -> u32 {
        static N: AtomicU64 = AtomicU64::new(0);
        N.fetch_add(1, Ordering::Relaxed) as u32 * 7919
    }

    fn put(s: &LocalStore, bucket: &str, key: &str, data: &[u8]) {
        let (temp, mut f) = s.create_temp().expect("temp");
        f.write_all(data).expect("write");
        let new = NewObject {
            size: data.len() as u64,
            ..Default::default()
        };
        s.commit_object(bucket, key, &temp, new).expect("commit");
    }

    #[test]
    fn bucket_names() {
        for ok in ["abc", "my-bucket.1", "a1b"] {
            assert!(validate_bucket_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ab",
            "ABC",
            "-abc",
            "abc-",
            "a..b",
            "192.168.0.1",
            "a_b",
            ".tmp",
            "../x",
        ] {
            assert!(validate_bucket_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn listing_with_delimiter_and_pages() {
        let (s, dir) = store();
        s.create_bucket("bk1", "me").expect("create");
        s.create_bucket("bk1", "me")
            .expect("idempotent for the owner");
        assert!(matches!(
            s.create_bucket("bk1", "you"),
            Err(StoreError::BucketAlreadyExists)
        ));
        for k in ["a/1", "a/2", "b", "c/x/1", "c/y", "d"] {
            put(&s, "bk1", k, b"x");
        }
        let all = s.list("bk1", "", Some("/"), None, 1000).expect("list");
        let keys: Vec<_> = all.objects.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["b", "d"]);
        assert_eq!(all.common_prefixes, ["a/", "c/"]);
        // Pages of two, resuming after the last entry.
        let p1 = s.list("bk1", "", Some("/"), None, 2).expect("p1");
        assert!(p1.truncated);
        assert_eq!(p1.common_prefixes, ["a/"]);
        assert_eq!(p1.objects[0].key, "b");
        let p2 = s
            .list("bk1", "", Some("/"), p1.last.as_deref(), 2)
            .expect("p2");
        assert_eq!(p2.common_prefixes, ["c/"]);
        assert_eq!(p2.objects[0].key, "d");
        assert!(!p2.truncated);
        // Resuming after a common prefix skips every key under it.
        let p3 = s.list("bk1", "", Some("/"), Some("a/"), 1).expect("p3");
        assert_eq!(p3.objects[0].key, "b");
        let c = s.list("bk1", "c/", Some("/"), None, 1000).expect("c/");
        assert_eq!(c.common_prefixes, ["c/x/"]);
        assert_eq!(c.objects[0].key, "c/y");
        assert!(matches!(
            s.delete_bucket("bk1"),
            Err(StoreError::BucketNotEmpty)
        ));
        fs::remove_dir_all(dir).expect("cleanup");
    }

    #[test]
    fn long_and_odd_keys_stay_inside() {
        let (s, dir) = store();
        s.create_bucket("bk2", "me").expect("create");
        let long = "k/".repeat(512);
        for k in [long.as_str(), "../../etc/passwd", "a b/ü/ñ.txt", "."] {
            put(&s, "bk2", k, k.as_bytes());
            let (meta, path) = s.object_file("bk2", k).expect("stored");
            assert_eq!(meta.key, k);
            assert!(path.starts_with(dir.join("buckets/bk2/data")));
            assert_eq!(fs::read(path).expect("read"), k.as_bytes());
        }
        assert!(matches!(
            s.head_object("bk2", &"x".repeat(1025)),
            Err(StoreError::KeyTooLong)
        ));
        fs::remove_dir_all(dir).expect("cleanup");
    }

    #[test]
    fn base64_and_tokens() {
        assert_eq!(base64_decode("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_token(&hex("a/ü".as_bytes())).as_deref(), Some("a/ü"));
        assert_eq!(decode_token("zz"), None);
    }
}
