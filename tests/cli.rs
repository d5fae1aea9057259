//! The CLI end to end: import validation, determinism, idempotence,
//! resumability after kill -9, export round trip, replay filters, stats,
//! verify, the data-dir lock, `--help`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use engram::{LogConfig, SledLog};
use rand::Rng;

fn engram(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram")).arg("--data").arg(data).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap()
}

const GOOD: &str = r#"{"session":"s-001","turn":1,"at":"2026-11-20T09:15:02Z","text":"download https://example.org/a and describe it","steps":[{"tool":"get_urls","args":{"url":"https://example.org/a"}},{"tool":"describe_entries","args":{"entries":"$0"}}],"model":"ollama:gemma4:26b","planner_ms":11800,"latency_ms":14200,"cost_usd":"0.0012","pricing_version":"2026-11","score":0.9,"score_confidence":0.8,"workload":null,"features":{"intent_tags":["doc"],"tool_names":["get_urls"]}}"#;

/// A turn file of `n` records over `sessions` interleaved sessions.
fn turns(n: usize, sessions: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let s = i % sessions;
        let turn = i / sessions + 1;
        let (model, steps) = if i % 3 == 0 {
            ("null".to_owned(), r#"[{"tool":"get_now"}]"#.to_owned())
        } else {
            (
                "\"ollama:gemma4:26b\"".to_owned(),
                format!(
                    r#"[{{"tool":"get_urls","args":{{"url":"https://example.org/{i}"}}}},{{"tool":"describe_entries","args":{{"entries":"$0"}}}}]"#
                ),
            )
        };
        out.push_str(&format!(
            r#"{{"session":"s-{s}","turn":{turn},"at":"2026-11-{:02}T{:02}:{:02}:00Z","text":"request {i}","steps":{steps},"model":{model},"latency_ms":{},"cost_usd":"0.00{}","score":0.{}}}"#,
            1 + i / 5000,
            (i / 60) % 24,
            i % 60,
            100 + i % 900,
            i % 10,
            i % 10
        ));
        out.push('\n');
    }
    out
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn export(data: &Path) -> Vec<u8> {
    let o = engram(data, &["export"]);
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

/// Imports `bad` after a good file and checks: exit 1, `FILE:LINE: FIELD:`
/// on stderr, nothing imported, the good data intact.
fn rejected(bad: &str, line: usize, field: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let good = write(tmp.path(), "good.jsonl", GOOD);
    assert!(engram(&data, &["import", good.to_str().unwrap()]).status.success());
    let before = export(&data);
    let file = write(tmp.path(), "bad.jsonl", bad);
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let expect = format!("{}:{line}: {field}: ", file.display());
    assert!(stderr(&o).contains(&expect), "expected {expect:?} in:\n{}", stderr(&o));
    assert!(stderr(&o).contains("nothing imported"), "{}", stderr(&o));
    assert_eq!(export(&data), before, "nothing imported, nothing lost");
}

#[test]
fn bad_input_is_rejected_with_file_line_and_field() {
    let second = |bad: &str| format!("{}\n{bad}\n", GOOD.replace("s-001", "s-000"));
    rejected(&second(&GOOD[..GOOD.len() - 40]), 2, "-"); // truncated line
    rejected(&second(&GOOD.replace("\"turn\":1", "\"turn\":\"1\"")), 2, "turn");
    rejected(&second(&GOOD.replace("\"workload\"", "\"workload_id\"")), 2, "workload_id");
    rejected(&second(&GOOD.replace("0.0012", "0.00.12")), 2, "cost_usd");
    rejected(&second(&GOOD.replace("2026-11-20T09:15:02Z", "20/11/2026 09:15")), 2, "at");
    rejected(&second(&GOOD.replace("\"score\":0.9", "\"score\":1.2")), 2, "score");
    rejected(&format!("{GOOD}\n{GOOD}\n"), 2, "turn"); // duplicate (session, turn)
    rejected(&format!("{GOOD}\n\u{1}\u{2}garbage\n"), 2, "-");
}

#[test]
fn binary_garbage_and_empty_files_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let garbage = tmp.path().join("garbage.bin");
    let mut rng = rand::rng();
    let bytes: Vec<u8> = (0..4096).map(|_| rng.random_range(0x80..=0xff)).collect();
    std::fs::write(&garbage, bytes).unwrap();
    let o = engram(&data, &["import", garbage.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not UTF-8"), "{}", stderr(&o));
    let empty = write(tmp.path(), "empty.jsonl", "\n\n");
    let o = engram(&data, &["import", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("empty file"), "{}", stderr(&o));
    assert!(!data.join("log.sled").exists(), "a rejected import creates no log");
}

#[test]
fn only_the_first_20_bad_lines_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let bad: String = (0..30).map(|i| format!("{{\"turn\":{i}}}\n")).collect();
    let file = write(tmp.path(), "bad.jsonl", &bad);
    let o = engram(&tmp.path().join("data"), &["import", file.to_str().unwrap()]);
    let err = stderr(&o);
    let listed = err.lines().filter(|l| l.contains(": session: missing")).count();
    assert_eq!(listed, 20, "the first 20 bad lines, each with every bad field:\n{err}");
    assert!(err.contains("bad.jsonl:20: steps: missing") && !err.contains("bad.jsonl:21:"), "{err}");
    assert!(err.contains("and 10 more invalid lines"), "{err}");
    assert!(err.contains("30 invalid line(s)"), "{err}");
}

#[test]
fn import_is_deterministic_idempotent_and_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "turns.jsonl", &turns(300, 7));
    let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
    let first = json(&engram(&a, &["import", file.to_str().unwrap(), "--json"]));
    assert_eq!(first["imported_turns"], 300);
    assert_eq!(first["skipped_existing"], 0);
    json(&engram(&b, &["import", file.to_str().unwrap(), "--json"]));
    assert_eq!(export(&a), export(&b), "same file, two empty dirs, byte-identical exports");
    let mut again = json(&engram(&a, &["import", file.to_str().unwrap(), "--json"]));
    for timing in [
        "seconds",
        "events_per_second",
        "peak_rss_bytes",
        "append_seconds",
        "append_events_per_second",
        "snapshots_seconds",
        "memory_index_seconds",
    ] {
        assert!(again.as_object_mut().unwrap().remove(timing).is_some(), "{timing} reported");
    }
    // What was said was indexed for recall by the first import, once.
    let indexed = first["memory_index"].clone();
    assert_eq!(indexed["turns_indexed"], 300, "{first}");
    assert_eq!(indexed["without_vectors"], 0, "{first}");
    let memory = again.as_object_mut().unwrap().remove("memory_index").expect("memory_index reported");
    assert_eq!(
        memory,
        serde_json::json!({"turns":300,"already_indexed":300,"turns_indexed":0,"passages":0,"without_vectors":0})
    );
    assert_eq!(again, serde_json::json!({"imported_turns":0,"skipped_existing":300,"events_appended":0}));
    assert_eq!(export(&a), export(&b));
    // export | import - into an empty dir reproduces the export.
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--data")
        .arg(&c)
        .args(["import", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &export(&a)).unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(export(&c), export(&a));
    // stats agree with the file.
    let stats = json(&engram(&a, &["stats", "--json"]));
    assert_eq!(stats["turns"], 300);
    assert_eq!(stats["sessions"], 7);
    assert_eq!(stats["by_kind"]["session.ended"], 7);
    assert_eq!(stats["by_kind"]["eval.completed"], 300, "every record carries a score");
    assert!(stats["disk_bytes"].as_u64().unwrap() > stats["record_bytes"].as_u64().unwrap());
    assert_eq!(stats["projections"]["sessions"]["rows"], 7);
    let verify = json(&engram(&a, &["verify", "--json"]));
    assert_eq!(verify["ok"], true);
}

/// Bytes of the log's write-ahead segments in `data` (the spare aside):
/// they grow as an import appends.
fn wal_bytes(data: &Path) -> u64 {
    std::fs::read_dir(data.join("log.wal"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name() != "spare.wal")
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn an_import_killed_mid_way_completes_on_rerun() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "turns.jsonl", &turns(2500, 25));
    let clean = tmp.path().join("clean");
    // Without the actors' snapshots, so that what is killed is the import.
    json(&engram(&clean, &["import", file.to_str().unwrap(), "--json", "--no-snapshots"]));
    let full = json(&engram(&clean, &["stats", "--json"]))["events"].as_u64().unwrap();
    let wal_full = wal_bytes(&clean);
    assert!(wal_full > 0);
    let mut rng = rand::rng();
    let mut cut_mid_way = 0;
    for attempt in 0..6 {
        let data = tmp.path().join(format!("killed-{attempt}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--data")
            .arg(&data)
            .args(["import", file.to_str().unwrap(), "--no-snapshots"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed once the log holds between a tenth and most of what the
        // import appends — watched, not timed, so a loaded machine (whose
        // import is slower than the clean one was) is cut mid-way too.
        let at = rng.random_range(wal_full / 10..wal_full * 6 / 10);
        while wal_bytes(&data) < at && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let partial = json(&engram(&data, &["stats", "--json"]))["events"].as_u64().unwrap();
        eprintln!("attempt {attempt}: killed at {at} of {wal_full} WAL bytes: {partial} of {full} events");
        cut_mid_way += usize::from(partial > 0 && partial < full);
        json(&engram(&data, &["import", file.to_str().unwrap(), "--json"]));
        assert_eq!(export(&data), export(&clean), "attempt {attempt}: resumed import equals a clean one");
        if cut_mid_way >= 3 {
            break;
        }
    }
    // Each attempt is checked above whatever its cut; at least one must have
    // landed mid-way for the test to have tested anything.
    assert!(cut_mid_way >= 1, "no import was killed part-way in 6 attempts");
}

#[test]
fn replay_filters() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write(tmp.path(), "turns.jsonl", &turns(40, 4));
    json(&engram(&data, &["import", file.to_str().unwrap(), "--json"]));
    let lines = |o: Output| -> Vec<serde_json::Value> {
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let ended = lines(engram(&data, &["replay", "--kind", "session.*", "--json"]));
    assert_eq!(ended.len(), 4);
    assert!(ended.iter().all(|e| e["kind"] == "session.ended"));
    let window = lines(engram(&data, &["replay", "--from", "10", "--to", "19", "--json"]));
    assert_eq!(window.iter().map(|e| e["seq"].as_u64().unwrap()).collect::<Vec<_>>(), (10..=19).collect::<Vec<_>>());
    let s2 = lines(engram(&data, &["replay", "--session", "s-2", "--kind", "turn.completed", "--json"]));
    assert_eq!(s2.len(), 10);
    assert!(s2.iter().all(|e| e["session"] == "s-2"));
    let human = engram(&data, &["replay", "--to", "3"]);
    assert_eq!(stdout(&human).lines().count(), 3);
    let bad = engram(&data, &["replay", "--kind", "sesion.*"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("matches no event kind"), "{}", stderr(&bad));
}

#[test]
fn a_data_dir_in_use_is_a_clear_error_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let _owner = SledLog::open(tmp.path(), LogConfig::default()).unwrap();
    let started = std::time::Instant::now();
    let file = write(tmp.path(), "t.jsonl", GOOD);
    let o = engram(tmp.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("data dir in use"), "{}", stderr(&o));
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn every_command_has_help() {
    let tmp = tempfile::tempdir().unwrap();
    for cmd in [
        vec!["--help"],
        vec!["import", "--help"],
        vec!["export", "--help"],
        vec!["replay", "--help"],
        vec!["verify", "--help"],
        vec!["stats", "--help"],
        vec!["rebuild", "--help"],
        vec!["inspect", "--help"],
        vec!["bench", "log", "--help"],
    ] {
        let o = engram(tmp.path(), &cmd);
        assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage:"), "{cmd:?}");
    }
    let o = engram(tmp.path(), &["export"]);
    assert_eq!(o.status.code(), Some(1), "no data yet is an error");
    assert!(stderr(&o).contains("no engram data"), "{}", stderr(&o));
}

/// Under `umask 000` every file engram creates is still its user's alone.
#[test]
fn files_are_owner_only_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write(tmp.path(), "turns.jsonl", &turns(20, 2));
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 000 && exec "$0" --data "$1" import "$2""#)
        .arg(env!("CARGO_BIN_EXE_engram"))
        .arg(&data)
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    fn walk(p: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(p).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            }
            out.push(path);
        }
    }
    let mut all = vec![data.clone()];
    walk(&data, &mut all);
    assert!(all.len() > 3, "{all:?}");
    for p in all {
        let mode = std::fs::symlink_metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", p.display());
    }
}

/// A data dir another process holds for a moment (a follower reads the log
/// holding its lock) is waited for, up to 2 s, by every command — `run`
/// included — as docs/log.md says; held longer, it is a clear error.
#[test]
fn a_data_dir_held_for_a_moment_is_waited_for() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "t.jsonl", GOOD);
    let data = tmp.path().join("data");
    assert!(engram(&data, &["import", file.to_str().unwrap()]).status.success());
    for args in [&["stats"][..], &["run", "--once", "what time is it"]] {
        let owner = SledLog::open(&data, LogConfig::default()).unwrap();
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            drop(owner);
        });
        let o = engram(&data, args);
        holder.join().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
}

