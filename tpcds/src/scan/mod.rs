//! A TPC-DS table in S3 as a DataFusion table, scanned one of three ways ([`Mode`]).
//!
//! The table is the list of its part objects. A scan is a list of HTTP requests per
//! DataFusion partition; each partition runs its requests with a few in flight and in order:
//!
//! * **fetch**: ranged GetObjects of whole parts; the client parses the text (or the Parquet
//!   file) and applies the scan's filters itself, as Trino's scan-filter operator does
//!   without pushdown.
//! * **pushdown**: one SelectObjectContent per ScanRange split of a part, asking only for the
//!   columns the plan needs and the rows that pass every filter [`crate::pushdown`] can
//!   express exactly; filters it cannot express stay with DataFusion (and are declared so).
//! * **dynamic**: pushdown plus the filters DataFusion's hash joins derive from their build
//!   side while the query runs (min/max of the join keys, or the key list when small). The
//!   probe-side scan waits for them before sending its first request, so a fact-table scan
//!   asks only for rows that can find a join partner.
//!
//! The parts, after DataFusion's split of a table provider, its execution plan and its file
//! opener:
//!
//! - [`S3Table`] (`table`) is the table provider: it lowers each filter it is offered to
//!   S3 Select's SQL once (`filter`), and plans a scan's requests;
//! - `ScanSource` (`source`) is the file source of DataFusion's own file scan, whose
//!   "files" are each partition's list of requests: statistics, the dynamic filters it takes
//!   from joins, its metrics, and the opener that turns a partition's requests into a stream;
//! - `stream` has one stream type per request kind (fetched CSV, fetched Parquet, selected
//!   CSV), each turning response bodies into record batches;
//! - `request` sends the HTTP requests, one task each under the client-wide limit.
//!
//! Object bytes read by the store (GET bodies, or S3 Select's `BytesScanned`) are counted in
//! [`Store::scanned`] and in each scan's metrics (`bytes_scanned`, with `bytes_received`,
//! `requests` and the `sql` sent), which the executed plans show; bytes on the wire are
//! counted by [`crate::net::Link`].

mod filter;
mod request;
mod source;
mod stream;
mod table;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_s3::Client;
use tokio::sync::Semaphore;

use crate::probe::SelectBehaviour;

pub(crate) use request::{get, select};
pub use source::join_tree;
pub(crate) use source::{scan_units, sift_scan, ScanSource, FILE_TYPE};
pub use table::{with_key_statistics, S3Table};
pub(crate) use table::{ScanWire, TableDef, TableWire};

/// Rows per Arrow batch the scan emits (DataFusion's default batch size).
const BATCH_ROWS: usize = 8192;

/// How table scans reach the data.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Fetch,
    Pushdown,
    Dynamic,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Fetch, Mode::Pushdown, Mode::Dynamic];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Fetch => "fetch",
            Mode::Pushdown => "pushdown",
            Mode::Dynamic => "dynamic",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode {s:?}; expected fetch, pushdown or dynamic"))
    }
}

/// What every table of a run shares: the S3 client, the bucket and the scan counters.
#[derive(Debug)]
pub struct Store {
    pub client: Client,
    pub bucket: String,
    /// Requests in flight for the whole client (see `permits`); a scan spreads its share
    /// over its partitions.
    pub concurrency: usize,
    /// One per request in flight across every scan of the client. A query with many scans
    /// at once (q9 has fifteen) would otherwise send `concurrency` requests per scan, past
    /// what a store admits: Sift's gateway answers SlowDown beyond twice its select threads,
    /// and the SDK's retries run out. Trino bounds its S3 connections the same way.
    permits: Arc<Semaphore>,
    /// Bytes per ranged GET in fetch mode.
    pub fetch_chunk: u64,
    /// Bytes per ScanRange in the pushdown modes.
    pub split_size: u64,
    /// What the store's S3 Select does where stores differ ([`crate::probe`]): a part is
    /// split into ScanRanges only if the store answers them as AWS does, and IS NULL and the
    /// answers' NULLs follow its reading of empty fields.
    pub behaviour: SelectBehaviour,
    scanned: AtomicU64,
    /// Where `client` sends its requests, when a plan may carry the store to another process
    /// ([`Store::spec`]).
    location: Option<Location>,
}

/// An endpoint and its addressing style.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Location {
    pub endpoint: String,
    pub virtual_hosted: bool,
}

/// A [`Store`] as a plan carries it to another process (a Ballista executor,
/// `crate::cluster`): everything but the credentials, which each process has its own of.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct StoreSpec {
    pub location: Location,
    pub bucket: String,
    pub concurrency: usize,
    pub fetch_chunk: u64,
    pub split_size: u64,
    pub behaviour: SelectBehaviour,
}

impl Store {
    pub fn new(client: Client, bucket: String, concurrency: usize) -> Store {
        Store {
            client,
            bucket,
            concurrency: concurrency.max(1),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            fetch_chunk: 8 << 20,
            split_size: 32 << 20,
            behaviour: SelectBehaviour::AWS,
            scanned: AtomicU64::new(0),
            location: None,
        }
    }

    /// Records where `client` sends its requests, so that plans over this store can be sent
    /// to other processes.
    pub fn at(mut self, location: Location) -> Store {
        self.location = Some(location);
        self
    }

    /// The store as another process rebuilds it ([`Store::from_spec`]); `None` for a store
    /// whose location was not recorded.
    pub fn spec(&self) -> Option<StoreSpec> {
        Some(StoreSpec {
            location: self.location.clone()?,
            bucket: self.bucket.clone(),
            concurrency: self.concurrency,
            fetch_chunk: self.fetch_chunk,
            split_size: self.split_size,
            behaviour: self.behaviour,
        })
    }

    /// The store `spec` describes, reached with `client` (which must send to its location).
    pub fn from_spec(client: Client, spec: StoreSpec) -> Store {
        let mut store = Store::new(client, spec.bucket, spec.concurrency).at(spec.location);
        store.fetch_chunk = spec.fetch_chunk;
        store.split_size = spec.split_size;
        store.behaviour = spec.behaviour;
        store
    }

    /// Object bytes the store has read for this client so far.
    pub fn scanned(&self) -> u64 {
        self.scanned.load(Ordering::Relaxed)
    }
}
