//! Rule 4 of the argument filler: a number for a number property — the
//! one in the property's unit, the one beside a word of its name (a figure
//! or a number word), else the first left. Separate: units and counts are
//! their own reading of the request.

use serde_json::Value;

use super::{overlaps, same_stem, Said, Taken, Tok};
use crate::fast_path::extract::SlotKind;
use crate::tool_words::split_name;

/// Number words, for a count said in words beside what it counts ("two
/// bedrooms", "tre biglietti").
pub(super) const NUMBER_WORDS: &[(&str, i64)] = &[
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("uno", 1),
    ("una", 1),
    ("due", 2),
    ("tre", 3),
    ("quattro", 4),
    ("cinque", 5),
    ("sei", 6),
    ("sette", 7),
    ("otto", 8),
    ("nove", 9),
    ("dieci", 10),
];

/// Prepositions a level is brought to by (EN + IT): "up to 21", "a 21",
/// "al 40".
const TO: &[&str] = &["to", "a", "al", "alla", "allo", "ai", "alle"];

/// Words of a parameter's name that say nothing of what it counts.
const COUNT_WORDS: &[&str] = &["number", "num", "of", "count", "total", "the", "n", "in", "no", "amount", "max", "min"];

/// Rule 4: a number for a number property — the one beside a word of the
/// property's name ("2 bedrooms" for `number_of_beds`; "two bedrooms" too),
/// else the first number no property took; an integer property takes only
/// whole numbers.
pub(super) fn take_number(name: &str, said: &Said<'_>, integer: bool, taken: &mut Taken) -> Option<Value> {
    let (ex, toks) = (&said.ex, &said.toks[..]);
    let mine = said.units.iter().find(|(n, _)| n == name).map(|(_, u)| *u);
    // A number said with a unit another property is in, or another unit
    // than this one's, is not this one's ("eight minutes" is no `hours`,
    // "3 minutes" no temperature); one said with this one's unit is.
    let others = |u: Option<&'static str>| {
        u.is_some_and(|u| Some(u) != mine && (mine.is_some() || said.units.iter().any(|(_, v)| *v == u)))
    };
    if let Some(unit) = mine {
        let at = ex.slots.iter().enumerate().position(|(i, s)| {
            s.kind == SlotKind::Number && !taken.slots.contains(&i) && slot_unit(&ex.text, toks, s.span) == Some(unit)
        });
        if let Some(i) = at {
            // "two and a half minutes" is no whole number of minutes: no
            // value, rather than 2.
            let fraction = ex.slots[i].value.as_f64().is_some_and(|f| f.fract() != 0.0);
            if integer && fraction {
                return None;
            }
            taken.slots.push(i);
            return Some(as_kind(&ex.slots[i].value, integer));
        }
    }
    let counted: Vec<String> = split_name(name).into_iter().filter(|w| !COUNT_WORDS.contains(&w.as_str())).collect();
    let names_it = |t: Option<&Tok>| t.is_some_and(|t| counted.iter().any(|w| same_stem(w, &t.word)));
    let whole = |v: &Value| !integer || v.as_f64().is_some_and(|f| f.fract() == 0.0);
    // Beside a word of its name: a figure, then a number word.
    for (i, s) in ex.slots.iter().enumerate() {
        if s.kind != SlotKind::Number || taken.slots.contains(&i) || !whole(&s.value) {
            continue;
        }
        if others(slot_unit(&ex.text, toks, s.span)) {
            continue;
        }
        let at = toks.iter().position(|t| overlaps((t.start, t.end), s.span));
        let bound = at.and_then(|k| hyphen_tail(&toks[k]));
        if bound.is_some_and(|w| counted.iter().any(|c| same_stem(c, w)))
            || (bound.is_none()
                && at.is_some_and(|k| names_it(toks.get(k + 1)) || (k > 0 && names_it(toks.get(k - 1)))))
        {
            taken.slots.push(i);
            return Some(as_kind(&s.value, integer));
        }
    }
    for (k, t) in toks.iter().enumerate() {
        // "two bedrooms", or one word: "two-bedroom".
        let (head, tail) = t.word.split_once('-').unwrap_or((&t.word, ""));
        if let Some((_, n)) = NUMBER_WORDS.iter().find(|(w, _)| *w == head) {
            let named = match tail {
                "" => names_it(toks.get(k + 1)),
                tail => counted.iter().any(|w| same_stem(w, tail)),
            };
            if named {
                return Some(Value::from(*n));
            }
        }
    }
    // A figure bound to what it counts is no other count ("a 3-star hotel"
    // books no 3 rooms), unless that is a unit ("a 10-minute timer").
    let bound_elsewhere = |span: (usize, usize)| {
        toks.iter()
            .find(|t| overlaps((t.start, t.end), span))
            .and_then(hyphen_tail)
            .is_some_and(|w| unit_of(w).is_none())
    };
    // Nor is a figure inside a quote ("my speaker called 'JBL Flip 4'").
    let quoted = |span: (usize, usize)| said.quotes.iter().any(|q| overlaps((q.0, q.1), span));
    // Nor is a level the figure is brought to, said without a unit, a
    // length of time ("turn the heat up to 21" boosts for no 21 minutes).
    let duration = matches!(mine, Some("minute" | "hour" | "second"));
    let brought_to = |span: (usize, usize)| {
        let at = toks.iter().position(|t| overlaps((t.start, t.end), span));
        duration && at.and_then(|k| k.checked_sub(1)).is_some_and(|k| TO.contains(&toks[k].word.as_str()))
    };
    let (i, slot) = ex.slots.iter().enumerate().find(|(i, s)| {
        s.kind == SlotKind::Number
            && !taken.slots.contains(i)
            && whole(&s.value)
            && !others(slot_unit(&ex.text, toks, s.span))
            && !bound_elsewhere(s.span)
            && !quoted(s.span)
            && !brought_to(s.span)
    })?;
    taken.slots.push(i);
    Some(as_kind(&slot.value, integer))
}

