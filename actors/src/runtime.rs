//! The runtime a host embeds: [`Runtime::builder`] → [`Runtime`], whose
//! handle takes utterances, feedback and session ends and returns replies.
//!
//! ```no_run
//! use engram_actors::runtime::Runtime;
//! use engram_events::SessionId;
//!
//! let rt = Runtime::builder().data_dir("/tmp/engram-host").start()?;
//! let session = SessionId::new("s-1");
//! let reply = rt.handle_utterance(&session, "what time is it")?;
//! println!("{} ({:?})", reply.text, reply.layer);
//! rt.end_session(&session)?;
//! rt.shutdown()?;
//! # Ok::<(), engram_actors::RuntimeError>(())
//! ```
//!
//! Inside, each role runs as an actix actor on its own arbiter (thread),
//! under a supervisor; actors talk only through the log (see [`crate::shell`]).
//! The host's calls block until their turn's `turn.completed` is in the
//! log; hosts on an async runtime call them from a blocking task.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::Config;
use actix::prelude::*;
use chrono::FixedOffset;
use engram_events::payloads::{FeedbackRating, LlmContext, PlanStep, RouteLayer, SessionEndReason, UtteranceSource};
use engram_events::{ActorKind, Envelope, Seq, SessionId, TurnId};
use engram_learning::intent::IntentMode;
use engram_learning::projections::PatternOutcomes;
use engram_learning::reactors::PatternReactor;
use engram_local_state::embedding_cache::{CacheCaps, EmbeddingCache};
use engram_local_state::projector::Projection;
use engram_storage::{EventLog, LogConfig};

#[cfg(feature = "metrics")]
use crate::metrics::TimedEmbedder;

use crate::bridge::Bridge;
use crate::bus::{Bus, BusObserver};
use crate::dispatch::{self, Feed};
use crate::error::RuntimeError;
use crate::llm::ContextLlm;
use crate::llm::{LlmClient, PriceTable};
#[cfg(feature = "onnx")]
use crate::onnx_embedder::OnnxEmbedder;
use crate::roles::graph::GraphWriter;
use crate::roles::judge::Judge;
use crate::roles::listener::{Heard, HostInput, Listener, LISTENER_KINDS};
use crate::roles::planner::{Planner, PlannerSetup};
use crate::roles::reply_loop::{Digests, ReplyLoop, ReplySetup};
use crate::roles::router::{Router, RouterSetup};
use crate::roles::summariser::Summariser;
use crate::roles::ReactorRole;
use crate::shell::{Deliver, RoleFactory, SaveSnapshot, Shell, ShellStatus};
use crate::tool_router::ToolRouter;
use crate::tools::{BuiltinConfig, Tool, ToolRegistry};
use engram_learning::embedder::Embedder;
use engram_learning::offline_planner::{OfflinePlanner, OFFLINE_MODEL};

/// How long a host call waits for its turn by default.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(120);

/// How long shutdown waits for the actors to save their snapshots.
pub const SNAPSHOT_WAIT: Duration = Duration::from_secs(10);

/// What the host gets back for an utterance.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The turn the utterance opened.
    pub turn: TurnId,
    /// How the listener judged it.
    pub heard: Heard,
    /// The reply (empty when the utterance was not for the assistant).
    pub text: String,
    /// Which layer answered (`None`: not directed, or a stop).
    pub layer: Option<RouteLayer>,
    /// The model that planned the turn, if any.
    pub model: Option<String>,
    /// The steps run.
    pub steps: Vec<PlanStep>,
    /// Did every tool succeed.
    pub tools_ok: bool,
    /// From utterance to reply, as the reply loop measured it.
    pub latency_ms: u64,
}

