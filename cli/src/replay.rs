//! `engram replay`

use std::collections::HashSet;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use engram::events::codec::json;
use engram::storage::follow;
use engram::storage::StorageBackend;
use engram::{Envelope, EventKind, EventLog, Filter, LogError, Seq, SessionId, SledLog};

use crate::output;

/// How often a follower looks for an owner or for changes.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// The most events a follower reading the log itself reads per open
/// (what it holds in memory while it prints them).
const FOLLOW_BATCH: usize = 4096;

/// The longest a follower reading the log itself holds the data dir per
/// open: an owner starting up waits at most about that long for it.
const FOLLOW_HOLD: Duration = Duration::from_millis(250);

/// How long a follower reading the log itself leaves the data dir free
/// between two batches.
const FOLLOW_GAP: Duration = Duration::from_millis(60);

/// Prints events from `next` on, forever. While another process owns the
/// data dir, events stream from its follow socket; while nobody does, the
/// follower reads the log itself whenever its files change, holding the
/// lock only for that read — or, on a shared JetStream log, follows the
/// stream itself.
fn follow(
    data: &Path,
    mut next: Seq,
    filter: &Filter,
    mut print: impl FnMut(&Envelope) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    let socket = follow::socket_path(data);
    let db_file = data.join("log.sled").join("db");
    let stamp = || std::fs::metadata(&db_file).and_then(|m| Ok((m.len(), m.modified()?))).ok();
    let mut seen = None;
    // The seq whose line last came cut (see below).
    let mut cut = None;
    let storage = crate::load_config(data)?.storage;
    let shared = match storage.backend {
        StorageBackend::Jetstream => Some(storage.backend().map_err(anyhow::Error::msg)?),
        StorageBackend::Sled => None,
    };
    loop {
        if let Ok(mut stream) = UnixStream::connect(&socket) {
            if writeln!(stream, "from {next}").is_err() {
                continue; // the owner is closing
            }
            // A broken stream means the owner went away: look again.
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(e) = line.strip_prefix("error: ") {
                    bail!("{}: {e}", data.display());
                }
                // The owner drops a follower that stopped reading, perhaps
                // mid-line: the cut line comes again on the next
                // connection. The same line twice is no cut.
                let env = match json::from_line(&line) {
                    Ok(env) => env,
                    Err(e) if cut == Some(next) => bail!("{}: seq {next}: {e}", data.display()),
                    Err(_) => {
                        cut = Some(next);
                        break;
                    }
                };
                cut = None;
                next = env.seq.next();
                if filter.matches(&env) {
                    print(&env)?;
                }
            }
            continue; // the owner closed the log; look again
        }
        if let Some(backend) = &shared {
            // Nobody owns the data dir: follow the stream itself (holding
            // the data dir while it does), live, as another device would.
            match backend.open(data, Default::default()) {
                Ok(log) => {
                    let mut events = log.subscribe(next, Filter::all())?;
                    loop {
                        let env = events.recv()?;
                        if filter.matches(&env) {
                            print(&env)?;
                        }
                    }
                }
                Err(LogError::DataDirInUse { .. }) => {} // an owner is starting up
                Err(e) => return Err(e.into()),
            }
            std::thread::sleep(FOLLOW_POLL);
            continue;
        }
        let now = stamp();
        if now.is_some() && now != seen {
            // None: an owner is starting up.
            if let Some((batch, more)) = read_batch(data, &mut next)? {
                // Our own open and close touched the files too; with more
                // to read, look again at once.
                seen = if more { None } else { stamp() };
                for env in batch.iter().filter(|e| filter.matches(e)) {
                    print(env)?;
                }
                if more {
                    // A gap an owner waiting for the data dir (every 25 ms,
                    // `open_waiting`) takes it in.
                    std::thread::sleep(FOLLOW_GAP);
                    continue;
                }
            }
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// Reads the log of `data` itself from `next` on, a batch at a time —
/// printed by the caller after the log is closed: a follower whose output
/// is not read blocks in its print, and must not hold the data dir while
/// it does (no `engram run` could start). `None` when someone holds the
/// dir; else the batch and whether more is left.
fn read_batch(data: &Path, next: &mut Seq) -> anyhow::Result<Option<(Vec<Envelope>, bool)>> {
    let log = match SledLog::open(data, Default::default()) {
        Ok(log) => log,
        Err(LogError::DataDirInUse { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let (mut batch, started) = (Vec::new(), Instant::now());
    for env in log.read_from(*next) {
        let env = env?;
        *next = env.seq.next();
        batch.push(env);
        if batch.len() >= FOLLOW_BATCH || started.elapsed() >= FOLLOW_HOLD {
            return Ok(Some((batch, true)));
        }
    }
    Ok(Some((batch, false)))
}

/// Print events in log order, filtered; `--follow` keeps printing new ones.
///
/// Output is one human-readable line per event, or JSON Lines with --json.
/// A corrupt record stops the replay with an error naming its seq.
#[derive(clap::Args)]
pub struct Args {
    /// First seq to print
    #[arg(long, value_name = "SEQ", default_value_t = 1)]
    from: u64,
    /// Last seq to print
    #[arg(long, value_name = "SEQ")]
    to: Option<u64>,
    /// Only kinds matching GLOB (e.g. 'pattern.*'); repeatable
    #[arg(long, value_name = "GLOB")]
    kind: Vec<String>,
    /// Only events of session ID
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Keep printing events as they are appended (Ctrl-C to stop)
    #[arg(long, conflicts_with = "to")]
    follow: bool,
    /// JSON Lines instead of human-readable lines
    #[arg(long)]
    json: bool,
}

/// The kinds whose names match any of `globs` (all kinds when empty).
pub fn kinds_matching(globs: &[String]) -> anyhow::Result<Option<HashSet<EventKind>>> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut builder = globset::GlobSetBuilder::new();
    for g in globs {
        builder.add(globset::Glob::new(g).map_err(|e| anyhow::anyhow!("--kind {g:?}: {e}"))?);
    }
    let set = builder.build()?;
    let kinds: HashSet<EventKind> = EventKind::ALL.iter().copied().filter(|k| set.is_match(k.name())).collect();
    if kinds.is_empty() {
        let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        bail!("--kind {}: matches no event kind (kinds: {})", globs.join(", "), names.join(", "));
    }
    Ok(Some(kinds))
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let filter = Filter { kinds: kinds_matching(&args.kind)?, session: args.session.map(SessionId::new) };
    let to = args.to.map(Seq).unwrap_or(Seq(u64::MAX));
    let mut out = BufWriter::new(std::io::stdout().lock());
    let print = |env: &Envelope, out: &mut BufWriter<std::io::StdoutLock>| -> anyhow::Result<()> {
        if args.json {
            writeln!(out, "{}", json::to_line(env))?;
        } else {
            writeln!(out, "{}", output::human_line(env))?;
        }
        Ok(())
    };
    if args.follow {
        return follow(data, Seq(args.from), &filter, |env| {
            print(env, &mut out)?;
            // Flush per event so a pipe sees it at once.
            Ok(out.flush()?)
        });
    }
    let log = crate::open_for_reading(data)?;
    let mut damaged = false;
    for env in log.read_from(Seq(args.from)) {
        let env = match env {
            Err(engram::LogError::Lost { first, .. }) if first > to => break,
            Ok(env) => env,
            Err(e) if output::around_damage(&e) => {
                damaged = true;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if env.seq > to {
            break;
        }
        if filter.matches(&env) {
            print(&env, &mut out)?;
        }
        // Stop at `to` without reading (and failing on) the record after it.
        if env.seq >= to {
            break;
        }
    }
    out.flush()?;
    Ok(if damaged { output::damaged_exit() } else { ExitCode::SUCCESS })
}
