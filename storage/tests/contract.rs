//! The contract every [`EventLog`] backend keeps, run on each: the sled log
//! (the embedded default) and the JetStream log (against a `nats-server`
//! this test binary starts on loopback). Positions, idempotence, reads,
//! subscriptions under concurrent appenders, the data-dir lock, order of
//! a caller's batches.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod common;

use common::{event, turns_of};
use engram_events::{Envelope, EventId, EventKind, Seq, SessionId};
use engram_storage::jetstream::server::NatsServer;
use engram_storage::{AppendOutcome, Durability, Filter, JetStreamConfig, LogBackend, LogConfig, LogError, OpenLog};

/// A backend under test: how to open its log on a data dir (through the
/// factory, as engram does).
trait Backend {
    fn open(&self, dir: &Path, config: LogConfig) -> Result<OpenLog, LogError>;
}

struct Sled;

impl Backend for Sled {
    fn open(&self, dir: &Path, config: LogConfig) -> Result<OpenLog, LogError> {
        LogBackend::Sled.open(dir, config)
    }
}

/// A `nats-server` of the test's own (stopped when the test ends: a server
/// kept in a static would outlive the test binary).
struct JetStream {
    server: NatsServer,
    _store: tempfile::TempDir,
}

impl JetStream {
    fn new() -> JetStream {
        let store = tempfile::tempdir().unwrap();
        JetStream { server: NatsServer::start(store.path()).expect("nats-server starts"), _store: store }
    }
}

impl Backend for JetStream {
    fn open(&self, dir: &Path, config: LogConfig) -> Result<OpenLog, LogError> {
        let js = JetStreamConfig { url: self.server.url(), ..JetStreamConfig::default() };
        LogBackend::JetStream(js).open(dir, config)
    }
}

/// Each test function, once per backend.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod sled_log {
            $( #[test] fn $name() { super::$name(&super::Sled) } )*
        }
        mod jetstream_log {
            $( #[test] fn $name() { super::$name(&super::JetStream::new()) } )*
        }
    };
}

contract!(
    positions_start_at_one_and_are_gap_free,
    appending_an_existing_id_is_a_no_op,
    reopening_keeps_everything_and_continues_positions,
    a_second_opener_gets_a_clear_error,
    subscription_sees_backlog_then_live_in_order_under_concurrent_appenders,
    filtered_subscription_skips_without_gaps,
    subscribers_get_everything_then_an_error_when_the_log_closes,
    zero_copy_views_match_decoded_envelopes,
    a_callers_batches_commit_in_the_order_it_submitted_them,
    subscribers_see_each_written_event_once,
    publishers_hand_live_batches_over_in_order_once,
);

fn relaxed() -> LogConfig {
    LogConfig { durability: Durability::Relaxed { flush_every_ms: 5 }, ..LogConfig::default() }
}

fn positions_start_at_one_and_are_gap_free(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(log.head(), Seq(0));
    let out = log.append((0..10).map(event).collect()).unwrap();
    assert_eq!(out, (1..=10).map(|s| AppendOutcome::Appended(Seq(s))).collect::<Vec<_>>());
    let out = log.append((10..13).map(event).collect()).unwrap();
    assert_eq!(out[0], AppendOutcome::Appended(Seq(11)));
    assert_eq!(log.head(), Seq(13));
    let all: Vec<_> = log.read_from(Seq(0)).map(Result::unwrap).collect();
    assert_eq!(all.len(), 13);
    for (i, env) in all.iter().enumerate() {
        assert_eq!(env.seq, Seq(i as u64 + 1));
        assert_eq!(turns_of(env), i as u32);
    }
    let tail: Vec<_> = log.read_from(Seq(12)).map(|e| e.unwrap().seq).collect();
    assert_eq!(tail, vec![Seq(12), Seq(13)]);
}

fn appending_an_existing_id_is_a_no_op(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), relaxed()).unwrap();
    let a = event(1);
    let b = event(2);
    assert_eq!(log.append(vec![a.clone()]).unwrap(), vec![AppendOutcome::Appended(Seq(1))]);
    // Again, and twice within one batch.
    let out = log.append(vec![a.clone(), b.clone(), b.clone()]).unwrap();
    assert_eq!(
        out,
        vec![AppendOutcome::Existing(Seq(1)), AppendOutcome::Appended(Seq(2)), AppendOutcome::Existing(Seq(2))]
    );
    assert_eq!(log.head(), Seq(2));
    assert_eq!(log.seq_of(b.id).unwrap(), Some(Seq(2)));
    assert_eq!(log.seq_of(EventId::new_live()).unwrap(), None);
}

