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

use std::collections::BTreeMap;

use engram_events::payloads::ToolArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::{is_negation, is_stop_word, normalize, Negations};

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
fn same_word(a: &str, b: &str) -> bool {
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

/// Where `want` (a value's words) first appears in `toks`, word by word.
fn find_span(toks: &[Token], want: &[String]) -> Option<usize> {
    if want.len() > toks.len() {
        return None;
    }
    (0..=toks.len() - want.len())
        .find(|&i| toks[i..i + want.len()].iter().zip(want).all(|(t, w)| !is_mask(&t.text) && same_word(&t.text, w)))
}

/// The longest run of words one said slot may take.
pub const MAX_FILL: usize = 12;

/// A new request's words for each said slot of a phrasing, and the request
/// with those words masked (what the replay gate compares with the
/// phrasing).
#[derive(Clone, Debug, PartialEq)]
pub struct Fill {
    /// Slot name → the words that fill it (rendered).
    pub values: BTreeMap<String, String>,
    /// The request with each fill masked.
    pub masked: String,
    /// The alignment's cost: 0 when the request is the phrasing with other
    /// values.
    pub cost: f64,
    /// The slots whose neighbouring words in the phrasing are the
    /// request's around the fill: only these may take a value never seen
    /// (rule 5) — a new value is read from a taught frame, a known one
    /// from anywhere.
    pub framed: std::collections::BTreeSet<String>,
}

/// What a word costs when one side has it and the other does not (rule 4).
fn gap(word: &str) -> f64 {
    match is_edge_grammar(word) {
        true => 0.3,
        false => 1.0,
    }
}

/// The alignment table of rule 4: `cost[i][j]` is the best alignment of
/// the template's first `i` tokens with the request's first `j`; `how`
/// how each cell was reached (0 match, 1 a template word unmatched, 2 a
/// request word unmatched, 3 + k a slot taking k words).
type Alignment = (Vec<Vec<f64>>, Vec<Vec<usize>>);

fn align(t: &[Token], r: &[Token]) -> Alignment {
    let (n, m) = (t.len(), r.len());
    // A word the template names outside its slots is rarely part of a
    // value: taken by a slot, it costs what leaving it unmatched would.
    let template_words: Vec<&str> = t.iter().filter(|x| !is_mask(&x.text)).map(|x| x.text.as_str()).collect();
    let take = |w: &str| match template_words.iter().any(|t| same_word(t, w)) {
        true => gap(w) + 0.3,
        false => 0.01,
    };
    const INF: f64 = f64::INFINITY;
    let mut cost = vec![vec![INF; m + 1]; n + 1];
    // How each cell was reached: 0 match, 1 skip t, 2 skip r, 3 + k slot of k words.
    let mut how = vec![vec![0usize; m + 1]; n + 1];
    cost[0][0] = 0.0;
    for i in 0..=n {
        for j in 0..=m {
            let c = cost[i][j];
            if c == INF {
                continue;
            }
            if j < m && c + gap(&r[j].text) < cost[i][j + 1] {
                cost[i][j + 1] = c + gap(&r[j].text);
                how[i][j + 1] = 2;
            }
            if i == n {
                continue;
            }
            if is_mask(&t[i].text) {
                let mut nc = c;
                for k in 1..=MAX_FILL.min(m - j) {
                    // A slot never takes another value's mask ("number").
                    if super::SlotKind::from_name(&r[j + k - 1].text).is_some() || is_mask(&r[j + k - 1].text) {
                        break;
                    }
                    nc += take(&r[j + k - 1].text);
                    if nc < cost[i + 1][j + k] {
                        cost[i + 1][j + k] = nc;
                        how[i + 1][j + k] = 3 + k;
                    }
                }
                continue;
            }
            if c + gap(&t[i].text) < cost[i + 1][j] {
                cost[i + 1][j] = c + gap(&t[i].text);
                how[i + 1][j] = 1;
            }
            if j < m && same_word(&t[i].text, &r[j].text) && c < cost[i + 1][j + 1] {
                cost[i + 1][j + 1] = c;
                how[i + 1][j + 1] = 0;
            }
            // One word for another in its place (the gate compares them):
            // a request's own verb is not taken into the value beside it.
            let swap = c + gap(&t[i].text);
            if j < m && !is_mask(&r[j].text) && swap < cost[i + 1][j + 1] {
                cost[i + 1][j + 1] = swap;
                how[i + 1][j + 1] = 3;
            }
        }
    }
    (cost, how)
}

/// How a slot's values begin, as its uses showed (rule 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edges {
    /// Said after an article or a preposition the model left out: a fill's
    /// leading ones are not the value ("the kitchen" → "kitchen").
    Trim,
    /// Values that begin with one ("the school bus is coming"): kept.
    Keep,
    /// Never seen either way: a fill that begins with one is ambiguous and
    /// fails (the planner decides).
    Unknown,
}

