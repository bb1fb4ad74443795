//! Who may sign requests, and what they may do. s3s verifies SigV4 (headers, presigned
//! URLs and streaming payloads), asking [`Users`] for the secret of the request's access
//! key, then asks [`Access`] whether the request may proceed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::{S3Auth, SecretKey};
use s3s::{s3_error, S3Result};

use crate::config::User;

/// The configured users, by access key.
pub struct Users {
    secrets: HashMap<String, String>,
}

impl Users {
    pub fn new(users: &[User]) -> Self {
        Users {
            secrets: users
                .iter()
                .map(|u| (u.access_key.clone(), u.secret_key.clone()))
                .collect(),
        }
    }
}

#[async_trait::async_trait]
impl S3Auth for Users {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        // S3's answer for an unknown key (s3s's SimpleAuth says NotSignedUp, which clients
        // report as an account problem rather than a wrong key).
        match self.secrets.get(access_key) {
            Some(secret) => Ok(SecretKey::from(secret.as_str())),
            None => Err(s3_error!(
                InvalidAccessKeyId,
                "The AWS Access Key Id you provided does not exist in our records."
            )),
        }
    }
}

/// What the access check learned about a request — its S3 operation and signer — for the
/// request's access-log line and metrics. The HTTP layer puts an empty one in the request's
/// extensions; s3s hands those to [`Access::check`] once the signature is verified.
#[derive(Debug, Default, Clone)]
pub struct RequestInfo {
    pub operation: Option<String>,
    pub access_key: Option<String>,
}

/// Shared between the HTTP layer and the access check of one request.
pub type RequestSlot = Arc<Mutex<RequestInfo>>;

/// Who may do what once the signature checks out: every user may do everything (Sift has
/// no ACLs or policies), and anonymous requests may only read when the gateway was started
/// with `--allow-anonymous-read`.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub allow_anonymous_read: bool,
}

/// Operations that only read, which `--allow-anonymous-read` opens to unsigned requests.
const READ_OPERATIONS: &[&str] = &[
    "GetObject",
    "HeadObject",
    "HeadBucket",
    "ListObjects",
    "ListObjectsV2",
    "ListObjectVersions",
    "SelectObjectContent",
];

#[async_trait::async_trait]
impl S3Access for Access {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        let operation = cx.s3_op().name().to_string();
        let access_key = cx.credentials().map(|c| c.access_key.clone());
        let signed = access_key.is_some();
        let read = READ_OPERATIONS.contains(&operation.as_str());
        if let Some(slot) = cx.extensions_mut().get::<RequestSlot>() {
            let mut info = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            info.operation = Some(operation);
            info.access_key = access_key;
        }
        if signed || (self.allow_anonymous_read && read) {
            Ok(())
        } else {
            Err(s3_error!(AccessDenied, "Signature is required"))
        }
    }
}
