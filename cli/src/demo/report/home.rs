//! The demo's third part, read back from its own data dir's log: each
//! completed turn of the home's workload, by part (taught, new) and by
//! what answered it (the fast path or the scripted model), its steps
//! graded against the request's right call.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use engram::events::payloads::{RouteLayer, TurnCompleted};
use engram::events::{SessionId, TurnId};
use engram::{Envelope, Event, EventLog, Seq, SledLog};
use serde::Serialize;

use crate::demo::home::workload::{self, Part, Request};
use crate::demo::home::{MODEL, SERVER_COMMAND};

/// The home part's figures (`report.home` in `--json`).
#[derive(Default, Serialize)]
pub struct Home {
    /// What served the home's tools and played its model.
    pub server: String,
    /// The tools the MCP server listed.
    pub tools: usize,
    pub sessions: u64,
    /// The teach part's turns.
    pub taught: Tally,
    /// The new part's turns.
    pub new: Tally,
    /// The new requests worded as no taught phrasing is (a subset of
    /// `new`).
    pub new_other_wording: Tally,
    /// New requests per language of the request.
    pub new_by_lang: BTreeMap<String, Tally>,
    /// A few new requests the fast path served: (request, layer, call).
    pub examples: Vec<(String, String, String)>,
    /// The new requests sent to the model.
    pub sent_to_model: Vec<String>,
    /// Every call the fast path served that was not the request's right
    /// call: (request, served call, right call). Never hidden.
    pub wrong: Vec<(String, String, String)>,
    /// Turns with a failed tool call.
    pub tools_failed_turns: u64,
    /// p50 of `turn.completed.latency_ms`: served by the fast path, planned
    /// by the (scripted, local) model.
    pub latency_p50_ms: BTreeMap<&'static str, Option<u64>>,
    pub wall_ms: u64,
    pub data_dir: String,
}

/// Turns of one group.
#[derive(Default, Serialize, Clone)]
pub struct Tally {
    pub requests: u64,
    /// Planned by the model (the scripted one).
    pub planned_by_model: u64,
    /// Planned by the offline planner: the model failed the turn.
    pub planned_offline: u64,
    /// Served by a fast-path layer (L0/L1/L2).
    pub served: u64,
    /// Of `served`, the calls that were not the right one.
    pub served_wrong: u64,
}

impl Tally {
    fn count(&mut self, t: &TurnCompleted, right: bool) {
        self.requests += 1;
        match t.layer {
            RouteLayer::Planner if t.model.as_deref() == Some(MODEL) => self.planned_by_model += 1,
            RouteLayer::Planner => self.planned_offline += 1,
            _ => {
                self.served += 1;
                self.served_wrong += u64::from(!right);
            }
        }
    }
}

/// A call as the report shows it: `HassTurnOn {"area":"garage"}`.
fn call_text(tool: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
    format!("{tool} {}", serde_json::Value::Object(args.clone()))
}

/// The home part's events, folded so far.
struct HomeFold {
    home: Home,
    requests: Vec<Request>,
    texts: HashMap<TurnId, String>,
    sessions: HashSet<SessionId>,
    latencies: BTreeMap<&'static str, Vec<u64>>,
}

impl HomeFold {
    fn apply(&mut self, env: &Envelope) {
        match &env.event {
            Event::UtteranceReceived(u) => {
                if let Some(t) = env.turn {
                    self.texts.insert(t, u.text.clone());
                }
                if let Some(s) = &env.session {
                    self.sessions.insert(s.clone());
                }
            }
            Event::TurnCompleted(t) => {
                let text = env.turn.and_then(|turn| self.texts.get(&turn)).cloned().unwrap_or_default();
                if let Some(r) = workload::find(&self.requests, &text).cloned() {
                    self.turn(&r, t);
                }
            }
            _ => {}
        }
    }

    /// Counts one completed turn of request `r`.
    fn turn(&mut self, r: &Request, t: &TurnCompleted) {
        let right = r.right(&t.steps);
        let served = t.layer != RouteLayer::Planner;
        let h = &mut self.home;
        h.tools_failed_turns += u64::from(!t.tools_ok);
        self.latencies.entry(if served { "fast_path" } else { "model" }).or_default().push(t.latency_ms);
        if r.part == Part::Teach {
            h.taught.count(t, right);
        } else {
            h.new.count(t, right);
            h.new_by_lang.entry(r.lang.clone()).or_default().count(t, right);
            if r.other_wording() {
                h.new_other_wording.count(t, right);
            }
            if !served {
                h.sent_to_model.push(r.text.clone());
            }
        }
        if served && right && r.part == Part::New {
            let layer = format!("{:?}", t.layer);
            h.examples.push((r.text.clone(), layer, call_text(&r.call.tool, &r.call.args)));
        }
        if served && !right {
            let got: Vec<String> = t.steps.iter().map(|s| call_text(&s.tool, &s.args.0)).collect();
            h.wrong.push((r.text.clone(), got.join(" + "), call_text(&r.call.tool, &r.call.args)));
        }
    }

