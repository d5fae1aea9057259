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
//!
//! A day keeps its newest [`MAX_DAY_SUMMARIES`] summaries and counts the
//! sessions of those it let go: an entry shows the newest
//! [`MAX_ENTRY_CHARS`] of its summaries, so older ones no longer reach it,
//! and a busy day (a host ending a session every few turns) neither holds
//! every summary nor folds them all again at each session's end.
//!
//! `memory.forgotten` retracts: a forgotten session's summaries leave
//! their day (the entry is folded again from the others), and a sentence
//! holding a forgotten phrase is left out of every entry, earlier or later
//! — what the user retracted reaches no prompt through the diary.

use std::collections::BTreeMap;

use chrono::{FixedOffset, NaiveDate};
use engram_events::payloads::SummariserKind;
use engram_events::{Envelope, Event, SessionId};
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// Longest entry kept (characters): appended extractive summaries of a
/// busy day keep their newest part.
pub const MAX_ENTRY_CHARS: usize = 4_000;

/// Most summaries a day keeps (the newest; see the module docs).
pub const MAX_DAY_SUMMARIES: usize = 64;

/// One day's entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// One `summary.written`, as its day keeps it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Written {
    session: Option<SessionId>,
    summariser: SummariserKind,
    summary: String,
    topics: Vec<String>,
}

/// The diary: day → entry.
#[derive(Clone, Debug)]
pub struct Diary {
    offset: FixedOffset,
    /// Each day's summaries, in log order.
    written: BTreeMap<NaiveDate, Vec<Written>>,
    /// Each day's entry, folded from `written`.
    days: BTreeMap<NaiveDate, DayEntry>,
    /// Forgotten phrases, lower-cased.
    phrases: Vec<String>,
    /// Each day's summaries let go past [`MAX_DAY_SUMMARIES`].
    dropped: BTreeMap<NaiveDate, u32>,
}

impl Diary {
    /// An empty diary whose days are taken at `offset`.
    pub fn new(offset: FixedOffset) -> Diary {
        Diary { offset, written: BTreeMap::new(), days: BTreeMap::new(), phrases: Vec::new(), dropped: BTreeMap::new() }
    }

    /// Folds one event; returns the days whose entry it changed.
    pub fn observe(&mut self, env: &Envelope) -> Vec<NaiveDate> {
        match &env.event {
            Event::SummaryWritten(s) => {
                let date = self.day_of(env.at);
                let day = self.written.entry(date).or_default();
                day.push(Written {
                    session: env.session.clone(),
                    summariser: s.summariser,
                    summary: s.summary.clone(),
                    topics: s.topics.clone(),
                });
                if day.len() > MAX_DAY_SUMMARIES {
                    let over = day.len() - MAX_DAY_SUMMARIES;
                    day.drain(..over);
                    *self.dropped.entry(date).or_default() += over as u32;
                }
                self.fold(date);
                vec![date]
            }
            Event::MemoryForgotten(m) => {
                self.phrases.extend(m.phrases.iter().map(|p| p.to_lowercase()).filter(|p| !p.trim().is_empty()));
                let dates: Vec<NaiveDate> = self.written.keys().copied().collect();
                let mut changed = Vec::new();
                for date in dates {
                    if let Some(w) = self.written.get_mut(&date) {
                        w.retain(|w| w.session.as_ref().is_none_or(|s| !m.sessions.contains(s)));
                    }
                    if self.fold(date) {
                        changed.push(date);
                    }
                }
                changed
            }
            _ => Vec::new(),
        }
    }

