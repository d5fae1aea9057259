//! `pattern_outcomes`: the pattern store's state (seed 001 §4-§10), folded
//! from the log.
//!
//! | table | key | row |
//! |-------|-----|-----|
//! | `f` fingerprints | fingerprint id | features, workload, kind, first `seq` |
//! | `o` outcomes | fingerprint id ‖ model | [`OutcomeRow`] accumulator |
//! | `h` score history | turn id | the outcome the turn fed, the `eval_id` applied, the score folded |
//! | `p` pending turns | session ‖ 0 ‖ turn id | a turn of a session still open: its features, model, cost, latency and latest verdict |
//! | `e` ended sessions | session | when it ended |
//!
//! The projection only folds: `pattern.recorded` writes an accumulator,
//! `pattern.evicted` removes exactly the rows it lists, and the pending
//! table follows `route.decided` / `tool.called` / `turn.completed` / `eval.completed`
//! until `session.ended`, or until a long session records its older turns
//! as a part (rule 3 of `pending.rs`, [`PART_TURNS`]). A session ends once: its turns and its end seen
//! again (a re-import, a re-delivery) change nothing. What to record, which verdict wins and what to
//! evict is decided by [`crate::reactors::PatternReactor`], which writes
//! those events. An in-memory [`KnnIndex`] over the fingerprint and
//! outcome tables serves [`PatternOutcomes::find_k_nearest`] and
//! [`PatternOutcomes::recommend`]; it is derived state, rebuilt on load and
//! not part of the digest.

mod pending;

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use chrono::{DateTime, Utc};
use engram_events::payloads::{
    FingerprintKind, PatternEvicted, PatternRecorded, PatternReembedded, QueryEmbedding, StructuralFeatures,
};
use engram_events::{Envelope, EvalId, Event, EventKind, FingerprintId, SessionId, TurnId};
use serde::{Deserialize, Serialize};
use ulid::Ulid;

use crate::patterns::recommend::score_cluster;
use crate::patterns::{Embedding, Fingerprint, KnnIndex, Neighbor, OutcomeRow, PatternConfig, Recommendation, Stage};
use engram_local_state::projector::{Projection, Table, TableRows};

pub use pending::{PendingTurn, PendingVerdict, PART_KEEPS, PART_TURNS};

/// A stored fingerprint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FingerprintRow {
    /// Structural or hybrid.
    pub kind: FingerprintKind,
    /// Normalized features.
    pub features: StructuralFeatures,
    /// Workload tag.
    pub workload: Option<String>,
    /// `seq` of the event that first recorded it (the K-NN tie-break).
    pub first_seq: u64,
    /// When it was first recorded.
    pub created: DateTime<Utc>,
    /// A hybrid fingerprint's embedding (its first turn's request).
    #[serde(default)]
    pub embedding: Option<QueryEmbedding>,
}

impl FingerprintRow {
    /// As a fingerprint to compare with.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            features: self.features.clone(),
            workload: self.workload.clone(),
            embedding: self.embedding.as_ref().map(|e| Embedding::new(&e.provider, e.vector.clone())),
            stage: Stage::Recorded,
        }
    }
}

/// Which outcome a recorded turn fed, and the verdict applied to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreRow {
    /// The outcome's fingerprint.
    pub fingerprint: FingerprintId,
    /// The outcome's model.
    pub model: String,
    /// The latest verdict applied (the idempotence key).
    pub eval_id: Option<EvalId>,
    /// The score folded into the outcome's mean for this turn, if any
    /// (a verdict below `min_eval_confidence` is applied but not folded).
    pub folded: Option<f64>,
}

/// The `pattern_outcomes` projection.
#[derive(Clone)]
pub struct PatternOutcomes {
    fingerprints: Table<FingerprintRow>,
    outcomes: Table<OutcomeRow>,
    history: Table<ScoreRow>,
    pending: Table<PendingTurn>,
    ended: Table<DateTime<Utc>>,
    /// Derived: pending turn → its key.
    pending_keys: HashMap<TurnId, Vec<u8>>,
    /// Derived: outcome key → turns in the history that fed it.
    turns_of: HashMap<Vec<u8>, Vec<TurnId>>,
    index: KnnIndex,
    /// Derived: each hybrid family's fingerprints, oldest first (the
    /// neighbourhoods of meaning a turn of that family may join).
    families: HashMap<FingerprintId, Vec<FingerprintId>>,
    /// Derived: every outcome row by (last update, sample size, key) — the
    /// eviction order (idle past the age cap first, then least recently
    /// updated, then thinnest evidence), kept so cap checks never scan.
    by_age: BTreeSet<AgeKey>,
    /// A copy that only recommends keeps no pending turns
    /// ([`PatternOutcomes::keep_outcomes_only`]).
    outcomes_only: bool,
}

