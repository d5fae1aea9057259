//! Rule 2 of the argument filler: a value named by its parameter ("port
//! number 5432", "the 'main' database", "'admin_user' as username").
//! Separate: it reads the request around where a parameter's name is
//! said, which no other rule does.

use serde_json::Value;

use super::numbers::NUMBER_WORDS;
use super::{overlaps, same_stem, Said, Taken, Tok};
use crate::fast_path::extract::SlotKind;
use crate::tool_words::split_name;

/// Words that join a parameter's name to its value ("port number 5432",
/// "nickname 'PrimaryDB'", "username is ada", "set to 22", "component
/// UUID AB1010CD"), EN.
const LINKS: &[&str] = &[
    "as",
    "is",
    "of",
    "to",
    "be",
    "called",
    "named",
    "the",
    "a",
    "an",
    "with",
    "equal",
    "equals",
    "number",
    "value",
    "at",
    "=",
    ":",
    "id",
    "uuid",
    "identifier",
];

/// Rule 2: a value the request names by its parameter — the parameter's
/// name said as words and followed by the value (a quote within three
/// words, else the next word that is not a joining one: a number for a
/// number, a code- or name-like word for a string), or a quote followed by
/// "as" and the name ("'admin_user' as username").
pub(super) fn named_value(said: &Said<'_>, name: &str, kind: &str, taken: &mut Taken) -> Option<Value> {
    if !matches!(kind, "string" | "number" | "integer") {
        return None;
    }
    let (text, toks, ex) = (said.ex.text.as_str(), &said.toks, &said.ex);
    for (first, end) in name_said(toks, &split_name(name)) {
        if kind == "string" {
            if let Some(q) = quote_by_name(said, first, end, taken) {
                return Some(q);
            }
        }
        let next = toks[end + 1..].iter().take(3).find(|t| !LINKS.contains(&t.word.as_str()))?;
        // Within its clause: "by that artist? Additionally, …" names none.
        if text[toks[end].end..next.start].contains([',', '.', ';', '?', '!']) {
            continue;
        }
        let quoted = said.quotes.iter().any(|q| overlaps((q.0, q.1), (next.start, next.end)));
        if quoted && !NUMBER_WORDS.iter().any(|(w, _)| *w == next.word) {
            continue;
        }
        match kind {
            "number" | "integer" => {
                if let Some((_, n)) = NUMBER_WORDS.iter().find(|(w, _)| *w == next.word) {
                    return Some(Value::from(*n));
                }
                let (i, slot) = ex.slots.iter().enumerate().find(|(i, s)| {
                    s.kind == SlotKind::Number && !taken.slots.contains(i) && overlaps(s.span, (next.start, next.end))
                })?;
                if kind == "integer" && slot.value.as_f64().is_some_and(|f| f.fract() != 0.0) {
                    return None;
                }
                taken.slots.push(i);
                return Some(slot.value.clone());
            }
            _ => {
                let raw = &text[next.start..next.end];
                // After "called" or "named", any word is the name
                // ("database called inventory").
                let called = toks[end + 1..]
                    .iter()
                    .take_while(|t| t.start < next.start)
                    .any(|t| matches!(t.word.as_str(), "called" | "named"));
                // ("I'm" is no name: "the interface type I'm after".)
                let pronoun = raw == "I" || raw.starts_with("I'");
                let code = raw.chars().any(|c| c.is_ascii_digit() || "-_./@:".contains(c))
                    || (raw.chars().next().is_some_and(char::is_uppercase) && !pronoun)
                    || called;
                // A number is an id here ("user id 1234"), and so is a
                // capitalised code ("ID U123"); other values (a path, a
                // date) go by their own rule.
                let other = ex.slots.iter().any(|s| {
                    !matches!(s.kind, SlotKind::Number | SlotKind::ProperName)
                        && overlaps(s.span, (next.start, next.end))
                });
                // Free text called so is the rest of its clause ("the
                // command called start calc").
                if called && super::free_text_like(name) {
                    let rest = &text[next.start..];
                    let end = rest.find([',', ';', '?', '!']).unwrap_or(rest.len());
                    let clause = rest[..end].trim().trim_end_matches('.').trim();
                    return Some(Value::String(clause.to_owned()));
                }
                if code && !other {
                    // A name is all its words from here ("directed by
                    // Quentin Tarantino"; "ID U123" is no name of U123's).
                    let mut value = raw;
                    for (i, s) in ex.slots.iter().enumerate() {
                        if overlaps(s.span, (next.start, next.end)) {
                            taken.slots.push(i);
                            if s.kind == SlotKind::ProperName {
                                value = &text[next.start..s.span.1.max(next.end)];
                            }
                        }
                    }
                    return Some(Value::String(value.to_owned()));
                }
            }
        }
    }
    None
}

