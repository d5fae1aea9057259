//! Rules 3, 10 and 12: what a part of a request asks done, and whether a
//! tool does it — the effectful actions it names ("make" before a definite
//! object sets), a tool that sets given nothing to set, a new one asked of
//! a tool for a running one. Separate: each is a filter on the candidates,
//! read from the request's words and the tool's profile, not from the
//! embedding.

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::ToolArgs;

use super::{args_for, ToolProfile};

/// Rule 3: the effectful actions `part` asks done — its own words', not
/// those of the names and quotes it carries ("New York", "'make it
/// new'"); the gate's reading of them (a thing that exists made something
/// else is set, not created: "make the light yellow").
pub(super) fn wanted(part: &str) -> std::collections::BTreeSet<&'static str> {
    crate::fast_path::gate::effectful_actions(&crate::arguments::without_values(part))
}

/// Rule 3: whether `tool` does every effectful action `wanted` names —
/// "set", the most general of them ("set a timer for 3 minutes"), by any
/// tool that changes something and takes a value to set (rule 10's): a
/// tool that starts a timer of a duration sets one; one that reads, or
/// one that only turns a device on, sets nothing.
pub(super) fn does(tool: &ToolProfile, wanted: &std::collections::BTreeSet<&'static str>) -> bool {
    wanted.iter().all(|a| tool.actions.contains(a) || (*a == "set" && tool.changes && settable(tool).is_some()))
}

/// A tool's properties when one of them is a value to set — not only
/// where and which ([`crate::spoken::handles`]): what rules 3 and 10 ask
/// "set" for.
fn settable(tool: &ToolProfile) -> Option<&serde_json::Map<String, serde_json::Value>> {
    let props = tool.schema.get("properties").and_then(serde_json::Value::as_object);
    props.filter(|p| p.iter().any(|(k, spec)| !crate::spoken::handles(k, spec)))
}

/// Words of a tool's description that have it act on something that
/// exists already (rule 12).
pub(super) const EXISTING: &[&str] = &["running", "paused", "existing", "active", "ongoing"];

/// Indefinite articles, EN + IT: what asks for a new one (rule 12).
const INDEFINITE: &[&str] = &["a", "an", "un", "uno", "una"];

/// Rule 12: what `part` asks a new one of — each word after an
/// indefinite article, as said and as its stem ("set a timer", "metti un
/// timer": timer), and a noun that opens the request bare, as a headline
/// names a new thing, before its measure or its purpose ("timer di 10
/// minuti per il sugo", "countdown 15 minutes for the lasagna"; not "il
/// timer delle uova", nor "unpause the music"); no tool that acts on a
/// running timer makes one.
pub(super) fn asked_new(part: &str) -> Vec<String> {
    let lower = crate::text::normalize(part).replace("un'", "un ");
    let words: Vec<&str> = lower.split_whitespace().collect();
    let after_article = words.windows(2).filter(|w| INDEFINITE.contains(&w[0])).map(|w| w[1]);
    after_article.chain(headline(&words)).flat_map(|w| [w.to_owned(), crate::tool_words::stem(w)]).collect()
}

/// Words after a headline's noun that give its measure or its purpose.
const HEADLINE_LINKS: &[&str] = &["for", "per", "di", "da"];

/// Rule 12's headline: the noun `words` open with, interjections aside,
/// when a number or a link to its measure or purpose follows it.
fn headline<'a>(words: &[&'a str]) -> Option<&'a str> {
    let at = words.iter().position(|w| !super::parts::OPENERS.contains(w))?;
    let (w, next) = (words[at], *words.get(at + 1)?);
    let verb = crate::fast_path::gate::is_action(w)
        || crate::fast_path::gate::is_pole(w)
        || crate::tool_words::RequestWords::is_synonym(w)
        || crate::text::is_stop_word(w, crate::text::Negations::Drop);
    let number = crate::fast_path::numbers::said_at(words, at + 1);
    (!verb && (number || HEADLINE_LINKS.contains(&next))).then_some(w)
}

/// Rule 10: whether `tool` sets something (its name or description names
/// the action `set`, or the request asks it to: `asked_set`) and `part` gives it no value but where and which
/// ([`crate::spoken::handles`]): "lights on in the mudroom" sets no
/// brightness or colour, so it is no `HassLightSet`; "fan on in the attic"
/// no speed.
pub(super) fn sets_nothing(tool: &ToolProfile, part: &str, asked_set: bool, now: DateTime<FixedOffset>) -> bool {
    if !tool.actions.contains("set") && !asked_set {
        return false;
    }
    settable(tool).is_some() && gives_nothing_to_set(tool, &args_for(tool, part, now))
}

/// Rule 10's test of a call: `args` hold no value of `tool`'s to set,
/// only where and which.
pub(super) fn gives_nothing_to_set(tool: &ToolProfile, args: &ToolArgs) -> bool {
    let Some(props) = settable(tool) else { return false };
    !args.0.keys().any(|k| props.get(k).is_some_and(|spec| !crate::spoken::handles(k, spec)))
}

#[cfg(test)]
mod tests {
    use super::asked_new;

    /// A noun opening a request bare before its measure or purpose asks
    /// a new one, as one after "a" does; one after "the", or a verb the
    /// lists do not know, does not.
    #[test]
    fn a_headline_asks_a_new_one() {
        let asks = |part: &str| asked_new(part).contains(&"timer".to_owned());
        assert!(asks("set a timer for 3 minutes"));
        assert!(asks("timer di 10 minuti per il sugo"));
        assert!(asks("uh timer for the eggs seven minutes"));
        assert!(asks("timer cinque minuti"));
        assert!(!asks("il timer delle uova quanto gli manca"));
        assert!(!asks("add 5 minutes to the timer"));
        assert!(asked_new("unpause the music in the office").is_empty());
    }
}