/// An outcome row's place in the eviction order.
pub type AgeKey = (DateTime<Utc>, u64, FingerprintId, String);

impl Default for PatternOutcomes {
    fn default() -> Self {
        PatternOutcomes {
            fingerprints: Table::new(b'f'),
            outcomes: Table::new(b'o'),
            history: Table::new(b'h'),
            pending: Table::new(b'p'),
            ended: Table::new(b'e'),
            pending_keys: HashMap::new(),
            turns_of: HashMap::new(),
            index: KnnIndex::default(),
            families: HashMap::new(),
            by_age: BTreeSet::new(),
            outcomes_only: false,
        }
    }
}

fn fp_key(id: FingerprintId) -> [u8; 16] {
    id.0 .0.to_be_bytes()
}

fn outcome_key(id: FingerprintId, model: &str) -> Vec<u8> {
    let mut k = fp_key(id).to_vec();
    k.extend_from_slice(model.as_bytes());
    k
}

fn split_outcome_key(key: &[u8]) -> Option<(FingerprintId, &str)> {
    let id: [u8; 16] = key.get(..16)?.try_into().ok()?;
    Some((FingerprintId(Ulid(u128::from_be_bytes(id))), std::str::from_utf8(&key[16..]).ok()?))
}

fn turn_key(turn: TurnId) -> [u8; 16] {
    turn.0 .0.to_be_bytes()
}

impl PatternOutcomes {
    /// The K outcome rows nearest to `fp` (seed 001 §8.2): similarity
    /// descending, then the fingerprint's first-recorded `seq`, then model.
    pub fn find_k_nearest(&self, fp: &Fingerprint, k: usize, alpha: f64) -> Vec<Neighbor> {
        self.index.search(fp, k, alpha)
    }

    /// The recommendation for a turn shaped like `fp` (seed 001 §8).
    pub fn recommend(&self, fp: &Fingerprint, cfg: &PatternConfig) -> Recommendation {
        self.recommend_among(fp, cfg, |_| true)
    }

    /// [`PatternOutcomes::recommend`] among the models `allowed` accepts
    /// (the candidates a live router can route to): the others' rows leave
    /// the cluster before scoring, so the choice, its confidence and the
    /// alternatives are all about models that can be asked.
    pub fn recommend_among(
        &self,
        fp: &Fingerprint,
        cfg: &PatternConfig,
        allowed: impl Fn(&str) -> bool,
    ) -> Recommendation {
        let start = Instant::now();
        let floor = if fp.embedding.is_some() { cfg.min_hybrid_similarity } else { f64::NEG_INFINITY };
        // The K nearest rows among those that may count, not the K nearest
        // filtered: a neighbourhood's evidence does not shrink because
        // requests of another kind lie close by.
        let cluster = self.index.search_where(fp, cfg.k, cfg.alpha, |id, model, similarity| {
            similarity >= floor && allowed(model) && self.same_kind(fp, id, cfg.same_kind)
        });
        let rows: Vec<(&str, &OutcomeRow)> =
            cluster.iter().filter_map(|n| Some((&*n.model, self.outcome(n.fingerprint, &n.model)?))).collect();
        let mut r = score_cluster(rows, cfg);
        r.elapsed_ms = start.elapsed().as_secs_f64() * 1e3;
        r
    }

    /// Whether the stored fingerprint `id` is in the neighbourhood of
    /// meaning of the query `fp`: the two share an intent tag or a file
    /// extension (the structure itself says what kind of request both are),
    /// or else their requests' cosine is at least `same_kind` — two empty
    /// tag sets match in the structural score, but they say nothing about
    /// the kind, and most requests have none. A side without a comparable
    /// vector (a structural fingerprint, another model's) is compared on
    /// structure alone, as the similarity is.
    fn same_kind(&self, fp: &Fingerprint, id: FingerprintId, same_kind: f64) -> bool {
        let Some(q) = &fp.embedding else { return true };
        let Some(row) = self.fingerprint(id) else { return true };
        let Some(e) = row.embedding.as_ref() else { return true };
        if *e.provider != *q.provider || e.vector.len() != q.vector.len() {
            return true;
        }
        let shared = |a: &[String], b: &[String]| a.iter().any(|x| b.contains(x));
        if shared(&fp.features.intent_tags, &row.features.intent_tags)
            || shared(&fp.features.file_extensions, &row.features.file_extensions)
        {
            return true;
        }
        crate::patterns::similarity::cosine(&q.vector, &e.vector).is_some_and(|c| c >= same_kind)
    }

