//! A tool's arguments from a request, by the tool's JSON schema — what the
//! offline planner fills a call with when no model writes it.
//!
//! Each property of the schema (`properties`, by name) takes at most one
//! value, and each value of the request goes to at most one property. The
//! rules, first that applies:
//!
//! 1. **A slot of its name or format.** `path`, `url`, `email`, `date`,
//!    `window`, `ext`, `number` by name; `format: "date"`, `"email"`,
//!    `"uri"` by format — from the deterministic extractor
//!    ([`extract`](mod@crate::fast_path::extract)).
//! 2. **An enum value the request names.** `{"enum": ["celsius",
//!    "fahrenheit"]}` takes the first value the request says as a whole
//!    word, any case ("in fahrenheit").
//! 3. **A number**, for `type: number` or `integer`: the first number of
//!    the request no earlier property took ("a timer for 10 minutes" → 10);
//!    an integer property takes only whole numbers.
//! 4. **A quoted string**, for `type: string`: the first text in quotes
//!    ("…", '…', «…», “…”) no earlier property took.
//! 5. **A proper noun, for a place- or name-like string.** A string
//!    property whose name or description speaks of a place or a person
//!    (city, location, town, country, place, where, name, person, contact,
//!    recipient, who — schemas are written in English) takes the first
//!    capitalised word run that does not open the sentence ("is it snowing
//!    in Innsbruck" → "Innsbruck"; "piove a Bologna" → "Bologna"); a
//!    request in lower case (a voice transcript) gives the words after its
//!    last preposition (in, at, to, for, a, di, da, per, su: "weather in
//!    new york" → "new york"), three at most.
//!
//! What it cannot fill is left out, and [`Filled::missing`] names the
//! `required` properties among them: the caller asks the user for them in
//! one line rather than call the tool without them.

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::ToolArgs;
use serde_json::Value;

use crate::fast_path::extract::{extract, SlotKind};

/// The arguments filled, and the required ones that could not be.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filled {
    /// The arguments.
    pub args: ToolArgs,
    /// Required properties left without a value, by name.
    pub missing: Vec<String>,
}

/// Words of a property's name or description that make it place-like or
/// name-like (rule 5).
const PLACE_OR_NAME: &[&str] = &[
    "city",
    "cities",
    "location",
    "town",
    "country",
    "place",
    "where",
    "region",
    "destination",
    "name",
    "person",
    "contact",
    "recipient",
    "who",
];

/// Prepositions before a place or a name in a lower-case request (rule 5),
/// EN + IT.
const PREPOSITIONS: &[&str] = &["in", "at", "to", "for", "near", "a", "di", "da", "per", "su", "con", "al", "ad"];

/// Fills the arguments of a tool with parameters `schema` from `request`,
/// said at `now` (module docs).
pub fn fill(schema: &Value, request: &str, now: DateTime<FixedOffset>) -> Filled {
    let ex = extract(request, now);
    let mut out = Filled::default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return out };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut used_slots: Vec<usize> = Vec::new();
    let mut quoted = quoted_strings(request).into_iter();
    // Rules 1–4 first, for every property: the values the request marks
    // (slots, enum words, numbers, quotes) go where they belong before a
    // proper noun is guessed for what is left.
    let mut taken_words: Vec<String> = Vec::new();
    let mut left: Vec<(&String, &Value)> = Vec::new();
    for (name, spec) in properties {
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let value = slot_for(name, spec)
            .and_then(|k| take_slot(&ex, k, &mut used_slots))
            .or_else(|| enum_named(spec, request))
            .or_else(|| match kind {
                "number" | "integer" => take_number(&ex, kind == "integer", &mut used_slots),
                _ => None,
            })
            .or_else(|| (kind == "string").then(|| quoted.next().map(Value::String)).flatten());
        match value {
            Some(v) => {
                if let Some(s) = v.as_str() {
                    taken_words.extend(words_of(s));
                }
                out.args.0.insert(name.clone(), v);
            }
            None => left.push((name, spec)),
        }
    }
    // Rule 5, for the place- and name-like strings left.
    let mut nouns =
        noun_candidates(request).into_iter().filter(|n| !words_of(n).iter().all(|w| taken_words.contains(w)));
    for (name, spec) in left {
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
        match (kind == "string" && place_or_name(name, spec)).then(|| nouns.next()).flatten() {
            Some(v) => {
                out.args.0.insert(name.clone(), Value::String(v));
            }
            None if required.contains(&name.as_str()) => out.missing.push(name.clone()),
            None => {}
        }
    }
    out.missing.sort_unstable();
    out
}

/// Rule 1: the slot kind a property names, by its name or its format.
fn slot_for(name: &str, spec: &Value) -> Option<SlotKind> {
    SlotKind::from_name(name).or_else(|| match spec.get("format").and_then(Value::as_str) {
        Some("date") => Some(SlotKind::Date),
        Some("email") => Some(SlotKind::Email),
        Some("uri" | "url") => Some(SlotKind::Url),
        _ => None,
    })
}

/// The first slot of `kind` no property took yet.
fn take_slot(ex: &crate::fast_path::Extracted, kind: SlotKind, used: &mut Vec<usize>) -> Option<Value> {
    let (i, slot) = ex.slots.iter().enumerate().find(|(i, s)| s.kind == kind && !used.contains(i))?;
    used.push(i);
    Some(slot.value.clone())
}

/// Rule 3: the first number no property took (whole numbers only for an
/// integer).
fn take_number(ex: &crate::fast_path::Extracted, integer: bool, used: &mut Vec<usize>) -> Option<Value> {
    let (i, slot) = ex.slots.iter().enumerate().find(|(i, s)| {
        s.kind == SlotKind::Number
            && !used.contains(i)
            && (!integer || s.value.as_f64().is_some_and(|f| f.fract() == 0.0))
    })?;
    used.push(i);
    let v = &slot.value;
    Some(match (integer, v.as_f64()) {
        (true, Some(f)) => Value::from(f as i64),
        _ => v.clone(),
    })
}

