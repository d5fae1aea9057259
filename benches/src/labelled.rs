//! The labelled sets, scored per language with a real embedding model:
//!
//! * `tests/fixtures/fast_path/pairs.jsonl` — hard negatives and paraphrases
//!   (English, Italian and across the two): every candidate is learnt as an
//!   L1 row (three uses), every request routed; a hard negative that is
//!   served is a **wrong replay**, a paraphrase served by L1 with its
//!   candidate's tool is recall;
//! * `tests/fixtures/offline_planner/requests.jsonl` — natural requests
//!   labelled with the built-in they need, or none: the offline planner's
//!   tool choice.
//!
//! One implementation for `engram bench fast-path` (which prints these
//! beside the latencies, per model) and for the tests that hold the floors
//! (`tests/labelled.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use engram::actors::config::Config;
use engram::actors::fast_path_service::FastPathService;
use engram::actors::tools::{BuiltinConfig, ToolRegistry};
use engram::events::payloads::{PlanStep, RouteLayer, ToolArgs};
use engram::learning::embedder::Embedder;
use engram::learning::offline_planner::OfflinePlanner;

/// The fast path's labelled pairs (JSON Lines: lang, same, candidate, tool,
/// args, request).
pub const PAIRS: &str = include_str!("../../tests/fixtures/fast_path/pairs.jsonl");
/// The offline planner's labelled requests (JSON Lines: lang, text, tool).
pub const REQUESTS: &str = include_str!("../../tests/fixtures/offline_planner/requests.jsonl");
/// The fast path's held-out pairs (same fields as [`PAIRS`]), written
/// apart from the code and never tuned on.
pub const HELDOUT_PAIRS: &str = include_str!("../../tests/fixtures/fast_path/heldout_pairs.jsonl");
/// The offline planner's held-out requests (JSON Lines: lang, text, tool or
/// null), written apart from the code and never tuned on; a test keeps them
/// disjoint from every phrase in the planner's code.
pub const HELDOUT: &str = include_str!("../../tests/fixtures/offline_planner/heldout.jsonl");

/// The instant the sets are routed at (dates in them resolve against it).
pub fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").expect("a valid instant")
}

/// One language's figures on the pairs.
#[derive(serde::Serialize, Debug, Clone, Default, PartialEq)]
pub struct PairScore {
    /// `en`, `it`, or `x` (candidate in one language, request in the other).
    pub lang: String,
    /// Hard negatives routed.
    pub hard_negatives: usize,
    /// Of them, replayed with the candidate's own call: must be 0.
    pub wrong_replays: usize,
    /// Paraphrases routed.
    pub paraphrases: usize,
    /// Of them, served by L1 with the candidate's tool.
    pub served: usize,
    /// What went wrong (a wrong fast-path answer, a wrong offline plan),
    /// for a failing test's message.
    #[serde(skip)]
    pub misses: Vec<String>,
}

/// One language's figures on the planner's requests.
#[derive(serde::Serialize, Debug, Clone, Default, PartialEq)]
pub struct ChoiceScore {
    /// `en`, `it` or `mixed`.
    pub lang: String,
    /// Requests planned.
    pub requests: usize,
    /// Of them, planned with the labelled tool (or with none, when none).
    pub right: usize,
    /// What went wrong (a wrong fast-path answer, a wrong offline plan),
    /// for a failing test's message.
    #[serde(skip)]
    pub misses: Vec<String>,
}

fn rows(text: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| Ok(serde_json::from_str(l)?)).collect()
}

fn field<'a>(row: &'a serde_json::Value, key: &str) -> anyhow::Result<&'a str> {
    row[key].as_str().ok_or_else(|| anyhow::anyhow!("a labelled row without {key}: {row}"))
}

