//! The CLI on a shared JetStream log: two data dirs (two devices) on one
//! stream of a `nats-server` this test starts on loopback — each sees the
//! other's turns, derived events exist once, `verify` checks each copy
//! against the stream — and what a user meets when the server is gone.
//!
//! Needs the embedding model where `scripts/fetch-models.sh` installs it,
//! and `nats-server` (`scripts/test.sh` installs both).

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output};

use engram::events::codec::json;
use engram::storage::jetstream::server::NatsServer;
use engram::{Envelope, EventKind};

fn engram(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--data")
        .arg(data)
        .args(args)
        .env_remove("ENGRAM_CONFIG")
        .env("XDG_CONFIG_HOME", data.join("no-config"))
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A data dir whose `engram.toml` puts its log on `stream` of `server`.
fn device(server: &NatsServer, stream: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!("[storage]\nbackend = \"jetstream\"\nnats_url = \"{}\"\nstream = \"{stream}\"\n", server.url());
    std::fs::write(dir.path().join("engram.toml"), toml).unwrap();
    dir
}

fn export(data: &Path) -> Vec<Envelope> {
    ok(engram(data, &["export"])).lines().map(|l| json::from_line(l).unwrap()).collect()
}

#[test]
fn two_devices_share_one_stream_through_the_cli() {
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start(store.path()).unwrap();
    let (laptop, desktop) = (device(&server, "household"), device(&server, "household"));
    ok(engram(laptop.path(), &["run", "--offline", "--once", "what time is it"]));
    ok(engram(desktop.path(), &["run", "--offline", "--once", "che ore sono"]));
    ok(engram(laptop.path(), &["run", "--offline", "--once", "tell me a joke"]));
    let (a, b) = (export(laptop.path()), export(desktop.path()));
    assert_eq!(a, b, "one log: both devices export the same events at the same positions");
    let ids: HashSet<_> = a.iter().map(|e| e.id).collect();
    assert_eq!(ids.len(), a.len(), "no event twice");
    let turns = a.iter().filter(|e| e.kind() == EventKind::TurnCompleted).count();
    assert_eq!(turns, 3, "each device's turns once, none answered again by the other");
    for data in [laptop.path(), desktop.path()] {
        let verify: serde_json::Value = serde_json::from_str(&ok(engram(data, &["verify", "--json"]))).unwrap();
        assert_eq!(verify["ok"], true, "{verify}");
        let stats: serde_json::Value = serde_json::from_str(&ok(engram(data, &["stats", "--json"]))).unwrap();
        assert!(stats["backend"].as_str().unwrap().contains("stream household"), "{stats}");
        assert_eq!(stats["head_seq"], a.len() as u64);
    }
}

#[test]
fn a_server_that_is_gone_is_named_and_nothing_is_lost() {
    let store = tempfile::tempdir().unwrap();
    let mut server = NatsServer::start(store.path()).unwrap();
    let laptop = device(&server, "engram");
    ok(engram(laptop.path(), &["run", "--offline", "--once", "what time is it"]));
    let before = export(laptop.path());
    server.kill();
    // What appends or checks against the stream fails, naming the server.
    for args in [&["run", "--offline", "--once", "tell me a joke"][..], &["verify"][..]] {
        let out = engram(laptop.path(), args);
        assert!(!out.status.success(), "{args:?} succeeded without its server");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&server.url()), "{args:?}: the error names the server: {stderr}");
    }
    // What only reads falls back to the data dir's copy, and says so.
    let out = engram(laptop.path(), &["export"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&server.url()) && stderr.contains("read-only"), "{stderr}");
    let copy: Vec<Envelope> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| json::from_line(l).unwrap()).collect();
    assert_eq!(copy, before, "the copy, as of the last event it has");
    let stats: serde_json::Value = serde_json::from_str(&ok(engram(laptop.path(), &["stats", "--json"]))).unwrap();
    assert!(stats["backend"].as_str().unwrap().contains("unreachable"), "{stats}");
    // A new device has no copy to read.
    let fresh = device(&server, "engram");
    let out = engram(fresh.path(), &["export"]);
    assert!(!out.status.success(), "a data dir without a copy cannot read offline");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no copy"), "{}", String::from_utf8_lossy(&out.stderr));
    server.restart().unwrap();
    assert_eq!(export(laptop.path()), before, "the log is as it was");
    ok(engram(laptop.path(), &["run", "--offline", "--once", "tell me a joke"]));
    assert!(export(laptop.path()).len() > before.len(), "appends go on once the server is back");
}

