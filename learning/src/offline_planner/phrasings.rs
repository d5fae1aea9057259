//! The fixed phrasings the planner compares a request with besides the
//! tools' own texts: the built-in tools' examples, and the small talk and
//! questions of general knowledge that ask for no tool (rule 1). Separate:
//! data, not the rules that weigh it.

use super::RECALL;

/// Example phrasings of the built-in tools, compared with requests besides
/// the tools' one-line descriptions.
pub fn builtin_examples(tool: &str) -> &'static [&'static str] {
    match tool {
        "get_now" => &["what time is it", "tell me the time", "current time", "che ore sono"],
        "get_date" => &["what is the date today", "what day is it", "today's date", "che giorno è oggi"],
        "get_location" => &["where am I", "what is my location", "which city am I in", "dove mi trovo"],
        "list_dir" => &["list the files in the folder", "show the directory contents", "what files are in the folder"],
        "read_file" => &["read the file", "show me the contents of the file", "open the file and print it"],
        "undo" => &["undo that", "undo the last action", "revert what you just did"],
        RECALL => &[
            "what is my name",
            "where do I live",
            "what do you know about me",
            "what did we talk about",
            "do you remember what I told you",
            "come mi chiamo",
            "ti ricordi cosa ti ho detto",
            "dove abito",
            "di cosa abbiamo parlato",
        ],
        _ => &[],
    }
}

/// Requests that ask for no tool at all (rule 1), EN + IT.
pub const SMALL_TALK: &[&str] = &[
    "how are you",
    "how are you doing today",
    "tell me a joke",
    "thank you",
    "thanks a lot",
    "hello there",
    "good morning",
    "who are you",
    "come stai",
    "come va oggi",
    "raccontami una barzelletta",
    "grazie",
    "ciao",
    "buongiorno",
    "chi sei",
];

/// Questions of general knowledge, which no tool answers (rule 1, beside
/// [`SMALL_TALK`]), EN + IT: "what's the capital of France" is compared
/// with them as well as with the tools, and is no request for
/// `get_location` however near "which city am I in" it is.
pub const GENERAL_KNOWLEDGE: &[&str] = &[
    "what is the capital of a country",
    "who wrote this book",
    "how many people live in the city",
    "qual è la capitale di questo paese",
    "chi ha scritto questo libro",
    "quanti abitanti ha la città",
];
