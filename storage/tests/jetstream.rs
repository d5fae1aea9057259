//! What only the JetStream log has to show (the common contract is in
//! `contract.rs`): several data dirs on one stream, exactly-once appends
//! from racing writers, batches never interleaved, the checks at open, and
//! the faults of a server — `kill -9` mid-append, a restart under a live
//! subscription, a three-node cluster losing a node. Each test starts its
//! own `nats-server` on loopback.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use common::{event, turns_of};
use engram_events::{Envelope, EventId, Seq};
use engram_storage::jetstream::server::NatsServer;
use engram_storage::{AppendOutcome, EventLog, Filter, JetStreamConfig, JetStreamLog, LogConfig, LogError};

fn config(server: &NatsServer, stream: &str) -> JetStreamConfig {
    JetStreamConfig { url: server.url(), stream: stream.to_owned(), ..JetStreamConfig::default() }
}

fn open(dir: &Path, server: &NatsServer, stream: &str) -> JetStreamLog {
    JetStreamLog::open(dir, LogConfig::default(), config(server, stream)).unwrap()
}

fn ids(log: &JetStreamLog) -> Vec<EventId> {
    log.read_from(Seq::FIRST).map(|e| e.unwrap().id).collect()
}

struct Setup {
    server: NatsServer,
    _store: tempfile::TempDir,
}

fn server() -> Setup {
    let store = tempfile::tempdir().unwrap();
    Setup { server: NatsServer::start(store.path()).unwrap(), _store: store }
}

#[test]
fn two_data_dirs_on_one_stream_see_each_others_events() {
    let s = server();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), &s.server, "engram");
    let b = open(db.path(), &s.server, "engram");
    let mut live = b.subscribe(Seq::FIRST, Filter::all()).unwrap();
    a.append((0..10).map(event).collect()).unwrap();
    b.append((10..20).map(event).collect()).unwrap();
    a.append((20..30).map(event).collect()).unwrap();
    assert_eq!(a.remote_head().unwrap(), Seq(30));
    a.wait_for(Seq(30), Duration::from_secs(10)).unwrap();
    b.wait_for(Seq(30), Duration::from_secs(10)).unwrap();
    assert_eq!(ids(&a), ids(&b), "one log, the same positions on both");
    let seen: Vec<u32> = (0..30).map(|_| turns_of(&live.recv().unwrap())).collect();
    assert_eq!(seen, (0..30).collect::<Vec<_>>(), "b's subscription sees a's events live, in order");
    assert_eq!(a.compare_with_stream().unwrap(), None);
    assert_eq!(b.compare_with_stream().unwrap(), None);
    // A third device starting later fetches everything at open, telling
    // how far it has come.
    let dc = tempfile::tempdir().unwrap();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let seen = reports.clone();
    let progress: engram_storage::jetstream::FetchProgress =
        Arc::new(move |done, total| seen.lock().unwrap().push((done, total)));
    let js = JetStreamConfig { progress: Some(progress), ..config(&s.server, "engram") };
    let c = JetStreamLog::open(dc.path(), LogConfig::default(), js).unwrap();
    assert_eq!(c.head(), Seq(30));
    let reports = reports.lock().unwrap().clone();
    assert_eq!(reports.last(), Some(&(30, 30)), "{reports:?}");
    assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0), "{reports:?}");
    assert_eq!(ids(&c), ids(&a));
}

