//! Numbers said in words, English and Italian: "five minutes", "twenty two
//! degrees", "cinque minuti", "ventidue gradi", "ventidue virgola cinque".
//!
//! A voice transcript spells numbers out as often as it writes digits, and
//! a model passes `{"minutes": 5}` either way; the extractor
//! ([`mod@super::extract`]) reads both as one kind of value, so a learnt
//! request's number is a slot whichever way it was said. A closed class of
//! grammar, like the digits: units, teens, tens, hundreds, and a decimal
//! part after "point" / "virgola".
//!
//! Words that are also something else are numbers only before a unit
//! ("one minute", "sei gradi", not "the one in the kitchen", "dove sei"):
//! English "one", Italian "un", "uno", "una" (articles) and "sei" (*you
//! are*).

/// English units and teens, by value.
const EN_SMALL: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];

/// English tens, from twenty.
const EN_TENS: &[&str] = &["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

/// Italian units and teens, by value.
const IT_SMALL: &[&str] = &[
    "zero",
    "uno",
    "due",
    "tre",
    "quattro",
    "cinque",
    "sei",
    "sette",
    "otto",
    "nove",
    "dieci",
    "undici",
    "dodici",
    "tredici",
    "quattordici",
    "quindici",
    "sedici",
    "diciassette",
    "diciotto",
    "diciannove",
];

/// Italian tens, from twenty.
const IT_TENS: &[&str] = &["venti", "trenta", "quaranta", "cinquanta", "sessanta", "settanta", "ottanta", "novanta"];

/// Words a number is read before when it is ambiguous alone.
const UNITS: &[&str] = &[
    "second",
    "seconds",
    "minute",
    "minutes",
    "hour",
    "hours",
    "day",
    "days",
    "week",
    "weeks",
    "degree",
    "degrees",
    "percent",
    "per",
    "secondo",
    "secondi",
    "minuto",
    "minuti",
    "ora",
    "ore",
    "giorno",
    "giorni",
    "settimana",
    "settimane",
    "grado",
    "gradi",
    "%",
];

/// Number words that are numbers only before a unit.
const AMBIGUOUS: &[&str] = &["one", "un", "uno", "una", "sei"];

/// Whether a number is said at word `i` of `words` (normalised): in
/// digits ("30") or in words ("trenta", "twenty two").
pub fn said_at(words: &[&str], i: usize) -> bool {
    words.get(i).is_some_and(|w| w.parse::<f64>().is_ok()) || parse_at(words, i).is_some()
}

/// [`parse`] at word `i` of `words`: `None` for "cento" after "per" —
/// "per cento" is Italian's *percent*, a unit, not a hundred.
pub fn parse_at(words: &[&str], i: usize) -> Option<(f64, usize)> {
    if words.get(i) == Some(&"cento") && i > 0 && words[i - 1] == "per" {
        return None;
    }
    parse(&words[i..])
}

/// One word's value below a thousand, English (`twenty`, `seven`) or
/// Italian glued (`ventidue`, `centotrenta`, `duecento`), or `None`.
fn word_value(w: &str) -> Option<u32> {
    if let Some(i) = EN_SMALL.iter().position(|x| *x == w) {
        return Some(i as u32);
    }
    if let Some(i) = EN_TENS.iter().position(|x| *x == w) {
        return Some(20 + 10 * i as u32);
    }
    if matches!(w, "un" | "una") {
        return Some(1);
    }
    italian(w)
}

/// An Italian number word below a thousand, glued as Italian writes it.
fn italian(w: &str) -> Option<u32> {
    if w.is_empty() {
        return None;
    }
    if let Some(i) = IT_SMALL.iter().position(|x| *x == w) {
        return Some(i as u32);
    }
    if w == "tré" {
        return Some(3);
    }
    // Hundreds: "cento…", "duecento…", "trecento…".
    if let Some(at) = w.find("cento") {
        let head = &w[..at];
        let hundreds = match head {
            "" => 1,
            h => IT_SMALL.iter().position(|x| *x == h).filter(|n| (2..10).contains(n))? as u32,
        };
        let rest = &w[at + "cento".len()..];
        let tail = if rest.is_empty() { 0 } else { italian_below_hundred(rest)? };
        return Some(hundreds * 100 + tail);
    }
    italian_below_hundred(w)
}

/// "ventidue", "trentotto", "quarantuno", "venti", "tre", "ventitré".
fn italian_below_hundred(w: &str) -> Option<u32> {
    if let Some(i) = IT_SMALL.iter().position(|x| *x == w) {
        return Some(i as u32);
    }
    for (i, ten) in IT_TENS.iter().enumerate() {
        let value = 20 + 10 * i as u32;
        if w == *ten {
            return Some(value);
        }
        // The tens' last vowel drops before "uno" and "otto" (ventuno,
        // ventotto).
        let stem = &ten[..ten.len() - 1];
        let Some(rest) = w.strip_prefix(ten).or_else(|| w.strip_prefix(stem)) else { continue };
        let unit = match rest {
            "tre" | "tré" => 3,
            "uno" | "un" => 1,
            r => IT_SMALL.iter().position(|x| *x == r).filter(|n| (1..10).contains(n))? as u32,
        };
        return Some(value + unit);
    }
    None
}

/// A number said in words at the start of `words` (lower case): its value
/// and how many words it took, or `None`. `words` are the request's words
/// from here on, so a unit after an ambiguous word can be seen.
pub fn parse(words: &[&str]) -> Option<(f64, usize)> {
    let first = *words.first()?;
    let (mut value, mut used) = (word_value(first)?, 1usize);
    if AMBIGUOUS.contains(&first) && !words.get(1).is_some_and(|w| UNITS.contains(w)) {
        return None;
    }
    // English compounds: "twenty two", "twenty-two" (split already), "two
    // hundred (and) fifty".
    let next = |i: usize| words.get(i).copied();
    if EN_TENS.contains(&first) {
        if let Some(u) = next(1).and_then(|w| EN_SMALL.iter().position(|x| *x == w)).filter(|u| (1..10).contains(u)) {
            value += u as u32;
            used = 2;
        }
    }
    if value < 10 && next(used) == Some("hundred") {
        value = value.max(1) * 100;
        used += 1;
        let mut at = used;
        if next(at) == Some("and") {
            at += 1;
        }
        if let Some((rest, n)) = next(at).and_then(|_| parse_below_hundred_en(&words[at..])) {
            value += rest;
            used = at + n;
        }
    }
    let mut number = f64::from(value);
    // A decimal part: "point five", "virgola cinque".
    if matches!(next(used), Some("point" | "virgola")) {
        if let Some(d) = next(used + 1).and_then(word_value).filter(|d| *d < 10) {
            number += f64::from(d) / 10.0;
            used += 2;
        }
    }
    let half = half_after(&words[used..]);
    if half > 0 {
        number += 0.5;
        used += half;
    }
    Some((number, used))
}

/// How many of the first of `words` say *and a half* after a number
/// ("and a half", "e mezzo", "e mezza"): 0 when they do not. "Ventidue e
/// mezzo" is 22.5 — read as 22 with words left over, it was a wrong value
/// served.
pub fn half_after<S: AsRef<str>>(words: &[S]) -> usize {
    let w = |i: usize| words.get(i).map(|w| w.as_ref());
    match (w(0), w(1), w(2)) {
        (Some("and"), Some("a"), Some("half")) => 3,
        (Some("e"), Some("mezzo" | "mezza"), _) => 2,
        _ => 0,
    }
}

fn parse_below_hundred_en(words: &[&str]) -> Option<(u32, usize)> {
    let first = *words.first()?;
    if let Some(i) = EN_SMALL.iter().position(|x| *x == first) {
        return Some((i as u32, 1));
    }
    let t = EN_TENS.iter().position(|x| *x == first)?;
    let mut v = 20 + 10 * t as u32;
    let mut n = 1;
    if let Some(u) = words.get(1).and_then(|w| EN_SMALL.iter().position(|x| x == w)).filter(|u| (1..10).contains(u)) {
        v += u as u32;
        n = 2;
    }
    Some((v, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Option<(f64, usize)> {
        let words: Vec<&str> = text.split(' ').collect();
        parse(&words)
    }

    #[test]
    fn english_units_teens_tens_and_compounds() {
        assert_eq!(p("five minutes"), Some((5.0, 1)));
        assert_eq!(p("fifteen"), Some((15.0, 1)));
        assert_eq!(p("twenty two degrees"), Some((22.0, 2)));
        assert_eq!(p("forty"), Some((40.0, 1)));
        assert_eq!(p("two hundred and fifty"), Some((250.0, 4)));
        assert_eq!(p("a hundred"), None, "'a' is no number word");
        assert_eq!(p("twenty one point five"), Some((21.5, 4)));
    }

    #[test]
    fn italian_glued_words() {
        assert_eq!(p("cinque minuti"), Some((5.0, 1)));
        assert_eq!(p("ventidue gradi"), Some((22.0, 1)));
        assert_eq!(p("ventuno"), Some((21.0, 1)));
        assert_eq!(p("trentotto"), Some((38.0, 1)));
        assert_eq!(p("ventitré"), Some((23.0, 1)));
        assert_eq!(p("novanta"), Some((90.0, 1)));
        assert_eq!(p("cento"), Some((100.0, 1)));
        assert_eq!(p("duecentocinquanta"), Some((250.0, 1)));
        assert_eq!(p("ventidue virgola cinque"), Some((22.5, 3)));
        assert_eq!(p("ventidue e mezzo in studio"), Some((22.5, 3)));
        assert_eq!(p("twenty one and a half degrees"), Some((21.5, 5)));
        assert_eq!(p("ventidue e tre"), Some((22.0, 1)), "'e' alone joins two values");
    }

    #[test]
    fn ambiguous_words_are_numbers_only_before_a_unit() {
        assert_eq!(p("one minute"), Some((1.0, 1)));
        assert_eq!(p("the one"), None);
        assert_eq!(p("one"), None);
        assert_eq!(p("sei gradi"), Some((6.0, 1)));
        assert_eq!(p("sei sicuro"), None);
        assert_eq!(p("un minuto"), Some((1.0, 1)));
        assert_eq!(p("un timer"), None);
        assert_eq!(p("tre"), Some((3.0, 1)));
        assert_eq!(p("otto"), Some((8.0, 1)));
        assert_eq!(p("ottobre"), None);
        assert_eq!(p("venticinque"), Some((25.0, 1)));
        assert_eq!(p("settembre"), None);
    }
}
