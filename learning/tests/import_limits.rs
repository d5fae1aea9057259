//! Import on extreme input: every record that passes validation imports
//! without a panic (and folds into every projection without one), and a
//! file with any bad line — at validation, against the log, or in the dry
//! run — appends nothing.

use std::path::Path;

use engram_events::{Event, EventKind, Seq};
use engram_learning::import::{self, turn_events, turn_record, ImportError};
use engram_learning::projections;
use engram_learning::reactors::Reactor;
use engram_local_state::projector::Projector;
use engram_storage::{EventLog, ImportSource, LogConfig, SledLog};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The reactors `engram import` runs, warmed from `projector`.
fn reactors(projector: &Projector) -> Vec<Box<dyn Reactor>> {
    import::reactors(projector, &Default::default(), &Default::default())
}

fn import_file(log: &SledLog, path: &Path) -> Result<import::ImportStats, ImportError> {
    let plan = import::validate(path, ImportSource::open(path)?)?;
    let mut projector = Projector::in_memory(projections::all());
    projector.catch_up(log, |_, _| {}).unwrap();
    import::run(&plan, log, &projector, reactors, |_| {})
}

fn write(dir: &Path, name: &str, records: &[Value]) -> std::path::PathBuf {
    let path = dir.join(name);
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn record(session: &str, turn: u64, at: &str, text: &str) -> Value {
    json!({"session": session, "turn": turn, "at": at, "text": text, "steps": [], "model": "m1", "cost_usd": "0.01"})
}

/// A record with every field at a limit that validation accepts.
fn extreme_record() -> impl Strategy<Value = Value> {
    let ms = prop::sample::select(vec![0u64, 1, 86_400_000, turn_record::limits::MAX_DURATION_MS]);
    let at = prop::sample::select(vec![
        "1970-01-01T00:00:00Z",
        "9999-12-24T00:00:00Z",
        "2026-11-23T10:00:00+14:00",
        "2026-11-23T10:00:00-12:00",
    ]);
    let cost = prop::sample::select(vec!["0", "0.0000005", "1000000", "-0"]);
    let turn = prop::sample::select(vec![1u64, 2, u32::MAX as u64]);
    let steps = prop::sample::select(vec![0usize, 1, 2, turn_record::limits::MAX_STEPS]);
    let text = prop::sample::select(vec![
        "what time is it tomorrow".to_owned(),
        "the day after tomorrow at https://example.org/x".to_owned(),
        String::new(),
        "x".repeat(turn_record::limits::MAX_TEXT_BYTES),
    ]);
    let score = prop::sample::select(vec![None, Some(0.0), Some(1.0)]);
    let model = prop::sample::select(vec![None, Some("ollama:m1"), Some("ollama:m2")]);
    let session = prop::sample::select(vec!["s-1", "s-2", "s-0"]);
    (session, turn, at, text, steps, model, ms.clone(), ms, cost, score).prop_map(
        |(session, turn, at, text, steps, model, planner_ms, latency_ms, cost, score)| {
            let steps: Vec<Value> = (0..steps)
                .map(|i| {
                    let tool = if i % 2 == 0 { "read_file" } else { "send_email" };
                    json!({"tool": tool, "args": {"path": format!("/tmp/{i}.pdf")}})
                })
                .collect();
            json!({
                "session": session, "turn": turn, "at": at, "text": text, "steps": steps, "model": model,
                "planner_ms": planner_ms, "latency_ms": latency_ms, "cost_usd": cost, "score": score,
            })
        },
    )
}

/// A field set to a value just past a limit (or far past it).
fn beyond_a_limit() -> impl Strategy<Value = (&'static str, Value)> {
    prop::sample::select(vec![
        ("latency_ms", json!(turn_record::limits::MAX_DURATION_MS + 1)),
        ("planner_ms", json!(u64::MAX)),
        ("latency_ms", json!(i64::MAX)),
        ("at", json!("1969-12-31T23:59:59Z")),
        ("at", json!("0001-01-01T00:00:00Z")),
        ("at", json!("9999-12-31T23:59:59.999Z")),
        ("cost_usd", json!("79228162514264337593543950335")),
        ("cost_usd", json!("1000000.0000001")),
        ("turn", json!(u32::MAX as u64 + 1)),
        ("text", json!("x".repeat(turn_record::limits::MAX_TEXT_BYTES + 1))),
        ("session", json!("s\u{1b}[31m")),
        ("model", json!("m\u{7}")),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A file of extreme records: either every line passes and the whole
    /// file imports without a panic, or nothing is appended; either way the
    /// log then folds into every projection without a panic.
    #[test]
    fn extreme_records_import_whole_or_not_at_all(
        mut records in prop::collection::vec(extreme_record(), 1..5),
        broken in prop::option::weighted(0.3, (any::<prop::sample::Index>(), beyond_a_limit())),
    ) {
        if let Some((which, (field, value))) = broken {
            let i = which.index(records.len());
            records[i][field] = value;
        }
        let dir = tempfile::tempdir().unwrap();
        // A log with history already in it, so the reactors and the
        // against-the-log check have something to work with.
        let log = SledLog::open(&dir.path().join("data"), LogConfig::default()).unwrap();
        let seed = write(dir.path(), "seed.jsonl", &[record("s-0", 1, "2026-11-20T10:00:00Z", "hello")]);
        import_file(&log, &seed).unwrap();
        let head = log.head();
        let path = write(dir.path(), "extreme.jsonl", &records);
        let valid = records.iter().all(|r| turn_record::parse_line(&r.to_string()).is_ok());
        match import_file(&log, &path) {
            Ok(stats) => {
                prop_assert!(valid, "an invalid record was imported");
                prop_assert!(log.head() > head);
                prop_assert!(stats.events_appended > 0 || stats.skipped_existing > 0);
            }
            Err(e) => prop_assert_eq!(log.head(), head, "a failed import appended: {}", e),
        }
        let mut p = Projector::in_memory(projections::all());
        p.catch_up(&log, |_, _| {}).unwrap();
    }
}

#[test]
fn the_first_event_id_is_the_utterance_id() {
    let r = turn_record::parse_line(&record("s-1", 3, "2026-11-23T10:00:00Z", "hi").to_string()).unwrap();
    let events = turn_events::turn_events(&r, false);
    assert_eq!(events[0].kind(), EventKind::UtteranceReceived);
    assert_eq!(turn_events::utterance_id(&r), events[0].id);
}

#[test]
fn every_limit_is_a_line_error_naming_its_field() {
    let base = record("s-1", 1, "2026-11-23T10:00:00Z", "hi");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("at", json!("1969-12-31T23:59:59Z"), "before 1970"),
        ("at", json!("9999-12-31T23:59:59.9999Z"), "after 9999"),
        ("latency_ms", json!(turn_record::limits::MAX_DURATION_MS + 1), "seven days"),
        ("planner_ms", json!(u64::MAX), "seven days"),
        ("cost_usd", json!("1000000.01"), "more than 1000000"),
        ("text", json!("x".repeat(turn_record::limits::MAX_TEXT_BYTES + 1)), "longer than"),
        ("session", json!("a\nb"), "control characters"),
        ("session", json!("s".repeat(257)), "at most 256 bytes"),
        ("model", json!("\u{1b}[2J"), "control character"),
        ("steps", json!(vec![json!({"tool": "t"}); turn_record::limits::MAX_STEPS + 1]), "more than 64 steps"),
    ];
    for (field, value, says) in cases {
        let mut r = base.clone();
        r[field] = value;
        let errs = turn_record::parse_line(&r.to_string()).unwrap_err();
        assert!(errs.iter().any(|e| e.field == field && e.message.contains(says)), "{field}: {errs:?}");
    }
    // `at` near the end plus a latency that crosses it.
    let mut r = base.clone();
    r["at"] = json!("9999-12-31T23:00:00Z");
    r["latency_ms"] = json!(3_600_000);
    let errs = turn_record::parse_line(&r.to_string()).unwrap_err();
    assert!(errs.iter().any(|e| e.field == "latency_ms" && e.message.contains("at + latency_ms")), "{errs:?}");
}

#[test]
fn a_long_line_is_refused_before_it_is_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    std::fs::write(&path, format!("{}\n", "x".repeat(turn_record::limits::MAX_LINE_BYTES + 1))).unwrap();
    let e = import::validate(&path, ImportSource::open(&path).unwrap()).unwrap_err().to_string();
    assert!(e.contains(":1: -: longer than 1048576 bytes"), "{e}");
}

/// A reactor with a bug: panics on the third utterance it sees.
#[derive(Default)]
struct PanicsOnThird(u32);

impl Reactor for PanicsOnThird {
    fn name(&self) -> &'static str {
        "panics_on_third"
    }
    fn observe(&mut self, _env: &engram_events::Envelope) {}
    fn react(&mut self, env: &engram_events::Envelope) -> Vec<engram_events::Envelope> {
        if env.kind() == EventKind::UtteranceReceived {
            self.0 += 1;
            assert!(self.0 < 3, "a bug in a reactor");
        }
        Vec::new()
    }
}