#[test]
fn racing_writers_append_each_id_exactly_once() {
    // Derived events get ids from their cause, so two runtimes handling the
    // same event derive the same ids and race to append them.
    let s = server();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Arc::new(open(da.path(), &s.server, "race"));
    let b = Arc::new(open(db.path(), &s.server, "race"));
    let shared: Vec<Envelope> = (0..600).map(event).collect();
    let outcomes: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .enumerate()
        .map(|(w, log)| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let mut out = Vec::new();
                for (k, batch) in shared.chunks(20).enumerate() {
                    // Each writer also has events of its own in between.
                    let own = event(10_000 * (w as u32 + 1) + k as u32);
                    let mut batch = batch.to_vec();
                    batch.insert(k % batch.len(), own);
                    let ids: Vec<EventId> = batch.iter().map(|e| e.id).collect();
                    out.extend(ids.into_iter().zip(log.append(batch).unwrap()));
                }
                out
            })
        })
        .map(|h| h.join().unwrap())
        .collect();
    let head = a.remote_head().unwrap();
    assert_eq!(head, Seq(600 + 2 * 30), "each shared id once, each writer's own ids once");
    a.wait_for(head, Duration::from_secs(10)).unwrap();
    b.wait_for(head, Duration::from_secs(10)).unwrap();
    let all = ids(&a);
    assert_eq!(all.len(), 660);
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 660, "no id twice");
    assert_eq!(all, ids(&b));
    // Every outcome names the position the id really has.
    let at: HashMap<EventId, Seq> = all.iter().enumerate().map(|(i, id)| (*id, Seq(i as u64 + 1))).collect();
    let mut appended = HashSet::new();
    for (id, outcome) in outcomes.into_iter().flatten() {
        assert_eq!(outcome.seq(), at[&id], "{id}");
        if let AppendOutcome::Appended(_) = outcome {
            assert!(appended.insert(id), "{id} reported appended twice");
        }
    }
    assert_eq!(appended.len(), 660, "every id reported appended by exactly one writer");
}

