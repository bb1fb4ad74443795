//! The upstream backend: Sift in front of another S3 store (Ceph RGW, MinIO, AWS S3).
//!
//! Every operation but SelectObjectContent is forwarded with `s3s-aws`'s proxy, which maps
//! s3s's request and response types onto aws-sdk-s3's and passes bodies through as streams
//! in both directions, so no object is ever held in memory; the upstream's status codes
//! and S3 error codes come back unchanged. SelectObjectContent is answered here: the
//! engine reads the object from upstream with a GET (a ranged GET for a ScanRange), and
//! only the result goes back to the client.
//!
//! Failures of the upstream itself (refused connection, no answer, a body that stalls) are
//! `503 ServiceUnavailable` before a response has begun, and an error event after.

use std::io::{self, Read};
use std::time::Duration;

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    StalledStreamProtectionConfig,
};
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use bytes::{Buf, Bytes};
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};
use sift_engine::ObjectSource;
use tokio::runtime::Handle;

use crate::select::{wants_arrow, OpenSource, SelectService};

/// Where the upstream store is and how Sift signs its requests to it.
#[derive(Clone)]
pub struct UpstreamConfig {
    /// `http://host:port` (or https).
    pub endpoint: String,
    pub access_key: String,
    pub secret_key: String,
    pub region: String,
    /// How long the upstream may stay silent: to connect, to answer, and between two
    /// pieces of a body.
    pub timeout: Duration,
    /// PEM certificates of the authorities an https:// upstream is checked against instead
    /// of the system's (`--ca-file`).
    pub ca_bundle: Option<Vec<u8>>,
}

impl std::fmt::Debug for UpstreamConfig {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamConfig")
            .field("endpoint", &self.endpoint)
            .field("access_key", &self.access_key)
            .field("region", &self.region)
            .field("timeout", &self.timeout)
            .field("ca_bundle", &self.ca_bundle.as_ref().map(|_| "(PEM)"))
            .finish_non_exhaustive()
    }
}

/// The SDK client for the upstream store: path style (a store beside Sift rarely has
/// wildcard DNS), and checksums only where S3 requires them, because stores such as Ceph
/// RGW 18 do not all accept the SDK's newer default trailing checksums.
pub fn upstream_client(config: &UpstreamConfig) -> Client {
    let mut sdk = aws_sdk_s3::Config::builder();
    if let Some(pem) = &config.ca_bundle {
        sdk = sdk.http_client(http_client_trusting(pem));
    }
    let sdk = sdk
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(config.region.clone()))
        .endpoint_url(&config.endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(
            config.access_key.clone(),
            config.secret_key.clone(),
            None,
            None,
            "sift-upstream",
        ))
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
        // No whole-operation timeout: a large upload through the proxy may take long while
        // making progress. Stalls are caught by the stalled-stream protection instead.
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(config.timeout.min(Duration::from_secs(10)))
                .build(),
        )
        .stalled_stream_protection(
            StalledStreamProtectionConfig::enabled()
                .grace_period(config.timeout)
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(2))
        .build();
    Client::from_conf(sdk)
}

/// The SDK's own HTTPS client, trusting only the authorities in `pem` (already checked to
/// hold certificates by [`crate::tls::read_ca_bundle`]).
fn http_client_trusting(pem: &[u8]) -> aws_sdk_s3::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{
        rustls_provider::CryptoMode, Provider, TlsContext, TrustStore,
    };
    let trust = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(pem.to_vec());
    let context = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .expect("only additional server names can fail a context, and none is added");
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(context)
        .build_https()
}

/// The gateway's `S3` implementation in front of an upstream store.
pub struct UpstreamGateway {
    proxy: s3s_aws::Proxy,
    client: Client,
    select: SelectService,
    timeout: Duration,
}

impl std::fmt::Debug for UpstreamGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamGateway").finish_non_exhaustive()
    }
}

impl UpstreamGateway {
    pub fn new(config: &UpstreamConfig, select: SelectService) -> Self {
        let client = upstream_client(config);
        UpstreamGateway {
            proxy: s3s_aws::Proxy::from(client.clone()),
            client,
            select,
            timeout: config.timeout,
        }
    }

