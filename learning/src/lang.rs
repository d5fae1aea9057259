//! The request's language, EN or IT (the seeds' assistant is bilingual):
//! by function words, no model. It decides the language of L0's templated
//! answers ([`crate::fast_path::templates`]) and is recorded on
//! `utterance.received` (`lang`).
//!
//! A closed pair of word lists, as L0 is a closed table: each word of the
//! normalised request that is only Italian counts for IT, only English for
//! EN, and an accented vowel (à è ì ò ù) counts for IT. Ties — a bare
//! "ok", a name — are English, the default the templates fall back to.

use crate::text::{normalize, words};

/// A language engram answers in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lang {
    /// English (the default).
    En,
    /// Italian.
    It,
}

impl Lang {
    /// The ISO 639-1 code (`en`, `it`).
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::It => "it",
        }
    }
}

/// Words that mark Italian (and are not English words).
const ITALIAN: &[&str] = &[
    "che",
    "il",
    "lo",
    "la",
    "gli",
    "le",
    "di",
    "del",
    "della",
    "dei",
    "delle",
    "sono",
    "sei",
    "siamo",
    "è",
    "e'",
    "per",
    "con",
    "non",
    "un",
    "una",
    "uno",
    "mi",
    "ti",
    "ci",
    "si",
    "dove",
    "quanto",
    "quanti",
    "quando",
    "come",
    "cosa",
    "oggi",
    "ieri",
    "domani",
    "ora",
    "ore",
    "dimmi",
    "annulla",
    "sai",
    "qual",
    "quale",
    "abbiamo",
    "trovo",
    "giorno",
    "data",
    "posizione",
    "mia",
    "mio",
    "tuo",
    "tua",
    "ciao",
    "grazie",
    "adesso",
    "ancora",
    "anche",
    "poi",
    "perché",
    "chi",
    "questo",
    "questa",
    "quello",
    "quella",
    "nel",
    "nella",
    "alla",
    "al",
    "dal",
    "dalla",
    "sul",
    "sulla",
    "fa",
    "tempo",
    "chiamo",
    "abito",
    "vivo",
    "piace",
    "leggi",
    "mostra",
    "apri",
    "cerca",
    "ultima",
    "l'ultima",
    "l'ora",
    "esatta",
    "parole",
    "parola",
    "conta",
    "elenca",
    "trova",
    "cartella",
    "leggimi",
    "mostrami",
    "grande",
    "luce",
    "luci",
    "accendi",
    "spegni",
];

/// Words that mark English (and are not Italian words).
const ENGLISH: &[&str] = &[
    "what",
    "the",
    "is",
    "are",
    "am",
    "was",
    "of",
    "to",
    "it",
    "where",
    "when",
    "how",
    "who",
    "why",
    "time",
    "date",
    "today",
    "yesterday",
    "tomorrow",
    "me",
    "my",
    "you",
    "your",
    "tell",
    "please",
    "undo",
    "do",
    "does",
    "have",
    "has",
    "this",
    "that",
    "and",
    "or",
    "not",
    "an",
    "on",
    "at",
    "for",
    "with",
    "from",
    "what's",
    "whats",
    "now",
    "day",
    "show",
    "read",
    "open",
    "find",
    "list",
    "weather",
    "hello",
    "thanks",
    "name",
    "live",
    "like",
    "last",
    "current",
];

/// The language of `text`: IT when its Italian marks outnumber its
/// English ones, else EN.
pub fn detect(text: &str) -> Lang {
    let n = normalize(text);
    let (mut it, mut en) = (0usize, 0usize);
    for w in words(&n) {
        if ITALIAN.contains(&w) {
            it += 1;
        } else if ENGLISH.contains(&w) {
            en += 1;
        }
        if w.chars().any(|c| matches!(c, 'à' | 'è' | 'ì' | 'ò' | 'ù' | 'é')) {
            it += 1;
        }
    }
    if it > en {
        Lang::It
    } else {
        Lang::En
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_l0_phrase_is_told_apart() {
        for phrase in ["che ore sono", "Che ora è?", "dimmi l'ora", "che giorno è oggi", "dove mi trovo", "annulla"] {
            assert_eq!(detect(phrase), Lang::It, "{phrase}");
        }
        for phrase in ["what time is it", "What's the date?", "where am I", "undo that", "tell me the time"] {
            assert_eq!(detect(phrase), Lang::En, "{phrase}");
        }
        assert_eq!(detect("mi chiamo Ada e abito a Torino"), Lang::It);
        assert_eq!(detect("Ada"), Lang::En, "a tie is English");
        // Words both languages write ("in", "a") count for neither.
        assert_eq!(detect("conta le parole in ~/journal.txt"), Lang::It);
        assert_eq!(detect("che tempo fa a Roma"), Lang::It);
        assert_eq!(detect("count the words in a file"), Lang::En);
        for (tool, phrases) in crate::fast_path::l0::BUILTIN {
            for p in *phrases {
                // The table lists English phrases before Italian ones.
                let italian = p.starts_with("che")
                    || p.starts_with("dove")
                    || p.starts_with("annulla")
                    || [
                        "sai che ore sono",
                        "mi dici che ore sono",
                        "dimmi l'ora",
                        "mi dici l'ora",
                        "ora esatta",
                        "quanti ne abbiamo oggi",
                        "qual è la mia posizione",
                        "la mia posizione",
                    ]
                    .contains(p);
                assert_eq!(detect(p), if italian { Lang::It } else { Lang::En }, "{tool}: {p}");
            }
        }
    }
}
