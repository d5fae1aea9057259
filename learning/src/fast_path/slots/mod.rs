//! Slots from the model's own arguments: a value the model passed that the
//! user said becomes a typed slot of the learnt form, named by the tool's
//! parameter — and a new request fills it where the words around it match.
//!
//! The deterministic extractor ([`mod@super::extract`]) knows URLs, paths,
//! dates and numbers; it cannot know that "kitchen", "oat milk" or "dinner
//! is ready" are values. The model knows: asked "turn on the kitchen
//! light" it passes `{"area": "kitchen", "domain": ["light"]}`. So when a
//! turn is learnt, every string the model passed is looked for in the
//! request's words ([`slot_values`]); where it is found, that span becomes
//! the slot `area` of the learnt phrasing ("turn on the `areaslot`
//! light"), the argument becomes the placeholder `{slot:area}`, and the
//! value said is kept as the slot's vocabulary.
//!
//! Rules (numbered as the code applies them):
//!
//! 1. **Only content is a value.** A span made only of grammar — articles,
//!    prepositions, a pole ("on", "off"), an action word, a negation — is
//!    never a slot: "on" in `{"state": "on"}` stays a word of the phrasing,
//!    so the replay gate still sees "turn off" against "turn on".
//!    *1b.* **A word said for a value in the other language** is that value
//!    when its spelling is not said: the model passes an enum's English
//!    member (`fan`) for "ventilatore" ([`crate::tool_words::folded`]).
//! 2. **Longest value first, each span once.** "living room lamp" is found
//!    before "lamp"; two arguments never share the words they came from.
//! 3. **Elided articles are not part of a value.** "dell'ingresso" says
//!    `ingresso`: the slot takes the word after the apostrophe
//!    ([`tokens`]).
//! 4. **A new request fills a phrasing's slots by alignment** ([`fill`]):
//!    the phrasing's words are matched in order against the request's, each
//!    slot taking the run of words between its neighbours; a phrasing word
//!    the request lacks, or a request word the phrasing lacks, costs more
//!    when it carries meaning than when it is grammar, and a word said in
//!    place of the phrasing's costs what the phrasing's word missing would
//!    — so a request's own verb is not taken into the value beside it
//!    ("add garbage bags to my shopping list" for "put itemslot on the
//!    shopping list" fills "garbage bags"; the gate compares the verbs, and
//!    the slot, its frame not matched, takes only a known value). Articles and
//!    prepositions at a fill's edges are trimmed; a slot left empty fails
//!    the fill.
//! 5. **A fill must fit its slot** ([`Vocabulary::fits`]): a value the slot
//!    has taken (as said, or its enum member), else — only for a slot whose
//!    uses keep bringing new values (an open class: rooms, items, messages)
//!    — a new value shaped like the ones it took: no pole, action, negation
//!    or conjunction in it unless its values had them, not longer than they
//!    were by more than a word. A slot that has only ever taken one value,
//!    or whose values were not what the user said (the model translated
//!    "cucina" as "Kitchen"), takes only values it has seen. What does not
//!    fit sends the turn to the planner.

//!
//! This file holds the words as the slots see them (tokens, masks,
//! placeholders), learning a turn's slots (rules 1–3) and resolving a
//! template's slots; filling them from a new request (rule 4) is
//! `filling.rs`, what a slot's values say it may take (rule 5)
//! `vocabulary.rs`.

mod filling;
mod vocabulary;

pub use filling::{fill, fill_known, fill_known_partly, Edges, Fill, MAX_FILL};
pub(crate) use vocabulary::{is_conjunction, same_word_run, title};
pub use vocabulary::{Vocabulary, VOCABULARY_CAP};

use std::collections::BTreeMap;

use engram_events::payloads::ToolArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::{is_negation, is_stop_word, normalize, Negations};
use crate::tool_words::folded;

/// The placeholder of a said slot in a learnt argument: `{slot:area}`.
pub fn placeholder(name: &str) -> String {
    format!("{{slot:{name}}}")
}

/// The slot a placeholder names, if it is one (`{slot:area}` → `area`).
pub fn placeholder_name(text: &str) -> Option<&str> {
    text.strip_prefix("{slot:")?.strip_suffix('}')
}