/// A bug in the conversion stops the import at the record it hit, which
/// it names; the records before it are in the log, whole, as an import
/// killed there would leave them, and running the import again without
/// the bug appends the rest: the log then equals a clean import's.
#[test]
fn a_panic_while_converting_stops_at_its_line_after_the_records_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledLog::open(&dir.path().join("data"), LogConfig::default()).unwrap();
    let records: Vec<Value> =
        (1..=5).map(|t| record("s-1", t, "2026-11-23T10:00:00Z", &format!("request {t}"))).collect();
    let path = write(dir.path(), "f.jsonl", &records);
    let plan = import::validate(&path, ImportSource::open(&path).unwrap()).unwrap();
    let none = Projector::in_memory(Vec::new());
    let e = import::run(&plan, &log, &none, |_| vec![Box::new(PanicsOnThird::default()) as Box<dyn Reactor>], |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("f.jsonl:3: -:") && e.contains("a bug in a reactor"), "{e}");
    assert!(e.contains("of the records before it were imported; nothing from this record on"), "{e}");
    let events =
        |log: &SledLog| -> Vec<engram_events::Envelope> { log.read_from(Seq::FIRST).map(Result::unwrap).collect() };
    let kept = events(&log);
    let turns = kept.iter().filter(|e| e.kind() == EventKind::TurnCompleted).count();
    assert_eq!(turns, 2, "the two records before the third, whole");
    assert_eq!(kept.last().unwrap().kind(), EventKind::TurnCompleted);

    let clean = SledLog::open(&dir.path().join("clean"), LogConfig::default()).unwrap();
    let fine = |_: &Projector| Vec::<Box<dyn Reactor>>::new();
    import::run(&plan, &clean, &none, fine, |_| {}).unwrap();
    let stats = import::run(&plan, &log, &none, fine, |_| {}).unwrap();
    assert_eq!((stats.imported_turns, stats.skipped_existing), (3, 2));
    let ids = |log: &SledLog| events(log).iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(&log), ids(&clean), "the rerun completed it as a clean import");
}

