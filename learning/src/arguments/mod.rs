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
//!    one) before a weekday said as the next of its name ("the upcoming
//!    Saturday", "venerdì prossimo", counted from the day the request says
//!    is today when it says one) and a relative one ("tomorrow"), written
//!    as the description
//!    asks (`YYYY-MM-DD` unless it says `MM/DD/YYYY`, `DD/MM/YYYY` or
//!    `DD-MM-YYYY`); the
//!    property that ends a span (`end_date`, `return_date`) takes its last
//!    day, the others its first; the numbers of a day are no counts. A
//!    string named for a `time` (`journey_start_time`, not `timeout`) or
//!    described as `HH:MM` takes a time of day said ("9am", "4:30 in the
//!    afternoon", "alle 3 del pomeriggio": `"16:30"`,
//!    [`crate::time_of_day`]), whose numbers are then no counts either.
//!    A day whose format also asks for the time (`'dd/mm/yyyy HH:MM'`,
//!    `YYYY-MM-DDTHH:MM:SS`) takes both, as one value; two such
//!    properties named as a window's start and end read what is said as a
//!    span — a day alone its first and last second, two times its ends,
//!    one time its start. A time is written `HH:MM:SS` only when the
//!    description offers no `HH:MM`.
//! 2. **A value named by its parameter.** The property's name said as
//!    words (`botVersion` → "bot version", or its last word alone when
//!    that is specific or a code follows: "id 1234") and followed by its
//!    value, past joining words ("port number 5432", "nickname
//!    'PrimaryDB'", "component AB1010CD"): a quote in the same clause, a
//!    number (or a number word) for a number, a code- or name-like word
//!    for a string; or a quote right before the name ("the 'main'
//!    database", "'admin_user' as username").
//! 3. **An enum value the request names.** `{"enum": ["celsius",
//!    "fahrenheit"]}` takes the value the request says as a whole word,
//!    any case ("in fahrenheit"), the longest of those said ("premium
//!    economy" holds "economy"), the first of equals; else a one-word value of four
//!    letters or more that a word of the request has as its stem ("a
//!    musical show" → `Music`); else the one value a word of the request
//!    shares all but its ending with ("thrill movies" → `Thriller`); else
//!    the one action the request says by another verb of its class
//!    ("remove" for `delete`); else the one pole the request says by
//!    another word of its axis and sign ("shut", "chiudi" for `close`).
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
//!    d'ora", "an hour and a half": 30, 15, 90). A figure hyphened to a
//!    word counts that word ("2-bedroom", "a 3-star hotel" books no 3
//!    rooms); a string enum of figures takes the count so read. A level
//!    brought "to" a figure without a unit is no length of time ("turn the
//!    heat up to 21" gives no `duration_min`). A number
//!    whose description says what its values stand for ("1 for Bangkok,
//!    2 for Chiang Mai") takes the value of the thing the request names.
//! 5. **A quoted string**, for `type: string` without an enum: the first
//!    text in quotes ("…", '…', «…», “…”) no earlier property took — for
//!    one named as a place, only a quote after a preposition of place
//!    ("tickets for 'After The Wedding' in Berkeley"); never for one of a
//!    rule-1 slot's kind (a quoted 'network777' is no `url`).
//!    An array takes the first list the request writes in brackets whose
//!    items are all of its item type ("the numbers [1, 54, 3]",
//!    "categories ['red', 'blue']").
//! 6. **A boolean the request names**: a word of the property's name
//!    that says what it is about (not `is`, `has`, `include`, …: "hidden"
//!    of `include_hidden`), and that no other boolean of the tool has
//!    ("condo", not "cleaning", of `is_cleaning_condo` beside
//!    `is_cleaning_home`), is in the request, or a part of a hyphenated word of it ("in-unit")
//!    — `false` when a negation stands up to four words before it ("no
//!    need for a garage") or prefixes it ("non-smoking"), else `true`; a string
//!    enum of `True` and `False` is a boolean too, in its own spelling.
//! 7. **A proper noun.** A string property the words before a proper noun
//!    name ("directed by Gurinder Chadha" for `directed_by`, "from Austin"
//!    for `from_city`) takes it, and so does one named for an end of a
//!    trip the preposition before it says ("from JFK" for `origin_airport`,
//!    "to LAX" for `destination_airport`, "da"/"a" in Italian), and one
//!    for who plays in a film (`cast`, `starring`) a name said as a
//!    performer ("featuring Christopher Lee", "with Danny John-Jules in
//!    the cast", "acted by Ronald Young"), one for who made a work
//!    (`artist`, `author`) the name after "by", and one named for a kind
//!    of thing the name said with that kind's word ("the Isolation album",
//!    "Hang Dong District" → "Hang Dong"); a month or
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
//! 10. **An object's own properties**, for `type: object` with
//!     `properties` left unfilled: read from the whole request by these
//!     rules ("a large size with coconut milk" for `new_preferences:
//!     {size, milk_type}`), when it gives one at least.
//!
//! What it cannot fill is left out, and [`Filled::missing`] names the
//! `required` properties among them: the caller asks the user for them in
//! one line rather than call the tool without them.
//!
//! The rules' code, by file: rule 1 in `slots.rs`, rule 2 in
//! `named_values.rs`, rule 4 in `numbers.rs`, rule 5's lists in
//! `lists.rs`, rule 7 in `proper_nouns.rs`;
//! rules 3, 5, 6 and 8 here. What the offline planner asks of a request's
//! values besides ([`one_of_two`], [`without_proper_nouns`],
//! [`without_values`]) is in `request_values.rs`.

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::ToolArgs;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

use crate::fast_path::extract::{durations_in_minutes, extract, SlotKind};
use crate::tool_words::split_name;

pub mod learnt_values;
mod lists;
mod named_values;
mod numbers;
mod proper_nouns;
mod request_values;
mod slots;

pub use request_values::{one_of_two, without_proper_nouns, without_values};

/// The arguments filled, and the required ones that could not be.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filled {
    /// The arguments.
    pub args: ToolArgs,
    /// Required properties left without a value, by name.
    pub missing: Vec<String>,
}

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
    // 35 percent", "per favore", "abbassale") — but a member of the
    // property's own enum is the vendor's word, grammar or not (a
    // `command` of `on` / `off`).
    let properties = schema.get("properties");
    let enum_of = |k: &String| properties.and_then(|p| p.get(k)).and_then(|s| s.get("enum")).is_some();
    out.args.0.retain(|k, v| enum_of(k) || v.as_str().is_none_or(|s| !crate::spoken::only_grammar(s, &context)));
    // A place or a device is no word of the tool's own description ("set
    // the thermostat to 20" for a tool that "Sets the target temperature
    // of a thermostat").
    out.args.0.retain(|k, v| {
        let named = properties.and_then(|p| p.get(k)).is_some_and(|spec| crate::spoken::handles(k, spec));
        !named || v.as_str().is_none_or(|s| !crate::spoken::described(s, &context))
    });
    // Read as words, a value lost the hyphens and edge apostrophes the
    // user wrote: "lo-fi beats", not "lo fi beats"; "mo' arriva".
    for v in out.args.0.values_mut() {
        if let Some(said) = v.as_str().and_then(|s| crate::text::as_written_in(request, s)) {
            *v = Value::String(said);
        }
    }
    out
}

