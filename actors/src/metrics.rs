//! Prometheus metrics: the figures an operator watches, in a registry the
//! runtime makes and serves on `[metrics] listen` (off by default), or in
//! the host's own registry ([`crate::RuntimeBuilder::metrics_registry`]).
//!
//! | metric | type | labels | from |
//! |---|---|---|---|
//! | `engram_events_appended_total` | counter | `kind` | every append of this runtime's actors and listener |
//! | `engram_append_seconds` | histogram | | the same appends, until acknowledged |
//! | `engram_subscription_lag_events` | gauge | `actor` | the log's head minus what the actor has handled, after each event it handles and each it is not handed (events it does not want are no work of its) |
//! | `engram_fastpath_hits_total` | counter | `layer` | `fastpath.hit` |
//! | `engram_planner_calls_saved_total` | counter | | `fastpath.hit`: a turn answered without the planner |
//! | `engram_planner_turns_total` | counter | | `route.decided` to the planner |
//! | `engram_pattern_picks_total` | counter | `model`, `how` (`recommended` / `explored`) | `route.decided` whose chain chose the pattern store's model |
//! | `engram_llm_calls_total` | counter | `model`, `context`, `outcome` | `llm.call_completed` |
//! | `engram_llm_tokens_total` | counter | `model`, `direction` (`input` / `output`) | the same |
//! | `engram_llm_cost_usd_total` | counter | `model` | the same |
//! | `engram_llm_call_seconds` | histogram | `model` | the same (its `latency_ms`) |
//! | `engram_embedding_seconds` | histogram | | every embedding the runtime computes |
//!
//! The event-derived figures are counted from the log as it grows after
//! the start ([`Metrics::observe`], fed by a subscription): one source for
//! what the log says, whichever actor appended it. On a log several
//! runtimes share, they count every runtime's turns; the append figures
//! count this runtime's.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engram_events::payloads::{ChainVerdict, RouteLayer, RoutePolicy};
use engram_events::{Envelope, Event, EventKind, Seq};
use engram_storage::{EventLog, Filter};
use prometheus::{
    exponential_buckets, CounterVec, Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use rust_decimal::prelude::ToPrimitive;

use crate::bus::{Bus, BusObserver};
use crate::error::RuntimeError;
use engram_learning::embedder::{EmbedError, Embedder};

/// Every metric of the runtime, registered in one registry.
pub struct Metrics {
    events_appended: IntCounterVec,
    append_seconds: Histogram,
    lag: IntGaugeVec,
    fastpath_hits: IntCounterVec,
    planner_calls_saved: IntCounter,
    planner_turns: IntCounter,
    pattern_picks: IntCounterVec,
    llm_calls: IntCounterVec,
    llm_tokens: IntCounterVec,
    llm_cost: CounterVec,
    llm_seconds: HistogramVec,
    embedding_seconds: Histogram,
}

/// Latency buckets from 50 µs to about 13 s.
fn latency_buckets() -> Vec<f64> {
    exponential_buckets(0.000_05, 2.0, 19).expect("valid buckets")
}

impl Metrics {
    /// Makes the metrics and registers them in `registry` (which fails if
    /// it already holds metrics of these names).
    pub fn register(registry: &Registry) -> Result<Arc<Metrics>, prometheus::Error> {
        let m = Metrics {
            events_appended: IntCounterVec::new(
                Opts::new("engram_events_appended_total", "Events this runtime appended to the log, by kind"),
                &["kind"],
            )?,
            append_seconds: Histogram::with_opts(
                HistogramOpts::new("engram_append_seconds", "Time from an append to its acknowledgement")
                    .buckets(latency_buckets()),
            )?,
            lag: IntGaugeVec::new(
                Opts::new("engram_subscription_lag_events", "Events in the log that an actor has not handled yet"),
                &["actor"],
            )?,
            fastpath_hits: IntCounterVec::new(
                Opts::new("engram_fastpath_hits_total", "Turns the fast path answered, by layer"),
                &["layer"],
            )?,
            planner_calls_saved: IntCounter::new(
                "engram_planner_calls_saved_total",
                "Turns answered by the fast path instead of the planner",
            )?,
            planner_turns: IntCounter::new("engram_planner_turns_total", "Turns routed to the planner")?,
            pattern_picks: IntCounterVec::new(
                Opts::new(
                    "engram_pattern_picks_total",
                    "Planner turns whose model the pattern store chose: recommended, or explored for evidence",
                ),
                &["model", "how"],
            )?,
            llm_calls: IntCounterVec::new(
                Opts::new("engram_llm_calls_total", "Calls to a language model, by model, context and outcome"),
                &["model", "context", "outcome"],
            )?,
            llm_tokens: IntCounterVec::new(
                Opts::new("engram_llm_tokens_total", "Tokens of language-model calls, by model and direction"),
                &["model", "direction"],
            )?,
            llm_cost: CounterVec::new(
                Opts::new("engram_llm_cost_usd_total", "Cost of language-model calls in US dollars, by model"),
                &["model"],
            )?,
            llm_seconds: HistogramVec::new(
                HistogramOpts::new("engram_llm_call_seconds", "Latency of language-model calls, by model")
                    .buckets(latency_buckets()),
                &["model"],
            )?,
            embedding_seconds: Histogram::with_opts(
                HistogramOpts::new("engram_embedding_seconds", "Time to embed one text (or one batch)")
                    .buckets(latency_buckets()),
            )?,
        };
        registry.register(Box::new(m.events_appended.clone()))?;
        registry.register(Box::new(m.append_seconds.clone()))?;
        registry.register(Box::new(m.lag.clone()))?;
        registry.register(Box::new(m.fastpath_hits.clone()))?;
        registry.register(Box::new(m.planner_calls_saved.clone()))?;
        registry.register(Box::new(m.planner_turns.clone()))?;
        registry.register(Box::new(m.pattern_picks.clone()))?;
        registry.register(Box::new(m.llm_calls.clone()))?;
        registry.register(Box::new(m.llm_tokens.clone()))?;
        registry.register(Box::new(m.llm_cost.clone()))?;
        registry.register(Box::new(m.llm_seconds.clone()))?;
        registry.register(Box::new(m.embedding_seconds.clone()))?;
        Ok(Arc::new(m))
    }

    /// One embedding computed in `took`.
    pub fn embedded(&self, took: Duration) {
        self.embedding_seconds.observe(took.as_secs_f64());
    }

    /// Counts what one event of the log says (see the module table).
    pub fn observe(&self, env: &Envelope) {
        match &env.event {
            Event::FastPathHit(hit) => {
                self.fastpath_hits.with_label_values(&[hit.layer.as_str()]).inc();
                self.planner_calls_saved.inc();
            }
            Event::RouteDecided(route) => {
                if route.layer == RouteLayer::Planner {
                    self.planner_turns.inc();
                }
                let chosen = route.chain.iter().find(|c| c.verdict == ChainVerdict::Chosen);
                if let Some(entry) = chosen {
                    let how = match entry.policy {
                        RoutePolicy::Pattern => Some("recommended"),
                        RoutePolicy::Explore => Some("explored"),
                        _ => None,
                    };
                    if let (Some(how), Some(model)) = (how, entry.model.as_deref().or(route.chosen_model.as_deref())) {
                        self.pattern_picks.with_label_values(&[model, how]).inc();
                    }
                }
            }
            Event::LlmCallCompleted(call) => {
                let model = call.model.as_str();
                self.llm_calls.with_label_values(&[model, call.context.as_str(), call.outcome.as_str()]).inc();
                self.llm_tokens.with_label_values(&[model, "input"]).inc_by(u64::from(call.input_tokens));
                self.llm_tokens.with_label_values(&[model, "output"]).inc_by(u64::from(call.output_tokens));
                self.llm_cost.with_label_values(&[model]).inc_by(call.cost_usd.to_f64().unwrap_or(0.0).max(0.0));
                self.llm_seconds.with_label_values(&[model]).observe(call.latency_ms as f64 / 1000.0);
            }
            _ => {}
        }
    }
}

impl BusObserver for Metrics {
    fn appended(&self, kinds: &mut dyn Iterator<Item = EventKind>, took: Duration) {
        self.append_seconds.observe(took.as_secs_f64());
        for kind in kinds {
            self.events_appended.with_label_values(&[kind.name()]).inc();
        }
    }

    fn lag(&self, actor: &str, behind: u64) {
        self.lag.with_label_values(&[actor]).set(i64::try_from(behind).unwrap_or(i64::MAX));
    }
}

/// An embedder whose every call is timed into
/// `engram_embedding_seconds`.
pub struct TimedEmbedder {
    inner: Arc<dyn Embedder>,
    metrics: Arc<Metrics>,
}

impl TimedEmbedder {
    /// Times `inner`'s calls.
    pub fn new(inner: Arc<dyn Embedder>, metrics: Arc<Metrics>) -> Self {
        TimedEmbedder { inner, metrics }
    }
}

impl Embedder for TimedEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let start = Instant::now();
        let v = self.inner.embed(text);
        self.metrics.embedded(start.elapsed());
        v
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let start = Instant::now();
        let v = self.inner.embed_batch(texts);
        self.metrics.embedded(start.elapsed());
        v
    }
}

