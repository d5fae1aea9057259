//! What was said, cut into passages: whole sentences gathered up to
//! [`PASSAGE_CHARS`]. Apart from the index: the memory indexer splits a
//! turn before it embeds the passages, and the index only folds them.

/// Longest passage, in characters: a few sentences. Short enough that a
/// passage's embedding is about one thing (a detail inside a long turn is
/// not averaged away), long enough to keep a detail with its subject.
pub const PASSAGE_CHARS: usize = 240;

/// Splits what was said into passages: whole sentences
/// ([`crate::memory::sentences`]) gathered up to [`PASSAGE_CHARS`]; a
/// longer sentence is cut between words. Text without a letter or digit
/// gives nothing.
pub fn split(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for sentence in crate::memory::sentences(text) {
        for piece in cut(sentence, PASSAGE_CHARS) {
            let len = current.chars().count();
            if len > 0 && len + 1 + piece.chars().count() > PASSAGE_CHARS {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(piece);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `sentence` in pieces of at most `max` characters, cut at spaces (a
/// word longer than `max` is a piece of its own).
fn cut(sentence: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    while rest.chars().count() > max {
        let limit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        let at = rest[..limit].rfind(' ').filter(|&i| i > 0).unwrap_or(limit);
        out.push(rest[..at].trim());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_sentences_whole_and_cuts_long_ones_between_words() {
        assert_eq!(split("Hi. My cat is Pickle!"), vec!["Hi. My cat is Pickle!"]);
        let long = "word ".repeat(100);
        let parts = split(&long);
        assert!(parts.len() > 1 && parts.iter().all(|p| p.chars().count() <= PASSAGE_CHARS), "{parts:?}");
        assert_eq!(parts.join(" ").split_whitespace().count(), 100);
        let sentences = format!("{}. {}.", "a".repeat(150), "b".repeat(150));
        assert_eq!(split(&sentences).len(), 2);
        assert!(split(" ... ").is_empty());
    }
}
