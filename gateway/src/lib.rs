//! Sift's S3 gateway: an S3 endpoint over a local directory whose SelectObjectContent runs
//! Sift's engine next to the data.
//!
//! [`config`] (what it is started with) → [`server`] (hyper, s3s, `/health`, shutdown) →
//! [`store`] (the `S3` operations on the local directory) and [`select`] (request mapping,
//! the engine on a blocking thread, the event stream). [`auth`] hands s3s the users;
//! [`tls`] reads the certificates of HTTPS.

pub mod auth;
pub mod config;
pub mod local;
pub mod metrics;
pub mod select;
pub mod server;
pub mod store;
pub mod tls;
pub mod upstream;

pub use config::{GatewayConfig, User};
