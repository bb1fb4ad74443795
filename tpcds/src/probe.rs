//! What the store's S3 Select does where stores differ, checked once per run on a small
//! part before any query is timed ([`check`]). The checks use the request form the scans
//! use (`Store::send`), so they test what the scans will send.
//!
//! * **ScanRange.** The pushdown modes split a part into ScanRanges and trust the store to
//!   answer each with the records that *start* in it, as AWS defines ScanRange for CSV: then
//!   the splits of a part together hold each record exactly once. Ceph RGW 18.2 does not: it
//!   reads a range's raw bytes from its start, cut records included, to the end of the
//!   object, and a range that starts at 0 gets the whole object (only requests whose
//!   User-Agent names Trino get record-aligned ranges). A client that split parts there
//!   would count rows twice. The check selects the first field of a part whole, then in
//!   three ranges — one boundary on a record's first byte, one inside a record — and splits
//!   parts only if the three answers, in order, are the whole one.
//! * **Empty fields.** AWS reads an empty CSV field as the empty string and writes NULL as an
//!   empty field. Ceph RGW reads an empty field as NULL (so `s._N = ''` matches nothing) and
//!   writes NULL as `null`. The check selects the empty field after a dsdgen line's trailing
//!   `|` and looks at what comes back.
//! * **Arrow answers.** Sift's gateway answers a select in Arrow when asked by a header
//!   (docs/gateway.md) and says so in its response; other stores ignore the header. The
//!   check asks once; scans ask only a store that said yes, and read each answer as its
//!   response says it is. Over Parquet parts this is the only check ([`check_parquet`]):
//!   the others are about text.
//! * **Request size.** AWS takes expressions up to 256 KiB. Ceph RGW 18.2 reads at most 4,096
//!   bytes of a select's request body and parses a longer one as an empty query (a syntax
//!   error); a run-time key list of county names made q31's select too long. The check sends
//!   an expression of 64 KiB and, if it is refused, finds the longest one taken; scans then
//!   leave out run-time filters (which only prune) until their expression fits.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sift_tpcds_data::FIELD_DELIMITER;

use crate::error::{Error, Result};
use crate::layout::Format;
use crate::scan::{Request, Results, Store};

/// What a store's S3 Select does where stores differ, as far as the client's requests and
/// its reading of the answers depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SelectBehaviour {
    /// Answers a ScanRange with the records that start in it (AWS), so parts may be split.
    pub scan_ranges: bool,
    /// Reads an empty field as NULL and writes NULL as `null` (Ceph RGW), rather than reading
    /// the empty string and writing NULL as an empty field (AWS).
    pub empty_is_null: bool,
    /// The longest expression the store takes, counted as the request's XML carries it
    /// ([`xml_len`]), when it refuses some under 64 KiB (Ceph RGW); `None` otherwise.
    pub max_expression_bytes: Option<usize>,
    /// Answers a select in Arrow when asked (Sift's gateway).
    #[serde(default)]
    pub arrow_results: bool,
}

impl SelectBehaviour {
    /// What AWS documents, and Sift's gateway does.
    pub const AWS: SelectBehaviour = SelectBehaviour {
        scan_ranges: true,
        empty_is_null: false,
        max_expression_bytes: None,
        arrow_results: false,
    };

    /// Whether the store takes `sql` as one select's expression.
    pub fn takes(&self, sql: &str) -> bool {
        self.max_expression_bytes
            .is_none_or(|max| xml_len(sql) <= max)
    }
}

/// The length of `text` in a request's XML, as the AWS SDK escapes it (`'` is `&apos;`, a
/// newline `&#xA;`, …).
pub fn xml_len(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '&' => 5,
            '\'' | '"' => 6,
            '<' | '>' => 4,
            '\r' | '\n' => 5,
            '\u{85}' => 6,
            '\u{2028}' => 8,
            other => other.len_utf8(),
        })
        .sum()
}

/// Expressions of this length are taken by every store that has no limit worth knowing.
const LONG_EXPRESSION: usize = 64 << 10;