/// `[runtime]`: the live runtime's own knobs (seed 002).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeSection {
    /// Most model turns of the reply loop per reply (seed 002 #1: 8).
    pub agentic_max_turns: u32,
    /// A session with no utterance for this long is ended (`session.ended`
    /// with reason `idle`), so the pattern store records it and the
    /// summariser writes its summary; 0 never ends one on its own.
    pub session_idle_secs: u64,
    /// Routing rules (slot 3 of the chain, above the pattern store's
    /// recommendation): intent tag → model, e.g. `{ doc = "qwen3:32b" }`.
    pub model_rules: std::collections::BTreeMap<String, String>,
    /// The conversation the planner and the reply loop see (seed 002 #1):
    /// a session's exchanges no older than this (a longer pause starts a
    /// new conversation); 0: none.
    pub dialogue_window_secs: u64,
    /// Most exchanges of that conversation per prompt.
    pub dialogue_max_turns: usize,
    /// Most tools a planner prompt lists: a bigger catalogue (a host that
    /// registers 200 tools) is narrowed to this many by the tool router
    /// (seed 002 #7), and the reply loop's model may find more with
    /// `search_tools` (#8).
    pub planner_max_tools: usize,
    /// How often, in events of the log, each actor saves a snapshot of
    /// its folded state, so a start reads the state and the log's tail
    /// instead of folding the log from seq 1 (a shutdown saves one too once
    /// a quarter of this has passed); 0: never.
    pub snapshot_every: u64,
}

impl Default for RuntimeSection {
    fn default() -> Self {
        RuntimeSection {
            agentic_max_turns: 8,
            session_idle_secs: 30 * 60,
            model_rules: std::collections::BTreeMap::new(),
            dialogue_window_secs: 300,
            dialogue_max_turns: 8,
            planner_max_tools: 12,
            snapshot_every: 4096,
        }
    }
}

/// Builds a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    data_dir: Option<PathBuf>,
    config: Option<Config>,
    llm: Option<Arc<dyn LlmClient>>,
    offline: bool,
    embedder: Option<Arc<dyn Embedder>>,
    tools: Vec<Arc<dyn Tool>>,
    offset: Option<FixedOffset>,
    mode: Option<IntentMode>,
    turn_timeout: Option<Duration>,
    #[cfg(feature = "metrics")]
    registry: Option<prometheus::Registry>,
    backend: Option<engram_storage::LogBackend>,
    serve_followers: bool,
}

