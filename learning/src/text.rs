//! Text normalisation for the fast path (seed 000): lowercase, straight
//! apostrophes, punctuation off, whitespace collapsed.
//!
//! One function, used for the L0 table, for canonical texts and for the
//! replay gate, so the three always agree on what a word is.

/// Normalises `text`: lowercase; typographic apostrophes straightened and
/// kept inside words (`what's`, `l'ora`); every other punctuation mark
/// becomes a space; whitespace runs collapse to one space, trimmed.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let c = match c {
            '\u{2019}' | '\u{2018}' | '\u{02bc}' | '`' | '\u{00b4}' => '\'',
            c => c,
        };
        let keep = if c == '\'' {
            // An apostrophe joins two letters (what's, l'ora); elsewhere it
            // is a quote mark.
            let prev = i.checked_sub(1).and_then(|j| chars.get(j)).is_some_and(|p| p.is_alphanumeric());
            let next = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
            prev && next
        } else {
            c.is_alphanumeric()
        };
        if keep {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase());
        } else {
            pending_space = true;
        }
    }
    out
}

/// The words of a normalised text.
pub fn words(normalized: &str) -> impl Iterator<Item = &str> {
    normalized.split(' ').filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(normalize("  What’s the TIME?!  "), "what's the time");
        assert_eq!(normalize("Che ore sono?"), "che ore sono");
        assert_eq!(normalize("Dimmi l’ora, per favore."), "dimmi l'ora per favore");
        assert_eq!(normalize("'quoted' words"), "quoted words");
        assert_eq!(normalize("che ora è"), "che ora è");
        assert_eq!(normalize("a\t\nb"), "a b");
        assert_eq!(normalize("...!!!"), "");
    }
}
