//! Sift's S3 Select engine.

pub mod error;
pub mod sql;
pub mod value;

pub use error::{ErrorCode, Result, SelectError};
