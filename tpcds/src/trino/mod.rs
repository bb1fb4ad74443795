//! Trino, the engine the Ceph benchmark ran, against the same objects: the DDL that makes
//! its Hive connector read what `load` wrote ([`ddl`]), the query files in its dialect
//! ([`dialect`]), a client of its statement protocol ([`client`]), and the benchmark run
//! through it with S3 Select pushdown off and on, in `run`'s layout ([`bench`]), its rows
//! compared with Sift's ([`compare`]).
//!
//! Trino removed its S3 Select pushdown in 427; the newest release on Maven Central with it
//! is what `scripts/trino.sh` installs (docs/trino.md).

pub mod bench;
pub mod client;
pub mod compare;
pub mod ddl;
pub mod dialect;
