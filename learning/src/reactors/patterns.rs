//! The pattern reactor: what the pattern store records, when, and what it
//! evicts (seed 001 §6, §10) — decided here, written as events, folded by
//! the `pattern_outcomes` projection.
//!
//! * `session.ended` → one `pattern.recorded` contribution per
//!   `(fingerprint, model)` of the session's planner turns (sample size + 1,
//!   the group's cost summed, its latency averaged), carrying the verdict of
//!   its first turn if one arrived while the session was open; each further
//!   turn of the group gets a score-only `pattern.recorded` (`before ==
//!   after`) so its own verdict, now or later, has a row to land on.
//! * a long session's `turn.completed` that makes a part due (its
//!   [`PART_TURNS`](crate::projections::pattern_outcomes::PART_TURNS)
//!   completed turns older than its newest
//!   [`PART_KEEPS`](crate::projections::pattern_outcomes::PART_KEEPS)) →
//!   those turns recorded as a session's end records them, so a day-long
//!   session does not keep every turn pending.
//! * `eval.completed` for a recorded turn → a score-only `pattern.recorded`
//!   that rolls the turn's previous score back exactly and folds the new
//!   one, unless the verdict is not newer than the one applied (idempotent
//!   by `eval_id`; the greatest `eval_id` wins). Verdicts below
//!   `min_eval_confidence` are applied but not folded. A verdict for a turn
//!   never recorded creates nothing and is logged.
//! * caps → `pattern.evicted`: `soft_cap_signal` when a session's writes
//!   cross the soft cap, `age_trim` of rows idle past `max_age_days` while
//!   over it, `hard_cap_evict` down to the hard cap (idle-past-age first,
//!   then least recently updated, then lowest sample size).
//!
//! Deriving twice from the same event derives nothing new: a session is
//! recorded once (the projection remembers ended sessions and ignores their
//! turns seen again), and a verdict's `eval_id` is in the history once
//! applied. That is what makes a re-run or resumed import derive exactly
//! what a clean one did.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use engram_events::payloads::{
    EvalCompleted, EvictedOutcome, EvictionTrigger, FingerprintKind, PatternEvicted, PatternRecorded, QueryEmbedding,
};
use engram_events::{ActorKind, Envelope, Event, FingerprintId, SessionId, TurnId};
use rust_decimal::Decimal;

use super::Reactor;
use crate::patterns::{Embedding, Fingerprint, PatternCaps, PatternConfig};
use crate::projections::pattern_outcomes::{AgeKey, PatternOutcomes, PendingTurn};
use engram_events::derived;
use engram_local_state::projector::Projection;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

/// Derives `pattern.recorded` / `pattern.evicted`.
pub struct PatternReactor {
    store: PatternOutcomes,
    config: PatternConfig,
    caps: PatternCaps,
}

/// A session's turns of one `(fingerprint, model)`: (fingerprint, id,
/// model, turns in order).
type Group<'a> = (Fingerprint, FingerprintId, String, Vec<(TurnId, &'a PendingTurn)>);

/// What a `(fingerprint, model)` row looks like while a session's writes
/// are being decided (before they are folded).
#[derive(Clone, Copy)]
struct Draft {
    sample_size: u64,
    last_updated: DateTime<Utc>,
}

impl PatternReactor {
    /// A reactor over `store` (a copy of the `pattern_outcomes` projection
    /// at the point the reactor starts from).
    pub fn new(mut store: PatternOutcomes, config: PatternConfig, caps: PatternCaps) -> Self {
        // The reactor's store is held in memory only (its snapshot is the
        // whole state): which rows changed is never written anywhere, and
        // a set of every key ever touched grew with every turn.
        store.stop_tracking();
        PatternReactor { store, config, caps }
    }

    /// The state the reactor decides from.
    pub fn store(&self) -> &PatternOutcomes {
        &self.store
    }

    /// `pattern.evicted` (`manual_clear`) removing every row, caused by
    /// `cause` (the user's request); `None` when the store is empty.
    pub fn clear(&self, cause: &Envelope) -> Option<Envelope> {
        let evicted: Vec<EvictedOutcome> = self
            .store
            .outcomes()
            .map(|(fp, m, _)| EvictedOutcome { fingerprint_id: fp, primary_model: m.to_owned() })
            .collect();
        if evicted.is_empty() {
            return None;
        }
        let event = PatternEvicted {
            trigger: EvictionTrigger::ManualClear,
            fingerprints_before: self.store.fingerprint_count(),
            fingerprints_after: 0,
            outcomes_before: self.store.outcome_count(),
            outcomes_after: 0,
            entries_evicted: evicted.len() as u64,
            oldest_evicted_age_days: None,
            evicted,
        };
        Some(derived(cause, ActorKind::PatternStore, event, 0))
    }

