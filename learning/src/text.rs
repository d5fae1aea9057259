//! Text as every rule of the assistant reads it: one normalisation, one
//! way to split words, one list of words that carry no meaning of their
//! own (EN + IT), one list of negations.
//!
//! [`normalize`] (seed 000: lowercase, straight apostrophes, punctuation
//! off, whitespace collapsed) serves the L0 table, canonical texts, the
//! replay gate, the intent judge, the judge's correction detector, the
//! summariser and the graph extractor, so all of them agree on what a word
//! is. [`is_stop_word`] serves the replay gate (its content-word rule) and
//! the summariser (topics): the gate reads negations as meaning — "don't
//! turn on the light" is not "turn on the light" — while a topic list has
//! no use for them, so whether negations count is the caller's
//! [`Negations`] choice rather than a second list.

/// Cuts `text` to at most `max` characters (not bytes), marking a cut
/// with an ellipsis: how anything quoted into a prompt or a summary is
/// kept to its budget.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// `text` cut to at most `max` bytes, at a character boundary (as it is
/// when it fits): the one byte budget cut — a reply, a tool's output, what
/// the embedder reads.
pub fn cut_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Normalises `text`: lowercase; typographic apostrophes straightened and
/// kept inside words (`what's`, `l'ora`); every other punctuation mark
/// becomes a space; whitespace runs collapse to one space, trimmed.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let c = match c {
            '\u{2019}' | '\u{2018}' | '\u{02bc}' | '`' | '\u{00b4}' => '\'',
            c => c,
        };
        let keep = if c == '\'' {
            // An apostrophe joins two letters (what's, l'ora); elsewhere it
            // is a quote mark.
            let prev = i.checked_sub(1).and_then(|j| chars.get(j)).is_some_and(|p| p.is_alphanumeric());
            let next = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
            prev && next
        } else {
            c.is_alphanumeric()
        };
        if keep {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase());
        } else {
            pending_space = true;
        }
    }
    out
}

/// The words of a normalised text.
pub fn words(normalized: &str) -> impl Iterator<Item = &str> {
    normalized.split(' ').filter(|w| !w.is_empty())
}

/// Phrases that say *now* at the end of a request, EN + IT: when it is
/// asked, never part of the value said before them ("how warm is it in the
/// conservatory right now" asks about the conservatory, not a "conservatory
/// right"). Whole phrases: "right" alone may end a value ("the right
/// speaker").
const NOW_PHRASES: &[&[&str]] = &[
    &["right", "now"],
    &["just", "now"],
    &["now"],
    &["at", "the", "moment"],
    &["currently"],
    &["adesso"],
    &["al", "momento"],
    &["in", "questo", "momento"],
];

/// How many of the last of `words` (normalised) say *now*
/// ("right now", "at the moment", "al momento", …: the longest that ends
/// them); 0 when none does.
pub fn says_now_at_end<S: AsRef<str>>(words: &[S]) -> usize {
    NOW_PHRASES
        .iter()
        .filter(|p| {
            p.len() <= words.len() && words[words.len() - p.len()..].iter().zip(p.iter()).all(|(w, x)| w.as_ref() == *x)
        })
        .map(|p| p.len())
        .max()
        .unwrap_or(0)
}

