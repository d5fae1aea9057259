//! The router: fast path first, then the routing chain with the pattern
//! store's recommendation as slot 4 (seed 001 §9; the chain and its
//! exploration rule are [`engram_learning::routing`]); and, from every
//! completed turn, what the fast path learns.
//!
//! Consumes `intent.judged` (directed, not stop) and emits `route.decided`
//! with the whole chain, `fastpath.hit` or `fastpath.missed`, and
//! `pattern.matched` when slot 4 chose the model. Consumes `turn.completed`,
//! `eval.completed` and `day.activated` through [`FastPathReactor`] — the
//! code `engram import` runs — for `canonical.recorded/.rejected` and
//! `pipeline.*` (the learning bar: a verdict below it takes back what
//! served and taught its turn).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::FixedOffset;
use engram_events::derived;
use engram_events::payloads::*;
use engram_events::{ActorKind, Envelope, Event, EventKind, FingerprintId, Seq, SessionId, TurnId};
use engram_learning::fast_path::Decision;
use engram_learning::fast_path::{FastPathConfig, MultiToolConfig};
use engram_learning::features;
use engram_learning::patterns::PatternSection;
use engram_learning::patterns::{Embedding, Fingerprint};
use engram_learning::projections::{ActiveDays, CanonicalQueries, PatternOutcomes, Pipelines};
use engram_learning::reactors::{FastPathReactor, Reactor};
use engram_learning::routing::{fast_path_chain, route_chain, Exploring, Slots};
use engram_local_state::embedding_cache::EmbeddingCache;
use engram_local_state::projector::Projection;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};

use crate::bus::Bus;
use crate::fast_path_service::FastPathService;
use crate::shell::Role;
use engram_learning::embedder::Embedder;

/// What the router needs besides the log.
#[derive(Clone)]
pub struct RouterSetup {
    /// `[fast_path]`: L0 and L1.
    pub fast_path: FastPathConfig,
    /// `[multi_tool_fast_path]`: L2.
    pub multi_tool: MultiToolConfig,
    /// `[pattern]`: the store's knobs, exploration, fingerprints.
    pub pattern: PatternSection,
    /// The embedder the fast path compares requests with.
    pub embedder: Arc<dyn Embedder>,
    /// The embedding memo (a sled tree).
    pub cache: Option<EmbeddingCache>,
    /// The user's UTC offset (relative dates in requests are local).
    pub offset: FixedOffset,
    /// The model slot 5 (the default) routes to.
    pub default_model: String,
    /// The models a planner turn may be routed to (`[llm] candidates`):
    /// the store's recommendation and exploration choose among them.
    pub candidates: Vec<String>,
    /// Models an explicit rule pins (slot 3), by intent tag.
    pub rules: Vec<(String, String)>,
    /// The tools the reply loop can run, as they are at each turn: a
    /// replay naming another (learnt from an import, from a host tool no
    /// longer registered, or from an MCP server's tool that is gone) goes
    /// to the planner instead.
    pub catalogue: Arc<crate::catalogue::Catalogue>,
}

/// The router's state.
pub struct Router {
    setup: RouterSetup,
    learn: FastPathReactor,
    patterns: PatternOutcomes,
    fast: Option<FastPathService>,
    /// Canonical texts the projections learnt about that the fast path has
    /// not taken in yet.
    learnt: std::collections::BTreeSet<String>,
    /// Did an earlier turn of the session call tools (a structural feature).
    history: HashMap<SessionId, bool>,
    /// The user's model choices for open turns: slot 1 (this utterance) and
    /// slot 2 (the session's sticky one), from `utterance.received`.
    choices: HashMap<TurnId, (Option<String>, Option<String>)>,
    /// Whether the store was checked for vectors of another embedding model
    /// (once, at the first routed turn; see [`Router::reembed`]).
    checked_vectors: bool,
    /// The catalogue version whose schemas the fast path holds.
    schemas_version: Option<u64>,
}

impl Router {
    /// An empty router.
    pub fn new(setup: RouterSetup) -> Router {
        let learn = FastPathReactor::new(
            CanonicalQueries::default(),
            Pipelines::default(),
            &ActiveDays::default(),
            setup.multi_tool.clone(),
            setup.offset,
        );
        // Held in memory only (the snapshot is the whole state): which
        // rows changed is not kept, or it grows with every turn.
        let mut patterns = PatternOutcomes::default();
        patterns.stop_tracking();
        // It recommends; the pattern reactor records. Pending turns would
        // be a second copy of every open session's turns.
        patterns.keep_outcomes_only();
        Router {
            setup,
            learn,
            patterns,
            fast: None,
            learnt: Default::default(),
            history: HashMap::new(),
            choices: HashMap::new(),
            checked_vectors: false,
            schemas_version: None,
        }
    }