fn reopening_keeps_everything_and_continues_positions(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let first = event(1);
    {
        let log = b.open(dir.path(), LogConfig::default()).unwrap();
        log.append((0..500).map(event).chain([first.clone()]).collect()).unwrap();
    }
    let log = b.open(dir.path(), LogConfig::default()).unwrap();
    assert_eq!(log.head(), Seq(501));
    assert_eq!(log.append(vec![first]).unwrap(), vec![AppendOutcome::Existing(Seq(501))]);
    assert_eq!(log.append(vec![event(9)]).unwrap(), vec![AppendOutcome::Appended(Seq(502))]);
    let report = engram_storage::verify::verify(log.records(), |_| {});
    assert!(report.ok(), "{:?}", report.faults);
    assert_eq!(report.events, 502);
    assert!(report.segments > 1, "500 events span several segments");
}

fn a_second_opener_gets_a_clear_error(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let _log = b.open(dir.path(), LogConfig::default()).unwrap();
    match b.open(dir.path(), LogConfig::default()) {
        Err(LogError::DataDirInUse { holder, .. }) => assert!(holder.contains("pid"), "{holder}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("opened twice"),
    }
}

fn subscription_sees_backlog_then_live_in_order_under_concurrent_appenders(b: &impl Backend) {
    const THREADS: u32 = 8;
    const PER_THREAD: u32 = 500;
    let dir = tempfile::tempdir().unwrap();
    // A tiny live buffer forces the lagged path (re-read from the log).
    let config = LogConfig { subscriber_buffer: 2, ..relaxed() };
    let log = Arc::new(b.open(dir.path(), config).unwrap());
    log.append((0..100).map(|i| event(1_000_000 + i)).collect()).unwrap();
    let mut sub = log.subscribe(Seq(1), Filter::all()).unwrap();
    let mut slow = log.subscribe(Seq(50), Filter::all()).unwrap();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for chunk in 0..PER_THREAD / 10 {
                    let batch = (0..10).map(|i| event(t * PER_THREAD + chunk * 10 + i)).collect();
                    log.append(batch).unwrap();
                }
            })
        })
        .collect();
    let total = 100 + (THREADS * PER_THREAD) as u64;
    let mut seen = HashSet::new();
    for expected in 1..=total {
        let env = sub.recv().unwrap();
        assert_eq!(env.seq, Seq(expected), "in order, no gap, no duplicate");
        assert!(seen.insert(turns_of(&env)), "each event once");
    }
    for h in handles {
        h.join().unwrap();
    }
    for expected in 50..=total {
        std::thread::sleep(Duration::from_micros(if expected % 500 == 0 { 2000 } else { 0 }));
        assert_eq!(slow.recv().unwrap().seq, Seq(expected));
    }
    assert_eq!(sub.recv_timeout(Duration::from_millis(50)).unwrap(), None);
    // Per-thread order survives too: each thread's events appear in the order it appended them.
    let mut last = vec![None; THREADS as usize];
    for env in log.read_from(Seq(101)) {
        let n = turns_of(&env.unwrap());
        let t = (n / PER_THREAD) as usize;
        assert!(last[t].is_none_or(|p| p < n));
        last[t] = Some(n);
    }
}

fn filtered_subscription_skips_without_gaps(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), relaxed()).unwrap();
    log.append((0..20).map(event).collect()).unwrap();
    let filter = Filter { session: Some(SessionId::new("s-3")), ..Filter::kinds([EventKind::SessionEnded]) };
    let mut sub = log.subscribe(Seq(1), filter).unwrap();
    let got: Vec<u32> = (0..3).map(|_| turns_of(&sub.recv().unwrap())).collect();
    assert_eq!(got, vec![3, 10, 17]);
    log.append((20..30).map(event).collect()).unwrap();
    assert_eq!(turns_of(&sub.recv().unwrap()), 24);
    assert_eq!(sub.recv_timeout(Duration::from_millis(20)).unwrap(), None);
    assert_eq!(sub.position(), Seq(31), "every position consumed, matching or not");
}

fn subscribers_get_everything_then_an_error_when_the_log_closes(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), LogConfig { subscriber_buffer: 1, ..relaxed() }).unwrap();
    let mut sub = log.subscribe(Seq(1), Filter::all()).unwrap();
    for i in 0..20 {
        log.append(vec![event(i)]).unwrap();
    }
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            match sub.recv() {
                Ok(env) => got.push(env.seq.0),
                Err(LogError::WriterStopped) => return got,
                Err(e) => panic!("{e}"),
            }
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    drop(log);
    assert_eq!(reader.join().unwrap(), (1..=20).collect::<Vec<_>>());
}

/// A batch that repeats an id, and one of ids already in the log: a live
/// subscriber gets what was written, each event once, at its position —
/// never the repeat, never an event that was already there.
fn subscribers_see_each_written_event_once(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), LogConfig::default()).unwrap();
    let mut sub = log.subscribe(Seq(1), Filter::all()).unwrap();
    let (a, c) = (event(1), event(3));
    log.append(vec![a.clone(), event(2), a.clone()]).unwrap();
    log.append(vec![a.clone(), c.clone()]).unwrap();
    log.append(vec![c.clone()]).unwrap();
    let mut got = Vec::new();
    while let Some(env) = sub.recv_timeout(Duration::from_millis(300)).unwrap() {
        got.push((env.seq.0, env.id));
    }
    let written: Vec<(u64, _)> = log.read_from(Seq(1)).map(|e| e.unwrap()).map(|e| (e.seq.0, e.id)).collect();
    assert_eq!(written.len(), 3, "a, 2 and c");
    assert_eq!(got, written);
}