/// `value` as `raw` writes it when `raw` joins it, or a word beside it,
/// with a hyphen, or writes an apostrophe at its words' edges: "lo-fi
/// beats" for the value "fi beats" or "lo fi beats" taken from "play some
/// lo-fi beats"; "mo' arriva zi' peppe" for "mo arriva zi peppe", "'a
/// pasta è pronta" for "a pasta è pronta". Normalising drops hyphens and
/// such apostrophes (elisions, a plural's possessive), and half of a
/// hyphenated word can read as grammar ("lo" is an Italian article) and
/// be trimmed from a value; the user said one word. `None` when `raw`
/// does not hold the value's words in order, or holds them with neither
/// at or around them: the value stands as it is.
pub fn as_written_in(raw: &str, value: &str) -> Option<String> {
    let want = normalize(value);
    let want: Vec<&str> = words(&want).collect();
    let apostrophe = |c: char| matches!(c, '\'' | '\u{2019}' | '\u{2018}');
    if want.is_empty() || !raw.contains(|c: char| c == '-' || apostrophe(c)) {
        return None;
    }
    // The words of `raw` as `normalize` reads them, with their byte spans.
    let chars: Vec<(usize, char)> = raw.char_indices().collect();
    let mut spans: Vec<(usize, usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, &(at, c)) in chars.iter().enumerate() {
        let joins = c == '\''
            && i > 0
            && chars[i - 1].1.is_alphanumeric()
            && chars.get(i + 1).is_some_and(|n| n.1.is_alphanumeric());
        if c.is_alphanumeric() || joins {
            let (_, w) = current.get_or_insert_with(|| (at, String::new()));
            w.extend(c.to_lowercase());
        } else if let Some((start, w)) = current.take() {
            spans.push((start, at, w));
        }
    }
    if let Some((start, w)) = current.take() {
        spans.push((start, raw.len(), w));
    }
    let i = (0..spans.len()).find(|&i| {
        i + want.len() <= spans.len() && spans[i..i + want.len()].iter().zip(&want).all(|(s, w)| s.2 == *w)
    })?;
    let (mut first, mut last) = (i, i + want.len() - 1);
    let hyphen = |a: usize, b: usize| raw[spans[a].1..spans[b].0] == *"-";
    while first > 0 && hyphen(first - 1, first) {
        first -= 1;
    }
    while last + 1 < spans.len() && hyphen(last, last + 1) {
        last += 1;
    }
    let said = &raw[spans[first].0..spans[last].1];
    if said.contains('-') {
        return Some(said.to_lowercase());
    }
    // An apostrophe at the first word's start ("'a pasta") or the last
    // word's end ("zi'"), with those inside, when nothing but words,
    // spaces and apostrophes is said.
    let mut start = spans[first].0;
    if let Some(c) = raw[..start].chars().next_back().filter(|c| apostrophe(*c)) {
        let before = raw[..start - c.len_utf8()].chars().next_back();
        if before.is_none_or(char::is_whitespace) {
            start -= c.len_utf8();
        }
    }
    let mut end = spans[last].1;
    if let Some(c) = raw[end..].chars().next().filter(|c| apostrophe(*c)) {
        let after = raw[end + c.len_utf8()..].chars().next();
        if after.is_none_or(|a| !a.is_alphanumeric()) {
            end += c.len_utf8();
        }
    }
    let said = &raw[start..end];
    let plain = said.chars().all(|c| c.is_alphanumeric() || c.is_whitespace() || apostrophe(c));
    let straight: String = said.chars().map(|c| if apostrophe(c) { '\'' } else { c }).collect();
    (plain && straight.to_lowercase() != want.join(" ")).then(|| straight.to_lowercase())
}

/// Whether negation words are stop words for a caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Negations {
    /// Negations carry meaning (the replay gate): not stop words.
    Keep,
    /// Negations are noise (topics): stop words like the others.
    Drop,
}

/// Whether `word` (normalised) is a negation: "not", "don't", "non",
/// "mai", any "…n't", ….
pub fn is_negation(word: &str) -> bool {
    NEGATIONS.contains(&word) || word.ends_with("n't")
}

/// Whether `word` (normalised) says nothing on its own: an article, a
/// pronoun, an auxiliary, a courtesy, a filler verb — and, with
/// [`Negations::Drop`], a negation.
pub fn is_stop_word(word: &str, negations: Negations) -> bool {
    STOP_WORDS_EN.binary_search(&word).is_ok()
        || STOP_WORDS_IT.binary_search(&word).is_ok()
        || (negations == Negations::Drop && is_negation(word))
}

