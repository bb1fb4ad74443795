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
//! changed under it (only unlinked, which leaves the mapping intact). Multipart uploads
//! live beside the objects until they complete ([`uploads`]).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use s3s::dto::{ETag, Timestamp};
use s3s::{S3Error, S3ErrorCode};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod uploads;

pub use uploads::{PartInfo, Upload, UploadListing, MAX_PART_NUMBER, MIN_PART_SIZE};

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
    #[error("The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")]
    NoSuchUpload,
    #[error("Part {0} could not be found, or its ETag does not match the one given.")]
    InvalidPart(i32),
    #[error("The list of parts was not in ascending order of part number.")]
    InvalidPartOrder,
    #[error("Part {0} is {1} bytes: every part but the last must be at least 5 MiB.")]
    EntityTooSmall(i32, u64),
    #[error("Part number must be an integer between 1 and 10000, inclusive (got {0}).")]
    InvalidPartNumber(i32),
    #[error("{0}")]
    MalformedXml(String),
    #[error("At least one of the pre-conditions you specified did not hold")]
    PreconditionFailed,
    #[error("{0}")]
    InvalidArgument(String),
    #[error("object metadata is corrupt: {0}")]
    CorruptMetadata(#[from] serde_json::Error),
    #[error("storage I/O error on {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// A blocking task of the store could not be run to its end (the runtime shut down).
    #[error("a storage task failed: {0}")]
    Task(String),
}

/// Attaches the path an I/O error happened on: `fs::read(&p).at(&p)?`.
pub(crate) trait At<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> At<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
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
            StoreError::NoSuchUpload => S3ErrorCode::NoSuchUpload,
            StoreError::InvalidPart(_) => S3ErrorCode::InvalidPart,
            StoreError::InvalidPartOrder => S3ErrorCode::InvalidPartOrder,
            StoreError::EntityTooSmall(..) => S3ErrorCode::EntityTooSmall,
            StoreError::InvalidPartNumber(_) => S3ErrorCode::InvalidArgument,
            StoreError::MalformedXml(_) => S3ErrorCode::MalformedXML,
            StoreError::PreconditionFailed => S3ErrorCode::PreconditionFailed,
            StoreError::InvalidArgument(_) => S3ErrorCode::InvalidArgument,
            StoreError::CorruptMetadata(_) | StoreError::Io { .. } | StoreError::Task(_) => {
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
    /// Absent in metadata written before these were kept.
    #[serde(default)]
    pub headers: StoredHeaders,
    pub modified_unix_ms: u64,
    /// File name under the bucket's `data/` directory.
    data: String,
}

