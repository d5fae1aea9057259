//! Start-up benchmark: `engram run --offline --once` on a long log beside
//! the same command on a near-empty data dir, whole processes, in pairs.
//!
//! The long log is made here: `--turns` synthetic turn records (sessions
//! of ten, three in four planned by a model with one to three tool steps,
//! the rest fast-path turns; every text distinct) imported with `engram
//! import`, which also prepares the actors' snapshots. Then, per pair, one
//! run on each data dir, one after the other, so a drift of the machine's
//! speed moves both: the report gives the medians, the spread and the
//! median of the per-pair differences and ratios (the goal of issue #16:
//! within 100 ms of the empty one). Last, the long log's snapshots are
//! removed before each of a few runs: a start that folds the whole log,
//! as every start did before snapshots.
//!
//! Every run is this executable (`std::env::current_exe`), with no
//! configuration file and `--offline`: no model server is involved.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use crate::patterns::Rng;
use crate::{machine, percentile, progress, round2};

/// `engram bench startup` options.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Turn records in the long log (about 12 events each)
    #[arg(long, value_name = "N", default_value_t = 40_000)]
    pub turns: usize,

    /// Pairs of runs (long log, near-empty data dir)
    #[arg(long, value_name = "N", default_value_t = 9)]
    pub runs: usize,

    /// Runs that start without the actors' snapshots
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub cold_runs: usize,

    /// Where to put the scratch data dirs (a temporary directory is made in
    /// it and removed afterwards) [default: the system's temporary directory]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Wall-clock seconds of several runs.
#[derive(Serialize, Debug)]
pub struct Walls {
    /// Median.
    pub median_s: f64,
    /// Fastest.
    pub min_s: f64,
    /// Slowest.
    pub max_s: f64,
}

impl Walls {
    fn of(secs: &[f64]) -> Walls {
        let r3 = |v: f64| (v * 1000.0).round() / 1000.0;
        Walls {
            median_s: r3(percentile(secs, 50.0).unwrap_or(f64::NAN)),
            min_s: r3(secs.iter().copied().fold(f64::INFINITY, f64::min)),
            max_s: r3(secs.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        }
    }
}

/// The report.
#[derive(Serialize, Debug)]
pub struct Report {
    /// The machine.
    pub machine: String,
    /// Turn records imported into the long log.
    pub turns: usize,
    /// Events in the long log.
    pub events: u64,
    /// The import: the whole command's seconds and events per second as
    /// it reports them (start to exit, its snapshots included), and the
    /// seconds its snapshot phase took.
    pub import_seconds: f64,
    /// Events per second of the import.
    pub import_events_per_second: f64,
    /// Seconds the import spent preparing the snapshots.
    pub import_snapshots_seconds: Option<f64>,
    /// `run --once` on the long log, its snapshots in place.
    pub long_log: Walls,
    /// `run --once` on the near-empty data dir.
    pub empty: Walls,
    /// Median of the per-pair differences (long − empty), in ms.
    pub extra_ms_median: f64,
    /// Median of the per-pair ratios (long / empty).
    pub ratio_median: f64,
    /// `run --once` on the long log with its snapshots removed first.
    pub without_snapshots: Walls,
    /// Pairs run.
    pub runs: usize,
}

impl Report {
    /// The human form.
    pub fn human(&self) -> String {
        let w = |x: &Walls| format!("{:.3} s ({:.3}–{:.3})", x.median_s, x.min_s, x.max_s);
        format!(
            "engram bench startup — {}\n\
             long log: {} turns, {} events, imported in {:.2} s, whole command ({:.0} events/s){}\n\n\
             `engram run --offline --once`, whole process, {} pairs (median, min–max):\n\
             \x20 long log, snapshots in place   {}\n\
             \x20 near-empty data dir            {}\n\
             \x20 long − empty, per pair         {:+.0} ms (median)   ratio {:.2}\n\
             \x20 long log without snapshots     {}\n",
            self.machine,
            self.turns,
            self.events,
            self.import_seconds,
            self.import_events_per_second,
            self.import_snapshots_seconds.map_or(String::new(), |s| format!(", of which snapshots {s:.2} s")),
            self.runs,
            w(&self.long_log),
            w(&self.empty),
            self.extra_ms_median,
            self.ratio_median,
            w(&self.without_snapshots),
        )
    }
}

/// Runs the benchmark.
pub fn run(o: &Options) -> anyhow::Result<Report> {
    anyhow::ensure!(o.turns > 0 && o.runs > 0, "--turns and --runs must be at least 1");
    let exe = std::env::current_exe()?;
    let scratch = match &o.dir {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let (long, empty) = (scratch.path().join("long"), scratch.path().join("empty"));
    let file = scratch.path().join("turns.jsonl");
    progress(o.json, &format!("writing {} turn records", o.turns));
    std::fs::write(&file, turn_records(o.turns))?;
    progress(o.json, "importing them");
    let out = engram(&exe, scratch.path(), &long, &["import", "--json", file.to_str().unwrap_or_default()])?;
    let import: serde_json::Value = serde_json::from_slice(&out)?;
    // One run each before timing: the near-empty dir is made, and both
    // have their files in the page cache.
    let once = ["run", "--offline", "--once", "hello"];
    engram(&exe, scratch.path(), &empty, &once)?;
    engram(&exe, scratch.path(), &long, &once)?;
    let (mut longs, mut empties, mut extra, mut ratio) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..o.runs {
        progress(o.json, &format!("pair {}/{}", i + 1, o.runs));
        let l = timed(|| engram(&exe, scratch.path(), &long, &once))?;
        let e = timed(|| engram(&exe, scratch.path(), &empty, &once))?;
        longs.push(l);
        empties.push(e);
        extra.push((l - e) * 1000.0);
        ratio.push(l / e);
    }
    let mut cold = Vec::new();
    for i in 0..o.cold_runs {
        progress(o.json, &format!("without snapshots {}/{}", i + 1, o.cold_runs));
        std::fs::remove_dir_all(long.join(engram::local_state::snapshot::DIR_NAME))?;
        cold.push(timed(|| engram(&exe, scratch.path(), &long, &once))?);
    }
    let events = engram::storage::SledLog::open(&long, Default::default())
        .map(|log| engram::EventLog::head(&log).0)
        .unwrap_or(0);
    Ok(Report {
        machine: machine(),
        turns: o.turns,
        events,
        import_seconds: import["seconds"].as_f64().unwrap_or(f64::NAN),
        import_events_per_second: import["events_per_second"].as_f64().unwrap_or(f64::NAN),
        import_snapshots_seconds: import["snapshots_seconds"].as_f64(),
        long_log: Walls::of(&longs),
        empty: Walls::of(&empties),
        extra_ms_median: round2(percentile(&extra, 50.0).unwrap_or(f64::NAN)),
        ratio_median: round2(percentile(&ratio, 50.0).unwrap_or(f64::NAN)),
        without_snapshots: Walls::of(&cold),
        runs: o.runs,
    })
}

/// Runs `engram --data DATA ARGS…` with no configuration file; its stdout,
/// or an error with its stderr.
fn engram(exe: &Path, scratch: &Path, data: &Path, args: &[&str]) -> anyhow::Result<Vec<u8>> {
    let out = Command::new(exe)
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("ENGRAM_CONFIG")
        .env("XDG_CONFIG_HOME", scratch.join("no-config"))
        .stdin(Stdio::null())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "engram {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out.stdout)
}

/// Seconds `f` took.
fn timed(f: impl FnOnce() -> anyhow::Result<Vec<u8>>) -> anyhow::Result<f64> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed().as_secs_f64())
}

