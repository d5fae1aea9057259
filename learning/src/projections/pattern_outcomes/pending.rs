//! The pending turns of sessions still open: what a turn was (its
//! features, request vector, model, cost, latency, latest verdict) until
//! the pattern reactor records it — the `p` table of
//! [`PatternOutcomes`].
//!
//! Rules, each folded here the same way the reactor decides from them
//! ([`crate::reactors::PatternReactor`]):
//!
//! 1. `route.decided`, `tool.called`, `turn.completed` and `eval.completed`
//!    of a session not ended fill its turn's row; a copy that only
//!    recommends keeps none ([`PatternOutcomes::keep_outcomes_only`]).
//! 2. A turn no model answered keeps only its row once completed: the
//!    store records model turns only.
//! 3. **A long session is recorded in parts.** Once a session holds
//!    [`PART_TURNS`] completed turns older than its newest [`PART_KEEPS`],
//!    the `turn.completed` that reaches that count records those older
//!    turns as a session's end would (one sample per `(fingerprint,
//!    model)` of the part) and their rows go. Without it a day-long
//!    session kept every turn resident, ≈ 3 KB a planner turn with its
//!    request vector (docs/performance.md, *One long session*). The newest
//!    turns wait, since their verdicts are still on the way: a verdict on
//!    a recorded turn is applied as a late one, but one arriving between
//!    the part's fold and its records landing would find neither row.
//! 4. `session.ended` drops the session's rows (the reactor records what
//!    is left) and marks the session ended: its turns seen again change
//!    nothing.

use engram_events::payloads::{
    EvalCompleted, QueryEmbedding, RouteDecided, StructuralFeatures, ToolCalled, TurnCompleted,
};
use engram_events::{Envelope, EvalId, SessionId, TurnId};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use ulid::Ulid;

use super::{turn_key, PatternOutcomes};

/// Completed turns a part records (rule 3): large enough that a session of
/// ordinary length is recorded once, at its end, as before.
pub const PART_TURNS: usize = 64;

/// A session's newest completed turns a part leaves pending (rule 3), for
/// the verdicts still on their way.
pub const PART_KEEPS: usize = 16;

/// A verdict on a turn of a session still open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingVerdict {
    /// The verdict's id.
    pub eval_id: EvalId,
    /// Its score.
    pub score: f64,
    /// Its confidence.
    pub confidence: f64,
    /// The judge's price table version, if it reported one.
    #[serde(default)]
    pub judge_pricing_version: Option<String>,
}

/// A turn of a session that has not ended yet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingTurn {
    /// Its normalized features.
    pub features: StructuralFeatures,
    /// Its workload tag.
    pub workload: Option<String>,
    /// The model it was routed to (`None`: the fast path answered).
    pub model: Option<String>,
    /// Whether `turn.completed` arrived.
    pub completed: bool,
    /// Its LLM cost.
    #[serde(with = "rust_decimal::serde::str")]
    pub cost_usd: Decimal,
    /// Its wall time.
    pub latency_ms: u64,
    /// Price table version of the cost.
    pub pricing_version: String,
    /// The latest verdict so far.
    pub verdict: Option<PendingVerdict>,
    /// The request's embedding, when the route carried one.
    #[serde(default)]
    pub embedding: Option<QueryEmbedding>,
}

fn session_prefix(session: &SessionId) -> Vec<u8> {
    let mut k = session.as_str().as_bytes().to_vec();
    k.push(0);
    k
}

fn pending_key(session: &SessionId, turn: TurnId) -> Vec<u8> {
    let mut k = session_prefix(session);
    k.extend_from_slice(&turn_key(turn));
    k
}

impl PatternOutcomes {
    /// A turn of a session still open.
    pub fn pending_turn(&self, turn: TurnId) -> Option<&PendingTurn> {
        self.pending_keys.get(&turn).and_then(|k| self.pending.get(k))
    }

    /// The open turns of `session`, by turn id (their start time): an order
    /// that does not depend on when they were appended, so a resumed import
    /// decides exactly what a clean one did.
    pub fn pending_of(&self, session: &SessionId) -> Vec<(TurnId, &PendingTurn)> {
        let prefix = session_prefix(session);
        let mut out: Vec<(TurnId, &PendingTurn)> = self
            .pending
            .range_prefix(&prefix)
            .filter_map(|(k, v)| {
                let id: [u8; 16] = k.get(prefix.len()..)?.try_into().ok()?;
                Some((TurnId(Ulid(u128::from_be_bytes(id))), v))
            })
            .collect();
        out.sort_by_key(|(t, _)| *t);
        out
    }

    /// Keeps no pending turns from now on: for a copy that only recommends
    /// and records nothing (the router's), whose pending turns no one
    /// reads. A pending turn weighs about 1.6 KB on average (a planner
    /// turn's request vector most of it),
    /// and a session keeps its turns pending until it ends — in a day-long
    /// session, thousands. Held in memory only, like `stop_tracking`.
    pub fn keep_outcomes_only(&mut self) {
        self.outcomes_only = true;
    }