    fn folded(&self, score: f64, confidence: f64) -> Option<f64> {
        (confidence >= self.config.min_eval_confidence).then_some(score)
    }

    fn on_session_ended(&self, env: &Envelope, session: &SessionId) -> Vec<Envelope> {
        if self.store.has_ended(session) {
            return Vec::new(); // recorded already
        }
        let turns: Vec<(TurnId, &PendingTurn)> =
            self.store.pending_of(session).into_iter().filter(|(_, p)| p.completed && p.model.is_some()).collect();
        self.record(env, turns)
    }

    /// A long session's part (the projection's pending rule 3): its older
    /// completed model turns recorded as its end would record them, from
    /// the `turn.completed` that made the part due.
    fn on_part(&self, env: &Envelope, session: &SessionId, part: &[TurnId]) -> Vec<Envelope> {
        let turns: Vec<(TurnId, &PendingTurn)> =
            self.store.pending_of(session).into_iter().filter(|(t, p)| p.model.is_some() && part.contains(t)).collect();
        self.record(env, turns)
    }

    /// One `pattern.recorded` contribution per `(fingerprint, model)` of
    /// `turns` (a session's, or a part's), score-only records for the
    /// group's further turns, then the caps' evictions.
    fn record(&self, env: &Envelope, turns: Vec<(TurnId, &PendingTurn)>) -> Vec<Envelope> {
        if turns.is_empty() {
            return Vec::new();
        }
        // Group by (fingerprint, model), in the order groups first appear.
        let mut groups: Vec<Group> = Vec::new();
        let mut founded: Vec<(FingerprintId, Fingerprint)> = Vec::new();
        for (turn, p) in turns {
            let embedding = p.embedding.as_ref().map(|e| Embedding::new(&e.provider, e.vector.clone()));
            let fp =
                Fingerprint::structural(p.features.clone()).with_workload(p.workload.clone()).with_embedding(embedding);
            let id = self.join(&fp, &founded);
            if fp.embedding.is_some() && id == fp.id() && !founded.iter().any(|(f, _)| *f == id) {
                founded.push((id, fp.clone()));
            }
            // A turn that joined a fingerprint is recorded as its shape: the
            // first turn's vector and features stay the neighbourhood's.
            let fp = match founded.iter().find(|(f, _)| *f == id) {
                Some((_, founder)) => founder.clone(),
                None => fp,
            };
            let model = p.model.clone().unwrap_or_default();
            match groups.iter_mut().find(|g| g.1 == id && g.2 == model) {
                Some(g) => g.3.push((turn, p)),
                None => groups.push((fp, id, model, vec![(turn, p)])),
            }
        }
        let outcomes_before = self.store.outcome_count();
        let mut outcomes = outcomes_before;
        let mut drafts: HashMap<(FingerprintId, String), Draft> = HashMap::new();
        let mut new_fps: HashSet<FingerprintId> = HashSet::new();
        let mut out = Vec::new();
        let mut ordinal = 0;
        for (fp, id, model, turns) in groups {
            let existing = self.store.outcome(id, &model);
            let before = existing.map_or(0, |o| o.sample_size);
            if existing.is_none() {
                outcomes += 1;
            }
            let was_new = self.store.fingerprint(id).is_none() && new_fps.insert(id);
            drafts.insert((id, model.clone()), Draft { sample_size: before + 1, last_updated: env.at });
            let over_soft_cap = outcomes >= self.caps.soft_cap_rows;
            let cost = turns.iter().fold(Decimal::ZERO, |sum, (_, p)| sum.saturating_add(p.cost_usd));
            let latency = turns.iter().map(|(_, p)| p.latency_ms as f64).sum::<f64>() / turns.len() as f64;
            let pricing = turns.last().map(|(_, p)| p.pricing_version.clone()).unwrap_or_default();
            for (i, (turn, p)) in turns.iter().enumerate() {
                let first = i == 0;
                let verdict = p.verdict.as_ref();
                // A judge's newer price table wins, whenever it answered.
                let pricing = match verdict.and_then(|v| v.judge_pricing_version.as_ref()) {
                    Some(j) if *j > pricing => j.clone(),
                    _ => pricing.clone(),
                };
                let event = PatternRecorded {
                    fingerprint_id: id,
                    fingerprint_kind: fp.kind(),
                    primary_model: model.clone(),
                    sample_size_before: if first { before } else { before + 1 },
                    sample_size_after: before + 1,
                    was_new_fingerprint: first && was_new,
                    success_score: verdict.and_then(|v| self.folded(v.score, v.confidence)),
                    cost_usd: if first { cost } else { Decimal::ZERO },
                    pricing_version: pricing,
                    over_soft_cap,
                    turn: Some(*turn),
                    latency_ms: if first { latency } else { 0.0 },
                    eval_id: verdict.map(|v| v.eval_id),
                    score_confidence: verdict.map(|v| v.confidence),
                    replaces_score: None,
                    features: (first && was_new).then(|| fp.features.clone()),
                    workload: fp.workload.clone(),
                    // The vector travels with the new fingerprint, so a
                    // rebuild of the store never runs the model.
                    embedding: (first && was_new)
                        .then(|| {
                            fp.embedding
                                .as_ref()
                                .map(|e| QueryEmbedding { provider: e.provider.to_string(), vector: e.vector.to_vec() })
                        })
                        .flatten(),
                };
                let mut e = derived(env, ActorKind::PatternStore, event, ordinal);
                e.turn = Some(*turn);
                out.push(e);
                ordinal += 1;
            }
        }
        out.extend(self.caps_events(env, outcomes_before, outcomes, &drafts, &new_fps));
        out
    }

