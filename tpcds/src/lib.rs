//! Sift's TPC-DS client. So far: generating the 24 tables in dsdgen's flat-file format
//! ([`data`]). Loading into S3 and running the queries on DataFusion come next.

pub mod data;
