//! What the store's S3 Select does where stores differ, checked once per run on a small
//! part before any query is timed ([`check`]). The checks use the request form the scans
//! use ([`crate::scan::select`]), so they test what the scans will send.
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

use bytes::Bytes;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::layout::Format;
use crate::scan::{select, Store};

/// What a store's S3 Select does where stores differ, as far as the client's requests and
/// its reading of the answers depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SelectBehaviour {
    /// Answers a ScanRange with the records that start in it (AWS), so parts may be split.
    pub scan_ranges: bool,
    /// Reads an empty field as NULL and writes NULL as `null` (Ceph RGW), rather than reading
    /// the empty string and writing NULL as an empty field (AWS).
    pub empty_is_null: bool,
}

impl SelectBehaviour {
    /// What AWS documents, and Sift's gateway does.
    pub const AWS: SelectBehaviour = SelectBehaviour {
        scan_ranges: true,
        empty_is_null: false,
    };
}

/// Checks the store's behaviour on the smallest of `parts` (dsdgen CSV objects, key and
/// size) that has enough records to tell.
pub async fn check(store: &Store, parts: &[&(String, u64)]) -> Result<SelectBehaviour> {
    let mut parts = parts.to_vec();
    parts.sort_by_key(|(_, size)| *size);
    for (key, size) in parts {
        let body = crate::scan::get(store, key, 0, *size).await?;
        let Some(scan_ranges) = splits_records(store, key, &body).await? else {
            continue;
        };
        let empty_is_null = reads_empty_as_null(store, key, &body).await?;
        return Ok(SelectBehaviour {
            scan_ranges,
            empty_is_null,
        });
    }
    Err(Error::Invalid(
        "no part has three records to check how the store's S3 Select answers".into(),
    ))
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
    let whole = lines(&select(store, key, None, FIRST_FIELDS, Format::Csv).await?);
    let mut split = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().chain([body.len() as u64]) {
        let part = select(store, key, Some((start, end)), FIRST_FIELDS, Format::Csv).await?;
        split.extend(lines(&part));
        start = end;
    }
    Ok(Some(split == whole))
}

/// Whether `store` reads the empty field after the first record's trailing `|` as NULL
/// (and so writes it as `null`) rather than as the empty string.
async fn reads_empty_as_null(store: &Store, key: &str, body: &[u8]) -> Result<bool> {
    let first = body.split(|&b| b == b'\n').next().unwrap_or_default();
    let fields = first.iter().filter(|&&b| b == b'|').count() + 1;
    let sql = format!("SELECT s._{fields} FROM S3Object s");
    let answer = select(store, key, None, &sql, Format::Csv).await?;
    match lines(&answer).first().map(String::as_str) {
        Some("") => Ok(false),
        Some("null") => Ok(true),
        other => Err(Error::Invalid(format!(
            "SelectObjectContent {key}: `{sql}` answered {other:?} for an empty field; \
             expected an empty line (AWS) or `null` (Ceph RGW)"
        ))),
    }
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
    fn too_few_records_cannot_tell() {
        assert_eq!(cuts(b"1|a|\n2|b|\n"), None);
        assert_eq!(cuts(b""), None);
    }
}