fn zero_copy_views_match_decoded_envelopes(b: &impl Backend) {
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), relaxed()).unwrap();
    log.append((0..300).map(event).collect()).unwrap();
    let decoded: Vec<Envelope> = log.read_from(Seq(41)).map(Result::unwrap).collect();
    let mut viewed = Vec::new();
    let visited = log
        .records()
        .for_each_view(Seq(41), |v| {
            assert_eq!(v.kind(), EventKind::SessionEnded);
            viewed.push((v.seq(), v.id(), v.session().map(str::to_owned), v.at_micros()));
            Ok(())
        })
        .unwrap();
    assert_eq!(visited, 260);
    let expected: Vec<_> = decoded
        .iter()
        .map(|e| (e.seq, e.id, e.session.as_ref().map(|s| s.0.clone()), e.at.timestamp_micros()))
        .collect();
    assert_eq!(viewed, expected);
}

fn a_callers_batches_commit_in_the_order_it_submitted_them(b: &impl Backend) {
    // A durable append commits on the caller's thread when the writer is
    // idle; one submitted behind a deferred append still in the writer's
    // hands must wait its turn.
    let dir = tempfile::tempdir().unwrap();
    let log = b.open(dir.path(), LogConfig::default()).unwrap();
    for i in 0..300u32 {
        let deferred = log.submit_deferred(vec![event(2 * i)]).unwrap();
        let durable = log.append(vec![event(2 * i + 1)]).unwrap();
        let deferred = deferred.wait().unwrap();
        assert!(deferred[0].seq() < durable[0].seq(), "round {i}: {deferred:?} then {durable:?}");
    }
    let turns: Vec<u32> = log.read_from(Seq::FIRST).map(|e| turns_of(&e.unwrap())).collect();
    assert_eq!(turns, (0..600).collect::<Vec<_>>());
}

fn publishers_hand_live_batches_over_in_order_once(b: &impl Backend) {
    // What the runtime's dispatcher does: whoever publishes takes the live
    // batches on its own thread when the subscription is free
    // (`on_publish`, `try_recv_live`), and leaves the rest — a busy
    // subscription, a lag, the backlog — to a reader with `try_recv`.
    // Together they see every event once, in order, under concurrent
    // appenders and a live buffer small enough to lag.
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    const THREADS: u32 = 4;
    const PER_THREAD: u32 = 200;
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(b.open(dir.path(), LogConfig { subscriber_buffer: 2, ..relaxed() }).unwrap());
    log.append((0..10).map(|i| event(1_000_000 + i)).collect()).unwrap();
    let sub = Arc::new(Mutex::new(log.subscribe(Seq(1), Filter::all()).unwrap()));
    let got = Arc::new(Mutex::new(Vec::new()));
    let (calls, on_publisher) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    {
        let mut s = sub.lock().unwrap();
        assert_eq!(s.try_recv_live(), None, "the backlog is the reader's");
        assert!(s.needs_log());
        let (weak, got, calls, on_publisher) = (Arc::downgrade(&sub), got.clone(), calls.clone(), on_publisher.clone());
        s.on_publish(Arc::new(move || {
            calls.fetch_add(1, Ordering::SeqCst);
            let Some(sub) = weak.upgrade() else { return };
            let Ok(mut s) = sub.try_lock() else { return };
            while let Some(env) = s.try_recv_live() {
                on_publisher.fetch_add(1, Ordering::SeqCst);
                got.lock().unwrap().push(env.seq);
            }
        }));
    }
    let reader = |got: &Mutex<Vec<Seq>>| {
        let mut s = sub.lock().unwrap();
        while let Some(env) = s.try_recv().unwrap() {
            got.lock().unwrap().push(env.seq);
        }
    };
    reader(&got);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    log.append(vec![event(t * PER_THREAD + i)]).unwrap();
                }
            })
        })
        .collect();
    let total = 10 + (THREADS * PER_THREAD) as usize;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while got.lock().unwrap().len() < total {
        assert!(std::time::Instant::now() < deadline, "events lost: {} of {total}", got.lock().unwrap().len());
        reader(&got);
        std::thread::sleep(Duration::from_millis(1));
    }
    for h in handles {
        h.join().unwrap();
    }
    reader(&got);
    let got = got.lock().unwrap();
    assert_eq!(*got, (1..=total as u64).map(Seq).collect::<Vec<_>>(), "in order, each once");
    // One call per published batch (group commit makes fewer batches than appends).
    assert!(calls.load(Ordering::SeqCst) > 0, "called on publishing");
    assert!(on_publisher.load(Ordering::SeqCst) > 0, "some taken on the publishers' threads");
}
