//! A damaged record through the CLI: a turn file is imported with
//! `engram import`, then one byte inside a frame of a middle segment is
//! flipped straight in the sled `log` tree. `engram verify` names the bad
//! seq (human and `--json`); `replay`, `export` and `stats` print every
//! other event, warn naming the damaged seq and exit 1; `inspect` and
//! `rebuild` fold around it; `replay --to <seq-1>` succeeds.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use engram::events::codec::binary::{self, FRAME_HEADER_LEN};
use serde_json::Value;

fn engram(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram")).arg("--data").arg(data).args(args).stdin(Stdio::null()).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(&o));
    o
}

/// `n` turn records over `sessions` interleaved sessions.
fn turns(n: usize, sessions: usize) -> String {
    (0..n)
        .map(|i| {
            let steps = if i % 2 == 0 {
                "[]".to_owned()
            } else {
                format!(r#"[{{"tool":"get_urls","args":{{"url":"https://example.org/{i}"}}}}]"#)
            };
            let model = if i % 3 == 0 { "null" } else { "\"ollama:gemma4:26b\"" };
            format!(
                r#"{{"session":"s-{:02}","turn":{},"at":"2026-11-20T{:02}:{:02}:00Z","text":"request {i}","steps":{steps},"model":{model},"latency_ms":{},"cost_usd":"0.001","score":0.{}}}"#,
                i % sessions,
                i / sessions + 1,
                (i / 60) % 24,
                i % 60,
                900 + i,
                i % 10
            ) + "\n"
        })
        .collect()
}

/// Flips a byte in the body of the middle frame of the middle segment.
/// Returns the damaged seq and the first seq of the next segment.
fn damage(data: &Path) -> (u64, u64) {
    let db = sled::open(data.join("log.sled")).unwrap();
    let tree = db.open_tree("log").unwrap();
    let keys: Vec<u64> =
        tree.iter().keys().map(|k| u64::from_be_bytes(k.unwrap().as_ref().try_into().unwrap())).collect();
    assert!(keys.len() >= 5, "several segments: {keys:?}");
    let mid = keys.len() / 2;
    let key = keys[mid].to_be_bytes();
    let mut bytes = tree.get(key).unwrap().unwrap().to_vec();
    let frames: Vec<usize> = binary::frames(&bytes).map(|f| f.unwrap().bytes.len()).collect();
    let nth = frames.len() / 2;
    let offset: usize = frames[..nth].iter().sum();
    let seq = keys[mid] + nth as u64;
    {
        let (frame, _) = binary::split_frame(&bytes[offset..]).unwrap();
        assert_eq!(frame.seq().unwrap().0, seq, "the frame walked to records that seq");
        assert!(frame.bytes.len() > FRAME_HEADER_LEN + 8);
    }
    bytes[offset + FRAME_HEADER_LEN + 8] ^= 0x01;
    tree.insert(key, bytes).unwrap();
    db.flush().unwrap();
    (seq, keys[mid + 1])
}

#[test]
fn a_damaged_record_is_named_by_verify_replay_and_export() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(150, 6)).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));
    let before_json: Vec<String> =
        stdout(&ok(engram(&data, &["replay", "--json"]))).lines().map(str::to_owned).collect();
    let before_export: Vec<String> = stdout(&ok(engram(&data, &["export"]))).lines().map(str::to_owned).collect();
    let head = before_json.len() as u64;
    assert!(ok(engram(&data, &["verify"])).status.success());

    let (bad, next_segment) = damage(&data);
    let named = format!("seq {bad}");

    // verify: exit 1, the bad seq on stderr.
    let o = engram(&data, &["verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains(&format!("corrupt record at {named}")), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("first bad seq {bad}")), "{}", stderr(&o));
    assert!(stderr(&o).contains("CRC"), "{}", stderr(&o));

    // verify --json: machine-readable, same verdict.
    let o = engram(&data, &["verify", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["first_bad_seq"], bad);
    assert!(v["faults"][0].as_str().unwrap().contains(&named), "{v}");

    let without = |all: &[String]| -> Vec<String> {
        all.iter().enumerate().filter(|(i, _)| *i as u64 != bad - 1).map(|(_, l)| l.clone()).collect()
    };
    // replay: every event but the damaged one, a warning naming it, exit 1.
    let o = engram(&data, &["replay", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let printed: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(printed, without(&before_json), "every other event, unchanged");
    assert!(stderr(&o).contains(&format!("warning: {named}: damaged")), "{}", stderr(&o));
    assert!(stderr(&o).contains("engram repair"), "{}", stderr(&o));
    let o = engram(&data, &["replay"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o).lines().count() as u64, head - 1);
    assert!(stderr(&o).contains(&named), "{}", stderr(&o));

    // replay --to <seq-1>: the intact part is fully readable.
    let o = ok(engram(&data, &["replay", "--to", &(bad - 1).to_string(), "--json"]));
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), before_json[..(bad - 1) as usize]);
    // replay --from <seq+1>, inside the damaged segment: reads on, no warning.
    let o = ok(engram(&data, &["replay", "--from", &(bad + 1).to_string(), "--json"]));
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), before_json[bad as usize..]);

    // export: the same.
    let o = engram(&data, &["export"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&named), "{}", stderr(&o));
    let exported: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(exported, without(&before_export));

    // stats, inspect and rebuild go around it.
    let o = engram(&data, &["stats", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["events"], head - 1);
    assert_eq!(v["damaged"], true);
    ok(engram(&data, &["inspect", "sessions"]));
    ok(engram(&data, &["rebuild"]));

    // What writes refuses, naming the damage and the way out.
    let o = engram(&data, &["run", "--once", "what time is it"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&named) && stderr(&o).contains("engram repair"), "{}", stderr(&o));
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&named) && stderr(&o).contains("engram repair"), "{}", stderr(&o));

    // After the damaged segment, replay works again.
    let o = ok(engram(&data, &["replay", "--from", &next_segment.to_string(), "--json"]));
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), before_json[(next_segment - 1) as usize..]);
    assert_eq!(before_json.len() as u64, head);
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The ids in an export, in order.
fn ids(export: &str) -> Vec<String> {
    export.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_owned()).collect()
}