    /// The fingerprint a turn of shape `fp` is recorded under (module
    /// docs, "Meaning"): a structural one's id; for a hybrid, the
    /// fingerprint of its family — stored, or `founded` earlier in the same
    /// session — whose request is nearest to this one by cosine, if that is
    /// at least `same_request` (ties: the oldest); otherwise a new one,
    /// founded by this request.
    fn join(&self, fp: &Fingerprint, founded: &[(FingerprintId, Fingerprint)]) -> FingerprintId {
        let Some(e) = &fp.embedding else { return fp.id() };
        let family = fp.family();
        let stored = self.store.family(family).iter().filter_map(|id| {
            let v = self.store.fingerprint(*id)?.embedding.as_ref()?;
            Some((*id, v.vector.as_slice()))
        });
        let fresh = founded
            .iter()
            .filter(|(_, f)| f.family() == family)
            .filter_map(|(id, f)| Some((*id, &*f.embedding.as_ref()?.vector)));
        let mut best: Option<(FingerprintId, f64)> = None;
        for (id, v) in stored.chain(fresh) {
            let Some(c) = crate::patterns::similarity::cosine(&e.vector, v) else { continue };
            if c >= self.config.same_request && best.is_none_or(|(_, b)| c > b) {
                best = Some((id, c));
            }
        }
        best.map_or_else(|| fp.id(), |(id, _)| id)
    }

    /// The `pattern.evicted` events a session's writes call for.
    fn caps_events(
        &self,
        env: &Envelope,
        outcomes_before: u64,
        outcomes: u64,
        drafts: &HashMap<(FingerprintId, String), Draft>,
        new_fps: &HashSet<FingerprintId>,
    ) -> Vec<Envelope> {
        let caps = self.caps;
        if outcomes < caps.soft_cap_rows {
            return Vec::new();
        }
        let fingerprints = self.store.fingerprint_count() + new_fps.len() as u64;
        let max_age = chrono::Duration::days(i64::from(caps.max_age_days));
        let age_days = |t: DateTime<Utc>| (env.at - t).num_milliseconds() as f64 / 86_400_000.0;
        // Rows as they will be once this session's writes are folded, in
        // eviction order (least recently updated — so idle past the age cap
        // first — then smallest sample, then ids), produced lazily: the
        // stored rows this session leaves alone, kept in that order by the
        // projection, merged with the rows it drafts. No scan of the store.
        let mut drafted: Vec<AgeKey> =
            drafts.iter().map(|((fp, m), d)| (d.last_updated, d.sample_size, *fp, m.clone())).collect();
        drafted.sort();
        let mut stored =
            self.store.by_age().filter(|(_, _, fp, m)| !drafts.contains_key(&(*fp, m.clone()))).cloned().peekable();
        let mut drafted = drafted.into_iter().peekable();
        let mut merged = std::iter::from_fn(move || match (stored.peek(), drafted.peek()) {
            (Some(a), Some(b)) if b < a => drafted.next(),
            (Some(_), _) => stored.next(),
            (None, _) => drafted.next(),
        })
        .map(|(lu, n, fp, m)| (fp, m, Draft { sample_size: n, last_updated: lu }));
        let mut out = Vec::new();
        let (trigger, condemned): (_, Vec<(FingerprintId, String, Draft)>) = if outcomes > caps.hard_cap_rows {
            (EvictionTrigger::HardCapEvict, merged.by_ref().take((outcomes - caps.hard_cap_rows) as usize).collect())
        } else {
            if outcomes_before < caps.soft_cap_rows {
                let signal = PatternEvicted {
                    trigger: EvictionTrigger::SoftCapSignal,
                    fingerprints_before: fingerprints,
                    fingerprints_after: fingerprints,
                    outcomes_before: outcomes,
                    outcomes_after: outcomes,
                    entries_evicted: 0,
                    oldest_evicted_age_days: None,
                    evicted: Vec::new(),
                };
                out.push(derived(env, ActorKind::PatternStore, signal, 0));
            }
            (EvictionTrigger::AgeTrim, merged.by_ref().take_while(|r| env.at - r.2.last_updated > max_age).collect())
        };
        if condemned.is_empty() {
            return out;
        }
        // Fingerprints that lose every row.
        let mut lost: BTreeMap<FingerprintId, u64> = BTreeMap::new();
        for (fp, _, _) in &condemned {
            *lost.entry(*fp).or_default() += 1;
        }
        let gone = lost
            .iter()
            .filter(|(fp, n)| {
                let stored = self.store.models_of(**fp).count() as u64;
                let fresh = drafts.keys().filter(|(f, m)| f == *fp && self.store.outcome(*f, m).is_none()).count();
                stored + fresh as u64 == **n
            })
            .count() as u64;
        let oldest = condemned
            .iter()
            .map(|r| age_days(r.2.last_updated))
            .fold(None, |m: Option<f64>, a| Some(m.map_or(a, |m| m.max(a))));
        let event = PatternEvicted {
            trigger,
            fingerprints_before: fingerprints,
            fingerprints_after: fingerprints - gone,
            outcomes_before: outcomes,
            outcomes_after: outcomes - condemned.len() as u64,
            entries_evicted: condemned.len() as u64,
            oldest_evicted_age_days: oldest,
            evicted: condemned
                .into_iter()
                .map(|(fp, m, _)| EvictedOutcome { fingerprint_id: fp, primary_model: m })
                .collect(),
        };
        out.push(derived(env, ActorKind::PatternStore, event, 1));
        out
    }

