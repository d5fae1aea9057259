//! When no layer serves alone: a phrasing refused only for its bar or
//! its content words serves when a second reader plans its call
//! ([`FastPath::confirmed`], [`second_reading`]), and, with the model
//! away, the call of the nearest taught phrasing is the refusal's near
//! miss ([`FastPath::taught_guess`], `model_away`). Apart because neither
//! is a layer's own match: both start from what the layers refused.

use std::collections::{BTreeMap, HashSet};

use engram_events::payloads::{NearMiss, PlanStep, RouteLayer, ToolArgs};
use serde_json::Value;

use super::{Decision, FastPath, L1Row, L1_COMPARED};
use crate::fast_path::second_reading::{self, Lacking, Reading, SECOND_READING_BAR};
use crate::fast_path::{gate, model_away, placeholder, slots, steps_agree, Extracted};

/// How many phrasings nearest a request a second reader's plan is
/// compared with ([`FastPath::planned_neighbours`]): more than L1 examines
/// by meaning, since a wording far from the taught ones ranks the right
/// action's phrasings behind others of the same words.
const PLANNED_NEIGHBOURS: usize = 40;

impl FastPath {
    /// The reading of `text` the second reader confirms, as an L1 answer
    /// ([`second_reading`]): the reader is asked only when there is one.
    pub(super) fn confirmed(readings: &[Reading], plan: &[PlanStep]) -> Option<Decision> {
        let r = second_reading::confirmed(readings, plan)?;
        let lacked = match &r.lacking {
            Lacking::Bar { bar } => format!("under its bar {bar:.3}"),
            Lacking::Words { why } => format!("the gate's words ({why})"),
        };
        let reason = format!("L1: similarity {:.3}, {lacked}; the offline planner plans the same call", r.sim);
        Some(Decision::served(RouteLayer::L1, r.steps.clone(), Some(r.sim), r.phrasing.clone(), reason))
    }

    /// Whether a phrasing the gate refused may still be a reading
    /// ([`second_reading`], rule 1): only content words differ, none of
    /// them a pole (an unknown verb may mean the opposite: "kill the
    /// lights" against "turn on"), and no word only the request says is a
    /// value some slot took (a second room: "lights on in the den and the
    /// nursery") or one of the request's proper nouns, `names` (a call
    /// that does not take a name keeps it as a word of its phrasing: "wave
    /// hello to Luca" is not "wave hello to Marta"). Nor is a kind of
    /// device the home's tools take ([`FastPath::kinds`]) said by the
    /// phrasing alone, or by the request alone and not one its tool `tool`
    /// names or takes, while the other side says a word in its place:
    /// "spegni la tv in salone" against `turnOffLights`' "spegni le luci
    /// in roomnameslot" (`light` a kind) asks for another thing, which a
    /// second reader not knowing the word (or reading it as a room's
    /// lights) would not see; "living room lights at twenty percent"
    /// against a lights' tool's "dim the zoneslot to number percent" does
    /// not.
    pub(super) fn words_readable(&self, why: &gate::Mismatch, names: &HashSet<String>, tool: &str) -> bool {
        let gate::Mismatch::Content { request_only, candidate_only } = why else { return false };
        let value = |w: &String| names.contains(w) || self.folded_values.values().any(|v| v.contains(w));
        let kind = |w: &String| self.kinds.contains(&crate::tool_words::stem(w));
        let (named, takes) =
            (crate::tool_words::name_stems(tool), self.schemas.get(tool).map(crate::spoken::kind_members));
        let its_own = |w: &String| {
            let w = crate::tool_words::stem(w);
            named.contains(&w) || takes.as_ref().is_some_and(|t| t.contains(&w))
        };
        let other_thing = !request_only.is_empty() && candidate_only.iter().any(kind)
            || !candidate_only.is_empty() && request_only.iter().any(|w| kind(w) && !its_own(w));
        !request_only.iter().chain(candidate_only).any(|w| gate::is_pole(w))
            && !request_only.iter().any(value)
            && !other_thing
    }

    /// The phrasings a second reader's plan may be the call of
    /// ([`FastPath::planned_values`]): the [`PLANNED_NEIGHBOURS`] nearest
    /// to the request's vector `q` at [`SECOND_READING_BAR`] or more, of
    /// actions that serve, with their cosines (rule 4 orders what it
    /// examines itself).
    pub(super) fn planned_neighbours(&self, q: &[f32]) -> Vec<(f64, &str, &L1Row)> {
        let near = self.l1.candidates_k("", Some(q), PLANNED_NEIGHBOURS).into_iter();
        let near = near.map(|(t, r, cos)| (f64::from(cos), t, r)).filter(|(cos, _, _)| *cos >= SECOND_READING_BAR);
        near.filter(|(_, _, r)| self.servable(r)).collect()
    }