    /// Folds `date`'s entry from its summaries; whether it changed.
    fn fold(&mut self, date: NaiveDate) -> bool {
        let dropped = self.dropped.get(&date).copied().unwrap_or(0);
        let mut entry = DayEntry { date, text: String::new(), topics: Vec::new(), sessions: dropped };
        for w in self.written.get(&date).into_iter().flatten() {
            let summary = without(&w.summary, &self.phrases);
            entry.text = match w.summariser {
                // Written from the prior entry: the whole day, updated.
                SummariserKind::Llm => summary,
                _ if entry.text.is_empty() => summary,
                _ if summary.is_empty() => entry.text,
                _ => format!("{}\n{summary}", entry.text),
            };
            if entry.text.chars().count() > MAX_ENTRY_CHARS {
                let skip = entry.text.chars().count() - MAX_ENTRY_CHARS;
                entry.text = entry.text.chars().skip(skip).collect();
            }
            let mut topics: Vec<String> = w.topics.iter().filter(|t| !holds_any(t, &self.phrases)).cloned().collect();
            for t in &entry.topics {
                if !topics.iter().any(|k| k.eq_ignore_ascii_case(t)) {
                    topics.push(t.clone());
                }
            }
            topics.truncate(10);
            entry.topics = topics;
            entry.sessions += 1;
        }
        let was = self.days.get(&date);
        if entry.sessions == dropped {
            return self.days.remove(&date).is_some();
        }
        if was == Some(&entry) {
            return false;
        }
        self.days.insert(date, entry);
        true
    }

