//! The `S3` operations over the [`LocalStore`]: request and response shapes, body streaming,
//! conditional requests and listings; the filesystem work itself is in [`crate::store`].

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use futures::StreamExt;
use md5::{Digest, Md5};
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};
use tokio::io::AsyncWriteExt;

use sift_engine::{FileSource, ObjectSource};

use crate::select::{wants_arrow, OpenSource, SelectService};
use crate::store::{
    blocking, hex, validate_key, At, Listing, LocalStore, NewObject, ObjectMeta, StoreError,
    StoredHeaders, WriteCondition, MAX_PART_NUMBER,
};

/// The gateway's `S3` implementation on its embedded store: the local store plus the
/// select runner.
#[derive(Debug, Clone)]
pub struct LocalGateway {
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
    /// Whether each object names its owner (always in v1, with fetch-owner in v2).
    owner: bool,
    prefix: String,
    delimiter: Option<String>,
    after: Option<String>,
    max_keys: Option<i32>,
    url: bool,
}

/// A request body that broke off. s3s checks each chunk of an `aws-chunked` body signed
/// with STREAMING-AWS4-HMAC-SHA256-PAYLOAD as it arrives; a chunk whose signature is wrong
/// is S3's 403 SignatureDoesNotMatch. s3s 0.14 keeps that error's type private, so it is
/// recognised by its text.
fn body_error(e: s3s::StdError) -> S3Error {
    let text = e.to_string();
    if text.contains("SignatureMismatch") {
        return S3Error::with_message(
            S3ErrorCode::SignatureDoesNotMatch,
            "The signature of a chunk of the request body does not match",
        );
    }
    S3Error::with_message(S3ErrorCode::IncompleteBody, text)
}

/// A request body written to a synced temporary file.
struct Received {
    temp: PathBuf,
    size: u64,
    md5: [u8; 16],
}

impl LocalGateway {
    /// Streams a request body into a new temporary file and syncs it, checking the
    /// Content-MD5 when there is one; on any failure the file is gone.
    async fn receive(
        &self,
        body: Option<StreamingBlob>,
        content_md5: Option<&str>,
    ) -> S3Result<Received> {
        let expected_md5 = match content_md5 {
            Some(s) => Some(
                BASE64
                    .decode(s.trim())
                    .ok()
                    .filter(|d| d.len() == 16)
                    .ok_or(StoreError::InvalidDigest)?,
            ),
            None => None,
        };
        let store = self.store.clone();
        let (temp, file) = blocking(move || store.create_temp()).await?;
        let mut file = tokio::fs::File::from_std(file);
        let mut md5 = Md5::new();
        let mut size = 0u64;
        let written: S3Result<()> = async {
            if let Some(mut body) = body {
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.map_err(body_error)?;
                    md5.update(&chunk);
                    size += chunk.len() as u64;
                    file.write_all(&chunk).await.at(&temp)?;
                }
            }
            file.sync_all().await.at(&temp)?;
            Ok(())
        }
        .await;
        drop(file);
        let md5: [u8; 16] = md5.finalize().into();
        let checked = written.and_then(|()| match expected_md5 {
            Some(want) if want.as_slice() != md5 => Err(StoreError::BadDigest.into()),
            _ => Ok(()),
        });
        match checked {
            Ok(()) => Ok(Received { temp, size, md5 }),
            Err(e) => {
                let _ = tokio::fs::remove_file(&temp).await;
                Err(e)
            }
        }
    }

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
        let want_owner = p.owner;
        let (page, owner) = blocking(move || {
            let owner = if want_owner {
                Some(store.bucket_owner(&bucket)?)
            } else {
                None
            };
            let page = store.list(
                &bucket,
                &prefix,
                delimiter.as_deref(),
                after.as_deref(),
                max,
            )?;
            Ok((page, owner))
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
                owner: owner.as_deref().map(owner_dto),
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

/// Streams `len` bytes of `file` from `start` as a response body, 1 MiB at a time: each
/// piece is one blocking read off the async threads, so fewer, larger pieces keep a GET of
/// a large table file near the disk's (or page cache's) speed.
fn file_body(file: fs::File, start: u64, len: u64) -> StreamingBlob {
    const PIECE: u64 = 1 << 20;
    let stream = futures::stream::try_unfold(
        (Some(file), start, len),
        |(file, offset, remaining)| async move {
            let Some(file) = file.filter(|_| remaining > 0) else {
                return Ok(None);
            };
            let want = remaining.min(PIECE) as usize;
            let (file, buf) = tokio::task::spawn_blocking(move || {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; want];
                file.read_exact_at(&mut buf, offset).map_err(short_file)?;
                Ok::<_, io::Error>((file, buf))
            })
            .await
            .map_err(io::Error::other)??;
            Ok::<_, io::Error>(Some((
                Bytes::from(buf),
                (Some(file), offset + want as u64, remaining - want as u64),
            )))
        },
    );
    StreamingBlob::wrap(SyncStream::new(stream))
}

/// A data file that ends before its metadata's size says it should.
fn short_file(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "object file is shorter than its metadata says",
        )
    } else {
        e
    }
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

