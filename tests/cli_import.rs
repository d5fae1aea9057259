//! `engram import` and its neighbours, through the real binary:
//!
//! * bad input — every kind of bad line is reported as `FILE:LINE: FIELD:`,
//!   exits non-zero, imports nothing and leaves earlier data untouched;
//! * determinism, idempotence and the `export | import -` round trip;
//! * resumability — an import `kill -9`ed part-way completes when run again,
//!   to a log byte-identical with a clean import;
//! * `replay` filters, `stats --json` figures, the data-dir lock, `--help`.
//!
//! Expected figures are computed here from the generator's rules, not read
//! back from the tool.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use rand::Rng;
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_engram"))
}

fn engram(data: &Path, args: &[&str]) -> Output {
    bin().arg("--data").arg(data).args(args).stdin(Stdio::null()).output().unwrap()
}

fn engram_with_stdin(data: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = bin()
        .arg("--data")
        .arg(data)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "exit {:?}\nstderr: {}", o.status, stderr(&o));
    o
}

fn json(o: Output) -> Value {
    let o = ok(o);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

fn json_lines(o: Output) -> Vec<Value> {
    let o = ok(o);
    stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn export(data: &Path) -> Vec<u8> {
    ok(engram(data, &["export"])).stdout
}

/// The counts `engram import --json` reports; its time, rate, peak memory
/// and snapshot time are checked to be there, and left out (they vary).
fn import(data: &Path, file: &Path) -> Value {
    let mut report = json(engram(data, &["import", "--no-memory-index", file.to_str().unwrap(), "--json"]));
    let appended = report["events_appended"].as_u64().unwrap_or(0);
    let fields = report.as_object_mut().unwrap();
    let seconds = fields.remove("seconds").and_then(|v| v.as_f64()).expect("seconds");
    let rate = fields.remove("events_per_second").and_then(|v| v.as_f64()).expect("events_per_second");
    let peak = fields.remove("peak_rss_bytes").and_then(|v| v.as_u64()).expect("peak_rss_bytes");
    fields.remove("snapshots_seconds").expect("snapshots_seconds (null or the seconds it took)");
    assert_eq!(fields.remove("memory_index"), Some(Value::Null), "--no-memory-index");
    assert_eq!(fields.remove("memory_index_seconds"), Some(Value::Null), "--no-memory-index");
    let append = fields.remove("append_seconds").and_then(|v| v.as_f64()).expect("append_seconds");
    fields.remove("append_events_per_second").and_then(|v| v.as_f64()).expect("append_events_per_second");
    assert!(seconds >= 0.0 && peak > 1 << 20, "{seconds} s, {peak} bytes");
    // The whole command holds its append phase (and its start, and the
    // snapshots' fold after it).
    assert!(seconds >= append, "the command's {seconds} s < its append phase's {append} s");
    assert!((appended == 0) == (rate == 0.0), "{appended} events at {rate}/s");
    report
}

fn stats(data: &Path) -> Value {
    json(engram(data, &["stats", "--json"]))
}

fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

// ---------------------------------------------------------------------------
// Turn files with known contents.

/// DESIGN's example record.
const GOOD: &str = r#"{"session":"s-001","turn":1,"at":"2026-11-20T09:15:02Z","text":"download https://example.org/a and describe it","steps":[{"tool":"get_urls","args":{"url":"https://example.org/a"}},{"tool":"describe_entries","args":{"entries":"$0"}}],"model":"ollama:gemma4:26b","planner_ms":11800,"latency_ms":14200,"cost_usd":"0.0012","pricing_version":"2026-11","score":0.9,"score_confidence":0.8,"workload":null,"features":{"intent_tags":["doc"],"tool_names":["get_urls"]}}"#;

/// Record `i` of a generated file over `sessions` interleaved sessions.
struct Rec {
    session: String,
    turn: usize,
    at: DateTime<Utc>,
    planner: bool,
    steps: usize,
    scored: bool,
}

fn rec(i: usize, sessions: usize) -> Rec {
    Rec {
        session: format!("s-{:03}", i % sessions),
        turn: i / sessions + 1,
        at: Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap() + chrono::Duration::seconds(53 * i as i64),
        planner: !i.is_multiple_of(4),
        steps: i % 3,
        scored: i % 5 != 4,
    }
}

/// `n` records; every optional field shows up with and without a value.
fn turns(n: usize, sessions: usize) -> String {
    let mut out = String::with_capacity(n * 300);
    for i in 0..n {
        let r = rec(i, sessions);
        let steps: Vec<String> = (0..r.steps)
            .map(|k| match k {
                0 => format!(r#"{{"tool":"get_urls","args":{{"url":"https://example.org/{i}"}}}}"#),
                _ => r#"{"tool":"describe_entries","args":{"entries":"$0"}}"#.to_owned(),
            })
            .collect();
        let mut line = format!(
            r#"{{"session":"{}","turn":{},"at":"{}","text":"réquest \"{i}\" ✓ {}","steps":[{}]"#,
            r.session,
            r.turn,
            r.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "word ".repeat(i % 11),
            steps.join(",")
        );
        if r.planner {
            line.push_str(&format!(
                r#","model":"ollama:gemma4:26b","planner_ms":{},"cost_usd":"0.00{:02}","pricing_version":"2026-11""#,
                500 + i % 7000,
                i % 100
            ));
        } else if i % 8 == 0 {
            line.push_str(r#","model":null"#);
        }
        line.push_str(&format!(r#","latency_ms":{}"#, 800 + i % 9000));
        if r.scored {
            line.push_str(&format!(r#","score":0.{},"score_confidence":0.{}"#, i % 10, 5 + i % 5));
        }
        if i % 6 == 1 {
            line.push_str(r#","workload":"wl-docs","features":{"intent_tags":["doc"],"has_images":false}"#);
        }
        line.push_str("}\n");
        out.push_str(&line);
    }
    out
}

/// What importing `turns(n, sessions)` into an empty dir must produce.
fn expected_by_kind(n: usize, sessions: usize) -> BTreeMap<String, u64> {
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut add = |k: &str, c: u64| *by_kind.entry(k.to_owned()).or_default() += c;
    let mut days = BTreeSet::new();
    let mut fast_path = FastPathOracle::default();
    for i in 0..n {
        let r = rec(i, sessions);
        for k in ["utterance.received", "intent.judged", "route.decided", "reply.delivered", "turn.completed"] {
            add(k, 1);
        }
        if r.planner {
            add("fastpath.missed", 1);
            add("plan.created", 1);
            add("llm.call_completed", 1);
        } else {
            add("fastpath.hit", 1);
        }
        add("tool.called", r.steps as u64);
        add("tool.completed", r.steps as u64);
        add("eval.completed", r.scored as u64);
        // Each planner turn feeds the pattern store once its session ends.
        add("pattern.recorded", r.planner as u64);
        fast_path.turn(i, &r, &mut add);
        days.insert(r.at.date_naive());
    }
    add("session.ended", sessions.min(n) as u64);
    add("day.activated", days.len() as u64);
    by_kind.retain(|_, v| *v > 0);
    by_kind
}

/// What the fast path learns from the records, by its rules
/// (`learning/src/reactors/fast_path.rs`): a one-step turn (planner or L1)
/// teaches an L1 row, two steps a pipeline; a verdict below the bar
/// (score < 0.5, confidence ≥ 0.6) rejects the row the turn taught; a
/// rejected row is learnt again only from a turn rated ≥ 0.7.
#[derive(Default)]
struct FastPathOracle {
    /// Rows by (layer, canonical text): (rejected, uses, promoted).
    rows: BTreeMap<(bool, String), (bool, u32, bool)>,
}

impl FastPathOracle {
    fn turn(&mut self, i: usize, r: &Rec, add: &mut impl FnMut(&str, u64)) {
        if r.steps == 0 {
            return;
        }
        let text = format!("réquest \"{i}\" ✓ {}", "word ".repeat(i % 11));
        let canonical = engram::learning::fast_path::canonical(&text, r.at.fixed_offset()).0;
        let pipeline = r.steps >= 2;
        let (recorded, rejected) = if pipeline {
            ("pipeline.recorded", "pipeline.rejected")
        } else {
            ("canonical.recorded", "canonical.rejected")
        };
        let learn = |row: &mut (bool, u32, bool), add: &mut dyn FnMut(&str, u64)| {
            *row = (false, if row.0 { 1 } else { row.1 + 1 }, row.2);
            add(recorded, 1);
            if pipeline && row.1 >= 50 && !row.2 {
                row.2 = true;
                add("pipeline.promoted", 1);
            }
        };
        // A pipeline's id holds its arguments, and the records' URLs are in
        // their steps, not their text: every record's pipeline is its own.
        let key = if pipeline { format!("{canonical}#{i}") } else { canonical };
        let row = self.rows.entry((pipeline, key)).or_insert((false, 0, false));
        if !row.0 {
            learn(row, add);
        }
        let (score, confidence) = ((i % 10) as f64 / 10.0, (5 + i % 5) as f64 / 10.0);
        if !r.scored || confidence < 0.6 {
            return;
        }
        if score < 0.5 && !row.0 {
            *row = (true, 0, row.2);
            add(rejected, 1);
        } else if score >= 0.7 && row.0 {
            learn(row, add);
        }
    }
}

fn total(by_kind: &BTreeMap<String, u64>) -> u64 {
    by_kind.values().sum()
}

// ---------------------------------------------------------------------------
// (a) bad input

/// A file whose line 4 is `bad` (line 2 is blank: line numbers are the
/// file's own).
fn with_bad_line_4(bad: &str) -> String {
    let other = |s: &str, t: u32| {
        GOOD.replace("\"s-001\"", &format!("\"{s}\"")).replace("\"turn\":1", &format!("\"turn\":{t}"))
    };
    format!("{}\n\n{}\n{bad}\n{}\n", other("s-a", 1), other("s-a", 2), other("s-b", 1))
}

/// Imports a good file, then `bad`; checks the rejection and that the good
/// data is untouched. Returns stderr.
fn rejected(bad: &str, line: usize, field: &str, why: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let good = write(tmp.path(), "good.jsonl", turns(30, 3));
    import(&data, &good);
    let before = export(&data);
    // Disk figures move with every open; the rest must not.
    let logical = |mut s: Value| {
        for k in ["disk_bytes", "disk_overhead"] {
            s.as_object_mut().unwrap().remove(k);
        }
        s
    };
    let before_stats = logical(stats(&data));

    let file = write(tmp.path(), "bad.jsonl", bad);
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(!o.status.success(), "a bad file is an error:\n{err}");
    assert_eq!(o.status.code(), Some(1));
    let prefix = format!("{}:{line}: {field}: ", file.display());
    let reported = err.lines().find(|l| l.contains(&prefix));
    let reported = reported.unwrap_or_else(|| panic!("expected {prefix:?} on stderr:\n{err}"));
    assert!(reported.contains(why), "expected {why:?} in {reported:?}");
    assert!(err.contains("nothing imported"), "{err}");
    assert!(o.stdout.is_empty(), "no success line on stdout: {}", stdout(&o));
    assert_eq!(export(&data), before, "a rejected import changes nothing");
    assert_eq!(logical(stats(&data)), before_stats);

    // Into an empty dir: nothing at all is created.
    let empty = tmp.path().join("empty");
    let o = engram(&empty, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), err, "the same report whatever the data dir");
    if empty.exists() {
        assert_eq!(stats(&empty)["events"], 0, "a rejected import appends nothing");
    }
    err
}

#[test]
fn truncated_line() {
    rejected(&with_bad_line_4(&GOOD[..GOOD.len() - 60]), 4, "-", "invalid JSON");
}

#[test]
fn wrong_types() {
    rejected(&with_bad_line_4(&GOOD.replace("\"turn\":1", "\"turn\":\"1\"")), 4, "turn", "expected an integer");
    rejected(&with_bad_line_4(&GOOD.replace("\"turn\":1", "\"turn\":0")), 4, "turn", ">= 1");
    rejected(&with_bad_line_4(&GOOD.replace("\"latency_ms\":14200", "\"latency_ms\":-3")), 4, "latency_ms", ">= 0");
    rejected(
        &with_bad_line_4(&GOOD.replace("\"cost_usd\":\"0.0012\"", "\"cost_usd\":0.0012")),
        4,
        "cost_usd",
        "decimal",
    );
    rejected(&with_bad_line_4(r#"["not","an","object"]"#), 4, "-", "expected a JSON object");
}

#[test]
fn unknown_and_missing_fields() {
    rejected(&with_bad_line_4(&GOOD.replace("\"workload\":null", "\"mood\":\"happy\"")), 4, "mood", "unknown field");
    rejected(&with_bad_line_4(&GOOD.replace("\"tool_names\"", "\"tools\"")), 4, "features.tools", "unknown field");
    rejected(&with_bad_line_4(&GOOD.replace("\"text\":\"download", "\"txt\":\"download")), 4, "text", "missing");
    rejected(&with_bad_line_4(&GOOD.replace("{\"tool\":\"describe_entries\",", "{")), 4, "steps[1].tool", "missing");
}

#[test]
fn bad_decimal_timestamp_and_scores() {
    rejected(&with_bad_line_4(&GOOD.replace("0.0012", "0.00.1")), 4, "cost_usd", "not a decimal");
    rejected(&with_bad_line_4(&GOOD.replace("2026-11-20T09:15:02Z", "2026-13-45T09:15:02Z")), 4, "at", "RFC 3339");
    rejected(&with_bad_line_4(&GOOD.replace("2026-11-20T09:15:02Z", "yesterday")), 4, "at", "RFC 3339");
    rejected(&with_bad_line_4(&GOOD.replace("\"score\":0.9", "\"score\":1.5")), 4, "score", "[0, 1]");
    let err = rejected(
        &with_bad_line_4(&GOOD.replace("\"score_confidence\":0.8", "\"score_confidence\":-0.1")),
        4,
        "score_confidence",
        "[0, 1]",
    );
    assert_eq!(err.lines().filter(|l| l.contains("bad.jsonl:4:")).count(), 1, "only the bad field:\n{err}");
}

#[test]
fn every_bad_field_of_a_line_is_listed() {
    let bad = GOOD.replace("\"turn\":1", "\"turn\":\"x\"").replace("\"score\":0.9", "\"score\":7");
    let err = rejected(&with_bad_line_4(&bad), 4, "turn", "expected an integer");
    assert!(err.contains("bad.jsonl:4: score: "), "{err}");
}

#[test]
fn duplicate_session_turn() {
    // Line 4 repeats line 3's (session, turn).
    let file = with_bad_line_4(&GOOD.replace("\"s-001\"", "\"s-a\"").replace("\"turn\":1", "\"turn\":2"));
    rejected(&file, 4, "turn", "already at line 3");
}

#[test]
fn binary_garbage_and_empty_files() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut rng = rand::rng();
    // Random bytes, none of them a newline or valid UTF-8 on their own.
    let garbage: Vec<u8> = (0..2048).map(|_| rng.random_range(0x80..=0xff)).collect();
    let file = write(tmp.path(), "garbage.bin", &garbage);
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let prefix = format!("{}:1: -: not UTF-8", file.display());
    assert!(stderr(&o).contains(&prefix), "expected {prefix:?}:\n{}", stderr(&o));
    assert!(stderr(&o).len() < 2000, "the garbage is not echoed back: {} bytes", stderr(&o).len());

    // Garbage after good lines, several lines of it.
    let mut mixed = format!("{GOOD}\n").into_bytes();
    mixed.extend(&garbage[..100]);
    mixed.push(b'\n');
    mixed.extend(b"\x00\x01\x02\x03\n");
    let file = write(tmp.path(), "mixed.jsonl", &mixed);
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&format!("{}:2: -: not UTF-8", file.display())), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{}:3: -: invalid JSON", file.display())), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 invalid line(s)"), "{}", stderr(&o));

    for (name, text) in [("empty.jsonl", ""), ("blank.jsonl", "\n  \n\r\n\t\n")] {
        let file = write(tmp.path(), name, text);
        let o = engram(&data, &["import", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert!(stderr(&o).contains(&format!("{}: empty file", file.display())), "{name}: {}", stderr(&o));
    }
    let missing = tmp.path().join("no-such-file.jsonl");
    let o = engram(&data, &["import", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&missing.display().to_string()), "{}", stderr(&o));
    assert!(!data.exists(), "rejected imports create no data dir");
}

#[test]
fn only_the_first_20_bad_lines_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    // 50 lines: odd lines good, even lines with a bad `turn`: 25 bad lines.
    let mut text = String::new();
    for i in 1..=50 {
        let line = GOOD.replace("\"s-001\"", &format!("\"s-{i}\""));
        if i % 2 == 0 {
            text.push_str(&line.replace("\"turn\":1", "\"turn\":-1"));
        } else {
            text.push_str(&line);
        }
        text.push('\n');
    }
    let file = write(tmp.path(), "bad.jsonl", &text);
    let data = tmp.path().join("data");
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let listed: Vec<usize> =
        err.lines().filter_map(|l| l.split_once("bad.jsonl:")?.1.split(':').next()?.parse().ok()).collect();
    assert_eq!(listed, (1..=20).map(|k| 2 * k).collect::<Vec<_>>(), "the first 20 bad lines, in order:\n{err}");
    assert!(err.lines().all(|l| !l.contains("bad.jsonl:42:")), "{err}");
    assert!(err.contains("and 5 more invalid lines"), "{err}");
    assert!(err.contains("25 invalid line(s); nothing imported"), "{err}");
    assert!(!data.exists());
}

// ---------------------------------------------------------------------------
// (b) determinism, (c) idempotence, (d) export | import -, (g) stats

#[test]
fn deterministic_idempotent_round_trip_and_stats() {
    let (n, sessions) = (600, 12);
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "turns.jsonl", turns(n, sessions));
    let by_kind = expected_by_kind(n, sessions);
    let events = total(&by_kind);
    let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));

    let first = import(&a, &file);
    assert_eq!(first, serde_json::json!({"imported_turns": n, "skipped_existing": 0, "events_appended": events}));
    assert_eq!(import(&b, &file), first);
    let export_a = export(&a);
    assert_eq!(export_a.iter().filter(|&&c| c == b'\n').count() as u64, events, "one line per event");
    assert!(export_a == export(&b), "two empty dirs, one file: byte-identical exports");

    // Again: nothing new, nothing changed.
    let again = import(&a, &file);
    assert_eq!(again, serde_json::json!({"imported_turns": 0, "skipped_existing": n, "events_appended": 0}));
    assert!(export(&a) == export_a, "a second import changes nothing");
    // Human output says the same.
    let human = stdout(&ok(engram(&a, &["import", "--no-memory-index", file.to_str().unwrap()])));
    assert!(
        human.contains("imported 0 turns (0 events)") && human.contains(&format!("{n} already present")),
        "{human}"
    );

    // export | import - into an empty dir reproduces the export...
    let piped = engram_with_stdin(&c, &["import", "-", "--json"], &export_a);
    let piped: Value = serde_json::from_slice(&ok(piped).stdout).unwrap();
    assert_eq!(piped["events_appended"], events);
    assert_eq!(piped["imported_turns"], n, "{piped}");
    assert!(export(&c) == export_a, "export | import - round-trips byte for byte");
    // ... and into the original dir adds nothing.
    let onto_itself: Value =
        serde_json::from_slice(&ok(engram_with_stdin(&a, &["import", "-", "--json"], &export_a)).stdout).unwrap();
    assert_eq!(onto_itself["events_appended"], 0);
    assert_eq!(onto_itself["skipped_existing"], events);

    // stats --json, against the generator's rules.
    let s = stats(&a);
    for key in ["events", "sessions", "turns", "by_kind", "disk_bytes", "projections"] {
        assert!(s.get(key).is_some(), "stats --json has {key:?}: {s}");
    }
    assert_eq!(s["events"], events);
    assert_eq!(s["sessions"], sessions);
    assert_eq!(s["turns"], n);
    let got: BTreeMap<String, u64> = serde_json::from_value(s["by_kind"].clone()).unwrap();
    assert_eq!(got, by_kind);
    let record_bytes = s["record_bytes"].as_u64().unwrap();
    let disk_bytes = s["disk_bytes"].as_u64().unwrap();
    assert!(record_bytes > events * 100, "{record_bytes} bytes of records");
    assert!(disk_bytes > record_bytes && disk_bytes < record_bytes * 50, "{disk_bytes} on disk for {record_bytes}");
    let days = by_kind["day.activated"];
    assert_eq!(s["projections"]["sessions"]["rows"], sessions);
    assert_eq!(s["projections"]["active_days"]["rows"], days);
    for p in ["sessions", "active_days"] {
        assert_eq!(s["projections"][p]["last_seq"], events, "{p} caught up");
    }
    // The second dir has the same projections, digests included.
    assert_eq!(stats(&c)["projections"], s["projections"]);
    assert_eq!(json(engram(&a, &["verify", "--json"]))["ok"], true);
}

// ---------------------------------------------------------------------------
// (e) resumable

/// Starts `engram import FILE` and kills it (SIGKILL) `delay` after it has
/// opened the log (validation is over, appending has begun), or after
/// `delay` from the start when `from_open` is false.
fn killed_import(data: &Path, file: &Path, delay: Duration, from_open: bool) {
    let mut child: Child = bin()
        .arg("--data")
        .arg(data)
        .args(["import", "--no-memory-index", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    if from_open {
        // Wait for the appends to start: the log file grows past what
        // opening wrote (the import checks and dry-runs the file first).
        let db = data.join("log.sled").join("db");
        let size = || std::fs::metadata(&db).map_or(0, |m| m.len());
        let mut opened_at = None;
        loop {
            assert!(started.elapsed() < Duration::from_secs(120), "the import never appended");
            if child.try_wait().unwrap().is_some() {
                break;
            }
            match opened_at {
                None if db.exists() => opened_at = Some(size()),
                Some(at) if size() > at + 256 * 1024 => break,
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    std::thread::sleep(delay);
    child.kill().unwrap();
    child.wait().unwrap();
}

fn events_in(data: &Path) -> u64 {
    if data.join("log.sled").exists() {
        stats(data)["events"].as_u64().unwrap()
    } else {
        0
    }
}

#[test]
fn an_import_killed_part_way_completes_on_rerun() {
    let (n, sessions) = (5000, 200);
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "turns.jsonl", turns(n, sessions));
    let full = total(&expected_by_kind(n, sessions));

    let clean = tmp.path().join("clean");
    let started = Instant::now();
    let stats_clean = import(&clean, &file);
    let import_time = started.elapsed();
    assert_eq!(stats_clean["events_appended"], full);
    let reference = export(&clean);

    let mut rng = rand::rng();
    let mut mid_way = 0;
    let append_ms = import_time.as_millis() as u64;
    for attempt in 0..3 {
        let data = tmp.path().join(format!("killed-{attempt}"));
        // Attempt 0 dies at a random early moment (maybe still validating);
        // the others once the appends have started, at a random point of
        // them. The appends are under half of an import (it converts every
        // record in its dry run first), so the point is within a tenth.
        let (delay, from_open) = if attempt == 0 {
            (Duration::from_millis(rng.random_range(0..=append_ms / 3)), false)
        } else {
            (Duration::from_millis(rng.random_range(0..=append_ms / 10)), true)
        };
        killed_import(&data, &file, delay, from_open);
        let mut partial = events_in(&data);
        assert!(partial <= full);
        if partial > 0 && partial < full {
            mid_way += 1;
            // What is there is a prefix of the clean log.
            assert_eq!(json(engram(&data, &["verify", "--json"]))["ok"], true);
        }
        if attempt == 2 && partial < full {
            // Kill the resumed import too.
            killed_import(&data, &file, Duration::from_millis(rng.random_range(0..=append_ms / 10)), true);
            let again = events_in(&data);
            assert!(again >= partial, "a second kill loses nothing acknowledged");
            partial = again;
        }
        eprintln!("resumable: attempt {attempt} killed at {partial}/{full} events (clean import {import_time:?})");
        let resumed = import(&data, &file);
        assert_eq!(resumed["events_appended"].as_u64().unwrap() + partial, full, "{resumed}");
        assert_eq!(
            resumed["imported_turns"].as_u64().unwrap() + resumed["skipped_existing"].as_u64().unwrap(),
            n as u64
        );
        assert!(
            export(&data) == reference,
            "attempt {attempt} (killed at {partial}/{full} events): the resumed import equals a clean one"
        );
    }
    assert!(mid_way >= 1, "at least one import was killed part-way (0 < events < {full})");
}

// ---------------------------------------------------------------------------
// (f) replay

#[test]
fn replay_filters() {
    let (n, sessions) = (240, 8);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    import(&data, &write(tmp.path(), "turns.jsonl", turns(n, sessions)));
    let all = json_lines(engram(&data, &["replay", "--json"]));
    let events = total(&expected_by_kind(n, sessions));
    assert_eq!(all.len() as u64, events);
    let seqs = |v: &[Value]| v.iter().map(|e| e["seq"].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!(seqs(&all), (1..=events).collect::<Vec<_>>());

    let ended = json_lines(engram(&data, &["replay", "--kind", "session.*", "--json"]));
    assert_eq!(ended.len(), sessions);
    assert!(ended.iter().all(|e| e["kind"] == "session.ended"), "{ended:?}");
    let ended_sessions: BTreeSet<&str> = ended.iter().map(|e| e["session"].as_str().unwrap()).collect();
    assert_eq!(ended_sessions.len(), sessions);

    // Several globs; the same as filtering the full replay.
    let some = json_lines(engram(&data, &["replay", "--kind", "tool.*", "--kind", "plan.created", "--json"]));
    let want: Vec<&Value> = all
        .iter()
        .filter(|e| e["kind"].as_str().unwrap().starts_with("tool.") || e["kind"] == "plan.created")
        .collect();
    assert_eq!(some.iter().collect::<Vec<_>>(), want);

    let window = json_lines(engram(&data, &["replay", "--from", "17", "--to", "42", "--json"]));
    assert_eq!(seqs(&window), (17..=42).collect::<Vec<_>>());
    assert_eq!(window, all[16..42]);
    let from_only = json_lines(engram(&data, &["replay", "--from", &(events - 4).to_string(), "--json"]));
    assert_eq!(seqs(&from_only), (events - 4..=events).collect::<Vec<_>>());
    let beyond = ok(engram(&data, &["replay", "--from", &(events + 10).to_string()]));
    assert!(beyond.stdout.is_empty());

    let s3 = json_lines(engram(&data, &["replay", "--session", "s-003", "--json"]));
    let want: Vec<&Value> = all.iter().filter(|e| e["session"] == "s-003").collect();
    assert!(want.len() > n / sessions * 6, "{}", want.len());
    assert_eq!(s3.iter().collect::<Vec<_>>(), want);
    let combined =
        json_lines(engram(&data, &["replay", "--session", "s-003", "--kind", "turn.*", "--from", "100", "--json"]));
    let want: Vec<&Value> = all
        .iter()
        .filter(|e| e["session"] == "s-003" && e["kind"] == "turn.completed" && e["seq"].as_u64().unwrap() >= 100)
        .collect();
    assert_eq!(combined.iter().collect::<Vec<_>>(), want);
    assert!(!want.is_empty());
    assert!(ok(engram(&data, &["replay", "--session", "no-such-session"])).stdout.is_empty());

    // Human lines: one per event, starting with its seq.
    let human = stdout(&ok(engram(&data, &["replay", "--to", "5"])));
    let firsts: Vec<&str> = human.lines().map(|l| l.split_whitespace().next().unwrap()).collect();
    assert_eq!(firsts, ["1", "2", "3", "4", "5"]);

    for (glob, message) in [("sesion.*", "matches no event kind"), ("[abc", "--kind")] {
        let o = engram(&data, &["replay", "--kind", glob]);
        assert_eq!(o.status.code(), Some(1), "{glob}");
        assert!(stderr(&o).contains(message) && stderr(&o).contains(glob), "{glob}: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    // The error lists the kinds there are.
    assert!(stderr(&engram(&data, &["replay", "--kind", "nope"])).contains("session.ended"));
}

// ---------------------------------------------------------------------------
// (h) the data-dir lock

#[test]
fn a_data_dir_in_use_is_a_clear_error_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write(tmp.path(), "t.jsonl", turns(20, 2));
    import(&data, &file);
    let owner = engram::SledLog::open(&data, Default::default()).expect("the test holds the data dir");
    let started = Instant::now();
    let commands: Vec<Vec<&str>> = vec![
        vec!["import", file.to_str().unwrap()],
        vec!["export"],
        vec!["replay"],
        vec!["stats"],
        vec!["verify"],
        vec!["rebuild"],
    ];
    let children: Vec<(Vec<&str>, Child)> = commands
        .into_iter()
        .map(|args| {
            let child = bin()
                .arg("--data")
                .arg(&data)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (args, child)
        })
        .collect();
    for (args, mut child) in children {
        // A bounded wait: a hang fails the test instead of blocking it.
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("`engram {}` hangs on a data dir in use", args.join(" "));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains("data dir in use"), "{args:?}: {err}");
        assert!(err.contains(&format!("pid {}", std::process::id())), "names the holder: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    drop(owner);
    // Released: the dir works again, with its data.
    assert_eq!(stats(&data)["turns"], 20);
}

// ---------------------------------------------------------------------------
// (i) --help

/// The subcommand names listed under `Commands:` in a help text.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_has_help() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let top = stdout(&ok(engram(&data, &["--help"])));
    assert!(top.contains("Usage: engram"), "{top}");
    let commands = subcommands(&top);
    for c in ["import", "export", "replay", "verify", "stats"] {
        assert!(commands.iter().any(|x| x == c), "`{c}` in engram --help:\n{top}");
    }
    let mut checked = 0;
    let mut queue: Vec<Vec<String>> = commands.into_iter().map(|c| vec![c]).collect();
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = stdout(&ok(engram(&data, &args)));
        let usage = format!("Usage: engram {}", path.join(" "));
        assert!(help.contains(&usage), "{path:?}: expected {usage:?} in:\n{help}");
        assert!(help.contains("--data <DIR>"), "{path:?}: the global --data is documented:\n{help}");
        // `engram help CMD` says the same.
        let mut via_help = vec!["help"];
        via_help.extend(path.iter().map(String::as_str));
        assert_eq!(stdout(&ok(engram(&data, &via_help))), help, "{path:?}");
        for sub in subcommands(&help) {
            let mut deeper = path.clone();
            deeper.push(sub);
            queue.push(deeper);
        }
        checked += 1;
    }
    assert!(checked >= 8, "{checked} commands");
    assert!(!data.exists(), "--help touches no data dir");
    // An unknown subcommand is a usage error (clap: exit 2).
    let o = engram(&data, &["imprt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("imprt"), "{}", stderr(&o));
}

/// Runs `engram` to the end and returns whether it succeeded, its stderr
/// and its own peak RSS in KiB (wait4 on its pid: that child's figure,
/// not the largest of every child this test process ever had).
#[allow(clippy::zombie_processes, reason = "reaped by wait4, which also gives its rusage")]
fn engram_peak_rss(data: &Path, args: &[&str]) -> (bool, String, i64) {
    use std::io::Read;
    let mut child = bin()
        .arg("--data")
        .arg(data)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 writes it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, err, usage.ru_maxrss)
}

/// A file is never held whole: a 256 MiB line is refused (as too long)
/// without being read into memory. (Peak memory of a million-event import
/// is measured in docs/performance.md.)
#[test]
fn import_memory_does_not_follow_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let huge = tmp.path().join("huge.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&huge).unwrap());
        f.write_all(br#"{"session":"s","turn":1,"at":"2026-11-23T10:00:00Z","steps":[],"text":""#).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..256 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\"}\n").unwrap();
    }
    let (ok, err, peak_kib) = engram_peak_rss(&tmp.path().join("a"), &["import", huge.to_str().unwrap()]);
    assert!(!ok && err.contains("huge.jsonl:1: -: longer than 1048576 bytes"), "{err}");
    assert!(peak_kib < 128 * 1024, "peak RSS {peak_kib} KiB for a 256 MiB line");
}

/// A big import leaves the actors' snapshots folded up to its last event,
/// appending nothing of its own, so the first `run` after it folds none of
/// the history; `--no-snapshots` leaves them to that first start.
#[test]
fn a_big_import_prepares_the_actors_snapshots_and_appends_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "turns.jsonl", turns(60, 6));
    let prepare = |data: &Path, extra: &[&str]| {
        let mut args = vec![
            "--data".as_ref(),
            data.as_os_str(),
            "import".as_ref(),
            "--no-memory-index".as_ref(),
            file.as_os_str(),
            "--json".as_ref(),
        ];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        json(ok(bin().args(args).env("ENGRAM_RUNTIME_SNAPSHOT_EVERY", "64").stdin(Stdio::null()).output().unwrap()))
    };
    let data = dir.path().join("data");
    let report = prepare(&data, &[]);
    assert!(report["snapshots_seconds"].is_number(), "{report}");
    let s = stats(&data);
    assert_eq!(s["head_seq"], report["events_appended"], "preparing the snapshots appended nothing");
    let owners: BTreeSet<&str> =
        s["snapshots"].as_array().unwrap().iter().map(|o| o["owner"].as_str().unwrap()).collect();
    let all =
        ["graph", "judge", "listener", "memory", "pattern_store", "planner", "reply_loop", "router", "summariser"];
    assert_eq!(owners, all.into_iter().collect(), "{s}");
    for o in s["snapshots"].as_array().unwrap() {
        assert_eq!(o["seq"], s["head_seq"], "{o}: folded up to the import's last event");
    }

    let bare = dir.path().join("bare");
    let report = prepare(&bare, &["--no-snapshots"]);
    assert!(report["snapshots_seconds"].is_null(), "{report}");
    assert!(stats(&bare)["snapshots"].as_array().unwrap().is_empty());

    // An actor left behind by an earlier run (a crash) has live work to do:
    // an offline start in the import must not do it in its place.
    {
        let db = sled::open(data.join("log.sled")).unwrap();
        db.open_tree("projection.actor_checkpoints").unwrap().insert("router", &1u64.to_be_bytes()).unwrap();
        db.flush().unwrap();
    }
    let more = write(dir.path(), "more.jsonl", turns(60, 6).replace("\"session\":\"s-", "\"session\":\"t-"));
    let out = bin()
        .args([
            "--data".as_ref(),
            data.as_os_str(),
            "import".as_ref(),
            "--no-memory-index".as_ref(),
            more.as_os_str(),
            "--json".as_ref(),
        ])
        .env("ENGRAM_RUNTIME_SNAPSHOT_EVERY", "64")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = json(ok(out.clone()));
    assert!(report["events_appended"].as_u64().unwrap() >= 64, "{report}");
    assert!(report["snapshots_seconds"].is_null(), "{report}");
    assert!(stderr(&out).contains("work left from an earlier run"), "{}", stderr(&out));
}

/// A FIFO is read once (it cannot be read again for the later passes) and
/// imported whole, like standard input.
#[test]
fn a_fifo_is_read_once_and_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let fifo = tmp.path().join("turns.fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let text = turns(30, 3);
    let writer = {
        let (fifo, text) = (fifo.clone(), text.clone());
        // One writer, as a shell's `engram import <(…)` has.
        std::thread::spawn(move || std::fs::write(&fifo, text).unwrap())
    };
    let started = Instant::now();
    let r = import(&data, &fifo);
    writer.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(r["imported_turns"], 30, "{r}");
    let plain = tmp.path().join("plain");
    import(&plain, &write(tmp.path(), "turns.jsonl", &text));
    assert_eq!(export(&data), export(&plain), "the same log as from a file");
}

/// A record with the session, turn and time of a stored one but other
/// content is an error naming its line and the stored seq — never dropped
/// as "already present" — and nothing is appended.
#[test]
fn a_conflicting_record_is_an_error_not_already_present() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let first = r#"{"session":"s-1","turn":1,"at":"2026-11-20T09:15:02Z","text":"what time is it","steps":[{"tool":"get_now"}]}"#;
    import(&data, &write(tmp.path(), "a.jsonl", format!("{first}\n")));
    let before = export(&data);
    // The same record again: already present, fine.
    let again = import(&data, &write(tmp.path(), "b.jsonl", format!("{first}\n")));
    assert_eq!(again["skipped_existing"], 1, "{again}");
    for (other, what) in [
        (first.replace("what time is it", "what day is it"), "its text differs"),
        (first.replace("get_now", "get_date"), "its steps, model, cost or times differ"),
    ] {
        let file = write(tmp.path(), "c.jsonl", format!("{other}\n"));
        let o = engram(&data, &["import", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let e = stderr(&o);
        assert!(e.contains("c.jsonl:1: turn:") && e.contains("already in the log (seq ") && e.contains(what), "{e}");
        assert_eq!(export(&data), before, "nothing appended");
    }
}

/// `[storage] durability` is checked by import as by `run`, from the file
/// and from the environment; a data dir path that is a file says so.
#[test]
fn import_checks_storage_settings_and_the_data_dir_path() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let file = write(tmp.path(), "t.jsonl", turns(3, 1));
    let o = bin()
        .arg("--data")
        .arg(&data)
        .args(["import", file.to_str().unwrap()])
        .env("ENGRAM_STORAGE_DURABILITY", "bogus")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("durability") && stderr(&o).contains("bogus"), "{}", stderr(&o));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("engram.toml"), "[storage]\ndurability = \"yolo\"\n").unwrap();
    let o = engram(&data, &["import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("\"yolo\""), "{}", stderr(&o));
    assert!(!data.join("log.sled").exists(), "nothing created");
    let a_file = write(tmp.path(), "not-a-dir", "x");
    for args in [&["import", file.to_str().unwrap()][..], &["stats"]] {
        let o = engram(&a_file, args);
        assert_eq!(o.status.code(), Some(1));
        assert!(
            stderr(&o).contains("not a directory") && stderr(&o).contains("a file is there"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// Issue 41 item 5: conversations imported as turn records are indexed for
/// recall — by `engram memory index`, or by the import itself — once: a
/// second run appends nothing, and a later question is answered from what
/// was said in them.
#[test]
fn imported_conversations_are_indexed_for_recall_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("turns.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"session":"s-1","turn":1,"at":"2026-11-20T10:00:00Z","text":"the outer box had seven crushed corners when it arrived","steps":[],"latency_ms":900}"#,
            "\n",
            r#"{"session":"s-1","turn":2,"at":"2026-11-20T10:01:00Z","text":"la chiamata con Jacob è spostata a mercoledì","steps":[],"latency_ms":900}"#,
            "\n",
            r#"{"session":"s-2","turn":1,"at":"2026-11-21T09:00:00Z","text":"remind me to water the basil","steps":[],"latency_ms":900}"#,
            "\n",
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();

    // Left for later: nothing indexed, then the command indexes every turn, once.
    let later = dir.path().join("later");
    let report = json(engram(&later, &["import", file, "--no-memory-index", "--json"]));
    assert_eq!(report["memory_index"], Value::Null);
    let first = json(engram(&later, &["memory", "index", "--json"]));
    assert_eq!((first["turns"].as_u64(), first["turns_indexed"].as_u64()), (Some(3), Some(3)), "{first}");
    assert_eq!((first["passages"].as_u64(), first["without_vectors"].as_u64()), (Some(3), Some(0)), "{first}");
    let head = |data: &Path| json(engram(data, &["stats", "--json"]))["events"].clone();
    let before = head(&later);
    let second = json(engram(&later, &["memory", "index", "--json"]));
    assert_eq!((second["already_indexed"].as_u64(), second["turns_indexed"].as_u64()), (Some(3), Some(0)));
    assert_eq!(head(&later), before, "a second run appends nothing");
    // What was said in the imported conversation answers a later question.
    let o = ok(engram(&later, &["run", "--offline", "--once", "how many corners of the box were crushed?"]));
    assert!(stdout(&o).contains("seven crushed corners"), "{}", stdout(&o));

    // By the import itself; an import of the same file again adds nothing.
    let at_once = dir.path().join("at-once");
    let report = json(engram(&at_once, &["import", file, "--json"]));
    assert_eq!(report["memory_index"]["turns_indexed"].as_u64(), Some(3), "{report}");
    let again = json(engram(&at_once, &["import", file, "--json"]));
    assert_eq!(again["memory_index"]["already_indexed"].as_u64(), Some(3), "{again}");
    assert_eq!(again["memory_index"]["turns_indexed"].as_u64(), Some(0), "{again}");
}
