//! `engram run` end to end: turns over standard input, `--once --json`,
//! and a `kill -9` of the running process mid-session: after a restart
//! every turn completes and every derived event exists exactly once.
//!
//! Needs the embedding model where `scripts/fetch-models.sh` installs it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use engram::events::codec::json;
use engram::{Envelope, Event, EventKind};

fn engram(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_engram"));
    c.arg("--data").arg(data).env_remove("ENGRAM_CONFIG").env("XDG_CONFIG_HOME", data.join("no-config"));
    c
}

/// `engram run ARGS` on `data` fed `input` whole (written on a thread of
/// its own, so a long input never waits on the replies), to its end.
fn run_fed(data: &Path, args: &[&str], input: Vec<u8>) -> std::process::Output {
    let mut child = engram(data)
        .arg("run")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out
}

/// Every envelope in the data dir, via `engram export`.
fn export(data: &Path) -> Vec<Envelope> {
    let out = engram(data).arg("export").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| json::from_line(l).unwrap()).collect()
}

#[test]
fn run_answers_lines_of_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    // Line 3 is not UTF-8 (Latin-1 "café", stray bytes): named, skipped,
    // and the lines after it are read.
    let input = b"what time is it\n:good\ncaf\xe9 \xff\xfe\nche ore sono\ntell me a joke\n";
    let out = run_fed(dir.path(), &["--session", "s-stdin"], input.to_vec());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("standard input line 3: not valid UTF-8; skipped"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(lines[0].starts_with("[L0 "), "{stdout}");
    assert!(lines[1].starts_with("[L0 "), "{stdout}");
    assert!(lines[2].starts_with("[planner ") && lines[2].contains("don't know"), "{stdout}");
    let events = export(dir.path());
    let kinds = |k: EventKind| events.iter().filter(|e| e.kind() == k).count();
    assert_eq!(kinds(EventKind::TurnCompleted), 3);
    assert_eq!(kinds(EventKind::FeedbackReceived), 1);
    assert_eq!(kinds(EventKind::SessionEnded), 1, "the session ends with the input");
    assert_eq!(kinds(EventKind::SummaryWritten), 1);
}