/// One byte flipped in every copy of the frame of the middle record in
/// sled's and the write-ahead files, with no sled in this process (engram has exited): sled
/// keeps older versions of a page until it reclaims them, and `engram
/// repair` would take a good copy from there — here there is none, and
/// sled's own checksum of the pages holding it fails too. A frame is its
/// envelope's deterministic encoding, so `engram export` says what to look
/// for.
fn damage_everywhere(data: &Path) -> u64 {
    let export = stdout(&ok(engram(data, &["export"])));
    let lines: Vec<&str> = export.lines().collect();
    let bad = (lines.len() / 2) as u64;
    let env = engram::events::codec::json::from_line(lines[(bad - 1) as usize]).unwrap();
    assert_eq!(env.seq.0, bad);
    let good = binary::encode(&env);
    let at = FRAME_HEADER_LEN + 8;
    let mut copies = 0;
    // Every copy: sled's files, and the write-ahead files (a retired one,
    // kept for reuse, still holds the records it carried).
    for entry in walk(&data.join("log.sled")).into_iter().chain(walk(&data.join("log.wal"))) {
        let mut bytes = std::fs::read(&entry).unwrap();
        let mut changed = false;
        let mut i = 0;
        while let Some(p) = bytes[i..].windows(good.len()).position(|w| w == good.as_slice()) {
            bytes[i + p + at] ^= 0x01;
            changed = true;
            copies += 1;
            i += p + good.len();
        }
        if changed {
            std::fs::write(&entry, bytes).unwrap();
        }
    }
    assert!(copies >= 1, "the frame is in sled's files");
    bad
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn repair_salvages_every_other_record_and_the_log_verifies_again() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(150, 6)).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));
    let before = ids(&stdout(&ok(engram(&data, &["export"]))));
    let bad = damage_everywhere(&data);

    let o = engram(&data, &["repair", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["lost"], serde_json::json!([{"first": bad, "last": bad}]), "{r}");
    let lost_id = r["lost_ids"][0].as_str().unwrap().to_owned();
    assert_eq!(r["lost_ids"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(lost_id, before[(bad - 1) as usize], "the id the old index had at that seq");
    assert_eq!(r["renumbered_from"], bad + 1);
    assert!(Path::new(r["aside"].as_str().unwrap()).join("log.sled").is_dir(), "{r}");

    // Everything else is there, in order; a derived event among the lost
    // is derived again (at the end).
    ok(engram(&data, &["verify"]));
    let after = ids(&stdout(&ok(engram(&data, &["export"]))));
    let rederived: Vec<String> =
        r["rederived"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    let mut want: Vec<String> = before.iter().filter(|id| **id != lost_id).cloned().collect();
    want.extend(rederived);
    assert_eq!(after, want);
    // The data dir works: stats, and the runtime starts.
    ok(engram(&data, &["stats"]));
    ok(engram(&data, &["run", "--once", "what time is it"]));

    // Nothing more to repair.
    let o = ok(engram(&data, &["repair"]));
    assert!(stdout(&o).contains("nothing to repair"), "{}", stdout(&o));
}

#[test]
fn a_damaged_sled_conf_is_named_and_repair_recovers_every_event() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(60, 3)).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));
    let before = stdout(&ok(engram(&data, &["export"])));
    let conf = data.join("log.sled").join("conf");
    let mut bytes = std::fs::read(&conf).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&conf, bytes).unwrap();

    for cmd in [&["stats"][..], &["export"], &["verify"], &["run", "--once", "hi"]] {
        let o = engram(&data, cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("engram repair") && !stderr(&o).contains("panicked"), "{cmd:?}: {}", stderr(&o));
    }
    let r = json_out(&ok(engram(&data, &["repair", "--json"])));
    assert_eq!(r["ok"], true, "{r}");
    assert!(r["read_with"].as_str().unwrap().contains("raw scan"), "{r}");
    assert_eq!(r["lost"], serde_json::json!([]), "{r}");
    assert_eq!(stdout(&ok(engram(&data, &["export"]))), before, "every event, as it was");
}