    /// The fingerprints of the hybrid `family` ([`Fingerprint::family`]),
    /// oldest first.
    pub fn family(&self, family: FingerprintId) -> &[FingerprintId] {
        self.families.get(&family).map_or(&[], Vec::as_slice)
    }

    /// The accumulator of `(fp, model)`.
    pub fn outcome(&self, fp: FingerprintId, model: &str) -> Option<&OutcomeRow> {
        self.outcomes.get(&outcome_key(fp, model))
    }

    /// Every accumulator, by fingerprint then model.
    pub fn outcomes(&self) -> impl Iterator<Item = (FingerprintId, &str, &OutcomeRow)> {
        self.outcomes.iter().filter_map(|(k, v)| split_outcome_key(k).map(|(id, m)| (id, m, v)))
    }

    /// The models with a row for fingerprint `fp`.
    pub fn models_of(&self, fp: FingerprintId) -> impl Iterator<Item = &str> {
        let prefix = fp_key(fp);
        self.outcomes.range_prefix(&prefix).filter_map(|(k, _)| std::str::from_utf8(&k[16..]).ok())
    }

    /// A stored fingerprint.
    pub fn fingerprint(&self, id: FingerprintId) -> Option<&FingerprintRow> {
        self.fingerprints.get(&fp_key(id))
    }

    /// Every stored fingerprint.
    pub fn fingerprints(&self) -> impl Iterator<Item = (FingerprintId, &FingerprintRow)> {
        self.fingerprints.iter().map(|(k, v)| {
            let id: [u8; 16] = k[..16].try_into().expect("16-byte keys");
            (FingerprintId(Ulid(u128::from_be_bytes(id))), v)
        })
    }

    /// Number of fingerprints.
    pub fn fingerprint_count(&self) -> u64 {
        self.fingerprints.len() as u64
    }

    /// Number of outcome rows (what the caps count).
    pub fn outcome_count(&self) -> u64 {
        self.outcomes.len() as u64
    }

    /// Every outcome row in eviction order: least recently updated first
    /// (so rows idle past the age cap come first), then smallest sample.
    pub fn by_age(&self) -> impl Iterator<Item = &AgeKey> {
        self.by_age.iter()
    }

    /// What a recorded turn fed, and the verdict applied.
    pub fn score_of(&self, turn: TurnId) -> Option<&ScoreRow> {
        self.history.get(&turn_key(turn))
    }

