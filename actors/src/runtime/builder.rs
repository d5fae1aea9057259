//! [`RuntimeBuilder`]: what a host says about the runtime it wants, and
//! how `start` puts it together — the log and the embedder opened side by
//! side, the bus, the shared pieces every role is built from
//! ([`Wiring`]), one factory per role, the listener — before
//! [`Runtime::launch`](super::Runtime) starts the actors.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use chrono::FixedOffset;
use engram_events::payloads::LlmContext;
use engram_events::Seq;
use engram_learning::embedder::{EmbedError, Embedder, EmbedderConfig, ModelSpec};
use engram_learning::intent::IntentMode;
use engram_learning::offline_planner::OFFLINE_MODEL;
use engram_learning::projections::PatternOutcomes;
use engram_learning::reactors::PatternReactor;
use engram_local_state::embedding_cache::{CacheCaps, EmbeddingCache};
use engram_local_state::projector::Projection;
use engram_storage::{LogConfig, OpenLog};

use super::{Runtime, TURN_TIMEOUT};
use crate::bus::{Bus, BusObserver};
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::error::RuntimeError;
use crate::llm::{ContextLlm, LlmClient, PriceTable};
#[cfg(feature = "metrics")]
use crate::metrics::TimedEmbedder;
#[cfg(feature = "onnx")]
use crate::onnx_embedder::OnnxEmbedder;
use crate::roles::graph::GraphWriter;
use crate::roles::judge::Judge;
use crate::roles::listener::Listener;
use crate::roles::memory_indexer::MemoryIndexer;
use crate::roles::planner::{Planner, PlannerSetup};
use crate::roles::reply_loop::{Digests, ReplyLoop, ReplySetup};
use crate::roles::router::{Router, RouterSetup};
use crate::roles::summariser::Summariser;
use crate::roles::ReactorRole;
use crate::shell::RoleFactory;
use crate::tool_router::ToolRouter;
use crate::tools::{BuiltinConfig, Tool, ToolRegistry};

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
    /// that builds its own `JetStreamConfig`, with a
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
    pub fn start(mut self) -> Result<Runtime, RuntimeError> {
        let dir = self.data_dir.take().ok_or(RuntimeError::NoDataDir)?;
        let mut config = self.config.take().unwrap_or_default();
        let (log, embedder) = self.open(&dir, &config)?;
        #[cfg(feature = "metrics")]
        let metrics = crate::metrics::setup(&config.metrics.listen, self.registry.take())?;
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
        config.runtime.check().map_err(RuntimeError::Config)?;
        let wiring = self.wiring(config, embedder, &log)?;
        let idle = Some(Duration::from_secs(wiring.config.runtime.session_idle_secs)).filter(|d| !d.is_zero());
        let listener = Listener::start(bus.clone(), self.mode.unwrap_or(IntentMode::Chat))?
            .with_llm_judge(wiring.context_llm(LlmContext::IntentJudge, wiring.config.llm.intent_judge_enabled()))
            .with_idle_timeout(idle)
            .with_utc_offset(wiring.offset);
        #[cfg(feature = "metrics")]
        let observe_from = bus.head().next();
        let online = wiring.llm.is_some();
        let turn_timeout = self.turn_timeout.unwrap_or(TURN_TIMEOUT);
        let mut runtime = Runtime::launch(bus, listener, wiring.factories(), turn_timeout, online)?;
        runtime.candidates = wiring.candidates;
        runtime.model_calls = wiring.model_calls.clone();
        runtime.max_utterance_bytes = wiring.config.runtime.max_utterance_bytes;
        runtime.memo = Some(wiring.cache.clone());
        runtime.catalogue = Some(wiring.catalogue);
        #[cfg(feature = "mcp")]
        {
            runtime.mcp = wiring.mcp;
        }
        #[cfg(feature = "metrics")]
        if let Some(m) = metrics {
            let observing =
                crate::metrics::observe_log(runtime.bus.clone(), m.metrics, observe_from, runtime.stop.clone());
            runtime.threads.push(observing?);
            runtime.metrics_server = m.server;
        }
        Ok(runtime)
    }

    /// Folds every actor's state over `log` and saves it as its snapshot:
    /// what [`start`](Self::start) would save in `DIR/snapshots/` at its
    /// warm-ups, byte for byte, without starting the runtime — no actix
    /// system, no model server, no tool, no MCP server, and no embedding
    /// model unless [`embedder`](Self::embedder) gave one (no role embeds
    /// while it folds: the configured model's name and size stand in for
    /// it, which is what the fold's calibration needs). Each role is built
    /// as `start` builds it and restored from its snapshot; one pass over
    /// the log then decodes each record once for every actor that wants it.
    /// Each actor folds up to its checkpoint (one new to the data dir gets
    /// it at the head, as at a start), the listener up to the head.
    ///
    /// `engram import` runs it after appending, so the next start restores
    /// the imported history instead of folding it. Like a start, it saves
    /// nothing for an actor whose snapshot is recent, and a snapshot the
    /// next start finds stale is only folded again.
    pub fn prepare_snapshots(self, log: &OpenLog) -> Result<super::Prepared, RuntimeError> {
        let (bus, listener, factories) = self.folding_roles(log)?;
        super::prepare::fold(&bus, listener, factories)
    }

    /// [`prepare_snapshots`](Self::prepare_snapshots), folded beside an
    /// import instead of after it: the roles are built and restored now,
    /// the returned [`SnapshotsBeside`](super::SnapshotsBeside) is handed
    /// to the import ([`engram_learning::import::run_beside`]),
    /// which it folds on other threads as it converts, and
    /// [`finish`](super::SnapshotsBeside::finish) after the append saves the
    /// snapshots — if the log took exactly what was converted (see
    /// `runtime/beside.rs` for the rules).
    pub fn prepare_snapshots_beside(self, log: &OpenLog) -> Result<super::SnapshotsBeside, RuntimeError> {
        let (bus, listener, factories) = self.folding_roles(log)?;
        super::SnapshotsBeside::start(bus, listener, factories)
    }

    /// The bus, the listener restored (and the seq it was restored at) and
    /// the roles' factories a fold of the snapshots needs, built as
    /// [`start`](Self::start) builds them (with [`folding`](Self::folding)'s
    /// wiring).
    #[allow(clippy::type_complexity)]
    fn folding_roles(
        mut self,
        log: &OpenLog,
    ) -> Result<(Arc<Bus>, (Listener, Seq), Vec<(&'static str, RoleFactory)>), RuntimeError> {
        let mut config = self.config.take().unwrap_or_default();
        let embedder = match self.embedder.take() {
            Some(e) => e,
            None => Arc::new(Unloaded(config.embedder.model.spec())),
        };
        config.calibrate_for(embedder.model_id());
        let bus = Arc::new(Bus::new(log)?.with_snapshot_every(config.runtime.snapshot_every));
        let listener = Listener::restored(bus.clone(), self.mode.unwrap_or(IntentMode::Chat));
        let wiring = self.folding(config, embedder, log)?;
        Ok((bus, listener, wiring.factories()))
    }

    /// What [`wiring`](Self::wiring) puts together, for roles that only
    /// fold ([`prepare_snapshots`](Self::prepare_snapshots)): the same
    /// configuration, offset and offline default model, but no tools, no
    /// model server and no MCP servers, none of which a fold reads.
    fn folding(&mut self, config: Config, embedder: Arc<dyn Embedder>, log: &OpenLog) -> Result<Wiring, RuntimeError> {
        let catalogue = Arc::new(Catalogue::new(Arc::new(ToolRegistry::new()), embedder.clone())?);
        Ok(Wiring {
            model_calls: Arc::default(),
            speeds: Arc::default(),
            prices: Arc::new(PriceTable::from_config(&config.llm)),
            offset: self.offset.unwrap_or_else(|| *chrono::Local::now().offset()),
            cache: EmbeddingCache::open(log.local_db(), CacheCaps::default())?,
            config,
            embedder,
            llm: None,
            catalogue,
            #[cfg(feature = "mcp")]
            mcp: None,
            default_model: OFFLINE_MODEL.to_owned(),
            candidates: vec![OFFLINE_MODEL.to_owned()],
        })
    }

    /// Opens the log in `dir` and the embedder, side by side: the embedding
    /// model loads (hundreds of ms: its files hashed, the tokenizer built,
    /// the session made) while the log opens on this thread, so a big
    /// log's open costs a start nothing of its own. (A log that does not
    /// open is reported at once; the loading thread is left to finish on
    /// its own.)
    fn open(&mut self, dir: &Path, config: &Config) -> Result<(OpenLog, Arc<dyn Embedder>), RuntimeError> {
        let durability = config.storage.durability().map_err(RuntimeError::Config)?;
        let backend = match self.backend.take() {
            Some(backend) => backend,
            None => config.storage.backend().map_err(RuntimeError::Config)?,
        };
        let loading = match &self.embedder {
            Some(_) => None,
            None => Some(match spare_load(&config.embedder) {
                Some(load) => load,
                None => load_embedder(config.embedder.clone())?,
            }),
        };
        let log_config = LogConfig {
            durability,
            serve_followers: self.serve_followers,
            cache_bytes: config.storage.cache_bytes(),
            ..LogConfig::default()
        };
        let log = match backend.open(dir, log_config) {
            Ok(log) => log,
            Err(e) => {
                if let Some(load) = loading {
                    keep_spare_load(config.embedder.clone(), load);
                }
                return Err(e.into());
            }
        };
        let embedder: Arc<dyn Embedder> = match (self.embedder.take(), loading) {
            (Some(e), _) => e,
            (None, Some(thread)) => thread.join().map_err(|_| RuntimeError::ActorFailed("embedder"))??,
            (None, None) => unreachable!("the model is loaded when no embedder is given"),
        };
        Ok((log, embedder))
    }

    /// The pieces every role is built from: the model server (none:
    /// offline), the tools (the built-ins and the host's), the offline
    /// planner over them, the embedding memo, and what planner turns may
    /// be routed to.
    fn wiring(&mut self, config: Config, embedder: Arc<dyn Embedder>, log: &OpenLog) -> Result<Wiring, RuntimeError> {
        let llm = match (self.offline, self.llm.take()) {
            (true, _) => None,
            (false, Some(l)) => Some(l),
            (false, None) => {
                crate::llm::client_from_config(&config.llm).map_err(|e| RuntimeError::Llm(e.to_string()))?
            }
        };
        // Every call retries what may pass and skips a server that is down
        // (llm/health.rs), so turns fall towards offline fast.
        // Each answered call's speed is measured, for the planner's
        // timeout (llm/speed.rs).
        let speeds = Arc::new(crate::llm::ModelSpeeds::default());
        let llm = llm.map(|l| Arc::new(crate::llm::Guarded::new(l).measuring(speeds.clone())) as Arc<dyn LlmClient>);
        let mut registry = ToolRegistry::with_builtins(BuiltinConfig::from_section(&config.tools));
        for t in std::mem::take(&mut self.tools) {
            registry.register(t);
        }
        let catalogue = Arc::new(Catalogue::new(Arc::new(registry), embedder.clone())?);
        config.mcp.check().map_err(RuntimeError::Config)?;
        // MCP servers' tools join the catalogue as their servers come up.
        #[cfg(feature = "mcp")]
        let mcp = crate::catalogue::mcp_sources::start(&config.mcp, &catalogue);
        #[cfg(not(feature = "mcp"))]
        if config.mcp.servers.values().any(|s| s.enabled) {
            return Err(RuntimeError::Config(
                "[mcp] names servers, but this build of engram has no MCP support (the `mcp` feature)".into(),
            ));
        }
        let caps = CacheCaps { max_rows: config.storage.embedding_cache_rows.max(1), ..CacheCaps::default() };
        let cache = EmbeddingCache::open(log.local_db(), caps)?;
        config.llm.check().map_err(RuntimeError::Config)?;
        let default_model = match &llm {
            Some(_) if !config.llm.model.is_empty() => config.llm.model.clone(),
            // A host's own client with no `[llm] model`: it plans, under
            // the model name it is asked for (it used to be ignored for
            // planning while `is_online` said true).
            Some(l) => {
                tracing::info!(
                    provider = l.provider(),
                    "the host's LLM client plans as model {HOST_MODEL:?} ([llm] model is unset)"
                );
                HOST_MODEL.to_owned()
            }
            None => OFFLINE_MODEL.to_owned(),
        };
        // What planner turns may be routed to: the configured candidates
        // with a server to ask, else the default alone.
        let candidates = match &llm {
            Some(_) if !config.llm.candidate_models().is_empty() => config.llm.candidate_models(),
            _ => vec![default_model.clone()],
        };
        Ok(Wiring {
            model_calls: Arc::default(),
            speeds,
            prices: Arc::new(PriceTable::from_config(&config.llm)),
            offset: self.offset.unwrap_or_else(|| *chrono::Local::now().offset()),
            config,
            embedder,
            llm,
            catalogue,
            #[cfg(feature = "mcp")]
            mcp,
            cache,
            default_model,
            candidates,
        })
    }
}