/// EN + IT negations.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "dont", "doesn't", "doesnt", "didn't", "isn't", "aren't", "won't", "can't",
    "cannot", "without", "nothing", "none", "non", "mai", "nessun", "nessuno", "nessuna", "niente", "nulla", "senza",
];

/// English stop words, sorted (looked up by binary search). Number words
/// other than "one" are not here: "two minutes" and "five minutes" must
/// stay different requests to the replay gate.
#[rustfmt::skip]
const STOP_WORDS_EN: &[&str] = &[
    "a", "about", "actually", "again", "all", "also", "always", "am", "an", "and", "any", "are",
    "at", "be", "been", "being", "but", "by", "call", "can", "could", "did", "do", "does", "doing",
    "done", "each", "er", "erm", "for", "from", "get", "give", "gonna", "got", "gotta", "had",
    "has", "have", "he", "her", "here", "hey", "him", "his", "hmm", "how", "i", "i'm", "in", "into",
    "is", "it", "it's", "its", "just", "kindly", "know", "let", "let's", "like", "live", "love",
    "make", "may", "maybe", "me", "mine", "more", "most", "much", "my", "myself", "name", "need",
    "new", "now", "of", "oh", "ok", "okay", "on", "one", "only", "or", "our", "out", "over", "page",
    "please", "prefer", "put", "quick", "quickly", "real", "say", "see", "shall", "she", "should",
    "show", "so", "some", "such", "switch", "tell", "than", "thank", "thanks", "that", "the",
    "their", "them", "then", "there", "these", "they", "thing", "things", "think", "this", "those",
    "to", "today", "too", "turn", "uh", "uhm", "um", "umm", "up", "us", "use", "very", "wanna",
    "want", "was", "way", "we", "well", "were", "what", "what's", "whats", "when", "where", "which",
    "while", "who", "will", "with", "would", "yes", "you", "your",
];

