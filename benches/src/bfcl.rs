//! `engram bench bfcl`: the offline planner on real users' requests among
//! their own functions — the Berkeley Function Calling Leaderboard's v4
//! "live" sets (`scripts/fetch-bfcl.sh` installs them from the pinned
//! `bfcl-eval` wheel).
//!
//! For each entry its functions become the planner's tools (BFCL's types
//! mapped to JSON Schema's: `dict` → `object`, `float` → `number`, `tuple`
//! → `array`), the user's last message is the request, and the offline
//! planner plans it with the real embedding model. The calls are those the
//! reply loop makes of the plan with no model: its steps in order, up to
//! the first that lacks a required argument — there the turn asks the user
//! for it in one line and calls nothing more (a fresh conversation has no
//! earlier call to take it from). Scored as BFCL's AST checker scores
//! ([`ast`]):
//!
//! * `live_simple`, `live_multiple`: right when the plan is exactly one
//!   call, of the expected function, with arguments among the allowed
//!   values;
//! * `live_irrelevance`: no function fits; right when the plan is empty;
//! * `live_relevance`: some function fits; right when the plan calls
//!   something.
//!
//! **Split.** Fixed before any tuning, by the entry's id alone: `dev` when
//! the first byte of `blake3(id)` is even, else `heldout`. Rules are tuned
//! on `dev` only; `heldout` is read, not tuned on.

pub mod ast;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context};
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::learning::embedder::{EmbedError, Embedder, EmbedderConfig, EmbeddingModel};
use engram::learning::offline_planner::{OfflinePlanner, ToolDescription};
use engram::learning::step_resolver::unresolved;
use serde::Serialize;
use serde_json::{Map, Value};

/// `engram bench bfcl`.
#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// Where the BFCL files are; default: $ENGRAM_BFCL_DIR, else
    /// $XDG_DATA_HOME/engram/bfcl (scripts/fetch-bfcl.sh installs them there)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Which entries: the tuning split, the held-out one, or both (each
    /// reported apart, and together)
    #[arg(long, value_enum, default_value_t = SplitArg::All)]
    pub split: SplitArg,

    /// The embedding model (use-multilingual-v3, minilm-l6-v2)
    #[arg(long, value_name = "MODEL")]
    pub model: Option<EmbeddingModel>,

    /// With --json: every entry's outcome too (request, expected, planned)
    #[arg(long)]
    pub entries: bool,

    /// The planner's bar instead of the model's calibrated one (to see
    /// what another would do; the figures reported are at the default)
    #[arg(long, value_name = "COSINE")]
    pub threshold: Option<f32>,
}

/// `--split`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SplitArg {
    /// Tuned on
    Dev,
    /// Never tuned on
    Heldout,
    /// Both
    #[default]
    All,
}

/// The half an entry belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// The half rules are tuned on.
    Dev,
    /// The half only read.
    Heldout,
}

impl Split {
    /// An entry's half, by its id alone: `dev` when the first byte of
    /// `blake3(id)` is even.
    pub fn of(id: &str) -> Split {
        match blake3::hash(id.as_bytes()).as_bytes()[0].is_multiple_of(2) {
            true => Split::Dev,
            false => Split::Heldout,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Heldout => "heldout",
        }
    }
}

/// A BFCL live category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Category {
    /// One function; one call of it expected.
    #[serde(rename = "live_simple")]
    Simple,
    /// Several functions; one call of one expected.
    #[serde(rename = "live_multiple")]
    Multiple,
    /// No function fits: no call expected.
    #[serde(rename = "live_irrelevance")]
    Irrelevance,
    /// Some function fits: some call expected.
    #[serde(rename = "live_relevance")]
    Relevance,
}

impl Category {
    /// Every category, in report order.
    pub const ALL: [Category; 4] = [Category::Simple, Category::Multiple, Category::Irrelevance, Category::Relevance];

    /// BFCL's name (and its files').
    pub fn name(self) -> &'static str {
        match self {
            Category::Simple => "live_simple",
            Category::Multiple => "live_multiple",
            Category::Irrelevance => "live_irrelevance",
            Category::Relevance => "live_relevance",
        }
    }

    fn has_answers(self) -> bool {
        matches!(self, Category::Simple | Category::Multiple)
    }
}

