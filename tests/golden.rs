//! The golden logs: logs written by engram's log format as it was, committed
//! under `tests/fixtures/golden-v*/`, that every later version must replay
//! unchanged — as raw frames, as a sled data dir, and as JSON Lines.
//!
//! `golden-v1` holds every kind of the first format; each later fixture
//! holds the kinds added since the one before it (`golden-v2`:
//! `memory.forgotten`; `golden-v3`: `pattern.reembedded`; `golden-v4`:
//! `stream.message_skipped` and the actor `log`; `golden-v5`:
//! `canonical.rejected`, `pipeline.rejected`; `golden-v6`:
//! `memory.passages_indexed` and the actor `memory`; `golden-v7`:
//! `canonical.recorded` v2, `fastpath.missed` v2, `canonical.compared`,
//! `canonical.rejected` v2; `golden-v8`: `llm.call_completed` v2), so
//! together they
//! hold every kind. To write a new
//! one (only ever a *new* fixture directory; an existing one is history and
//! is never rewritten): add it to [`FIXTURES`], then
//! `ENGRAM_REGENERATE_GOLDEN=golden-vN cargo test --test golden -- --ignored`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use engram::events::codec::{binary, json};
use engram::events::ids::derive_ulid;
use engram::events::payloads::*;
use engram::events::rust_decimal::Decimal;
use engram::events::{EvalId, EventId, FingerprintId, TurnId};
use engram::learning::import::{turn_events, turn_record};
use engram::storage::ImportSource;
use engram::{ActorKind, Envelope, Event, EventKind, EventLog, LogConfig, Seq, SessionId, SledLog};

/// One golden log: its directory under `tests/fixtures/` and the builder
/// of its events.
struct Fixture {
    name: &'static str,
    events: fn() -> Vec<Envelope>,
}

/// Every golden log, oldest first.
const FIXTURES: [Fixture; 8] = [
    Fixture { name: "golden-v1", events: fixture_events },
    Fixture { name: "golden-v2", events: fixture_v2_events },
    Fixture { name: "golden-v3", events: fixture_v3_events },
    Fixture { name: "golden-v4", events: fixture_v4_events },
    Fixture { name: "golden-v5", events: fixture_v5_events },
    Fixture { name: "golden-v6", events: fixture_v6_events },
    Fixture { name: "golden-v7", events: fixture_v7_events },
    Fixture { name: "golden-v8", events: fixture_v8_events },
];

/// `golden-v8`: `llm.call_completed` v2 — how the tools went (natively, as
/// text) and whether the answer was held to a schema, and a request refused
/// before it was sent recorded as `protocol_error`.
fn fixture_v8_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-12-02T08:00:00Z").unwrap().to_utc();
    let id = |n: u32| EventId(derive_ulid(at, &[b"golden-v8", &n.to_be_bytes()]));
    let turn = TurnId(derive_ulid(at, &[b"golden-v8-turn"]));
    let call = |context, outcome, tools, structured| LlmCallCompleted {
        model: "openai:smollm2-135m".into(),
        context,
        input_tokens: if outcome == LlmOutcome::Ok { 412 } else { 0 },
        output_tokens: if outcome == LlmOutcome::Ok { 23 } else { 0 },
        cost_usd: Decimal::ZERO,
        pricing_version: "2026-11".into(),
        latency_ms: 950,
        outcome,
        tools,
        structured,
    };
    vec![
        Envelope::at(id(1), at, ActorKind::Planner, call(LlmContext::Planner, LlmOutcome::Ok, LlmTools::None, true)),
        Envelope::at(
            id(2),
            at,
            ActorKind::ReplyLoop,
            call(LlmContext::ReplyLoop, LlmOutcome::Ok, LlmTools::Text, false),
        ),
        Envelope::at(
            id(3),
            at,
            ActorKind::ReplyLoop,
            call(LlmContext::ReplyLoop, LlmOutcome::ProtocolError, LlmTools::Unknown, false),
        ),
    ]
    .into_iter()
    .map(|e| e.with_session(SessionId::new("g8")).with_turn(turn))
    .collect()
}

