//! `auto` mode's choice for each scan: push it down only where that is predicted to pay.
//!
//! A pushed-down scan saves link time on the bytes its answer does not carry, and costs
//! the store a scan of what a fetch would have moved (the client still decodes the answer).
//! A fetched scan moves those bytes and the client decodes all of them. So the choice needs
//! two numbers ([`Prediction`]): what a fetch moves `F` (the table's bytes for text; the
//! needed columns' chunks for Parquet, from the footers) and the answer's bytes `A`,
//! predicted by running the scan's own statement through Sift's engine over a sample of the
//! table (`sample`). Then, with the link's rate `L` (unbounded when unpaced) and the rates of
//! the two sides' CPU work for the table's format ([`Costs`]):
//!
//! ```text
//! fetch = max(F / L, F / client_reads)                     transfer and decoding overlap
//! push  = max(A / L, F / store_scans + A / client_answers) + push_seconds
//! ```
//!
//! and the scan is pushed down when `push < fetch`.
//!
//! Text ([`TEXT`]): on a paced 1 Gbit/s link that is whenever the answer is smaller than the
//! table; unpaced (or at 10 Gbit/s), when it is under 3/4 of it: `inventory` read whole
//! under a join's date filter (q22, q39) is fetched, a fact table's few columns are pushed.
//! A text scan is chosen at planning, from its planned filters, and a pushed one then takes
//! the joins' run-time filters as in dynamic mode.
//!
//! Parquet ([`PARQUET`]): a fetch already reads only the needed columns, compressed, so a
//! projection alone saves nothing and only the rows the filters drop can pay for the
//! store's decoding: at 1 Gbit/s the answer must be under about half of the column chunks,
//! unpaced under an eighth; and a select's fixed cost makes a scan of under ~2 MB unpaced
//! (~0.5 MB at 1 Gbit/s) cheaper fetched whatever it answers. Most of what a Parquet scan's
//! filters drop comes from the joins' run-time filters, so a Parquet scan is chosen when it
//! starts: at once when it is that small, otherwise once its run-time filters are known,
//! from its whole statement (`source`).

use crate::scan::sample::Prediction;

/// The rates of one format's work, in bytes per second: what the client decodes of a fetch,
/// what the store reads and selects, and what the client does per byte of an answer; and
/// the time a pushed scan costs whatever its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Costs {
    pub(crate) client_reads: f64,
    pub(crate) store_scans: f64,
    pub(crate) client_answers: f64,
    pub(crate) push_seconds: f64,
}

/// dsdgen text: one client core parses ~250 MB/s of it into Arrow and filters it (DataFusion's
/// CSV decoder over the store_sales parts), and parses a CSV answer as fast; Sift's engine
/// selects ~0.6 GB/s for a typed projection of every row to ~2.8 GB/s for q28's filter on
/// one core (`docs/BENCHMARKS.md`).
pub(crate) const TEXT: Costs = Costs {
    client_reads: 250e6,
    store_scans: 1e9,
    client_answers: 250e6,
    push_seconds: 0.0,
};

/// Parquet column chunks (Snappy) and Arrow answers. Both sides decode the same chunks, so
/// the rates are of the whole of each side's work, fitted to the SF 1 `ceph72` runs on two
/// cores (`docs/BENCHMARKS.md`): the gateway selects ~250 MB/s of chunks over the requests
/// it runs at once; the client decodes and filters ~200 MB/s of them; an answer's byte
/// costs the client ~1.6 times a chunk's (a chunk is compressed and dictionary-encoded, an
/// answer carries plain values, and each row goes on through the query's joins as a
/// fetched one does). Dynamic mode lost to fetch on most queries whose answer was over 0.6
/// of the chunks at 1 Gbit/s, and over ~0.15 unpaced. A select also
/// costs ~2 ms more than a GET before its first row (the footer and the row groups' setup on
/// the store, the statement's prediction on the client), so that a scan of a dimension
/// table's few hundred KiB is fetched: q83's nine `date_dim` selects made it 3× slower than
/// fetch unpaced. (At 5 and 10 ms the SF 1 fact-table scans that pushdown sped up were
/// fetched too.)
pub(crate) const PARQUET: Costs = Costs {
    client_reads: 200e6,
    store_scans: 250e6,
    client_answers: 125e6,
    push_seconds: 0.002,
};

