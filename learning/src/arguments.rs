//! A tool's arguments from a request, by the tool's JSON schema — what the
//! offline planner fills a call with when no model writes it.
//!
//! Each property of the schema (`properties`, by name) takes at most one
//! value, and each value of the request goes to at most one property; the
//! required properties choose first. Every rule reads only what the
//! request says — no value is invented, a default is left to the tool. The
//! rules, first that applies:
//!
//! 1. **A slot of its name or format.** `path`, `url`, `email`, `date`,
//!    `window`, `ext`, `number` by name; `format: "date"`, `"email"`,
//!    `"uri"` by format — from the deterministic extractor
//!    ([`extract`](mod@crate::fast_path::extract)). A string whose name
//!    has the word `date` (`show_date`) or whose description asks for
//!    a day's format takes a day said in full ("May 15, 2023", "the 8th of
//!    March 2023", `2023-5-2`, `2023.10.1`, `05/15/2023` — month first
//!    with slashes unless the first number cannot be a month, day first
//!    with dots or dashes —, "15 maggio"; without a year, the next day's
//!    year when a later one says it — "from April 3rd to April 5th 2023"
//!    —, else an earlier one's, else a year said alone, else the current
//!    one) before a relative one ("tomorrow"), written as the description
//!    asks (`YYYY-MM-DD` unless it says `MM/DD/YYYY`, `DD/MM/YYYY` or
//!    `DD-MM-YYYY`); the
//!    property that ends a span (`end_date`, `return_date`) takes its last
//!    day, the others its first; the numbers of a day are no counts. A
//!    string named for a `time` (`journey_start_time`, not `timeout`) or
//!    described as `HH:MM` takes a time of day said ("9am", "4:30 in the
//!    afternoon", "alle 3 del pomeriggio": `"16:30"`,
//!    [`crate::time_of_day`]), whose numbers are then no counts either.
//! 2. **A value named by its parameter.** The property's name said as
//!    words (`botVersion` → "bot version", or its last word alone when
//!    that is specific or a code follows: "id 1234") and followed by its
//!    value, past joining words ("port number 5432", "nickname
//!    'PrimaryDB'", "component AB1010CD"): a quote in the same clause, a
//!    number (or a number word) for a number, a code- or name-like word
//!    for a string; or a quote right before the name ("the 'main'
//!    database", "'admin_user' as username").
//! 3. **An enum value the request names.** `{"enum": ["celsius",
//!    "fahrenheit"]}` takes the first value the request says as a whole
//!    word, any case ("in fahrenheit"); else a one-word value of four
//!    letters or more that a word of the request has as its stem ("a
//!    musical show" → `Music`).
//!    A colour property (`color`, a string without an enum) takes the
//!    colour the request names, as said ([`crate::colours`]).
//! 4. **A number**, for `type: number` or `integer`: the one beside a word
//!    of the property's name ("2 bedrooms", "two-bedroom" for
//!    `number_of_beds`; a closed class of number words, EN + IT), else the
//!    first number of the request no earlier property took ("a timer for
//!    10 minutes" → 10); an integer property takes only whole numbers. A
//!    number goes to the property in the unit said after it, past "more"
//!    or "extra" ("three more minutes" is `minutes`); a duration said
//!    without a figure is read as minutes ("half an hour", "un quarto
//!    d'ora", "an hour and a half": 30, 15, 90).
//! 5. **A quoted string**, for `type: string` without an enum: the first
//!    text in quotes ("…", '…', «…», “…”) no earlier property took.
//! 6. **A boolean the request names**: a word of the property's name
//!    that says what it is about (not `is`, `has`, `include`, …: "hidden"
//!    of `include_hidden`) is in the request, or a part of a hyphenated
//!    word of it ("in-unit") — `false` when a negation stands up to four
//!    words before it ("no need for a garage"), else `true`; a string
//!    enum of `True` and `False` is a boolean too, in its own spelling.
//! 7. **A proper noun.** A string property the words before a proper noun
//!    name ("directed by Gurinder Chadha" for `directed_by`, "from Austin"
//!    for `from_city`) takes it, and so does one named for an end of a
//!    trip the preposition before it says ("from JFK" for `origin_airport`,
//!    "to LAX" for `destination_airport`, "da"/"a" in Italian), and one
//!    for who plays in a film (`cast`, `starring`) a name said as a
//!    performer ("featuring Christopher Lee", "with Danny John-Jules in
//!    the cast", "acted by Ronald Young"); a month or
//!    a weekday alone is no proper noun ("from March"); else one whose
//!    name or description speaks of a place or a person (city, location,
//!    area, country, name, contact, … — schemas are written in English)
//!    takes the first
//!    capitalised word run that does not open the sentence, a place the
//!    first after a preposition of place ("the Avengers movie in Los
//!    Angeles" → `location: "Los Angeles"`). A place keeps the region its
//!    request gives after a comma ("Riga, Latvia", "Austin, TX"). A request
//!    in lower case (a voice transcript) gives the words after its last
//!    preposition (in, at, to, for, a, di, da, per, su: "weather in new
//!    york" → "new york"), three at most.
//! 8. **Free text**, for a string named as what to search for or say
//!    (query, search, text, message, content, prompt, …): the words after
//!    the request's last colon or semicolon ("search the web; where is
//!    beijing").
//!
//! 9. **A place in the form its parameter asks for**: "Boston" for a
//!    location described as "'City, State', such as 'Berkeley, CA'" is
//!    `"Boston, MA"` — by the installed gazetteer ([`crate::places`]),
//!    after the rules above chose the value.
//!
//! What it cannot fill is left out, and [`Filled::missing`] names the
//! `required` properties among them: the caller asks the user for them in
//! one line rather than call the tool without them.

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::ToolArgs;
use serde_json::Value;

use crate::fast_path::extract::{durations_in_minutes, extract, SlotKind};
use crate::tool_words::split_name;

/// The arguments filled, and the required ones that could not be.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filled {
    /// The arguments.
    pub args: ToolArgs,
    /// Required properties left without a value, by name.
    pub missing: Vec<String>,
}

/// Words of a property's name or description that make it place-like
/// (rule 7) — schemas are written in English.
const PLACE: &[&str] =
    &["city", "cities", "location", "town", "country", "place", "where", "region", "destination", "area", "address"];

/// Words of a property's name or description that make it name-like (rule
/// 7).
const PLACE_OR_NAME: &[&str] = &["name", "person", "contact", "recipient", "who"];

/// Prepositions before a place or a name in a lower-case request (rule 5),
/// EN + IT.
const PREPOSITIONS: &[&str] = &["in", "at", "to", "for", "near", "a", "di", "da", "per", "su", "con", "al", "ad"];

/// Fills the arguments of the tool `tool` (described as `description`)
/// with parameters `schema` from `request`, said at `now`: a request in
/// lower case (a voice transcript) by its word order first
/// ([`crate::spoken`]), then by the rules of the module docs for what is
/// left.
pub fn fill_for(tool: &str, description: &str, schema: &Value, request: &str, now: DateTime<FixedOffset>) -> Filled {
    let mut out = fill_either(tool, description, schema, request, now);
    crate::places::in_asked_format(schema, &mut out.args, request);
    out
}

