//! The rule-based intent judge (seed 002 #2, the fallback when no LLM is
//! configured): is an utterance addressed to the assistant, what is the
//! query, is it a stop command — decided by wake words, stop phrases and
//! the hot window after a reply, in English and Italian.
//!
//! Rules, first match wins:
//!
//! | rule | directed | stop | confidence |
//! |---|---|---|---|
//! | empty or whitespace | no | no | [`EMPTY_CONFIDENCE`] |
//! | stop phrase (after an optional wake word) | yes | yes | [`STOP_CONFIDENCE`] |
//! | wake word at the start | yes | no | [`WAKE_CONFIDENCE`] |
//! | typed chat | yes | no | [`CHAT_CONFIDENCE`] |
//! | voice within the hot window | yes | no | [`HOT_WINDOW_CONFIDENCE`] |
//! | voice otherwise (ambient speech) | no | no | [`AMBIENT_CONFIDENCE`] |
//!
//! A stop phrase is honoured without a wake word: "stop" must work while
//! the assistant is talking, which is when nobody says the wake word first.

use chrono::{DateTime, Duration, Utc};
use engram_events::payloads::{IntentJudged, JudgeKind};

use crate::text::normalize;

/// Confidence of "nothing was said": certain.
pub const EMPTY_CONFIDENCE: f64 = 1.0;
/// Confidence of a stop phrase: short closed phrases rarely occur by chance.
pub const STOP_CONFIDENCE: f64 = 0.9;
/// Confidence of a wake word at the start: the user named the assistant.
pub const WAKE_CONFIDENCE: f64 = 0.95;
/// Confidence of typed chat: typing into the assistant is addressing it.
pub const CHAT_CONFIDENCE: f64 = 1.0;
/// Confidence of a follow-up in the hot window: likely, but bystanders talk too.
pub const HOT_WINDOW_CONFIDENCE: f64 = 0.8;
/// Confidence of "ambient speech, not for us": the user may have meant it
/// for the assistant without a wake word, so this is the weakest verdict.
pub const AMBIENT_CONFIDENCE: f64 = 0.6;

/// Stop phrases, normalised (EN + IT).
const STOP_PHRASES: &[&str] = &[
    "stop",
    "cancel",
    "never mind",
    "nevermind",
    "be quiet",
    "shut up",
    "basta",
    "fermati",
    "annulla",
    "lascia perdere",
    "zitto",
    "zitta",
    "stai zitto",
];

/// Words that may follow a stop phrase without making it a request
/// ("stop please", "basta grazie").
const STOP_TRAILERS: &[&str] =
    &["please", "now", "thanks", "thank you", "per favore", "grazie", "ora", "adesso", "subito"];

/// How an utterance reached the assistant, which decides whether it needs
/// to be addressed explicitly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntentMode {
    /// Typed chat: always directed at the assistant.
    Chat,
    /// Speech: directed only with a wake word or within the hot window.
    Voice,
}

/// The deterministic intent judge used when no LLM judge is configured.
#[derive(Clone, Debug)]
pub struct RuleIntentJudge {
    /// Wake words, normalised, longest first (so "hey engram" wins over "engram").
    wake_words: Vec<Vec<String>>,
    /// How long after a reply a voice utterance counts as a follow-up.
    hot_window: Duration,
}

impl Default for RuleIntentJudge {
    /// Wake words "engram", "hey engram", "ehi engram"; a 30 s hot window.
    fn default() -> Self {
        RuleIntentJudge::new(["engram", "hey engram", "ehi engram"], Duration::seconds(30))
    }
}