#[test]
fn run_once_json_prints_the_turns_events() {
    let dir = tempfile::tempdir().unwrap();
    let out = engram(dir.path()).args(["run", "--once", "what time is it", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Envelope> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| json::from_line(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind().name()).collect();
    for k in ["utterance.received", "intent.judged", "route.decided", "fastpath.hit", "tool.called", "turn.completed"] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    let turn = events[0].turn;
    assert!(events.iter().all(|e| e.turn == turn), "only the turn's events");
}

/// `kill -9` while turns are in flight; the restarted runtime finishes them
/// from the actors' checkpoints and derives nothing twice.
#[test]
fn kill_9_mid_session_then_restart_derives_everything_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    kill_9_mid_session_then_restart(dir.path());
}

/// The same on a shared JetStream log: the data dir keeps a relaxed copy
/// of the stream, and the restart fetches what the kill took from it.
#[test]
fn kill_9_mid_session_on_a_jetstream_log_then_restart_derives_everything_exactly_once() {
    let store = tempfile::tempdir().unwrap();
    let server = engram::storage::jetstream::server::NatsServer::start(store.path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let toml = format!("[storage]\nbackend = \"jetstream\"\nnats_url = \"{}\"\n", server.url());
    std::fs::write(dir.path().join("engram.toml"), toml).unwrap();
    kill_9_mid_session_then_restart(dir.path());
}

fn kill_9_mid_session_then_restart(data: &Path) {
    let lines = [
        "what time is it",
        "tell me a joke",
        "list the files in ~/notes",
        "my name is Ada",
        "che ore sono",
        "what is the date today",
        "where am I",
        "read the file ~/todo.txt",
    ];
    let mut child = engram(data)
        .args(["run", "--session", "s-crash"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for l in &lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    // Two replies out, the rest queued or in flight: kill it.
    let mut reply = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for _ in 0..2 {
        reply.clear();
        stdout.read_line(&mut reply).unwrap();
        assert!(!reply.is_empty() && Instant::now() < deadline, "no reply before the kill");
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // Restart in the same session; one more turn, then the session ends.
    let mut child = engram(data)
        .args(["run", "--session", "s-crash"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"what time is it\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let events = export(data);
    // Every utterance opened a turn that completed exactly once, and each
    // step of it is there exactly once.
    let mut per_turn: BTreeMap<_, BTreeMap<&str, usize>> = BTreeMap::new();
    for e in &events {
        if let Some(t) = e.turn {
            *per_turn.entry(t).or_default().entry(e.kind().name()).or_default() += 1;
        }
    }
    let utterances = events.iter().filter(|e| e.kind() == EventKind::UtteranceReceived).count();
    assert!(utterances >= 3, "at least the two answered turns and the restart's: {utterances}");
    for (turn, kinds) in &per_turn {
        if !kinds.contains_key("utterance.received") {
            continue;
        }
        for k in ["utterance.received", "intent.judged", "route.decided", "reply.delivered", "turn.completed"] {
            assert_eq!(kinds.get(k), Some(&1), "turn {turn}: {k} in {kinds:?}");
        }
        assert!(kinds.get("plan.created").is_none_or(|&n| n == 1), "turn {turn}: {kinds:?}");
        assert!(kinds.get("fastpath.hit").is_none_or(|&n| n == 1), "turn {turn}: {kinds:?}");
    }
    // Derived events: one per cause, kind and turn (a session's end records
    // each of its planner turns in the pattern store: one per turn, and
    // how many planner turns the session has depends on when the kill
    // came).
    let mut by_cause: BTreeMap<_, usize> = BTreeMap::new();
    for e in &events {
        if let Some(c) = e.causation {
            if !matches!(e.event, Event::ToolCalled(_) | Event::ToolCompleted(_) | Event::LlmCallCompleted(_)) {
                *by_cause.entry((c, e.kind().name(), e.turn)).or_default() += 1;
            }
        }
    }
    for ((cause, kind, _), n) in &by_cause {
        // The judge gives one verdict per cause and subject turn.
        if *kind != "eval.completed" {
            assert_eq!(*n, 1, "{kind} derived {n} times from {cause}");
        }
    }
    let ended = events.iter().filter(|e| e.kind() == EventKind::SessionEnded).count();
    assert_eq!(ended, 1);
    let summaries = events.iter().filter(|e| e.kind() == EventKind::SummaryWritten).count();
    assert_eq!(summaries, 1);
    let verify = engram(data).arg("verify").output().unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
}

/// The runtime folds an imported history and derives nothing from it again
/// — not when it starts on an imported data dir, not when a later import
/// lands between two runs — and a learnt replay of a tool it does not have
/// goes to the planner.
#[test]
fn imported_history_is_folded_not_acted_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/turns.jsonl");
    let import = |file: &str| {
        let out = engram(data).args(["import", file]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let run = |text: &str| {
        let out = engram(data).args(["run", "--once", text]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let count = |events: &[Envelope], k: EventKind| events.iter().filter(|e| e.kind() == k).count();

    import(example);
    // The example teaches an L2 pipeline of tools this runtime does not
    // have (get_urls, describe_entries): the planner gets the turn.
    let replayed = run("download https://example.org/zzz and describe it");
    assert!(replayed.starts_with("[planner "), "{replayed}");
    let imported = export(data);
    run("what time is it");
    let after_run = export(data);
    for k in [EventKind::RouteDecided, EventKind::PlanCreated, EventKind::TurnCompleted, EventKind::EvalCompleted] {
        assert_eq!(count(&after_run, k), count(&imported, k) + usize::from(k != EventKind::PlanCreated), "{k:?}");
    }
    assert_eq!(count(&after_run, EventKind::SummaryWritten), 2, "only the two live sessions are summarised");

    // A second history imported between two runs.
    let second = dir.path().join("second.jsonl");
    let text = std::fs::read_to_string(example).unwrap().replace("\"session\":\"s-", "\"session\":\"t-");
    std::fs::write(&second, text).unwrap();
    import(second.to_str().unwrap());
    let imported = export(data);
    run("what time is it");
    let after = export(data);
    for k in [EventKind::RouteDecided, EventKind::PlanCreated, EventKind::TurnCompleted] {
        assert_eq!(count(&after, k), count(&imported, k) + usize::from(k != EventKind::PlanCreated), "{k:?}");
    }
    // Every imported turn's utterance has exactly one route.decided.
    let mut routes: BTreeMap<_, usize> = BTreeMap::new();
    for e in &after {
        if e.kind() == EventKind::RouteDecided {
            *routes.entry(e.turn).or_default() += 1;
        }
    }
    assert!(routes.values().all(|&n| n == 1), "{routes:?}");
}

/// The small things a user meets at the edges of `engram run`: an ended
/// session is refused at once (no wait for actors that have nothing to do,
/// no "not settled" warnings), feedback before any turn appends nothing, a
/// session id with a control character is refused, stderr into a pipe has
/// no colour codes, and a clean exit leaves no pid in the lock file.
#[test]
fn run_at_the_edges() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();

    // Feedback before any turn: said, not appended; the session goes on.
    let mut child = engram(data)
        .args(["run", "--session", "s-edge"])
        .env("ENGRAM_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b":good\nwhat time is it\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("no turn yet in session s-edge"), "{}", stderr(&out));
    assert!(!stderr(&out).contains('\u{1b}'), "colour codes on a piped stderr: {}", stderr(&out));
    let events = export(data);
    assert_eq!(events.iter().filter(|e| e.kind() == EventKind::FeedbackReceived).count(), 0);
    assert_eq!(events.iter().filter(|e| e.kind() == EventKind::TurnCompleted).count(), 1);
    let lock = std::fs::read_to_string(data.join("engram.lock")).unwrap();
    assert!(lock.trim().is_empty(), "a clean exit leaves the lock file empty: {lock:?}");

    // The session has ended: refused, promptly, without warnings.
    let out = engram(data).args(["run", "--session", "s-edge", "--once", "hello"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("session \"s-edge\" has ended"), "{err}");
    assert!(!err.contains("not settled") && !err.contains("still busy"), "{err}");

    // A control character in the id.
    let out = engram(data).args(["run", "--session", "s\u{1b}[2J", "--once", "hello"]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("control characters"), "{}", stderr(&out));
}

/// An error and its cause are printed once each, not the cause twice.
#[test]
fn an_os_error_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = engram(dir.path()).args(["import", "/no/such/file.jsonl"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert!(err.contains("/no/such/file.jsonl"), "{err}");
}

/// `:forget TEXT` in `engram run`: a fact learnt in the same run is
/// retracted while the runtime runs (`engram forget` cannot: the data dir
/// is locked), and a later "what is my name?" no longer knows it.
#[test]
fn run_forgets_a_fact_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = engram(dir.path())
        .args(["run", "--session", "s-forget"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"my name is Ada\n:end\nwhat is my name?\n:forget Ada\n:forget Ada\nwhat is my name?\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    // A reply starts with its `[layer …]` line and may run over several.
    let mut replies: Vec<String> = Vec::new();
    for line in stdout.lines() {
        match replies.last_mut() {
            Some(reply) if !line.starts_with('[') => {
                reply.push('\n');
                reply.push_str(line);
            }
            _ => replies.push(line.to_owned()),
        }
    }
    assert!(replies[1].contains("Ada"), "known before: {stdout}");
    assert!(!replies[2].contains("Ada"), "forgotten after: {stdout}");
    assert!(stderr.contains("forgot USER/identity: my name is Ada"), "{stderr}");
    assert!(stderr.contains("nothing the assistant learnt matches \"Ada\""), "asked twice: {stderr}");
}

/// The actors' snapshots through the binary: a second `run` reads them, a
/// damaged one is reported, costs only a fold from seq 1, and is saved
/// afresh — the listener's, if it were read as garbage, would number the
/// session's next turn wrong.
#[test]
fn a_restart_starts_from_the_snapshots_and_a_damaged_one_costs_only_a_fold() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let run = |text: &str| {
        let out = engram(data)
            .env("ENGRAM_RUNTIME_SNAPSHOT_EVERY", "4")
            .args(["run", "--session", "s-snap", "--no-end", "--json", "--once", text])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let events: Vec<Envelope> =
            String::from_utf8(out.stdout).unwrap().lines().map(|l| json::from_line(l).unwrap()).collect();
        let number = events.iter().find_map(|e| match &e.event {
            Event::UtteranceReceived(u) => Some(u.turn_number),
            _ => None,
        });
        (number, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let snapshots = || {
        let out = engram(data).args(["stats", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let head = stats["head_seq"].as_u64().unwrap();
        let listed: BTreeMap<String, serde_json::Value> = stats["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["owner"].as_str().unwrap().to_owned(), s.clone()))
            .collect();
        (head, listed)
    };
    assert_eq!(run("what time is it").0, Some(1));
    let (head, listed) = snapshots();
    for owner in
        ["listener", "router", "planner", "reply_loop", "pattern_store", "judge", "summariser", "graph", "memory"]
    {
        assert_eq!(listed[owner]["seq"], head, "{owner}: saved at shutdown, at the head: {listed:?}");
    }
    let snaps = data.join("snapshots");
    let mut listener = std::fs::read(snaps.join("listener.snap")).unwrap();
    let last = listener.len() - 1;
    listener[last] ^= 0xff;
    std::fs::write(snaps.join("listener.snap"), listener).unwrap();
    std::fs::write(snaps.join("router.snap"), b"ENGRAMSS").unwrap();
    let (_, listed) = snapshots();
    assert!(listed["listener"]["damaged"].is_string(), "stats names the damage: {listed:?}");

    let (number, stderr) = run("what time is it");
    assert_eq!(number, Some(2), "the listener folded the log instead of its damaged snapshot");
    assert!(stderr.contains("snapshot not used"), "the damage is reported: {stderr}");
    let (head, listed) = snapshots();
    for owner in ["listener", "router"] {
        assert_eq!(listed[owner]["seq"], head, "{owner}: saved afresh: {listed:?}");
    }
}

/// A file whose text carries terminal control sequences (a title change,
/// a cleared screen, a reordering mark), read out by `engram run`: the
/// terminal gets them escaped, the log keeps the text as it was. A reply
/// over `[reply_loop] max_reply_bytes` is stored cut, once: the summary the
/// session ends with does not hold it again.
#[test]
fn replies_reach_the_terminal_escaped_and_the_log_capped_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let evil = "hello \u{1b}]0;pwned\u{7}\u{1b}[2J world \u{202e}dlrow";
    std::fs::write(files.join("evil.txt"), evil).unwrap();
    let big: String = (0..3000).map(|i| format!("line{i} ")).collect();
    std::fs::write(files.join("big.txt"), &big).unwrap();
    let roots = files.to_str().unwrap();
    let run = |text: &str| {
        let out = engram(&data)
            .args(["run", "--once", text])
            .env("ENGRAM_TOOLS_FILE_ROOTS", roots)
            .env("ENGRAM_REPLY_LOOP_MAX_REPLY_BYTES", "2000")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let shown = run(&format!("read the file {}/evil.txt", roots));
    assert!(shown.contains("hello"), "{shown}");
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}') && !shown.contains('\u{202e}'), "{shown:?}");
    assert!(shown.contains("\\u{1b}]0;pwned\\u{7}") && shown.contains("\\u{202e}"), "{shown}");
    let replies = |events: &[Envelope]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ReplyDelivered(r) => Some(r.text.clone()),
                _ => None,
            })
            .collect()
    };
    assert!(replies(&export(&data)).iter().any(|r| r.contains(evil)), "the log keeps the text as it was");

    let shown = run(&format!("read the file {}/big.txt", roots));
    assert!(shown.contains("[cut: ") && shown.contains("max_reply_bytes = 2000"), "{}", &shown[shown.len() - 200..]);
    let events = export(&data);
    let big_reply = replies(&events).into_iter().find(|r| r.contains("line0 ")).expect("the big reply");
    assert!(big_reply.len() < 2100, "stored cut: {} bytes", big_reply.len());
    for e in &events {
        if let Event::SummaryWritten(s) = &e.event {
            assert!(s.summary.len() < 4100 && !s.summary.contains("line2999"), "the summary holds the reply again");
        }
    }
}

/// A key that moved out of `[runtime]` to its component's section is still
/// read where it was, and the user is told where it lives now.
#[test]
fn a_key_moved_out_of_runtime_is_read_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    std::fs::write(data.join("engram.toml"), "[runtime]\nmax_reply_bytes = 2000\n").unwrap();
    let out = engram(data).args(["run", "--once", "what time is it"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[runtime] max_reply_bytes is deprecated: write it as [reply_loop] max_reply_bytes"),
        "{stderr}"
    );
    std::fs::write(
        data.join("engram.toml"),
        "[runtime]\nmax_reply_bytes = 2000\n[reply_loop]\nmax_reply_bytes = 3000\n",
    )
    .unwrap();
    let out = engram(data).args(["run", "--once", "what time is it"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("both are set"), "{stderr}");
}

/// A session `engram run` opened itself and the runtime ended by idleness
/// is replaced on the next line, said on stderr, and the line is answered
/// (it used to exit 1 with "has ended"); a session named by `--session`
/// keeps the error — the user asked for that one.
#[test]
fn an_idle_session_is_replaced_unless_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    std::fs::write(data.join("engram.toml"), "[runtime]\nsession_idle_secs = 1\n").unwrap();
    let spawn = |extra: &[&str]| {
        engram(data)
            .arg("run")
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let talk = |mut child: std::process::Child| {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"what time is it\n").unwrap();
        // The first reply (the runtime has started), then long enough for
        // the listener's idle check (every 250 ms here) to end the session.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        std::thread::sleep(Duration::from_secs(3));
        stdin.write_all(b"che ore sono\n").unwrap();
        drop(stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status, first + &rest, String::from_utf8_lossy(&out.stderr).into_owned())
    };

    let (status, stdout, err) = talk(spawn(&[]));
    assert!(status.success(), "{err}");
    assert!(err.contains("ended while idle; new session cli-"), "{err}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("[L0 ")).count(), 2, "{stdout}");
    let events = export(data);
    let sessions: std::collections::BTreeSet<_> =
        events.iter().filter(|e| e.kind() == EventKind::TurnCompleted).filter_map(|e| e.session.clone()).collect();
    assert_eq!(sessions.len(), 2, "one turn in each session: {sessions:?}");

    let (status, stdout, err) = talk(spawn(&["--session", "s-named"]));
    assert!(!status.success(), "{err}{stdout}");
    assert!(err.contains("session \"s-named\" has ended"), "{err}");
}

/// An `engram.toml` in the data dir that cannot be read — a directory, a
/// dangling symlink, a symlink loop — is an error naming it, never passed
/// over for the configuration under `$XDG_CONFIG_HOME`.
#[test]
fn a_broken_config_in_the_data_dir_is_named_not_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let xdg = tmp.path().join("xdg");
    std::fs::create_dir_all(xdg.join("engram")).unwrap();
    std::fs::write(xdg.join("engram").join("engram.toml"), "[tools]\nlocation = \"Xdg-City\"\n").unwrap();
    for what in ["a directory", "a dangling symlink", "a symlink loop"] {
        let data = tmp.path().join(what.replace(' ', "-"));
        std::fs::create_dir_all(&data).unwrap();
        let config = data.join("engram.toml");
        match what {
            "a directory" => std::fs::create_dir(&config).unwrap(),
            "a dangling symlink" => std::os::unix::fs::symlink(data.join("gone.toml"), &config).unwrap(),
            _ => std::os::unix::fs::symlink(&config, &config).unwrap(),
        }
        let out = Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("--data")
            .arg(&data)
            .args(["run", "--offline", "--once", "where am I"])
            .env_remove("ENGRAM_CONFIG")
            .env("XDG_CONFIG_HOME", &xdg)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(stderr.contains(&config.display().to_string()), "{what}: {stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("Xdg-City"), "{what}");
    }
}

/// SIGTERM (or Ctrl-C's SIGINT) to `engram run` ends it as the end of its
/// input does: the session ends, so its summary and facts come, and the
/// exit status is 128 + the signal. (Killed where it stood, as before, no
/// session ever ended.)
#[test]
fn a_signal_ends_the_session_as_the_end_of_input_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = engram(dir.path())
        .args(["run", "--offline"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"my name is Bob\n").unwrap();
    stdin.flush().unwrap();
    let mut reply = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut reply).unwrap();
    assert!(reply.starts_with("[planner "), "{reply}");
    // SAFETY: a signal to the child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    assert!(stderr.contains("SIGTERM: ending session"), "{stderr}");
    drop(stdin);
    let events = export(dir.path());
    let kinds = |k: EventKind| events.iter().filter(|e| e.kind() == k).count();
    assert_eq!(kinds(EventKind::SessionEnded), 1, "the session ends");
    assert_eq!(kinds(EventKind::SummaryWritten), 1, "and what its end derives comes");
    assert_eq!(kinds(EventKind::GraphFactAdded), 1, "{events:?}");
}

/// An utterance longer than a turn's text may be (64 KiB, what `engram
/// import` reads back) is refused naming its line, nothing recorded, and
/// the run goes on; one at the limit is taken, and the log exports and
/// imports again whole (its passages' vectors make its longest line ten
/// times the utterance).
#[test]
fn an_utterance_over_the_limit_is_refused_and_one_at_it_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let words = ["alpha", "beta", "house", "light", "river", "stone"];
    let long: String = (0..20_000).map(|i| words[i % words.len()]).collect::<Vec<_>>().join(" ");
    let at_limit = &long[..long[..65_536].rfind(' ').unwrap()];
    let input = format!("{at_limit}\n{}\nwhat time is it\n", &long[..70_000]);
    let out = run_fed(&data, &["--offline"], input.into_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let refused = "standard input line 2: an utterance of 69999 bytes is longer than the 65536"; // (its end trimmed)
    assert!(stderr.contains(refused), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2, "the lines around it are answered");
    let events = export(&data);
    let kinds = |k: EventKind| events.iter().filter(|e| e.kind() == k).count();
    assert_eq!(kinds(EventKind::UtteranceReceived), 2, "nothing of the refused one");
    // The round trip the export promises.
    let file = dir.path().join("export.jsonl");
    let exported = engram(&data).arg("export").output().unwrap();
    std::fs::write(&file, &exported.stdout).unwrap();
    let again = dir.path().join("again");
    let imported = engram(&again).args(["import", file.to_str().unwrap()]).output().unwrap();
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    assert_eq!(export(&again).len(), events.len());
}

/// `[runtime] max_utterance_bytes` sets the limit lower (a voice
/// assistant's); above import's 64 KiB it is a configuration error naming
/// the key, since such a log would not import again.
#[test]
fn the_utterance_limit_is_configured_within_imports() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("engram.toml"), "[runtime]\nmax_utterance_bytes = 40\n").unwrap();
    let input = "what time is it\nwhat time is it in the kitchen and in the whole house please\nwhat day is it\n";
    let out = run_fed(&data, &["--offline"], input.as_bytes().to_vec());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("standard input line 2: an utterance of 60 bytes is longer than the 40"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2, "the lines around it are answered");
    std::fs::write(data.join("engram.toml"), "[runtime]\nmax_utterance_bytes = 100000\n").unwrap();
    let out = engram(&data).args(["run", "--offline", "--once", "what time is it"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("engram.toml") && stderr.contains("runtime.max_utterance_bytes: 100000"), "{stderr}");
}
