//! The queries the engine's speed targets are stated for, over TPC-DS store_sales in dsdgen
//! format (`|`-delimited, trailing `|`, no header).

use sift_engine::SelectRequest;

/// The q28-shaped filter Trino 405 pushes down: three columns of the rows whose
/// ss_quantity (column 11) lies in 0..=5, about 5% of store_sales.
pub const Q28_FILTER: &str = "SELECT s._12, s._13, s._20 FROM S3Object s WHERE ((case s._11 when '' then null else CAST(s._11 AS INT) end >= 0 AND case s._11 when '' then null else CAST(s._11 AS INT) end <= 5))";

/// The same columns of the rows whose ss_sales_price (column 14) lies in 10.00..=20.00, as
/// Trino 405 sends a DECIMAL(7,2) range (15% of store_sales at SF 1): compared with the INT
/// range of `q28_filter` in one run, it shows what reading a price costs over a quantity.
pub const DECIMAL_RANGE: &str = "SELECT s._12, s._13, s._20 FROM S3Object s WHERE ((case s._14 when '' then null else CAST(s._14 AS DECIMAL(7,2)) end >= 10.00 AND case s._14 when '' then null else CAST(s._14 AS DECIMAL(7,2)) end <= 20.00))";

/// A projection of three columns of every row.
pub const PROJECTION: &str = "SELECT s._1, s._3, s._14 FROM S3Object s";

/// The benchmark queries with their names.
pub const QUERIES: [(&str, &str); 3] = [
    ("q28_filter", Q28_FILTER),
    ("decimal_range", DECIMAL_RANGE),
    ("projection", PROJECTION),
];

/// `q28_filter` and `projection` as Sift's TPC-DS client sends them for Arrow answers, each
/// column cast to its type (docs/tpcds.md: ss_wholesale_cost, ss_list_price and
/// ss_coupon_amt are DECIMAL(7,2); ss_sold_date_sk and ss_item_sk INT). Run once with CSV
/// and once with Arrow output, they show what writing text costs.
pub const Q28_TYPED: &str = "SELECT CASE s._12 WHEN '' THEN NULL ELSE CAST(s._12 AS DECIMAL(7,2)) END, CASE s._13 WHEN '' THEN NULL ELSE CAST(s._13 AS DECIMAL(7,2)) END, CASE s._20 WHEN '' THEN NULL ELSE CAST(s._20 AS DECIMAL(7,2)) END FROM S3Object s WHERE ((case s._11 when '' then null else CAST(s._11 AS INT) end >= 0 AND case s._11 when '' then null else CAST(s._11 AS INT) end <= 5))";

/// See [`Q28_TYPED`].
pub const PROJECTION_TYPED: &str = "SELECT CASE s._1 WHEN '' THEN NULL ELSE CAST(s._1 AS INT) END, CASE s._3 WHEN '' THEN NULL ELSE CAST(s._3 AS INT) END, CASE s._14 WHEN '' THEN NULL ELSE CAST(s._14 AS DECIMAL(7,2)) END FROM S3Object s";

/// The output comparison: name, query, and whether the output is Arrow (else CSV).
pub const OUTPUT_QUERIES: [(&str, &str, bool); 4] = [
    ("q28_typed_csv", Q28_TYPED, false),
    ("q28_typed_arrow", Q28_TYPED, true),
    ("projection_typed_csv", PROJECTION_TYPED, false),
    ("projection_typed_arrow", PROJECTION_TYPED, true),
];

/// A request over dsdgen data as Trino sends it: `|` fields, U+FDD0 as the comment marker.
pub fn dsdgen_request(sql: &str) -> SelectRequest {
    SelectRequest {
        sql: sql.into(),
        input: sift_tpcds_data::dsdgen_input(),
        ..SelectRequest::default()
    }
}
