//! The rule-based knowledge-graph fact extractor (fallback of seed 002 #10):
//! first-person statements in a summary, classified into branch and node.
//!
//! | statement (EN / IT) | branch | node |
//! |---|---|---|
//! | "my name is X" / "mi chiamo X", "il mio nome è X" | USER | `identity` |
//! | "I live in X" / "abito a X", "vivo a X" | USER | `location` |
//! | "I like / love / prefer / enjoy X" / "mi piace X", "preferisco X", "adoro X" | USER | `preferences` |
//! | a sentence opening with "always", "never", "from now on" (optionally after "please") / "da ora in poi", "rispondi sempre …", "non usare mai …" | DIRECTIVES | `behaviour` |
//! | "call me X" / "chiamami X" | DIRECTIVES | `behaviour` |
//!
//! Two deliberate limits:
//!
//! * Declarative sentences about the world ("Rome is the capital") are
//!   **not** extracted: without a model, rules cannot tell a fact from a
//!   quote, a hypothesis or the assistant's own suggestion, and a wrong
//!   WORLD fact is served back as truth. The WORLD branch is the LLM
//!   extractor's.
//! * "please `<verb>` …" alone is a polite request ("please download the
//!   report"), not a standing directive; only "please always / never …"
//!   is one.
//!
//! Questions are skipped: "do you know where I live in?" states nothing.

use std::sync::LazyLock;

use engram_events::payloads::GraphBranch;
use regex::Regex;

use super::sentences;

/// One extracted fact: branch, node path under the branch, fact text.
pub type Fact = (GraphBranch, String, String);

/// The node of the user's name.
pub const IDENTITY: &str = "identity";
/// The node of where the user lives.
pub const LOCATION: &str = "location";
/// The node of the user's likes and preferences.
pub const PREFERENCES: &str = "preferences";
/// The node of how the assistant should behave.
pub const BEHAVIOUR: &str = "behaviour";

/// Nodes that hold one value: a new fact there replaces the old one.
pub const SINGLE_VALUED: &[(GraphBranch, &str)] = &[(GraphBranch::User, IDENTITY), (GraphBranch::User, LOCATION)];

/// Longest name or place a rule accepts, in words: a longer capture is a
/// clause the rule misread, not a value.
const MAX_VALUE_WORDS: usize = 6;

/// A statement rule: its pattern (group 1 the phrase, group 2 the rest of
/// the sentence), where the fact goes, and whether the value is a short name.
struct Rule {
    re: Regex,
    branch: GraphBranch,
    node: &'static str,
    short: bool,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |re: &str, branch, node, short| Rule { re: Regex::new(re).expect("valid rule"), branch, node, short };
    vec![
        rule(r"(?i)\b(my name is|mi chiamo|il mio nome è)\s+(.+)", GraphBranch::User, IDENTITY, true),
        rule(
            r"(?i)\b(i live in|i'm living in|i am living in|abito a|abito in|vivo a|vivo in)\s+(.+)",
            GraphBranch::User,
            LOCATION,
            true,
        ),
        rule(
            r"(?i)\b(i (?:really )?(?:like|love|prefer|enjoy)|mi piace|mi piacciono|preferisco|adoro)\s+(.+)",
            GraphBranch::User,
            PREFERENCES,
            false,
        ),
        rule(r"(?i)\b(call me|chiamami)\s+(.+)", GraphBranch::Directives, BEHAVIOUR, true),
    ]
});

/// Directives: the whole sentence is the fact.
static DIRECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:please,?\s+|per favore,?\s+)?(?:always|never|from now on|don't ever|do not ever|da ora in poi|d'ora in poi|da adesso in poi|\w+\s+sempre|non\s+\w+\s+mai)\b",
    )
    .expect("valid rule")
});

/// Where a value ends: at a clause that starts another statement.
static NEXT_CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s+(?:and|but|because|e|ma|perché)\s+(?:i|i'm|my|mi|io|vivo|abito)\b|[,;:()]").expect("valid rule")
});

/// The facts stated in `text`, in order of appearance, each once.
pub fn extract_facts(text: &str) -> Vec<Fact> {
    let mut out: Vec<Fact> = Vec::new();
    for sentence in sentences(text) {
        for fact in sentence_facts(sentence) {
            if !out.contains(&fact) {
                out.push(fact);
            }
        }
    }
    out
}

/// Does `sentence` state something the extractor would keep?
pub fn states_fact(sentence: &str) -> bool {
    !sentence_facts(sentence).is_empty()
}

