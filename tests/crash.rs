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
use engram::storage::jetstream::server::NatsServer;
use engram::storage::sled_recovery::{self, Verdict};
use engram::storage::{verify, AppendOutcome, JetStreamConfig, JetStreamLog};
use engram::{ActorKind, Durability, Envelope, Event, EventLog, LogConfig, LogError, Seq, SessionId, SledLog};
use rand::Rng;

const CHILD_ENV: &str = "ENGRAM_CRASH_CHILD_DIR";
/// The child's shape, for the kill loop over the recovery walk:
/// `<durable|relaxed> <first ordinal> <wide: 0|1>`.
const SHAPE_ENV: &str = "ENGRAM_CRASH_SHAPE";
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
    // Mostly short, every 7th event about 2 KiB.
    let pad = if n % 7 == 6 { 2000 } else { 16 + (n as usize * 31) % 200 };
    event_padded(t, n, pad)
}

/// A wide event: 0.5 to 12.5 KiB of text, so sled's messages span pages.
fn wide_event(t: u32, n: u32) -> Envelope {
    event_padded(t, n, 500 + (n as usize * 977) % 12_000)
}

fn event_padded(t: u32, n: u32, pad: usize) -> Envelope {
    let at = base() + chrono::Duration::milliseconds(n as i64);
    let id = EventId::derive(at, &[b"crash-test", &t.to_be_bytes(), &n.to_be_bytes()]);
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
    let shape = std::env::var(SHAPE_ENV).unwrap_or_default();
    let mut shape = shape.split(' ');
    let backend = Backend::parse(shape.next().unwrap_or("sled"));
    let first: u32 = shape.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let make = if shape.next() == Some("1") { wide_event } else { event };
    if let Some(n) = shape.next().and_then(|w| w.strip_prefix("cut=")).and_then(|n| n.parse().ok()) {
        cut_write::arm(n);
    }
    assert_eq!(LogConfig::default().durability, Durability::Durable, "the default policy is the durable one");
    let log = backend.open(Path::new(&dir));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut n = first;
                for b in 0usize.. {
                    let len = BATCH_LENS[b % BATCH_LENS.len()];
                    let batch: Vec<Envelope> = (n..n + len).map(|k| make(t, k)).collect();
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

/// The log a child appends to.
#[derive(Clone, Debug)]
enum Backend {
    /// The data dir's sled log, durable (the default).
    Sled,
    /// A JetStream stream (`url`, `stream`), its local copy in the data
    /// dir: a sled log with relaxed flushes, written by the follower.
    JetStream(String, String),
}

impl Backend {
    /// `sled`, or `jetstream=<url>/<stream>`.
    fn parse(word: &str) -> Backend {
        match word.strip_prefix("jetstream=").and_then(|w| w.rsplit_once('/')) {
            Some((url, stream)) => Backend::JetStream(url.to_owned(), stream.to_owned()),
            None => Backend::Sled,
        }
    }

    fn word(&self) -> String {
        match self {
            Backend::Sled => "sled".to_owned(),
            Backend::JetStream(url, stream) => format!("jetstream={url}/{stream}"),
        }
    }

    /// Opens the log in `dir`, either backend retrying the data dir's lock
    /// for a while, as a killed child's may outlive it briefly on a loaded
    /// machine (see [`reopened`]).
    fn open(&self, dir: &Path) -> Arc<dyn EventLog> {
        match self {
            Backend::Sled => Arc::new(open(dir)),
            Backend::JetStream(url, stream) => {
                let config = JetStreamConfig { url: url.clone(), stream: stream.clone(), ..JetStreamConfig::default() };
                Arc::new(reopened(|| JetStreamLog::open(dir, LogConfig::default(), config.clone())))
            }
        }
    }
}

/// When to kill the child.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// This long after its first acknowledgement.
    AfterFirstAck(Duration),
    /// This long after spawning it (it may not even have opened the log).
    AfterSpawn(Duration),
    /// When it has died by its own cut write ([`cut_write`]), or this long
    /// after spawning it.
    Dead(Duration),
}

struct ChildRun {
    acked: Vec<(EventId, Seq)>,
    /// The write the child cut short and died of, if it did:
    /// (offset, bytes written, bytes asked).
    cut: Option<(u64, u64, u64)>,
    /// Lines starting with `ACK` that did not parse (a torn last line).
    torn: usize,
}

fn run_child(dir: &Path, kill: Kill) -> ChildRun {
    run_shaped_child(dir, kill, "sled 0 0")
}

fn run_shaped_child(dir: &Path, kill: Kill, shape: &str) -> ChildRun {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_appender", "--nocapture", "--include-ignored", "--test-threads", "1"])
        .env(CHILD_ENV, dir)
        .env(SHAPE_ENV, shape)
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
            if (line.starts_with("ACK") || line.starts_with("CUT")) && tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    match kill {
        Kill::AfterSpawn(d) => std::thread::sleep(d.saturating_sub(spawned.elapsed())),
        Kill::Dead(d) => {
            while spawned.elapsed() < d && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
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
    let mut run = ChildRun { acked: Vec::new(), cut: None, torn: 0 };
    for line in lines {
        if let Some(cut) = line.strip_prefix("CUT ") {
            let n: Vec<u64> = cut.split(' ').filter_map(|w| w.parse().ok()).collect();
            run.cut = Some((n[0], n[1], n[2]));
            continue;
        }
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
    reopened(|| SledLog::open(dir, LogConfig::default()))
}

/// `open`'s log, retried for ten seconds while the data dir's lock is
/// still held — by a killed child the kernel has not finished with.
fn reopened<L>(open: impl Fn() -> Result<L, LogError>) -> L {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match open() {
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

/// Rules 6 and 7 of the recovery walk (`storage/src/sled_recovery.rs`)
/// reached by real kills, on both backends: each round a child appends
/// wide events (messages spanning pages) and dies inside one of sled's
/// writes to `db`, cut at a page boundary ([`cut_write`]), over the same
/// data dir again and again (so sled reuses segments, and a cut leaves
/// their old contents). Before each reopen the walk says what it makes of
/// the cut: never damage; the log opens; every acknowledged event is where
/// it was acknowledged. The loop runs until a cut has been told by rule 6
/// (a sign of a cut) and one by rule 7 (the last write, no sign), or fails
/// after [`MAX_CUT_ROUNDS`]; about one cut in five reaches rule 7.
#[test]
fn kills_inside_sleds_writes_reach_rules_6_and_7_on_both_backends() {
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start(store.path()).expect("nats-server starts (scripts/test.sh installs it)");
    for backend in [Backend::Sled, Backend::JetStream(server.url(), "crash".to_owned())] {
        let tally = cut_loop(&backend);
        eprintln!("{}: {tally:?}", backend.word());
        assert!(reached_rules_6_and_7(&tally), "{}: rules 6 and 7 not both reached: {tally:?}", backend.word());
    }
}

/// Rounds of [`kills_inside_sleds_writes_reach_rules_6_and_7_on_both_backends`]
/// at least, and at most.
const MIN_CUT_ROUNDS: u32 = 8;
const MAX_CUT_ROUNDS: u32 = 250;

/// Whether the walk told a cut by a sign (rule 6) and one with no sign
/// (rule 7: the last write; or rule 8, its other half: a later buffer
/// written whole after it).
fn reached_rules_6_and_7(tally: &BTreeMap<String, u32>) -> bool {
    let signed = ["Zeros", "ZerosBeforeLaterBuffer", "FramesOutOfOrder", "StaleMessage"];
    signed.iter().any(|sign| tally.contains_key(&format!("cut: {sign}")))
        && (tally.contains_key("last write") || tally.contains_key("cut: Unexplained"))
}

/// The cut rounds on one backend: how many times the walk said what.
fn cut_loop(backend: &Backend) -> BTreeMap<String, u32> {
    let mut rng = rand::rng();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut tally: BTreeMap<String, u32> = BTreeMap::new();
    let mut acked: Vec<(EventId, Seq)> = Vec::new();
    for round in 0..MAX_CUT_ROUNDS {
        let reached = reached_rules_6_and_7(&tally);
        if round >= MIN_CUT_ROUNDS && reached {
            break;
        }
        let n: u32 = rng.random_range(0..24);
        let shape = format!("{} {} 1 cut={n}", backend.word(), round * 100_000);
        let run = run_shaped_child(&dir, Kill::Dead(Duration::from_secs(20)), &shape);
        assert!(run.torn <= 1);
        acked.extend(run.acked);
        let verdict = sled_recovery::walk(&dir.join("log.sled")).unwrap();
        let what = match (&verdict, run.cut) {
            (_, None) => "no cut".to_owned(),
            (Verdict::Sound, _) => "no message cut".to_owned(),
            (Verdict::Cut(sign), _) => format!("cut: {sign:?}"),
            (Verdict::LastWrite, _) => "last write".to_owned(),
            (Verdict::Damaged(damage), Some(cut)) => {
                panic!("{}, round {round}: a write cut by a kill {cut:?} read as damage: {damage}", backend.word())
            }
        };
        *tally.entry(what).or_default() += 1;
        let log = backend.open(&dir);
        for (id, seq) in &acked {
            assert_eq!(
                log.seq_of(*id).unwrap(),
                Some(*seq),
                "{}, round {round}: acknowledged {id} lost",
                backend.word()
            );
        }
        // The whole log read back now and then (it grows every round).
        if round % 8 == 7 {
            check_gap_free(&*log);
        }
    }
    check_gap_free(&*backend.open(&dir));
    tally
}

/// Every position from 1 to the head reads back, in order.
fn check_gap_free(log: &dyn EventLog) {
    let mut expected = Seq::FIRST;
    for env in log.read_from(Seq::FIRST) {
        let env = env.unwrap_or_else(|e| panic!("reading after a cut write: {e}"));
        assert_eq!(env.seq, expected, "positions are gap-free");
        expected = expected.next();
    }
    assert_eq!(expected.0 - 1, log.head().0, "read_from ends at head");
}

/// A kill that cuts one of sled's writes short, as the kernel does: the
/// test binary's own `pwrite64` (the executable's definition wins over
/// libc's at link time, and std's `write_at` calls it) passes every write
/// through, until the child arms it with `n`: the `n`th write to
/// `log.sled/db` that crosses a page boundary then writes only up to one of
/// those boundaries, prints `CUT <offset> <written> <len>`, and the process
/// SIGKILLs itself. A random kill almost never lands inside sled's writes
/// (each is a few microseconds into the page cache: 0 of 120 rounds did);
/// this one lands there every time, at the place a real kill leaves — a
/// page boundary, the rest of the area as it was.
mod cut_write {
    use std::sync::atomic::{AtomicI64, Ordering};

    /// Spanning writes to pass through before the cut; negative: never.
    static COUNTDOWN: AtomicI64 = AtomicI64::new(-1);
    /// Which boundary of the cut write the cut stops at.
    static PICK: AtomicI64 = AtomicI64::new(0);

    pub fn arm(n: u32) {
        PICK.store(i64::from(n) * 7 + 3, Ordering::SeqCst);
        COUNTDOWN.store(i64::from(n), Ordering::SeqCst);
    }

    fn is_sled_db(fd: libc::c_int) -> bool {
        std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|p| p.ends_with("log.sled/db"))
    }

    /// # Safety
    /// As libc's `pwrite64`.
    #[no_mangle]
    pub unsafe extern "C" fn pwrite64(
        fd: libc::c_int,
        buf: *const libc::c_void,
        count: libc::size_t,
        offset: libc::off64_t,
    ) -> libc::ssize_t {
        const PAGE: i64 = 4096;
        let first = (offset / PAGE + 1) * PAGE;
        let spans = first < offset + count as i64;
        if spans
            && COUNTDOWN.load(Ordering::SeqCst) >= 0
            && is_sled_db(fd)
            && COUNTDOWN.fetch_sub(1, Ordering::SeqCst) == 0
        {
            let boundaries = (offset + count as i64 - 1 - first) / PAGE + 1;
            let at = first + PICK.load(Ordering::SeqCst) % boundaries * PAGE;
            let len = (at - offset) as usize;
            libc::syscall(libc::SYS_pwrite64, fd, buf, len, offset);
            let line = format!("\nCUT {offset} {len} {count}\n");
            libc::write(1, line.as_ptr().cast(), line.len());
            libc::kill(libc::getpid(), libc::SIGKILL);
            loop {
                libc::pause();
            }
        }
        libc::syscall(libc::SYS_pwrite64, fd, buf, count, offset) as libc::ssize_t
    }
}