/// Checks the store's behaviour on the smallest of `parts` (dsdgen CSV objects, key and
/// size) that has enough records to tell.
pub async fn check(store: &Store, parts: &[&(String, u64)]) -> Result<SelectBehaviour> {
    let mut parts = parts.to_vec();
    parts.sort_by_key(|(_, size)| *size);
    for (key, size) in parts {
        let whole = Request::Get {
            key: key.clone(),
            start: 0,
            end: *size,
        };
        let body = store
            .send(&whole, "", Format::Csv, Results::Csv)
            .await?
            .body
            .joined();
        let Some(scan_ranges) = splits_records(store, key, &body).await? else {
            continue;
        };
        let empty_is_null = reads_empty_as_null(store, key, &body).await?;
        let max_expression_bytes = expression_limit(store, key).await?;
        let arrow_results = answers_arrow(store, key, Format::Csv, FIRST_FIELD).await?;
        return Ok(SelectBehaviour {
            scan_ranges,
            empty_is_null,
            max_expression_bytes,
            arrow_results,
        });
    }
    Err(Error::Invalid(
        "no part has three records to check how the store's S3 Select answers".into(),
    ))
}

/// The answer of `sql` over the records of `key` that start in `range` (or all of them),
/// sent as a scan sends its selects.
async fn select(store: &Store, key: &str, range: Option<(u64, u64)>, sql: &str) -> Result<Bytes> {
    let request = Request::Select {
        key: key.to_string(),
        range,
    };
    Ok(store
        .send(&request, sql, Format::Csv, Results::Csv)
        .await?
        .body
        .joined())
}

/// What the store's S3 Select does over Parquet parts: AWS's behaviour, and whether it
/// answers in Arrow, checked on `part` by selecting its column `column` (as the SELECT list
/// names it).
pub async fn check_parquet(store: &Store, part: &str, column: &str) -> Result<SelectBehaviour> {
    let sql = format!("SELECT {column} FROM S3Object s LIMIT 1");
    Ok(SelectBehaviour {
        arrow_results: answers_arrow(store, part, Format::Parquet, &sql).await?,
        ..SelectBehaviour::AWS
    })
}

/// The first field of one record: what the text check asks in Arrow.
const FIRST_FIELD: &str = "SELECT s._1 FROM S3Object s LIMIT 1";

/// Whether `store` answers `sql` (one column) over `key` in Arrow when asked: the answer
/// says so and is an Arrow stream of one column.
async fn answers_arrow(store: &Store, key: &str, format: Format, sql: &str) -> Result<bool> {
    let request = Request::Select {
        key: key.to_string(),
        range: None,
    };
    let answer = store
        .send(&request, sql, format, Results::arrow(store.compress_arrow))
        .await?;
    if !answer.arrow {
        return Ok(false);
    }
    let body = answer.body.joined();
    let schema = datafusion::arrow::ipc::reader::StreamReader::try_new(&body[..], None)
        .map(|reader| reader.schema())
        .map_err(|e| {
            Error::Invalid(format!(
                "SelectObjectContent {key}: the store said its answer was Arrow, but it is \
                 not an Arrow stream ({e})"
            ))
        })?;
    Ok(schema.fields().len() == 1)
}

/// The first field of every record, the query the check sends.
const FIRST_FIELDS: &str = "SELECT s._1 FROM S3Object s";

/// Whether `store` answers a ScanRange of `key` (whose content is `body`) with exactly the
/// records that start in it. `None` when the part has too few records to tell (under
/// three).
async fn splits_records(store: &Store, key: &str, body: &[u8]) -> Result<Option<bool>> {
    let Some(cuts) = cuts(body) else {
        return Ok(None);
    };
    let whole = select(store, key, None, FIRST_FIELDS).await?;
    let whole = lines(&whole);
    let mut split = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([body.len() as u64]) {
        let part = select(store, key, Some((start, end)), FIRST_FIELDS).await?;
        split.extend(lines(&part));
        start = end;
    }
    Ok(Some(split == whole))
}