/// Politeness at the end of a request, EN + IT: never the end of a value.
fn is_courtesy(word: &str) -> bool {
    matches!(word, "please" | "thanks" | "thank" | "you" | "grazie" | "favore" | "cortesia" | "now" | "ora" | "adesso")
}

/// Fills the said slots of `template` (a phrasing's canonical text, its
/// slots masked; `names` its slots' names, [`slot_names`]) from `request`
/// (a canonical text), by rule 4; `edges` tells how each slot's values
/// begin. `None` when a slot cannot be filled.
pub fn fill(template: &str, request: &str, names: &[String], edges: &dyn Fn(&str) -> Edges) -> Option<Fill> {
    let t = tokens(template);
    let r = tokens(request);
    let (n, m) = (t.len(), r.len());
    if !t.iter().any(|x| is_mask(&x.text)) {
        return None;
    }
    let (cost, how) = align(&t, &r);
    const INF: f64 = f64::INFINITY;
    if cost[n][m] == INF {
        return None;
    }
    // Walk back: which request words each slot took.
    let mut spans: Vec<(String, usize, usize, usize)> = Vec::new();
    let mut matched = vec![false; n];
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        match how[i][j] {
            0 => {
                matched[i - 1] = true;
                i -= 1;
                j -= 1;
            }
            1 => i -= 1,
            2 => j -= 1,
            3 => {
                i -= 1;
                j -= 1;
            }
            k => {
                let k = k - 3;
                spans.push((t[i - 1].text.clone(), i - 1, j - k, j));
                i -= 1;
                j -= k;
            }
        }
    }
    spans.reverse();
    // A slot is framed when the phrasing's words beside it (another
    // slot, or the text's edge, aside) were matched.
    let beside = |at: usize| at >= n || is_mask(&t[at].text) || matched[at];
    let mut framed = std::collections::BTreeSet::new();
    let mut values = BTreeMap::new();
    let mut masked: Vec<Token> = Vec::with_capacity(r.len());
    let mut at = 0;
    for (mask_word, ti, mut s, mut e) in spans {
        let name = names.iter().find(|n| mask(n) == mask_word).cloned().unwrap_or_else(|| mask_word.clone());
        if (ti == 0 || beside(ti - 1)) && beside(ti + 1) {
            framed.insert(name.clone());
        }
        // Rule 4: articles and prepositions before a value are not part of
        // it when its slot's uses said so; politeness and prepositions at
        // its end never are.
        while e > s && (is_determiner(&r[e - 1].text) || is_courtesy(&r[e - 1].text)) {
            e -= 1;
        }
        if s < e && is_determiner(&r[s].text) {
            match edges(&name) {
                Edges::Trim => {
                    while s < e && is_determiner(&r[s].text) {
                        s += 1;
                    }
                }
                Edges::Keep => {}
                Edges::Unknown => return None,
            }
        }
        if s == e {
            return None;
        }
        masked.extend(r[at..s].iter().cloned());
        masked.push(Token { text: mask_word.clone(), glued: r[s].glued });
        at = e;
        values.insert(name, render(&unglue(&r[s..e])));
    }
    masked.extend(r[at..].iter().cloned());
    Some(Fill { values, masked: render(&masked), cost: cost[n][m], framed })
}

/// Fills the said slots of `template` from `request` by the values each
/// has taken (`known(name)`: its vocabulary, as said): where every slot's
/// known value is in the request, wherever it is ("switch on the lights in
/// the kitchen" for "turn on the roomslot lights" that took "kitchen").
/// `None` when a slot has none of its values in the request.
pub fn fill_known(
    template: &str,
    request: &str,
    names: &[String],
    known: &dyn Fn(&str) -> Vec<String>,
) -> Option<Fill> {
    if names.is_empty() || !tokens(template).iter().any(|t| is_mask(&t.text)) {
        return None;
    }
    known_in(request, names, known, false)
}

/// [`fill_known`]'s values for the slots whose known values the request
/// holds, the others left unfilled: what a request worded unlike any
/// phrasing still says of the action's values (the offline planner's
/// guess with the model away, `model_away`).
pub fn fill_known_partly(request: &str, names: &[String], known: &dyn Fn(&str) -> Vec<String>) -> Fill {
    known_in(request, names, known, true).unwrap_or_else(|| Fill {
        values: BTreeMap::new(),
        masked: request.to_owned(),
        cost: 0.0,
        framed: Default::default(),
    })
}

