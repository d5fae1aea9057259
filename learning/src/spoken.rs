//! A voice transcript's values by where they stand in the sentence: what
//! [`crate::arguments`] fills first for a request said in lower case, where
//! no capital marks a place or a name.
//!
//! The request is read as words ([`crate::text::normalize`]), each
//! property of the tool at most one value, each word to one property:
//!
//! 1. **A kind of device.** An array property whose items are an enum
//!    ("Kinds of device": `light`, `fan`, `blind`) takes every enum value a
//!    word of the request names — plural or Italian folded
//!    ([`crate::fast_path::lexicon`], [`crate::tool_words`]) — when the
//!    request also says where (a room before it, after a preposition):
//!    "the kitchen light" is every light of the kitchen, "the tv" alone is
//!    one device, by its name.
//! 2. **A place.** A property of a place (area, room, location) takes the
//!    words after the last preposition of place ("in the basement", "nel
//!    soggiorno", "at the ski lodge"), articles and courtesies off; else
//!    the words before a kind word ("the kitchen light") or after it and a
//!    preposition ("la luce della cucina"); else the verb's object when a
//!    place noun heads it ("dim the games room", "la sala da pranzo"). A
//!    kind word is an enum value of the tool or a word of its name.
//! 3. **The name of a thing the tool names.** A string property described
//!    as the name of something ("Name of the timer", "Name of the to-do
//!    list", "The word that names the list") takes the words that qualify
//!    that thing ("the egg timer", "il timer della torta", "my chores
//!    list", "la lista scadenze").
//!    A property of what a thing is for ("What the countdown is for")
//!    takes the words after "for" / "per" that are no number: "a
//!    countdown for the rice", "10 minuti per la pasta".
//! 4. **A device by its name.** A name property with neither a place nor a
//!    kind said takes the request's object: the words after its verb,
//!    articles and courtesies off ("switch on the printer" → "printer").
//! 5. **Free text** ("as the user said it", an item, a message, a query):
//!    the words the other rules and the verb left, up to a preposition
//!    that opens words of the tool ("… to the shopping list"): "add
//!    garbage bags to my shopping list" → "garbage bags". A verb that
//!    takes up by a pronoun what was said before it ("we're out of
//!    ketchup add it to the list", "… aggiungilo") has it just before
//!    itself, back to a word of grammar: "ketchup".

use std::collections::BTreeSet;

use serde_json::Value;

use crate::text::{is_stop_word, normalize, Negations};
use crate::tool_words::{folded, stem};

/// Articles and possessives taken off a value's edges (EN + IT).
const ARTICLES: &[&str] =
    &["the", "a", "an", "my", "our", "your", "il", "lo", "la", "i", "gli", "le", "l", "un", "una", "uno", "mio", "mia"];

/// Prepositions before a place (EN + IT, articled forms included).
const PLACE_PREPOSITIONS: &[&str] =
    &["in", "at", "inside", "nel", "nella", "nello", "nell", "negli", "nelle", "alla", "al", "allo", "sul", "sulla"];

/// English adverbs said before a place's preposition ("out in the
/// carport", "down in the basement", "over at the cabin").
const PLACE_PARTICLES: &[&str] = &["out", "over", "down", "up", "back"];

/// Prepositions that join a qualifier after a thing ("la luce della
/// cucina", "the light of the kitchen").
pub(crate) const OF: &[&str] = &["of", "del", "della", "dello", "dell", "dei", "degli", "delle", "di"];

/// Prepositions that may open a phrase naming where an item goes or what
/// it belongs to (EN + IT).
const JOINS: &[&str] = &[
    "to", "on", "onto", "from", "off", "in", "into", "for", "at", "a", "al", "alla", "allo", "alle", "ai", "nella",
    "nel", "dalla", "dal", "dalle", "sulla", "sul", "per", "della", "del", "dei", "delle", "di", "da", "with", "con",
    "col", "coi",
];

/// Unit words after a number (EN + IT).
const UNITS: &[&str] = &[
    "percent", "per", "cento", "minute", "minutes", "minuti", "minuto", "hours", "hour", "ore", "ora", "seconds",
    "secondi", "degrees", "degree", "gradi", "grado",
];

/// Words of a property's name, or the head word its description opens
/// with, that make it free text the user words (rule 5): an item, an entry, a
/// message, a text, a query. (`arguments`' own list, for requests with
/// capitals, reads only names, and wider: "prompt", "input".)
const SAID_TEXT: &[&str] = &["item", "entry", "message", "text", "query", "note", "content"];

/// Words that open a clause a message is said in ("tell everyone that
/// …", "annuncia che …").
const THAT: &[&str] = &["that", "che"];

/// English words that open a command before its verb without being it
/// ("go lock the shop door", "go ahead and turn the fan on", "come
/// check the …"): a closed class of serial verbs, never a value.
const OPENERS: &[&str] = &["go", "ahead", "come"];

/// The words of a request, elided articles split off ("l'album" → l,
/// album); an English contraction ("we're", "it's", "don't", "y'all") is
/// one word.
pub(crate) fn words(request: &str) -> Vec<String> {
    const CONTRACTED: &[&str] = &["re", "s", "m", "ll", "d", "ve", "t"];
    normalize(request)
        .split(' ')
        .filter(|w| !w.is_empty())
        .flat_map(|w| match w.split_once('\'') {
            Some((head, tail))
                if head.len() <= 4
                    && !tail.is_empty()
                    && !CONTRACTED.contains(&tail)
                    && head != "what"
                    && head != "how"
                    && head != "y" =>
            {
                vec![head.to_owned(), tail.to_owned()]
            }
            _ => vec![w.to_owned()],
        })
        .collect()
}

/// Courtesies said after a value ("in soggiorno dai", "please").
pub(crate) const COURTESIES: &[&str] = &["please", "thanks", "grazie", "dai", "favore", "pls"];

/// Whether the property holds a sentence the user says (a message, a
/// text), whose first article is part of it — a search's words are a
/// title ("play the graceland album" searches "graceland").
fn sentence_like(name: &str, spec: &Value) -> bool {
    // By its name, or a description of what is said: "Text of the entry"
    // is a list's entry ("cancella il latte" removes "latte"), "Message to
    // speak" a sentence.
    // "As the user says it" says how, not what.
    let d = description(spec).replace("as the user says", "").replace("as the user said", "");
    ["message", "text"].iter().any(|w| name.contains(w)) || ["message", "speak", "say"].iter().any(|w| d.contains(w))
}

/// The words of `text` that are no filler nor function word, stemmed:
/// what a description or a part of it says.
fn content_stems(text: &str) -> Vec<String> {
    normalize(text).split(' ').filter(|w| !w.is_empty() && !filler(w)).map(stem).collect()
}

/// Whether `w` is a courtesy, a filler or a function word.
fn filler(w: &str) -> bool {
    is_stop_word(w, Negations::Drop) || ARTICLES.contains(&w)
}

/// `ws[a..b]` without articles and fillers at its edges, nor a closing
/// *now* ("right now", [`crate::text::says_now_at_end`]); `None` when
/// nothing is left.
fn trimmed(ws: &[String], a: usize, b: usize) -> Option<(usize, usize)> {
    let (mut a, mut b) = (a, b.min(ws.len()));
    while a < b && (filler(&ws[a]) || OF.contains(&ws[a].as_str())) {
        a += 1;
    }
    loop {
        match crate::text::says_now_at_end(&ws[a..b]) {
            n if n > 0 && n < b - a => b -= n,
            _ if b > a && (filler(&ws[b - 1]) || JOINS.contains(&ws[b - 1].as_str())) => b -= 1,
            _ => break,
        }
    }
    (a < b).then_some((a, b))
}

pub(crate) fn join(ws: &[String], (a, b): (usize, usize)) -> String {
    let mut out = String::new();
    for (i, w) in ws[a..b].iter().enumerate() {
        // An elided article joins its noun again ("d'ingresso"): Italian
        // elides before a vowel or an h only ("all come" is English).
        let elides = w.starts_with(|c: char| "aeiouhàèéìòù".contains(c));
        let glued = i > 0 && elides && matches!(ws[a + i - 1].as_str(), "d" | "l" | "dell" | "nell" | "all" | "un");
        if i > 0 && !glued {
            out.push(' ');
        }
        if glued {
            out.push('\'');
        }
        out.push_str(w);
    }
    out
}

/// The tool's words a value must not take: its name's and its enum
/// values, stemmed.
pub struct Context {
    /// Words of the tool's name, stemmed ("light", "timer", "list").
    pub name: BTreeSet<String>,
    /// Words of the tool's description, stemmed, function words aside.
    pub described: BTreeSet<String>,
    /// What its description says it acts on, stemmed: the nouns after
    /// its first verb, up to a preposition ("Lower the blinds, shutters
    /// or curtains of a room": blind, shutter, curtain; "Set a speaker's
    /// volume": speaker, volume) — kind words as the name's are (rule 2).
    pub objects: BTreeSet<String>,
}

impl Context {
    /// The context of the tool `name` described as `description`.
    pub fn of(name: &str, description: &str) -> Context {
        let described = content_stems(description).into_iter().collect();
        let first = description.split(['.', ';', '(', ':']).next().unwrap_or("");
        let objects = normalize(&first.replace("'s ", " "))
            .split(' ')
            .skip(1)
            .take_while(|w| !JOINS.contains(w) && !OF.contains(w) && *w != "by" && *w != "with")
            .filter(|w| !w.is_empty() && !filler(w) && !matches!(*w, "or" | "and"))
            .map(stem)
            .collect();
        // A name word that is a noun of "-ing" names its root too:
        // `lighting_control` acts on lights.
        let mut name: BTreeSet<String> = crate::tool_words::name_stems(name).into_iter().collect();
        let roots: Vec<String> =
            name.iter().filter_map(|w| crate::tool_words::ing_root(w)).map(str::to_owned).collect();
        name.extend(roots);
        Context { name, described, objects }
    }
}

/// Whether every word of `value` (function words aside) is a word of the
/// tool's name or description, said in either language: the thing the tool
/// acts on named in general ("the thermostat"), not one of the home's.
pub fn described(value: &str, context: &Context) -> bool {
    let ws: Vec<String> = words(value).into_iter().filter(|w| !filler(w)).collect();
    !ws.is_empty()
        && ws.iter().all(|w| {
            let (f, s) = (folded(w), stem(w));
            context.described.contains(&f) || context.described.contains(&s) || context.name.contains(&f)
        })
}

/// What the rules fill: property name → value.
pub type Values = serde_json::Map<String, Value>;

fn description(spec: &Value) -> String {
    spec.get("description").and_then(Value::as_str).unwrap_or("").to_lowercase()
}