/// Whether rule 1 reads property `name` (`spec`) by its name or format —
/// a path, a URL, an e-mail, a date, a time: a value the request marks by
/// its shape, which no reading of its role may take as words
/// (`offline_planner::property_roles`).
pub fn by_name_or_format(name: &str, spec: &Value) -> bool {
    slots::slot_for(name, spec).is_some()
        || slots::date_like(name, spec)
        || slots::time_like(name, spec)
        || slots::moment_like(name, spec)
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
    let required = crate::spoken::required_of(schema);
    let mut said = Said::new(request, now);
    said.shared_flags = shared_flag_words(properties);
    said.units = units_of(properties);
    let mut slots = moments_numbers(properties, &said);
    slots.extend(lists::listed_numbers(properties, &said));
    let mut taken = Taken { slots, ..Taken::default() };
    // Rules 1–6 first, for every property: the values the request marks
    // (slots, values named by their parameter, enum words, numbers, quotes,
    // booleans) go where they belong before a proper noun is guessed for
    // what is left. Required properties first: a value the request gives
    // once is more likely one the call cannot do without.
    let mut taken_words: Vec<String> = Vec::new();
    let mut left: Vec<(&String, &Value)> = Vec::new();
    // A window of two moments reads its days and times together.
    let windowed = slots::fill_window(properties, &said, &mut taken);
    out.args.0.extend(windowed.iter().filter_map(|(name, v)| v.clone().map(|v| (name.clone(), v))));
    let mut ordered: Vec<(&String, &Value)> =
        properties.iter().filter(|(name, _)| !windowed.iter().any(|(w, _)| w == *name)).collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    let named = named_values::named_first(&ordered, &said, &mut taken);
    for ((name, spec), named) in ordered.into_iter().zip(named) {
        match named.or_else(|| marked_value(&said, name, spec, &mut taken)) {
            Some(v) => {
                if let Some(s) = v.as_str() {
                    taken_words.extend(words_of(s));
                }
                out.args.0.insert(name.clone(), v);
            }
            None => left.push((name, spec)),
        }
    }
    taken_words.append(&mut taken.words);
    // Rules 7 and 8, for the strings left.
    let kinds: Vec<String> = properties.keys().flat_map(|name| proper_nouns::kind_words(name)).collect();
    let nouns: Vec<proper_nouns::Noun> = proper_nouns::noun_runs(&said.ex.text, &said.toks, &kinds)
        .into_iter()
        .filter(|n| !words_of(&n.text).iter().all(|w| taken_words.contains(w)))
        .filter(|n| !said.quotes.iter().any(|q| overlaps((q.0, q.1), (n.start, n.end))))
        .filter(|n| {
            !said.dates.iter().any(|d| overlaps(d.0, (n.start, n.end)))
                && !said.times.iter().any(|t| overlaps(t.span, (n.start, n.end)))
                && !proper_nouns::calendar_word(&n.text)
        })
        .collect();
    let mut used_nouns: Vec<usize> = Vec::new();
    let mut still: Vec<(&String, &Value)> = Vec::new();
    for (name, spec) in left {
        match proper_nouns::cued_noun(&nouns, &used_nouns, name, spec) {
            Some((i, head)) => {
                used_nouns.push(i);
                let v = head.unwrap_or_else(|| nouns[i].with_region(proper_nouns::keeps_region(name, spec)));
                out.args.0.insert(name.clone(), Value::String(v));
            }
            None => still.push((name, spec)),
        }
    }
    // (A quantity is no place: "for 30 minutes".)
    let quantity = |w: &String| w.parse::<f64>().is_ok() || numbers::unit_of(w).is_some();
    let mut lower_case = proper_nouns::lower_case_place(&said.ex.text)
        .filter(|p| !words_of(p).iter().all(|w| taken_words.contains(w) || quantity(w)));
    for (name, spec) in still {
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
        // (A moment is no place, whatever its description says of one:
        // "the local time of the departure location".)
        let moment = slots::moment_like(name, spec);
        let value =
            (kind == "string" && spec.get("enum").is_none() && !moment && proper_nouns::place_or_name(name, spec))
                .then(|| {
                    let (place, region) =
                        (proper_nouns::place_like(name, spec), proper_nouns::keeps_region(name, spec));
                    proper_nouns::next_noun(&nouns, &mut used_nouns, place, region)
                })
                .and_then(|noun| match noun {
                    Some(v) => Some(v),
                    // One property takes it: a place is no name too.
                    None if nouns.is_empty() => lower_case.take(),
                    None => None,
                })
                .or_else(|| proper_nouns::next_code(&nouns, &mut used_nouns, name, spec))
                .map(Value::String)
                .or_else(|| text_or_object(&said, name, spec, now));
        match value {
            Some(v) => {
                out.args.0.insert(name.clone(), v);
            }
            None if required.contains(&name.as_str()) => out.missing.push(name.clone()),
            None => {}
        }
    }
    slots::leave_today_to_the_tool(properties, &required, &mut out.args, now.date_naive());
    out.missing.sort_unstable();
    out
}

/// Rules 8 and 10 for a property left: free text (after its name, else
/// after a colon), a purpose, an object's own properties.
fn text_or_object(said: &Said<'_>, name: &str, spec: &Value, now: DateTime<FixedOffset>) -> Option<Value> {
    match spec.get("type").and_then(Value::as_str) {
        Some("string") if free_text_like(name) => {
            after_its_name(said, name).or_else(|| free_text(&said.ex.text)).map(Value::String)
        }
        Some("string") if purpose_like(name) => purpose(said).map(Value::String),
        Some("object") => nested(spec, said.request, now),
        _ => None,
    }
}

/// An object property's value: its own properties read from the whole
/// request by the same rules ("with a limit of 50 items" for `params:
/// {limit}`, "a large size with coconut milk" for `new_preferences: {size,
/// milk_type}`), when the request gives one at least.
fn nested(spec: &Value, request: &str, now: DateTime<FixedOffset>) -> Option<Value> {
    spec.get("properties")?;
    let inner = fill_read(spec, request, now);
    (!inner.args.0.is_empty()).then(|| Value::Object(inner.args.0.into_iter().collect()))
}

/// The number slots that are part of a moment, which no count takes:
/// absolute dates' ("May 15, 2023" is no 15 and no 2023), and times of
/// day's ("at 2 in the afternoon", "11:00 a.m." are no counts of 2 or 11)
/// — one written `20.30` only where a property holds a time: elsewhere it
/// may be a price.
fn moments_numbers(properties: &serde_json::Map<String, Value>, said: &Said<'_>) -> Vec<usize> {
    let times_claim = properties.iter().any(|(name, spec)| slots::time_like(name, spec));
    let clock = |t: &crate::time_of_day::Said| {
        times_claim || said.ex.text[t.span.0..t.span.1].contains(|c: char| c == ':' || c.is_alphabetic())
    };
    let moment = |span: (usize, usize)| {
        said.times.iter().any(|t| clock(t) && overlaps(t.span, span)) || said.dates.iter().any(|d| overlaps(d.0, span))
    };
    (0..said.ex.slots.len())
        .filter(|i| said.ex.slots[*i].kind == SlotKind::Number && moment(said.ex.slots[*i].span))
        .collect()
}

/// The unit each number property is in, by its name or description
/// ("Brightness in percent", `minutes`).
fn units_of(properties: &serde_json::Map<String, Value>) -> Vec<(String, &'static str)> {
    properties
        .iter()
        .filter(|(_, spec)| matches!(spec.get("type").and_then(Value::as_str), Some("number" | "integer")))
        .filter_map(|(name, spec)| {
            let words = property_words(name, spec);
            // A temperature in no unit its text names is in degrees,
            // whichever scale: never a duration nor a share.
            let unit = words.iter().find_map(|w| numbers::unit_of(w));
            unit.or_else(|| words.iter().any(|w| w == "temperature").then_some("degree")).map(|u| (name.clone(), u))
        })
        .collect()
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
    /// Words two booleans of the schema share (rule 6).
    shared_flags: Vec<String>,
}

