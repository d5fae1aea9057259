//! `engram run`: the live runtime over standard input (or `--once TEXT`).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use engram::actors::{Runtime, RuntimeError};
use engram::events::codec::json;
use engram::events::payloads::FeedbackRating;
use engram::{Seq, SessionId};

/// Run the assistant: every line of standard input is an utterance, taken
/// through every actor (listener, router, planner, reply loop, judge,
/// pattern store, summariser, graph); the reply is printed.
///
/// Lines starting with `:` are commands: `:good` / `:bad` / `:correct
/// [TEXT]` give feedback on the last turn; `:model NAME TEXT` takes TEXT
/// with model NAME (routing slot 1, this utterance only); `:use NAME` makes
/// NAME the session's model until `:use` alone clears it (slot 2); NAME is
/// one of `[llm] candidates`; `:forget TEXT` retracts the facts and diary
/// sentences holding TEXT (as `engram forget`, with the runtime running);
/// `:end` ends the session and starts a new one,
/// `:quit` stops. At the end of input the session ends
/// (unless --no-end), so the pattern store and the summariser see it.
/// Without an `[llm]` section in engram.toml the runtime is offline.
#[derive(clap::Args)]
pub struct Args {
    /// Take this one utterance instead of reading standard input
    #[arg(long, value_name = "TEXT")]
    once: Option<String>,
    /// Print each turn's events as JSON Lines (envelopes as `engram export`
    /// writes them) instead of the reply
    #[arg(long)]
    json: bool,
    /// The session id [default: a new one]. A session given here that ends
    /// by idleness (`[runtime] session_idle_secs`) is an error on the next
    /// line; a default one is replaced by a new session, said on stderr
    #[arg(long, value_name = "ID", value_parser = |s: &str| SessionId::parse(s))]
    session: Option<SessionId>,
    /// Leave the session open at the end (a later `engram run --session ID`
    /// continues it)
    #[arg(long)]
    no_end: bool,
    /// Offline mode even if engram.toml configures an LLM
    #[arg(long)]
    offline: bool,
}

/// What the main loop of `engram run` is given: a line of standard input,
/// its end, or a signal that ends the run as the end of input does.
enum Input {
    Line(Vec<u8>),
    End,
    Failed(std::io::Error),
    Signal(libc::c_int),
}

/// Reads standard input on a thread of its own and watches for the ending
/// signals ([`crate::ending_signals`]), both into one channel: the loop
/// waits on either. (Before the runtime starts: its threads inherit the
/// blocked signals.) A closed standard output is an end too: writes fail
/// with `BrokenPipe` instead of killing the process, and the session ends.
fn inputs() -> anyhow::Result<std::sync::mpsc::Receiver<Input>> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let signalled = tx.clone();
    crate::ending_signals::watch(move |sig| {
        let _ = signalled.send(Input::Signal(sig));
    })
    .context("watching for signals")?;
    // SAFETY: a signal disposition, set before the runtime's threads.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    std::thread::Builder::new()
        .name("engram-stdin".into())
        .spawn(move || {
            let mut input = std::io::stdin().lock();
            loop {
                let mut bytes = Vec::new();
                let msg = match input.read_until(b'\n', &mut bytes) {
                    Ok(0) => Input::End,
                    Ok(_) => Input::Line(bytes),
                    Err(e) => Input::Failed(e),
                };
                let last = !matches!(msg, Input::Line(_));
                if tx.send(msg).is_err() || last {
                    return;
                }
            }
        })
        .context("reading standard input")?;
    Ok(rx)
}

