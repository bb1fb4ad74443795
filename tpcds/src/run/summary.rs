//! What a run writes about itself: each query's result (`results.json`), and the totals,
//! speedups and checks of the whole run (`summary.json`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::probe::SelectBehaviour;
use crate::scan::Mode;

/// One query in one mode (`results.json`).
#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub query: String,
    pub mode: Mode,
    /// Median wall time over the iterations.
    pub seconds: f64,
    /// Bytes received by the client over HTTP, headers included.
    pub bytes_received: u64,
    /// Object bytes the store read (GET bodies, or S3 Select's BytesScanned).
    pub bytes_scanned: u64,
    pub rows: u64,
    pub checksum: String,
    /// The error a statement failed with, recorded as its result (e.g. q90 divides by zero
    /// at small scale factors): every mode must fail the same way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Spill files written by its operators (`spill_count` summed over its plans).
    #[serde(skip_serializing_if = "is_zero")]
    pub spills: u64,
    /// Whether a statement ran again with sort-merge joins because a hash join's build side
    /// did not fit in the memory pool (its time and bytes include the first attempt).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sort_merge_retry: bool,
    /// Requests sent again after a transient failure, on the next endpoint.
    #[serde(skip_serializing_if = "is_zero")]
    pub retries: u64,
    /// Auto mode: scans pushed down, and scans fetched, by its choice.
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_pushed_by_choice: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_fetched_by_choice: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a memory-limited run used its pool (`summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryUse {
    /// The pool, in bytes.
    pub limit: u64,
    /// Queries whose operators spilled to disk, as `qN in MODE mode`.
    pub spilled: Vec<String>,
    /// Queries that ran again with sort-merge joins (DataFusion's hash join does not
    /// spill: its build side must fit), as `qN in MODE mode`.
    pub sort_merge_retries: Vec<String>,
}

/// Totals of one mode (`summary.json`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModeTotals {
    pub queries: usize,
    pub seconds: f64,
    pub bytes_received: u64,
    pub bytes_scanned: u64,
    /// CPU seconds the gateways spent during this mode's queries, summed over those that
    /// publish `/metrics` and answered both before and after each query.
    pub gateway_cpu_seconds: Option<f64>,
    /// Requests sent again after a transient failure (busy, unreachable, cut short).
    pub retries: u64,
    /// Auto mode: scans pushed down, and scans fetched, by its choice.
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_pushed_by_choice: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub scans_fetched_by_choice: u64,
    /// Each endpoint's share, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointTotals>,
}

impl ModeTotals {
    /// Counts one query's result in.
    pub(super) fn add(&mut self, result: &QueryResult) {
        self.queries += 1;
        self.seconds += result.seconds;
        self.bytes_received += result.bytes_received;
        self.bytes_scanned += result.bytes_scanned;
        self.retries += result.retries;
        self.scans_pushed_by_choice += result.scans_pushed_by_choice;
        self.scans_fetched_by_choice += result.scans_fetched_by_choice;
    }
}

/// One endpoint's share of a mode's requests (`summary.json`): the requests it answered and
/// their response bytes (the scans' metrics: bodies, without HTTP framing).
#[derive(Debug, Clone, Serialize)]
pub struct EndpointTotals {
    pub endpoint: String,
    pub requests: u64,
    pub bytes_received: u64,
}

/// A mode against fetch (`summary.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub geomean_speedup: f64,
    pub max_speedup: f64,
    pub max_speedup_query: String,
    pub min_speedup: f64,
    /// 1 - bytes received in this mode / bytes received in fetch mode.
    pub bytes_reduction: f64,
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub scale_factor: f64,
    /// The endpoints, as given (comma-separated).
    pub endpoint: String,
    /// The Ballista scheduler the queries ran on; absent for a run in one process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// E.g. "1 Gbit/s emulated link", or "no link limit".
    pub link: String,
    /// The memory pool and what it made spill, for a run with `--memory-limit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
    pub iterations: usize,
    pub modes: BTreeMap<Mode, ModeTotals>,
    pub against_fetch: BTreeMap<Mode, Comparison>,
    /// Statements that returned no rows at this scale (in fetch mode, or the first mode).
    pub empty_statements: Vec<String>,
    /// Statements that failed (in the first mode), with their error.
    pub failed_statements: Vec<String>,
    /// Statements whose join tree ([`crate::scan::join_tree`]) differs from the first
    /// mode's, as `qN in MODE mode`. Empty when the modes' times compare their scans alone.
    pub differently_planned: Vec<String>,
    /// What the store's S3 Select does where stores differ ([`crate::probe`]): whether parts
    /// were split into ScanRanges, how empty fields were read, and the longest expression
    /// sent. AWS's behaviour when only fetch mode ran.
    pub select_behaviour: SelectBehaviour,
    /// Whether the pushed-down scans' Arrow answers came LZ4-compressed (false for CSV).
    pub answers_compressed: bool,
}

