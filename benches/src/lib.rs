//! Benchmarks shared by `benches/` (criterion) and `engram bench`, each
//! measured beside its peer baseline in the same run.
#![warn(missing_docs)]

pub mod bfcl;
pub mod fast_path;
pub mod home;
pub mod knn;
pub mod labelled;
pub mod learning;
pub mod log;
pub mod memory;
pub mod memory_recall;
pub mod patterns;
pub mod runtime;
pub mod soak;
pub mod startup;

/// The JetStream peer of the log bench, at the path it has always had.
pub use log::jetstream;

/// The machine a report was measured on: cores, CPU model, OS and arch —
/// figures from a shared 2-core VM and a workstation are not comparable.
pub(crate) fn machine() -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cores} cores ({cpu}), {} {}", std::env::consts::OS, std::env::consts::ARCH)
}

/// Says what a benchmark is doing, on a terminal's stderr only (not with
/// `--json`, not into a pipe).
pub(crate) fn progress(json: bool, what: &str) {
    use std::io::IsTerminal;
    if !json && std::io::stderr().is_terminal() {
        eprintln!("  {what} …");
    }
}

/// `v` rounded to two decimals (report figures).
pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Percentile `p` (0–100) of `samples` by nearest rank: the smallest
/// sample with at least `p` % of the samples at or below it (`None` when
/// there are none). The one definition behind every p50, p99 and median
/// engram reports — benchmark latencies, the median of repeated runs, the
/// demo's latency by layer — so that any two of its figures are computed
/// alike. A p50 of an even count is the lower of the middle two.
pub fn percentile<T: Copy + PartialOrd>(samples: &[T], p: f64) -> Option<T> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let rank = ((p / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    Some(s[rank.min(s.len()) - 1])
}

/// [`percentile`] of durations, in µs rounded to two decimals (NaN when
/// there are no samples): the unit of every latency figure in a report.
pub fn percentile_us(samples: &[std::time::Duration], p: f64) -> f64 {
    percentile(samples, p).map_or(f64::NAN, |d| round2(d.as_secs_f64() * 1e6))
}

/// `v` as a whole number with thousands separators (human reports).
pub(crate) fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let v = [5, 1, 4, 2, 3];
        assert_eq!(percentile(&v, 50.0), Some(3));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&v, 99.0), Some(5));
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 50.0), Some(2.0), "lower middle of an even count");
        assert_eq!(percentile::<u64>(&[], 50.0), None);
        let d = [std::time::Duration::from_micros(7), std::time::Duration::from_nanos(1500)];
        assert_eq!(percentile_us(&d, 50.0), 1.5);
        assert!(percentile_us(&[], 50.0).is_nan());
    }
}
