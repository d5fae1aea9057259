//! What a request does as a sentence — asks, or tells about the user — by
//! grammar, no model.
//!
//! A sentence model puts "my name is Ada" right next to "what is my name":
//! the two share every content word, and only the grammar tells the
//! statement from the question. Without a model, engram must not answer a
//! statement with the `recall` tool ("I don't remember anything about
//! you"), nor quote a question the user asked as if it were a fact they
//! stated. Both rules read closed classes of grammar, EN + IT, as the
//! replay gate's mood rule does:
//!
//! 1. **A sentence asks** when it ends with `?` or opens with an
//!    interrogative word or an auxiliary that opens a question
//!    ([`QUESTION_OPENERS`]: what, where, do, can, …; cosa, dove, ti
//!    ricordi, …). "Tell me my name" does not ask, it commands.
//! 2. **A request tells about the user** when no sentence or clause of it
//!    asks and it opens with the user as subject or owner
//!    ([`SELF_OPENERS`]: my, I, I'm, mi chiamo, il mio, abito, …), unless
//!    one of its clauses (split at punctuation and "and"/"e") asks for
//!    something after all: a wish, a need or a search among its first words
//!    ([`WISHES`]: "I want", "I'd like", "I'm looking for", "vorrei", "ho
//!    bisogno" — a request in the first person, "I'm visiting Martinez
//!    soon and would like the weather there"), or an action verb opening
//!    it ("I'm planning a trip to Austin. Search for houses there").
//! 3. **A sentence asks memory** when it asks whether the assistant
//!    remembers (do you remember, ti ricordi, …: [`asks_memory`]) — the
//!    verb says which tool it is for, whatever the rest names.

use crate::text::{normalize, words};

/// Words that open a question (rule 1): English interrogatives and the
/// auxiliaries that open a yes/no question; Italian interrogatives and the
/// verbs that open a question about memory or knowledge.
pub const QUESTION_OPENERS: &[&str] = &[
    "what", "what's", "whats", "where", "where's", "who", "who's", "whom", "whose", "when", "why", "how", "how's",
    "which", "do", "does", "did", "is", "are", "am", "was", "were", "can", "could", "would", "will", "shall", "should",
    "have", "has", "isn't", "aren't", "don't", "doesn't", "didn't", "cosa", "che", "chi", "dove", "quando", "come",
    "com'è", "quale", "quali", "quanto", "quanti", "quanta", "quante", "perché", "perche", "ricordi", "sai",
];

/// Italian openers of a question that take two words ("ti ricordi", "mi
/// sai dire").
const QUESTION_OPENER_PAIRS: &[(&str, &str)] = &[("ti", "ricordi"), ("mi", "sai"), ("sai", "dirmi")];

/// Words that open a statement about the user on their own (rule 2);
/// [`tells_about_self`] also reads "I", "mi chiamo" and "il / la / le
/// mio …", which open one only with what follows them.
pub const SELF_OPENERS: &[&str] = &[
    "my", "i'm", "im", "i've", "ive", "mine", "mio", "mia", "miei", "mie", "io", "abito", "vivo", "lavoro", "sono",
    "ho", "faccio", "studio",
];

/// What follows a first-person opener when the sentence is a request
/// after all ("I want the files", "vorrei sapere l'ora").
pub const WISHES: &[&str] = &[
    "want",
    "wanna",
    "need",
    "would",
    "i'd",
    "id",
    "like",
    "wonder",
    "must",
    "have",
    "vorrei",
    "voglio",
    "devo",
    "posso",
    "potresti",
    "serve",
    "piacerebbe",
    // A search or an interest is a wish too ("I'm looking for a
    // psychologist in San Jose", "I'm interested in a music event").
    "looking",
    "searching",
    "interested",
    "wish",
    "fancy",
    "hoping",
    "bisogno",
    "voglia",
    "interessato",
    "interessata",
];

/// Whether `sentence` asks (rule 1).
pub fn asks(sentence: &str) -> bool {
    if sentence.trim_end().ends_with('?') {
        return true;
    }
    let n = normalize(sentence);
    let mut w = words(&n);
    let (first, second) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
    QUESTION_OPENERS.contains(&first) || QUESTION_OPENER_PAIRS.contains(&(first, second))
}

