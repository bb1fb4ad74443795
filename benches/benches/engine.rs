//! Engine throughput on TPC-DS store_sales SF1 held in memory (`cargo bench -p sift-benches`).
//!
//! The data is generated on first use into `bench-data/` at the workspace root (about 388 MB,
//! ~6 s). Throughput is reported in bytes of input per second.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sift_benches::queries;
use sift_engine::{Select, Sink, SliceSource};
use sift_tpcds_data::data;

/// Counts output bytes without keeping them.
struct CountSink(u64);

impl Sink for CountSink {
    fn write(&mut self, data: &[u8]) -> sift_engine::Result<()> {
        self.0 += data.len() as u64;
        Ok(())
    }
}

fn store_sales() -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench-data");
    let path = data::generate_table("store_sales", 1.0, &dir).expect("generate store_sales SF1");
    std::fs::read(path).expect("read store_sales")
}

fn engine(c: &mut Criterion) {
    let input = store_sales();
    let mut group = c.benchmark_group("store_sales_sf1");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.sample_size(10);
    for (name, sql) in queries::QUERIES {
        for threads in [1, 2] {
            let select = Select::new(queries::dsdgen_request(sql))
                .expect("valid query")
                .with_threads(threads);
            group.bench_function(format!("{name}/threads={threads}"), |b| {
                b.iter(|| {
                    let mut sink = CountSink(0);
                    select
                        .run(&SliceSource(&input), &mut sink)
                        .expect("select runs");
                    sink.0
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
