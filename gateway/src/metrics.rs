//! What `GET /metrics` reports, in Prometheus's text format: requests by S3 operation and
//! status, the selects' byte counts, latency and concurrency, and the process's CPU time
//! and memory.
//!
//! Counters are plain atomics (a select adds to them once, when it ends); the request
//! table is a small map under a mutex, touched once per request.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use sift_engine::Stats;

/// Upper bounds (seconds) of the select latency histogram's buckets.
const LATENCY_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

#[derive(Debug, Default)]
pub struct Metrics {
    /// (operation, HTTP status) → count.
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    selects_in_flight: AtomicI64,
    select_bytes_scanned: AtomicU64,
    select_bytes_processed: AtomicU64,
    select_bytes_returned: AtomicU64,
    /// Count per bucket of [`LATENCY_BUCKETS`] (not cumulative), then the overflow.
    latency_counts: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    latency_sum_micros: AtomicU64,
}

/// Keeps a select counted as in flight until it is dropped.
#[derive(Debug)]
pub struct InFlight<'a>(&'a Metrics);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.selects_in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    pub fn request(&self, operation: &str, status: u16) {
        let mut table = self
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *table.entry((operation.to_string(), status)).or_default() += 1;
    }

    pub fn select_started(&self) -> InFlight<'_> {
        self.selects_in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self)
    }

    /// A select that ended, successfully or not, after `elapsed`, having counted `stats`.
    pub fn select_finished(&self, stats: Option<&Stats>, elapsed: Duration) {
        if let Some(s) = stats {
            self.select_bytes_scanned
                .fetch_add(s.bytes_scanned, Ordering::Relaxed);
            self.select_bytes_processed
                .fetch_add(s.bytes_processed, Ordering::Relaxed);
            self.select_bytes_returned
                .fetch_add(s.bytes_returned, Ordering::Relaxed);
        }
        let secs = elapsed.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|&le| secs <= le)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.latency_counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of everything above, plus the process's own figures.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) -> std::fmt::Result {
        writeln!(
            out,
            "# HELP sift_requests_total S3 requests by operation and HTTP status."
        )?;
        writeln!(out, "# TYPE sift_requests_total counter")?;
        let table = self
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        for ((op, status), n) in table {
            writeln!(
                out,
                "sift_requests_total{{operation=\"{op}\",status=\"{status}\"}} {n}"
            )?;
        }
        let counters = [
            (
                "sift_select_bytes_scanned_total",
                "Bytes selects read from objects (BytesScanned).",
                &self.select_bytes_scanned,
            ),
            (
                "sift_select_bytes_processed_total",
                "Bytes selects processed after decompression (BytesProcessed).",
                &self.select_bytes_processed,
            ),
            (
                "sift_select_bytes_returned_total",
                "Bytes selects returned (BytesReturned).",
                &self.select_bytes_returned,
            ),
        ];
        for (name, help, value) in counters {
            writeln!(out, "# HELP {name} {help}")?;
            writeln!(out, "# TYPE {name} counter")?;
            writeln!(out, "{name} {}", value.load(Ordering::Relaxed))?;
        }
        writeln!(out, "# HELP sift_selects_in_flight Selects scanning now.")?;
        writeln!(out, "# TYPE sift_selects_in_flight gauge")?;
        writeln!(
            out,
            "sift_selects_in_flight {}",
            self.selects_in_flight.load(Ordering::Relaxed)
        )?;

        let name = "sift_select_duration_seconds";
        writeln!(
            out,
            "# HELP {name} Time from a select's start to its last byte."
        )?;
        writeln!(out, "# TYPE {name} histogram")?;
        let mut cumulative = 0;
        for (i, le) in LATENCY_BUCKETS.iter().enumerate() {
            cumulative += self.latency_counts[i].load(Ordering::Relaxed);
            writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}")?;
        }
        cumulative += self.latency_counts[LATENCY_BUCKETS.len()].load(Ordering::Relaxed);
        writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}")?;
        let sum = self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        writeln!(out, "{name}_sum {sum}")?;
        writeln!(out, "{name}_count {cumulative}")?;

        if let Some(cpu) = process_cpu_seconds() {
            writeln!(
                out,
                "# HELP process_cpu_seconds_total User and system CPU time of the gateway."
            )?;
            writeln!(out, "# TYPE process_cpu_seconds_total counter")?;
            writeln!(out, "process_cpu_seconds_total {cpu}")?;
        }
        if let Some(rss) = process_resident_bytes() {
            writeln!(
                out,
                "# HELP process_resident_memory_bytes Resident memory of the gateway."
            )?;
            writeln!(out, "# TYPE process_resident_memory_bytes gauge")?;
            writeln!(out, "process_resident_memory_bytes {rss}")?;
        }
        Ok(())
    }
}

/// User plus system CPU time of this process, from getrusage(2).
fn process_cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return None;
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// Resident set size, from /proc/self/statm (Linux); `None` elsewhere.
fn process_resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let m = Metrics::default();
        m.request("GetObject", 200);
        m.request("GetObject", 200);
        m.request("GetObject", 404);
        {
            let _running = m.select_started();
            assert!(m.render().contains("sift_selects_in_flight 1\n"));
        }
        let stats = Stats {
            bytes_scanned: 100,
            bytes_processed: 300,
            bytes_returned: 7,
        };
        m.select_finished(Some(&stats), Duration::from_millis(30));
        m.select_finished(None, Duration::from_secs(1000));
        let text = m.render();
        for line in [
            "sift_requests_total{operation=\"GetObject\",status=\"200\"} 2\n",
            "sift_requests_total{operation=\"GetObject\",status=\"404\"} 1\n",
            "sift_select_bytes_scanned_total 100\n",
            "sift_select_bytes_processed_total 300\n",
            "sift_select_bytes_returned_total 7\n",
            "sift_selects_in_flight 0\n",
            "sift_select_duration_seconds_bucket{le=\"0.025\"} 0\n",
            "sift_select_duration_seconds_bucket{le=\"0.05\"} 1\n",
            "sift_select_duration_seconds_bucket{le=\"300\"} 1\n",
            "sift_select_duration_seconds_bucket{le=\"+Inf\"} 2\n",
            "sift_select_duration_seconds_count 2\n",
            "process_cpu_seconds_total ",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }
}