/// The openers of a question about what the assistant remembers (rule 3).
const MEMORY_OPENERS: &[&[&str]] = &[
    &["do", "you", "remember"],
    &["can", "you", "remember"],
    &["do", "you", "recall"],
    &["you", "remember"],
    &["ti", "ricordi"],
    &["ricordi"],
    &["te", "lo", "ricordi"],
];

/// Whether `sentence` asks what the assistant remembers (rule 3): "do you
/// remember what city I live in", "ti ricordi come si chiama mio
/// fratello?" — a question for memory, whatever else it names (a city is
/// no request for the current location). "Remember to buy milk" commands.
pub fn asks_memory(sentence: &str) -> bool {
    let n = normalize(sentence);
    let w: Vec<&str> = words(&n).collect();
    MEMORY_OPENERS.iter().any(|o| w.starts_with(o)) && asks(sentence)
}

/// Whether `request` tells something about the user rather than asks for
/// something (rule 2): "my sister is called Marta", "abito a Torino", "I'm
/// allergic to nuts" — not "what's my name", "I want to hear some jazz".
pub fn tells_about_self(request: &str) -> bool {
    let clauses = request.split([',', ';', '.', '!', '?', ':']).filter(|c| !c.trim().is_empty());
    if request.contains('?') || clauses.clone().any(asks) {
        return false;
    }
    let n = normalize(request);
    let w: Vec<&str> = words(&n).collect();
    let Some(first) = w.first() else { return false };
    // "il", "la", "le", "i" open a statement only as "il mio …", "la mia …".
    let owner = |i: usize| w.get(i).is_some_and(|x| ["mio", "mia", "miei", "mie"].contains(x));
    let opens = match *first {
        "il" | "la" | "le" => owner(1),
        "i" => true, // English "I" (normalised lower case), or Italian "i miei"
        "mi" => w.get(1) == Some(&"chiamo"),
        f => SELF_OPENERS.contains(&f),
    };
    opens && !clauses.map(normalize).any(|c| requests(&c))
}

/// Whether a clause (normalised) of a first-person statement asks for
/// something after all (rule 2): a part of it, split at "and"/"e", with a
/// wish among its first four words or opening with an action verb.
fn requests(clause: &str) -> bool {
    let w: Vec<&str> = words(clause).collect();
    w.split(|x| matches!(*x, "and" | "e")).any(|part| {
        part.first().is_some_and(|f| crate::fast_path::gate::is_action(f))
            || part.iter().take(4).any(|x| WISHES.contains(x))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_ask_in_either_language_with_or_without_a_mark() {
        for q in [
            "where do I live",
            "do you remember what city I live in",
            "what's my name?",
            "my name?",
            "ti ricordi dove abito",
            "come si chiama mio fratello",
            "is the door open",
        ] {
            assert!(asks(q), "{q}");
        }
        for s in ["my name is Ada", "tell me my name", "abito a Torino", "turn on the lights"] {
            assert!(!asks(s), "{s}");
        }
    }

    #[test]
    fn a_question_about_what_is_remembered_asks_memory() {
        for q in [
            "do you remember what city I live in",
            "ti ricordi come si chiama mio fratello?",
            "you remember my cat's name?",
        ] {
            assert!(asks_memory(q), "{q}");
        }
        for r in ["remember to buy milk", "remind me to call Paolo", "what time is it", "you remember nothing"] {
            assert!(!asks_memory(r), "{r}");
        }
    }

    #[test]
    fn statements_about_the_user_tell_and_requests_in_the_first_person_do_not() {
        for s in [
            "my name is Ada and I live in Turin",
            "abito a Torino",
            "I'm allergic to nuts",
            "mi chiamo Ada",
            "la mia gatta si chiama Neve",
            "il mio compleanno è il 3 marzo",
            "I'm visiting Martinez soon, my sister lives there",
            "my sister is called Marta and she lives in Genoa",
        ] {
            assert!(tells_about_self(s), "{s}");
        }
        for r in [
            "what is my name",
            "I want to hear some jazz",
            "I'd like to know the time",
            "vorrei sapere che ore sono",
            "my files, where are they?",
            "list the files in ~/docs",
            "la luce della cucina",
            "tell me what you know about me",
            "I'm looking for a psychologist in San Jose.",
            "I'm visiting Martinez soon and would like to check the weather there",
            "My friend and I want to go see a movie",
            "I'm planning a trip to Austin. search for house accommodations there",
            "ho bisogno di un idraulico a Torino",
        ] {
            assert!(!tells_about_self(r), "{r}");
        }
    }
}
