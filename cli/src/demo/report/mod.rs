//! What the demo learned, folded from the log it wrote: the same events
//! `engram replay` shows, so every figure can be checked against them.
//!
//! One pass over the log feeds each event to the fold of the part of the
//! report it bears on — the workload's turns (`turns`), what they left in
//! the learning stores (`learnt`), memory at work (`memory`), and the
//! routing part's sessions (`routing`) — and an in-memory pattern store;
//! [`Report::from_log`] then takes each figure from those. The home part
//! has a data dir of its own, read by [`Home::from_log`] (`home`).

mod home;
mod learnt;
mod memory;
mod routing;
mod turns;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use engram::learning::projections::PatternOutcomes;
use engram::local_state::projector::Projector;
use engram::{EventLog, Seq, SledLog};
use serde::Serialize;

pub use home::Home;

/// The request the report asks the pattern store about: one the workload
/// sends to the planner before the fast path learns it.
pub const RECOMMEND_FOR: &str = "count the words in ~/notes.txt";

/// The whole report (`--json` prints it as it is).
#[derive(Serialize)]
pub struct Report {
    pub utterances: u64,
    pub sessions: u64,
    pub wall_ms: u64,
    pub offline: bool,
    pub embedder: &'static str,
    pub planner_calls_made: u64,
    /// Turns a fast-path layer answered: each a planner call not made.
    pub planner_calls_saved: u64,
    pub saved_pct: f64,
    /// Turns by the layer that answered; `none` for utterances judged not
    /// for the assistant, or a stop.
    pub layers: Layers,
    /// The same, per language of the request (`utterance.received.lang`:
    /// en, it), so that Italian hits, and requests learnt in one language
    /// and served in the other, show.
    pub layers_by_lang: BTreeMap<String, Layers>,
    /// L1 hits on a phrasing learnt only in another language (Italian
    /// repeats of requests learnt in English), each with what it matched.
    pub l1_across_languages: Vec<turns::AcrossLanguages>,
    /// p50 of `turn.completed.latency_ms` per layer (`null`: no such turn).
    pub latency_p50_ms: BTreeMap<&'static str, Option<u64>>,
    pub tools_failed_turns: u64,
    pub patterns: Patterns,
    pub summaries: Summaries,
    pub graph: Graph,
    /// What memory did in the workload's last session.
    pub memory: Memory,
    /// The second part: routing among the two stand-in models.
    pub routing: Routing,
    /// The third part: a home on an MCP server, taught by its scripted
    /// model (its own data dir, `home/`).
    pub home: Home,
    pub data_dir: String,
    pub kept: bool,
    pub replay: String,
}

#[derive(Default, Serialize, Clone)]
pub struct Layers {
    pub l0: u64,
    pub l1: u64,
    pub l2: u64,
    pub planner: u64,
    pub none: u64,
}

#[derive(Serialize)]
pub struct Patterns {
    pub sessions_recorded: u64,
    pub outcomes: u64,
    pub request: &'static str,
    pub chosen_model: Option<String>,
    /// The best model in the cluster, chosen or not (with one model there
    /// is no runner-up, so no gap for a confident choice).
    pub best_model: Option<String>,
    pub best_score: Option<f64>,
    pub confidence: f64,
    pub sample_size: u64,
}

/// Routing among candidates (the demo's second part, sessions
/// `route-…`), from the log.
#[derive(Default, Serialize)]
pub struct Routing {
    /// What served the models.
    pub server: String,
    pub sessions: u64,
    /// Model → (planner turns, turns the user rated good).
    pub models: BTreeMap<String, (u64, u64)>,
    /// Turns exploration sent to a candidate.
    pub explored: u64,
    /// The unseen requests: how each was routed.
    pub unseen: Vec<UnseenRoute>,
}

/// How one unseen request was routed.
#[derive(Serialize)]
pub struct UnseenRoute {
    pub request: String,
    pub model: Option<String>,
    /// The chain slot that chose (`pattern`, `explore`, `default`, …).
    pub chosen_by: Option<String>,
    pub confidence: Option<f64>,
    /// The store's recommendation, whether it took the turn or exploration
    /// did.
    pub store_recommends: Option<String>,
}

