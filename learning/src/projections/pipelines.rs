//! `pipelines`: the L2 candidates (seed 000 `multi_tool_paths`), folded from
//! `pipeline.recorded`, `pipeline.expired` and `pipeline.promoted`.
//!
//! One row per pipeline id — a canonical text and a tool sequence with
//! argument placeholders. A row is an L2 candidate once its identical
//! passes reach `min_uses`; it expires (an event the fast-path reactor
//! writes) after `ttl_active_days` active days unused.
//!
//! `pipeline.rejected` sets a pipeline's uses to 0 and marks it rejected
//! (it serves no more); its next `pipeline.recorded` — written for a
//! rejected pipeline only from a turn rated well — clears the mark.

use engram_events::payloads::PlanStep;
use engram_events::{Envelope, Event, EventKind};
use serde::{Deserialize, Serialize};

use engram_local_state::projector::{Projection, Table, TableRows};

/// One pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineRow {
    /// Its id.
    pub pipeline_id: String,
    /// The request in canonical form.
    pub canonical: String,
    /// The steps, arguments as placeholders where they came from the request.
    pub steps: Vec<PlanStep>,
    /// Identical passes.
    pub uses: u32,
    /// Active-day rank of its last use.
    pub last_used_rank: u32,
    /// Promoted to a synthesis candidate.
    pub promoted: bool,
    /// `seq` of its first recording.
    pub first_seq: u64,
    /// A verdict rejected it and no turn rated well has taught it since.
    #[serde(default)]
    pub rejected: bool,
}

/// The `pipelines` projection.
#[derive(Clone)]
pub struct Pipelines {
    rows: Table<PipelineRow>,
}

impl Pipelines {
    /// Heap bytes held by the rows ([`engram_local_state::heap_bytes`]; a row by its JSON
    /// length): what a soak sets beside RSS.
    pub fn heap_bytes(&self) -> usize {
        engram_local_state::heap_bytes::table(&self.rows, engram_local_state::heap_bytes::json)
    }
}

impl Default for Pipelines {
    fn default() -> Self {
        Pipelines { rows: Table::new(b'l') }
    }
}

impl Pipelines {
    /// The pipeline `id`.
    pub fn get(&self, id: &str) -> Option<&PipelineRow> {
        self.rows.get(id.as_bytes())
    }

    /// Every pipeline, by id.
    pub fn iter(&self) -> impl Iterator<Item = &PipelineRow> {
        self.rows.iter().map(|(_, v)| v)
    }

    /// Pipelines with at least `min_uses` identical passes, not rejected.
    pub fn candidates(&self, min_uses: u32) -> impl Iterator<Item = &PipelineRow> {
        self.iter().filter(move |r| r.uses >= min_uses && !r.rejected)
    }

    /// Is the pipeline `id` rejected (see the module docs)?
    pub fn is_rejected(&self, id: &str) -> bool {
        self.get(id).is_some_and(|r| r.rejected)
    }

    /// Number of pipelines.
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

impl Projection for Pipelines {
    fn name(&self) -> &'static str {
        "pipelines"
    }

    fn version(&self) -> u32 {
        2 // 2: rejection
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[
            EventKind::PipelineRecorded,
            EventKind::PipelineExpired,
            EventKind::PipelinePromoted,
            EventKind::PipelineRejected,
        ])
    }

    fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::PipelineRecorded(p) => {
                let row = self.rows.entry(p.pipeline_id.as_bytes(), || PipelineRow {
                    pipeline_id: p.pipeline_id.clone(),
                    canonical: p.canonical.clone(),
                    steps: p.steps.clone(),
                    uses: 0,
                    last_used_rank: p.day_rank,
                    promoted: false,
                    first_seq: env.seq.get(),
                    rejected: false,
                });
                row.rejected = false;
                row.uses += 1;
                row.last_used_rank = row.last_used_rank.max(p.day_rank);
            }
            Event::PipelineExpired(p) => {
                self.rows.remove(p.pipeline_id.as_bytes());
            }
            Event::PipelineRejected(p) => {
                if let Some(row) = self.rows.get_mut(p.pipeline_id.as_bytes()) {
                    row.uses = 0;
                    row.rejected = true;
                }
            }
            Event::PipelinePromoted(p) => {
                if let Some(row) = self.rows.get_mut(p.pipeline_id.as_bytes()) {
                    row.promoted = true;
                }
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
