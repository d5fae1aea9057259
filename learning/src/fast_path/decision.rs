//! The fast-path decision (seed 000): L0, then L1, then L2, then the
//! planner — strictly in that order, the first layer that answers wins.
//!
//! [`FastPath`] is built from the `canonical_queries` and `pipelines`
//! projections (candidates only: rows seen `min_uses` times) and the
//! vectors of their canonical texts; [`FastPath::route`] decides one
//! request. A cosine above the layer's threshold is necessary, not
//! sufficient: the match must also pass the replay [`super::gate`]
//! and every argument placeholder must resolve from the new request —
//! otherwise the request goes to the planner, with the reason.

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{PlanStep, RouteLayer, ToolArgs};
use serde::Serialize;

use super::{canonical, gate, placeholder, with_names_as_words, Extracted, L0Table, SlotKind};
use crate::fast_path::{FastPathConfig, MultiToolConfig};
use crate::projections::{CanonicalQueries, Pipelines};

/// Nearest-neighbour search over a layer's row vectors (unit length), kept
/// up to date row by row: a learnt row is one insert, a row that stops
/// being a candidate one removal — never a rebuild of the layer.
pub trait VectorSearch: Send + Sync {
    /// The `k` rows nearest to `query`: key and cosine, best first.
    fn search(&self, query: &[f32], k: usize) -> Vec<(u64, f32)>;
    /// Stores rows under their keys (a key already stored takes the new
    /// vector). Many at once is the way to load a layer.
    fn insert(&mut self, rows: Vec<(u64, Vec<f32>)>);
    /// Forgets the row of `key`.
    fn remove(&mut self, key: u64);
    /// Heap bytes the index holds (0 when it does not say): the fast
    /// path's share of what a soak sets beside RSS.
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// Embeds a batch of texts (one vector per text, unit length).
pub type BatchEmbed<'a, E> = &'a mut dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>, E>;

/// Makes an empty [`VectorSearch`] for one layer.
pub type IndexFactory<'a> = &'a dyn Fn() -> Box<dyn VectorSearch>;

/// How many neighbours each layer examines before giving up.
const CANDIDATES: usize = 5;

/// What the fast path decided for one request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// `L0`, `L1`, `L2` or `planner`.
    pub layer: RouteLayer,
    /// The steps to run (empty for the planner).
    pub steps: Vec<PlanStep>,
    /// Cosine of the match (L1/L2), or of the best refused candidate.
    pub similarity: Option<f64>,
    /// The canonical text (or L0 phrase) matched.
    pub matched: Option<String>,
    /// Why this layer answered, or why none did.
    pub reason: String,
    /// With `chain_to_planner`: the part of the request left for the planner
    /// after an L2 prefix replay.
    pub residual: Option<String>,
    /// The request's canonical form (empty when L0 answered).
    pub canonical: String,
    /// Every candidate examined and what became of it, in order (for
    /// `engram route --explain`).
    pub trace: Vec<String>,
    /// The embedding of the request's canonical form (its proper nouns as
    /// words), when L1/L2 computed it: the router reuses it for the turn's
    /// hybrid fingerprint, so a turn is embedded once.
    #[serde(skip)]
    pub query: Option<Vec<f32>>,
}

impl Decision {
    /// L0's answer for `text`, if the literal table has it.
    pub fn from_l0(l0: &L0Table, text: &str) -> Option<Self> {
        let (tool, phrase) = l0.lookup(text)?;
        Some(Decision {
            layer: RouteLayer::L0,
            steps: vec![PlanStep { tool: tool.to_owned(), args: ToolArgs::default() }],
            similarity: None,
            matched: Some(phrase),
            reason: "L0: literal phrase".into(),
            residual: None,
            canonical: String::new(),
            trace: Vec::new(),
            query: None,
        })
    }

    /// The planner answers, for `reason`.
    pub fn planner(reason: String, similarity: Option<f64>) -> Self {
        Decision {
            layer: RouteLayer::Planner,
            steps: Vec::new(),
            similarity,
            matched: None,
            reason,
            residual: None,
            canonical: String::new(),
            trace: Vec::new(),
            query: None,
        }
    }
}

