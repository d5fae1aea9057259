//! The pattern store through the CLI: import derives it, `recommend` reads
//! it, and a rebuild reproduces it digest for digest on a large import.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn engram(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_engram")).arg("--data").arg(data).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: Output) -> Value {
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

const MODELS: [&str; 3] = ["ollama:gemma4:26b", "ollama:qwen3:8b", "openai:gpt-5-mini"];
const TAGS: [&str; 4] = ["doc", "debug", "test", "refactor"];
const EXT: [&str; 5] = [".md", ".py", ".rs", ".pdf", ".jpg"];
const TOOLS: [&str; 6] = ["read_file", "describe_entries", "list_dir", "get_urls", "find_files", "get_events"];

/// A deterministic turn file: `sessions` sessions of 1–6 turns, a quarter
/// answered by the fast path, the rest by one of three models, features
/// from small pools, most turns scored, some with a workload.
fn turn_file(sessions: usize) -> String {
    let mut out = String::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for s in 0..sessions {
        let turns = 1 + next(6);
        for t in 1..=turns {
            let minute = s as u64 * 7 + t;
            let at = format!(
                "2026-{:02}-{:02}T{:02}:{:02}:00Z",
                1 + minute / 40_000 % 12,
                1 + minute / 1440 % 28,
                minute / 60 % 24,
                minute % 60
            );
            let fast = next(4) == 0;
            let model = if fast { "null".to_owned() } else { format!("\"{}\"", MODELS[next(3) as usize]) };
            let tag = TAGS[next(4) as usize];
            let ext = EXT[next(5) as usize];
            let (t1, t2) = (TOOLS[next(6) as usize], TOOLS[next(6) as usize]);
            let score = match next(5) {
                0 => String::new(),
                _ => format!(r#","score":0.{},"score_confidence":0.{}"#, 1 + next(9), 3 + next(7)),
            };
            let workload = if next(8) == 0 { r#","workload":"bench-a""# } else { "" };
            out.push_str(&format!(
                r#"{{"session":"p-{s}","turn":{t},"at":"{at}","text":"request {s}/{t}","steps":[{{"tool":"{t1}"}}],"model":{model},"planner_ms":900,"latency_ms":{},"cost_usd":"0.000{}","pricing_version":"2026-{:02}","features":{{"intent_tags":["{tag}"],"file_extensions":["{ext}"],"tool_names":["{t1}","{t2}"]}}{score}{workload}}}"#,
                1000 + next(9000),
                next(1000),
                1 + s % 12,
            ));
            out.push('\n');
        }
    }
    out
}

#[test]
fn large_import_rebuilds_to_the_live_digest() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("turns.jsonl");
    std::fs::write(&file, turn_file(6_000)).unwrap();
    let imported = json(engram(&data, &["import", file.to_str().unwrap(), "--json"]));
    assert!(imported["imported_turns"].as_u64().unwrap() > 15_000, "{imported}");

    let stats = json(engram(&data, &["stats", "--json"]));
    let live = &stats["projections"]["pattern_outcomes"];
    assert!(live["rows"].as_u64().unwrap() > 100, "{stats}");
    let recorded = stats["by_kind"]["pattern.recorded"].as_u64().unwrap_or(0);
    assert!(recorded > 10_000, "pattern.recorded: {recorded}");

    let rebuilt = json(engram(&data, &["rebuild", "--projection", "pattern_outcomes", "--json"]));
    let r = &rebuilt["projections"]["pattern_outcomes"];
    assert_eq!(r["digest"], live["digest"], "rebuild differs from live: {rebuilt} vs {stats}");
    assert_eq!(r["rows"], live["rows"]);

    // Importing the same file again changes nothing, the store included.
    let again = json(engram(&data, &["import", file.to_str().unwrap(), "--json"]));
    assert_eq!(again["events_appended"], 0, "{again}");
    let stats2 = json(engram(&data, &["stats", "--json"]));
    assert_eq!(stats2["projections"]["pattern_outcomes"]["digest"], live["digest"]);

    let verify = engram(&data, &["verify"]);
    assert!(verify.status.success(), "{}", stderr(&verify));

    // The store answers: the first alternative is the chosen model when
    // the gates pass, alternatives are ranked, and the confidence is the
    // formula over the top two scores.
    let rec = json(engram(
        &data,
        &[
            "recommend",
            "--json",
            "--features",
            r#"{"intent_tags":["doc"],"file_extensions":[".md"],"tool_names":["read_file","list_dir"]}"#,
        ],
    ));
    let alts = rec["alternatives"].as_array().unwrap();
    assert!(!alts.is_empty(), "{rec}");
    assert_eq!(rec["k_cluster_size"], 10);
    let scores: Vec<f64> = alts.iter().map(|a| a["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{rec}");
    if scores.len() > 1 {
        let conf = (scores[0] - scores[1]) / scores[0];
        assert!((rec["confidence"].as_f64().unwrap() - conf).abs() < 1e-9, "{rec}");
    }
    let samples: u64 = alts.iter().map(|a| a["sample_size"].as_u64().unwrap()).sum();
    assert!(samples >= 10, "K = 10 rows hold at least one sample each: {rec}");
    match rec["chosen_model"].as_str() {
        Some(m) => {
            assert_eq!(m, alts[0]["model"]);
            assert!(rec["confidence"].as_f64().unwrap() >= 0.05);
            assert!(alts[0]["sample_size"].as_u64().unwrap() >= 5);
        }
        None => assert!(rec["confidence"].as_f64().unwrap() < 0.05 || alts[0]["sample_size"].as_u64().unwrap() < 5),
    }
}

#[test]
fn recommend_from_the_example() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/turns.jsonl");
    json(engram(&data, &["import", example.to_str().unwrap(), "--json"]));
    let features = r#"{"intent_tags":["doc"],"file_extensions":[".md"],"tool_names":["read_file","describe_entries"]}"#;
    let rec = json(engram(&data, &["recommend", "--json", "--features", features]));
    assert_eq!(rec["chosen_model"], "ollama:gemma4:26b", "{rec}");
    let alts = rec["alternatives"].as_array().unwrap();
    let models: Vec<&str> = alts.iter().map(|a| a["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["ollama:gemma4:26b", "ollama:qwen3:8b", "openai:gpt-5-mini"]);
    // Money is a decimal string; the two local models cost nothing.
    assert_eq!(alts[0]["avg_cost_usd"], "0");
    assert!(alts[2]["avg_cost_usd"].as_str().unwrap().starts_with("0.0005"), "{rec}");
    // A stricter confidence gate keeps the ranking but chooses nothing.
    let strict = json(engram(&data, &["recommend", "--json", "--min-confidence", "0.5", "--features", features]));
    assert_eq!(strict["chosen_model"], Value::Null);
    assert_eq!(strict["alternatives"], rec["alternatives"]);
    // Features from stdin give the same answer.
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("--data")
        .arg(&data)
        .args(["recommend", "--json", "--features", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(features.as_bytes()).unwrap();
    let piped = json(child.wait_with_output().unwrap());
    assert_eq!(piped["alternatives"], rec["alternatives"]);
    // The store is listed by inspect.
    let rows = engram(&data, &["inspect", "patterns", "--json"]);
    assert!(rows.status.success());
    let rows: Vec<Value> =
        String::from_utf8_lossy(&rows.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let total: u64 = rows.iter().map(|r| r["sample_size"].as_u64().unwrap()).sum();
    let sessions_models: u64 = rows.len() as u64;
    assert!(total >= sessions_models && sessions_models > 20, "{} rows, {total} samples", rows.len());
    // Per fingerprint, the cluster a turn of that shape meets: every model's
    // evidence, and the one the store chooses — the same answer `recommend`
    // gives for the same features.
    let clusters = engram(&data, &["inspect", "patterns", "--clusters", "--json"]);
    assert!(clusters.status.success(), "{}", stderr(&clusters));
    let clusters: Vec<Value> =
        String::from_utf8_lossy(&clusters.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        clusters.len() as u64,
        rows.iter().map(|r| r["fingerprint_id"].clone()).collect::<std::collections::HashSet<_>>().len() as u64
    );
    assert!(clusters.iter().all(|c| !c["models"].as_array().unwrap().is_empty()));
    assert!(clusters.iter().any(|c| c["chosen_model"] == "ollama:gemma4:26b"), "{clusters:?}");
    let text = engram(&data, &["inspect", "patterns", "--clusters"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("rows in the cluster") && text.contains("samples"), "{text}");
}

#[test]
fn recommend_without_a_store_or_with_bad_features() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nothing-here");
    let rec = json(engram(&data, &["recommend", "--json", "--features", "{}"]));
    assert_eq!(rec["chosen_model"], Value::Null);
    assert_eq!(rec["alternatives"], serde_json::json!([]));
    assert!(!data.exists(), "a read must not create a data dir");

    let bad = engram(&data, &["recommend", "--features", r#"{"intent_tags":["doc"],"has_images":"yes"}"#]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("has_images"), "{}", stderr(&bad));
    let unknown = engram(&data, &["recommend", "--features", r#"{"intnet_tags":["doc"]}"#]);
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains("intnet_tags"), "{}", stderr(&unknown));
    let not_json = engram(&data, &["recommend", "--features", "intent=doc"]);
    assert!(!not_json.status.success());
    assert!(stderr(&not_json).contains("--features"), "{}", stderr(&not_json));
}

#[test]
fn a_corrupt_store_is_rebuilt_from_the_log_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/turns.jsonl");
    json(engram(&data, &["import", example.to_str().unwrap(), "--json"]));
    let features = r#"{"intent_tags":["doc"],"file_extensions":[".md"],"tool_names":["read_file","describe_entries"]}"#;
    let before = json(engram(&data, &["recommend", "--json", "--features", features]));
    assert_eq!(before["chosen_model"], "ollama:gemma4:26b");
    {
        // Damage the persisted store: a row no table of the projection owns.
        let db = sled::open(data.join("log.sled")).unwrap();
        let tree = db.open_tree("projection.pattern_outcomes").unwrap();
        tree.insert(b"\xffgarbage", &b"not a row"[..]).unwrap();
        db.flush().unwrap();
    }
    // The stored rows are a cache of the log: never trusted when they do not
    // read, rebuilt from the log instead, with a warning naming them.
    let out = engram(&data, &["recommend", "--json", "--features", features]);
    assert!(out.status.success(), "a broken store never fails the caller: {}", stderr(&out));
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answer = |v: &Value| (v["chosen_model"].clone(), v["alternatives"].clone(), v["confidence"].clone());
    assert_eq!(answer(&rec), answer(&before), "the rebuilt store recommends what the intact one did");
    assert!(
        stderr(&out).contains("pattern_outcomes") && stderr(&out).contains("rebuilding it from the log"),
        "{}",
        stderr(&out)
    );
    // `recommend` only reads: it rebuilt a copy, and the data dir keeps
    // its damaged rows until a command that writes stores the rebuilt ones
    // (`engram rebuild`); after that the store reads without a word.
    let again = engram(&data, &["recommend", "--json", "--features", features]);
    assert!(stderr(&again).contains("rebuilding it from the log"), "{}", stderr(&again));
    assert!(engram(&data, &["rebuild"]).status.success());
    let stored = engram(&data, &["recommend", "--json", "--features", features]);
    assert!(!stderr(&stored).contains("rebuilding"), "{}", stderr(&stored));
    assert_eq!(answer(&serde_json::from_slice(&stored.stdout).unwrap()), answer(&before));
}
