//! `engram` — replay, import, export, verify and inspect an engram data dir.

#![warn(missing_docs)]

mod bench;
mod calibrate;
mod demo;
mod ending_signals;
mod export;
mod forget;
mod import;
mod inspect;
mod memory_index;
mod output;
mod rebuild;
mod recommend;
mod repair;
mod replay;
mod route;
mod run;
mod stats;
mod tools;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use engram::storage::{Durability, LogConfig};

/// The binary's allocator: mimalloc (built without transparent huge pages),
/// not glibc's malloc. An import spent ≈ 30 % of its CPU in glibc's
/// `malloc`/`free` (events are built on one thread and freed on another:
/// the writer's, the applier's, the fold's) and takes 0.70× the CPU with
/// mimalloc; under long use RSS grows by what is learnt, as with glibc
/// capped at two arenas (docs/performance.md, *Import* and *The binary's
/// allocator*). Only the binary chooses: the library a host embeds leaves
/// the allocator to the host.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// engram: an embedded, event-sourced actor runtime for a local LLM assistant.
///
/// Every turn the assistant takes is a sequence of typed events in one
/// durable log; these commands import, export, replay, verify and measure it.
#[derive(Parser)]
#[command(name = "engram", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    /// The data dir [default: $ENGRAM_DATA, else $XDG_DATA_HOME/engram, else ~/.local/share/engram]
    #[arg(long, global = true, value_name = "DIR")]
    data: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive the live runtime over a bundled workload and show what it learned
    Demo(demo::Args),
    /// Import turn records or envelopes (JSON Lines, auto-detected)
    Import(import::Args),
    /// Print every envelope as JSON Lines
    Export(export::Args),
    /// Print events, filtered, optionally following live ones
    Replay(replay::Args),
    /// Check every record's CRC, positions and the id index, and that
    /// rebuilt projections match the live ones
    Verify(verify::Args),
    /// Salvage a damaged log: every readable event into a new log, the damaged files kept aside
    Repair(repair::Args),
    /// Drop projections and rebuild them from the log
    Rebuild(rebuild::Args),
    /// Show what the projections hold
    #[command(subcommand)]
    Inspect(inspect::Command),
    /// Event counts by kind, sessions, turns, disk use
    Stats(stats::Args),
    /// Ask the pattern store which model to route a turn to
    Recommend(recommend::Args),
    /// Show what the fast path would do with a request (L0/L1/L2/planner)
    Route(route::Args),
    /// Derive the fast path's cosine thresholds for the installed model
    Calibrate(calibrate::Args),
    /// Run the assistant: utterances from standard input (or --once) through every actor
    Run(run::Args),
    /// Retract what the assistant learnt: the facts holding a text, or what a session taught
    Forget(forget::Args),
    /// The memory index of what was said: index the data dir's history
    #[command(subcommand)]
    Memory(memory_index::Command),
    /// List the tools the assistant can call: built-ins and MCP servers' (name, source, side effect)
    Tools(tools::Args),
    /// Benchmarks, each beside its peer baseline
    #[command(subcommand)]
    Bench(bench::Command),
    /// The demo home's MCP server on stdin/stdout (`engram demo` starts it)
    #[command(hide = true, name = "demo-home-server")]
    DemoHomeServer,
}

/// When this process started (`main`'s first line): what a whole-command
/// figure is measured from — what the user waits for, not one phase.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Seconds since the command started ([`STARTED`]).
pub(crate) fn command_seconds() -> f64 {
    STARTED.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
}

/// glibc's arenas for the whole process, unless `MALLOC_ARENA_MAX` says
/// otherwise ([`bound_malloc_arenas`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MALLOC_ARENAS: libc::c_int = 2;

/// Caps glibc's malloc at [`MALLOC_ARENAS`] arenas, before any thread
/// exists. Rust's allocations are mimalloc's ([`ALLOCATOR`]); what still
/// allocates from glibc is ONNX Runtime's C++ and the C libraries. By
/// default glibc gives a thread that finds the heap busy an arena of its
/// own, up to 8 per core; threads then free into arenas they no longer
/// allocate from, and that free memory stays resident. With every
/// allocation on glibc, from 20 000 to 50 000 turns of `engram bench soak`
/// RSS grew 2.29 KB a turn by default against 1.16 KB with two arenas,
/// which is what the learnt tables and the embedding memo hold (1.13 KB);
/// the live heap is the same either way (docs/performance.md, *The rest
/// was glibc's arenas*). Two, not one: two threads can allocate at once on
/// two cores. A `MALLOC_ARENA_MAX` in the environment wins (glibc read it
/// at start-up; a `mallopt` now would override it). Only the binary sets
/// this: a host embedding the runtime owns its allocator.
fn bound_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a parameter of glibc's allocator, under
        // its own lock; no thread but this one exists yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

