//! A rendered plan read back: DataFusion's metrics as it prints them (`name=999`,
//! `name=10.32 K`), summed over a plan's lines or over its Sift scans' lines. A Ballista
//! job's plans reach the client only as text (the scheduler's REST API), and a
//! single-process plan is written as the same text, so both are read the same way.

use crate::scan::FILE_TYPE;

/// The sum of metric `name` over every line of `plans` (e.g. `spill_count`).
pub(crate) fn total(plans: &str, name: &str) -> u64 {
    plans.lines().filter_map(|line| metric(line, name)).sum()
}

/// Metric `name` of one plan line: `name=` where a metric starts (after `[` or a space),
/// so that `requests` is not read from `requests_at_0=` nor from `retried_requests=`.
fn metric(line: &str, name: &str) -> Option<u64> {
    let key = format!("{name}=");
    let (at, _) = line
        .match_indices(&key)
        .find(|(at, _)| matches!(line[..*at].chars().next_back(), Some('[' | ' ')))?;
    let value = line[at + key.len()..].split([',', ']']).next()?;
    count(value)
}

/// The sum of metric `name` over the scans of `plans` (as `name=N` in a Sift scan's line).
///
/// The scheduler renders counts as DataFusion does, in thousands (K), millions (M),
/// billions (B) and trillions (T) past 999, to three or four significant digits; the sum
/// is as exact as those are. (The REST API is where a client can read the executors'
/// counts; they reach the scheduler exact, as protobuf.)
pub(crate) fn scan_metric(plans: &str, name: &str) -> u64 {
    plans
        .lines()
        .filter(|line| scanned_table(line).is_some())
        .filter_map(|line| metric(line, name))
        .sum()
}

/// How many Sift scans of `plans` carry no metrics at all: a stage the scheduler could not
/// line up with its tasks' metrics comes back bare, and its scans' bytes go uncounted.
pub(crate) fn uncounted_scans(plans: &str) -> usize {
    plans
        .lines()
        .filter(|line| scanned_table(line).is_some() && !line.contains("metrics=["))
        .count()
}

/// The table a plan line scans, when it is a Sift scan's (`DataSourceExec: …,
/// file_type=sift, table=NAME, …`).
pub(crate) fn scanned_table(line: &str) -> Option<&str> {
    let marker = format!("file_type={FILE_TYPE}, table=");
    let at = line.find(&marker)? + marker.len();
    line[at..].split(',').next()
}

/// A count as DataFusion prints it: `999`, `10.32 K`, `2.38 M`, `1.5 B`, `3.1 T`.
fn count(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, scale) = match text.rsplit_once(' ') {
        Some((number, "K")) => (number, 1e3),
        Some((number, "M")) => (number, 1e6),
        Some((number, "B")) => (number, 1e9),
        Some((number, "T")) => (number, 1e12),
        None => return text.parse().ok(),
        Some(_) => return None,
    };
    let value: f64 = number.parse().ok()?;
    Some((value * scale).round() as u64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two stages of a distributed plan as the scheduler renders them, with Sift scans.
    pub(crate) const PLANS: &str = "Stage 1 (Successful):\n\
        ShuffleWriterExec: partitioning: None, metrics=[]\n  \
          DataSourceExec: file_groups={1 group: [[date_dim/partition-0]]}, projection=[d_date_sk], file_type=sift, table=date_dim, mode=pushdown, columns=[s._1], metrics=[bytes_received=120, bytes_scanned=10.32 M, requests=2]\n\
        Stage 2 (Successful):\n\
        HashJoinExec: mode=CollectLeft, join_type=Inner, metrics=[]\n  \
          DataSourceExec: file_groups={1 group: [[store_sales/partition-0]]}, projection=[ss_sold_date_sk], file_type=sift, table=store_sales, mode=pushdown, columns=[s._1], metrics=[bytes_received=554.4 K, bytes_scanned=2.38 B, requests=1]\n";

    #[test]
    fn scan_metrics_are_summed() {
        assert_eq!(scan_metric(PLANS, "bytes_received"), 554_520);
        assert_eq!(scan_metric(PLANS, "bytes_scanned"), 2_390_320_000);
        assert_eq!(scan_metric(PLANS, "requests"), 3);
        assert_eq!(scan_metric(PLANS, "absent"), 0);
        let per_endpoint =
            "DataSourceExec: file_type=sift, table=t, metrics=[bytes_received_at_1=7, \
                            requests_at_1=2, bytes_received=9, requests=3]";
        assert_eq!(scan_metric(per_endpoint, "requests"), 3);
        assert_eq!(scan_metric(per_endpoint, "bytes_received"), 9);
        assert_eq!(scan_metric(per_endpoint, "requests_at_1"), 2);
    }

    #[test]
    fn a_bare_scan_is_uncounted() {
        assert_eq!(uncounted_scans(PLANS), 0);
        let bare = "DataSourceExec: file_groups={1 group: [[t/partition-0]]}, file_type=sift, \
                    table=t, mode=pushdown";
        assert_eq!(uncounted_scans(&format!("{PLANS}{bare}\n")), 1);
    }

    #[test]
    fn counts_as_datafusion_prints_them() {
        assert_eq!(count("999"), Some(999));
        assert_eq!(count("1.00 K"), Some(1000));
        assert_eq!(count("123.4 T"), Some(123_400_000_000_000));
        assert_eq!(count("12 X"), None);
        assert_eq!(count("x"), None);
    }

    #[test]
    fn totals_count_every_line() {
        let plan = "SortExec: metrics=[spill_count=2, spilled_bytes=1.0 MB]\n  \
                    AggregateExec: metrics=[spill_count=1.00 K]\n  DataSourceExec: metrics=[]\n";
        assert_eq!(total(plan, "spill_count"), 1002);
        assert_eq!(total(plan, "absent"), 0);
    }
}
