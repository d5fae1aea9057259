//! A host process embedding engram: the runtime, offline, with one tool of
//! the host's own, taken through a few turns.
//!
//! ```sh
//! cargo run --example host                 # data dir: a new temp dir (kept)
//! cargo run --example host -- /tmp/eg      # data dir: /tmp/eg
//! ```
//!
//! The host registers `word_count {path}`, which counts the words of a file
//! in a folder of its own. "count the words in ~/notes.txt" is planned by
//! the offline planner three times (the tool's description is what the
//! request is compared with, and the parameter is called `path` so the
//! planner fills it from the path slot of the request); the fourth time,
//! with another file, the router's L1 answers without the planner.
//!
//! Needs the embedding model where `scripts/fetch-models.sh` installs it.
//! See docs/embedding.md.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engram::actors::tools::{args, FnTool};
use engram::actors::{Runtime, ToolError, ToolOutput};
use engram::events::payloads::FeedbackRating;
use engram::{EventKind, EventLog, Seq, SessionId};

/// `word_count {path}`: counts the words of a text file under `root`.
/// `~/NAME` and `NAME` both name `root/NAME`; nothing outside `root` is
/// read.
///
/// A tool that is one function of its arguments is an [`FnTool`]: a name,
/// a description (what the offline planner compares requests with, so it
/// reads like the requests it answers), its arguments and the call. The
/// argument is called `path`, a slot name of the argument extractor, so the
/// offline planner fills it with the path it finds in the request.
fn word_count(root: PathBuf) -> FnTool {
    FnTool::new("word_count", "Count the words in a text file", move |a, _ctx| {
        let path = args::req_str(a, "word_count", "path")?;
        let relative = Path::new(path.strip_prefix("~/").unwrap_or(path));
        if relative.as_os_str().is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(ToolError::Denied {
                tool: "word_count".into(),
                path: path.into(),
                reason: "only files directly in the notes folder".into(),
            });
        }
        let text = std::fs::read_to_string(root.join(relative)).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotFound { tool: "word_count".into(), path: path.into() },
            _ => ToolError::Io { tool: "word_count".into(), path: path.into(), source },
        })?;
        // A count is the host's own text, not the file's: trusted.
        Ok(ToolOutput::trusted(format!("{} words in {path}", text.split_whitespace().count())))
    })
    .with_arg("path", "the file, e.g. ~/notes.txt")
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let data = match std::env::args_os().nth(1) {
        Some(dir) => PathBuf::from(dir),
        // Kept after exit, so the log can be replayed.
        None => tempfile::Builder::new().prefix("engram-host-").tempdir()?.keep(),
    };
    let notes = tempfile::Builder::new().prefix("engram-host-notes-").tempdir()?;
    std::fs::write(notes.path().join("notes.txt"), "buy milk\ncall the plumber about the kitchen sink\n")?;
    std::fs::write(notes.path().join("todo.txt"), "renew passport before june\n")?;

    let rt = Runtime::builder()
        .data_dir(&data)
        .offline()
        .tool(Arc::new(word_count(notes.path().to_owned())))
        .turn_timeout(Duration::from_secs(30))
        .start()?;
    println!("engram runtime in {} ({})", data.display(), if rt.is_online() { "online" } else { "offline" });

    let session = SessionId::new(format!("host-{}", std::process::id()));
    let utterances = [
        "what time is it",
        "count the words in ~/notes.txt",
        "count the words in ~/notes.txt",
        "count the words in ~/notes.txt",
        "count the words in ~/todo.txt",
    ];
    for text in utterances {
        let t0 = Instant::now();
        let reply = rt.handle_utterance(&session, text)?;
        let layer = reply.layer.map_or("-", |l| l.as_str());
        println!(
            "> {text}\n  [{layer} {} ms, host call {} ms] {}",
            reply.latency_ms,
            t0.elapsed().as_millis(),
            reply.text
        );
    }
    let about = rt.feedback(&session, FeedbackRating::Positive, Some("right, thanks"))?;
    println!("feedback: positive on turn {}", about.map_or("-".into(), |t| t.to_string()));
    let turns = rt.end_session(&session)?;
    println!("session {} ended after {turns} turns", session.as_str());
    rt.settle(Duration::from_secs(10));

    let mut kinds = std::collections::BTreeMap::<EventKind, usize>::new();
    for env in rt.log().read_from(Seq(1)) {
        *kinds.entry(env?.kind()).or_default() += 1;
    }
    let count = |k: EventKind| kinds.get(&k).copied().unwrap_or(0);
    println!(
        "log: {} events; {} plans, {} fast-path hits, {} verdicts, {} patterns recorded, {} summaries",
        kinds.values().sum::<usize>(),
        count(EventKind::PlanCreated),
        count(EventKind::FastPathHit),
        count(EventKind::EvalCompleted),
        count(EventKind::PatternRecorded),
        count(EventKind::SummaryWritten),
    );
    rt.shutdown()?;
    println!("the log is in {}", data.display());
    println!("replay it: engram --data {} replay", data.display());
    Ok(())
}