fn main() -> ExitCode {
    STARTED.get_or_init(std::time::Instant::now);
    // Die quietly on a closed pipe (`engram replay | head`), like other
    // Unix tools, instead of panicking in println!.
    #[cfg(unix)]
    // SAFETY: resetting a signal disposition and the umask before any
    // thread exists. Everything engram creates is its user's alone (the
    // data dir holds every utterance), whatever umask the shell has.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::umask(0o077);
    }
    bound_malloc_arenas();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ENGRAM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    explain_panics();
    let cli = Cli::parse();
    let data = engram::storage::data_dir::resolve(cli.data);
    // A panic has been explained by the hook: exit 1 like any other error.
    let run = std::panic::AssertUnwindSafe(|| match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Import(args) => import::run(&data, args),
        Command::Export(args) => export::run(&data, args),
        Command::Replay(args) => replay::run(&data, args),
        Command::Verify(args) => verify::run(&data, args),
        Command::Repair(args) => repair::run(&data, args),
        Command::Rebuild(args) => rebuild::run(&data, args),
        Command::Inspect(cmd) => inspect::run(&data, cmd),
        Command::Stats(args) => stats::run(&data, args),
        Command::Recommend(args) => recommend::run(&data, args),
        Command::Route(args) => route::run(&data, args),
        Command::Calibrate(args) => calibrate::run(&data, args),
        Command::Run(args) => run::run(&data, args),
        Command::Forget(args) => forget::run(&data, args),
        Command::Memory(cmd) => memory_index::run(&data, cmd),
        Command::Tools(args) => tools::run(&data, args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::DemoHomeServer => demo::home_server(),
    });
    let Ok(result) = std::panic::catch_unwind(run) else { return ExitCode::FAILURE };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            ExitCode::FAILURE
        }
    }
}

/// A panic is a bug, and says so — in one line, without a backtrace
/// unless RUST_BACKTRACE asks for one. One inside sled almost always means
/// its files are damaged: that one says what to run.
fn explain_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("RUST_BACKTRACE").is_some() {
            default(info);
        }
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if info.location().is_some_and(|l| l.file().contains("/sled-")) {
            eprintln!(
                "error: the log's files are damaged (sled: {what}{place}); `engram repair` salvages the events from them"
            );
        } else {
            eprintln!("error: internal error: {what}{place} (a bug in engram; please report it)");
        }
    }));
}

/// An error and its causes on one line, `a: b: c`, each cause once: most
/// of engram's errors already say their source (`{path}: {source}`), and
/// anyhow's `{:#}` would say it again. Multi-line messages (import
/// validation) print as they are.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

/// Opens the log in `data` on the backend its configuration chooses
/// (`[storage] backend`), with the default (durable) policy, creating the
/// data dir if needed.
pub(crate) fn open_log(data: &std::path::Path) -> anyhow::Result<Log> {
    open_log_with(data, u64::MAX)
}

/// sled's page cache for `engram import`, at most. An import writes the id
/// index in time order: what it reads again is the tree's right edge and
/// the buckets of the batch at hand, so a bigger cache holds pages it is
/// done with. Measured, 40 000 turn records: peak RSS 224–246 MB with the
/// default 64 MiB, 187–195 MB with 16 MiB, the same time.
const IMPORT_CACHE_BYTES: u64 = 16 << 20;

/// [`open_log`] for `engram import` (see [`IMPORT_CACHE_BYTES`]).
pub(crate) fn open_log_for_import(data: &std::path::Path) -> anyhow::Result<Log> {
    open_log_with(data, IMPORT_CACHE_BYTES)
}

/// How every command opens a log: serving it to `engram replay --follow`
/// in other processes while the command holds the data dir.
/// `[storage] cache_mb` bounds sled's page cache, as in `engram run`.
fn served(storage: &engram::storage::StorageSection) -> LogConfig {
    LogConfig { serve_followers: true, cache_bytes: storage.cache_bytes(), ..LogConfig::default() }
}

/// A data dir's log, on whichever backend.
pub(crate) type Log = engram::storage::OpenLog;

/// The configuration for `data`: its `engram.toml` (see
/// [`Config::locate`](engram::actors::config::Config::locate)) with
/// `ENGRAM_*` overrides.
pub(crate) fn load_config(data: &std::path::Path) -> anyhow::Result<engram::actors::config::Config> {
    use engram::actors::config::Config;
    let path = Config::locate(data);
    let config = Config::load(path.as_deref(), std::env::vars())?;
    // Checked by every command, not only by the ones that use it: a value
    // no command would take is an error wherever it is met.
    config.storage.durability().map_err(anyhow::Error::msg)?;
    Ok(config)
}