/// The held-out pairs ([`HELDOUT_PAIRS`]) through a fast path that learnt
/// every candidate, per language. The set holds many candidates, some the
/// others' opposites ("turn on …", "turn off …"), so a request is judged by
/// the call replayed: a hard negative replayed with its candidate's exact
/// call is a wrong replay; a paraphrase is served when its candidate's call
/// is replayed.
pub fn heldout_pairs(embedder: Arc<dyn Embedder>) -> anyhow::Result<Vec<PairScore>> {
    let rows = rows(HELDOUT_PAIRS)?;
    let fast_path = learnt(embedder, &rows)?;
    let mut by_lang: BTreeMap<String, PairScore> = BTreeMap::new();
    for r in &rows {
        let (lang, request) = (field(r, "lang")?, field(r, "request")?);
        let want = PlanStep {
            tool: field(r, "tool")?.to_owned(),
            args: ToolArgs::from_json(&serde_json::to_string(&r["args"])?)?,
        };
        let score =
            by_lang.entry(lang.to_owned()).or_insert_with(|| PairScore { lang: lang.into(), ..Default::default() });
        let d = fast_path.route(request, now())?;
        let replayed = d.layer != RouteLayer::Planner && d.steps.len() == 1 && d.steps[0] == want;
        if r["same"] == false {
            score.hard_negatives += 1;
            if replayed {
                score.wrong_replays += 1;
                score.misses.push(format!("{request:?} replayed {:?} ({:?})", d.matched, d.similarity));
            }
        } else {
            score.paraphrases += 1;
            if replayed {
                score.served += 1;
            } else {
                score.misses.push(format!(
                    "{request:?} (taught {:?}): {:?} {:?} ({:?}): {}",
                    field(r, "candidate")?,
                    d.layer,
                    d.matched,
                    d.similarity,
                    d.reason
                ));
            }
        }
    }
    Ok(by_lang.into_values().collect())
}

/// A fast path that learnt every candidate of `rows` (three uses each).
fn learnt(embedder: Arc<dyn Embedder>, rows: &[serde_json::Value]) -> anyhow::Result<FastPathService> {
    let mut candidates: Vec<(String, Vec<PlanStep>)> = Vec::new();
    for r in rows {
        let c = field(r, "candidate")?.to_owned();
        if !candidates.iter().any(|(t, _)| *t == c) {
            let args = ToolArgs::from_json(&serde_json::to_string(&r["args"])?)?;
            candidates.push((c, vec![PlanStep { tool: field(r, "tool")?.to_owned(), args }]));
        }
    }
    let config = Config::default();
    let (canonical, pipelines) = engram::learning::reactors::fast_path::learn(
        &candidates,
        3,
        config.multi_tool_fast_path.clone(),
        FixedOffset::east_opt(3600).expect("an offset"),
    );
    Ok(FastPathService::build(
        (&config.fast_path, &config.multi_tool_fast_path),
        &canonical,
        &pipelines,
        embedder,
        None,
    )?)
}

