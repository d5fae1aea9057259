//! `engram forget`

use std::path::Path;
use std::process::ExitCode;

use engram::events::payloads::MemoryForgotten;
use engram::learning::memory::{forget, Forget, Memory};
use engram::{ActorKind, SessionId};
use serde_json::json;

use crate::output;

/// Retract what the assistant learnt: the facts holding a text, or
/// everything a session taught.
///
/// Appends one `memory.forgotten` (the log stays append-only): the facts it
/// names reach no prompt again, the diary leaves out every sentence holding
/// the text (or the session's summaries), and `engram rebuild` keeps them
/// retracted. What was said stays in the log — `docs/memory.md` says how to
/// erase it. Exit 1, appending nothing, when nothing matches.
#[derive(clap::Args)]
pub struct Args {
    /// Forget every fact and diary sentence holding this text (case-insensitive)
    #[arg(required_unless_present = "session", conflicts_with = "session")]
    text: Option<String>,
    /// Forget everything this session taught: its facts and its summaries
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Show what would be forgotten; append nothing
    #[arg(long)]
    dry_run: bool,
    /// Print {"seq":N|null,"facts":[{"branch","node","fact"}],"sessions":[..],"phrases":[..]}
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let what = match (args.text, args.session) {
        (_, Some(id)) => Forget::Session(SessionId::parse(&id).map_err(|e| anyhow::anyhow!("--session {id:?}: {e}"))?),
        (Some(text), None) => Forget::Text(text),
        (None, None) => anyhow::bail!("say what to forget: a text, or --session ID"),
    };
    // A dry run only reads: it opens a copy of the log, as `stats` does.
    let log = if args.dry_run { crate::open_for_reading(data)? } else { crate::open_existing(data)? };
    let (seq, m): (Option<u64>, MemoryForgotten) = if args.dry_run {
        (None, Memory::from_log(log.log())?.retraction(&what)?)
    } else {
        let env = forget::forget(log.log(), &what, ActorKind::Cli)?;
        let engram::Event::MemoryForgotten(m) = env.event else { unreachable!("forget appends memory.forgotten") };
        (Some(env.seq.0), m)
    };
    if args.json {
        output::print_json(&json!({
            "seq": seq,
            "facts": m.facts,
            "sessions": m.sessions,
            "phrases": m.phrases,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if args.dry_run { "would forget" } else { "forgot" };
    for f in &m.facts {
        output::print_line(&format!("{verb} {}/{}: {}", f.branch.as_str(), f.node, f.fact));
    }
    for s in &m.sessions {
        output::print_line(&format!("{verb} the diary's summaries of session {s}"));
    }
    for p in &m.phrases {
        println!("{verb} every diary sentence holding {p:?}");
    }
    match seq {
        Some(seq) => println!("appended memory.forgotten at seq {seq}; the log keeps what was said (docs/memory.md)"),
        None => println!("(dry run: nothing appended)"),
    }
    Ok(ExitCode::SUCCESS)
}
