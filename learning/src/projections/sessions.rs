//! `sessions`: one row per session — when it started and ended, how, its
//! turns, cost, models and latest verdicts.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use engram_events::payloads::{RouteLayer, SessionEndReason};
use engram_events::{Envelope, Event, EventKind};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use engram_local_state::projector::{Projection, Table, TableRows};

/// One session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// Time of its earliest utterance, turn, verdict or end.
    pub started: Option<DateTime<Utc>>,
    /// Time of its `session.ended`.
    pub ended: Option<DateTime<Utc>>,
    /// Why it ended.
    pub end_reason: Option<SessionEndReason>,
    /// Completed turns.
    pub turns: u32,
    /// Turns answered by the fast path (L0/L1/L2).
    pub fast_path_turns: u32,
    /// Total LLM cost of its turns.
    #[serde(with = "rust_decimal::serde::str")]
    pub cost_usd: Decimal,
    /// Models its turns used.
    pub models: BTreeSet<String>,
    /// Latest verdict per turn: turn id → (eval id, score).
    pub verdicts: BTreeMap<String, (String, f64)>,
}

impl SessionRow {
    /// Mean of the latest verdict of each judged turn.
    pub fn mean_score(&self) -> Option<f64> {
        (!self.verdicts.is_empty())
            .then(|| self.verdicts.values().map(|(_, s)| s).sum::<f64>() / self.verdicts.len() as f64)
    }
}

/// The `sessions` projection.
pub struct Sessions {
    rows: Table<SessionRow>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions { rows: Table::new(b's') }
    }
}

impl Sessions {
    /// The session named `id`.
    pub fn get(&self, id: &str) -> Option<&SessionRow> {
        self.rows.get(id.as_bytes())
    }

    /// Every session, by id.
    pub fn iter(&self) -> impl Iterator<Item = (String, &SessionRow)> {
        self.rows.iter().map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v))
    }

    /// The earliest start of a session that has not ended: where a
    /// reactor that keeps open sessions in memory (judge, summariser) must
    /// start replaying the log to warm up. `None` when every session ended.
    pub fn earliest_open_start(&self) -> Option<DateTime<Utc>> {
        self.rows.iter().filter(|(_, r)| r.ended.is_none()).filter_map(|(_, r)| r.started).min()
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl Projection for Sessions {
    fn name(&self) -> &'static str {
        "sessions"
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[
            EventKind::UtteranceReceived,
            EventKind::TurnCompleted,
            EventKind::EvalCompleted,
            EventKind::SessionEnded,
        ])
    }

    fn apply(&mut self, env: &Envelope) {
        let Some(session) = &env.session else { return };
        let row = self.rows.entry(session.as_str().as_bytes(), SessionRow::default);
        let started = row.started.get_or_insert(env.at);
        *started = (*started).min(env.at);
        match &env.event {
            Event::TurnCompleted(t) => {
                row.turns += 1;
                if t.layer != RouteLayer::Planner {
                    row.fast_path_turns += 1;
                }
                // Saturating: an imported envelope may carry any cost.
                row.cost_usd = row.cost_usd.saturating_add(t.cost_usd);
                if let Some(m) = &t.model {
                    row.models.insert(m.clone());
                }
            }
            Event::EvalCompleted(e) => {
                let eval = e.eval_id.to_string();
                let slot = row.verdicts.entry(e.subject_turn.to_string()).or_insert_with(|| (eval.clone(), e.score));
                // The greatest eval id is the latest verdict.
                if eval >= slot.0 {
                    *slot = (eval, e.score);
                }
            }
            Event::SessionEnded(e) => {
                row.ended = Some(env.at);
                row.end_reason = Some(e.reason);
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
