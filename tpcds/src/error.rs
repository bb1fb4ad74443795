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
        /// The store was busy or unreachable, or the answer was cut short: the same request
        /// may succeed when sent again, to this endpoint or another.
        transient: bool,
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

/// The S3 error codes that ask the client to send the request again later: the store is
/// busy (`SlowDown`, `ServiceUnavailable`, 503) or failed on its side (`InternalError`, 500;
/// a gateway in front of a store that is down answers so), or the connection was too slow.
const TRANSIENT_CODES: [&str; 4] = [
    "SlowDown",
    "ServiceUnavailable",
    "InternalError",
    "RequestTimeout",
];

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
        let (message, transient) = match &error {
            SdkError::ServiceError(service) => {
                let e = service.err();
                let code = e.code().unwrap_or("error");
                let message = format!("{code}: {}", e.message().unwrap_or("(no message)"));
                (message, TRANSIENT_CODES.contains(&code))
            }
            // Built wrong on this side: sending it again builds it wrong again.
            SdkError::ConstructionFailure(_) => (DisplayErrorContext(&error).to_string(), false),
            // A certificate refused now is refused on every retry.
            other if crate::tls::is_refusal(other) => {
                (DisplayErrorContext(other).to_string(), false)
            }
            // Refused or reset connections, timeouts, answers cut short.
            other => (DisplayErrorContext(other).to_string(), true),
        };
        Error::S3 {
            operation,
            target: target.into(),
            message,
            transient,
        }
    }

    /// Whether sending the request again may succeed ([`Error::S3`]'s `transient`).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::S3 {
                transient: true,
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
            transient: true,
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