/// What `auto` mode chose for one scan, and from what; plans show it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Choice {
    pub(crate) pushed: bool,
    /// The predicted answer's share of what a fetch moves; `None` when there was nothing to
    /// predict from.
    pub(crate) answer_share: Option<f64>,
}

impl Choice {
    /// The choice for a scan whose fetch and answer are `predicted`, over a link of
    /// `link_rate` bytes per second (unbounded when `None`), at the rates `costs`.
    pub(crate) fn new(
        predicted: Option<Prediction>,
        link_rate: Option<f64>,
        costs: Costs,
    ) -> Choice {
        let Some(Prediction {
            fetch_bytes,
            answer_bytes: answer,
        }) = predicted
        else {
            return Choice {
                pushed: true,
                answer_share: None,
            };
        };
        let fetched = fetch_bytes as f64;
        let link = link_rate.unwrap_or(f64::INFINITY);
        let fetch = (fetched / link).max(fetched / costs.client_reads);
        let push = (answer / link).max(fetched / costs.store_scans + answer / costs.client_answers)
            + costs.push_seconds;
        Choice {
            pushed: push < fetch,
            answer_share: Some(answer / fetched.max(1.0)),
        }
    }
}

impl Choice {
    /// Fetched because a select would not pay even if it answered nothing.
    pub(crate) fn too_small() -> Choice {
        Choice {
            pushed: false,
            answer_share: None,
        }
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.pushed { "pushed" } else { "fetched" };
        match self.answer_share {
            Some(share) => write!(f, "{how} (answer ≈ {:.1}% of a fetch)", share * 100.0),
            None if self.pushed => write!(f, "{how} (no sample to predict from)"),
            None => write!(f, "{how} (too small for a select to pay)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(fetch_bytes: u64, share: f64, link_rate: Option<f64>, costs: Costs) -> bool {
        let predicted = Prediction {
            fetch_bytes,
            answer_bytes: share * fetch_bytes as f64,
        };
        Choice::new(Some(predicted), link_rate, costs).pushed
    }

    #[test]
    fn pushdown_of_text_pays_below_the_link_or_cpu_break_even() {
        let gb = 1_000_000_000;
        let gbit = Some(125e6);
        // Over a 1 Gbit/s link, any answer smaller than the table pays.
        assert!(choice(gb, 0.9, gbit, TEXT));
        assert!(!choice(gb, 1.05, gbit, TEXT));
        // Unpaced, the store's scan must be paid for by the client's parsing saved.
        assert!(choice(gb, 0.5, None, TEXT));
        assert!(!choice(gb, 0.8, None, TEXT));
        assert!(choice(gb, 0.7, Some(1.25e9), TEXT));
        assert!(!choice(gb, 0.8, Some(1.25e9), TEXT));
        // Nothing to predict from: pushed, as in dynamic mode.
        assert!(Choice::new(None, None, TEXT).pushed);
    }

    #[test]
    fn pushdown_of_parquet_pays_only_where_filters_drop_most_rows() {
        let gb = 1_000_000_000;
        let gbit = Some(125e6);
        assert!(choice(gb, 0.4, gbit, PARQUET));
        assert!(!choice(gb, 0.6, gbit, PARQUET));
        assert!(choice(gb, 0.1, None, PARQUET));
        assert!(!choice(gb, 0.2, None, PARQUET));
        assert!(choice(gb, 0.1, Some(1.25e9), PARQUET));
        assert!(!choice(gb, 0.2, Some(1.25e9), PARQUET));
        // A small table is fetched however much the filters drop.
        assert!(!choice(1_000_000, 0.001, None, PARQUET));
        assert!(!choice(300_000, 0.001, gbit, PARQUET));
    }
}
