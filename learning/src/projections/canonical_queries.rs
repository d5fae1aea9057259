//! `canonical_queries`: the L1 candidates (seed 000 `canonical_query_log`,
//! learnt by meaning), folded from `canonical.recorded`,
//! `canonical.rejected` and `canonical.compared`.
//!
//! Two tables:
//!
//! | table | key | row |
//! |---|---|---|
//! | phrasings (`c`) | canonical text, executor | one wording of a request: its canonical text (the user's values masked by slot), its argument template, the values it was first said with, its uses, whether a verdict rejected it |
//! | actions (`a`) | action | one call: the executor and the arguments it takes ([`action_key`]); its uses over every phrasing, each said slot's vocabulary, and the evidence its own bar is learnt from |
//!
//! An **action** is counted, not a string: "turn on the kitchen light",
//! "turn on the office light" and "accendi la luce in bagno" are three uses
//! of `HassTurnOn(area, domain)`, so the action is an L1 candidate once
//! `uses ≥ canonical_query_min_uses` and every phrasing of it serves — the
//! learnt row is a neighbourhood of phrasings, not one text.
//!
//! `canonical.rejected` (a verdict below the learning bar on a turn the
//! phrasing served or taught) takes the phrasing's uses off its action and
//! marks it rejected: it serves no more. The next `canonical.recorded` of
//! the pair — which the fast-path reactor writes for a rejected pair only
//! from a turn rated well — clears the mark and counts again.
//!
//! `canonical.compared` adds to the phrasing's action the similarity at
//! which the model agreed (or not) with the call the phrasing would have
//! made: [`ActionRow::bar`] is learnt from it.

use std::collections::BTreeMap;

use engram_events::payloads::ToolArgs;
use engram_events::{Envelope, Event, EventKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fast_path::slots::{self, Vocabulary};
use engram_local_state::projector::{Projection, Table, TableRows};

/// One phrasing of an action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CanonicalRow {
    /// The request in canonical form (normalised, values masked).
    pub canonical: String,
    /// The executor chosen for it.
    pub executor: String,
    /// The argument template (placeholders for the request's values), as
    /// first recorded.
    pub args_observed: ToolArgs,
    /// Times recorded.
    pub uses: u32,
    /// `seq` of its first recording (a stable order for ties).
    pub first_seq: u64,
    /// A verdict rejected it and no turn rated well has taught it since.
    #[serde(default)]
    pub rejected: bool,
    /// Its said slots as first recorded: name → `{"said", "value",
    /// "after_determiner"}`.
    #[serde(default)]
    pub slots: ToolArgs,
}

impl CanonicalRow {
    /// The action this phrasing is a wording of ([`action_key`]).
    pub fn action(&self) -> String {
        action_key(&self.executor, &self.args_observed)
    }

    /// The request as first said: the canonical text with each slot's
    /// mask replaced by the words that filled it — what the phrasing's
    /// meaning is embedded from.
    pub fn example(&self) -> String {
        let mut out = self.canonical.clone();
        for (name, v) in &self.slots.0 {
            if let Some(said) = v.get("said").and_then(Value::as_str) {
                out = out.replacen(&slots::mask(name), said, 1);
            }
        }
        out
    }

    /// What each said slot was first filled with: name → words.
    pub fn said(&self) -> BTreeMap<String, String> {
        self.slots
            .0
            .iter()
            .filter_map(|(n, v)| v.get("said").and_then(Value::as_str).map(|s| (n.clone(), s.to_owned())))
            .collect()
    }
}

/// The key of an action: the executor and the names of the arguments it
/// takes (`HassTurnOn(area,domain)`). Two phrasings whose calls take the
/// same arguments of the same tool are one action, however their values
/// were said.
pub fn action_key(executor: &str, args: &ToolArgs) -> String {
    let names: Vec<&str> = args.0.keys().map(String::as_str).collect();
    format!("{executor}({})", names.join(","))
}

/// At most this many agreeing similarities are kept per action (the
/// lowest; the rest are counted).
pub const AGREED_KEPT: usize = 32;