    fn on_eval(&self, env: &Envelope, e: &EvalCompleted) -> Vec<Envelope> {
        let turn = e.subject_turn;
        if self.store.pending_turn(turn).is_some() {
            // The session is open: the projection keeps the latest verdict
            // and the session's end records it.
            return Vec::new();
        }
        let Some(h) = self.store.score_of(turn) else {
            tracing::warn!(turn = %turn, eval_id = %e.eval_id, "pattern store: verdict for a turn it never recorded; ignored");
            return Vec::new();
        };
        if h.eval_id >= Some(e.eval_id) {
            return Vec::new(); // applied already, or older than the one applied
        }
        let Some(row) = self.store.outcome(h.fingerprint, &h.model) else { return Vec::new() };
        let fp = self.store.fingerprint(h.fingerprint);
        let pricing = match &e.judge_pricing_version {
            Some(v) if *v > row.pricing_version_last => v.clone(),
            _ => row.pricing_version_last.clone(),
        };
        let event = PatternRecorded {
            fingerprint_id: h.fingerprint,
            fingerprint_kind: fp.map_or(FingerprintKind::Structural, |f| f.kind),
            primary_model: h.model.clone(),
            sample_size_before: row.sample_size,
            sample_size_after: row.sample_size,
            was_new_fingerprint: false,
            success_score: self.folded(e.score, e.confidence),
            cost_usd: Decimal::ZERO,
            pricing_version: pricing,
            over_soft_cap: self.store.outcome_count() >= self.caps.soft_cap_rows,
            turn: Some(turn),
            latency_ms: 0.0,
            eval_id: Some(e.eval_id),
            score_confidence: Some(e.confidence),
            replaces_score: h.folded,
            features: None,
            workload: fp.and_then(|f| f.workload.clone()),
            embedding: None,
        };
        let mut out = derived(env, ActorKind::PatternStore, event, 0);
        out.turn = Some(turn);
        vec![out]
    }
}

impl Reactor for PatternReactor {
    fn name(&self) -> &'static str {
        "patterns"
    }

    fn observe(&mut self, env: &Envelope) {
        self.store.apply(env);
    }

    fn sizes(&self) -> Vec<(&'static str, usize)> {
        self.store.sizes()
    }

    fn react(&mut self, env: &Envelope) -> Vec<Envelope> {
        let out = match (&env.event, &env.session) {
            (Event::TurnCompleted(t), Some(session)) => {
                // Folded in the projection's steps, with the part (if one
                // is due) recorded between them: the projection's own fold
                // of this event drops the same rows.
                self.store.complete_turn(env, t);
                let part = self.store.part_due(session);
                let out = self.on_part(env, session, &part);
                self.store.drop_pending(session, &part);
                return out;
            }
            (Event::SessionEnded(_), Some(session)) => self.on_session_ended(env, session),
            (Event::EvalCompleted(e), _) => self.on_eval(env, e),
            _ => Vec::new(),
        };
        self.store.apply(env);
        out
    }
}

/// The pattern store's state is its projection; configuration and caps are
/// the runtime's (they shape what it derives, not what it folds).
impl Snapshot for PatternReactor {
    fn save(&self, w: &mut SnapshotWriter) {
        self.store.save(w);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.store.restore(r)
    }
}
