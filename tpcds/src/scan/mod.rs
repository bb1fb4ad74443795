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
//! * **auto**: each scan fetched or pushed down (as in dynamic mode), whichever is predicted
//!   to be faster at the run's link rate ([`choice`]), from its statement run over a sample
//!   of the table (`sample`): a text scan chooses at planning, a Parquet scan when it
//!   starts, once its run-time filters are known.
//!
//! The parts, after DataFusion's split of a table provider, its execution plan and its file
//! opener:
//!
//! - [`S3Table`] (`table`) is the table provider: it lowers each filter it is offered to
//!   S3 Select's SQL once (`filter`), and plans a scan's requests;
//! - `ScanSource` (`source`) is the file source of DataFusion's own file scan, whose
//!   "files" are each partition's list of requests: statistics, the dynamic filters it takes
//!   from joins, its metrics, and the opener that turns a partition's requests into a stream;
//!   a fetched scan's filters run on the client (`filter`; integer key lists as the
//!   gateway's sets, `key_set`);
//! - `stream` has one stream type per request kind (fetched CSV, selected CSV or Arrow;
//!   fetched Parquet in `fetched_parquet`), each turning response bodies into record
//!   batches;
//! - `request` sends the HTTP requests, one task each under the client-wide limit, each to
//!   its home endpoint and, when that one is busy or down, to the next ([`Store`]).
//!
//! Object bytes read by the store (GET bodies, or S3 Select's `BytesScanned`) are counted in
//! [`Store::scanned`] and in each scan's metrics (`bytes_scanned`, with `bytes_received`,
//! `requests` and the `sql` sent), which the executed plans show; bytes on the wire are
//! counted by [`crate::net::Link`].

mod choice;
mod fetched_parquet;
mod filter;
mod key_set;
mod request;
mod sample;
mod source;
mod stream;
mod table;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_config::SdkConfig;
use aws_sdk_s3::Client;
use tokio::sync::Semaphore;

use crate::probe::SelectBehaviour;

pub(crate) use request::{Request, Results};
pub(crate) use sample::{ParquetFooters, Sample};
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
    Auto,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Fetch, Mode::Pushdown, Mode::Dynamic, Mode::Auto];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Fetch => "fetch",
            Mode::Pushdown => "pushdown",
            Mode::Dynamic => "dynamic",
            Mode::Auto => "auto",
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
            .ok_or_else(|| format!("unknown mode {s:?}; expected fetch, pushdown, dynamic or auto"))
    }
}

/// What every table of a run shares: the store's endpoints, the bucket and the scan
/// counters.
///
/// A store may be reached at several endpoints (a gateway on every storage node, all in
/// front of the same objects). Each request has a home endpoint chosen from its object and
/// range (`Request::home`), so two runs send the same request to the same gateway and the
/// requests spread evenly; one refused as busy or unreachable goes to the next endpoint in
/// turn, with a growing pause, up to ten attempts in all (`Store::send`).
#[derive(Debug)]
pub struct Store {
    /// At least one.
    endpoints: Vec<Endpoint>,
    pub bucket: String,
    /// Requests in flight for the whole client (see `permits`); a scan spreads its share
    /// over its partitions.
    pub concurrency: usize,
    /// One per request in flight across every scan of the client. A query with many scans
    /// at once (q9 has fifteen) would otherwise send `concurrency` requests per scan, past
    /// what a store admits: Sift's gateway answers SlowDown beyond twice its select threads.
    /// Trino bounds its S3 connections the same way.
    permits: Arc<Semaphore>,
    /// Bytes per ranged GET in fetch mode.
    pub fetch_chunk: u64,
    /// Bytes per ScanRange in the pushdown modes.
    pub split_size: u64,
    /// What the store's S3 Select does where stores differ ([`crate::probe`]): a part is
    /// split into ScanRanges only if the store answers them as AWS does, and IS NULL and the
    /// answers' NULLs follow its reading of empty fields.
    pub behaviour: SelectBehaviour,
    /// Arrow answers asked for with their buffers LZ4-compressed: typed columns are larger
    /// than their text, compressed smaller, at some CPU on both ends — worth it when the
    /// link is the limit.
    pub compress_arrow: bool,
    scanned: AtomicU64,
    /// The pause before sending a request again to an endpoint it already failed on, doubled
    /// at each further attempt.
    retry_pause: Duration,
    /// Whether the endpoints are addressed virtual-hosted style; `None` for a store whose
    /// endpoints' URLs are not known, which cannot be sent to another process.
    virtual_hosted: Option<bool>,
}

