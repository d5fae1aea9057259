//! The disk a data dir takes beside the raw bytes of its records (sled
//! keeps roughly twice the raw size on disk), and sizes in human units.

use std::path::Path;

use crate::Log;

/// The raw size of the records and the size of the data dir on disk.
pub(super) struct Footprint {
    /// The bytes of the log's records.
    pub(super) record_bytes: u64,
    /// The bytes of every file under the data dir.
    pub(super) disk_bytes: u64,
    /// `disk_bytes / record_bytes` (0 with no records).
    pub(super) ratio: f64,
}

/// Measures the records of `log` and the files under `data`.
pub(super) fn footprint(data: &Path, log: &Log) -> anyhow::Result<Footprint> {
    let record_bytes: u64 = log.records().segments().map(|s| s.map(|(_, b)| b.len() as u64)).sum::<Result<u64, _>>()?;
    let disk_bytes = dir_bytes(data);
    let ratio = if record_bytes > 0 { disk_bytes as f64 / record_bytes as f64 } else { 0.0 };
    Ok(Footprint { record_bytes, disk_bytes, ratio })
}

/// Total size of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// `n` bytes in B, KiB, MiB, GiB or TiB, to one decimal above bytes.
pub(super) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
