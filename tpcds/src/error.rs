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
    },
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A request the user made that cannot be carried out (bad argument, missing data).
    #[error("{0}")]
    Invalid(String),
    /// Two modes returned different results for the same statement.
    #[error("{0}")]
    Mismatch(String),
}

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
        R: std::fmt::Debug,
    {
        use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
        let message = match &error {
            SdkError::ServiceError(service) => {
                let e = service.err();
                format!(
                    "{}: {}",
                    e.code().unwrap_or("error"),
                    e.message().unwrap_or("(no message)")
                )
            }
            other => DisplayErrorContext(other).to_string(),
        };
        Error::S3 {
            operation,
            target: target.into(),
            message,
        }
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