/// One entry of a set.
#[derive(Clone, Debug)]
pub struct Entry {
    /// BFCL's id (`live_simple_0-0-0`).
    pub id: String,
    /// Its set.
    pub category: Category,
    /// Its half.
    pub split: Split,
    /// The user's last message.
    pub request: String,
    /// Its functions, as BFCL describes them.
    pub functions: Vec<Value>,
    /// The expected calls (`[{name: {param: [allowed…]}}]`), for the
    /// categories that have them.
    pub answer: Option<Vec<Value>>,
}

impl Entry {
    /// Its functions as the planner's tools.
    pub fn tools(&self) -> Vec<ToolDescription> {
        self.functions
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap_or("").to_owned(),
                    f["description"].as_str().unwrap_or("").to_owned(),
                    json_schema(&f["parameters"]),
                )
            })
            .collect()
    }
}

/// BFCL's parameter description as JSON Schema: its types renamed
/// (`dict` → `object`, `float` → `number`, `tuple` → `array`; `any` has
/// none), down through `properties` and `items`; everything else kept.
pub fn json_schema(v: &Value) -> Value {
    let Some(o) = v.as_object() else { return v.clone() };
    let mut out = Map::new();
    for (k, x) in o {
        let x = match k.as_str() {
            "type" => match x.as_str() {
                Some("dict") => Value::from("object"),
                Some("float") => Value::from("number"),
                Some("tuple") => Value::from("array"),
                Some("any") => continue,
                _ => x.clone(),
            },
            "properties" => match x.as_object() {
                Some(p) => Value::Object(p.iter().map(|(n, s)| (n.clone(), json_schema(s))).collect()),
                None => x.clone(),
            },
            "items" => json_schema(x),
            _ => x.clone(),
        };
        out.insert(k.clone(), x);
    }
    Value::Object(out)
}

/// The default BFCL dir: `$ENGRAM_BFCL_DIR`, else
/// `$XDG_DATA_HOME/engram/bfcl` (`~/.local/share/engram/bfcl`).
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ENGRAM_BFCL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".local/share"));
    data.join("engram/bfcl")
}

fn lines(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {} (scripts/fetch-bfcl.sh installs it)", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1)))
        .collect()
}

/// Every entry of the four live sets in `dir`.
pub fn load(dir: &Path) -> anyhow::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for category in Category::ALL {
        let file = format!("BFCL_v4_{}.json", category.name());
        let mut answers: HashMap<String, Vec<Value>> = HashMap::new();
        if category.has_answers() {
            for a in lines(&dir.join("possible_answer").join(&file))? {
                let id = a["id"].as_str().context("an answer without an id")?.to_owned();
                answers.insert(id, a["ground_truth"].as_array().cloned().unwrap_or_default());
            }
        }
        for row in lines(&dir.join(&file))? {
            let id = row["id"].as_str().context("an entry without an id")?.to_owned();
            // The user's last message, in the last turn that has one.
            let request = row["question"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_array)
                .flatten()
                .filter(|m| m["role"] == "user")
                .filter_map(|m| m["content"].as_str())
                .next_back()
                .unwrap_or("")
                .to_owned();
            let answer = match category.has_answers() {
                true => Some(answers.remove(&id).with_context(|| format!("no possible answer for {id}"))?),
                false => None,
            };
            out.push(Entry {
                split: Split::of(&id),
                id,
                category,
                request,
                functions: row["function"].as_array().cloned().unwrap_or_default(),
                answer,
            });
        }
    }
    Ok(out)
}

/// One planned call.
#[derive(Clone, Debug, Serialize)]
pub struct Call {
    /// The function.
    pub name: String,
    /// Its arguments.
    pub args: Map<String, Value>,
}

/// Whether `calls` are right for `entry` (BFCL's AST way), and why not.
pub fn score(entry: &Entry, calls: &[Call]) -> Result<(), String> {
    match entry.category {
        Category::Irrelevance => match calls.first() {
            None => Ok(()),
            Some(c) => Err(format!("called {}", c.name)),
        },
        Category::Relevance => match calls.is_empty() {
            false => Ok(()),
            true => Err("no call".into()),
        },
        Category::Simple | Category::Multiple => {
            let expected = entry.answer.as_deref().unwrap_or_default();
            if calls.len() != expected.len() {
                return Err(format!("{} calls, expected {}", calls.len(), expected.len()));
            }
            for (call, want) in calls.iter().zip(expected) {
                let Some((name, allowed)) = want.as_object().and_then(|o| o.iter().next()) else {
                    return Err("an empty possible answer".into());
                };
                if &call.name != name {
                    return Err(format!("called {}, expected {name}", call.name));
                }
                let Some(function) = entry.functions.iter().find(|f| f["name"] == name.as_str()) else {
                    return Err(format!("{name} is not among the entry's functions"));
                };
                let allowed = allowed.as_object().cloned().unwrap_or_default();
                if let Some(why) = ast::check(function, &call.args, &allowed) {
                    return Err(why);
                }
            }
            Ok(())
        }
    }
}

