//! L1: a request against the learnt phrasings — which are examined
//! (by meaning, by their words), their slots filled from the request and
//! fitted, the similarity with values set aside, and what serves; and
//! L1's rows from the `canonical_queries` projection. Apart from the route
//! because it is the bulk of the decision and L1's alone.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use engram_events::payloads::{NearMiss, PlanStep, RouteLayer};
use serde_json::Value;

use super::bars::Short;
use super::{Decision, FastPath, L1Row, Missed, L1_COMPARED};
use crate::fast_path::second_reading::{Lacking, Reading};
use crate::fast_path::{gate, placeholder, slots, Extracted, FastPathConfig};
use crate::patterns::similarity::cosine;
use crate::projections::canonical_queries::CanonicalRow;
use crate::projections::CanonicalQueries;

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

impl FastPath {
    /// L1: the request against the learnt phrasings (module docs of
    /// [`slots`] and `docs/fast-path.md`). A phrasing is a candidate
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
    pub(super) fn try_l1<E>(
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
            let gate = self.gate(&m.fill.masked, super::asked(ex), &r.canonical, Some(r), embed);
            if let Err(why) = &gate {
                if !matches!(why, gate::Mismatch::Content { .. }) {
                    refusals.push((sim, format!("L1: {:?} refused by the gate: {why}", r.canonical)));
                    continue;
                }
            }
            let values = as_written(&m.values, &ex.text);
            let args = match slots::resolve(&r.args, &values).map(|a| placeholder::resolve(&a, ex)) {
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
                if servable && self.words_readable(&why, &missed.names, &r.executor) {
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
            let reason = format!("L1: similarity {sim:.3} ≥ its bar {bar:.3}, gate passed, slots filled");
            return Some(Decision::served(RouteLayer::L1, steps, Some(sim), r.canonical.clone(), reason));
        }
        missed.rivals.extend(rivals.iter().map(|(a, s)| ((*a).to_owned(), *s)));
        self.neighbourhood_vote(&short)
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
                    super::similarity(embed, &transplanted, text)
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

    /// Whether a phrasing serves: its action was used
    /// `canonical_query_min_uses` times — and, when its call holds a value
    /// the request did not say, either that value is a member of its
    /// parameter's enum (a word implied it: "luce" → `light`) or the
    /// phrasing itself was used that many times. A value the model took
    /// from the conversation ("what's the weather forecast" after asking
    /// about Bologna) is no part of the request: one use of the wording
    /// does not make it the action's.
    pub(super) fn servable(&self, r: &L1Row) -> bool {
        let min = self.fast.canonical_query_min_uses;
        self.actions.get(&r.action).is_some_and(|a| a.uses >= min) && self.values_sound(r)
    }

    /// Whether a phrasing's call holds only values the request said or
    /// implied ([`FastPath::servable`]): no near miss offers one that does
    /// not either (the offline planner would plan the stale value).
    pub(super) fn values_sound(&self, r: &L1Row) -> bool {
        r.uses >= self.fast.canonical_query_min_uses
            || r.unsaid
                .iter()
                .all(|(path, v)| self.enum_of(&r.executor, path).is_some_and(|e| e.iter().any(|m| m == v)))
    }

    /// The value each said slot of `r` takes from `fill`, if every one fits
    /// ([`slots::Vocabulary::fits`]), and how many of them the slot never
    /// took before; or why not, and whether the request has another
    /// reading for it (a new value holding one known for another
    /// parameter: "christmas lights" as a new `name`, with `light` a
    /// `domain`). A new value another action's phrasing says as its own
    /// wording does not fit ([`FastPath::worded_elsewhere`]), nor one
    /// nearer a sibling tool's values ([`FastPath::nearer_elsewhere`]).
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
        // Whether a verb hidden in a slot's span asks what the phrasing
        // does: no pole against it, no action it does not name.
        let (poles, actions) = (gate::poles_of_text(&r.canonical), gate::effectful_actions(&r.canonical));
        let agrees = |verb: &str| {
            gate::clashing_axis(&gate::poles_of_text(verb), &poles).is_none()
                && gate::effectful_actions(verb).is_subset(&actions)
        };
        for name in &r.names {
            let Some(said) = fill.values.get(name) else { return Err((format!("no value for slot {name}"), false)) };
            let enums = self.enum_of(&r.executor, name);
            let vocabulary = action.and_then(|a| a.vocabulary.get(name));
            // An open slot's span may run on to a verb that takes the
            // thing up ("… coffee filters add them"): the thing is the
            // value, when the verb asks what the phrasing does — hidden in
            // the slot, the gate does not see it ("… le mele toglile").
            let resumed = vocabulary
                .filter(|v| v.is_open())
                .and_then(|_| crate::spoken::resumed_thing(said))
                .filter(|(_, verb)| agrees(verb))
                .map(|(thing, _)| thing);
            let said = resumed.as_ref().unwrap_or(said);
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
                        if let Some(tool) = self.worded_elsewhere(&r.action, said) {
                            return Err((format!("{said:?} is {tool}'s wording, not a new {name}"), false));
                        }
                        if let Some(tool) = self.nearer_elsewhere(r, name, v, said, embed) {
                            return Err((
                                format!("{said:?} is nearer the values {tool} took, not a new {name}"),
                                false,
                            ));
                        }
                    }
                    // A thing a verb takes up is framed by it.
                    match known || fill.framed.contains(name) || resumed.is_some() {
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

    /// The tool of another action one of whose open slots took values
    /// nearer by meaning to `said` — new to `own`, a slot of `r`'s action
    /// — than any `own` took: the value says which tool. A household that
    /// taught "astutami la X" with lamps and "accendimi la X per piacere"
    /// with appliances turns off no lamp called "lavatrice"; the planner
    /// reads it. `None` when no other tool's action has an open slot.
    fn nearer_elsewhere<E>(
        &self,
        r: &L1Row,
        name: &str,
        own: &slots::Vocabulary,
        said: &str,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<String> {
        let props = |tool: &str| self.schemas.get(tool).and_then(|s| s.get("properties")).and_then(Value::as_object);
        // A place is a place for every tool: a new room says no kind.
        let place = |tool: &str, slot: &str| {
            let p = super::parameter(slot);
            props(tool).and_then(|ps| ps.get(p)).is_some_and(|spec| crate::spoken::place_property(p, spec))
        };
        if place(&r.executor, name) {
            return None;
        }
        // Sibling tools only: another tool taking an enum this one takes
        // (a `command` of on / off) acts the same way on another kind of
        // thing, and its values tell the kinds apart.
        let enums = |tool: &str| -> BTreeSet<(String, Vec<String>)> {
            props(tool)
                .into_iter()
                .flatten()
                .map(|(k, spec)| (k.clone(), crate::tool_words::enum_members(spec).map(str::to_owned).collect()))
                .filter(|(_, members): &(String, Vec<String>)| !members.is_empty())
                .collect()
        };
        let own_enums = enums(&r.executor);
        // Each tool's enums read once, however many actions it has.
        let tools: BTreeSet<&str> = self.actions.values().map(|a| a.executor.as_str()).collect();
        let siblings: BTreeMap<&str, BTreeSet<(String, Vec<String>)>> = tools
            .into_iter()
            .filter(|t| *t != r.executor)
            .map(|t| (t, enums(t)))
            .filter(|(_, e)| !e.is_disjoint(&own_enums))
            .collect();
        // A kind a sibling lists in an enum of its own is that sibling's:
        // "astutami la tv" turns off no lamp where `unit_type` holds `tv`.
        let value = crate::text::normalize(said);
        let listed = |e: &BTreeSet<(String, Vec<String>)>| {
            e.iter()
                .filter(|e| !own_enums.contains(e))
                .any(|(_, members)| members.iter().any(|m| crate::text::normalize(&m.replace('_', " ")) == value))
        };
        if let Some((t, _)) = siblings.iter().find(|(_, e)| listed(e)) {
            return Some((*t).to_owned());
        }
        let mut rivals: Vec<(&str, &slots::Vocabulary)> = Vec::new();
        for a in self.actions.values().filter(|a| siblings.contains_key(a.executor.as_str())) {
            let other = |(k, v): &(&String, &slots::Vocabulary)| {
                super::parameter(k) != super::parameter(name) && v.is_open() && !place(&a.executor, k)
            };
            rivals.extend(a.vocabulary.iter().filter(other).map(|(_, v)| (a.executor.as_str(), v)));
        }
        if rivals.is_empty() {
            return None;
        }
        let x = embed(said).ok()?;
        let mut nearest = |v: &slots::Vocabulary| -> f64 {
            let mut best = f64::MIN;
            for known in v.said() {
                if let Some(cos) = embed(&known).ok().and_then(|y| cosine(&x, &y)) {
                    best = best.max(cos);
                }
            }
            best
        };
        let mine = nearest(own);
        let mut out: Option<(f64, &str)> = None;
        for (tool, v) in rivals {
            let cos = nearest(v);
            if cos > mine && out.is_none_or(|(b, _)| cos > b) {
                out = Some((cos, tool));
            }
        }
        out.map(|(_, tool)| tool.to_owned())
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
            let Some(cos) = embed(&known).ok().and_then(|y| cosine(&x, &y)) else { continue };
            if cos >= bar && best.as_ref().is_none_or(|(b, _)| cos > *b) {
                best = Some((cos, known));
            }
        }
        best.and_then(|(_, known)| v.value_of(&known))
    }
}

/// L1's rows from the phrasings `rows` (of `canonical`): one per example
/// (the request as first said), the most used phrasing of it — servable
/// ones first, ties to the first seen.
pub(super) fn l1_rows<'a>(
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

/// `canon` with each slot's fill replaced by the words `row`'s example
/// said it with: the request with the example's values, so the two are
/// compared on their wording alone.
fn transplant(canon: &str, fill: &slots::Fill, row: &L1Row) -> String {
    if row.names.is_empty() {
        return canon.to_owned();
    }
    with_own_values(&fill.masked, row)
}

/// `masked` (a request with `row`'s slots masked) with the words `row`'s
/// example said each slot with: L1's measure of a wording with its values
/// set aside, and rule 4's ([`FastPath::planned_values`]).
pub(super) fn with_own_values(masked: &str, row: &L1Row) -> String {
    let mut out = masked.to_owned();
    for name in &row.names {
        if let Some(said) = row.said.get(name) {
            out = out.replacen(&slots::mask(name), said, 1);
        }
    }
    out
}

/// The said values of a fill as the user wrote them in `raw`, hyphens and
/// edge apostrophes and all ([`crate::text::as_written_in`]: "lo-fi
/// beats", not "fi beats"; "mo' arriva", not "mo arriva").
fn as_written(values: &BTreeMap<String, Value>, raw: &str) -> BTreeMap<String, Value> {
    values
        .iter()
        .map(|(k, v)| match v.as_str().and_then(|s| crate::text::as_written_in(raw, s)) {
            Some(said) => (k.clone(), Value::String(said)),
            None => (k.clone(), v.clone()),
        })
        .collect()
}
