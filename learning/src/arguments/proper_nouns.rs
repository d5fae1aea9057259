//! Rule 7 of the argument filler: proper nouns for places and names — the
//! words that cue one, the ends of a trip, performers, a place's region, a
//! lower-case request's place. Separate: it chooses among the request's
//! capitalised runs for the strings the earlier rules left, a reading of
//! its own.

use serde_json::Value;

use super::{property_words, same_stem, Tok};
use crate::tool_words::split_name;

/// Words of a property's name or description that make it place-like
/// (rule 7) — schemas are written in English.
const PLACE: &[&str] =
    &["city", "cities", "location", "town", "country", "place", "where", "region", "destination", "area", "address"];

/// Words of a property's name or description that make it name-like (rule
/// 7).
const PLACE_OR_NAME: &[&str] = &["name", "person", "contact", "recipient", "who"];

/// Prepositions before a place or a name in a lower-case request (rule 5),
/// EN + IT.
pub(super) const PREPOSITIONS: &[&str] =
    &["in", "at", "to", "for", "near", "a", "di", "da", "per", "su", "con", "al", "ad"];

/// Rule 7: the proper noun a string property's name is said right before
/// ("directed by Gurinder Chadha" for `directed_by`), after ("the
/// Isolation album") or as its last word ("Hang Dong District" for
/// `district_name`), by index — and, in the last case, the noun without
/// that word.
pub(super) fn cued_noun(nouns: &[Noun], used: &[usize], name: &str, spec: &Value) -> Option<(usize, Option<String>)> {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "string" || spec.get("enum").is_some() {
        return None;
    }
    let words = split_name(name);
    let kinds = kind_words(name);
    let free = |i: &usize| !used.contains(i);
    // (Not a place's word: "Foster City" is the city's name.)
    let kind_last = (0..nouns.len()).filter(free).find_map(|i| {
        let (head, last) = nouns[i].text.rsplit_once(' ')?;
        let last = last.to_lowercase();
        (kinds.contains(&last) && !PLACE.contains(&last.as_str())).then(|| (i, Some(head.to_owned())))
    });
    if kind_last.is_some() {
        return kind_last;
    }
    nouns
        .iter()
        .position(|n| {
            // The word right before, or the one before a joining word.
            let cue = match n.cue.first().map(String::as_str) {
                Some("by" | "of" | "as" | "is" | "named" | "called") => &n.cue[..],
                _ => &n.cue[..n.cue.len().min(1)],
            };
            cue.iter().any(|c| words.iter().any(|w| same_stem(w, c) && (w.len() > 2 || c == w)))
                || n.cue.first().is_some_and(|c| direction_cued(c, &words))
                || performer_cued(n, &words)
                || creator_cued(n, &words)
                || n.after.first().is_some_and(|a| kinds.contains(a))
                || said_as(n, &words)
        })
        .filter(free)
        .map(|i| (i, None))
}

/// The words a property's name calls its kind of thing, which a proper
/// noun may be said with ("album" of `album`; "district" and, joined,
/// "subdistrict" of `sub_district_name`) — not the general ones (`name`,
/// `id`), nor a verb's forms ("directed" of `directed_by`: "Tom Hanks
/// directed by …" is no director).
pub(super) fn kind_words(name: &str) -> Vec<String> {
    let noun = |w: &String| w.len() > 2 && !GENERIC.contains(&w.as_str()) && !w.ends_with("ed") && !w.ends_with("ing");
    let mut words: Vec<String> = split_name(name).into_iter().filter(noun).collect();
    if words.len() > 1 {
        words.push(words.concat());
    }
    words
}

