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

use crate::fast_path::gate;

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
///    "luci" read as light) — is said by the request too.
pub(super) fn fits(name: &[String], example: &str, asked: &Asked) -> bool {
    if gate::clashing_axis(&gate::poles_of_text(example), &asked.poles).is_some() {
        return false;
    }
    read(example).into_iter().filter(|w| names_thing(name, w)).all(|w| asked.said.contains(&w))
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
        let fits = |name: &[String], example: &str, request: &str| fits(name, example, &Asked::of(request));
        let tool = crate::tool_words::split_name("light-on");
        assert!(fits(&tool, "hey can you put the lights on in the zoneslot", "put the lights on in the den"));
        assert!(fits(&tool, "accendi le luci in zoneslot", "turn the lights on in the den"), "luci is light");
        assert!(!fits(&tool, "hey can you put the lights on in the zoneslot", "switch the kettle on"), "no light");
        let covers = crate::tool_words::split_name("cover-close");
        assert!(!fits(&covers, "abbassa le tapparelle in zoneslot", "alzami le tapparelle della sala"), "up");
        assert!(fits(&covers, "abbassa le tapparelle in zoneslot", "abbassami le tapparelle della sala"));
    }
}
