//! Output helpers shared by the commands: progress bars, JSON, human lines.

use std::io::{IsTerminal, Write};

use engram::events::codec::json;
use engram::Envelope;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar on stderr, drawn only when stderr is a terminal.
pub fn progress(len: u64, what: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
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

/// One human-readable line for an envelope:
/// `seq  time  kind  session  payload`.
pub fn human_line(env: &Envelope) -> String {
    let payload = json::to_value(env)["payload"].to_string();
    let payload = if payload.chars().count() > 120 {
        format!("{}…", payload.chars().take(119).collect::<String>())
    } else {
        payload
    };
    format!(
        "{:>8}  {}  {:<20} {:<12} {}",
        env.seq,
        env.at.format("%Y-%m-%d %H:%M:%S%.3f"),
        env.kind().name(),
        env.session.as_ref().map_or("-", |s| s.as_str()),
        payload
    )
}