/// An L1 row: the tool a canonical text ran, and its argument template.
#[derive(Clone, PartialEq)]
struct L1Row {
    executor: String,
    args: ToolArgs,
}

/// An L2 row: the pipelines recorded for a canonical text, tried in order.
type L2Row = Vec<Vec<PlanStep>>;

/// One layer's rows by canonical text, and their vectors in the index
/// under stable keys.
///
/// Invariant: `rows` and `text_of` hold the same keys, and the index holds
/// exactly those keys' vectors.
struct Layer<R> {
    rows: HashMap<String, (u64, R)>,
    text_of: HashMap<u64, String>,
    index: Box<dyn VectorSearch>,
    next_key: u64,
}

/// What a [`FastPath::update`] changed, layer by layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Rows new to a layer (each one embedding and one index insert).
    pub added: usize,
    /// Rows no longer candidates (index removals).
    pub removed: usize,
    /// Rows whose tool or steps changed (no index work).
    pub updated: usize,
}

impl std::ops::Add for Changes {
    type Output = Changes;
    fn add(self, o: Changes) -> Changes {
        Changes { added: self.added + o.added, removed: self.removed + o.removed, updated: self.updated + o.updated }
    }
}

impl<R: PartialEq> Layer<R> {
    fn new(make_index: IndexFactory<'_>) -> Self {
        Layer { rows: HashMap::new(), text_of: HashMap::new(), index: make_index(), next_key: 0 }
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Heap bytes: the rows by text (`row` counts a row's own heap), the
    /// key map, both copies of each text, and the vector index.
    fn heap_bytes(&self, row: impl Fn(&R) -> usize) -> usize {
        use crate::heap::{hash_map, string};
        hash_map(&self.rows)
            + hash_map(&self.text_of)
            + self.rows.iter().map(|(t, (_, r))| 2 * string(t) + row(r)).sum::<usize>()
            + self.index.heap_bytes()
    }

    /// Brings the layer to `want` (canonical text → row), every row not in
    /// it removed.
    fn sync<E>(&mut self, want: HashMap<String, R>, embed: BatchEmbed<'_, E>) -> Result<Changes, E> {
        let gone: Vec<(String, Option<R>)> =
            self.rows.keys().filter(|t| !want.contains_key(*t)).map(|t| (t.clone(), None)).collect();
        self.apply(want.into_iter().map(|(t, r)| (t, Some(r))).chain(gone).collect(), embed)
    }

    /// Sets the row of each text (`None`: no row): embeds only texts it did
    /// not hold, inserts them, removes the others' vectors, changes rows in
    /// place. On an embedding failure nothing changes.
    fn apply<E>(&mut self, changes: Vec<(String, Option<R>)>, embed: BatchEmbed<'_, E>) -> Result<Changes, E> {
        let mut new: Vec<&str> = changes
            .iter()
            .filter(|(t, r)| r.is_some() && !self.rows.contains_key(t))
            .map(|(t, _)| t.as_str())
            .collect();
        new.sort_unstable(); // keys in a deterministic order
        new.dedup();
        let mut vectors: HashMap<String, Vec<f32>> = HashMap::new();
        if !new.is_empty() {
            let v = embed(&new)?;
            vectors = new.into_iter().map(str::to_owned).zip(v).collect();
        }
        let mut done = Changes::default();
        let mut inserts = Vec::new();
        for (text, row) in changes {
            match (self.rows.get_mut(&text), row) {
                (Some((key, _)), None) => {
                    let key = *key;
                    self.rows.remove(&text);
                    self.text_of.remove(&key);
                    self.index.remove(key);
                    done.removed += 1;
                }
                (Some((_, held)), Some(row)) => {
                    if *held != row {
                        *held = row;
                        done.updated += 1;
                    }
                }
                (None, Some(row)) => {
                    let Some(v) = vectors.remove(&text) else { continue };
                    let key = self.next_key;
                    self.next_key += 1;
                    self.text_of.insert(key, text.clone());
                    self.rows.insert(text, (key, row));
                    inserts.push((key, v));
                    done.added += 1;
                }
                (None, None) => {}
            }
        }
        inserts.sort_unstable_by_key(|(k, _)| *k);
        if !inserts.is_empty() {
            self.index.insert(inserts);
        }
        Ok(done)
    }

    /// The rows to examine for `canon`: its exact row first (cosine 1),
    /// then (with a query vector) the vector search's nearest.
    fn candidates(&self, canon: &str, q: Option<&[f32]>) -> Vec<(&str, &R, f32)> {
        let exact = self.rows.get_key_value(canon);
        let mut out: Vec<(&str, &R, f32)> = exact.map(|(t, (_, r))| (t.as_str(), r, 1.0)).into_iter().collect();
        let Some(q) = q else { return out };
        for (key, cos) in self.index.search(q, CANDIDATES) {
            let Some(text) = self.text_of.get(&key) else { continue };
            if text != canon {
                out.push((text.as_str(), &self.rows[text].1, cos));
            }
        }
        out
    }
}

/// The router's fast-path tables, ready to answer.
pub struct FastPath {
    l0: L0Table,
    fast: FastPathConfig,
    multi: MultiToolConfig,
    l1: Layer<L1Row>,
    l2: Layer<L2Row>,
    /// The highest cosine of a replay the user rejected (the log's own
    /// outcomes; [`FastPath::raise_bar`]).
    rejected: Option<f64>,
}

/// How far above a rejected replay's cosine the bar goes.
pub const BAR_STEP: f64 = 0.01;
/// The highest the log may raise the bar: a repeat (cosine 1) is still
/// replayed.
pub const BAR_CAP: f64 = 0.97;

impl FastPath {
    /// Builds the tables: L0 from the built-ins plus `fast.l0_extra`; L1 and
    /// L2 from the projections' candidates, their canonical texts embedded
    /// by `embed` (batch) and indexed by `make_index`.
    pub fn build<E>(
        fast: &FastPathConfig,
        multi: &MultiToolConfig,
        canonical: &CanonicalQueries,
        pipelines: &Pipelines,
        embed: BatchEmbed<'_, E>,
        make_index: IndexFactory<'_>,
    ) -> Result<FastPath, E> {
        let mut fp = FastPath {
            l0: L0Table::from_config(fast),
            fast: fast.clone(),
            multi: multi.clone(),
            l1: Layer::new(make_index),
            l2: Layer::new(make_index),
            rejected: None,
        };
        fp.update(canonical, pipelines, embed)?;
        Ok(fp)
    }

    /// Brings L1 and L2 in line with the projections, every row compared:
    /// embeds and inserts only rows new to a layer, removes rows that
    /// stopped being candidates, changes a row's tool or steps in place.
    /// After one learnt event, [`FastPath::update_texts`] does the same for
    /// the texts it touched only.
    pub fn update<E>(
        &mut self,
        canonical: &CanonicalQueries,
        pipelines: &Pipelines,
        embed: BatchEmbed<'_, E>,
    ) -> Result<Changes, E> {
        let a = self.l1.sync(l1_rows(&self.fast, canonical), embed)?;
        let b = self.l2.sync(l2_rows(&self.multi, pipelines.iter()), embed)?;
        Ok(a + b)
    }

    /// [`FastPath::update`] for the canonical texts a learnt event touched
    /// (`canonical.recorded`, `pipeline.*` name one each): their rows are
    /// looked up in the projections, embedded if new, inserted, changed or
    /// removed — the rest of the tables and indexes untouched. Learning one
    /// row at 50k rows is one embedding and one index insert
    /// (`engram bench fast-path`), where a rebuild re-indexed every row.
    pub fn update_texts<E>(
        &mut self,
        canonical: &CanonicalQueries,
        pipelines: &Pipelines,
        texts: &[String],
        embed: BatchEmbed<'_, E>,
    ) -> Result<Changes, E> {
        let l1: Vec<(String, Option<L1Row>)> =
            texts.iter().map(|t| (t.clone(), l1_row(&self.fast, canonical.for_text(t)))).collect();
        let a = self.l1.apply(l1, embed)?;
        let l2: Vec<(String, Option<L2Row>)> = texts
            .iter()
            .map(|t| {
                let mut rows = l2_rows(&self.multi, pipelines.iter().filter(|p| p.canonical == *t));
                (t.clone(), rows.remove(t))
            })
            .collect();
        let b = self.l2.apply(l2, embed)?;
        Ok(a + b)
    }

    /// Adjusts the layers' bars from the log's own outcomes: `rejected` is
    /// the highest cosine of a paraphrase replay (not an exact repeat) the
    /// user rejected. The bar of each layer becomes the higher of its
    /// calibration and that cosine plus [`BAR_STEP`], at most [`BAR_CAP`] —
    /// what this user's requests showed unsafe is not served again at that
    /// cosine, by any row. The calibration stays the floor: an accepted
    /// replay never lowers it.
    pub fn raise_bar(&mut self, rejected: Option<f64>) {
        self.rejected = rejected;
    }

    /// A layer's bar: its calibration, raised by the log (see
    /// [`FastPath::raise_bar`]).
    fn bar(&self, calibrated: f64) -> f64 {
        match self.rejected {
            Some(c) => calibrated.max((c + BAR_STEP).min(BAR_CAP)),
            None => calibrated,
        }
    }

    /// L1 rows and L2 pipelines held.
    pub fn sizes(&self) -> (usize, usize) {
        (self.l1.rows.len(), self.l2.rows.values().map(|(_, p)| p.len()).sum())
    }

    /// Heap bytes of L1 and of L2 (rows, texts, vector indexes;
    /// [`crate::heap`]): what a soak sets beside RSS.
    pub fn heap_bytes(&self) -> (usize, usize) {
        use crate::heap::{json, string};
        (self.l1.heap_bytes(|r| string(&r.executor) + json(&r.args)), self.l2.heap_bytes(json))
    }

    /// Decides `text`, said at `now` (the user's local time). `embed` is
    /// called at most three times (the request; with proper nouns, the
    /// request with its names as words; with `chain_to_planner`, its
    /// prefix), never when L0 answers or no layer has candidates.
    pub fn route<E>(
        &self,
        text: &str,
        now: DateTime<FixedOffset>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Result<Decision, E> {
        if let Some(d) = Decision::from_l0(&self.l0, text) {
            return Ok(d);
        }
        if self.l1.is_empty() && self.l2.is_empty() {
            return Ok(Decision::planner("no fast-path candidates yet".into(), None));
        }
        let (canon, ex) = canonical(text, now);
        if canon.is_empty() {
            return Ok(Decision::planner("empty request".into(), None));
        }
        let q = embed(&canon)?;
        // A row that does not take the request's proper nouns keeps them as
        // words (the reactor's rule), so a request naming one is tried
        // three ways: said again exactly, names as words; then as a row
        // that takes a name (the usual search); then, names as words, near
        // rows learnt so. That form's vector is also the request's meaning
        // the router keeps ([`with_names_as_words`]).
        let literal = ex.of(SlotKind::ProperName).next().map(|_| with_names_as_words(&ex));
        let lq = match &literal {
            Some((lcanon, _)) => Some(embed(lcanon)?),
            None => None,
        };
        let mut refusals: Vec<(f64, String)> = Vec::new();
        let finish = |mut d: Decision, refusals: &[(f64, String)], canon: &str| {
            d.canonical = canon.to_owned();
            d.trace = refusals.iter().map(|(_, why)| why.clone()).collect();
            d.query = Some(lq.clone().unwrap_or_else(|| q.clone()));
            d
        };
        if let Some((lcanon, lex)) = &literal {
            if let Some(d) = self.try_layers(lcanon, lex, None, &mut refusals, embed) {
                return Ok(finish(d, &refusals, &canon));
            }
        }
        if let Some(d) = self.try_layers(&canon, &ex, Some(&q), &mut refusals, embed) {
            return Ok(finish(d, &refusals, &canon));
        }
        if let (Some((lcanon, lex)), Some(lq)) = (&literal, &lq) {
            if let Some(d) = self.try_layers(lcanon, lex, Some(lq), &mut refusals, embed) {
                return Ok(finish(d, &refusals, &canon));
            }
        }
        if self.multi.chain_to_planner && !self.l2.is_empty() {
            if let Some((prefix, rest)) = split_continuation(text) {
                let (pcanon, pex) = canonical(&prefix, now);
                let pq = embed(&pcanon)?;
                if let Some(mut d) = self.try_l2(&pcanon, &pex, Some(&pq), &mut refusals, embed) {
                    d.reason = format!("{}; the rest goes to the planner", d.reason);
                    d.residual = Some(rest);
                    return Ok(finish(d, &refusals, &canon));
                }
            }
        }
        let best = refusals.iter().max_by(|a, b| a.0.total_cmp(&b.0)).cloned();
        let d = match best {
            Some((sim, why)) => Decision::planner(why, Some(sim)),
            None => Decision::planner("no candidate close enough".into(), None),
        };
        Ok(finish(d, &refusals, &canon))
    }

    /// The gate for replaying `text` for `canon`, content words spelt
    /// differently compared by the model (gate rule 4): two words are the
    /// same when their vectors' cosine reaches the word bar. A word that
    /// cannot be embedded is not the same (fail closed).
    fn gate<E>(
        &self,
        canon: &str,
        text: &str,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Result<(), gate::Mismatch> {
        let bar = self.fast.word_threshold();
        if bar >= 1.0 {
            return gate::check(canon, text);
        }
        let mut same = |a: &str, b: &str| match (embed(a), embed(b)) {
            (Ok(x), Ok(y)) => f64::from(x.iter().zip(&y).map(|(p, q)| p * q).sum::<f32>()) >= bar,
            _ => false,
        };
        gate::check_with(canon, text, &mut same)
    }

    /// L1, then L2, for one form of the request.
    fn try_layers<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: Option<&[f32]>,
        refusals: &mut Vec<(f64, String)>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        self.try_l1(canon, ex, q, refusals, embed).or_else(|| self.try_l2(canon, ex, q, refusals, embed))
    }

    fn try_l1<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: Option<&[f32]>,
        refusals: &mut Vec<(f64, String)>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        let threshold = self.bar(self.fast.l1_threshold());
        for (text, r, cos) in self.l1.candidates(canon, q) {
            let cos = f64::from(cos);
            if cos < threshold {
                refusals.push((cos, format!("L1: best match {text:?} at cosine {cos:.3} < {threshold}")));
                break;
            }
            if let Err(m) = self.gate(canon, text, embed) {
                refusals.push((cos, format!("L1: {text:?} refused by the gate: {m}")));
                continue;
            }
            match placeholder::resolve(&r.args, ex) {
                Ok(args) => {
                    return Some(Decision {
                        layer: RouteLayer::L1,
                        steps: vec![PlanStep { tool: r.executor.clone(), args }],
                        similarity: Some(cos),
                        matched: Some(text.to_owned()),
                        reason: format!("L1: cosine {cos:.3} ≥ {threshold}, gate passed"),
                        residual: None,
                        canonical: String::new(),
                        trace: Vec::new(),
                        query: None,
                    })
                }
                Err(e) => refusals.push((cos, format!("L1: {text:?}: {e}"))),
            }
        }
        None
    }

    fn try_l2<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: Option<&[f32]>,
        refusals: &mut Vec<(f64, String)>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        let threshold = self.bar(self.multi.l2_threshold());
        for (text, pipelines, cos) in self.l2.candidates(canon, q) {
            let cos = f64::from(cos);
            if cos < threshold {
                refusals.push((cos, format!("L2: best match {text:?} at cosine {cos:.3} < {threshold}")));
                break;
            }
            if let Err(m) = self.gate(canon, text, embed) {
                refusals.push((cos, format!("L2: {text:?} refused by the gate: {m}")));
                continue;
            }
            'pipelines: for pipeline in pipelines {
                let mut steps = Vec::with_capacity(pipeline.len());
                for s in pipeline {
                    match placeholder::resolve(&s.args, ex) {
                        Ok(args) => steps.push(PlanStep { tool: s.tool.clone(), args }),
                        Err(e) => {
                            refusals.push((cos, format!("L2: {text:?}: {e}")));
                            continue 'pipelines;
                        }
                    }
                }
                return Some(Decision {
                    layer: RouteLayer::L2,
                    steps,
                    similarity: Some(cos),
                    matched: Some(text.to_owned()),
                    reason: format!("L2: cosine {cos:.3} ≥ {threshold}, gate passed, placeholders resolved"),
                    residual: None,
                    canonical: String::new(),
                    trace: Vec::new(),
                    query: None,
                });
            }
        }
        None
    }
}

