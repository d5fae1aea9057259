//! `engram bench learning`: the learning graded on data the code never saw.
//!
//! **Routing by meaning** — `tests/fixtures/routing/kinds.jsonl`: twelve
//! kinds of request (translation, recipe, weather, …) in English and
//! Italian, written apart from the code, every one a plain sentence — no
//! paths, no files, no digits — so only meaning tells the kinds apart. Two
//! candidate models: on half the kinds `a` answers right and `b` wrong, on
//! the other half the reverse. The train split is routed turn by turn
//! through the real chain (the pattern store's recommendation, exploration,
//! the default model), each answer rated by its kind (`:good` / `:bad`), one
//! session per turn; then every request of the held-out split is routed by
//! the store as trained, and counted right when it reaches the model that
//! answers its kind right. Run once with each model as the default and
//! averaged, so every kind needs learning to be right half the time.
//!
//! Both designs are measured in the same run, on the same turns:
//!
//! * `meaning` — today's: hybrid fingerprints are neighbourhoods of meaning
//!   (`same_request`, `same_kind` of the model's calibration);
//! * `structure` — before: every turn of one structure joined one
//!   fingerprint (`same_request = −1`) and nothing gated the cluster by
//!   meaning (`same_kind = −1`) — what routed kinds of one shape at chance.
//!
//! `same_kind` is *derived* here too, from the train split only (the 95th
//! percentile of cosines between requests of different kinds), and printed
//! beside the value the model's calibration carries; the held-out split is
//! never tuned on.
//!
//! **Paraphrases and hard negatives** — `tests/fixtures/fast_path/
//! heldout_pairs.jsonl` ([`crate::labelled::heldout_pairs`]): per language
//! (`en`, `it`, `x` across the two), paraphrases served by L1 with their
//! candidate's exact call, and hard negatives replayed with it (must be 0).
//!
//! **The offline planner** — `tests/fixtures/offline_planner/heldout.jsonl`
//! ([`crate::labelled::choices_on`]): the tool chosen (or none) per
//! language, on requests disjoint from every phrase in the planner's code.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use chrono::{DateTime, Duration, Utc};
use engram::actors::onnx_embedder::OnnxEmbedder;
use engram::events::payloads::{
    EvalCompleted, JudgeKind, QueryEmbedding, RouteDecided, RouteLayer, SessionEndReason, SessionEnded, TurnCompleted,
};
use engram::events::rust_decimal::Decimal;
use engram::events::{ActorKind, Envelope, EvalId, EventId, SessionId, TurnId};
use engram::learning::embedder::{Embedder, EmbedderConfig, EmbeddingModel};
use engram::learning::patterns::{Embedding, Fingerprint, PatternCaps, PatternConfig};
use engram::learning::projections::PatternOutcomes;
use engram::learning::reactors::{derive_all, PatternReactor, Reactor};
use engram::learning::routing::{route_chain, Exploring, Slots};
use serde::Serialize;

/// The kinds of request (JSON Lines: kind, lang, split, text).
pub const KINDS: &str = include_str!("../../tests/fixtures/routing/kinds.jsonl");

/// `engram bench learning`.
#[derive(clap::Args, Clone, Debug)]
pub struct Options {
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,

    /// One embedding model (use-multilingual-v3, minilm-l6-v2); default: each, in turn, in this run
    #[arg(long, value_name = "MODEL")]
    pub model: Option<EmbeddingModel>,

    /// Exploration share while training (`[pattern] explore`)
    #[arg(long, value_name = "SHARE", default_value_t = 0.25)]
    pub explore: f64,

    /// Only the home (tests/fixtures/home): teach, ask anew, the model away, nothing taught
    #[arg(long)]
    pub home: bool,

    /// Another home to grade (implies --home), in the format of tests/fixtures/home (its
    /// tools.json and requests.jsonl, split dev / heldout)
    #[arg(long, value_name = "DIR")]
    pub home_dir: Option<std::path::PathBuf>,