#[test]
fn batches_from_several_writers_are_never_interleaved() {
    let s = server();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let logs: Vec<Arc<JetStreamLog>> = dirs.iter().map(|d| Arc::new(open(d.path(), &s.server, "batches"))).collect();
    let handles: Vec<_> = (0..4u32)
        .map(|t| {
            let log = logs[t as usize % 2].clone();
            std::thread::spawn(move || {
                for b in 0..25u32 {
                    let first = t * 100_000 + b * 100;
                    log.append((first..first + 16).map(event).collect()).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let head = logs[0].remote_head().unwrap();
    assert_eq!(head, Seq(4 * 25 * 16));
    logs[0].wait_for(head, Duration::from_secs(10)).unwrap();
    let turns: Vec<u32> = logs[0].read_from(Seq::FIRST).map(|e| turns_of(&e.unwrap())).collect();
    for batch in turns.chunks(16) {
        let first = batch[0];
        assert_eq!(first % 100, 0, "a batch starts at a batch boundary: {batch:?}");
        assert_eq!(batch, (first..first + 16).collect::<Vec<_>>().as_slice(), "one batch, contiguous");
    }
}

#[test]
fn a_data_dir_of_another_log_is_refused_and_keeps_its_events() {
    let s = server();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    {
        let a = open(da.path(), &s.server, "one");
        a.append((0..5).map(event).collect()).unwrap();
        let b = open(db.path(), &s.server, "two");
        b.append((100..110).map(event).collect()).unwrap();
    }
    // a's data dir on stream two: same length or longer, other events.
    match JetStreamLog::open(da.path(), LogConfig::default(), config(&s.server, "two")) {
        Err(LogError::Stream { stream, what }) => {
            assert_eq!(stream, "two");
            assert!(what.contains("seq 5") && what.contains("another log"), "{what}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a data dir of another stream was attached"),
    }
    // b's data dir on stream one: longer than the stream.
    match JetStreamLog::open(db.path(), LogConfig::default(), config(&s.server, "one")) {
        Err(LogError::Stream { what, .. }) => assert!(what.contains("has 5 events") && what.contains("10"), "{what}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a longer data dir was attached"),
    }
    // Nothing was lost on either side.
    let a = open(da.path(), &s.server, "one");
    assert_eq!(a.head(), Seq(5));
    assert_eq!(a.compare_with_stream().unwrap(), None);
}

/// Runs `f` on a tokio runtime with a raw client of `server`.
fn with_client<T>(server: &NatsServer, f: impl AsyncFnOnce(async_nats::jetstream::Context) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        f(async_nats::jetstream::new(client)).await
    })
}

#[test]
fn a_stream_with_gaps_is_refused() {
    use async_nats::jetstream::stream::Config;
    let s = server();
    with_client(&s.server, async |js| {
        let stream = js
            .create_stream(Config { name: "gappy".into(), subjects: vec!["gappy.events".into()], ..Default::default() })
            .await
            .unwrap();
        for i in 0..3 {
            js.publish("gappy.events", engram_events::codec::binary::encode(&event(i)).into())
                .await
                .unwrap()
                .await
                .unwrap();
        }
        assert!(stream.delete_message(2).await.unwrap());
    });
    let dir = tempfile::tempdir().unwrap();
    match JetStreamLog::open(dir.path(), LogConfig::default(), config(&s.server, "gappy")) {
        Err(LogError::Stream { what, .. }) => assert!(what.contains("gaps") && what.contains("1 deleted"), "{what}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a stream with a gap was attached"),
    }
}

#[test]
fn a_stream_created_by_the_log_denies_deletes() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), &s.server, "engram");
    log.append((0..3).map(event).collect()).unwrap();
    let refused = with_client(&s.server, async |js| {
        let stream = js.get_stream("engram").await.unwrap();
        stream.delete_message(2).await.is_err()
    });
    assert!(refused, "deleting a message of engram's stream must be refused by the server");
    assert_eq!(log.remote_head().unwrap(), Seq(3));
}

/// A new device on a long stream fetches it in bulk (a pull consumer with
/// large requests, applied in chunks): the requests and the chunks end at
/// other positions than the writer's batches, and foreign messages in the
/// middle are recorded where they are, as by the live follower.
#[test]
fn a_new_device_fetches_a_long_stream_in_bulk_across_chunks_and_foreign_messages() {
    let s = server();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), &s.server, "engram");
    for start in (0..6_000).step_by(1_500) {
        a.append((start..start + 1_500).map(event).collect()).unwrap();
    }
    with_client(&s.server, async |js| {
        let copy = a.read_from(Seq(2)).next().unwrap().unwrap();
        js.publish("engram.events", "not an engram frame".into()).await.unwrap().await.unwrap();
        let mut again = copy.clone();
        again.seq = Seq::UNASSIGNED;
        js.publish("engram.events", engram_events::codec::binary::encode(&again).into()).await.unwrap().await.unwrap();
    });
    for start in (6_000..20_000).step_by(3_500) {
        a.append((start..start + 3_500).map(event).collect()).unwrap();
    }
    let b = open(db.path(), &s.server, "engram");
    assert_eq!(b.head(), Seq(20_002), "every position, fetched before open returns");
    let skipped: Vec<Seq> = b
        .read_from(Seq::FIRST)
        .map(Result::unwrap)
        .filter(|e| matches!(e.event, engram_events::Event::StreamMessageSkipped(_)))
        .map(|e| e.seq)
        .collect();
    assert_eq!(skipped, [Seq(6_001), Seq(6_002)]);
    assert_eq!(ids(&a), ids(&b), "the same positions and ids on both devices");
    assert_eq!(b.compare_with_stream().unwrap(), None);
    // Live after the fetch: the next append reaches the new device.
    a.append((20_000..20_010).map(event).collect()).unwrap();
    b.wait_for(Seq(20_012), Duration::from_secs(10)).unwrap();
    assert_eq!(ids(&a), ids(&b));
}

/// Appends `n` events made from `first..` in batches of 2 500, then
/// flushes (which waits for the packs of every complete range).
fn fill(log: &JetStreamLog, first: u32, n: u32) {
    for start in (first..first + n).step_by(2_500) {
        log.append((start..(start + 2_500).min(first + n)).map(event).collect()).unwrap();
    }
    log.flush().unwrap();
}