/// S3's answer for an object stored without a Content-Type.
const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// S3's cap on the keys of one DeleteObjects request.
const MAX_DELETE_KEYS: usize = 1000;

/// Sift stores objects as they come: asking for server-side encryption is refused rather
/// than silently storing plaintext.
fn refuse_encryption(
    sse: Option<&ServerSideEncryption>,
    customer_algorithm: Option<&String>,
    kms_key: Option<&String>,
) -> S3Result<()> {
    if sse.is_some() || customer_algorithm.is_some() || kms_key.is_some() {
        return Err(s3_error!(
            NotImplemented,
            "server-side encryption is not supported by this gateway"
        ));
    }
    Ok(())
}

/// If-None-Match / If-Match of a write, as the store checks them under its commit lock.
fn write_condition(
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
) -> S3Result<WriteCondition> {
    match (if_match, if_none_match) {
        (None, None) => Ok(WriteCondition::Always),
        (None, Some(ETagCondition::Any)) => Ok(WriteCondition::IfAbsent),
        (Some(ETagCondition::Any), None) => Ok(WriteCondition::IfPresent),
        (Some(ETagCondition::ETag(e)), None) => {
            Ok(WriteCondition::IfEtag(e.value().to_ascii_lowercase()))
        }
        (None, Some(ETagCondition::ETag(_))) => Err(s3_error!(
            NotImplemented,
            "If-None-Match on a write only takes *"
        )),
        (Some(_), Some(_)) => Err(s3_error!(
            NotImplemented,
            "If-Match and If-None-Match together on a write are not supported"
        )),
    }
}

fn stored_headers(
    cache_control: Option<String>,
    content_disposition: Option<String>,
    content_encoding: Option<String>,
    content_language: Option<String>,
    expires: Option<Timestamp>,
) -> StoredHeaders {
    StoredHeaders {
        cache_control,
        content_disposition,
        content_encoding,
        content_language,
        expires,
    }
}

/// `x-amz-copy-source-range: bytes=FIRST-LAST` against the source's size: the offset and
/// length to copy.
fn copy_range(range: Option<&str>, size: u64) -> Result<(u64, u64), StoreError> {
    let Some(range) = range else {
        return Ok((0, size));
    };
    let bad = || {
        StoreError::InvalidArgument(format!(
            "The x-amz-copy-source-range {range:?} is not valid for a source object of {size} bytes"
        ))
    };
    let (first, last) = range
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or_else(bad)?;
    let first: u64 = first.parse().map_err(|_| bad())?;
    let last: u64 = last.parse().map_err(|_| bad())?;
    if first > last || last >= size {
        return Err(bad());
    }
    Ok((first, last - first + 1))
}

/// Copies `len` bytes of `src` from `offset` into `out`, returning their MD5.
fn copy_with_md5(
    src: &fs::File,
    offset: u64,
    len: u64,
    out: &mut fs::File,
) -> io::Result<[u8; 16]> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    let mut md5 = Md5::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < len {
        let piece = &mut buf[..(len - done).min(1 << 20) as usize];
        src.read_exact_at(piece, offset + done)
            .map_err(short_file)?;
        md5.update(&*piece);
        out.write_all(piece)?;
        done += piece.len() as u64;
    }
    out.sync_all()?;
    Ok(md5.finalize().into())
}

