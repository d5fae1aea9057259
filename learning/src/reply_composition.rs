//! What a reply says when no model writes it — offline, on the fast path,
//! after a model that failed — as pure functions of what the turn's tools
//! returned ([`TurnResults`]) and the user's standing directives. The
//! reply loop (`engram_actors::roles::reply_loop`) runs the steps and asks
//! the model; what the words are is decided here:
//!
//! 1. **L0's templates first.** A turn served by L0, or any turn that ran
//!    one tool with no arguments, is answered through the EN/IT templates
//!    of seed 000 ([`l0_answer`]), in the request's language however it was
//!    served.
//! 2. **A call left waiting for arguments asks for them**, in one line
//!    ([`ask_for`]), after what the steps before it found.
//! 3. **Otherwise the results the plan was for**: those no later step took
//!    as an argument (`"$N"`) — "where am I" feeding "weather in $0"
//!    answers with the weather alone — each cut to its first line when
//!    the user asked for brief answers ([`TurnResults::compose`]).
//! 4. **A model that failed is said** ([`offline_note`]): the user learns
//!    why the answer is plainer than usual, in their language.
//! 5. **The language** is the user's standing directive, else the
//!    request's own ([`TurnResults::lang`]).

use std::collections::BTreeSet;

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{LlmOutcome, PlanStep, RouteLayer};

use crate::fast_path::templates::l0_answer;
use crate::lang::{self, Lang};
use crate::memory::directives::{self, ByRule};

/// What a turn's steps did, as the user reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnResults {
    /// The steps run, in order, as called (references resolved).
    pub steps: Vec<PlanStep>,
    /// Each step's result as the user and later steps read it (an error
    /// as "TOOL failed: …").
    pub plain: Vec<String>,
    /// Steps whose result a later step took as an argument: intermediate,
    /// not part of a reply composed from the results (rule 3).
    pub consumed: BTreeSet<usize>,
    /// Whether every step succeeded.
    pub tools_ok: bool,
    /// A step not run for want of required arguments the request does not
    /// give: its tool and those arguments (rule 2).
    pub ask: Option<(String, Vec<String>)>,
    /// The user's directives that rules apply ([`directives::by_rule`]).
    pub rules: ByRule,
}

impl TurnResults {
    /// No step run yet, under the user's `rules`.
    pub fn new(rules: ByRule) -> TurnResults {
        TurnResults { tools_ok: true, rules, ..TurnResults::default() }
    }

    /// The language a reply to `request` is in (rule 5).
    pub fn lang(&self, request: &str) -> Lang {
        self.rules.lang.unwrap_or_else(|| lang::detect(request))
    }

    /// Rule 3: the results the plan was for, one per line; a turn that ran
    /// nothing says it cannot do that yet.
    pub fn compose(&self) -> String {
        if self.steps.is_empty() {
            return "I don't know how to do that yet.".to_owned();
        }
        let answers: Vec<String> = self
            .plain
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.consumed.contains(i))
            .map(|(_, r)| if self.rules.brief { directives::brief(r) } else { r.clone() })
            .collect();
        answers.join("\n")
    }

    /// The reply no model writes to `request`, served by `layer` at `now`
    /// (rules 1–3).
    pub fn offline_reply(&self, layer: RouteLayer, request: &str, now: DateTime<FixedOffset>) -> String {
        let lang = self.lang(request);
        match (layer, self.steps.as_slice(), self.tools_ok, &self.ask) {
            (layer, [step], true, None) if layer == RouteLayer::L0 || step.args.0.is_empty() => {
                l0_answer(&step.tool, &self.plain[0], now, lang).unwrap_or_else(|| self.compose())
            }
            (_, _, _, Some((tool, missing))) => {
                let question = ask_for(tool, missing, lang);
                match self.steps.is_empty() {
                    true => question,
                    false => format!("{}\n{question}", self.compose()),
                }
            }
            _ => self.compose(),
        }
    }
}

/// Rule 2: the one line that asks the user for the arguments `missing` of
/// `tool` (names as the schema has them, underscores read as spaces), in
/// `lang`.
pub fn ask_for(tool: &str, missing: &[String], lang: Lang) -> String {
    let names: Vec<String> = missing.iter().map(|m| m.replace('_', " ")).collect();
    let (and, which, needs) = match lang {
        Lang::It => (" e ", "Quale", "mi serve per"),
        _ => (" and ", "Which", "I need it for"),
    };
    let list = match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{}{and}{last}", rest.join(", ")),
        None => String::new(),
    };
    format!("{which} {list}? ({needs} {tool})")
}