    /// Once, at the first hybrid route: the store's fingerprints whose
    /// vectors come from another embedding model than this runtime's (the
    /// configured model changed) get their request embedded again by this
    /// one, as `pattern.reembedded` events caused by `cause` and folded at
    /// once — so they meet this model's queries by meaning again, the log
    /// carries the new vectors, and rebuilding the store still runs no
    /// model. A fingerprint's request is the query of the turn that first
    /// recorded it (found by one pass over the log's `intent.judged`, paid
    /// only after a model change); one whose request is not in the log any
    /// more keeps its vector and is compared on structure, with a warning.
    fn reembed(&mut self, cause: &Envelope, bus: &Bus) -> Vec<Envelope> {
        if std::mem::replace(&mut self.checked_vectors, true) || self.setup.pattern.fingerprint_version < 2 {
            return Vec::new();
        }
        let model = self.setup.embedder.model_id().to_owned();
        let mut stale: Vec<(u64, FingerprintId)> = self
            .patterns
            .fingerprints()
            .filter(|(_, row)| row.embedding.as_ref().is_some_and(|e| e.provider != model))
            .map(|(id, row)| (row.first_seq, id))
            .collect();
        if stale.is_empty() {
            return Vec::new();
        }
        stale.sort_unstable();
        // The requests are embedded as route-time queries are: their
        // canonical text, through the fast path's memo.
        self.fast_path();
        let log = bus.log();
        let turn_of = |seq: u64| match log.read_from(Seq(seq)).next() {
            Some(Ok(env)) => match &env.event {
                Event::PatternRecorded(p) => p.turn,
                _ => None,
            },
            _ => None,
        };
        let turns: Vec<(FingerprintId, Option<TurnId>)> = stale.iter().map(|(seq, id)| (*id, turn_of(*seq))).collect();
        let wanted: std::collections::HashSet<TurnId> = turns.iter().filter_map(|(_, t)| *t).collect();
        let mut queries: HashMap<TurnId, (String, chrono::DateTime<chrono::FixedOffset>)> = HashMap::new();
        for env in log.read_kinds(Seq::FIRST, &[EventKind::IntentJudged]).flatten() {
            if let (Some(turn), Event::IntentJudged(i)) = (env.turn, &env.event) {
                if wanted.contains(&turn) {
                    queries.insert(turn, (i.query.clone(), env.at.with_timezone(&self.setup.offset)));
                }
            }
        }
        let mut out = Vec::new();
        let mut kept = 0usize;
        for (id, turn) in turns {
            let vector = turn
                .and_then(|t| queries.get(&t))
                .and_then(|(query, at)| self.fast.as_ref().and_then(|f| f.embed_request(query, *at).ok().flatten()));
            let Some(vector) = vector else {
                kept += 1;
                continue;
            };
            let event = PatternReembedded {
                fingerprint_id: id,
                turn,
                embedding: QueryEmbedding { provider: model.clone(), vector },
            };
            out.push(derived(cause, ActorKind::Router, event, out.len() as u32));
        }
        tracing::info!(
            rows = out.len(),
            model,
            "pattern store: fingerprints recorded with another embedding model embedded again with this one"
        );
        if kept > 0 {
            tracing::warn!(
                rows = kept,
                model,
                "pattern store: fingerprints of another embedding model whose request is not in the log; \
                 compared on their structural features only"
            );
        }
        for env in &out {
            self.patterns.apply(env);
        }
        out
    }

    /// Notes the canonical text a learnt event is about, before the
    /// projections fold it (an expired pipeline's row is gone after).
    fn note_learnt(&mut self, env: &Envelope) {
        let text = match &env.event {
            Event::CanonicalRecorded(c) => Some(c.canonical.clone()),
            Event::CanonicalRejected(c) => Some(c.canonical.clone()),
            Event::CanonicalCompared(c) => Some(c.canonical.clone()),
            Event::PipelineRecorded(p) => Some(p.canonical.clone()),
            Event::PipelineExpired(PipelineExpired { pipeline_id, .. })
            | Event::PipelineRejected(PipelineRejected { pipeline_id, .. })
            | Event::PipelinePromoted(PipelinePromoted { pipeline_id, .. }) => {
                self.learn.pipelines().get(pipeline_id).map(|p| p.canonical.clone())
            }
            _ => None,
        };
        // Before the first build there is nothing to update.
        if let (Some(text), Some(_)) = (text, &self.fast) {
            self.learnt.insert(text);
        }
    }