/// The word a said slot is masked as in a phrasing's canonical text
/// (`area` → `areaslot`): no word of either language, kept whole by
/// [`normalize`], the same on both sides the replay gate compares.
pub fn mask(name: &str) -> String {
    let mut m: String = name.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect();
    m.push_str("slot");
    m
}

/// What a mask ([`mask`]) says of its parameter: the mask without "slot"
/// and an array index (`deviceclass0slot` → `deviceclass`), to compare
/// with another parameter's.
pub fn unmasked(mask: &str) -> &str {
    mask.strip_suffix("slot").unwrap_or(mask).trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Whether a word of a canonical text is a said slot's mask.
pub fn is_mask(word: &str) -> bool {
    word.len() > 4 && word.ends_with("slot") && word.is_ascii()
}

/// One word of a text as the slots see it: its text, and whether it is
/// glued to the word before it (the noun after an elided article:
/// "dell'" + "ingresso").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The word (normalised).
    pub text: String,
    /// Written right after the previous token, no space between.
    pub glued: bool,
}

/// Italian words that elide before a vowel: articles, articulated
/// prepositions, a few determiners ("l'", "dell'", "quest'").
const ELIDED: &[&str] = &[
    "l", "d", "c", "s", "m", "t", "n", "v", "un", "dell", "nell", "sull", "dall", "all", "coll", "quell", "quest",
    "bell", "sant", "tutt", "cos", "com", "dov", "anch",
];

/// The words of a normalised text, an elided Italian article or
/// preposition split from its noun (rule 3: "dell'ingresso" → "dell'",
/// "ingresso"); "what's", "we're" stay whole.
pub fn tokens(normalized: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for w in crate::text::words(normalized) {
        match w.split_once('\'') {
            Some((head, tail)) if ELIDED.contains(&head) && tail.chars().count() >= 2 => {
                out.push(Token { text: format!("{head}'"), glued: false });
                out.push(Token { text: tail.to_owned(), glued: true });
            }
            _ => out.push(Token { text: w.to_owned(), glued: false }),
        }
    }
    out
}

/// Tokens back to text.
pub fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    for t in tokens {
        if !out.is_empty() && !t.glued {
            out.push(' ');
        }
        out.push_str(&t.text);
    }
    out
}

/// Whether a word carries no value of its own (rule 1): a stop word, an
/// elided article, a negation, a pole of an axis or an action word.
fn is_grammar(word: &str) -> bool {
    word.ends_with('\'')
        || is_stop_word(word, Negations::Keep)
        || is_negation(word)
        || super::gate::is_pole(word)
        || super::gate::is_action(word)
}

/// Whether `words[i]` joins two nouns into one Italian compound noun: "da"
/// or "di" between two words that are not grammar, the second bare (no
/// article) — "sala da pranzo", "camera da letto", "succo di frutta" are
/// one name each, where "luce della cucina" is a light and a room. A
/// compound is one value: its joint is no grammar in it and it counts as
/// one word (rule 5), and a known value followed by a joint is only the
/// start of a longer name ([`fill_known`]: "camera" is not "camera da
/// letto").
fn is_compound_joint<S: AsRef<str>>(words: &[S], i: usize) -> bool {
    let noun = |w: &str| !is_grammar(w) && !is_mask(w);
    i > 0
        && i + 1 < words.len()
        && matches!(words[i].as_ref(), "da" | "di")
        && noun(words[i - 1].as_ref())
        && noun(words[i + 1].as_ref())
}

/// Whether `words[i]` joins two nouns of one new value's name, as a value
/// slot reads it (rule 5, [`vocabulary::Vocabulary::fits`]): a compound's
/// joint ([`is_compound_joint`]), or an Italian "of" with its article
/// between two nouns — "stanza del camino", "camera degli ospiti",
/// "cancelletto del giardino" are one room or one gate each, once the
/// words around the slot have placed the value. Not where a fill is
/// placed ([`filling`]): there "la luce della cucina" is a light and a
/// room.
fn is_name_joint<S: AsRef<str>>(words: &[S], i: usize) -> bool {
    const OF: &[&str] = &["del", "dello", "della", "dei", "degli", "delle", "dell"];
    let noun = |w: &str| !is_grammar(w) && !is_mask(w);
    is_compound_joint(words, i)
        || (i > 0
            && i + 1 < words.len()
            && OF.contains(&words[i].as_ref())
            && noun(words[i - 1].as_ref())
            && noun(words[i + 1].as_ref()))
}