/// The model a host's own client (`RuntimeBuilder::llm`) is asked for
/// when `[llm] model` is unset: the client decides what it means.
pub const HOST_MODEL: &str = "default";

/// What `start` puts together once and every role is built from.
struct Wiring {
    config: Config,
    embedder: Arc<dyn Embedder>,
    /// The model server; `None`: offline.
    llm: Option<Arc<dyn LlmClient>>,
    prices: Arc<PriceTable>,
    /// The tools, as they are now (built-ins, the host's, MCP servers').
    catalogue: Arc<Catalogue>,
    /// The MCP servers' connections, when `[mcp]` names any.
    #[cfg(feature = "mcp")]
    mcp: Option<Arc<crate::tools::mcp::McpHub>>,
    offset: FixedOffset,
    cache: EmbeddingCache,
    /// Slot 5 of the routing chain.
    default_model: String,
    candidates: Vec<String>,
    /// Background model calls in flight ([`ContextLlm::in_flight`]).
    model_calls: Arc<std::sync::atomic::AtomicUsize>,
    /// Each model's measured speed (llm/speed.rs), for the planner.
    speeds: Arc<crate::llm::ModelSpeeds>,
}

impl Wiring {
    /// The model server set up for one background context, with its model
    /// and timeout; `None` offline, or when `[llm]` does not opt in (the
    /// judges: a call per turn or utterance).
    fn context_llm(&self, context: LlmContext, enabled: bool) -> Option<ContextLlm> {
        self.llm.clone().filter(|_| enabled).map(|c| {
            ContextLlm::new(c, &self.config.llm, context, self.prices.clone()).counted_in(self.model_calls.clone())
        })
    }

