//! Benchmarks shared by `benches/` (criterion) and `engram bench`, each
//! measured beside its peer baseline in the same run.
pub mod fast_path;
pub mod knn;
pub mod log;
pub mod patterns;
pub mod runtime;

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

/// `v` rounded to two decimals (report figures).
/// Says what a benchmark is doing, on a terminal's stderr only (not with
/// `--json`, not into a pipe).
pub(crate) fn progress(json: bool, what: &str) {
    use std::io::IsTerminal;
    if !json && std::io::stderr().is_terminal() {
        eprintln!("  {what} …");
    }
}

pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
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