impl RuleIntentJudge {
    /// A judge with the given wake words (any case and punctuation) and hot window.
    pub fn new<S: AsRef<str>>(wake_words: impl IntoIterator<Item = S>, hot_window: Duration) -> Self {
        let mut wake_words: Vec<Vec<String>> = wake_words
            .into_iter()
            .map(|w| normalize(w.as_ref()).split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .filter(|w: &Vec<String>| !w.is_empty())
            .collect();
        wake_words.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        wake_words.dedup();
        RuleIntentJudge { wake_words, hot_window }
    }

    /// Judges `text` heard or typed at `now`; `last_reply_at` is when the
    /// assistant last replied (opens the hot window).
    pub fn judge(
        &self,
        text: &str,
        mode: IntentMode,
        last_reply_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> IntentJudged {
        let verdict = |directed: bool, query: &str, stop: bool, confidence: f64| IntentJudged {
            directed,
            query: query.to_owned(),
            stop,
            confidence,
            judge: JudgeKind::Rule,
        };
        let trimmed = text.trim();
        if normalize(trimmed).is_empty() {
            return verdict(false, "", false, EMPTY_CONFIDENCE);
        }
        let woken = self.strip_wake_word(trimmed);
        let query = woken.unwrap_or(trimmed);
        if is_stop(query) {
            return verdict(true, query, true, STOP_CONFIDENCE);
        }
        if woken.is_some() {
            return verdict(true, query, false, WAKE_CONFIDENCE);
        }
        match mode {
            IntentMode::Chat => verdict(true, query, false, CHAT_CONFIDENCE),
            IntentMode::Voice if self.in_hot_window(last_reply_at, now) => {
                verdict(true, query, false, HOT_WINDOW_CONFIDENCE)
            }
            IntentMode::Voice => verdict(false, query, false, AMBIENT_CONFIDENCE),
        }
    }

    /// Whether `now` is within the hot window after a reply at
    /// `last_reply_at` (an engagement signal for the LLM intent judge too).
    pub fn in_hot_window(&self, last_reply_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        last_reply_at.is_some_and(|t| t <= now && now - t <= self.hot_window)
    }

    /// The assistant's name as a prompt can say it: the shortest wake word
    /// ("engram" of "engram", "hey engram").
    pub fn name(&self) -> String {
        self.wake_words.iter().min_by_key(|w| w.len()).map(|w| w.join(" ")).unwrap_or_default()
    }

    /// The text after a leading wake word and the punctuation that follows
    /// it, or `None` when the text does not start with one.
    fn strip_wake_word<'a>(&self, text: &'a str) -> Option<&'a str> {
        let words = word_spans(text);
        for wake in &self.wake_words {
            if words.len() < wake.len() {
                continue;
            }
            // The wake word must be the first thing said.
            if !text[..words[0].0].chars().all(is_filler) {
                continue;
            }
            let matches = wake.iter().zip(&words).all(|(w, (s, e))| normalize(&text[*s..*e]) == *w);
            if matches {
                let end = words[wake.len() - 1].1;
                return Some(text[end..].trim_start_matches(is_filler));
            }
        }
        None
    }
}

/// Whitespace and the punctuation that separates a wake word from the query.
fn is_filler(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '.' | '!' | '?' | ':' | ';' | '-' | '–' | '—' | '…')
}

