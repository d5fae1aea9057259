//! The home: learning by meaning graded on a household's requests written
//! apart from the code (`tests/fixtures/home/`, its README says how).
//!
//! Per split (`dev`, tuned on; `heldout`, never), the same protocol as a
//! user with a scripted model:
//!
//! 1. **Teach.** Every `teach` row, in file order, goes through the fast
//!    path as the router runs it; what the fast path does not answer, the
//!    model answers with the row's call; every answer is rated (`:good`
//!    when it is the row's call, `:bad` otherwise) — the events the live
//!    runtime writes, folded by the same reactor.
//! 2. **Ask anew.** Every other row goes through the fast path as taught
//!    (nothing more is learnt from them): served right, served wrong (a
//!    call other than the row's — must be 0), or sent to the model; per
//!    role (`new`: a taught phrasing with other values; `untaught`: another
//!    wording or language; `none`: no tool fits) and language.
//! 3. **The model away.** The same rows with no model: the fast path, then
//!    the offline planner over the home's tools, with what was taught.
//! 4. **Nothing taught.** The offline planner alone over every row but the
//!    teach rows.
//!
//! A call is right when its tool is the row's and its arguments are the
//! row's: the same names, strings equal but for case and surrounding white
//! space, numbers by value, arrays as sets.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use anyhow::Context;
use chrono::{DateTime, Duration, FixedOffset, Utc};
use engram::actors::config::Config;
use engram::actors::fast_path_service::FastPathService;
use engram::events::payloads::{
    EvalCompleted, FastPathHit, FastPathMissed, JudgeKind, PlanStep, RouteLayer, ToolArgs, TurnCompleted,
};
use engram::events::rust_decimal::Decimal;
use engram::events::{ActorKind, Envelope, EvalId, EventId, SessionId, TurnId};
use engram::learning::embedder::Embedder;
use engram::learning::offline_planner::{OfflinePlanner, ToolDescription};
use engram::learning::projections::ActiveDays;
use engram::learning::reactors::{FastPathReactor, Reactor};
use engram::learning::taught_phrasings::TaughtPhrasings;
use serde::Serialize;
use serde_json::Value;

/// The home's tools (an MCP server's listing).
pub const TOOLS: &str = include_str!("../../tests/fixtures/home/tools.json");
/// The home's requests (JSON Lines).
pub const REQUESTS: &str = include_str!("../../tests/fixtures/home/requests.jsonl");

/// The model a scripted answer is recorded as.
const MODEL: &str = "scripted:home";

/// One request of the set.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Row {
    /// Its id.
    pub id: String,
    /// `dev` or `heldout`.
    pub split: String,
    /// `en` or `it`.
    pub lang: String,
    /// `teach`, `new`, `untaught` or `none`.
    pub role: String,
    /// Worded close to a taught phrasing, with another call.
    #[serde(default)]
    pub hard: bool,
    /// What the user said.
    pub text: String,
    /// The right call, or none.
    pub call: Option<Call>,
}

/// A call of the set.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Call {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: serde_json::Map<String, Value>,
}

impl Call {
    fn step(&self) -> PlanStep {
        PlanStep { tool: self.tool.clone(), args: ToolArgs(self.args.clone()) }
    }
}

/// A home: its tools and its requests, in the format of
/// `tests/fixtures/home/` (its README). The bundled one is the default;
/// `engram bench learning --home-dir DIR` grades another, written apart
/// from the code as the first was — a second household is how a rule
/// tuned on one home's wordings shows whether it carries to another's.
#[derive(Clone, Debug)]
pub struct Fixture {
    /// Where it came from, for errors and the report.
    pub name: String,
    /// `tools.json`: the tools as an MCP server lists them.
    pub tools: String,
    /// `requests.jsonl`.
    pub requests: String,
}

impl Fixture {
    /// The home bundled with the bench (`tests/fixtures/home/`).
    pub fn bundled() -> Fixture {
        Fixture { name: "tests/fixtures/home".into(), tools: TOOLS.into(), requests: REQUESTS.into() }
    }

    /// A home in `dir`: its `tools.json` and `requests.jsonl`.
    pub fn load(dir: &std::path::Path) -> anyhow::Result<Fixture> {
        let read = |f: &str| {
            let path = dir.join(f);
            std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
        };
        Ok(Fixture { name: dir.display().to_string(), tools: read("tools.json")?, requests: read("requests.jsonl")? })
    }

