//! `canonical_queries`: the L1 candidates (seed 000 `canonical_query_log`),
//! folded from `canonical.recorded`.
//!
//! One row per (canonical text, executor): the arguments observed the
//! first time, and how often the pair was seen. A row is an L1 candidate
//! once `uses ≥ canonical_query_min_uses`, unless it is rejected.
//!
//! `canonical.rejected` (a verdict below the learning bar on a turn the row
//! served or taught) sets its uses to 0 and marks it rejected: it serves no
//! more. The next `canonical.recorded` of the pair — which the fast-path
//! reactor writes for a rejected pair only from a turn rated well — clears
//! the mark and starts counting again, with that turn's arguments.

use engram_events::payloads::ToolArgs;
use engram_events::{Envelope, Event, EventKind};
use serde::{Deserialize, Serialize};

use engram_local_state::projector::{Projection, Table, TableRows};

/// One canonical query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CanonicalRow {
    /// The request in canonical form (normalised, values masked).
    pub canonical: String,
    /// The executor chosen for it.
    pub executor: String,
    /// The arguments used the first time.
    pub args_observed: ToolArgs,
    /// Times recorded.
    pub uses: u32,
    /// `seq` of its first recording (a stable order for ties).
    pub first_seq: u64,
    /// A verdict rejected it and no turn rated well has taught it since.
    #[serde(default)]
    pub rejected: bool,
}

/// The `canonical_queries` projection.
#[derive(Clone)]
pub struct CanonicalQueries {
    rows: Table<CanonicalRow>,
}

impl CanonicalQueries {
    /// Heap bytes held by the rows ([`crate::heap`]): what a soak sets
    /// beside RSS.
    pub fn heap_bytes(&self) -> usize {
        use crate::heap::{json, string, table};
        table(&self.rows, |r| string(&r.canonical) + string(&r.executor) + json(&r.args_observed))
    }
}

impl Default for CanonicalQueries {
    fn default() -> Self {
        CanonicalQueries { rows: Table::new(b'c') }
    }
}

fn key(canonical: &str, executor: &str) -> Vec<u8> {
    let mut k = canonical.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(executor.as_bytes());
    k
}

impl CanonicalQueries {
    /// The row for `(canonical, executor)`.
    pub fn get(&self, canonical: &str, executor: &str) -> Option<&CanonicalRow> {
        self.rows.get(&key(canonical, executor))
    }

    /// Every row, by canonical text then executor.
    pub fn iter(&self) -> impl Iterator<Item = &CanonicalRow> {
        self.rows.iter().map(|(_, v)| v)
    }

    /// The rows of one canonical text (one per executor), by executor.
    pub fn for_text<'a>(&'a self, canonical: &str) -> impl Iterator<Item = &'a CanonicalRow> + 'a {
        let mut prefix = canonical.as_bytes().to_vec();
        prefix.push(0);
        self.rows.range_prefix(&prefix).map(|(_, v)| v)
    }

    /// Rows seen at least `min_uses` times and not rejected.
    pub fn candidates(&self, min_uses: u32) -> impl Iterator<Item = &CanonicalRow> {
        self.iter().filter(move |r| r.uses >= min_uses && !r.rejected)
    }

    /// Is the pair rejected (see the module docs)?
    pub fn is_rejected(&self, canonical: &str, executor: &str) -> bool {
        self.get(canonical, executor).is_some_and(|r| r.rejected)
    }

    /// Rows changed since the changes were last taken or forgotten.
    pub fn dirty_len(&self) -> usize {
        self.rows.dirty_len()
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl Projection for CanonicalQueries {
    fn name(&self) -> &'static str {
        "canonical_queries"
    }

    fn version(&self) -> u32 {
        2 // 2: rejection
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[EventKind::CanonicalRecorded, EventKind::CanonicalRejected])
    }

    fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::CanonicalRecorded(c) => {
                let row = self.rows.entry(&key(&c.canonical, &c.executor), || CanonicalRow {
                    canonical: c.canonical.clone(),
                    executor: c.executor.clone(),
                    args_observed: c.args_observed.clone(),
                    uses: 0,
                    first_seq: env.seq.get(),
                    rejected: false,
                });
                if row.rejected {
                    row.rejected = false;
                    row.args_observed = c.args_observed.clone();
                }
                row.uses += 1;
            }
            Event::CanonicalRejected(c) => {
                // A row never recorded (a paraphrase's, rejected before its
                // first lesson) is kept as a mark: it is not learnt from a
                // turn merely answered either.
                let row = self.rows.entry(&key(&c.canonical, &c.executor), || CanonicalRow {
                    canonical: c.canonical.clone(),
                    executor: c.executor.clone(),
                    args_observed: ToolArgs::default(),
                    uses: 0,
                    first_seq: env.seq.get(),
                    rejected: true,
                });
                row.uses = 0;
                row.rejected = true;
            }
            _ => {}
        }
    }

    fn tables(&self) -> Vec<&dyn TableRows> {
        vec![&self.rows]
    }

    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
        vec![&mut self.rows]
    }
}