/// Rule 7's directions: a preposition of motion right before a proper noun
/// cues the property named for that end of the trip, whatever its name
/// says of it — "from JFK to LAX" is `origin_airport` JFK and
/// `destination_airport` LAX, "da Milano a Roma" `from_city` and `to_city`.
/// (Where both are proper nouns, word order alone would give the first to
/// whichever property comes first.)
fn direction_cued(cue: &str, name_words: &[String]) -> bool {
    const FROM: (&[&str], &[&str]) = (&["from", "da", "dal", "dalla", "dallo", "dall"], &["from", "origin", "source"]);
    const TO: (&[&str], &[&str]) =
        (&["to", "into", "a", "al", "alla", "allo", "verso"], &["to", "destination", "dest"]);
    // A date or time is no end of a trip ("from March 9th").
    let when = name_words.iter().any(|w| matches!(w.as_str(), "date" | "time" | "day" | "hour"));
    !when
        && [FROM, TO]
            .iter()
            .any(|(cues, names)| cues.contains(&cue) && name_words.iter().any(|w| names.contains(&w.as_str())))
}

/// Words of a property's name too general to cue the noun they follow
/// ("Isolation album" cues `album`; "Jo name" cues nothing).
const GENERIC: &[&str] = &["name", "names", "id", "type", "of", "the", "value", "new"];