/// Whether a word is an article, a preposition or another word that never
/// opens or closes a value (trimmed from a fill's edges, rule 4; costs
/// little when one side lacks it).
fn is_edge_grammar(word: &str) -> bool {
    word.ends_with('\'') || is_stop_word(word, Negations::Keep)
}

/// Articles, prepositions and possessives, EN + IT: what is trimmed from a
/// fill's edges (rule 4) — a closed class; "is" or "here" are not, so a
/// message keeps them ("grandpa is here").
pub(crate) fn is_determiner(word: &str) -> bool {
    const WORDS: &[&str] = &[
        "the", "a", "an", "my", "your", "our", "his", "her", "their", "some", "this", "that", "these", "those", "in",
        "on", "at", "of", "to", "for", "from", "with", "into", "by", "il", "lo", "la", "i", "gli", "le", "un", "uno",
        "una", "del", "dello", "della", "dei", "degli", "delle", "al", "allo", "alla", "ai", "agli", "alle", "nel",
        "nello", "nella", "nei", "negli", "nelle", "sul", "sullo", "sulla", "sui", "sugli", "sulle", "dal", "dallo",
        "dalla", "dai", "dagli", "dalle", "di", "da", "con", "su", "per", "tra", "fra", "mio", "mia", "miei", "mie",
        "tuo", "tua", "questo", "questa", "quel", "quella",
    ];
    word.ends_with('\'') || WORDS.contains(&word)
}

/// Two words the same for the slots: equal, or equal once a simple plural
/// is dropped ("lights" / "light"), or an Italian noun's or adjective's
/// last vowel ("lampada" / "lampade", "luce" / "luci").
pub(crate) fn same_word(a: &str, b: &str) -> bool {
    fn stem(w: &str) -> &str {
        match w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
            true => &w[..w.len() - 1],
            false => w,
        }
    }
    fn italian(w: &str) -> Option<&str> {
        let last = w.chars().last()?;
        (w.chars().count() >= 4 && matches!(last, 'a' | 'e' | 'i' | 'o')).then(|| &w[..w.len() - 1])
    }
    a == b || stem(a) == stem(b) || italian(a).is_some_and(|x| italian(b) == Some(x))
}

/// A value the model passed that the user said.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Said {
    /// The slot: the argument's path (`area`, `domain.0`).
    pub name: String,
    /// The words the user said it with (normalised).
    pub said: String,
    /// The value as the model passed it.
    pub value: Value,
    /// Whether the word right before it was an article or a preposition
    /// the model left out ("turn on *the* kitchen light" → "kitchen"):
    /// evidence that the slot's values are said after such words, not
    /// with them (rule 4).
    pub after_determiner: bool,
}

/// A learnt turn's request and call with its said values as slots.
#[derive(Clone, Debug, PartialEq)]
pub struct Slotted {
    /// The canonical text with each said value masked ([`mask`]).
    pub canonical: String,
    /// The arguments with each said value a placeholder ([`placeholder`]).
    pub args: ToolArgs,
    /// The said values, in the order the arguments list them.
    pub said: Vec<Said>,
}

