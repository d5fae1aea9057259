//! The layers' tables and their upkeep: [`Layer`] (one layer's rows by
//! canonical text, their vectors in the index under stable keys) and
//! [`FastPath::build`] / [`FastPath::update`] / [`FastPath::update_texts`],
//! which bring L1 and L2 in line with the projections row by row. Apart
//! from the decision because it is bookkeeping — what is held, embedded
//! and indexed — not how a request is matched.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::l1::l1_rows;
use super::l2::l2_rows;
use super::{BatchEmbed, FastPath, IndexFactory, L1Row, L2Row, VectorSearch};
use crate::fast_path::{FastPathConfig, L0Table, MultiToolConfig};
use crate::projections::canonical_queries::CanonicalRow;
use crate::projections::{CanonicalQueries, Pipelines};

/// How many neighbours each layer examines before giving up.
const CANDIDATES: usize = 5;

/// One layer's rows by canonical text, and their vectors in the index
/// under stable keys.
///
/// Invariant: `rows` and `text_of` hold the same keys, and the index holds
/// exactly those keys' vectors.
pub(super) struct Layer<R> {
    pub(super) rows: HashMap<String, (u64, R)>,
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

    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Heap bytes: the rows by text (`row` counts a row's own heap), the
    /// key map, both copies of each text, and the vector index.
    pub(super) fn heap_bytes(&self, row: impl Fn(&R) -> usize) -> usize {
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
    pub(super) fn candidates(&self, canon: &str, q: Option<&[f32]>) -> Vec<(&str, &R, f32)> {
        self.candidates_k(canon, q, CANDIDATES)
    }

    /// [`Layer::candidates`], the `k` nearest.
    pub(super) fn candidates_k(&self, canon: &str, q: Option<&[f32]>, k: usize) -> Vec<(&str, &R, f32)> {
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
            kinds: HashSet::new(),
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

    /// The tools' parameter schemas, by tool name: a said slot of a
    /// parameter with an enum takes only its members.
    pub fn set_schemas(&mut self, schemas: HashMap<String, Value>) {
        self.kinds = schemas.values().flat_map(crate::spoken::kind_members).collect();
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
        // Each example's phrasing before, for its action's words after.
        let before: Vec<(String, Option<super::known::ActionPhrasing>)> = l1
            .iter()
            .map(|(e, _)| (e.clone(), self.l1.rows.get(e).map(|(_, r)| super::known::action_phrasing(r))))
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
        }
        // The phrasings each example took away and brought, alone.
        for (example, old) in before {
            let new = self.l1.rows.get(&example).map(|(_, r)| super::known::action_phrasing(r));
            if old == new {
                continue;
            }
            if let Some(old) = old {
                super::known::remove_phrasing(&mut self.action_words, old);
            }
            if let Some(new) = new {
                super::known::add_phrasing(&mut self.action_words, new);
            }
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
}
