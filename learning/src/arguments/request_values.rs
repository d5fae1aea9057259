//! What the offline planner asks of a request's values besides filling
//! arguments: whether a call's value is one of two the request joins (its
//! rule 13), and the request without its proper nouns or quoted values, as
//! it is compared with the tools' texts. Separate: none of it fills an
//! argument.

use engram_events::payloads::ToolArgs;
use serde_json::Value;

use super::proper_nouns::{PLACE_PREPOSITIONS, PREPOSITIONS};
use super::quoted_strings;
use crate::fast_path::slots::is_conjunction;

/// Whether `request` names, just before a text value of `args`, another
/// joined to it by a conjunction ("the kitchen **and the** office lights",
/// "in cucina **e in** bagno") — or, after a place's value, another place
/// (`joined_after`: "in the pantry and the laundry room"): the value is
/// one of two, and a call that says one drops the other — the planner
/// abstains rather than make it.
/// A value that holds the conjunction itself ("salt and pepper") is one;
/// so is one joined to another parameter's name ("'admin' as username and
/// 'secret' as the password").
pub fn one_of_two(args: &ToolArgs, request: &str) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_owned).collect()
    };
    let said = words(request);
    let mut texts = Vec::new();
    for v in args.0.values() {
        match v {
            Value::String(s) => texts.push(s.as_str()),
            Value::Array(a) => texts.extend(a.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    let values: Vec<Vec<String>> = texts.into_iter().map(words).filter(|v| !v.is_empty()).collect();
    let in_a_value = |w: &String| values.iter().any(|v| v.contains(w));
    // A parameter's name before the conjunction joins two values of two
    // parameters ("'admin' as username and 'secret' as the password").
    let names: Vec<String> = args.0.keys().flat_map(|k| crate::tool_words::split_name(k)).collect();
    let grammar = |w: &&String| crate::fast_path::slots::is_determiner(w);
    values.iter().filter(|v| v.len() <= said.len()).any(|value| {
        (0..=said.len() - value.len()).filter(|&i| said[i..i + value.len()] == value[..]).any(|i| {
            // Back over at most two articles or prepositions to the word
            // that joins this value to what is before it, and what that
            // is: a value the call says too ("the light and the fan",
            // both domains) drops nothing.
            let back: Vec<&String> = said[..i].iter().rev().skip_while(grammar).collect();
            let joined = back.first().is_some_and(|w| is_conjunction(w));
            let other = back.iter().skip(1).find(|w| !grammar(w));
            let before = i - back.len() <= 2 && joined && other.is_some_and(|w| !in_a_value(w) && !names.contains(w));
            let placed = said[..i]
                .iter()
                .rev()
                .find(|w| !crate::fast_path::slots::is_determiner(w) || PLACE_PREPOSITIONS.contains(&w.as_str()));
            let placed = placed.is_some_and(|w| PLACE_PREPOSITIONS.contains(&w.as_str()));
            before || (placed && joined_after(&said[i + value.len()..], &in_a_value, &names))
        })
    })
}

/// Whether `rest`, the words after a place's value, opens with a
/// conjunction, then an article or a preposition, that join another place
/// to it ("in the pantry **and the laundry room**", "in cucina **e in**
/// bagno"): a word no value of the call holds, that names no parameter
/// and no action — "… and turn on the fan" is a second request, not a
/// second value; "… and I'm", "… and acted by …" join no place.
fn joined_after(rest: &[String], in_a_value: &dyn Fn(&String) -> bool, names: &[String]) -> bool {
    let grammar = |w: &&String| crate::fast_path::slots::is_determiner(w);
    let [first, article, after @ ..] = rest else { return false };
    let other = after.iter().take(2).find(|w| !grammar(w));
    is_conjunction(first)
        // ("I'm" splits as "i m": the pronoun, not the Italian article.)
        && grammar(&article)
        && article != "i"
        && other.is_some_and(|w| {
            !in_a_value(w)
                && !names.contains(w)
                && !crate::fast_path::gate::is_verb(w)
                && !crate::text::is_stop_word(w, crate::text::Negations::Drop)
        })
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

/// `text` without its proper nouns and quoted strings: the words the
/// user asks with, not the values they pass ("book a table at New Delhi
/// Palace" names no "new" thing to create).
pub fn without_values(text: &str) -> String {
    let mut out = without_proper_nouns(text);
    for q in quoted_strings(&out) {
        out = out.replacen(&q, " ", 1);
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