    fn fold(&mut self, env: &Envelope) {
        match &env.event {
            Event::UtteranceReceived(u) if u.model.is_some() || u.sticky_model.is_some() => {
                if let Some(turn) = env.turn {
                    self.choices.insert(turn, (u.model.clone(), u.sticky_model.clone()));
                }
            }
            Event::TurnCompleted(t) => {
                if let Some(s) = &env.session {
                    *self.history.entry(s.clone()).or_default() |= !t.steps.is_empty();
                }
                if let Some(turn) = env.turn {
                    self.choices.remove(&turn);
                }
            }
            Event::SessionEnded(_) => {
                if let Some(s) = &env.session {
                    self.history.remove(s);
                }
            }
            _ => {}
        }
        if self.patterns.kinds().is_none_or(|k| k.contains(&env.kind())) {
            // Held in memory only: it tracks no changes (see `new`).
            self.patterns.apply(env);
        }
    }

    /// The fast path over the rows learnt so far: built once (the row
    /// vectors come from the embedding memo, so a restart costs cache reads
    /// and an index build, not inference), then updated row by row — a
    /// learnt turn embeds and inserts its one row, never re-indexes the
    /// others.
    fn fast_path(&mut self) -> Option<&FastPathService> {
        let (canonical, pipelines) = (self.learn.canonical_queries(), self.learn.pipelines());
        match &mut self.fast {
            Some(f) if !self.learnt.is_empty() => {
                let texts: Vec<String> = self.learnt.iter().cloned().collect();
                match f.update_texts(canonical, pipelines, &texts) {
                    Ok(_) => {
                        // What the turns taught, for the offline planner.
                        let rows = texts.iter().flat_map(|t| canonical.for_text(t));
                        if let Err(e) = f.teach(&mut self.setup.catalogue.taught_mut(), canonical, rows) {
                            tracing::warn!("router: the offline planner not taught ({e})");
                        }
                        self.learnt.clear()
                    }
                    // Kept as it was; tried again at the next turn.
                    Err(e) => tracing::warn!("router: fast path not updated ({e}); it answers from what it had"),
                }
            }
            Some(_) => {}
            None => {
                let s = &self.setup;
                match FastPathService::build(
                    (&s.fast_path, &s.multi_tool),
                    canonical,
                    pipelines,
                    s.embedder.clone(),
                    s.cache.clone(),
                ) {
                    Ok(f) => {
                        if let Err(e) = f.teach(&mut s.catalogue.taught_mut(), canonical, canonical.iter()) {
                            tracing::warn!("router: the offline planner not taught ({e})");
                        }
                        self.fast = Some(f);
                        self.learnt.clear();
                        self.schemas_version = None;
                    }
                    Err(e) => tracing::warn!("router: fast path unavailable ({e}); routing to the planner"),
                }
            }
        }
        let rejected = self.learn.rejected_replay();
        let view = self.setup.catalogue.view();
        if let Some(f) = &mut self.fast {
            f.raise_bar(rejected);
            // The tools' schemas as the catalogue has them now: a slot of
            // an enum parameter takes only its members.
            if self.schemas_version != Some(view.version) {
                f.set_schemas(view.tools.iter().map(|(name, _, params)| (name.clone(), params.clone())).collect());
                self.schemas_version = Some(view.version);
            }
        }
        self.fast.as_ref()
    }

    /// The fast path's decision for `intent`, sent to the planner when it
    /// would replay a tool this runtime does not have. The offline
    /// planner, reading the request by the tools' descriptions alone, is
    /// the second reader of a learnt phrasing short of serving by itself
    /// (`engram_learning::fast_path::second_reading`).
    fn decide(&mut self, intent: &IntentJudged, now: chrono::DateTime<FixedOffset>) -> Decision {
        let view = self.setup.catalogue.view();
        let mut second = |text: &str| match view.offline.plan(text, now) {
            Ok(steps) => steps,
            Err(e) => {
                tracing::warn!("router: the offline planner could not read the request a second time: {e}");
                Vec::new()
            }
        };
        let decision = match self.fast_path().map(|f| f.route_read_twice(&intent.query, now, &mut second)) {
            Some(Ok(d)) => d,
            Some(Err(e)) => Decision::planner(format!("fast path failed: {e}"), None),
            None => Decision::planner("fast path unavailable".into(), None),
        };
        match decision.steps.iter().find(|s| !view.has(&s.tool)) {
            Some(step) if decision.layer != RouteLayer::Planner => Decision::planner(
                format!("{:?} replay needs tool {:?}, which is not registered", decision.layer, step.tool),
                decision.similarity,
            ),
            _ => decision,
        }
    }

