//! The statements that make Trino's Hive connector read the objects `sift tpcds load` wrote:
//! one external `TEXTFILE` table per TPC-DS table over its `PREFIX/sf<SF>/<table>/` folder.
//!
//! Types follow the TPC-DS DDL ([`crate::schema`]) with one deliberate change: `char(n)` and
//! `varchar(n)` columns are declared unbounded `varchar`, which the Hive metastore stores as
//! `string`. Trino's Hive connector (up to 426, when it was removed) turns S3 Select on for
//! a table only when *every* column's Hive type is one of boolean, tinyint, smallint, int,
//! bigint, string, decimal or date; a single `char(16)` or `varchar(50)` column keeps the
//! whole table on GET. The values are the same (dsdgen writes no trailing blanks, so
//! `char`'s padding semantics never matter), and string predicates become pushable, as in
//! the benchmark Sift reproduces. The one `time` column (dbgen_version's, which no query
//! reads) is a `varchar` too: Hive has no time type.
//!
//! dsdgen writes NULL as an empty field; Hive's text format reads `\N` as NULL and an empty
//! string field as the empty string. `null_format = ''` makes the empty field NULL, as it is
//! to Sift's client and to the queries' author (without it q68 finds rows whose city is ''
//! different from every other city).

use std::fmt::Write as _;

use crate::layout::scale_label;
use crate::s3::table_prefix;
use crate::schema::{ColumnType, SCHEMAS};

/// Where the tables go and which objects they read.
#[derive(Debug, Clone)]
pub struct DdlOptions {
    /// The Hive catalog's name in Trino (`hive` in `scripts/trino.sh`).
    pub catalog: String,
    /// The schema; [`default_schema`] unless given.
    pub schema: String,
    pub bucket: String,
    /// The `--prefix` of `sift tpcds load`.
    pub prefix: String,
    pub scale: f64,
}

/// `tpcds_sf1`, `tpcds_gz_sf0_01`: a schema per data set (the load's prefix and scale
/// factor), so several can be declared side by side.
pub fn default_schema(prefix: &str, scale: f64) -> String {
    let name = format!("{}_sf{}", prefix.trim_matches('/'), scale_label(scale));
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The Trino type of a TPC-DS column (see the module documentation for why strings are
/// unbounded).
pub fn trino_type(column: ColumnType) -> String {
    match column {
        ColumnType::Integer => "integer".into(),
        ColumnType::Decimal(precision, scale) => format!("decimal({precision},{scale})"),
        ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Time => "varchar".into(),
        ColumnType::Date => "date".into(),
    }
}

/// `CREATE SCHEMA IF NOT EXISTS` and one `CREATE TABLE IF NOT EXISTS` per table, each
/// statement ending with `;` on its own line, ready for `trino --file`.
pub fn ddl(options: &DdlOptions) -> String {
    let DdlOptions {
        catalog, schema, ..
    } = options;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "-- TPC-DS SF {} over s3a://{}/{}: `sift tpcds trino-ddl`",
        scale_label(options.scale),
        options.bucket,
        table_prefix(&options.prefix, options.scale, "").trim_end_matches('/'),
    );
    let _ = writeln!(out, "CREATE SCHEMA IF NOT EXISTS {catalog}.{schema};");
    for table in &SCHEMAS {
        let _ = writeln!(
            out,
            "CREATE TABLE IF NOT EXISTS {catalog}.{schema}.{} (",
            table.name
        );
        for (i, (name, column)) in table.columns.iter().enumerate() {
            let comma = if i + 1 < table.columns.len() { "," } else { "" };
            let _ = writeln!(out, "    {name} {}{comma}", trino_type(*column));
        }
        let location = table_prefix(&options.prefix, options.scale, table.name);
        let _ = writeln!(
            out,
            ") WITH (format = 'TEXTFILE', textfile_field_separator = '|', null_format = '', \
             external_location = 's3a://{}/{location}');",
            options.bucket
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> DdlOptions {
        DdlOptions {
            catalog: "hive".into(),
            schema: default_schema("tpcds", 0.01),
            bucket: "tpcds".into(),
            prefix: "tpcds".into(),
            scale: 0.01,
        }
    }

    #[test]
    fn every_table_reads_its_load_folder() {
        let text = ddl(&options());
        assert!(text.contains("CREATE SCHEMA IF NOT EXISTS hive.tpcds_sf0_01;"));
        assert_eq!(text.matches("CREATE TABLE IF NOT EXISTS").count(), 24);
        assert!(text.contains("external_location = 's3a://tpcds/tpcds/sf0.01/store_sales/'"));
        assert_eq!(text.matches("null_format = ''").count(), 24);
        // One `;` per statement, each at a line's end (what trino --file splits on).
        assert_eq!(text.matches(";\n").count(), 25);
    }

    #[test]
    fn types_keep_every_table_pushable() {
        let text = ddl(&options());
        let store_sales = text
            .split("CREATE TABLE")
            .find(|t| t.contains(".store_sales ("))
            .expect("store_sales");
        assert!(store_sales.contains("    ss_sold_date_sk integer,\n"));
        assert!(store_sales.contains("    ss_sales_price decimal(7,2),\n"));
        let item = text
            .split("CREATE TABLE")
            .find(|t| t.contains(".item ("))
            .unwrap();
        assert!(item.contains("    i_item_id varchar,\n"));
        assert!(item.contains("    i_rec_start_date date,\n"));
        // Only the types Trino's Hive connector pushes S3 Select down for.
        for line in text.lines().filter(|l| l.starts_with("    ")) {
            let ty = line.trim().trim_end_matches(',').split_once(' ').unwrap().1;
            assert!(
                ty == "integer" || ty == "varchar" || ty == "date" || ty.starts_with("decimal("),
                "{line}"
            );
        }
    }

    #[test]
    fn schema_names_are_identifiers() {
        assert_eq!(default_schema("tpcds", 1.0), "tpcds_sf1");
        assert_eq!(default_schema("tpcds", 0.01), "tpcds_sf0_01");
        assert_eq!(default_schema("/tpcds-gz/", 10.0), "tpcds_gz_sf10");
    }
}
