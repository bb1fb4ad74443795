//! TPC-DS benchmark data in dsdgen's flat-file format.
//!
//! The engine's speed targets are quoted against TPC-DS tables exactly as the reference
//! `dsdgen` writes them: `|`-delimited fields, a `|` after the last field of every row,
//! `\n` line ends, no header, uncompressed, UTF-8. That is the `Display` output of the
//! `tpcdsgen` row types, so this module only has to pick the generator for a table, drive
//! it over a range of source rows and put the bytes in a file.
//!
//! **Which dsdgen.** Every table is byte for byte what the TPC-DS kit's dsdgen v2.10 writes
//! (the tools most published results, DuckDB's dsdgen and the specification's table of row
//! counts agree with; MD5s in `tpcds/tests/data_format.rs`, taken as docs/tpcds.md describes).
//! `tpcdsgen`'s [`CompatMode::C`] follows dsdgen 4.0 instead, which differs in `reason`:
//! 4.0's `scaling.dst` gives it 75 rows at every scale where v2.10's gives 35 at SF 1, 45 at
//! SF 10, … 75 at SF 100,000 (and the returns tables draw their reason keys from that
//! many), and 4.0 corrected v2.10's description of row 30, which repeats "reason 31". Its
//! [`CompatMode::Trino`] (the Java port of v2.x) has v2.10's `reason` in both respects and
//! differs from C mode elsewhere only in the text encoding (Latin-1). So every generator
//! runs in a Trino-mode session and every file is written in C mode (UTF-8).
//!
//! Source rows versus output rows: the sales tables are generated per *ticket* (one source
//! row) that expands to several line items (output rows), and the returns tables replay
//! the same tickets keeping the returned items. Row ranges, slices and
//! [`source_row_count`] are therefore in source rows; [`write_table`] returns output rows.
//!
//! Slicing ([`Slice`]) follows dsdgen's `-parallel N -child K`: the source rows are split
//! into `N` contiguous ranges, but, as in dsdgen, a table with fewer than 1,000,000 source
//! rows is not split: child 1 gets all of it and the other children are empty. Store sales
//! has 240,000 tickets at SF 1, so it is only split from SF 5 upwards. Concatenating the
//! children of a table in order gives the unsliced file byte for byte.

use std::fmt::Display;
use std::fs::{self, File};
use std::io::{self, Write};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use tpcdsgen::config::{CompatMode, Session, SessionBuilder, Table};
use tpcdsgen::output::DatWriter;
use tpcdsgen::row::{
    CallCenterRowGenerator, CatalogPageRowGenerator, CatalogReturnsRowGenerator,
    CatalogSalesRowGenerator, CustomerAddressRowGenerator, CustomerDemographicsRowGenerator,
    CustomerRowGenerator, DateDimRowGenerator, HouseholdDemographicsRowGenerator,
    IncomeBandRowGenerator, InventoryRowGenerator, ItemRowGenerator, PromotionRowGenerator,
    ReasonRowGenerator, ShipModeRowGenerator, StoreReturnsRowGenerator, StoreRowGenerator,
    StoreSalesRowGenerator, TimeDimRowGenerator, WarehouseRowGenerator, WebPageRowGenerator,
    WebReturnsRowGenerator, WebSalesRowGenerator, WebSiteRowGenerator,
};

/// The 24 TPC-DS tables, in dsdgen's alphabetical order.
///
/// `dbgen_version` (the generator's metadata table) is deliberately absent: its content is
/// the generation time and command line, so it is not reproducible benchmark data.
pub const TABLES: [&str; 24] = [
    "call_center",
    "catalog_page",
    "catalog_returns",
    "catalog_sales",
    "customer",
    "customer_address",
    "customer_demographics",
    "date_dim",
    "household_demographics",
    "income_band",
    "inventory",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "store_returns",
    "store_sales",
    "time_dim",
    "warehouse",
    "web_page",
    "web_returns",
    "web_sales",
    "web_site",
];

/// The field delimiter of the flat files; every row also ends with one.
pub const DELIMITER: u8 = b'|';

/// One of `parallel` slices of a table, as dsdgen's `-parallel N -child K` (1-based child).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    pub child: u32,
    pub parallel: u32,
}

impl Slice {
    /// The whole table.
    pub const WHOLE: Slice = Slice {
        child: 1,
        parallel: 1,
    };