/// Rule 7's roles said after a name: "Riley Stearns as the director" for
/// `directed_by` — a word of the property's name, or one that shares all
/// but its ending with it, after "as" and an article.
fn said_as(noun: &Noun, name_words: &[String]) -> bool {
    let role = match noun.after.as_slice() {
        [r#as, article, role, ..] if r#as == "as" && matches!(article.as_str(), "the" | "a" | "an") => role,
        [r#as, role, ..] if r#as == "as" => role,
        _ => return false,
    };
    name_words.iter().any(|w| w.len() > 2 && (w == role || super::akin(w, role)))
}

/// Rule 7's makers: a property for who made a work (`artist`, `author`,
/// `band`) is cued by "by" before the name — "songs by Tove Lo", "Roar by
/// Katy Perry" — which never spells the property's name.
fn creator_cued(noun: &Noun, name_words: &[String]) -> bool {
    const NAMES: &[&str] =
        &["artist", "artists", "author", "authors", "band", "singer", "composer", "writer", "creator", "musician"];
    noun.cue.first().is_some_and(|c| c == "by") && name_words.iter().any(|w| NAMES.contains(&w.as_str()))
}

/// Rule 7's performers: a property for who plays in a film or show
/// (`cast`, `starring`, `actors`) is cued by the words people say of one
/// — "featuring", "starring", "acted by", "with" before the name, "in the
/// cast" or "as an actor" after it — which never spell the property's
/// name.
fn performer_cued(noun: &Noun, name_words: &[String]) -> bool {
    const NAMES: &[&str] =
        &["cast", "actor", "actors", "actress", "starring", "star", "stars", "performer", "performers"];
    const BEFORE: &[&str] = &[
        "featuring",
        "features",
        "feature",
        "starring",
        "stars",
        "starred",
        "with",
        "acted",
        "actor",
        "actress",
        "con",
        "interpretato",
        "protagonista",
    ];
    const AFTER: &[&[&str]] =
        &[&["in", "the", "cast"], &["as", "an", "actor"], &["as", "a", "actor"], &["as", "actor"], &["starring"]];
    if !name_words.iter().any(|w| NAMES.contains(&w.as_str())) {
        return false;
    }
    let before = match noun.cue.first().map(String::as_str) {
        Some("by") => noun.cue.get(1),
        _ => noun.cue.first(),
    };
    before.is_some_and(|w| BEFORE.contains(&w.as_str()))
        || AFTER.iter().any(|a| noun.after.len() >= a.len() && noun.after.iter().zip(a.iter()).all(|(w, a)| w == a))
}

/// Rule 7: the next proper noun no property took — for a place, the first
/// after a preposition of place; with its region when `region`
/// ([`keeps_region`]).
pub(super) fn next_noun(nouns: &[Noun], used: &mut Vec<usize>, place: bool, region: bool) -> Option<String> {
    let free = |i: &usize| !used.contains(i);
    let pick = (0..nouns.len())
        .filter(free)
        .find(|i| place && nouns[*i].after_place_preposition)
        .or_else(|| (0..nouns.len()).find(free))?;
    used.push(pick);
    Some(nouns[pick].with_region(region))
}

/// Words of a property's name or description that make it hold a code
/// written in capitals (rule 7): a stock's ticker, an airport's or a
/// currency's code.
const CODE: &[&str] = &["ticker", "symbol", "code", "abbreviation", "acronym", "iata", "icao"];

/// Rule 7's codes: for a property that holds one ([`CODE`]), the next
/// proper noun no property took that is a code as written — one word of
/// two to six capitals or digits, a capital first ("AAPL", "LAX") — so a
/// ticker left over beside its exchange is the ticker. Not for an enum,
/// whose values are its own.
pub(super) fn next_code(nouns: &[Noun], used: &mut Vec<usize>, name: &str, spec: &Value) -> Option<String> {
    let open = spec.get("type").and_then(Value::as_str) == Some("string") && spec.get("enum").is_none();
    if !open || !property_words(name, spec).iter().any(|w| CODE.contains(&w.as_str())) {
        return None;
    }
    let code = |t: &str| {
        (2..=6).contains(&t.len())
            && t.starts_with(|c: char| c.is_ascii_uppercase())
            && t.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    };
    let i = (0..nouns.len()).find(|i| !used.contains(i) && code(&nouns[*i].text))?;
    used.push(i);
    Some(nouns[i].text.clone())
}

/// Whether a string property holds a place or a name (rule 7).
pub(super) fn place_or_name(name: &str, spec: &Value) -> bool {
    property_words(name, spec).iter().any(|w| PLACE_OR_NAME.contains(&w.as_str()) || PLACE.contains(&w.as_str()))
}

/// Whether a string property holds a place (rule 7): its name or
/// description names one.
pub(super) fn place_like(name: &str, spec: &Value) -> bool {
    property_words(name, spec).iter().any(|w| PLACE.contains(&w.as_str()))
}

/// Whether a place property keeps the region said after its city
/// ("Riga, Latvia"): when its description asks for one ("'City, State'",
/// an example with a region, [`crate::places::PlaceFormat`]) or says
/// nothing of the place's form — not for "the name of the city" or "in
/// the format of 'City'", which take the city alone.
pub(super) fn keeps_region(name: &str, spec: &Value) -> bool {
    // (The format is read as written: "'Austin, TX'" is a state's example.)
    let description = super::description_of(spec);
    let lower = description.to_lowercase();
    let city_alone =
        lower.contains("name of the city") || lower.contains("format of 'city'") || lower.contains("format 'city'");
    place_like(name, spec) && (!city_alone || crate::places::PlaceFormat::of(description).is_some())
}

/// Whether a property's name says it holds a place (`location`,
/// `where_to`; rule 5) — its name, not its description: a `host`
/// described as an "IP address" takes a quoted URL wherever it stands.
pub(super) fn place_named(name: &str) -> bool {
    split_name(name).iter().any(|w| PLACE.contains(&w.as_str()))
}

/// Prepositions before a place (rules 5 and 7), EN + IT.
pub(super) const PLACE_PREPOSITIONS: &[&str] =
    &["in", "at", "near", "from", "to", "a", "da", "di", "per", "su", "nel", "nella", "vicino"];

/// A proper noun of the request and what stands before it.
pub(super) struct Noun {
    pub(super) text: String,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Up to two words before it, articles skipped ("directed by").
    cue: Vec<String>,
    /// Up to three words after it ("in the cast").
    after: Vec<String>,
    /// Whether a preposition of place stands right before it.
    after_place_preposition: bool,
    /// The run after a comma that says its region ("Riga, Latvia",
    /// "Portland, OR").
    region: Option<String>,
}

impl Noun {
    /// As a value: a place with its region ("San Diego, CA").
    pub(super) fn with_region(&self, place: bool) -> String {
        match (&self.region, place) {
            (Some(r), true) => format!("{}, {r}", self.text),
            _ => self.text.clone(),
        }
    }
}

/// A month or a weekday alone ("from March", "next Friday"): capitalised,
/// and no place or name — what it says is a date, rule 1's.
pub(super) fn calendar_word(noun: &str) -> bool {
    noun.parse::<chrono::Month>().is_ok() || noun.parse::<chrono::Weekday>().is_ok()
}

/// Rule 7's proper nouns, each with the words before it; a run after a
/// comma that follows another is that one's region, not a noun of its own.
pub(super) fn noun_runs(text: &str, toks: &[Tok], kinds: &[String]) -> Vec<Noun> {
    let runs = crate::fast_path::extract::proper_nouns(text);
    let mut out: Vec<Noun> = Vec::new();
    let mut skip = false;
    for (k, &(s, e)) in runs.iter().enumerate() {
        if std::mem::take(&mut skip) {
            continue;
        }
        // A verb of the gate's, capitalised alone, is no name: it opens a
        // clause ("Hi, Find me attractions in the SF area", "from the
        // Isolation album, Find a selection").
        if crate::fast_path::gate::is_action(&text[s..e].to_lowercase()) {
            continue;
        }
        // ("Chiang Mai, Hang Dong District" names two places: a run that
        // ends in a property's kind word is a noun of its own.)
        let of_a_kind = |r: &str| r.rsplit(' ').next().is_some_and(|w| kinds.contains(&w.to_lowercase()));
        let region = runs
            .get(k + 1)
            .filter(|(s2, e2)| text[e..*s2].trim() == "," && !of_a_kind(&text[*s2..*e2]))
            .map(|(s2, e2)| text[*s2..*e2].to_owned());
        skip = region.is_some();
        let before: Vec<&Tok> = toks
            .iter()
            .filter(|t| t.end <= s)
            .rev()
            .filter(|t| !matches!(t.word.as_str(), "the" | "a" | "an"))
            .take(2)
            .collect();
        let prev = toks.iter().rfind(|t| t.end <= s);
        out.push(Noun {
            text: text[s..e].to_owned(),
            start: s,
            end: e,
            cue: before.iter().map(|t| t.word.clone()).collect(),
            after: toks.iter().filter(|t| t.start >= e).take(3).map(|t| t.word.clone()).collect(),
            after_place_preposition: prev.is_some_and(|t| PLACE_PREPOSITIONS.contains(&t.word.as_str())),
            region,
        });
    }
    out
}

/// A lower-case request's place (a voice transcript): the words after its
/// last preposition, three at most, when they end it.
pub(super) fn lower_case_place(text: &str) -> Option<String> {
    if text.chars().any(char::is_uppercase) {
        return None;
    }
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    let mut lower: Vec<String> = text.split_whitespace().map(|w| clean(w).to_lowercase()).collect();
    // Courtesies at the end are no part of the place ("in bergen please",
    // "a bergen per favore", "thank you").
    loop {
        let n = lower.len();
        let last = lower.last().cloned().unwrap_or_default();
        if n > 0 && (last.is_empty() || crate::spoken::COURTESIES.contains(&last.as_str())) {
            lower.pop();
            if last == "favore" && lower.last().is_some_and(|p| p == "per") {
                lower.pop();
            }
        } else if last == "you" && n >= 2 && lower[n - 2] == "thank" {
            lower.truncate(n - 2);
        } else {
            break;
        }
    }
    let p = lower.iter().rposition(|w| PREPOSITIONS.contains(&w.as_str()))?;
    // Its article is no part of it ("for the cornbread"), as a value is
    // passed without one.
    let article = lower.get(p + 1).is_some_and(|w| crate::fast_path::slots::is_determiner(w));
    let from = p + 1 + usize::from(article && lower.len() > p + 2);
    let tail: Vec<&String> = lower[from..].iter().filter(|w| !w.is_empty()).take(3).collect();
    (!tail.is_empty() && from + tail.len() == lower.len())
        .then(|| tail.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The place a lower-case request ends with, without its article: a
    /// value is passed without one ("set a timer for the cornbread" was
    /// `"the cornbread"`).
    #[test]
    fn a_lower_case_place_leaves_its_article() {
        assert_eq!(lower_case_place("set a timer for the cornbread").as_deref(), Some("cornbread"));
        assert_eq!(lower_case_place("what's the weather in bergen please").as_deref(), Some("bergen"));
        assert_eq!(lower_case_place("play it in the").as_deref(), Some("the"));
    }
}
