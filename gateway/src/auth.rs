//! Who may sign requests. s3s verifies SigV4 (headers, presigned URLs and streaming
//! payloads) and asks [`Users`] for the secret of the access key in the request.

use std::collections::HashMap;

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