/// Whether `e` says standard output was closed (`engram run | head -n1`).
fn output_closed(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(data)?;
    let inputs = if args.once.is_none() { Some(inputs()?) } else { None };
    // A new device's first start fetches the stream: with a progress bar.
    let backend = crate::with_fetch_bar(config.storage.backend().map_err(anyhow::Error::msg)?);
    // Another command holding the data dir for a moment (a follower reads
    // the log holding its lock) is waited for, as every command does.
    let start = || {
        let builder =
            Runtime::builder().data_dir(data).serve_followers(true).config(config.clone()).log_backend(backend.clone());
        if args.offline { builder.offline() } else { builder }.start()
    };
    let rt = crate::open_waiting(start, crate::runtime_log_error)
        .with_context(|| format!("cannot start the runtime in {}", data.display()))?;
    let mut session = args.session.clone().unwrap_or_else(|| SessionId::new(new_session_id()));
    let explicit = args.session.is_some();
    let mut out = std::io::stdout().lock();
    if let Some(addr) = rt.metrics_addr() {
        eprintln!("engram run: metrics at http://{addr}/metrics");
    }
    if !args.json && args.once.is_none() {
        eprintln!(
            "engram run: session {} ({}); :good :bad :correct :model :use :forget :end :quit",
            session.as_str(),
            if rt.is_online() { "online" } else { "offline" }
        );
    }
    let mut signalled = None;
    let result = match (&args.once, inputs) {
        (Some(text), _) => turn(&rt, &session, text, None, args.json, &mut out),
        (None, None) => Ok(()),
        (None, Some(inputs)) => {
            let mut said = Said { rt: &rt, session: &mut session, explicit, json: args.json, out: &mut out, line: 0 };
            lines(&inputs, &mut said).map(|sig| signalled = sig)
        }
    };
    // The session ends however the run did — the input's end, `:quit`, a
    // signal, a closed output, an error — so that its summary and facts
    // come.
    let ended = if args.no_end { Ok(0) } else { rt.end_session(&session) };
    rt.shutdown()?;
    result?;
    ended?;
    Ok(match signalled {
        Some(sig) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(1)),
        None => ExitCode::SUCCESS,
    })
}

/// What a run's lines act on.
struct Said<'a, W: Write> {
    rt: &'a Runtime,
    session: &'a mut SessionId,
    explicit: bool,
    json: bool,
    out: &'a mut W,
    /// The number of the line being taken (1-based).
    line: u64,
}

/// Whether the lines go on after one.
enum Flow {
    Go,
    Stop,
}