/// Finds the string values of `args` in `canonical` (rules 1–3). Values
/// already placeholders (the extractor's `{url}`, `{number}`, …) are left
/// as they are.
pub fn slot_values(canonical: &str, args: &ToolArgs) -> Slotted {
    let mut toks = tokens(canonical);
    let mut leaves: Vec<(String, String)> = Vec::new();
    for (k, v) in &args.0 {
        collect_leaves(k, v, &mut leaves);
    }
    // Rule 2: longest first (by words), then by path for a stable order.
    let mut order: Vec<usize> = (0..leaves.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(normalize(&leaves[i].1).split(' ').count()), leaves[i].0.clone()));
    let mut found: BTreeMap<String, (String, Value, bool)> = BTreeMap::new();
    for i in order {
        let (path, value) = &leaves[i];
        let want: Vec<String> = tokens(&normalize(value)).into_iter().map(|t| t.text).collect();
        if want.is_empty() || want.iter().all(|w| is_grammar(w)) {
            continue; // rule 1
        }
        let Some(at) = find_span(&toks, &want) else { continue };
        let said = render(&toks[at..at + want.len()]);
        let glued = toks[at].glued;
        let after = at > 0 && is_determiner(&toks[at - 1].text);
        toks.splice(at..at + want.len(), [Token { text: mask(path), glued }]);
        found.insert(path.clone(), (said, Value::String(value.clone()), after));
    }
    let said: Vec<Said> = found
        .iter()
        .map(|(name, (said, value, after))| Said {
            name: name.clone(),
            said: said.clone(),
            value: value.clone(),
            after_determiner: *after,
        })
        .collect();
    let args = ToolArgs(args.0.iter().map(|(k, v)| (k.clone(), replace_leaves(k, v, &found))).collect());
    Slotted { canonical: render(&toks), args, said }
}

/// The string leaves of an argument value with their paths (`domain.0`),
/// placeholders aside.
fn collect_leaves(path: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if !s.trim().is_empty() && !is_placeholder(s) => out.push((path.to_owned(), s.clone())),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| collect_leaves(&format!("{path}.{i}"), x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| collect_leaves(&format!("{path}.{k}"), x, out)),
        _ => {}
    }
}

/// A value some rule already turned into a placeholder.
fn is_placeholder(s: &str) -> bool {
    s.starts_with('{') && s.ends_with('}') && !s.contains(' ')
}

fn replace_leaves(path: &str, v: &Value, found: &BTreeMap<String, (String, Value, bool)>) -> Value {
    match v {
        Value::String(_) if found.contains_key(path) => Value::String(placeholder(path)),
        Value::Array(a) => {
            Value::Array(a.iter().enumerate().map(|(i, x)| replace_leaves(&format!("{path}.{i}"), x, found)).collect())
        }
        Value::Object(o) => Value::Object(
            o.iter().map(|(k, x)| (k.clone(), replace_leaves(&format!("{path}.{k}"), x, found))).collect(),
        ),
        other => other.clone(),
    }
}

/// Where `want` (a value's words) first appears in `toks`, word by word;
/// else, for a value of one word, the word said for it in the other
/// language (rule 1b: `{"kind": "fan"}` for "accendi il *ventilatore*").
fn find_span(toks: &[Token], want: &[String]) -> Option<usize> {
    if want.len() > toks.len() {
        return None;
    }
    let spelt = (0..=toks.len() - want.len())
        .find(|&i| toks[i..i + want.len()].iter().zip(want).all(|(t, w)| !is_mask(&t.text) && same_word(&t.text, w)));
    spelt.or_else(|| match want {
        [one] => {
            let english = crate::tool_words::stem(one);
            toks.iter().position(|t| !is_mask(&t.text) && !is_grammar(&t.text) && folded(&t.text) == english)
        }
        _ => None,
    })
}

/// `args` with each `{slot:NAME}` placeholder replaced by `values[NAME]`;
/// `None` when one has no value.
pub fn resolve(args: &ToolArgs, values: &BTreeMap<String, Value>) -> Option<ToolArgs> {
    fn walk(v: &Value, values: &BTreeMap<String, Value>) -> Option<Value> {
        match v {
            Value::String(s) => match placeholder_name(s) {
                Some(name) => values.get(name).cloned(),
                None => Some(v.clone()),
            },
            Value::Array(a) => a.iter().map(|x| walk(x, values)).collect::<Option<Vec<_>>>().map(Value::Array),
            Value::Object(o) => {
                o.iter().map(|(k, x)| walk(x, values).map(|x| (k.clone(), x))).collect::<Option<_>>().map(Value::Object)
            }
            other => Some(other.clone()),
        }
    }
    args.0.iter().map(|(k, v)| walk(v, values).map(|v| (k.clone(), v))).collect::<Option<_>>().map(ToolArgs)
}