/// The bucket and key a copy reads (access points are not supported).
fn copy_source(source: &CopySource) -> S3Result<(String, String)> {
    match source {
        CopySource::Bucket { bucket, key, .. } => Ok((bucket.to_string(), key.to_string())),
        _ => Err(s3_error!(
            NotImplemented,
            "copying from an access point is not supported"
        )),
    }
}

/// `x-amz-copy-source-if-*` of CopyObject and UploadPartCopy.
struct SourceConditions {
    if_match: Option<ETagCondition>,
    if_unmodified_since: Option<Timestamp>,
    if_none_match: Option<ETagCondition>,
    if_modified_since: Option<Timestamp>,
}

impl SourceConditions {
    /// The GET conditions on the source; any of them failing is 412 (a copy has no 304).
    fn check(&self, src: &ObjectMeta) -> Result<(), StoreError> {
        check_conditions(
            src,
            self.if_match.as_ref(),
            self.if_unmodified_since.as_ref(),
            self.if_none_match.as_ref(),
            self.if_modified_since.as_ref(),
        )
        .map_err(|_| StoreError::PreconditionFailed)
    }
}

/// Seconds since the epoch: HTTP dates have no finer precision.
fn unix_seconds(t: &Timestamp) -> i64 {
    time::OffsetDateTime::from(t.clone()).unix_timestamp()
}

/// Conditional GET and HEAD in RFC 9110's order: If-Match (else If-Unmodified-Since)
/// failing is 412 PreconditionFailed; then If-None-Match matching (else If-Modified-Since
/// finding no change) is 304 NotModified.
fn check_conditions(
    meta: &ObjectMeta,
    if_match: Option<&ETagCondition>,
    if_unmodified_since: Option<&Timestamp>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
) -> S3Result<()> {
    let etag = meta.e_tag();
    let modified = (meta.modified_unix_ms / 1000) as i64;
    let precondition_holds = match (if_match, if_unmodified_since) {
        (Some(ETagCondition::Any), _) | (None, None) => true,
        (Some(ETagCondition::ETag(want)), _) => etag.strong_cmp(want),
        (None, Some(since)) => modified <= unix_seconds(since),
    };
    if !precondition_holds {
        return Err(s3_error!(
            PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold"
        ));
    }
    let unchanged = match (if_none_match, if_modified_since) {
        (Some(ETagCondition::Any), _) => true,
        (Some(ETagCondition::ETag(have)), _) => etag.weak_cmp(have),
        (None, Some(since)) => modified <= unix_seconds(since),
        (None, None) => false,
    };
    if unchanged {
        // A 304 still names the representation it refers to.
        let mut e = s3_error!(NotModified);
        let mut headers = hyper::HeaderMap::new();
        if let Ok(v) = hyper::header::HeaderValue::from_str(&format!("\"{}\"", meta.etag)) {
            headers.insert(hyper::header::ETAG, v);
        }
        let mut date = Vec::new();
        if meta
            .last_modified()
            .format(s3s::dto::TimestampFormat::HttpDate, &mut date)
            .is_ok()
        {
            if let Ok(v) = hyper::header::HeaderValue::from_bytes(&date) {
                headers.insert(hyper::header::LAST_MODIFIED, v);
            }
        }
        e.set_headers(headers);
        return Err(e);
    }
    Ok(())
}

fn content_type(meta: &ObjectMeta) -> String {
    meta.content_type
        .clone()
        .unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_string())
}

fn storage_class() -> StorageClass {
    StorageClass::from_static(StorageClass::STANDARD)
}

fn initiator(id: &str) -> Initiator {
    Initiator {
        display_name: Some(id.to_string()),
        id: Some(id.to_string()),
    }
}