    /// A learnt phrasing near by meaning serves with the values the second
    /// reader read, when its call with them is that reader's plan exactly
    /// ([`second_reading`], rule 4) — for a wording whose slots the
    /// request's words do not fill ("its pitch dark in the utility room can
    /// you turn the light on" near "hey can you put the lights on in the
    /// zoneslot"), among the phrasings of the plan's tool, nearest first
    /// (by `neighbours`' cosine or with the values set aside, whichever
    /// is nearer). Each value must be words of the request and one its
    /// slot takes ([`slots::Vocabulary::fits`], or a known value of its
    /// parameter) — a new one only where L1 read the request no other way
    /// as near — and the request with them masked must pass the gate as a
    /// reading does ([`FastPath::words_readable`]).
    pub(super) fn planned_values<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        neighbours: &[(f64, &str, &L1Row)],
        missed: &super::Missed,
        plan: &[PlanStep],
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        let [step] = plan else { return None };
        // A phrasing of the tool that read the request itself, with
        // values the plan does not repeat (rule 1 confirmed none): two
        // readers that disagree ("power off the electric blanket": the
        // phrasing's name is "electric blanket", the plan's "power").
        if missed.readings.iter().any(|r| r.steps.iter().any(|s| s.tool == step.tool) && !steps_agree(&r.steps, plan)) {
            return None;
        }
        let rows = self.l1.rows.iter().filter(|(_, (_, r))| r.executor == step.tool && self.servable(r));
        // Every phrasing of the plan's tool whose slots take the plan's
        // values, as near as the request is to it with its values set
        // aside (its own values in their place, as L1 measures) or by
        // the request's vector, whichever is nearer.
        let mut planned: Vec<(f64, &L1Row, Planned)> = Vec::new();
        for (text, (_, r)) in rows {
            let Some(p) = self.planned_fill(canon, ex, r, step) else { continue };
            let transplanted = super::l1::with_own_values(&p.masked, r);
            let set_aside = super::similarity(embed, &transplanted, text).unwrap_or(0.0);
            let near = neighbours.iter().find(|(_, t, _)| *t == text.as_str()).map_or(0.0, |n| n.0);
            let sim = set_aside.max(near);
            if sim >= SECOND_READING_BAR {
                planned.push((sim, r, p));
            }
        }
        planned.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.canonical.cmp(&b.1.canonical)));
        for (sim, r, p) in planned {
            // A new value is one reading of the request among others
            // (L1's rule): none holding another parameter's known value,
            // none where L1 read the request as another action of the
            // tool as near ("the christmas lights": a new room, or a
            // light's name; the plan has chosen the tool).
            let same_tool = |a: &str| self.actions.get(a).is_some_and(|o| o.executor == r.executor);
            let rival = |a: &String, s: &f64| *a != r.action && same_tool(a) && *s >= sim;
            if !p.new.is_empty()
                && (p.new.iter().any(|(name, said)| self.known_elsewhere(name, said).is_some())
                    || p.new.iter().any(|(_, said)| self.modifies_a_kind(canon, said))
                    || missed.rivals.iter().any(|(a, s)| rival(a, s)))
            {
                continue;
            }
            match self.gate(&p.masked, super::asked(ex), &r.canonical, Some(r), embed) {
                Ok(()) => {}
                Err(why) if self.words_readable(&why, &missed.names, &r.executor) => {}
                Err(_) => continue,
            }
            let Some(args) = slots::resolve(&p.template, &p.values) else { continue };
            let steps = vec![PlanStep { tool: r.executor.clone(), args }];
            if !steps_agree(&steps, plan) {
                continue;
            }
            let reason =
                format!("L1: similarity {sim:.3}, its words do not fill its slots; the offline planner plans its call");
            return Some(Decision::served(RouteLayer::L1, steps, Some(sim), r.canonical.clone(), reason));
        }
        None
    }

    /// Whether `said`, words of `canon`, stands right before a kind of
    /// device the home's tools take ("the box fan", "the pantry lights"):
    /// a new value there may be the thing's room or part of its name, and
    /// only the phrasing's own frame (L1 aligned) tells which — the second
    /// reader's word order reads every such word as a room ("mash the
    /// button on the box fan" was `area: "box"`).
    fn modifies_a_kind(&self, canon: &str, said: &str) -> bool {
        let ws: Vec<&str> = crate::text::words(canon).collect();
        let run: Vec<&str> = said.split(' ').collect();
        let at = ws.windows(run.len()).position(|w| w == run.as_slice());
        let next = at.and_then(|i| ws.get(i + run.len()));
        next.is_some_and(|w| self.kinds.contains(&crate::tool_words::folded(w)))
    }

    /// The plan's values in `r`'s slots (rule 4): each bound where the
    /// phrasing's call has its slot, words of the request, and one its
    /// slot takes; None when any is not.
    fn planned_fill(&self, canon: &str, ex: &Extracted, r: &L1Row, step: &PlanStep) -> Option<Planned> {
        let command = |w: &str| self.command_words.contains(w);
        let template = placeholder::resolve(&r.args, ex).ok()?;
        let mut bound = BTreeMap::new();
        for (k, v) in &template.0 {
            if !step.args.0.get(k).is_some_and(|p| bind(v, p, &mut bound)) {
                return None;
            }
        }
        let mut p = Planned { template, values: BTreeMap::new(), masked: canon.to_owned(), new: Vec::new() };
        for name in &r.names {
            let Some(Value::String(said_by_plan)) = bound.get(name) else { return None };
            let read = crate::text::normalize(said_by_plan);
            let (masked, said) = second_reading::masked(&p.masked, &read, &slots::mask(name))?;
            p.masked = masked;
            let enums = self.enum_of(&r.executor, name);
            let vocabulary = self.vocabulary(&r.action, name);
            // A word the lexicon reads as the plan's value ("luce" as
            // `light`, "dell'ingresso" as "ingresso") is that value: the
            // slot is asked about it as the plan wrote it — unless what
            // was taught reads the word as another value ("tapparelle"
            // folds to blind; a home taught it as `shutter`).
            let said = match slots::same_word_run(&said, &read) {
                true => said,
                false => {
                    let taught = vocabulary.and_then(|v| v.value_of(&said)).or_else(|| self.known_as(name, &said));
                    if taught.is_some_and(|t| t.as_str() != Some(said_by_plan.as_str()))
                        || self.taught_as_another(name, &said, said_by_plan)
                    {
                        return None;
                    }
                    read.clone()
                }
            };
            let known_as = self.known_as(name, &said);
            let fitted = vocabulary.and_then(|v| v.fits(&said, enums.as_deref(), &command));
            let value = fitted.or_else(|| known_as.clone())?;
            let known = vocabulary.is_some_and(|v| v.knows(&said))
                || known_as.is_some()
                || enums.as_ref().is_some_and(|e| e.contains(&value));
            if !known {
                p.new.push((name.clone(), said));
            }
            p.values.insert(name.clone(), value);
        }
        Some(p)
    }

    /// Whether a learnt phrasing says `word` and its call gives the
    /// parameter of slot `name` a value it did not say other than `value`
    /// ("chiudi le tapparelle" taught as `shutter`): the word read as
    /// `value` by the lexicon was taught as another.
    fn taught_as_another(&self, name: &str, word: &str, value: &str) -> bool {
        let own = super::parameter(name);
        self.l1.rows.values().any(|(_, r)| {
            crate::text::words(&r.canonical).any(|w| slots::same_word(w, word))
                && r.unsaid.iter().any(|(path, v)| super::parameter(path) == own && v.as_str() != Some(value))
        })
    }

    /// With the model away (`model_away`), when no phrasing came near: the
    /// call of the phrasing nearest by meaning that the gate lets through,
    /// with the values the request holds that its slots took before and
    /// its slots without one left out — the model's choice of tool for
    /// requests like this, for the offline planner to complete. Never
    /// served, and not the evidence a bar is learnt from (the reactor
    /// compares only a near miss with every slot filled).
    pub(super) fn taught_guess<E>(
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
            match self.gate(&fill.masked, super::asked(ex), &phrasing.join(" "), Some(r), embed) {
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
}

/// A phrasing's slots filled from a second reader's plan (rule 4).
struct Planned {
    /// The phrasing's call, placeholders resolved.
    template: ToolArgs,
    /// Slot → the value the plan gave it.
    values: BTreeMap<String, Value>,
    /// The request with those values masked.
    masked: String,
    /// The slots whose value they never took: (slot, as said).
    new: Vec<(String, String)>,
}

/// Binds `template`'s slot placeholders to `plan`'s values where they
/// stand; false when the two differ in shape (the constants are compared
/// later, with the call).
fn bind(template: &Value, plan: &Value, out: &mut BTreeMap<String, Value>) -> bool {
    match (template, plan) {
        (Value::String(s), v) => match slots::placeholder_name(s) {
            Some(name) => match out.get(name) {
                Some(b) => b == v,
                None => {
                    out.insert(name.to_owned(), v.clone());
                    true
                }
            },
            None => true,
        },
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bind(x, y, out)),
        (Value::Object(a), Value::Object(b)) => a.iter().all(|(k, x)| b.get(k).is_some_and(|y| bind(x, y, out))),
        _ => true,
    }
}