/// An embedder that remembers every vector it made: the sets repeat their
/// functions' descriptions across entries, and each entry's planner embeds
/// the same small-talk phrasings. One text per run, so the vectors are
/// those of the inner embedder exactly.
pub struct Memo {
    inner: Arc<dyn Embedder>,
    seen: Mutex<HashMap<String, Vec<f32>>>,
}

impl Memo {
    /// Remembers `inner`'s vectors.
    pub fn new(inner: Arc<dyn Embedder>) -> Memo {
        Memo { inner, seen: Mutex::new(HashMap::new()) }
    }
}

impl Embedder for Memo {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        if let Some(v) = self.seen.lock().expect("memo lock").get(text) {
            return Ok(v.clone());
        }
        let v = self.inner.embed(text)?;
        self.seen.lock().expect("memo lock").insert(text.to_owned(), v.clone());
        Ok(v)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

/// Right of total, in one category of one split.
#[derive(Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    /// Scored right.
    pub right: usize,
    /// Entries.
    pub total: usize,
}

impl Count {
    fn add(&mut self, right: bool) {
        self.right += usize::from(right);
        self.total += 1;
    }

    fn plus(self, other: Count) -> Count {
        Count { right: self.right + other.right, total: self.total + other.total }
    }

    /// The share right, in percent.
    pub fn percent(self) -> f64 {
        100.0 * self.right as f64 / self.total.max(1) as f64
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} ({:.1}%)", self.right, self.total, self.percent())
    }
}

/// One split's figures.
#[derive(Serialize, Debug, Clone)]
pub struct SplitReport {
    /// `dev`, `heldout` or `all`.
    pub split: String,
    /// Per category (BFCL's names).
    pub categories: BTreeMap<Category, Count>,
    /// `live_simple` and `live_multiple` together: the right call with the
    /// user's values.
    pub calls: Count,
    /// `live_simple` and `live_multiple` together, the function alone: one
    /// call of the expected function, whatever its arguments.
    pub tool: Count,
    /// `live_irrelevance`: abstained when nothing fits (called nothing:
    /// planned nothing, or asked for a required argument).
    pub abstentions: Count,
    /// `live_irrelevance`, the stricter reading: planned nothing at all.
    pub planned_nothing: Count,
    /// Every entry.
    pub overall: Count,
}

impl SplitReport {
    fn new(split: &str, entries: &[&Outcome]) -> SplitReport {
        let mut categories: BTreeMap<Category, Count> = BTreeMap::new();
        let mut tool = Count::default();
        let mut planned_nothing = Count::default();
        for o in entries {
            if o.category == Category::Irrelevance {
                planned_nothing.add(o.planned.is_empty());
            }
            categories.entry(o.category).or_default().add(o.right);
            if o.category.has_answers() {
                tool.add(o.tool_right);
            }
        }
        let get = |c: Category| categories.get(&c).copied().unwrap_or_default();
        SplitReport {
            split: split.to_owned(),
            calls: get(Category::Simple).plus(get(Category::Multiple)),
            tool,
            abstentions: get(Category::Irrelevance),
            planned_nothing,
            overall: Category::ALL.into_iter().map(get).fold(Count::default(), Count::plus),
            categories,
        }
    }
}

/// One entry's outcome.
#[derive(Serialize, Debug, Clone)]
pub struct Outcome {
    /// BFCL's id.
    pub id: String,
    /// Its set.
    pub category: Category,
    /// Its half.
    pub split: Split,
    /// Right, BFCL's AST way.
    pub right: bool,
    /// One call of the expected function (simple, multiple), whatever its
    /// arguments.
    pub tool_right: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The user's last message.
    pub request: String,
    /// What was expected (simple, multiple).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Vec<Value>>,
    /// What the planner planned.
    pub planned: Vec<Call>,
    /// What the turn asked for instead of calling (a planned function and
    /// its required arguments the request did not give).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked: Option<(String, Vec<String>)>,
    /// The function nearest the whole request, and its cosine (the
    /// planner's ranking, before its rules).
    pub nearest: Option<(String, f32)>,
}