/// The pairs through a fast path that learnt every candidate, per language.
pub fn pairs(embedder: Arc<dyn Embedder>) -> anyhow::Result<Vec<PairScore>> {
    let rows = rows(PAIRS)?;
    let mut candidates: Vec<(String, Vec<PlanStep>)> = Vec::new();
    for r in &rows {
        let c = field(r, "candidate")?.to_owned();
        if !candidates.iter().any(|(t, _)| *t == c) {
            let args = ToolArgs::from_json(&serde_json::to_string(&r["args"])?)?;
            candidates.push((c, vec![PlanStep { tool: field(r, "tool")?.to_owned(), args }]));
        }
    }
    let config = Config::default();
    let (canonical, pipelines) = engram::learning::reactors::fast_path::learn(
        &candidates,
        3,
        config.multi_tool_fast_path.clone(),
        FixedOffset::east_opt(3600).expect("an offset"),
    );
    let fast_path = FastPathService::build(
        (&config.fast_path, &config.multi_tool_fast_path),
        &canonical,
        &pipelines,
        embedder,
        None,
    )?;
    let mut by_lang: BTreeMap<String, PairScore> = BTreeMap::new();
    for r in &rows {
        let (lang, request) = (field(r, "lang")?, field(r, "request")?);
        let score =
            by_lang.entry(lang.to_owned()).or_insert_with(|| PairScore { lang: lang.into(), ..Default::default() });
        let d = fast_path.route(request, now())?;
        let want = PlanStep {
            tool: field(r, "tool")?.to_owned(),
            args: ToolArgs::from_json(&serde_json::to_string(&r["args"])?)?,
        };
        if r["same"] == false {
            score.hard_negatives += 1;
            // Replayed with the candidate's own call: "the weather in
            // Paris" answered as a call for Paris is not one.
            if d.layer != RouteLayer::Planner && d.steps.first() == Some(&want) {
                score.wrong_replays += 1;
                score.misses.push(format!("{request:?} replayed {:?} ({:?})", d.matched, d.similarity));
            }
        } else {
            score.paraphrases += 1;
            if d.layer == RouteLayer::L1 && d.steps.first().map(|s| s.tool.as_str()) == Some(field(r, "tool")?) {
                score.served += 1;
            } else {
                score.misses.push(format!(
                    "{request:?} (taught {:?}): {:?} {:?} ({:?}): {}",
                    field(r, "candidate")?,
                    d.layer,
                    d.matched,
                    d.similarity,
                    d.reason
                ));
            }
        }
    }
    Ok(by_lang.into_values().collect())
}

/// The offline planner's tool choice on the labelled requests, per language.
pub fn choices(embedder: Arc<dyn Embedder>) -> anyhow::Result<Vec<ChoiceScore>> {
    choices_on(embedder, REQUESTS)
}

/// The offline planner's tool choice on `set` (JSON Lines: lang, text, tool
/// or null), per language.
pub fn choices_on(embedder: Arc<dyn Embedder>, set: &str) -> anyhow::Result<Vec<ChoiceScore>> {
    let planner = OfflinePlanner::new(embedder, &ToolRegistry::with_builtins(BuiltinConfig::default()).specs())?;
    let mut by_lang: BTreeMap<String, ChoiceScore> = BTreeMap::new();
    for r in rows(set)? {
        let (lang, text) = (field(&r, "lang")?, field(&r, "text")?);
        let want = r["tool"].as_str();
        let got = planner.plan(text, now())?.first().map(|s| s.tool.clone());
        let score =
            by_lang.entry(lang.to_owned()).or_insert_with(|| ChoiceScore { lang: lang.into(), ..Default::default() });
        score.requests += 1;
        if got.as_deref() == want {
            score.right += 1;
        } else {
            score.misses.push(format!("{text:?}: {got:?}, expected {want:?}"));
        }
    }
    Ok(by_lang.into_values().collect())
}

/// A month of use through the live runtime, offline.
#[derive(serde::Serialize, Debug, Clone, Default, PartialEq)]
pub struct MonthScore {
    /// Days (one session each).
    pub days: usize,
    /// Requests said, English and Italian mixed.
    pub turns: usize,
    /// Of them, answered by the fast path (L0, L1 or L2).
    pub fast_path: usize,
    /// Of those, with tools other than the request's: must be 0.
    pub wrong_fast_path: usize,
    /// Answered by the offline planner.
    pub planner: usize,
    /// Of those, with the request's tools (none for small talk and actions
    /// no built-in does).
    pub planner_right: usize,
    /// What went wrong (a wrong fast-path answer, a wrong offline plan),
    /// for a failing test's message.
    #[serde(skip)]
    pub misses: Vec<String>,
}

