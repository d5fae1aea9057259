//! The bundled workload (`examples/demo/workload.jsonl`): one step a line —
//! an utterance, feedback on the session's last turn, or a session's end.

use engram::events::payloads::FeedbackRating;
use serde::Deserialize;

/// Where the workload comes from, for error messages.
const PATH: &str = "examples/demo/workload.jsonl";

/// The workload, compiled in so that `engram demo` needs no files.
const TEXT: &str = include_str!("../../../examples/demo/workload.jsonl");

/// One step of the workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The user says `text`.
    Say { session: String, text: String },
    /// The user rates the session's last turn.
    Feedback { session: String, rating: FeedbackRating, text: Option<String> },
    /// The session is over.
    End { session: String },
}

impl Step {
    /// The session the step belongs to.
    pub fn session(&self) -> &str {
        match self {
            Step::Say { session, .. } | Step::Feedback { session, .. } | Step::End { session } => session,
        }
    }
}

/// A line as written; [`parse`] decides which step it is.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    session: String,
    text: Option<String>,
    feedback: Option<FeedbackRating>,
    #[serde(default)]
    end: bool,
}

/// The bundled workload's steps.
pub fn bundled() -> anyhow::Result<Vec<Step>> {
    parse(TEXT)
}

/// Parses JSON Lines into steps; errors read `FILE:LINE: what is wrong`.
/// Blank lines are skipped.
fn parse(text: &str) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let at = || format!("{PATH}:{}", i + 1);
        let line: Line = serde_json::from_str(raw).map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
        let step = match (line.feedback, line.end, line.text) {
            (Some(rating), false, text) => Step::Feedback { session: line.session, rating, text },
            (None, true, None) => Step::End { session: line.session },
            (None, false, Some(text)) if !text.trim().is_empty() => Step::Say { session: line.session, text },
            _ => anyhow::bail!("{}: a line is an utterance (text), feedback (+ optional text) or an end", at()),
        };
        steps.push(step);
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_kinds_of_line_parse_and_bad_ones_name_their_line() {
        let steps = parse(
            r#"{"session":"a","text":"what time is it"}
{"session":"a","feedback":"correction","text":"no, I meant ~/todo.txt"}

{"session":"a","end":true}"#,
        )
        .unwrap();
        assert_eq!(
            steps,
            vec![
                Step::Say { session: "a".into(), text: "what time is it".into() },
                Step::Feedback {
                    session: "a".into(),
                    rating: FeedbackRating::Correction,
                    text: Some("no, I meant ~/todo.txt".into())
                },
                Step::End { session: "a".into() },
            ]
        );
        let e =
            parse("{\"session\":\"a\",\"text\":\"x\"}\n{\"session\":\"a\",\"end\":true,\"text\":\"x\"}").unwrap_err();
        assert!(e.to_string().starts_with("examples/demo/workload.jsonl:2: "), "{e}");
        let e = parse("{\"session\":\"a\",\"said\":\"x\"}").unwrap_err();
        assert!(e.to_string().contains(":1: unknown field `said`"), "{e}");
    }

    #[test]
    fn the_bundled_workload_parses_and_ends_every_session() {
        let steps = bundled().unwrap();
        let says = steps.iter().filter(|s| matches!(s, Step::Say { .. })).count();
        assert!(says >= 200, "a few hundred utterances, got {says}");
        let mut sessions: Vec<&str> = steps.iter().map(Step::session).collect();
        sessions.sort();
        sessions.dedup();
        for s in sessions {
            assert!(steps.iter().any(|x| *x == Step::End { session: s.to_owned() }), "{s} never ends");
        }
    }
}
