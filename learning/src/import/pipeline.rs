//! The append side of an import: converted events gathered into batches
//! of [`BATCH`], at most [`IN_FLIGHT`] of them handed to the log's writer
//! at once (it commits them in order), and counted into [`ImportStats`] as
//! they settle. Apart from the conversion, which feeds it a group at a time.

use std::collections::VecDeque;

use engram_events::Envelope;
use engram_storage::{AppendTicket, EventLog};

use super::{ImportError, ImportStats};

/// Events per submitted batch.
pub(super) const BATCH: usize = 2048;
/// Batches in flight at once (the writer commits them in order).
const IN_FLIGHT: usize = 4;

/// How a group of events counts in [`ImportStats`].
#[derive(Clone, Copy, Debug)]
pub(super) enum Group {
    Turn,
    Envelope { is_turn: bool },
}

pub(super) struct Pipeline<'a> {
    pub(super) log: &'a dyn EventLog,
    pub(super) in_flight: VecDeque<(AppendTicket, Vec<(Group, usize)>)>,
    pub(super) batch: Vec<Envelope>,
    pub(super) groups: Vec<(Group, usize)>,
}

impl Pipeline<'_> {
    pub(super) fn push(
        &mut self,
        events: Vec<Envelope>,
        group: Group,
        stats: &mut ImportStats,
    ) -> Result<(), ImportError> {
        self.groups.push((group, events.len()));
        self.batch.extend(events);
        if self.batch.len() >= BATCH {
            self.submit(stats)?;
        }
        Ok(())
    }

    fn submit(&mut self, stats: &mut ImportStats) -> Result<(), ImportError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let ticket = self.log.submit(batch)?;
        self.in_flight.push_back((ticket, std::mem::take(&mut self.groups)));
        while self.in_flight.len() >= IN_FLIGHT {
            self.settle_one(stats)?;
        }
        Ok(())
    }

    fn settle_one(&mut self, stats: &mut ImportStats) -> Result<(), ImportError> {
        let Some((ticket, groups)) = self.in_flight.pop_front() else { return Ok(()) };
        let outcomes = ticket.wait()?;
        let mut i = 0;
        for (group, n) in groups {
            let new = outcomes[i..i + n].iter().filter(|o| o.is_new()).count() as u64;
            i += n;
            stats.events_appended += new;
            match group {
                Group::Turn if new > 0 => stats.imported_turns += 1,
                Group::Turn => stats.skipped_existing += 1,
                Group::Envelope { is_turn } if new > 0 => stats.imported_turns += is_turn as u64,
                Group::Envelope { .. } => stats.skipped_existing += 1,
            }
        }
        Ok(())
    }

    pub(super) fn finish(&mut self, stats: &mut ImportStats) -> Result<(), ImportError> {
        self.submit(stats)?;
        while !self.in_flight.is_empty() {
            self.settle_one(stats)?;
        }
        Ok(())
    }
}