/// One action: its uses over its phrasings, its slots' vocabularies, the
/// evidence for its bar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionRow {
    /// The executor.
    pub executor: String,
    /// Uses of its phrasings not rejected.
    pub uses: u32,
    /// `seq` of its first recording.
    pub first_seq: u64,
    /// Each said slot's values.
    pub vocabulary: BTreeMap<String, Vocabulary>,
    /// Similarities at which the model agreed with a phrasing's call,
    /// ascending, at most [`AGREED_KEPT`].
    pub agreed: Vec<f64>,
    /// Agreements beyond those kept (each at or above the highest kept).
    pub agreed_above: u32,
    /// The highest similarity at which the model disagreed.
    pub disagreed: Option<f64>,
}

impl ActionRow {
    fn agree(&mut self, s: f64) {
        let at = self.agreed.partition_point(|x| *x <= s);
        self.agreed.insert(at, s);
        if self.agreed.len() > AGREED_KEPT {
            self.agreed.pop();
            self.agreed_above += 1;
        }
    }

    /// The action's bar (vCache, per entry): the lowest similarity `t` at
    /// which a replay is trusted, from what the model said when it was
    /// asked instead.
    ///
    /// * No evidence: the model's calibration `calibrated`.
    /// * A disagreement at `s`: never at or below `s` (`t > s`, by `step`),
    ///   however high.
    /// * Agreements lower it: `t` is the lowest agreeing similarity, not
    ///   below `floor`, whose estimated error rate — Laplace's rule over
    ///   the comparisons at or above it, `(wrong + 1) / (n + 2)`, with no
    ///   wrong one by construction — is at most `error_rate`.
    pub fn bar(&self, calibrated: f64, floor: f64, error_rate: f64, step: f64) -> f64 {
        let above_wrong = |t: f64| self.disagreed.is_some_and(|d| d >= t);
        let mut bar = calibrated;
        let total = self.agreed.len() + self.agreed_above as usize;
        for (i, s) in self.agreed.iter().enumerate() {
            let s = *s;
            if s >= bar || s < floor || above_wrong(s) {
                continue;
            }
            let n = total - i; // agreements at or above s
            if 1.0 / (n as f64 + 2.0) <= error_rate {
                bar = s;
                break;
            }
        }
        match self.disagreed {
            Some(d) if d + step > bar => (d + step).min(1.0),
            _ => bar,
        }
    }
}

/// The `canonical_queries` projection.
#[derive(Clone)]
pub struct CanonicalQueries {
    rows: Table<CanonicalRow>,
    actions: Table<ActionRow>,
}

impl CanonicalQueries {
    /// Heap bytes held by the rows ([`engram_local_state::heap_bytes`]): what a soak sets
    /// beside RSS.
    pub fn heap_bytes(&self) -> usize {
        use engram_local_state::heap_bytes::{json, string, table};
        table(&self.rows, |r| string(&r.canonical) + string(&r.executor) + json(&r.args_observed) + json(&r.slots))
            + table(&self.actions, |a| {
                string(&a.executor)
                    + a.agreed.capacity() * 8
                    + a.vocabulary
                        .iter()
                        .map(|(k, v)| {
                            string(k)
                                + v.values.iter().map(|(s, x, _)| string(s) + x.to_string().len() + 32).sum::<usize>()
                        })
                        .sum::<usize>()
            })
    }
}