#[test]
fn an_interrupted_repair_finishes_when_run_again() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(30, 3)).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));
    let before = stdout(&ok(engram(&data, &["export"])));
    // As a repair leaves the data dir when it stops right after putting
    // the damaged log aside.
    let aside = data.join("damaged-20261123T000000.000Z");
    std::fs::create_dir(&aside).unwrap();
    std::fs::write(aside.join("REPAIRING"), "").unwrap();
    std::fs::rename(data.join("log.sled"), aside.join("log.sled")).unwrap();
    let r = json_out(&ok(engram(&data, &["repair", "--json"])));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(stdout(&ok(engram(&data, &["export"]))), before);
    assert!(!aside.join("REPAIRING").exists());
}

/// One byte flipped at a spread of places across every file of `log.sled`
/// (sled's pages, its snapshot, `conf`), one place at a time: no command
/// panics or hangs; each either works or exits 1 naming a seq or `engram
/// repair`; and `engram repair` then leaves a log that verifies.
#[test]
fn a_flipped_byte_anywhere_in_sleds_files_is_survived() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(90, 3)).unwrap();
    ok(engram(&pristine, &["import", file.to_str().unwrap()]));
    let files = walk(&pristine.join("log.sled"));
    let mut places: Vec<(std::path::PathBuf, usize)> = Vec::new();
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len() as usize;
        if len == 0 {
            continue;
        }
        let n = if f.ends_with("db") { 12 } else { 3 };
        places.extend((0..n).map(|i| (f.strip_prefix(&pristine).unwrap().to_owned(), (len - 1) * i / n.max(2) + 1)));
    }
    let bounded = |data: &Path, args: &[&str]| -> Output {
        Command::new("timeout")
            .arg("120")
            .arg(env!("CARGO_BIN_EXE_engram"))
            .arg("--data")
            .arg(data)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (i, (rel, at)) in places.iter().enumerate() {
        let data = tmp.path().join(format!("flip-{i}"));
        copy_tree(&pristine, &data);
        let target = data.join(rel);
        let mut bytes = std::fs::read(&target).unwrap();
        let at = (*at).min(bytes.len() - 1);
        bytes[at] ^= 0x5a;
        std::fs::write(&target, bytes).unwrap();
        let place = format!("{} byte {at}", rel.display());
        for args in [&["stats"][..], &["export"], &["verify"], &["replay"], &["inspect", "sessions"]] {
            let o = bounded(&data, args);
            let err = stderr(&o);
            assert!(!err.contains("panicked"), "{place}: {args:?} panicked: {err}");
            match o.status.code() {
                Some(0) => {}
                Some(1) => assert!(
                    err.contains("seq") || err.contains("engram repair"),
                    "{place}: {args:?} failed without naming a seq or repair: {err}"
                ),
                other => panic!("{place}: {args:?} exit {other:?}: {err}"),
            }
        }
        let o = bounded(&data, &["repair"]);
        assert_eq!(o.status.code(), Some(0), "{place}: repair: {}{}", stdout(&o), stderr(&o));
        ok(bounded(&data, &["verify"]));
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &target);
        } else if p.is_file() {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

/// `log.sled/db` deleted: damage, not a healthy empty log. `verify` and
/// every read command exit non-zero naming it, nothing starts a new log in
/// its place, and `repair` salvages what the other files hold, listing the
/// rest as lost.
#[test]
fn a_deleted_store_file_is_named_by_every_command_and_repair_salvages_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(60, 3)).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));
    let events = stdout(&ok(engram(&data, &["export"]))).lines().count() as u64;
    std::fs::remove_file(data.join("log.sled").join("db")).unwrap();
    for args in [&["verify"][..], &["export"], &["stats"], &["replay"], &["inspect", "sessions"], &["rebuild"]] {
        let o = engram(&data, args);
        assert!(!o.status.success(), "{args:?} must fail: {}", stdout(&o));
        assert!(stderr(&o).contains("db is missing"), "{args:?}: {}", stderr(&o));
    }
    let o = engram(&data, &["run", "--once", "what time is it"]);
    assert!(!o.status.success(), "no new log in its place: {}", stdout(&o));
    assert!(!data.join("log.sled").join("db").exists(), "nothing written in its place");
    let r = json_out(&ok(engram(&data, &["repair", "--json"])));
    assert_eq!(r["ok"], true, "{r}");
    let lost: u64 = r["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["last"].as_u64().unwrap() - l["first"].as_u64().unwrap() + 1)
        .sum();
    // (Here the other files still hold every frame: nothing is lost.)
    assert_eq!(r["salvaged"].as_u64().unwrap() + lost, events, "every event salvaged or listed lost: {r}");
    ok(engram(&data, &["verify"]));
    ok(engram(&data, &["run", "--once", "what time is it"]));
}