/// A new device takes every complete range but the last from packs — 1 024
/// events to a message — and the rest from the stream; a range whose pack
/// is missing (dropped, too big for the server) comes from the stream too,
/// and packs serve again after it.
#[test]
fn a_new_device_fetches_from_packs_and_the_rest_from_the_stream() {
    const PACK: u64 = engram_storage::jetstream::PACK_EVENTS;
    let s = server();
    let (da, db, dc) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), &s.server, "engram");
    fill(&a, 0, 1_500);
    // A device that was there early, then away: its copy ends inside pack 1.
    drop(open(dc.path(), &s.server, "engram"));
    fill(&a, 1_500, 11_000);
    let packs = with_client(&s.server, async |js| {
        let stream = js.get_stream("PACKS_engram").await.unwrap();
        let packs = stream.clone().info().await.unwrap().state.messages;
        // A hole: pack 3 (seq 3 073..=4 096) is gone.
        let pack_3 = stream.direct_get_last_for_subject("engram.packs.3").await.unwrap();
        stream.delete_message(pack_3.sequence).await.unwrap();
        packs
    });
    assert_eq!(packs, 12_500 / PACK, "a pack for every complete range, written once");
    let b = open(db.path(), &s.server, "engram");
    assert_eq!(b.head(), Seq(12_500));
    assert_eq!(ids(&a), ids(&b), "the same positions and ids on both devices");
    assert_eq!(b.compare_with_stream().unwrap(), None);
    // Packs 0..=11 end before the stream's last message; pack 3 is missing.
    assert_eq!(b.fetched_from_packs(), 11 * PACK, "every pack but the missing one");
    assert_eq!(a.fetched_from_packs(), 0, "the writer fetched nothing");
    // The new device packs the missing range again.
    b.flush().unwrap();
    let again = with_client(&s.server, async |js| {
        let stream = js.get_stream("PACKS_engram").await.unwrap();
        stream.direct_get_last_for_subject("engram.packs.3").await.is_ok()
    });
    assert!(again, "the missing pack is written again by a device holding its range");
    // The device back from away takes pack 1 in part (decoded: it holds
    // the start of it), then packs 2 to 11 as they are.
    let c = open(dc.path(), &s.server, "engram");
    assert_eq!(ids(&c), ids(&a));
    assert_eq!(c.compare_with_stream().unwrap(), None);
    assert_eq!(c.fetched_from_packs(), 11 * PACK, "packs 1 to 11");
}

/// Packs left over from another log — the stream deleted and created again
/// under its name, its packs stream still there — never reach a copy: a
/// new device refuses them (each pack's last event must be the stream's)
/// and fetches from the stream, then replaces them with this log's.
#[test]
fn packs_of_another_log_are_refused_and_replaced() {
    const PACK: u64 = engram_storage::jetstream::PACK_EVENTS;
    let s = server();
    let old = tempfile::tempdir().unwrap();
    fill(&open(old.path(), &s.server, "engram"), 0, 12_500);
    with_client(&s.server, async |js| js.delete_stream("engram").await.unwrap());
    // The new log is written by a device that does not use packs.
    let dc = tempfile::tempdir().unwrap();
    let no_packs = JetStreamConfig { packs: false, ..config(&s.server, "engram") };
    let c = JetStreamLog::open(dc.path(), LogConfig::default(), no_packs).unwrap();
    fill(&c, 100_000, 12_500);
    let dd = tempfile::tempdir().unwrap();
    let d = open(dd.path(), &s.server, "engram");
    assert_eq!(ids(&d), ids(&c), "the new log's events, none of the old packs'");
    assert_eq!(d.fetched_from_packs(), 0, "every old pack refused");
    d.flush().unwrap();
    let de = tempfile::tempdir().unwrap();
    let e = open(de.path(), &s.server, "engram");
    assert_eq!(ids(&e), ids(&c));
    assert_eq!(e.fetched_from_packs(), 12 * PACK, "the old packs purged, this log's written");
}