/// L1's row for one canonical text from its projection rows: the most used
/// executor among the candidates (ties: the first seen); `None` when none
/// is a candidate.
fn l1_row<'a>(
    fast: &FastPathConfig,
    rows: impl Iterator<Item = &'a crate::projections::canonical_queries::CanonicalRow>,
) -> Option<L1Row> {
    if !fast.canonical_query_enabled {
        return None;
    }
    rows.filter(|r| r.uses >= fast.canonical_query_min_uses && !r.rejected)
        .max_by_key(|r| (r.uses, std::cmp::Reverse(r.first_seq)))
        .map(|r| L1Row { executor: r.executor.clone(), args: r.args_observed.clone() })
}

/// L1's rows: one per canonical text among the candidates ([`l1_row`]).
fn l1_rows(fast: &FastPathConfig, canonical: &CanonicalQueries) -> HashMap<String, L1Row> {
    let mut out = HashMap::new();
    let mut rows = canonical.iter().peekable();
    // Rows come sorted by canonical text: each text's rows are adjacent.
    while let Some(first) = rows.next() {
        let text = first.canonical.clone();
        let mut group = vec![first];
        while let Some(r) = rows.next_if(|r| r.canonical == text) {
            group.push(r);
        }
        if let Some(row) = l1_row(fast, group.into_iter()) {
            out.insert(text, row);
        }
    }
    out
}