    /// Turns of open sessions.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// The completed turns of `session` a part records now (rule 3), oldest
    /// first; empty while the session holds fewer than [`PART_TURNS`]
    /// beyond its newest [`PART_KEEPS`].
    pub fn part_due(&self, session: &SessionId) -> Vec<TurnId> {
        if self.outcomes_only || self.has_ended(session) {
            return Vec::new();
        }
        let completed: Vec<TurnId> =
            self.pending_of(session).into_iter().filter(|(_, p)| p.completed).map(|(t, _)| t).collect();
        if completed.len() < PART_TURNS + PART_KEEPS {
            return Vec::new();
        }
        completed[..completed.len() - PART_KEEPS].to_vec()
    }

    /// Drops `turns` of `session` from the pending table (rule 3: what a
    /// part recorded).
    pub fn drop_pending(&mut self, session: &SessionId, turns: &[TurnId]) {
        for turn in turns {
            self.pending.remove(&pending_key(session, *turn));
            self.pending_keys.remove(turn);
        }
    }

    fn pending_entry(&mut self, env: &Envelope) -> Option<&mut PendingTurn> {
        let (session, turn) = (env.session.as_ref()?, env.turn?);
        if self.outcomes_only || self.has_ended(session) {
            return None;
        }
        let key = pending_key(session, turn);
        self.pending_keys.insert(turn, key.clone());
        Some(self.pending.entry(&key, PendingTurn::default))
    }

    /// Rule 1: the route's features, workload and request vector.
    pub(super) fn fold_route(&mut self, env: &Envelope, r: &RouteDecided) {
        if let Some(p) = self.pending_entry(env) {
            p.features = r.features.clone().normalized();
            p.workload = r.workload.clone();
            p.embedding = r.embedding.clone();
        }
    }

    /// Rule 1: what a tool may do, as it declares it (live turns; imported
    /// ones carry their features whole).
    pub(super) fn fold_tool(&mut self, env: &Envelope, c: &ToolCalled) {
        let Some(class) = c.side_effect else { return };
        if let Some(p) = self.pending_entry(env) {
            if !p.features.side_effect_classes.contains(&class) {
                p.features.side_effect_classes.push(class);
                p.features = std::mem::take(&mut p.features).normalized();
            }
        }
    }

    /// Rules 1 and 2: a turn completed, before rule 3 looks at its session.
    /// The pattern reactor calls it apart from [`PatternOutcomes::part_due`]
    /// and [`PatternOutcomes::drop_pending`], to record a part between the
    /// two.
    pub fn complete_turn(&mut self, env: &Envelope, t: &TurnCompleted) {
        let Some(p) = self.pending_entry(env) else { return };
        // What the turn did, known only now: a planner turn's route had no
        // steps to name its tools or the dirs they touched. Two models may
        // run different tools for one kind of request and so record two
        // fingerprints; a route-time query skips these fields
        // (`Stage::Route`) and meets both alike.
        if p.features.tool_names.is_empty() && !t.steps.is_empty() {
            p.features.tool_names = t.steps.iter().map(|s| s.tool.clone()).collect();
            if p.features.file_path_buckets.is_empty() {
                p.features.file_path_buckets = crate::features::path_buckets(&t.steps);
            }
            p.features = std::mem::take(&mut p.features).normalized();
        }
        p.model = t.model.clone();
        if p.model.is_none() {
            // Rule 2. What would describe the turn to the store (its
            // features; a fast-path route carries no vector) is dropped now
            // rather than kept till the session ends — measured, the
            // pending rows went from 1 649 to 1 506 B a turn on average in
            // one long session. The row stays, so that a verdict on the
            // turn lands on it.
            p.features = StructuralFeatures::default();
            p.workload = None;
            p.embedding = None;
        }
        p.completed = true;
        p.cost_usd = t.cost_usd;
        p.latency_ms = t.latency_ms;
        p.pricing_version = t.pricing_version.clone();
    }

    /// Rule 1: the latest verdict on a pending turn (the greatest eval id).
    pub(super) fn fold_verdict(&mut self, e: &EvalCompleted) {
        let Some(key) = self.pending_keys.get(&e.subject_turn).cloned() else { return };
        if let Some(p) = self.pending.get_mut(&key) {
            // The greatest eval id is the latest verdict.
            if p.verdict.as_ref().is_none_or(|v| e.eval_id > v.eval_id) {
                p.verdict = Some(PendingVerdict {
                    eval_id: e.eval_id,
                    score: e.score,
                    confidence: e.confidence,
                    judge_pricing_version: e.judge_pricing_version.clone(),
                });
            }
        }
    }

    /// Rule 4: the session's end.
    pub(super) fn end_session(&mut self, env: &Envelope) {
        let Some(session) = &env.session else { return };
        if self.has_ended(session) {
            return;
        }
        self.ended.insert(session.as_str().as_bytes().to_vec(), env.at);
        let prefix = session_prefix(session);
        let keys: Vec<Vec<u8>> = self.pending.range_prefix(&prefix).map(|(k, _)| k.clone()).collect();
        for k in keys {
            self.pending.remove(&k);
            let id: [u8; 16] = k[k.len() - 16..].try_into().expect("16 bytes");
            self.pending_keys.remove(&TurnId(Ulid(u128::from_be_bytes(id))));
        }
    }
}