    fn finish(mut self) -> Home {
        self.home.sessions = self.sessions.len() as u64;
        self.home.latency_p50_ms = ["fast_path", "model"]
            .into_iter()
            .map(|k| (k, self.latencies.get(k).and_then(|v| engram_bench::percentile(v, 50.0))))
            .collect();
        self.home.examples = pick_examples(std::mem::take(&mut self.home.examples), &self.requests);
        self.home
    }
}

/// Three served examples at most, each of another tool: an English one,
/// an Italian one and one of another wording when there are, else the
/// first of the rest.
fn pick_examples(all: Vec<(String, String, String)>, requests: &[Request]) -> Vec<(String, String, String)> {
    let req = |text: &str| workload::find(requests, text);
    let tool = |e: &(String, String, String)| e.2.split(' ').next().unwrap_or_default().to_owned();
    let mut picked: Vec<(String, String, String)> = Vec::new();
    let wants: [&dyn Fn(&Request) -> bool; 4] = [
        &|r| r.lang == "en" && !r.other_wording(),
        &|r| r.lang == "it" && !r.other_wording(),
        &Request::other_wording,
        &|_| true,
    ];
    for want in wants {
        let next = all.iter().find(|e| req(&e.0).is_some_and(want) && !picked.iter().any(|p| tool(p) == tool(e)));
        if let (Some(e), true) = (next, picked.len() < 3) {
            picked.push(e.clone());
        }
    }
    picked
}

impl Home {
    /// Reads the home part's whole log (in `dir`); `wall`: how long the part
    /// took.
    pub fn from_log(log: &SledLog, dir: &Path, wall: std::time::Duration) -> anyhow::Result<Home> {
        let mut fold = HomeFold {
            home: Home {
                server: format!("MCP server `engram {SERVER_COMMAND}`, scripted model {MODEL}"),
                tools: crate::demo::home::tool_count(),
                wall_ms: wall.as_millis() as u64,
                data_dir: dir.display().to_string(),
                ..Home::default()
            },
            requests: workload::requests()?,
            texts: HashMap::new(),
            sessions: HashSet::new(),
            latencies: BTreeMap::new(),
        };
        for env in log.read_from(Seq::FIRST) {
            fold.apply(&env?);
        }
        Ok(fold.finish())
    }

    /// The human report's lines.
    pub fn print(&self) {
        let t = &self.taught;
        let n = &self.new;
        let planned = match t.planned_offline {
            0 => format!("the model planned {}", t.planned_by_model),
            off => format!("the model planned {}, the offline planner {off}", t.planned_by_model),
        };
        let taught_served = match t.served {
            0 => String::new(),
            s => format!(", the fast path served {s}{}", wrong_note(t.served_wrong)),
        };
        println!(
            "home ({}, {} tools): taught {} requests ({planned}{taught_served}); then {} new: {} served by the fast path{}, {} sent to the model",
            self.server,
            self.tools,
            t.requests,
            n.requests,
            n.served,
            wrong_note(n.served_wrong),
            n.planned_by_model + n.planned_offline,
        );
        let o = &self.new_other_wording;
        let by_lang: Vec<String> =
            self.new_by_lang.iter().map(|(lang, l)| format!("{lang} {}/{}", l.served, l.requests)).collect();
        let p50 =
            |k: &str| self.latency_p50_ms.get(k).copied().flatten().map_or("-".to_owned(), |ms| format!("{ms} ms"));
        println!(
            "  new served, by language: {} · taught phrasings with new values {}/{} · other wordings {}/{}; turn p50: fast path {} · scripted model {}; {:.1} s",
            by_lang.join(" · "),
            n.served - o.served,
            n.requests - o.requests,
            o.served,
            o.requests,
            p50("fast_path"),
            p50("model"),
            self.wall_ms as f64 / 1000.0
        );
        for (request, layer, call) in &self.examples {
            println!("  {request:?} → {layer} {call}");
        }
        for (request, got, want) in &self.wrong {
            println!("  WRONG: {request:?} → {got} (right: {want})");
        }
        if !self.sent_to_model.is_empty() {
            let quoted: Vec<String> = self.sent_to_model.iter().map(|s| format!("{s:?}")).collect();
            println!("  sent to the model: {}", quoted.join(", "));
        }
        if self.tools_failed_turns > 0 {
            println!("  turns with a failed tool call: {}", self.tools_failed_turns);
        }
    }
}

/// "(all right, 0 wrong)", or how many were wrong: the count is said
/// either way, so that a zero is a figure and not an omission.
fn wrong_note(wrong: u64) -> String {
    match wrong {
        0 => " (all right, 0 wrong)".to_owned(),
        w => format!(" ({w} WRONG)"),
    }
}