/// Byte spans of the words of `text` (alphanumeric runs, apostrophes inside).
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let next_alnum = iter.peek().is_some_and(|(_, n)| n.is_alphanumeric());
        let inner = c.is_alphanumeric() || (start.is_some() && matches!(c, '\'' | '’') && next_alnum);
        match (inner, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// Is `text` a stop phrase, optionally followed by a politeness word?
fn is_stop(text: &str) -> bool {
    let n = normalize(text);
    STOP_PHRASES.iter().any(|p| match n.strip_prefix(p) {
        Some("") => true,
        Some(rest) => rest.strip_prefix(' ').is_some_and(|r| STOP_TRAILERS.contains(&r)),
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0).unwrap()
    }

    fn voice(text: &str) -> IntentJudged {
        RuleIntentJudge::default().judge(text, IntentMode::Voice, None, now())
    }

    #[test]
    fn stop_phrases_in_both_languages_stop_and_are_directed() {
        for text in [
            "Stop!",
            "cancel",
            "Never mind.",
            "be quiet please",
            "Basta",
            "fermati",
            "Annulla",
            "lascia perdere",
            "Zitto!",
            "Hey engram, stop.",
        ] {
            let j = voice(text);
            assert!(j.stop && j.directed, "{text}: {j:?}");
            assert_eq!(j.confidence, STOP_CONFIDENCE);
            assert_eq!(j.judge, JudgeKind::Rule);
        }
        // A request that merely starts with a stop word is not a stop.
        let j = RuleIntentJudge::default().judge("stop the timer at five", IntentMode::Chat, None, now());
        assert!(!j.stop && j.directed, "{j:?}");
        assert!(!voice("non fermati mai").stop);
    }

    #[test]
    fn the_name_is_the_shortest_wake_word() {
        assert_eq!(RuleIntentJudge::default().name(), "engram");
        assert_eq!(RuleIntentJudge::new(["Hey Jarvis", "jarvis"], Duration::seconds(5)).name(), "jarvis");
    }

    #[test]
    fn wake_word_directs_and_is_stripped_from_the_query() {
        let cases = [
            ("Engram, what time is it?", "what time is it?"),
            ("hey Engram: download the report", "download the report"),
            ("Ehi engram, che ore sono?", "che ore sono?"),
            ("  engram — apri la cartella documenti", "apri la cartella documenti"),
        ];
        for (text, query) in cases {
            let j = voice(text);
            assert!(j.directed && !j.stop, "{text}: {j:?}");
            assert_eq!(j.query, query);
            assert_eq!(j.confidence, WAKE_CONFIDENCE);
        }
        // Not at the start, or only a prefix of a longer word: no wake word.
        assert!(!voice("I told engram about it").directed);
        assert!(!voice("engramma è una parola").directed);
    }

    #[test]
    fn hot_window_directs_voice_follow_ups() {
        let judge = RuleIntentJudge::default();
        let recent = Some(now() - Duration::seconds(10));
        let j = judge.judge("and tomorrow?", IntentMode::Voice, recent, now());
        assert!(j.directed && j.query == "and tomorrow?" && j.confidence == HOT_WINDOW_CONFIDENCE, "{j:?}");
        let j = judge.judge("e domani?", IntentMode::Voice, recent, now());
        assert!(j.directed, "{j:?}");
        // The window closes after 30 s.
        let stale = Some(now() - Duration::seconds(31));
        assert!(!judge.judge("e domani?", IntentMode::Voice, stale, now()).directed);
    }

    #[test]
    fn ambient_voice_is_not_directed_and_chat_always_is() {
        for text in ["pass me the salt", "passami il sale"] {
            let j = voice(text);
            assert!(!j.directed && !j.stop && j.confidence == AMBIENT_CONFIDENCE, "{j:?}");
            let j = RuleIntentJudge::default().judge(text, IntentMode::Chat, None, now());
            assert!(j.directed && j.query == text && j.confidence == CHAT_CONFIDENCE, "{j:?}");
        }
    }

    #[test]
    fn empty_text_is_not_directed() {
        for text in ["", "   ", " ... "] {
            let j = RuleIntentJudge::default().judge(text, IntentMode::Chat, None, now());
            assert!(!j.directed && !j.stop && j.query.is_empty() && j.confidence == EMPTY_CONFIDENCE, "{j:?}");
        }
    }

    #[test]
    fn custom_wake_words() {
        let judge = RuleIntentJudge::new(["Computer"], Duration::seconds(5));
        let j = judge.judge("computer, lights on", IntentMode::Voice, None, now());
        assert!(j.directed && j.query == "lights on", "{j:?}");
        assert!(!judge.judge("engram, lights on", IntentMode::Voice, None, now()).directed);
    }
}
