//! The demo's second part: routing among two candidate models.
//!
//! The demo runs offline, so it cannot call a real model. To show the
//! pattern store choosing among candidates it starts, on 127.0.0.1, a small
//! **scripted** server that speaks Ollama's `/api/chat` and serves two
//! stand-in models, each with one fixed habit — and says so in the report:
//!
//! * `local:dates` always plans `get_date`;
//! * `local:words` always plans `word_count` on the file a request names
//!   (`~/notes.txt` when it names none).
//!
//! Each is right on one kind of request ("what's the date for …", "count
//! the words in …") and wrong on the other. The demo's user reads each reply and says
//! `:good` or `:bad`, as a person would; the runtime, configured with both
//! as `[llm] candidates`, routes, explores and records exactly as it would
//! with real models. The report then reads from the log which model the
//! store chose for an unseen request of each kind, and why.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use anyhow::Context;
use engram::actors::config::Config;
use engram::actors::llm::ModelPriceSection;
use engram::actors::Runtime;
use engram::events::payloads::FeedbackRating;
use engram::events::SessionId;
use serde_json::{json, Value};

/// The two stand-in models: (name, the tool it always plans).
pub const MODELS: [(&str, &str); 2] = [("local:dates", "get_date"), ("local:words", "word_count")];

/// Sessions of the routing part start with this (the report tells them
/// apart from the bundled workload's).
pub const SESSION_PREFIX: &str = "route-";

/// Why the user asks, so that no two requests repeat (a repeat would be
/// answered by the fast path, with no model at all).
const PURPOSES: &[&str] = &[
    "the report",
    "the backup",
    "my sister",
    "the archive",
    "the meeting",
    "the printer",
    "the review",
    "the trip",
    "the move",
    "the budget",
    "the audit",
    "the class",
    "the newsletter",
    "the lawyer",
    "the garden club",
    "the landlord",
    "the choir",
    "the workshop",
    "the insurance",
    "the wedding",
];

/// The unseen requests the report asks about, one per kind.
pub const UNSEEN: [&str; 2] = ["count the words in ~/journal.txt for the book club", "what's the date for the email"];

/// Starts the scripted server; returns its base URL. Its thread lives
/// until the process ends.
pub fn serve() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").context("starting the demo's model server")?;
    let url = format!("http://{}", listener.local_addr()?);
    std::thread::Builder::new().name("demo-models".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = answer(stream);
            });
        }
    })?;
    Ok(url)
}

/// One request: the planner gets the model's habit (the home's model: its
/// script, [`crate::demo::home::answer`]), every other context a plain
/// answer (the reply repeats what the tools said).
fn answer(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut len = 0usize;
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = req["model"].as_str().unwrap_or_default();
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let system = messages.first().and_then(|m| m["content"].as_str()).unwrap_or_default();
    let user = messages.get(1).and_then(|m| m["content"].as_str()).unwrap_or_default();
    let home = (model == crate::demo::home::MODEL).then(|| crate::demo::home::answer(system, user)).flatten();
    let content = if let Some(home) = home {
        home
    } else if system.starts_with("You plan which tools") {
        let path = user.split_whitespace().find(|w| w.starts_with("~/")).unwrap_or("~/notes.txt");
        match MODELS.iter().find(|(m, _)| *m == model).map_or("word_count", |(_, t)| *t) {
            "get_date" => json!([{"tool": "get_date", "args": {}}]).to_string(),
            tool => json!([{"tool": tool, "args": {"path": path}}]).to_string(),
        }
    } else if system.starts_with("You extract lasting facts") {
        "[]".to_owned()
    } else if system.starts_with("You write the diary entry") {
        // A stand-in diary entry: the session's first request, as asked.
        let asked = user.lines().find_map(|l| l.strip_prefix("user: ")).unwrap_or("a question");
        json!({"summary": format!("The user asked: {asked}"), "topics": ["files", "dates", "demo"]}).to_string()
    } else {
        let said: Vec<&str> =
            messages.iter().filter(|m| m["role"] == "tool").filter_map(|m| m["content"].as_str()).collect();
        match said.last() {
            Some(s) => s.split_whitespace().collect::<Vec<_>>().join(" "),
            None => "Done.".to_owned(),
        }
    };
    let lines = [
        json!({"model": model, "message": {"role": "assistant", "content": content}, "done": false}),
        json!({"model": model, "message": {"role": "assistant", "content": ""}, "done": true,
               "prompt_eval_count": 60, "eval_count": 12}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// `[llm]` for the two stand-ins on `url`: `local:dates` the default, both
/// candidates, both priced (the words model a little dearer, so a tie
/// would go to the dates one).
pub fn config(mut base: Config, url: &str) -> Config {
    base.llm.provider = "ollama".into();
    base.llm.base_url = url.to_owned();
    base.llm.model = MODELS[0].0.into();
    base.llm.candidates = MODELS.iter().map(|(m, _)| (*m).to_owned()).collect();
    base.llm.pricing_version = "demo".into();
    for (m, price) in [(MODELS[0].0, "0.10"), (MODELS[1].0, "0.20")] {
        let p: engram::events::rust_decimal::Decimal = price.parse().expect("a decimal");
        base.llm.prices.insert(m.into(), ModelPriceSection { input_per_mtok: p, output_per_mtok: p });
    }
    base.llm.planner_timeout_ms = 5_000;
    // Each request here names a purpose never asked before, so that the
    // models, not the fast path, answer and the store has their answers
    // to learn from. A second reading would confirm "count the words in
    // ~/x for the choir" by the offline planner (rightly: the purpose is
    // no argument) and leave the store nothing to choose: off for this
    // part only.
    base.fast_path.second_reading = false;
    base
}

/// Takes the routing part's sessions through `rt`: requests of both kinds,
/// one per session, each rated by whether its reply holds what was asked;
/// then the unseen requests. Returns the number of sessions.
pub fn drive(rt: &Runtime) -> anyhow::Result<usize> {
    let mut n = 0;
    let year = chrono::Local::now().format("%Y").to_string();
    for (i, purpose) in PURPOSES.iter().enumerate() {
        let file = crate::demo::tools::FILES[i % 6].0;
        // (the request, what a right answer holds)
        let asks = [
            (format!("count the words in ~/{file} for {purpose}"), "words"),
            (format!("what's the date for {purpose}"), year.as_str()),
        ];
        for (kind, (text, right)) in asks.iter().enumerate() {
            let session = SessionId::new(format!("{SESSION_PREFIX}{i:02}-{kind}"));
            let reply = rt.handle_utterance(&session, text).with_context(|| format!("{session}: {text:?}"))?;
            let good = reply.tools_ok && reply.text.contains(right);
            let rating = if good { FeedbackRating::Positive } else { FeedbackRating::Negative };
            rt.feedback(&session, rating, None)?;
            rt.end_session(&session)?;
            n += 1;
            rt.settle(Duration::from_secs(10));
        }
    }
    for (k, text) in UNSEEN.iter().enumerate() {
        let session = SessionId::new(format!("{SESSION_PREFIX}unseen-{k}"));
        rt.handle_utterance(&session, text)?;
        rt.end_session(&session)?;
        n += 1;
    }
    rt.settle(Duration::from_secs(10));
    Ok(n)
}