    /// Print what each learning figure missed (stderr)
    #[arg(long)]
    pub misses: bool,
}

/// One request of the set.
#[derive(serde::Deserialize, Clone, Debug)]
pub struct Request {
    /// Its kind.
    pub kind: String,
    /// `en` or `it`.
    pub lang: String,
    /// `train` or `test`.
    pub split: String,
    /// What the user said.
    pub text: String,
}

/// The set, parsed.
pub fn requests() -> Vec<Request> {
    KINDS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("kinds.jsonl parses"))
        .collect()
}

/// The report.
#[derive(Serialize, Debug)]
pub struct Report {
    /// Where it ran.
    pub machine: String,
    /// Per embedding model.
    pub models: Vec<ModelReport>,
}

/// One embedding model's figures.
#[derive(Serialize, Debug)]
pub struct ModelReport {
    /// The model.
    pub model: String,
    /// `same_kind` as the model's calibration carries it.
    pub same_kind_calibrated: f64,
    /// `same_kind` derived from the train split alone (p95 across kinds).
    pub same_kind_from_train: f64,
    /// The routing, per design.
    pub routing: Vec<RoutingScore>,
    /// The held-out pairs through the fast path, per language.
    pub paraphrases: Vec<crate::labelled::PairScore>,
    /// The offline planner on the held-out requests, per language.
    pub planner: Vec<crate::labelled::ChoiceScore>,
    /// The home, per split (dev, held out).
    pub home: Vec<crate::home::SplitScore>,
}

/// One design's routing on the held-out split.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RoutingScore {
    /// `meaning` or `structure`.
    pub design: String,
    /// Held-out requests routed to the model that answers their kind right
    /// (both defaults counted).
    pub right: usize,
    /// Held-out requests routed (twice each: once per default).
    pub routed: usize,
    /// Of them, routed by the store's recommendation (not the default).
    pub store_chose: usize,
    /// Right, per kind: (right, routed).
    pub per_kind: BTreeMap<String, (usize, usize)>,
    /// Right, per language: (right, routed).
    pub per_lang: BTreeMap<String, (usize, usize)>,
    /// Fingerprints the store holds after training (the first default's run).
    pub fingerprints: u64,
}

impl RoutingScore {
    /// Share routed right.
    pub fn accuracy(&self) -> f64 {
        self.right as f64 / self.routed.max(1) as f64
    }
}

/// Runs the bench.
pub fn run(o: &Options) -> anyhow::Result<Report> {
    let models = match o.model {
        Some(m) => vec![m],
        None => EmbeddingModel::ALL.to_vec(),
    };
    let fixture = match &o.home_dir {
        Some(dir) => crate::home::Fixture::load(dir)?,
        None => crate::home::Fixture::bundled(),
    };
    let mut out = Vec::new();
    for model in models {
        let embedder: Arc<dyn Embedder> = Arc::new(
            OnnxEmbedder::open(&EmbedderConfig::default().with_model(model)).context("opening the embedding model")?,
        );
        crate::progress(o.json, &format!("the home ({}) with {model}", fixture.name));
        let mut home = Vec::new();
        for split in ["dev", "heldout"] {
            let s = crate::home::score(embedder.clone(), &fixture, split)?;
            if o.misses {
                for m in &s.misses {
                    eprintln!("{split}: {m}");
                }
                let mut near = s.near.clone();
                near.sort_by(|a, b| a.0.total_cmp(&b.0));
                for (sim, ok) in near {
                    eprintln!("{split}: near {sim:.3} {}", if ok { "right" } else { "WRONG" });
                }
            }
            home.push(s);
        }
        if o.home || o.home_dir.is_some() {
            let mut report = ModelReport {
                model: model.to_string(),
                same_kind_calibrated: 0.0,
                same_kind_from_train: 0.0,
                routing: Vec::new(),
                paraphrases: Vec::new(),
                planner: Vec::new(),
                home,
            };
            report.model = model.to_string();
            out.push(report);
            continue;
        }
        crate::progress(o.json, &format!("routing by meaning with {model}"));
        let mut report = model_report(model, embedder.as_ref(), o.explore)?;
        report.home = home;
        crate::progress(o.json, &format!("held-out paraphrases and the offline planner with {model}"));
        report.paraphrases = crate::labelled::heldout_pairs(embedder.clone())?;
        if o.misses {
            for s in &report.paraphrases {
                for m in &s.misses {
                    eprintln!("pairs {}: {m}", s.lang);
                }
            }
        }
        report.planner = crate::labelled::choices_on(embedder, crate::labelled::HELDOUT)?;
        out.push(report);
    }
    Ok(Report { machine: crate::machine(), models: out })
}

