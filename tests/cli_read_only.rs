//! Commands that only read leave the data dir as it was: not one byte of
//! any file changes, and no file comes or goes. sled rewrites its snapshot
//! and the end of its log at every open, and the log's write-ahead files
//! rotate, so a reader that opened the log in place would change the data
//! dir (and `stats`' disk bytes with it); they read a copy instead
//! (`LogBackend::open_for_reading`).
//!
//! Needs the embedding model where `scripts/fetch-models.sh` installs it
//! (the data dir is made by `engram run`, as a user makes one).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn engram(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--data").arg(data).env_remove("ENGRAM_CONFIG").env("XDG_CONFIG_HOME", data.join("no-config"));
    c
}

fn ok(o: Output, what: &str) -> Output {
    assert!(o.status.success(), "{what}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Every file under `dir` with its bytes' digest, and every directory:
/// what a reader must leave as it found.
fn state(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().to_owned();
            if entry.file_type().unwrap().is_dir() {
                out.insert(name, "dir".to_owned());
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(name, format!("{} bytes, {:016x}", bytes.len(), fnv1a(&bytes)));
            }
        }
    }
    out
}

/// FNV-1a, 64 bits: enough to tell two versions of a file apart here.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The files that changed between `before` and `after`, named.
fn changed(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, was) in before {
        match after.get(path) {
            None => out.push(format!("{} removed", path.display())),
            Some(now) if now != was => out.push(format!("{}: {was} -> {now}", path.display())),
            Some(_) => {}
        }
    }
    out.extend(after.keys().filter(|p| !before.contains_key(*p)).map(|p| format!("{} added", p.display())));
    out
}

#[test]
fn read_commands_change_no_byte_of_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Two sessions of a user's turns: facts, memory, fast-path rows, actor
    // snapshots — a data dir with something in each part.
    let mut child = engram(&data).arg("run").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
    let lines =
        "my name is Ada and I live in Turin\nwhat time is it\nwhat time is it\n:end\nwhat time is it\nche ore sono\n";
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());

    let reads: &[&[&str]] = &[
        &["stats"],
        &["stats", "--json"],
        &["verify"],
        &["export"],
        &["replay"],
        &["replay", "--json", "--from", "3"],
        &["inspect", "sessions"],
        &["inspect", "days"],
        &["inspect", "patterns"],
        &["inspect", "canonical"],
        &["inspect", "pipelines"],
        &["inspect", "graph"],
        &["inspect", "memory"],
        &["inspect", "memory", "--search", "Turin"],
        &["route", "what time is it"],
        &["recommend", "--features", r#"{"tool_names":["get_now"]}"#],
        &["forget", "Turin", "--dry-run"],
    ];
    let before = state(&data);
    for args in reads {
        ok(engram(&data).args(*args).output().unwrap(), &args.join(" "));
        let after = state(&data);
        assert!(
            changed(&before, &after).is_empty(),
            "`engram {}` changed the data dir: {:#?}",
            args.join(" "),
            changed(&before, &after)
        );
    }
    // The check can fail: a command that writes changes it.
    ok(engram(&data).args(["run", "--once", "what time is it"]).output().unwrap(), "run --once");
    assert!(!changed(&before, &state(&data)).is_empty(), "a turn writes to the data dir");
}

/// A copy that cannot be made (the temporary directory missing) is no
/// reason to fail: the command reads the log in place and says so.
#[test]
fn a_copy_that_cannot_be_made_reads_in_place_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(engram(&data).args(["run", "--once", "what time is it"]).output().unwrap(), "run --once");
    let o = ok(engram(&data).arg("stats").env("TMPDIR", dir.path().join("missing")).output().unwrap(), "stats");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cannot copy the log to read it") && err.contains("reading it in place"), "{err}");
}