    /// The object's size and ETag, or the upstream's own error for it.
    async fn lookup(&self, bucket: &str, key: &str) -> S3Result<(u64, Option<String>)> {
        let head = self.client.head_object().bucket(bucket).key(key).send();
        match self.within_timeout(head).await? {
            // Without a size the scan could not tell a whole object from a cut one.
            Ok(out) => match out.content_length().and_then(|n| u64::try_from(n).ok()) {
                Some(size) => Ok((size, out.e_tag().map(str::to_string))),
                None => Err(S3Error::with_message(
                    S3ErrorCode::InternalError,
                    "the upstream store's HEAD of the object gave no Content-Length",
                )),
            },
            // A HEAD answer has no body, hence no S3 error code: ask again with a GET of
            // one byte, whose error names the problem (NoSuchKey, NoSuchBucket, …).
            Err(SdkError::ServiceError(_)) => {
                let get = self
                    .client
                    .get_object()
                    .bucket(bucket)
                    .key(key)
                    .range("bytes=0-0")
                    .send();
                match self.within_timeout(get).await? {
                    Err(e) => Err(upstream_error(e)),
                    Ok(_) => Err(S3Error::with_message(
                        S3ErrorCode::InternalError,
                        "the upstream store refused a HEAD of the object but answered a GET",
                    )),
                }
            }
            Err(e) => Err(upstream_error(e)),
        }
    }

    async fn within_timeout<T>(&self, f: impl std::future::Future<Output = T>) -> S3Result<T> {
        tokio::time::timeout(self.timeout, f).await.map_err(|_| {
            unavailable(format!(
                "the upstream store did not answer within {} s",
                self.timeout.as_secs_f64()
            ))
        })
    }
}

fn unavailable(message: String) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::ServiceUnavailable, message);
    e.set_status_code(hyper::StatusCode::SERVICE_UNAVAILABLE);
    e
}

/// The upstream's answer as the client's error: its S3 code, message and status when it
/// answered; 503 ServiceUnavailable when it could not be reached.
fn upstream_error<E>(e: SdkError<E, HttpResponse>) -> S3Error
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match &e {
        SdkError::ServiceError(service) => {
            let code = e
                .code()
                .and_then(|c| S3ErrorCode::from_bytes(c.as_bytes()))
                .unwrap_or(S3ErrorCode::InternalError);
            let mut err = S3Error::new(code);
            if let Some(m) = e.message() {
                err.set_message(m.to_string());
            }
            if let Ok(status) = hyper::StatusCode::from_u16(service.raw().status().as_u16()) {
                err.set_status_code(status);
            }
            err
        }
        _ => unavailable(format!(
            "the upstream store could not be reached: {}",
            DisplayErrorContext(&e)
        )),
    }
}

/// s3s-aws reports an upstream that never answered as a 500 InternalError whose source is
/// the SDK's error; the SDK names those failures "dispatch failure" (no connection),
/// "timeout" and "response error" (no valid answer). Make them the 503 a client retries.
fn unreachable_as_unavailable(e: S3Error) -> S3Error {
    if *e.code() != S3ErrorCode::InternalError {
        return e;
    }
    let Some(source) = e.source() else { return e };
    if !matches!(
        source.to_string().as_str(),
        "dispatch failure" | "timeout" | "response error"
    ) {
        return e;
    }
    unavailable(format!(
        "the upstream store could not be reached: {}",
        DisplayErrorContext(source)
    ))
}

/// The object on the upstream store, as the engine reads it.
struct UpstreamSource {
    client: Client,
    bucket: String,
    key: String,
    size: u64,
    /// Every GET asks for this ETag, so a select never mixes two versions of the object.
    etag: Option<String>,
    runtime: Handle,
    timeout: Duration,
}

impl ObjectSource for UpstreamSource {
    fn size(&self) -> Option<u64> {
        Some(self.size)
    }

    fn open(&self, offset: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        self.get(offset, None)
    }

    fn open_range(&self, offset: u64, len: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        self.get(offset, Some(len))
    }
}

