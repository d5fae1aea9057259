//! `engram demo`: the README's main job. Drives the live runtime, offline,
//! over a bundled workload in a fresh data dir and shows what it learned —
//! every figure read back from the log, not from counters kept on the side,
//! so the report is what `engram replay` on that dir would show too.

mod home;
mod models;
mod report;
mod tools;
mod workload;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use engram::actors::config::Config;
use engram::actors::Runtime;
use engram::events::SessionId;

use crate::output;
use workload::Step;

/// Drive the live runtime over a bundled workload and show what it learned.
///
/// Runs fully offline: the local embedding model (scripts/fetch-models.sh),
/// the offline tool-similarity planner and a few real file tools over demo
/// files it writes beside the log. The data dir is a temp dir deleted on
/// exit unless --keep DIR is given.
#[derive(clap::Args)]
pub struct Args {
    /// Use (and keep) DIR as the data dir; it must not hold engram data yet
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Print the report as one JSON object
    #[arg(long)]
    json: bool,
}

/// Where the demo writes its files, inside the data dir (the tools' root
/// and their `~`).
const FILES_DIR: &str = "demo-files";

/// How long one step may take before the demo gives up on it.
const TURN_TIMEOUT: Duration = Duration::from_secs(30);

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let steps = workload::bundled()?;
    // The temp dir lives until the report is printed, then goes.
    let (_temp, data) = match &args.keep {
        Some(dir) => {
            if dir.join("log.sled").exists() {
                anyhow::bail!("{}: already holds engram data; --keep needs a new or empty dir", dir.display());
            }
            (None, dir.clone())
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("engram-demo.")
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir()
                .context("creating a temp dir")?;
            let path = t.path().to_owned();
            (Some(t), path)
        }
    };
    // The configuration every part runs with: the user's (file-less:
    // defaults and ENGRAM_* variables), with the demo's location; the first
    // two parts with the demo's files.
    let mut base = Config::load(None, std::env::vars())?;
    base.tools.location = "Turin, Italy".to_owned();
    let mut config = base.clone();
    config.tools.file_roots = vec![data.join(FILES_DIR)];
    let started = Instant::now();
    drive(&data, &steps, config.clone())?;
    let wall = started.elapsed();
    let embedder = config.embedder.model.spec().id;
    let url = models::serve()?;
    route(&data, config, &url)?;
    let started = Instant::now();
    home::drive(&data, &url, base)?;
    let home = {
        let dir = data.join(home::DIR);
        let log = crate::open_existing(&dir)?;
        report::Home::from_log(log.records(), &dir, started.elapsed())?
    };
    let log = crate::open_existing(&data)?;
    let report = report::Report::from_log(log.records(), wall, &data, embedder, args.keep.is_some(), home)?;
    if args.json {
        output::print_json(&report)?;
    } else {
        report.print();
    }
    Ok(ExitCode::SUCCESS)
}

/// `engram demo-home-server` (hidden): the demo home's MCP server, on
/// stdin and stdout, for the demo's third part to start.
pub fn home_server() -> anyhow::Result<ExitCode> {
    home::server::run()
}

/// The second part ([`models`]): the runtime on the same data dir, with two
/// stand-in candidate models on the demo's scripted local server at `url`.
fn route(data: &Path, config: Config, url: &str) -> anyhow::Result<()> {
    let files = data.join(FILES_DIR);
    let config = models::config(config, url);
    let mut builder = Runtime::builder().data_dir(data).serve_followers(true).config(config).turn_timeout(TURN_TIMEOUT);
    for tool in tools::all(&files) {
        builder = builder.tool(tool);
    }
    let rt = builder.start().context("starting the runtime with the demo's two models")?;
    let result = models::drive(&rt);
    rt.shutdown()?;
    result.map(drop)
}

/// Starts the runtime on `data` and takes every step of the workload
/// through it; returns once every actor has settled and the log is flushed.
fn drive(data: &Path, steps: &[Step], config: Config) -> anyhow::Result<()> {
    let files = data.join(FILES_DIR);
    let mut builder =
        Runtime::builder().data_dir(data).serve_followers(true).offline().config(config).turn_timeout(TURN_TIMEOUT);
    let rt = {
        // Owner-only, as the runtime would create it: the files go inside.
        engram::storage::data_dir::create_private_dir(data).with_context(|| format!("creating {}", data.display()))?;
        tools::write_files(&files).with_context(|| format!("writing the demo files into {}", files.display()))?;
        for tool in tools::all(&files) {
            builder = builder.tool(tool);
        }
        builder.start().context("starting the runtime")?
    };
    let bar = output::progress(steps.len() as u64, "demo");
    let mut open: Vec<SessionId> = Vec::new();
    for step in steps {
        let session = SessionId::new(step.session());
        match step {
            Step::Say { text, .. } => {
                rt.handle_utterance(&session, text).with_context(|| format!("{session}: {text:?}"))?;
                if !open.contains(&session) {
                    open.push(session);
                }
            }
            Step::Feedback { rating, text, .. } => {
                rt.feedback(&session, *rating, text.as_deref()).with_context(|| format!("{session}: feedback"))?;
            }
            Step::End { .. } => {
                rt.end_session(&session).with_context(|| format!("{session}: end"))?;
                open.retain(|s| *s != session);
            }
        }
        bar.inc(1);
    }
    // A workload that forgets an end still gets its sessions recorded.
    for session in open {
        rt.end_session(&session)?;
    }
    bar.finish_and_clear();
    if !rt.settle(Duration::from_secs(30)) {
        tracing::warn!("demo: actors still busy after 30 s; the report shows what is in the log");
    }
    rt.shutdown()?;
    Ok(())
}
