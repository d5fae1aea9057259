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

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{NearMiss, PlanStep, RouteLayer, ToolArgs};
use serde::Serialize;
use serde_json::Value;

use super::second_reading::{self, Lacking, Reading, SecondReader, SECOND_READING_BAR};
use super::{canonical, gate, model_away, placeholder, slots, with_names_as_words, Extracted, L0Table, SlotKind};
use crate::fast_path::{FastPathConfig, MultiToolConfig};
use crate::projections::canonical_queries::{ActionRow, CanonicalRow};
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

/// How many L1 phrasings a request is compared with by meaning (each
/// comparison of a new wording is one embedding, through the memo).
const L1_COMPARED: usize = 6;

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
    /// When the planner answers: the call the nearest learnt phrasing
    /// would have made (its gate passed, its slots filled), for the model's
    /// answer to be compared with (`fastpath.missed.near`).
    pub near: Option<NearMiss>,
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
            near: None,
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
            near: None,
        }
    }
}

/// What the layers found that did not serve: the near miss (the nearest
/// phrasing short of its bar alone) and the readings a second reader may
/// confirm ([`second_reading`]).
#[derive(Default)]
struct Missed {
    near: Option<NearMiss>,
    readings: Vec<Reading>,
    /// The request's proper nouns' words, as the gate folds them: no
    /// reading passes over one ([`FastPath::words_readable`]).
    names: HashSet<String>,
}

/// An L1 phrasing examined for a request ([`FastPath::l1_found`]): its
/// example, the row, its cosine when the vector search found it, its fill
/// when its words did.
struct Found<'a> {
    text: &'a str,
    row: &'a L1Row,
    cos: Option<f64>,
    fill: Option<slots::Fill>,
}

/// A phrasing whose slots the request filled ([`FastPath::l1_scored`]).
struct Scored<'a> {
    /// Its fills never seen in their slots.
    novel: usize,
    /// The request's similarity to it, values set aside.
    sim: f64,
    text: &'a str,
    row: &'a L1Row,
    fill: slots::Fill,
    /// Each slot's value.
    values: BTreeMap<String, Value>,
}

/// An L1 phrasing: the call it makes, its said slots, its action. Its key
/// in the layer is its example — the request as first said — whose
/// embedding stands for its meaning.
#[derive(Clone, Debug, PartialEq)]
struct L1Row {
    /// Its canonical text: the user's values masked (by kind, by slot).
    canonical: String,
    executor: String,
    /// The argument template.
    args: ToolArgs,
    /// Its action ([`crate::projections::canonical_queries::action_key`]).
    action: String,
    /// Its said slots, in the order the arguments name them.
    names: Vec<String>,
    /// The words its example said each slot with.
    said: BTreeMap<String, String>,
    /// Times this phrasing was recorded.
    uses: u32,
    /// Its arguments' values the request did not say (by path): a value
    /// the model took from elsewhere — the conversation, what it knows —
    /// or implied by a word ("luce" → `light`). See [`FastPath::servable`].
    unsaid: Vec<(String, Value)>,
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
        use engram_local_state::heap_bytes::{hash_map, string};
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
        self.candidates_k(canon, q, CANDIDATES)
    }

    /// [`Layer::candidates`], the `k` nearest.
    fn candidates_k(&self, canon: &str, q: Option<&[f32]>, k: usize) -> Vec<(&str, &R, f32)> {
        let exact = self.rows.get_key_value(canon);
        let mut out: Vec<(&str, &R, f32)> = exact.map(|(t, (_, r))| (t.as_str(), r, 1.0)).into_iter().collect();
        let Some(q) = q else { return out };
        for (key, cos) in self.index.search(q, k) {
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
    /// The L1 actions' rows (vocabularies, evidence for their bars), by key.
    actions: HashMap<String, ActionRow>,
    /// Each tool's parameter schema (an enum bounds what a slot takes).
    schemas: HashMap<String, Value>,
    /// The words L1 phrasings say around their values (not grammar): a new
    /// value holds none of them unless its slot's values did.
    command_words: HashSet<String>,
    /// The content words of each L1 action's phrasings, by action key
    /// (gate rule 4 by action, [`gate::ActionWords`]).
    action_words: HashMap<String, gate::ActionWords>,
    /// Every value a said slot has taken, as said → the parameters that
    /// took it (`domain.0` as `domain`) and the value passed: a value one
    /// action's `area` took is a known `area` for every action, and a new
    /// value of one parameter that holds a value learnt as another's is
    /// not new but ambiguous.
    known_values: HashMap<String, Vec<(String, Value)>>,
    /// The same, by parameter: every value said for it, sorted — what a
    /// slot of that parameter is filled with where it stands
    /// ([`FastPath::said`]), kept beside the map, not searched in it per row.
    said_by_parameter: HashMap<String, Vec<String>>,
    /// The one-word values said for each parameter, as the gate folds
    /// words ([`gate::fold`]): a second value in a request is never a word
    /// of the action.
    folded_values: HashMap<String, HashSet<String>>,
    /// The highest cosine of a replay the user rejected (the log's own
    /// outcomes; [`FastPath::raise_bar`]).
    rejected: Option<f64>,
}

/// How far under its bar two agreeing phrasings of one action may be and
/// still serve together (`vote`). Set before measuring; 0.15 served
/// the same on the home fixture's dev split.
pub const VOTE_MARGIN: f64 = 0.1;

/// An L1 phrasing that passed the gate and filled its slots but fell
/// short of its action's bar.
struct Short<'a> {
    sim: f64,
    bar: f64,
    action: &'a str,
    steps: Vec<PlanStep>,
    phrasing: &'a str,
}

