//! The workload's turns (not the routing part's), counted: utterances and
//! sessions, which layer answered each turn (overall and per language of
//! the request), planner calls, latencies and turns with a failed tool,
//! and the L1 hits on a phrasing learnt in another language only.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use engram::events::payloads::{FastPathHit, RouteLayer, TurnCompleted};
use engram::events::{SessionId, TurnId};
use engram::{Envelope, Event};
use serde::Serialize;

use super::Layers;

/// An L1 hit across languages: a request served by a phrasing learnt only
/// from requests in another language (an Italian repeat of something
/// learnt in English) — what the multilingual embedder buys, shown.
#[derive(Clone, Serialize)]
pub struct AcrossLanguages {
    pub request: String,
    /// The request's language.
    pub lang: String,
    /// The learnt phrasing that matched (`fastpath.hit.matched`).
    pub matched: String,
    /// The languages of the requests it was learnt from.
    pub learnt_in: Vec<String>,
    pub similarity: Option<f64>,
}

/// The workload's turns, counted so far.
#[derive(Default)]
pub(super) struct TurnCounts {
    /// Utterances received.
    pub(super) utterances: u64,
    /// The sessions they came in.
    pub(super) sessions: HashSet<SessionId>,
    /// Plans the planner made.
    pub(super) planner_calls_made: u64,
    /// Turns by the layer that answered, or `none`.
    pub(super) layers: Layers,
    /// The same per language of the request.
    pub(super) layers_by_lang: BTreeMap<String, Layers>,
    /// `turn.completed.latency_ms` by layer name.
    pub(super) latencies: BTreeMap<&'static str, Vec<u64>>,
    /// Turns in which a tool failed.
    pub(super) tools_failed_turns: u64,
    /// L1 hits on a phrasing learnt in another language only.
    pub(super) l1_across_languages: Vec<AcrossLanguages>,
    /// The language of each turn's request, when known.
    lang_of: HashMap<TurnId, String>,
    /// Each turn's request.
    text_of: HashMap<TurnId, String>,
    /// Each learnt phrasing (`canonical.recorded`): the languages of the
    /// requests it was learnt from.
    learnt_in: HashMap<String, BTreeSet<String>>,
}

impl TurnCounts {
    /// Counts one event of the workload.
    pub(super) fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::UtteranceReceived(u) => {
                if let (Some(t), Some(lang)) = (env.turn, &u.lang) {
                    self.lang_of.insert(t, lang.clone());
                }
                if let Some(t) = env.turn {
                    self.text_of.insert(t, u.text.clone());
                }
                self.utterances += 1;
                if let Some(s) = &env.session {
                    self.sessions.insert(s.clone());
                }
            }
            Event::IntentJudged(i) if !i.directed || i.stop || i.query.trim().is_empty() => self.layers.none += 1,
            Event::PlanCreated(_) => self.planner_calls_made += 1,
            Event::TurnCompleted(t) => self.turn_completed(env.turn, t),
            Event::CanonicalRecorded(c) => {
                if let Some(lang) = env.turn.and_then(|t| self.lang_of.get(&t)) {
                    self.learnt_in.entry(c.canonical.clone()).or_default().insert(lang.clone());
                }
            }
            Event::FastPathHit(h) if h.layer == RouteLayer::L1 => self.l1_hit(env.turn, h),
            _ => {}
        }
    }

    /// Keeps an L1 hit whose phrasing was learnt from requests in other
    /// languages only.
    fn l1_hit(&mut self, turn: Option<TurnId>, h: &FastPathHit) {
        let Some(turn) = turn else { return };
        let (Some(lang), Some(learnt)) = (self.lang_of.get(&turn), self.learnt_in.get(&h.matched)) else { return };
        if learnt.contains(lang) {
            return;
        }
        self.l1_across_languages.push(AcrossLanguages {
            request: self.text_of.get(&turn).cloned().unwrap_or_default(),
            lang: lang.clone(),
            matched: h.matched.clone(),
            learnt_in: learnt.iter().cloned().collect(),
            similarity: h.similarity,
        });
    }

    /// Counts a completed turn under its layer (and its request's language),
    /// with its latency and whether a tool failed.
    fn turn_completed(&mut self, turn: Option<TurnId>, t: &TurnCompleted) {
        let by_lang = turn.and_then(|turn| self.lang_of.get(&turn)).cloned();
        for l in
            std::iter::once(&mut self.layers).chain(by_lang.map(|lang| self.layers_by_lang.entry(lang).or_default()))
        {
            match t.layer {
                RouteLayer::L0 => l.l0 += 1,
                RouteLayer::L1 => l.l1 += 1,
                RouteLayer::L2 => l.l2 += 1,
                _ => l.planner += 1,
            }
        }
        self.latencies.entry(layer_name(t.layer)).or_default().push(t.latency_ms);
        self.tools_failed_turns += u64::from(!t.tools_ok);
    }

    /// Turns a fast-path layer answered: each a planner call not made.
    pub(super) fn planner_calls_saved(&self) -> u64 {
        self.layers.l0 + self.layers.l1 + self.layers.l2
    }

    /// The share of planner calls saved, in percent to one decimal.
    pub(super) fn saved_pct(&self) -> f64 {
        let saved = self.planner_calls_saved();
        let asked = saved + self.planner_calls_made;
        if asked == 0 {
            0.0
        } else {
            (1000.0 * saved as f64 / asked as f64).round() / 10.0
        }
    }

    /// p50 of the turn latencies per layer (`None`: no such turn).
    pub(super) fn latency_p50_ms(&self) -> BTreeMap<&'static str, Option<u64>> {
        ["L0", "L1", "L2", "planner"]
            .into_iter()
            .map(|l| (l, self.latencies.get(l).and_then(|v| engram_bench::percentile(v, 50.0))))
            .collect()
    }
}

/// The name a layer's latencies are kept under.
fn layer_name(layer: RouteLayer) -> &'static str {
    match layer {
        RouteLayer::L0 => "L0",
        RouteLayer::L1 => "L1",
        RouteLayer::L2 => "L2",
        _ => "planner",
    }
}
