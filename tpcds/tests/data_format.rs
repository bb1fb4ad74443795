//! The generated files must be in dsdgen's format, which the engine benchmarks assume.

use std::fs;
use std::path::PathBuf;

use sift_tpcds::data::{self, Slice};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-bench-data-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// Every row: `\n`-terminated, one `|` per column (the last one trailing), valid UTF-8.
fn check_format(bytes: &[u8], columns: usize) -> usize {
    assert!(bytes.ends_with(b"\n"));
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    let mut rows = 0;
    for line in text.split_terminator('\n') {
        assert!(line.ends_with('|'), "no trailing |: {line}");
        assert!(!line.ends_with('\r'));
        assert_eq!(line.matches('|').count(), columns, "{line}");
        rows += 1;
    }
    rows
}

#[test]
fn store_sales_small_scale_is_dsdgen_format() {
    let dir = temp_dir("store_sales");
    let scale = 0.001;
    let path = data::generate_table("store_sales", scale, &dir).unwrap();
    assert_eq!(path, dir.join("store_sales_sf0.001.dat"));
    let bytes = fs::read(&path).unwrap();
    let rows = check_format(&bytes, 23);
    assert!(rows > 1000, "{rows} rows");
    // No header: the first field is a date surrogate key or empty (NULL).
    let first = bytes.split(|&b| b == b'|').next().unwrap();
    assert!(first.iter().all(u8::is_ascii_digit));

    // A second call finds the complete file and leaves it alone.
    let again = data::generate_table_slice("store_sales", scale, Slice::WHOLE, &dir).unwrap();
    assert_eq!(again.rows, None);
    assert_eq!(again.bytes, bytes.len() as u64);
    assert!(fs::read_dir(&dir).unwrap().count() == 1, "temp file left");

    // Any split into source-row ranges concatenates back to the same bytes.
    let tickets = data::source_row_count("store_sales", scale).unwrap();
    let mut split = Vec::new();
    data::write_rows("store_sales", scale, 1..=tickets / 3, &mut split).unwrap();
    data::write_rows("store_sales", scale, tickets / 3 + 1..=tickets, &mut split).unwrap();
    assert!(split == bytes);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_table_small_scale_is_dsdgen_format() {
    for table in data::TABLES {
        let columns = data::column_count(table).unwrap();
        // Cap the big ones to a few source rows so the test stays fast.
        let rows = data::source_row_count(table, 0.01).unwrap().min(50);
        let mut out = Vec::new();
        let written = data::write_rows(table, 0.01, 1..=rows, &mut out).unwrap();
        assert!(written > 0, "{table}");
        assert_eq!(check_format(&out, columns), written as usize, "{table}");
    }
}

/// MD5 of every table at SF 1 as the TPC-DS kit's own dsdgen v2.10.0 writes it: built from
/// the kit's `tools/` with `make -f Makefile.suite OS=LINUX`, run as `dsdgen -SCALE 1`, then
/// `md5sum *.dat` (docs/tpcds.md, "The data"). SF 1 is the smallest scale v2.10 generates:
/// its `-SCALE` is an integer.
const KIT_V2_10_SF1_MD5: [(&str, &str); 24] = [
    ("call_center", "cc9aabc63eb8603bd7330b6735ed0961"),
    ("catalog_page", "0bbac1b8bdcf8ce2d5f0034980ee0196"),
    ("catalog_returns", "8460b5abd6b6ceaf6107f217b016fb23"),
    ("catalog_sales", "51a0bc401b4b64d94736634b54068240"),
    ("customer", "a08066ed04041d3370f923a9a3969900"),
    ("customer_address", "abac2e3925ab9bf66cec3b527a0468ed"),
    ("customer_demographics", "8831872c6d56ea9d4f24701f2feaef48"),
    ("date_dim", "f3e77714328dcc57302777e72fd7747c"),
    ("household_demographics", "dccf2ff17c5e420021fbf92bf9a0a5ec"),
    ("income_band", "db8e8012be51ef81cf215774bec95533"),
    ("inventory", "cfefc8724693ec9149f1d5b345fcecc2"),
    ("item", "bebbcfd1acecdea16a5a3feb5e4deb96"),
    ("promotion", "acb42558d0dc5e0ab6df5a664c1629cf"),
    ("reason", "57fe9b8688095bd345cc846ec4400be0"),
    ("ship_mode", "791d16af982a67ad170a6b6527e25a35"),
    ("store", "80082d03e1b01340e19db3187d8edbd6"),
    ("store_returns", "9009d804c02ee839e0b2ecd5fb4ae03f"),
    ("store_sales", "f003b3810e042d6dd47f48506616d88d"),
    ("time_dim", "a68339c5720d25380b53f6e0f2f72333"),
    ("warehouse", "f56789e8b724b989d74e213e0686052f"),
    ("web_page", "6feef91675c336d6f25e55ebbdf8c13c"),
    ("web_returns", "e45390d32d1698fef71f05f474a4d748"),
    ("web_sales", "15f9d835727f3a39a096c346f56e51f7"),
    ("web_site", "de5fb00a80673cb44b4b508da75d4bcf"),
];

/// The MD5 of `slice` of `table` at `scale`, generated into the hasher.
fn md5_of(table: &str, scale: f64, slice: Slice) -> String {
    use md5::{Digest, Md5};
    struct Hashing(Md5);
    impl std::io::Write for Hashing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Hashing(Md5::new());
    data::write_table(table, scale, slice, &mut out).expect("generates");
    out.0
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn every_table_at_sf_1_is_the_kits_dsdgen_byte_for_byte() {
    // Two threads, the big tables split between them.
    let (even, odd): (Vec<_>, Vec<_>) = KIT_V2_10_SF1_MD5
        .iter()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let check = |tables: Vec<(usize, &(&str, &str))>| {
        tables
            .into_iter()
            .filter_map(|(_, (table, kit))| {
                let ours = md5_of(table, 1.0, Slice::WHOLE);
                (ours != *kit).then(|| format!("{table}: {ours}, the kit's {kit}"))
            })
            .collect::<Vec<_>>()
    };
    let other = std::thread::spawn(move || check(odd));
    let mut differ = check(even);
    differ.extend(other.join().expect("thread"));
    assert!(differ.is_empty(), "tables unlike the kit's: {differ:?}");
}

/// `--parallel N --child K` slices of the two tables big enough to be split at SF 1,
/// concatenated, are the kit's file.
#[test]
fn slices_concatenate_to_the_kits_file() {
    for table in ["customer_demographics", "inventory"] {
        use md5::{Digest, Md5};
        let mut whole = Md5::new();
        for child in 1..=3 {
            let mut part = Vec::new();
            let slice = Slice { child, parallel: 3 };
            data::write_table(table, 1.0, slice, &mut part).expect("generates");
            assert!(!part.is_empty(), "{table} child {child} of 3 is empty");
            whole.update(&part);
        }
        let ours: String = whole
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let kit = KIT_V2_10_SF1_MD5
            .iter()
            .find(|(t, _)| *t == table)
            .expect("listed")
            .1;
        assert_eq!(ours, kit, "{table}");
    }
}

/// `reason` has the kit's (and the specification's) 35 rows at SF 1, not dsdgen 4.0's 75;
/// the returns tables' reason keys stay within them.
#[test]
fn reason_has_35_rows_at_sf_1() {
    let mut reason = Vec::new();
    data::write_table("reason", 1.0, Slice::WHOLE, &mut reason).unwrap();
    assert_eq!(check_format(&reason, 3), 35);
    let mut returns = Vec::new();
    data::write_rows("store_returns", 1.0, 1..=20_000, &mut returns).unwrap();
    let text = String::from_utf8(returns).unwrap();
    let keys: Vec<u32> = text
        .lines()
        .filter_map(|line| line.split('|').nth(8)?.parse().ok())
        .collect();
    assert!(keys.len() > 1000);
    assert!(
        keys.iter().all(|k| (1..=35).contains(k)),
        "a reason key over 35"
    );
    assert!(keys.contains(&35));
}