#[test]
fn turns_into_sessions_the_log_holds_are_refused_unless_they_are_the_same_turns() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledLog::open(&dir.path().join("data"), LogConfig::default()).unwrap();
    let first = [record("s-1", 1, "2026-11-23T10:00:00Z", "one"), record("s-1", 2, "2026-11-23T10:01:00Z", "two")];
    let a = write(dir.path(), "a.jsonl", &first);
    assert_eq!(import_file(&log, &a).unwrap().imported_turns, 2);
    let head = log.head();

    // The same file again: the same turns, nothing new.
    let again = import_file(&log, &a).unwrap();
    assert_eq!((again.imported_turns, again.skipped_existing), (0, 2));

    // Another turn 1 in s-1 (another time, another text).
    let b = write(
        dir.path(),
        "b.jsonl",
        &[record("s-2", 1, "2026-11-23T11:00:00Z", "fine"), record("s-1", 1, "2026-11-23T12:00:00Z", "other")],
    );
    let e = import_file(&log, &b).unwrap_err().to_string();
    assert!(e.contains("b.jsonl:2: turn: turn 1 of session \"s-1\" is already in the log"), "{e}");
    assert!(!e.contains("b.jsonl:1:"), "{e}");

    // A turn 3 after the import ended s-1.
    let c = write(dir.path(), "c.jsonl", &[record("s-1", 3, "2026-11-23T12:00:00Z", "three")]);
    let e = import_file(&log, &c).unwrap_err().to_string();
    assert!(e.contains("c.jsonl:1: session: session \"s-1\" ended in the log at seq"), "{e}");
    assert_eq!(log.head(), head, "nothing appended by the refused files");
    let ended =
        log.read_from(Seq::FIRST).filter(|e| matches!(e.as_ref().unwrap().event, Event::SessionEnded(_))).count();
    assert_eq!(ended, 1, "one session.ended for s-1");
}