/// [`resolve`] with the slots `values` lacks left out: an argument holding
/// an unfilled slot is dropped (the offline planner may fill it).
pub fn resolve_partly(args: &ToolArgs, values: &BTreeMap<String, Value>) -> ToolArgs {
    let kept = args.0.iter().filter_map(|(k, v)| {
        let one = ToolArgs([(k.clone(), v.clone())].into_iter().collect());
        resolve(&one, values).and_then(|a| a.0.into_iter().next())
    });
    ToolArgs(kept.collect())
}

/// The string values of a phrasing's arguments that its request did not
/// say (by path; `domain.0`): neither a placeholder nor words of its
/// canonical text.
pub fn unsaid(canonical: &str, args: &ToolArgs) -> Vec<(String, Value)> {
    let words: Vec<String> = tokens(canonical).into_iter().map(|t| t.text).collect();
    let mut leaves = Vec::new();
    for (k, v) in &args.0 {
        collect_leaves(k, v, &mut leaves);
    }
    leaves
        .into_iter()
        .filter(|(_, v)| {
            let want: Vec<String> = tokens(&normalize(v)).into_iter().map(|t| t.text).collect();
            !want.iter().all(|w| words.iter().any(|x| same_word(x, w)))
        })
        .map(|(p, v)| (p, Value::String(v)))
        .collect()
}