    pub fn is_whole(self) -> bool {
        self.parallel == 1
    }
}

/// What [`generate_table_slice`] produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub path: PathBuf,
    /// File size in bytes.
    pub bytes: u64,
    /// Output rows written, or `None` if a complete file was already there and reused.
    pub rows: Option<u64>,
}

/// Resolves a table name (case-insensitive) to one of the [`TABLES`].
pub fn parse_table(name: &str) -> io::Result<Table> {
    let unknown = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("unknown TPC-DS table {name:?}; expected one of {TABLES:?}"),
        )
    };
    let table = Table::from_str(name).map_err(|_| unknown())?;
    if table == Table::DbgenVersion {
        return Err(unknown());
    }
    Ok(table)
}

/// Number of columns of `table`, i.e. the number of `|` on each of its rows.
pub fn column_count(table: &str) -> io::Result<usize> {
    let table = parse_table(table)?;
    Ok(tpcdsgen::csv::csv_header(table, ',').split(',').count())
}

/// The file a table (slice) is written to: `{table}_sf{scale}.dat`, or
/// `{table}_sf{scale}_{child}_{parallel}.dat` for a slice (dsdgen's suffix convention).
pub fn file_name(table: &str, scale: f64, slice: Slice) -> String {
    let table = table.to_ascii_lowercase();
    if slice.is_whole() {
        format!("{table}_sf{scale}.dat")
    } else {
        format!("{table}_sf{scale}_{}_{}.dat", slice.child, slice.parallel)
    }
}

/// A generator session that makes the kit v2.10's data (see the module doc).
fn session(scale: f64, slice: Slice) -> io::Result<Session> {
    let to_i32 = |n: u32| {
        i32::try_from(n).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "slice too big"))
    };
    SessionBuilder::new()
        .with_scale_factor(scale)
        .with_compat_mode(CompatMode::Trino)
        .with_chunk_number(to_i32(slice.child)?)
        .with_total_chunks(to_i32(slice.parallel)?)
        .build()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
}

/// Number of source rows of `table` at `scale` (tickets for the sales and returns tables).
pub fn source_row_count(table: &str, scale: f64) -> io::Result<u64> {
    let session = session(scale, Slice::WHOLE)?;
    Ok(session.get_scaling().get_row_count(parse_table(table)?))
}

/// The 1-based inclusive source rows that `slice` of `table` covers; empty (`1..=0`) for
/// the children of an unsplit small table.
pub fn source_row_range(table: &str, scale: f64, slice: Slice) -> io::Result<RangeInclusive<u64>> {
    let session = session(scale, slice)?;
    Ok(session.get_source_row_range(parse_table(table)?))
}

/// Writes the dsdgen rows for source rows `rows` of `table` to `out`; returns the number of
/// output rows. Any sub-range can be generated independently (the generators fast-forward
/// their random streams), which is what makes slicing and parallel generation possible.
pub fn write_rows<W: Write>(
    table: &str,
    scale: f64,
    rows: RangeInclusive<u64>,
    out: W,
) -> io::Result<u64> {
    let table = parse_table(table)?;
    let session = session(scale, Slice::WHOLE)?;
    let row_count = session.get_scaling().get_row_count(table);
    let mut out = DatWriter::new(out, CompatMode::C);

    macro_rules! drive {
        ($generator:ident) => {{
            let mut generator = $generator::new(session, row_count);
            generator.set_source_row_range(*rows.start(), *rows.end());
            write_all_rows(generator, &mut out)
        }};
    }

    let written = match table {
        Table::CallCenter => drive!(CallCenterRowGenerator),
        Table::CatalogPage => drive!(CatalogPageRowGenerator),
        Table::CatalogReturns => drive!(CatalogReturnsRowGenerator),
        Table::CatalogSales => drive!(CatalogSalesRowGenerator),
        Table::Customer => drive!(CustomerRowGenerator),
        Table::CustomerAddress => drive!(CustomerAddressRowGenerator),
        Table::CustomerDemographics => drive!(CustomerDemographicsRowGenerator),
        Table::DateDim => drive!(DateDimRowGenerator),
        Table::HouseholdDemographics => drive!(HouseholdDemographicsRowGenerator),
        Table::IncomeBand => drive!(IncomeBandRowGenerator),
        Table::Inventory => drive!(InventoryRowGenerator),
        Table::Item => drive!(ItemRowGenerator),
        Table::Promotion => drive!(PromotionRowGenerator),
        Table::Reason => drive!(ReasonRowGenerator),
        Table::ShipMode => drive!(ShipModeRowGenerator),
        Table::Store => drive!(StoreRowGenerator),
        Table::StoreReturns => drive!(StoreReturnsRowGenerator),
        Table::StoreSales => drive!(StoreSalesRowGenerator),
        Table::TimeDim => drive!(TimeDimRowGenerator),
        Table::Warehouse => drive!(WarehouseRowGenerator),
        Table::WebPage => drive!(WebPageRowGenerator),
        Table::WebReturns => drive!(WebReturnsRowGenerator),
        Table::WebSales => drive!(WebSalesRowGenerator),
        Table::WebSite => drive!(WebSiteRowGenerator),
        Table::DbgenVersion => unreachable!("rejected by parse_table"),
    }?;
    out.flush()?;
    Ok(written)
}