/// One model's report: both designs on the same turns.
pub fn model_report(model: EmbeddingModel, embedder: &dyn Embedder, explore: f64) -> anyhow::Result<ModelReport> {
    let set = Embedded::new(embedder, requests())?;
    let cal = model.spec().calibration;
    let meaning = PatternConfig { same_request: cal.same_request, same_kind: cal.same_kind, ..Default::default() };
    let structure = PatternConfig { same_request: -1.0, same_kind: -1.0, ..Default::default() };
    Ok(ModelReport {
        model: model.to_string(),
        same_kind_calibrated: cal.same_kind,
        same_kind_from_train: set.same_kind_from_train(),
        routing: vec![routing(&set, "meaning", &meaning, explore), routing(&set, "structure", &structure, explore)],
        paraphrases: Vec::new(),
        planner: Vec::new(),
        home: Vec::new(),
    })
}

/// The set with each request's vector (of its canonical form, as the
/// router embeds it) and structural features.
pub struct Embedded {
    requests: Vec<Request>,
    vectors: Vec<Vec<f32>>,
    provider: String,
}

impl Embedded {
    /// Embeds `requests` with `embedder`.
    pub fn new(embedder: &dyn Embedder, requests: Vec<Request>) -> anyhow::Result<Self> {
        let now = crate::labelled::now();
        let canon: Vec<String> =
            requests.iter().map(|r| engram::learning::fast_path::canonical(&r.text, now).0).collect();
        let refs: Vec<&str> = canon.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&refs)?;
        Ok(Embedded { requests, vectors, provider: embedder.model_id().to_owned() })
    }

    /// The 95th percentile of cosines between train requests of different
    /// kinds.
    pub fn same_kind_from_train(&self) -> f64 {
        let train: Vec<usize> = (0..self.requests.len()).filter(|i| self.requests[*i].split == "train").collect();
        let mut across = Vec::new();
        for (n, &i) in train.iter().enumerate() {
            for &j in &train[n + 1..] {
                if self.requests[i].kind != self.requests[j].kind {
                    across.push(cosine(&self.vectors[i], &self.vectors[j]));
                }
            }
        }
        across.sort_by(f64::total_cmp);
        across.get(across.len() * 95 / 100).copied().unwrap_or(1.0)
    }

    fn fingerprint(&self, i: usize) -> Fingerprint {
        // Every request has the structure of a plain sentence: the set is
        // written so, and the features are fixed here so that a word the
        // tagger knows ("tomorrow" → time) cannot tell a kind apart —
        // meaning alone must.
        Fingerprint::structural(Default::default())
            .with_embedding(Some(Embedding::new(&self.provider, self.vectors[i].clone())))
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

/// The model that answers `kind` right: `a` for every other kind in sorted
/// order, `b` for the rest.
fn right_model(kinds: &[&str], kind: &str) -> &'static str {
    match kinds.iter().position(|k| *k == kind) {
        Some(i) if i % 2 == 0 => "a",
        _ => "b",
    }
}