    /// `[tools] location` as the built-ins read it (blank: none).
    fn location(&self) -> Option<String> {
        BuiltinConfig::from_section(&self.config.tools).location
    }

    fn router(&self) -> RouterSetup {
        RouterSetup {
            fast_path: self.config.fast_path.clone(),
            multi_tool: self.config.multi_tool_fast_path.clone(),
            pattern: self.config.pattern.clone(),
            embedder: self.embedder.clone(),
            cache: Some(self.cache.clone()),
            offset: self.offset,
            default_model: self.default_model.clone(),
            candidates: self.candidates.clone(),
            rules: self.config.routing.model_rules.iter().map(|(t, m)| (t.clone(), m.clone())).collect(),
            catalogue: self.catalogue.clone(),
        }
    }

    fn planner(&self, tool_router: &ToolRouter) -> PlannerSetup {
        PlannerSetup {
            llm: self.llm.clone(),
            prices: self.prices.clone(),
            timeout: self.config.llm.timeout(LlmContext::Planner),
            timeout_max: Duration::from_millis(self.config.llm.planner_timeout_max_ms),
            speeds: Some(self.speeds.clone()),
            catalogue: self.catalogue.clone(),
            offset: self.offset,
            location: self.location(),
            dialogue: self.config.dialogue.clone(),
            router: Some(tool_router.clone()),
            enabled: self.config.llm.planner_enabled,
        }
    }

