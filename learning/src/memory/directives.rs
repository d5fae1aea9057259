//! The user's standing directives that rules can apply without a model
//! (issue #14 item 4): with a model, every directive reaches it as an
//! instruction (the warm profile); offline, and wherever no model writes
//! the reply (L0 templates, fast-path replays, a model that failed), the
//! two a rule can honour are applied here.
//!
//! | directive (EN / IT) | applied |
//! |---|---|
//! | "always answer in English" / "rispondi sempre in inglese" (and Italian / italiano) | L0's templates answer in that language whatever the request's |
//! | "answer briefly", "short answers", "be concise" / "rispondi in breve", "risposte brevi", "sii conciso" | each tool result in a composed reply keeps its first line, at most [`BRIEF_CHARS`] characters |
//!
//! The newest directive naming a language wins; a later one replaces it.

use crate::lang::Lang;

/// Longest line of a brief composed reply (characters).
pub const BRIEF_CHARS: usize = 160;

/// What the rules make of the directives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByRule {
    /// The language replies must be in, when one was asked for.
    pub lang: Option<Lang>,
    /// Short replies.
    pub brief: bool,
}

const BRIEF: &[&str] = &[
    "brief",
    "briefly",
    "short answer",
    "short answers",
    "concise",
    "keep it short",
    "breve",
    "brevi",
    "brevemente",
    "in breve",
    "conciso",
    "concisa",
    "sintetico",
    "sintetica",
];

/// The rules over `directives` (oldest first).
pub fn by_rule<S: AsRef<str>>(directives: &[S]) -> ByRule {
    let mut out = ByRule::default();
    for d in directives {
        let d = crate::text::normalize(d.as_ref());
        if BRIEF.iter().any(|w| contains_words(&d, w)) {
            out.brief = true;
        }
        let english = ["in english", "in inglese"].iter().any(|w| contains_words(&d, w));
        let italian = ["in italian", "in italiano"].iter().any(|w| contains_words(&d, w));
        match (english, italian) {
            (true, false) => out.lang = Some(Lang::En),
            (false, true) => out.lang = Some(Lang::It),
            _ => {}
        }
    }
    out
}

/// `text` cut as a brief reply line: its first non-empty line, at most
/// [`BRIEF_CHARS`] characters (an ellipsis when cut).
pub fn brief(text: &str) -> String {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let cut = text.trim() != first || first.chars().count() > BRIEF_CHARS;
    let mut line: String = first.chars().take(BRIEF_CHARS).collect();
    if cut {
        line.push('…');
    }
    line
}

/// Whether `phrase` occurs in `text` on word boundaries (both normalised).
fn contains_words(text: &str, phrase: &str) -> bool {
    format!(" {text} ").contains(&format!(" {phrase} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_and_brevity_by_rule() {
        assert_eq!(by_rule::<&str>(&[]), ByRule::default());
        let r = by_rule(&["Always answer briefly", "rispondi sempre in italiano"]);
        assert_eq!(r, ByRule { lang: Some(Lang::It), brief: true });
        assert_eq!(by_rule(&["rispondi in italiano", "always answer in English"]).lang, Some(Lang::En), "newest wins");
        assert!(!by_rule(&["call me Ada"]).brief);
        assert!(!by_rule(&["describe the briefcase"]).brief, "whole words only");
        assert_eq!(brief("Buy coffee.\nCall Marta."), "Buy coffee.…");
        assert_eq!(brief("14:05"), "14:05");
        assert_eq!(brief(&"x".repeat(200)).chars().count(), BRIEF_CHARS + 1);
    }
}