/// Whether `store` reads the empty field after the first record's trailing `|` as NULL
/// (and so writes it as `null`) rather than as the empty string.
async fn reads_empty_as_null(store: &Store, key: &str, body: &[u8]) -> Result<bool> {
    let first = body.split(|&b| b == b'\n').next().unwrap_or_default();
    let fields = first.iter().filter(|&&b| b == FIELD_DELIMITER).count() + 1;
    let sql = format!("SELECT s._{fields} FROM S3Object s");
    let answer = select(store, key, None, &sql).await?;
    match lines(&answer).first().map(String::as_str) {
        Some("") => Ok(false),
        Some("null") => Ok(true),
        other => Err(Error::Invalid(format!(
            "SelectObjectContent {key}: `{sql}` answered {other:?} for an empty field; \
             expected an empty line (AWS) or `null` (Ceph RGW)"
        ))),
    }
}

/// `None` if the store takes a [`LONG_EXPRESSION`]; otherwise the longest expression it
/// takes, to within 64 bytes and less a 128-byte margin (the scans' requests may carry a
/// ScanRange, which the probe's do not).
async fn expression_limit(store: &Store, key: &str) -> Result<Option<usize>> {
    let takes = |len: usize| async move {
        let sql = padded_select(len);
        select(store, key, None, &sql).await.is_ok()
    };
    if takes(LONG_EXPRESSION).await {
        return Ok(None);
    }
    let (mut good, mut bad) = (xml_len(&padded_select(0)), LONG_EXPRESSION);
    if !takes(good).await {
        return Err(Error::Invalid(format!(
            "SelectObjectContent {key}: the store refuses even a {good}-byte expression"
        )));
    }
    while bad - good > 64 {
        let mid = (good + bad) / 2;
        if takes(mid).await {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Ok(Some(good.saturating_sub(128)))
}

/// A select of every record's first field, padded with a string literal to `len` bytes as
/// the XML carries it (at least its unpadded length).
fn padded_select(len: usize) -> String {
    let head = "SELECT s._1 FROM S3Object s WHERE s._1 <> '";
    let bare = xml_len(head) + xml_len("'");
    format!("{head}{}'", "x".repeat(len.saturating_sub(bare)))
}

/// Two boundaries inside `body`: the first byte of its second record, and a byte strictly
/// inside a record from the second on, so that both kinds of boundary are tested. `None`
/// when the body has fewer than three records or none of them is long enough to cut.
fn cuts(body: &[u8]) -> Option<[u64; 2]> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            body.iter()
                .enumerate()
                .filter(|&(i, &b)| b == b'\n' && i + 1 < body.len())
                .map(|(i, _)| i + 1),
        )
        .collect();
    let on_record = *starts.get(1)?;
    // A record, from the second on, with a byte strictly inside it.
    let inside = starts.windows(2).skip(1).find_map(|w| {
        let (start, next) = (w[0], w[1]);
        (next - start >= 3).then_some(start + (next - start) / 2)
    })?;
    Some([on_record as u64, inside as u64])
}

/// The records of a select's CSV answer, without their delimiters. An answer that does not
/// end with a newline (RGW leaves it out after a single aggregate row) still counts its last
/// record.
fn lines(answer: &Bytes) -> Vec<String> {
    String::from_utf8_lossy(answer)
        .lines()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_a_record_start_and_inside_a_later_record() {
        let body = b"1|a|\n22|bb|\n333|ccc|\n";
        let [on, inside] = cuts(body).expect("three records");
        assert_eq!(on, 5);
        assert_eq!(body[on as usize - 1], b'\n');
        assert!(inside > 5 && inside < 12, "{inside}");
        assert_ne!(body[inside as usize - 1], b'\n');
    }

    #[test]
    fn lengths_are_counted_as_the_xml_carries_them() {
        assert_eq!(xml_len("a'b"), 8);
        assert_eq!(xml_len("<&>\n"), 18);
        assert_eq!(xml_len(&padded_select(5000)), 5000);
        let limited = SelectBehaviour {
            max_expression_bytes: Some(10),
            ..SelectBehaviour::AWS
        };
        assert!(limited.takes("s._1 = 7"));
        // Two quotes and a letter: 13 bytes as `&apos;x&apos;`.
        assert!(!limited.takes("'x'"));
        assert!(SelectBehaviour::AWS.takes(&"x".repeat(1 << 20)));
    }

    #[test]
    fn too_few_records_cannot_tell() {
        assert_eq!(cuts(b"1|a|\n2|b|\n"), None);
        assert_eq!(cuts(b""), None);
    }
}