    fn reply(&self, tool_router: ToolRouter) -> ReplySetup {
        let llm = &self.config.llm;
        ReplySetup {
            memory_budget_tokens: self.config.memory.context_budget_tokens,
            catalogue: self.catalogue.clone(),
            llm: self.llm.clone(),
            prices: self.prices.clone(),
            chat_timeout: llm.timeout(LlmContext::ReplyLoop),
            reply_budget: Duration::from_millis(llm.reply_budget_ms),
            agentic_max_turns: self.config.reply_loop.max_turns,
            offset: self.offset,
            location: self.location(),
            dialogue: self.config.dialogue.clone(),
            embed: Some((self.embedder.clone(), Some(self.cache.clone()))),
            enrichment: self.context_llm(LlmContext::Enrichment, true),
            digests: Digests {
                memory: self.context_llm(LlmContext::MemoryDigest, true),
                tool: self.context_llm(LlmContext::ToolDigest, true),
                max_turn: self.context_llm(LlmContext::LoopDigest, true),
                memory_on: llm.memory_digest,
                tool_on: llm.tool_result_digest,
            },
            step_resolver: self.context_llm(LlmContext::StepResolver, true),
            router: Some(tool_router),
            max_reply_bytes: self.config.reply_loop.max_reply_bytes,
        }
    }