/// On a full disk every command that only reads works — sled writes at
/// open, so they read a copy of the log made in the temporary directory
/// (on another file system here) — and a command that writes fails with a clear error; nothing
/// is lost. Needs a small file system of its own (a tmpfs, mounted as
/// root); skipped where it cannot be mounted.
#[test]
fn reads_work_on_a_full_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=24m", "tmpfs"])
        .arg(&small)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    }
    struct Unmount<'a>(&'a std::path::Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&small);
    let data = small.join("data");
    let file = write(tmp.path(), "t.jsonl", GOOD);
    assert!(engram(&data, &["import", file.to_str().unwrap()]).status.success());
    let before = stdout(&engram(&data, &["export"]));
    // Fill the disk.
    let mut filler = std::fs::File::create(small.join("filler")).unwrap();
    let block = vec![0u8; 1 << 20];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    let _ = std::io::Write::write_all(&mut filler, &[0u8; 4096]);
    drop(filler);
    for args in [&["export"][..], &["stats"], &["verify"], &["replay"], &["inspect", "sessions"]] {
        let o = engram(&data, args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(stdout(&engram(&data, &["export"])), before, "every event, as it was");
    let o = engram(&data, &["run", "--once", "what time is it"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("No space left on device"), "{}", stderr(&o));
}

/// A data dir of another user is "permission denied", not "no engram data
/// here" (run as `nobody` through `setpriv`, where the test runs as root).
#[test]
fn a_data_dir_of_another_user_says_permission_denied() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and setpriv to run as another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write(tmp.path(), "t.jsonl", GOOD);
    assert!(engram(&data, &["import", file.to_str().unwrap()]).status.success());
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_engram"))
        .arg("--data")
        .arg(&data)
        .arg("stats")
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("Permission denied") && !e.contains("no engram data"), "{e}");
}
