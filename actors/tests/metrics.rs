//! The metrics over real HTTP: a runtime with `[metrics] listen` serves
//! `/metrics`, whose figures follow the turns it took; a host's own
//! registry gets the same metrics instead.
//!
//! Needs the model where `scripts/fetch-models.sh` installs it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use engram_actors::config::Config;
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::Runtime;
use engram_events::SessionId;
use engram_learning::embedder::{Embedder, EmbedderConfig};

fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).expect("the embedding model"))).clone()
}

/// `GET path` on `addr`: the status line and the body.
fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// The value of the sample `name` (with its labels, as printed).
fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

#[test]
fn the_endpoint_serves_figures_that_follow_the_turns() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.metrics.listen = "127.0.0.1:0".into();
    let rt = Runtime::builder().data_dir(dir.path()).config(config).offline().embedder(embedder()).start().unwrap();
    let addr = rt.metrics_addr().expect("served");
    let (status, before) = get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert_eq!(sample(&before, "engram_fastpath_hits_total{layer=\"L0\"}"), None, "no turn yet:\n{before}");
    let s = SessionId::new("s-metrics");
    rt.handle_utterance(&s, "what time is it").unwrap();
    rt.handle_utterance(&s, "what time is it").unwrap();
    rt.handle_utterance(&s, "tell me a joke").unwrap();
    assert!(rt.settle(Duration::from_secs(10)));
    // The metrics follow the log on their own subscription, and a gauge
    // is sampled when it is read: read until the router's lag is back to
    // 0 (a loaded machine took longer than a fixed 300 ms), then check all.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (_, body) = get(addr, "/metrics");
        let caught_up = sample(&body, "engram_subscription_lag_events{actor=\"router\"}") == Some(0.0)
            && sample(&body, "engram_planner_turns_total") == Some(1.0);
        if caught_up || std::time::Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(sample(&body, "engram_fastpath_hits_total{layer=\"L0\"}"), Some(2.0), "{body}");
    assert_eq!(sample(&body, "engram_planner_calls_saved_total"), Some(2.0), "{body}");
    assert_eq!(sample(&body, "engram_planner_turns_total"), Some(1.0), "{body}");
    assert_eq!(sample(&body, "engram_events_appended_total{kind=\"utterance.received\"}"), Some(3.0), "{body}");
    assert!(sample(&body, "engram_append_seconds_count").unwrap() >= 3.0, "{body}");
    assert!(sample(&body, "engram_embedding_seconds_count").unwrap() >= 1.0, "{body}");
    assert_eq!(sample(&body, "engram_subscription_lag_events{actor=\"router\"}"), Some(0.0), "{body}");
    let (status, _) = get(addr, "/nothing");
    assert!(status.contains("404"), "{status}");
    rt.shutdown().unwrap();
    // The server's accept thread closes its socket on its way out.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the endpoint stops with the runtime");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_host_registry_gets_the_metrics_without_an_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let registry = prometheus::Registry::new();
    let rt = Runtime::builder()
        .data_dir(dir.path())
        .offline()
        .embedder(embedder())
        .metrics_registry(registry.clone())
        .start()
        .unwrap();
    assert_eq!(rt.metrics_addr(), None);
    rt.handle_utterance(&SessionId::new("s-host"), "what time is it").unwrap();
    assert!(rt.settle(Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(300));
    let text = engram_actors::metrics::render(&registry);
    assert_eq!(sample(&text, "engram_fastpath_hits_total{layer=\"L0\"}"), Some(1.0), "{text}");
    rt.shutdown().unwrap();
}
