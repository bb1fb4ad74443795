//! The client's error type. S3 failures keep the operation and key they happened on, and the
//! SDK's whole error chain as text, because "service error" alone tells a user nothing.

use std::io;

use datafusion::error::DataFusionError;

/// Everything that can stop a load, a run or a report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("{operation} {target}: {message}")]
    S3 {
        operation: &'static str,
        target: String,
        message: String,
        /// Whether the same request may succeed when sent again.
        retry: Retry,
    },
    /// A request failed on every attempt the client allows (`tried`: the endpoints, in the
    /// order tried).
    #[error("gave up after {attempts} attempts on {tried}: {last}")]
    GaveUp {
        attempts: usize,
        tried: String,
        last: Box<Error>,
    },
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A request the user made that cannot be carried out (bad argument, missing data).
    #[error("{0}")]
    Invalid(String),
    /// What a flag names is not there or not usable (found out once the command ran, e.g. a
    /// scheduler that does not answer): a usage error, as a malformed flag is.
    #[error("{flag} {message}")]
    Flag { flag: &'static str, message: String },
    /// Two modes returned different results for the same statement.
    #[error("{0}")]
    Mismatch(String),
}

/// Whether an S3 request that failed may succeed when sent again, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Sending it again fails again: an unknown key, a refused statement, a certificate not
    /// trusted, a request built wrong.
    Never,
    /// The endpoint is up and at its limit (`SlowDown`, `ServiceUnavailable`, 503: Sift's
    /// gateway answers so beyond its select queue). Another endpoint may take the request
    /// now, this one a moment later; it is not passed over, as it is not down.
    Busy,
    /// The endpoint failed it: a refused or reset connection, a timeout, an answer cut
    /// short, or an error on the store's side (`InternalError`, 500, which a gateway in
    /// front of a store that is down answers). Another endpoint may take it; this one is
    /// passed over for a while.
    Failed,
}

/// The S3 error codes of a busy store ([`Retry::Busy`]).
const BUSY_CODES: [&str; 2] = ["SlowDown", "ServiceUnavailable"];

/// The S3 error codes of a store that failed a request it may answer when sent again
/// ([`Retry::Failed`]): an error on its side, or a connection too slow.
const FAILED_CODES: [&str; 2] = ["InternalError", "RequestTimeout"];

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An S3 request's failure: the service's code and message when it answered, or the
    /// whole source chain (connection refused, timeout, …) when it did not.
    pub fn s3<E, R>(
        operation: &'static str,
        target: impl Into<String>,
        error: aws_sdk_s3::error::SdkError<E, R>,
    ) -> Error
    where
        E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + 'static,
    {
        use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
        let (message, retry) = match &error {
            SdkError::ServiceError(service) => {
                let e = service.err();
                let code = e.code().unwrap_or("error");
                let message = format!("{code}: {}", e.message().unwrap_or("(no message)"));
                let retry = match code {
                    code if BUSY_CODES.contains(&code) => Retry::Busy,
                    code if FAILED_CODES.contains(&code) => Retry::Failed,
                    _ => Retry::Never,
                };
                (message, retry)
            }
            // Built wrong on this side: sending it again builds it wrong again.
            SdkError::ConstructionFailure(_) => {
                (DisplayErrorContext(&error).to_string(), Retry::Never)
            }
            // A certificate refused now is refused on every retry.
            other if crate::tls::is_refusal(other) => {
                (DisplayErrorContext(other).to_string(), Retry::Never)
            }
            // Refused or reset connections, timeouts, answers cut short.
            other => (DisplayErrorContext(other).to_string(), Retry::Failed),
        };
        Error::S3 {
            operation,
            target: target.into(),
            message,
            retry,
        }
    }

    /// Whether sending the request again may succeed ([`Error::S3`]'s `retry`).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::S3 { retry, .. } if *retry != Retry::Never)
    }

    /// Whether the endpoint was busy ([`Retry::Busy`]).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            Error::S3 {
                retry: Retry::Busy,
                ..
            }
        )
    }

    /// A response body that could not be read to its end.
    pub fn body(
        operation: &'static str,
        target: impl Into<String>,
        error: impl std::error::Error + 'static,
    ) -> Error {
        Error::S3 {
            operation,
            target: target.into(),
            message: aws_sdk_s3::error::DisplayErrorContext(error).to_string(),
            retry: Retry::Failed,
        }
    }
}

impl From<Error> for DataFusionError {
    fn from(e: Error) -> DataFusionError {
        match e {
            Error::DataFusion(e) => e,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}