impl RuntimeBuilder {
    /// Where the log and its trees live (created owner-only).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// The configuration (default: [`Config::default`], offline).
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The model server (default: from `[llm]`; none there: offline mode).
    pub fn llm(mut self, llm: Arc<dyn LlmClient>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Offline mode even if `[llm]` names a server.
    pub fn offline(mut self) -> Self {
        self.offline = true;
        self
    }

    /// The embedder (default: the local ONNX model of `[embedder]`).
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// A host tool, besides the built-ins (same name: the host's wins).
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// The user's UTC offset (default: the machine's local offset now).
    pub fn utc_offset(mut self, offset: FixedOffset) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Typed chat (every utterance is for the assistant; the default) or
    /// voice (wake word or hot window needed).
    pub fn intent_mode(mut self, mode: IntentMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// How long a host call waits for its turn (default [`TURN_TIMEOUT`]).
    pub fn turn_timeout(mut self, timeout: Duration) -> Self {
        self.turn_timeout = Some(timeout);
        self
    }

    /// The log to run on, instead of the one `[storage]` chooses (a host
    /// that builds its own [`engram_storage::JetStreamConfig`], with a
    /// progress callback for a first fetch, say).
    pub fn log_backend(mut self, backend: engram_storage::LogBackend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Serves the log to followers in other processes (`engram replay
    /// --follow`) on the data dir's socket while the runtime runs (off by
    /// default: see [`LogConfig::serve_followers`]).
    pub fn serve_followers(mut self, on: bool) -> Self {
        self.serve_followers = on;
        self
    }

    /// Registers the runtime's metrics ([`crate::metrics`]) in the host's
    /// own registry, to serve with its other metrics; `[metrics] listen`,
    /// if set, serves this registry too.
    #[cfg(feature = "metrics")]
    pub fn metrics_registry(mut self, registry: prometheus::Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Opens the log, starts every actor and catches each up from its
    /// checkpoint.
    pub fn start(self) -> Result<Runtime, RuntimeError> {
        let dir = self.data_dir.ok_or(RuntimeError::NoDataDir)?;
        let mut config = self.config.unwrap_or_default();
        let durability = config.storage.durability().map_err(RuntimeError::Config)?;
        let backend = match self.backend {
            Some(backend) => backend,
            None => config.storage.backend().map_err(RuntimeError::Config)?,
        };
        // The embedding model loads (hundreds of ms: its files hashed, the
        // tokenizer built, the session made) while the log opens on this
        // thread, so a big log's open costs a start nothing of its own.
        // (A log that does not open is reported at once; the loading thread
        // is left to finish on its own.)
        let loading = match &self.embedder {
            Some(_) => None,
            None => Some(load_embedder(config.embedder.clone())?),
        };
        let log = backend
            .open(&dir, LogConfig { durability, serve_followers: self.serve_followers, ..LogConfig::default() })?;
        let embedder: Arc<dyn Embedder> = match (self.embedder, loading) {
            (Some(e), _) => e,
            (None, Some(thread)) => thread.join().map_err(|_| RuntimeError::ActorFailed("embedder"))??,
            (None, None) => unreachable!("the model is loaded when no embedder is given"),
        };
        #[cfg(feature = "metrics")]
        let metrics = crate::metrics::setup(&config.metrics.listen, self.registry)?;
        #[cfg(feature = "metrics")]
        let (embedder, observer): (Arc<dyn Embedder>, Option<Arc<dyn BusObserver>>) = match &metrics {
            Some(m) => (Arc::new(TimedEmbedder::new(embedder, m.metrics.clone())), Some(m.metrics.clone())),
            None => (embedder, None),
        };
        #[cfg(not(feature = "metrics"))]
        let observer = without_metrics(&config.metrics)?;
        let bus = Arc::new(Bus::new(&log)?.with_snapshot_every(config.runtime.snapshot_every).with_observer(observer));
        // Every cosine threshold the configuration leaves unset is the one
        // calibrated for the model these vectors come from.
        config.calibrate_for(embedder.model_id());
        let llm = match (self.offline, self.llm) {
            (true, _) => None,
            (false, Some(l)) => Some(l),
            (false, None) => {
                crate::llm::client_from_config(&config.llm).map_err(|e| RuntimeError::Llm(e.to_string()))?
            }
        };
        let prices = Arc::new(PriceTable::from_config(&config.llm));
        let mut registry = ToolRegistry::with_builtins(BuiltinConfig::from_section(&config.tools));
        for t in self.tools {
            registry.register(t);
        }
        let registry = Arc::new(registry);
        let tools = Arc::new(registry.specs());
        let offline = Arc::new(OfflinePlanner::new(embedder.clone(), &tools)?);
        let offset = self.offset.unwrap_or_else(|| *chrono::Local::now().offset());
        let cache = EmbeddingCache::open(log.local_db(), CacheCaps::default())?;
        config.llm.check().map_err(RuntimeError::Config)?;
        let default_model = match &llm {
            Some(_) if !config.llm.model.is_empty() => config.llm.model.clone(),
            _ => OFFLINE_MODEL.to_owned(),
        };
        // What planner turns may be routed to: the configured candidates
        // with a server to ask, else the default alone.
        let candidates = match &llm {
            Some(_) if !config.llm.candidate_models().is_empty() => config.llm.candidate_models(),
            _ => vec![default_model.clone()],
        };
        let router = RouterSetup {
            config: config.clone(),
            embedder: embedder.clone(),
            cache: Some(cache.clone()),
            offset,
            default_model,
            candidates: candidates.clone(),
            rules: config.runtime.model_rules.iter().map(|(t, m)| (t.clone(), m.clone())).collect(),
            tools: tools.iter().map(|t| t.0.clone()).collect(),
        };
        let planner = PlannerSetup {
            llm: llm.clone(),
            prices: prices.clone(),
            timeout: config.llm.timeout(LlmContext::Planner),
            offline: offline.clone(),
            tools: tools.clone(),
            offset,
            dialogue: (config.runtime.dialogue_window_secs, config.runtime.dialogue_max_turns),
            router: None,
            enabled: config.llm.planner_enabled,
        };
        let reply = ReplySetup {
            registry,
            tools: tools.clone(),
            llm: llm.clone(),
            prices: prices.clone(),
            chat_timeout: config.llm.timeout(LlmContext::ReplyLoop),
            agentic_max_turns: config.runtime.agentic_max_turns,
            offset,
            dialogue: (config.runtime.dialogue_window_secs, config.runtime.dialogue_max_turns),
            embed: Some((embedder.clone(), Some(cache.clone()))),
            enrichment: None,
            digests: Default::default(),
            step_resolver: None,
            router: None,
        };
        // The background contexts, each with its model and timeout; the
        // judges only when `[llm]` opts in (a call per turn / utterance).
        let context_llm = |context: LlmContext, enabled: bool| {
            llm.clone().filter(|_| enabled).map(|c| ContextLlm::new(c, &config.llm, context, prices.clone()))
        };
        let digests = Digests {
            memory: context_llm(LlmContext::MemoryDigest, true),
            tool: context_llm(LlmContext::ToolDigest, true),
            max_turn: context_llm(LlmContext::LoopDigest, true),
            memory_on: config.llm.memory_digest,
            tool_on: config.llm.tool_result_digest,
        };
        let tool_router = ToolRouter::new(
            offline.clone(),
            tools.clone(),
            config.runtime.planner_max_tools,
            context_llm(LlmContext::ToolRouter, true),
        );
        let planner = PlannerSetup { router: Some(tool_router.clone()), ..planner };
        let reply = ReplySetup {
            enrichment: context_llm(LlmContext::Enrichment, true),
            digests,
            step_resolver: context_llm(LlmContext::StepResolver, true),
            router: Some(tool_router),
            ..reply
        };
        let intent_llm = context_llm(LlmContext::IntentJudge, config.llm.intent_judge_enabled());
        let judge_llm = context_llm(LlmContext::Judge, config.llm.judge_enabled());
        let summary_llm = context_llm(LlmContext::Summariser, true);
        let graph_llm = context_llm(LlmContext::GraphExtract, true);
        let pattern_config = (config.pattern.config(), config.pattern.caps());
        let factories: Vec<(&'static str, RoleFactory)> = vec![
            ("router", Box::new(move || Box::new(Router::new(router.clone())))),
            ("planner", Box::new(move || Box::new(Planner::new(planner.clone())))),
            ("reply_loop", Box::new(move || Box::new(ReplyLoop::new(reply.clone())))),
            (
                "pattern_store",
                Box::new(move || {
                    let (c, caps) = pattern_config.clone();
                    let kinds = PatternOutcomes::default().kinds().map(<[_]>::to_vec);
                    Box::new(ReactorRole(PatternReactor::new(PatternOutcomes::default(), c, caps), kinds))
                }),
            ),
            ("judge", Box::new(move || Box::new(Judge::new(judge_llm.clone())))),
            ("summariser", Box::new(move || Box::new(Summariser::new(summary_llm.clone(), offset)))),
            ("graph", Box::new(move || Box::new(GraphWriter::new(graph_llm.clone())))),
        ];
        let mode = self.mode.unwrap_or(IntentMode::Chat);
        let idle =
            (config.runtime.session_idle_secs > 0).then(|| Duration::from_secs(config.runtime.session_idle_secs));
        let listener = Listener::start(bus.clone(), mode)?
            .with_llm_judge(intent_llm)
            .with_idle_timeout(idle)
            .with_utc_offset(offset);
        #[cfg(feature = "metrics")]
        let observe_from = bus.head().next();
        let mut runtime =
            Runtime::launch(bus, listener, factories, self.turn_timeout.unwrap_or(TURN_TIMEOUT), llm.is_some())?;
        runtime.candidates = candidates;
        #[cfg(feature = "metrics")]
        if let Some(m) = metrics {
            let observing =
                crate::metrics::observe_log(runtime.bus.clone(), m.metrics, observe_from, runtime.stop.clone());
            runtime.threads.push(observing?);
            runtime.metrics_server = m.server;
        }
        Ok(runtime)
    }
}

/// The loading of the local embedder (feature `onnx`), on a thread of its
/// own.
type EmbedderLoad = JoinHandle<Result<Arc<dyn Embedder>, engram_learning::embedder::EmbedError>>;

/// Starts loading the local ONNX embedder `config` names.
#[cfg(feature = "onnx")]
fn load_embedder(config: engram_learning::embedder::EmbedderConfig) -> Result<EmbedderLoad, RuntimeError> {
    std::thread::Builder::new()
        .name("engram-embedder-load".into())
        .spawn(move || OnnxEmbedder::open(&config).map(|e| Arc::new(e) as Arc<dyn Embedder>))
        .map_err(RuntimeError::Thread)
}

/// Without the `onnx` feature there is no local embedder: the host gives
/// one ([`RuntimeBuilder::embedder`]).
#[cfg(not(feature = "onnx"))]
fn load_embedder(_: engram_learning::embedder::EmbedderConfig) -> Result<EmbedderLoad, RuntimeError> {
    Err(RuntimeError::NoEmbedder)
}

/// Without the `metrics` feature nothing counts: `[metrics] listen` is
/// refused rather than silently not served.
#[cfg(not(feature = "metrics"))]
fn without_metrics(section: &crate::config::MetricsSection) -> Result<Option<Arc<dyn BusObserver>>, RuntimeError> {
    match section.listen.trim() {
        "" => Ok(None),
        listen => Err(RuntimeError::Config(format!(
            "[metrics] listen = {listen:?}: this engram was built without the `metrics` feature"
        ))),
    }
}

/// A host's session id, checked ([`SessionId::parse`]) before it reaches
/// the log.
fn checked(session: &SessionId) -> Result<(), RuntimeError> {
    SessionId::parse(session.as_str())
        .map(drop)
        .map_err(|reason| RuntimeError::BadSession { id: session.as_str().to_owned(), reason })
}

/// An actor's name and progress.
struct ActorEntry {
    name: &'static str,
    status: Arc<ShellStatus>,
}

/// The running runtime (see the module docs).
pub struct Runtime {
    bus: Arc<Bus>,
    listener: Addr<Listener>,
    actors: Vec<ActorEntry>,
    bridge: Arc<Bridge>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    system: Option<(System, JoinHandle<()>)>,
    turn_timeout: Duration,
    online: bool,
    /// The models a user may choose (`[llm] candidates`).
    candidates: Vec<String>,
    /// Every actor and the listener, to save their snapshots at shutdown.
    snapshots: Vec<Recipient<SaveSnapshot>>,
    /// The `/metrics` endpoint, when `[metrics] listen` is set.
    #[cfg(feature = "metrics")]
    metrics_server: Option<crate::metrics::MetricsServer>,
}

impl Runtime {
    /// A builder.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    fn launch(
        bus: Arc<Bus>,
        listener: Listener,
        factories: Vec<(&'static str, RoleFactory)>,
        turn_timeout: Duration,
        online: bool,
    ) -> Result<Runtime, RuntimeError> {
        let stop = Arc::new(AtomicBool::new(false));
        // Subscriptions start where the actors' catch-up will have read to
        // at least: nothing falls between the two.
        let head = bus.head();
        let from = head.next();
        // An actor new to this data dir starts at the head: it folds the
        // history before it and derives from what comes next.
        for (name, _) in &factories {
            bus.start_checkpoint(name, head)?;
        }
        let bridge = Bridge::new();
        let statuses: Vec<(&'static str, Arc<ShellStatus>)> =
            factories.iter().map(|(n, _)| (*n, Arc::new(ShellStatus::dispatching_after(head)))).collect();
        let kinds: Vec<_> = factories.iter().map(|(_, f)| f().kinds()).collect();
        let (tx, rx) = crossbeam_channel::bounded(1);
        let sys_bus = bus.clone();
        let sys_statuses = statuses.clone();
        let sys_kinds = kinds.clone();
        let system_thread = std::thread::Builder::new()
            .name("engram-actors".into())
            .spawn(move || {
                let sys = System::new();
                let started = sys.block_on(async move {
                    let listener_arbiter = Arbiter::new();
                    let listener = Listener::start_in_arbiter(&listener_arbiter.handle(), move |_| listener);
                    let mut addrs = Vec::new();
                    for (((name, factory), kinds), (_, status)) in
                        factories.into_iter().zip(sys_kinds).zip(sys_statuses)
                    {
                        let arbiter = Arbiter::new();
                        let bus = sys_bus.clone();
                        let addr = Supervisor::start_in_arbiter(&arbiter.handle(), move |_| {
                            Shell::new(name, bus, factory, kinds, status)
                        });
                        addrs.push((addr.clone().recipient::<Deliver>(), addr.recipient::<SaveSnapshot>()));
                    }
                    (System::current(), listener, addrs)
                });
                let _ = tx.send(started);
                sys.run().ok();
            })
            .map_err(RuntimeError::Thread)?;
        let (system, listener, addrs) = rx.recv().map_err(|_| RuntimeError::ActorFailed("system"))?;
        let mut snapshots: Vec<Recipient<SaveSnapshot>> = vec![listener.clone().recipient()];
        // The listener's feed comes first: the dispatcher hands it each
        // event before any shell counts that event as seen, so once the
        // shells have settled the listener has been handed everything too
        // (its snapshot at shutdown relies on it).
        let mut feeds =
            vec![Feed { kinds: Some(LISTENER_KINDS.to_vec()), addr: listener.clone().recipient(), status: None }];
        for (((deliver, save), kinds), (_, status)) in addrs.into_iter().zip(kinds).zip(&statuses) {
            feeds.push(Feed { kinds, addr: deliver, status: Some(status.clone()) });
            snapshots.push(save);
        }
        let threads = vec![dispatch::start(&bus, from, feeds, bridge.clone(), stop.clone())?];
        let actors = statuses.into_iter().map(|(name, status)| ActorEntry { name, status }).collect();
        Ok(Runtime {
            bus,
            listener,
            actors,
            bridge,
            stop,
            threads,
            system: Some((system, system_thread)),
            turn_timeout,
            online,
            candidates: Vec::new(),
            snapshots,
            #[cfg(feature = "metrics")]
            metrics_server: None,
        })
    }

    /// Takes one utterance of `session` through every actor and returns the
    /// reply (typed chat).
    pub fn handle_utterance(&self, session: &SessionId, text: &str) -> Result<Reply, RuntimeError> {
        self.handle_from(session, text, UtteranceSource::Chat)
    }

    /// [`Runtime::handle_utterance`] for speech (the intent judge then
    /// wants a wake word or the hot window, in voice mode).
    pub fn handle_from(&self, session: &SessionId, text: &str, source: UtteranceSource) -> Result<Reply, RuntimeError> {
        self.handle_input(session, text, source, None)
    }

    /// [`Runtime::handle_utterance`] with the model the user chose for this
    /// utterance alone (routing slot 1, above everything but the fast
    /// path): one of `[llm] candidates`.
    pub fn handle_with_model(&self, session: &SessionId, text: &str, model: &str) -> Result<Reply, RuntimeError> {
        self.check_candidate(model)?;
        self.handle_input(session, text, UtteranceSource::Chat, Some(model.to_owned()))
    }

    /// Sets the session's sticky model (routing slot 2: every later planner
    /// turn of the session uses it, unless an utterance names its own), or
    /// clears it with `None`. The choice is recorded on each utterance.
    pub fn use_model(&self, session: &SessionId, model: Option<&str>) -> Result<(), RuntimeError> {
        checked(session)?;
        if let Some(m) = model {
            self.check_candidate(m)?;
        }
        self.listener.do_send(HostInput::UseModel { session: session.clone(), model: model.map(str::to_owned) });
        Ok(())
    }

    /// The models a user may choose (`[llm] candidates`).
    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    fn check_candidate(&self, model: &str) -> Result<(), RuntimeError> {
        if self.candidates.iter().any(|c| c == model) {
            Ok(())
        } else {
            Err(RuntimeError::UnknownModel { model: model.to_owned(), candidates: self.candidates.clone() })
        }
    }

    fn handle_input(
        &self,
        session: &SessionId,
        text: &str,
        source: UtteranceSource,
        model: Option<String>,
    ) -> Result<Reply, RuntimeError> {
        checked(session)?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.listener.do_send(HostInput::Utterance {
            session: session.clone(),
            text: text.to_owned(),
            source,
            model,
            reply: tx,
        });
        let heard = rx.recv().map_err(|_| RuntimeError::Stopped)??;
        let mut reply = Reply {
            turn: heard.turn,
            heard: heard.clone(),
            text: String::new(),
            layer: None,
            model: None,
            steps: Vec::new(),
            tools_ok: true,
            latency_ms: 0,
        };
        if !heard.intent.directed || heard.intent.stop || heard.intent.query.trim().is_empty() {
            return Ok(reply);
        }
        let done = self.bridge.wait(heard.turn, self.turn_timeout).ok_or_else(|| RuntimeError::TurnTimeout {
            turn: heard.turn.to_string(),
            secs: self.turn_timeout.as_secs(),
        })?;
        reply.text = done.text;
        reply.layer = Some(done.layer);
        reply.model = done.model;
        reply.steps = done.steps;
        reply.tools_ok = done.tools_ok;
        reply.latency_ms = done.latency_ms;
        Ok(reply)
    }

    /// The user's feedback on the session's last turn (the judge turns it
    /// into a verdict). Returns the turn it is about; `None` when the
    /// session has no turn yet, and then nothing is appended.
    pub fn feedback(
        &self,
        session: &SessionId,
        rating: FeedbackRating,
        text: Option<&str>,
    ) -> Result<Option<TurnId>, RuntimeError> {
        checked(session)?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.listener.do_send(HostInput::Feedback {
            session: session.clone(),
            rating,
            text: text.map(str::to_owned),
            reply: tx,
        });
        rx.recv().map_err(|_| RuntimeError::Stopped)?
    }

    /// Ends a session: the pattern store records its turns, the summariser
    /// writes its summary. Returns its number of turns.
    ///
    /// Waits (up to 5 s) for the actors to finish what is in the log first,
    /// so the session's verdicts precede its end and are recorded with it
    /// rather than as re-evaluations a moment later.
    pub fn end_session(&self, session: &SessionId) -> Result<u32, RuntimeError> {
        checked(session)?;
        self.settle(Duration::from_secs(5));
        let (tx, rx) = crossbeam_channel::bounded(1);
        self.listener.do_send(HostInput::End { session: session.clone(), reason: SessionEndReason::Host, reply: tx });
        rx.recv().map_err(|_| RuntimeError::Stopped)?
    }

    /// Waits until every actor has handled everything in the log (or
    /// `timeout` passes); true when they have.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let head = self.bus.head();
            if self.actors.iter().all(|a| a.status.settled_at(head)) && self.bus.head() == head {
                return true;
            }
            if Instant::now() >= deadline {
                for a in &self.actors {
                    tracing::warn!(
                        actor = a.name,
                        head = head.0,
                        seen = a.status.seen.load(Ordering::Acquire),
                        forwarded = a.status.forwarded.load(Ordering::Acquire),
                        position = a.status.position.load(Ordering::Acquire),
                        "not settled"
                    );
                }
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Retracts what the assistant learnt (a fact, by a text it holds, or
    /// everything a session taught): one `memory.forgotten`, which every
    /// actor folds before its next prompt — the fact reaches no model call
    /// again, and a restart or `engram rebuild` keeps it retracted. Returns
    /// the event as appended; [`engram_learning::memory::ForgetError`] when
    /// nothing matches (then nothing is appended). Waits (up to 5 s) for
    /// the actors to fold it.
    pub fn forget(&self, what: &engram_learning::memory::Forget) -> Result<Envelope, RuntimeError> {
        self.settle(Duration::from_secs(5));
        let env = engram_learning::memory::forget::forget(self.log().as_ref(), what, ActorKind::Host)?;
        self.settle(Duration::from_secs(5));
        Ok(env)
    }

    /// The log (to read what happened).
    pub fn log(&self) -> &Arc<dyn EventLog> {
        self.bus.log()
    }

    /// The data dir's database, where what it keeps beside the log lives
    /// (the embedding memo, the projections' trees: `engram_local_state`).
    pub fn local_db(&self) -> &engram_storage::LocalDb {
        self.bus.local_db()
    }

    /// Whether a model server is configured (false: offline mode).
    pub fn is_online(&self) -> bool {
        self.online
    }

    /// Per actor: (name, last seq handled, panics caught, restarts).
    pub fn actor_status(&self) -> Vec<(&'static str, u64, u64, u64)> {
        self.actors
            .iter()
            .map(|a| {
                (
                    a.name,
                    a.status.position.load(Ordering::Acquire),
                    a.status.panics.load(Ordering::Relaxed),
                    a.status.restarts.load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    /// Per actor: the seq of the snapshot its last warm-up restored (0: it
    /// folded the log from seq 1; see [`engram_local_state::snapshot`]).
    pub fn restored_snapshots(&self) -> Vec<(&'static str, u64)> {
        self.actors.iter().map(|a| (a.name, a.status.restored.load(Ordering::Acquire))).collect()
    }

    /// Lets the actors finish what is in the log (up to 10 s), stops them
    /// and flushes.
    /// Where `/metrics` is served (`[metrics] listen`; the port the OS
    /// picked for `:0`).
    #[cfg(feature = "metrics")]
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_server.as_ref().map(crate::metrics::MetricsServer::addr)
    }

    pub fn shutdown(mut self) -> Result<(), RuntimeError> {
        if self.settle(Duration::from_secs(10)) {
            // Every actor has handled all it wants up to the head: its
            // checkpoint is the head (an import before the next start then
            // counts as history to every actor; see `ActorCheckpoints::advance`).
            let head = self.bus.head();
            for a in &self.actors {
                self.bus.set_checkpoint(a.name, head)?;
            }
            self.save_snapshots(head);
        } else {
            tracing::warn!("shutdown: actors still busy after 10 s; they resume from their checkpoints next start");
        }
        self.stop_all();
        self.bus.flush_checkpoints()?;
        self.bus.log().flush()?;
        Ok(())
    }

    /// Has every actor and the listener save its state, folded up to
    /// `head`, as its snapshot, so the next start folds nothing (waits up
    /// to [`SNAPSHOT_WAIT`]; a snapshot not saved costs that start time,
    /// nothing else).
    fn save_snapshots(&self, head: Seq) {
        let (done, saved) = crossbeam_channel::unbounded();
        for r in &self.snapshots {
            r.do_send(SaveSnapshot { upto: head, done: done.clone() });
        }
        drop(done);
        let deadline = Instant::now() + SNAPSHOT_WAIT;
        for _ in &self.snapshots {
            if saved.recv_deadline(deadline).is_err() {
                tracing::warn!("shutdown: not every actor saved its snapshot; the next start folds more of the log");
                break;
            }
        }
    }

    fn stop_all(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some((system, thread)) = self.system.take() {
            system.stop();
            let _ = thread.join();
        }
        // The actors' arbiters wind down on threads of their own, each
        // dropping its actor's handle on the bus as it goes: wait for them,
        // so that the log (and the data dir's lock) is released when
        // `shutdown` returns and the data dir can be opened again at once.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&self.bus) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_all();
        let _ = self.bus.flush_checkpoints();
    }
}
