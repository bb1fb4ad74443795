//! `auto` mode's choice for each scan: push it down only where that is predicted to pay.
//!
//! A pushed-down scan saves link time on the bytes its answer does not carry, and costs
//! the store a scan of the whole table (the client still decodes the answer). A fetched
//! scan moves every byte and the client parses all of it. So the choice needs two numbers:
//! the table's bytes `B`, known from the listing, and the answer's bytes `A`, predicted by
//! running the scan's own statement (its columns and its planned filters) through Sift's
//! engine, in process, over a [`Sample`] of the table's lines taken before the run. Then,
//! with the link's rate `L` (unbounded when unpaced) and the rates of the two sides' CPU
//! work ([`CLIENT_PARSE`], [`STORE_SCAN`]):
//!
//! ```text
//! fetch = max(B / L, B / CLIENT_PARSE)                  transfer and parse overlap
//! push  = max(A / L, B / STORE_SCAN + A / CLIENT_PARSE)
//! ```
//!
//! and the scan is pushed down when `push < fetch`. On a paced 1 Gbit/s link that is
//! whenever the answer is smaller than the table; unpaced (or at 10 Gbit/s), when it is
//! under `1 − CLIENT_PARSE / STORE_SCAN` = 3/4 of it: `inventory` read whole under a join's
//! date filter (q22, q39) is fetched, a fact table's few columns are pushed.
//!
//! A pushed scan in `auto` mode takes the joins' run-time filters as `dynamic` mode does.
//! Text parts only: a Parquet or gzip part has no sample of lines, and its scans are pushed
//! down as in `dynamic` mode.

use bytes::Bytes;
use sift_engine::{
    CsvInput, InputFormat, InputSerialization, Select, SelectRequest, Sink, SliceSource,
};
use sift_tpcds_data::{FIELD_DELIMITER, NO_COMMENTS};

/// Bytes of dsdgen text one client core parses into Arrow and filters per second (DataFusion's
/// CSV decoder over the store_sales parts, with the scan's filter applied).
pub(crate) const CLIENT_PARSE: f64 = 250e6;
/// Bytes of text the store's engine selects per second for one request (Sift's engine
/// ranges from ~0.6 GB/s for a typed projection of every row to ~2.8 GB/s for q28's filter
/// on one core, `docs/BENCHMARKS.md`).
pub(crate) const STORE_SCAN: f64 = 1e9;

/// Whole lines from several places of a table, for predicting what a statement returns.
#[derive(Debug)]
pub(crate) struct Sample {
    pub(crate) text: Bytes,
}

impl Sample {
    /// The sample made of `pieces`: byte ranges of the table's objects, each with the
    /// offset it starts at. A piece that does not start an object starts at its first whole
    /// line; every piece ends at its last line end.
    pub(crate) fn from_pieces(pieces: impl IntoIterator<Item = (u64, Bytes)>) -> Sample {
        let mut text = Vec::new();
        for (offset, piece) in pieces {
            let start = match offset {
                0 => 0,
                _ => match memchr::memchr(b'\n', &piece) {
                    Some(i) => i + 1,
                    None => continue,
                },
            };
            let Some(end) = memchr::memrchr(b'\n', &piece).map(|i| i + 1) else {
                continue;
            };
            if start < end {
                text.extend_from_slice(&piece[start..end]);
            }
        }
        Sample { text: text.into() }
    }

