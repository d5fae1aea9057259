//! What the model taught the offline planner: the requests it answered
//! well, as example phrasings of the tools it answered them with.
//!
//! The offline planner knows a tool by its description, name and
//! parameters: words its author wrote, not the words people say. Every
//! request the model answered well with one tool is a phrasing of that
//! tool in the user's own words ("kill the lights in the sunroom" for
//! `HassTurnOff`), and with the model away the planner compares a request
//! with those too ([`crate::offline_planner`], its rule 11). Rules:
//!
//! 1. **One example per learnt phrasing.** The fast path's canonical
//!    queries hold one row per phrasing (canonical text, tool) the model
//!    taught; its example ([`CanonicalRow::example`], the request as first
//!    said, values and all) is embedded once. Three requests of one
//!    phrasing are one example: the words are what is learnt, not the
//!    values.
//! 2. **A rejected phrasing teaches nothing**, and one rejected after it
//!    taught is forgotten: a verdict below the learning bar takes back
//!    what the turn taught, here as in the fast path.
//! 3. **Nothing of its own is stored.** It is derived from the
//!    canonical-queries projection, itself a fold of the log: the router
//!    fills it from the rows it holds at start and from each learnt turn,
//!    so a replay or a rebuild teaches the same examples.
//! 4. **Keyed by tool name.** A tool the catalogue does not offer (an MCP
//!    server gone) keeps its examples; the planner compares only the tools
//!    it has, and they count again when the tool is back.
//! 5. **The values the model passed are learnt too.** Each said slot's
//!    vocabulary (the values the user said and the model passed, over
//!    every phrasing of an action: the projection's action rows) is kept
//!    by tool and parameter ([`TaughtPhrasings::learn_values`]): with the
//!    model away, the rooms, doors and speakers of this home are known by
//!    the names the model gave them ([`crate::arguments::learnt_values`]).
//!    Rebuilt per tool from the projection, so a value a rejected turn
//!    taught is gone with it.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use crate::fast_path::decision::BatchEmbed;
use crate::fast_path::slots;
use crate::projections::canonical_queries::CanonicalRow;
use crate::projections::CanonicalQueries;

/// The values a parameter has taken: (as said, as passed), oldest first.
pub type LearntValues = Vec<(String, Value)>;

/// The example phrasings the model taught, by tool (module docs).
#[derive(Debug, Default)]
pub struct TaughtPhrasings {
    /// Tool → canonical text → the example's vector.
    by_tool: HashMap<String, HashMap<String, Vec<f32>>>,
    /// Tool → parameter → the string values the model passed that the
    /// user said (rule 5).
    values: HashMap<String, BTreeMap<String, LearntValues>>,
}

