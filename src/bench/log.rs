//! Event-log benchmark (placeholder; being written).

/// Options of `engram bench log`.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// The report.
#[derive(serde::Serialize)]
pub struct LogReport {}

impl LogReport {
    /// Human-readable table.
    pub fn human(&self) -> String {
        String::new()
    }
}

/// Runs the benchmark.
pub fn run(_opts: &Options) -> anyhow::Result<LogReport> {
    anyhow::bail!("not yet")
}
