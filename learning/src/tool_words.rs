//! The words a request shares with a tool: the lexical half of the offline
//! planner's choice, beside the embedding's cosine.
//!
//! A small sentence model puts "turn off the kitchen light" next to
//! `HassLightSet` ("Sets the brightness or colour of lights") and
//! "spegni la luce" nowhere: the words say more. A tool is read as words —
//! its name split at case changes and separators (`HassTurnOff` → hass,
//! turn, off), its description, its parameters' names and enum values —
//! and a request as words too, Italian imperatives and a few nouns read as
//! the English word a tool's text would use (`SYNONYMS`) — and as every
//! word said for that one alone ("turn" is also "switch": `switch_off`
//! for "spegni") — plurals and third persons folded ("sets", "lights").
//! Then:
//!
//! * **shared words** count by how rare they are among the tools (a word
//!   every tool has, `hass`, counts nothing), twice in the tool's name;
//! * **polarity**: a request that names a pole (on/off, open/close,
//!   pause/resume, add/remove, lock/unlock: the replay gate's axes) never
//!   goes to a tool whose name (else description) names only the other
//!   pole, and leans to one that names the same;
//! * **mood**: a question ("is the light on", "what's the temperature",
//!   "la luce è accesa?") leans to a tool that tells or reads, and its
//!   pole words are the state asked about, not a command.

use std::collections::{BTreeSet, HashMap};

use crate::fast_path::gate::{poles_of, STATE_QUESTION_OPENERS};
use crate::text::{is_stop_word, normalize, Negations};

/// What a shared word weighs when it is in the tool's name, against one in
/// its description (1).
const NAME_WEIGHT: f32 = 2.0;

/// What a shared word weighs when it is a parameter's name (an enum value
/// the request names weighs as a description's word).
const PARAMETER_WEIGHT: f32 = 0.5;

/// What a request's pole adds to a tool naming the same pole.
pub const POLE_BONUS: f32 = 4.0;

/// What a question adds to a tool that tells or reads.
pub const MOOD_BONUS: f32 = 4.0;

/// The values of a property's enum, its own or its items' (a kind of
/// device: `domain: [light, fan]`), as text; none for a property without.
pub(crate) fn enum_members(spec: &serde_json::Value) -> impl Iterator<Item = &str> {
    let values = spec.get("enum").or_else(|| spec.get("items").and_then(|i| i.get("enum")));
    values.and_then(|v| v.as_array()).into_iter().flatten().filter_map(|v| v.as_str())
}

/// Words a request says for the English word a tool's text uses: Italian
/// imperatives and nouns of the home, and English verbs said for another
/// ("switch on" is "turn on", "cross off" marks done). General language,
/// EN + IT; keys in [`normalize`] form.
const SYNONYMS: &[(&str, &[&str])] = &[
    ("abbassa", &["lower", "set"]),
    ("aggiungi", &["add"]),
    ("alza", &["raise", "set"]),
    ("announce", &["announce"]),
    ("annulla", &["cancel"]),
    ("annuncia", &["announce"]),
    ("annuncio", &["announce"]),
    ("apri", &["open"]),
    ("ascolta", &["play"]),
    ("aspirapolvere", &["vacuum"]),
    ("avvia", &["start"]),
    ("bambini", &["kids"]),
    ("blocca", &["lock"]),
    ("caldo", &["temperature"]),
    ("cassa", &["speaker"]),
    ("casse", &["speaker"]),
    ("cancella", &["cancel"]),
    ("canzone", &["music", "media"]),
    ("chiave", &["lock"]),
    ("child", &["kid"]),
    ("children", &["kids"]),
    ("chiudi", &["close"]),
    ("cold", &["temperature"]),
    ("colore", &["color"]),
    ("colour", &["color"]),
    ("cross", &["mark", "done"]),
    ("degree", &["temperature"]),
    ("degrees", &["temperature"]),
    ("dim", &["brightness", "lower"]),
    ("dimmi", &["tell"]),
    ("everybody", &["every", "announce"]),
    ("everyone", &["every", "announce"]),
    ("ferma", &["cancel", "stop"]),
    ("freddo", &["temperature"]),
    ("gradi", &["temperature"]),
    ("hear", &["play"]),
    ("hot", &["temperature"]),
    ("imposta", &["set"]),
    ("listen", &["play"]),
    ("luminosità", &["brightness"]),
    ("metti", &["set", "add", "start"]),
    ("music", &["music", "media"]),
    ("musica", &["music", "media"]),
    ("partire", &["start"]),
    ("pausa", &["pause"]),
    ("persiane", &["shutter"]),
    ("put", &["add", "set"]),
    ("riprendi", &["resume"]),
    ("ripartire", &["resume"]),
    ("riproduci", &["play"]),
    ("sblocca", &["unlock"]),
    ("spegni", &["turn"]),
    ("spengi", &["turn"]),
    ("spunta", &["mark", "done"]),
    ("stop", &["cancel", "stop"]),
    ("suona", &["play"]),
    ("switch", &["turn"]),
    ("tell", &["tell"]),
    ("tapparella", &["shutter", "blind"]),
    ("tapparelle", &["shutter", "blind"]),
    ("tenda", &["curtain"]),
    ("tende", &["curtain"]),
    ("termostato", &["thermostat"]),
    ("togli", &["remove"]),
    ("leva", &["remove"]),
    ("tutti", &["every", "announce"]),
    ("velocità", &["speed"]),
    ("ventilatore", &["fan"]),
    ("ventilatori", &["fan"]),
    ("warm", &["temperature"]),
    ("accendi", &["turn"]),
];

