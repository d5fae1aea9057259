//! When no layer serves alone: a phrasing refused only for its bar or
//! its content words serves when a second reader plans its call
//! ([`FastPath::confirmed`], [`second_reading`]), and, with the model
//! away, the call of the nearest taught phrasing is the refusal's near
//! miss ([`FastPath::taught_guess`], `model_away`). Apart because neither
//! is a layer's own match: both start from what the layers refused.

use std::collections::{BTreeMap, HashSet};

use engram_events::payloads::{NearMiss, PlanStep, RouteLayer};
use serde_json::Value;

use super::{Decision, FastPath, L1_COMPARED};
use crate::fast_path::second_reading::{self, Lacking, Reading, SecondReader, SECOND_READING_BAR};
use crate::fast_path::{gate, model_away, placeholder, slots, Extracted};

impl FastPath {
    /// The reading of `text` the second reader confirms, as an L1 answer
    /// ([`second_reading`]): the reader is asked only when there is one.
    pub(super) fn confirmed(&self, text: &str, readings: &[Reading], read: SecondReader<'_>) -> Option<Decision> {
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
    pub(super) fn words_readable(&self, why: &gate::Mismatch, names: &HashSet<String>) -> bool {
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
}