/// [`fill_for`] before places are written as their parameters ask.
fn fill_either(tool: &str, description: &str, schema: &Value, request: &str, now: DateTime<FixedOffset>) -> Filled {
    let request = &*durations_in_minutes(request);
    if request.chars().any(char::is_uppercase) {
        return fill_read(schema, request, now);
    }
    let context = crate::spoken::Context::of(tool, description);
    let spoken = crate::spoken::fill(schema, request, &context);
    let mut rest = schema.clone();
    if let Some(p) = rest.get_mut("properties").and_then(Value::as_object_mut) {
        p.retain(|k, spec| !spoken.contains_key(k) && !crate::spoken::handles(k, spec));
    }
    if let Some(r) = rest.get_mut("required").and_then(Value::as_array_mut) {
        r.retain(|k| k.as_str().is_none_or(|k| !spoken.contains_key(k)));
    }
    let mut out = fill_read(&rest, request, now);
    // A value the word order placed is no value for another property.
    let placed: Vec<String> = spoken.values().filter_map(Value::as_str).map(str::to_lowercase).collect();
    out.args.0.retain(|_, v| v.as_str().is_none_or(|s| !placed.iter().any(|p| s.to_lowercase().contains(p.as_str()))));
    out.args.0.extend(spoken);
    // Nor is a run of numbers, units and grammar a name or a place ("to
    // 35 percent", "per favore", "abbassale").
    out.args.0.retain(|_, v| v.as_str().is_none_or(|s| !crate::spoken::only_grammar(s, &context)));
    // A place or a device is no word of the tool's own description ("set
    // the thermostat to 20" for a tool that "Sets the target temperature
    // of a thermostat").
    let properties = schema.get("properties");
    out.args.0.retain(|k, v| {
        let named = properties.and_then(|p| p.get(k)).is_some_and(|spec| crate::spoken::handles(k, spec));
        !named || v.as_str().is_none_or(|s| !crate::spoken::described(s, &context))
    });
    out
}

/// Fills the arguments of a tool with parameters `schema` from `request`,
/// said at `now` (module docs).
pub fn fill(schema: &Value, request: &str, now: DateTime<FixedOffset>) -> Filled {
    let mut out = fill_read(schema, &durations_in_minutes(request), now);
    crate::places::in_asked_format(schema, &mut out.args, request);
    out
}

