//! The extractive summariser (fallback of seed 002 #9 when no LLM is
//! configured): a session's summary is the user's own words, chosen, not
//! generated.
//!
//! * The user's first-person sentences ("my name is…", "I live in…",
//!   "mi piace…") and standing directives ("always answer in Italian") are
//!   kept verbatim and first, because they are what the graph extractor
//!   ([`super::facts`]) turns into memory; a paraphrase would lose them.
//! * The other requests follow, most informative first (most distinct
//!   content words), near-duplicates (equal after normalisation) once,
//!   while the summary stays within [`MAX_SUMMARY_WORDS`]; what is kept is
//!   printed in conversation order.
//! * Topics are the most frequent content words of requests and replies
//!   (EN + IT stop words dropped): those seen at least twice, at most
//!   [`MAX_TOPICS`], topped up to [`MIN_TOPICS`] by first appearance.

use std::collections::HashMap;

use super::facts::states_fact;
use super::sentences;
use crate::text::{normalize, words};

/// The summary's word budget (seed 002 #9: ≤ 200 words).
pub const MAX_SUMMARY_WORDS: usize = 200;
/// At most this many topics.
pub const MAX_TOPICS: usize = 5;
/// At least this many topics, when the session has that many content words.
pub const MIN_TOPICS: usize = 3;

/// Words that mark a sentence as the user speaking about themselves.
const FIRST_PERSON: &[&str] =
    &["i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "myself", "io", "mi", "mio", "mia", "miei", "mie"];

/// One turn as the summariser sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TurnText {
    /// What the user asked.
    pub request: String,
    /// What the assistant replied (may be empty: imported turns carry none).
    pub reply: String,
    /// The tools the turn ran, in order.
    pub tools: Vec<String>,
}

/// A candidate line of the summary.
struct Candidate {
    /// (turn, sentence) of its first sentence: conversation order.
    pos: (usize, usize),
    text: String,
    /// A first-person statement or directive: kept first, verbatim.
    personal: bool,
    /// Distinct content words: how informative a request is.
    weight: usize,
}

/// The summary of `turns` and its topics; empty when there is nothing to
/// summarise.
pub fn summarise(turns: &[TurnText]) -> (String, Vec<String>) {
    let mut candidates: Vec<Candidate> = Vec::new();
    for (i, turn) in turns.iter().enumerate() {
        let mut rest: Vec<&str> = Vec::new();
        let mut rest_pos = None;
        for (j, s) in sentences(&turn.request).into_iter().enumerate() {
            if is_personal(s) {
                candidates.push(candidate((i, j), s, true));
            } else {
                rest_pos.get_or_insert(j);
                rest.push(s);
            }
        }
        if let Some(j) = rest_pos {
            candidates.push(candidate((i, j), &rest.join(" "), false));
        }
    }
    // Near-duplicates once: the first occurrence stands for them all.
    let mut seen = std::collections::HashSet::new();
    candidates.retain(|c| seen.insert(normalize(&c.text)));

    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&k| {
        let c = &candidates[k];
        (!c.personal, if c.personal { 0 } else { usize::MAX - c.weight }, c.pos)
    });
    let mut budget = MAX_SUMMARY_WORDS;
    let mut chosen: Vec<(usize, String)> = Vec::new();
    for k in order {
        let c = &candidates[k];
        let n = c.text.split_whitespace().count();
        if n <= budget {
            budget -= n;
            chosen.push((k, c.text.clone()));
        } else if chosen.is_empty() {
            // One request longer than the whole budget: its beginning.
            let head: Vec<&str> = c.text.split_whitespace().take(budget).collect();
            chosen.push((k, format!("{}…", head.join(" "))));
            budget = 0;
        }
    }
    chosen.sort_by_key(|(k, _)| candidates[*k].pos);
    let mut summary: Vec<String> = chosen.into_iter().map(|(_, t)| t).collect();
    let mut tools: Vec<&str> = Vec::new();
    for t in turns.iter().flat_map(|t| &t.tools) {
        if !tools.contains(&t.as_str()) {
            tools.push(t);
        }
    }
    if !summary.is_empty() && !tools.is_empty() {
        let line = format!("Tools used: {}.", tools.join(", "));
        if line.split_whitespace().count() <= budget {
            summary.push(line);
        }
    }
    (summary.join(" "), topics(turns))
}