#[test]
fn a_foreign_message_on_the_subject_is_skipped_by_every_device_not_a_dead_end() {
    let s = server();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), &s.server, "engram");
    a.append((0..3).map(event).collect()).unwrap();
    // A stranger publishes on the subject: bytes that are no frame, a frame
    // of another position, a copy of an event the stream holds.
    with_client(&s.server, async |js| {
        let frame = |e: &Envelope| engram_events::codec::binary::encode(e);
        let mut copy = a.read_from(Seq(2)).next().unwrap().unwrap();
        js.publish("engram.events", "not an engram frame".into()).await.unwrap().await.unwrap();
        js.publish("engram.events", frame(&copy).into()).await.unwrap().await.unwrap();
        copy.seq = Seq::UNASSIGNED;
        js.publish("engram.events", frame(&copy).into()).await.unwrap().await.unwrap();
    });
    // Every device goes on: the first one appends after them, a new one
    // fetches the whole stream.
    a.append((3..5).map(event).collect()).unwrap();
    let b = open(db.path(), &s.server, "engram");
    assert_eq!(b.head(), Seq(8));
    for log in [&a, &b] {
        let events: Vec<Envelope> = log.read_from(Seq::FIRST).map(Result::unwrap).collect();
        let skipped: Vec<(Seq, String)> = events
            .iter()
            .filter_map(|e| match &e.event {
                engram_events::Event::StreamMessageSkipped(s) => Some((e.seq, s.reason.clone())),
                _ => None,
            })
            .collect();
        let at: Vec<Seq> = skipped.iter().map(|s| s.0).collect();
        assert_eq!(at, [Seq(4), Seq(5), Seq(6)], "{skipped:?}");
        assert!(skipped[0].1.contains("not an engram frame"), "{skipped:?}");
        assert!(skipped[1].1.contains("a frame of seq 2"), "{skipped:?}");
        assert!(skipped[2].1.contains("a copy of event"), "{skipped:?}");
        assert_eq!(events.iter().filter(|e| matches!(e.event, engram_events::Event::SessionEnded(_))).count(), 5);
        assert_eq!(log.compare_with_stream().unwrap(), None, "verify matches the skipped messages by their bytes");
    }
    let ids = |log: &JetStreamLog| -> Vec<EventId> { log.read_from(Seq::FIRST).map(|e| e.unwrap().id).collect() };
    assert_eq!(ids(&a), ids(&b), "the same record of them on every device");
    drop((a, b));
    // Reopened with a skipped message at its copy's head: rule 2 matches
    // it by its bytes.
    with_client(&s.server, async |js| {
        js.publish("engram.events", "still not a frame".into()).await.unwrap().await.unwrap();
    });
    let b = open(db.path(), &s.server, "engram");
    assert_eq!(b.head(), Seq(9));
    drop(b);
    let b = open(db.path(), &s.server, "engram");
    assert_eq!(b.head(), Seq(9));
    assert_eq!(b.compare_with_stream().unwrap(), None);
}