    /// The home's tools as the planner sees them.
    pub fn tools(&self) -> anyhow::Result<Vec<ToolDescription>> {
        let list: Vec<Value> =
            serde_json::from_str(&self.tools).with_context(|| format!("{}/tools.json", self.name))?;
        Ok(list
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap_or_default().to_owned(),
                    t["description"].as_str().unwrap_or_default().to_owned(),
                    t["inputSchema"].clone(),
                )
            })
            .collect())
    }

    /// The home's rows.
    pub fn rows(&self) -> anyhow::Result<Vec<Row>> {
        self.requests
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{}/requests.jsonl:{}", self.name, i + 1)))
            .collect()
    }
}

/// Whether `got` is the call `want` (module docs).
pub fn right(want: Option<&Call>, got: &[PlanStep]) -> bool {
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::String(x), Value::String(y)) => x.trim().eq_ignore_ascii_case(y.trim()),
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Number(x), Value::String(y)) | (Value::String(y), Value::Number(x)) => {
                y.trim().parse::<f64>().ok() == x.as_f64()
            }
            (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().all(|v| y.iter().any(|w| same(v, w))),
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }
    match (want, got) {
        (None, []) => true,
        (Some(c), [s]) => {
            s.tool == c.tool
                && s.args.0.len() == c.args.len()
                && c.args.iter().all(|(k, v)| s.args.0.get(k).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

/// Counts for one group of rows.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Rows asked.
    pub asked: usize,
    /// Answered by the fast path with the row's call.
    pub served: usize,
    /// Answered by the fast path with another call: must be 0.
    pub wrong: usize,
    /// With the model away: the right call (or none when none fits), by the
    /// fast path or the offline planner.
    pub offline_right: usize,
    /// With nothing taught and no model: the offline planner's right calls.
    pub untaught_offline_right: usize,
}

/// One split's figures.
#[derive(Serialize, Debug, Clone, Default)]
pub struct SplitScore {
    /// `dev` or `heldout`.
    pub split: String,
    /// Teach rows, and of them answered by the fast path (right, wrong).
    pub taught: (usize, usize, usize),
    /// Per `role/lang` (`new/en`, `untaught/it`, `none/en`, …).
    pub groups: BTreeMap<String, Tally>,
    /// What went wrong, for a report's reader.
    #[serde(skip)]
    pub misses: Vec<String>,
    /// Near misses of the rows the planner answered: (similarity, right).
    #[serde(skip)]
    pub near: Vec<(f64, bool)>,
}

impl SplitScore {
    /// The sum over groups whose key starts with `prefix`.
    pub fn total(&self, prefix: &str) -> Tally {
        self.groups.iter().filter(|(k, _)| k.starts_with(prefix)).fold(Tally::default(), |a, (_, t)| Tally {
            asked: a.asked + t.asked,
            served: a.served + t.served,
            wrong: a.wrong + t.wrong,
            offline_right: a.offline_right + t.offline_right,
            untaught_offline_right: a.untaught_offline_right + t.untaught_offline_right,
        })
    }
}

/// The instant the set is said at.
fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").expect("a valid instant")
}

/// Teaches a split and asks it anew (module docs).
pub fn score(embedder: Arc<dyn Embedder>, home: &Fixture, split: &str) -> anyhow::Result<SplitScore> {
    let tools = home.tools()?;
    let rows: Vec<Row> = home.rows()?.into_iter().filter(|r| r.split == split).collect();
    let schemas: HashMap<String, Value> = tools.iter().map(|(n, _, p)| (n.clone(), p.clone())).collect();
    // The defaults, with ENGRAM_* overrides (a bar tried on dev).
    let config = Config::load(None, std::env::vars())?;
    let offset = *now().offset();
    let mut reactor = FastPathReactor::new(
        Default::default(),
        Default::default(),
        &ActiveDays::default(),
        config.multi_tool_fast_path.clone(),
        offset,
    );
    let mut fast = FastPathService::build(
        (&config.fast_path, &config.multi_tool_fast_path),
        reactor.canonical_queries(),
        reactor.pipelines(),
        embedder.clone(),
        None,
    )?;
    fast.set_schemas(schemas.clone());
    let mut out = SplitScore { split: split.to_owned(), ..Default::default() };
    let mut teacher = Teacher { seq: 0, n: 0 };
    let offline = OfflinePlanner::new(embedder.clone(), &tools)?;
    // The router's second reader: the offline planner, by the descriptions.
    let second = |text: &str| offline.plan(text, now()).unwrap_or_default();
    for r in rows.iter().filter(|r| r.role == "teach") {
        let d = fast.route_read_twice(&r.text, now(), &mut { second })?;
        explain(r, &d);
        let want = r.call.as_ref();
        out.taught.0 += 1;
        let (layer, steps) = match d.layer {
            RouteLayer::Planner => (RouteLayer::Planner, want.map(Call::step).into_iter().collect()),
            layer => {
                let ok = right(want, &d.steps);
                out.taught.1 += usize::from(ok);
                out.taught.2 += usize::from(!ok);
                if !ok {
                    out.misses.push(format!("teach {}: {:?} served {:?}", r.id, r.text, d.steps));
                }
                (layer, d.steps.clone())
            }
        };
        let good = right(want, &steps);
        let texts = teacher.turn(&mut reactor, r, &d, layer, steps, good);
        fast.update_texts(reactor.canonical_queries(), reactor.pipelines(), &texts)?;
    }
    if std::env::var("HOME_FIXTURE_BARS").is_ok() {
        for (key, a) in reactor.canonical_queries().actions() {
            let bar = a.bar(config.fast_path.l1_threshold(), config.fast_path.row_bar_floor(), 0.25, 0.01);
            eprintln!("{split} bar {bar:.3} {key} uses {} agreed {:?} disagreed {:?}", a.uses, a.agreed, a.disagreed);
        }
    }
    // What the model taught, as the router hands it to the planner.
    let mut taught = TaughtPhrasings::default();
    let canonical = reactor.canonical_queries();
    taught.learn(canonical, canonical.iter(), &mut |texts: &[&str]| embedder.embed_batch(texts))?;
    for r in rows.iter().filter(|r| r.role != "teach") {
        let key = format!("{}/{}", r.role, r.lang);
        let d = fast.route_read_twice(&r.text, now(), &mut { second })?;
        explain(r, &d);
        let want = r.call.as_ref();
        let t = out.groups.entry(key).or_default();
        t.asked += 1;
        let served = d.layer != RouteLayer::Planner;
        let mut offline_steps = d.steps.clone();
        if served {
            if right(want, &d.steps) {
                t.served += 1;
            } else {
                t.wrong += 1;
                out.misses
                    .push(format!("WRONG {}: {:?} → {:?} via {:?}: {}", r.id, r.text, d.steps, d.matched, d.reason));
            }
        } else {
            out.misses.push(format!("miss {} {}: {:?}: {}", r.role, r.id, r.text, d.reason));
            offline_steps = offline.plan_away(&r.text, now(), d.near.as_ref(), &taught).0;
            if let Some(n) = &d.near {
                out.near.push((n.similarity, right(want, &n.steps)));
            }
        }
        t.offline_right += usize::from(right(want, &offline_steps));
        if !right(want, &offline_steps) {
            let near = d.near.as_ref().map(|n| format!("{:.3} {:?}", n.similarity, n.canonical));
            out.misses.push(format!("away {}: {:?}: got {}, near {near:?}", r.id, r.text, calls(&offline_steps)));
        }
        let alone = offline.plan(&r.text, now())?;
        t.untaught_offline_right += usize::from(right(want, &alone));
        if !right(want, &alone) {
            let want = want.map(|c| format!("{} {}", c.tool, serde_json::Value::Object(c.args.clone())));
            out.misses.push(format!("offline {}: {:?}: got {}, want {want:?}", r.id, r.text, calls(&alone)));
        }
    }
    Ok(out)
}

/// With `HOME_FIXTURE_EXPLAIN=id,id,…`, the decision on those rows and
/// its trace (stderr): what a rule was written against.
fn explain(r: &Row, d: &engram::learning::fast_path::Decision) {
    if std::env::var("HOME_FIXTURE_EXPLAIN").is_ok_and(|v| v.split(',').any(|x| x == r.id)) {
        eprintln!("{} {:?}: {:?} {:?} {:?}\n  {}", r.id, r.text, d.layer, d.matched, d.steps, d.trace.join("\n  "));
    }
}

/// A plan as `tool {args}` calls, for a miss's line.
fn calls(steps: &[PlanStep]) -> String {
    let calls: Vec<String> = steps.iter().map(|s| format!("{} {}", s.tool, s.args.to_json())).collect();
    format!("{calls:?}")
}

/// Writes a taught turn's events as the runtime would and folds them.
struct Teacher {
    seq: u64,
    n: u32,
}

impl Teacher {
    /// One turn: the route, the turn, the user's verdict; returns the
    /// canonical texts the fast path must take in.
    fn turn(
        &mut self,
        reactor: &mut FastPathReactor,
        r: &Row,
        d: &engram::learning::fast_path::Decision,
        layer: RouteLayer,
        steps: Vec<PlanStep>,
        good: bool,
    ) -> Vec<String> {
        self.n += 1;
        let n = self.n;
        let t0: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-11-23T09:00:00Z").expect("an instant").to_utc();
        let at = t0 + Duration::seconds(i64::from(n));
        let session = SessionId::new(format!("home-{n}"));
        let turn = TurnId::for_turn(&session, 1, at);
        let id = |tag: &[u8]| EventId::derive(at, &[tag, &n.to_be_bytes()]);
        let route = match layer {
            RouteLayer::Planner => Envelope::at(
                id(b"missed"),
                at,
                ActorKind::Router,
                FastPathMissed {
                    best_similarity: d.similarity,
                    best_candidate: d.matched.clone(),
                    reason: d.reason.clone(),
                    near: d.near.clone(),
                },
            ),
            layer => Envelope::at(
                id(b"hit"),
                at,
                ActorKind::Router,
                FastPathHit {
                    layer,
                    matched: d.matched.clone().unwrap_or_default(),
                    similarity: d.similarity,
                    steps: steps.clone(),
                    residual: None,
                },
            ),
        };
        let model = (layer == RouteLayer::Planner).then(|| MODEL.to_owned());
        let completed = Envelope::at(
            id(b"done"),
            at,
            ActorKind::ReplyLoop,
            TurnCompleted {
                turn_number: 1,
                text: r.text.clone(),
                layer,
                model,
                steps,
                tools_ok: true,
                planner_ms: 0,
                latency_ms: 0,
                cost_usd: Decimal::ZERO,
                pricing_version: "bench".into(),
            },
        );
        let verdict = Envelope::at(
            id(b"eval"),
            at,
            ActorKind::Judge,
            EvalCompleted {
                eval_id: EvalId::derive(at, &[b"eval", &n.to_be_bytes()]),
                subject_turn: turn,
                score: if good { 1.0 } else { 0.0 },
                confidence: 1.0,
                judge: JudgeKind::Feedback,
                rubric: None,
                judge_pricing_version: None,
            },
        );
        let mut texts = Vec::new();
        // Each event in log order: what the reactor derives from one is
        // folded before the next arrives, as on the router's bus.
        for mut e in [route, completed, verdict].into_iter().map(|e| e.with_session(session.clone()).with_turn(turn)) {
            self.seq += 1;
            e.seq = engram::Seq(self.seq);
            for mut x in reactor.react(&e) {
                if let Some(t) = learnt_text(&x, reactor) {
                    texts.push(t);
                }
                self.seq += 1;
                x.seq = engram::Seq(self.seq);
                reactor.observe(&x);
            }
        }
        texts
    }
}

/// The canonical text a learnt event names.
fn learnt_text(e: &Envelope, _reactor: &FastPathReactor) -> Option<String> {
    use engram::events::Event;
    match &e.event {
        Event::CanonicalRecorded(c) => Some(c.canonical.clone()),
        Event::CanonicalRejected(c) => Some(c.canonical.clone()),
        Event::CanonicalCompared(c) => Some(c.canonical.clone()),
        Event::PipelineRecorded(p) => Some(p.canonical.clone()),
        _ => None,
    }
}

/// The report's lines for one split.
pub fn human(s: &SplitScore) -> String {
    let mut out = format!(
        "  home {}: taught {} (fast path answered {} of them, {} wrong)\n",
        s.split, s.taught.0, s.taught.1, s.taught.2
    );
    for (k, t) in &s.groups {
        out.push_str(&format!(
            "    {k:<12} asked {:>3}  served {:>3} ({:>3.0}%)  wrong {}  model away {:>3} ({:>3.0}%)  nothing taught {:>3} ({:>3.0}%)\n",
            t.asked,
            t.served,
            100.0 * t.served as f64 / t.asked.max(1) as f64,
            t.wrong,
            t.offline_right,
            100.0 * t.offline_right as f64 / t.asked.max(1) as f64,
            t.untaught_offline_right,
            100.0 * t.untaught_offline_right as f64 / t.asked.max(1) as f64,
        ));
    }
    out
}