/// Rule 4 for a string enum of figures (`["1", "2", "3", "dontcare"]`):
/// the count said as rule 4 reads it, when the enum has it — "book two
/// rooms" in a 3-star hotel is `"2"`.
pub(super) fn take_counted_enum(name: &str, spec: &Value, said: &Said<'_>, taken: &mut Taken) -> Option<Value> {
    let values = spec.get("enum")?.as_array()?;
    let figures: Vec<&str> =
        values.iter().filter_map(Value::as_str).filter(|v| v.chars().all(|c| c.is_ascii_digit())).collect();
    if figures.len() < 2 {
        return None;
    }
    taken.tried(|trial| {
        let n = take_number(name, said, true, trial)?.as_i64()?.to_string();
        figures.contains(&n.as_str()).then_some(Value::String(n))
    })
}

/// Rule 4's codes: a number property whose description says what its
/// values stand for ("such as 1 for Bangkok, 2 for Chiang Mai", "3 for
/// massage", "0 means immediate closure") takes the value of the thing the
/// request names — every word of it, by stem, the longest of those named.
/// The words it stood for are no name for another property.
pub(super) fn described_code(spec: &Value, said: &Said<'_>, taken: &mut Taken) -> Option<Value> {
    static CODE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let code = CODE.get_or_init(|| {
        regex::Regex::new(
            r"(-?\d+)\s+(?:for|means|is|=)\s+(?:an?\s+|the\s+)?([A-Za-z][A-Za-z' ]*?)\s*(?:[,.;:)]|\band\b|\bor\b|$)",
        )
        .expect("code rule compiles")
    });
    let description = super::description_of(spec);
    let words: Vec<&str> = said.toks.iter().map(|t| t.word.as_str()).collect();
    let (n, label) = code
        .captures_iter(description)
        .filter_map(|c| {
            let label: Vec<String> = super::words_of(&c[2]);
            let named = !label.is_empty() && label.iter().all(|l| words.iter().any(|w| same_stem(l, w) || w == l));
            named.then(|| (c[1].parse::<i64>().ok(), label))
        })
        .max_by_key(|(_, label)| label.len())?;
    let n = n?;
    taken.words.extend(label);
    Some(Value::from(n))
}

/// The unit a word names, EN + IT: minutes, hours, seconds, percent,
/// degrees, kelvin — what a number said before it counts.
pub(super) fn unit_of(word: &str) -> Option<&'static str> {
    Some(match word {
        "minute" | "minutes" | "min" | "mins" | "minuto" | "minuti" => "minute",
        "hour" | "hours" | "ora" | "ore" => "hour",
        "second" | "seconds" | "sec" | "secs" | "secondo" | "secondi" => "second",
        "percent" | "percentage" | "percento" | "pct" => "percent",
        "degree" | "degrees" | "grado" | "gradi" => "degree",
        "kelvin" => "kelvin",
        _ => return None,
    })
}

/// The unit said right after the number at `span`: a unit word, "per
/// cento", or `%` — past a word that says the amount is added ("three
/// more minutes", "5 extra minutes").
fn slot_unit(text: &str, toks: &[Tok], span: (usize, usize)) -> Option<&'static str> {
    if text[span.1..].trim_start().starts_with('%') {
        return Some("percent");
    }
    let mut last = toks.iter().rposition(|t| overlaps((t.start, t.end), span))?;
    if let Some(unit) = hyphen_tail(&toks[last]).and_then(unit_of) {
        return Some(unit);
    }
    if toks.get(last + 1).is_some_and(|t| matches!(t.word.as_str(), "more" | "extra" | "additional" | "further")) {
        last += 1;
    }
    let next = toks.get(last + 1)?;
    if next.word == "per" && toks.get(last + 2).is_some_and(|t| t.word == "cento") {
        return Some("percent");
    }
    unit_of(&next.word)
}

/// The word a figure is hyphened to, in one token: "bedroom" of
/// "2-bedroom", "star" of "3-star".
fn hyphen_tail(t: &Tok) -> Option<&str> {
    let (head, tail) = t.word.split_once('-')?;
    (head.chars().all(|c| c.is_ascii_digit() || c == '.') && tail.chars().all(char::is_alphabetic) && !tail.is_empty())
        .then_some(tail)
}

fn as_kind(v: &Value, integer: bool) -> Value {
    match (integer, v.as_f64()) {
        (true, Some(f)) => Value::from(f as i64),
        _ => v.clone(),
    }
}