/// One endpoint of a store and the S3 client that sends to it.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) client: Client,
    /// Until when requests pass it over, after it failed one (`Store::send`).
    down_until: Mutex<Option<Instant>>,
}

impl Endpoint {
    fn new(url: String, client: Client) -> Endpoint {
        Endpoint {
            url,
            client,
            down_until: Mutex::new(None),
        }
    }

    fn is_down(&self) -> bool {
        let until = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|t| Instant::now() < t)
    }

    fn mark_down(&self) {
        let mut until = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        *until = Some(Instant::now() + request::DOWN_FOR);
    }
}

/// Where a store is reached: its endpoints and their addressing style.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Location {
    pub endpoints: Vec<String>,
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
    #[serde(default)]
    pub compress_arrow: bool,
}

impl Store {
    /// A store for planning only, in tests: no request is ever sent.
    #[cfg(test)]
    pub(crate) fn offline() -> Arc<Store> {
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .build();
        Arc::new(Store::new(Client::from_conf(config), "b".into(), 4))
    }

    /// A store at one endpoint, reached with `client`, whose URL is not recorded.
    pub fn new(client: Client, bucket: String, concurrency: usize) -> Store {
        let endpoint = Endpoint::new("the store".into(), client);
        Store::with_endpoints(vec![endpoint], bucket, concurrency, None)
    }

    /// The store at `location`, each endpoint reached with a client made from `shared`
    /// (credentials, region, HTTP client). The clients do not retry: [`Store::send`] does,
    /// on the next endpoint.
    pub fn connect(
        shared: &SdkConfig,
        location: &Location,
        bucket: String,
        concurrency: usize,
    ) -> Store {
        let endpoints = location
            .endpoints
            .iter()
            .map(|url| {
                let client =
                    crate::s3::client_without_retries(shared, url, location.virtual_hosted);
                Endpoint::new(url.clone(), client)
            })
            .collect();
        Store::with_endpoints(
            endpoints,
            bucket,
            concurrency,
            Some(location.virtual_hosted),
        )
    }

    fn with_endpoints(
        endpoints: Vec<Endpoint>,
        bucket: String,
        concurrency: usize,
        virtual_hosted: Option<bool>,
    ) -> Store {
        Store {
            endpoints,
            bucket,
            concurrency: concurrency.max(1),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            fetch_chunk: 8 << 20,
            split_size: 32 << 20,
            behaviour: SelectBehaviour::AWS,
            compress_arrow: false,
            scanned: AtomicU64::new(0),
            retry_pause: Duration::from_millis(100),
            virtual_hosted,
        }
    }

    /// The store's endpoints, in the order given.
    pub(crate) fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// The store as another process rebuilds it ([`Store::from_spec`]); `None` for a store
    /// whose endpoints' URLs were not recorded.
    pub fn spec(&self) -> Option<StoreSpec> {
        Some(StoreSpec {
            location: Location {
                endpoints: self.endpoints.iter().map(|e| e.url.clone()).collect(),
                virtual_hosted: self.virtual_hosted?,
            },
            bucket: self.bucket.clone(),
            concurrency: self.concurrency,
            fetch_chunk: self.fetch_chunk,
            split_size: self.split_size,
            behaviour: self.behaviour,
            compress_arrow: self.compress_arrow,
        })
    }

    /// The store `spec` describes, reached with clients made from `shared`.
    pub fn from_spec(shared: &SdkConfig, spec: StoreSpec) -> Store {
        let mut store = Store::connect(shared, &spec.location, spec.bucket, spec.concurrency);
        store.fetch_chunk = spec.fetch_chunk;
        store.split_size = spec.split_size;
        store.behaviour = spec.behaviour;
        store.compress_arrow = spec.compress_arrow;
        store
    }

    /// Object bytes the store has read for this client so far.
    pub fn scanned(&self) -> u64 {
        self.scanned.load(Ordering::Relaxed)
    }

    /// Whether any endpoint still answers, asked with one HEAD of `key` each: any answer
    /// counts, even a refusal or SlowDown; a connection refused, dropped or timed out does
    /// not. A run asks after a query failed, so that a store that went away (a crashed
    /// gateway, a dead link) stops the run there instead of failing every query left, each
    /// only after its retries.
    pub async fn answers(&self, key: &str) -> bool {
        use aws_sdk_s3::error::SdkError;
        for endpoint in &self.endpoints {
            let head = endpoint.client.head_object().bucket(&self.bucket).key(key);
            match head.send().await {
                Ok(_) | Err(SdkError::ServiceError(_) | SdkError::ResponseError(_)) => return true,
                Err(_) => {}
            }
        }
        false
    }
}
