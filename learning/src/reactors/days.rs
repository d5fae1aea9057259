//! Active days: the first utterance of a calendar day activates it with
//! the next rank (`day.activated`), so TTLs can count days of use rather
//! than calendar days (seed 000). Days are the user's local days: the live
//! runtime gives the reactor the user's UTC offset; import uses UTC.

use std::collections::BTreeMap;

use engram_events::payloads::DayActivated;
use engram_events::{ActorKind, Envelope, Event, EventId};

use super::Reactor;
use crate::projections::ActiveDays;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// Derives `day.activated` from `utterance.received`.
#[derive(Default)]
pub struct DayReactor {
    days: BTreeMap<String, u32>,
    max_rank: u32,
    /// The user's UTC offset (`None`: UTC).
    offset: Option<chrono::FixedOffset>,
}

impl DayReactor {
    /// Starts from what the `active_days` projection holds.
    pub fn from_projection(active: &ActiveDays) -> Self {
        let days: BTreeMap<String, u32> = active.iter().map(|(d, r)| (d.to_owned(), r)).collect();
        let max_rank = days.values().copied().max().unwrap_or(0);
        DayReactor { days, max_rank, offset: None }
    }

    /// Days counted in the user's local time at `offset`.
    pub fn with_offset(mut self, offset: chrono::FixedOffset) -> Self {
        self.offset = Some(offset);
        self
    }

    fn fold(&mut self, day: &str, rank: u32) {
        self.days.entry(day.to_owned()).or_insert(rank);
        self.max_rank = self.max_rank.max(rank);
    }
}

impl Reactor for DayReactor {
    fn name(&self) -> &'static str {
        "days"
    }

    fn observe(&mut self, env: &Envelope) {
        if let Event::DayActivated(d) = &env.event {
            self.fold(&d.day, d.rank);
        }
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        self.observe(env);
        if !matches!(env.event, Event::UtteranceReceived(_)) {
            return Vec::new();
        }
        let local = match self.offset {
            Some(o) => env.at.with_timezone(&o).date_naive(),
            None => env.at.date_naive(),
        };
        let day = local.format("%Y-%m-%d").to_string();
        if self.days.contains_key(&day) {
            return Vec::new();
        }
        let rank = self.max_rank + 1;
        self.fold(&day, rank);
        // One activation per day, whichever utterance caused it.
        let id = EventId::derive(env.at, &[b"day.activated", day.as_bytes()]);
        let event = Envelope::at(id, env.at, ActorKind::Listener, DayActivated { day, rank }).caused_by(env.id);
        vec![Envelope { session: env.session.clone(), turn: env.turn, ..event }]
    }
}

/// The activated days and the highest rank. The offset only dates new
/// activations (`react`), so it is not part of the fold.
impl Snapshot for DayReactor {
    fn save(&self, w: &mut SnapshotWriter) {
        w.put(&self.days);
        w.put(&self.max_rank);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.days = r.take()?;
        self.max_rank = r.take()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reactors::derive_all;
    use chrono::{TimeZone, Utc};
    use engram_events::payloads::{UtteranceReceived, UtteranceSource};

    fn utterance(day: u32, hour: u32) -> Envelope {
        let at = Utc.with_ymd_and_hms(2026, 11, day, hour, 0, 0).unwrap();
        let text = format!("{day}/{hour}");
        Envelope::at(
            EventId::derive(at, &[text.as_bytes()]),
            at,
            ActorKind::Listener,
            UtteranceReceived {
                text,
                turn_number: 1,
                source: UtteranceSource::Chat,
                lang: None,
                model: None,
                sticky_model: None,
            },
        )
    }

    fn ranks(events: &[Envelope]) -> Vec<(String, u32)> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Event::DayActivated(d) => Some((d.day.clone(), d.rank)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ranks_count_active_days_only() {
        let mut reactors: Vec<Box<dyn Reactor>> = vec![Box::new(DayReactor::default())];
        // Two months away between the 2nd and the 3rd active day.
        let out = derive_all(vec![utterance(1, 9), utterance(1, 18), utterance(2, 8), utterance(30, 7)], &mut reactors);
        assert_eq!(ranks(&out), vec![("2026-11-01".into(), 1), ("2026-11-02".into(), 2), ("2026-11-30".into(), 3)]);
        // Each activation follows its cause and names it.
        assert_eq!(out[1].causation, Some(out[0].id));
        // Deriving again from a reactor that saw the activations: nothing new.
        let again = derive_all(vec![utterance(1, 20)], &mut reactors);
        assert!(ranks(&again).is_empty());
    }

    #[test]
    fn days_are_the_users_local_days() {
        // 23:00 UTC on the 20th is already the 21st at UTC+2.
        let events = vec![utterance(20, 21), utterance(20, 23)];
        let mut utc: Vec<Box<dyn Reactor>> = vec![Box::new(DayReactor::default())];
        assert_eq!(ranks(&derive_all(events.clone(), &mut utc)), vec![("2026-11-20".to_owned(), 1)]);
        let plus2 = chrono::FixedOffset::east_opt(2 * 3600).unwrap();
        let mut local: Vec<Box<dyn Reactor>> = vec![Box::new(DayReactor::default().with_offset(plus2))];
        assert_eq!(
            ranks(&derive_all(events, &mut local)),
            vec![("2026-11-20".to_owned(), 1), ("2026-11-21".to_owned(), 2)]
        );
    }
}