    /// The share of its input that `sql`'s answer (CSV, as the scan asks for it) is over
    /// the sample; `None` when the engine does not run it (then nothing is predicted).
    pub(crate) fn answer_share(&self, sql: &str) -> Option<f64> {
        if self.text.is_empty() {
            return None;
        }
        let select = Select::new(SelectRequest {
            sql: sql.to_string(),
            input: InputSerialization {
                format: InputFormat::Csv(CsvInput {
                    field_delimiter: char::from(FIELD_DELIMITER).to_string(),
                    comments: NO_COMMENTS.to_string(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        })
        .ok()?;
        let stats = select.run(&SliceSource(&self.text), &mut Discard).ok()?;
        Some(stats.bytes_returned as f64 / self.text.len() as f64)
    }
}

/// An answer only counted (the engine's stats count it).
struct Discard;

impl Sink for Discard {
    fn write(&mut self, _data: &[u8]) -> sift_engine::Result<()> {
        Ok(())
    }
}

/// What `auto` mode chose for one scan, and from what; plans show it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Choice {
    pub(crate) pushed: bool,
    /// The predicted answer's share of the table's bytes; `None` when there was nothing to
    /// predict from.
    pub(crate) answer_share: Option<f64>,
}

impl Choice {
    /// The choice for a scan of `table_bytes` whose answer is `answer_share` of them, over
    /// a link of `link_rate` bytes per second (unbounded when `None`).
    pub(crate) fn new(
        table_bytes: u64,
        answer_share: Option<f64>,
        link_rate: Option<f64>,
    ) -> Choice {
        let pushed = match answer_share {
            None => true,
            Some(share) => {
                let table = table_bytes as f64;
                let answer = table * share;
                let link = link_rate.unwrap_or(f64::INFINITY);
                let fetch = (table / link).max(table / CLIENT_PARSE);
                let push = (answer / link).max(table / STORE_SCAN + answer / CLIENT_PARSE);
                push < fetch
            }
        };
        Choice {
            pushed,
            answer_share,
        }
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.pushed { "pushed" } else { "fetched" };
        match self.answer_share {
            Some(share) => write!(f, "{how} (answer ≈ {:.1}% of the table)", share * 100.0),
            None => write!(f, "{how} (no sample to predict from)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_whole_lines() {
        let s = Sample::from_pieces([
            (0, Bytes::from_static(b"a|1|\nb|2|\nc|")),
            (40, Bytes::from_static(b"|9|\nd|4|\ne|5")),
            (90, Bytes::from_static(b"no line end")),
        ]);
        assert_eq!(&s.text[..], b"a|1|\nb|2|\nd|4|\n");
    }

    #[test]
    fn the_answer_share_is_what_the_engine_returns() {
        let lines: String = (0..100).map(|i| format!("{i}|name{i}|\n")).collect();
        let s = Sample {
            text: Bytes::from(lines.clone()),
        };
        let all = s.answer_share("SELECT s._1, s._2 FROM S3Object s").unwrap();
        // The answer drops each line's trailing delimiter.
        assert!((all - (lines.len() - 100) as f64 / lines.len() as f64).abs() < 1e-9);
        let tenth = s
            .answer_share("SELECT s._2 FROM S3Object s WHERE CAST(s._1 AS INT) < 10")
            .unwrap();
        assert!(tenth > 0.0 && tenth < 0.1 * all, "{tenth}");
        assert_eq!(s.answer_share("SELECT nonsense"), None);
    }

    #[test]
    fn pushdown_pays_below_the_link_or_cpu_break_even() {
        let gb = 1_000_000_000;
        let gbit = Some(125e6);
        // Over a 1 Gbit/s link, any answer smaller than the table pays.
        assert!(Choice::new(gb, Some(0.9), gbit).pushed);
        assert!(!Choice::new(gb, Some(1.05), gbit).pushed);
        // Unpaced, the store's scan must be paid for by the client's parsing saved.
        assert!(Choice::new(gb, Some(0.5), None).pushed);
        assert!(!Choice::new(gb, Some(0.8), None).pushed);
        assert!(Choice::new(gb, Some(0.7), Some(1.25e9)).pushed);
        assert!(!Choice::new(gb, Some(0.8), Some(1.25e9)).pushed);
        // Nothing to predict from: pushed, as in dynamic mode.
        assert!(Choice::new(gb, None, None).pushed);
    }
}