/// Feeds [`Metrics::observe`] every event appended from `from` on, on a
/// thread of its own, until `stop`.
pub fn observe_log(
    bus: Arc<Bus>,
    metrics: Arc<Metrics>,
    from: Seq,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, RuntimeError> {
    let kinds = [EventKind::FastPathHit, EventKind::RouteDecided, EventKind::LlmCallCompleted];
    let mut events = bus.log().subscribe(from, Filter::kinds(kinds))?;
    std::thread::Builder::new()
        .name("engram-metrics-log".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                match events.recv_timeout(Duration::from_millis(200)) {
                    Ok(Some(env)) => metrics.observe(&env),
                    Ok(None) => {}
                    Err(_) => return, // the log closed
                }
            }
        })
        .map_err(RuntimeError::Thread)
}

/// What a runtime runs for its metrics: the metrics, and the endpoint when
/// `[metrics] listen` asks for one.
pub(crate) struct MetricsSetup {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) server: Option<MetricsServer>,
}

/// The metrics of a runtime: in the host's `registry`, or in one of the
/// runtime's own when `listen` (`[metrics] listen`) asks for the endpoint;
/// `None` when neither asks.
pub(crate) fn setup(listen: &str, registry: Option<Registry>) -> Result<Option<MetricsSetup>, RuntimeError> {
    let listen = listen.trim();
    let Some(registry) = registry.or_else(|| (!listen.is_empty()).then(Registry::new)) else { return Ok(None) };
    let metrics = Metrics::register(&registry).map_err(|e| RuntimeError::Config(format!("[metrics]: {e}")))?;
    let server = match listen.is_empty() {
        true => None,
        false => Some(MetricsServer::start(listen, registry).map_err(|e| RuntimeError::Config(e.to_string()))?),
    };
    Ok(Some(MetricsSetup { metrics, server }))
}

