//! A damaged record in a real (imported) log: one byte flipped inside a
//! frame of a middle segment, straight in the sled `log` tree.
//!
//! * `verify` reports exactly that record's seq, as a CRC fault, and still
//!   checks the segments after it;
//! * a replay (`read_from`, a kind-filtered `read_kinds`) yields every
//!   other record, unchanged, and one `LogError::Lost` naming that seq —
//!   never skipping it silently; the zero-copy `for_each_view` stops there;
//! * the log still opens and appends (its tail is healthy).
//!
//! Further tests flip every byte of a frame's fixed header and a spread of
//! its body, one at a time (whatever byte is hit, that one record is lost
//! and named), and a length byte of a frame in the middle of a segment (the
//! reader finds the next frame by its CRC).
//!
//! (The CLI variant is `tests/cli_corruption.rs`.)

use std::path::Path;

use engram_events::codec::binary::{self, FRAME_HEADER_LEN};
use engram_events::codec::DecodeError;
use engram_events::payloads::{SessionEndReason, SessionEnded};
use engram_events::{ActorKind, Envelope, EventKind, Seq, SessionId};
use engram_learning::import;
use engram_learning::reactors::{DayReactor, Reactor};
use engram_local_state::projector::Projector;
use engram_storage::verify::verify;
use engram_storage::{AppendOutcome, EventLog, ImportSource, LogConfig, LogError, SledLog};