/// Rule 4: the line a reply ends with when the model failed (`outcome`)
/// and the offline planner answered instead.
pub fn offline_note(outcome: LlmOutcome, lang: Lang) -> String {
    let (en, it) = match outcome {
        LlmOutcome::Timeout => ("did not answer in time", "non ha risposto in tempo"),
        LlmOutcome::Unreachable => ("could not be reached", "non è raggiungibile"),
        LlmOutcome::HttpError => ("answered with an error", "ha risposto con un errore"),
        _ => ("gave no usable plan", "non ha dato un piano utilizzabile"),
    };
    match lang {
        Lang::It => format!("(Il modello {it}: ho risposto senza.)"),
        _ => format!("(The model {en}: answered without it.)"),
    }
}

/// "Noted", in `lang`, when `request` tells something about the user
/// ([`crate::mood::tells_about_self`]): an offline turn that planned
/// nothing because it was told something says so, not that it cannot do
/// it. The memory index keeps what was said.
pub fn acknowledgement(request: &str, lang: Lang) -> Option<String> {
    crate::mood::tells_about_self(request).then(|| match lang {
        Lang::It => "Ok, me lo ricordo.".to_owned(),
        _ => "Noted: I'll remember that.".to_owned(),
    })
}

/// `text` cut to at most `max` bytes (at a character boundary), saying how
/// much was cut and which key sets it; as it is when it fits.
pub fn capped(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let kept = crate::text::cut_bytes(&text, max);
    format!("{kept}\n… [cut: {} more bytes; [reply_loop] max_reply_bytes = {max}]", text.len() - kept.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::ToolArgs;

    #[test]
    fn a_missing_argument_is_asked_for_in_the_requests_language() {
        assert_eq!(ask_for("get_weather", &["city".into()], Lang::En), "Which city? (I need it for get_weather)");
        assert_eq!(
            ask_for("send_message", &["contact".into(), "message_text".into()], Lang::It),
            "Quale contact e message text? (mi serve per send_message)"
        );
    }

    /// A reply composed from the results answers with what the plan was
    /// for: a lookup another step took as its argument is left out.
    #[test]
    fn a_composed_reply_leaves_out_the_lookups_on_the_way() {
        let step = |tool: &str| PlanStep { tool: tool.into(), args: ToolArgs::default() };
        let mut done = TurnResults::new(ByRule::default());
        done.plain = vec!["Turin".into(), "Turin: 9 C, fog".into(), "14:05".into()];
        done.steps = vec![step("get_location"), step("get_weather"), step("get_now")];
        assert_eq!(done.compose(), "Turin\nTurin: 9 C, fog\n14:05");
        done.consumed.insert(0);
        assert_eq!(done.compose(), "Turin: 9 C, fog\n14:05");
        done.rules.brief = true;
        done.plain[2] = "14:05\nand some more".into();
        assert_eq!(done.compose(), "Turin: 9 C, fog\n14:05…", "brief: first lines");
        done.steps.clear();
        assert_eq!(done.compose(), "I don't know how to do that yet.");
    }

    /// Rule 2 after rule 3: what the steps before found, then the question.
    #[test]
    fn a_call_waiting_for_arguments_asks_after_what_was_found() {
        let now = DateTime::parse_from_rfc3339("2026-12-02T10:00:00+01:00").unwrap();
        let mut done = TurnResults::new(ByRule::default());
        done.ask = Some(("get_weather".into(), vec!["city".into()]));
        assert_eq!(
            done.offline_reply(RouteLayer::Planner, "che tempo fa", now),
            "Quale city? (mi serve per get_weather)"
        );
        done.steps = vec![PlanStep { tool: "get_location".into(), args: ToolArgs::default() }];
        done.plain = vec!["Turin".into()];
        let reply = done.offline_reply(RouteLayer::Planner, "what's the weather", now);
        assert_eq!(reply, "Turin\nWhich city? (I need it for get_weather)");
    }

    #[test]
    fn a_long_reply_is_cut_at_a_character_boundary_saying_so() {
        assert_eq!(capped("short".into(), 10), "short");
        let cut = capped("àèìòù".repeat(10), 5);
        assert!(cut.starts_with("àè\n… [cut: 96 more bytes; [reply_loop] max_reply_bytes = 5]"), "{cut}");
    }
}
