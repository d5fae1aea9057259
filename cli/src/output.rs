//! Output helpers shared by the commands: progress bars, JSON, human lines.

use std::io::{IsTerminal, Write};

use engram::events::codec::json;
use engram::events::payloads::PlanStep;
use engram::{Envelope, Event};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar on stderr, drawn only when stderr is a terminal.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    let target =
        if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let bar = ProgressBar::with_draw_target(Some(len), target);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40.cyan/blue}] {pos}/{len} ({per_sec}, eta {eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_owned());
    bar
}

/// Prints a value as one line of JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// What matters in a payload, in a few words (the whole payload is in
/// `--json`).
fn summary(event: &Event) -> String {
    let steps = |steps: &[PlanStep]| steps.iter().map(|s| s.tool.as_str()).collect::<Vec<_>>().join(" → ");
    let model = |m: &Option<String>| m.clone().unwrap_or_else(|| "-".to_owned());
    match event {
        Event::UtteranceReceived(p) => format!("#{} {:?}", p.turn_number, p.text),
        Event::IntentJudged(p) => {
            format!("directed={} stop={} conf={:.2} {:?}", p.directed, p.stop, p.confidence, p.query)
        }
        Event::RouteDecided(p) => format!("{} model={}", p.layer, model(&p.chosen_model)),
        Event::FastPathHit(p) => format!("{} {:?} [{}]", p.layer, p.matched, steps(&p.steps)),
        Event::FastPathMissed(p) => p.reason.clone(),
        Event::PlanCreated(p) => format!("{} [{}] in {} ms", p.planner, steps(&p.steps), p.planner_ms),
        Event::ToolCalled(p) => format!("step {} {} {}", p.step, p.tool, p.args.to_json()),
        Event::ToolCompleted(p) => format!("step {} {} ok={} {} ms", p.step, p.tool, p.ok, p.duration_ms),
        Event::LlmCallCompleted(p) => {
            format!("{} {} {} ms ${} ({})", p.context, p.model, p.latency_ms, p.cost_usd, p.outcome)
        }
        Event::ReplyDelivered(p) => format!("{} {} ms {:?}", p.layer, p.latency_ms, p.text),
        Event::TurnCompleted(p) => format!(
            "#{} {} model={} [{}] {} ms ${}",
            p.turn_number,
            p.layer,
            model(&p.model),
            steps(&p.steps),
            p.latency_ms,
            p.cost_usd
        ),
        Event::SessionEnded(p) => format!("{} after {} turns", p.reason, p.turns),
        Event::EvalCompleted(p) => {
            format!("score {:.2} conf {:.2} by {} for turn {}", p.score, p.confidence, p.judge, p.subject_turn)
        }
        Event::FeedbackReceived(p) => format!("{} {}", p.rating, p.text.as_deref().unwrap_or("")),
        // The rarer kinds: their payload, compact.
        other => json::payload_to_value(other).to_string(),
    }
}

/// Whether `e` is damage a reader can go around (a record or run of
/// records that cannot be read, the rest intact), saying so on stderr.
/// Read commands print everything else and exit 1 at the end
/// ([`damaged_exit`]).
pub fn around_damage(e: &engram::LogError) -> bool {
    let damage = e.is_record_damage();
    if damage {
        eprintln!("warning: {e}");
    }
    damage
}

/// The end of a read command that went around damage: exit 1, saying what
/// to do.
pub fn damaged_exit() -> std::process::ExitCode {
    eprintln!("error: the log is damaged: everything readable was printed; `engram verify` lists the damage, `engram repair` salvages the rest into a sound log");
    std::process::ExitCode::FAILURE
}

/// `text` with every control character escaped (`\n`, `\u{1b}`): what a
/// human-readable line prints of anything that came from outside (ids,
/// utterances, tool output, what the log holds), so that a terminal never
/// receives a newline that forges a line or an escape sequence (a title
/// change, a cleared screen, a hyperlink). The characters that reorder
/// text on screen (bidirectional overrides and isolates) are escaped too:
/// they make a line show other than what it holds.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |_| false)
}

/// [`escape_controls`] for text meant to span lines — a reply, a tool's
/// output: newlines and tabs are kept, every other control character and
/// reordering mark is escaped.
pub fn terminal_text(text: &str) -> std::borrow::Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t')
}

/// `text` with what a terminal would act on escaped, but the characters
/// `keep` allows.
fn escaped(text: &str, keep: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() || is_reordering(c)) && !keep(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars().map(|c| if unsafe_char(c) { c.escape_default().to_string() } else { c.to_string() }).collect(),
    )
}

/// The bidirectional embeddings, overrides and isolates (U+202A-U+202E,
/// U+2066-U+2069): invisible, and they reorder what follows on screen.
fn is_reordering(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Prints one human-readable line whose parts may have come from outside,
/// every control character escaped ([`escape_controls`]).
pub fn print_line(line: &str) {
    println!("{}", escape_controls(line));
}

/// One human-readable line for an envelope:
/// `seq  time  kind  session  summary`, control characters escaped.
pub fn human_line(env: &Envelope) -> String {
    let payload = summary(&env.event);
    let payload = if payload.chars().count() > 140 {
        format!("{}…", payload.chars().take(139).collect::<String>())
    } else {
        payload
    };
    let line = format!(
        "{:>8}  {}  {:<20} {:<12} {}",
        env.seq,
        env.at.format("%Y-%m-%d %H:%M:%S%.3f"),
        env.kind().name(),
        env.session.as_ref().map_or("-", |s| s.as_str()),
        payload
    );
    escape_controls(&line).into_owned()
}
