//! Rule 11's filter: which of the phrasings the model taught for a tool
//! may stand for a request. An example is compared by meaning, and a
//! sentence model puts opposites and neighbours side by side: "alzami le
//! tapparelle" sits near a taught "abbassa le tapparelle" (`cover-close`),
//! "switch the kettle on" near a taught "put the lights on in the X"
//! (`light-on`). The model taught what *those* words ask; a request that
//! says the other pole, or another thing than the one the tool's name
//! names, is not one of them. Separate from the rules that weigh the
//! examples: a filter read from the words, not the embedding.

use std::collections::HashSet;

use crate::fast_path::{gate, slots};

/// A request as [`fits`] compares it with examples: read once per part of
/// a request, not once per example and tool.
pub(super) struct Asked {
    /// The poles it names.
    poles: gate::Poles,
    /// Its words, read as [`read`] reads them.
    said: HashSet<String>,
}

impl Asked {
    /// `request` read for the comparison.
    pub(super) fn of(request: &str) -> Asked {
        Asked { poles: gate::poles_of_text(request), said: read(request).into_iter().collect() }
    }
}

/// Whether `example` (a taught phrasing's canonical text) may stand for
/// the request `asked` as a phrasing of the tool whose name's words are
/// `name`:
///
/// 1. no axis the two name with other poles ([`gate::clashing_axis`]);
/// 2. every word of the example that names the tool's thing — a word of
///    the tool's name, not an action or a pole ("light" of `light-on`,
///    "luci" read as light) — is said by the request too;
/// 3. every slot of the example for a kind of thing ("covertypeslot" of
///    `cover-open`, "domain0slot" of a turn-on: its values an enum) is
///    filled by the request: `values(mask)` gives the values it took (as
///    said, as the model passed them) and its enum's (`None` for a slot
///    of no kind: an item, a name), and the request says one of them, or
///    the thing's own word. "Tira su le tapparelle in soggiorno", masked,
///    says no more than "alza il X in Y": "alza il volume in soggiorno"
///    names no cover; "cut on the lights in the X", masked, stood for
///    "open up the blinds in the sunroom", which names no kind it takes.
pub(super) fn fits(
    name: &[String],
    example: &str,
    asked: &Asked,
    values: &dyn Fn(&str) -> Option<Vec<String>>,
) -> bool {
    if gate::clashing_axis(&gate::poles_of_text(example), &asked.poles).is_some() {
        return false;
    }
    let words = read(example);
    if !words.iter().filter(|w| names_thing(name, w)).all(|w| asked.said.contains(w)) {
        return false;
    }
    let normalized = crate::text::normalize(example);
    let filled = |m: &str| {
        let Some(values) = values(m) else { return true };
        let thing = name.iter().map(|n| crate::tool_words::stem(n)).any(|n| m.contains(&n) && asked.said.contains(&n));
        thing || values.iter().any(|v| asked.says(v))
    };
    let masks: Vec<&str> = crate::text::words(&normalized).filter(|w| slots::is_mask(w)).collect();
    masks.into_iter().all(filled)
}

impl Asked {
    /// Whether the request says `value` (a value a slot took): each of its
    /// words, read as the request's are.
    fn says(&self, value: &str) -> bool {
        let ws = read(value);
        !ws.is_empty() && ws.iter().all(|w| self.said.contains(w))
    }
}

/// The words of `text` as compared: normalised, read as their concept
/// ([`gate::fold`]), stemmed as the tools' names are.
fn read(text: &str) -> Vec<String> {
    let normalized = crate::text::normalize(text);
    crate::text::words(&normalized).map(|w| crate::tool_words::stem(&gate::fold(w))).collect()
}

/// Whether `word` (read) is a word of the tool's name that names its
/// thing: not an action, a pole or a word of grammar.
fn names_thing(name: &[String], word: &str) -> bool {
    word.len() > 2
        && !gate::is_action(word)
        && !gate::is_pole(word)
        && name.iter().any(|n| crate::tool_words::stem(n) == word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_example_of_the_other_pole_or_another_thing_stands_for_nothing() {
        let none = |_: &str| None;
        let fits = |name: &[String], example: &str, request: &str| fits(name, example, &Asked::of(request), &none);
        let tool = crate::tool_words::split_name("light-on");
        assert!(fits(&tool, "hey can you put the lights on in the zoneslot", "put the lights on in the den"));
        assert!(fits(&tool, "accendi le luci in zoneslot", "turn the lights on in the den"), "luci is light");
        assert!(!fits(&tool, "hey can you put the lights on in the zoneslot", "switch the kettle on"), "no light");
        let covers = crate::tool_words::split_name("cover-close");
        assert!(!fits(&covers, "abbassa le tapparelle in zoneslot", "alzami le tapparelle della sala"), "up");
        assert!(fits(&covers, "abbassa le tapparelle in zoneslot", "abbassami le tapparelle della sala"));
    }

    /// A slot named for a kind of the tool's thing ("covertypeslot") is
    /// filled by a value it took, or the thing's word: masked, "tira su
    /// le tapparelle in soggiorno" said no more than "alza il X in Y", and
    /// stood for "alza il volume in soggiorno" (`cover-open`).
    #[test]
    fn an_example_whose_kind_the_request_does_not_fill_stands_for_nothing() {
        let tool = crate::tool_words::split_name("cover-open");
        let taught = |m: &str| (m == "covertypeslot").then(|| vec!["tapparelle".to_owned(), "shutter".to_owned()]);
        let no_kind = |_: &str| None;
        let example = "tira su le covertypeslot in zoneslot";
        assert!(!fits(&tool, example, &Asked::of("alza il volume in soggiorno"), &taught));
        assert!(fits(&tool, example, &Asked::of("alza le tapparelle in sala"), &taught));
        assert!(fits(&tool, example, &Asked::of("raise the shutters in the den"), &taught));
        assert!(fits(&tool, example, &Asked::of("open the cover in the den"), &taught), "the thing's word");
        assert!(fits(&tool, example, &Asked::of("alza il volume in soggiorno"), &no_kind), "no kind");
        // Any slot of a kind, the tool named for no thing: the lights'
        // example stands for no request that names no kind it takes.
        let on = crate::tool_words::split_name("HassTurnOn");
        let domains =
            |m: &str| (m == "domain0slot").then(|| vec!["lights".to_owned(), "light".to_owned(), "fan".to_owned()]);
        let example = "cut on the domain0slot in the areaslot";
        assert!(!fits(&on, example, &Asked::of("open up the blinds in the sunroom"), &domains));
        assert!(fits(&on, example, &Asked::of("turn on the fan in the den"), &domains));
    }
}
