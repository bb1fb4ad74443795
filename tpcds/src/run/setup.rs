//! Before any query is timed: the store connected and its S3 Select checked, the tables'
//! parts listed and, for `auto`, sampled.

use std::sync::Arc;

use super::{ResultFormat, RunOptions};
use crate::error::{Error, Result};
use crate::layout::Format;
use crate::load::list_keys;
use crate::net::Link;
use crate::probe;
use crate::s3::{table_prefix, EndpointArgs};
use crate::scan::{Mode, ParquetFooters, Request, Results, Sample, Store};
use crate::schema::SCHEMAS;

/// The store at `endpoint`, its requests counted (and paced) by `link`, with what its S3
/// Select does where stores differ; and the tables found there.
pub(super) async fn connect(
    endpoint: &EndpointArgs,
    options: &RunOptions,
    link: &Arc<Link>,
) -> Result<(Arc<Store>, Vec<TableData>)> {
    let shared = endpoint.signing.shared_config(Arc::clone(link)).await;
    let mut store = Store::connect(
        &shared,
        &endpoint.location(),
        endpoint.bucket.clone(),
        options.concurrency,
    );
    if let Some(bytes) = options.split_bytes {
        store.split_size = bytes.max(1);
    }
    let auto = options.modes.contains(&Mode::Auto);
    let tables = discover(
        &store,
        &endpoint.prefix,
        options.scale,
        options.format,
        auto,
    )
    .await?;
    store.compress_arrow = options.result_compression.compress(options.link_rate);
    let pushes = options.modes.iter().any(|&m| m != Mode::Fetch);
    if pushes && matches!(options.format, Format::Csv | Format::Parquet) {
        store.behaviour = match options.format {
            Format::Parquet => {
                let first = tables.first().and_then(|t| {
                    let (part, _) = t.objects.first()?;
                    let (column, _) = t.schema.columns.first()?;
                    Some((part, column))
                });
                let Some((part, column)) = first else {
                    return Err(Error::Invalid(
                        "no Parquet part to check the store on".into(),
                    ));
                };
                probe::check_parquet(&store, part, &format!("s.\"{column}\"")).await?
            }
            _ => {
                let parts: Vec<&(String, u64)> = tables.iter().flat_map(|t| &t.objects).collect();
                probe::check(&store, &parts).await?
            }
        };
        match options.result_format {
            ResultFormat::Auto => {}
            ResultFormat::Csv => store.behaviour.arrow_results = false,
            ResultFormat::Arrow if store.behaviour.arrow_results => {}
            ResultFormat::Arrow => {
                return Err(Error::Invalid(format!(
                    "--result-format arrow: {} does not answer selects in Arrow (only Sift's \
                     gateway does); leave it out to read CSV there",
                    endpoint.endpoints.join(", ")
                )))
            }
        }
        if !store.behaviour.scan_ranges {
            eprintln!(
                "note: {} does not answer a ScanRange with the records that start in it \
                 (as AWS defines it); pushed-down scans select each part whole",
                endpoint.endpoints.join(", ")
            );
        }
    }
    Ok((Arc::new(store), tables))
}

/// Per-table part objects, sampled lines and line length, read once before any query is
/// timed.
pub(super) struct TableData {
    pub(super) schema: &'static crate::schema::TableSchema,
    pub(super) objects: Vec<(String, u64)>,
    pub(super) line_bytes: f64,
    /// Text and Parquet parts in auto mode: the sample it predicts answers from.
    pub(super) sample: Option<Arc<Sample>>,
}

/// The tables at `prefix`, with a sample of each text or Parquet table when `sample` (auto
/// mode predicts from it).
async fn discover(
    store: &Store,
    prefix: &str,
    scale: f64,
    format: Format,
    sample: bool,
) -> Result<Vec<TableData>> {
    let mut tables = Vec::new();
    let extension = format!(".{}", format.extension());
    for schema in SCHEMAS.iter() {
        let table_prefix = table_prefix(prefix, scale, schema.name);
        let mut objects: Vec<(String, u64)> = list_on_any(store, &table_prefix)
            .await?
            .into_iter()
            .filter(|(key, _)| key.ends_with(&extension))
            .collect();
        objects.sort();
        if objects.is_empty() {
            let flag = match format {
                Format::Csv => String::new(),
                other => format!(" --format {}", other.name()),
            };
            return Err(Error::Invalid(format!(
                "no data for table {} at s3://{}/{table_prefix}: run `sift tpcds load --sf {scale}{flag}` first",
                schema.name, store.bucket
            )));
        }
        let footers = match format {
            Format::Parquet => Some(ParquetFooters::read(store, &objects).await?),
            Format::Csv | Format::CsvGzip => None,
        };
        let sample = match (format, &footers, sample) {
            (Format::Csv, _, true) => Some(Arc::new(Sample::of_text(store, &objects).await?)),
            (_, Some(footers), true) => Some(Arc::new(
                Sample::of_parquet(store, &objects, footers).await?,
            )),
            _ => None,
        };
        // A Parquet file has no lines, and a gzip part's lines are known only once it is
        // inflated: bytes of the object per row instead, for the same purpose (DataFusion's
        // row estimates from object sizes). A Parquet table's rows are its footers'; a
        // gzip table's are estimated from its first part's inflated lines.
        let total: u64 = objects.iter().map(|(_, size)| size).sum();
        let line_bytes = match &footers {
            Some(footers) => total as f64 / footers.rows().max(1) as f64,
            None => sample_line_bytes(store, &objects[0], format).await?,
        };
        tables.push(TableData {
            schema,
            objects,
            line_bytes,
            sample,
        });
    }
    Ok(tables)
}

/// Object bytes per line of a text part, from its head: 64 KiB of plain text, or of a gzip
/// part 256 KiB inflated as far as they go (what a cut deflate block holds back is a few
/// KiB, noise in a row estimate).
async fn sample_line_bytes(
    store: &Store,
    (key, size): &(String, u64),
    format: Format,
) -> Result<f64> {
    use std::io::Read;
    if *size == 0 {
        return Ok(100.0);
    }
    let head: u64 = match format {
        Format::CsvGzip => 256 << 10,
        _ => 64 << 10,
    };
    let sample = Request::Get {
        key: key.clone(),
        start: 0,
        end: (*size).min(head),
    };
    let body = store
        .send(&sample, "", format, Results::Csv)
        .await?
        .body
        .joined();
    let newlines = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count();
    let lines = match format {
        Format::CsvGzip => {
            let mut inflate = flate2::read::MultiGzDecoder::new(&body[..]);
            let (mut buffer, mut lines) = (vec![0u8; 64 << 10], 0);
            // A cut stream ends in an error; the lines before it count.
            while let Ok(n @ 1..) = inflate.read(&mut buffer) {
                lines += newlines(&buffer[..n]);
            }
            lines
        }
        _ => newlines(&body),
    };
    Ok(body.len() as f64 / lines.max(1) as f64)
}

/// The keys and sizes under `prefix`, listed at the first endpoint that answers.
async fn list_on_any(store: &Store, prefix: &str) -> Result<Vec<(String, u64)>> {
    let mut failures = Vec::new();
    for endpoint in store.endpoints() {
        match list_keys(&endpoint.client, &store.bucket, prefix).await {
            Ok(keys) => return Ok(keys),
            Err(e) if e.is_transient() => failures.push(format!("{}: {e}", endpoint.url)),
            Err(e) => return Err(e),
        }
    }
    Err(Error::Invalid(format!(
        "no endpoint could list s3://{}/{prefix}: {}",
        store.bucket,
        failures.join("; ")
    )))
}
