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
//!
//! This file holds the types the layers share and a request's route
//! through them; the rest is split by what it does: `tables.rs` (the
//! layers' rows and their upkeep), `l1.rs` (a request against the learnt
//! phrasings), `l2.rs` (against the recorded pipelines), `known.rs` (what
//! the learnt rows say of slot values and words), `bars.rs` (the bars and
//! the vote under them) and `unserved.rs` (what is offered when no layer
//! serves).

mod bars;
mod known;
mod l1;
mod l2;
mod tables;
mod unserved;

pub use bars::{BAR_CAP, BAR_STEP, VOTE_MARGIN};
pub use tables::Changes;

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{NearMiss, PlanStep, RouteLayer, ToolArgs};
use serde::Serialize;
use serde_json::Value;

use super::second_reading::{Reading, SecondReader};
use super::{canonical, gate, with_names_as_words, Extracted, L0Table, SlotKind};
use crate::fast_path::{FastPathConfig, MultiToolConfig};
use crate::projections::canonical_queries::ActionRow;

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
        let steps = vec![PlanStep { tool: tool.to_owned(), args: ToolArgs::default() }];
        Some(Decision::served(RouteLayer::L0, steps, None, phrase, "L0: literal phrase".into()))
    }

    /// A layer serves `steps`, matched with `matched` at `similarity`, for
    /// `reason`; the route fills in the rest.
    pub(super) fn served(
        layer: RouteLayer,
        steps: Vec<PlanStep>,
        similarity: Option<f64>,
        matched: String,
        reason: String,
    ) -> Self {
        Decision { layer, steps, similarity, matched: Some(matched), ..Decision::planner(reason, None) }
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
/// confirm ([`second_reading`](super::second_reading)).
#[derive(Default)]
struct Missed {
    near: Option<NearMiss>,
    readings: Vec<Reading>,
    /// The actions L1 read the request as, and how near (a reading that
    /// needed a new value is no nearer than these: [`FastPath::try_l1`]).
    rivals: Vec<(String, f64)>,
    /// The request's proper nouns' words, as the gate folds them: no
    /// reading passes over one ([`FastPath::words_readable`]).
    names: HashSet<String>,
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

/// The router's fast-path tables, ready to answer.
pub struct FastPath {
    l0: L0Table,
    fast: FastPathConfig,
    multi: MultiToolConfig,
    l1: tables::Layer<L1Row>,
    l2: tables::Layer<L2Row>,
    /// The L1 actions' rows (vocabularies, evidence for their bars), by key.
    actions: HashMap<String, ActionRow>,
    /// Each tool's parameter schema (an enum bounds what a slot takes).
    schemas: HashMap<String, Value>,
    /// Every kind of device a tool takes as a value of a kind enum,
    /// stemmed (`fan`, `light`, `tv`): a word that names a thing, which a
    /// reading never passes over ([`FastPath::words_readable`]).
    kinds: HashSet<String>,
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

impl FastPath {
    /// L1 rows and L2 pipelines held.
    pub fn sizes(&self) -> (usize, usize) {
        (self.l1.rows.len(), self.l2.rows.values().map(|(_, p)| p.len()).sum())
    }

    /// Heap bytes of L1 and of L2 (rows, texts, vector indexes;
    /// [`engram_local_state::heap_bytes`]): what a soak sets beside RSS.
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
    /// called for the request at most three times (the request; with
    /// proper nouns, the request with its names as words; with
    /// `chain_to_planner`, its prefix), and for a value new to a slot
    /// once more, with the values that slot and its siblings took (a
    /// caller's memo serves those again); never when L0 answers or no
    /// layer has candidates.
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
    /// ([`second_reading`](super::second_reading);
    /// `[fast_path] second_reading`, on by default). Called at most once,
    /// only when no layer served and some phrasing's action serves.
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
        let finish = |d: Decision, refusals: &[(f64, String)], canon: &str| {
            // A call whose values are not of their parameters' types is a
            // misreading, never served.
            let misfit = d.steps.iter().find_map(|s| crate::plan_check::misfit(s, self.schemas.get(&s.tool)?));
            let mut d = match misfit {
                Some(why) => Decision::planner(why, d.similarity),
                None => d,
            };
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
        let mut second_said = None;
        if let Some(read) = second.filter(|_| self.fast.second_reading) {
            if self.l1.rows.values().any(|(_, r)| self.servable(r)) {
                let neighbours = self.planned_neighbours(&q);
                let plan = read(text);
                let d = Self::confirmed(&missed.readings, &plan)
                    .or_else(|| self.planned_values(&canon, &ex, &neighbours, &missed, &plan, embed));
                if let Some(d) = d {
                    return Ok(finish(d, &refusals, &canon));
                }
                let calls: Vec<String> = plan.iter().map(|s| format!("{} {}", s.tool, s.args.to_json())).collect();
                second_said =
                    Some(format!("second reading: the offline planner's plan {calls:?} is no phrasing's call"));
            }
        }
        let best = refusals.iter().max_by(|a, b| a.0.total_cmp(&b.0)).cloned();
        let mut d = match best {
            Some((sim, why)) => Decision::planner(why, Some(sim)),
            None => Decision::planner("no candidate close enough".into(), None),
        };
        d.near = missed.near.or_else(|| self.taught_guess(&canon, &ex, &q, embed));
        let mut d = finish(d, &refusals, &canon);
        d.trace.extend(second_said);
        Ok(d)
    }

    /// The gate for replaying `text` for `canon`, content words spelt
    /// differently compared by the model (gate rule 4): two words are the
    /// same when their vectors' cosine reaches the word bar. A word that
    /// cannot be embedded is not the same (fail closed). With `row` (an L1
    /// phrasing), content words are compared with every phrasing of its
    /// action too ([`gate::ActionWords`]). `asked`: the request as written
    /// ended with a question mark ([`asked`]).
    fn gate<E>(
        &self,
        canon: &str,
        asked: bool,
        text: &str,
        row: Option<&L1Row>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Result<(), gate::Mismatch> {
        let is_value = |w: &str| {
            row.is_some_and(|r| {
                r.names.iter().any(|n| self.folded_values.get(parameter(n)).is_some_and(|v| v.contains(w)))
            })
        };
        // A slot whose values are covers: the request's fills it.
        let covers = row.is_some_and(|r| {
            let values = |n: &String| self.folded_values.get(parameter(n));
            r.names.iter().filter_map(values).any(|v| v.iter().any(|w| w.split(' ').any(gate::is_cover)))
        });
        let context = row.and_then(|r| self.action_words.get(&r.action)).map(|words| gate::ActionContext {
            words,
            is_value: &is_value,
            covers,
        });
        let bar = self.fast.word_threshold();
        if bar >= 1.0 {
            return gate::check_for(canon, asked, text, context.as_ref(), &mut |_, _| false);
        }
        let mut same = |a: &str, b: &str| similarity(embed, a, b).is_some_and(|s| s >= bar);
        gate::check_for(canon, asked, text, context.as_ref(), &mut same)
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
}

/// Whether the request as written ended with a question mark, which its
/// canonical form drops (the gate's rule 6 reads it).
fn asked(ex: &Extracted) -> bool {
    ex.text.trim_end().ends_with('?')
}

/// The cosine of two texts by the model (its vectors are unit length):
/// the gate's word comparison, L1's and rule 4's wording with values set
/// aside. None when either cannot be embedded.
fn similarity<E>(embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>, a: &str, b: &str) -> Option<f64> {
    match (embed(a), embed(b)) {
        (Ok(x), Ok(y)) => Some(f64::from(x.iter().zip(&y).map(|(p, q)| p * q).sum::<f32>())),
        _ => None,
    }
}

/// A said slot's parameter: its path without an array index (`domain.0` →
/// `domain`).
fn parameter(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
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
    use super::bars::{vote, Short};
    use super::*;
    use crate::projections::{CanonicalQueries, Pipelines};

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
        // The actions' words read again for the action learnt only, as a
        // rebuild would read them all.
        assert_eq!(fp.action_words, fp.l1_action_words());
        assert_eq!(fp.action_words.len(), 3);
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
        // The action the row left is read again too.
        assert_eq!(fp.action_words, fp.l1_action_words());
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
