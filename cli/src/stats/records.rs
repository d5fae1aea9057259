//! The log's records, counted: events by kind, the sessions they belong to
//! and whether damage had to be read around. Counting needs no payloads, so
//! the records are read in place; only when that reader stops at a damaged
//! record are they decoded, by the reader that goes around damage.

use std::collections::{BTreeMap, HashSet};

use engram::{EventKind, Seq};

use crate::output;
use crate::Log;

/// What the log's records hold, counted.
#[derive(Default)]
pub(super) struct Counts {
    /// Events read.
    pub(super) events: u64,
    /// Events by kind name.
    pub(super) by_kind: BTreeMap<&'static str, u64>,
    /// The sessions the events belong to.
    pub(super) sessions: HashSet<String>,
    /// Whether damaged records were skipped.
    pub(super) damaged: bool,
}

impl Counts {
    /// Counts one event of `kind` in `session`.
    fn add(&mut self, kind: &'static str, session: Option<&str>) {
        *self.by_kind.entry(kind).or_default() += 1;
        if let Some(s) = session {
            if !self.sessions.contains(s) {
                self.sessions.insert(s.to_owned());
            }
        }
    }

    /// Turns completed.
    pub(super) fn turns(&self) -> u64 {
        self.by_kind.get(EventKind::TurnCompleted.name()).copied().unwrap_or(0)
    }
}

/// Counts the records of `log`, in place, or around damage if there is any.
pub(super) fn count(log: &Log) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    // Counting needs no payloads: read the records in place.
    let viewed = log.records().for_each_view(Seq::FIRST, |view| {
        counts.add(view.kind().name(), view.session());
        Ok(())
    });
    match viewed {
        Ok(n) => {
            counts.events = n;
            Ok(counts)
        }
        // The in-place reader stops at damage; the decoding one goes
        // around it: count again with that.
        Err(e) if e.is_record_damage() => {
            tracing::debug!("counting around damage: {e}");
            count_around_damage(log)
        }
        Err(e) => Err(e.into()),
    }
}

/// Counts the records of `log` by decoding them, skipping damaged ones.
fn count_around_damage(log: &Log) -> anyhow::Result<Counts> {
    let mut counts = Counts::default();
    for env in log.read_from(Seq::FIRST) {
        let env = match env {
            Ok(env) => env,
            Err(e) if output::around_damage(&e) => {
                counts.damaged = true;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        counts.events += 1;
        counts.add(env.kind().name(), env.session.as_ref().map(|s| s.as_str()));
    }
    Ok(counts)
}