    fn route(&mut self, env: &Envelope, intent: &IntentJudged) -> Vec<Envelope> {
        let now = chrono::Utc::now().with_timezone(&self.setup.offset);
        let decision = self.decide(intent, now);
        let history = env.session.as_ref().and_then(|s| self.history.get(s)).copied().unwrap_or(false);
        let features =
            features::for_turn_with(&intent.query, &decision.steps, history, &self.setup.pattern.intent_tags);
        let hit = |decision: &Decision, residual| FastPathHit {
            layer: decision.layer,
            matched: decision.matched.clone().unwrap_or_default(),
            similarity: decision.similarity,
            steps: decision.steps.clone(),
            residual,
        };
        // A chained request: the fast path replays its known prefix, the
        // planner plans the rest in the same turn, with a model chosen as
        // for any planner turn.
        let chained = decision.layer != RouteLayer::Planner && decision.residual.is_some();
        if decision.layer != RouteLayer::Planner && !chained {
            let route = RouteDecided {
                layer: decision.layer,
                chosen_model: None,
                chain: fast_path_chain(decision.similarity),
                features,
                workload: None,
                embedding: None,
            };
            return vec![
                derived(env, ActorKind::Router, route, 0),
                derived(env, ActorKind::Router, hit(&decision, None), 0),
            ];
        }
        let embedding = self.request_embedding(&decision, intent, now);
        // A route-time query: what the turn will run is not known yet, and
        // the store's similarity skips it (seed 001 §5.3 renormalised).
        let fingerprint = Fingerprint::structural(features.clone().normalized())
            .with_embedding(embedding.as_ref().map(|e| Embedding::new(&e.provider, e.vector.clone())))
            .at_route();
        let pattern = self.setup.pattern.config();
        // Only a candidate can be routed to (the store may know models from
        // imported history, or an earlier configuration, that this
        // assistant does not run): the store ranks the candidates alone.
        let candidates = &self.setup.candidates;
        let rec = self.patterns.recommend_among(&fingerprint, &pattern, |m| candidates.iter().any(|c| c == m));
        let (user_override, sticky) = env.turn.and_then(|t| self.choices.remove(&t)).unwrap_or_default();
        let exploring = Exploring {
            candidates,
            default_model: &self.setup.default_model,
            share: self.setup.pattern.explore,
            pattern: &pattern,
        };
        let routed = route_chain(Slots {
            fast_path_similarity: decision.similarity,
            user_override,
            sticky,
            rule: self.setup.rules.iter().find(|(tag, _)| features.intent_tags.contains(tag)).map(|(_, m)| m.clone()),
            turn: env.turn,
            recommendation: &rec,
            fingerprint: &fingerprint,
            exploring: &exploring,
        });
        let mut out = Vec::with_capacity(3);
        if chained {
            // Before the route: the planner and the reply loop know the
            // prefix when the planner turn starts.
            out.push(derived(env, ActorKind::Router, hit(&decision, decision.residual.clone()), 0));
        }
        if !chained {
            // Before the route, as a chained hit is: the planner knows the
            // turn's near miss when it plans (what an offline plan takes).
            let missed = FastPathMissed {
                best_similarity: decision.similarity,
                best_candidate: decision.matched,
                reason: decision.reason,
                near: decision.near,
            };
            out.push(derived(env, ActorKind::Router, missed, 0));
        }
        let route = RouteDecided {
            layer: RouteLayer::Planner,
            chosen_model: Some(routed.model),
            chain: routed.chain,
            features,
            workload: None,
            embedding,
        };
        out.push(derived(env, ActorKind::Router, route, 0));
        if let Some(m) = routed.matched {
            out.push(derived(env, ActorKind::Router, m, 0));
        }
        out
    }

