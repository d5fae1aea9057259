//! Memory, as folds and rules: the active conversation ([`dialogue`],
//! seed 002 #1) and the warm profile ([`profile`], #4) that every prompt
//! carries; the extractive summariser (fallback of #9), the rule-based
//! knowledge-graph fact extractor (fallback of #10), the day-by-day diary
//! both summarisers write into, the rules that decide when and what to
//! recall from it (#3b, #3's fallback) and how what it recalls is ranked
//! and packed into a prompt ([`recalled`]), and what a user's "forget this"
//! retracts.
//!
//! Both work on sentences, so they agree on what one is: the summariser
//! keeps the user's first-person sentences verbatim precisely so that the
//! extractor finds them again in the summary.

pub mod dialogue;
pub mod diary;
pub mod directives;
pub mod extractive;
pub mod facts;
pub mod forget;
pub mod passages;
pub mod profile;
pub mod recall;
pub mod recalled;

pub use diary::{DayEntry, Diary};
pub use extractive::{summarise, TurnText};
pub use facts::{extract_facts, Fact};
pub use forget::{Forget, ForgetError, Memory};
pub use passages::{MemoryQuery, PassageIndex, RecalledPassage};
pub use recall::{enrich_by_rule, should_recall, Enrichment};
pub use recalled::{MemorySection, Recalled};

/// The content words of `text`, in order: normalised, at least three
/// characters, not a stop word (negations included) — what the summariser's
/// topics and the recall rules ([`recall`]) both count.
pub fn content_words(text: &str) -> Vec<String> {
    let n = crate::text::normalize(text);
    crate::text::words(&n)
        .filter(|w| w.chars().count() >= 3 && !crate::text::is_stop_word(w, crate::text::Negations::Drop))
        .map(str::to_owned)
        .collect()
}

/// The sentences of `text`, trimmed: split after `.`, `!`, `?`, `;` or a
/// line break when followed by whitespace or the end (so `example.org` and
/// `3.5` stay whole).
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let boundary = match c {
            '\n' => true,
            '.' | '!' | '?' | ';' => iter.peek().is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if boundary {
            let end = i + c.len_utf8();
            push_sentence(&mut out, &text[start..end]);
            start = end;
        }
    }
    push_sentence(&mut out, &text[start..]);
    out
}

fn push_sentence<'a>(out: &mut Vec<&'a str>, s: &'a str) {
    let s = s.trim();
    if s.chars().any(char::is_alphanumeric) {
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_on_terminators_followed_by_space() {
        assert_eq!(
            sentences("Download example.org/a.pdf. My name is Ada!  Why?\nok; done"),
            vec!["Download example.org/a.pdf.", "My name is Ada!", "Why?", "ok;", "done"]
        );
        assert_eq!(sentences("version 3.5 is out"), vec!["version 3.5 is out"]);
        assert!(sentences(" ... ").is_empty());
    }
}