impl UpstreamSource {
    /// A GET from `offset`, to the end or for `len` bytes.
    fn get(&self, offset: u64, len: Option<u64>) -> io::Result<Box<dyn Read + Send + '_>> {
        if offset >= self.size || len == Some(0) {
            return Ok(Box::new(io::empty()));
        }
        let mut get = self.client.get_object().bucket(&self.bucket).key(&self.key);
        match len {
            Some(n) => get = get.range(format!("bytes={offset}-{}", offset + n - 1)),
            None if offset > 0 => get = get.range(format!("bytes={offset}-")),
            None => {}
        }
        if let Some(etag) = &self.etag {
            get = get.if_match(etag);
        }
        let out = self
            .runtime
            .block_on(tokio::time::timeout(self.timeout, get.send()))
            .map_err(|_| silent(self.timeout))?
            .map_err(|e| {
                io::Error::other(format!(
                    "the upstream store refused the GET: {}",
                    DisplayErrorContext(&e)
                ))
            })?;
        Ok(Box::new(BodyReader::spawn(
            out.body,
            &self.runtime,
            self.timeout,
        )))
    }
}

fn silent(timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "the upstream store sent nothing for {} s",
            timeout.as_secs_f64()
        ),
    )
}

/// Pieces of a body received ahead of the engine: enough to keep the network busy while
/// the engine works on the previous ones, few enough to bound memory (hyper hands over
/// pieces of at most a few hundred KiB).
const PREFETCH: usize = 32;

/// A GET's body as a blocking reader for the engine's thread. A task on the runtime
/// receives the body ahead of the engine (so that receiving and scanning overlap instead
/// of taking turns); a body that stops for longer than the timeout, or ends early, is an
/// error rather than a short object. Dropping the reader stops the task and closes the
/// connection.
struct BodyReader {
    rx: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
    pending: Bytes,
    done: bool,
}

impl BodyReader {
    fn spawn(mut body: ByteStream, runtime: &Handle, timeout: Duration) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(PREFETCH);
        runtime.spawn(async move {
            loop {
                let piece = match tokio::time::timeout(timeout, body.next()).await {
                    Err(_) => Err(silent(timeout)),
                    Ok(None) => return,
                    Ok(Some(Ok(bytes))) => Ok(bytes),
                    Ok(Some(Err(e))) => Err(io::Error::other(format!(
                        "reading from the upstream store failed: {}",
                        DisplayErrorContext(&e)
                    ))),
                };
                let failed = piece.is_err();
                if tx.send(piece).await.is_err() || failed {
                    return;
                }
            }
        });
        BodyReader {
            rx,
            pending: Bytes::new(),
            done: false,
        }
    }
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pending.is_empty() {
            if self.done {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                None => self.done = true,
                Some(piece) => self.pending = piece?,
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.advance(n);
        Ok(n)
    }
}

/// Forwards every listed operation to the proxy; written as one macro so that the whole
/// `impl S3` (which `async_trait` must see at once) comes out of it.
macro_rules! forward_all_but_select {
    ($($op:ident: $input:ident => $output:ident;)*) => {
        /// The operations forwarded to the upstream store, by their method names.
        #[cfg(test)]
        const FORWARDED: &[&str] = &[$(stringify!($op)),*];

        #[async_trait::async_trait]
        impl S3 for UpstreamGateway {
            $(
                async fn $op(&self, req: S3Request<$input>) -> S3Result<S3Response<$output>> {
                    self.proxy.$op(req).await.map_err(unreachable_as_unavailable)
                }
            )*

            async fn select_object_content(
                &self,
                req: S3Request<SelectObjectContentInput>,
            ) -> S3Result<S3Response<SelectObjectContentOutput>> {
                let arrow = wants_arrow(&req.headers)?;
                let input = req.input;
                let (size, etag) = self.lookup(&input.bucket, &input.key).await?;
                let source = UpstreamSource {
                    client: self.client.clone(),
                    bucket: input.bucket.clone(),
                    key: input.key.clone(),
                    size,
                    etag,
                    runtime: Handle::current(),
                    timeout: self.timeout,
                };
                let open: OpenSource =
                    Box::new(move || Ok(Box::new(source) as Box<dyn ObjectSource + Send>));
                self.select.run(input, arrow, open).await
            }
        }
    };
}

