//! `engram bench`

use std::process::ExitCode;

/// Benchmarks, each measured beside its peer baseline in the same run.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Event log: durable append (1/4/16 appenders), relaxed append and full
    /// replay, beside SQLite in WAL mode
    Log(engram::bench::log::Options),
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Log(opts) => {
            let report = engram::bench::log::run(&opts)?;
            if opts.json {
                crate::output::print_json(&report)?;
            } else {
                println!("{}", report.human());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
