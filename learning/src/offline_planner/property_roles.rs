//! What a tool's string property holds, read by meaning when its vendor
//! words it in a way the word rules of [`crate::spoken`] do not read.
//!
//! The spoken rules know a property's role by the words of its name and
//! description: "Name of an area (room)" is a place, "Name of a single
//! device, as the household calls it" a device by its name, "The item,
//! as the user said it" free text. Another vendor says the same in its
//! own words — "one appliance, lamp or plug by its label in the app",
//! "door or gate, as the family names it" — and none of those words is
//! one the rules look for, so a request's values went unread. Rules:
//!
//! 1. **Only what no rule reads.** A string property without an enum
//!    that the spoken rules already read (a place, a thing's name, a
//!    device, free text, a colour: [`crate::spoken::reads`]), or that the
//!    filler reads by its name or format (a path, a URL, a date:
//!    [`crate::arguments::by_name_or_format`]), is left as its vendor wrote
//!    it; these rules never overrule another rule. (Without the second
//!    half, `engram demo`'s "how big is ~/notes.txt" lost its path to the
//!    words "notes txt".)
//! 2. **Nearest known wording.** The property, as "name: description", is
//!    compared with [`KNOWN`] — descriptions of other vendors' properties
//!    whose role the word rules read, each with its role. The nearest, at
//!    [`ROLE_BAR`] at least and ahead of the nearest of any other role by
//!    [`ROLE_MARGIN`], gives the role.
//! 3. **Read as that role's wording.** In the planner's copy of the schema
//!    only, the property's description is followed by a wording the rules
//!    read for that role (`Role::wording`) — after its own words, which may
//!    say more (a format: "The city and state, e.g. San Francisco, CA"); a
//!    thing called by the household's own name keeps its own head words
//!    ("door or gate"), which tell what the thing is. The tool's call still
//!    uses the vendor's property names: only how a request is read changes.
//! 4. **Not every required text is the tool's text.** Tried and not kept
//!    (docs/fast-path.md): a required string no rule reads and no known
//!    wording is near, read as the request's words for every vendor, made
//!    BFCL's commands, URLs and keys the request's words. Only what the
//!    model taught says so (rule 5).
//! 5. **What the model passed says what a property holds.** With the model
//!    away ([`taught_text`]), a required string property no rule reads,
//!    for which the model passed values the user said
//!    ([`crate::taught_phrasings`], rule 5: "marmite", "ring the vet"), is
//!    the tool's text: the model took the user's words for it, so the
//!    planner does too — but no word the tool's taught phrasings say
//!    around their values ("shopping list" of "stick X on the shopping
//!    list"), unless its values had it, is any of such a text: the words
//!    then read are the request's wording, not its thing, and the value
//!    is left unsaid ([`taught_value_fits`]). A call left without that
//!    text, or given two things joined by "and" / "e", is no call
//!    ([`is_no_call`]).

use std::borrow::Cow;

use serde_json::Value;

use crate::embedder::{EmbedError, Embedder};
use crate::taught_phrasings::TaughtPhrasings;
use engram_events::payloads::ToolArgs;

/// What a string property holds, as the spoken rules read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A room or an area of the home.
    Place,
    /// One device by the name the household gives it.
    Device,
    /// A thing of the tool's kind (a door, a cover) by the household's
    /// name for it, said with its noun ("the cellar door").
    Called,
    /// Words the user says for the tool: an item, a search, a message.
    Text,
}

impl Role {
    /// A description the spoken rules read as this role (rule 3); `own`
    /// is the property's own description.
    fn wording(self, own: &str) -> String {
        match self {
            Role::Place => "Name of an area (room) of the home".to_owned(),
            Role::Device => "Name of one device or entity, as the user calls it".to_owned(),
            Role::Called => format!("{}, as the household calls it", crate::spoken::called_head(own)),
            Role::Text => "The text, as the user said it".to_owned(),
        }
    }
}