/// The said slots a template's arguments name, in order.
pub fn slot_names(args: &ToolArgs) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => {
                if let Some(n) = placeholder_name(s) {
                    if !out.iter().any(|x| x == n) {
                        out.push(n.to_owned());
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    args.0.values().for_each(|v| walk(v, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> ToolArgs {
        ToolArgs(v.as_object().unwrap().clone())
    }

    #[test]
    fn a_said_value_becomes_a_slot_named_by_its_parameter() {
        let s = slot_values("turn on the kitchen light", &args(json!({"area": "kitchen", "domain": ["light"]})));
        assert_eq!(s.canonical, "turn on the areaslot domain0slot");
        assert_eq!(s.args, args(json!({"area": "{slot:area}", "domain": ["{slot:domain.0}"]})));
        assert_eq!(s.said.len(), 2);
        // Longest first, case and plural folded, elided article apart.
        let s = slot_values(
            "accendi la luce dell'ingresso e le lampade",
            &args(json!({"area": "Ingresso", "name": "lampada"})),
        );
        assert_eq!(s.canonical, "accendi la luce dell'areaslot e le nameslot");
        assert_eq!(
            s.said[0],
            Said { name: "area".into(), said: "ingresso".into(), value: json!("Ingresso"), after_determiner: true }
        );
    }

    #[test]
    fn grammar_is_never_a_slot() {
        let s = slot_values("turn on the kitchen lights", &args(json!({"room": "kitchen", "state": "on"})));
        assert_eq!(s.canonical, "turn on the roomslot lights");
        assert_eq!(s.args, args(json!({"room": "{slot:room}", "state": "on"})));
        // Not said: a constant of the phrasing.
        let s = slot_values("accendi la luce in cucina", &args(json!({"room": "garage"})));
        assert_eq!(s.canonical, "accendi la luce in cucina");
        assert!(s.said.is_empty());
    }

    /// Rule 1b: a value of one word said in the other language is a slot
    /// — the model's enum member for the user's word ("ventilatore" is
    /// `fan`), a room it translated; its vocabulary then maps the word said
    /// to the value passed (a translated slot takes only values it has
    /// seen: `Vocabulary::fits`).
    #[test]
    fn a_value_said_in_the_other_language_is_a_slot() {
        let s = slot_values("accendi il ventilatore in camera", &args(json!({"kind": "fan", "room": "camera"})));
        assert_eq!(s.canonical, "accendi il kindslot in roomslot");
        let kind = s.said.iter().find(|x| x.name == "kind").unwrap();
        assert_eq!((kind.said.as_str(), &kind.value), ("ventilatore", &json!("fan")));
        let s = slot_values("accendi la luce in cucina", &args(json!({"room": "kitchen"})));
        assert_eq!(s.canonical, "accendi la luce in roomslot");
        // Two words are not read across languages.
        let s = slot_values("accendi la luce in sala da pranzo", &args(json!({"room": "dining room"})));
        assert!(s.said.is_empty());
    }

    #[test]
    fn a_new_request_fills_the_slots_where_the_words_around_them_match() {
        let area = ["area".to_owned()];
        let no = |_: &str| Edges::Trim;
        let f = fill("turn on the areaslot light", "turn on the laundry room light", &area, &no).unwrap();
        assert_eq!(f.values["area"], "laundry room");
        assert_eq!(f.masked, "turn on the areaslot light");
        assert_eq!(f.cost, 0.02);
        assert!(f.framed.contains("area"), "the words around it match: a new value may fill it");
        // Another wording: the slot still takes the room, and the gate
        // compares what is left.
        let f = fill("turn on the areaslot lights", "lights on in the kitchen", &area, &no).unwrap();
        assert_eq!(f.values["area"], "kitchen");
        assert!(f.framed.is_empty(), "another wording: only a known value may fill it");
        // Edges trimmed; an empty fill fails.
        let f = fill("spegni la luce dell'areaslot", "spegni la luce dell'ufficio", &area, &no).unwrap();
        assert_eq!(f.values["area"], "ufficio");
        assert_eq!(f.masked, "spegni la luce dell'areaslot");
        // A closing "now" is when it is asked, not the place's.
        let f = fill("how warm is it in the areaslot", "how warm is it in the conservatory right now", &area, &no);
        assert_eq!(f.unwrap().values["area"], "conservatory");
        assert!(fill("add itemslot to the list", "add the to the list", &["item".to_owned()], &no).is_none());
        // A free text keeps its edges.
        let message = ["message".to_owned()];
        let yes = |_: &str| Edges::Keep;
        let f = fill("tell everyone messageslot", "tell everyone the bus is here", &message, &yes).unwrap();
        assert_eq!(f.values["message"], "the bus is here");
        let unknown = |_: &str| Edges::Unknown;
        assert!(fill("tell everyone messageslot", "tell everyone the bus is here", &message, &unknown).is_none());
        assert!(fill("tell everyone messageslot", "tell everyone dinner is ready", &message, &unknown).is_some());
    }

    /// A word said in place of the phrasing's (another verb) stays out of
    /// the value beside it: the gate, not the slot, compares the verbs.
    #[test]
    fn a_word_in_place_of_the_phrasings_is_not_taken_into_the_value() {
        let item = ["item".to_owned()];
        let no = |_: &str| Edges::Trim;
        let f = fill("put itemslot on the shopping list", "add garbage bags to my shopping list", &item, &no).unwrap();
        assert_eq!(f.values["item"], "garbage bags");
        assert_eq!(f.masked, "add itemslot to my shopping list");
        assert!(!f.framed.contains("item"), "another verb beside it: only a known value may fill it");
        let f = fill("accendi il nameslot", "spegni il ventilatore", &["name".to_owned()], &no).unwrap();
        assert_eq!((f.values["name"].as_str(), f.masked.as_str()), ("ventilatore", "spegni il nameslot"));
    }

    /// "Lucio Dalla" ends in a word that is also a preposition: a fill
    /// that would lose it is ambiguous, never "lucio".
    #[test]
    fn a_preposition_inside_a_frame_is_no_edge_to_trim() {
        let no = |_: &str| Edges::Trim;
        let names = ["query".to_owned(), "speaker".to_owned()];
        let template = "fammi sentire queryslot in speakerslot";
        assert_eq!(fill(template, "fammi sentire lucio dalla in veranda", &names, &no), None);
        let f = fill(template, "fammi sentire vasco in veranda per favore", &names, &no).unwrap();
        assert_eq!((f.values["query"].as_str(), f.values["speaker"].as_str()), ("vasco", "veranda"));
        let f = fill("accendi il kindslot in roomslot", "turn the lights on in the pantry", &names, &no);
        assert!(f.is_some(), "a pole is no value's: {f:?}");
    }

    #[test]
    fn a_fill_fits_a_known_value_an_enum_or_an_open_class() {
        let mut rooms = Vocabulary::default();
        for r in ["kitchen", "office", "living room"] {
            rooms.add(r, &json!(r), true);
        }
        assert_eq!(rooms.edges(), Edges::Trim);
        assert!(rooms.is_open());
        let none = |_: &str| false;
        assert_eq!(rooms.fits("garage", None, &none), Some(json!("garage")));
        assert_eq!(rooms.fits("kitchen and office", None, &none), None, "two values where one goes");
        assert_eq!(rooms.fits("turn on", None, &none), None);
        assert_eq!(rooms.fits("the big old guest room", None, &none), None, "longer by two words");
        assert_eq!(rooms.fits("luce in corridoio", None, &none), None, "grammar its values never had");
        // An Italian compound noun is one name, its joint no grammar.
        assert_eq!(rooms.fits("camera da letto", None, &none), Some(json!("camera da letto")));
        assert_eq!(rooms.fits("sala di lettura grande", None, &none), Some(json!("sala di lettura grande")));
        // An "of" with its article joins a name too ("stanza del camino");
        // a word the phrasings say around values is none of a new one
        // ("luce" of "spegni la luce in roomslot": a light and a room).
        assert_eq!(rooms.fits("stanza del camino", None, &none), Some(json!("stanza del camino")));
        let light = |w: &str| w == "luce";
        assert_eq!(rooms.fits("luce della cucina", None, &light), None, "the phrasing's own word: two things");
        assert_eq!(rooms.fits("luce di spegni", None, &none), None, "a verb is no noun of a compound");
        // A known value is no fill of a compound it begins.
        let known = |_: &str| vec!["camera".to_owned()];
        let f =
            fill_known("accendi la luce in roomslot", "accendi la luce in camera da letto", &["room".into()], &known);
        assert_eq!(f, None);
        let f = fill_known("accendi la luce in roomslot", "accendi la luce in camera", &["room".into()], &known);
        assert_eq!(f.map(|f| f.values["room"].clone()).as_deref(), Some("camera"));
        let lights = |w: &str| w == "light";
        assert_eq!(rooms.fits("hallway light", None, &lights), None, "a word phrasings say around values");
        let mut domain = Vocabulary::default();
        for _ in 0..3 {
            domain.add("light", &json!("light"), false);
        }
        assert!(!domain.is_open());
        assert_eq!(domain.fits("lights", None, &none), Some(json!("light")));
        assert_eq!(domain.fits("fan", None, &none), None, "a closed slot takes what it has seen");
        let enums = [json!("light"), json!("fan"), json!("media_player")];
        assert_eq!(domain.fits("fan", Some(&enums), &none), Some(json!("fan")));
        assert_eq!(domain.fits("tv", Some(&enums), &none), None);
        // A translated value: only what was seen.
        let mut area = Vocabulary::default();
        area.add("cucina", &json!("Kitchen"), true);
        area.add("bagno", &json!("Bathroom"), true);
        assert_eq!(area.fits("cucina", None, &none), Some(json!("Kitchen")));
        assert_eq!(area.fits("salotto", None, &none), None);
        // Title case learnt.
        let mut t = Vocabulary::default();
        t.add("kitchen", &json!("Kitchen"), true);
        t.add("office", &json!("Office"), true);
        assert_eq!(t.fits("living room", None, &none), Some(json!("Living Room")));
    }

    #[test]
    fn resolve_fills_placeholders() {
        let a = args(json!({"area": "{slot:area}", "domain": ["{slot:domain.0}"], "x": 1}));
        let v: BTreeMap<String, Value> = [("area".into(), json!("garage")), ("domain.0".into(), json!("light"))].into();
        assert_eq!(resolve(&a, &v).unwrap(), args(json!({"area": "garage", "domain": ["light"], "x": 1})));
        assert_eq!(slot_names(&a), ["area", "domain.0"]);
        assert!(resolve(&a, &BTreeMap::new()).is_none());
    }
}