/// Italian clitics an imperative carries ("accendimi", "aggiungilo").
const CLITICS: &[&str] = &["melo", "mela", "mele", "mi", "lo", "la", "le", "li", "ne", "ci"];

/// Question words that open a request for information (EN + IT).
pub(crate) const QUESTION_WORDS: &[&str] = &[
    "what", "what's", "whats", "how", "how's", "which", "quanti", "quanto", "quanta", "quante", "qual", "quale",
    "com'è",
];

/// The openers of a polite command ("can you find me a hotel?", "could
/// you turn the fan off?", "puoi accendere la luce?"): with a verb that
/// does something, the question mark is politeness, not a question.
const POLITE_OPENERS: &[&str] = &["can", "could", "would", "will"];

/// The verbs a polite opener asks to be told with, or asks about the
/// assistant with ("can you tell me the time?", "could you remember …?"):
/// a question after all.
const TELLING_VERBS: &[&str] = &[
    "tell", "show", "give", "say", "let", "know", "remember", "recall", "see", "be", "dimmi", "dirmi", "mostrami",
    "dammi", "sai", "ricordi",
];

/// Whether `raw` (normalised words) opens with a command: an action
/// verb, or a polite one — a [`POLITE_OPENERS`] word, "you" after an
/// English one, "please" if said, then a verb that does something rather
/// than tells.
fn opens_command(raw: &[&str]) -> bool {
    // An imperative with a question mark ("find Imax movies in San
    // Rafael?") commands as well.
    if raw.first().is_some_and(|w| crate::fast_path::gate::is_action(w) && !TELLING_VERBS.contains(w)) {
        return true;
    }
    let rest = match raw {
        [opener, "you", rest @ ..] if POLITE_OPENERS.contains(opener) => rest,
        ["puoi" | "potresti", rest @ ..] => rest,
        _ => return false,
    };
    let rest = rest.strip_prefix(&["please"][..]).unwrap_or(rest);
    rest.first().is_some_and(|verb| !TELLING_VERBS.contains(verb))
}

/// First words of a tool's description, and words of its name, that say
/// it tells or reads rather than changes.
const TELLS: &[&str] = &["tell", "read", "get", "status", "return", "check"];

/// The English word a request's word stands for, stemmed ("luci" →
/// light, "ventilatore" → fan): one spelling for a word said in either
/// language, where a tool's words and enum values are English.
pub fn folded(word: &str) -> String {
    match RequestWords::english(word) {
        Some(e) => stem(e),
        None => stem(crate::fast_path::lexicon::concept(word)),
    }
}

/// The root of `word` when it is a noun or gerund of "-ing" with a root of
/// three letters or more ("lighting" → light, "reading" → read): the verb
/// or thing a tool's name word says that way.
pub(crate) fn ing_root(word: &str) -> Option<&str> {
    word.strip_suffix("ing").filter(|r| r.len() >= 3)
}

/// `word` folded: third persons and plurals to their stem ("sets",
/// "lights", "searches", "batteries"), "colour" as "color".
pub fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    if w == "colour" || w == "colours" {
        return "color".into();
    }
    if w.len() > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..w.len() - 3]);
    }
    for end in ["ches", "shes", "sses", "xes"] {
        if w.len() > end.len() + 1 && w.ends_with(end) {
            return w[..w.len() - 2].to_owned();
        }
    }
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && w.is_ascii() {
        return w[..w.len() - 1].to_owned();
    }
    w
}

/// [`split_name`]'s words, each as its stem ([`stem`]): how a name is
/// compared with a request's words.
pub fn name_stems(name: &str) -> Vec<String> {
    split_name(name).iter().map(|w| stem(w)).collect()
}

