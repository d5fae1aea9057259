//! L0: a closed table of literal phrases (seed 000), EN and IT.
//!
//! The requests that recur for everyone — the time, the date, where am I,
//! undo — in the variants people actually say. A request is normalised
//! ([`normalize`]) and looked up exactly: no regular expressions, no
//! similarity. When in doubt whether a phrase fits, it is not in the
//! table; hosts extend it through configuration (`[fast_path] l0_extra`).

use std::collections::HashMap;

use crate::text::normalize;

/// The built-in phrases and their executors.
pub const BUILTIN: &[(&str, &[&str])] = &[
    (
        "get_now",
        &[
            "what time is it",
            "what time is it now",
            "what's the time",
            "whats the time",
            "what is the time",
            "what's the time now",
            "tell me the time",
            "do you have the time",
            "current time",
            "the time please",
            "time please",
            "che ora è",
            "che ora e",
            "che ore sono",
            "che ore sono adesso",
            "che ora è adesso",
            "sai che ore sono",
            "mi dici che ore sono",
            "dimmi l'ora",
            "mi dici l'ora",
            "ora esatta",
        ],
    ),
    (
        "get_date",
        &[
            "what day is it",
            "what day is it today",
            "what day is today",
            "what's the date",
            "whats the date",
            "what is the date",
            "what's the date today",
            "what's today's date",
            "what is today's date",
            "today's date",
            "what date is it",
            "what date is it today",
            "che giorno è",
            "che giorno e",
            "che giorno è oggi",
            "che giorno e oggi",
            "che data è",
            "che data è oggi",
            "quanti ne abbiamo oggi",
            "che giorno abbiamo oggi",
        ],
    ),
    (
        "get_location",
        &[
            "where am i",
            "where are we",
            "what's my location",
            "what is my location",
            "my location",
            "where am i now",
            "dove sono",
            "dove mi trovo",
            "dove siamo",
            "qual è la mia posizione",
            "la mia posizione",
        ],
    ),
    (
        "undo",
        &[
            "undo",
            "undo that",
            "undo it",
            "undo the last action",
            "undo the last thing",
            "annulla",
            "annulla l'ultima azione",
            "annulla l'ultima operazione",
        ],
    ),
];

/// The L0 table: normalised phrase → executor.
#[derive(Clone, Debug)]
pub struct L0Table {
    phrases: HashMap<String, String>,
}

impl Default for L0Table {
    fn default() -> Self {
        L0Table::with_extra(std::iter::empty::<(String, String)>())
    }
}

impl L0Table {
    /// The built-in table plus `extra` `(phrase, executor)` pairs (phrases
    /// are normalised; an extra phrase overrides a built-in one).
    pub fn with_extra(extra: impl IntoIterator<Item = (impl AsRef<str>, impl Into<String>)>) -> Self {
        let mut phrases = HashMap::new();
        for (tool, list) in BUILTIN {
            for p in *list {
                phrases.insert(normalize(p), (*tool).to_owned());
            }
        }
        for (p, tool) in extra {
            phrases.insert(normalize(p.as_ref()), tool.into());
        }
        L0Table { phrases }
    }

    /// The table `[fast_path]` asks for: the built-ins plus `l0_extra`.
    pub fn from_config(fast: &crate::fast_path::FastPathConfig) -> Self {
        L0Table::with_extra(fast.l0_extra.iter().map(|(k, v)| (k.as_str(), v.clone())))
    }

    /// The executor for `text` and the phrase it matched, if `text` is in
    /// the table once normalised.
    pub fn lookup(&self, text: &str) -> Option<(&str, String)> {
        let n = normalize(text);
        self.lookup_normalized(&n).map(|t| (t, n))
    }

    /// [`L0Table::lookup`] for a text already normalised.
    pub fn lookup_normalized(&self, normalized: &str) -> Option<&str> {
        self.phrases.get(normalized).map(String::as_str)
    }

    /// Number of phrases.
    pub fn len(&self) -> usize {
        self.phrases.len()
    }

    /// True when empty (never, with the built-ins).
    pub fn is_empty(&self) -> bool {
        self.phrases.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_phrases_hit_in_both_languages() {
        let t = L0Table::default();
        for (text, tool) in [
            ("What time is it?", "get_now"),
            ("what's the time", "get_now"),
            ("Tell me the time.", "get_now"),
            ("Che ora è?", "get_now"),
            ("che ore sono", "get_now"),
            ("Dimmi l’ora", "get_now"),
            ("What's the date?", "get_date"),
            ("che giorno è oggi", "get_date"),
            ("Where am I?", "get_location"),
            ("dove mi trovo", "get_location"),
            ("Undo!", "undo"),
            ("annulla", "undo"),
        ] {
            assert_eq!(t.lookup(text).map(|(x, _)| x), Some(tool), "{text}");
        }
    }

    #[test]
    fn anything_else_misses() {
        let t = L0Table::default();
        for text in ["what time is the meeting", "che ore sono a Tokyo", "set the time", "undo the email to Bob", ""] {
            assert_eq!(t.lookup(text), None, "{text}");
        }
    }

    #[test]
    fn configuration_extends_the_table() {
        let t = L0Table::with_extra([("Which day is it", "get_date")]);
        assert_eq!(t.lookup("which day is it?").map(|(x, _)| x), Some("get_date"));
        assert_eq!(t.len(), L0Table::default().len() + 1);
    }
}
