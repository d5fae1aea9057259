//! `canonical_queries`: the L1 candidates (seed 000 `canonical_query_log`),
//! folded from `canonical.recorded`.
//!
//! One row per (canonical text, executor): the arguments observed the
//! first time, and how often the pair was seen. A row is an L1 candidate
//! once `uses ≥ canonical_query_min_uses`.

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
}

/// The `canonical_queries` projection.
#[derive(Clone)]
pub struct CanonicalQueries {
    rows: Table<CanonicalRow>,
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

    /// Rows seen at least `min_uses` times.
    pub fn candidates(&self, min_uses: u32) -> impl Iterator<Item = &CanonicalRow> {
        self.iter().filter(move |r| r.uses >= min_uses)
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

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[EventKind::CanonicalRecorded])
    }

    fn apply(&mut self, env: &Envelope) {
        if let Event::CanonicalRecorded(c) = &env.event {
            let row = self.rows.entry(&key(&c.canonical, &c.executor), || CanonicalRow {
                canonical: c.canonical.clone(),
                executor: c.executor.clone(),
                args_observed: c.args_observed.clone(),
                uses: 0,
                first_seq: env.seq.get(),
            });
            row.uses += 1;
        }
    }

    fn tables(&self) -> Vec<&dyn TableRows> {
        vec![&self.rows]
    }

    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
        vec![&mut self.rows]
    }
}