/// The configured backend of an existing data dir (read commands never
/// create one; on a shared JetStream stream, a new data dir is a new device
/// reading it).
fn existing_backend(data: &std::path::Path) -> anyhow::Result<(engram::storage::LogBackend, LogConfig)> {
    let storage = load_config(data)?.storage;
    if engram::storage::data_dir::repair_pending(data) {
        return Err(engram::storage::LogError::RepairInterrupted { dir: data.to_owned() }.into());
    }
    if std::fs::metadata(data).is_ok_and(|m| !m.is_dir()) {
        anyhow::bail!("{}: not a directory (a file is there; pass the data dir with --data DIR)", data.display());
    }
    if storage.backend == engram::storage::StorageBackend::Sled && !is_dir(&data.join("log.sled"))? {
        anyhow::bail!("{}: no engram data here (nothing imported yet? pass --data DIR)", data.display());
    }
    Ok((with_fetch_bar(storage.backend().map_err(anyhow::Error::msg)?), served(&storage)))
}

/// Whether `path` is a directory: `false` when nothing is there, an error
/// naming it when it cannot be looked at (a data dir of another user says
/// "permission denied", not "no data here").
fn is_dir(path: &std::path::Path) -> anyhow::Result<bool> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.is_dir()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", path.display())),
    }
}

/// Opens the log of an existing data dir (see [`existing_backend`]).
pub(crate) fn open_existing(data: &std::path::Path) -> anyhow::Result<Log> {
    let (backend, config) = existing_backend(data)?;
    Ok(open_waiting(|| backend.open(data, config.clone()), |e| Some(e))?)
}

/// [`open_existing`] for commands that only read (`export`, `stats`,
/// `inspect`, `replay`, `verify`, `route`, `recommend`, `forget
/// --dry-run`): they read a copy of the log, so the data dir keeps every
/// byte it had (`LogBackend::open_for_reading`), and on a JetStream data
/// dir whose server cannot be reached, the data dir's copy of the stream;
/// a note on stderr says when what they read is not the log itself.
pub(crate) fn open_for_reading(data: &std::path::Path) -> anyhow::Result<Log> {
    let (backend, config) = existing_backend(data)?;
    let (log, note) = open_waiting(|| backend.open_for_reading(data, config.clone()), |e| Some(e))?;
    if let Some(note) = note {
        eprintln!("engram: {note}");
    }
    Ok(log)
}

/// A JetStream backend that shows a progress bar (on a terminal) while a
/// first open fetches a long stream: a new device's first command.
pub(crate) fn with_fetch_bar(backend: engram::storage::LogBackend) -> engram::storage::LogBackend {
    use engram::storage::LogBackend;
    match backend {
        LogBackend::JetStream(mut js) => {
            let bar: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);
            js.progress = Some(std::sync::Arc::new(move |done: u64, total: u64| {
                let mut bar = bar.lock().unwrap_or_else(|p| p.into_inner());
                // A few events arrive before a bar would even draw.
                if total < 10_000 {
                    return;
                }
                let b = bar.get_or_insert_with(|| output::progress(total, "fetching"));
                b.set_position(done);
                if done >= total {
                    b.finish_and_clear();
                }
            }));
            LogBackend::JetStream(js)
        }
        other => other,
    }
}

/// How long a command waits for a data dir held by someone else before
/// reporting "data dir in use" (a follower holds it for a moment at a time).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens something over a data dir's log (the log itself, a runtime) with
/// `open`, waiting up to [`LOCK_WAIT`] while it fails only because someone
/// holds the log (`log_error` finds the log's error in `open`'s): another
/// process, or sled's own file lock of a database closed a moment ago.
pub(crate) fn open_waiting<T, E>(
    mut open: impl FnMut() -> Result<T, E>,
    log_error: fn(&E) -> Option<&engram::LogError>,
) -> Result<T, E> {
    let held = |e: &engram::LogError| {
        matches!(e, engram::LogError::DataDirInUse { .. }) || e.to_string().contains("could not acquire lock")
    };
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match open() {
            Err(e) if log_error(&e).is_some_and(held) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            result => return result,
        }
    }
}

/// The log's error in a runtime's, for [`open_waiting`] a runtime.
pub(crate) fn runtime_log_error(e: &engram::actors::RuntimeError) -> Option<&engram::LogError> {
    match e {
        engram::actors::RuntimeError::Log(e) => Some(e),
        _ => None,
    }
}

/// Opens the log in `data`, durable, with sled's page cache at most
/// `cache_most` bytes (and at most `[storage] cache_mb`).
fn open_log_with(data: &std::path::Path, cache_most: u64) -> anyhow::Result<Log> {
    let storage = load_config(data)?.storage;
    let backend = with_fetch_bar(storage.backend().map_err(anyhow::Error::msg)?);
    let served = served(&storage);
    let config =
        LogConfig { durability: Durability::Durable, cache_bytes: served.cache_bytes.min(cache_most), ..served };
    Ok(open_waiting(|| backend.open(data, config.clone()), |e| Some(e))?)
}