/// Rule 2 before the others, for each property of `ordered`: a value the
/// request names by its parameter is that one's, whichever property would
/// take it first ("the nickname 'PrimaryDB'" is no database's quote).
/// Days, times, slots and enums go by their own rules.
pub(super) fn named_first(ordered: &[(&String, &Value)], said: &Said<'_>, taken: &mut Taken) -> Vec<Option<Value>> {
    ordered
        .iter()
        .map(|(name, spec)| {
            let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
            let plain = spec.get("enum").is_none()
                && super::slots::slot_for(name, spec).is_none()
                && !super::slots::moment_like(name, spec);
            plain.then(|| named_value(said, name, kind, taken)).flatten()
        })
        .collect()
}

/// Where a parameter's name (its `words`) is said, as token ranges: all
/// its words in a row, or its last word alone when that is specific (four
/// letters or more) or a code follows it ("id 1234").
fn name_said(toks: &[Tok], words: &[String]) -> Vec<(usize, usize)> {
    let Some(last) = words.last() else { return Vec::new() };
    if words.iter().map(String::len).sum::<usize>() < 3 {
        return Vec::new();
    }
    let n = words.len();
    let mut ends: Vec<(usize, usize)> = Vec::new();
    for i in 0..toks.len() {
        let whole = i + n <= toks.len()
            && (0..n).all(|k| {
                toks[i + k].word == words[k]
                    || (k == n - 1 && words[k].len() >= 4 && same_stem(&toks[i + k].word, &words[k]))
            });
        if whole {
            ends.push((i, i + n - 1));
        } else if n > 1 && toks[i].word == *last {
            let code = toks[i + 1..].iter().find(|t| !LINKS.contains(&t.word.as_str()));
            if last.len() >= 4 || code.is_some_and(|t| t.word.chars().any(|c| c.is_ascii_digit())) {
                ends.push((i, i));
            }
        }
    }
    ends
}

/// Rule 2's quotes: one right before the name said at tokens
/// `first..=end` ("the 'main' database", "'admin_user' as username"),
/// else one within three words after it, in the same clause ("nickname
/// 'PrimaryDB'").
fn quote_by_name(said: &Said<'_>, first: usize, end: usize, taken: &mut Taken) -> Option<Value> {
    let (text, toks, quotes) = (said.ex.text.as_str(), &said.toks, &said.quotes);
    let (before, after) = (toks[first].start, toks[end].end);
    let right_before = (0..quotes.len()).find(|q| {
        let between = text[quotes[*q].1.min(before)..before].trim();
        !taken.quotes.contains(q) && quotes[*q].1 <= before && (between.is_empty() || between == "as")
    });
    let within = toks.get(end + 3).map_or(text.len(), |t| t.end);
    let right_after = (0..quotes.len()).find(|q| {
        !taken.quotes.contains(q)
            && quotes[*q].0 >= after
            && quotes[*q].0 <= within
            && !text[after..quotes[*q].0].contains([',', '.', ';'])
    });
    let q = right_before.or(right_after)?;
    taken.quotes.push(q);
    Some(Value::String(quotes[q].2.clone()))
}
