//! Crash test: an appender process is `kill -9`ed at a random moment while
//! four threads append with durable acknowledgements; the reopened log must
//! hold every acknowledged event at the position it was acknowledged with,
//! verify clean, be gap-free, and keep appending at `head + 1`.
//!
//! The child is this very test binary, run again with
//! `ENGRAM_CRASH_CHILD_DIR=<dir>`: the ignored test [`child_appender`] then
//! becomes the appender (without the variable it returns at once).
//!
//! Every event the child writes is deterministic — its id is derived from
//! (thread, n) and its payload names both — so besides the acknowledged ids
//! the parent can also check what it finds: each record decodes to exactly
//! the envelope the child built, each thread's events form a prefix of its
//! history ending on a batch boundary (a batch is all or nothing), and a
//! second child re-appending the same history over a recovered log gets
//! the original positions back (idempotence survives the crash).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use engram::events::payloads::{UtteranceReceived, UtteranceSource};
use engram::events::EventId;
use engram::storage::{verify, AppendOutcome};
use engram::{ActorKind, Durability, Envelope, Event, EventLog, LogConfig, LogError, Seq, SessionId, SledLog};
use rand::Rng;

const CHILD_ENV: &str = "ENGRAM_CRASH_CHILD_DIR";
const THREADS: u32 = 4;

/// Events per batch, by the thread's batch counter: mostly single events,
/// sometimes a few at once (a few KiB, so some batches span segments).
const BATCH_LENS: [u32; 8] = [1, 1, 3, 1, 2, 1, 1, 4];

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0).unwrap()
}

/// The `n`th event of appender thread `t`; the same (t, n) always gives the
/// same envelope, id included.
fn event(t: u32, n: u32) -> Envelope {
    let at = base() + chrono::Duration::milliseconds(n as i64);
    let id = EventId::derive(at, &[b"crash-test", &t.to_be_bytes(), &n.to_be_bytes()]);
    // Mostly short, every 7th event about 2 KiB.
    let pad = if n % 7 == 6 { 2000 } else { 16 + (n as usize * 31) % 200 };
    Envelope::at(
        id,
        at,
        ActorKind::Listener,
        UtteranceReceived {
            text: format!("t{t} n{n} {}", "x".repeat(pad)),
            turn_number: n + 1,
            source: UtteranceSource::Chat,
            lang: Some("en".into()),
            model: None,
            sticky_model: None,
        },
    )
    .with_session(SessionId::new(format!("crash-{t}")))
}

/// (t, n) back from a stored event's payload.
fn origin(env: &Envelope) -> (u32, u32) {
    let Event::UtteranceReceived(u) = &env.event else { panic!("unexpected event at seq {}: {env:?}", env.seq) };
    let mut words = u.text.split(' ');
    let t = words.next().and_then(|w| w.strip_prefix('t')).and_then(|w| w.parse().ok());
    let n = words.next().and_then(|w| w.strip_prefix('n')).and_then(|w| w.parse().ok());
    (t.expect("thread in text"), n.expect("ordinal in text"))
}

/// The child: four threads append batches forever, printing `ACK <id> <seq>`
/// for each event once its `append` has returned Ok.
#[test]
#[ignore = "the crash tests run this as their child process"]
fn child_appender() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let config = LogConfig::default();
    assert_eq!(config.durability, Durability::Durable, "the default policy is the durable one");
    let log = Arc::new(SledLog::open(Path::new(&dir), config).expect("child opens the log"));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut n = 0u32;
                for b in 0usize.. {
                    let len = BATCH_LENS[b % BATCH_LENS.len()];
                    let batch: Vec<Envelope> = (n..n + len).map(|k| event(t, k)).collect();
                    n += len;
                    let ids: Vec<EventId> = batch.iter().map(|e| e.id).collect();
                    let outcomes = log.append(batch).expect("append");
                    let mut lines = String::new();
                    for (id, o) in ids.iter().zip(&outcomes) {
                        lines.push_str(&format!("ACK {id} {}\n", o.seq().0));
                    }
                    // One small write per batch: a pipe write under
                    // PIPE_BUF bytes is atomic, so lines never interleave.
                    let mut out = std::io::stdout().lock();
                    out.write_all(lines.as_bytes()).expect("stdout");
                    out.flush().expect("stdout");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// When to kill the child.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// This long after its first acknowledgement.
    AfterFirstAck(Duration),
    /// This long after spawning it (it may not even have opened the log).
    AfterSpawn(Duration),
}