    /// One factory per role the runtime runs in a shell, by actor name.
    fn factories(&self) -> Vec<(&'static str, RoleFactory)> {
        let tool_router = ToolRouter::new(
            self.catalogue.clone(),
            self.config.planner.max_tools,
            self.context_llm(LlmContext::ToolRouter, true),
        );
        let (router, planner) = (self.router(), self.planner(&tool_router));
        let reply = self.reply(tool_router);
        let judge_llm = self.context_llm(LlmContext::Judge, self.config.llm.judge_enabled());
        let summary_llm = self.context_llm(LlmContext::Summariser, true);
        let graph_llm = self.context_llm(LlmContext::GraphExtract, true);
        let (pattern, caps) = (self.config.pattern.config(), self.config.pattern.caps());
        let offset = self.offset;
        let embedder = self.embedder.clone();
        vec![
            ("router", Box::new(move || Box::new(Router::new(router.clone())))),
            ("planner", Box::new(move || Box::new(Planner::new(planner.clone())))),
            ("reply_loop", Box::new(move || Box::new(ReplyLoop::new(reply.clone())))),
            (
                "pattern_store",
                Box::new(move || {
                    let kinds = PatternOutcomes::default().kinds().map(<[_]>::to_vec);
                    Box::new(ReactorRole(PatternReactor::new(PatternOutcomes::default(), pattern.clone(), caps), kinds))
                }),
            ),
            ("judge", Box::new(move || Box::new(Judge::new(judge_llm.clone())))),
            ("summariser", Box::new(move || Box::new(Summariser::new(summary_llm.clone(), offset)))),
            ("graph", Box::new(move || Box::new(GraphWriter::new(graph_llm.clone())))),
            ("memory", Box::new(move || Box::new(MemoryIndexer::new(Some(embedder.clone()))))),
        ]
    }
}

/// The configured embedding model's name and size, without the model:
/// what the roles are built with when they only fold
/// ([`RuntimeBuilder::prepare_snapshots`]). Its vectors are zeros: only
/// the fold-only catalogue's offline planner asks for any (its small-talk
/// phrases), and it plans nothing. A fold that embedded would save other
/// vectors than a start's, which `actors/tests/prepare_snapshots.rs`
/// would see.
struct Unloaded(&'static ModelSpec);

impl Embedder for Unloaded {
    fn model_id(&self) -> &str {
        self.0.id
    }

    fn dim(&self) -> usize {
        self.0.dim
    }

    fn embed(&self, _text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(vec![0.0; self.0.dim])
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(vec![vec![0.0; self.0.dim]; texts.len()])
    }
}

/// The loading of the local embedder (feature `onnx`), on a thread of its
/// own.
type EmbedderLoad = JoinHandle<Result<Arc<dyn Embedder>, EmbedError>>;

/// A model load whose start could not open its log, kept for the next
/// start of the same model: a caller that waits for a data dir someone
/// holds for a moment retries `start` every few milliseconds (`engram run`
/// does), and each attempt loading the model anew left dozens of loads
/// running at once — `engram run --once` behind a lock held for 0.7 s took
/// 12 s and 5 GB. One is kept, per process.
static SPARE_LOAD: std::sync::Mutex<Option<(EmbedderConfig, EmbedderLoad)>> = std::sync::Mutex::new(None);

/// The spare load of `config`'s model, if there is one.
fn spare_load(config: &EmbedderConfig) -> Option<EmbedderLoad> {
    let mut spare = SPARE_LOAD.lock().unwrap_or_else(|p| p.into_inner());
    match spare.take() {
        Some((kept, load)) if kept == *config => Some(load),
        other => {
            *spare = other;
            None
        }
    }
}

/// Keeps `load` for the next start of `config`'s model (the one kept
/// before, of another model, is left to finish on its own).
fn keep_spare_load(config: EmbedderConfig, load: EmbedderLoad) {
    *SPARE_LOAD.lock().unwrap_or_else(|p| p.into_inner()) = Some((config, load));
}

/// Starts loading the local ONNX embedder `config` names.
#[cfg(feature = "onnx")]
fn load_embedder(config: EmbedderConfig) -> Result<EmbedderLoad, RuntimeError> {
    std::thread::Builder::new()
        .name("engram-embedder-load".into())
        .spawn(move || OnnxEmbedder::open(&config).map(|e| Arc::new(e) as Arc<dyn Embedder>))
        .map_err(RuntimeError::Thread)
}

/// Without the `onnx` feature there is no local embedder: the host gives
/// one ([`RuntimeBuilder::embedder`]).
#[cfg(not(feature = "onnx"))]
fn load_embedder(_: EmbedderConfig) -> Result<EmbedderLoad, RuntimeError> {
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