/// [`fill`] of a request whose durations are minutes already
/// ([`durations_in_minutes`], read once by [`fill_for`] for both its
/// readers).
fn fill_read(schema: &Value, request: &str, now: DateTime<FixedOffset>) -> Filled {
    let mut out = Filled::default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return out };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut said = Said::new(request, now);
    said.units = properties
        .iter()
        .filter(|(_, spec)| matches!(spec.get("type").and_then(Value::as_str), Some("number" | "integer")))
        .filter_map(|(name, spec)| {
            let words = property_words(name, spec);
            // A temperature in no unit its text names is in degrees,
            // whichever scale: never a duration nor a share.
            let unit = words.iter().find_map(|w| unit_of(w));
            unit.or_else(|| words.iter().any(|w| w == "temperature").then_some("degree")).map(|u| (name.clone(), u))
        })
        .collect();
    let mut taken = Taken::default();
    // Absolute dates claim their numbers ("May 15, 2023" is no 15 and no
    // 2023).
    // So do times of day ("at 2 in the afternoon", "11:00 a.m." are no
    // counts of 2 or 11) — one written `20.30` only where a property holds
    // a time: elsewhere it may be a price.
    let times_claim = properties.iter().any(|(name, spec)| time_like(name, spec));
    let clock = |t: &crate::time_of_day::Said| {
        times_claim || said.ex.text[t.span.0..t.span.1].contains(|c: char| c == ':' || c.is_alphabetic())
    };
    for (i, s) in said.ex.slots.iter().enumerate() {
        let time = said.times.iter().any(|t| clock(t) && overlaps(t.span, s.span));
        if s.kind == SlotKind::Number && (time || said.dates.iter().any(|d| overlaps(d.0, s.span))) {
            taken.slots.push(i);
        }
    }
    // Rules 1–6 first, for every property: the values the request marks
    // (slots, values named by their parameter, enum words, numbers, quotes,
    // booleans) go where they belong before a proper noun is guessed for
    // what is left. Required properties first: a value the request gives
    // once is more likely one the call cannot do without.
    let mut taken_words: Vec<String> = Vec::new();
    let mut left: Vec<(&String, &Value)> = Vec::new();
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    for (name, spec) in ordered {
        match marked_value(&said, name, spec, &mut taken) {
            Some(v) => {
                if let Some(s) = v.as_str() {
                    taken_words.extend(words_of(s));
                }
                out.args.0.insert(name.clone(), v);
            }
            None => left.push((name, spec)),
        }
    }
    // Rules 7 and 8, for the strings left.
    let nouns: Vec<Noun> = noun_runs(&said.ex.text, &said.toks)
        .into_iter()
        .filter(|n| !words_of(&n.text).iter().all(|w| taken_words.contains(w)))
        .filter(|n| !said.quotes.iter().any(|q| overlaps((q.0, q.1), (n.start, n.end))))
        .filter(|n| !said.dates.iter().any(|d| overlaps(d.0, (n.start, n.end))) && !calendar_word(&n.text))
        .collect();
    let mut used_nouns: Vec<usize> = Vec::new();
    let mut still: Vec<(&String, &Value)> = Vec::new();
    for (name, spec) in left {
        match cued_noun(&nouns, &used_nouns, name, spec) {
            Some(i) => {
                used_nouns.push(i);
                let v = nouns[i].with_region(place_like(name, spec));
                out.args.0.insert(name.clone(), Value::String(v));
            }
            None => still.push((name, spec)),
        }
    }
    // (A quantity is no place: "for 30 minutes".)
    let quantity = |w: &String| w.parse::<f64>().is_ok() || unit_of(w).is_some();
    let mut lower_case =
        lower_case_place(&said.ex.text).filter(|p| !words_of(p).iter().all(|w| taken_words.contains(w) || quantity(w)));
    for (name, spec) in still {
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
        let value = (kind == "string" && spec.get("enum").is_none() && place_or_name(name, spec))
            .then(|| match next_noun(&nouns, &mut used_nouns, place_like(name, spec)) {
                Some(v) => Some(v),
                // One property takes it: a place is no name too.
                None if nouns.is_empty() => lower_case.take(),
                None => None,
            })
            .flatten()
            .or_else(|| (kind == "string" && free_text_like(name)).then(|| free_text(&said.ex.text)).flatten());
        match value {
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

/// What the request says, as the rules read it.
struct Said<'a> {
    request: &'a str,
    /// The extractor's slots (and the apostrophe-straightened text).
    ex: crate::fast_path::Extracted,
    toks: Vec<Tok>,
    quotes: Vec<(usize, usize, String)>,
    dates: Vec<((usize, usize), String)>,
    times: Vec<crate::time_of_day::Said>,
    /// The unit each number property is in, by its name or description
    /// ("Brightness in percent", `minutes`).
    units: Vec<(String, &'static str)>,
}

impl<'a> Said<'a> {
    fn new(request: &'a str, now: DateTime<FixedOffset>) -> Said<'a> {
        let ex = extract(request, now);
        let toks = tokens(&ex.text);
        let quotes = quoted_spans(&ex.text);
        let dates = absolute_dates(&ex.text, now);
        let times = crate::time_of_day::said(&ex.text);
        Said { request, ex, toks, quotes, dates, times, units: Vec::new() }
    }
}

/// Rules 1–6: the value the request marks for one property, if any.
fn marked_value(said: &Said<'_>, name: &str, spec: &Value, taken: &mut Taken) -> Option<Value> {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    // A day said in full before a relative one ("today, April 25th
    // 2023"): a date property reads dates first.
    let date = kind == "string" && date_like(name, spec);
    date.then(|| take_date(name, spec, &said.dates, &said.ex, taken))
        .flatten()
        .or_else(|| slot_for(name, spec).filter(|_| !date).and_then(|k| take_slot(&said.ex, k, &mut taken.slots)))
        .or_else(|| (kind == "string" && time_like(name, spec)).then(|| take_time(spec, said, taken)).flatten())
        .or_else(|| named_value(said, name, kind, taken))
        .or_else(|| enum_named(spec, said.request))
        .or_else(|| {
            crate::colours::colour_property(name, spec)
                .then(|| crate::colours::said(said.request))
                .flatten()
                .map(Value::String)
        })
        .or_else(|| match kind {
            "number" | "integer" => take_number(name, said, kind == "integer", taken),
            _ => None,
        })
        .or_else(|| (kind == "string" && spec.get("enum").is_none()).then(|| take_quote(&said.quotes, taken)).flatten())
        .or_else(|| (kind == "boolean").then(|| boolean_named(name, &said.toks)).flatten())
        .or_else(|| yes_no_enum(name, spec, &said.toks))
}

/// Rule 6 for a boolean spelt as an enum of strings (`["True", "False",
/// "dontcare"]`, as some schemas write one): the value the rule reads, in
/// the enum's own spelling.
fn yes_no_enum(name: &str, spec: &Value, toks: &[Tok]) -> Option<Value> {
    let values = spec.get("enum")?.as_array()?;
    let spelt = |b: bool| values.iter().find(|v| v.as_str().is_some_and(|s| s.eq_ignore_ascii_case(&b.to_string())));
    let (yes, no) = (spelt(true)?, spelt(false)?);
    let b = boolean_named(name, toks)?.as_bool()?;
    Some(if b { yes.clone() } else { no.clone() })
}

/// Rule 7: the proper noun a string property's name is said right before
/// ("directed by Gurinder Chadha" for `directed_by`), by index.
fn cued_noun(nouns: &[Noun], used: &[usize], name: &str, spec: &Value) -> Option<usize> {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "string" || spec.get("enum").is_some() {
        return None;
    }
    let words = split_name(name);
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
        })
        .filter(|i| !used.contains(i))
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
/// after a preposition of place, with its region.
fn next_noun(nouns: &[Noun], used: &mut Vec<usize>, place: bool) -> Option<String> {
    let free = |i: &usize| !used.contains(i);
    let pick = (0..nouns.len())
        .filter(free)
        .find(|i| place && nouns[*i].after_place_preposition)
        .or_else(|| (0..nouns.len()).find(free))?;
    used.push(pick);
    Some(nouns[pick].with_region(place))
}

/// What the rules took already: extractor slots and quotes, by index.
#[derive(Default)]
struct Taken {
    slots: Vec<usize>,
    quotes: Vec<usize>,
    dates: Vec<usize>,
    times: Vec<usize>,
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// A word of the request: its byte span and its lower-case letters and
/// digits.
struct Tok {
    start: usize,
    end: usize,
    word: String,
}

fn tokens(text: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        let part = c.is_alphanumeric() || (start.is_some() && matches!(c, '\'' | '-' | '_' | '.' | '/' | '@' | ':'));
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let raw = text[s..i].trim_end_matches(|c: char| !c.is_alphanumeric());
                if !raw.is_empty() {
                    out.push(Tok { start: s, end: s + raw.len(), word: raw.to_lowercase() });
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Two words of one stem: one starts with the other (a plural, "bed" /
/// "bedrooms", "music" / "musical"), the shorter of three letters or more.
fn same_stem(a: &str, b: &str) -> bool {
    let plural = |w: &'_ str| -> usize {
        if w.len() > 3 && w.ends_with('s') {
            w.len() - 1
        } else {
            w.len()
        }
    };
    let (a, b) = (&a[..plural(a)], &b[..plural(b)]);
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() >= 3 && long.starts_with(short)
}

/// Words that join a parameter's name to its value ("port number 5432",
/// "nickname 'PrimaryDB'", "username is ada", "set to 22"), EN.
const LINKS: &[&str] = &[
    "as", "is", "of", "to", "be", "called", "named", "the", "a", "an", "with", "equal", "equals", "number", "value",
    "at", "=", ":",
];

/// Rule 2: a value the request names by its parameter — the parameter's
/// name said as words and followed by the value (a quote within three
/// words, else the next word that is not a joining one: a number for a
/// number, a code- or name-like word for a string), or a quote followed by
/// "as" and the name ("'admin_user' as username").
fn named_value(said: &Said<'_>, name: &str, kind: &str, taken: &mut Taken) -> Option<Value> {
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
                let code = raw.chars().any(|c| c.is_ascii_digit() || "-_./@:".contains(c))
                    || raw.chars().next().is_some_and(char::is_uppercase);
                // A number is an id here ("user id 1234"); other values
                // (a path, a date) go by their own rule.
                let other =
                    ex.slots.iter().any(|s| s.kind != SlotKind::Number && overlaps(s.span, (next.start, next.end)));
                if code && !other {
                    for (i, s) in ex.slots.iter().enumerate() {
                        if overlaps(s.span, (next.start, next.end)) {
                            taken.slots.push(i);
                        }
                    }
                    return Some(Value::String(raw.to_owned()));
                }
            }
        }
    }
    None
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

/// Rule 1's absolute dates: `2023-04-08`, "May 15, 2023", "the 4th of
/// March 2023", "15 maggio" — as ISO days, with their spans; a date
/// without a year is in the year of the next date said with one, else in
/// `now`'s.
fn absolute_dates(text: &str, now: DateTime<FixedOffset>) -> Vec<((usize, usize), String)> {
    use chrono::Datelike;
    static RULES: std::sync::OnceLock<[regex::Regex; 5]> = std::sync::OnceLock::new();
    let [iso, month_first, day_first, numeric, year_alone] = RULES.get_or_init(|| {
        let r = |s: &str| regex::Regex::new(s).expect("date rule compiles");
        let month = crate::calendar::alternation();
        [
            r(r"\b(\d{4})([-./])(\d{1,2})[-./](\d{1,2})\b"),
            r(&format!(r"(?i)\b({month})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?")),
            r(&format!(r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({month})\b\.?(?:,?\s+(\d{{4}})\b)?")),
            r(r"\b(\d{1,2})([/.-])(\d{1,2})[/.-](\d{4})\b"),
            r(r"\b(19\d{2}|20\d{2})\b"),
        ]
    });
    // The rules capture a name of the calendar's, in any case.
    let month = |m: &str| crate::calendar::month_of(&m.to_lowercase()).map(|i| i as u32 + 1);
    type Found = ((usize, usize), Option<i32>, u32, u32);
    let mut found: Vec<Found> = Vec::new();
    let mut push = |span: (usize, usize), y: Option<i32>, m: Option<u32>, d: Option<u32>| {
        if let (Some(m), Some(d)) = (m, d) {
            if !found.iter().any(|o| overlaps(o.0, span)) {
                found.push((span, y, m, d));
            }
        }
    };
    for c in iso.captures_iter(text) {
        let m = c.get(0).expect("match");
        push((m.start(), m.end()), c[1].parse().ok(), c[3].parse().ok(), c[4].parse().ok());
    }
    // `05/15/2023` month first, as in the US; day first when the first
    // number cannot be a month (`15/05/2023`) or the separator is a dot
    // or a dash (`15.05.2023`, as Italians write).
    for c in numeric.captures_iter(text) {
        let m = c.get(0).expect("match");
        let (a, b): (Option<u32>, Option<u32>) = (c[1].parse().ok(), c[3].parse().ok());
        let day_first = &c[2] != "/" || a.is_some_and(|a| a > 12);
        let (mo, d) = if day_first { (b, a) } else { (a, b) };
        push((m.start(), m.end()), c[4].parse().ok(), mo, d);
    }
    for c in month_first.captures_iter(text) {
        let m = c.get(0).expect("match");
        push((m.start(), m.end()), c.get(3).and_then(|y| y.as_str().parse().ok()), month(&c[1]), c[2].parse().ok());
    }
    for c in day_first.captures_iter(text) {
        let m = c.get(0).expect("match");
        push((m.start(), m.end()), c.get(3).and_then(|y| y.as_str().parse().ok()), month(&c[2]), c[1].parse().ok());
    }
    found.sort_by_key(|d| d.0);
    // A year said alone, outside every date ("on March 11th? this year
    // 2023").
    let alone = year_alone
        .find_iter(text)
        .find(|y| !found.iter().any(|f| overlaps(f.0, (y.start(), y.end()))))
        .and_then(|y| y.as_str().parse().ok());
    // A date without its year shares the next one's, as a range says it
    // once ("from April 15th to April 22nd 2023"), else an earlier one's
    // ("from April 18th 2023 until April 24th"), else the year said alone;
    // else it is in now's.
    (0..found.len())
        .filter_map(|i| {
            let (span, year, m, d) = found[i];
            let year = year
                .or_else(|| found[i + 1..].iter().find_map(|f| f.1))
                .or_else(|| found[..i].iter().rev().find_map(|f| f.1))
                .or(alone)
                .unwrap_or(now.year());
            let day = chrono::NaiveDate::from_ymd_opt(year, m, d)?;
            Some((span, day.format("%Y-%m-%d").to_string()))
        })
        .collect()
}

/// A property's description as written (case kept: "HH:MM" and
/// "MM/DD/YYYY" are read as spelt); empty when it has none.
fn description_of(spec: &Value) -> &str {
    spec.get("description").and_then(Value::as_str).unwrap_or("")
}

/// Whether a string property holds a day: `date` among its name's words,
/// or a description that asks for a day's format.
fn date_like(name: &str, spec: &Value) -> bool {
    let description = description_of(spec);
    split_name(name).iter().any(|w| w == "date")
        || description.contains("YYYY-MM-DD")
        || date_format(description).is_some()
}

/// Whether a string property holds a time of day: `time` among its
/// name's words (not a `timeout`, `timezone` or `timestamp`, which split
/// as one word), or a description that asks for `HH:MM`; never one with
/// an enum.
fn time_like(name: &str, spec: &Value) -> bool {
    let description = description_of(spec);
    spec.get("type").and_then(Value::as_str) == Some("string")
        && spec.get("enum").is_none()
        && (split_name(name).iter().any(|w| w == "time") || description.contains("HH:MM"))
}

/// The first time of day no property took ([`crate::time_of_day`]), as
/// the description asks: `HH:MM:SS` when it says so, else `HH:MM` (24
/// hours — what "HH:MM" means, and what tools mostly ask).
fn take_time(spec: &Value, said: &Said<'_>, taken: &mut Taken) -> Option<Value> {
    let i = (0..said.times.len()).find(|i| !taken.times.contains(i))?;
    taken.times.push(i);
    let description = description_of(spec);
    let format = if description.contains("HH:MM:SS") { "%H:%M:%S" } else { "%H:%M" };
    Some(Value::String(said.times[i].time.format(format).to_string()))
}

/// The first absolute date no property took — the last, for the end of a
/// span ("from April 3rd to April 5th": `end_date` the 5th, whichever
/// property is asked first) — else the first relative one.
fn take_date(
    name: &str,
    spec: &Value,
    dates: &[((usize, usize), String)],
    ex: &crate::fast_path::Extracted,
    taken: &mut Taken,
) -> Option<Value> {
    let end = split_name(name).iter().any(|w| matches!(w.as_str(), "end" | "return" | "until" | "checkout" | "out"));
    let mut free = (0..dates.len()).filter(|i| !taken.dates.contains(i));
    let day = match if end { free.next_back() } else { free.next() } {
        Some(i) => {
            taken.dates.push(i);
            Value::String(dates[i].1.clone())
        }
        None => take_slot(ex, SlotKind::Date, &mut taken.slots)?,
    };
    let description = description_of(spec);
    Some(match (day.as_str().map(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")), date_format(description)) {
        (Some(Ok(d)), Some(format)) => Value::String(d.format(format).to_string()),
        _ => day,
    })
}

/// The day format a description asks for other than ISO's: `MM/DD/YYYY`
/// (as US tools do), `DD/MM/YYYY`, `DD-MM-YYYY`, any case.
fn date_format(description: &str) -> Option<&'static str> {
    let upper = description.to_uppercase();
    [("MM/DD/YYYY", "%m/%d/%Y"), ("DD/MM/YYYY", "%d/%m/%Y"), ("DD-MM-YYYY", "%d-%m-%Y")]
        .into_iter()
        .find(|(said, _)| upper.contains(said))
        .map(|(_, format)| format)
}

/// Number words, for a count said in words beside what it counts ("two
/// bedrooms", "tre biglietti").
const NUMBER_WORDS: &[(&str, i64)] = &[
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

/// Words of a parameter's name that say nothing of what it counts.
const COUNT_WORDS: &[&str] = &["number", "num", "of", "count", "total", "the", "n", "in", "no", "amount", "max", "min"];

/// Rule 4: a number for a number property — the one beside a word of the
/// property's name ("2 bedrooms" for `number_of_beds`; "two bedrooms" too),
/// else the first number no property took; an integer property takes only
/// whole numbers.
fn take_number(name: &str, said: &Said<'_>, integer: bool, taken: &mut Taken) -> Option<Value> {
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
        if at.is_some_and(|k| names_it(toks.get(k + 1)) || (k > 0 && names_it(toks.get(k - 1)))) {
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
    let (i, slot) = ex.slots.iter().enumerate().find(|(i, s)| {
        s.kind == SlotKind::Number
            && !taken.slots.contains(i)
            && whole(&s.value)
            && !others(slot_unit(&ex.text, toks, s.span))
    })?;
    taken.slots.push(i);
    Some(as_kind(&slot.value, integer))
}

/// The unit a word names, EN + IT: minutes, hours, seconds, percent,
/// degrees, kelvin — what a number said before it counts.
fn unit_of(word: &str) -> Option<&'static str> {
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
    if toks.get(last + 1).is_some_and(|t| matches!(t.word.as_str(), "more" | "extra" | "additional" | "further")) {
        last += 1;
    }
    let next = toks.get(last + 1)?;
    if next.word == "per" && toks.get(last + 2).is_some_and(|t| t.word == "cento") {
        return Some("percent");
    }
    unit_of(&next.word)
}

fn as_kind(v: &Value, integer: bool) -> Value {
    match (integer, v.as_f64()) {
        (true, Some(f)) => Value::from(f as i64),
        _ => v.clone(),
    }
}

/// Rule 5: the first quoted text no property took.
fn take_quote(quotes: &[(usize, usize, String)], taken: &mut Taken) -> Option<Value> {
    let q = (0..quotes.len()).find(|q| !taken.quotes.contains(q))?;
    taken.quotes.push(q);
    Some(Value::String(quotes[q].2.clone()))
}

/// Words of a boolean's name that say it is one, not what it is about.
const FLAG_WORDS: &[&str] = &[
    "is", "has", "have", "include", "includes", "enable", "enabled", "use", "allow", "allowed", "with", "should", "do",
    "does", "flag", "in", "on", "the", "of", "a", "to",
];

/// Rule 6: a boolean the request names — a word of its name that says
/// what it is about ("hidden" of `include_hidden`, "protection" of
/// `trip_protection`), by its stem; `false` when a negation stands up to
/// four words before the first one said ("no need for a garage"), else
/// `true`.
fn boolean_named(name: &str, toks: &[Tok]) -> Option<Value> {
    let about: Vec<String> = split_name(name).into_iter().filter(|w| !FLAG_WORDS.contains(&w.as_str())).collect();
    if about.is_empty() {
        return None;
    }
    // A word of the request, or a part of a hyphenated one ("in-unit
    // laundry" for `in_unit_laundry`).
    let said = |w: &String, t: &Tok| same_stem(w, &t.word) || t.word == *w || t.word.split('-').any(|p| p == w);
    let at = about.iter().filter_map(|w| toks.iter().position(|t| said(w, t))).min()?;
    let negated = toks[at.saturating_sub(4)..at].iter().any(|t| crate::text::is_negation(&t.word));
    Some(Value::Bool(!negated))
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

/// Rule 3: the first value of the property's enum the request names as a
/// whole word (or words), any case; else one a word of the request has for
/// its stem ("a musical show" names `Music`).
fn enum_named(spec: &Value, request: &str) -> Option<Value> {
    let words = words_of(request);
    let lower = format!(" {} ", words.join(" "));
    let values = spec.get("enum")?.as_array()?;
    values
        .iter()
        .find(|v| {
            let w = v.as_str().map(|s| words_of(s).join(" ")).unwrap_or_default();
            !w.is_empty() && lower.contains(&format!(" {w} "))
        })
        .or_else(|| {
            values.iter().find(|v| {
                let w = v.as_str().map(words_of).unwrap_or_default();
                w.len() == 1 && w[0].len() >= 4 && words.iter().any(|r| r.starts_with(&w[0]))
            })
        })
        .cloned()
}

/// Lower-case words, letters and digits only.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether a string property holds a place or a name (rule 7).
fn place_or_name(name: &str, spec: &Value) -> bool {
    property_words(name, spec).iter().any(|w| PLACE_OR_NAME.contains(&w.as_str()) || PLACE.contains(&w.as_str()))
}

/// Whether a string property holds a place (rule 7): its name or
/// description names one.
fn place_like(name: &str, spec: &Value) -> bool {
    property_words(name, spec).iter().any(|w| PLACE.contains(&w.as_str()))
}

fn property_words(name: &str, spec: &Value) -> Vec<String> {
    let description = description_of(spec);
    let mut words = split_name(name);
    words.extend(words_of(description));
    words
}

/// Words of a string property's name that make it free text the user
/// words (rule 8): what to search for, say or run.
const FREE_TEXT: &[&str] =
    &["query", "search", "keyword", "keywords", "text", "message", "content", "prompt", "question", "input", "term"];

fn free_text_like(name: &str) -> bool {
    split_name(name).iter().any(|w| FREE_TEXT.contains(&w.as_str()))
}

/// Rule 8: the words after the request's last colon or semicolon ("search
/// the web; where is beijing" → "where is beijing"), two at least.
fn free_text(text: &str) -> Option<String> {
    let at = text.rfind([':', ';'])?;
    let tail = text[at + 1..].trim().trim_end_matches(['.', '?', '!']).trim();
    (tail.split_whitespace().count() >= 2).then(|| tail.to_owned())
}

/// Texts in quotes, in order, with the byte span of each (quote marks
/// included).
fn quoted_spans(text: &str) -> Vec<(usize, usize, String)> {
    let pairs = [('"', '"'), ('\'', '\''), ('«', '»'), ('“', '”'), ('‘', '’')];
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        // An apostrophe inside a word ("what's", "l'ombrello") opens nothing.
        let in_word = i > 0 && chars[i - 1].1.is_alphanumeric();
        if let Some((_, close)) = pairs.iter().find(|(open, _)| *open == c).filter(|_| !in_word) {
            // A closing mark followed by a letter is an apostrophe ("it's").
            let closes = |j: usize| chars[j].1 == *close && chars.get(j + 1).is_none_or(|n| !n.1.is_alphanumeric());
            if let Some(end) = (i + 1..chars.len()).find(|j| closes(*j)) {
                let (inner_start, inner_end) = (at + c.len_utf8(), chars[end].0);
                let inner = text[inner_start..inner_end].trim();
                if !inner.is_empty() {
                    out.push((at, inner_end + close.len_utf8(), inner.to_owned()));
                }
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Texts in quotes, in order.
fn quoted_strings(text: &str) -> Vec<String> {
    quoted_spans(text).into_iter().map(|q| q.2).collect()
}

/// Prepositions before a place (rule 7), EN + IT.
const PLACE_PREPOSITIONS: &[&str] =
    &["in", "at", "near", "from", "to", "a", "da", "di", "per", "su", "nel", "nella", "vicino"];

/// A proper noun of the request and what stands before it.
struct Noun {
    text: String,
    start: usize,
    end: usize,
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
    fn with_region(&self, place: bool) -> String {
        match (&self.region, place) {
            (Some(r), true) => format!("{}, {r}", self.text),
            _ => self.text.clone(),
        }
    }
}

/// A month or a weekday alone ("from March", "next Friday"): capitalised,
/// and no place or name — what it says is a date, rule 1's.
fn calendar_word(noun: &str) -> bool {
    noun.parse::<chrono::Month>().is_ok() || noun.parse::<chrono::Weekday>().is_ok()
}

/// Rule 7's proper nouns, each with the words before it; a run after a
/// comma that follows another is that one's region, not a noun of its own.
fn noun_runs(text: &str, toks: &[Tok]) -> Vec<Noun> {
    let runs = crate::fast_path::extract::proper_nouns(text);
    let mut out: Vec<Noun> = Vec::new();
    let mut skip = false;
    for (k, &(s, e)) in runs.iter().enumerate() {
        if std::mem::take(&mut skip) {
            continue;
        }
        let region =
            runs.get(k + 1).filter(|(s2, _)| text[e..*s2].trim() == ",").map(|(s2, e2)| text[*s2..*e2].to_owned());
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
fn lower_case_place(text: &str) -> Option<String> {
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
    let tail: Vec<&String> = lower[p + 1..].iter().filter(|w| !w.is_empty()).take(3).collect();
    (!tail.is_empty() && p + 1 + tail.len() == lower.len())
        .then(|| tail.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "))
}

/// Whether `request` names, just before a text value of `args`, another
/// joined to it by a conjunction ("the kitchen **and the** office lights",
/// "in cucina **e in** bagno"): the value is one of two, and a call that
/// says one drops the other — the planner abstains rather than make it.
/// A value that holds the conjunction itself ("salt and pepper") is one.
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
    let grammar = |w: &&String| crate::fast_path::slots::is_determiner(w);
    values.iter().filter(|v| v.len() <= said.len()).any(|value| {
        (0..=said.len() - value.len()).filter(|&i| said[i..i + value.len()] == value[..]).any(|i| {
            // Back over at most two articles or prepositions to the word
            // that joins this value to what is before it, and what that
            // is: a value the call says too ("the light and the fan",
            // both domains) drops nothing.
            let back: Vec<&String> = said[..i].iter().rev().skip_while(grammar).collect();
            let joined = back.first().is_some_and(|w| matches!(w.as_str(), "and" | "or" | "e" | "ed" | "o" | "oppure"));
            let other = back.iter().skip(1).find(|w| !grammar(w));
            i - back.len() <= 2 && joined && other.is_some_and(|w| !in_a_value(w))
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339("2026-11-26T10:00:00+01:00").unwrap()
    }

    /// A call that says one of two values the request joins drops the
    /// other; one that says both, or a value holding the conjunction, is
    /// whole.
    #[test]
    fn one_of_two_values_joined_is_found() {
        let args = |v: serde_json::Value| ToolArgs::from_json(&v.to_string()).unwrap();
        for (request, call, two) in [
            ("turn on the kitchen and the office lights", json!({"area": "office", "domain": ["light"]}), true),
            ("spegni la luce in cucina e in bagno", json!({"area": "bagno", "domain": ["light"]}), true),
            (
                "turn on the light and the fan in the bedroom",
                json!({"area": "bedroom", "domain": ["light", "fan"]}),
                false,
            ),
            ("add salt and pepper to the list", json!({"item": "salt and pepper"}), false),
            ("turn on the office lights", json!({"area": "office"}), false),
            ("turn on the lights and play jazz", json!({"search_query": "jazz"}), false),
        ] {
            assert_eq!(one_of_two(&args(call), request), two, "{request}");
        }
    }

    #[test]
    fn numbers_units_and_grammar_are_no_name_place_or_text() {
        let light = json!({"type": "object", "properties": {
            "area": {"type": "string", "description": "Name of an area (room) of the home"},
            "brightness": {"type": "integer", "description": "Brightness in percent"},
            "color": {"type": "string", "description": "Colour name, as the user said it"}}});
        for (request, want) in [
            ("dim the attic lights to seventy five percent", json!({"area": "attic", "brightness": 75})),
            ("set the den lights at 35 percent", json!({"area": "den", "brightness": 35})),
            ("luci del salotto abbassale al trentacinque per cento", json!({"area": "salotto", "brightness": 35})),
            ("puoi mettere le luci in veranda al 40 per favore", json!({"area": "veranda", "brightness": 40})),
        ] {
            let got = fill_for("HassLightSet", "Sets the brightness or colour of lights", &light, request, now()).args;
            assert_eq!(Value::Object(got.0.into_iter().collect()), want, "{request}");
        }
        let timer = json!({"type": "object", "properties": {
            "minutes": {"type": "integer", "description": "Minutes of the duration"},
            "name": {"type": "string", "description": "Name to give the timer, e.g. pasta"},
            "area": {"type": "string", "description": "Area to start the timer in"}}});
        let climate = json!({"type": "object", "properties": {
            "temperature": {"type": "number", "description": "Target temperature"},
            "name": {"type": "string", "description": "Name of one device or entity, as the user calls it"},
            "area": {"type": "string", "description": "Name of an area (room) of the home"}}});
        let description = "Sets the target temperature of a thermostat or of the heating in an area";
        let got = fill_for("HassClimateSetTemperature", description, &climate, "set the thermostat to 20.5", now());
        assert_eq!(got.args.to_json(), r#"{"temperature":20.5}"#, "the thermostat is the tool's, not a device's name");
        for request in ["start a 9 minute timer", "fai partire un timer da ventotto minuti"] {
            let got = fill_for("HassStartTimer", "Starts a timer", &timer, request, now()).args;
            assert_eq!(got.0.keys().collect::<Vec<_>>(), ["minutes"], "{request}: {got:?}");
        }
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

    fn props(p: Value, required: &[&str]) -> Value {
        json!({"type": "object", "properties": p, "required": required})
    }

    #[test]
    fn a_value_goes_to_the_parameter_it_is_said_with() {
        let db = props(
            json!({
                "database": {"type": "string"}, "host": {"type": "string"}, "nickname": {"type": "string"},
                "port": {"type": "integer"}, "username": {"type": "string"}, "userId": {"type": "string"}
            }),
            &["database", "host", "nickname", "port", "username"],
        );
        let f = fill(
            &db,
            "Add a server with the nickname 'PrimaryDB', host IP as '192.168.0.10', port number 5432, connecting to \
             the 'main' database, with 'admin_user' as username. id 77",
            now(),
        );
        assert_eq!(f.args.0.get("nickname"), Some(&json!("PrimaryDB")));
        assert_eq!(f.args.0.get("host"), Some(&json!("192.168.0.10")));
        assert_eq!(f.args.0.get("port"), Some(&json!(5432)));
        assert_eq!(f.args.0.get("username"), Some(&json!("admin_user")));
        assert_eq!(f.args.0.get("userId"), Some(&json!("77")), "the last word of the name, a code after it");
        // Before: quotes went to the properties in their order.
        assert_eq!(f.args.0.get("database"), Some(&json!("main")));
        let v = props(json!({"component": {"type": "string"}, "vulnerability": {"type": "string"}}), &[]);
        let f = fill(&v, "the analysis for component AB1010CD and vulnerability ef903ac-893-f00", now());
        assert_eq!(f.args.0.get("component"), Some(&json!("AB1010CD")));
        assert_eq!(f.args.0.get("vulnerability"), Some(&json!("ef903ac-893-f00")));
    }

    #[test]
    fn a_count_is_the_number_beside_what_it_counts() {
        let home = props(
            json!({"number_of_baths": {"type": "integer"}, "number_of_beds": {"type": "integer"}, "page_size": {"type": "integer"}}),
            &["number_of_beds", "number_of_baths"],
        );
        let f = fill(&home, "a flat with at least 2 bedrooms and 1 bathroom", now());
        assert_eq!(
            (f.args.0.get("number_of_beds"), f.args.0.get("number_of_baths")),
            (Some(&json!(2)), Some(&json!(1)))
        );
        let f = fill(&home, "find a two-bedroom, one-bathroom apartment", now());
        assert_eq!(
            (f.args.0.get("number_of_beds"), f.args.0.get("number_of_baths")),
            (Some(&json!(2)), Some(&json!(1)))
        );
        let f = fill(&home, "three bathrooms and 4 beds, page size 'nine'", now());
        assert_eq!(f.args.0.get("number_of_baths"), Some(&json!(3)));
        assert_eq!(f.args.0.get("page_size"), Some(&json!(9)));
        // A required count takes a number before an optional one does.
        let tax = props(
            json!({"discount_rate": {"type": "number"}, "purchase_amount": {"type": "number"}}),
            &["purchase_amount"],
        );
        let f = fill(&tax, "I paid $59.99 here", now());
        assert_eq!(f.args.0.get("purchase_amount"), Some(&json!(59.99)));
        assert_eq!(f.args.0.get("discount_rate"), None);
    }

    #[test]
    fn days_said_in_full_are_iso_days_and_their_numbers_no_counts() {
        let trip = props(
            json!({"date_of_journey": {"type": "string"}, "number_of_adults": {"type": "integer"}}),
            &["date_of_journey", "number_of_adults"],
        );
        for (request, day) in [
            ("4 tickets for May 15, 2023", "2023-05-15"),
            ("4 tickets on the 8th of march 2023", "2023-03-08"),
            ("4 tickets on 2023-5-2", "2023-05-02"),
            ("4 biglietti per il 15 maggio", "2026-05-15"),
            ("4 tickets on 2023.10.1", "2023-10-01"),
            ("4 tickets on 05/15/2023", "2023-05-15"),
            ("4 biglietti per il 15.05.2023", "2023-05-15"),
            ("4 tickets on March 11th? this year 2023", "2023-03-11"),
            ("4 tickets for today, April 25th 2023", "2023-04-25"),
            ("4 tickets from April 18th 2023 until the 24th", "2023-04-18"),
        ] {
            let f = fill(&trip, request, now());
            assert_eq!(f.args.0.get("date_of_journey"), Some(&json!(day)), "{request}");
            assert_eq!(f.args.0.get("number_of_adults"), Some(&json!(4)), "{request}");
        }
        // Written as the description asks.
        let us = props(json!({"date": {"type": "string", "description": "The date, in the format MM/DD/YYYY."}}), &[]);
        assert_eq!(fill(&us, "events on March 6th 2023", now()).args.0.get("date"), Some(&json!("03/06/2023")));
        let rental = props(json!({"start_date": {"type": "string"}, "end_date": {"type": "string"}}), &[]);
        let f = fill(&rental, "a car from April 18th 2023 at 10am until April 24th", now());
        assert_eq!(f.args.0.get("end_date"), Some(&json!("2023-04-24")), "an earlier day's year");
    }

    #[test]
    fn a_span_of_days_shares_its_year_and_its_end_is_the_later_day() {
        // `end_date` comes first in the schema: the order asked must not
        // decide which day is which.
        let forecast = props(
            json!({"end_date": {"type": "string"}, "start_date": {"type": "string"}, "location": {"type": "string"}}),
            &["end_date", "start_date"],
        );
        for request in
            ["the weather in Paris from April 3rd to April 5th 2023", "meteo a Parigi dal 3 aprile al 5 aprile 2023"]
        {
            let f = fill(&forecast, request, now());
            assert_eq!(f.args.0.get("start_date"), Some(&json!("2023-04-03")), "{request}");
            assert_eq!(f.args.0.get("end_date"), Some(&json!("2023-04-05")), "{request}");
        }
        // A month said alone is a date's, never a place or a name.
        let train = props(json!({"_from": {"type": "string"}, "date_of_journey": {"type": "string"}}), &[]);
        let f = fill(&train, "train tickets for the 2nd of March", now());
        assert_eq!(f.args.0.get("date_of_journey"), Some(&json!("2026-03-02")));
        assert_eq!(f.args.0.get("_from"), None, "{:?}", f.args);
        assert_eq!(fill(&train, "a train on Friday", now()).args.0.get("_from"), None);
    }

    #[test]
    fn the_ends_of_a_trip_go_by_from_and_to_whatever_the_properties_are_called() {
        let flights = props(
            json!({"destination_airport": {"type": "string"}, "origin_airport": {"type": "string"}, "departure_date": {"type": "string"}}),
            &["destination_airport", "origin_airport"],
        );
        for (request, from, to) in [
            ("a flight from JFK to LAX on the 15th of April", "JFK", "LAX"),
            ("a flight to LAX from JFK", "JFK", "LAX"),
            ("un volo da Milano a Roma", "Milano", "Roma"),
        ] {
            let f = fill(&flights, request, now());
            assert_eq!(f.args.0.get("origin_airport"), Some(&json!(from)), "{request}");
            assert_eq!(f.args.0.get("destination_airport"), Some(&json!(to)), "{request}");
        }
        // A date property is no end of the trip, though it departs.
        let f = fill(&flights, "a flight from Boston to Denver", now());
        assert_eq!(f.args.0.get("departure_date"), None, "{:?}", f.args);
    }

    #[test]
    fn a_boolean_is_true_when_named_false_when_negated_absent_otherwise() {
        let home = props(json!({"has_garage": {"type": "boolean"}, "in_unit_laundry": {"type": "boolean"}}), &[]);
        let f = fill(&home, "No need for a garage, but I'd like in-unit laundry", now());
        assert_eq!(f.args.0.get("has_garage"), Some(&json!(false)));
        assert_eq!(f.args.0.get("in_unit_laundry"), Some(&json!(true)));
        assert!(fill(&home, "a house in Berkeley", now()).args.0.is_empty());
    }

    #[test]
    fn proper_nouns_go_by_the_words_before_them_places_with_their_region() {
        let movies = props(
            json!({"cast": {"type": "string"}, "directed_by": {"type": "string"}, "location": {"type": "string", "description": "the city"},
                   "movie_name": {"type": "string"}}),
            &[],
        );
        let f = fill(&movies, "something starring Tom Hanks directed by Quentin Tarantino", now());
        assert_eq!(f.args.0.get("directed_by"), Some(&json!("Quentin Tarantino")));
        let f = fill(&movies, "I want to see the Avengers movie in Los Angeles", now());
        assert_eq!(f.args.0.get("location"), Some(&json!("Los Angeles")), "the place after a preposition of place");
        assert_eq!(f.args.0.get("movie_name"), Some(&json!("Avengers")));
        let f = fill(&movies, "what's on in Riga, Latvia tonight", now());
        assert_eq!(f.args.0.get("location"), Some(&json!("Riga, Latvia")));
        let bus = props(
            json!({"from_city": {"type": "string"}, "to_city": {"type": "string"}, "enum_kind": {"type": "string", "enum": ["Music", "Theater"]}}),
            &["from_city", "to_city"],
        );
        let f = fill(&bus, "a bus from Austin, TX to Dallas, TX after a musical show", now());
        assert_eq!(f.args.0.get("from_city"), Some(&json!("Austin, TX")));
        assert_eq!(f.args.0.get("to_city"), Some(&json!("Dallas, TX")));
        assert_eq!(f.args.0.get("enum_kind"), Some(&json!("Music")), "an enum value by its stem");
    }

    #[test]
    fn a_time_property_takes_the_time_said_and_its_numbers_are_no_counts() {
        let booking = props(
            json!({"appointment_time": {"type": "string", "description": "in 24-hour format HH:MM"},
                   "number_of_people": {"type": "integer"}, "timeout": {"type": "string"}}),
            &["appointment_time"],
        );
        let f = fill(&booking, "a table at 2 in the afternoon for 3 people", now());
        assert_eq!(f.args.0.get("appointment_time"), Some(&json!("14:00")));
        assert_eq!(f.args.0.get("number_of_people"), Some(&json!(3)));
        assert_eq!(f.args.0.get("timeout"), None, "a timeout is no time of day");
        let f = fill(&booking, "prenota per 4 persone alle 8 di sera", now());
        assert_eq!(f.args.0.get("appointment_time"), Some(&json!("20:00")));
        assert_eq!(f.args.0.get("number_of_people"), Some(&json!(4)));
        assert_eq!(fill(&booking, "a table for 2 people at 9", now()).missing, ["appointment_time"]);
    }

    #[test]
    fn a_boolean_spelt_as_an_enum_is_read_as_one() {
        let search = props(
            json!({"free_entry": {"type": "string", "enum": ["True", "False", "dontcare"]},
                   "in_unit_laundry": {"type": "boolean"}, "city": {"type": "string"}}),
            &[],
        );
        let f = fill(&search, "a museum with free entry and a flat with in-unit laundry", now());
        assert_eq!(f.args.0.get("free_entry"), Some(&json!("True")));
        assert_eq!(f.args.0.get("in_unit_laundry"), Some(&json!(true)));
        let f = fill(&search, "a museum, no need for free entry", now());
        assert_eq!(f.args.0.get("free_entry"), Some(&json!("False")));
        assert_eq!(fill(&search, "a museum", now()).args.0.get("free_entry"), None);
    }

    #[test]
    fn a_performer_is_cued_by_how_people_say_one() {
        let movies = props(json!({"cast": {"type": "string"}, "directed_by": {"type": "string"}}), &[]);
        for (request, cast) in [
            ("Find me a Horror movie that features Christopher Lee?", "Christopher Lee"),
            ("fantasy movies with Danny John-Jules in the cast and directed by Jim Henson", "Danny John-Jules"),
            ("a movie acted by Ronald Young and directed by Herbert Ross", "Ronald Young"),
            ("Action movies directed by Sujeeth Reddy and featuring Supreet Reddy", "Supreet Reddy"),
        ] {
            let f = fill(&movies, request, now());
            assert_eq!(f.args.0.get("cast"), Some(&json!(cast)), "{request}");
            assert_ne!(f.args.0.get("directed_by"), Some(&json!(cast)), "{request}");
        }
        // A name said otherwise is no performer by these cues.
        let f = fill(&movies, "a movie directed by Jim Henson", now());
        assert_eq!(f.args.0.get("directed_by"), Some(&json!("Jim Henson")));
        assert_eq!(f.args.0.get("cast"), None);
    }

    #[test]
    fn free_text_is_what_follows_a_colon_or_semicolon() {
        let search = props(json!({"query": {"type": "string"}}), &["query"]);
        assert_eq!(
            fill(&search, "trigger the web search function; where is beijing", now()).args.0.get("query"),
            Some(&json!("where is beijing"))
        );
        assert_eq!(fill(&search, "search the web", now()).missing, ["query"]);
    }

    #[test]
    fn a_number_in_another_unit_is_not_the_propertys() {
        let climate = props(json!({"temperature": {"type": "number", "description": "Target temperature"}}), &[]);
        assert_eq!(fill(&climate, "set a timer for 3 minutes", now()).args.0.get("temperature"), None);
        let got = fill(&climate, "metti 21 gradi", now());
        assert_eq!(got.args.0.get("temperature"), Some(&json!(21)));
        let got = fill(&climate, "set it to 68", now());
        assert_eq!(got.args.0.get("temperature"), Some(&json!(68)));
        let fan = props(json!({"percentage": {"type": "integer", "description": "Fan speed in percent"}}), &[]);
        assert_eq!(fill(&fan, "set a timer for forty minutes", now()).args.0.get("percentage"), None);
        assert_eq!(fill(&fan, "fan at 40", now()).args.0.get("percentage"), Some(&json!(40)));
    }

    #[test]
    fn a_number_goes_to_the_property_in_its_unit() {
        let timer = props(
            json!({"hours": {"type": "integer", "description": "Hours to add"},
                   "minutes": {"type": "integer", "description": "Minutes to add"}}),
            &[],
        );
        let f = fill(&timer, "add 4 minutes to the timer", now());
        assert_eq!(f.args.0.get("minutes"), Some(&json!(4)));
        assert_eq!(f.args.0.get("hours"), None, "four minutes are no hours");
        let light = props(
            json!({"brightness": {"type": "integer", "description": "Brightness in percent"},
                   "temperature": {"type": "integer", "description": "Colour temperature in kelvin"}}),
            &[],
        );
        let f = fill(&light, "warm white 2700 kelvin at 40%", now());
        assert_eq!(f.args.0.get("brightness"), Some(&json!(40)));
        assert_eq!(f.args.0.get("temperature"), Some(&json!(2700)));
        // An amount added is still in its unit.
        let f = fill(&timer, "give me three more minutes on the timer", now());
        assert_eq!((f.args.0.get("minutes"), f.args.0.get("hours")), (Some(&json!(3)), None));
    }

    #[test]
    fn a_duration_said_without_a_figure_is_minutes_and_no_name() {
        let timer = props(
            json!({"hours": {"type": "integer"}, "minutes": {"type": "integer"}, "name": {"type": "string", "description": "Name of the timer"}}),
            &[],
        );
        for (request, minutes) in [
            ("uh set a timer for half an hour", 30),
            ("a half-hour timer", 30),
            ("timer for a quarter of an hour", 15),
            ("set a timer for an hour and a half", 90),
            ("metti un timer di un quarto d'ora", 15),
            ("metti un timer di un quarto d’ora", 15),
            ("timer di mezz'ora", 30),
            ("un timer di un'ora e mezza", 90),
        ] {
            let f = fill(&timer, request, now());
            assert_eq!(f.args.0.get("minutes"), Some(&json!(minutes)), "{request}: {:?}", f.args);
            assert_eq!((f.args.0.get("hours"), f.args.0.get("name")), (None, None), "{request}: {:?}", f.args);
        }
        // Words that only look like one.
        assert_eq!(fill(&timer, "set a timer for the half time show", now()).args.0.get("minutes"), None);
    }

    #[test]
    fn a_lower_case_place_goes_to_one_property() {
        let s = props(
            json!({"area": {"type": "string", "description": "Name of an area"},
                             "name": {"type": "string", "description": "Name of a device"}}),
            &[],
        );
        let f = fill(&s, "what's the temperature in garage", now());
        assert_eq!(f.args.0.len(), 1, "{:?}", f.args.0);
        // A courtesy after the place is no part of it.
        let weather = props(json!({"city": {"type": "string", "description": "The city"}}), &["city"]);
        for request in [
            "what's the weather in bergen please",
            "what's the weather in bergen thank you",
            "che tempo fa a bergen per favore",
            "che tempo fa a bergen grazie",
        ] {
            assert_eq!(fill(&weather, request, now()).args.0.get("city"), Some(&json!("bergen")), "{request}");
        }
    }

    #[test]
    fn an_apostrophe_in_a_word_is_no_quote() {
        assert!(quoted_strings("what's the weather at Luca's place").is_empty());
        assert_eq!(quoted_strings("serve l'ombrello? chiamalo «Mario»"), ["Mario"]);
    }
}