impl TaughtPhrasings {
    /// Takes in `rows` (rules 1 and 2): a row not held yet is embedded
    /// with `embed` (its example, in one batch), a rejected one dropped.
    /// Returns how many examples were added. On an embedding error nothing
    /// of the batch is added, and the same rows may be given again.
    pub fn sync<'a, E>(
        &mut self,
        rows: impl IntoIterator<Item = &'a CanonicalRow>,
        embed: BatchEmbed<'_, E>,
    ) -> Result<usize, E> {
        let mut new: Vec<(&str, &str, String)> = Vec::new();
        // The rows this batch takes, once each, without a scan per row.
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        for r in rows {
            let held = self.by_tool.get(&r.executor).is_some_and(|t| t.contains_key(&r.canonical));
            if r.rejected {
                if let Some(t) = self.by_tool.get_mut(&r.executor) {
                    t.remove(&r.canonical);
                }
            } else if !held && seen.insert((&r.executor, &r.canonical)) {
                new.push((&r.executor, &r.canonical, r.example()));
            }
        }
        if new.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = new.iter().map(|(_, _, x)| x.as_str()).collect();
        let vectors = embed(&texts)?;
        let added = new.len().min(vectors.len());
        for ((tool, canonical, _), v) in new.into_iter().zip(vectors) {
            self.by_tool.entry(tool.to_owned()).or_default().insert(canonical.to_owned(), v);
        }
        Ok(added)
    }

    /// Takes in the values the model passed for the tools of `rows` (rule
    /// 5): each such tool's are rebuilt from `canonical`, every phrasing
    /// of it not rejected, its action's vocabulary per said slot.
    pub fn learn_values<'a>(&mut self, canonical: &CanonicalQueries, rows: impl IntoIterator<Item = &'a CanonicalRow>) {
        let tools: HashSet<&str> = rows.into_iter().map(|r| r.executor.as_str()).collect();
        let mut rebuilt: HashMap<&str, BTreeMap<String, LearntValues>> = HashMap::new();
        // (action, slot) pairs taken: a slot's vocabulary is its action's,
        // over every phrasing (one with the value in its words, not a
        // slot, adds none). One pass over the rows, whatever the tools.
        let mut taken: HashSet<(String, &str)> = HashSet::new();
        for r in canonical.iter().filter(|r| !r.rejected && tools.contains(r.executor.as_str())) {
            let key = r.action();
            let Some(action) = canonical.action(&key) else { continue };
            let by_param = rebuilt.entry(r.executor.as_str()).or_default();
            for (param, v) in &r.args_observed.0 {
                let Some(slot) = v.as_str().and_then(slots::placeholder_name) else { continue };
                let Some(vocabulary) = action.vocabulary.get(slot) else { continue };
                if !taken.insert((key.clone(), slot)) {
                    continue;
                }
                let list = by_param.entry(param.clone()).or_default();
                for (said, value, _) in &vocabulary.values {
                    if value.is_string() && !list.iter().any(|(s, v)| s == said && v == value) {
                        list.push((said.clone(), value.clone()));
                    }
                }
            }
        }
        for tool in tools {
            match rebuilt.remove(tool).filter(|p| !p.is_empty()) {
                Some(by_param) => self.values.insert(tool.to_owned(), by_param),
                None => self.values.remove(tool),
            };
        }
    }

    /// What `rows` (phrasings of `canonical`) teach: their examples
    /// ([`TaughtPhrasings::sync`]) and the values the model passed for
    /// their tools ([`TaughtPhrasings::learn_values`]) — what the router
    /// hands the offline planner, and the learning bench the same.
    pub fn learn<'a, E>(
        &mut self,
        canonical: &CanonicalQueries,
        rows: impl IntoIterator<Item = &'a CanonicalRow>,
        embed: BatchEmbed<'_, E>,
    ) -> Result<usize, E> {
        let rows: Vec<&CanonicalRow> = rows.into_iter().collect();
        self.learn_values(canonical, rows.iter().copied());
        self.sync(rows, embed)
    }

    /// The values the model passed for `tool`'s parameter `param` (rule 5).
    pub fn values(&self, tool: &str, param: &str) -> &[(String, Value)] {
        self.values.get(tool).and_then(|p| p.get(param)).map_or(&[], Vec::as_slice)
    }

    /// The words `tool`'s taught phrasings say around their values (their
    /// canonical texts without the slots' masks): what a value of its is
    /// not ([`crate::offline_planner::property_roles`], rule 5).
    pub fn said_around(&self, tool: &str) -> HashSet<&str> {
        let phrasings = self.by_tool.get(tool).into_iter().flat_map(|t| t.keys());
        phrasings.flat_map(|c| c.split_whitespace()).filter(|w| !slots::is_mask(w)).collect()
    }

    /// Whether the model passed values for any parameter of `tool`.
    pub fn has_values(&self, tool: &str) -> bool {
        self.values.contains_key(tool)
    }

    /// Every tool with values learnt for a parameter named `param`.
    pub fn tools_with(&self, param: &str) -> impl Iterator<Item = &str> + '_ {
        let param = param.to_owned();
        self.values.iter().filter(move |(_, p)| p.contains_key(&param)).map(|(t, _)| t.as_str())
    }

    /// The best cosine of `v` (a unit vector) to an example of `tool`;
    /// `None` when it has none.
    pub fn nearest(&self, tool: &str, v: &[f32]) -> Option<f32> {
        self.nearest_where(tool, v, |_| true)
    }

    /// [`TaughtPhrasings::nearest`] among the examples whose canonical text
    /// `keep` accepts (the offline planner's rule 11: an example of the
    /// other pole, or of another thing, stands for nothing the request
    /// asks).
    ///
    /// `keep` reads an example's words, which costs far more than its
    /// cosine: it is asked only of an example nearer than the best kept
    /// so far (a few per call, where asking it of every example made each
    /// turn of a long session slower than the last).
    pub fn nearest_where(&self, tool: &str, v: &[f32], keep: impl Fn(&str) -> bool) -> Option<f32> {
        let examples = self.by_tool.get(tool)?;
        let mut best: Option<f32> = None;
        for (canonical, e) in examples {
            let cos = e.iter().zip(v).map(|(a, b)| a * b).sum::<f32>();
            if best.is_none_or(|b| cos > b) && keep(canonical) {
                best = Some(cos);
            }
        }
        best
    }

    /// Examples held, over every tool.
    pub fn len(&self) -> usize {
        self.by_tool.values().map(HashMap::len).sum()
    }

    /// Whether no example is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held (texts and vectors; [`engram_local_state::heap_bytes`]): what a soak
    /// sets beside RSS.
    pub fn heap_bytes(&self) -> usize {
        use engram_local_state::heap_bytes::string;
        let examples: usize = self
            .by_tool
            .iter()
            .map(|(tool, rows)| {
                string(tool) + rows.iter().map(|(c, v)| string(c) + v.capacity() * 4 + 48).sum::<usize>()
            })
            .sum();
        let values: usize = self
            .values
            .iter()
            .flat_map(|(tool, params)| {
                std::iter::once(string(tool)).chain(params.iter().map(|(p, vs)| {
                    string(p) + vs.iter().map(|(s, v)| string(s) + v.to_string().len() + 64).sum::<usize>()
                }))
            })
            .sum();
        examples + values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::ToolArgs;

    fn row(canonical: &str, tool: &str, rejected: bool) -> CanonicalRow {
        CanonicalRow {
            canonical: canonical.into(),
            executor: tool.into(),
            args_observed: ToolArgs::default(),
            uses: 1,
            first_seq: 1,
            rejected,
            slots: ToolArgs::default(),
        }
    }

    /// A vector per text: the texts seen so far, one axis each.
    fn embedder(seen: &mut Vec<String>) -> impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, ()> + '_ {
        move |texts: &[&str]| {
            Ok(texts
                .iter()
                .map(|t| {
                    seen.push(t.to_string());
                    let mut v = vec![0.0; 8];
                    v[seen.len() - 1] = 1.0;
                    v
                })
                .collect())
        }
    }

    #[test]
    fn each_phrasing_is_embedded_once_and_a_rejected_one_is_forgotten() {
        let mut taught = TaughtPhrasings::default();
        let mut seen = Vec::new();
        let rows = [row("kill the lights", "off", false), row("lights out", "off", false)];
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(2));
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(0), "held rows are not embedded again");
        assert_eq!(seen, ["kill the lights", "lights out"]);
        let mut axis = vec![0.0; 8];
        axis[1] = 1.0;
        assert_eq!(taught.nearest("off", &axis), Some(1.0));
        assert_eq!(taught.nearest("on", &axis), None);
        assert_eq!(taught.sync(&[row("lights out", "off", true)], &mut embedder(&mut seen)), Ok(0));
        assert_eq!(taught.nearest("off", &axis), Some(0.0), "the rejected example no longer counts");
        assert_eq!(taught.len(), 1);
    }

    /// `nearest_where` is the best cosine among the examples kept (it asks
    /// `keep` only of those nearer than the best kept so far).
    #[test]
    fn the_nearest_kept_example_is_the_best_cosine_kept() {
        let mut taught = TaughtPhrasings::default();
        let mut seen = Vec::new();
        let texts = ["a", "b", "c", "d", "e"];
        let rows: Vec<CanonicalRow> = texts.iter().map(|t| row(t, "tool", false)).collect();
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(5));
        // Cosines 0.9 (a), 0.8 (b), 0.5, 0.4, 0.3; "a" is not kept.
        let v = [0.9f32, 0.8, 0.5, 0.4, 0.3, 0.0, 0.0, 0.0];
        let asked = std::cell::RefCell::new(Vec::<String>::new());
        let keep = |c: &str| {
            asked.borrow_mut().push(c.to_owned());
            c != "a"
        };
        assert_eq!(taught.nearest_where("tool", &v, keep), Some(0.8));
        assert!(asked.borrow().contains(&"b".to_owned()), "{asked:?}");
        assert_eq!(taught.nearest_where("tool", &v, |c| c == "e"), Some(0.3));
        assert_eq!(taught.nearest_where("tool", &v, |_| false), None);
    }

    /// Rule 5: the values of every phrasing of an action, by parameter;
    /// a turn rejected takes its value back.
    #[test]
    fn the_values_the_model_passed_are_kept_by_tool_and_parameter() {
        use engram_events::payloads::{CanonicalRecorded, CanonicalRejected};
        use engram_events::{ActorKind, Envelope, EvalId, TurnId};
        use engram_local_state::projector::Projection;
        let said = |room: &str| ToolArgs::from_json(&format!(r#"{{"room": {{"said": "{room}", "value": "{room}"}}}}"#));
        let mut canonical = CanonicalQueries::default();
        let record = |c: &mut CanonicalQueries, text: &str, room: &str| {
            let e = CanonicalRecorded {
                canonical: text.into(),
                executor: "set_heating".into(),
                args_observed: ToolArgs::from_json(r#"{"room": "{slot:room}", "degrees": "{number}"}"#).unwrap(),
                slots: said(room).unwrap(),
            };
            c.apply(&Envelope::new(ActorKind::Router, e));
        };
        record(&mut canonical, "set the heating in the roomslot to number degrees", "kitchen");
        record(&mut canonical, "heat the roomslot to number", "office");
        let mut taught = TaughtPhrasings::default();
        taught.learn_values(&canonical, canonical.iter());
        let rooms =
            |t: &TaughtPhrasings| t.values("set_heating", "room").iter().map(|(s, _)| s.clone()).collect::<Vec<_>>();
        assert_eq!(rooms(&taught), ["kitchen", "office"], "both phrasings' values, of one action");
        assert_eq!(taught.tools_with("room").collect::<Vec<_>>(), ["set_heating"]);
        let rejected = CanonicalRejected {
            canonical: "heat the roomslot to number".into(),
            executor: "set_heating".into(),
            subject_turn: TurnId::derive(chrono::Utc::now(), &[b"t"]),
            eval_id: EvalId::derive(chrono::Utc::now(), &[b"e"]),
            score: 0.0,
            slots: said("office").unwrap(),
        };
        canonical.apply(&Envelope::new(ActorKind::Router, rejected));
        taught.learn_values(&canonical, canonical.iter());
        assert_eq!(rooms(&taught), ["kitchen"], "the rejected turn's value is taken back");
    }

    #[test]
    fn a_failed_embedding_adds_nothing_and_the_rows_can_be_given_again() {
        let mut taught = TaughtPhrasings::default();
        let rows = [row("kill the lights", "off", false)];
        assert_eq!(taught.sync(&rows, &mut |_: &[&str]| Err::<Vec<Vec<f32>>, _>("down")), Err("down"));
        assert!(taught.is_empty());
        let mut seen = Vec::new();
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(1));
    }
}