/// Trains a store on the train split (routing through the real chain,
/// rating each answer by its kind) and routes the held-out split.
pub fn routing(set: &Embedded, design: &str, cfg: &PatternConfig, explore: f64) -> RoutingScore {
    let mut kinds: Vec<&str> = set.requests.iter().map(|r| r.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut score = RoutingScore {
        design: design.to_owned(),
        right: 0,
        routed: 0,
        store_chose: 0,
        per_kind: BTreeMap::new(),
        per_lang: BTreeMap::new(),
        fingerprints: 0,
    };
    for (run, default) in ["a", "b"].into_iter().enumerate() {
        let store = train(set, &kinds, cfg, explore, default);
        if run == 0 {
            score.fingerprints = store.fingerprint_count();
        }
        let candidates = ["a".to_owned(), "b".to_owned()];
        for (i, r) in set.requests.iter().enumerate().filter(|(_, r)| r.split == "test") {
            let fp = set.fingerprint(i).at_route();
            let rec = store.recommend_among(&fp, cfg, |m| candidates.iter().any(|c| c == m));
            let model = rec.chosen_model.clone().unwrap_or_else(|| default.to_owned());
            let right = usize::from(model == right_model(&kinds, &r.kind));
            score.right += right;
            score.routed += 1;
            score.store_chose += usize::from(rec.chosen_model.is_some());
            let k = score.per_kind.entry(r.kind.clone()).or_default();
            k.0 += right;
            k.1 += 1;
            let l = score.per_lang.entry(r.lang.clone()).or_default();
            l.0 += right;
            l.1 += 1;
        }
    }
    score
}

/// The train split, kinds taken in turn (one request of each kind, then
/// the next of each), each a session of one turn rated by its kind.
fn train(set: &Embedded, kinds: &[&str], cfg: &PatternConfig, explore: f64, default: &str) -> PatternOutcomes {
    let mut by_kind: Vec<Vec<usize>> = kinds
        .iter()
        .map(|k| {
            (0..set.requests.len())
                .filter(|i| set.requests[*i].split == "train" && set.requests[*i].kind == *k)
                .collect()
        })
        .collect();
    let mut order = Vec::new();
    while by_kind.iter().any(|v| !v.is_empty()) {
        for v in by_kind.iter_mut().filter(|v| !v.is_empty()) {
            order.push(v.remove(0));
        }
    }
    let mut reactors: Vec<Box<dyn Reactor>> =
        vec![Box::new(PatternReactor::new(PatternOutcomes::default(), cfg.clone(), PatternCaps::default()))];
    let mut store = PatternOutcomes::default();
    let candidates = ["a".to_owned(), "b".to_owned()];
    let exploring = Exploring { candidates: &candidates, default_model: default, share: explore, pattern: cfg };
    let t0: DateTime<Utc> = DateTime::parse_from_rfc3339("2026-11-02T09:00:00Z").expect("an instant").to_utc();
    let mut seq = 0u64;
    for (n, &i) in order.iter().enumerate() {
        let at = t0 + Duration::minutes(n as i64);
        let session = SessionId::new(format!("train-{n}"));
        let turn = TurnId::for_turn(&session, 1, at);
        let fp = set.fingerprint(i).at_route();
        let rec = store.recommend_among(&fp, cfg, |m| candidates.iter().any(|c| c == m));
        let routed = route_chain(Slots {
            fast_path_similarity: None,
            user_override: None,
            sticky: None,
            rule: None,
            turn: Some(turn),
            recommendation: &rec,
            fingerprint: &fp,
            exploring: &exploring,
        });
        let good = routed.model == right_model(kinds, &set.requests[i].kind);
        let embedding = QueryEmbedding { provider: set.provider.clone(), vector: set.vectors[i].clone() };
        let id = |tag: &[u8]| EventId::derive(at, &[tag, &(n as u64).to_be_bytes()]);
        let events = vec![
            Envelope::at(
                id(b"route"),
                at,
                ActorKind::Router,
                RouteDecided {
                    layer: RouteLayer::Planner,
                    chosen_model: Some(routed.model.clone()),
                    chain: routed.chain,
                    features: Default::default(),
                    workload: None,
                    embedding: Some(embedding),
                },
            ),
            Envelope::at(
                id(b"done"),
                at,
                ActorKind::ReplyLoop,
                TurnCompleted {
                    turn_number: 1,
                    text: set.requests[i].text.clone(),
                    layer: RouteLayer::Planner,
                    model: Some(routed.model),
                    steps: Vec::new(),
                    tools_ok: true,
                    planner_ms: 0,
                    latency_ms: 1_000,
                    cost_usd: Decimal::ZERO,
                    pricing_version: "bench".into(),
                },
            ),
            Envelope::at(
                id(b"eval"),
                at,
                ActorKind::Judge,
                EvalCompleted {
                    eval_id: EvalId::derive(at, &[b"eval", &(n as u64).to_be_bytes()]),
                    subject_turn: turn,
                    score: if good { 1.0 } else { 0.0 },
                    confidence: 0.9,
                    judge: JudgeKind::Feedback,
                    rubric: None,
                    judge_pricing_version: None,
                },
            ),
            Envelope::at(id(b"end"), at, ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: 1 }),
        ];
        let events: Vec<Envelope> =
            events.into_iter().map(|e| e.with_session(session.clone()).with_turn(turn)).collect();
        for mut e in derive_all(events, &mut reactors) {
            seq += 1;
            e.seq = engram::Seq(seq);
            engram::local_state::projector::Projection::apply(&mut store, &e);
        }
    }
    store
}