struct ChildRun {
    acked: Vec<(EventId, Seq)>,
    /// Lines starting with `ACK` that did not parse (a torn last line).
    torn: usize,
}

fn run_child(dir: &Path, kill: Kill) -> ChildRun {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_appender", "--nocapture", "--include-ignored", "--test-threads", "1"])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let spawned = Instant::now();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("ACK") && tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    match kill {
        Kill::AfterSpawn(d) => std::thread::sleep(d.saturating_sub(spawned.elapsed())),
        Kill::AfterFirstAck(d) => {
            let first = rx.recv_timeout(Duration::from_secs(20));
            let first = first.unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("the child acknowledged nothing within 20 s")
            });
            lines.push(first);
            std::thread::sleep(d);
        }
    }
    child.kill().expect("SIGKILL the child");
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child died by the signal, it did not finish: {status:?}");
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    let mut run = ChildRun { acked: Vec::new(), torn: 0 };
    for line in lines {
        let mut parts = line.split(' ').skip(1);
        let id = parts.next().and_then(|s| EventId::from_str(s).ok());
        let seq = parts.next().and_then(|s| s.parse::<u64>().ok());
        match (id, seq, parts.next()) {
            (Some(id), Some(seq), None) => run.acked.push((id, Seq(seq))),
            _ => run.torn += 1,
        }
    }
    run
}

/// Every (t, n) boundary where a batch of thread `t` ends.
fn is_batch_boundary(n: u32) -> bool {
    let mut end = 0;
    let mut b = 0;
    while end < n {
        end += BATCH_LENS[b % BATCH_LENS.len()];
        b += 1;
    }
    end == n
}

