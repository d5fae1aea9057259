//! `engram inspect graph` through the real binary: two sessions of turn
//! records become events (`import::turn_events`), the summariser and graph
//! reactors derive `summary.written` / `graph.*` from them, the envelopes
//! are imported as JSONL, and the graph projection shows the facts — the
//! move from Milan to Rome as a merge that dropped Milan.

use std::path::Path;
use std::process::{Command, Output};

use engram::events::codec::json;
use engram::learning::import::turn_events::{session_ended, turn_end, turn_events};
use engram::learning::import::turn_record::parse_line;
use engram::learning::reactors::{derive_all, GraphReactor, Reactor, SummaryReactor};
use engram::{Envelope, Event};
use serde_json::Value;

fn engram(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram")).arg("--data").arg(data).args(args).output().unwrap()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The events of two sessions, with what the memory reactors derive.
fn envelopes() -> Vec<Envelope> {
    let sessions = [
        (
            "g-1",
            "2026-11-16T10:00:00Z",
            ["My name is Marco and I live in Milan.", "I love jazz. Always answer in Italian."],
        ),
        ("g-2", "2026-11-17T10:00:00Z", ["I live in Rome.", "what time is it"]),
    ];
    let mut events = Vec::new();
    for (session, at, texts) in sessions {
        let mut last = None;
        for (i, text) in texts.iter().enumerate() {
            let line = format!(
                r#"{{"session":"{session}","turn":{},"at":"{at}","text":"{text}","steps":[],"latency_ms":{}}}"#,
                i + 1,
                1000 + 60_000 * i
            );
            let record = parse_line(&line).unwrap();
            events.extend(turn_events(&record, false));
            last = Some(record);
        }
        let last = last.unwrap();
        events.push(session_ended(&last.session, texts.len() as u32, turn_end(&last)));
    }
    let mut reactors: Vec<Box<dyn Reactor>> = vec![Box::new(SummaryReactor::new()), Box::new(GraphReactor::default())];
    derive_all(events, &mut reactors)
}

#[test]
fn inspect_graph_shows_the_facts_by_branch_and_node() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("events.jsonl");
    let events = envelopes();
    assert_eq!(events.iter().filter(|e| matches!(e.event, Event::SummaryWritten(_))).count(), 2);
    let jsonl: String = events.iter().map(|e| json::to_line(e) + "\n").collect();
    std::fs::write(&file, jsonl).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));

    let nodes: Vec<Value> =
        ok(engram(&data, &["inspect", "graph", "--json"])).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let expected = [
        r#"{"branch":"DIRECTIVES","node":"behaviour","facts":["Always answer in Italian"]}"#,
        r#"{"branch":"USER","node":"identity","facts":["My name is Marco"]}"#,
        r#"{"branch":"USER","node":"location","facts":["I live in Rome"]}"#,
        r#"{"branch":"USER","node":"preferences","facts":["I love jazz"]}"#,
    ];
    let expected: Vec<Value> = expected.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(nodes, expected);

    let human = ok(engram(&data, &["inspect", "graph"]));
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines.len(), 6, "{human}");
    assert!(lines[0].starts_with("branch") && lines[0].ends_with("fact"), "{human}");
    assert!(lines[1].starts_with("DIRECTIVES") && lines[1].ends_with("Always answer in Italian"), "{human}");
    assert!(lines[3].starts_with("USER") && lines[3].contains("location") && lines[3].ends_with("I live in Rome"));
    assert!(!human.contains("Milan"), "the move dropped Milan: {human}");
    assert_eq!(lines[5], "4 nodes, 4 facts");

    // The graph is a projection like the others: rebuilt, it has the live digest.
    let stats: Value = serde_json::from_str(&ok(engram(&data, &["stats", "--json"]))).unwrap();
    let live = &stats["projections"]["graph"];
    assert_eq!(live["rows"], 4, "{stats}");
    let rebuilt: Value =
        serde_json::from_str(&ok(engram(&data, &["rebuild", "--projection", "graph", "--json"]))).unwrap();
    assert_eq!(rebuilt["projections"]["graph"]["digest"], live["digest"], "{rebuilt} vs {stats}");
    ok(engram(&data, &["verify"]));
}

#[test]
fn an_empty_graph_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/turns.jsonl");
    ok(engram(&data, &["import", example.to_str().unwrap()]));
    assert_eq!(ok(engram(&data, &["inspect", "graph", "--json"])), "");
    assert!(ok(engram(&data, &["inspect", "graph"])).ends_with("0 nodes, 0 facts\n"));
}

/// `engram forget`: a text retracts the facts holding it (a dry run first
/// appends nothing), asking again finds nothing and exits 1, `rebuild`
/// keeps the retraction, and a session retracts what it taught.
#[test]
fn forget_retracts_facts_and_rebuild_keeps_them_retracted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("events.jsonl");
    let jsonl: String = envelopes().iter().map(|e| json::to_line(e) + "\n").collect();
    std::fs::write(&file, jsonl).unwrap();
    ok(engram(&data, &["import", file.to_str().unwrap()]));
    let facts = |data: &Path| -> String { ok(engram(data, &["inspect", "graph", "--json"])) };
    // The log's events, every one in full: what a dry run must not change.
    // (Not `stats`: its disk bytes move when sled rewrites its snapshot at
    // an open, whatever is appended.)
    let events = |data: &Path| ok(engram(data, &["export"]));
    assert!(facts(&data).contains("I live in Rome"));

    let before = events(&data);
    let dry = ok(engram(&data, &["forget", "rome", "--dry-run"]));
    assert!(dry.contains("would forget USER/location: I live in Rome") && dry.contains("nothing appended"), "{dry}");
    assert_eq!(events(&data), before, "a dry run appends nothing");

    let done: Value = serde_json::from_str(&ok(engram(&data, &["forget", "rome", "--json"]))).unwrap();
    assert_eq!(done["facts"][0]["fact"], "I live in Rome", "{done}");
    assert!(done["seq"].as_u64().is_some(), "{done}");
    assert!(!facts(&data).contains("Rome"));
    assert!(facts(&data).contains("My name is Marco"), "the rest stays");

    let again = engram(&data, &["forget", "Rome"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing the assistant learnt matches \"Rome\""));

    ok(engram(&data, &["rebuild"]));
    assert!(!facts(&data).contains("Rome"), "rebuild keeps it retracted");

    let session = ok(engram(&data, &["forget", "--session", "g-1"]));
    assert!(session.contains("forgot USER/identity: My name is Marco"), "{session}");
    assert!(session.contains("forgot DIRECTIVES/behaviour: Always answer in Italian"), "{session}");
    assert_eq!(facts(&data), "", "g-1 taught everything that was left");
    ok(engram(&data, &["verify"]));

    let bad = engram(&data, &["forget"]);
    assert_eq!(bad.status.code(), Some(2), "clap: say what to forget");
}
