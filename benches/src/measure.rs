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

/// CPU time this process has used so far, all threads together.
pub fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time used so far by this process's finished and waited-for children.
pub fn children_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage for the call to fill in.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// One round of a scaling measurement: the same work on one thread, then on two, back to
/// back, so that both runs see the same machine.
#[derive(Debug, Clone, Copy)]
pub struct Round {
    pub wall: [Duration; 2],
    pub cpu: [Duration; 2],
}

/// What a series of [`Round`]s says about scaling from one thread to two.
///
/// On a shared virtual machine a core's speed drifts from second to second, and the two
/// cores do not always drift together. The best one-thread time and the best two-thread time
/// then come from different moments, and their ratio measures the host as much as the
/// engine. The ratio within a round compares runs a fraction of a second apart, so its
/// median is the steadier figure; the CPU-time ratio says how much extra work running in
/// parallel costs (1.00: none), and the busy share says how much of two cores' time the
/// two-thread run kept busy (1.00: no thread ever waited).
#[derive(Debug, Clone, Copy)]
pub struct Scaling {
    /// Best one-thread time over best two-thread time.
    pub best_ratio: f64,
    /// Median over rounds of one-thread time over two-thread time.
    pub paired_ratio: f64,
    /// Median over rounds of two-thread CPU time over one-thread CPU time.
    pub cpu_ratio: f64,
    /// Median over rounds of two-thread CPU time over twice its wall time.
    pub busy: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

impl Scaling {
    pub fn of(rounds: &[Round]) -> Scaling {
        let secs = |d: Duration| d.as_secs_f64();
        let best = |i: usize| {
            rounds
                .iter()
                .map(|r| secs(r.wall[i]))
                .fold(f64::MAX, f64::min)
        };
        Scaling {
            best_ratio: best(0) / best(1),
            paired_ratio: median(
                rounds
                    .iter()
                    .map(|r| secs(r.wall[0]) / secs(r.wall[1]))
                    .collect(),
            ),
            cpu_ratio: median(
                rounds
                    .iter()
                    .map(|r| secs(r.cpu[1]) / secs(r.cpu[0]))
                    .collect(),
            ),
            busy: median(
                rounds
                    .iter()
                    .map(|r| secs(r.cpu[1]) / (2.0 * secs(r.wall[1])))
                    .collect(),
            ),
        }
    }

    /// The best wall time of one (`i = 0`) or two (`i = 1`) threads.
    pub fn best(rounds: &[Round], i: usize) -> Duration {
        rounds
            .iter()
            .map(|r| r.wall[i])
            .min()
            .unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(w1: u64, c1: u64, w2: u64, c2: u64) -> Round {
        let ms = Duration::from_millis;
        Round {
            wall: [ms(w1), ms(w2)],
            cpu: [ms(c1), ms(c2)],
        }
    }

    #[test]
    fn paired_ratio_ignores_which_round_was_fastest() {
        // The fastest one-thread run (round 2) came while the second core was slow.
        let rounds = [
            round(100, 100, 50, 100),
            round(80, 80, 60, 110),
            round(100, 100, 52, 102),
        ];
        let s = Scaling::of(&rounds);
        assert!((s.best_ratio - 1.6).abs() < 1e-9, "{s:?}");
        assert!((s.paired_ratio - 100.0 / 52.0).abs() < 1e-9, "{s:?}");
        assert!((s.cpu_ratio - 1.02).abs() < 1e-9, "{s:?}");
        assert!((s.busy - 102.0 / 104.0).abs() < 1e-9, "{s:?}");
        assert_eq!(Scaling::best(&rounds, 0), Duration::from_millis(80));
    }
}