/// Opens the log with the default (durable) policy in the test process.
///
/// Retries a lock conflict for a while: the two tests here run in parallel
/// and spawn children, and a child forked by one test while the other has
/// the log open shares that open's lock-file descriptions (`flock`) until
/// it execs, so a close-then-reopen can briefly find the dir "in use" by
/// this very process. A lock left by the killed child itself would not go
/// away, and fails the test after the deadline.
fn open(dir: &Path) -> SledLog {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match SledLog::open(dir, LogConfig::default()) {
            Ok(log) => return log,
            Err(LogError::DataDirInUse { .. }) if Instant::now() < deadline => {}
            Err(LogError::Sled(e)) if e.to_string().contains("could not acquire lock") && Instant::now() < deadline => {
            }
            Err(e) => panic!("the log does not reopen after kill -9: {e}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reopens the log after a crash and checks everything; returns the head.
fn check_recovered(dir: &Path, acked: &[(EventId, Seq)]) -> Seq {
    let log = open(dir);
    let head = log.head();

    let report = verify::verify(&log, |_| {});
    assert!(report.ok(), "verify after kill -9: {:?}", report.faults);
    assert_eq!(report.first_bad_seq(), None);
    assert_eq!(report.events, head.0, "verify checked every position 1..=head");
    assert_eq!(log.indexed_ids().unwrap(), head.0, "one id index entry per record");

    // Every acknowledged event is there, where it was acknowledged.
    for (id, seq) in acked {
        assert_eq!(log.seq_of(*id).unwrap(), Some(*seq), "acknowledged event {id} (seq {seq}) lost after kill -9");
        assert!(*seq <= head, "acknowledged seq {seq} beyond the recovered head {head}");
    }

    // Gap-free positions, and every record is exactly what the child built.
    let mut per_thread: BTreeMap<u32, Vec<(u32, Seq)>> = BTreeMap::new();
    let mut expected_seq = Seq(1);
    for env in log.read_from(Seq::FIRST) {
        let env = env.unwrap_or_else(|e| panic!("reading after kill -9: {e}"));
        assert_eq!(env.seq, expected_seq, "positions are gap-free");
        let (t, n) = origin(&env);
        let mut want = event(t, n);
        want.seq = env.seq;
        assert_eq!(env, want, "record at seq {} decodes to what the child appended", env.seq);
        per_thread.entry(t).or_default().push((n, env.seq));
        expected_seq = expected_seq.next();
    }
    assert_eq!(expected_seq.0 - 1, head.0, "read_from ends at head");

    // Each thread appended one batch at a time, waiting for each: the log
    // holds a prefix of its history, cut at a batch boundary.
    for (t, events) in &per_thread {
        let ns: Vec<u32> = events.iter().map(|&(n, _)| n).collect();
        assert_eq!(ns, (0..ns.len() as u32).collect::<Vec<_>>(), "thread {t}: a prefix of its events, in order");
        assert!(is_batch_boundary(ns.len() as u32), "thread {t}: {} events is not a whole number of batches", ns.len());
    }

    // Re-appending something already there is idempotent after recovery.
    if let Some((id, seq)) = acked.first() {
        let (t, n) = {
            let stored = log.read_from(*seq).next().unwrap().unwrap();
            assert_eq!(stored.id, *id);
            origin(&stored)
        };
        assert_eq!(log.append(vec![event(t, n)]).unwrap(), vec![AppendOutcome::Existing(*seq)]);
        assert_eq!(log.head(), head, "a duplicate appends nothing");
    }
    head
}

/// After the checks: a fresh append lands on head + 1, and survives a
/// clean close and reopen.
fn check_appends_continue(dir: &Path, head: Seq) {
    let fresh = event(THREADS + 1, head.0 as u32);
    {
        let log = open(dir);
        assert_eq!(log.append(vec![fresh.clone()]).unwrap(), vec![AppendOutcome::Appended(head.next())]);
    }
    let log = open(dir);
    assert_eq!(log.head(), head.next());
    assert_eq!(log.seq_of(fresh.id).unwrap(), Some(head.next()));
    assert!(verify::verify(&log, |_| {}).ok());
}

#[test]
fn acknowledged_appends_survive_kill_9() {
    let started = Instant::now();
    let mut rng = rand::rng();
    let mut total_acked = 0usize;
    let mut max_head = 0u64;
    for round in 0..22 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let delay = Duration::from_millis(rng.random_range(50..=400));
        let run = run_child(&dir, Kill::AfterFirstAck(delay));
        assert!(!run.acked.is_empty(), "round {round}: the child acknowledged appends before it was killed");
        assert!(run.torn <= 1, "round {round}: {} torn ACK lines (only the last may be)", run.torn);
        let mut acked = run.acked;
        let head = check_recovered(&dir, &acked);
        assert!(head.0 >= acked.len() as u64);
        total_acked += acked.len();
        max_head = max_head.max(head.0);

        // Every fourth round, crash a second child over the recovered log.
        // It re-appends the same history (same derived ids): what is there
        // keeps its position, then it appends beyond.
        if round % 4 == 3 {
            let delay = Duration::from_millis(rng.random_range(50..=400));
            let again = run_child(&dir, Kill::AfterFirstAck(delay));
            assert!(again.torn <= 1);
            for (id, seq) in &again.acked {
                if let Some((_, first)) = acked.iter().find(|(a, _)| a == id) {
                    assert_eq!(seq, first, "event {id} was re-acknowledged at a new position");
                }
            }
            acked.extend(again.acked);
            let head2 = check_recovered(&dir, &acked);
            assert!(head2 >= head, "a second crash never loses the first child's events");
            check_appends_continue(&dir, head2);
        } else {
            check_appends_continue(&dir, head);
        }
    }
    assert!(total_acked >= 200, "too few acknowledgements to mean anything: {total_acked}");
    eprintln!(
        "kill -9: 22 rounds (+5 re-crashes), {total_acked} acknowledged events checked, largest log {max_head} events, {:?}",
        started.elapsed()
    );
}

#[test]
fn a_kill_right_after_start_leaves_a_log_that_opens() {
    let mut rng = rand::rng();
    // 0-5 ms: usually before the child even opens the log; the longer
    // delays land inside `SledLog::open` or its first commits.
    let delays: Vec<u64> =
        (0..10).map(|i| if i < 6 { rng.random_range(0..=5) } else { rng.random_range(5..=60) }).collect();
    for ms in delays {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let run = run_child(&dir, Kill::AfterSpawn(Duration::from_millis(ms)));
        assert!(run.torn <= 1);
        let head = check_recovered(&dir, &run.acked);
        check_appends_continue(&dir, head);
    }
}