/// Other vendors' properties, as "name: description", whose role the word
/// rules read (rule 2): homes A–C's schemas (`tests/fixtures/home*`), in
/// their several styles — none from home D, on which the rule was first
/// measured (docs/fast-path.md).
pub const KNOWN: &[(Role, &str)] = &[
    (Role::Place, "area: Name of an area (room) of the home"),
    (Role::Place, "room: Room the device is in"),
    (Role::Place, "room: Room to clean; everywhere if left out"),
    (Role::Place, "zone: Zone (room or outdoor area) as the household calls it"),
    (Role::Device, "name: Name of one device or entity, as the user calls it"),
    (Role::Device, "device: Name of a single device, as the household calls it"),
    (Role::Device, "target: One device by the name the household gives it"),
    (Role::Device, "device: Name of a single lamp"),
    (Role::Device, "target: One player or speaker by its name"),
    (Role::Called, "door: Name of the door or gate"),
    (Role::Called, "target: The door or gate, as the household calls it"),
    (Role::Called, "target: One cover by its name (the skylight, the patio awning)"),
    (Role::Text, "item: The item, as the user said it"),
    (Role::Text, "entry: Text of the entry"),
    (Role::Text, "query: Artist, album, song, genre or station to search for"),
    (Role::Text, "search: What to play, as the user says it (artist, title, genre, station)"),
    (Role::Text, "message: The message, as the user said it"),
    (Role::Text, "text: Message to speak"),
    (Role::Text, "announcement: The words to say, as the user says them"),
];

/// The cosine a property must reach to its nearest known wording to take
/// its role (rule 2). Chosen once, by eye, from a probe of home D's
/// properties with the multilingual model (a device "by its label in the
/// app" 0.54, a door "as the family names it" 0.83, "the thing to buy"
/// 0.28–0.38, left unread), before home D's figures were run and not
/// moved after; home D's properties are the same in both its splits, so
/// its held-out split does not test this bar (docs/fast-path.md).
pub const ROLE_BAR: f32 = 0.5;

/// How far the nearest known wording must lead the nearest of another role
/// (rule 2): two roles about as near is no reading.
pub const ROLE_MARGIN: f32 = 0.05;

/// The known wordings' vectors, embedded once per planner.
pub struct KnownRoles {
    vectors: Vec<Vec<f32>>,
}

impl KnownRoles {
    /// Embeds [`KNOWN`].
    pub fn new(embedder: &dyn Embedder) -> Result<KnownRoles, EmbedError> {
        let texts: Vec<&str> = KNOWN.iter().map(|(_, t)| *t).collect();
        Ok(KnownRoles { vectors: embedder.embed_batch(&texts)? })
    }

    /// `schema` with each property no rule reads described as the role its
    /// wording is nearest to (rules 1–3); the same schema when there is
    /// none.
    pub fn read(&self, embedder: &dyn Embedder, schema: &Value) -> Result<Value, EmbedError> {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Ok(schema.clone()) };
        let required = crate::spoken::required_of(schema);
        let unread: Vec<(&String, &Value)> =
            props.iter().filter(|(k, spec)| unread(k, spec, required.contains(&k.as_str()))).collect();
        if unread.is_empty() {
            return Ok(schema.clone());
        }
        let texts: Vec<String> = unread.iter().map(|(k, spec)| format!("{k}: {}", description(spec))).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&refs)?;
        let mut out = schema.clone();
        for ((k, spec), v) in unread.into_iter().zip(&vectors) {
            if let Some(role) = self.nearest(v) {
                tracing::debug!(property = %k, ?role, "offline planner: a property read by meaning");
                read_as(&mut out, k, spec, role);
            }
        }
        Ok(out)
    }

    /// The role of the known wording nearest to `v`, if it passes the bar
    /// and leads every other role by the margin (rule 2).
    fn nearest(&self, v: &[f32]) -> Option<Role> {
        let cosines: Vec<(Role, f32)> =
            KNOWN.iter().zip(&self.vectors).map(|((r, _), w)| (*r, super::dot(v, w))).collect();
        let (role, best) = cosines.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
        let other = cosines.iter().filter(|(r, _)| *r != role).map(|(_, c)| *c).fold(f32::MIN, f32::max);
        (best >= ROLE_BAR && best - other >= ROLE_MARGIN).then_some(role)
    }
}