/// Italian stop words, sorted (looked up by binary search).
#[rustfmt::skip]
const STOP_WORDS_IT: &[&str] = &[
    "abbiamo", "abito", "adesso", "agli", "ai", "al", "alla", "alle", "allo", "allora", "anche",
    "ancora", "ascolta", "attimo", "avere", "beh", "boh", "c'è", "che", "chi", "chiamami", "chiamo",
    "ci", "cioè", "come", "con", "cos'è", "cosa", "da", "dai", "dal", "dalla", "dammi", "degli",
    "dei", "del", "della", "delle", "dello", "di", "dimmi", "dove", "e", "ecco", "ed", "eh", "ehi",
    "ehm", "essere", "fai", "fammi", "fare", "favore", "fra", "gentilmente", "gli", "grazie", "ha",
    "hai", "ho", "il", "insomma", "la", "le", "lo", "ma", "magari", "mi", "mia", "mie", "miei",
    "mio", "mo", "molto", "nei", "nel", "nella", "nelle", "o", "oggi", "ok", "okay", "ora",
    "pagina", "per", "perché", "piacciono", "piace", "più", "po", "poi", "potresti", "preferisco",
    "proprio", "puoi", "pure", "quale", "quali", "quando", "quanta", "quante", "quanti", "quanto",
    "quella", "quelli", "quello", "questa", "queste", "questi", "questo", "sei", "sempre", "senti",
    "si", "siamo", "sono", "su", "sua", "subito", "sul", "sulla", "suo", "ti", "tipo", "tra", "tua",
    "tuo", "tutta", "tutte", "tutti", "tutto", "un", "una", "uno", "vabbè", "veloce", "velocemente",
    "vi", "vivo", "voglio", "vorrei", "è",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A value keeps the apostrophes its words have at their edges in the
    /// request ("mo'", "zi'", "'a" were lost to normalising: home G's
    /// Neapolitan messages were wrong calls); a value with none, or not
    /// the request's words, is left as it is.
    #[test]
    fn a_value_keeps_the_apostrophes_the_user_wrote() {
        let raw = "avvisa tutti che mo' arriva zi' peppe";
        assert_eq!(as_written_in(raw, "mo arriva zi peppe").as_deref(), Some("mo' arriva zi' peppe"));
        let raw = "dì a tutti ca \u{2019}a pasta è pronta!";
        assert_eq!(as_written_in(raw, "a pasta è pronta").as_deref(), Some("'a pasta è pronta"));
        assert_eq!(as_written_in("holler at everybody that supper's ready", "supper's ready"), None);
        assert_eq!(as_written_in("tell everyone dinner's ready, come down", "dinner's ready come down"), None);
        assert_eq!(as_written_in("turn on the kitchen light", "kitchen"), None);
    }

    #[test]
    fn a_value_keeps_the_hyphens_the_user_wrote() {
        let raw = "play some lo-fi beats in the home gym";
        assert_eq!(as_written_in(raw, "fi beats").as_deref(), Some("lo-fi beats"));
        assert_eq!(as_written_in(raw, "lo fi beats").as_deref(), Some("lo-fi beats"));
        assert_eq!(as_written_in("metti un po' di hip-hop", "hip").as_deref(), Some("hip-hop"));
        // No hyphen there, or the words not said in order: as it is.
        assert_eq!(as_written_in(raw, "home gym"), None);
        assert_eq!(as_written_in(raw, "beats lo"), None);
        assert_eq!(as_written_in("turn on the kitchen light", "kitchen"), None);
    }

    #[test]
    fn now_at_the_end_is_the_longest_phrase_that_says_it() {
        assert_eq!(says_now_at_end(&["conservatory", "right", "now"]), 2);
        assert_eq!(says_now_at_end(&["salotto", "in", "questo", "momento"]), 3);
        assert_eq!(says_now_at_end(&["the", "right"]), 0, "'right' alone may be a value's");
        assert_eq!(says_now_at_end::<&str>(&[]), 0);
    }

    #[test]
    fn cut_bytes_keeps_characters_whole() {
        assert_eq!(cut_bytes("città", 4), "citt");
        assert_eq!(cut_bytes("città", 5), "citt", "à is two bytes: not cut in half");
        assert_eq!(cut_bytes("città", 6), "città");
        assert_eq!(cut_bytes("ab", 100), "ab");
    }

    #[test]
    fn truncate_cuts_on_characters() {
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hé", 2), "hé");
    }

    #[test]
    fn stop_word_lists_are_sorted_normalised_and_disjoint_from_negations() {
        for list in [STOP_WORDS_EN, STOP_WORDS_IT] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates: binary search needs it");
            for w in list {
                assert_eq!(normalize(w), *w, "{w:?} is not in normalised form");
                assert!(!is_negation(w), "{w:?} is a negation: it belongs in NEGATIONS");
            }
        }
    }

    #[test]
    fn negations_are_stop_words_only_when_dropped() {
        assert!(is_stop_word("the", Negations::Keep) && is_stop_word("della", Negations::Keep));
        assert!(!is_stop_word("light", Negations::Drop));
        for w in ["not", "non", "mai", "shouldn't"] {
            assert!(is_negation(w), "{w}");
            assert!(!is_stop_word(w, Negations::Keep), "{w}");
            assert!(is_stop_word(w, Negations::Drop), "{w}");
        }
        assert!(!is_stop_word("two", Negations::Drop), "number words are content");
    }

    #[test]
    fn rules() {
        assert_eq!(normalize("  What’s the TIME?!  "), "what's the time");
        assert_eq!(normalize("Che ore sono?"), "che ore sono");
        assert_eq!(normalize("Dimmi l’ora, per favore."), "dimmi l'ora per favore");
        assert_eq!(normalize("'quoted' words"), "quoted words");
        assert_eq!(normalize("che ora è"), "che ora è");
        assert_eq!(normalize("a\t\nb"), "a b");
        assert_eq!(normalize("...!!!"), "");
    }
}