impl<'a> Said<'a> {
    fn new(request: &'a str, now: DateTime<FixedOffset>) -> Said<'a> {
        let ex = extract(request, now);
        let toks = tokens(&ex.text);
        let quotes = quoted_spans(&ex.text);
        let mut dates = slots::absolute_dates(&ex.text, now);
        // A day the request says is today is no value but the clock a
        // weekday is counted from ("the upcoming Wednesday, today is
        // Monday April 25th 2023").
        let today = slots::stated_today(&ex.text, &mut dates);
        // A weekday counts only where no day is said in full: "next
        // Wednesday 2023.11.15" is that day.
        if dates.is_empty() {
            let from = today.as_ref().and_then(|t| chrono::NaiveDate::parse_from_str(&t.1, "%Y-%m-%d").ok());
            dates = slots::weekday_dates(&ex.text, from.unwrap_or(now.date_naive()));
            // Said as today and nothing else, it is the day asked for.
            if dates.is_empty() {
                dates.extend(today);
            }
        }
        let times = crate::time_of_day::said(&ex.text);
        Said { request, ex, toks, quotes, dates, times, units: Vec::new(), shared_flags: Vec::new() }
    }
}

/// Rules 1–6: the value the request marks for one property, if any.
fn marked_value(said: &Said<'_>, name: &str, spec: &Value, taken: &mut Taken) -> Option<Value> {
    let kind = spec.get("type").and_then(Value::as_str).unwrap_or("");
    // A day said in full before a relative one ("today, April 25th
    // 2023"): a date property reads dates first.
    let date = kind == "string" && slots::date_like(name, spec);
    date.then(|| slots::take_date(name, spec, &said.dates, &said.ex, taken))
        .flatten()
        .map(|day| slots::with_time_of_day(day, spec, said, taken))
        .or_else(|| {
            slots::slot_for(name, spec).filter(|_| !date).and_then(|k| slots::take_slot(&said.ex, k, &mut taken.slots))
        })
        .or_else(|| {
            (kind == "string" && slots::time_like(name, spec)).then(|| slots::take_time(spec, said, taken)).flatten()
        })
        // (An enum's value is one of its own: "United Kingdom" names no
        // `units`.)
        .or_else(|| taken.tried(|t| named_values::named_value(said, name, kind, t).filter(|v| in_enum(spec, v))))
        .or_else(|| (kind == "string").then(|| numbers::take_counted_enum(name, spec, said, taken)).flatten())
        .or_else(|| enum_named(spec, said.request))
        .or_else(|| {
            crate::colours::colour_property(name, spec)
                .then(|| crate::colours::said(said.request))
                .flatten()
                .map(Value::String)
        })
        .or_else(|| match kind {
            "number" | "integer" => numbers::described_code(spec, said, taken)
                .or_else(|| numbers::take_number(name, said, kind == "integer", taken)),
            _ => None,
        })
        // (A property of a slot's kind takes that slot or nothing: a
        // quoted 'network777' is no `url`.)
        .or_else(|| {
            (kind == "string" && spec.get("enum").is_none() && slots::slot_for(name, spec).is_none())
                .then(|| {
                    let new = property_words(name, spec).iter().any(|w| w == "new");
                    take_quote(said, proper_nouns::place_named(name), new, taken)
                })
                .flatten()
        })
        .or_else(|| (kind == "array").then(|| lists::take_list(spec, said, taken)).flatten())
        .or_else(|| (kind == "boolean").then(|| boolean_named(name, &said.shared_flags, &said.toks)).flatten())
        .or_else(|| yes_no_enum(name, spec, said))
}

/// Rule 6 for a boolean spelt as an enum of strings (`["True", "False",
/// "dontcare"]`, as some schemas write one): the value the rule reads, in
/// the enum's own spelling.
fn yes_no_enum(name: &str, spec: &Value, said: &Said<'_>) -> Option<Value> {
    let (yes, no) = yes_no_values(spec)?;
    let b = boolean_named(name, &said.shared_flags, &said.toks)?.as_bool()?;
    Some(if b { yes.clone() } else { no.clone() })
}

/// A string enum's spellings of true and false, when it has both: a
/// boolean spelt as strings.
fn yes_no_values(spec: &Value) -> Option<(&Value, &Value)> {
    let values = spec.get("enum")?.as_array()?;
    let spelt = |b: bool| values.iter().find(|v| v.as_str().is_some_and(|s| s.eq_ignore_ascii_case(&b.to_string())));
    Some((spelt(true)?, spelt(false)?))
}

/// What the rules took already: extractor slots and quotes, by index.
#[derive(Clone, Default)]
struct Taken {
    /// Words of the request a value stands for that is not their text
    /// (the "Chiang Mai" of `province_id: 2`): no proper noun.
    words: Vec<String>,
    /// Bracketed lists, by index.
    lists: Vec<usize>,
    slots: Vec<usize>,
    quotes: Vec<usize>,
    dates: Vec<usize>,
    times: Vec<usize>,
}

impl Taken {
    /// What `take` finds, taking what it takes only when it finds a value
    /// (a value it then refuses leaves nothing taken).
    fn tried<T>(&mut self, take: impl FnOnce(&mut Taken) -> Option<T>) -> Option<T> {
        let mut trial = self.clone();
        let value = take(&mut trial)?;
        *self = trial;
        Some(value)
    }
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

/// Two words of one root said with other endings: they share five letters
/// or more and all but two of the shorter ("thrill" / "thriller",
/// "mysterious" / "mystery", "director" / "directed").
fn akin(a: &str, b: &str) -> bool {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    common >= 5 && common + 2 >= a.chars().count().min(b.chars().count())
}

/// A property's description as written (case kept: "HH:MM" and
/// "MM/DD/YYYY" are read as spelt); empty when it has none.
fn description_of(spec: &Value) -> &str {
    spec.get("description").and_then(Value::as_str).unwrap_or("")
}

/// Rule 5: the first quoted text no property took — for a place, only one
/// said after a preposition of place: "tickets for 'The Grand Adventure'
/// in Santa Rosa" quotes the film, not where it shows; for a property of
/// what something becomes (`new` in its name or description), the one
/// said after "to", "into" or "as" first: "rename website "Frank" to
/// "Bob"" gives the new name "Bob".
fn take_quote(said: &Said<'_>, place: bool, new: bool, taken: &mut Taken) -> Option<Value> {
    let word_before = |start: usize| said.toks.iter().rfind(|t| t.end <= start).map(|t| t.word.as_str());
    let placed = |start: usize| word_before(start).is_some_and(|w| proper_nouns::PLACE_PREPOSITIONS.contains(&w));
    let becomes = |start: usize| matches!(word_before(start), Some("to" | "into" | "as"));
    let free = |q: &usize| !taken.quotes.contains(q) && (!place || placed(said.quotes[*q].0));
    let q = (0..said.quotes.len())
        .filter(free)
        .find(|q| new && becomes(said.quotes[*q].0))
        .or_else(|| (0..said.quotes.len()).find(free))?;
    taken.quotes.push(q);
    Some(Value::String(said.quotes[q].2.clone()))
}

/// Words of a boolean's name that say it is one, not what it is about.
const FLAG_WORDS: &[&str] = &[
    "is",
    "has",
    "have",
    "include",
    "includes",
    "enable",
    "enabled",
    "use",
    "allow",
    "allowed",
    "with",
    "should",
    "do",
    "does",
    "flag",
    "in",
    "on",
    "the",
    "of",
    "a",
    "to",
    "for",
    "available",
];

/// Rule 6: a boolean the request names — a word of its name that says
/// what it is about ("hidden" of `include_hidden`, "protection" of
/// `trip_protection`), by its stem, and not one it `shares` with another
/// boolean of the tool: "cleaning services" names none of
/// `is_cleaning_condo`, `is_cleaning_home`, `is_cleaning_office` (the word
/// not said tells them apart), "sales tax" neither `apply_special_tax`
/// nor `tax_exempt`. `false` when a negation stands up to four words
/// before the first one said ("no need for a garage") or prefixes it ("a
/// non-smoking room"), else `true`.
fn boolean_named(name: &str, shared: &[String], toks: &[Tok]) -> Option<Value> {
    let about: Vec<String> =
        split_name(name).into_iter().filter(|w| !FLAG_WORDS.contains(&w.as_str()) && !shared.contains(w)).collect();
    if about.is_empty() {
        return None;
    }
    // A word of the request, or a part of a hyphenated one ("in-unit
    // laundry" for `in_unit_laundry`).
    // ("suitable for children" names `good_for_kids`.)
    let said = |w: &String, t: &Tok| {
        same_stem(w, &t.word)
            || t.word == *w
            || t.word.split('-').any(|p| p == w)
            || crate::tool_words::RequestWords::english(&t.word).is_some_and(|e| e == w)
    };
    let at = about.iter().filter_map(|w| toks.iter().position(|t| said(w, t))).min()?;
    let prefixed = toks[at].word.split('-').next().is_some_and(|p| p == "non" || p == "no");
    let negated = prefixed || toks[at.saturating_sub(4)..at].iter().any(|t| crate::text::is_negation(&t.word));
    Some(Value::Bool(!negated))
}

/// The words two or more of a schema's booleans have in their names
/// (rule 6: "cleaning" of `is_cleaning_condo` and `is_cleaning_home`).
fn shared_flag_words(properties: &serde_json::Map<String, Value>) -> Vec<String> {
    let boolean =
        |spec: &Value| spec.get("type").and_then(Value::as_str) == Some("boolean") || yes_no_values(spec).is_some();
    // How many booleans have each word in their names.
    let mut flags: BTreeMap<String, usize> = BTreeMap::new();
    for (name, _) in properties.iter().filter(|(_, spec)| boolean(spec)) {
        let words: BTreeSet<String> = split_name(name).into_iter().collect();
        for w in words {
            *flags.entry(w).or_default() += 1;
        }
    }
    flags.into_iter().filter(|(_, n)| *n > 1).map(|(w, _)| w).collect()
}

/// Whether `v` may be `spec`'s value: any, without an enum; one of its
/// members, with one.
fn in_enum(spec: &Value, v: &Value) -> bool {
    spec.get("enum").and_then(Value::as_array).is_none_or(|values| values.contains(v))
}

/// Rule 3: the longest value of the property's enum the request names as a
/// whole word (or words), any case; else one a word of the request has for
/// its stem ("a musical show" names `Music`).
fn enum_named(spec: &Value, request: &str) -> Option<Value> {
    let words = words_of(request);
    let lower = format!(" {} ", words.join(" "));
    let values = spec.get("enum")?.as_array()?;
    // The longest member said, the first of equals: "premium economy"
    // holds "economy".
    let said = |v: &&Value| {
        let w = v.as_str().map(words_of).unwrap_or_default();
        (!w.is_empty() && lower.contains(&format!(" {} ", w.join(" ")))).then_some(w.len())
    };
    values
        .iter()
        .filter_map(|v| said(&v).map(|n| (n, v)))
        // `max_by_key` keeps the last of equals: reversed, the first.
        .rev()
        .max_by_key(|(n, _)| *n)
        .map(|(_, v)| v)
        .or_else(|| {
            values.iter().find(|v| {
                let w = v.as_str().map(words_of).unwrap_or_default();
                w.len() == 1 && w[0].len() >= 4 && words.iter().any(|r| r.starts_with(&w[0]))
            })
        })
        // Else one a word of the request shares all but its ending with
        // ("thrill movies" → `Thriller`, "a mysterious type" → `Mystery`);
        // of a value of words, each word in a row so, or cut short ("family
        // counseling" → `Family Counselor`, "science fiction" → `Sci-fi`).
        .or_else(|| {
            let fits = |v: &[String], at: usize| {
                v.iter()
                    .zip(&words[at..])
                    .all(|(w, r)| w == r || akin(w, r) || (w.len() >= 2 && r.starts_with(w.as_str())))
            };
            let mut akin_values = values.iter().filter(|v| {
                let w = v.as_str().map(words_of).unwrap_or_default();
                match w.len() {
                    0 => false,
                    1 => words.iter().any(|r| akin(r, &w[0])),
                    n => (0..words.len().saturating_sub(n - 1)).any(|at| fits(&w, at)),
                }
            });
            akin_values.next().filter(|_| akin_values.next().is_none())
        })
        // An action said by another verb of its class ("remove" for
        // `delete`).
        .or_else(|| {
            let said: Vec<&str> = words.iter().flat_map(|w| crate::fast_path::gate::action_classes(w)).collect();
            let of_said = |v: &&Value| {
                v.as_str().is_some_and(|v| crate::fast_path::gate::action_classes(v).iter().any(|c| said.contains(c)))
            };
            let mut named = values.iter().filter(of_said);
            named.next().filter(|_| named.next().is_none())
        })
        // A pole said by another word of its axis and sign ("shut" or
        // "chiudi" for `close`, "accendi" for `on`), of an enum that names
        // both poles of the axis: a vendor's command enum spells each pole
        // once, and the user says it their way.
        .or_else(|| {
            let poles = |v: &Value| v.as_str().map(|v| crate::fast_path::gate::poles_of(&crate::text::normalize(v)));
            let named: Vec<(&str, bool)> = values.iter().filter_map(poles).flatten().collect();
            let said: Vec<(&str, bool)> = words
                .iter()
                .flat_map(|w| crate::fast_path::gate::poles_of(w))
                .filter(|(axis, p)| named.contains(&(*axis, !*p)))
                .collect();
            let of_said = |v: &&Value| poles(v).is_some_and(|ps| ps.iter().any(|p| said.contains(p)));
            let mut named = values.iter().filter(of_said);
            named.next().filter(|_| named.next().is_none())
        })
        .cloned()
}

/// Lower-case words, letters and digits only.
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn property_words(name: &str, spec: &Value) -> Vec<String> {
    let description = description_of(spec);
    let mut words = split_name(name);
    words.extend(words_of(description));
    words
}

/// Words of a string property's name that make it free text the user
/// words (rule 8): what to search for, say or run.
const FREE_TEXT: &[&str] = &[
    "query", "search", "keyword", "keywords", "text", "message", "content", "prompt", "question", "input", "term",
    "command",
];

fn free_text_like(name: &str) -> bool {
    split_name(name).iter().any(|w| FREE_TEXT.contains(&w.as_str()))
}

/// Words of a string property's name that make it what something is for
/// (rule 8): said as an infinitive.
fn purpose_like(name: &str) -> bool {
    split_name(name).iter().any(|w| matches!(w.as_str(), "purpose" | "reason" | "goal"))
}

/// Rule 8's purpose: the words after the request's last "to" that opens a
/// clause ("an alarm for 11PM reminding me to brush my teeth" → "brush
/// my teeth"; "a reminder to text Raj at 11PM" → "text Raj"), without
/// the times and days said in it, two words at least.
fn purpose(said: &Said<'_>) -> Option<String> {
    let text = &said.ex.text;
    let to = said.toks.iter().rposition(|t| t.word == "to")?;
    let next = said.toks.get(to + 1)?;
    // "to 11PM", "to March 3rd" are an end, not a purpose.
    let moment = |span: (usize, usize)| {
        said.times.iter().any(|t| overlaps(t.span, span)) || said.dates.iter().any(|d| overlaps(d.0, span))
    };
    if next.word.chars().next().is_some_and(|c| c.is_ascii_digit()) || moment((next.start, next.end)) {
        return None;
    }
    let words: Vec<&str> =
        said.toks[to + 1..].iter().filter(|t| !moment((t.start, t.end))).map(|t| &text[t.start..t.end]).collect();
    // A preposition left before a time taken out ("text Raj at").
    let mut words = words;
    while words.last().is_some_and(|w| matches!(w.to_lowercase().as_str(), "at" | "on" | "by" | "for" | "in")) {
        words.pop();
    }
    (words.len() >= 2).then(|| words.join(" "))
}

/// Rule 8's text named by its parameter: the rest of the request after
/// the last word of the property's name, past "called", "is" or a colon
/// ("using the command echo %time%" → `echo %time%`), quotes and all.
fn after_its_name(said: &Said<'_>, name: &str) -> Option<String> {
    let last = split_name(name).pop()?;
    let at = said.toks.iter().rposition(|t| t.word == last)?;
    let rest = said.ex.text[said.toks[at].end..].trim_start_matches([' ', ':']);
    let rest = ["called ", "is ", "named "].iter().find_map(|w| rest.strip_prefix(w)).unwrap_or(rest);
    let rest = rest.trim().trim_end_matches(['.', '?', '!']).trim();
    (!rest.is_empty() && !rest.contains([',', ';'])).then(|| rest.to_owned())
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
            // Another place joined after the value (home G's dev split).
            (
                "cut the lights off in the pantry and the laundry room",
                json!({"area": "pantry", "domain": ["light"]}),
                true,
            ),
            // Joined after, but no place ("I'm" is no Italian article),
            // or a second request.
            (
                "I'm currently in Chicago, IL, and I'm interested in a music event",
                json!({"city": "Chicago, IL"}),
                false,
            ),
            ("turn off the lights in the pantry and turn on the fan", json!({"area": "pantry"}), false),
            ("movies directed by David Leitch and acted by Lori", json!({"directed_by": "David Leitch"}), false),
            ("turn on the office lights", json!({"area": "office"}), false),
            ("turn on the lights and play jazz", json!({"search_query": "jazz"}), false),
            (
                "with 'admin_user' as username and 'secret' as the password",
                json!({"username": "admin_user", "password": "secret"}),
                false,
            ),
        ] {
            assert_eq!(one_of_two(&args(call), request), two, "{request}");
        }
    }

