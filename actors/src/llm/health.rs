//! A model server's health as this process sees it: retries of a failure
//! that may pass, and a pause after one that did not.
//!
//! Every call to the model server goes through [`Guarded`], which wraps
//! whatever client the runtime was given (the configured one, or a host's).
//! The rules, in order:
//!
//! 1. **Retry what may pass.** A refused connection or a 5xx answer is
//!    retried up to [`RETRIES`] times, after 250 ms, then 500 ms (each
//!    plus up to half again of jitter, so devices that lost the same
//!    server do not come back in step) — never past the call's own
//!    timeout, which bounds the whole call, retries included. A timeout,
//!    a 4xx or a malformed answer is not retried: the same request would
//!    get the same answer, or cost another full timeout.
//! 2. **Pause after a server that is down.** A call that still ends
//!    unreachable (refused, reset, no route — after its retries) opens a
//!    pause of [`PAUSE`] for its model: calls for that model within it
//!    fail at once with the same error, saying they were skipped, so a
//!    turn falls towards offline in milliseconds instead of retrying a
//!    dead server on every call. A timeout or a 5xx does not pause: each
//!    context has its own timeout (a judge's 200 ms says the model is
//!    slow for *that* budget, not that the server is down), and a 500 can
//!    be about one request. The pause is per model because a server can
//!    fail one model and serve another. The first call after the pause
//!    goes through (half-open) and either closes it or opens another.
//! 3. **Any answer closes the pause**, a malformed or 4xx one included:
//!    the server is up, and what it said is the caller's to judge.
//!
//! The state is per process and per client, not an event: it is how this
//! process treats a server right now, not something a rebuild should
//! reproduce. Each opening is logged (`warn`), naming the provider and
//! the failure; so is each closing (`info`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{ChatRequest, ChatResponse, LlmClient, LlmError, ModelSpeeds};

/// Retries of a refused connection or a 5xx answer (rule 1).
pub const RETRIES: u32 = 2;
/// The first retry's delay; each next one doubles it (rule 1).
pub const BACKOFF: Duration = Duration::from_millis(250);
/// How long calls skip a server that failed (rule 2).
pub const PAUSE: Duration = Duration::from_secs(30);

/// A client with retries and a pause after failure (see the module docs).
pub struct Guarded {
    inner: Arc<dyn LlmClient>,
    pause: Duration,
    backoff: Duration,
    /// Per model: when its pause ends, and the failure that began it.
    paused: Mutex<HashMap<String, (Instant, Failure)>>,
    /// Where each answered call's speed is recorded, if anywhere.
    speeds: Option<Arc<ModelSpeeds>>,
}

/// The failure that opened a pause: why the server was unreachable.
#[derive(Clone, Debug)]
struct Failure(String);

impl Failure {
    fn of(e: &LlmError) -> Option<Failure> {
        match e {
            LlmError::Unreachable(m) => Some(Failure(m.clone())),
            _ => None,
        }
    }

    /// The error a call skipped `left` before the pause ends gets.
    fn skipped(&self, left: Duration) -> LlmError {
        LlmError::Unreachable(format!(
            "skipped for {:.0} s more, the server just failed: {}",
            left.as_secs_f64(),
            self.0
        ))
    }
}

impl Guarded {
    /// `inner` with the default retries and pause.
    pub fn new(inner: Arc<dyn LlmClient>) -> Self {
        Guarded::with_timing(inner, BACKOFF, PAUSE)
    }

    /// `inner` with a first backoff of `backoff` and a pause of `pause`
    /// (tests use short ones).
    pub fn with_timing(inner: Arc<dyn LlmClient>, backoff: Duration, pause: Duration) -> Self {
        Guarded { inner, pause, backoff, paused: Mutex::new(HashMap::new()), speeds: None }
    }

    /// Records each answered call's speed in `speeds` ([`super::speed`]).
    pub fn measuring(mut self, speeds: Arc<ModelSpeeds>) -> Self {
        self.speeds = Some(speeds);
        self
    }

    /// True while calls for `model` are skipped (rule 2).
    pub fn is_paused(&self, model: &str) -> bool {
        matches!(self.state().get(model), Some((until, _)) if Instant::now() < *until)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Failure)>> {
        self.paused.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let paused: Vec<String> = self.state().keys().cloned().collect();
        f.debug_struct("Guarded").field("provider", &self.inner.provider()).field("paused", &paused).finish()
    }
}

/// Whether `e` may pass on a second try (rule 1).
fn transient(e: &LlmError) -> bool {
    matches!(e, LlmError::Unreachable(_)) || matches!(e, LlmError::Http { status, .. } if *status >= 500)
}

/// Up to half of `d` again, from the clock's nanoseconds: spread enough
/// for retries, no random source needed.
fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |t| t.subsec_nanos());
    d.mul_f64(f64::from(nanos % 1000) / 2000.0)
}