impl Report {
    /// The human form.
    pub fn human(&self) -> String {
        let mut s = format!("learning, on data the code never saw ({})\n", self.machine);
        // `--home` measures the home alone: no routing, pairs or planner
        // figures to print.
        if self.models.iter().any(|m| !m.routing.is_empty()) {
            s.push_str("routing by meaning: 12 kinds of one structure, EN + IT, held-out split, both defaults\n");
        }
        for m in &self.models {
            match m.routing.is_empty() {
                true => s.push_str(&format!("  {}:\n", m.model)),
                false => s.push_str(&format!(
                    "  {}: same_kind {:.2} (calibrated) / {:.2} (from the train split)\n",
                    m.model, m.same_kind_calibrated, m.same_kind_from_train
                )),
            }
            for r in &m.routing {
                let lang: Vec<String> = r
                    .per_lang
                    .iter()
                    .map(|(l, (right, n))| format!("{l} {:.0}%", 100.0 * *right as f64 / (*n).max(1) as f64))
                    .collect();
                s.push_str(&format!(
                    "    {:<9} right {:>3}/{:<3} {:>5.1}%  ({}; store chose {}, {} fingerprints)\n",
                    r.design,
                    r.right,
                    r.routed,
                    100.0 * r.accuracy(),
                    lang.join(", "),
                    r.store_chose,
                    r.fingerprints
                ));
                let kinds: Vec<String> = r.per_kind.iter().map(|(k, (right, n))| format!("{k} {right}/{n}")).collect();
                s.push_str(&format!("              {}\n", kinds.join(" · ")));
            }
            let pairs: Vec<String> = m
                .paraphrases
                .iter()
                .map(|p| {
                    format!(
                        "{} {}/{} served, {} wrong of {}",
                        p.lang, p.served, p.paraphrases, p.wrong_replays, p.hard_negatives
                    )
                })
                .collect();
            if !pairs.is_empty() {
                s.push_str(&format!("    paraphrases (held out): {}\n", pairs.join(" · ")));
            }
            let planner: Vec<String> =
                m.planner.iter().map(|c| format!("{} {}/{}", c.lang, c.right, c.requests)).collect();
            if !planner.is_empty() {
                s.push_str(&format!("    offline planner (held out): {}\n", planner.join(" · ")));
            }
            for h in &m.home {
                s.push_str(&crate::home::human(h));
            }
        }
        s
    }
}