    /// A member of the property's own enum is kept, though it is a word of
    /// grammar (home F's `lighting_control`, one tool with a `command` of
    /// `on` / `off`: "lights off in the larder" lost its `off`); a tool
    /// named "lighting" acts on lights (`spoken::Context::of`).
    #[test]
    fn an_enum_member_that_is_grammar_is_kept() {
        let lights = json!({"type": "object", "required": ["command"], "properties": {
            "zone": {"type": "string", "description": "zone id as configured in the hub (room / outdoor area)"},
            "command": {"type": "string", "description": "power cmd", "enum": ["on", "off", "toggle"]}}});
        let got =
            fill_for("lighting_control", "power cmd for every fixture", &lights, "lights off in the larder", now());
        assert_eq!(Value::Object(got.args.0.into_iter().collect()), json!({"command": "off", "zone": "larder"}));
        // And "lighting" names lights: the words before them are the zone.
        let request = "put the drying room lights on please";
        let got = fill_for("lighting_control", "power cmd for every fixture", &lights, request, now());
        assert_eq!(Value::Object(got.args.0.into_iter().collect()), json!({"command": "on", "zone": "drying room"}));
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

    /// A code written in capitals left over beside its exchange is the
    /// ticker, whose property names no kind of noun rule 7 knew; a new
    /// name is the quote said after "to".
    #[test]
    fn a_ticker_is_a_code_in_capitals_and_a_new_name_what_it_becomes() {
        let stock = json!({"type": "object", "required": ["ticker", "exchange"], "properties": {
            "ticker": {"type": "string", "description": "The unique stock ticker symbol used to identify the shares."},
            "exchange": {"type": "string", "enum": ["NYSE", "NASDAQ"], "description": "The stock exchange."}}});
        let got = fill_for(
            "stock_price.get",
            "Get a stock's price",
            &stock,
            "Latest price for AAPL on the NASDAQ exchange?",
            now(),
        );
        assert_eq!(got.args.to_json(), r#"{"exchange":"NASDAQ","ticker":"AAPL"}"#);
        let rename = json!({"type": "object", "required": ["websiteId", "name"], "properties": {
            "websiteId": {"type": "string", "description": "The unique identifier of the website to be renamed."},
            "name": {"type": "string", "description": "The new name for the website."}}});
        let got = fill_for(
            "rename_website",
            "Renames a website",
            &rename,
            "Rename website \"Frank\" to \"Bob\". Web ID is 1234",
            now(),
        );
        assert_eq!(got.args.0.get("name"), Some(&json!("Bob")), "{got:?}");
    }

    /// A said value keeps the hyphens the user wrote: words are read
    /// without them.
    #[test]
    fn a_said_value_keeps_its_hyphens() {
        let play = json!({"type": "object", "properties": {
            "search": {"type": "string", "description": "What to play, as the user says it"},
            "zone": {"type": "string", "description": "Zone (room or outdoor area) as the household calls it"}},
            "required": ["search"]});
        let got = fill_for("media-play", "Play music", &play, "play some lo-fi beats in the home gym", now()).args;
        assert_eq!(got.to_json(), r#"{"search":"lo-fi beats","zone":"home gym"}"#);
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
        let f = fill(&v, "for the component AB1010CD and the vulnerability ID ef903ac-893-f00", now());
        assert_eq!(f.args.0.get("vulnerability"), Some(&json!("ef903ac-893-f00")), "past its id's word");
        let f = fill(&v, "for the component UUID AB1010CD", now());
        assert_eq!(f.args.0.get("component"), Some(&json!("AB1010CD")), "a capitalised code");
        let user = props(json!({"user_id": {"type": "string"}, "directed_by": {"type": "string"}}), &[]);
        let f = fill(&user, "mandates of Parath with ID U123", now());
        assert_eq!(f.args.0.get("user_id"), Some(&json!("U123")));
        let f = fill(&user, "a film directed by Guillermo del Toro", now());
        assert_eq!(f.args.0.get("directed_by"), Some(&json!("Guillermo del Toro")), "a name whole");
        // A value named by its parameter is that one's, though a property
        // before it would take the first quote; "called" names any word.
        let f = fill(
            &db,
            "Configure a server with the nickname 'PrimaryDB', host 'db.example.com', database called inventory, \
             username 'admin'",
            now(),
        );
        assert_eq!(f.args.0.get("nickname"), Some(&json!("PrimaryDB")), "{:?}", f.args);
        assert_eq!(f.args.0.get("database"), Some(&json!("inventory")));
        assert_eq!(f.args.0.get("username"), Some(&json!("admin")));
        // Not past the end of its clause.
        let music = props(json!({"artist": {"type": "string"}}), &[]);
        let f = fill(&music, "tracks by that artist? Additionally, some Pop", now());
        assert_ne!(f.args.0.get("artist"), Some(&json!("Additionally")));
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

    /// A property whose format holds a day and a time of day takes both,
    /// in its format; the next property that takes a time takes nothing
    /// (it took the departure's before).
    #[test]
    fn a_day_and_a_time_of_day_asked_together_are_one_value() {
        let flight = props(
            json!({
                "departure_time": {"type": "string", "description": "The departure time in the format of 'dd/mm/yyyy HH:MM'."},
                "return_time": {"type": "string", "description": "The return time in the format of 'dd/mm/yyyy HH:MM'."}
            }),
            &["departure_time"],
        );
        let f = fill(&flight, "a flight on the 12th of March 2023 at 3 in the afternoon", now());
        assert_eq!(f.args.0.get("departure_time"), Some(&json!("12/03/2023 15:00")));
        assert_eq!(f.args.0.get("return_time"), None);
        let iso =
            props(json!({"when": {"type": "string", "description": "Date and time, YYYY-MM-DDTHH:MM:SS"}}), &["when"]);
        let f = fill(&iso, "move it to November 1, 2023 at 4pm", now());
        assert_eq!(f.args.0.get("when"), Some(&json!("2023-11-01T16:00:00")));
        // No time said: the day alone.
        let f = fill(&flight, "a flight on the 12th of March 2023", now());
        assert_eq!(f.args.0.get("departure_time"), Some(&json!("12/03/2023")));
    }

    /// A value said with another ending is that value, when it is the
    /// only one so said.
    #[test]
    fn an_enum_value_is_said_with_another_ending() {
        let genre =
            props(json!({"genre": {"type": "string", "enum": ["Thriller", "Mystery", "Comedy", "Drama"]}}), &[]);
        assert_eq!(fill(&genre, "some thrill movies", now()).args.0.get("genre"), Some(&json!("Thriller")));
        assert_eq!(fill(&genre, "something mysterious", now()).args.0.get("genre"), Some(&json!("Mystery")));
        assert_eq!(fill(&genre, "something comical", now()).args.0.get("genre"), None, "com- alone is too little");
        let kinds =
            props(json!({"genre": {"type": "string", "enum": ["Sci-fi", "Family Counselor", "Shopping Area"]}}), &[]);
        let said = |request: &str| fill(&kinds, request, now()).args.0.get("genre").cloned();
        assert_eq!(said("an imaginative science fiction movie"), Some(json!("Sci-fi")), "each word cut short");
        assert_eq!(said("help with family counseling"), Some(json!("Family Counselor")));
        assert_eq!(said("shopping areas for kids"), Some(json!("Shopping Area")));
        assert_eq!(said("a family dinner"), None, "one word of two");
    }

    /// An object's own properties are read from the request by the same
    /// rules; a URL's property takes a URL or nothing.
    #[test]
    fn an_object_is_filled_by_its_own_properties() {
        let drink = props(
            json!({"drink_id": {"type": "string"},
                   "new_preferences": {"type": "object", "properties": {
                       "size": {"type": "string", "enum": ["small", "medium", "large"]},
                       "milk_type": {"type": "string", "enum": ["regular", "soy", "coconut"]}}}}),
            &["drink_id"],
        );
        let f = fill(&drink, "update my latte to a large size with coconut milk, the drink id is 'latte'", now());
        assert_eq!(
            f.args.0.get("new_preferences"),
            Some(&json!({"size": "large", "milk_type": "coconut"})),
            "{:?}",
            f.args
        );
        let f = fill(&drink, "the drink id is 'latte'", now());
        assert_eq!(f.args.0.get("new_preferences"), None, "nothing said of it");
        let get = props(
            json!({"url": {"type": "string"}, "params": {"type": "object", "properties": {"limit": {"type": "integer"}}}}),
            &["url"],
        );
        let f = fill(&get, "data for the fabric 'network777' with a limit of 50 items", now());
        assert_eq!(f.args.0.get("url"), None, "a quote that is no URL");
        assert_eq!(f.args.0.get("params"), Some(&json!({"limit": 50})));
    }

    /// A city keeps the region said after it where its parameter asks for
    /// one or says nothing of its form, not for "the name of the city";
    /// an enum's value named by its parameter is one of its own.
    #[test]
    fn a_region_is_kept_where_asked_and_an_enum_named_is_its_own() {
        let weather = props(
            json!({"city": {"type": "string", "description": "The name of the city for which to get the weather"},
                   "units": {"type": "string", "enum": ["metric", "imperial"]}}),
            &["city"],
        );
        let asks = props(
            json!({"city": {"type": "string", "description": "The name of the city, such as 'Austin, TX'"}}),
            &["city"],
        );
        let f = fill(&asks, "the weather in Marshall, MN on March 5th", now());
        assert_eq!(f.args.0.get("city"), Some(&json!("Marshall, MN")), "its example has a state");
        let f = fill(&weather, "the weather in Marshall, MN on March 5th", now());
        assert_eq!(f.args.0.get("city"), Some(&json!("Marshall")), "{:?}", f.args);
        let f = fill(&weather, "the weather in London, United Kingdom", now());
        assert_eq!(f.args.0.get("units"), None, "'United' names no units, 'Kingdom' is none of them");
        let plain = props(json!({"location": {"type": "string"}}), &[]);
        let f = fill(&plain, "what's on in Riga, Latvia tonight", now());
        assert_eq!(f.args.0.get("location"), Some(&json!("Riga, Latvia")));
        let help = props(
            json!({"topic": {"type": "string", "enum": ["trading", "security"]}, "subtopic": {"type": "string"}}),
            &["topic"],
        );
        let f = fill(&help, "help on the topic of 'trading' with examples", now());
        assert_eq!(f.args.0.get("topic"), Some(&json!("trading")));
        assert_eq!(f.args.0.get("subtopic"), None, "the topic's quote is the topic's");
    }

    /// A weekday said as the next of its name is counted from the day the
    /// request says is today, else from now; a day said in full wins.
    #[test]
    fn a_weekday_is_the_next_of_its_name() {
        let weather = props(json!({"date": {"type": "string", "description": "'YYYY-MM-DD'"}}), &[]);
        let day = |request: &str| fill(&weather, request, now()).args.0.get("date").cloned();
        // now() is Thursday 2026-11-26.
        assert_eq!(day("the forecast for the upcoming Saturday"), Some(json!("2026-11-28")));
        assert_eq!(day("il meteo per sabato prossimo"), Some(json!("2026-11-28")));
        assert_eq!(day("the upcoming Saturday? Today is Tuesday April 25th 2023"), Some(json!("2023-04-29")));
        assert_eq!(day("the forecast for today, today is April 25th 2023"), Some(json!("2023-04-25")));
        assert_eq!(day("tickets for next Wednesday 2023.11.15"), Some(json!("2023-11-15")));
    }

    /// A bracketed list goes to the array of its items' type.
    #[test]
    fn a_bracketed_list_is_an_array_of_its_type() {
        let schema = props(
            json!({"data": {"type": "array", "items": {"type": "number"}},
                   "categories": {"type": "array", "items": {"type": "string"}},
                   "count": {"type": "integer"}}),
            &[],
        );
        let f = fill(&schema, "categories: ['red', 'blue', 'green'] and values [2.5, 3.6, 4]", now());
        assert_eq!(f.args.0.get("data"), Some(&json!([2.5, 3.6, 4.0])), "{:?}", f.args);
        assert_eq!(f.args.0.get("categories"), Some(&json!(["red", "blue", "green"])));
        assert_eq!(f.args.0.get("count"), None, "a list's numbers are no count");
    }

    /// An enum of actions is said by another verb of the action's class;
    /// two values of one class say none.
    #[test]
    fn an_action_is_said_by_another_verb_of_its_class() {
        let todo = props(json!({"type": {"type": "string", "enum": ["add", "delete", "complete"]}}), &[]);
        assert_eq!(
            fill(&todo, "remove the task 'ravi' from my list", now()).args.0.get("type"),
            Some(&json!("delete"))
        );
        assert_eq!(fill(&todo, "togli 'ravi' dalla lista", now()).args.0.get("type"), Some(&json!("delete")));
        let two = props(json!({"op": {"type": "string", "enum": ["delete", "erase"]}}), &[]);
        assert_eq!(fill(&two, "remove it", now()).args.0.get("op"), None);
    }

    /// A command enum's pole is said by another word of its axis and sign,
    /// in either language (home F's dev split: "chiudi le persiane" left
    /// `motion` empty); both poles said name neither.
    #[test]
    fn a_pole_is_said_by_another_word_of_its_axis() {
        let motor = props(json!({"motion": {"type": "string", "enum": ["open", "close", "stop"]}}), &[]);
        assert_eq!(fill(&motor, "shut the blinds", now()).args.0.get("motion"), Some(&json!("close")));
        assert_eq!(fill(&motor, "chiudi le persiane", now()).args.0.get("motion"), Some(&json!("close")));
        assert_eq!(fill(&motor, "apri le tende", now()).args.0.get("motion"), Some(&json!("open")));
        let power = props(json!({"command": {"type": "string", "enum": ["on", "off", "toggle"]}}), &[]);
        assert_eq!(fill(&power, "accendi le luci", now()).args.0.get("command"), Some(&json!("on")));
        assert_eq!(fill(&power, "spegnimi la stufa", now()).args.0.get("command"), Some(&json!("off")));
        assert_eq!(fill(&power, "accendi la stufa e spegni le luci", now()).args.0.get("command"), None);
    }

    /// A figure a level is brought to, said without a unit, is no length
    /// of time ("turn the heat up to 21" boosted the heating for 21
    /// minutes); one said with its unit, or after "for", is.
    #[test]
    fn a_level_brought_to_is_no_duration() {
        let boost = props(
            json!({"zone": {"type": "string"}, "duration_min": {"type": "integer", "description": "minutes"}}),
            &[],
        );
        assert_eq!(fill(&boost, "turn the heat up to 21 in the study", now()).args.0.get("duration_min"), None);
        assert_eq!(fill(&boost, "alza il riscaldamento a 21", now()).args.0.get("duration_min"), None);
        assert_eq!(fill(&boost, "boost the heat for 20", now()).args.0.get("duration_min"), Some(&json!(20)));
        assert_eq!(fill(&boost, "boost the heat to 20 minutes", now()).args.0.get("duration_min"), Some(&json!(20)));
    }

    /// The longest enum value said wins, whatever the enum's order.
    #[test]
    fn the_enum_value_said_is_the_longest_one_said() {
        let flight = props(
            json!({"seating_class": {"type": "string", "enum": ["Economy", "Premium Economy", "Business"]}}),
            &[],
        );
        let f = fill(&flight, "a flight to LAX, I would like to travel in Premium Economy", now());
        assert_eq!(f.args.0.get("seating_class"), Some(&json!("Premium Economy")));
        let f = fill(&flight, "a flight to LAX in economy please", now());
        assert_eq!(f.args.0.get("seating_class"), Some(&json!("Economy")));
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
        let hotel = props(json!({"smoking_allowed": {"type": "boolean"}}), &[]);
        let f = fill(&hotel, "a non-smoking room in London", now());
        assert_eq!(f.args.0.get("smoking_allowed"), Some(&json!(false)), "a negation prefixed");
    }

    #[test]
    fn a_word_two_booleans_share_names_neither() {
        let cleaning = props(
            json!({"is_cleaning_condo": {"type": "boolean"}, "is_cleaning_home": {"type": "boolean"},
                   "available_for_pet": {"type": "boolean"}, "district": {"type": "string"}}),
            &[],
        );
        let f = fill(&cleaning, "cleaning service providers available in Bangkok", now());
        assert_eq!(f.args.0.get("is_cleaning_condo"), None, "{:?}", f.args);
        assert_eq!(f.args.0.get("is_cleaning_home"), None);
        assert_eq!(f.args.0.get("available_for_pet"), None, "available says it is a flag, not what about");
        let f = fill(&cleaning, "someone for cleaning my condo, pets welcome", now());
        assert_eq!(f.args.0.get("is_cleaning_condo"), Some(&json!(true)));
        assert_eq!(f.args.0.get("is_cleaning_home"), None);
        assert_eq!(f.args.0.get("available_for_pet"), Some(&json!(true)));
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

    /// A quote goes to a place only when said as one: the film is quoted,
    /// the town follows "in" — whichever property comes first.
    #[test]
    fn a_quoted_title_is_no_place() {
        let tickets = props(
            json!({"location": {"type": "string", "description": "The city, as 'City, State'"},
                   "movie_name": {"type": "string", "description": "The title of the movie"}}),
            &["location", "movie_name"],
        );
        let f = fill(&tickets, "two tickets for 'After The Wedding' at 19:00 in Berkeley", now());
        assert_eq!(f.args.0.get("movie_name"), Some(&json!("After The Wedding")), "{:?}", f.args);
        assert_eq!(f.args.0.get("location"), Some(&json!("Berkeley")));
        let f = fill(&tickets, "what shows in 'Santa Rosa' tonight", now());
        assert_eq!(f.args.0.get("location"), Some(&json!("Santa Rosa")), "after a preposition of place");
        // A host is no place, whatever its description says of addresses.
        let server = props(
            json!({"host": {"type": "string", "description": "The hostname or IP address"}, "database": {"type": "string"}}),
            &["host"],
        );
        let f = fill(&server, "a new Postgres server, the domain is 'http://plgah.ca'", now());
        assert_eq!(f.args.0.get("host"), Some(&json!("http://plgah.ca")));
    }

    /// Who made a work follows "by"; an album, a district is said with
    /// its kind's word, before or after it (the word left out of the
    /// value unless it names a place: "Foster City").
    #[test]
    fn makers_and_kinds_cue_their_nouns() {
        let music = props(
            json!({"artist": {"type": "string", "description": "The name of the artist"},
                   "album": {"type": "string", "description": "The name of the album"}}),
            &[],
        );
        let f = fill(&music, "Can you find tracks by Tove Lo?", now());
        assert_eq!(f.args.0.get("artist"), Some(&json!("Tove Lo")), "{:?}", f.args);
        assert_eq!(f.args.0.get("album"), None);
        let f = fill(&music, "songs from the Isolation album, Find a selection for me", now());
        assert_eq!(f.args.0.get("album"), Some(&json!("Isolation")), "{:?}", f.args);
        assert_eq!(f.args.0.get("artist"), None, "a verb after a comma is no name");
        let area = props(
            json!({"district_name": {"type": "string"}, "sub_district_name": {"type": "string"},
                   "city": {"type": "string"}}),
            &[],
        );
        let f = fill(&area, "providers in Chiang Mai, Hang Dong District", now());
        assert_eq!(f.args.0.get("district_name"), Some(&json!("Hang Dong")), "{:?}", f.args);
        let f = fill(&area, "services in Phra Khanong Subdistrict", now());
        assert_eq!(f.args.0.get("sub_district_name"), Some(&json!("Phra Khanong")), "{:?}", f.args);
        assert_eq!(f.args.0.get("district_name"), None);
        let f = fill(&area, "the weather in Foster City", now());
        assert_eq!(f.args.0.get("city"), Some(&json!("Foster City")));
    }

    /// A figure hyphened to what it counts is that count, and no other.
    #[test]
    fn a_hyphened_count_counts_its_word() {
        let home = props(json!({"number_of_baths": {"type": "integer"}, "number_of_beds": {"type": "integer"}}), &[]);
        let f = fill(&home, "a 2-bedroom, 1-bathroom apartment", now());
        assert_eq!(f.args.0.get("number_of_beds"), Some(&json!(2)), "{:?}", f.args);
        assert_eq!(f.args.0.get("number_of_baths"), Some(&json!(1)));
        let hotel = props(
            json!({"number_of_rooms": {"type": "string", "enum": ["1", "2", "3", "dontcare"]},
                   "star_rating": {"type": "string", "enum": ["1", "2", "3", "4", "5", "dontcare"]}}),
            &[],
        );
        let f = fill(&hotel, "a 3-star hotel, book two rooms", now());
        assert_eq!(f.args.0.get("number_of_rooms"), Some(&json!("2")), "{:?}", f.args);
        assert_eq!(f.args.0.get("star_rating"), Some(&json!("3")));
        let f = fill(&props(json!({"rooms": {"type": "integer"}}), &[]), "a 3-star hotel", now());
        assert_eq!(f.args.0.get("rooms"), None, "the figure counts stars");
        let timer = props(json!({"hours": {"type": "integer"}, "minutes": {"type": "integer"}}), &[]);
        let f = fill(&timer, "a 10-minute timer", now());
        assert_eq!(f.args.0.get("minutes"), Some(&json!(10)), "{:?}", f.args);
        assert_eq!(f.args.0.get("hours"), None);
    }

    /// A code's description says what each value stands for; the request
    /// names the thing, and its words are then no name.
    #[test]
    fn a_described_code_takes_the_value_of_the_thing_named() {
        let providers = props(
            json!({"province_id": {"type": "integer", "description": "such as 1 for Bangkok, 2 for Chiang Mai, and 3 for Phuket."},
                   "service_id": {"type": "integer", "description": "For instance, 1 for cleaning service, 3 for massage, 24 for disinfectant cleaning."},
                   "district_name": {"type": "string", "description": "The name of the district"}}),
            &[],
        );
        let f = fill(&providers, "cleaning services in Chiang Mai", now());
        assert_eq!(f.args.0.get("province_id"), Some(&json!(2)), "{:?}", f.args);
        assert_eq!(f.args.0.get("service_id"), Some(&json!(1)));
        assert_eq!(f.args.0.get("district_name"), None, "Chiang Mai stood for the province");
        let f = fill(&providers, "disinfectant cleaning in Phuket", now());
        assert_eq!(f.args.0.get("service_id"), Some(&json!(24)), "the longest thing named");
        assert_eq!(f.args.0.get("province_id"), Some(&json!(3)));
        let f = fill(&providers, "a massage", now());
        assert_eq!(f.args.0.get("province_id"), None);
    }

    /// Two moments named as a window's start and end read the day as the
    /// whole day, two times as its ends, one time as its start.
    #[test]
    fn a_window_of_days_and_times_reads_as_a_span() {
        let at = "The moment, in the format 'YYYY-MM-DD HH:mm:ss'";
        let window = props(
            json!({"start_available_date": {"type": "string", "description": at},
                   "end_available_date": {"type": "string", "description": at}}),
            &[],
        );
        let f = fill(&window, "on February 23, 2024, anytime between 10:30 a.m. and 7:00 p.m.", now());
        assert_eq!(f.args.0.get("start_available_date"), Some(&json!("2024-02-23 10:30:00")), "{:?}", f.args);
        assert_eq!(f.args.0.get("end_available_date"), Some(&json!("2024-02-23 19:00:00")));
        let f = fill(&window, "available on the 19th of March, 2024", now());
        assert_eq!(f.args.0.get("start_available_date"), Some(&json!("2024-03-19 00:00:00")));
        assert_eq!(f.args.0.get("end_available_date"), Some(&json!("2024-03-19 23:59:59")));
        let f = fill(&window, "on March 25, 2024, 2:30 PM", now());
        assert_eq!(f.args.0.get("start_available_date"), Some(&json!("2024-03-25 14:30:00")));
        assert_eq!(f.args.0.get("end_available_date"), None, "a moment, not a span");
        // A departure and a return are no window; a moment is no place.
        let flight = props(
            json!({"departure_time": {"type": "string", "description": "in the format of 'dd/mm/yyyy HH:MM'"},
                   "return_time": {"type": "string", "description": "'dd/mm/yyyy HH:MM', the local time of the departure location"}}),
            &["departure_time"],
        );
        let f = fill(&flight, "a flight from Rome to Paris on the 20th of June 2022 at 5 in the afternoon", now());
        assert_eq!(f.args.0.get("departure_time"), Some(&json!("20/06/2022 17:00")), "{:?}", f.args);
        assert_eq!(f.args.0.get("return_time"), None);
        // A description offering both formats is written in the shorter.
        let alarm = props(
            json!({"alarm_time": {"type": "string", "description": "such as 'YYYY-MM-DD HH:MM:SS', 'HH:MM:SS', 'HH:MM'"}}),
            &[],
        );
        let f = fill(&alarm, "Set an Alarm for 11PM", now());
        assert_eq!(f.args.0.get("alarm_time"), Some(&json!("23:00")));
    }

    /// A boolean's word said in other words: "children" for `kids`.
    #[test]
    fn a_boolean_is_named_in_other_words() {
        let travel = props(json!({"good_for_kids": {"type": "boolean"}, "location": {"type": "string"}}), &[]);
        let f = fill(&travel, "attractions in Paris suitable for children", now());
        assert_eq!(f.args.0.get("good_for_kids"), Some(&json!(true)), "{:?}", f.args);
        let pets = props(json!({"available_for_pet": {"type": "boolean"}}), &[]);
        let f = fill(&pets, "I'm looking for a cleaner", now());
        assert_eq!(f.args.0.get("available_for_pet"), None, "for is grammar, not what the flag is about");
    }

    /// A role said after a name ("as the director") cues its property;
    /// a figure inside a quote is no count.
    #[test]
    fn a_role_after_a_name_and_a_quoted_figure() {
        let movies = props(json!({"directed_by": {"type": "string"}, "cast": {"type": "string"}}), &[]);
        let f = fill(&movies, "a movie that has Riley Stearns as the director and C.J. Rush in the cast", now());
        assert_eq!(f.args.0.get("directed_by"), Some(&json!("Riley Stearns")), "{:?}", f.args);
        assert_eq!(f.args.0.get("cast"), Some(&json!("C.J. Rush")));
        let speaker = props(json!({"device_name": {"type": "string"}, "timeout": {"type": "integer"}}), &[]);
        let f = fill(&speaker, "connect my speaker called 'JBL Flip 4'", now());
        assert_eq!(f.args.0.get("timeout"), None, "{:?}", f.args);
    }

    /// A command is the rest of the request after its name.
    #[test]
    fn a_command_follows_its_name() {
        let cmd = props(json!({"command": {"type": "string"}}), &["command"]);
        let f = fill(&cmd, "what time is it on the pc, using the command echo %time%", now());
        assert_eq!(f.args.0.get("command"), Some(&json!("echo %time%")));
        let f = fill(&cmd, "open calculator app using the command called start calc", now());
        assert_eq!(f.args.0.get("command"), Some(&json!("start calc")));
    }

    /// What an alarm is for is the infinitive said, without its time.
    #[test]
    fn a_purpose_is_the_clause_after_to() {
        let alarm = props(
            json!({"alarm_time": {"type": "string", "description": "'HH:MM'"}, "purpose": {"type": "string"}}),
            &["alarm_time"],
        );
        for (request, want) in [
            ("Set an Alarm for 11PM reminding me to brush my teeth", Some("brush my teeth")),
            ("Set a Reminder to text Raj at 11PM", Some("text Raj")),
            ("an alarm from 7am to 8am", None),
            ("Set an alarm for 11PM", None),
        ] {
            let f = fill(&alarm, request, now());
            assert_eq!(f.args.0.get("purpose"), want.map(|w| json!(w)).as_ref(), "{request}");
        }
    }

    /// "Today" is left to a tool that takes today when no day is given.
    #[test]
    fn today_is_left_to_a_tool_that_defaults_to_it() {
        let events = props(
            json!({"city": {"type": "string"},
                   "date": {"type": "string", "description": "In the format 'YYYY-MM-DD'. If not specified, the current date is assumed."}}),
            &["city"],
        );
        let f = fill(&events, "a concert today in Berlin", now());
        assert_eq!(f.args.0.get("date"), None, "{:?}", f.args);
        let f = fill(&events, "a concert tomorrow in Berlin", now());
        assert_eq!(f.args.0.get("date"), Some(&json!("2026-11-27")));
        let plain = props(json!({"date": {"type": "string", "description": "'YYYY-MM-DD'"}}), &[]);
        assert_eq!(fill(&plain, "a concert today", now()).args.0.get("date"), Some(&json!("2026-11-26")));
    }
}