/// The learnt row as a neighbourhood of phrasings: when two phrasings of
/// one action, each within [`VOTE_MARGIN`] of its bar (gate passed, slots
/// filled), make the same call and no phrasing of another action is that
/// near, the request is that action said another way — one phrasing at
/// 0.75 is a guess, two agreeing are the model's answer twice. The
/// nearest of them, and how many agree.
fn vote<'s, 'a>(short: &'s [Short<'a>]) -> Option<(&'s Short<'a>, usize)> {
    let close: Vec<&Short<'a>> = short.iter().filter(|s| s.sim >= s.bar - VOTE_MARGIN).collect();
    let best = close.iter().max_by(|a, b| a.sim.total_cmp(&b.sim))?;
    let agree = close.iter().filter(|s| s.action == best.action && s.steps == best.steps).count();
    (agree >= 2 && close.iter().all(|s| s.action == best.action)).then_some((best, agree))
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
            actions: HashMap::new(),
            schemas: HashMap::new(),
            command_words: HashSet::new(),
            action_words: HashMap::new(),
            known_values: HashMap::new(),
            said_by_parameter: HashMap::new(),
            folded_values: HashMap::new(),
            rejected: None,
        };
        fp.update(canonical, pipelines, embed)?;
        Ok(fp)
    }

    /// Every value the actions' said slots took, as said, with the
    /// parameters that took it.
    fn known_values(&self) -> HashMap<String, Vec<(String, Value)>> {
        let mut out: HashMap<String, Vec<(String, Value)>> = HashMap::new();
        let mut keys: Vec<&String> = self.actions.keys().collect();
        keys.sort(); // a deterministic first value per (said, parameter)
        for key in keys {
            for (name, v) in &self.actions[key].vocabulary {
                for (said, value, _) in &v.values {
                    let entry = out.entry(said.clone()).or_default();
                    if !entry.iter().any(|(p, _)| p == parameter(name)) {
                        entry.push((parameter(name).to_owned(), value.clone()));
                    }
                }
            }
        }
        out
    }

    /// [`FastPath::known_values`] and [`FastPath::said_by_parameter`], from
    /// the actions' vocabularies.
    fn refresh_known(&mut self) {
        self.known_values = self.known_values();
        let mut by: HashMap<String, Vec<String>> = HashMap::new();
        for (said, params) in &self.known_values {
            for (p, _) in params {
                by.entry(p.clone()).or_default().push(said.clone());
            }
        }
        for v in by.values_mut() {
            v.sort(); // the map's order is not the same from run to run
        }
        self.folded_values = by
            .iter()
            .map(|(p, said)| (p.clone(), said.iter().filter(|s| !s.contains(' ')).map(|s| gate::fold(s)).collect()))
            .collect();
        self.said_by_parameter = by;
    }

    /// The value some action's slot of the same parameter as `name` took
    /// when said as `said`.
    fn known_as(&self, name: &str, said: &str) -> Option<Value> {
        let own = parameter(name);
        self.known_values.get(said)?.iter().find(|(p, _)| p == own).map(|(_, v)| v.clone())
    }

    /// The parameter, other than `name`'s, that a value held in `said`
    /// (a run of its words) was learnt as, if any.
    fn known_elsewhere(&self, name: &str, said: &str) -> Option<String> {
        let words: Vec<&str> = said.split(' ').collect();
        let own = parameter(name);
        for len in 1..=words.len() {
            for run in words.windows(len) {
                let run = run.join(" ");
                if let Some(params) = self.known_values.get(&run) {
                    if let Some((p, _)) = params.iter().find(|(p, _)| p.as_str() != own) {
                        return Some(p.clone());
                    }
                }
            }
        }
        None
    }

    /// The words L1's phrasings say around their values.
    fn l1_command_words(&self) -> HashSet<String> {
        self.l1
            .rows
            .values()
            .flat_map(|(_, r)| crate::text::words(&r.canonical).map(str::to_owned).collect::<Vec<_>>())
            .filter(|w| {
                !slots::is_mask(w)
                    && SlotKind::from_name(w).is_none()
                    && !crate::text::is_stop_word(w, crate::text::Negations::Keep)
            })
            .collect()
    }

    /// Each L1 action's words ([`gate::ActionWords`]), from its phrasings.
    fn l1_action_words(&self) -> HashMap<String, gate::ActionWords> {
        let mut by: HashMap<&str, Vec<String>> = HashMap::new();
        for (_, r) in self.l1.rows.values() {
            let words: Vec<&str> = r.canonical.split(' ').filter(|w| !slots::is_mask(w)).collect();
            by.entry(r.action.as_str()).or_default().push(words.join(" "));
        }
        by.into_iter()
            .map(|(a, texts)| (a.to_owned(), gate::ActionWords::of(texts.iter().map(String::as_str))))
            .collect()
    }

    /// The tools' parameter schemas, by tool name: a said slot of a
    /// parameter with an enum takes only its members.
    pub fn set_schemas(&mut self, schemas: HashMap<String, Value>) {
        self.schemas = schemas;
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
        let a = self.l1.sync(l1_rows(&self.fast, canonical, canonical.iter()), embed)?;
        self.actions = canonical.actions().map(|(k, a)| (k, a.clone())).collect();
        self.command_words = self.l1_command_words();
        self.action_words = self.l1_action_words();
        self.refresh_known();
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
        // A phrasing learnt changes its action: its uses (every phrasing
        // of it may start or stop serving), its vocabulary, its bar.
        let touched: HashSet<String> =
            texts.iter().flat_map(|t| canonical.for_text(t)).map(CanonicalRow::action).collect();
        let mut examples: HashSet<String> =
            self.l1.rows.iter().filter(|(_, (_, r))| touched.contains(&r.action)).map(|(e, _)| e.clone()).collect();
        let affected: Vec<&CanonicalRow> = canonical.iter().filter(|r| touched.contains(&r.action())).collect();
        examples.extend(affected.iter().map(|r| r.example()));
        let mut rows = l1_rows(&self.fast, canonical, canonical.iter().filter(|r| examples.contains(&r.example())));
        let l1: Vec<(String, Option<L1Row>)> = examples
            .into_iter()
            .map(|e| {
                let row = rows.remove(&e);
                (e, row)
            })
            .collect();
        let a = self.l1.apply(l1, embed)?;
        for key in &touched {
            match canonical.action(key) {
                Some(row) => self.actions.insert(key.clone(), row.clone()),
                None => self.actions.remove(key),
            };
        }
        if a != Changes::default() {
            self.command_words = self.l1_command_words();
            self.action_words = self.l1_action_words();
        }
        if !touched.is_empty() {
            self.refresh_known();
        }
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
        use engram_local_state::heap_bytes::{json, string};
        let l1 = self.l1.heap_bytes(|r| {
            string(&r.canonical)
                + string(&r.executor)
                + json(&r.args)
                + string(&r.action)
                + r.names.iter().map(|n| string(n)).sum::<usize>()
                + r.said.iter().map(|(k, v)| string(k) + string(v) + 48).sum::<usize>()
        });
        (l1, self.l2.heap_bytes(json))
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
        self.route_read_twice(text, now, embed, None)
    }

    /// [`FastPath::route`], with a second reader: `second` plans the
    /// request by other means (the offline planner), and a learnt
    /// phrasing short of serving alone serves when that plan is its call
    /// ([`second_reading`]; `[fast_path] second_reading`, on by default).
    /// Called at most once, only when there is such a phrasing.
    pub fn route_read_twice<E>(
        &self,
        text: &str,
        now: DateTime<FixedOffset>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
        second: Option<SecondReader<'_>>,
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
        let names = ex.of(SlotKind::ProperName).filter_map(Value::as_str);
        let names =
            names.flat_map(|n| crate::text::words(&crate::text::normalize(n)).map(gate::fold).collect::<Vec<_>>());
        let mut missed = Missed { names: names.collect(), ..Missed::default() };
        let finish = |mut d: Decision, refusals: &[(f64, String)], canon: &str| {
            d.canonical = canon.to_owned();
            d.trace = refusals.iter().map(|(_, why)| why.clone()).collect();
            d.query = Some(lq.clone().unwrap_or_else(|| q.clone()));
            d
        };
        if let Some((lcanon, lex)) = &literal {
            if let Some(d) = self.try_layers(lcanon, lex, None, &mut refusals, &mut missed, embed) {
                return Ok(finish(d, &refusals, &canon));
            }
        }
        if let Some(d) = self.try_layers(&canon, &ex, Some(&q), &mut refusals, &mut missed, embed) {
            return Ok(finish(d, &refusals, &canon));
        }
        if let (Some((lcanon, lex)), Some(lq)) = (&literal, &lq) {
            if let Some(d) = self.try_layers(lcanon, lex, Some(lq), &mut refusals, &mut missed, embed) {
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
        let second = second.filter(|_| self.fast.second_reading);
        if let Some(d) = second.and_then(|read| self.confirmed(text, &missed.readings, read)) {
            return Ok(finish(d, &refusals, &canon));
        }
        let best = refusals.iter().max_by(|a, b| a.0.total_cmp(&b.0)).cloned();
        let mut d = match best {
            Some((sim, why)) => Decision::planner(why, Some(sim)),
            None => Decision::planner("no candidate close enough".into(), None),
        };
        d.near = missed.near.or_else(|| self.taught_guess(&canon, &ex, &q, embed));
        Ok(finish(d, &refusals, &canon))
    }

    /// The reading of `text` the second reader confirms, as an L1 answer
    /// ([`second_reading`]): the reader is asked only when there is one.
    fn confirmed(&self, text: &str, readings: &[Reading], read: SecondReader<'_>) -> Option<Decision> {
        if !readings.iter().any(|r| r.sim >= SECOND_READING_BAR) {
            return None;
        }
        let plan = read(text);
        let r = second_reading::confirmed(readings, &plan)?;
        let lacked = match &r.lacking {
            Lacking::Bar { bar } => format!("under its bar {bar:.3}"),
            Lacking::Words { why } => format!("the gate's words ({why})"),
        };
        Some(Decision {
            layer: RouteLayer::L1,
            steps: r.steps.clone(),
            similarity: Some(r.sim),
            matched: Some(r.phrasing.clone()),
            reason: format!("L1: similarity {:.3}, {lacked}; the offline planner plans the same call", r.sim),
            residual: None,
            canonical: String::new(),
            trace: Vec::new(),
            query: None,
            near: None,
        })
    }

    /// Whether a phrasing the gate refused may still be a reading
    /// ([`second_reading`], rule 1): only content words differ, none of
    /// them a pole (an unknown verb may mean the opposite: "kill the
    /// lights" against "turn on"), and no word only the request says is a
    /// value some slot took (a second room: "lights on in the den and the
    /// nursery") or one of the request's proper nouns, `names` (a call
    /// that does not take a name keeps it as a word of its phrasing: "wave
    /// hello to Luca" is not "wave hello to Marta").
    fn words_readable(&self, why: &gate::Mismatch, names: &HashSet<String>) -> bool {
        let gate::Mismatch::Content { request_only, candidate_only } = why else { return false };
        let value = |w: &String| names.contains(w) || self.folded_values.values().any(|v| v.contains(w));
        !request_only.iter().chain(candidate_only).any(|w| gate::is_pole(w)) && !request_only.iter().any(value)
    }

    /// With the model away (`model_away`), when no phrasing came near: the
    /// call of the phrasing nearest by meaning that the gate lets through,
    /// with the values the request holds that its slots took before and
    /// its slots without one left out — the model's choice of tool for
    /// requests like this, for the offline planner to complete. Never
    /// served, and not the evidence a bar is learnt from (the reactor
    /// compares only a near miss with every slot filled).
    fn taught_guess<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: &[f32],
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<NearMiss> {
        for (_, r, cos) in self.l1.candidates_k(canon, Some(q), L1_COMPARED) {
            let sim = f64::from(cos);
            if sim < model_away::LEARNT_BAR || !self.values_sound(r) {
                continue;
            }
            let fill = slots::fill_known_partly(canon, &r.names, &|n| self.said(n));
            // The phrasing's words with the slots the request left
            // unfilled set aside, against the request's.
            let unfilled: Vec<String> =
                r.names.iter().filter(|n| !fill.values.contains_key(*n)).map(|n| slots::mask(n)).collect();
            let phrasing: Vec<&str> =
                r.canonical.split_whitespace().filter(|w| !unfilled.iter().any(|m| m == w)).collect();
            // Words of the request only are the values of the unfilled
            // slots, if any; anything else the gate refuses refuses.
            match self.gate(&fill.masked, &phrasing.join(" "), Some(r), embed) {
                Ok(()) => {}
                Err(gate::Mismatch::Content { candidate_only, .. })
                    if !unfilled.is_empty() && candidate_only.is_empty() => {}
                Err(_) => continue,
            }
            let values: BTreeMap<String, Value> = fill
                .values
                .iter()
                .filter_map(|(name, said)| {
                    let learnt = self.vocabulary(&r.action, name).and_then(|v| v.value_of(said));
                    learnt.or_else(|| self.known_as(name, said)).map(|v| (name.clone(), v))
                })
                .collect();
            let Ok(args) = placeholder::resolve(&slots::resolve_partly(&r.args, &values), ex) else { continue };
            let steps = vec![PlanStep { tool: r.executor.clone(), args }];
            return Some(NearMiss { canonical: r.canonical.clone(), similarity: sim, steps });
        }
        None
    }

    /// The gate for replaying `text` for `canon`, content words spelt
    /// differently compared by the model (gate rule 4): two words are the
    /// same when their vectors' cosine reaches the word bar. A word that
    /// cannot be embedded is not the same (fail closed). With `row` (an L1
    /// phrasing), content words are compared with every phrasing of its
    /// action too ([`gate::ActionWords`]).
    fn gate<E>(
        &self,
        canon: &str,
        text: &str,
        row: Option<&L1Row>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Result<(), gate::Mismatch> {
        let is_value = |w: &str| {
            row.is_some_and(|r| {
                r.names.iter().any(|n| self.folded_values.get(parameter(n)).is_some_and(|v| v.contains(w)))
            })
        };
        let context = row
            .and_then(|r| self.action_words.get(&r.action))
            .map(|words| gate::ActionContext { words, is_value: &is_value });
        let bar = self.fast.word_threshold();
        if bar >= 1.0 {
            return gate::check_for(canon, text, context.as_ref(), &mut |_, _| false);
        }
        let mut same = |a: &str, b: &str| match (embed(a), embed(b)) {
            (Ok(x), Ok(y)) => f64::from(x.iter().zip(&y).map(|(p, q)| p * q).sum::<f32>()) >= bar,
            _ => false,
        };
        gate::check_for(canon, text, context.as_ref(), &mut same)
    }

    /// L1, then L2, for one form of the request.
    fn try_layers<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: Option<&[f32]>,
        refusals: &mut Vec<(f64, String)>,
        missed: &mut Missed,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        self.try_l1(canon, ex, q, refusals, missed, embed).or_else(|| self.try_l2(canon, ex, q, refusals, embed))
    }

    /// L1: the request against the learnt phrasings (module docs of
    /// [`super::slots`] and `docs/fast-path.md`). A phrasing is a candidate
    /// by its words — a template whose slots the request fills, the words
    /// around them matching — or by meaning (the nearest examples). For
    /// each: its slots are filled from the request and each fill must fit
    /// its slot; the request with the phrasing's own example values in the
    /// slots is compared with the phrasing's example (values set aside, a
    /// taught wording with new values is the example itself: 1.0); the
    /// similarity must reach the action's bar; the gate compares the words
    /// outside the slots. The first that passes all serves; the nearest
    /// that fails only its bar (or whose action is not learnt yet) is the
    /// turn's near miss.
    fn try_l1<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: Option<&[f32]>,
        refusals: &mut Vec<(f64, String)>,
        missed: &mut Missed,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        let found = self.l1_found(canon, q);
        // Readings of the request by phrasings that did not serve, of
        // which action and how near: (action, similarity).
        let mut rivals: Vec<(&str, f64)> = Vec::new();
        let scored = self.l1_scored(canon, found, refusals, &mut rivals, embed);
        // Phrasings that failed their bar alone: (similarity, action, steps,
        // phrasing) — the neighbourhood a vote is taken in.
        let mut short: Vec<Short<'_>> = Vec::new();
        for m in scored {
            let (sim, r) = (m.sim, m.row);
            // A request read two ways is not served by a reading that
            // needs a new value and is no nearer than another action's —
            // one under its bar, not learnt yet, or a new value holding a
            // known one of another parameter: "switch on the christmas
            // lights" (a taught "switch on the nameslot") is a new device
            // or a new room's lights — the model knows.
            if m.novel > 0 && rivals.iter().any(|(a, s)| *a != r.action.as_str() && *s >= m.sim) {
                refusals.push((sim, format!("L1: {:?}: a new value, and the request reads another way", r.canonical)));
                continue;
            }
            // Content words alone may be confirmed by a second reading;
            // any other refusal is final (`second_reading`, rule 1).
            let gate = self.gate(&m.fill.masked, &r.canonical, Some(r), embed);
            if let Err(why) = &gate {
                if !matches!(why, gate::Mismatch::Content { .. }) {
                    refusals.push((sim, format!("L1: {:?} refused by the gate: {why}", r.canonical)));
                    continue;
                }
            }
            let args = match slots::resolve(&r.args, &m.values).map(|a| placeholder::resolve(&a, ex)) {
                Some(Ok(args)) => args,
                Some(Err(e)) => {
                    refusals.push((sim, format!("L1: {:?}: {e}", r.canonical)));
                    continue;
                }
                None => {
                    refusals.push((sim, format!("L1: {:?}: a slot has no value", r.canonical)));
                    continue;
                }
            };
            if !self.values_sound(r) {
                refusals.push((sim, format!("L1: {:?}: its call holds a value the request did not say", r.canonical)));
                continue;
            }
            let steps = vec![PlanStep { tool: r.executor.clone(), args }];
            let (bar, servable) = (self.action_bar(&r.action), self.servable(r));
            if let Err(why) = gate {
                refusals.push((sim, format!("L1: {:?} refused by the gate: {why}", r.canonical)));
                if servable && self.words_readable(&why, &missed.names) {
                    let lacking = Lacking::Words { why: why.to_string() };
                    missed.readings.push(Reading { sim, phrasing: r.canonical.clone(), steps, lacking });
                }
                continue;
            }
            if !servable || sim < bar {
                let why = match servable {
                    true => format!("L1: best match {:?} at similarity {sim:.3} < its bar {bar:.3}", r.canonical),
                    false => format!("L1: {:?} at similarity {sim:.3}: its action is not learnt yet", r.canonical),
                };
                refusals.push((sim, why));
                rivals.push((&r.action, sim));
                if servable {
                    short.push(Short { sim, bar, action: &r.action, steps: steps.clone(), phrasing: &r.canonical });
                    let lacking = Lacking::Bar { bar };
                    missed.readings.push(Reading { sim, phrasing: r.canonical.clone(), steps: steps.clone(), lacking });
                }
                if missed.near.as_ref().is_none_or(|n| n.similarity < sim) {
                    missed.near = Some(NearMiss { canonical: r.canonical.clone(), similarity: sim, steps });
                }
                continue;
            }
            return Some(Decision {
                layer: RouteLayer::L1,
                steps,
                similarity: Some(sim),
                matched: Some(r.canonical.clone()),
                reason: format!("L1: similarity {sim:.3} ≥ its bar {bar:.3}, gate passed, slots filled"),
                residual: None,
                canonical: String::new(),
                trace: Vec::new(),
                query: None,
                near: None,
            });
        }
        self.neighbourhood_vote(&short)
    }

    /// The learnt row as a neighbourhood of phrasings ([`vote`]).
    fn neighbourhood_vote(&self, short: &[Short<'_>]) -> Option<Decision> {
        let (best, agree) = vote(short)?;
        let sim = best.sim;
        Some(Decision {
            layer: RouteLayer::L1,
            steps: best.steps.clone(),
            similarity: Some(sim),
            matched: Some(best.phrasing.to_owned()),
            reason: format!(
                "L1: {agree} phrasings of one action within {VOTE_MARGIN} of its bar, best {sim:.3}, none of another"
            ),
            residual: None,
            canonical: String::new(),
            trace: Vec::new(),
            query: None,
            near: None,
        })
    }

    /// The L1 phrasings to examine for `canon`: the exact example, the
    /// nearest by meaning (`q`), the templates the request's words fill
    /// closest, and every phrasing whose slots' known values are all in
    /// the request, wherever they are.
    fn l1_found<'a>(&'a self, canon: &str, q: Option<&[f32]>) -> Vec<Found<'a>> {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut found: Vec<Found<'a>> = Vec::new();
        for (text, row, cos) in self.l1.candidates_k(canon, q, L1_COMPARED + 2) {
            if seen.insert(text) {
                found.push(Found { text, row, cos: Some(f64::from(cos)), fill: None });
            }
        }
        let words: HashSet<&str> = crate::text::words(canon).collect();
        let with_slots = || self.l1.rows.iter().filter(|(_, (_, r))| !r.names.is_empty());
        let mut lexical: Vec<(&str, &L1Row, slots::Fill)> = with_slots()
            .filter(|(e, _)| !seen.contains(e.as_str()))
            // A template shares a word with the request (any word: "turn
            // on the areaslot domain0slot" has only grammar around slots).
            .filter(|(_, (_, r))| crate::text::words(&r.canonical).any(|w| words.contains(w)))
            .filter_map(|(e, (_, r))| {
                slots::fill(&r.canonical, canon, &r.names, &|n| self.edges(&r.action, n)).map(|f| (e.as_str(), r, f))
            })
            .collect();
        lexical.sort_by(|a, b| a.2.cost.total_cmp(&b.2.cost).then(a.0.cmp(b.0)));
        lexical.truncate(L1_COMPARED);
        for (e, (_, r)) in with_slots() {
            if seen.contains(e.as_str()) || lexical.iter().any(|(t, _, _)| *t == e.as_str()) {
                continue;
            }
            if let Some(f) = slots::fill_known(&r.canonical, canon, &r.names, &|n| self.said(n)) {
                lexical.push((e.as_str(), r, f));
            }
        }
        for (text, row, fill) in lexical {
            if seen.insert(text) {
                found.push(Found { text, row, cos: None, fill: Some(fill) });
            }
        }
        found
    }

    /// Each found phrasing's slots filled from `canon` (known values where
    /// they are, else by alignment), the fills fitted, and the request's
    /// similarity to the phrasing with values set aside; ordered by the
    /// explanation needing fewest values never seen, then the nearest,
    /// then the closest wording.
    fn l1_scored<'a, E>(
        &'a self,
        canon: &str,
        found: Vec<Found<'a>>,
        refusals: &mut Vec<(f64, String)>,
        rivals: &mut Vec<(&'a str, f64)>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Vec<Scored<'a>> {
        let mut scored = Vec::new();
        let mut compared = 0usize;
        for Found { text, row: r, cos, fill } in found {
            let fill = match slots::fill_known(&r.canonical, canon, &r.names, &|n| self.said(n)).or(fill) {
                Some(f) => f,
                None if r.names.is_empty() => slots::Fill {
                    values: BTreeMap::new(),
                    masked: canon.to_owned(),
                    cost: 0.0,
                    framed: Default::default(),
                },
                None => match slots::fill(&r.canonical, canon, &r.names, &|n| self.edges(&r.action, n)) {
                    Some(f) => f,
                    None => {
                        let why = format!("L1: {:?}: its slots are not in the request", r.canonical);
                        refusals.push((cos.unwrap_or(0.0), why));
                        continue;
                    }
                },
            };
            let refuse = |why: String| (cos.unwrap_or(0.0), format!("L1: {:?}: {why}", r.canonical));
            // A fill that does not fit is refused here; one that holds a
            // known value of another parameter is a rival reading, its
            // similarity measured first (`try_l1`).
            let fitted = match self.fit(r, &fill, embed) {
                Err((why, false)) => {
                    refusals.push(refuse(why));
                    continue;
                }
                fitted => fitted,
            };
            // The request with the example's values in the slots.
            let transplanted = transplant(canon, &fill, r);
            let sim = match (transplanted == text, r.names.is_empty(), cos) {
                (true, _, _) => Some(1.0),
                (false, true, Some(cos)) => Some(cos),
                _ if compared >= L1_COMPARED => None,
                _ => {
                    compared += 1;
                    match (embed(&transplanted), embed(text)) {
                        (Ok(a), Ok(b)) => Some(f64::from(a.iter().zip(&b).map(|(x, y)| x * y).sum::<f32>())),
                        _ => None,
                    }
                }
            };
            let (values, novel) = match fitted {
                Ok(v) => v,
                Err((why, _)) => {
                    if let Some(sim) = sim {
                        rivals.push((&r.action, sim));
                    }
                    refusals.push(refuse(why));
                    continue;
                }
            };
            let Some(sim) = sim else { continue };
            scored.push(Scored { novel, sim, text, row: r, fill, values });
        }
        scored.sort_by(|a, b| {
            a.novel
                .cmp(&b.novel)
                .then(b.sim.total_cmp(&a.sim))
                .then(a.fill.cost.total_cmp(&b.fill.cost))
                .then(a.text.cmp(b.text))
        });
        scored
    }

    /// The values said for slot `name`'s parameter by any action's slot
    /// (its own action's among them), sorted.
    fn said(&self, name: &str) -> Vec<String> {
        self.said_by_parameter.get(parameter(name)).cloned().unwrap_or_default()
    }

    /// Whether a phrasing serves: its action was used
    /// `canonical_query_min_uses` times — and, when its call holds a value
    /// the request did not say, either that value is a member of its
    /// parameter's enum (a word implied it: "luce" → `light`) or the
    /// phrasing itself was used that many times. A value the model took
    /// from the conversation ("what's the weather forecast" after asking
    /// about Bologna) is no part of the request: one use of the wording
    /// does not make it the action's.
    fn servable(&self, r: &L1Row) -> bool {
        let min = self.fast.canonical_query_min_uses;
        self.actions.get(&r.action).is_some_and(|a| a.uses >= min) && self.values_sound(r)
    }

    /// Whether a phrasing's call holds only values the request said or
    /// implied ([`FastPath::servable`]): no near miss offers one that does
    /// not either (the offline planner would plan the stale value).
    fn values_sound(&self, r: &L1Row) -> bool {
        r.uses >= self.fast.canonical_query_min_uses
            || r.unsaid
                .iter()
                .all(|(path, v)| self.enum_of(&r.executor, path).is_some_and(|e| e.iter().any(|m| m == v)))
    }

    /// The bar of an L1 action: its own, learnt from the model's answers
    /// ([`ActionRow::bar`]), raised by the log's rejected replays
    /// ([`FastPath::raise_bar`]).
    fn action_bar(&self, action: &str) -> f64 {
        let calibrated = self.fast.l1_threshold();
        let own = match self.actions.get(action) {
            Some(a) => a.bar(calibrated, self.fast.row_bar_floor(), self.fast.row_error_rate, BAR_STEP),
            None => calibrated,
        };
        match self.rejected {
            Some(c) => own.max((c + BAR_STEP).min(BAR_CAP)),
            None => own,
        }
    }

    /// How the values of slot `name` of `action` begin
    /// ([`slots::Vocabulary::edges`]).
    fn edges(&self, action: &str, name: &str) -> slots::Edges {
        self.actions
            .get(action)
            .and_then(|a| a.vocabulary.get(name))
            .map_or(slots::Edges::Unknown, slots::Vocabulary::edges)
    }

    /// The value each said slot of `r` takes from `fill`, if every one fits
    /// ([`slots::Vocabulary::fits`]), and how many of them the slot never
    /// took before; or why not, and whether the request has another
    /// reading for it (a new value holding one known for another
    /// parameter: "christmas lights" as a new `name`, with `light` a
    /// `domain`).
    fn fit<E>(
        &self,
        r: &L1Row,
        fill: &slots::Fill,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Result<(BTreeMap<String, Value>, usize), (String, bool)> {
        let mut out = BTreeMap::new();
        let mut novel = 0;
        let action = self.actions.get(&r.action);
        let command = |w: &str| self.command_words.contains(w);
        for name in &r.names {
            let Some(said) = fill.values.get(name) else { return Err((format!("no value for slot {name}"), false)) };
            let enums = self.enum_of(&r.executor, name);
            let vocabulary = action.and_then(|a| a.vocabulary.get(name));
            // A value another action's slot of this parameter took is a
            // known value of it (an enum still bounds it).
            let elsewhere = self
                .known_as(name, said)
                .filter(|v| enums.as_ref().is_none_or(|e| e.contains(v)))
                .filter(|_| vocabulary.is_some_and(|v| !v.knows(said)));
            if let Some(value) = elsewhere {
                out.insert(name.clone(), value);
                continue;
            }
            let value = match vocabulary {
                Some(v) => {
                    let known =
                        v.knows(said) || enums.as_ref().is_some_and(|e| v.fits(said, Some(e), &command).is_some());
                    if !known {
                        novel += 1;
                        if let Some(other) = self.known_elsewhere(name, said) {
                            return Err((
                                format!("{said:?} is a value of {other} learnt before, not a new {name}"),
                                true,
                            ));
                        }
                    }
                    match known || fill.framed.contains(name) {
                        true => v.fits(said, enums.as_deref(), &command),
                        // A new value is read only from a taught frame.
                        false => None,
                    }
                    .or_else(|| self.same_value(v, said, embed))
                }
                None => None,
            };
            match value {
                Some(v) => out.insert(name.clone(), v),
                None => return Err((format!("{said:?} does not fit slot {name}"), false)),
            };
        }
        Ok((out, novel))
    }

    /// The slot `name` of `action`'s vocabulary.
    fn vocabulary(&self, action: &str, name: &str) -> Option<&slots::Vocabulary> {
        self.actions.get(action)?.vocabulary.get(name)
    }

    /// A value a closed slot has taken that `said` names in other words —
    /// a translation or a synonym by the embedding model's measure (the
    /// gate's word bar): "pane" for a slot that took "bread", "pictures"
    /// for one that took "photos". A closed slot takes only what it has
    /// seen, however it is said; an open one takes a new value as said.
    fn same_value<E>(
        &self,
        v: &slots::Vocabulary,
        said: &str,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Value> {
        if v.is_open() || said.split(' ').count() > 4 {
            return None;
        }
        let bar = self.fast.word_threshold();
        let x = embed(said).ok()?;
        let mut best: Option<(f64, String)> = None;
        for known in v.said() {
            let Ok(y) = embed(&known) else { continue };
            let cos = f64::from(x.iter().zip(&y).map(|(a, b)| a * b).sum::<f32>());
            if cos >= bar && best.as_ref().is_none_or(|(b, _)| cos > *b) {
                best = Some((cos, known));
            }
        }
        best.and_then(|(_, known)| v.value_of(&known))
    }

    /// The enum of the parameter a slot is (`domain.0` → `domain`'s
    /// items'), from the tool's schema.
    fn enum_of(&self, tool: &str, slot: &str) -> Option<Vec<Value>> {
        let mut spec = self.schemas.get(tool)?.get("properties")?;
        let mut parts = slot.split('.').peekable();
        while let Some(part) = parts.next() {
            spec = match part.parse::<usize>() {
                Ok(_) => spec.get("items")?,
                Err(_) => spec.get(part)?,
            };
            if parts.peek().is_some() && spec.get("properties").is_some() {
                spec = spec.get("properties")?;
            }
        }
        spec.get("enum")?.as_array().cloned()
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
            if let Err(m) = self.gate(canon, text, None, embed) {
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
                    near: None,
                });
            }
        }
        None
    }
}