    /// Entries per table and derived map, by name (`fingerprints`,
    /// `outcomes`, `history`, …; `dirty`: changed keys not yet taken), and
    /// the bytes each table holds ([`PatternOutcomes::heap_bytes`]): what a
    /// soak watches.
    pub fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out = self.heap_bytes();
        out.extend([
            ("fingerprints", self.fingerprints.len()),
            ("outcomes", self.outcomes.len()),
            ("history", self.history.len()),
            ("pending", self.pending.len()),
            ("ended", self.ended.len()),
            ("pending_keys", self.pending_keys.len()),
            ("turns_of", self.turns_of.values().map(Vec::len).sum()),
            ("families", self.families.len()),
            ("by_age", self.by_age.len()),
            (
                "dirty",
                self.fingerprints.dirty_len()
                    + self.outcomes.dirty_len()
                    + self.history.dirty_len()
                    + self.pending.dirty_len()
                    + self.ended.dirty_len(),
            ),
        ]);
        out
    }

    /// Heap bytes held, by table (`fingerprints.bytes`, `outcomes.bytes`,
    /// `history.bytes`, `ended.bytes`, `pending.bytes`, `index.bytes`: the
    /// K-NN index), counted from the entries ([`engram_local_state::heap_bytes`]); the derived
    /// maps are counted with the table they follow (`turns_of` with the
    /// history, `by_age` with the outcomes, `families` with the
    /// fingerprints, `pending_keys` with the pending turns). What a soak
    /// sets beside RSS.
    pub fn heap_bytes(&self) -> Vec<(&'static str, usize)> {
        use engram_local_state::heap_bytes::{alloc, btree_entry, features, hash_map, string, table, vec};
        let embedding = |e: &Option<QueryEmbedding>| {
            e.as_ref().map_or(0, |e| string(&e.provider) + alloc(e.vector.len() * size_of::<f32>()))
        };
        let fingerprints = table(&self.fingerprints, |r| {
            features(&r.features) + r.workload.as_deref().map_or(0, string) + embedding(&r.embedding)
        }) + hash_map(&self.families)
            + self.families.values().map(vec).sum::<usize>();
        let outcomes = table(&self.outcomes, |r| string(&r.pricing_version_last))
            + self.by_age.iter().map(|k| btree_entry::<AgeKey, ()>() + string(&k.3)).sum::<usize>();
        let history = table(&self.history, |r| string(&r.model))
            + hash_map(&self.turns_of)
            + self.turns_of.iter().map(|(k, v)| vec(k) + vec(v)).sum::<usize>();
        let pending = table(&self.pending, |p| {
            features(&p.features)
                + p.workload.as_deref().map_or(0, string)
                + p.model.as_deref().map_or(0, string)
                + string(&p.pricing_version)
                + embedding(&p.embedding)
        }) + hash_map(&self.pending_keys)
            + self.pending_keys.values().map(vec).sum::<usize>();
        vec![
            ("fingerprints.bytes", fingerprints),
            ("outcomes.bytes", outcomes),
            ("history.bytes", history),
            ("pending.bytes", pending),
            ("ended.bytes", table(&self.ended, |_| 0)),
            ("index.bytes", self.index.heap_bytes()),
        ]
    }

    /// Whether `session` has ended (its outcomes are recorded).
    pub fn has_ended(&self, session: &SessionId) -> bool {
        self.ended.get(session.as_str().as_bytes()).is_some()
    }

    fn fold_recorded(&mut self, env: &Envelope, p: &PatternRecorded) {
        let fkey = fp_key(p.fingerprint_id);
        if self.fingerprints.get(&fkey).is_none() {
            let row = FingerprintRow {
                kind: p.fingerprint_kind,
                features: p.features.clone().unwrap_or_default().normalized(),
                workload: p.workload.clone(),
                first_seq: env.seq.get(),
                created: env.at,
                embedding: p.embedding.clone(),
            };
            if row.embedding.is_some() {
                self.families.entry(row.fingerprint().family()).or_default().push(p.fingerprint_id);
            }
            self.fingerprints.insert(fkey.to_vec(), row);
        }
        let okey = outcome_key(p.fingerprint_id, &p.primary_model);
        if self.outcomes.get(&okey).is_none() {
            let fp = self.fingerprints.get(&fkey).expect("inserted above").fingerprint();
            self.index.insert(p.fingerprint_id, &fp, &p.primary_model);
        }
        if let Some(old) = self.outcomes.get(&okey) {
            self.by_age.remove(&(old.last_updated, old.sample_size, p.fingerprint_id, p.primary_model.clone()));
        }
        let row = self.outcomes.entry(&okey, || OutcomeRow::new(env.at));
        if p.sample_size_after > p.sample_size_before {
            row.contribute(p.cost_usd, p.latency_ms, &p.pricing_version, env.at);
        } else {
            row.touch(&p.pricing_version, env.at);
        }
        if let Some(old) = p.replaces_score {
            row.remove_score(old);
        }
        if let Some(score) = p.success_score {
            row.add_score(score);
        }
        self.by_age.insert((row.last_updated, row.sample_size, p.fingerprint_id, p.primary_model.clone()));
        if let Some(turn) = p.turn {
            let tkey = turn_key(turn);
            let eval_id = p.eval_id.or_else(|| self.history.get(&tkey).and_then(|h| h.eval_id));
            if self.history.get(&tkey).is_none() {
                self.turns_of.entry(okey).or_default().push(turn);
            }
            self.history.insert(
                tkey.to_vec(),
                ScoreRow {
                    fingerprint: p.fingerprint_id,
                    model: p.primary_model.clone(),
                    eval_id,
                    folded: p.success_score,
                },
            );
        }
    }

    /// A fingerprint's request embedded again by another model: its vector
    /// becomes that one (id, outcomes and first-recorded order unchanged).
    fn fold_reembedded(&mut self, r: &PatternReembedded) {
        let fkey = fp_key(r.fingerprint_id);
        let Some(mut row) = self.fingerprints.get(&fkey).cloned() else { return };
        // Another model: the fingerprint moves to that model's family.
        let old_family = row.fingerprint().family();
        row.embedding = Some(r.embedding.clone());
        let family = row.fingerprint().family();
        if family != old_family {
            if let Some(members) = self.families.get_mut(&old_family) {
                members.retain(|m| *m != r.fingerprint_id);
                if members.is_empty() {
                    self.families.remove(&old_family);
                }
            }
            self.families.entry(family).or_default().push(r.fingerprint_id);
        }
        self.fingerprints.insert(fkey.to_vec(), row);
        self.index.set_embedding(r.fingerprint_id, Embedding::new(&r.embedding.provider, r.embedding.vector.clone()));
    }

    fn fold_evicted(&mut self, e: &PatternEvicted) {
        for o in &e.evicted {
            let okey = outcome_key(o.fingerprint_id, &o.primary_model);
            let Some(old) = self.outcomes.remove(&okey) else { continue };
            self.by_age.remove(&(old.last_updated, old.sample_size, o.fingerprint_id, o.primary_model.clone()));
            self.index.remove(o.fingerprint_id, &o.primary_model);
            for turn in self.turns_of.remove(&okey).unwrap_or_default() {
                self.history.remove(&turn_key(turn));
            }
            let fkey = fp_key(o.fingerprint_id);
            if self.outcomes.range_prefix(&fkey).next().is_none() {
                if let Some(row) = self.fingerprints.remove(&fkey) {
                    if row.embedding.is_some() {
                        let family = row.fingerprint().family();
                        if let Some(members) = self.families.get_mut(&family) {
                            members.retain(|m| *m != o.fingerprint_id);
                            if members.is_empty() {
                                self.families.remove(&family);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Rebuilds the derived in-memory state from the tables.
    fn rebuild_derived(&mut self) {
        self.index.clear();
        self.by_age = self.outcomes().map(|(fp, m, o)| (o.last_updated, o.sample_size, fp, m.to_owned())).collect();
        self.pending_keys.clear();
        self.turns_of.clear();
        let mut fps: Vec<(FingerprintId, &FingerprintRow)> = self.fingerprints().collect();
        fps.sort_by_key(|(id, row)| (row.first_seq, *id));
        let mut index = KnnIndex::default();
        let mut families: HashMap<FingerprintId, Vec<FingerprintId>> = HashMap::new();
        for (id, row) in fps {
            let fp = row.fingerprint();
            if fp.embedding.is_some() {
                families.entry(fp.family()).or_default().push(id);
            }
            for m in self.models_of(id) {
                index.insert(id, &fp, m);
            }
        }
        self.index = index;
        self.families = families;
        for (k, _) in self.pending.iter() {
            if k.len() >= 17 {
                let id: [u8; 16] = k[k.len() - 16..].try_into().expect("16 bytes");
                self.pending_keys.insert(TurnId(Ulid(u128::from_be_bytes(id))), k.clone());
            }
        }
        for (k, h) in self.history.iter() {
            let id: [u8; 16] = k[..16].try_into().expect("16-byte keys");
            self.turns_of
                .entry(outcome_key(h.fingerprint, &h.model))
                .or_default()
                .push(TurnId(Ulid(u128::from_be_bytes(id))));
        }
    }
}

impl Projection for PatternOutcomes {
    fn name(&self) -> &'static str {
        "pattern_outcomes"
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[
            EventKind::RouteDecided,
            EventKind::ToolCalled,
            EventKind::TurnCompleted,
            EventKind::EvalCompleted,
            EventKind::SessionEnded,
            EventKind::PatternRecorded,
            EventKind::PatternEvicted,
            EventKind::PatternReembedded,
        ])
    }

    fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::RouteDecided(r) => self.fold_route(env, r),
            Event::ToolCalled(c) => self.fold_tool(env, c),
            Event::TurnCompleted(t) => {
                self.complete_turn(env, t);
                if let Some(session) = &env.session {
                    let part = self.part_due(session);
                    self.drop_pending(session, &part);
                }
            }
            Event::EvalCompleted(e) => self.fold_verdict(e),
            Event::SessionEnded(_) => self.end_session(env),
            Event::PatternRecorded(p) => self.fold_recorded(env, p),
            Event::PatternEvicted(e) => self.fold_evicted(e),
            Event::PatternReembedded(r) => self.fold_reembedded(r),
            _ => {}
        }
    }

    fn tables(&self) -> Vec<&dyn TableRows> {
        vec![&self.fingerprints, &self.outcomes, &self.history, &self.pending, &self.ended]
    }

    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
        vec![&mut self.fingerprints, &mut self.outcomes, &mut self.history, &mut self.pending, &mut self.ended]
    }

    fn derive_from_rows(&mut self) {
        self.rebuild_derived();
    }
}
