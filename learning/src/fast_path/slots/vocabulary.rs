//! Rule 5: a slot's vocabulary — the values it has taken, as said and as
//! passed — and what that says about a new value ([`Vocabulary::fits`]):
//! a known one, an enum member, or for an open class a value shaped like
//! the ones it took. Apart because it is the state a slot learns across
//! turns (kept in the `canonical_queries` projection), not a request's
//! reading.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::filling::Edges;
use super::{is_determiner, is_name_joint, same_word};
use crate::fast_path::gate;
use crate::text::{is_negation, is_stop_word, normalize, Negations};

/// The values a said slot has taken, and what that says about the values
/// it may take (rule 5).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vocabulary {
    /// (as said, as passed, times), oldest first.
    pub values: Vec<(String, Value, u32)>,
    /// Times the slot was filled in all.
    pub uses: u32,
    /// Uses said right after an article or a preposition the model left
    /// out ([`Said::after_determiner`](super::Said::after_determiner)).
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
        let joints: Vec<usize> = (0..words.len()).filter(|&i| is_name_joint(&words, i)).collect();
        let longest = self.values.iter().map(|(s, _, _)| s.split(' ').count()).max().unwrap_or(1);
        if words.len() - 2 * joints.len() > longest + 1 {
            return None;
        }
        let had = |w: &str| self.values.iter().any(|(s, _, _)| s.split(' ').any(|x| same_word(x, w)));
        let free = self.is_free_text();
        let odd = words.iter().enumerate().filter(|(i, _)| !joints.contains(i)).any(|(_, w)| {
            let grammar = is_negation(w) || gate::is_pole(w) || gate::is_action(w) || is_conjunction(w);
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
pub(crate) fn same_word_run(a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| same_word(x, y))
}

/// Words that join two values ("the kitchen and the office"), EN + IT: a
/// fill holding one names two values where the slot takes one.
pub(crate) fn is_conjunction(w: &str) -> bool {
    matches!(w, "and" | "or" | "e" | "ed" | "o" | "oppure" | "plus" | "nor" | "sia" | "both")
}