/// L1's rows from the phrasings `rows` (of `canonical`): one per example
/// (the request as first said), the most used phrasing of it — servable
/// ones first, ties to the first seen.
fn l1_rows<'a>(
    fast: &FastPathConfig,
    canonical: &CanonicalQueries,
    rows: impl Iterator<Item = &'a CanonicalRow>,
) -> HashMap<String, L1Row> {
    type Rank = (bool, u32, std::cmp::Reverse<u64>);
    let mut best: HashMap<String, (L1Row, Rank)> = HashMap::new();
    if !fast.canonical_query_enabled {
        return HashMap::new();
    }
    for r in rows.filter(|r| !r.rejected && r.uses > 0) {
        let action = r.action();
        let Some(a) = canonical.action(&action) else { continue };
        let rank = (a.uses >= fast.canonical_query_min_uses, r.uses, std::cmp::Reverse(r.first_seq));
        let example = r.example();
        if best.get(&example).is_some_and(|(_, b)| *b >= rank) {
            continue;
        }
        let row = L1Row {
            canonical: r.canonical.clone(),
            executor: r.executor.clone(),
            names: slots::slot_names(&r.args_observed),
            args: r.args_observed.clone(),
            action,
            said: r.said(),
            uses: r.uses,
            unsaid: slots::unsaid(&r.canonical, &r.args_observed),
        };
        best.insert(example, (row, rank));
    }
    best.into_iter().map(|(e, (r, _))| (e, r)).collect()
}