/// What a month of requests is drawn from: the tool each needs (`None`:
/// none), and its phrasing in English or Italian, `{dir}` and `{file}`
/// standing for a directory and a file of the user's.
const MONTH: &[(Option<&str>, &str)] = &[
    (Some("get_now"), "what time is it"),
    (Some("get_now"), "tell me the time"),
    (Some("get_now"), "che ore sono"),
    (Some("get_now"), "mi dici l'ora"),
    (Some("get_date"), "what's the date today"),
    (Some("get_date"), "che giorno è oggi"),
    (Some("get_location"), "where am I"),
    (Some("get_location"), "dove mi trovo"),
    (Some("list_dir"), "list the files in {dir}"),
    (Some("list_dir"), "what's in the folder {dir}"),
    (Some("list_dir"), "elenca i file in {dir}"),
    (Some("list_dir"), "cosa c'è nella cartella {dir}"),
    (Some("read_file"), "read the file {file}"),
    (Some("read_file"), "open {file}"),
    (Some("read_file"), "leggi il file {file}"),
    (Some("read_file"), "apri il file {file}"),
    (Some("recall"), "what is my name"),
    (Some("recall"), "come mi chiamo"),
    (None, "how are you today"),
    (None, "come stai oggi"),
    (None, "delete the file {file}"),
    (None, "cancella il file {file}"),
    (None, "rename {file} to {dir}/old.txt"),
    (None, "send the file {file} to Marco"),
];

/// Drives `days` sessions of `per_day` requests drawn (seeded) from a
/// closed set of EN + IT phrasings, each labelled with its tool, through a live offline runtime on a temp data dir, with files to
/// list and read, and scores every reply against the request's tool.
pub fn month(embedder: Arc<dyn Embedder>, days: usize, per_day: usize, seed: u64) -> anyhow::Result<MonthScore> {
    use engram::actors::Runtime;
    use engram::SessionId;

    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("files");
    let dirs = ["docs", "notes", "progetti", "musica"];
    let mut files = Vec::new();
    for d in dirs {
        std::fs::create_dir_all(root.join(d))?;
        for f in ["todo.txt", "idee.md", "report.txt"] {
            let path = root.join(d).join(f);
            std::fs::write(&path, format!("{d}/{f}: a line of text\n"))?;
            files.push(path.display().to_string());
        }
    }
    let dirs: Vec<String> = dirs.iter().map(|d| root.join(d).display().to_string()).collect();
    let mut config = Config::default();
    config.tools.file_roots = vec![root.clone()];
    config.tools.location = "Turin, Italy".to_owned();
    let rt =
        Runtime::builder().data_dir(tmp.path().join("data")).offline().config(config).embedder(embedder).start()?;
    let mut rng = crate::patterns::Rng::new(seed);
    let mut score = MonthScore { days, ..MonthScore::default() };
    rt.handle_utterance(&SessionId::new("day-00-intro"), "my name is Ada")?;
    for day in 0..days {
        let session = SessionId::new(format!("day-{day:02}"));
        for _ in 0..per_day {
            let (want, template) = MONTH[rng.below(MONTH.len())];
            let text = template
                .replace("{dir}", &dirs[rng.below(dirs.len())])
                .replace("{file}", &files[rng.below(files.len())]);
            let reply = rt.handle_utterance(&session, &text)?;
            let Some(layer) = reply.layer else { continue };
            score.turns += 1;
            let got = reply.steps.first().map(|s| s.tool.as_str());
            let right = got == want && reply.steps.len() <= 1;
            if layer == RouteLayer::Planner {
                score.planner += 1;
                score.planner_right += usize::from(right);
                if !right {
                    score.misses.push(format!("day {day}: {text:?} planned offline as {got:?}"));
                }
            } else {
                score.fast_path += 1;
                if !right {
                    score.wrong_fast_path += 1;
                    score.misses.push(format!("day {day}: {text:?} answered by {layer:?} with {got:?}"));
                }
            }
        }
        rt.end_session(&session)?;
    }
    rt.shutdown()?;
    Ok(score)
}
