//! Timing helpers shared by the benchmark binaries.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sift_engine::Sink;

/// A sink that only counts the bytes it is given, so that output costs nothing.
pub struct CountSink(pub u64);

impl Sink for CountSink {
    fn write(&mut self, data: &[u8]) -> sift_engine::Result<()> {
        self.0 += data.len() as u64;
        Ok(())
    }
}

/// The fastest of `runs` runs of `f`: on a shared host the minimum is the least disturbed.
pub fn best(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// The best of `runs` runs of `wc -l` on `file`: the yardstick every throughput is divided
/// by, measured in the same run so that the ratio holds on any machine.
pub fn wc_l(file: &Path, runs: usize) -> Duration {
    best(runs, || {
        let _ = Command::new("wc")
            .arg("-l")
            .arg(file)
            .env("LC_ALL", "C")
            .stdout(Stdio::null())
            .status();
    })
}