/// The lines of standard input, each a turn or a `:command`, until the
/// input ends, `:quit`, the output closes or an ending signal comes
/// (returned).
fn lines<W: Write>(
    inputs: &std::sync::mpsc::Receiver<Input>,
    said: &mut Said<'_, W>,
) -> anyhow::Result<Option<libc::c_int>> {
    let mut number = 0u64;
    loop {
        let bytes = match inputs.recv() {
            Ok(Input::Line(bytes)) => bytes,
            Ok(Input::End) | Err(_) => return Ok(None),
            Ok(Input::Failed(e)) => return Err(e).context("reading standard input"),
            Ok(Input::Signal(sig)) => {
                let name = crate::ending_signals::name(sig);
                eprintln!("engram run: {name}: ending session {}", said.session.as_str());
                return Ok(Some(sig));
            }
        };
        number += 1;
        said.line = number;
        // A line that is not UTF-8 (a terminal in Latin-1, a binary pasted
        // in) is skipped, named, and the run goes on: the lines before and
        // after it are the user's.
        let Ok(line) = std::str::from_utf8(&bytes) else {
            eprintln!("engram run: standard input line {number}: not valid UTF-8; skipped");
            continue;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Flow::Stop = command(line, said)? {
            return Ok(None);
        }
    }
}

/// One line: a `:command`, else a turn.
fn command<W: Write>(line: &str, said: &mut Said<'_, W>) -> anyhow::Result<Flow> {
    let (rt, explicit, json) = (said.rt, said.explicit, said.json);
    let (session, out) = (&mut *said.session, &mut *said.out);
    match line.split_once(' ').map_or((line, ""), |(c, r)| (c, r.trim())) {
        (":quit", _) => return Ok(Flow::Stop),
        (":end", _) => {
            rt.end_session(session)?;
            // The next session starts with what this one
            // taught (its summary and facts), as far as the
            // actors get in a few seconds.
            rt.settle(std::time::Duration::from_secs(10));
            *session = SessionId::new(new_session_id());
            eprintln!("engram run: new session {}", session.as_str());
        }
        (":good", _) => feedback(rt, session, FeedbackRating::Positive, "")?,
        (":bad", rest) => feedback(rt, session, FeedbackRating::Negative, rest)?,
        (":correct", rest) => feedback(rt, session, FeedbackRating::Correction, rest)?,
        (":model", rest) => match rest.split_once(' ').map(|(m, t)| (m, t.trim())) {
            Some((model, text)) if !text.is_empty() => {
                let r = renewing(session, explicit, |s| turn(rt, s, text, Some(model), json, out));
                if let Err(e) = r {
                    eprintln!("engram run: {e}");
                }
            }
            _ => eprintln!("engram run: usage: :model NAME TEXT (NAME one of {:?})", rt.candidates()),
        },
        (":use", "") => {
            rt.use_model(session, None)?;
            eprintln!("engram run: session model cleared");
        }
        (":use", model) => match rt.use_model(session, Some(model)) {
            Ok(()) => eprintln!("engram run: session model {model}"),
            Err(e) => eprintln!("engram run: {e}"),
        },
        (":forget", "") => eprintln!("engram run: usage: :forget TEXT (the facts holding TEXT)"),
        (":forget", text) => match rt.forget(&engram::learning::memory::Forget::Text(text.to_owned())) {
            Ok(env) => {
                if let engram::Event::MemoryForgotten(m) = &env.event {
                    for f in &m.facts {
                        let fact = format!("{}/{}: {}", f.branch.as_str(), f.node, f.fact);
                        eprintln!("engram run: forgot {}", crate::output::escape_controls(&fact));
                    }
                }
                eprintln!("engram run: forgot every diary sentence holding {text:?}");
            }
            Err(e) => eprintln!("engram run: {e}"),
        },
        (c, _) if c.starts_with(':') => eprintln!("engram run: unknown command {c}"),
        _ => {
            match renewing(session, explicit, |s| turn(rt, s, line, None, json, out)) {
                // Nobody reads the replies any more: the end.
                Err(e) if output_closed(&e) => return Ok(Flow::Stop),
                // Refused as it stands, nothing recorded: the run goes on.
                Err(e) if matches!(e.downcast_ref(), Some(RuntimeError::UtteranceTooLong { .. })) => {
                    eprintln!("engram run: standard input line {}: {e}", said.line);
                }
                r => r?,
            }
        }
    }
    Ok(Flow::Go)
}

/// Runs `take` (a turn) in `session`; if the runtime ended that session by
/// idleness meanwhile and the user did not name it (`--session`), opens a
/// new one, says so on stderr and takes the turn there — an interactive
/// `engram run` left alone for half an hour goes on, as a chat would. A
/// session the user named keeps the error: they asked for that one.
fn renewing(
    session: &mut SessionId,
    explicit: bool,
    mut take: impl FnMut(&SessionId) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    match take(session) {
        Err(e) if !explicit && matches!(e.downcast_ref(), Some(RuntimeError::SessionEnded(_))) => {
            let old = std::mem::replace(session, SessionId::new(new_session_id()));
            eprintln!("engram run: session {} ended while idle; new session {}", old.as_str(), session.as_str());
            take(session)
        }
        r => r,
    }
}

fn new_session_id() -> String {
    format!("cli-{}", engram::events::EventId::new_live().0)
}

/// Feedback on the session's last turn; with no turn yet there is nothing
/// to give it on, which is said and is not an error (the session goes on).
fn feedback(rt: &Runtime, session: &SessionId, rating: FeedbackRating, text: &str) -> anyhow::Result<()> {
    if rt.feedback(session, rating, (!text.is_empty()).then_some(text))?.is_none() {
        eprintln!("engram run: no turn yet in session {session} to give feedback on");
    }
    Ok(())
}

fn turn(
    rt: &Runtime,
    session: &SessionId,
    text: &str,
    model: Option<&str>,
    json_out: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let before = rt.log().head();
    let reply = match model {
        Some(m) => rt.handle_with_model(session, text, m)?,
        None => rt.handle_utterance(session, text)?,
    };
    if json_out {
        // What the turn derives after its reply (verdicts, fast-path rows)
        // lands a moment later.
        rt.settle(Duration::from_secs(5));
        for env in rt.log().read_from(Seq(before.0 + 1)) {
            let env = env?;
            if env.turn == Some(reply.turn) {
                writeln!(out, "{}", json::to_line(&env))?;
            }
        }
    } else {
        // The reply may quote a model, a file or a web page: shown, never
        // acted on by the terminal.
        let text = crate::output::terminal_text(&reply.text);
        match reply.layer {
            Some(layer) => match &reply.model {
                // Which model planned the turn: the routing chain's choice.
                Some(m) => writeln!(out, "[{} {m} {} ms] {text}", layer.as_str(), reply.latency_ms)?,
                None => writeln!(out, "[{} {} ms] {text}", layer.as_str(), reply.latency_ms)?,
            },
            None if reply.heard.intent.stop => writeln!(out, "[stop]")?,
            None => writeln!(out, "[not for the assistant]")?,
        }
    }
    out.flush()?;
    Ok(())
}