/// A tool's or a parameter's name as words: `HassTurnOff` → hass, turn,
/// off; `get_current_weather` → get, current, weather; `_from` → from.
pub fn split_name(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A tool as words.
#[derive(Clone, Debug, Default)]
pub struct ToolWords {
    /// Its name's words, stemmed.
    name: BTreeSet<String>,
    /// Its description's words, stemmed.
    description: BTreeSet<String>,
    /// Its parameters' names and enum values, stemmed.
    parameters: BTreeSet<String>,
    /// Its parameters' enum values, stemmed: a value the request names
    /// ("the graceland album") says more than a parameter's name.
    values: BTreeSet<String>,
    /// The poles its name and its description's first word name, an axis
    /// named both ways left out; and both of each axis a command enum of
    /// its names both ways.
    poles: BTreeSet<(&'static str, bool)>,
    /// Whether it tells or reads.
    tells: bool,
    /// Its verbs: its name's words and its description's first word,
    /// stemmed ("resume" of "Resumes a paused timer").
    verbs: BTreeSet<String>,
    /// The axes its description names anywhere ("Tells whether devices
    /// are on or off, open or closed"): the states a tool that tells
    /// answers about.
    described_axes: BTreeSet<&'static str>,
}

fn content(text: &str) -> Vec<String> {
    normalize(text).split(' ').filter(|w| !w.is_empty()).map(stem).collect()
}

/// `description` without the words it prefixes with "non-" ("on/off for
/// non-light loads"): what a tool is not for is no word of it, or "lights
/// on" would lean to the loads that are not lights.
fn unnegated(description: &str) -> String {
    description
        .split_whitespace()
        .filter(|w| !w.get(..4).is_some_and(|head| head.eq_ignore_ascii_case("non-")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The poles of `words`, an axis named both ways left out.
fn poles(words: &[String]) -> BTreeSet<(&'static str, bool)> {
    let all: BTreeSet<(&'static str, bool)> = words.iter().flat_map(|w| poles_of(w)).collect();
    all.iter().copied().filter(|(axis, p)| !all.contains(&(*axis, !*p))).collect()
}

/// The poles of a command enum's `members`: both of each axis it names
/// both ways (`command: on | off | toggle`, `op: add | remove`). Such a
/// tool does either, as the value passed says — where a name or a
/// description naming both ways is neither ([`poles`]).
fn command_poles(members: &[String]) -> BTreeSet<(&'static str, bool)> {
    let all: BTreeSet<(&'static str, bool)> = members.iter().flat_map(|w| poles_of(w)).collect();
    all.iter().copied().filter(|(axis, p)| all.contains(&(*axis, !*p))).collect()
}

impl ToolWords {
    /// The words of a tool of `name`, `description` and parameters
    /// `schema`.
    pub fn new(name: &str, description: &str, schema: &serde_json::Value) -> ToolWords {
        let mut name_words: Vec<String> = name_stems(name);
        // A word said for another the name also holds is no verb of it:
        // `switch.turn_on` turns on (its verb) a switch (its kind), where
        // `switch_on` switches on. As a verb, "switch" would be shared by
        // every "turn on" request ([`SYNONYMS`]), lights and all.
        let all = name_words.clone();
        name_words.retain(|w| !synonyms(w).is_some_and(|s| s.iter().any(|x| x != w && all.contains(&stem(x)))));
        // A noun of "-ing" in the name names what it acts on too, as a
        // description's word: `lighting_control` is for lights.
        let mut described = content(&unnegated(description));
        described.extend(name_words.iter().filter_map(|w| ing_root(w)).map(stem));
        let mut parameters = BTreeSet::new();
        let mut enum_values = BTreeSet::new();
        let mut commands = BTreeSet::new();
        if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
            for (k, spec) in props {
                parameters.extend(name_stems(k));
                let members: Vec<String> = enum_members(spec).flat_map(name_stems).collect();
                commands.extend(command_poles(&members));
                parameters.extend(members.iter().cloned());
                enum_values.extend(members);
            }
        }
        // The name's poles and the description's first word's ("Resumes
        // paused media players"): the rest of a description may name a
        // pole as a state or a caveat. A command enum's are the tool's
        // both ways.
        let said: Vec<String> = name_words.iter().chain(described.first()).cloned().collect();
        let mut pole_set = poles(&said);
        pole_set.extend(commands);
        // A name's noun of "-ing" tells as its verb does (`climate_reading`
        // reads, as `readTemperature` does).
        let telling = |w: &String| TELLS.contains(&ing_root(w).unwrap_or(w));
        let tells = name_words.iter().any(telling) || described.first().is_some_and(telling);
        let described_axes = described.iter().flat_map(|w| poles_of(w)).map(|(a, _)| a).collect();
        let verbs = said.iter().cloned().collect();
        ToolWords {
            verbs,
            described_axes,
            name: name_words.into_iter().collect(),
            description: described.into_iter().collect(),
            parameters,
            values: enum_values,
            poles: pole_set,
            tells,
        }
    }

    fn all(&self) -> impl Iterator<Item = &String> {
        self.name.iter().chain(&self.description).chain(&self.parameters)
    }
}

/// A request as words.
#[derive(Clone, Debug, Default)]
pub struct RequestWords {
    words: BTreeSet<String>,
    poles: BTreeSet<(&'static str, bool)>,
    asks: bool,
    /// A yes/no question about a state ("are the lights on", "is it warm
    /// in the sunroom", "la luce è accesa"): the gate's rule 6.
    states: bool,
}

/// `word`'s English reading by `SYNONYMS`, a clitic taken off an
/// imperative if need be.
fn synonyms(word: &str) -> Option<&'static [&'static str]> {
    let find = |w: &str| SYNONYMS.iter().find(|(k, _)| *k == w).map(|(_, v)| *v);
    find(word).or_else(|| {
        CLITICS.iter().find_map(|c| {
            word.strip_suffix(c).filter(|s| s.len() >= 3).and_then(|s| find(s).or_else(|| find(&format!("{s}i"))))
        })
    })
}

/// The words said for `english` and nothing else (`SYNONYMS`' keys whose
/// one word it is): "turn" is also "switch", so a request that says one
/// shares the other with a tool named by it (`switch_off` for "spegni",
/// "turn off"; `HassTurnOff` for "switch off").
fn aliases(english: &str) -> impl Iterator<Item = &'static str> + '_ {
    SYNONYMS.iter().filter(move |(_, v)| *v == [english]).map(|(k, _)| *k)
}

impl RequestWords {
    /// The one English word `word` (normalised) is said for, when
    /// `SYNONYMS` gives one ("ventilatore" → fan).
    pub fn english(word: &str) -> Option<&'static str> {
        synonyms(word).filter(|s| s.len() == 1).map(|s| s[0])
    }

    /// Whether `word` (normalised) is said for a tool's word
    /// (`SYNONYMS`): a verb or a noun of the request, no value.
    pub fn is_synonym(word: &str) -> bool {
        synonyms(word).is_some()
    }

    /// The words of `request`.
    pub fn new(request: &str) -> RequestWords {
        let n = crate::fast_path::lexicon::phrases(&normalize(request));
        let raw: Vec<&str> = n.split(' ').filter(|w| !w.is_empty()).collect();
        let mut words = BTreeSet::new();
        let mut pole_set = BTreeSet::new();
        for w in &raw {
            pole_set.extend(poles_of(w));
            if let Some(s) = synonyms(w) {
                words.extend(s.iter().map(|x| stem(x)));
                words.extend(s.iter().flat_map(|x| aliases(x)).map(stem));
            }
            words.extend(aliases(w).map(stem));
            let c = crate::fast_path::lexicon::concept(w);
            if !is_stop_word(w, Negations::Drop) || c != *w {
                words.insert(stem(c));
            }
            words.insert(stem(w));
        }
        // Of a cover, up opens and down closes (the gate's reading); to a
        // value, it sets a position ("lower the blinds to 30 percent").
        if crate::fast_path::gate::names_a_cover(&raw) && !crate::fast_path::gate::to_a_value(&raw) {
            pole_set = crate::fast_path::gate::level_as_open(pole_set);
        }
        let question_mark = request.trim_end().ends_with('?');
        // A state's participle asks with a copula or a question mark ("è
        // accesa la luce in bagno", "luci accese in cucina?"); without,
        // it is the state wanted ("luci spente in stireria grazie").
        let state = crate::fast_path::gate::names_state(&raw, question_mark);
        let asks = raw.first().is_some_and(|w| STATE_QUESTION_OPENERS.contains(w) || QUESTION_WORDS.contains(w))
            || state
            || (question_mark && !opens_command(&raw));
        let states = raw.first().is_some_and(|w| STATE_QUESTION_OPENERS.contains(w)) || state;
        RequestWords { words, poles: pole_set, asks, states }
    }

    /// Whether the request asks about a state (a yes/no question, or a
    /// state's participle): what only a tool that tells answers.
    pub fn asks_state(&self) -> bool {
        self.states
    }
}

/// The words of a set of tools, with how rare each word is among them.
pub struct Vocabulary {
    tools: Vec<ToolWords>,
    idf: HashMap<String, f32>,
}

impl Vocabulary {
    /// The vocabulary of `tools` (name, description, schema).
    pub fn new<'a>(tools: impl IntoIterator<Item = (&'a str, &'a str, &'a serde_json::Value)>) -> Vocabulary {
        let tools: Vec<ToolWords> = tools.into_iter().map(|(n, d, s)| ToolWords::new(n, d, s)).collect();
        let mut df: HashMap<String, usize> = HashMap::new();
        for t in &tools {
            let set: BTreeSet<&String> = t.all().collect();
            for w in set {
                *df.entry(w.clone()).or_default() += 1;
            }
        }
        let n = tools.len().max(1) as f32;
        let idf = df.into_iter().map(|(w, d)| (w, (n / d as f32).ln())).collect();
        Vocabulary { tools, idf }
    }

    /// What of tool `i`'s score is the question's lean alone (no word
    /// shared): not evidence enough to plan it.
    pub fn mood(&self, i: usize, request: &RequestWords) -> f32 {
        match request.asks && self.tools.get(i).is_some_and(|t| t.tells) {
            true => MOOD_BONUS,
            false => 0.0,
        }
    }

    /// How many of the request's words tool `i`'s name, description or
    /// parameters hold, a pole both name as two: one word alone, however rare, is a
    /// coincidence of wording ("write me a poem" and `write_file`), not
    /// the request naming the tool.
    pub fn shared(&self, i: usize, request: &RequestWords) -> usize {
        let Some(t) = self.tools.get(i) else { return 0 };
        let mut seen = BTreeSet::new();
        request
            .words
            .iter()
            .filter(|w| poles_of(w).is_empty() && !is_stop_word(w, Negations::Drop))
            .filter(|w| t.name.contains(*w) || t.description.contains(*w) || t.parameters.contains(*w))
            .filter(|w| seen.insert(w.as_str()))
            .count()
            // A pole both name is an action and its direction at once
            // ("switch on the printer" and `HassTurnOn`): two words' worth.
            + 2 * usize::from(!request.asks && request.poles.iter().any(|p| t.poles.contains(p)))
            + 2 * usize::from(Self::tells_state(t, request))
    }

    /// Whether a question about a state ("are the den lights on") names
    /// the state tool `t` tells about: its pole's axis is one the tool's
    /// description names ("Tells whether devices are on or off").
    fn tells_state(t: &ToolWords, request: &RequestWords) -> bool {
        request.states && t.tells && request.poles.iter().any(|(axis, _)| t.described_axes.contains(axis))
    }

    /// Whether tool `i` tells or reads (its name, or its description's
    /// first word: "Tells whether …", `GetState`).
    pub fn tells(&self, i: usize) -> bool {
        self.tools.get(i).is_some_and(|t| t.tells)
    }

    /// The lexical score of tool `i` for `request`: `None` when the
    /// request names a pole the tool names only the other way (module
    /// docs).
    pub fn score(&self, i: usize, request: &RequestWords) -> Option<f32> {
        self.score_by(i, request, |w| self.idf.get(w).copied().unwrap_or(0.0))
    }

    /// How rare each of `request`'s words is among the tools `among` (the
    /// candidates left once the others are ruled out), out of all the
    /// tools: a word every ruled-out tool shares with one left ("timer",
    /// of four timer tools, once the three for a running timer are ruled
    /// out for a new one) tells that one from the others, where among all
    /// tools it was common. Worked out once per request, for
    /// [`Vocabulary::score_among`].
    pub fn rarity_among(&self, request: &RequestWords, among: &[usize]) -> HashMap<String, f32> {
        let n = self.tools.len().max(1) as f32;
        let holds = |j: &usize, w: &str| self.tools.get(*j).is_some_and(|t| t.all().any(|x| x == w));
        request
            .words
            .iter()
            .map(|w| {
                let rare = match among.iter().filter(|j| holds(j, w)).count() {
                    0 => self.idf.get(w).copied().unwrap_or(0.0),
                    df => (n / df as f32).ln(),
                };
                (w.clone(), rare)
            })
            .collect()
    }

    /// [`Vocabulary::score`] with the words as rare as `rarity` says
    /// ([`Vocabulary::rarity_among`]): for ranking the candidates only,
    /// the bars read [`Vocabulary::score`].
    pub fn score_among(&self, i: usize, request: &RequestWords, rarity: &HashMap<String, f32>) -> Option<f32> {
        self.score_by(i, request, |w| rarity.get(w).copied().unwrap_or(0.0))
    }

    fn score_by(&self, i: usize, request: &RequestWords, idf: impl Fn(&str) -> f32) -> Option<f32> {
        let t = self.tools.get(i)?;
        if !request.asks
            && request.poles.iter().any(|(a, p)| t.poles.contains(&(*a, !*p)) && !t.poles.contains(&(*a, *p)))
        {
            return None;
        }
        let mut score = 0.0;
        for w in &request.words {
            let idf = idf(w);
            if !poles_of(w).is_empty() {
                // A pole counts by its axis below; the tool's very verb
                // ("resume" and "Resumes a paused timer", where "start"
                // shares only the pole) counts as a description's word.
                if t.verbs.contains(w) {
                    score += idf;
                }
                continue;
            }
            score += idf
                * if t.name.contains(w) {
                    NAME_WEIGHT
                } else if QUESTION_WORDS.contains(&w.as_str()) {
                    // A question counts as the mood bonus, not again as a
                    // description's word ("how" of "Tells how much time
                    // is left" for "how hot is it").
                    0.0
                } else if t.description.contains(w) || t.values.contains(w) {
                    1.0
                } else if t.parameters.contains(w) {
                    PARAMETER_WEIGHT
                } else {
                    0.0
                };
        }
        if !request.asks && request.poles.iter().any(|p| t.poles.contains(p)) {
            score += POLE_BONUS;
        }
        if request.asks && t.tells {
            score += MOOD_BONUS;
        }
        if Self::tells_state(t, request) {
            score += POLE_BONUS;
        }
        Some(score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a description says a tool is not for is no word of it:
    /// home F's `appliance_power` ("on/off/toggle for non-light loads")
    /// shared "light" with every request for lights.
    #[test]
    fn a_word_after_non_is_no_word_of_the_tool() {
        let t = ToolWords::new("appliance_power", "[power] on/off/toggle for non-light loads", &json!({}));
        assert!(!t.description.contains("light") && t.description.contains("load"), "{:?}", t.description);
    }

    /// A name's noun of "-ing" names what the tool acts on, as a
    /// description's word: "lights" is `lighting_control`'s, where the
    /// loads that are not lights shared only an "in" (home F's dev split).
    #[test]
    fn a_names_noun_of_ing_names_what_it_acts_on() {
        let command = json!({"type": "object", "properties": {"zone": {"type": "string"},
            "command": {"type": "string", "enum": ["on", "off", "toggle"]}}});
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("lighting_control", "[lighting] power cmd for every fixture of a zone", command.clone()),
            ("appliance_power", "[power] on/off/toggle for non-light loads: all units of a type in a zone", command),
            ("power_status", "[power] read on/off state of a unit class in a zone", json!({})),
            ("timer_create", "[timers] start a countdown", json!({})),
        ];
        let v = Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)));
        let said = RequestWords::new("och switch the lights on in the lambing shed");
        assert!(v.score(0, &said) > v.score(1, &said), "{:?} {:?}", v.score(0, &said), v.score(1, &said));
    }

    /// One tool per family, its action a command enum (home F's
    /// `lighting_control {command: on | off}`), does both ways: a pole
    /// said is its pole too, never the other's — "switch off the reading
    /// lamp" went to `humidity_reading` for the word "reading". A name's
    /// "-ing" noun that tells tells (`climate_reading`).
    #[test]
    fn a_command_enum_names_both_poles_and_a_reading_tells() {
        let command = json!({"type": "object", "properties": {"fixture": {"type": "string"},
            "command": {"type": "string", "enum": ["on", "off", "toggle"]}}});
        let zone = json!({"type": "object", "properties": {"zone": {"type": "string"}}});
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("lighting_control", "[lighting] power cmd for a zone or one fixture", command),
            ("humidity_reading", "[climate] current relative humidity of a zone", zone.clone()),
            ("climate_zone", "[climate] setpoint for a zone", zone),
        ];
        let v = Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)));
        let said = RequestWords::new("switch off the reading lamp");
        let light = v.score(0, &said).expect("no tool of the other pole");
        assert!(light >= POLE_BONUS, "{light}");
        assert_eq!(v.shared(0, &said), 2, "the pole shared is two words' worth");
        assert!(v.tells(1) && !v.tells(2));
    }

    fn home() -> Vocabulary {
        let s = json!({"type": "object", "properties": {"area": {"type": "string"},
            "domain": {"type": "array", "items": {"type": "string", "enum": ["light", "fan"]}}}});
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("HassTurnOn", "Turns on a device", s.clone()),
            ("HassTurnOff", "Turns off a device", s.clone()),
            ("HassLightSet", "Sets the brightness or colour of lights", json!({})),
            ("HassGetState", "Tells whether devices are on or off", s.clone()),
            ("HassMediaPause", "Pauses media players", json!({})),
            ("HassMediaUnpause", "Resumes paused media players", json!({})),
        ];
        Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)))
    }

    fn best(v: &Vocabulary, request: &str) -> usize {
        let r = RequestWords::new(request);
        (0..v.tools.len())
            .max_by(|a, b| v.score(*a, &r).unwrap_or(-1.0).total_cmp(&v.score(*b, &r).unwrap_or(-1.0)))
            .unwrap()
    }

    /// A question word counts once, as the question (the mood bonus), not
    /// again as a word of a description that happens to hold it: "how hot
    /// is it" went to the timers' "Tells how much time is left" over the
    /// thermometer's "Reads the current temperature".
    #[test]
    fn a_question_word_is_no_description_word() {
        let area = json!({"type": "object", "properties": {"area": {"type": "string"}}});
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("HassTimerStatus", "Tells how much time is left on timers", area.clone()),
            ("HassClimateGetTemperature", "Reads the current temperature of a thermostat or of an area", area.clone()),
            ("HassTurnOn", "Turns on a device", area),
        ];
        let v = Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)));
        let score = |i: usize, r: &str| v.score(i, &RequestWords::new(r)).unwrap_or(-1.0);
        // "warm" is the thermometer's temperature; "how", no timer's word.
        assert!(score(0, "how warm is it") < score(1, "how warm is it"));
        assert_eq!(score(0, "how is the nursery"), score(1, "how is the nursery"));
        assert_eq!(best(&v, "how long is left on the timer"), 0);
    }

    #[test]
    fn names_split_at_case_changes_and_words_fold_to_their_stem() {
        assert_eq!(split_name("HassTurnOff"), ["hass", "turn", "off"]);
        assert_eq!(split_name("get_current_weather"), ["get", "current", "weather"]);
        assert_eq!(stem("Lights"), "light");
        assert_eq!(stem("searches"), "search");
        assert_eq!(stem("colour"), "color");
    }

    #[test]
    fn a_request_saying_off_never_goes_to_a_tool_named_on() {
        let v = home();
        for off in ["turn off the kitchen light", "kitchen light off", "spegni la luce in cucina", "spegnimi la luce"] {
            assert_eq!(v.score(0, &RequestWords::new(off)), None, "{off}");
            assert_eq!(best(&v, off), 1, "{off}");
        }
        for on in ["turn on the kitchen light", "accendi la luce in cucina", "switch on the printer"] {
            assert_eq!(v.score(1, &RequestWords::new(on)), None, "{on}");
            assert_eq!(best(&v, on), 0, "{on}");
        }
        assert_eq!(best(&v, "resume the music in the bathroom"), 5);
        assert_eq!(best(&v, "metti in pausa la musica"), 4);
    }

    #[test]
    fn the_tools_own_verb_counts_beside_its_pole() {
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("HassUnpauseTimer", "Resumes a paused timer", json!({})),
            ("HassStartTimer", "Starts a timer of a given duration", json!({})),
        ];
        let v = Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)));
        // On a tie `best` takes the last: the verb must break it.
        assert_eq!(best(&v, "resume the tea timer"), 0, "both name the pole; one says the verb");
        assert_eq!(best(&v, "start the tea timer"), 1);
    }

    #[test]
    fn a_question_goes_to_a_tool_that_tells() {
        let v = home();
        assert_eq!(best(&v, "is the bedroom light on"), 3);
        assert_eq!(best(&v, "la luce del corridoio è accesa?"), 3);
        // A question about a state shares its pole with a tool that tells
        // about that axis: two words' worth, as a command's pole.
        for question in ["are the den lights on", "did i leave the den light on", "le luci in salotto sono accese"] {
            let r = RequestWords::new(question);
            assert!(r.asks_state(), "{question}");
            assert!(v.shared(3, &r) >= 2, "{question}: {}", v.shared(3, &r));
        }
        assert!(!RequestWords::new("can you turn the kettle on?").asks_state(), "a polite command asks no state");
        // A state's participle asks with a copula or a question mark;
        // without, it is the state wanted (home B's and C's dev splits).
        for question in ["è accesa la luce in bagno", "luci accese in cucina?"] {
            assert!(RequestWords::new(question).asks_state(), "{question}");
        }
        for command in ["luci spente in stireria grazie", "luce dello studio spenta per favore"] {
            assert!(!RequestWords::new(command).asks_state(), "{command}");
        }
    }

    /// A polite command, or an imperative, ends with a question mark and
    /// asks nothing: it keeps its pole ("could you switch off the den light?" never goes to
    /// a tool named for on) and leans to no tool that tells.
    #[test]
    fn a_polite_command_is_a_command() {
        for command in [
            "could you switch off the den light?",
            "can you please find me a hotel?",
            "puoi spegnere la luce?",
            "search for movies playing in San Francisco?",
        ] {
            assert!(!RequestWords::new(command).asks, "{command}");
        }
        for question in ["can you tell me the time?", "could you let me know the weather?", "mi dici che ore sono?"] {
            assert!(RequestWords::new(question).asks, "{question}");
        }
    }

    /// "turn" and "switch" are one verb: a tool named by either is named
    /// by a request saying the other, in either language ("spegni" is
    /// "turn off" is `switch_off`; before, only the pole was shared and
    /// "spegni la luce del terrazzo" planned nothing).
    #[test]
    fn a_verb_said_for_another_names_a_tool_named_by_either() {
        let s = json!({"type": "object", "properties": {"kind": {"type": "string", "enum": ["light"]}}});
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("switch_off", "Switch off one device", s.clone()),
            ("HassTurnOff", "Turns off a device", s.clone()),
            ("dim_light", "Set the brightness of the lights", json!({})),
        ];
        let v = Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)));
        for request in ["spegni la luce del terrazzo", "turn off the porch light", "switch off the porch light"] {
            let said = RequestWords::new(request);
            assert!(said.words.contains("switch") && said.words.contains("turn"), "{request}: {:?}", said.words);
        }
        let said = RequestWords::new("spegni la luce del terrazzo");
        assert!(v.score(0, &said).unwrap() > v.score(2, &said).unwrap() + 4.0);
    }

    #[test]
    fn one_word_in_common_is_a_coincidence_a_pole_is_not() {
        let tools: Vec<(&str, &str, serde_json::Value)> = vec![
            ("write_file", "Create a new file or overwrite an existing file with new content", json!({})),
            ("read_file", "Read the contents of a file", json!({})),
            ("HassTurnOn", "Turns on a device", json!({})),
        ];
        let v = Vocabulary::new(tools.iter().map(|(n, d, s)| (*n, *d, s)));
        assert_eq!(v.shared(0, &RequestWords::new("write me a poem about the sea")), 1);
        assert!(v.shared(0, &RequestWords::new("write a new file called notes")) >= 2);
        assert_eq!(v.shared(2, &RequestWords::new("switch on the printer")), 2);
    }

    /// Of a cover, down is the closing pole a tool named for it names
    /// ("pull the blinds down" shares it with `cover-close`); to a value
    /// it is a position, as the gate reads it.
    #[test]
    fn a_cover_going_down_closes() {
        assert_eq!(
            RequestWords::new("pull the blinds down in the dining room").poles,
            BTreeSet::from([("open", false)])
        );
        assert_eq!(RequestWords::new("lower the blinds to 30 percent").poles, BTreeSet::from([("level", false)]));
        assert_eq!(RequestWords::new("turn the volume down").poles, BTreeSet::from([("level", false)]));
    }

    /// Rule 17 of the offline planner, on home C's tools
    /// (`tests/fixtures/home-c`): "timer" is common among its four timer
    /// tools and "minutes" rare, so among all its tools heating boost ("…
    /// for a number of minutes") outranks starting a timer for "timer for
    /// the eggs seven minutes"; once the three tools for a running timer
    /// are ruled out (a new one is asked), the tool's name decides.
    #[test]
    fn words_are_as_rare_as_among_the_tools_left() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/home-c/tools.json");
        let tools: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let text = |t: &serde_json::Value, k: &str| t[k].as_str().unwrap_or_default().to_owned();
        let named: Vec<(String, String, serde_json::Value)> =
            tools.iter().map(|t| (text(t, "name"), text(t, "description"), t["inputSchema"].clone())).collect();
        let v = Vocabulary::new(named.iter().map(|(n, d, s)| (n.as_str(), d.as_str(), s)));
        let at = |name: &str| named.iter().position(|(n, _, _)| n == name).unwrap();
        let said = RequestWords::new("timer for the eggs seven minutes");
        let (start, boost) = (at("timer-start"), at("heating-boost"));
        assert!(v.score(boost, &said) > v.score(start, &said), "among all, the rare word wins");
        let running = ["timer-cancel", "timer-extend", "timer-remaining"].map(at);
        let left: Vec<usize> = (0..named.len()).filter(|i| !running.contains(i)).collect();
        let rarity = v.rarity_among(&said, &left);
        assert!(
            v.score_among(start, &said, &rarity) > v.score_among(boost, &said, &rarity),
            "among those left, the name"
        );
        let all: Vec<usize> = (0..named.len()).collect();
        let rarity = v.rarity_among(&said, &all);
        assert_eq!(v.score_among(boost, &said, &rarity), v.score(boost, &said), "all left: the same score");
    }

    /// `switch.turn_on` (home D's dotted names) turns on a switch: its
    /// "switch" is no verb, or every "turn on" request shared it, lights
    /// and all; `switch_on` (home B's) still switches on.
    #[test]
    fn a_word_said_for_another_the_name_holds_is_no_verb_of_it() {
        let empty = serde_json::json!({});
        let dotted = ToolWords::new("switch.turn_on", "switch > on: a plug or appliance by label", &empty);
        assert!(dotted.name.contains("turn") && !dotted.name.contains("switch"), "{:?}", dotted.name);
        let plain = ToolWords::new("switch_on", "Switches a device on", &empty);
        assert!(plain.name.contains("switch"), "{:?}", plain.name);
    }
}