/// The report.
#[derive(Serialize, Debug)]
pub struct Report {
    /// Where it ran.
    pub machine: String,
    /// The embedding model.
    pub model: String,
    /// Where the files were.
    pub dir: String,
    /// Per split (and both together, with `--split all`).
    pub splits: Vec<SplitReport>,
    /// Every entry's outcome (`--entries`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<Outcome>,
}

/// When BFCL's users spoke: their requests were collected in 2023, and
/// its answers date a day said without a year in 2023 ("May 15th" is
/// `2023-05-15`); "today is 2023.10.1", several of them say. The planner
/// reads a year-less day in the current year, so the bench's clock is
/// theirs, as the home's is its own (`2026-11-23`).
fn said_at() -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339("2023-10-01T10:00:00-07:00").expect("a valid instant")
}

/// Plans every entry of the chosen split with the offline planner.
pub fn outcomes(
    embedder: Arc<dyn Embedder>,
    entries: &[Entry],
    threshold: Option<f32>,
) -> anyhow::Result<Vec<Outcome>> {
    let now = said_at();
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        // Marks where an entry's planner traces begin (`ENGRAM_LOG=debug`).
        tracing::debug!(id = %e.id, "bfcl entry");
        let tools = e.tools();
        let mut planner = OfflinePlanner::new(embedder.clone(), &tools)?;
        if let Some(t) = threshold {
            planner = planner.with_threshold(t);
        }
        let steps = planner.plan(&e.request, now)?;
        // The reply loop calls the steps in order and stops at the first
        // with a required argument missing: it asks for it instead.
        let mut calls = Vec::new();
        let mut asked = None;
        for step in &steps {
            let schema = tools.iter().find(|t| t.0 == step.tool).map(|t| &t.2);
            let missing = schema.map(|s| unresolved(&step.args, s)).unwrap_or_default();
            if !missing.is_empty() {
                asked = Some((step.tool.clone(), missing));
                break;
            }
            calls.push(Call { name: step.tool.clone(), args: step.args.0.clone().into_iter().collect() });
        }
        let planned: Vec<Call> =
            steps.into_iter().map(|s| Call { name: s.tool, args: s.args.0.into_iter().collect() }).collect();
        let nearest = planner.rank(&e.request)?.into_iter().next();
        let verdict = score(e, &calls);
        let expected =
            e.answer.as_ref().and_then(|a| a.first()).and_then(Value::as_object).and_then(|o| o.keys().next());
        let tool_right = planned.len() == 1 && expected == Some(&planned[0].name);
        out.push(Outcome {
            id: e.id.clone(),
            category: e.category,
            split: e.split,
            right: verdict.is_ok(),
            tool_right,
            why: verdict.err(),
            request: e.request.clone(),
            expected: e.answer.clone(),
            planned,
            asked,
            nearest,
        });
    }
    Ok(out)
}

/// Runs the bench.
pub fn run(o: &Options) -> anyhow::Result<Report> {
    let dir = o.dir.clone().unwrap_or_else(default_dir);
    let mut entries = load(&dir)?;
    if entries.is_empty() {
        bail!("no BFCL entries in {}", dir.display());
    }
    entries.retain(|e| match o.split {
        SplitArg::Dev => e.split == Split::Dev,
        SplitArg::Heldout => e.split == Split::Heldout,
        SplitArg::All => true,
    });
    let model = o.model.unwrap_or_default();
    crate::progress(o.json, &format!("planning {} BFCL entries with {model}", entries.len()));
    let inner: Arc<dyn Embedder> = Arc::new(
        OnnxEmbedder::open(&EmbedderConfig::default().with_model(model)).context("opening the embedding model")?,
    );
    let outcomes = outcomes(Arc::new(Memo::new(inner)), &entries, o.threshold)?;
    let mut splits = Vec::new();
    for split in [Split::Dev, Split::Heldout] {
        let of: Vec<&Outcome> = outcomes.iter().filter(|x| x.split == split).collect();
        if !of.is_empty() {
            splits.push(SplitReport::new(split.name(), &of));
        }
    }
    if o.split == SplitArg::All {
        splits.push(SplitReport::new("all", &outcomes.iter().collect::<Vec<_>>()));
    }
    Ok(Report {
        machine: crate::machine(),
        model: model.to_string(),
        dir: dir.display().to_string(),
        splits,
        entries: if o.entries { outcomes } else { Vec::new() },
    })
}

