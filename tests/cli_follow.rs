//! `engram replay --follow` sees events appended by other processes: live
//! from an owner's follow socket, and from the log after an owner exits.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use engram::events::codec::json;
use engram::events::payloads::{SessionEndReason, SessionEnded};
use engram::{ActorKind, Envelope, EventLog, LogConfig, SessionId, SledLog};

fn engram() -> Command {
    Command::new(env!("CARGO_BIN_EXE_engram"))
}

struct Follower {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Follower {
    fn start(dir: &std::path::Path, extra: &[&str]) -> Follower {
        let mut child = engram()
            .arg("--data")
            .arg(dir)
            .args(["replay", "--follow", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let lines = lines_of(child.stdout.take().unwrap());
        Follower { child, lines }
    }

    /// Collects lines until `n` arrived or 20 s passed.
    fn take(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut got = Vec::new();
        while got.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => got.push(line),
                Err(_) => break,
            }
        }
        got
    }
}

/// The lines of a child's output, read on a thread of their own.
fn lines_of(out: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ended(i: u32) -> Envelope {
    Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
        .with_session(SessionId::new(format!("f-{i}")))
}

#[test]
fn follows_a_live_owner_and_later_owners() {
    let dir = tempfile::tempdir().unwrap();
    // An owner in this process, with a backlog.
    let owner = SledLog::open(dir.path(), LogConfig { serve_followers: true, ..LogConfig::default() }).unwrap();
    owner.append((0..5).map(ended).collect()).unwrap();
    let follower = Follower::start(dir.path(), &["--from", "2"]);
    let first = follower.take(4);
    assert_eq!(first.len(), 4, "backlog from seq 2: {first:?}");
    // Live events while the owner keeps the dir.
    for i in 5..25 {
        owner.append(vec![ended(i)]).unwrap();
    }
    let live = follower.take(20);
    let seqs: Vec<u64> = first.iter().chain(&live).map(|l| json::from_line(l).unwrap().seq.0).collect();
    assert_eq!(seqs, (2..=25).collect::<Vec<_>>(), "in order, no gap, no duplicate");
    // The owner goes away; another process imports; the follower sees it.
    drop(owner);
    let file = dir.path().join("turns.jsonl");
    std::fs::write(
        &file,
        r#"{"session":"s-9","turn":1,"at":"2026-11-20T09:15:02Z","text":"what time is it","steps":[{"tool":"get_now"}]}"#,
    )
    .unwrap();
    let status = engram().arg("--data").arg(dir.path()).arg("import").arg(&file).status().unwrap();
    assert!(status.success());
    // One fast-path turn: 8 turn events, its day's activation, the L1 row it
    // feeds, session.ended.
    let imported = follower.take(11);
    assert_eq!(imported.len(), 11, "{imported:?}");
    let kinds: Vec<String> = imported.iter().map(|l| json::from_line(l).unwrap().kind().name().to_owned()).collect();
    assert_eq!(kinds[..2], ["utterance.received", "day.activated"], "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("session.ended"), "{kinds:?}");
    assert_eq!(json::from_line(&imported[0]).unwrap().seq.0, 26);
}

#[test]
fn follow_filters_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let owner = SledLog::open(dir.path(), LogConfig { serve_followers: true, ..LogConfig::default() }).unwrap();
    let follower = Follower::start(dir.path(), &["--kind", "session.*", "--session", "f-3"]);
    owner.append((0..6).map(ended).collect()).unwrap();
    let got = follower.take(1);
    assert_eq!(got.len(), 1);
    assert_eq!(json::from_line(&got[0]).unwrap().session.unwrap().as_str(), "f-3");
    assert!(follower.lines.recv_timeout(Duration::from_millis(300)).is_err(), "nothing else matches");
}

/// A log of `n` `session.ended` events in `dir`, its owner gone.
fn backlog(dir: &std::path::Path, n: u32) {
    let log = SledLog::open(dir, LogConfig::default()).unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        log.append(chunk.iter().map(|&i| ended(i)).collect()).unwrap();
    }
}

/// The seqs of `lines`, which must be whole envelopes.
fn seqs(lines: &[String]) -> Vec<u64> {
    lines.iter().map(|l| json::from_line(l).unwrap().seq.0).collect()
}

/// Issue 43 item 2: a follower reading the log itself (nobody owns the
/// dir) whose output nobody reads blocks in its print — and held the data
/// dir while it did, so no other command could open it ("data dir in use
/// … locked by pid <the follower>"). It reads a batch at a time and prints
/// with the dir free; read later, it has lost nothing.
#[test]
fn a_follower_whose_output_is_not_read_leaves_the_data_dir_free() {
    let dir = tempfile::tempdir().unwrap();
    backlog(dir.path(), 20_000);
    // Its output is read by nobody until the end (a pipe holds 64 KiB;
    // the backlog is megabytes).
    let mut child = engram()
        .arg("--data")
        .arg(dir.path())
        .args(["replay", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let stats = engram().arg("--data").arg(dir.path()).args(["stats", "--json"]).output().unwrap();
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));
    let rx = lines_of(child.stdout.take().unwrap());
    let got: Vec<String> = (0..20_000).map_while(|_| rx.recv_timeout(Duration::from_secs(20)).ok()).collect();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seqs(&got), (1..=20_000).collect::<Vec<_>>(), "in order, no gap, no duplicate");
}

/// Issue 43 item 2: an owner closing its log waits for each follower to
/// drain — and waited forever for one that stopped reading (`engram run`
/// answered every turn, then never exited). Such a follower is dropped;
/// resumed, it reconnects where its last whole line ended and loses
/// nothing.
#[test]
fn a_follower_that_stops_reading_neither_holds_up_the_owner_nor_loses_events() {
    let dir = tempfile::tempdir().unwrap();
    let owner = SledLog::open(dir.path(), LogConfig { serve_followers: true, ..LogConfig::default() }).unwrap();
    owner.append((0..5).map(ended).collect()).unwrap();
    let follower = Follower::start(dir.path(), &[]);
    assert_eq!(follower.take(5).len(), 5);
    // Suspended: it reads nothing while the owner appends megabytes.
    let signal = |sig: &str| {
        let pid = follower.child.id().to_string();
        assert!(Command::new("kill").args([sig, &pid]).status().unwrap().success());
    };
    signal("-STOP");
    for chunk in (5..20_000).collect::<Vec<u32>>().chunks(1000) {
        owner.append(chunk.iter().map(|&i| ended(i)).collect()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    // And one that never reads at all, beside it.
    let mut idle = std::os::unix::net::UnixStream::connect(dir.path().join("engram.sock")).unwrap();
    std::io::Write::write_all(&mut idle, b"from 1\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(owner);
        let _ = tx.send(());
    });
    assert!(rx.recv_timeout(Duration::from_secs(30)).is_ok(), "closing the log waits for followers that do not read");
    // A later owner appends; the follower, resumed, reads everything.
    let later = SledLog::open(dir.path(), LogConfig { serve_followers: true, ..LogConfig::default() }).unwrap();
    signal("-CONT");
    later.append(vec![ended(20_000)]).unwrap();
    let rest = follower.take(20_001 - 5);
    assert_eq!(seqs(&rest), (6..=20_001).collect::<Vec<_>>(), "in order, no gap, no duplicate");
    drop(idle);
}