impl ObjectMeta {
    pub(crate) fn last_modified(&self) -> Timestamp {
        Timestamp::from(UNIX_EPOCH + Duration::from_millis(self.modified_unix_ms))
    }
    pub(crate) fn e_tag(&self) -> ETag {
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

pub(crate) fn hex(bytes: &[u8]) -> String {
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

pub(crate) fn validate_key(key: &str) -> Result<()> {
    if key.len() > 1024 {
        return Err(StoreError::KeyTooLong);
    }
    Ok(())
}

/// `err` when `e` says the file is not there; otherwise `e`, with the path it happened on.
fn not_found_as(e: io::Error, path: &Path, err: StoreError) -> StoreError {
    if e.kind() == io::ErrorKind::NotFound {
        err
    } else {
        StoreError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// Runs filesystem work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
}

/// What a writer knows about an object it is committing.
#[derive(Debug, Clone, Default)]
pub struct NewObject {
    pub size: u64,
    /// Hex MD5 of the content.
    pub etag: String,
    pub content_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub headers: StoredHeaders,
    /// What the object being replaced must be for the write to happen.
    pub condition: WriteCondition,
}

/// The standard headers a PUT sets and GET and HEAD return as they were given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredHeaders {
    pub cache_control: Option<String>,
    pub content_disposition: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
    pub expires: Option<Timestamp>,
}

/// A conditional write (If-None-Match / If-Match on PUT and CompleteMultipartUpload),
/// checked under the commit lock against the object it would replace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WriteCondition {
    #[default]
    Always,
    /// `If-None-Match: *`: only if there is no object yet.
    IfAbsent,
    /// `If-Match: *`: only if there is one.
    IfPresent,
    /// `If-Match: "etag"`: only if the current object has this ETag (without quotes).
    IfEtag(String),
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

    /// Held while metadata (or a part) is renamed in and what it replaced is removed.
    fn commit_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.inner
            .commit
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
        let path = dir.join("bucket.json");
        let text = fs::read(&path).map_err(|e| not_found_as(e, &path, StoreError::NoSuchBucket))?;
        Ok(serde_json::from_slice(&text)?)
    }

    /// Creates `bucket` for `owner`. Re-creating one's own bucket succeeds, as in AWS's
    /// us-east-1; someone else's is `BucketAlreadyExists`.
    pub fn create_bucket(&self, bucket: &str, owner: &str) -> Result<()> {
        validate_bucket_name(bucket)?;
        let staging = self.tmp_path();
        for dir in [staging.join("meta"), staging.join("data")] {
            fs::create_dir_all(&dir).at(&dir)?;
        }
        let meta = BucketMeta {
            owner: owner.to_string(),
            created_unix_ms: now_ms(),
        };
        let meta_path = staging.join("bucket.json");
        fs::write(&meta_path, serde_json::to_vec(&meta)?).at(&meta_path)?;
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
                Err(e).at(&staging)
            }
        }
    }

    /// The access key that created `bucket`.
    pub fn bucket_owner(&self, bucket: &str) -> Result<String> {
        Ok(self.read_bucket_meta(bucket)?.owner)
    }

    pub fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.check_bucket(bucket).map(drop)
    }

    /// The buckets `owner` owns, sorted by name, with their creation times.
    pub fn list_buckets(&self, owner: &str) -> Result<Vec<(String, SystemTime)>> {
        let mut out = Vec::new();
        let buckets = self.inner.root.join("buckets");
        for entry in fs::read_dir(&buckets).at(&buckets)? {
            let entry = entry.at(&buckets)?;
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
        let meta = dir.join("meta");
        if fs::read_dir(&meta).at(&meta)?.next().is_some() {
            return Err(StoreError::BucketNotEmpty);
        }
        // Move it out of the namespace first so that it disappears at once.
        let grave = self.tmp_path();
        fs::rename(&dir, &grave).map_err(|e| not_found_as(e, &dir, StoreError::NoSuchBucket))?;
        fs::remove_dir_all(&grave).at(&grave)?;
        Ok(())
    }

    /// The object's metadata.
    pub fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectMeta> {
        validate_key(key)?;
        let dir = self.check_bucket(bucket)?;
        let path = dir.join("meta").join(format!("{}.json", key_hash(key)));
        let text = fs::read(&path).map_err(|e| not_found_as(e, &path, StoreError::NoSuchKey))?;
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
                Err(e) => return Err(e).at(&path),
            }
        }
        Err(StoreError::NoSuchKey)
    }

    /// A new temporary file for an object's bytes.
    pub fn create_temp(&self) -> Result<(PathBuf, fs::File)> {
        let path = self.tmp_path();
        let file = fs::File::create(&path).at(&path)?;
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
            headers: new.headers,
            modified_unix_ms: now_ms(),
            data: data.clone(),
        };
        let meta_tmp = self.tmp_path();
        {
            let mut f = fs::File::create(&meta_tmp).at(&meta_tmp)?;
            f.write_all(&serde_json::to_vec(&meta)?).at(&meta_tmp)?;
            f.sync_all().at(&meta_tmp)?;
        }
        let meta_path = dir.join("meta").join(format!("{h}.json"));
        let _guard = self.commit_lock();
        let old = fs::read(&meta_path)
            .ok()
            .and_then(|t| serde_json::from_slice::<ObjectMeta>(&t).ok());
        let allowed = match (&new.condition, &old) {
            (WriteCondition::Always, _)
            | (WriteCondition::IfAbsent, None)
            | (WriteCondition::IfPresent, Some(_)) => Ok(()),
            (WriteCondition::IfEtag(want), Some(old)) if *want == old.etag => Ok(()),
            (WriteCondition::IfPresent | WriteCondition::IfEtag(_), None) => {
                Err(StoreError::NoSuchKey)
            }
            _ => Err(StoreError::PreconditionFailed),
        };
        if let Err(e) = allowed {
            let _ = fs::remove_file(temp);
            let _ = fs::remove_file(&meta_tmp);
            return Err(e);
        }
        fs::rename(temp, dir.join("data").join(&data)).at(temp)?;
        fs::rename(&meta_tmp, &meta_path).at(&meta_tmp)?;
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
        let _guard = self.commit_lock();
        let old = match fs::read(&meta_path) {
            Ok(t) => serde_json::from_slice::<ObjectMeta>(&t).ok(),
            // Deleting a missing key succeeds in S3.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).at(&meta_path),
        };
        fs::remove_file(&meta_path)
            .or_else(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .at(&meta_path)?;
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
        if max_keys == 0 {
            // S3 answers max-keys=0 with an empty page that is not truncated.
            return Ok(Listing::default());
        }
        let mut all = Vec::new();
        let meta_dir = dir.join("meta");
        for entry in fs::read_dir(&meta_dir).at(&meta_dir)? {
            let path = entry.at(&meta_dir)?.path();
            let text = match fs::read(&path) {
                Ok(t) => t,
                // Deleted while we listed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).at(&path),
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

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn store() -> (LocalStore, PathBuf) {
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

    /// A storage failure names the file or directory it happened on, and is an
    /// InternalError to the client.
    #[test]
    fn io_errors_name_their_path() {
        let (s, dir) = store();
        s.create_bucket("bkt", "o").expect("create");
        put(&s, "bkt", "k", b"x");
        // The bucket's metadata directory replaced by a file: listing it fails.
        let meta = dir.join("buckets").join("bkt").join("meta");
        fs::remove_dir_all(&meta).expect("remove meta");
        fs::write(&meta, b"not a directory").expect("write");
        let e = s.delete_bucket("bkt").expect_err("meta is not a directory");
        assert!(
            matches!(&e, StoreError::Io { path, .. } if *path == meta),
            "{e:?}"
        );
        assert!(e.to_string().contains(&meta.display().to_string()), "{e}");
        assert_eq!(S3Error::from(e).code(), &S3ErrorCode::InternalError);
        fs::remove_dir_all(&dir).ok();
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
    fn conditional_writes_keep_what_they_must_not_replace() {
        let (s, dir) = store();
        s.create_bucket("cnd", "me").expect("create");
        let write = |data: &[u8], etag: &str, condition: WriteCondition| {
            let (temp, mut f) = s.create_temp().expect("temp");
            f.write_all(data).expect("write");
            let new = NewObject {
                size: data.len() as u64,
                etag: etag.to_string(),
                condition,
                ..Default::default()
            };
            let r = s.commit_object("cnd", "k", &temp, new);
            assert!(!temp.exists(), "the temporary file is consumed or removed");
            r
        };
        assert!(matches!(
            write(b"x", "e0", WriteCondition::IfPresent),
            Err(StoreError::NoSuchKey)
        ));
        write(b"first", "e1", WriteCondition::IfAbsent).expect("absent");
        assert!(matches!(
            write(b"second", "e2", WriteCondition::IfAbsent),
            Err(StoreError::PreconditionFailed)
        ));
        assert!(matches!(
            write(b"second", "e2", WriteCondition::IfEtag("other".into())),
            Err(StoreError::PreconditionFailed)
        ));
        let (meta, path) = s.object_file("cnd", "k").expect("object");
        assert_eq!(
            (meta.etag.as_str(), fs::read(&path).expect("read")),
            ("e1", b"first".to_vec())
        );
        write(b"second", "e2", WriteCondition::IfEtag("e1".into())).expect("matching etag");
        write(b"third", "e3", WriteCondition::IfPresent).expect("present");
        assert_eq!(s.head_object("cnd", "k").expect("head").etag, "e3");
        fs::remove_dir_all(dir).expect("cleanup");
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
}