fn candidate(pos: (usize, usize), text: &str, personal: bool) -> Candidate {
    let mut text = text.trim().to_owned();
    if !text.ends_with(['.', '!', '?', '…']) {
        text.push('.');
    }
    let mut content: Vec<String> = topic_words(&text).collect();
    content.sort();
    content.dedup();
    Candidate { pos, text, personal, weight: content.len() }
}

/// A sentence the user said about themselves, or a directive.
fn is_personal(sentence: &str) -> bool {
    states_fact(sentence) || words(&normalize(sentence)).any(|w| FIRST_PERSON.contains(&w))
}

/// The content words of `text` that can be topics (numbers are not), in
/// order.
fn topic_words(text: &str) -> impl Iterator<Item = String> {
    super::content_words(text).into_iter().filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
}

/// The session's topics (see the module docs).
fn topics(turns: &[TurnText]) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    let texts = turns.iter().flat_map(|t| [t.request.as_str(), t.reply.as_str()]);
    for (i, w) in texts.flat_map(topic_words).enumerate() {
        counts.entry(w).or_insert((0, i)).0 += 1;
    }
    let mut ranked: Vec<(String, usize, usize)> = counts.into_iter().map(|(w, (n, first))| (w, n, first)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    let frequent = ranked.iter().filter(|r| r.1 >= 2).count().clamp(MIN_TOPICS, MAX_TOPICS);
    ranked.into_iter().take(frequent).map(|r| r.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(request: &str, reply: &str, tools: &[&str]) -> TurnText {
        TurnText { request: request.into(), reply: reply.into(), tools: tools.iter().map(|t| t.to_string()).collect() }
    }

    #[test]
    fn nothing_to_summarise() {
        assert_eq!(summarise(&[]), (String::new(), Vec::new()));
        assert_eq!(summarise(&[turn("  ", "", &[])]), (String::new(), Vec::new()));
    }

    #[test]
    fn first_person_statements_are_kept_verbatim_and_duplicates_once() {
        let turns = [
            turn("download the weather report for Milan", "done", &["get_urls"]),
            turn("Download the weather report for Milan!", "done again", &["get_urls"]),
            turn("By the way, my name is Marco. Summarise the weather report", "ok", &["describe_entries"]),
            turn("Mi piace la pizza. Che tempo fa a Milano domani?", "sole", &[]),
        ];
        let (summary, topics) = summarise(&turns);
        assert!(summary.contains("By the way, my name is Marco."), "{summary}");
        assert!(summary.contains("Mi piace la pizza."), "{summary}");
        assert_eq!(summary.matches("weather report for Milan").count(), 1, "{summary}");
        // Conversation order, tools at the end.
        let a = summary.find("download the weather").unwrap();
        let b = summary.find("my name is Marco").unwrap();
        assert!(a < b, "{summary}");
        assert!(summary.ends_with("Tools used: get_urls, describe_entries."), "{summary}");
        assert_eq!(
            topics[..4],
            ["weather".to_owned(), "report".to_owned(), "download".to_owned(), "milan".to_owned()],
            "{topics:?}"
        );
        assert!((MIN_TOPICS..=MAX_TOPICS).contains(&topics.len()));
    }

    #[test]
    fn the_budget_keeps_personal_sentences_first() {
        let filler: Vec<TurnText> =
            (0..60).map(|i| turn(&format!("request number {i} about unrelated things"), "", &[])).collect();
        let mut turns = filler;
        turns.push(turn("I live in Rome.", "", &[]));
        let (summary, _) = summarise(&turns);
        assert!(summary.split_whitespace().count() <= MAX_SUMMARY_WORDS, "{summary}");
        assert!(summary.contains("I live in Rome."), "{summary}");
        assert!(summary.contains("request number 0 about"), "{summary}");
        assert!(!summary.contains("request number 59 about"), "{summary}");
    }

    #[test]
    fn an_overlong_request_is_cut_to_the_budget() {
        let long = vec!["word"; 500].join(" ");
        let (summary, topics) = summarise(&[turn(&long, "", &[])]);
        assert_eq!(summary.split_whitespace().count(), MAX_SUMMARY_WORDS);
        assert_eq!(topics, vec!["word".to_owned()]);
    }
}