forward_all_but_select! {
    abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput;
    complete_multipart_upload: CompleteMultipartUploadInput => CompleteMultipartUploadOutput;
    copy_object: CopyObjectInput => CopyObjectOutput;
    create_bucket: CreateBucketInput => CreateBucketOutput;
    create_bucket_metadata_table_configuration: CreateBucketMetadataTableConfigurationInput => CreateBucketMetadataTableConfigurationOutput;
    create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput;
    create_session: CreateSessionInput => CreateSessionOutput;
    delete_bucket: DeleteBucketInput => DeleteBucketOutput;
    delete_bucket_analytics_configuration: DeleteBucketAnalyticsConfigurationInput => DeleteBucketAnalyticsConfigurationOutput;
    delete_bucket_cors: DeleteBucketCorsInput => DeleteBucketCorsOutput;
    delete_bucket_encryption: DeleteBucketEncryptionInput => DeleteBucketEncryptionOutput;
    delete_bucket_intelligent_tiering_configuration: DeleteBucketIntelligentTieringConfigurationInput => DeleteBucketIntelligentTieringConfigurationOutput;
    delete_bucket_inventory_configuration: DeleteBucketInventoryConfigurationInput => DeleteBucketInventoryConfigurationOutput;
    delete_bucket_lifecycle: DeleteBucketLifecycleInput => DeleteBucketLifecycleOutput;
    delete_bucket_metadata_table_configuration: DeleteBucketMetadataTableConfigurationInput => DeleteBucketMetadataTableConfigurationOutput;
    delete_bucket_metrics_configuration: DeleteBucketMetricsConfigurationInput => DeleteBucketMetricsConfigurationOutput;
    delete_bucket_ownership_controls: DeleteBucketOwnershipControlsInput => DeleteBucketOwnershipControlsOutput;
    delete_bucket_policy: DeleteBucketPolicyInput => DeleteBucketPolicyOutput;
    delete_bucket_replication: DeleteBucketReplicationInput => DeleteBucketReplicationOutput;
    delete_bucket_tagging: DeleteBucketTaggingInput => DeleteBucketTaggingOutput;
    delete_bucket_website: DeleteBucketWebsiteInput => DeleteBucketWebsiteOutput;
    delete_object: DeleteObjectInput => DeleteObjectOutput;
    delete_object_tagging: DeleteObjectTaggingInput => DeleteObjectTaggingOutput;
    delete_objects: DeleteObjectsInput => DeleteObjectsOutput;
    delete_public_access_block: DeletePublicAccessBlockInput => DeletePublicAccessBlockOutput;
    get_bucket_accelerate_configuration: GetBucketAccelerateConfigurationInput => GetBucketAccelerateConfigurationOutput;
    get_bucket_acl: GetBucketAclInput => GetBucketAclOutput;
    get_bucket_analytics_configuration: GetBucketAnalyticsConfigurationInput => GetBucketAnalyticsConfigurationOutput;
    get_bucket_cors: GetBucketCorsInput => GetBucketCorsOutput;
    get_bucket_encryption: GetBucketEncryptionInput => GetBucketEncryptionOutput;
    get_bucket_intelligent_tiering_configuration: GetBucketIntelligentTieringConfigurationInput => GetBucketIntelligentTieringConfigurationOutput;
    get_bucket_inventory_configuration: GetBucketInventoryConfigurationInput => GetBucketInventoryConfigurationOutput;
    get_bucket_lifecycle_configuration: GetBucketLifecycleConfigurationInput => GetBucketLifecycleConfigurationOutput;
    get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput;
    get_bucket_logging: GetBucketLoggingInput => GetBucketLoggingOutput;
    get_bucket_metadata_table_configuration: GetBucketMetadataTableConfigurationInput => GetBucketMetadataTableConfigurationOutput;
    get_bucket_metrics_configuration: GetBucketMetricsConfigurationInput => GetBucketMetricsConfigurationOutput;
    get_bucket_notification_configuration: GetBucketNotificationConfigurationInput => GetBucketNotificationConfigurationOutput;
    get_bucket_ownership_controls: GetBucketOwnershipControlsInput => GetBucketOwnershipControlsOutput;
    get_bucket_policy: GetBucketPolicyInput => GetBucketPolicyOutput;
    get_bucket_policy_status: GetBucketPolicyStatusInput => GetBucketPolicyStatusOutput;
    get_bucket_replication: GetBucketReplicationInput => GetBucketReplicationOutput;
    get_bucket_request_payment: GetBucketRequestPaymentInput => GetBucketRequestPaymentOutput;
    get_bucket_tagging: GetBucketTaggingInput => GetBucketTaggingOutput;
    get_bucket_versioning: GetBucketVersioningInput => GetBucketVersioningOutput;
    get_bucket_website: GetBucketWebsiteInput => GetBucketWebsiteOutput;
    get_object: GetObjectInput => GetObjectOutput;
    get_object_acl: GetObjectAclInput => GetObjectAclOutput;
    get_object_attributes: GetObjectAttributesInput => GetObjectAttributesOutput;
    get_object_legal_hold: GetObjectLegalHoldInput => GetObjectLegalHoldOutput;
    get_object_lock_configuration: GetObjectLockConfigurationInput => GetObjectLockConfigurationOutput;
    get_object_retention: GetObjectRetentionInput => GetObjectRetentionOutput;
    get_object_tagging: GetObjectTaggingInput => GetObjectTaggingOutput;
    get_object_torrent: GetObjectTorrentInput => GetObjectTorrentOutput;
    get_public_access_block: GetPublicAccessBlockInput => GetPublicAccessBlockOutput;
    head_bucket: HeadBucketInput => HeadBucketOutput;
    head_object: HeadObjectInput => HeadObjectOutput;
    list_bucket_analytics_configurations: ListBucketAnalyticsConfigurationsInput => ListBucketAnalyticsConfigurationsOutput;
    list_bucket_intelligent_tiering_configurations: ListBucketIntelligentTieringConfigurationsInput => ListBucketIntelligentTieringConfigurationsOutput;
    list_bucket_inventory_configurations: ListBucketInventoryConfigurationsInput => ListBucketInventoryConfigurationsOutput;
    list_bucket_metrics_configurations: ListBucketMetricsConfigurationsInput => ListBucketMetricsConfigurationsOutput;
    list_buckets: ListBucketsInput => ListBucketsOutput;
    list_directory_buckets: ListDirectoryBucketsInput => ListDirectoryBucketsOutput;
    list_multipart_uploads: ListMultipartUploadsInput => ListMultipartUploadsOutput;
    list_object_versions: ListObjectVersionsInput => ListObjectVersionsOutput;
    list_objects: ListObjectsInput => ListObjectsOutput;
    list_objects_v2: ListObjectsV2Input => ListObjectsV2Output;
    list_parts: ListPartsInput => ListPartsOutput;
    put_bucket_accelerate_configuration: PutBucketAccelerateConfigurationInput => PutBucketAccelerateConfigurationOutput;
    put_bucket_acl: PutBucketAclInput => PutBucketAclOutput;
    put_bucket_analytics_configuration: PutBucketAnalyticsConfigurationInput => PutBucketAnalyticsConfigurationOutput;
    put_bucket_cors: PutBucketCorsInput => PutBucketCorsOutput;
    put_bucket_encryption: PutBucketEncryptionInput => PutBucketEncryptionOutput;
    put_bucket_intelligent_tiering_configuration: PutBucketIntelligentTieringConfigurationInput => PutBucketIntelligentTieringConfigurationOutput;
    put_bucket_inventory_configuration: PutBucketInventoryConfigurationInput => PutBucketInventoryConfigurationOutput;
    put_bucket_lifecycle_configuration: PutBucketLifecycleConfigurationInput => PutBucketLifecycleConfigurationOutput;
    put_bucket_logging: PutBucketLoggingInput => PutBucketLoggingOutput;
    put_bucket_metrics_configuration: PutBucketMetricsConfigurationInput => PutBucketMetricsConfigurationOutput;
    put_bucket_notification_configuration: PutBucketNotificationConfigurationInput => PutBucketNotificationConfigurationOutput;
    put_bucket_ownership_controls: PutBucketOwnershipControlsInput => PutBucketOwnershipControlsOutput;
    put_bucket_policy: PutBucketPolicyInput => PutBucketPolicyOutput;
    put_bucket_replication: PutBucketReplicationInput => PutBucketReplicationOutput;
    put_bucket_request_payment: PutBucketRequestPaymentInput => PutBucketRequestPaymentOutput;
    put_bucket_tagging: PutBucketTaggingInput => PutBucketTaggingOutput;
    put_bucket_versioning: PutBucketVersioningInput => PutBucketVersioningOutput;
    put_bucket_website: PutBucketWebsiteInput => PutBucketWebsiteOutput;
    put_object: PutObjectInput => PutObjectOutput;
    put_object_acl: PutObjectAclInput => PutObjectAclOutput;
    put_object_legal_hold: PutObjectLegalHoldInput => PutObjectLegalHoldOutput;
    put_object_lock_configuration: PutObjectLockConfigurationInput => PutObjectLockConfigurationOutput;
    put_object_retention: PutObjectRetentionInput => PutObjectRetentionOutput;
    put_object_tagging: PutObjectTaggingInput => PutObjectTaggingOutput;
    put_public_access_block: PutPublicAccessBlockInput => PutPublicAccessBlockOutput;
    restore_object: RestoreObjectInput => RestoreObjectOutput;
    upload_part: UploadPartInput => UploadPartOutput;
    upload_part_copy: UploadPartCopyInput => UploadPartCopyOutput;
    write_get_object_response: WriteGetObjectResponseInput => WriteGetObjectResponseOutput;
}