/// The kinds a property names: the enum of an array's items ("Kinds of
/// device": `light`, `fan`), or of a string property whose name or
/// description says it is a kind (`kind`, "Kind of device"; not a `day`)
/// — unless the tool's required value is free text (`text_required`):
/// then a kind qualifies what is searched for ("Kind of media": "the
/// graceland album"), it is no device in a room.
fn kind_enum(k: &str, spec: &Value, text_required: bool) -> Option<Vec<String>> {
    let values = match spec.get("items").and_then(|i| i.get("enum")) {
        Some(values) => values.as_array()?,
        None if text_required => return None,
        None => {
            let d = description(spec);
            let kind = ["kind", "type", "domain", "class", "category"]
                .iter()
                .any(|w| k.split('_').any(|p| p == *w) || d.split(' ').any(|p| p == *w));
            kind.then(|| spec.get("enum")).flatten()?.as_array()?
        }
    };
    Some(values.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// A property of a place: named `area`, `room` or `zone`, or described
/// with one of those words ("speaker group (zone)") — and free, with no
/// enum: an enum's values are its own
/// ("The kind of appliance, when a room is given instead of a label" is a
/// kind, never the room said).
pub(crate) fn place_property(name: &str, spec: &Value) -> bool {
    let d = description(spec);
    let zone = d.split(|c: char| !c.is_alphanumeric()).any(|w| w == "zone");
    let named = name == "area" || name == "room" || name == "zone" || zone || d.contains("area") || d.contains("room");
    named && spec.get("enum").is_none()
}

/// The thing a "Name of the X" property names ("The word that names the
/// X"): X's words, stemmed.
fn named_thing(spec: &Value) -> Option<Vec<String>> {
    let d = description(spec);
    let rest = d.strip_prefix("name of ").or_else(|| d.split_once(" names the ").map(|(_, x)| x))?;
    let rest = rest.split([',', ';', '.', '(']).next().unwrap_or("");
    let ws = content_stems(rest);
    (!ws.is_empty()).then_some(ws)
}

/// The thing a property holds *as the household calls it* ("The door or
/// gate, as the household calls it"; "One cover by its name"): its words
/// before that, stemmed. Its value is the thing as said, noun and all
/// ("cellar door"), as a property named for the thing is (rule 3).
fn called_thing(spec: &Value) -> Option<Vec<String>> {
    if spec.get("enum").is_some() {
        return None;
    }
    let d = description(spec);
    let called = [" calls it", " call it", "by its name", "by the name"].iter().any(|p| d.contains(p));
    if !called || d.starts_with("name of ") {
        return None;
    }
    let ws = content_stems(called_head(&d));
    (!ws.is_empty()).then_some(ws)
}

/// A description's head: its first clause, before how the thing is named
/// ("The door or gate, as the household calls it" → "The door or gate";
/// "One cover by its name" → "One cover").
pub(crate) fn called_head(description: &str) -> &str {
    let first = description.split([',', ';', '.', '(']).next().unwrap_or("");
    first.split(" by ").next().unwrap_or("").split(" as ").next().unwrap_or("").trim()
}

/// The thing property `k` names, and whether its value is the thing as
/// said (rule 3): "Name of the door or gate" (`door`) is the door, noun
/// and all; "Name of the timer" (`name`) and "The word that names the
/// list" (`list`) the words that qualify it; a
/// property described by its own name and a room ("Speaker (or room of
/// the speaker)", `speaker`) the words that qualify that thing — a room
/// naming the speaker ("the bathroom speaker", "la cassa della cucina").
fn thing_of(k: &str, spec: &Value) -> Option<(Vec<String>, bool)> {
    if let Some(thing) = called_thing(spec) {
        return Some((thing, true));
    }
    let d = description(spec);
    if let Some(thing) = named_thing(spec) {
        // "The word that names the list" (`list`) is the word, not the
        // list: "my chores list" → "chores".
        let itself = thing.contains(&stem(k)) && d.starts_with("name of ");
        return Some((thing, itself));
    }
    let opens = normalize(&d).split(' ').next().map(stem) == Some(stem(k));
    let place = k == "area" || k == "room";
    if opens && !place && d.contains("room") && spec.get("enum").is_none() {
        return Some((vec![stem(k)], false));
    }
    // What a thing is for ("What the timer is for") is also what
    // qualifies it: "the bread timer", "il timer delle uova".
    let thing = d.strip_prefix("what the ").and_then(|r| r.split_once(" is for")).map(|(t, _)| t)?;
    let ws = content_stems(thing);
    (purpose_like(spec) && !ws.is_empty()).then_some((ws, false))
}

/// Whether a string property is what something is for ("What the
/// countdown is for", "Purpose of the reminder"): rule 3b.
fn purpose_like(spec: &Value) -> bool {
    let d = description(spec);
    spec.get("type").and_then(Value::as_str) == Some("string")
        && spec.get("enum").is_none()
        && (d.contains(" is for") || d.starts_with("purpose"))
}

/// The words after the first "for" / "per" that opens no number, a
/// courtesy ("per favore") or a word another rule took, up to a number,
/// a taken word or a preposition.
fn purpose_span(ws: &[String], used: &[bool]) -> Option<(usize, usize)> {
    let at = (0..ws.len()).find(|i| {
        matches!(ws[*i].as_str(), "for" | "per")
            && (i + 1..ws.len())
                .find(|j| !ARTICLES.contains(&ws[*j].as_str()))
                .is_some_and(|j| !used[j] && !COURTESIES.contains(&ws[j].as_str()))
    })?;
    let end = (at + 1..ws.len()).find(|i| used[*i] || JOINS.contains(&ws[*i].as_str())).unwrap_or(ws.len());
    trimmed(ws, at + 1, end)
}

/// Whether the rules here answer for property `name` (`spec`): a place of
/// the home, a device's name, the name of a thing the tool names — what
/// the capital-letter rules of [`crate::arguments`] must not guess in a
/// lower-case request.
pub fn handles(name: &str, spec: &Value) -> bool {
    place_property(name, spec) || thing_of(name, spec).is_some() || purpose_like(spec) || device_name(name, spec)
}

/// Whether any rule here reads property `name` (`spec`) — a place, a
/// thing's name, a device, free text (`required`: the tool cannot run
/// without it) — or it is a colour: what the offline planner's reading
/// by meaning leaves alone (`offline_planner::property_roles`, rule 1).
pub fn reads(name: &str, spec: &Value, required: bool) -> bool {
    handles(name, spec)
        || free_text(name, spec, required)
        || sentence_like(name, spec)
        || crate::colours::colour_property(name, spec)
}

/// The names `schema` lists as required.
pub(crate) fn required_of(schema: &Value) -> Vec<&str> {
    schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Whether a tool's required value (`required` of `props`) is free text:
/// then its object is that text, and a kind qualifies what is searched
/// for, no device (rules 1 and 5).
fn requires_text(props: &serde_json::Map<String, Value>, required: &[&str]) -> bool {
    props.iter().any(|(k, spec)| required.contains(&k.as_str()) && free_text(k, spec, true))
}

/// Fills what a lower-case request's word order says (module docs).
pub fn fill(schema: &Value, request: &str, context: &Context) -> Values {
    let mut out = Values::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return out };
    let ws = words(request);
    let mut used = vec![false; ws.len()];
    // A tool whose required text is free ("What to search for, as the
    // user said it") takes its object as that text, not as a device.
    let required = required_of(schema);
    let text_required = requires_text(props, &required);
    // A message opens with whom it is for ("tell everyone grandpa is
    // here"); a search may open with the tool's noun ("musica rilassante").
    let searched = props
        .iter()
        .any(|(k, spec)| required.contains(&k.as_str()) && free_text(k, spec, true) && !sentence_like(k, spec));
    let verb_end = verb_end(&ws, context, searched);
    let kinds = kind_words(&ws, props, context, verb_end, text_required);
    mark_numbers(&ws, props, &mut used);
    mark_colours(&ws, props, &mut used);
    let numbers = used.clone();
    let is_kind = |i: usize| kinds.iter().any(|(k, _)| *k == i) || numbers[i];
    // Words of grammar, never part of a place: kinds, verbs, poles.
    let grammar = |i: usize| is_kind(i) || crate::fast_path::gate::is_verb(&ws[i]);
    let italian = crate::lang::detect(request) == crate::lang::Lang::It;
    fill_things(&ws, props, &mut used, &is_kind, &grammar, italian, &mut out);
    fill_purposes(&ws, props, &mut used, &mut out);
    // Rule 2: a place. A tool that takes no string but places ("Send the
    // robot vacuum to clean a zone") takes the verb's object as one,
    // whatever its head ("clean the kitchen with the robot").
    let only_places = props
        .iter()
        .all(|(k, s)| place_property(k, s) || s.get("type").and_then(Value::as_str).is_some_and(|t| t != "string"));
    let mut where_said = false;
    let places: Vec<&String> =
        props.iter().filter(|(k, s)| place_property(k, s) && !out.contains_key(*k)).map(|(k, _)| k).collect();
    for k in places {
        let span = after_place_preposition(&ws, &used, &grammar)
            .or_else(|| kinds.iter().find_map(|(i, _)| qualifier(&ws, *i, &is_kind)).filter(|s| free(&used, *s)))
            .or_else(|| room_as_object(&ws, &used, verb_end, &grammar, italian, only_places));
        if let Some(span) = span {
            mark(&mut used, span);
            where_said = true;
            // "the shop's too loud": the place, not its "is".
            let place = join(&ws, span);
            let place = place.strip_suffix("'s").unwrap_or(&place).to_owned();
            out.insert(k.clone(), Value::String(place));
        }
    }
    // Rule 1: kinds of device, with a place said.
    if where_said {
        fill_kinds(&kinds, props, &mut used, &mut out);
    }
    for (i, hit) in &kinds {
        used[*i] |= hit.is_none();
    }
    mark_enum_values(&ws, props, &mut used);
    // Rule 4: a device by its name — or the thing the tool is named for,
    // called by the household's own name without the word for it
    // ("blocca il portoncino": `door-lock`'s "the door or gate, as the
    // household calls it").
    if !where_said && !text_required {
        for (k, spec) in props {
            let own = |thing: Vec<String>| thing.iter().any(|w| context.name.contains(w));
            let called = called_thing(spec).is_some_and(own) && !place_property(k, spec);
            if (device_name(k, spec) || called) && !out.contains_key(k) {
                // Its name ends where a verb or a pole is said ("il
                // proiettore spegnilo"); a kind alone is one device ("the tv").
                let verb = |i: usize| grammar(i) && !is_kind(i);
                let end = (verb_end..ws.len()).find(|i| used[*i] || verb(*i)).unwrap_or(ws.len());
                // Ending with what the tool acts on ("the kitchen lights"
                // for `light-on`), it names them by where they are, not
                // one device.
                let of_the_tool = |(_, b): (usize, usize)| context.name.contains(&stem(&ws[b - 1]));
                if let Some(span) = trimmed(&ws, verb_end, end).filter(|s| !of_the_tool(*s)) {
                    mark(&mut used, span);
                    out.insert(k.clone(), Value::String(join(&ws, span)));
                }
            }
        }
    }
    // Rule 5: free text — not when the request marks where its text
    // starts ("…; where is beijing": `arguments`' rule 8 reads that),
    // and never the tool's own words alone ("tool prompt" names no
    // text to say).
    let marked = request.contains("; ") || request.contains(": ");
    for (k, spec) in props {
        if marked || !free_text(k, spec, required.contains(&k.as_str())) || out.contains_key(k) {
            continue;
        }
        if let Some(span) = free_span(&ws, &used, verb_end, context, sentence_like(k, spec)) {
            let value = join(&ws, span);
            if !described(&value, context) {
                mark(&mut used, span);
                out.insert(k.clone(), Value::String(value));
            }
        }
    }
    out
}

/// The kinds of device `request` names that `schema` takes as values of
/// a kind enum (rule 1's kind words — a member said, plural or Italian
/// folded — `fan` for "spegni il ventilatore in salone"), as the enum
/// spells them: what a tool named for another kind is never planned for
/// (`offline_planner`, rule 18).
pub fn kinds_named(schema: &Value, request: &str, context: &Context) -> Vec<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let ws = words(request);
    let required = required_of(schema);
    let text_required = requires_text(props, &required);
    let verb_end = verb_end(&ws, context, false);
    let kinds = kind_words(&ws, props, context, verb_end, text_required);
    // Not a kind that says where ("the temperature in the garage"), nor
    // one an article follows, which is a verb ("porta il riscaldamento a
    // 19": a noun takes no article after it).
    let said =
        |i: usize| !after_preposition_of_place(&ws, i) && ws.get(i + 1).is_none_or(|n| !ARTICLES.contains(&n.as_str()));
    kinds.into_iter().filter(|(i, _)| said(*i)).filter_map(|(_, hit)| hit.map(|(_, v)| v)).collect()
}

/// The kinds of device `schema` takes as values of a kind enum, stemmed
/// (rule 1's enums: `fan`, `heater`, `light` …).
pub fn kind_members(schema: &Value) -> Vec<String> {
    let props = schema.get("properties").and_then(Value::as_object);
    let values = props.into_iter().flatten().filter_map(|(k, spec)| kind_enum(k, spec, false));
    values.flatten().map(|v| stem(&v)).collect()
}

/// Whether `text` (a part of a request) opens as a phrase without a verb
/// of its own — an article or a preposition first, an "also" aside ("the
/// workshop", "in soggiorno", "anche alla spesa") — where a question or
/// a command opens with its verb or its question word ("where am I").
pub(crate) fn opens_without_verb(text: &str) -> bool {
    const ALSO: &[&str] = &["also", "too", "anche", "pure"];
    let ws = words(text);
    let first = ws.iter().find(|w| !ALSO.contains(&w.as_str()));
    first.is_some_and(|w| ARTICLES.contains(&w.as_str()) || preposition(w))
}

/// Whether `w` is a preposition the rules here know: of place, of
/// joining, or of "of".
fn preposition(w: &str) -> bool {
    JOINS.contains(&w) || PLACE_PREPOSITIONS.contains(&w) || OF.contains(&w)
}

/// Nouns that say a span is a room or an area, whatever its name: its
/// head — last in English ("the games room"), first in Italian ("camera
/// degli ospiti", "sala da pranzo").
const PLACE_NOUNS_EN: &[&str] = &["room", "area", "zone", "yard"];
const PLACE_NOUNS_IT: &[&str] = &["camera", "cameretta", "stanza", "sala", "zona"];

/// Rule 2 without a preposition: the verb's object, when its head is a
/// place noun ("dim the games room to fifteen percent", "vacuum the living
/// room") — not a device named after a room ("the kitchen lights" ends
/// with a kind) — or whatever its head for a tool that takes no other
/// string (`any_head`).
fn room_as_object(
    ws: &[String],
    used: &[bool],
    verb_end: usize,
    grammar: &dyn Fn(usize) -> bool,
    italian: bool,
    any_head: bool,
) -> Option<(usize, usize)> {
    let start = (verb_end..ws.len()).find(|i| !filler(&ws[*i]))?;
    // A joining word right after the head binds a compound ("sala da
    // pranzo"), as after a preposition of place.
    let joins = |i: usize| JOINS.contains(&ws[i].as_str()) && i != start + 1;
    let end = (start..ws.len()).find(|i| used[*i] || grammar(*i) || joins(*i));
    let (a, b) = trimmed(ws, start, end.unwrap_or(ws.len()))?;
    let head = match italian {
        true => PLACE_NOUNS_IT.contains(&ws[a].as_str()),
        false => PLACE_NOUNS_EN.contains(&stem(&ws[b - 1]).as_str()),
    };
    if head {
        return Some((a, b));
    }
    // Any head only for a command's direct object: no preposition before
    // it, articles aside ("how warm is it at the moment" has one; a
    // question has no object of a command), and only its first phrase
    // ("the bathroom a bit warmer": the bathroom).
    let before = ws[..a].iter().rev().find(|w| !ARTICLES.contains(&w.as_str())).map(String::as_str);
    let direct = before.is_none_or(|w| !preposition(w));
    let question = ws.first().is_some_and(|w| crate::tool_words::QUESTION_WORDS.contains(&w.as_str()));
    let b = (a + 1..b).find(|i| ARTICLES.contains(&ws[*i].as_str())).unwrap_or(b);
    (any_head && direct && !question).then_some((a, b))
}

/// Whether property `k` (`spec`) holds one device by the name the user
/// gives it (rule 4): `name` described as a device's or an entity's
/// ("Name of one device or entity, as the user calls it"), or any string
/// property described as a device's name ("Name of a single device"; "One
/// device by the name the household gives it").
fn device_name(k: &str, spec: &Value) -> bool {
    let d = description(spec);
    let device = d.contains("device") || d.contains("entity");
    let named = k == "name" || d.contains("name") || d.contains(" call");
    device && named && spec.get("enum").is_none() && spec.get("type").and_then(Value::as_str) == Some("string")
}

/// Rule 3: the name of a thing the tool names ([`thing_of`]).
fn fill_things(
    ws: &[String],
    props: &serde_json::Map<String, Value>,
    used: &mut [bool],
    is_kind: &dyn Fn(usize) -> bool,
    grammar: &dyn Fn(usize) -> bool,
    italian: bool,
    out: &mut Values,
) {
    for (k, spec) in props {
        // A place named for a thing ("room of the speaker") is the thing's.
        let by_name = named_thing(spec).is_none();
        let Some((thing, itself)) = thing_of(k, spec).filter(|_| by_name || !place_property(k, spec)) else {
            continue;
        };
        let Some(at) = ws.iter().position(|w| thing.contains(&folded(w)) || thing.contains(&stem(w))) else { continue };
        // A thing named after a place ("the weather entity, e.g. a
        // place") is where the request says.
        let place =
            || description(spec).contains("place").then(|| after_place_preposition(ws, used, grammar)).flatten();
        // Said in Italian, a thing's qualifier may follow it bare ("la
        // cassa cucina", "al timer pizza").
        let italian = italian || folded(&ws[at]) != stem(&ws[at]);
        let bare = || {
            let next = at + 1;
            (italian && next < ws.len() && !used[next] && !grammar(next) && !filler(&ws[next]))
                .then_some((next, next + 1))
        };
        // A property named for the thing itself (`door`: "Name of the door
        // or gate") holds the thing as said, its noun with its qualifier
        // ("patio door", "porta della cantina"); one named for the name
        // (`name`, `list_name`) the qualifier alone ("the egg timer" →
        // "egg").
        let qualified =
            qualifier(ws, at, is_kind)
                .or_else(bare)
                .map(|(a, b)| if itself { (a.min(at), b.max(at + 1)) } else { (a, b) });
        if let Some(span) = qualified.or_else(place) {
            mark(used, span);
            // The thing's own word is no other value ("on my garden list
            // add prune the roses": the entry is not "list add …").
            used[at] = true;
            out.insert(k.clone(), Value::String(join(ws, span)));
        }
    }
}

/// Rule 1: every kind said to its property — all of them to an array,
/// the first to a string.
fn fill_kinds(
    kinds: &[(usize, Option<(&String, String)>)],
    props: &serde_json::Map<String, Value>,
    used: &mut [bool],
    out: &mut Values,
) {
    for (i, hit) in kinds {
        let Some((k, v)) = hit else { continue };
        used[*i] = true;
        let array = props.get(*k).and_then(|s| s.get("items")).is_some();
        let entry = out.entry((*k).clone()).or_insert_with(|| match array {
            true => Value::Array(Vec::new()),
            false => Value::String(v.clone()),
        });
        if let Value::Array(a) = entry {
            if !a.iter().any(|x| x == v) {
                a.push(Value::String(v.clone()));
            }
        }
    }
}

/// Rule 3b: what a thing is for ("What the countdown is for"): the words
/// after "for" or "per" that are no number ("a countdown for the rice",
/// "10 minuti per la pasta"; not "for 10 minutes").
fn fill_purposes(ws: &[String], props: &serde_json::Map<String, Value>, used: &mut [bool], out: &mut Values) {
    for (k, spec) in props {
        if out.contains_key(k) || !purpose_like(spec) {
            continue;
        }
        if let Some(span) = purpose_span(ws, used) {
            mark(used, span);
            out.insert(k.clone(), Value::String(join(ws, span)));
        }
    }
}

/// Kind words: enum values of array properties, and words of the tool's
/// name — by index, with the array property and value a word names.
fn kind_words<'p>(
    ws: &[String],
    props: &'p serde_json::Map<String, Value>,
    context: &Context,
    verb_end: usize,
    text_required: bool,
) -> Vec<(usize, Option<(&'p String, String)>)> {
    let mut kinds = Vec::new();
    // A verb before its pole is no kind ("switch off the playroom
    // lights"; "ventilatore della cameretta" is one).
    let verb_before_pole =
        |i: usize| i < verb_end && ws.get(i + 1).is_some_and(|n| !crate::fast_path::gate::poles_of(n).is_empty());
    for (i, w) in ws.iter().enumerate().filter(|(i, _)| !verb_before_pole(*i)) {
        let f = folded(w);
        let hit = props.iter().find_map(|(k, spec)| {
            kind_enum(k, spec, text_required)?.into_iter().find(|v| stem(v) == f || stem(v) == stem(w)).map(|v| (k, v))
        });
        // A word of the tool's name is a kind of thing, not the verb or the
        // pole that names its action ("turn the bedside lamp on").
        let action = crate::fast_path::gate::is_verb(w);
        // What the description says it acts on is a kind of device, not
        // when the tool's required value is text: "Search the music
        // services" — "classical music" is what to play.
        let object = context.objects.contains(&f) && !text_required;
        // Nor is a word of its name qualified in the text it searches
        // ("classical music", "musica classica" for `play_music`): alone,
        // it is the verb's object ("play music in the kitchen").
        let named = context.name.contains(&f) && !(text_required && qualified(ws, i, verb_end));
        if hit.is_some() || (named || object) && !action {
            kinds.push((i, hit));
        }
    }
    // Behind another kind, a kind word after a preposition of place is
    // where: "the lights in the garage" (a room), "open the garage" (a
    // kind of door).
    let first = kinds.first().map(|(i, _)| *i);
    kinds.retain(|(i, _)| Some(*i) == first || !after_preposition_of_place(ws, *i));
    kinds
}

/// Whether the word at `i`, past the verb (`verb_end`), has a word of
/// content beside it in the text: one before it past the verb ("classical
/// music"), or one after it that is no word of grammar ("musica
/// classica"; not "music in the kitchen").
fn qualified(ws: &[String], i: usize, verb_end: usize) -> bool {
    let content = |w: &str| {
        !filler(w)
            && !PLACE_PREPOSITIONS.contains(&w)
            && !JOINS.contains(&w)
            && !crate::fast_path::gate::is_action(w)
            && crate::fast_path::gate::poles_of(w).is_empty()
    };
    i >= verb_end && (i > verb_end && content(&ws[i - 1]) || ws.get(i + 1).is_some_and(|n| content(n)))
}

/// Whether the word at `i` follows a preposition of place, articles
/// aside ("in the garage", "nel garage").
fn after_preposition_of_place(ws: &[String], i: usize) -> bool {
    let before = ws[..i].iter().rev().find(|w| !ARTICLES.contains(&w.as_str()));
    before.is_some_and(|w| PLACE_PREPOSITIONS.contains(&w.as_str()))
}

/// Marks numbers and their units: the number properties' values, never a
/// place's or a name's words ("a 9 minute timer", "al 20 per cento").
fn mark_numbers(ws: &[String], props: &serde_json::Map<String, Value>, used: &mut [bool]) {
    let numeric = props.values().any(|s| matches!(s.get("type").and_then(Value::as_str), Some("number" | "integer")));
    if !numeric {
        return;
    }
    let all: Vec<&str> = ws.iter().map(String::as_str).collect();
    for i in 0..ws.len() {
        if ws[i].chars().any(|c| c.is_ascii_digit()) || crate::fast_path::numbers::parse_at(&all, i).is_some() {
            used[i] = true;
            let mut u = i + 1;
            while ws.get(u).is_some_and(|w| UNITS.contains(&w.as_str())) {
                used[u] = true;
                u += 1;
            }
        }
    }
}

/// Marks the colours said, for a tool with a colour property
/// ([`crate::colours`]): its value, never a place's or a name's word ("la
/// luce del bagno blu").
fn mark_colours(ws: &[String], props: &serde_json::Map<String, Value>, used: &mut [bool]) {
    if props.iter().any(|(k, spec)| crate::colours::colour_property(k, spec)) {
        for (i, w) in ws.iter().enumerate() {
            used[i] |= crate::colours::is_colour(w);
        }
    }
}

/// Marks the enum values said: each names its property ("the graceland
/// album"), no word of a name or a text.
fn mark_enum_values(ws: &[String], props: &serde_json::Map<String, Value>, used: &mut [bool]) {
    for (i, w) in ws.iter().enumerate() {
        let named = props.values().filter_map(|spec| spec.get("enum")?.as_array()).flatten().filter_map(Value::as_str);
        if named.into_iter().any(|v| stem(v) == stem(w) || stem(v) == folded(w)) {
            used[i] = true;
        }
    }
}

fn mark(used: &mut [bool], (a, b): (usize, usize)) {
    for u in &mut used[a..b] {
        *u = true;
    }
}

fn free(used: &[bool], (a, b): (usize, usize)) -> bool {
    !used[a..b].iter().any(|u| *u)
}

/// Where the request's verb and what leads it end: courtesies and
/// fillers, one verb (an action, a pole, a word said for a tool's), then
/// its particles, poles and the tool's own words ("turn off the", "tell
/// everyone that"); a tool whose required value is text searched for
/// (`searched`) may have it open with one of its own nouns.
fn verb_end(ws: &[String], context: &Context, searched: bool) -> usize {
    // The gerund of a word of the tool's name ("start vacuuming the …").
    let gerund = |w: &str| crate::tool_words::ing_root(w).is_some_and(|s| context.name.contains(&stem(s)));
    let verb = |w: &str| {
        crate::fast_path::gate::is_action(w)
            || !crate::fast_path::gate::poles_of(w).is_empty()
            || crate::tool_words::RequestWords::is_synonym(w)
            || context.name.contains(&stem(w))
            || gerund(w)
    };
    let particle = |w: &str| {
        filler(w)
            || !crate::fast_path::gate::poles_of(w).is_empty()
            || crate::tool_words::RequestWords::is_synonym(w) && !crate::fast_path::gate::is_action(w)
            || THAT.contains(&w)
            || gerund(w)
    };
    // An idiom that names what the tool does is its verb ("che tempo fa
    // alla baita", HassGetWeather), whatever words of grammar it has.
    let idiom = |i: usize| {
        crate::fast_path::lexicon::phrase_at(ws, i)
            .filter(|(_, concept)| concept.split(' ').all(|c| context.name.contains(&stem(c))))
    };
    let mut i = 0;
    let opens = |w: &str| OPENERS.contains(&w);
    let opener = |i: usize| opens(&ws[i]) && ws.get(i + 1).is_some_and(|n| verb(n) || filler(n) || opens(n));
    while i < ws.len() && (filler(&ws[i]) || opener(i)) && !verb(&ws[i]) && idiom(i).is_none() {
        i += 1;
    }
    // An imperative opens with its verb: a word the lists do not know is
    // one still when an article follows it ("dim the …", "regola il …").
    let before_article = |i: usize| ws.get(i + 1).is_some_and(|n| ARTICLES.contains(&n.as_str()));
    if let Some((n, _)) = idiom(i) {
        i += n;
    } else if i < ws.len() && (verb(&ws[i]) || !filler(&ws[i]) && before_article(i) || clitic_imperative(&ws[i])) {
        i += 1;
    }
    // After a modal or "fare", an Italian infinitive says the action
    // ("fammi sentire", "puoi accendere", "mi fai partire"); after another
    // verb it is what is said ("metti rinnovare il passaporto").
    let infinitive = |w: &str| w.chars().count() >= 6 && ["are", "ere", "ire"].iter().any(|e| w.ends_with(e));
    if i > 0 && MODALS.contains(&ws[i - 1].as_str()) && ws.get(i).is_some_and(|w| infinitive(w)) {
        i += 1;
    }
    // A tool's noun qualified by a word after it opens the text a tool
    // searches for ("sentire musica rilassante"), where alone it is the
    // verb's object ("play music in the kitchen").
    let opens_text = |i: usize| {
        searched
            && !filler(&ws[i])
            && !crate::fast_path::gate::is_action(&ws[i])
            && ws.get(i + 1).is_some_and(|n| !particle(n))
    };
    while i < ws.len() && particle(&ws[i]) && !opens_text(i) {
        i += 1;
        // What follows "that" is the clause said, not more particles.
        if THAT.contains(&ws[i - 1].as_str()) {
            break;
        }
    }
    i
}

/// Italian modals and "fare", which take a bare infinitive: the verb of
/// "puoi accendere", "fammi sentire".
const MODALS: &[&str] = &[
    "puoi", "può", "potresti", "potete", "potreste", "vuoi", "vorrei", "voglio", "devi", "fammi", "fai", "facci",
    "fatemi",
];

/// Italian clitics an imperative carries at its end ("segnami",
/// "toglili", "segnalo").
const CLITICS: &[&str] = &["melo", "mela", "mele", "meli", "mi", "lo", "la", "le", "li", "ne", "ci"];

/// Whether `w`, where a verb stands, is an Italian imperative with a
/// clitic: a stem of four letters or more ending in the vowel of an
/// imperative, then the clitic ("segna-mi", "togli-li").
fn clitic_imperative(w: &str) -> bool {
    CLITICS
        .iter()
        .any(|c| w.strip_suffix(c).is_some_and(|stem| stem.chars().count() >= 4 && stem.ends_with(['a', 'e', 'i'])))
}

/// Whether property `k` holds free text (rule 5): a string "as the user
/// said it", an item, a message, a query — and no enum. Said "as the user
/// says it", it is the tool's text when `required` ("What to play, as
/// the user says it"); an optional one qualifies the call, a thing's name
/// or a place ("What the timer is for, as the user says it"), read by
/// rules 2–4, and a colour is a colour ("Colour as the user says it").
fn free_text(k: &str, spec: &Value, required: bool) -> bool {
    let d = description(spec);
    // Named for what the user words ("entry", "query"), or described so
    // ("Text of the entry", "Message to speak", "… to search for").
    let texty = |w: &str| SAID_TEXT.contains(&w);
    // The description's head word, not a modifier: "Text of the entry",
    // "Message to speak" — "the text file" is a file (a path).
    let ds: Vec<&str> = d.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let head = ds
        .iter()
        .position(|w| !ARTICLES.contains(w))
        .filter(|i| texty(ds[*i]) && ds.get(i + 1).is_none_or(|n| ["of", "to", "for", "as", "that"].contains(n)));
    let said =
        d.contains("as the user said") || k.split('_').any(texty) || head.is_some() || d.contains("to search for");
    let colour = k.contains("color") || k.contains("colour");
    let says = d.contains("as the user says") && required && !colour;
    let said = said || says;
    said && spec.get("type").and_then(Value::as_str) == Some("string") && spec.get("enum").is_none()
}

/// Whether `value` is grammar and quantities alone — numbers, units,
/// courtesies, function words, verbs, poles, the tool's own words — and
/// so no name, place or text a property takes ("35 percent", "per
/// favore", "abbassale", "9 minute timer").
pub fn only_grammar(value: &str, context: &Context) -> bool {
    let ws = words(value);
    let all: Vec<&str> = ws.iter().map(String::as_str).collect();
    (0..ws.len()).all(|i| {
        let w = all[i];
        w.chars().any(|c| c.is_ascii_digit())
            || crate::fast_path::numbers::parse_at(&all, i).is_some()
            || UNITS.contains(&w)
            || COURTESIES.contains(&w)
            || filler(w)
            || crate::fast_path::gate::is_action(w)
            || !crate::fast_path::gate::poles_of(w).is_empty()
            || context.name.contains(&folded(w))
            || context.name.contains(&stem(w))
    })
}

/// The words after the last preposition of place whose words are free —
/// up to a word of grammar (`stop`: a kind, a verb, a pole), a clause's
/// function word ("in the pantry can you …") or the end; an earlier
/// preposition when the last one opens no place ("in lavanderia al 20
/// per cento", "metti in pausa il timer").
fn after_place_preposition(ws: &[String], used: &[bool], stop: &dyn Fn(usize) -> bool) -> Option<(usize, usize)> {
    (0..ws.len())
        .rev()
        .filter(|p| PLACE_PREPOSITIONS.contains(&ws[*p].as_str()))
        .find_map(|p| place_after(ws, used, stop, p))
}

/// The place after the preposition at `p`, if its words are free.
fn place_after(ws: &[String], used: &[bool], stop: &dyn Fn(usize) -> bool, p: usize) -> Option<(usize, usize)> {
    let function = |w: &str| filler(w) && !ARTICLES.contains(&w) && !OF.contains(&w) && !JOINS.contains(&w);
    // A closing *now* is no part of the place, even where its first word
    // alone would end it ("in the conservatory right now": "now" is a
    // function word, "right" is not).
    let last = ws.len() - crate::text::says_now_at_end(ws);
    if p + 1 >= last {
        return None;
    }
    let end = (p + 1..last)
        .find(|i| {
            used[*i]
                || stop(*i)
                || function(&ws[*i]) && !COURTESIES.contains(&ws[*i].as_str()) && *i > p + 1
                || ws[*i].chars().all(|c| c.is_ascii_digit())
                || JOINS.contains(&ws[*i].as_str()) && *i > p + 2
        })
        .unwrap_or(last);
    let mut span = trimmed(ws, p + 1, end)?;
    // Courtesies after the place ("in soggiorno dai", "please").
    while span.1 > span.0 && filler(&ws[span.1 - 1]) {
        span.1 -= 1;
    }
    (span.0 < span.1 && free(used, span) && !(span.0..span.1).any(stop)).then_some(span)
}

/// The words that qualify the word at `at`: those before it back to an
/// article, a filler or a verb ("the laundry room light"), else a
/// preposition of "of" and those after it ("la luce della cucina").
fn qualifier(ws: &[String], at: usize, is_kind: &dyn Fn(usize) -> bool) -> Option<(usize, usize)> {
    let mut a = at;
    while a > 0 {
        let w = ws[a - 1].as_str();
        if filler(w)
            || is_kind(a - 1)
            || crate::fast_path::gate::is_action(w)
            || !crate::fast_path::gate::poles_of(w).is_empty()
            || crate::tool_words::RequestWords::is_synonym(w)
            || JOINS.contains(&w)
        {
            break;
        }
        a -= 1;
    }
    if a < at {
        return Some((a, at));
    }
    let next = ws.get(at + 1)?;
    // "d" is "di" elided ("porta d'ingresso").
    if !OF.contains(&next.as_str()) && next != "d" {
        return None;
    }
    let start = at + 2;
    // Past its first word, a joining word or an "of" may bind a compound
    // name, as they do after a preposition of place ("della camera da
    // letto", "della sala da pranzo", "della camera degli ospiti").
    let compound = |i: usize| i == start + 1 && (JOINS.contains(&ws[i].as_str()) || OF.contains(&ws[i].as_str()));
    let end = (start..ws.len())
        .find(|i| {
            filler(&ws[*i]) && !ARTICLES.contains(&ws[*i].as_str()) && !compound(*i)
                || is_kind(*i)
                || crate::fast_path::gate::is_action(&ws[*i])
                || !crate::fast_path::gate::poles_of(&ws[*i]).is_empty()
                || PLACE_PREPOSITIONS.contains(&ws[*i].as_str())
        })
        .unwrap_or(ws.len());
    trimmed(ws, start, end)
}

/// Rule 5's span: from the verb's end, the words no rule took, up to a
/// preposition whose phrase has a word of the tool; a leading article kept
/// for a sentence ("the school bus is coming"), courtesies off its end.
fn free_span(ws: &[String], used: &[bool], from: usize, context: &Context, sentence: bool) -> Option<(usize, usize)> {
    // The tool's own verb said after what it acts on ("on my garden list
    // add prune the roses") opens no text.
    let verb_of_the_tool = |w: &str| {
        context.name.contains(&stem(w)) && (crate::fast_path::gate::is_action(w) || crate::fast_path::gate::is_pole(w))
    };
    let skip = |w: &str| {
        THAT.contains(&w)
            || JOINS.contains(&w)
            || COURTESIES.contains(&w)
            || (!sentence && filler(w))
            || verb_of_the_tool(w)
    };
    // A sentence said after "that" within the verb's words starts there
    // ("avvisa tutti che la doccia è libera").
    let from = match sentence {
        true => (from..ws.len().min(from + 4)).find(|i| THAT.contains(&ws[*i].as_str())).map_or(from, |i| i + 1),
        false => from,
    };
    if !sentence {
        if let Some(span) = before_resumption(ws, used, from) {
            return Some(span);
        }
    }
    // A preposition whose phrase names the tool, by its name or its
    // description, is where the text ends: "alla lista della spesa", "on
    // the chores list" say where it goes ("Add an item to the household
    // shopping list"), not what it is.
    let tool_word = |w: &String| {
        let (f, s) = (folded(w), stem(w));
        context.name.contains(&f) || context.name.contains(&s) || context.described.contains(&f)
    };
    let mut start = (from..ws.len()).find(|i| !used[*i] && !skip(&ws[*i]))?;
    // Where it goes said first, then the tool's own verb ("shopping list
    // add basmati rice") or a verb of its own ("nella lista casa scrivi
    // …", the list's name taken): the text starts after the verb. Words
    // of the tool not followed by a verb are the text ("shopping bags").
    let verb = |i: usize| {
        verb_of_the_tool(&ws[i]) || crate::fast_path::gate::is_action(&ws[i]) && !tool_word(&ws[i]) && !used[i]
    };
    let run = (start..ws.len())
        .find(|i| verb(*i) || !tool_word(&ws[*i]) && !used[*i] && !ARTICLES.contains(&ws[*i].as_str()));
    // The place may be taken already (a list's name): then the verb is
    // the first word left.
    let placed_first = start > from
        && (from..start).any(|i| used[i])
        && (from..start).all(|i| used[i] || tool_word(&ws[i]) || skip(&ws[i]) || ARTICLES.contains(&ws[i].as_str()));
    if let Some(verb) = run.filter(|i| (*i > start || placed_first) && verb(*i)) {
        start = (verb + 1..ws.len()).find(|i| !used[*i] && !skip(&ws[*i]))?;
    }
    // A sentence keeps the article its verb's particles took ("tell
    // everyone the school bus is coming").
    if sentence && start > 0 && start == from && ARTICLES.contains(&ws[start - 1].as_str()) && !used[start - 1] {
        start -= 1;
    }
    let tool_phrase = |i: usize| {
        JOINS.contains(&ws[i].as_str())
            && ws[i + 1..].iter().take(4).take_while(|w| !JOINS.contains(&w.as_str())).any(tool_word)
    };
    let end = (start..ws.len()).find(|i| used[*i] || tool_phrase(*i)).unwrap_or(ws.len());
    let mut b = end;
    let edge = |w: &str| COURTESIES.contains(&w) || JOINS.contains(&w) || ARTICLES.contains(&w);
    while b > start && edge(&ws[b - 1]) {
        b -= 1;
    }
    // A particle that leads into the place is the place's ("play some
    // willie nelson out in the carport", "over at the lake house").
    let into_place = ws.get(b).is_some_and(|w| PLACE_PREPOSITIONS.contains(&w.as_str()));
    if b > start + 1 && into_place && PLACE_PARTICLES.contains(&ws[b - 1].as_str()) {
        b -= 1;
    }
    (start < b).then_some((start, b))
}

/// Object pronouns after an English verb that take up a thing said
/// before it ("add it", "put them").
const RESUMING: &[&str] = &["it", "them"];

/// What a free-text value says before a verb that takes it up, and the
/// words from that verb on ("need more coffee filters add them" →
/// "coffee filters", "add them"; "croissant mettili" → "croissant",
/// "mettili"): a slot's span reaches the pronoun when the phrasing had
/// the thing alone there. `None` when the value takes nothing up.
pub(crate) fn resumed_thing(value: &str) -> Option<(String, String)> {
    let ws = words(value);
    let (a, b) = before_resumption(&ws, &vec![false; ws.len()], 0)?;
    let verb = (b..ws.len()).find(|i| !filler(&ws[*i]) && !COURTESIES.contains(&ws[*i].as_str()))?;
    Some((join(&ws, (a, b)), join(&ws, (verb, ws.len()))))
}

/// Rule 5's span when the verb takes up, by a pronoun, what was said
/// before it — "we're out of ketchup add it to the list", "we need more
/// coffee filters add them …", "ci serve il basilico aggiungilo alla
/// spesa": the thing is the words just before the verb, back to a word of
/// grammar ("of", "more", "il"), a verb or a word a rule took; a
/// conjunction or a courtesy between them aside ("… and add it").
fn before_resumption(ws: &[String], used: &[bool], from: usize) -> Option<(usize, usize)> {
    // A verb: an action, or a pole ("add", "aggiungi": the add / remove
    // axis).
    let verb = |w: &str| crate::fast_path::gate::is_action(w) || crate::fast_path::gate::is_pole(w);
    // Any word before the pronoun is its verb ("stick it on the list");
    // a clitic one is a verb the lists know ("mettili": "metti").
    let resumes = |i: usize| {
        let w = ws[i].as_str();
        let pronoun = ws.get(i + 1).is_some_and(|n| RESUMING.contains(&n.as_str()));
        let known = verb(w) || crate::tool_words::RequestWords::is_synonym(w);
        (pronoun && (known || !filler(w))) || (clitic_imperative(w) && known)
    };
    let at = (from + 1..ws.len()).find(|i| !used[*i] && resumes(*i))?;
    let mut end = at;
    while end > from && !used[end - 1] && (filler(&ws[end - 1]) || COURTESIES.contains(&ws[end - 1].as_str())) {
        end -= 1;
    }
    let mut start = end;
    while start > from && {
        let w = ws[start - 1].as_str();
        !used[start - 1] && !filler(w) && !JOINS.contains(&w) && !verb(w)
    } {
        start -= 1;
    }
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An enum is never a place, whatever its description says of rooms
    /// (home E's `applianceKind` took the room said).
    #[test]
    fn an_enum_that_mentions_a_room_is_no_place() {
        let kind = json!({"type": "string", "enum": ["fan", "heater"],
            "description": "The kind of appliance, when a room is given instead of a label."});
        assert!(!place_property("applianceKind", &kind));
        assert!(place_property("roomName", &json!({"type": "string", "description": "The room."})));
    }

    /// A zone is a place, by name or description ("speaker group (zone)"):
    /// its value is the words after the place's preposition, not the
    /// number before it (home F's dev split: "metti il volume a sessanta
    /// nel palmento" played on "sessanta nel palmento").
    #[test]
    fn a_zone_is_a_place() {
        let level = json!({"type": "object", "properties": {
            "where": {"type": "string", "description": "speaker group (zone)"},
            "vol": {"type": "integer", "description": "level pct"}}});
        let f = fill(&level, "metti il volume a sessanta nel palmento", &ctx("audio_level"));
        assert_eq!(f.get("where"), Some(&json!("palmento")));
        assert!(place_property("zone", &json!({"type": "string", "description": "zone id"})));
        assert!(!place_property("zone", &json!({"type": "string", "enum": ["a", "b"]})));
    }

    /// An Italian elision is two words; an English contraction is one
    /// ("we're" was read as "we" and "re", and "re" began a value).
    #[test]
    fn elisions_split_and_contractions_do_not() {
        assert_eq!(words("metti l'album"), ["metti", "l", "album"]);
        assert_eq!(words("we're out of it's"), ["we're", "out", "of", "it's"]);
    }

    fn device() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Name of one device or entity, as the user calls it"},
            "area": {"type": "string", "description": "Name of an area (room) of the home"},
            "domain": {"type": "array", "items": {"type": "string", "enum": ["light", "fan", "switch"]}}
        }})
    }

    fn timer() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Name of the timer, e.g. pasta"},
            "area": {"type": "string", "description": "Area of the device the timer was started on"}}})
    }

    fn ctx(name: &str) -> Context {
        Context::of(name, "")
    }

    /// "go" opens a command before its verb and is no device's name (home
    /// G: "go lock the shop door" was `name: "go"`); a place's "'s" is its
    /// "is" ("the shop's too loud" was `area: "shop's"`).
    #[test]
    fn an_opener_is_no_name_and_a_place_leaves_its_is() {
        let f = fill(&device(), "go lock the shop door", &ctx("HassLock"));
        assert_eq!(f.get("name"), Some(&json!("shop door")), "{f:?}");
        let f = fill(&device(), "go ahead and turn the coffee pot on", &ctx("HassTurnOn"));
        assert_eq!(f.get("name"), Some(&json!("coffee pot")), "{f:?}");
        let f = fill(&device(), "the light in the shop's too bright, turn it off", &ctx("HassTurnOff"));
        assert_eq!(f.get("area"), Some(&json!("shop")), "{f:?}");
    }

    #[test]
    fn a_kind_with_a_place_is_an_area_and_a_domain_a_thing_alone_a_name() {
        let c = ctx("HassTurnOn");
        let f = fill(&device(), "turn on the laundry room light", &c);
        assert_eq!(f.get("area"), Some(&json!("laundry room")));
        assert_eq!(f.get("domain"), Some(&json!(["light"])));
        assert_eq!(f.get("name"), None);
        let f = fill(&device(), "turn off the lights in the basement please", &c);
        assert_eq!(f.get("area"), Some(&json!("basement")));
        assert_eq!(f.get("domain"), Some(&json!(["light"])));
        let f = fill(&device(), "spegni le luci del balcone", &c);
        assert_eq!(f.get("area"), Some(&json!("balcone")));
        let f = fill(&device(), "hey turn off the reading lamp please", &c);
        assert_eq!(f.get("name"), Some(&json!("reading lamp")));
        assert_eq!(f.len(), 1, "{f:?}");
        let f = fill(&device(), "could you switch off the tv", &c);
        assert_eq!(f.get("name"), Some(&json!("tv")), "a kind alone is one device: {f:?}");
        assert_eq!(f.get("domain"), None);
        // A verb and its pole are no kind, no place and no name.
        let f = fill(&device(), "switch off the playroom lights", &ctx("HassTurnOff"));
        assert_eq!(f.get("domain"), Some(&json!(["light"])), "'switch' is the verb here: {f:?}");
        let f = fill(&device(), "please turn the bedside lamp on", &c);
        assert_eq!((f.get("name"), f.get("area")), (Some(&json!("bedside lamp")), None), "{f:?}");
        let f = fill(&device(), "start vacuuming the kitchen", &ctx("HassVacuumStart"));
        assert_eq!(f.get("name"), Some(&json!("kitchen")), "the tool's gerund is the verb's: {f:?}");
        let f = fill(&device(), "il proiettore spegnilo per favore", &ctx("HassTurnOff"));
        assert_eq!(f.get("name"), Some(&json!("proiettore")), "{f:?}");
        let shop = json!({"type": "object", "properties": {
            "item": {"type": "string", "description": "The item, as the user said it"}}});
        let f = fill(&shop, "segnami prosciutto nella lista della spesa", &ctx("HassShoppingListAddItem"));
        assert_eq!(f.get("item"), Some(&json!("prosciutto")), "an imperative with its clitic is the verb");
    }

    #[test]
    fn a_place_is_words_of_a_place_not_a_number_a_verb_or_a_clause() {
        let fan = json!({"type": "object", "properties": {
            "area": {"type": "string", "description": "Name of an area (room) of the home"},
            "percentage": {"type": "integer", "description": "Fan speed in percent"}}});
        let c = ctx("HassFanSetSpeed");
        // The last preposition opens a number: the one before it a place.
        let f = fill(&fan, "regola il ventilatore in lavanderia al 20 per cento", &c);
        assert_eq!(f.get("area"), Some(&json!("lavanderia")));
        let f = fill(&fan, "ventilatore della cameretta al quarantacinque per cento", &c);
        assert_eq!(f.get("area"), Some(&json!("cameretta")));
        let c = ctx("HassTurnOn");
        let f = fill(&device(), "its dark in the pantry can you turn the light on", &c);
        assert_eq!(f.get("area"), Some(&json!("pantry")), "a clause's words end the place");
        let f = fill(&timer(), "metti in pausa il timer del bucato", &ctx("HassPauseTimer"));
        assert_eq!(f.get("area"), None, "'in pausa' is no place: {f:?}");
        assert_eq!(f.get("name"), Some(&json!("bucato")));
        let thermostat = json!({"type": "object", "properties": {
            "area": {"type": "string", "description": "Name of an area (room) of the home"}}});
        let c = ctx("HassClimateGetTemperature");
        let f = fill(&thermostat, "how warm is it in the conservatory right now", &c);
        assert_eq!(f.get("area"), Some(&json!("conservatory")), "a closing 'right now' is no part of it");
        let f = fill(&thermostat, "how warm is it at the moment", &c);
        assert_eq!(f.get("area"), None, "'at the moment' opens no place");
    }

    #[test]
    fn a_kind_word_after_a_place_preposition_behind_another_kind_is_the_place() {
        let schema = json!({"properties": {
            "area": {"type": "string", "description": "Name of an area (room) of the home"},
            "domain": {"type": "array", "items": {"type": "string", "enum": ["light", "fan"]}},
            "device_class": {"type": "array", "items": {"type": "string", "enum": ["garage", "door"]}}
        }});
        let v = fill(&schema, "switch off the lights in the garage", &ctx("HassTurnOff"));
        assert_eq!(v.get("area"), Some(&json!("garage")), "{v:?}");
        assert_eq!(v.get("domain"), Some(&json!(["light"])), "{v:?}");
        assert_eq!(v.get("device_class"), None, "{v:?}");
        let v = fill(&schema, "open the garage door in the hall", &ctx("HassOpenCover"));
        assert_eq!(v.get("device_class"), Some(&json!(["garage", "door"])), "{v:?}");
    }

    #[test]
    fn a_compound_place_after_of_keeps_its_joining_word() {
        let schema = json!({"properties": {
            "area": {"type": "string", "description": "Name of an area (room) of the home"},
            "domain": {"type": "array", "items": {"type": "string", "enum": ["light", "fan"]}},
            "percentage": {"type": "integer"}
        }});
        let c = ctx("HassFanSetSpeed");
        let v = fill(&schema, "metti il ventilatore della camera da letto al quaranta", &c);
        assert_eq!(v.get("area"), Some(&json!("camera da letto")), "{v:?}");
        let v = fill(&schema, "accendi la luce della sala da pranzo", &c);
        assert_eq!(v.get("area"), Some(&json!("sala da pranzo")), "{v:?}");
        let v = fill(&schema, "la luce della cucina al cinquanta", &c);
        assert_eq!(v.get("area"), Some(&json!("cucina")), "{v:?}");
    }

    #[test]
    fn a_required_text_is_the_object_and_an_enum_value_said_is_no_part_of_it() {
        let media = json!({"type": "object", "properties": {
            "search_query": {"type": "string", "description": "What to search for, as the user said it"},
            "media_class": {"type": "string", "enum": ["album", "podcast", "playlist"]},
            "name": {"type": "string", "description": "Name of one device or entity, as the user calls it"}},
            "required": ["search_query"]});
        let c = ctx("HassMediaSearchAndPlay");
        for (request, want) in [
            ("play the planet money podcast", "planet money"),
            ("play the graceland album", "graceland"),
            ("metti la playlist allenamento", "allenamento"),
        ] {
            let f = fill(&media, request, &c);
            assert_eq!(f.get("search_query"), Some(&json!(want)), "{request}: {f:?}");
            assert_eq!(f.get("name"), None, "{request}: {f:?}");
        }
    }

    /// "Y'all" is one word, and "all" before a consonant is no elided
    /// article ("announce y'all come get your plates" was "y all'come get
    /// your plates").
    #[test]
    fn y_all_is_one_word_and_all_elides_before_a_vowel_only() {
        assert_eq!(words("y'all come"), ["y'all", "come"]);
        let ws: Vec<String> = ["all", "come", "all", "ingresso"].map(String::from).to_vec();
        assert_eq!(join(&ws, (0, 4)), "all come all'ingresso");
    }

    /// "Out" before "in the carport" leads into the place and is no part
    /// of what is searched ("willie nelson out" was played).
    #[test]
    fn a_particle_before_the_place_is_no_part_of_the_text() {
        let media = json!({"type": "object", "properties": {
            "search_query": {"type": "string", "description": "What to search for, as the user said it"},
            "area": {"type": "string", "description": "Name of an area (room) of the home"}},
            "required": ["search_query"]});
        let c = ctx("HassMediaSearchAndPlay");
        let f = fill(&media, "play some willie nelson out in the carport", &c);
        assert_eq!(f.get("search_query"), Some(&json!("willie nelson")), "{f:?}");
        let f = fill(&media, "play shout it out", &c);
        assert_eq!(f.get("search_query"), Some(&json!("shout it out")), "{f:?}");
    }

    #[test]
    fn a_message_keeps_its_words_and_its_article() {
        let say = json!({"type": "object", "properties": {
            "message": {"type": "string", "description": "The message, as the user said it"}}});
        let c = ctx("HassBroadcast");
        assert_eq!(fill(&say, "tell everyone grandpa is here", &c).get("message"), Some(&json!("grandpa is here")));
        assert_eq!(fill(&say, "announce that the car is here", &c).get("message"), Some(&json!("the car is here")));
        assert_eq!(
            fill(&say, "avvisa tutti che la doccia è libera", &c).get("message"),
            Some(&json!("la doccia è libera"))
        );
        assert_eq!(fill(&say, "fai sapere a tutti che si cena", &c).get("message"), Some(&json!("si cena")));
    }

    #[test]
    fn the_name_of_a_thing_the_tool_names_is_what_qualifies_it() {
        let c = ctx("HassCancelTimer");
        assert_eq!(fill(&timer(), "stop the egg timer", &c).get("name"), Some(&json!("egg")));
        assert_eq!(fill(&timer(), "cancella il timer della torta", &c).get("name"), Some(&json!("torta")));
        // A property named for the thing holds the thing as said.
        let door = json!({"type": "object", "properties": {
            "door": {"type": "string", "description": "Name of the door or gate"}}});
        let c = ctx("lock_door");
        assert_eq!(fill(&door, "lock the patio door", &c).get("door"), Some(&json!("patio door")));
        assert_eq!(fill(&door, "blocca la porta della cantina", &c).get("door"), Some(&json!("porta della cantina")));
        assert_eq!(fill(&door, "blocca la porta d'ingresso", &c).get("door"), Some(&json!("porta d'ingresso")));
        // So does one that holds the thing as the household calls it.
        let target = json!({"type": "object", "properties": {
            "target": {"type": "string", "description": "The door or gate, as the household calls it"}}});
        let c = ctx("door-lock");
        assert_eq!(fill(&target, "lock the cellar door for me", &c).get("target"), Some(&json!("cellar door")));
        assert_eq!(fill(&target, "uh the back door lock it", &c).get("target"), Some(&json!("back door")));
        // A property described by its own name and a room takes the room
        // that names the thing.
        let speaker = json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Artist, album, song, genre or station to search for"},
            "speaker": {"type": "string", "description": "Speaker (or room of the speaker) to play on"}}});
        let c = ctx("play_music");
        assert_eq!(fill(&speaker, "play jazz on the bathroom speaker", &c).get("speaker"), Some(&json!("bathroom")));
        assert_eq!(fill(&speaker, "metti jazz sulla cassa della cucina", &c).get("speaker"), Some(&json!("cucina")));
        assert_eq!(fill(&speaker, "metti jazz sulla cassa bagno", &c).get("speaker"), Some(&json!("bagno")));
    }

    #[test]
    fn free_text_is_what_the_verb_and_the_tools_words_leave() {
        let list = json!({"type": "object", "properties": {
            "item": {"type": "string", "description": "The item, as the user said it"},
            "name": {"type": "string", "description": "Name of the to-do list; omit for the default list"}}});
        let c = ctx("HassListAddItem");
        let f = fill(&list, "add pay the water bill to my chores list", &c);
        assert_eq!(f.get("item"), Some(&json!("pay the water bill")));
        assert_eq!(f.get("name"), Some(&json!("chores")));
        let shop = json!({"type": "object", "properties": {
            "item": {"type": "string", "description": "The item, as the user said it"}}});
        let c = ctx("HassShoppingListAddItem");
        assert_eq!(fill(&shop, "add garbage bags to my shopping list", &c).get("item"), Some(&json!("garbage bags")));
        assert_eq!(
            fill(&shop, "aggiungi detersivo per i piatti alla lista della spesa", &c).get("item"),
            Some(&json!("detersivo per i piatti"))
        );
        // A verb that takes up, by a pronoun, the thing said before it.
        for (said, item) in [
            ("we're out of ketchup add it to the shopping list", "ketchup"),
            ("we need more coffee filters so add them to my shopping list", "coffee filters"),
            ("ci serve il basilico aggiungilo alla lista della spesa", "basilico"),
            ("buy milk and add it to the list", "milk"),
        ] {
            assert_eq!(fill(&shop, said, &c).get("item"), Some(&json!(item)), "{said}");
        }
        // Where it goes said first, then a verb of its own: the text
        // starts after that verb.
        let todo = json!({"type": "object", "properties": {
            "item_name": {"type": "string", "description": "The entry, as the user says it"},
            "list": {"type": "string", "description": "The word that names the list, without 'list'"}},
            "required": ["item_name"]});
        let c = Context::of("todo-add", "Add an entry to one of the household's to-do lists");
        let f = fill(&todo, "nella lista casa scrivi cambiare la lampadina del bagno", &c);
        assert_eq!(f.get("item_name"), Some(&json!("cambiare la lampadina del bagno")));
        assert_eq!(f.get("list"), Some(&json!("casa")));
    }

    /// An idiom of the lexicon that names what the tool does is the verb,
    /// not the start of the value ("che tempo fa" is the weather).
    #[test]
    fn an_idiom_naming_the_tool_is_its_verb() {
        let weather = json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Name of the weather entity, e.g. a place"}}});
        let c = Context::of("HassGetWeather", "Gets the current weather and forecast of a weather entity");
        assert_eq!(fill(&weather, "che tempo fa alla baita", &c).get("name"), Some(&json!("baita")));
        assert_eq!(fill(&weather, "che tempo fa alla casa al mare", &c).get("name"), Some(&json!("casa al mare")));
        // Not for a tool it does not name: there the idiom is what is said.
        let c = Context::of("HassBroadcast", "Broadcasts a message through the home");
        let say = json!({"type": "object", "properties": {
            "message": {"type": "string", "description": "Message to broadcast"}}});
        let said = fill(&say, "che tempo fa oggi", &c);
        assert!(said.get("message").and_then(Value::as_str).is_some_and(|m| m.contains("tempo")), "{said:?}");
    }

    /// A string enum said to be a kind ("Kind of device") is a kind like
    /// an array's items: the words before it are the room, in either
    /// language, and the kind is the one said — another vendor's schema
    /// than Home Assistant's (`room`, `kind`), written apart.
    #[test]
    fn a_string_kind_names_the_device_and_leaves_the_room() {
        let on = json!({"type": "object", "properties": {
            "room": {"type": "string", "description": "Room the device is in"},
            "device": {"type": "string", "description": "Name of a single device"},
            "kind": {"type": "string", "enum": ["light", "fan", "heater"], "description": "Kind of device"}}});
        let c = ctx("switch_on");
        let f = fill(&on, "switch on the porch light", &c);
        assert_eq!((f.get("room"), f.get("kind")), (Some(&json!("porch")), Some(&json!("light"))), "{f:?}");
        let f = fill(&on, "accendi il ventilatore in corridoio", &c);
        assert_eq!((f.get("room"), f.get("kind")), (Some(&json!("corridoio")), Some(&json!("fan"))), "{f:?}");
        // A kind of what is searched for is no device in a room.
        let play = json!({"type": "object", "properties": {
            "search_query": {"type": "string", "description": "What to search for, as the user said it"},
            "media_class": {"type": "string", "enum": ["album", "artist"], "description": "Kind of media"}},
            "required": ["search_query"]});
        assert_eq!(
            kind_words(
                &words("play the graceland album"),
                play["properties"].as_object().unwrap(),
                &ctx("play"),
                1,
                true
            )
            .len(),
            0
        );
    }

    /// What the description says the tool acts on is a kind word as its
    /// name is: "le persiane della cantina" for a tool that lowers "the
    /// blinds, shutters or curtains of a room" is the cellar's shutters.
    #[test]
    fn what_the_description_acts_on_leaves_the_room() {
        let close = json!({"type": "object", "properties": {
            "room": {"type": "string", "description": "Room whose blinds to close"},
            "percent": {"type": "integer"}}});
        let c =
            Context::of("close_blinds", "Lower the blinds, shutters or curtains of a room, fully or to a percentage");
        assert!(["blind", "shutter", "curtain"].iter().all(|w| c.objects.contains(*w)), "{:?}", c.objects);
        assert!(!c.objects.contains("room"), "{:?}", c.objects);
        let f = fill(&close, "chiudi le persiane della cantina", &c);
        assert_eq!(f.get("room"), Some(&json!("cantina")), "{f:?}");
        let f = fill(&close, "close the office curtains", &c);
        assert_eq!(f.get("room"), Some(&json!("office")), "{f:?}");
    }

    /// Home B's `play_music`: a tool that searches for the text it
    /// requires, and plays it on a speaker.
    fn play_music() -> (Value, Context) {
        let play = json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Artist, album, song, genre or station to search for"},
            "speaker": {"type": "string", "description": "Speaker (or room of the speaker) to play on"}},
            "required": ["query"]});
        (play, Context::of("play_music", "Search the music service and play the best match on a speaker"))
    }

    /// A text said after its tool's verb, with the place first, starts
    /// past the verb's particles as it does with the verb first ("some"
    /// was searched for).
    #[test]
    fn a_text_after_the_place_and_the_verb_loses_the_verbs_particles() {
        let (play, c) = play_music();
        let f = fill(&play, "office speaker play some radiohead", &c);
        assert_eq!(f.get("query"), Some(&json!("radiohead")), "{f:?}");
        assert_eq!(fill(&play, "play some radiohead", &c).get("query"), Some(&json!("radiohead")));
    }

    /// The thing a tool is named for, called by the household's own name
    /// without the word for it ("portoncino", not "porta"), is the thing;
    /// a thing of another tool's ("one player by its name", to pause the
    /// music) is not guessed so.
    #[test]
    fn a_thing_of_the_tool_may_be_called_by_its_own_name() {
        let lock = json!({"type": "object", "properties": {
            "target": {"type": "string", "description": "The door or gate, as the household calls it"}}});
        let c = Context::of("door-lock", "Lock a door or gate by its name");
        assert_eq!(fill(&lock, "blocca il portoncino", &c).get("target"), Some(&json!("portoncino")));
        assert_eq!(fill(&lock, "lock the side door", &c).get("target"), Some(&json!("side door")));
        let pause = json!({"type": "object", "properties": {
            "target": {"type": "string", "description": "One player or speaker by its name"}}});
        let c = Context::of("media-pause", "Pause what is playing in a zone or on one player");
        assert_eq!(fill(&pause, "stop the music for a sec", &c).get("target"), None);
    }

    /// A word of the tool's name qualified in the text is searched for
    /// with it ("classical music", "musica classica" for `play_music`:
    /// "music" was taken for the kind of thing played, and only
    /// "classical" searched); alone, it is still the verb's object.
    #[test]
    fn a_tools_noun_qualified_in_the_text_is_searched_for() {
        let (play, c) = play_music();
        let query = |request: &str| fill(&play, request, &c).get("query").cloned();
        assert_eq!(query("play classical music on the porch speaker"), Some(json!("classical music")));
        assert_eq!(query("suona un po' di musica classica in studio"), Some(json!("musica classica")));
        assert_eq!(query("play some music in the kitchen"), None);
        assert_eq!(fill(&play, "play music on the porch speaker", &c).get("speaker"), Some(&json!("porch")));
    }

    /// A thing a verb takes up by a pronoun or a clitic, and that verb.
    #[test]
    fn a_thing_taken_up_is_the_words_before_its_verb() {
        let r = |v: &str| resumed_thing(v);
        let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(r("need more coffee filters add them"), pair("coffee filters", "add them"));
        assert_eq!(r("run out of kitchen roll stick it"), pair("kitchen roll", "stick it"));
        assert_eq!(r("i croissant mettili"), pair("croissant", "mettili"));
        assert_eq!(r("oat milk"), None);
        assert_eq!(r("dishwasher tablets"), None);
    }

    /// "Tapparelle" are roller shutters: of a cover kind that has both,
    /// `shutter`, not `blind` (it was read as blinds, and a home's model
    /// passes `shutter` for them).
    #[test]
    fn tapparelle_are_shutters() {
        let close = json!({"type": "object", "properties": {
            "zone": {"type": "string", "description": "Zone (room or outdoor area) as the household calls it"},
            "cover_type": {"type": "array", "items": {"type": "string", "enum": ["blind", "shutter", "curtain"]}}}});
        let c = Context::of("cover-close", "Close the covers of a zone, or one cover by its name");
        let f = fill(&close, "tira giù le tapparelle in cucina", &c);
        assert_eq!(f.get("cover_type"), Some(&json!(["shutter"])), "{f:?}");
        assert_eq!(f.get("zone"), Some(&json!("cucina")), "{f:?}");
    }

    /// Free text by its name or its description's first words ("Text of
    /// the entry"), never where the request marks its own start, nor the
    /// tool's words alone.
    #[test]
    fn free_text_by_its_name_or_description() {
        let add = json!({"type": "object", "properties": {
            "list_name": {"type": "string", "description": "Name of the list"},
            "entry": {"type": "string", "description": "Text of the entry"}}, "required": ["entry"]});
        let c = ctx("add_to_list");
        let f = fill(&add, "put dish soap on the shopping list", &c);
        assert_eq!(f.get("entry"), Some(&json!("dish soap")), "{f:?}");
        // "the text file" is a file, its path no text the user words.
        let count =
            json!({"type": "object", "properties": {"path": {"type": "string", "description": "the text file"}}});
        assert_eq!(fill(&count, "count the words in notes", &ctx("word_count")).get("path"), None);
        let search =
            json!({"type": "object", "properties": {"query": {"type": "string", "description": "The search query"}}});
        assert_eq!(fill(&search, "trigger the web search; where is beijing", &ctx("web_search")).get("query"), None);
    }

    /// What a countdown is for is said after "for" / "per", never a
    /// number's ("for 10 minutes"), nor a courtesy ("per favore"); a
    /// list's entry loses its article ("cancella il latte").
    #[test]
    fn a_purpose_after_for_and_an_entry_without_its_article() {
        let countdown = json!({"type": "object", "properties": {
            "minutes": {"type": "integer"}, "label": {"type": "string", "description": "What the countdown is for"}}});
        let c = ctx("start_countdown");
        for (request, label) in [
            ("start a 12 minute countdown for the rice", Some("rice")),
            ("countdown for 15 minutes", None),
            ("timer di venti minuti per il pollo per favore", Some("pollo")),
        ] {
            assert_eq!(fill(&countdown, request, &c).get("label"), label.map(|l| json!(l)).as_ref(), "{request}");
        }
        let remove = json!({"type": "object", "properties": {
            "list_name": {"type": "string", "description": "Name of the list"},
            "entry": {"type": "string", "description": "Text of the entry"}}});
        let f = fill(&remove, "cancella il latte dalla lista della spesa", &ctx("remove_from_list"));
        assert_eq!(f.get("entry"), Some(&json!("latte")), "{f:?}");
    }

    /// A required text "as the user says it" is what the verb leaves — the
    /// tool's objects in it too ("Search the music services": "classical
    /// music") and an Italian modal's infinitive aside ("fammi sentire");
    /// an optional one is no free text, nor a colour.
    #[test]
    fn a_required_text_as_the_user_says_it() {
        let play = json!({"type": "object", "properties": {
            "search": {"type": "string", "description": "What to play, as the user says it (artist, title, genre, station)"},
            "zone": {"type": "string", "description": "Zone (room or outdoor area) as the household calls it"}},
            "required": ["search"]});
        let c = Context::of("media-play", "Search the music services and play the result in a zone or on one player");
        for (request, search) in [
            ("play some miles davis in the utility room", "miles davis"),
            ("could you play classical music in the conservatory", "classical music"),
            ("fammi sentire musica rilassante in camera matrimoniale", "musica rilassante"),
        ] {
            assert_eq!(fill(&play, request, &c).get("search"), Some(&json!(search)), "{request}");
        }
        let remaining = json!({"type": "object", "properties": {
            "timer_name": {"type": "string", "description": "What the timer is for, as the user says it (pasta, laundry)"}}});
        let f = fill(&remaining, "how long left on the timer", &ctx("timer-remaining"));
        assert_eq!(f.get("timer_name"), None, "optional: no free text: {f:?}");
        let colour = json!({"type": "object", "properties": {
            "color_name": {"type": "string", "description": "Colour as the user says it"}}, "required": ["color_name"]});
        let f = fill(&colour, "make the den lights really cosy", &ctx("light-color"));
        assert_eq!(f.get("color_name"), None, "a colour is a colour: {f:?}");
    }

    /// A room said as the verb's object, no preposition, is the place when
    /// its head is a place noun; a device's name is not.
    #[test]
    fn a_room_said_as_the_object_is_the_place() {
        let dim = json!({"type": "object", "properties": {
            "zone": {"type": "string", "description": "Zone (room or outdoor area) as the household calls it"},
            "target": {"type": "string", "description": "One device by the name the household gives it"},
            "value": {"type": "integer", "description": "Brightness in percent"}}, "required": ["value"]});
        let c = ctx("light-dim");
        let f = fill(&dim, "dim the games room to fifteen percent", &c);
        assert_eq!((f.get("zone"), f.get("target")), (Some(&json!("games room")), None), "{f:?}");
        let f = fill(&dim, "abbassa la sala da pranzo al 30 per cento", &c);
        assert_eq!(f.get("zone"), Some(&json!("sala da pranzo")), "{f:?}");
        let f = fill(&dim, "dim the desk lamp to 20 percent", &c);
        assert_eq!((f.get("zone"), f.get("target")), (None, Some(&json!("desk lamp"))), "{f:?}");
    }

    /// "What the timer is for" is also what qualifies the timer, before it
    /// or after it in Italian, bare or after "of".
    #[test]
    fn what_a_thing_is_for_qualifies_it() {
        let remaining = json!({"type": "object", "properties": {
            "timer_name": {"type": "string", "description": "What the timer is for, as the user says it (pasta, laundry)"}}});
        let c = ctx("timer-remaining");
        for (request, name) in [
            ("how much longer for the bread timer", Some("bread")),
            ("quanto manca al timer pizza", Some("pizza")),
            ("il timer delle uova quanto gli manca", Some("uova")),
            ("how long is left on the timer", None),
            ("quanto manca al timer", None),
        ] {
            assert_eq!(fill(&remaining, request, &c).get("timer_name"), name.map(|n| json!(n)).as_ref(), "{request}");
        }
    }

    /// "The word that names the list" is the list's qualifier, not the
    /// list; the entry is what the verb, the list and the tool's own verb
    /// said after it leave.
    #[test]
    fn the_word_that_names_a_list_and_the_entry_beside_it() {
        let todo = json!({"type": "object", "properties": {
            "item_name": {"type": "string", "description": "The entry, as the user says it"},
            "list": {"type": "string", "description": "The word that names the list, without 'list'"}},
            "required": ["item_name"]});
        let c = ctx("todo-add");
        for (request, item, list) in [
            ("put oat milk on the chores list", "oat milk", "chores"),
            ("add service the boiler to the house jobs list", "service the boiler", "house jobs"),
            ("on my garden list add prune the roses", "prune the roses", "garden"),
            ("aggiungi alla lista scadenze pagare la tari", "pagare la tari", "scadenze"),
            ("metti portare la macchina dal meccanico nella lista casa", "portare la macchina dal meccanico", "casa"),
        ] {
            let f = fill(&todo, request, &c);
            assert_eq!(f.get("item_name"), Some(&json!(item)), "{request}: {f:?}");
            assert_eq!(f.get("list"), Some(&json!(list)), "{request}: {f:?}");
        }
    }

    /// The place of a thing the description names, after "of" in either
    /// language, a compound name and all ("la temperatura della camera
    /// degli ospiti", "il termostato del seminterrato").
    #[test]
    fn the_place_of_what_the_tool_acts_on() {
        let set = json!({"type": "object", "properties": {
            "zone": {"type": "string", "description": "Zone (room or outdoor area) as the household calls it"},
            "value": {"type": "number", "description": "Target temperature"}}, "required": ["value"]});
        let c = Context::of("thermostat-set", "Set the target temperature of a zone's thermostat");
        for (request, zone) in [
            ("porta la temperatura della camera degli ospiti a diciannove gradi", "camera degli ospiti"),
            ("termostato del seminterrato a 17,5", "seminterrato"),
            ("set the temperature of the guest room to 20", "guest room"),
        ] {
            assert_eq!(fill(&set, request, &c).get("zone"), Some(&json!(zone)), "{request}");
        }
    }

    /// A tool that takes no string but a place takes the verb's direct
    /// object as one, whatever its head, up to a "with" ("col robot").
    #[test]
    fn a_tool_of_places_alone_takes_its_object_as_the_place() {
        let vacuum = json!({"type": "object", "properties": {
            "zone": {"type": "string", "description": "Zone (room or outdoor area) as the household calls it"}}});
        let c = Context::of("vacuum-start", "Send the robot vacuum to clean a zone, or the whole home");
        for (request, zone) in [
            ("pulisci il bagno di servizio col robot", Some("bagno di servizio")),
            ("clean the kitchen with the robot", Some("kitchen")),
            ("how clean is it at the moment", None),
        ] {
            assert_eq!(fill(&vacuum, request, &c).get("zone"), zone.map(|z| json!(z)).as_ref(), "{request}");
        }
    }

    /// Where the item goes, named by the tool's description, is no part of
    /// it, before the item or after it.
    #[test]
    fn where_an_item_goes_is_not_the_item() {
        let add = json!({"type": "object", "properties": {
            "item_name": {"type": "string", "description": "The item, as the user says it"}},
            "required": ["item_name"]});
        let c = Context::of("shopping-add", "Add an item to the household shopping list");
        for (request, item) in [
            ("aggiungi il latte alla lista della spesa", "latte"),
            ("aggiungi il latte di soia alla lista delle spese", "latte di soia"),
            ("shopping list add basmati rice", "basmati rice"),
            ("add eggs to the shopping list", "eggs"),
        ] {
            assert_eq!(fill(&add, request, &c).get("item_name"), Some(&json!(item)), "{request}");
        }
    }
}