#[test]
fn kill_9_of_the_server_mid_append_loses_no_acknowledged_event_and_stores_none_twice() {
    let mut s = server();
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(open(dir.path(), &s.server, "engram"));
    let acked = Arc::new(Mutex::new(Vec::<EventId>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3u32)
        .map(|t| {
            let (log, acked, stop) = (log.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let batch: Vec<Envelope> = (0..4).map(|i| event(t * 1_000_000 + n * 4 + i)).collect();
                    let ids: Vec<EventId> = batch.iter().map(|e| e.id).collect();
                    // The append retries across the restart; an append that
                    // fails is retried here, with the same ids.
                    let mut tries = 0;
                    loop {
                        match log.append(batch.clone()) {
                            Ok(_) => break,
                            Err(e) if tries < 3 => {
                                tries += 1;
                                eprintln!("append failed, again: {e}");
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    acked.lock().unwrap().extend(ids);
                    n += 1;
                }
            })
        })
        .collect();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        let before = acked.lock().unwrap().len();
        s.server.kill();
        std::thread::sleep(Duration::from_millis(200));
        s.server.restart().unwrap();
        assert!(before > 0, "appends went on before the kill");
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let head = log.remote_head().unwrap();
    log.wait_for(head, Duration::from_secs(10)).unwrap();
    // A fresh data dir reads the server's stream from scratch.
    let fresh = tempfile::tempdir().unwrap();
    drop(log);
    let check = open(fresh.path(), &s.server, "engram");
    let stored = ids(&check);
    let distinct: HashSet<EventId> = stored.iter().copied().collect();
    assert_eq!(distinct.len(), stored.len(), "no event stored twice");
    let missing: Vec<_> = acked.iter().filter(|id| !distinct.contains(id)).collect();
    assert!(missing.is_empty(), "{} acknowledged events lost: {missing:?}", missing.len());
    assert_eq!(stored.len(), acked.len(), "nothing stored that no writer had acknowledged");
    // And the original data dir agrees with the stream, frame for frame.
    drop(check);
    let again = open(dir.path(), &s.server, "engram");
    assert_eq!(again.compare_with_stream().unwrap(), None);
}

#[test]
fn a_live_subscription_survives_a_server_restart() {
    let mut s = server();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open(da.path(), &s.server, "engram");
    let mut sub = a.subscribe(Seq::FIRST, Filter::all()).unwrap();
    a.append((0..5).map(event).collect()).unwrap();
    s.server.kill();
    s.server.restart().unwrap();
    // Another device appends after the restart; a sees it live.
    let b = open(db.path(), &s.server, "engram");
    b.append((5..10).map(event).collect()).unwrap();
    a.append((10..12).map(event).collect()).unwrap();
    let got: Vec<u32> = (0..12).map(|_| turns_of(&sub.recv().unwrap())).collect();
    assert_eq!(got, (0..12).collect::<Vec<_>>(), "no gap, no duplicate across the restart");
    assert_eq!(sub.recv_timeout(Duration::from_millis(100)).unwrap(), None);
}

#[test]
fn a_three_node_cluster_keeps_the_log_when_a_node_dies() {
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = NatsServer::cluster(dir.path(), 3).unwrap();
    let url = nodes.iter().map(|n| n.url()).collect::<Vec<_>>().join(",");
    let js = JetStreamConfig { url, stream: "engram".into(), replicas: 3, ..JetStreamConfig::default() };
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The cluster elects its meta leader in the background: the first open
    // may find no JetStream yet.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let a = loop {
        match JetStreamLog::open(da.path(), LogConfig::default(), js.clone()) {
            Ok(log) => break log,
            Err(e) if std::time::Instant::now() < deadline => {
                eprintln!("cluster not ready: {e}");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("{e}\n{}", nodes[0].log_tail()),
        }
    };
    a.append((0..100).map(event).collect()).unwrap();
    nodes[0].kill();
    a.append((100..200).map(event).collect()).unwrap();
    assert_eq!(a.remote_head().unwrap(), Seq(200));
    let b = JetStreamLog::open(db.path(), LogConfig::default(), js).unwrap();
    assert_eq!(b.head(), Seq(200));
    assert_eq!(ids(&a), ids(&b));
}

#[test]
fn a_batch_larger_than_the_clients_acknowledgement_window_is_appended_whole() {
    // The client holds 5 000 publishes awaiting acknowledgement; a batch of
    // more must not wait for permits its own acknowledgements hold.
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), &s.server, "engram");
    let out = log.append((0..12_000).map(event).collect()).unwrap();
    assert_eq!(out.last(), Some(&AppendOutcome::Appended(Seq(12_000))));
    assert_eq!(log.remote_head().unwrap(), Seq(12_000));
    let turns: Vec<u32> = log.read_from(Seq::FIRST).map(|e| turns_of(&e.unwrap())).collect();
    assert_eq!(turns, (0..12_000).collect::<Vec<_>>());
}

#[test]
fn a_tokio_host_opens_and_appends_from_inside_its_own_runtime() {
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let head = rt.block_on(async {
        let log = open(dir.path(), &s.server, "engram");
        log.append((0..3).map(event).collect()).unwrap();
        log.remote_head().unwrap()
    });
    assert_eq!(head, Seq(3));
}
