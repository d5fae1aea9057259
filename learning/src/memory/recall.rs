//! When and what to recall from past sessions, without a model (seed 002
//! #3 offline and #3b).
//!
//! * [`should_recall`] is the recall gate (#3b): a follow-up that the
//!   conversation already grounds — a fresh tool result in the hot window
//!   and at least half of the request's content words in it — needs no
//!   diary lookup ("his most famous song" right after a search for the
//!   singer). Everything else recalls.
//! * [`enrich_by_rule`] is the enrichment extractor's offline fallback
//!   (#3): the request's content words as keywords and the days it names
//!   ("yesterday", "last week", "ieri") as a date range.
//!
//! Content words are `\w{3,}` (any script) minus the stop words of
//! [`crate::text`], so the gate works beyond Latin script.

use std::collections::BTreeSet;

use chrono::{Duration, NaiveDate};

use crate::calendar::{month_of, WEEKDAYS};
use crate::text::normalize;

/// Share of the request's content words the hot window must hold for the
/// gate to skip recall.
pub const COVERAGE: f64 = 0.5;

/// What to look for in the diary (seed 002 #3's `{keywords, from?, to?}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Enrichment {
    /// Words to match, lowercase.
    pub keywords: Vec<String>,
    /// First day of the range, inclusive.
    pub from: Option<NaiveDate>,
    /// Last day of the range, inclusive.
    pub to: Option<NaiveDate>,
}

impl Enrichment {
    /// Whether `date` is inside the range (no range: every day).
    pub fn covers(&self, date: NaiveDate) -> bool {
        self.from.is_none_or(|f| date >= f) && self.to.is_none_or(|t| date <= t)
    }
}

/// The content words of `text` ([`super::content_words`]), as a set.
pub fn content_set(text: &str) -> BTreeSet<String> {
    super::content_words(text).into_iter().collect()
}

/// The recall gate (#3b): `false` — skip the diary — only when the hot
/// window holds a fresh tool result and at least [`COVERAGE`] of the
/// request's content words appear in its text. A request with no content
/// words recalls (nothing says the window grounds it).
pub fn should_recall(query: &str, hot_window: &[&str], fresh_tool_result: bool) -> bool {
    if !fresh_tool_result {
        return true;
    }
    let want = content_set(query);
    if want.is_empty() {
        return true;
    }
    let seen: BTreeSet<String> = hot_window.iter().flat_map(|t| content_set(t)).collect();
    let covered = want.iter().filter(|w| seen.contains(*w)).count();
    (covered as f64) < COVERAGE * want.len() as f64
}

/// Words that name days, with the range they mean relative to `today`
/// (offsets in days, inclusive) — EN + IT. Longer phrases first.
const DAY_PHRASES: &[(&str, i64, i64)] = &[
    ("day before yesterday", -2, -2),
    ("l'altro ieri", -2, -2),
    ("altro ieri", -2, -2),
    ("last week", -7, -1),
    ("settimana scorsa", -7, -1),
    ("scorsa settimana", -7, -1),
    ("last month", -31, -1),
    ("mese scorso", -31, -1),
    ("scorso mese", -31, -1),
    ("this week", -6, 0),
    ("questa settimana", -6, 0),
    ("yesterday", -1, -1),
    ("last night", -1, -1),
    ("ieri", -1, -1),
    ("today", 0, 0),
    ("oggi", 0, 0),
    ("this morning", 0, 0),
    ("stamattina", 0, 0),
];

/// Words a date phrase uses, kept out of the keywords.
const DATE_WORDS: &[&str] = &[
    "day",
    "before",
    "yesterday",
    "last",
    "week",
    "month",
    "this",
    "morning",
    "night",
    "today",
    "ieri",
    "altro",
    "l'altro",
    "settimana",
    "scorsa",
    "scorso",
    "mese",
    "questa",
    "oggi",
    "stamattina",
];

/// A day of the month as written: `23`, `23rd`, `1st`, `2nd`, `17th`.
fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// The day a request names by the calendar, at or before `today`: a month
/// and a day ("September 23rd", "23 settembre"), a weekday and a day ("on
/// Thursday the 17th"), or a weekday alone ("on Tuesday": the last one
/// before today). A weekday that contradicts the date leaves the date.
pub fn named_day(normalized: &str, today: NaiveDate) -> Option<NaiveDate> {
    use chrono::Datelike;
    let words: Vec<&str> = normalized.split(' ').collect();
    let month = words.iter().position(|w| month_of(w).is_some());
    let weekday = words.iter().find_map(|w| WEEKDAYS.iter().position(|d| d.names().any(|n| n == *w)));
    let day = match month {
        // A day number right before or after the month name.
        Some(i) => [i.checked_sub(1), Some(i + 1), i.checked_sub(2).filter(|&j| words.get(j + 1) == Some(&"of"))]
            .into_iter()
            .flatten()
            .find_map(|j| words.get(j).and_then(|w| day_number(w))),
        None => words
            .iter()
            .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.ends_with(['t', 'h', 'd']))
            .find_map(|w| day_number(w)),
    };
    let month = month.and_then(|i| month_of(words[i]));
    if (month, day, weekday) == (None, None, None) {
        return None;
    }
    // The latest matching day at or before today, within a year.
    (0..=366).map(|back| today - Duration::days(back)).find(|d| match (month, day, weekday) {
        (Some(m), Some(n), _) => d.month0() == m as u32 && d.day() == n,
        (None, Some(n), Some(w)) => d.day() == n && d.weekday().num_days_from_monday() == w as u32,
        (None, Some(n), None) => d.day() == n && *d < today,
        (None, None, Some(w)) => d.weekday().num_days_from_monday() == w as u32 && *d < today,
        (Some(_), None, _) | (None, None, None) => false,
    })
}