/// `registry` in Prometheus's text format.
pub fn render(registry: &Registry) -> String {
    let mut out = Vec::new();
    // Encoding text into a Vec cannot fail.
    let _ = TextEncoder::new().encode(&registry.gather(), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// The `/metrics` endpoint: a thread answering HTTP on `[metrics] listen`.
/// Stopped when dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Listens on `listen` and serves `registry` at `/metrics` (and at `/`).
    pub fn start(listen: &str, registry: Registry) -> std::io::Result<MetricsServer> {
        let server = tiny_http::Server::http(listen).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::AddrInUse, format!("[metrics] listen = {listen:?}: {e}"))
        })?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| std::io::Error::other(format!("[metrics] listen = {listen:?}: not an IP address")))?;
        let server = Arc::new(server);
        let serving = server.clone();
        let thread = std::thread::Builder::new().name("engram-metrics".into()).spawn(move || {
            for request in serving.incoming_requests() {
                let path = request.url().split('?').next().unwrap_or("");
                let response = if path == "/metrics" || path == "/" {
                    let header = tiny_http::Header::from_bytes("Content-Type", "text/plain; version=0.0.4")
                        .expect("a valid header");
                    tiny_http::Response::from_string(render(&registry)).with_header(header)
                } else {
                    tiny_http::Response::from_string("not found: the metrics are at /metrics\n").with_status_code(404)
                };
                let _ = request.respond(response);
            }
        })?;
        tracing::info!(%addr, "serving metrics at /metrics");
        Ok(MetricsServer { server, thread: Some(thread), addr })
    }

    /// Where it listens (the port the OS picked for `:0`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::{FastPathHit, LlmCallCompleted, LlmContext, LlmOutcome};
    use engram_events::ActorKind;

    #[test]
    fn events_become_the_figures_the_table_names() {
        let registry = Registry::new();
        let m = Metrics::register(&registry).unwrap();
        let hit =
            FastPathHit { layer: RouteLayer::L1, matched: "x".into(), similarity: None, steps: vec![], residual: None };
        m.observe(&Envelope::new(ActorKind::Router, hit));
        let call = LlmCallCompleted {
            model: "m1".into(),
            context: LlmContext::Planner,
            input_tokens: 100,
            output_tokens: 7,
            cost_usd: rust_decimal::Decimal::new(25, 4),
            pricing_version: "v".into(),
            latency_ms: 1200,
            outcome: LlmOutcome::Ok,
            tools: engram_events::payloads::LlmTools::None,
            structured: false,
        };
        m.observe(&Envelope::new(ActorKind::Planner, call));
        let text = render(&registry);
        for line in [
            "engram_fastpath_hits_total{layer=\"L1\"} 1",
            "engram_planner_calls_saved_total 1",
            "engram_llm_calls_total{context=\"planner\",model=\"m1\",outcome=\"ok\"} 1",
            "engram_llm_tokens_total{direction=\"input\",model=\"m1\"} 100",
            "engram_llm_cost_usd_total{model=\"m1\"} 0.0025",
        ] {
            assert!(text.contains(line), "{line} missing from:\n{text}");
        }
        // A second registration in the same registry is refused, not doubled.
        assert!(Metrics::register(&registry).is_err());
    }
}