/// `n` turn records over `sessions` interleaved sessions, some planner
/// turns, some fast-path ones, most judged.
fn turn_file(n: usize, sessions: usize) -> String {
    let mut out = String::new();
    for i in 0..n {
        let (s, turn) = (i % sessions, i / sessions + 1);
        let model = if i % 4 == 0 { "null".to_owned() } else { "\"ollama:gemma4:26b\"".to_owned() };
        let steps = match i % 3 {
            0 => "[]".to_owned(),
            1 => format!(r#"[{{"tool":"get_urls","args":{{"url":"https://example.org/{i}"}}}}]"#),
            _ => format!(
                r#"[{{"tool":"get_urls","args":{{"url":"https://example.org/{i}"}}}},{{"tool":"describe_entries","args":{{"entries":"$0"}}}}]"#
            ),
        };
        let score = if i % 5 == 4 { String::new() } else { format!(r#","score":0.{}"#, i % 10) };
        out.push_str(&format!(
            r#"{{"session":"s-{s:03}","turn":{turn},"at":"2026-11-{:02}T{:02}:{:02}:00Z","text":"request number {i} {}","steps":{steps},"model":{model},"planner_ms":{},"latency_ms":{},"cost_usd":"0.000{}"{score}}}"#,
            20 + i / 200,
            (i / 60) % 24,
            i % 60,
            "words ".repeat(i % 17),
            i * 7 % 5000,
            1000 + i % 900,
            i % 10,
        ));
        out.push('\n');
    }
    out
}

/// A data dir holding an imported log of several hundred events; returns
/// every envelope in it and the first seq of each segment.
fn imported_log(dir: &Path) -> (Vec<Envelope>, Vec<(Seq, usize)>) {
    let file = dir.join("turns.jsonl");
    std::fs::write(&file, turn_file(120, 9)).unwrap();
    let data = dir.join("data");
    let log = open(&data);
    let plan = import::validate(&file, ImportSource::open(&file).unwrap()).unwrap();
    let reactors = |_: &Projector| -> Vec<Box<dyn Reactor>> { vec![Box::new(DayReactor::default())] };
    let none = Projector::in_memory(Vec::new());
    let stats = import::run(&plan, &log, &none, reactors, |_| {}).unwrap();
    assert_eq!(stats.imported_turns, 120);
    let all: Vec<Envelope> = log.read_from(Seq::FIRST).map(|e| e.unwrap()).collect();
    assert_eq!(all.len() as u64, log.head().0);
    let segments: Vec<(Seq, usize)> = log
        .segments()
        .map(|s| {
            let (first, bytes) = s.unwrap();
            (first, binary::frames(&bytes).count())
        })
        .collect();
    assert!(verify(&log, |_| {}).ok());
    (all, segments)
}

/// Flips (xor 0x20) the byte at `at` (an offset into the frame) of the
/// `nth` frame of the segment starting at `first`, with the log closed. Returns the seq of
/// that frame, found by walking the segment's frames.
/// Opens the log, waiting for sled's file lock: a `sled::Db` dropped a
/// moment ago may still hold it while its flusher thread winds down.
fn open(data: &Path) -> SledLog {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match SledLog::open(data, LogConfig::default()) {
            Ok(log) => return log,
            Err(e) if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("opening {}: {e}", data.display()),
        }
    }
}

fn flip(data: &Path, first: Seq, nth: usize, at: usize) -> Seq {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let db = loop {
        match sled::open(data.join("log.sled")) {
            Ok(db) => break db,
            Err(e) if e.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    };
    let tree = db.open_tree("log").unwrap();
    let key = first.0.to_be_bytes();
    let mut bytes = tree.get(key).unwrap().expect("the segment").to_vec();
    let mut offset = 0;
    let mut seq = first;
    for (i, frame) in binary::frames(&bytes).enumerate() {
        if i == nth {
            // Healthy before the flip; already damaged when flipping back.
            if let Ok(frame) = frame {
                assert!(at < frame.bytes.len(), "offset {at} is outside a frame of {} bytes", frame.bytes.len());
                assert_eq!(frame.seq().unwrap(), seq, "the seq walked to is the one the frame records");
            }
            break;
        }
        offset += frame.expect("the frames before the flipped one are healthy").bytes.len();
        seq = seq.next();
    }
    bytes[offset + at] ^= 0x20;
    tree.insert(key, bytes).unwrap();
    db.flush().unwrap();
    seq
}

/// The length of the `nth` frame of the segment starting at `first`.
fn frame_len(data: &Path, first: Seq, nth: usize) -> usize {
    let log = open(data);
    let (_, bytes) = log.segments_from(first).next().unwrap().unwrap();
    let len = binary::frames(&bytes).nth(nth).unwrap().unwrap().bytes.len();
    len
}

/// Reads from `from` to the end: the records that read, and the damage
/// reported on the way (reading goes on past it).
fn replay(iter: impl Iterator<Item = Result<Envelope, LogError>>) -> (Vec<Envelope>, Option<LogError>) {
    let mut good = Vec::new();
    let mut errors = Vec::new();
    for e in iter {
        match e {
            Ok(e) => good.push(e),
            Err(e) => errors.push(e),
        }
    }
    assert!(errors.len() <= 1, "one damaged run, one error: {errors:?}");
    (good, errors.pop())
}

/// Whether `err` names exactly `seq` as lost.
fn lost(err: &Option<LogError>, seq: Seq) -> bool {
    matches!(err, Some(LogError::Lost { first, last, .. }) if *first == seq && *last == seq)
}

/// `all` without the record at `seq`.
fn without(all: &[Envelope], seq: Seq) -> Vec<Envelope> {
    all.iter().filter(|e| e.seq != seq).cloned().collect()
}

#[test]
fn a_flipped_byte_in_a_middle_segment_is_named_by_seq_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (all, segments) = imported_log(tmp.path());
    let total = all.len() as u64;
    assert!(segments.len() >= 5, "several segments: {segments:?}");
    let mid = segments.len() / 2;
    let (first, frames) = segments[mid];
    let nth = frames / 2;
    // A byte in the body (the archives), well past the fixed header.
    let body_byte = FRAME_HEADER_LEN + 5;
    let bad = flip(&data, first, nth, body_byte);
    assert_eq!(bad, Seq(first.0 + nth as u64));
    let bad_kind = all[(bad.0 - 1) as usize].kind();

    let log = open(&data);
    assert_eq!(log.head(), Seq(total), "the head is recovered from the healthy last segment");

    // verify: one fault, a CRC mismatch, at exactly that seq.
    let report = verify(&log, |_| {});
    assert!(!report.ok());
    assert_eq!(report.first_bad_seq(), Some(bad));
    assert_eq!(report.faults.len(), 1, "one damaged record, one fault: {:?}", report.faults);
    match &report.faults[0] {
        LogError::Corrupt { seq, source: DecodeError::Crc { stored, actual } } => {
            assert_eq!(*seq, bad);
            assert_ne!(stored, actual);
        }
        other => panic!("expected a CRC fault at seq {bad}, got {other:?}"),
    }
    let message = report.faults[0].to_string();
    assert!(message.contains(&format!("seq {bad}")), "{message}");
    // Every record but the damaged one and the rest of its segment (which
    // cannot be delimited past a bad frame) was still checked.
    assert_eq!(report.events, total - (frames - nth) as u64, "verify goes on after the damaged segment");

    // A replay: every record but the damaged one, unchanged, and one error
    // naming it — reading goes on past the damage.
    let (good, err) = replay(log.read_from(Seq::FIRST));
    assert_eq!(good, without(&all, bad), "records before and after the damage are intact");
    assert!(lost(&err, bad), "{err:?}");
    assert!(err.unwrap().to_string().contains("CRC"));

    // Starting inside the damaged segment, just before the bad record.
    let (good, err) = replay(log.read_from(Seq(bad.0 - 1)));
    assert_eq!(good, without(&all[(bad.0 - 2) as usize..], bad));
    assert!(lost(&err, bad), "{err:?}");

    // A kind filter that excludes the damaged record's kind still names
    // it: a damaged record is never silently skipped.
    let other_kinds: Vec<EventKind> = EventKind::ALL.iter().copied().filter(|k| *k != bad_kind).collect();
    let (good, err) = replay(log.read_kinds(Seq::FIRST, &other_kinds));
    let want: Vec<&Envelope> = all.iter().filter(|e| e.kind() != bad_kind).collect();
    assert_eq!(good.iter().collect::<Vec<_>>(), want);
    assert!(lost(&err, bad), "{err:?}");

    // The zero-copy replay.
    let mut visited = Vec::new();
    let err = log
        .for_each_view(Seq::FIRST, |v| {
            visited.push(v.seq().0);
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, LogError::Corrupt { seq, .. } if seq == bad), "{err:?}");
    assert_eq!(visited, (1..bad.0).collect::<Vec<_>>());

    // After the damaged segment, everything reads back as it was.
    let next = segments[mid + 1].0;
    let (rest, err) = replay(log.read_from(next));
    assert!(err.is_none(), "{err:?}");
    assert_eq!(rest, all[(next.0 - 1) as usize..]);

    // The tail is healthy: appends continue at head + 1, and are readable.
    let extra = Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: 0 })
        .with_session(SessionId::new("after-damage"));
    assert_eq!(log.append(vec![extra.clone()]).unwrap(), vec![AppendOutcome::Appended(Seq(total + 1))]);
    let last = log.read_from(Seq(total + 1)).next().unwrap().unwrap();
    assert_eq!(last.id, extra.id);
    // And verify still names the same first bad record.
    assert_eq!(verify(&log, |_| {}).first_bad_seq(), Some(bad));
}

