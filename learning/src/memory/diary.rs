//! The diary (seed 002 #9): one entry per day, folded from
//! `summary.written`.
//!
//! The summariser writes one `summary.written` per session. An LLM summary
//! is written *from the day's entry so far* (the summariser hands the model
//! the prior entry to update, [`Diary::entry`]), so it replaces the entry;
//! an extractive summary covers its session alone and is appended. Both the
//! summariser (to know what to update) and the reply loop (to recall past
//! days) fold the same events through this one fold, so they agree on what
//! the day's entry is.
//!
//! Days are calendar days at the user's UTC offset (`[runtime]
//! utc_offset`): "yesterday" means what the user means by it.

use std::collections::BTreeMap;

use chrono::{FixedOffset, NaiveDate};
use engram_events::payloads::SummariserKind;
use engram_events::{Envelope, Event};

/// Longest entry kept (characters): appended extractive summaries of a
/// busy day keep their newest part.
pub const MAX_ENTRY_CHARS: usize = 4_000;

/// One day's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DayEntry {
    /// The day, at the user's offset.
    pub date: NaiveDate,
    /// What the day's conversations were about.
    pub text: String,
    /// Topic keywords (the latest summary's first, de-duplicated).
    pub topics: Vec<String>,
    /// Sessions summarised into it.
    pub sessions: u32,
}

/// The diary: day → entry.
#[derive(Clone, Debug)]
pub struct Diary {
    offset: FixedOffset,
    days: BTreeMap<NaiveDate, DayEntry>,
}

impl Diary {
    /// An empty diary whose days are taken at `offset`.
    pub fn new(offset: FixedOffset) -> Diary {
        Diary { offset, days: BTreeMap::new() }
    }

    /// Folds one event; returns the day it changed, if any.
    pub fn observe(&mut self, env: &Envelope) -> Option<NaiveDate> {
        let Event::SummaryWritten(s) = &env.event else { return None };
        let date = env.at.with_timezone(&self.offset).date_naive();
        let entry = self.days.entry(date).or_insert_with(|| DayEntry {
            date,
            text: String::new(),
            topics: Vec::new(),
            sessions: 0,
        });
        entry.text = match s.summariser {
            // Written from the prior entry: the whole day, updated.
            SummariserKind::Llm => s.summary.clone(),
            _ if entry.text.is_empty() => s.summary.clone(),
            _ => format!("{}\n{}", entry.text, s.summary),
        };
        if entry.text.chars().count() > MAX_ENTRY_CHARS {
            let skip = entry.text.chars().count() - MAX_ENTRY_CHARS;
            entry.text = entry.text.chars().skip(skip).collect();
        }
        let mut topics = s.topics.clone();
        for t in &entry.topics {
            if !topics.iter().any(|k| k.eq_ignore_ascii_case(t)) {
                topics.push(t.clone());
            }
        }
        topics.truncate(10);
        entry.topics = topics;
        entry.sessions += 1;
        Some(date)
    }

    /// The entry of `date`, if one was written.
    pub fn entry(&self, date: NaiveDate) -> Option<&DayEntry> {
        self.days.get(&date)
    }

    /// The day an instant falls on, at the diary's offset.
    pub fn day_of(&self, at: chrono::DateTime<chrono::Utc>) -> NaiveDate {
        at.with_timezone(&self.offset).date_naive()
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &DayEntry> {
        self.days.values()
    }

    /// Days with an entry.
    pub fn len(&self) -> usize {
        self.days.len()
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.days.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use engram_events::payloads::SummaryWritten;
    use engram_events::ActorKind;

    fn summary(at: (u32, u32), kind: SummariserKind, text: &str, topics: &[&str]) -> Envelope {
        let mut e = Envelope::new(
            ActorKind::Summariser,
            SummaryWritten {
                summary: text.into(),
                topics: topics.iter().map(|t| t.to_string()).collect(),
                summariser: kind,
                turns_covered: 1,
            },
        );
        e.at = Utc.with_ymd_and_hms(2026, 11, at.0, at.1, 0, 0).unwrap();
        e
    }

    #[test]
    fn one_entry_per_day_llm_replaces_extractive_appends() {
        // UTC+1: 23:30 UTC on the 20th is the 21st for the user.
        let mut d = Diary::new(FixedOffset::east_opt(3600).unwrap());
        let day = |n| NaiveDate::from_ymd_opt(2026, 11, n).unwrap();
        assert_eq!(
            d.observe(&summary((20, 9), SummariserKind::Extractive, "Asked about Rome.", &["rome"])),
            Some(day(20))
        );
        d.observe(&summary((20, 12), SummariserKind::Extractive, "Dinner at Da Mario.", &["dinner"]));
        assert_eq!(d.entry(day(20)).unwrap().text, "Asked about Rome.\nDinner at Da Mario.");
        assert_eq!(d.entry(day(20)).unwrap().topics, ["dinner", "rome"]);
        // The LLM summary was written from the entry so far: it replaces it.
        d.observe(&summary((20, 18), SummariserKind::Llm, "Rome; dinner at Da Mario; a film.", &["film"]));
        let e = d.entry(day(20)).unwrap();
        assert_eq!((e.text.as_str(), e.sessions), ("Rome; dinner at Da Mario; a film.", 3));
        assert_eq!(d.observe(&summary((20, 23), SummariserKind::Llm, "Late.", &[])), Some(day(21)));
        assert_eq!(d.len(), 2);
    }
}