fn fixture_dir(f: &Fixture) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures").join(f.name)
}

/// `golden-v2`: the kinds added after `golden-v1`.
fn fixture_v2_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-11-25T10:00:00Z").unwrap().to_utc();
    let id = EventId(derive_ulid(at, &[b"golden-v2", &1u32.to_be_bytes()]));
    let forgotten = MemoryForgotten {
        request: "\"Turin\"".into(),
        facts: vec![ForgottenFact {
            branch: GraphBranch::User,
            node: "location".into(),
            fact: "I live in Turin".into(),
        }],
        sessions: vec![SessionId::new("g-1")],
        phrases: vec!["Turin".into()],
    };
    vec![Envelope::at(id, at, ActorKind::Cli, forgotten)]
}

/// `golden-v3`: the kinds added after `golden-v2`.
fn fixture_v3_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-11-25T18:00:00Z").unwrap().to_utc();
    let id = EventId(derive_ulid(at, &[b"golden-v3", &1u32.to_be_bytes()]));
    let g1 = SessionId::new("g-1");
    let turn = TurnId::for_turn(&g1, 1, at);
    let reembedded = PatternReembedded {
        fingerprint_id: FingerprintId(derive_ulid(at, &[b"fp"])),
        turn: Some(turn),
        embedding: QueryEmbedding {
            provider: "local:use-multilingual-v3:int8:f0b968a1".into(),
            vector: vec![0.6, -0.8, 0.0, 0.25],
        },
    };
    vec![Envelope::at(id, at, ActorKind::Router, reembedded).with_session(g1).with_turn(turn)]
}

/// `golden-v4`: the kinds added after `golden-v3`.
fn fixture_v4_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-11-26T16:00:00Z").unwrap().to_utc();
    let id = EventId(derive_ulid(at, &[b"golden-v4", &1u32.to_be_bytes()]));
    let skipped = StreamMessageSkipped {
        reason: "not an engram frame (unknown frame format version 110)".into(),
        payload_bytes: 19,
        // A fixed digest: the fixture keeps what the field holds, a hex text.
        payload_blake3: "6b0bd5b1f7b73c3d5c6c0a1f3e1e7a0e7a1b6e0c3b9f2a1d4c7e0b3a6d9f2c5e".into(),
    };
    vec![Envelope::at(id, at, ActorKind::Log, skipped)]
}

/// `golden-v5`: the kinds added after `golden-v4`.
fn fixture_v5_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-11-26T17:00:00Z").unwrap().to_utc();
    let id = |n: u32| EventId(derive_ulid(at, &[b"golden-v5", &n.to_be_bytes()]));
    let session = SessionId::new("g5");
    let turn = TurnId(derive_ulid(at, &[b"golden-v5-turn"]));
    let eval_id = EvalId(derive_ulid(at, &[b"golden-v5-eval"]));
    let canonical = CanonicalRejected {
        canonical: "do you remember what city i live in".into(),
        executor: "get_location".into(),
        subject_turn: turn,
        eval_id,
        score: 0.0,
        slots: ToolArgs::default(),
    };
    let pipeline =
        PipelineRejected { pipeline_id: "0123456789abcdef01234567".into(), subject_turn: turn, eval_id, score: 0.1 };
    vec![
        Envelope::at(id(1), at, ActorKind::Router, canonical).with_session(session.clone()).with_turn(turn),
        Envelope::at(id(2), at, ActorKind::Router, pipeline).with_session(session).with_turn(turn),
    ]
}