/// Each slot's longest known value found in `request`, masked; a slot
/// with none found fails the fill unless `partly`.
fn known_in(request: &str, names: &[String], known: &dyn Fn(&str) -> Vec<String>, partly: bool) -> Option<Fill> {
    let mut r = tokens(request);
    let mut values = BTreeMap::new();
    for name in names {
        let mut said: Vec<Vec<String>> = known(name)
            .iter()
            .map(|v| tokens(v).into_iter().map(|t| t.text).collect::<Vec<_>>())
            .filter(|w: &Vec<String>| !w.is_empty())
            .collect();
        said.sort_by_key(|w| std::cmp::Reverse(w.len()));
        let found = said.iter().find_map(|w| find_span(&r, w).map(|at| (at, w.len())));
        let (at, len) = match (found, partly) {
            (Some(f), _) => f,
            (None, true) => continue,
            (None, false) => return None,
        };
        values.insert(name.clone(), render(&unglue(&r[at..at + len])));
        let glued = r[at].glued;
        r.splice(at..at + len, [Token { text: mask(name), glued }]);
    }
    Some(Fill { values, masked: render(&r), cost: 0.0, framed: Default::default() })
}

/// The tokens of a fill, its first one not glued to what came before.
fn unglue(tokens: &[Token]) -> Vec<Token> {
    let mut out = tokens.to_vec();
    if let Some(first) = out.first_mut() {
        first.glued = false;
    }
    out
}

/// The values a said slot has taken, and what that says about the values
/// it may take (rule 5).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vocabulary {
    /// (as said, as passed, times), oldest first.
    pub values: Vec<(String, Value, u32)>,
    /// Times the slot was filled in all.
    pub uses: u32,
    /// Uses said right after an article or a preposition the model left
    /// out ([`Said::after_determiner`]).
    #[serde(default)]
    pub after_determiner: u32,
}

/// At most this many values are kept per slot (the oldest least used go).
pub const VOCABULARY_CAP: usize = 64;

/// How a model turned what the user said into the value it passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Casing {
    /// As said.
    Same,
    /// Each word capitalised ("Living Room").
    Title,
    /// All capitals.
    Upper,
}

fn casing(said: &str, value: &str) -> Option<Casing> {
    let v = value.trim();
    if v == said {
        return Some(Casing::Same);
    }
    if normalize(v) != said {
        return None;
    }
    if v == title(said) {
        Some(Casing::Title)
    } else if v == said.to_uppercase() {
        Some(Casing::Upper)
    } else {
        // Spelling the model changed in its own way (punctuation): as said.
        Some(Casing::Same)
    }
}