/// Rule 2: the first value of the property's enum the request names as a
/// whole word (or words), any case.
fn enum_named(spec: &Value, request: &str) -> Option<Value> {
    let lower = format!(" {} ", words_of(request).join(" "));
    spec.get("enum")?.as_array()?.iter().find_map(|v| {
        let s = v.as_str()?;
        let w = words_of(s).join(" ");
        (!w.is_empty() && lower.contains(&format!(" {w} "))).then(|| v.clone())
    })
}

/// Lower-case words, letters and digits only.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether a string property holds a place or a name (rule 5).
fn place_or_name(name: &str, spec: &Value) -> bool {
    let description = spec.get("description").and_then(Value::as_str).unwrap_or("");
    words_of(&format!("{} {description}", name.replace('_', " "))).iter().any(|w| PLACE_OR_NAME.contains(&w.as_str()))
}

/// Texts in quotes, in order.
fn quoted_strings(text: &str) -> Vec<String> {
    let pairs = [('"', '"'), ('\'', '\''), ('«', '»'), ('“', '”'), ('‘', '’')];
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // An apostrophe inside a word ("what's", "l'ombrello") opens nothing.
        let in_word = i > 0 && chars[i - 1].is_alphanumeric();
        if let Some((_, close)) = pairs.iter().find(|(open, _)| *open == c).filter(|_| !in_word) {
            if let Some(end) = chars[i + 1..].iter().position(|d| d == close) {
                let inner: String = chars[i + 1..i + 1 + end].iter().collect();
                if !inner.trim().is_empty() {
                    out.push(inner.trim().to_owned());
                }
                i += end + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// `text` without its proper nouns (rule 5's capitalised runs): what a
/// request asks, whichever place or person it names — "what's the weather
/// in Innsbruck" compared with a tool's description as "what's the weather
/// in", so that a name the model hardly knows does not pull it away.
pub fn without_proper_nouns(text: &str) -> String {
    let nouns = noun_candidates(text);
    if nouns.is_empty() || !text.chars().any(char::is_uppercase) {
        return text.to_owned();
    }
    let mut out = text.to_owned();
    for n in nouns {
        out = out.replacen(&n, " ", 1);
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Rule 5's candidates: capitalised word runs that do not open the
/// sentence; else (a request in lower case) the words after its last
/// preposition, three at most.
fn noun_candidates(text: &str) -> Vec<String> {
    let mut out: Vec<String> =
        crate::fast_path::extract::proper_nouns(text).into_iter().map(|(s, e)| text[s..e].to_owned()).collect();
    if out.is_empty() && !text.chars().any(char::is_uppercase) {
        let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
        let words: Vec<&str> = text.split_whitespace().collect();
        let lower: Vec<String> = words.iter().map(|w| clean(w).to_lowercase()).collect();
        if let Some(p) = lower.iter().rposition(|w| PREPOSITIONS.contains(&w.as_str())) {
            let tail: Vec<&String> = lower[p + 1..].iter().filter(|w| !w.is_empty()).take(3).collect();
            if !tail.is_empty() && p + 1 + tail.len() == lower.len() {
                out.push(tail.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-11-26T10:00:00+01:00").unwrap()
    }

    fn weather() -> Value {
        json!({"type": "object", "properties": {
            "city": {"type": "string", "description": "the city"},
            "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }, "required": ["city"]})
    }

    #[test]
    fn a_place_is_the_proper_noun_or_what_follows_the_last_preposition() {
        for (request, city) in [
            ("is it snowing in Innsbruck", "Innsbruck"),
            ("should I bring a raincoat to Glasgow tomorrow?", "Glasgow"),
            ("Piove a Bologna stasera?", "Bologna"),
            ("what's the weather in New York, please", "New York"),
            ("weather in new york", "new york"),
        ] {
            let f = fill(&weather(), request, now());
            assert_eq!(f.args.0.get("city"), Some(&json!(city)), "{request}");
            assert!(f.missing.is_empty(), "{request}");
        }
        let f = fill(&weather(), "how cold is it, in fahrenheit?", now());
        assert_eq!(f.args.0.get("units"), Some(&json!("fahrenheit")));
        assert_eq!(f.missing, ["city"], "no place named: asked for, not guessed");
    }

    #[test]
    fn numbers_quotes_slots_and_enums_each_go_to_one_property() {
        let timer = json!({"type": "object", "properties": {
            "minutes": {"type": "integer"},
            "label": {"type": "string"},
            "date": {"type": "string"},
            "sound": {"type": "string", "enum": ["bell", "chime", "soft beep"]}
        }, "required": ["minutes", "label"]});
        let f = fill(&timer, "set a timer for 10 minutes called 'pasta' tomorrow with the soft beep", now());
        assert_eq!(f.args.0.get("minutes"), Some(&json!(10)));
        assert_eq!(f.args.0.get("label"), Some(&json!("pasta")));
        assert_eq!(f.args.0.get("date"), Some(&json!("2026-11-27")));
        assert_eq!(f.args.0.get("sound"), Some(&json!("soft beep")));
        let f = fill(&timer, "set a timer", now());
        assert_eq!(f.missing, ["label", "minutes"]);
    }

    #[test]
    fn an_apostrophe_in_a_word_is_no_quote() {
        assert!(quoted_strings("what's the weather at Luca's place").is_empty());
        assert_eq!(quoted_strings("serve l'ombrello? chiamalo «Mario»"), ["Mario"]);
    }
}