/// The days `normalized` words name relative to `today`, first and last
/// (inclusive): the first day phrase ("yesterday", "last week", "ieri"),
/// or else the day the calendar names ([`named_day`]).
pub fn named_days(normalized: &str, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let padded = format!(" {normalized} ");
    // (A phrase as whole words: between spaces, without a copy of each.)
    let said = |p: &str| {
        padded.match_indices(p).any(|(i, _)| padded[..i].ends_with(' ') && padded[i + p.len()..].starts_with(' '))
    };
    match DAY_PHRASES.iter().find(|(p, _, _)| said(p)) {
        Some((_, a, b)) => Some((today + Duration::days(*a), today + Duration::days(*b))),
        None => named_day(normalized, today).map(|d| (d, d)),
    }
}

/// The offline enrichment (#3's fallback): content words as keywords, the
/// first day phrase — or else the day the calendar names — as the range.
pub fn enrich_by_rule(query: &str, today: NaiveDate) -> Enrichment {
    let n = normalize(query);
    let (from, to) = named_days(&n, today).unzip();
    let calendar = |w: &str| month_of(w).is_some() || WEEKDAYS.iter().any(|d| d.names().any(|n| n == w));
    let keywords = content_set(query)
        .into_iter()
        .filter(|w| !DATE_WORDS.contains(&w.as_str()) && !calendar(w) && day_number(w).is_none())
        .collect();
    Enrichment { keywords, from, to }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_skips_only_a_grounded_follow_up() {
        let window = ["who sings Baby?", "Justin Bieber sings Baby. [search result: Justin Bieber, Canadian singer]"];
        // Fresh tool result, most content words in the window: skip.
        assert!(!should_recall("is Justin Bieber Canadian?", &window, true));
        // The same words without a fresh tool result: recall.
        assert!(should_recall("is Justin Bieber Canadian?", &window, false));
        // A new subject: recall.
        assert!(should_recall("where did I have dinner with Luca?", &window, true));
        // No content words: recall.
        assert!(should_recall("and?", &window, true));
        // Any script: Cyrillic words are words.
        assert!(!should_recall("Москва столица", &["Москва столица России"], true));
    }

    #[test]
    fn rule_enrichment_reads_days_and_keywords() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 24).unwrap();
        let e = enrich_by_rule("Where did I have dinner yesterday?", today);
        assert_eq!(e.keywords, ["dinner"]);
        assert_eq!((e.from, e.to), (Some(today - Duration::days(1)), Some(today - Duration::days(1))));
        assert!(e.covers(today - Duration::days(1)) && !e.covers(today));
        let e = enrich_by_rule("what did I eat last night", today);
        assert_eq!((e.from, e.to), (Some(today - Duration::days(1)), Some(today - Duration::days(1))));
        assert_eq!(e.keywords, ["eat"]);
        // Whole words only: "nightly yesterdays" names no day.
        assert_eq!(named_days("the nightly yesterdays", today), None);
        let e = enrich_by_rule("di cosa abbiamo parlato la settimana scorsa?", today);
        assert_eq!((e.from, e.to), (Some(today - Duration::days(7)), Some(today - Duration::days(1))));
        assert!(e.keywords.contains(&"parlato".to_owned()) && !e.keywords.contains(&"settimana".to_owned()));
        let e = enrich_by_rule("the restaurant Luca liked", today);
        assert_eq!((e.from, e.to), (None, None));
        assert!(e.covers(today));
        assert_eq!(e.keywords, ["liked", "luca", "restaurant"]);
    }

    #[test]
    fn the_calendar_names_a_day() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 24).unwrap(); // a Tuesday
        let day = |m, d| Some(NaiveDate::from_ymd_opt(2026, m, d).unwrap());
        let named = |q: &str| named_day(&normalize(q), today);
        assert_eq!(named("what did I say on Wednesday, September 23rd?"), day(9, 23));
        assert_eq!(named("cosa ti avevo detto domenica 11 ottobre?"), day(10, 11));
        assert_eq!(named("on the 3rd of October"), day(10, 3));
        assert_eq!(named("on Thursday the 12th"), day(11, 12));
        assert_eq!(named("what did we say on Friday"), day(11, 20));
        assert_eq!(named("what did we say on Tuesday"), day(11, 17));
        // A date later this year is last year's.
        assert_eq!(named("on December 5th"), Some(NaiveDate::from_ymd_opt(2025, 12, 5).unwrap()));
        assert_eq!(named("how many cats do I have"), None);
        assert_eq!(named("set a timer for 20 minutes"), None);
        let e = enrich_by_rule("What did the mechanic say on Thursday the 12th?", today);
        assert_eq!((e.from, e.to), (day(11, 12), day(11, 12)));
        assert_eq!(e.keywords, ["mechanic"]);
    }
}