/// `engram repair` killed (SIGKILL) at many points of its run. In between,
/// every command either works on the log as it was (the repair had not
/// begun) or refuses naming the interrupted repair — `run --once` never
/// starts a new log in its place — and the next `repair` leaves exactly
/// what an uninterrupted one does.
#[test]
fn a_repair_killed_anywhere_is_finished_by_the_next_and_nothing_takes_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let damaged = tmp.path().join("damaged");
    let file = tmp.path().join("turns.jsonl");
    std::fs::write(&file, turns(1500, 20)).unwrap();
    ok(engram(&damaged, &["import", file.to_str().unwrap()]));
    damage_everywhere(&damaged);
    // What an uninterrupted repair leaves, and how long it takes.
    let whole = tmp.path().join("whole");
    copy_tree(&damaged, &whole);
    let started = std::time::Instant::now();
    let want = json_out(&ok(engram(&whole, &["repair", "--json"])));
    let took = started.elapsed();
    let want_export = stdout(&ok(engram(&whole, &["export"])));
    let mut interrupted = 0;
    for i in 0..16u32 {
        let data = tmp.path().join(format!("kill-{i}"));
        copy_tree(&damaged, &data);
        let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--data")
            .arg(&data)
            .args(["repair", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(took.mul_f64(f64::from(i) / 14.0));
        child.kill().unwrap();
        child.wait().unwrap();
        let pending = data.join(".repair").exists()
            || std::fs::read_dir(&data).unwrap().flatten().any(|e| e.path().join("REPAIRING").exists());
        if pending {
            interrupted += 1;
            for args in [&["stats"][..], &["export"], &["verify"], &["run", "--once", "what time is it"]] {
                let o = engram(&data, args);
                assert!(!o.status.success(), "kill {i}: {args:?} must refuse: {}", stdout(&o));
                assert!(
                    stderr(&o).contains("a repair was interrupted: run `engram repair`"),
                    "kill {i}: {}",
                    stderr(&o)
                );
            }
        }
        let r = json_out(&ok(engram(&data, &["repair", "--json"])));
        if pending {
            for key in ["lost", "lost_ids", "salvaged", "renumbered_from"] {
                assert_eq!(r[key], want[key], "kill {i}: {key}: {r}");
            }
        }
        assert_eq!(stdout(&ok(engram(&data, &["export"]))), want_export, "kill {i}: the repaired log");
        ok(engram(&data, &["verify"]));
        std::fs::remove_dir_all(&data).unwrap();
    }
    assert!(interrupted >= 3, "the kills hit the repair mid-way ({interrupted} of 16)");
}