#[derive(Default, Serialize)]
pub struct Summaries {
    pub count: u64,
    pub first: Option<String>,
}

/// Memory at work (seed 002), from the log: a later session's question
/// answered from what an earlier one taught, and a follow-up whose "it"
/// came from the turn before.
#[derive(Default, Serialize)]
pub struct Memory {
    /// (request, the steps run, reply) of the last turn that ran `recall`.
    pub recalled: Option<(String, Vec<String>, String)>,
    /// (request, reply) of the first turn answered with what the user
    /// said in an earlier session (the memory index, issue 30).
    pub said_earlier: Option<(String, String)>,
    /// (request, the steps run with their arguments, reply) of the last
    /// turn whose request says "it" and whose steps used an argument the
    /// request does not hold.
    pub follow_up: Option<(String, Vec<String>, String)>,
}

#[derive(Default, Serialize)]
pub struct Graph {
    pub user: u64,
    pub directives: u64,
    pub world: u64,
    /// One fact: (branch, node, fact).
    pub example: Option<(String, String, String)>,
}

impl Report {
    /// Reads the whole log of `data` once.
    /// `embedder`: the id of the embedding model the demo's runtime ran.
    pub fn from_log(
        log: &SledLog,
        wall: Duration,
        data: &Path,
        embedder: &'static str,
        kept: bool,
        home: Home,
    ) -> anyhow::Result<Report> {
        let mut projector = Projector::in_memory(vec![Box::new(PatternOutcomes::default())]);
        let mut routing = routing::RoutingFold::default();
        let mut memory = memory::MemoryFold::default();
        let mut turns = turns::TurnCounts::default();
        let mut learnt = learnt::Learnt::default();
        for env in log.read_from(Seq::FIRST) {
            let env = env?;
            projector.apply(&env);
            if routing::is_routing(&env) {
                routing.apply(&env);
                continue;
            }
            memory.apply(&env);
            turns.apply(&env);
            learnt.apply(&env);
        }
        let store = projector.get::<PatternOutcomes>("pattern_outcomes").cloned().unwrap_or_default();
        let data_dir = data.display().to_string();
        Ok(Report {
            utterances: turns.utterances,
            sessions: turns.sessions.len() as u64,
            wall_ms: wall.as_millis() as u64,
            offline: true,
            embedder,
            planner_calls_made: turns.planner_calls_made,
            planner_calls_saved: turns.planner_calls_saved(),
            saved_pct: turns.saved_pct(),
            latency_p50_ms: turns.latency_p50_ms(),
            layers: turns.layers,
            layers_by_lang: turns.layers_by_lang,
            l1_across_languages: turns.l1_across_languages,
            tools_failed_turns: turns.tools_failed_turns,
            patterns: learnt.patterns(&store),
            summaries: learnt.summaries,
            graph: learnt.graph,
            memory: memory.finish(),
            routing: routing.finish(),
            home,
            replay: format!("engram --data {data_dir} replay"),
            data_dir,
            kept,
        })
    }

    /// The L1 hits across languages, per (request language, learnt in):
    /// how many, and the first as an example.
    fn print_across_languages(&self) {
        let name = |code: &str| match code {
            "en" => "English".to_owned(),
            "it" => "Italian".to_owned(),
            other => other.to_owned(),
        };
        let mut groups: BTreeMap<(String, String), Vec<&turns::AcrossLanguages>> = BTreeMap::new();
        for a in &self.l1_across_languages {
            let learnt: Vec<String> = a.learnt_in.iter().map(|l| name(l)).collect();
            groups.entry((name(&a.lang), learnt.join("/"))).or_default().push(a);
        }
        for ((lang, learnt), hits) in groups {
            let e = hits[0];
            let sim = e.similarity.map_or(String::new(), |s| format!(", similarity {s:.2}"));
            println!(
                "  {lang} requests served by L1 from a phrasing learnt in {learnt}: {} (e.g. {:?} ≈ {:?}{sim})",
                hits.len(),
                e.request,
                e.matched
            );
        }
    }

