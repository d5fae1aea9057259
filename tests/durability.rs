//! Durability is real: a child process appends with durable acknowledgements
//! it prints (and deferred appends, which it reports once a durable append
//! after them is acknowledged); the test `kill -9`s it at a random moment, reopens the log and
//! checks that every acknowledged event is there and that the log verifies.
//! Repeated 20 times, plus kills right at start-up.
//!
//! The child is this test binary run again with `ENGRAM_CRASH_CHILD=<dir>`:
//! the ignored test `crash_child` then becomes the appender.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use engram::events::payloads::{UtteranceReceived, UtteranceSource};
use engram::events::EventId;
use engram::{ActorKind, Envelope, EventLog, LogConfig, Seq, SessionId, SledLog};
use rand::Rng;

const CHILD_ENV: &str = "ENGRAM_CRASH_CHILD";
const APPENDERS: usize = 4;

fn utterance(thread: usize, i: u64) -> Envelope {
    Envelope::new(
        ActorKind::Listener,
        UtteranceReceived {
            text: format!("thread {thread} utterance {i} {}", "x".repeat(64 + (i % 200) as usize)),
            turn_number: (i % 1000) as u32 + 1,
            source: UtteranceSource::Chat,
            lang: Some("en".into()),
            model: None,
            sticky_model: None,
        },
    )
    .with_session(SessionId::new(format!("crash-{thread}")))
}

/// The child: append forever from several threads, printing each
/// acknowledgement after `append` returned.
#[test]
#[ignore = "run as a child process by the crash tests"]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let log = std::sync::Arc::new(SledLog::open(dir.as_ref(), LogConfig::default()).expect("child opens the log"));
    let threads: Vec<_> = (0..APPENDERS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                // Deferred appends are acknowledged before they are durable;
                // the thread's next durable append makes them durable, so
                // they are reported (ACK) only then.
                let mut deferred: Vec<(EventId, Seq)> = Vec::new();
                for i in 0.. {
                    // Mostly single events, sometimes a batch of three.
                    let batch: Vec<Envelope> =
                        (0..if i % 5 == 0 { 3 } else { 1 }).map(|j| utterance(t, i * 3 + j)).collect();
                    let ids: Vec<EventId> = batch.iter().map(|e| e.id).collect();
                    if i % 3 == 1 {
                        let outcomes = log.append_deferred(batch).expect("deferred append");
                        deferred.extend(ids.iter().zip(outcomes).map(|(id, o)| (*id, o.seq())));
                        continue;
                    }
                    let outcomes = log.append(batch).expect("append");
                    let mut lines = String::new();
                    for (id, seq) in deferred.drain(..) {
                        lines.push_str(&format!("ACK {id} {seq}\n"));
                    }
                    for (id, o) in ids.iter().zip(outcomes) {
                        lines.push_str(&format!("ACK {id} {}\n", o.seq()));
                    }
                    // One write per batch, so a line is never torn.
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    out.write_all(lines.as_bytes()).unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Runs one child, kills it after `kill_after`, returns the acknowledged
/// (id, seq) pairs it printed.
fn run_child(dir: &std::path::Path, kill_after: Duration) -> Vec<(EventId, Seq)> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--include-ignored", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("ACK ") {
                let (id, seq) = rest.split_once(' ').expect("ACK id seq");
                let _ = tx.send((EventId::from_str(id).unwrap(), Seq(seq.parse().unwrap())));
            }
        }
    });
    std::thread::sleep(kill_after);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    rx.try_iter().collect()
}

fn check_after_crash(dir: &std::path::Path, acked: &[(EventId, Seq)]) {
    let log = SledLog::open(dir, LogConfig::default()).expect("the log reopens after kill -9");
    let report = engram::storage::verify::verify(&log, |_| {});
    assert!(report.ok(), "log verifies after kill -9: {:?}", report.faults);
    let head = log.head();
    assert_eq!(report.events, head.0, "positions 1..=head, no gap");
    for (id, seq) in acked {
        assert_eq!(log.seq_of(*id).unwrap(), Some(*seq), "acknowledged event {id} at seq {seq} survived");
    }
    let seqs: Vec<u64> = log.read_from(Seq::FIRST).map(|e| e.unwrap().seq.0).collect();
    assert_eq!(seqs, (1..=head.0).collect::<Vec<_>>());
    // Appending continues right after the recovered head.
    let out = log.append(vec![utterance(9, 0)]).unwrap();
    assert_eq!(out[0].seq(), head.next());
}

#[test]
fn acknowledged_events_survive_kill_9() {
    let mut rng = rand::rng();
    let started = Instant::now();
    let mut total_acked = 0;
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let kill_after = Duration::from_millis(rng.random_range(80..400));
        let acked = run_child(dir.path(), kill_after);
        total_acked += acked.len();
        check_after_crash(dir.path(), &acked);
        // Every few rounds, crash the same dir again on top of a recovered log.
        if round % 5 == 4 {
            let more = run_child(dir.path(), Duration::from_millis(rng.random_range(80..300)));
            let mut all = acked.clone();
            all.extend(more);
            check_after_crash(dir.path(), &all);
        }
    }
    assert!(total_acked > 100, "the children acknowledged appends before dying ({total_acked})");
    eprintln!("20 crash rounds, {total_acked} acknowledged events checked in {:?}", started.elapsed());
}

#[test]
fn a_kill_during_start_up_leaves_a_log_that_opens() {
    let mut rng = rand::rng();
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let acked = run_child(dir.path(), Duration::from_millis(rng.random_range(0..15)));
        check_after_crash(dir.path(), &acked);
    }
}