#[test]
fn a_server_that_wants_a_token_gets_it_from_the_variable_the_config_names() {
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start_with(store.path(), &["--auth", "s3cret-token"]).unwrap();
    let dir = device(&server, "engram");
    let toml = std::fs::read_to_string(dir.path().join("engram.toml")).unwrap();
    std::fs::write(dir.path().join("engram.toml"), toml + "credentials_env = \"ENGRAM_TEST_NATS_TOKEN\"\n").unwrap();
    let run = |token: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
        c.arg("--data").arg(dir.path()).args(["run", "--offline", "--once", "what time is it"]);
        c.env_remove("ENGRAM_CONFIG").env("XDG_CONFIG_HOME", dir.path().join("no-config"));
        match token {
            Some(t) => c.env("ENGRAM_TEST_NATS_TOKEN", t),
            None => c.env_remove("ENGRAM_TEST_NATS_TOKEN"),
        };
        c.output().unwrap()
    };
    let unset = run(None);
    assert!(!unset.status.success());
    let stderr = String::from_utf8_lossy(&unset.stderr);
    assert!(stderr.contains("ENGRAM_TEST_NATS_TOKEN") && stderr.contains("not set"), "{stderr}");
    let wrong = run(Some("nope"));
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains(&server.url()) && !stderr.contains("nope"), "names the server, never the secret: {stderr}");
    let right = run(Some("s3cret-token"));
    assert!(right.status.success(), "{}", String::from_utf8_lossy(&right.stderr));
    let exported = engram(dir.path(), &["export"]);
    assert!(!exported.status.success(), "without its token the log is not read");
}

#[test]
fn replay_follow_on_another_device_prints_the_turns_live() {
    use std::io::{BufRead, BufReader};
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start(store.path()).unwrap();
    let (laptop, watcher) = (device(&server, "engram"), device(&server, "engram"));
    ok(engram(laptop.path(), &["run", "--offline", "--once", "what time is it"]));
    let mut follow = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--data")
        .arg(watcher.path())
        .args(["replay", "--follow", "--json"])
        .env_remove("ENGRAM_CONFIG")
        .env("XDG_CONFIG_HOME", watcher.path().join("no-config"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = follow.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The history first, then a turn the laptop takes while it follows.
    let before = export(laptop.path()).len();
    ok(engram(laptop.path(), &["run", "--offline", "--once", "tell me a joke"]));
    let after = export(laptop.path());
    let mut seen = Vec::new();
    while seen.len() < after.len() {
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(line) => seen.push(json::from_line(&line).unwrap()),
            Err(_) => break,
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();
    assert!(after.len() > before);
    assert_eq!(seen, after, "every event of both turns, in order, live");
}

/// `n` turn records over `sessions` sessions, some with tool steps.
fn turn_file(n: usize, sessions: usize) -> String {
    (0..n)
        .map(|i| {
            let steps = if i % 2 == 0 { r#"[{"tool":"get_now"}]"# } else { "[]" };
            format!(
                r#"{{"session":"s-{:03}","turn":{},"at":"2026-11-20T{:02}:{:02}:{:02}Z","text":"request {}","steps":{steps},"model":"m-{}","latency_ms":{},"score":0.{}}}"#,
                i % sessions,
                i / sessions + 1,
                (i / 3600) % 24,
                (i / 60) % 60,
                i % 60,
                i % 17,
                i % 3,
                100 + i,
                i % 10
            ) + "\n"
        })
        .collect()
}

/// An import onto a JetStream stream killed (SIGKILL) at many points of its
/// appends, then run again, gives the stream a clean import gives, event
/// for event: a writer killed mid-batch leaves a prefix of it on the
/// stream, which may end inside a turn, and the re-run finishes that turn
/// instead of taking it for imported.
#[test]
fn a_killed_import_on_a_stream_resumes_to_exactly_a_clean_import() {
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start(store.path()).unwrap();
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("turns.jsonl");
    std::fs::write(&file, turn_file(2000, 50)).unwrap();
    let file = file.to_str().unwrap();
    let clean = device(&server, "clean");
    let started = std::time::Instant::now();
    ok(engram(clean.path(), &["import", file]));
    let took = started.elapsed();
    let reference: Vec<_> = export(clean.path()).into_iter().map(|e| (e.seq, e.id)).collect();
    let mut cut = 0;
    for attempt in 0..6u32 {
        let data = device(&server, &format!("killed-{attempt}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--data")
            .arg(data.path())
            .args(["import", file])
            .env_remove("ENGRAM_CONFIG")
            .env("XDG_CONFIG_HOME", data.path().join("no-config"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(took.mul_f64(0.3 + 0.1 * f64::from(attempt)));
        child.kill().unwrap();
        child.wait().unwrap();
        let partial = export(data.path()).len();
        cut += usize::from(partial > 0 && partial < reference.len());
        let out = engram(data.path(), &["import", file]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "attempt {attempt}: {stderr}");
        assert!(!stderr.contains("ERROR"), "attempt {attempt}: {stderr}");
        let got: Vec<_> = export(data.path()).into_iter().map(|e| (e.seq, e.id)).collect();
        assert_eq!(got, reference, "attempt {attempt}");
        let report: serde_json::Value =
            serde_json::from_slice(&engram(data.path(), &["stats", "--json"]).stdout).unwrap();
        cut += usize::from(report["events"].as_u64().is_some());
    }
    assert!(cut > 0);
}
