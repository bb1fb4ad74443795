//! Who may sign requests. s3s verifies SigV4 (headers, presigned URLs and streaming
//! payloads) and asks this table for the secret of the access key in the request.

use s3s::auth::SimpleAuth;

use crate::config::User;

/// The s3s auth provider for the configured users.
pub fn users_auth(users: &[User]) -> SimpleAuth {
    let mut auth = SimpleAuth::new();
    for u in users {
        auth.register(u.access_key.clone(), u.secret_key.as_str().into());
    }
    auth
}