impl Report {
    /// The human form.
    pub fn human(&self) -> String {
        let mut s = format!("BFCL v4 live, the offline planner with {} ({}; {})\n", self.model, self.machine, self.dir);
        s.push_str("  right: the expected call with allowed values (BFCL's AST check); irrelevance: no call; relevance: a call\n");
        for r in &self.splits {
            let c = |c: Category| r.categories.get(&c).copied().unwrap_or_default().to_string();
            s.push_str(&format!("  {} ({} entries)\n", r.split, r.overall.total));
            s.push_str(&format!("    {:<18} {:>18}\n", "live_simple", c(Category::Simple)));
            s.push_str(&format!("    {:<18} {:>18}\n", "live_multiple", c(Category::Multiple)));
            s.push_str(&format!(
                "    {:<18} {:>18}   the function alone {}\n",
                "simple+multiple",
                r.calls.to_string(),
                r.tool
            ));
            s.push_str(&format!("    {:<18} {:>18}\n", "live_relevance", c(Category::Relevance)));
            s.push_str(&format!(
                "    {:<18} {:>18}   planned nothing {}\n",
                "live_irrelevance",
                r.abstentions.to_string(),
                r.planned_nothing
            ));
            s.push_str(&format!("    {:<18} {:>18}\n", "overall", r.overall.to_string()));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bfcl_types_become_json_schema_types_all_the_way_down() {
        let bfcl = json!({"type": "dict", "required": ["a"], "properties": {
            "a": {"type": "float", "description": "x"},
            "b": {"type": "array", "items": {"type": "dict", "properties": {"c": {"type": "tuple"}}}},
            "d": {"type": "any", "default": null}
        }});
        assert_eq!(
            json_schema(&bfcl),
            json!({"type": "object", "required": ["a"], "properties": {
                "a": {"type": "number", "description": "x"},
                "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "array"}}}},
                "d": {"default": null}
            }})
        );
    }

    #[test]
    fn the_split_is_fixed_by_the_id_alone() {
        // Pinned: a change of the rule would move entries between halves.
        let ids = ["live_simple_0-0-0", "live_simple_1-1-0", "live_multiple_0-0-0", "live_irrelevance_0-0-0"];
        let halves: Vec<Split> = ids.iter().map(|id| Split::of(id)).collect();
        assert_eq!(halves, ids.iter().map(|id| Split::of(id)).collect::<Vec<_>>());
        let first = blake3::hash(ids[0].as_bytes()).as_bytes()[0];
        assert_eq!(halves[0], if first.is_multiple_of(2) { Split::Dev } else { Split::Heldout });
    }

    fn entry(category: Category, answer: Option<Vec<Value>>) -> Entry {
        Entry {
            id: "x".into(),
            category,
            split: Split::Dev,
            request: "r".into(),
            functions: vec![json!({"name": "f", "parameters": {"type": "dict", "required": ["n"], "properties": {
                "n": {"type": "integer"}}}})],
            answer,
        }
    }

    #[test]
    fn irrelevance_wants_no_call_relevance_some_and_the_others_the_expected_one() {
        let call = |name: &str, n: i64| Call { name: name.into(), args: json!({"n": n}).as_object().unwrap().clone() };
        assert!(score(&entry(Category::Irrelevance, None), &[]).is_ok());
        assert!(score(&entry(Category::Irrelevance, None), &[call("f", 1)]).is_err());
        assert!(score(&entry(Category::Relevance, None), &[call("f", 1)]).is_ok());
        assert!(score(&entry(Category::Relevance, None), &[]).is_err());
        let simple = entry(Category::Simple, Some(vec![json!({"f": {"n": [3]}})]));
        assert!(score(&simple, &[call("f", 3)]).is_ok());
        assert!(score(&simple, &[call("f", 4)]).is_err());
        assert!(score(&simple, &[call("g", 3)]).is_err());
        assert!(score(&simple, &[call("f", 3), call("f", 3)]).is_err());
        assert!(score(&simple, &[]).is_err());
    }
}
