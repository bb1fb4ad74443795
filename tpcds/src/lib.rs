//! Sift's TPC-DS client: generating the 24 tables in dsdgen's flat-file format ([`data`],
//! cut into parts by [`layout`]), loading them into any S3 endpoint ([`load`]), and running
//! the 99 queries ([`queries`]) on DataFusion with table scans fetched or pushed down through
//! S3 Select ([`scan`], [`pushdown`], [`run`]), then reporting ([`report`]).

pub mod cluster;
pub mod error;
pub mod load;
mod metrics;
pub mod net;
mod plan_text;
pub mod probe;
pub mod pushdown;
pub mod queries;
pub mod report;
pub mod run;
pub mod s3;
pub mod scan;
pub mod tls;
pub mod trino;

/// The data (generator, schema, parts, Parquet), from the crate that builds without
/// DataFusion and the AWS SDK.
pub use sift_tpcds_data::{data, dsdgen_input, layout, parquet, schema};