    /// The human report: a line per figure.
    pub fn print(&self) {
        println!(
            "engram demo: {} utterances in {} sessions, {:.1} s (offline, {})",
            self.utterances,
            self.sessions,
            self.wall_ms as f64 / 1000.0,
            self.embedder
        );
        println!(
            "planner calls: {} made, {} saved by the fast path ({:.0}%)",
            self.planner_calls_made, self.planner_calls_saved, self.saved_pct
        );
        let l = &self.layers;
        println!(
            "fast path: L0 {} · L1 {} · L2 {} · planner {} · not for the assistant / stop {}",
            l.l0, l.l1, l.l2, l.planner, l.none
        );
        let by_lang: Vec<String> = self
            .layers_by_lang
            .iter()
            .map(|(lang, l)| format!("{lang}: L0 {} · L1 {} · L2 {} · planner {}", l.l0, l.l1, l.l2, l.planner))
            .collect();
        if !by_lang.is_empty() {
            println!("  by language — {}", by_lang.join("; "));
        }
        self.print_across_languages();
        let p50: Vec<String> = self
            .latency_p50_ms
            .iter()
            .map(|(layer, ms)| match ms {
                Some(ms) => format!("{layer} {ms} ms"),
                None => format!("{layer} -"),
            })
            .collect();
        println!("turn latency p50: {}", p50.join(" · "));
        if self.tools_failed_turns > 0 {
            println!("turns with a failed tool: {} (not learnt from)", self.tools_failed_turns);
        }
        let p = &self.patterns;
        let rec = match (&p.chosen_model, &p.best_model) {
            (Some(m), _) => format!("{m} (confidence {:.2}, n={})", p.confidence, p.sample_size),
            (None, Some(m)) => format!(
                "none yet; best so far {m} (score {:.2}, n={}, no runner-up to beat)",
                p.best_score.unwrap_or_default(),
                p.sample_size
            ),
            (None, None) => "none yet (no similar turns recorded)".to_owned(),
        };
        println!(
            "pattern store: {} sessions recorded, {} outcomes; for {:?}: {rec}",
            p.sessions_recorded, p.outcomes, p.request
        );
        match &self.summaries.first {
            Some(s) => println!("summaries: {} (first: {s:?})", self.summaries.count),
            None => println!("summaries: {}", self.summaries.count),
        }
        let g = &self.graph;
        let example = match &g.example {
            Some((branch, node, fact)) => format!(" (e.g. {branch}/{node}: {fact:?})"),
            None => String::new(),
        };
        println!("graph facts: USER {} · DIRECTIVES {} · WORLD {}{example}", g.user, g.directives, g.world);
        if let Some((asked, steps, reply)) = &self.memory.recalled {
            println!("memory: {asked:?} → {} → {reply:?} (from an earlier session)", steps.join(", "));
        }
        if let Some((asked, reply)) = &self.memory.said_earlier {
            println!("memory: {asked:?} → {reply:?} (said in passing, sessions earlier)");
        }
        if let Some((asked, steps, reply)) = &self.memory.follow_up {
            println!("follow-up: {asked:?} → {} → {reply:?} (\"it\" from the turn before)", steps.join(", "));
        }
        let r = &self.routing;
        println!("model routing, {} sessions on {}:", r.sessions, r.server);
        let per_model: Vec<String> =
            r.models.iter().map(|(m, (turns, good))| format!("{m} {turns} turns, {good} rated good")).collect();
        println!("  {} · {} turns explored", per_model.join(" · "), r.explored);
        for u in &r.unseen {
            let by = match (u.chosen_by.as_deref(), u.confidence, &u.store_recommends) {
                (Some("pattern"), Some(c), _) => format!("the pattern store (confidence {c:.2})"),
                (Some("explore"), _, Some(m)) => format!("exploration; the store recommends {m}"),
                (Some(by), _, _) => by.to_owned(),
                (None, _, _) => "-".to_owned(),
            };
            println!("  unseen {:?} → {} (chosen by {by})", u.request, u.model.as_deref().unwrap_or("-"));
        }
        self.home.print();
        let home = format!("the home part's: engram --data {} replay", self.home.data_dir);
        if self.kept {
            println!("replay it: {} ({home})", self.replay);
        } else {
            println!("replay it: {} ({home})   (deleted on exit; --keep DIR to keep it)", self.replay);
        }
    }
}