/// Issue 43 item 8: a file that grows, or is replaced, while it is
/// imported. Every pass reads the bytes pass 1 validated: records appended
/// after it (a turn of a session the import ends, an invalid line) are
/// left for the next import, and a file put in its place is not read.
#[test]
fn a_file_that_changes_under_the_import_is_imported_as_validated() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledLog::open(&dir.path().join("data"), LogConfig::default()).unwrap();
    let records: Vec<Value> =
        (1..=3).map(|t| record("s-1", t, "2026-11-23T10:00:00Z", &format!("request {t}"))).collect();
    let path = write(dir.path(), "grow.jsonl", &records);
    let plan = import::validate(&path, ImportSource::open(&path).unwrap()).unwrap();
    // After validation: a fourth turn of s-1, then a line that is no record.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        writeln!(f, "{}", record("s-1", 4, "2026-11-23T10:05:00Z", "request 4")).unwrap();
        writeln!(f, "not json").unwrap();
    }
    let none = Projector::in_memory(Vec::new());
    let fine = |_: &Projector| Vec::<Box<dyn Reactor>>::new();
    let stats = import::run(&plan, &log, &none, fine, |_| {}).unwrap();
    assert_eq!((stats.imported_turns, stats.skipped_existing), (3, 0));
    let kinds: Vec<EventKind> = log.read_from(Seq::FIRST).map(|e| e.unwrap().kind()).collect();
    assert_eq!(kinds.last(), Some(&EventKind::SessionEnded), "the session ends after its third turn: {kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == EventKind::TurnCompleted).count(), 3);

    // Replaced after validation (as an editor saves): the file validated
    // is the one imported.
    let other = dir.path().join("other.jsonl");
    let b = write(dir.path(), "b.jsonl", &[record("s-2", 1, "2026-11-23T11:00:00Z", "b")]);
    let plan = import::validate(&b, ImportSource::open(&b).unwrap()).unwrap();
    write(dir.path(), "other.jsonl", &[record("s-3", 1, "2026-11-23T12:00:00Z", "c")]);
    std::fs::rename(&other, dir.path().join("b.jsonl")).unwrap();
    import::run(&plan, &log, &none, fine, |_| {}).unwrap();
    let sessions: Vec<String> =
        log.read_from(Seq::FIRST).filter_map(|e| e.unwrap().session.map(|s| s.as_str().to_owned())).collect();
    assert!(sessions.contains(&"s-2".to_owned()) && !sessions.contains(&"s-3".to_owned()), "{sessions:?}");
}