/// Each word of `s` with a capital first letter ("new york" → "New
/// York").
pub(crate) fn title(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Vocabulary {
    /// Notes one use of the slot with `said` → `value`, said right after an
    /// article or a preposition or not.
    pub fn add(&mut self, said: &str, value: &Value, after_determiner: bool) {
        self.uses += 1;
        self.after_determiner += u32::from(after_determiner);
        if let Some(e) = self.values.iter_mut().find(|(s, v, _)| s == said && v == value) {
            e.2 += 1;
            return;
        }
        if self.values.len() >= VOCABULARY_CAP {
            // The least used, oldest first among equals.
            if let Some(i) = (0..self.values.len()).min_by_key(|&i| (self.values[i].2, i)) {
                self.values.remove(i);
            }
        }
        self.values.push((said.to_owned(), value.clone(), 1));
    }

    /// The values it has taken, as said.
    pub fn said(&self) -> Vec<String> {
        self.values.iter().map(|(s, _, _)| s.clone()).collect()
    }

    /// The value taken when `said` (a value it has taken, as said).
    pub fn value_of(&self, said: &str) -> Option<Value> {
        self.values.iter().filter(|(s, _, _)| s == said).max_by_key(|(_, _, n)| *n).map(|(_, v, _)| v.clone())
    }

    /// Whether the slot has taken `said` (a plural as its singular).
    pub fn knows(&self, said: &str) -> bool {
        self.values.iter().any(|(s, _, _)| same_word_run(s, said))
    }

    /// Takes back one use of `said` → `value` (a turn rated bad taught it):
    /// a value no use is left of is no value of the slot.
    pub fn take_back(&mut self, said: &str, value: &Value, after_determiner: bool) {
        let Some(i) = self.values.iter().position(|(s, v, _)| s == said && v == value) else { return };
        self.uses = self.uses.saturating_sub(1);
        self.after_determiner = self.after_determiner.saturating_sub(u32::from(after_determiner));
        self.values[i].2 -= 1;
        if self.values[i].2 == 0 {
            self.values.remove(i);
        }
    }

    /// Whether the slot holds free text (a message, a task said with its
    /// verb): a value of four words or more, or one holding grammar other
    /// than articles and prepositions ("dinner *is* ready", "*call* the
    /// plumber") — not "lampada del comodino".
    pub fn is_free_text(&self) -> bool {
        self.values.iter().any(|(s, _, _)| {
            let words: Vec<&str> = s.split(' ').collect();
            words.len() >= 4 || words.iter().any(|w| is_stop_word(w, Negations::Keep) && !is_determiner(w))
        })
    }

    /// How the slot's values begin (rule 4): with an article they kept, or
    /// after one the model left out, or not known.
    pub fn edges(&self) -> Edges {
        let kept = self.values.iter().any(|(s, _, _)| s.split(' ').next().is_some_and(is_determiner));
        match (kept, self.after_determiner > 0) {
            (true, false) => Edges::Keep,
            (false, true) => Edges::Trim,
            (true, true) => Edges::Keep,
            (false, false) => Edges::Unknown,
        }
    }

    /// Whether the slot is an open class: at least two values, and at
    /// least one use in two brought a new one (rule 5).
    pub fn is_open(&self) -> bool {
        let distinct = self.values.len();
        distinct >= 2 && distinct * 2 >= self.uses as usize
    }

    /// The value for a fill said as `said` (normalised words), if it fits
    /// the slot (rule 5); `enum_values` are the parameter's enum in the
    /// tool's schema, when it has one; `command` tells the words learnt
    /// phrasings say around their values (a new value is none of them
    /// unless the slot's own values had it: "hallway light" is no device
    /// name when "light" is what phrasings say).
    pub fn fits(&self, said: &str, enum_values: Option<&[Value]>, command: &dyn Fn(&str) -> bool) -> Option<Value> {
        // A value it has taken, as said (a plural as its singular).
        let known = self
            .values
            .iter()
            .filter(|(s, _, _)| s == said || same_word_run(s, said))
            .max_by_key(|(_, _, n)| *n)
            .map(|(_, v, _)| v.clone());
        if let Some(enums) = enum_values {
            // An enum member named as said (or as a known value maps it).
            let by_name = enums.iter().find(|e| e.as_str().is_some_and(|e| same_word_run(&normalize(e), said)));
            return match (by_name, known) {
                (Some(e), _) => Some(e.clone()),
                (None, Some(k)) if enums.contains(&k) => Some(k),
                _ => None,
            };
        }
        if known.is_some() {
            return known;
        }
        if !self.is_open() {
            return None;
        }
        // Every value a casing of what was said: a new one is too.
        let casings: Option<Vec<Casing>> =
            self.values.iter().map(|(s, v, _)| v.as_str().and_then(|v| casing(s, v))).collect();
        let casing = casings?.last().copied().unwrap_or(Casing::Same);
        // Shaped like the values taken: no grammar they never had, not
        // longer by more than a word.
        let words: Vec<&str> = said.split(' ').collect();
        let longest = self.values.iter().map(|(s, _, _)| s.split(' ').count()).max().unwrap_or(1);
        if words.len() > longest + 1 {
            return None;
        }
        let had = |w: &str| self.values.iter().any(|(s, _, _)| s.split(' ').any(|x| same_word(x, w)));
        let free = self.is_free_text();
        let odd = words.iter().any(|w| {
            let grammar = is_negation(w) || super::gate::is_pole(w) || super::gate::is_action(w) || is_conjunction(w);
            // A word's value holds no grammar its values never had, and no
            // word the phrasings say around values.
            let inside = !free && (is_stop_word(w, Negations::Keep) || command(w));
            (grammar || inside) && !had(w)
        });
        if odd {
            return None;
        }
        let value = match casing {
            Casing::Same => said.to_owned(),
            Casing::Title => title(said),
            Casing::Upper => said.to_uppercase(),
        };
        Some(Value::String(value))
    }
}

/// Two runs of words the same word by word ([`same_word`]).
fn same_word_run(a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| same_word(x, y))
}

/// Words that join two values ("the kitchen and the office"): a fill
/// holding one names two values where the slot takes one.
fn is_conjunction(w: &str) -> bool {
    matches!(w, "and" | "or" | "e" | "ed" | "o" | "oppure" | "plus" | "nor" | "sia" | "both")
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
        let s = slot_values("accendi la luce in cucina", &args(json!({"room": "kitchen"})));
        assert_eq!(s.canonical, "accendi la luce in cucina");
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