/// Rule 5: `schema` of `tool` with each required string property no rule
/// reads, for which the model passed values the user said (`taught`),
/// read as the tool's text; borrowed as it is when there is none.
pub fn taught_text<'a>(schema: &'a Value, tool: &str, taught: &TaughtPhrasings) -> Cow<'a, Value> {
    let texts = taught_texts(schema, tool, taught);
    if texts.is_empty() {
        return Cow::Borrowed(schema);
    }
    let mut out = schema.clone();
    for k in texts {
        read_as(&mut out, k, &schema["properties"][k], Role::Text);
    }
    Cow::Owned(out)
}

/// Rule 5's properties of `tool`: required strings no rule reads that the
/// model passed the user's words for.
pub fn taught_texts<'a>(schema: &'a Value, tool: &str, taught: &TaughtPhrasings) -> Vec<&'a str> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let required = crate::spoken::required_of(schema);
    props
        .iter()
        .filter(|(k, spec)| {
            required.contains(&k.as_str()) && unread(k, spec, true) && !taught.values(tool, k).is_empty()
        })
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Rule 1: whether `spec`, a property `k` of a tool (`required` or not), is
/// a string without an enum that no other rule reads.
fn unread(k: &str, spec: &Value, required: bool) -> bool {
    let string = spec.get("type").and_then(Value::as_str) == Some("string") && spec.get("enum").is_none();
    string && !crate::spoken::reads(k, spec, required) && !crate::arguments::by_name_or_format(k, spec)
}

/// Rule 3: property `k` of `schema` (`spec`) described with `role`'s
/// wording after its own.
fn read_as(schema: &mut Value, k: &str, spec: &Value, role: Role) {
    let own = description(spec);
    let wording = role.wording(&own);
    schema["properties"][k]["description"] = Value::String(format!("{own}. {wording}"));
}

/// Rule 5: whether `value`, read as `tool`'s text for `param`, holds no
/// word its taught phrasings say around their values that none of the
/// values the model passed for `param` has.
pub fn taught_value_fits(value: &str, tool: &str, param: &str, taught: &TaughtPhrasings) -> bool {
    let around = taught.said_around(tool);
    let had = |w: &str| taught.values(tool, param).iter().any(|(said, _)| said.split_whitespace().any(|x| x == w));
    crate::text::normalize(value).split_whitespace().all(|w| !around.contains(w) || had(w))
}

/// Whether `args` of `tool` leave out a property read as text by rule 5,
/// or give it a value joining two things ("latte e uova", "milk and
/// eggs"): the model had the user's one thing each time, and the planner
/// does not guess what to add, nor that two are one ("salt and pepper") —
/// a call it would make is no call.
pub fn is_no_call(schema: &Value, tool: &str, args: &ToolArgs, taught: &TaughtPhrasings) -> bool {
    let joined =
        |v: &Value| v.as_str().is_some_and(|s| s.split_whitespace().any(crate::fast_path::slots::is_conjunction));
    taught_texts(schema, tool, taught).into_iter().any(|k| args.0.get(k).is_none_or(joined))
}

fn description(spec: &Value) -> String {
    spec.get("description").and_then(Value::as_str).unwrap_or("").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_called_thing_keeps_its_own_head_words() {
        assert_eq!(
            Role::Called.wording("door or gate, as the family names it"),
            "door or gate, as the household calls it"
        );
        assert_eq!(crate::spoken::called_head("one cover by its label (the skylight)"), "one cover");
    }

    #[test]
    fn every_known_wording_is_read_by_the_word_rules_as_its_role() {
        // Rule 2's premise: the known wordings are ones the rules read.
        for (role, text) in KNOWN {
            let (name, d) = text.split_once(": ").expect("name: description");
            let spec = serde_json::json!({"type": "string", "description": d});
            assert!(crate::spoken::reads(name, &spec, *role == Role::Text), "{text}");
            let rewritten = serde_json::json!({"type": "string", "description": role.wording(d)});
            assert!(crate::spoken::reads("x", &rewritten, *role == Role::Text), "{role:?} wording of {text}");
        }
    }
}