impl LlmClient for Guarded {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Some((until, failure)) = self.state().get(&req.model) {
            let now = Instant::now();
            if now < *until {
                return Err(failure.skipped(until.duration_since(now)));
            }
        }
        let started = Instant::now();
        let mut delay = self.backoff;
        let mut tries = 0;
        let mut result = self.inner.chat(req);
        while let Err(e) = &result {
            let wait = delay + jitter(delay);
            // A retry needs time of its own: at least the wait again.
            if !transient(e) || tries == RETRIES || started.elapsed() + wait * 2 >= req.timeout {
                break;
            }
            tracing::debug!(provider = self.inner.provider(), "LLM call failed ({e}); retrying in {wait:?}");
            std::thread::sleep(wait);
            let attempt = ChatRequest { timeout: req.timeout.saturating_sub(started.elapsed()), ..req.clone() };
            match self.inner.chat(&attempt) {
                // The retry ran out of what was left of the call's time:
                // the failure to report is the server's, not that.
                Err(LlmError::Timeout { .. }) => break,
                r => result = r,
            }
            delay *= 2;
            tries += 1;
        }
        let mut state = self.state();
        match result.as_ref().err().and_then(Failure::of) {
            Some(failure) => {
                if !state.contains_key(&req.model) {
                    tracing::warn!(
                        provider = self.inner.provider(),
                        model = %req.model,
                        "the model server failed ({}); calls for this model skip it for {} s and fall towards offline",
                        result.as_ref().err().map(ToString::to_string).unwrap_or_default(),
                        self.pause.as_secs()
                    );
                }
                state.insert(req.model.clone(), (Instant::now() + self.pause, failure));
            }
            None => {
                if state.remove(&req.model).is_some() {
                    tracing::info!(provider = self.inner.provider(), model = %req.model, "the model server answers again");
                }
            }
        }
        drop(state);
        if let (Ok(resp), Some(speeds)) = (&result, &self.speeds) {
            speeds.record(req, resp);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, LlmContext};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A server that fails the first `fails` calls with `error`, then answers.
    struct Flaky {
        calls: AtomicU32,
        fails: u32,
        error: fn() -> LlmError,
    }

    impl LlmClient for Flaky {
        fn provider(&self) -> &str {
            "test"
        }
        fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            match self.calls.fetch_add(1, Ordering::SeqCst) < self.fails {
                true => Err((self.error)()),
                false => Ok(ChatResponse { content: "ok".into(), ..ChatResponse::default() }),
            }
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::user("hi")],
            tools: Vec::new(),
            context: LlmContext::Planner,
            timeout: Duration::from_secs(5),
            answer_schema: None,
            max_tokens: None,
            temperature: None,
        }
    }

    fn guarded(fails: u32, error: fn() -> LlmError) -> (Arc<Flaky>, Guarded) {
        let flaky = Arc::new(Flaky { calls: AtomicU32::new(0), fails, error });
        let g = Guarded::with_timing(flaky.clone(), Duration::from_millis(5), Duration::from_millis(300));
        (flaky, g)
    }

    #[test]
    fn a_refused_connection_or_a_5xx_is_retried_and_passes() {
        for error in [(|| LlmError::Unreachable("refused".into())) as fn() -> LlmError, || LlmError::Http {
            status: 503,
            body: "busy".into(),
        }] {
            let (flaky, g) = guarded(2, error);
            assert_eq!(g.chat(&request()).unwrap().content, "ok");
            assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
            assert!(!g.is_paused("m"));
        }
    }

    #[test]
    fn a_4xx_a_timeout_or_a_malformed_answer_is_not_retried() {
        for error in [
            (|| LlmError::Http { status: 400, body: "bad".into() }) as fn() -> LlmError,
            || LlmError::Timeout { after_ms: 5 },
            || LlmError::Malformed("x".into()),
        ] {
            let (flaky, g) = guarded(1, error);
            assert!(g.chat(&request()).is_err());
            assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn a_server_that_stays_down_is_skipped_then_tried_again() {
        let (flaky, g) = guarded(3, || LlmError::Unreachable("refused".into()));
        assert!(g.chat(&request()).is_err(), "three tries, all refused");
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
        assert!(g.is_paused("m") && !g.is_paused("other"), "per model");
        // Skipped at once, failing as the server did: it is not asked.
        let t0 = Instant::now();
        let e = g.chat(&request()).unwrap_err();
        assert!(matches!(&e, LlmError::Unreachable(m) if m.contains("skipped")), "{e}");
        assert_eq!(flaky.calls.load(Ordering::SeqCst), 3);
        assert!(t0.elapsed() < Duration::from_millis(100));
        // Another model of the same server is still asked.
        let other = ChatRequest { model: "other".into(), ..request() };
        assert_eq!(g.chat(&other).unwrap().content, "ok");
        // After the pause the next call goes through, and closes it.
        std::thread::sleep(Duration::from_millis(350));
        assert_eq!(g.chat(&request()).unwrap().content, "ok");
        assert!(!g.is_paused("m"));
    }

    #[test]
    fn an_answer_or_a_timeout_leaves_the_server_up() {
        for error in [
            (|| LlmError::Http { status: 400, body: "bad".into() }) as fn() -> LlmError,
            || LlmError::Http { status: 500, body: "boom".into() },
            || LlmError::Timeout { after_ms: 5 },
        ] {
            let (_, g) = guarded(9, error);
            assert!(g.chat(&request()).is_err());
            assert!(!g.is_paused("m"));
        }
    }
}