/// L2's rows: the candidate pipelines of each canonical text among `rows`,
/// in the projection's order.
fn l2_rows<'a>(
    multi: &MultiToolConfig,
    rows: impl Iterator<Item = &'a crate::projections::pipelines::PipelineRow>,
) -> HashMap<String, L2Row> {
    let mut out: HashMap<String, L2Row> = HashMap::new();
    if multi.enabled {
        for p in rows.filter(|p| p.uses >= multi.min_uses && !p.rejected) {
            out.entry(p.canonical.clone()).or_default().push(p.steps.clone());
        }
    }
    out
}

/// The continuation detector: splits "download X and describe it and then
/// mail me the summary" into the known prefix and the residual intent, at
/// the last conjunction followed by an action verb ([`gate::continuations`]).
pub fn split_continuation(text: &str) -> Option<(String, String)> {
    let (i, end) = gate::continuations(text).pop()?;
    let (prefix, rest) = (text[..i].trim(), text[end..].trim());
    (!prefix.is_empty() && !rest.is_empty()).then(|| (prefix.to_owned(), rest.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search that misses (as an approximate graph can): always the last
    /// row inserted.
    #[derive(Default)]
    struct Misses(Option<u64>);

    impl VectorSearch for Misses {
        fn search(&self, _: &[f32], _: usize) -> Vec<(u64, f32)> {
            self.0.map(|k| (k, 0.99)).into_iter().collect()
        }
        fn insert(&mut self, rows: Vec<(u64, Vec<f32>)>) {
            self.0 = rows.last().map(|r| r.0).or(self.0);
        }
        fn remove(&mut self, _: u64) {}
    }

    /// An exact scan, for tests that need right answers.
    #[derive(Default)]
    struct Scan(HashMap<u64, Vec<f32>>);

    impl VectorSearch for Scan {
        fn search(&self, q: &[f32], k: usize) -> Vec<(u64, f32)> {
            let mut hits: Vec<(u64, f32)> =
                self.0.iter().map(|(key, v)| (*key, v.iter().zip(q).map(|(a, b)| a * b).sum())).collect();
            hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            hits.truncate(k);
            hits
        }
        fn insert(&mut self, rows: Vec<(u64, Vec<f32>)>) {
            self.0.extend(rows);
        }
        fn remove(&mut self, key: u64) {
            self.0.remove(&key);
        }
    }

    fn recorded(canonical: &mut CanonicalQueries, text: &str, tool: &str, times: usize) {
        use engram_events::payloads::CanonicalRecorded;
        use engram_events::{ActorKind, Envelope};
        use engram_local_state::projector::Projection;
        for _ in 0..times {
            let e = CanonicalRecorded {
                canonical: text.into(),
                executor: tool.into(),
                args_observed: ToolArgs::from_json(r#"{"path":"{path}"}"#).unwrap(),
            };
            canonical.apply(&Envelope::new(ActorKind::Router, e));
        }
    }

    /// A toy embedding that tells the test's texts apart: one axis per
    /// leading word.
    fn toy(text: &str) -> Vec<f32> {
        let axis = ["describe", "summarize", "open", "print"].iter().position(|w| text.starts_with(w)).unwrap_or(3);
        (0..4).map(|i| if i == axis { 1.0 } else { 0.0 }).collect()
    }

    #[test]
    fn a_rejected_replay_raises_the_bar_above_its_cosine_and_repeats_still_serve() {
        let mut canonical = CanonicalQueries::default();
        recorded(&mut canonical, "describe path", "describe_file", 3);
        // "please describe …" sits at cosine 0.95 of "describe …".
        let embed_one = |t: &str| -> Vec<f32> {
            match t.starts_with("please") {
                true => vec![0.95, 0.312_25, 0.0, 0.0],
                false => toy(t),
            }
        };
        let mut embed = |texts: &[&str]| Ok::<_, ()>(texts.iter().map(|t| embed_one(t)).collect());
        let make = || -> Box<dyn VectorSearch> { Box::<Scan>::default() };
        let (fast, multi) = (FastPathConfig::default(), MultiToolConfig::default());
        let mut fp = FastPath::build(&fast, &multi, &canonical, &Pipelines::default(), &mut embed, &make).unwrap();
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let route = |fp: &FastPath, text: &str| fp.route(text, now, &mut |t| Ok::<_, ()>(embed_one(t))).unwrap();
        assert_eq!(route(&fp, "please describe ~/x.md").layer, RouteLayer::L1, "0.95 clears the calibrated bar");
        // The user rejected a replay at 0.95: the bar rises above it.
        fp.raise_bar(Some(0.95));
        let d = route(&fp, "please describe ~/x.md");
        assert_eq!(d.layer, RouteLayer::Planner, "{d:?}");
        assert!(d.reason.contains("< 0.96"), "{}", d.reason);
        // A repeat of the row's own request still serves.
        assert_eq!(route(&fp, "describe ~/y.md").layer, RouteLayer::L1);
        // A rejection below the calibration never lowers it.
        fp.raise_bar(Some(0.5));
        assert_eq!(fp.bar(0.8), 0.8);
        fp.raise_bar(Some(0.999));
        assert_eq!(fp.bar(0.8), BAR_CAP);
    }

    #[test]
    fn learning_a_row_embeds_and_inserts_only_that_row() {
        let mut canonical = CanonicalQueries::default();
        recorded(&mut canonical, "describe path", "describe_file", 3);
        recorded(&mut canonical, "summarize path", "summarize_file", 3);
        let embedded = std::cell::RefCell::new(Vec::<String>::new());
        let mut embed = |texts: &[&str]| {
            embedded.borrow_mut().extend(texts.iter().map(|t| t.to_string()));
            Ok::<_, ()>(texts.iter().map(|t| toy(t)).collect())
        };
        let make = || -> Box<dyn VectorSearch> { Box::<Scan>::default() };
        let fast = FastPathConfig::default();
        let multi = MultiToolConfig::default();
        let mut fp = FastPath::build(&fast, &multi, &canonical, &Pipelines::default(), &mut embed, &make).unwrap();
        assert_eq!(embedded.borrow().len(), 2);
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let route = |fp: &FastPath, text: &str| fp.route(text, now, &mut |t| Ok::<_, ()>(toy(t))).unwrap();
        assert_eq!(route(&fp, "open ~/x.md").layer, RouteLayer::Planner);

        // A third row is learnt: one embedding, of that text; it answers.
        recorded(&mut canonical, "open path", "open_file", 3);
        let texts = ["open path".to_owned()];
        let changes = fp.update_texts(&canonical, &Pipelines::default(), &texts, &mut embed).unwrap();
        assert_eq!(changes, Changes { added: 1, removed: 0, updated: 0 });
        assert_eq!(*embedded.borrow(), ["describe path", "summarize path", "open path"]);
        let d = route(&fp, "open ~/x.md");
        assert_eq!((d.layer, d.steps[0].tool.as_str()), (RouteLayer::L1, "open_file"), "{d:?}");
        // The rows already held still answer as before.
        assert_eq!(route(&fp, "describe ~/y.md").steps[0].tool, "describe_file");

        // An executor that overtakes another for the same text: changed in
        // place, nothing embedded.
        recorded(&mut canonical, "open path", "print_file", 5);
        let changes = fp.update_texts(&canonical, &Pipelines::default(), &texts, &mut embed).unwrap();
        assert_eq!(changes, Changes { added: 0, removed: 0, updated: 1 });
        assert_eq!(embedded.borrow().len(), 3);
        assert_eq!(route(&fp, "open ~/x.md").steps[0].tool, "print_file");

        // Nothing new: nothing done, by either way of updating.
        assert_eq!(fp.update(&canonical, &Pipelines::default(), &mut embed).unwrap(), Changes::default());
        assert_eq!(fp.update_texts(&canonical, &Pipelines::default(), &texts, &mut embed).unwrap(), Changes::default());
        // A row that stops being a candidate (here: the layer turned off)
        // leaves the index.
        let off = FastPathConfig { canonical_query_enabled: false, ..FastPathConfig::default() };
        let mut fp = FastPath::build(&fast, &multi, &canonical, &Pipelines::default(), &mut embed, &make).unwrap();
        fp.fast = off;
        assert_eq!(fp.update(&canonical, &Pipelines::default(), &mut embed).unwrap().removed, 3);
        assert_eq!(route(&fp, "open ~/x.md").layer, RouteLayer::Planner);
    }

    #[test]
    fn an_exact_repeat_is_found_even_when_the_vector_search_misses_it() {
        let mut canonical = CanonicalQueries::default();
        recorded(&mut canonical, "describe path", "describe_file", 3);
        recorded(&mut canonical, "summarize path", "summarize_file", 3);
        let mut embed = |texts: &[&str]| Ok::<_, ()>(texts.iter().map(|_| vec![1.0f32]).collect());
        let make = || -> Box<dyn VectorSearch> { Box::<Misses>::default() };
        let fp = FastPath::build(
            &FastPathConfig::default(),
            &MultiToolConfig::default(),
            &canonical,
            &Pipelines::default(),
            &mut embed,
            &make,
        )
        .unwrap();
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        for (text, tool) in [("describe ~/x.md", "describe_file"), ("summarize ~/x.md", "summarize_file")] {
            let d = fp.route(text, now, &mut |_| Ok::<_, ()>(vec![1.0])).unwrap();
            assert_eq!(d.layer, RouteLayer::L1);
            assert_eq!(d.steps[0].tool, tool, "{d:?}");
            assert_eq!(d.similarity, Some(1.0));
        }
    }

    #[test]
    fn continuation_detector() {
        assert_eq!(
            split_continuation("download https://a.org and describe it and then send me the summary by email"),
            Some(("download https://a.org and describe it".into(), "send me the summary by email".into()))
        );
        assert_eq!(
            split_continuation("scarica https://a.org e riassumila e poi mandami il riassunto"),
            Some(("scarica https://a.org e riassumila".into(), "mandami il riassunto".into()))
        );
        assert_eq!(split_continuation("find the photos of anna and marco"), None);
        assert_eq!(split_continuation("what time is it"), None);
    }
}