fn sentence_facts(sentence: &str) -> Vec<Fact> {
    let s = sentence.trim().trim_end_matches(['.', '!', ';']).trim();
    if s.is_empty() || s.ends_with('?') {
        return Vec::new();
    }
    let mut found: Vec<(usize, Fact)> = Vec::new();
    let directive = DIRECTIVE.is_match(s);
    if directive {
        found.push((0, (GraphBranch::Directives, BEHAVIOUR.to_owned(), s.to_owned())));
    }
    // A directive sentence is kept whole; its "call me" is not a second fact.
    for rule in RULES.iter().filter(|r| !(directive && r.branch == GraphBranch::Directives)) {
        for caps in rule.re.captures_iter(s) {
            let (Some(phrase), Some(rest)) = (caps.get(1), caps.get(2)) else { continue };
            let value = match NEXT_CLAUSE.find(rest.as_str()) {
                Some(m) => &rest.as_str()[..m.start()],
                None => rest.as_str(),
            }
            .trim();
            let words = value.split_whitespace().count();
            if words == 0 || (rule.short && words > MAX_VALUE_WORDS) {
                continue;
            }
            let fact = format!("{} {}", phrase.as_str(), value);
            found.push((phrase.start(), (rule.branch, rule.node.to_owned(), fact)));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, f)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(text: &str) -> Vec<(GraphBranch, &'static str, String)> {
        extract_facts(text)
            .into_iter()
            .map(|(b, n, f)| {
                let node = [IDENTITY, LOCATION, PREFERENCES, BEHAVIOUR].into_iter().find(|x| *x == n).unwrap();
                (b, node, f)
            })
            .collect()
    }

    #[test]
    fn identity_and_location_in_one_sentence() {
        assert_eq!(
            facts("My name is Marco and I live in Milan."),
            vec![
                (GraphBranch::User, IDENTITY, "My name is Marco".to_owned()),
                (GraphBranch::User, LOCATION, "I live in Milan".to_owned()),
            ]
        );
        assert_eq!(
            facts("Ciao, mi chiamo Giulia. Abito a Torino, vicino al fiume."),
            vec![
                (GraphBranch::User, IDENTITY, "mi chiamo Giulia".to_owned()),
                (GraphBranch::User, LOCATION, "Abito a Torino".to_owned()),
            ]
        );
        assert_eq!(facts("vivo a Roma"), vec![(GraphBranch::User, LOCATION, "vivo a Roma".to_owned())]);
    }

    #[test]
    fn preferences_en_it() {
        assert_eq!(
            facts("I love jazz and blues. Mi piace la pizza napoletana! Preferisco il tè."),
            vec![
                (GraphBranch::User, PREFERENCES, "I love jazz and blues".to_owned()),
                (GraphBranch::User, PREFERENCES, "Mi piace la pizza napoletana".to_owned()),
                (GraphBranch::User, PREFERENCES, "Preferisco il tè".to_owned()),
            ]
        );
    }

    #[test]
    fn directives_en_it() {
        assert_eq!(
            facts("Always answer in Italian. Please never use emojis. Rispondi sempre in breve. Da ora in poi dammi del tu. Call me Ada."),
            vec![
                (GraphBranch::Directives, BEHAVIOUR, "Always answer in Italian".to_owned()),
                (GraphBranch::Directives, BEHAVIOUR, "Please never use emojis".to_owned()),
                (GraphBranch::Directives, BEHAVIOUR, "Rispondi sempre in breve".to_owned()),
                (GraphBranch::Directives, BEHAVIOUR, "Da ora in poi dammi del tu".to_owned()),
                (GraphBranch::Directives, BEHAVIOUR, "Call me Ada".to_owned()),
            ]
        );
        assert_eq!(facts("chiamami Gio"), vec![(GraphBranch::Directives, BEHAVIOUR, "chiamami Gio".to_owned())]);
    }

    #[test]
    fn requests_questions_and_world_facts_are_not_extracted() {
        for text in [
            "Please download the report.",
            "Do you know where I live in?",
            "Rome is the capital of Italy.",
            "I always forget my keys",
            "download https://example.org/a and describe it",
            "My name is a very long clause that cannot possibly be a name at all",
        ] {
            assert!(facts(text).is_empty(), "{text}: {:?}", facts(text));
        }
    }

    #[test]
    fn each_fact_once() {
        assert_eq!(facts("I live in Milan. I live in Milan.").len(), 1);
        assert!(states_fact("I like tea") && !states_fact("what time is it"));
    }
}