    /// The hybrid fingerprint's half of meaning (seed 001 §16): the
    /// request's embedding — the one the fast path computed, else one
    /// through the memo — which travels in `route.decided`, so the store's
    /// rebuild never runs the model.
    fn request_embedding(
        &self,
        decision: &Decision,
        intent: &IntentJudged,
        now: chrono::DateTime<FixedOffset>,
    ) -> Option<QueryEmbedding> {
        if self.setup.pattern.fingerprint_version < 2 {
            return None;
        }
        let vector = match decision.query.clone() {
            Some(v) => Some(v),
            None => self.fast.as_ref().and_then(|f| f.embed_request(&intent.query, now).ok().flatten()),
        };
        vector.map(|vector| QueryEmbedding { provider: self.setup.embedder.model_id().to_owned(), vector })
    }
}

impl Role for Router {
    fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out = self.learn.sizes();
        out.extend(self.patterns.sizes().into_iter().map(|(what, n)| match what {
            "fingerprints" => ("patterns.fingerprints", n),
            "outcomes" => ("patterns.outcomes", n),
            "history" => ("patterns.history", n),
            "pending" => ("patterns.pending", n),
            "ended" => ("patterns.ended", n),
            "pending_keys" => ("patterns.pending_keys", n),
            "turns_of" => ("patterns.turns_of", n),
            "families" => ("patterns.families", n),
            "by_age" => ("patterns.by_age", n),
            "fingerprints.bytes" => ("patterns.fingerprints.bytes", n),
            "outcomes.bytes" => ("patterns.outcomes.bytes", n),
            "history.bytes" => ("patterns.history.bytes", n),
            "pending.bytes" => ("patterns.pending.bytes", n),
            "ended.bytes" => ("patterns.ended.bytes", n),
            "index.bytes" => ("patterns.index.bytes", n),
            _ => ("patterns.dirty", n),
        }));
        if let Some(fast) = &self.fast {
            let (l1, l2) = fast.sizes();
            let (l1_bytes, l2_bytes) = fast.heap_bytes();
            out.extend([("l1_rows", l1), ("l2_rows", l2), ("l1_rows.bytes", l1_bytes), ("l2_rows.bytes", l2_bytes)]);
        }
        out.extend([("learnt", self.learnt.len()), ("history", self.history.len()), ("choices", self.choices.len())]);
        out
    }

    fn snapshot_version(&self) -> u32 {
        4 // 2: the fast path's recent turns' lessons; 3: their cosines; 4: actions, near misses
    }

    /// The fast path's learning state, the pattern store, the sessions'
    /// tool history and the open turns' model choices. The built fast
    /// path is not state: it is built from the rows at the first route.
    fn save(&self, w: &mut SnapshotWriter) {
        self.learn.save(w);
        self.patterns.save(w);
        w.put_map(&self.history);
        w.put_map(&self.choices);
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.learn.restore(r)?;
        self.patterns.restore(r)?;
        self.history = r.take_map()?;
        self.choices = r.take_map()?;
        Ok(())
    }

    fn kinds(&self) -> Option<Vec<EventKind>> {
        let mut k = vec![
            EventKind::UtteranceReceived,
            EventKind::IntentJudged,
            EventKind::FastPathHit,
            EventKind::FastPathMissed,
            EventKind::TurnCompleted,
            EventKind::DayActivated,
            EventKind::CanonicalRecorded,
            EventKind::CanonicalRejected,
            EventKind::CanonicalCompared,
            EventKind::PipelineRecorded,
            EventKind::PipelineExpired,
            EventKind::PipelinePromoted,
            EventKind::PipelineRejected,
            EventKind::EvalCompleted,
            EventKind::SessionEnded,
        ];
        k.extend(self.patterns.kinds().unwrap_or_default());
        Some(k)
    }

    fn observe(&mut self, env: &Envelope) {
        self.note_learnt(env);
        self.learn.observe(env);
        self.fold(env);
    }

    fn handle(&mut self, env: &Envelope, bus: &Bus) -> Vec<Envelope> {
        let mut out = match &env.event {
            // An imported turn was routed when it happened; it is history.
            Event::IntentJudged(i) if i.judge == JudgeKind::Import => Vec::new(),
            Event::IntentJudged(i) if i.directed && !i.stop && !i.query.trim().is_empty() => {
                let mut out = self.reembed(env, bus);
                out.extend(self.route(env, i));
                out
            }
            _ => Vec::new(),
        };
        self.note_learnt(env);
        out.extend(self.learn.react(env));
        self.fold(env);
        out
    }
}