#[test]
fn whichever_byte_of_a_frame_is_hit_the_same_seq_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (all, segments) = imported_log(tmp.path());
    let (first, frames) = segments[1];
    let nth = frames - 1; // the last frame of the segment: nothing after it to mis-delimit
    let len = frame_len(&data, first, nth);
    let bad = Seq(first.0 + nth as u64);
    let mut offsets: Vec<usize> = (0..FRAME_HEADER_LEN).collect();
    offsets.extend((FRAME_HEADER_LEN..len).step_by((len / 8).max(1)));
    offsets.push(len - 1);
    for at in offsets {
        assert_eq!(flip(&data, first, nth, at), bad);
        {
            let log = open(&data);
            let report = verify(&log, |_| {});
            assert_eq!(report.first_bad_seq(), Some(bad), "byte {at} of the frame: {:?}", report.faults);
            assert!(report.faults[0].to_string().contains(&format!("seq {bad}")), "{}", report.faults[0]);
            let (good, err) = replay(log.read_from(Seq::FIRST));
            assert_eq!(good, without(&all, bad), "byte {at}");
            assert!(lost(&err, bad), "byte {at}: {err:?}");
        }
        // Flip it back: the log is whole again.
        assert_eq!(flip(&data, first, nth, at), bad);
        let log = open(&data);
        assert!(verify(&log, |_| {}).ok(), "byte {at}: flipping it back repairs the log");
    }
    let log = open(&data);
    let now: Vec<Envelope> = log.read_from(Seq::FIRST).map(|e| e.unwrap()).collect();
    assert_eq!(now, all);
}

#[test]
fn a_damaged_first_record_costs_that_record_only() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (all, segments) = imported_log(tmp.path());
    assert_eq!(segments[0].0, Seq(1));
    let bad = flip(&data, Seq(1), 0, FRAME_HEADER_LEN + 1);
    assert_eq!(bad, Seq(1));
    let log = open(&data);
    let report = verify(&log, |_| {});
    assert_eq!(report.first_bad_seq(), Some(Seq(1)));
    assert_eq!(report.events, all.len() as u64 - segments[0].1 as u64);
    let (good, err) = replay(log.read_from(Seq::FIRST));
    assert_eq!(good, without(&all, Seq(1)));
    assert!(lost(&err, Seq(1)), "{err:?}");
}

#[test]
fn a_damaged_length_mid_segment_costs_that_record_only() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (all, segments) = imported_log(tmp.path());
    let (first, frames) = segments[segments.len() / 2];
    assert!(frames >= 3);
    // Byte 10: the low byte of the payload length — the frame no longer
    // says where it ends.
    let bad = flip(&data, first, frames / 2, 10);
    let log = open(&data);
    let (good, err) = replay(log.read_from(Seq::FIRST));
    assert_eq!(good, without(&all, bad));
    assert!(lost(&err, bad), "{err:?}");
}