#[async_trait::async_trait]
impl S3 for LocalGateway {
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
        let input = req.input;
        let store = self.store.clone();
        let o = owner.clone();
        let buckets = blocking(move || store.list_buckets(&o)).await?;
        // Pages by name: the token is the hex of the last name returned.
        let after = continuation(input.continuation_token.as_deref())?;
        let prefix = input.prefix.clone().unwrap_or_default();
        let max = input.max_buckets.map_or(usize::MAX, |m| m.max(0) as usize);
        let mut matching = buckets
            .into_iter()
            .filter(|(name, _)| name.starts_with(&prefix))
            .filter(|(name, _)| after.as_ref().is_none_or(|a| name > a))
            .peekable();
        let page: Vec<_> = matching.by_ref().take(max).collect();
        let next = match (matching.peek(), page.last()) {
            (Some(_), Some((last, _))) => Some(hex(last.as_bytes())),
            _ => None,
        };
        let buckets = page
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
            continuation_token: next,
            prefix: input.prefix,
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
        refuse_encryption(
            input.server_side_encryption.as_ref(),
            input.sse_customer_algorithm.as_ref(),
            input.ssekms_key_id.as_ref(),
        )?;
        let condition = write_condition(input.if_match.as_ref(), input.if_none_match.as_ref())?;
        let headers = stored_headers(
            input.cache_control,
            input.content_disposition,
            input.content_encoding,
            input.content_language,
            input.expires,
        );
        {
            // Fail before reading the body.
            let store = self.store.clone();
            let bucket = input.bucket.clone();
            blocking(move || store.head_bucket(&bucket)).await?;
        }
        let body = self
            .receive(input.body, input.content_md5.as_deref())
            .await?;
        let (temp, size) = (body.temp, body.size);
        let etag = hex(&body.md5);
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
                    headers,
                    condition,
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
        check_conditions(
            &meta,
            input.if_match.as_ref(),
            input.if_unmodified_since.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
        )?;
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
            content_type: Some(content_type(&meta)),
            e_tag: Some(meta.e_tag()),
            last_modified: Some(meta.last_modified()),
            cache_control: meta.headers.cache_control.clone(),
            content_disposition: meta.headers.content_disposition.clone(),
            content_encoding: meta.headers.content_encoding.clone(),
            content_language: meta.headers.content_language.clone(),
            expires: meta.headers.expires.clone(),
            metadata: Some(meta.metadata.into_iter().collect()),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let input = req.input;
        let store = self.store.clone();
        let (bucket, key) = (input.bucket, input.key);
        let meta = blocking(move || store.head_object(&bucket, &key)).await?;
        check_conditions(
            &meta,
            input.if_match.as_ref(),
            input.if_unmodified_since.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
        )?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(meta.size as i64),
            accept_ranges: Some("bytes".to_string()),
            content_type: Some(content_type(&meta)),
            e_tag: Some(meta.e_tag()),
            last_modified: Some(meta.last_modified()),
            cache_control: meta.headers.cache_control.clone(),
            content_disposition: meta.headers.content_disposition.clone(),
            content_encoding: meta.headers.content_encoding.clone(),
            content_language: meta.headers.content_language.clone(),
            expires: meta.headers.expires.clone(),
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
        if input.delete.objects.len() > MAX_DELETE_KEYS {
            return Err(s3_error!(
                MalformedXML,
                "a DeleteObjects request names at most 1000 keys"
            ));
        }
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
        let (src_bucket, src_key) = copy_source(&input.copy_source)?;
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        refuse_encryption(
            input.server_side_encryption.as_ref(),
            input.sse_customer_algorithm.as_ref(),
            input.ssekms_key_id.as_ref(),
        )?;
        if src_bucket == input.bucket && src_key == input.key && !replace {
            return Err(s3_error!(
                InvalidRequest,
                "This copy request is illegal because it is trying to copy an object to itself \
                 without changing the object's metadata, storage class, website redirect \
                 location or encryption attributes."
            ));
        }
        let store = self.store.clone();
        let (dst_bucket, dst_key) = (input.bucket, input.key);
        let (new_type, new_meta) = (input.content_type, input.metadata);
        let new_headers = stored_headers(
            input.cache_control,
            input.content_disposition,
            input.content_encoding,
            input.content_language,
            input.expires,
        );
        let conditions = SourceConditions {
            if_match: input.copy_source_if_match,
            if_unmodified_since: input.copy_source_if_unmodified_since,
            if_none_match: input.copy_source_if_none_match,
            if_modified_since: input.copy_source_if_modified_since,
        };
        let meta = blocking(move || {
            validate_key(&dst_key)?;
            store.head_bucket(&dst_bucket)?;
            let (src, mut file) = store.open_object(&src_bucket, &src_key)?;
            conditions.check(&src)?;
            let (temp, mut out) = store.create_temp()?;
            let copied = io::copy(&mut file, &mut out).and_then(|_| out.sync_all());
            if let Err(e) = copied {
                let _ = fs::remove_file(&temp);
                return Err(e).at(&temp);
            }
            let (content_type, metadata, headers) = if replace {
                (
                    new_type,
                    new_meta.unwrap_or_default().into_iter().collect(),
                    new_headers,
                )
            } else {
                (src.content_type, src.metadata, src.headers)
            };
            let new = NewObject {
                size: src.size,
                etag: src.etag,
                content_type,
                metadata,
                headers,
                condition: WriteCondition::Always,
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
            owner: true,
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
            marker: Some(input.marker.unwrap_or_default()),
            max_keys: Some(input.max_keys.unwrap_or(1000)),
            is_truncated: Some(page.truncated),
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            delimiter: input.delimiter.filter(|d| !d.is_empty()),
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
        let token_after = continuation(input.continuation_token.as_deref())?;
        let after = token_after.or_else(|| input.start_after.clone().filter(|s| !s.is_empty()));
        let params = ListParams {
            bucket: &input.bucket,
            owner: input.fetch_owner.unwrap_or(false),
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
            delimiter: input.delimiter.filter(|d| !d.is_empty()),
            encoding_type: input.encoding_type,
            start_after: input.start_after,
            ..Default::default()
        }))
    }

    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        // The store keeps no versions: every object is its own only ("null") version, as
        // S3 answers for a bucket that never had versioning enabled.
        let input = req.input;
        let params = ListParams {
            bucket: &input.bucket,
            owner: true,
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: input.delimiter.clone(),
            after: input.key_marker.clone().filter(|m| !m.is_empty()),
            max_keys: input.max_keys,
            url: is_url_encoding(&input.encoding_type),
        };
        let (page, contents, prefixes) = self.list_page(&params).await?;
        let versions = contents
            .into_iter()
            .map(|o| ObjectVersion {
                e_tag: o.e_tag,
                is_latest: Some(true),
                key: o.key,
                last_modified: o.last_modified,
                size: o.size,
                storage_class: Some(ObjectVersionStorageClass::from_static(
                    ObjectVersionStorageClass::STANDARD,
                )),
                version_id: Some("null".to_string()),
                owner: o.owner,
                ..Default::default()
            })
            .collect();
        let (next_key_marker, next_version_id_marker) = if page.truncated {
            (page.last.clone(), Some("null".to_string()))
        } else {
            (None, None)
        };
        Ok(S3Response::new(ListObjectVersionsOutput {
            name: Some(input.bucket.clone()),
            prefix: Some(input.prefix.unwrap_or_default()),
            key_marker: input.key_marker,
            version_id_marker: input.version_id_marker,
            max_keys: Some(input.max_keys.unwrap_or(1000)),
            is_truncated: Some(page.truncated),
            versions: Some(versions),
            common_prefixes: Some(prefixes),
            delimiter: input.delimiter.filter(|d| !d.is_empty()),
            encoding_type: input.encoding_type,
            next_key_marker,
            next_version_id_marker,
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let owner = owner_of(&req)?;
        let input = req.input;
        refuse_encryption(
            input.server_side_encryption.as_ref(),
            input.sse_customer_algorithm.as_ref(),
            input.ssekms_key_id.as_ref(),
        )?;
        let store = self.store.clone();
        let (bucket, key) = (input.bucket, input.key);
        let (b, k) = (bucket.clone(), key.clone());
        let (content_type, metadata) = (
            input.content_type,
            input.metadata.unwrap_or_default().into_iter().collect(),
        );
        let headers = stored_headers(
            input.cache_control,
            input.content_disposition,
            input.content_encoding,
            input.content_language,
            input.expires,
        );
        let upload =
            blocking(move || store.create_upload(&b, &k, &owner, content_type, metadata, headers))
                .await?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(bucket),
            key: Some(key),
            upload_id: Some(upload.id),
            ..Default::default()
        }))
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let input = req.input;
        let (bucket, key, id, number) =
            (input.bucket, input.key, input.upload_id, input.part_number);
        if !(1..=MAX_PART_NUMBER).contains(&number) {
            return Err(StoreError::InvalidPartNumber(number).into());
        }
        {
            // Fail before reading the body.
            let store = self.store.clone();
            let (b, k, i) = (bucket.clone(), key.clone(), id.clone());
            blocking(move || store.check_upload(&b, &k, &i)).await?;
        }
        let body = self
            .receive(input.body, input.content_md5.as_deref())
            .await?;
        let etag = hex(&body.md5);
        let store = self.store.clone();
        let e = etag.clone();
        blocking(move || store.commit_part(&bucket, &key, &id, number, &body.temp, &e)).await?;
        Ok(S3Response::new(UploadPartOutput {
            e_tag: Some(ETag::Strong(etag)),
            ..Default::default()
        }))
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let input = req.input;
        let (src_bucket, src_key) = copy_source(&input.copy_source)?;
        let number = input.part_number;
        if !(1..=MAX_PART_NUMBER).contains(&number) {
            return Err(StoreError::InvalidPartNumber(number).into());
        }
        let conditions = SourceConditions {
            if_match: input.copy_source_if_match,
            if_unmodified_since: input.copy_source_if_unmodified_since,
            if_none_match: input.copy_source_if_none_match,
            if_modified_since: input.copy_source_if_modified_since,
        };
        let range = input.copy_source_range;
        let (bucket, key, id) = (input.bucket, input.key, input.upload_id);
        let store = self.store.clone();
        let etag = blocking(move || {
            store.check_upload(&bucket, &key, &id)?;
            let (src, file) = store.open_object(&src_bucket, &src_key)?;
            conditions.check(&src)?;
            let (offset, len) = copy_range(range.as_deref(), src.size)?;
            let (temp, mut out) = store.create_temp()?;
            let etag = match copy_with_md5(&file, offset, len, &mut out) {
                Ok(md5) => hex(&md5),
                Err(e) => {
                    let _ = fs::remove_file(&temp);
                    return Err(e).at(&temp);
                }
            };
            store.commit_part(&bucket, &key, &id, number, &temp, &etag)?;
            Ok(etag)
        })
        .await?;
        Ok(S3Response::new(UploadPartCopyOutput {
            copy_part_result: Some(CopyPartResult {
                e_tag: Some(ETag::Strong(etag)),
                last_modified: Some(Timestamp::from(std::time::SystemTime::now())),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        let store = self.store.clone();
        let bucket = req.input.bucket;
        blocking(move || store.head_bucket(&bucket)).await?;
        // us-east-1, which S3 reports as an empty LocationConstraint.
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let input = req.input;
        let parts = input
            .multipart_upload
            .and_then(|m| m.parts)
            .unwrap_or_default()
            .into_iter()
            .map(|p| match (p.part_number, p.e_tag) {
                (Some(n), Some(e)) => Ok((n, e.into_value())),
                _ => Err(s3_error!(
                    MalformedXML,
                    "every Part needs a PartNumber and an ETag"
                )),
            })
            .collect::<S3Result<Vec<_>>>()?;
        let condition = write_condition(input.if_match.as_ref(), input.if_none_match.as_ref())?;
        let store = self.store.clone();
        let (bucket, key, id) = (input.bucket, input.key, input.upload_id);
        let (b, k) = (bucket.clone(), key.clone());
        let meta = blocking(move || store.complete_upload(&b, &k, &id, &parts, condition)).await?;
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            location: Some(format!("/{bucket}/{key}")),
            bucket: Some(bucket),
            key: Some(key),
            e_tag: Some(meta.e_tag()),
            ..Default::default()
        }))
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let input = req.input;
        let store = self.store.clone();
        let (bucket, key, id) = (input.bucket, input.key, input.upload_id);
        blocking(move || store.abort_upload(&bucket, &key, &id)).await?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let owner = owner_of(&req)?;
        let input = req.input;
        let store = self.store.clone();
        let (b, k, i) = (
            input.bucket.clone(),
            input.key.clone(),
            input.upload_id.clone(),
        );
        let all = blocking(move || store.list_parts(&b, &k, &i)).await?;
        let max = input.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let after = input.part_number_marker.unwrap_or(0);
        let mut rest = all.into_iter().filter(|p| p.number > after).peekable();
        let parts: Vec<Part> = rest
            .by_ref()
            .take(max)
            .map(|p| Part {
                e_tag: Some(ETag::Strong(p.etag)),
                last_modified: Some(Timestamp::from(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(p.modified_unix_ms),
                )),
                part_number: Some(p.number),
                size: Some(p.size as i64),
                ..Default::default()
            })
            .collect();
        let truncated = rest.peek().is_some();
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(input.upload_id),
            part_number_marker: input.part_number_marker,
            next_part_number_marker: parts.last().and_then(|p| p.part_number),
            max_parts: Some(max as i32),
            is_truncated: Some(truncated),
            parts: Some(parts),
            initiator: Some(initiator(&owner)),
            owner: Some(owner_dto(&owner)),
            storage_class: Some(storage_class()),
            ..Default::default()
        }))
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let input = req.input;
        let store = self.store.clone();
        let bucket = input.bucket.clone();
        let prefix = input.prefix.clone().unwrap_or_default();
        let delimiter = input.delimiter.clone();
        let (key_marker, id_marker) = (input.key_marker.clone(), input.upload_id_marker.clone());
        let max = input.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
        let page = blocking(move || {
            store.list_uploads(
                &bucket,
                &prefix,
                delimiter.as_deref(),
                (
                    key_marker.as_deref().filter(|k| !k.is_empty()),
                    id_marker.as_deref(),
                ),
                max,
            )
        })
        .await?;
        let url = is_url_encoding(&input.encoding_type);
        let enc = |s: &str| if url { url_encode(s) } else { s.to_string() };
        let uploads = page
            .uploads
            .iter()
            .map(|u| MultipartUpload {
                initiated: Some(Timestamp::from(
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis(u.initiated_unix_ms),
                )),
                initiator: Some(initiator(&u.owner)),
                key: Some(enc(&u.key)),
                owner: Some(owner_dto(&u.owner)),
                storage_class: Some(storage_class()),
                upload_id: Some(u.id.clone()),
                ..Default::default()
            })
            .collect();
        let common_prefixes = page
            .common_prefixes
            .iter()
            .map(|p| CommonPrefix {
                prefix: Some(enc(p)),
            })
            .collect();
        let (next_key_marker, next_upload_id_marker) = page.next.map(|(k, i)| (enc(&k), i)).unzip();
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(input.bucket),
            prefix: input.prefix,
            delimiter: input.delimiter,
            key_marker: input.key_marker,
            upload_id_marker: input.upload_id_marker,
            max_uploads: Some(max as i32),
            is_truncated: Some(page.truncated),
            next_key_marker,
            next_upload_id_marker,
            uploads: Some(uploads),
            common_prefixes: Some(common_prefixes),
            encoding_type: input.encoding_type,
            ..Default::default()
        }))
    }

    async fn select_object_content(
        &self,
        req: S3Request<SelectObjectContentInput>,
    ) -> S3Result<S3Response<SelectObjectContentOutput>> {
        let arrow = wants_arrow(&req.headers)?;
        let input = req.input;
        let store = self.store.clone();
        let (bucket, key) = (input.bucket.clone(), input.key.clone());
        let (_meta, path) = blocking(move || store.object_file(&bucket, &key)).await?;
        let open: OpenSource = Box::new(move || {
            // SAFETY: the store never writes an object's data file after committing it: a
            // PUT writes a new file and renames metadata over the old one, and deletion only
            // unlinks, so the mapped bytes cannot change or shrink while the scan runs.
            let source = unsafe { FileSource::mapped(&path) }?;
            Ok(Box::new(source) as Box<dyn ObjectSource + Send>)
        });
        self.select.run(input, arrow, open).await
    }
}

/// Where a page resumes: after the entry a continuation token names (the hex of its name,
/// opaque to clients and safe for any key).
fn continuation(token: Option<&str>) -> S3Result<Option<String>> {
    token
        .map(|t| {
            decode_token(t).ok_or_else(|| {
                s3_error!(
                    InvalidArgument,
                    "The continuation token provided is incorrect"
                )
            })
        })
        .transpose()
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

    #[test]
    fn tokens() {
        assert_eq!(decode_token(&hex("a/ü".as_bytes())).as_deref(), Some("a/ü"));
        assert_eq!(decode_token("zz"), None);
    }
}