/// Which queries spilled and which ran again with sort-merge joins.
pub(super) fn memory_use(limit: u64, results: &[QueryResult]) -> MemoryUse {
    let named = |r: &QueryResult| format!("{} in {} mode", r.query, r.mode);
    MemoryUse {
        limit,
        spilled: results.iter().filter(|r| r.spills > 0).map(named).collect(),
        sort_merge_retries: results
            .iter()
            .filter(|r| r.sort_merge_retry)
            .map(named)
            .collect(),
    }
}

/// Speedups of every non-fetch mode over fetch, per query and overall. A query that failed
/// in either mode is left out: the time to an error is no speedup.
pub fn compare_modes(results: &[QueryResult]) -> BTreeMap<Mode, Comparison> {
    let fetch: BTreeMap<&str, &QueryResult> = results
        .iter()
        .filter(|r| r.mode == Mode::Fetch)
        .map(|r| (r.query.as_str(), r))
        .collect();
    let mut out = BTreeMap::new();
    for mode in [Mode::Pushdown, Mode::Dynamic, Mode::Auto] {
        let mut log_sum = 0.0;
        let mut count = 0;
        let mut max = (f64::MIN, String::new());
        let mut min = f64::MAX;
        let (mut bytes, mut fetch_bytes) = (0u64, 0u64);
        for r in results.iter().filter(|r| r.mode == mode) {
            let Some(base) = fetch.get(r.query.as_str()) else {
                continue;
            };
            if r.error.is_some() || base.error.is_some() {
                continue;
            }
            let speedup = base.seconds / r.seconds.max(1e-9);
            log_sum += speedup.ln();
            count += 1;
            if speedup > max.0 {
                max = (speedup, r.query.clone());
            }
            min = min.min(speedup);
            bytes += r.bytes_received;
            fetch_bytes += base.bytes_received;
        }
        if count > 0 {
            out.insert(
                mode,
                Comparison {
                    geomean_speedup: (log_sum / count as f64).exp(),
                    max_speedup: max.0,
                    max_speedup_query: max.1,
                    min_speedup: min,
                    bytes_reduction: 1.0 - bytes as f64 / fetch_bytes.max(1) as f64,
                },
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedups_against_fetch() {
        let r = |query: &str, mode, seconds, bytes| QueryResult {
            query: query.into(),
            mode,
            seconds,
            bytes_received: bytes,
            bytes_scanned: 0,
            rows: 0,
            checksum: String::new(),
            error: None,
            spills: 0,
            sort_merge_retry: false,
            retries: 0,
            scans_pushed_by_choice: 0,
            scans_fetched_by_choice: 0,
        };
        let results = vec![
            r("q1", Mode::Fetch, 4.0, 1000),
            r("q2", Mode::Fetch, 1.0, 1000),
            r("q1", Mode::Pushdown, 1.0, 100),
            r("q2", Mode::Pushdown, 1.0, 100),
            r("q3", Mode::Fetch, 9.0, 1000),
            QueryResult {
                error: Some("SlowDown".into()),
                ..r("q3", Mode::Pushdown, 0.01, 10)
            },
        ];
        let c = &compare_modes(&results)[&Mode::Pushdown];
        assert!((c.geomean_speedup - 2.0).abs() < 1e-9);
        assert_eq!(c.max_speedup, 4.0);
        assert_eq!(c.max_speedup_query, "q1");
        assert!((c.bytes_reduction - 0.9).abs() < 1e-9);

        let mut spilled = r("q4", Mode::Dynamic, 1.0, 10);
        spilled.spills = 3;
        let mut retried = r("q5", Mode::Fetch, 1.0, 10);
        retried.sort_merge_retry = true;
        let memory = memory_use(1 << 20, &[spilled, retried, r("q6", Mode::Fetch, 1.0, 1)]);
        assert_eq!(memory.spilled, ["q4 in dynamic mode"]);
        assert_eq!(memory.sort_merge_retries, ["q5 in fetch mode"]);
    }
}