impl Default for CanonicalQueries {
    fn default() -> Self {
        CanonicalQueries { rows: Table::new(b'c'), actions: Table::new(b'a') }
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

    /// The action `key` ([`action_key`]).
    pub fn action(&self, key: &str) -> Option<&ActionRow> {
        self.actions.get(key.as_bytes())
    }

    /// Every action, by key.
    pub fn actions(&self) -> impl Iterator<Item = (String, &ActionRow)> {
        self.actions.iter().map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v))
    }

    /// The phrasings of the action `key`.
    pub fn phrasings_of<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a CanonicalRow> + 'a {
        self.iter().filter(move |r| r.action() == key)
    }

    /// Phrasings not rejected whose action was used at least `min_uses`
    /// times.
    pub fn candidates(&self, min_uses: u32) -> impl Iterator<Item = &CanonicalRow> {
        self.iter()
            .filter(move |r| !r.rejected && r.uses > 0 && self.action(&r.action()).is_some_and(|a| a.uses >= min_uses))
    }

    /// Is the pair rejected (see the module docs)?
    pub fn is_rejected(&self, canonical: &str, executor: &str) -> bool {
        self.get(canonical, executor).is_some_and(|r| r.rejected)
    }

    /// Rows changed since the changes were last taken or forgotten.
    pub fn dirty_len(&self) -> usize {
        self.rows.dirty_len() + self.actions.dirty_len()
    }

    /// Number of phrasings.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Number of actions.
    pub fn action_count(&self) -> usize {
        self.actions.len()
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
        3 // 2: rejection; 3: actions, said slots, comparisons
    }

    fn kinds(&self) -> Option<&'static [EventKind]> {
        Some(&[EventKind::CanonicalRecorded, EventKind::CanonicalRejected, EventKind::CanonicalCompared])
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
                    slots: c.slots.clone(),
                });
                if row.rejected {
                    row.rejected = false;
                    row.args_observed = c.args_observed.clone();
                    row.slots = c.slots.clone();
                }
                row.uses += 1;
                let action = row.action();
                let a = self.actions.entry(action.as_bytes(), || ActionRow {
                    executor: c.executor.clone(),
                    first_seq: env.seq.get(),
                    ..ActionRow::default()
                });
                a.uses += 1;
                for (name, v) in &c.slots.0 {
                    let said = v.get("said").and_then(Value::as_str).unwrap_or_default();
                    let after = v.get("after_determiner").and_then(Value::as_bool).unwrap_or(false);
                    a.vocabulary.entry(name.clone()).or_default().add(
                        said,
                        v.get("value").unwrap_or(&Value::Null),
                        after,
                    );
                }
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
                    slots: ToolArgs::default(),
                });
                let taken = std::mem::take(&mut row.uses);
                row.rejected = true;
                let action = row.action();
                if let Some(a) = self.actions.get_mut(action.as_bytes()) {
                    a.uses = a.uses.saturating_sub(taken);
                    for (name, v) in &c.slots.0 {
                        let said = v.get("said").and_then(Value::as_str).unwrap_or_default();
                        let after = v.get("after_determiner").and_then(Value::as_bool).unwrap_or(false);
                        if let Some(vocabulary) = a.vocabulary.get_mut(name) {
                            vocabulary.take_back(said, v.get("value").unwrap_or(&Value::Null), after);
                        }
                    }
                }
            }
            Event::CanonicalCompared(c) => {
                let Some(row) = self.rows.get(&key(&c.canonical, &c.executor)) else { return };
                let action = row.action();
                if let Some(a) = self.actions.get_mut(action.as_bytes()) {
                    match c.agreed {
                        true => a.agree(c.similarity),
                        false => a.disagreed = Some(a.disagreed.map_or(c.similarity, |d| d.max(c.similarity))),
                    }
                }
            }
            _ => {}
        }
    }

    fn tables(&self) -> Vec<&dyn TableRows> {
        vec![&self.rows, &self.actions]
    }

    fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
        vec![&mut self.rows, &mut self.actions]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_falls_to_agreed_similarities_and_stays_above_a_disagreement() {
        let mut a = ActionRow::default();
        assert_eq!(a.bar(0.8, 0.55, 0.25, 0.01), 0.8, "no evidence: the calibration");
        a.agree(1.0);
        a.agree(0.7);
        // Two agreements at or above 0.7: (0+1)/(2+2) = 0.25.
        assert_eq!(a.bar(0.8, 0.55, 0.25, 0.01), 0.7);
        assert_eq!(a.bar(0.8, 0.55, 0.2, 0.01), 0.8, "too few for a stricter rate");
        a.agree(0.5);
        assert_eq!(a.bar(0.8, 0.55, 0.25, 0.01), 0.7, "never below the floor");
        a.disagreed = Some(0.72);
        assert!((a.bar(0.8, 0.55, 0.25, 0.01) - 0.8).abs() < 1e-9, "agreements under a disagreement do not count");
        a.disagreed = Some(0.9);
        assert!((a.bar(0.8, 0.55, 0.25, 0.01) - 0.91).abs() < 1e-9);
    }
}