/// `golden-v6`: the kinds added after `golden-v5`.
fn fixture_v6_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-11-26T22:00:00Z").unwrap().to_utc();
    let id = |n: u32| EventId(derive_ulid(at, &[b"golden-v6", &n.to_be_bytes()]));
    let session = SessionId::new("g6");
    let turn = TurnId(derive_ulid(at, &[b"golden-v6-turn"]));
    let passages = vec![
        Passage {
            text: "my counter is only 38 square feet".into(),
            speaker: Speaker::User,
            vector: Some(PassageVector {
                provider: "local:test:int8".into(),
                scale: 0.0078125,
                codes: vec![127, -3, 0, 64],
            }),
        },
        Passage { text: "Noted.".into(), speaker: Speaker::Assistant, vector: None },
    ];
    vec![Envelope::at(id(1), at, ActorKind::Memory, PassagesIndexed { passages }).with_session(session).with_turn(turn)]
}

/// `golden-v7`: learning by meaning — `canonical.recorded` v2 (its said
/// slots), `fastpath.missed` v2 (the near miss), `canonical.compared` and
/// `canonical.rejected` v2 (the slots it takes back).
fn fixture_v7_events() -> Vec<Envelope> {
    let at = engram::events::chrono::DateTime::parse_from_rfc3339("2026-11-27T22:00:00Z").unwrap().to_utc();
    let id = |n: u32| EventId(derive_ulid(at, &[b"golden-v7", &n.to_be_bytes()]));
    let session = SessionId::new("g7");
    let turn = TurnId(derive_ulid(at, &[b"golden-v7-turn"]));
    let args = |json: &str| ToolArgs::from_json(json).unwrap();
    let step = |json: &str| PlanStep { tool: "HassTurnOn".into(), args: args(json) };
    let missed = FastPathMissed {
        best_similarity: Some(0.74),
        best_candidate: Some("turn on the areaslot light".into()),
        reason: "L1: best match \"turn on the areaslot light\" at similarity 0.740 < its bar 0.800".into(),
        near: Some(NearMiss {
            canonical: "turn on the areaslot light".into(),
            similarity: 0.74,
            steps: vec![step(r#"{"area":"garage","domain":["light"]}"#)],
        }),
    };
    let recorded = CanonicalRecorded {
        canonical: "lights on in the areaslot".into(),
        executor: "HassTurnOn".into(),
        args_observed: args(r#"{"area":"{slot:area}","domain":["light"]}"#),
        slots: args(r#"{"area":{"after_determiner":true,"said":"garage","value":"garage"}}"#),
    };
    let compared = CanonicalCompared {
        canonical: "turn on the areaslot light".into(),
        executor: "HassTurnOn".into(),
        similarity: 0.74,
        agreed: true,
        subject_turn: turn,
    };
    let rejected = CanonicalRejected {
        canonical: "lights on in the areaslot".into(),
        executor: "HassTurnOn".into(),
        subject_turn: turn,
        eval_id: EvalId(derive_ulid(at, &[b"golden-v7-eval"])),
        score: 0.0,
        slots: args(r#"{"area":{"after_determiner":true,"said":"garage","value":"garage"}}"#),
    };
    vec![
        Envelope::at(id(1), at, ActorKind::Router, missed),
        Envelope::at(id(2), at, ActorKind::Router, recorded),
        Envelope::at(id(3), at, ActorKind::Router, compared),
        Envelope::at(id(4), at, ActorKind::Router, rejected),
    ]
    .into_iter()
    .map(|e| e.with_session(session.clone()).with_turn(turn))
    .collect()
}

/// The fixture's events, built deterministically (fixed ids and times).
///
/// Records 2 and 3 name their features: the fixture holds what engram's
/// first tagger computed for them, and the tagger has learnt tags since
/// (an assistant's `time`, `files`, …), which would tag them anew.
fn fixture_events() -> Vec<Envelope> {
    let records = [
        r#"{"session":"g-1","turn":1,"at":"2026-11-20T09:15:02Z","text":"download https://example.org/a and describe it","steps":[{"tool":"get_urls","args":{"url":"https://example.org/a"}},{"tool":"describe_entries","args":{"entries":"$0"}}],"model":"ollama:gemma4:26b","planner_ms":11800,"latency_ms":14200,"cost_usd":"0.0012","pricing_version":"2026-11","score":0.9,"score_confidence":0.8,"features":{"intent_tags":["doc"],"tool_names":["get_urls"]}}"#,
        r#"{"session":"g-1","turn":2,"at":"2026-11-20T09:16:10Z","text":"che ore sono","steps":[{"tool":"get_now"}],"latency_ms":3,"features":{"tool_names":["get_now"],"has_tool_calls_in_history":true}}"#,
        r#"{"session":"g-2","turn":1,"at":"2026-11-21T18:00:00+01:00","text":"riassumi il file ~/note.md","steps":[{"tool":"read_file","args":{"path":"~/note.md"}}],"model":"openai:gpt-5-mini","planner_ms":900,"latency_ms":2100,"cost_usd":"0.000345","pricing_version":"2026-11","workload":"notes","features":{"intent_tags":["doc"],"file_extensions":[".md"],"tool_names":["read_file"]}}"#,
    ];
    let mut out = Vec::new();
    for (i, line) in records.iter().enumerate() {
        let r = turn_record::parse_line(line).expect("fixture record");
        out.extend(turn_events::turn_events(&r, i == 1));
    }
    let at = |s: &str| engram::events::chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
    let t0 = at("2026-11-21T17:00:02Z");
    let g1 = SessionId::new("g-1");
    let turn1 = TurnId::for_turn(&g1, 1, at("2026-11-20T09:15:02Z"));
    let mut n = 0u32;
    let mut push = |out: &mut Vec<Envelope>, actor: ActorKind, event: Event| {
        n += 1;
        let id = EventId(derive_ulid(t0, &[b"golden", &n.to_be_bytes()]));
        out.push(Envelope::at(id, t0, actor, event).with_session(g1.clone()).with_turn(turn1));
    };
    let fp = FingerprintId(derive_ulid(t0, &[b"fp"]));
    push(&mut out, ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: 2 }.into());
    push(
        &mut out,
        ActorKind::Host,
        FeedbackReceived { subject_turn: Some(turn1), rating: FeedbackRating::Positive, text: Some("perfetto".into()) }
            .into(),
    );
    push(
        &mut out,
        ActorKind::Judge,
        EvalCompleted {
            eval_id: EvalId(derive_ulid(t0, &[b"eval-2"])),
            subject_turn: turn1,
            score: 1.0,
            confidence: 0.95,
            judge: JudgeKind::Feedback,
            rubric: Some("explicit-feedback".into()),
            judge_pricing_version: None,
        }
        .into(),
    );
    push(
        &mut out,
        ActorKind::PatternStore,
        PatternRecorded {
            fingerprint_id: fp,
            fingerprint_kind: FingerprintKind::Structural,
            primary_model: "ollama:gemma4:26b".into(),
            sample_size_before: 0,
            sample_size_after: 1,
            was_new_fingerprint: true,
            success_score: Some(0.9),
            cost_usd: Decimal::from_str("0.0012").unwrap(),
            pricing_version: "2026-11".into(),
            over_soft_cap: false,
            turn: Some(turn1),
            latency_ms: 14200.0,
            eval_id: None,
            score_confidence: Some(0.8),
            replaces_score: None,
            features: Some(StructuralFeatures { intent_tags: vec!["doc".into()], ..Default::default() }),
            workload: None,
            embedding: None,
        }
        .into(),
    );
    push(
        &mut out,
        ActorKind::Router,
        PatternMatched {
            fingerprint_id: fp,
            fingerprint_kind: FingerprintKind::Structural,
            chosen_model: "ollama:gemma4:26b".into(),
            confidence: 0.12,
            sample_size: 7,
            k_cluster_size: 10,
            alternatives_count: 2,
        }
        .into(),
    );
    push(
        &mut out,
        ActorKind::PatternStore,
        PatternEvicted {
            trigger: EvictionTrigger::HardCapEvict,
            fingerprints_before: 3,
            fingerprints_after: 2,
            outcomes_before: 4,
            outcomes_after: 3,
            entries_evicted: 1,
            oldest_evicted_age_days: Some(181.5),
            evicted: vec![EvictedOutcome { fingerprint_id: fp, primary_model: "openai:gpt-5-mini".into() }],
        }
        .into(),
    );
    let mut args = serde_json::Map::new();
    args.insert("url".into(), "https://example.org/a".into());
    push(
        &mut out,
        ActorKind::Router,
        CanonicalRecorded {
            canonical: "download page".into(),
            executor: "get_urls".into(),
            args_observed: ToolArgs(args),
            slots: ToolArgs::default(),
        }
        .into(),
    );
    let steps = vec![
        PlanStep { tool: "get_urls".into(), args: ToolArgs::from_json(r#"{"url":"{url}"}"#).unwrap() },
        PlanStep { tool: "describe_entries".into(), args: ToolArgs::from_json(r#"{"entries":"$0"}"#).unwrap() },
    ];
    push(
        &mut out,
        ActorKind::Router,
        PipelineRecorded { pipeline_id: "p-1".into(), canonical: "download and describe".into(), steps, day_rank: 2 }
            .into(),
    );
    push(
        &mut out,
        ActorKind::Router,
        PipelineExpired { pipeline_id: "p-0".into(), last_used_rank: 1, current_rank: 32 }.into(),
    );
    push(&mut out, ActorKind::Router, PipelinePromoted { pipeline_id: "p-1".into(), uses: 50 }.into());
    push(&mut out, ActorKind::Listener, DayActivated { day: "2026-11-21".into(), rank: 2 }.into());
    push(
        &mut out,
        ActorKind::Summariser,
        SummaryWritten {
            summary: "The user downloaded a page and asked the time.".into(),
            topics: vec!["web".into(), "time".into()],
            summariser: SummariserKind::Extractive,
            turns_covered: 2,
        }
        .into(),
    );
    push(
        &mut out,
        ActorKind::Graph,
        GraphFactAdded {
            branch: GraphBranch::User,
            node: "preferences/language".into(),
            fact: "Speaks Italian and English".into(),
            extractor: ExtractorKind::Rule,
        }
        .into(),
    );
    push(
        &mut out,
        ActorKind::Graph,
        GraphNodeMerged {
            branch: GraphBranch::Directives,
            node: "style".into(),
            facts: vec!["Answer briefly".into()],
            facts_before: 2,
        }
        .into(),
    );
    out
}

/// The fixture's lines as written when it was made (history: never
/// rewritten).
fn fixture_lines(f: &Fixture) -> Vec<String> {
    std::fs::read_to_string(fixture_dir(f).join("log.jsonl"))
        .expect("fixture log.jsonl")
        .lines()
        .map(String::from)
        .collect()
}

/// The fixture's events as this build writes them: each line parsed (a
/// kind whose schema changed since is upcast — `fastpath.hit` v1 → v2) and
/// written again. Whatever reads the fixture must give exactly these.
fn expected_lines(f: &Fixture) -> Vec<String> {
    fixture_lines(f).iter().map(|l| json::to_line(&json::from_line(l).expect("a fixture line parses"))).collect()
}

#[test]
fn only_upcasts_change_the_fixture_lines() {
    // Lines of kinds at their fixture version read back byte for byte.
    for f in &FIXTURES {
        for (old, new) in fixture_lines(f).iter().zip(expected_lines(f)) {
            let kind = json::from_line(old).unwrap().kind();
            let was = serde_json::from_str::<serde_json::Value>(old).unwrap()["v"].as_u64().unwrap();
            if was == u64::from(kind.schema_version()) {
                assert_eq!(*old, new, "{}", f.name);
            } else {
                assert_ne!(*old, new, "{}: {kind} was upcast", f.name);
            }
        }
    }
}

#[test]
fn the_fixtures_cover_every_kind() {
    let kinds: std::collections::HashSet<EventKind> =
        FIXTURES.iter().flat_map(expected_lines).map(|l| json::from_line(&l).unwrap().kind()).collect();
    for kind in EventKind::ALL {
        assert!(kinds.contains(kind), "no golden fixture holds {kind}: add one (see the module docs)");
    }
}

#[test]
fn golden_frames_decode_unchanged() {
    for f in &FIXTURES {
        let bytes = std::fs::read(fixture_dir(f).join("log.frames")).expect("fixture log.frames");
        let decoded: Vec<String> =
            binary::frames(&bytes).map(|f| json::to_line(&f.expect("frame").decode().expect("decodes"))).collect();
        assert_eq!(decoded, expected_lines(f), "{}", f.name);
    }
}

#[test]
fn golden_data_dir_replays_unchanged() {
    for f in &FIXTURES {
        let tmp = tempfile::tempdir().unwrap();
        engram::storage::data_dir::copy_tree(&fixture_dir(f).join("data"), tmp.path()).unwrap();
        let log = SledLog::open(tmp.path(), LogConfig::default()).expect("opens the golden data dir");
        let report = engram::storage::verify::verify(&log, |_| {});
        assert!(report.ok(), "{}: {:?}", f.name, report.faults);
        let lines: Vec<String> = log.read_from(Seq::FIRST).map(|e| json::to_line(&e.unwrap())).collect();
        assert_eq!(lines, expected_lines(f), "{}", f.name);
    }
}

#[test]
fn golden_jsonl_imports_to_the_same_log() {
    for f in &FIXTURES {
        let tmp = tempfile::tempdir().unwrap();
        let file = fixture_dir(f).join("log.jsonl");
        let plan = engram::learning::import::validate(&file, ImportSource::open(&file).unwrap()).unwrap();
        let log = SledLog::open(tmp.path(), LogConfig::default()).unwrap();
        let none = engram::local_state::projector::Projector::in_memory(Vec::new());
        engram::learning::import::run(&plan, &log, &none, |_| Vec::new(), |_| {}).unwrap();
        let lines: Vec<String> = log.read_from(Seq::FIRST).map(|e| json::to_line(&e.unwrap())).collect();
        assert_eq!(lines, expected_lines(f), "{}", f.name);
    }
}

#[test]
fn this_build_still_writes_the_fixtures() {
    // The builders above are deterministic; while no schema version changed
    // they reproduce the fixtures. When one does, this test is updated to
    // build with the new version and the fixtures stay as they are.
    for f in &FIXTURES {
        let lines: Vec<String> = (f.events)()
            .into_iter()
            .enumerate()
            .map(|(i, mut e)| {
                e.seq = Seq(i as u64 + 1);
                json::to_line(&e)
            })
            .collect();
        assert_eq!(lines, expected_lines(f), "{}", f.name);
    }
}

#[test]
#[ignore = "writes a fixture; run with ENGRAM_REGENERATE_GOLDEN=golden-vN"]
fn regenerate_golden_fixture() {
    let Some(name) = std::env::var_os("ENGRAM_REGENERATE_GOLDEN") else { return };
    let f = FIXTURES.iter().find(|f| *f.name == *name).expect("ENGRAM_REGENERATE_GOLDEN names one of FIXTURES");
    let dir = fixture_dir(f);
    assert!(!dir.join("log.jsonl").exists(), "{} is history: write a new fixture dir instead", dir.display());
    std::fs::create_dir_all(dir.join("data")).unwrap();
    {
        let log = SledLog::open(&dir.join("data"), LogConfig::default()).unwrap();
        log.append((f.events)()).unwrap();
        let mut jsonl = String::new();
        let mut frames = Vec::new();
        for env in log.read_from(Seq::FIRST) {
            let env = env.unwrap();
            jsonl.push_str(&json::to_line(&env));
            jsonl.push('\n');
            binary::encode_into(&env, &mut frames);
        }
        std::fs::write(dir.join("log.jsonl"), jsonl).unwrap();
        std::fs::write(dir.join("log.frames"), frames).unwrap();
    }
    let _ = std::fs::remove_file(dir.join("data/engram.lock"));
    let _ = std::fs::remove_file(dir.join("data/engram.sock"));
}