#[cfg(test)]
mod tests {
    use super::FORWARDED;

    /// Operations of s3s's `S3` trait that upstream mode answers with s3s's NotImplemented
    /// on purpose, with why.
    const REFUSED: &[(&str, &str)] = &[(
        "post_object",
        "browser form uploads: the AWS SDK the proxy forwards with has no such operation",
    )];

    /// The methods of s3s's `S3` trait, read from the source of the s3s the build uses.
    fn s3_trait_methods() -> Vec<String> {
        let metadata = std::process::Command::new(env!("CARGO"))
            // Not --offline: metadata reads every package's manifest, those of other platforms'
            // dependencies too, which a build on this one never downloaded.
            .args(["metadata", "--format-version", "1", "--locked"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(metadata.status.success(), "cargo metadata failed");
        let metadata: serde_json::Value =
            serde_json::from_slice(&metadata.stdout).expect("cargo metadata is JSON");
        let manifest = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .find(|p| p["name"] == "s3s")
            .and_then(|p| p["manifest_path"].as_str())
            .expect("s3s is a dependency");
        let source = std::path::Path::new(manifest).with_file_name("src/s3_trait.rs");
        let text = std::fs::read_to_string(&source).expect("s3s's S3 trait source");
        let start = text.find("pub trait S3").expect("the S3 trait");
        text[start..]
            .split("async fn ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .map(str::to_string)
            .collect()
    }

    /// Fails when s3s gains an operation that upstream mode would answer NotImplemented
    /// without anyone having decided so: forward it, or refuse it here with a reason.
    #[test]
    fn every_s3_operation_is_forwarded_selected_or_refused_on_purpose() {
        let methods = s3_trait_methods();
        assert!(methods.len() > 90, "found only {methods:?}");
        let undecided: Vec<&String> = methods
            .iter()
            .filter(|m| {
                !FORWARDED.contains(&m.as_str())
                    && m.as_str() != "select_object_content"
                    && !REFUSED.iter().any(|(r, _)| r == m)
            })
            .collect();
        assert!(
            undecided.is_empty(),
            "neither forwarded nor refused: {undecided:?}"
        );
        for name in FORWARDED.iter().chain(REFUSED.iter().map(|(r, _)| r)) {
            assert!(
                methods.iter().any(|m| m == name),
                "{name} is not an S3 operation"
            );
        }
    }
}
