//! `engram replay`

use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use engram::events::codec::json;
use engram::{Envelope, EventKind, EventLog, Filter, Seq, SessionId};

use crate::output;

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
        let log = crate::open_log(data)?;
        let mut sub = log.subscribe(Seq(args.from), filter)?;
        loop {
            let env = sub.recv()?;
            print(&env, &mut out)?;
            // Flush per event so a pipe sees it at once.
            out.flush()?;
        }
    }
    let log = crate::open_existing(data)?;
    for env in log.read_from(Seq(args.from)) {
        let env = env?;
        if env.seq > to {
            break;
        }
        if filter.matches(&env) {
            print(&env, &mut out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