/// `n` turn records as JSON Lines (see the module docs), deterministic.
fn turn_records(n: usize) -> String {
    const MODELS: [&str; 3] = ["ollama:qwen3:8b", "ollama:gemma4:26b", "openai:gpt-5-mini"];
    const TOOLS: [&str; 4] = ["get_urls", "describe_entries", "read_file", "list_dir"];
    let mut rng = Rng::new(16);
    let start = chrono::DateTime::parse_from_rfc3339("2025-11-20T00:00:00Z").expect("a date").to_utc();
    let mut out = String::with_capacity(n * 260);
    for i in 0..n {
        let (session, turn) = (i / 10, i % 10 + 1);
        let at = start + chrono::Duration::seconds(i as i64 * 530);
        let topic = rng.below(40);
        let planned = rng.chance(0.75);
        let steps: Vec<serde_json::Value> = (0..if planned { 1 + rng.below(3) } else { rng.below(2) })
            .map(|s| {
                let tool = TOOLS[(topic + s) % TOOLS.len()];
                serde_json::json!({"tool": tool, "args": {"url": format!("https://example.org/{i}/{s}")}})
            })
            .collect();
        let mut record = serde_json::json!({
            "session": format!("s-{session}"),
            "turn": turn,
            "at": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "text": format!("request {i} about topic {topic} {}", "word ".repeat(rng.below(6))),
            "steps": steps,
            "latency_ms": if planned { 800 + rng.below(9000) } else { 20 + rng.below(300) },
            "score": round2(rng.unit()),
            "score_confidence": round2(0.4 + 0.6 * rng.unit()),
        });
        if planned {
            record["model"] = MODELS[topic % MODELS.len()].into();
            record["planner_ms"] = (300 + rng.below(3000)).into();
            record["cost_usd"] = format!("0.000{}", 1 + rng.below(9)).into();
            record["pricing_version"] = "2026-11".into();
        }
        out.push_str(&record.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_records_import() {
        let text = turn_records(50);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 50);
        for (i, line) in lines.iter().enumerate() {
            engram::learning::import::turn_record::parse_line(line)
                .unwrap_or_else(|e| panic!("line {}: {e:?}: {line}", i + 1));
        }
        assert_eq!(text, turn_records(50), "deterministic");
    }
}