    /// Whether a summary of `session` is in the diary (written, not
    /// forgotten).
    pub fn summarises(&self, session: &SessionId) -> bool {
        self.written.values().flatten().any(|w| w.session.as_ref() == Some(session))
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

    /// Entries per structure: days, summaries written (over all days),
    /// forgotten phrases.
    pub fn sizes(&self) -> [(&'static str, usize); 3] {
        [
            ("diary.days", self.days.len()),
            ("diary.summaries", self.written.values().map(Vec::len).sum()),
            ("diary.phrases", self.phrases.len()),
        ]
    }

    /// Days with an entry.
    pub fn len(&self) -> usize {
        self.days.len()
    }

    /// The days that have an entry, in order.
    pub fn dates(&self) -> impl Iterator<Item = NaiveDate> + '_ {
        self.days.keys().copied()
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.days.is_empty()
    }
}

/// Whether `text` holds one of `phrases` (lower-cased), ignoring case.
fn holds_any(text: &str, phrases: &[String]) -> bool {
    !phrases.is_empty() && {
        let lower = text.to_lowercase();
        phrases.iter().any(|p| lower.contains(p.as_str()))
    }
}

/// `text` without the sentences that hold one of `phrases`.
fn without(text: &str, phrases: &[String]) -> String {
    if !holds_any(text, phrases) {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut sentence = String::new();
    for c in text.chars() {
        sentence.push(c);
        if matches!(c, '.' | '!' | '?' | '\n' | ';') {
            if !holds_any(&sentence, phrases) {
                out.push_str(&sentence);
            }
            sentence.clear();
        }
    }
    if !holds_any(&sentence, phrases) {
        out.push_str(&sentence);
    }
    out.trim().to_owned()
}

/// The summaries by day, the entries folded from them and the forgotten
/// phrases. Summaries are filed under the user's local date, so the
/// offset is part of the fold (rule 4 of `engram_local_state::snapshot`).
impl Snapshot for Diary {
    fn save(&self, w: &mut SnapshotWriter) {
        w.put(&self.offset.local_minus_utc());
        w.put(&self.written);
        w.put(&self.days);
        w.put(&self.phrases);
        w.put(&self.dropped);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        r.expect("the UTC offset (seconds)", &self.offset.local_minus_utc())?;
        self.written = r.take()?;
        self.days = r.take()?;
        self.phrases = r.take()?;
        self.dropped = r.take()?;
        Ok(())
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
            vec![day(20)]
        );
        d.observe(&summary((20, 12), SummariserKind::Extractive, "Dinner at Da Mario.", &["dinner"]));
        assert_eq!(d.entry(day(20)).unwrap().text, "Asked about Rome.\nDinner at Da Mario.");
        assert_eq!(d.entry(day(20)).unwrap().topics, ["dinner", "rome"]);
        // The LLM summary was written from the entry so far: it replaces it.
        d.observe(&summary((20, 18), SummariserKind::Llm, "Rome; dinner at Da Mario; a film.", &["film"]));
        let e = d.entry(day(20)).unwrap();
        assert_eq!((e.text.as_str(), e.sessions), ("Rome; dinner at Da Mario; a film.", 3));
        assert_eq!(d.observe(&summary((20, 23), SummariserKind::Llm, "Late.", &[])), vec![day(21)]);
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn a_busy_day_keeps_its_newest_summaries_and_counts_every_session() {
        let mut d = Diary::new(FixedOffset::east_opt(0).unwrap());
        let day = NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
        let line = |i: usize| format!("Session {i}: asked about the files in the folder notes and the time. ");
        for i in 0..MAX_DAY_SUMMARIES * 3 {
            d.observe(&summary((20, 9), SummariserKind::Extractive, &line(i), &["files"]));
        }
        let e = d.entry(day).unwrap();
        assert_eq!(e.sessions as usize, MAX_DAY_SUMMARIES * 3, "every session counted");
        let newest = format!("Session {}:", MAX_DAY_SUMMARIES * 3 - 1);
        assert!(e.text.contains(&newest) && !e.text.contains("Session 0:"), "the newest kept: {}", e.text);
        assert!(e.text.chars().count() <= MAX_ENTRY_CHARS);
        assert_eq!(d.sizes()[1], ("diary.summaries", MAX_DAY_SUMMARIES), "the newest kept, no more");
        // The snapshot holds the same day.
        let mut w = SnapshotWriter::new();
        d.save(&mut w);
        let bytes = w.finish().unwrap();
        let mut again = Diary::new(FixedOffset::east_opt(0).unwrap());
        again.restore(&mut SnapshotReader::new(&bytes)).unwrap();
        assert_eq!(again.entry(day), d.entry(day));
    }

    #[test]
    fn a_forgotten_session_leaves_its_day_and_a_forgotten_phrase_every_entry() {
        use engram_events::payloads::MemoryForgotten;
        let mut d = Diary::new(FixedOffset::east_opt(0).unwrap());
        let day = |n| NaiveDate::from_ymd_opt(2026, 11, n).unwrap();
        let with = |e: Envelope, s: &str| e.with_session(engram_events::SessionId::new(s));
        d.observe(&with(
            summary((20, 9), SummariserKind::Extractive, "I live in Turin. Asked about Rome.", &["turin"]),
            "s-1",
        ));
        d.observe(&with(summary((20, 12), SummariserKind::Extractive, "Dinner at Da Mario.", &["dinner"]), "s-2"));
        d.observe(&with(summary((21, 9), SummariserKind::Extractive, "Only this.", &[]), "s-3"));
        let forgot = |sessions: &[&str], phrases: &[&str]| {
            Envelope::new(
                ActorKind::Cli,
                MemoryForgotten {
                    request: "test".into(),
                    facts: vec![],
                    sessions: sessions.iter().map(|s| engram_events::SessionId::new(*s)).collect(),
                    phrases: phrases.iter().map(|p| p.to_string()).collect(),
                },
            )
        };
        assert_eq!(d.observe(&forgot(&[], &["TURIN"])), vec![day(20)]);
        let e = d.entry(day(20)).unwrap();
        assert_eq!(
            (e.text.as_str(), e.topics.clone()),
            ("Asked about Rome.\nDinner at Da Mario.", vec!["dinner".to_string()])
        );
        // A later summary holding the phrase: that sentence never shows.
        d.observe(&with(summary((21, 12), SummariserKind::Extractive, "Back in turin. Film night.", &[]), "s-4"));
        assert_eq!(d.entry(day(21)).unwrap().text, "Only this.\nFilm night.");
        // A session forgotten: its summary leaves; a day left with none goes.
        assert_eq!(d.observe(&forgot(&["s-2"], &[])), vec![day(20)]);
        assert_eq!(d.entry(day(20)).unwrap().text, "Asked about Rome.");
        d.observe(&forgot(&["s-1"], &[]));
        assert_eq!(d.entry(day(20)), None);
        assert_eq!(d.len(), 1);
    }
}
