//! `active_days`: calendar day → day rank, from `day.activated` events.
//!
//! Ranks count days on which the assistant saw at least one turn, skipping
//! empty days, so TTLs measured in active days (seed 000: pipelines expire
//! after 30 of them) do not run while the user is away.

use engram_events::{Envelope, Event, EventKind};

use engram_local_state::projector::{Projection, Table, TableRows};

/// The `active_days` projection.
#[derive(Clone)]
pub struct ActiveDays {
    days: Table<u32>,
}

impl Default for ActiveDays {
    fn default() -> Self {
        ActiveDays { days: Table::new(b'd') }
    }
}

impl ActiveDays {
    /// The rank of `day` (ISO `YYYY-MM-DD`), if it was active.
    pub fn rank_of(&self, day: &str) -> Option<u32> {
        self.days.get(day.as_bytes()).copied()
    }

    /// The highest rank so far (0 before the first active day).
    pub fn current_rank(&self) -> u32 {
        self.days.iter().map(|(_, r)| *r).max().unwrap_or(0)
    }

    /// Every active day and its rank, by day.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.days.iter().map(|(d, r)| (std::str::from_utf8(d).unwrap_or(""), *r))
    }

    /// Number of active days.
    pub fn len(&self) -> usize {
        self.days.len()
    }

    /// True before the first active day.
    pub fn is_empty(&self) -> bool {
        self.days.is_empty()
    }
}

impl Projection for ActiveDays {
    fn name(&self) -> &'static str {
        "active_days"
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[EventKind::DayActivated])
    }

    fn apply(&mut self, env: &Envelope) {
        if let Event::DayActivated(d) = &env.event {
            self.days.insert(d.day.as_bytes().to_vec(), d.rank);
        }
    }

    fn tables(&self) -> Vec<&dyn TableRows> {
        vec![&self.days]
    }

    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
        vec![&mut self.days]
    }
}