fn write_all_rows<W: Write, R: Display>(
    rows: impl Iterator<Item = R>,
    out: &mut DatWriter<W>,
) -> io::Result<u64> {
    let mut n = 0;
    for row in rows {
        out.write_display_row(&row)?;
        n += 1;
    }
    Ok(n)
}

/// Writes `slice` of `table` at `scale` to `out`; returns the number of output rows.
pub fn write_table<W: Write>(table: &str, scale: f64, slice: Slice, out: W) -> io::Result<u64> {
    let rows = source_row_range(table, scale, slice)?;
    write_rows(table, scale, rows, out)
}

/// Generates `table` at `scale` into `out_dir/{table}_sf{scale}.dat` and returns its path.
///
/// A file already at that path is taken as complete and reused: files are written under a
/// temporary name and renamed into place only once fully written and synced.
pub fn generate_table(table: &str, scale: f64, out_dir: &Path) -> io::Result<PathBuf> {
    generate_table_slice(table, scale, Slice::WHOLE, out_dir).map(|g| g.path)
}

/// Like [`generate_table`] for one slice (see [`file_name`]); a slice with no rows gives an
/// empty file, so every child has a file even where dsdgen would write none.
pub fn generate_table_slice(
    table: &str,
    scale: f64,
    slice: Slice,
    out_dir: &Path,
) -> io::Result<Generated> {
    parse_table(table)?;
    let path = out_dir.join(file_name(table, scale, slice));
    if let Ok(meta) = fs::metadata(&path) {
        return Ok(Generated {
            path,
            bytes: meta.len(),
            rows: None,
        });
    }
    fs::create_dir_all(out_dir)?;
    // The pid keeps two concurrent generators of the same file from sharing a temp file.
    let tmp = path.with_extension(format!("dat.{}.tmp", std::process::id()));
    let result = (|| {
        let file = File::create(&tmp)?;
        let rows = write_table(table, scale, slice, &file)?;
        file.sync_all()?;
        fs::rename(&tmp, &path)?;
        Ok(rows)
    })();
    let rows = match result {
        Ok(rows) => rows,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    };
    Ok(Generated {
        bytes: fs::metadata(&path)?.len(),
        path,
        rows: Some(rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_tables_resolve_and_dbgen_version_is_refused() {
        for table in TABLES {
            assert_eq!(parse_table(table).unwrap().get_name(), table);
        }
        assert!(parse_table("dbgen_version").is_err());
        assert!(parse_table("nope").is_err());
        assert_eq!(column_count("store_sales").unwrap(), 23);
    }

    #[test]
    fn file_names() {
        assert_eq!(
            file_name("store_sales", 1.0, Slice::WHOLE),
            "store_sales_sf1.dat"
        );
        let slice = Slice {
            child: 2,
            parallel: 4,
        };
        assert_eq!(file_name("item", 0.01, slice), "item_sf0.01_2_4.dat");
    }

    #[test]
    fn small_tables_are_not_split() {
        let child = |child| Slice { child, parallel: 3 };
        assert_eq!(source_row_range("item", 1.0, child(1)).unwrap(), 1..=18000);
        assert!(source_row_range("item", 1.0, child(2)).unwrap().is_empty());
        // 11,745,000 source rows is over dsdgen's 1M threshold
        assert_eq!(
            source_row_range("inventory", 1.0, child(2)).unwrap(),
            3915001..=7830000
        );
    }
}