/// A said slot's parameter: its path without an array index (`domain.0` →
/// `domain`).
fn parameter(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// `canon` with each slot's fill replaced by the words `row`'s example
/// said it with: the request with the example's values, so the two are
/// compared on their wording alone.
fn transplant(canon: &str, fill: &slots::Fill, row: &L1Row) -> String {
    let mut out = fill.masked.clone();
    if row.names.is_empty() {
        return canon.to_owned();
    }
    for name in &row.names {
        if let Some(said) = row.said.get(name) {
            out = out.replacen(&slots::mask(name), said, 1);
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
                slots: ToolArgs::default(),
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
    fn two_agreeing_phrasings_of_one_action_serve_below_their_bar_and_a_rival_stops_them() {
        let call = |tool: &str| vec![PlanStep { tool: tool.into(), args: ToolArgs::default() }];
        let short = |sim: f64, action: &'static str, tool: &str| Short {
            sim,
            bar: 0.8,
            action,
            steps: call(tool),
            phrasing: action,
        };
        let on = [short(0.76, "on", "TurnOn"), short(0.72, "on", "TurnOn")];
        let (best, agree) = vote(&on).expect("two agree");
        assert_eq!((best.sim, agree), (0.76, 2));
        assert!(vote(&on[..1]).is_none(), "one phrasing is a guess");
        let far = [short(0.76, "on", "TurnOn"), short(0.65, "on", "TurnOn")];
        assert!(vote(&far).is_none(), "the second is not within the margin");
        let rival = [short(0.76, "on", "TurnOn"), short(0.72, "on", "TurnOn"), short(0.71, "set", "LightSet")];
        assert!(vote(&rival).is_none(), "another action as near");
        let differ = [short(0.76, "on", "TurnOn"), short(0.72, "on", "TurnOnOther")];
        assert!(vote(&differ).is_none(), "their calls differ");
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
        assert!(d.reason.contains("< its bar 0.960"), "{}", d.reason);
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
