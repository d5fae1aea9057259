//! Two live runtimes (two devices) on one JetStream stream, at the same
//! time: each sees the other's turns; what they both derive from the same
//! events is appended once; a turn is answered — its tools run — only by
//! the device it was spoken to.
//!
//! Needs the model where `scripts/fetch-models.sh` installs it, and
//! `nats-server`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use engram_actors::config::Config;
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_actors::tools::{FnTool, ToolOutput};
use engram_actors::Runtime;
use engram_events::{Envelope, EventKind, Seq, SessionId};
use engram_learning::embedder::{Embedder, EmbedderConfig};
use engram_learning::projections;
use engram_local_state::projector::Projector;
use engram_storage::jetstream::server::NatsServer;
use engram_storage::StorageBackend;
use engram_storage::{EventLog, JetStreamConfig, LogBackend, LogConfig};

fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<OnnxEmbedder>> = OnceLock::new();
    E.get_or_init(|| Arc::new(OnnxEmbedder::open(&EmbedderConfig::default()).expect("the embedding model"))).clone()
}

fn device(data: &std::path::Path, server: &NatsServer, calls: Arc<AtomicUsize>) -> Runtime {
    let mut config = Config::default();
    config.storage.backend = StorageBackend::Jetstream;
    config.storage.nats_url = server.url();
    let tool = FnTool::new("ring_bell", "Ring the doorbell chime", move |_, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::trusted("rung".to_owned()))
    });
    Runtime::builder()
        .data_dir(data)
        .config(config)
        .offline()
        .embedder(embedder())
        .tool(Arc::new(tool))
        .turn_timeout(Duration::from_secs(60))
        .start()
        .unwrap()
}

fn events(rt: &Runtime) -> Vec<Envelope> {
    rt.log().read_from(Seq(1)).map(|e| e.unwrap()).collect()
}

#[test]

fn two_live_runtimes_on_one_stream_answer_their_own_turns_and_derive_once() {
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start(store.path()).unwrap();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (calls_a, calls_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let a = device(da.path(), &server, calls_a.clone());
    let b = device(db.path(), &server, calls_b.clone());
    // Both devices take turns at the same time, each folding the other's
    // events as they arrive while it derives from its own.
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..3 {
                a.handle_utterance(&SessionId::new("laptop"), "ring the doorbell chime").unwrap();
            }
        });
        s.spawn(|| {
            for text in ["ring the doorbell chime", "what time is it", "ring the doorbell chime"] {
                b.handle_utterance(&SessionId::new("desktop"), text).unwrap();
            }
        });
    });
    // Settled on both, with the other's last events arrived.
    let head = a.log().head().max(b.log().head());
    for rt in [&a, &b] {
        assert!(rt.settle(Duration::from_secs(20)));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while rt.log().head() < head {
            assert!(std::time::Instant::now() < deadline, "the other device's events never arrived");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(rt.settle(Duration::from_secs(20)));
    }
    let (ea, eb) = (events(&a), events(&b));
    assert_eq!(ea.len(), eb.len(), "both devices hold the whole log");
    assert_eq!(ea, eb, "the same events at the same positions");
    let count = |k: EventKind| ea.iter().filter(|e| e.kind() == k).count();
    assert_eq!(count(EventKind::UtteranceReceived), 6);
    assert_eq!(count(EventKind::TurnCompleted), 6, "each turn answered once");
    assert_eq!(calls_a.load(Ordering::SeqCst), 3, "the laptop's tool ran for the laptop's turns only");
    assert_eq!(calls_b.load(Ordering::SeqCst), 2, "the desktop's for the desktop's");
    let ids: std::collections::HashSet<_> = ea.iter().map(|e| e.id).collect();
    assert_eq!(ids.len(), ea.len(), "nothing derived twice");
    a.shutdown().unwrap();
    b.shutdown().unwrap();
    // The projections each data dir keeps reach the same digests.
    let digests = |dir: &std::path::Path| {
        let js = JetStreamConfig { url: server.url(), ..JetStreamConfig::default() };
        let log = LogBackend::JetStream(js).open(dir, LogConfig::default()).unwrap();
        let projector = Projector::open(&log, projections::all(), |_, _| {}).unwrap();
        projector.status().into_iter().map(|s| (s.name, s.digest)).collect::<Vec<_>>()
    };
    assert_eq!(digests(da.path()), digests(db.path()));
}
