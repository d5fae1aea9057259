//! The demo's third part: a home, taught by its scripted model.
//!
//! The runtime runs on a data dir of its own ([`DIR`], inside the demo's,
//! so the other parts' figures are untouched) with two things a real home
//! assistant would have:
//!
//! * **an MCP server**: the home's tools, served over stdio by this very
//!   binary (`engram demo-home-server`, hidden; [`server`], [`house`]) —
//!   lights per room, a few named devices, a thermostat, timers and a
//!   shopping list, each call changing the state and saying what it did;
//! * **a model** on the demo's scripted local server ([`MODEL`]): it is
//!   **scripted**, and the report says so — asked to plan, it answers each
//!   request of the home's workload with that request's right call, looked
//!   up by the request's text ([`answer`]); anything else gets the empty
//!   plan `[]`.
//!
//! The household ([`workload`]) teaches eight phrasings, three times each
//! with other values, rating every reply `:good` when its steps are the
//! right call and `:bad` otherwise; then asks new requests — taught
//! phrasings with rooms, devices, items and numbers never taught, and
//! other wordings — rated the same way. What the fast path served, and
//! whether it was right, is read back from the log by the report.

mod house;
pub mod server;
pub mod workload;

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context;
use engram::actors::config::Config;
use engram::actors::tools::mcp::{McpServerSection, McpState};
use engram::actors::Runtime;
use engram::events::payloads::FeedbackRating;
use engram::events::SessionId;
use serde_json::json;

use workload::Request;

/// The home part's data dir, inside the demo's.
pub const DIR: &str = "home";

/// The hidden subcommand that serves the home over MCP.
pub const SERVER_COMMAND: &str = "demo-home-server";

/// The MCP server's name in `[mcp.servers]`.
pub const SERVER_NAME: &str = "home";

/// The scripted stand-in model that plans for the home.
pub const MODEL: &str = "local:home";

/// How many tools the home's MCP server lists.
pub fn tool_count() -> usize {
    house::listing().len()
}

/// The workload, parsed once (the scripted model looks requests up in it
/// on every call).
fn requests() -> &'static [Request] {
    static REQUESTS: OnceLock<Vec<Request>> = OnceLock::new();
    REQUESTS.get_or_init(|| workload::requests().unwrap_or_default())
}

/// The scripted home model's answer, for the contexts it scripts: the
/// planner (the request's right call, `[]` for a request it does not
/// know) and the tool router (that call's tool, `none`). `None`: answer
/// as the other stand-ins do.
pub fn answer(system: &str, user: &str) -> Option<String> {
    if system.starts_with("You plan which tools") {
        let asked = user.lines().rev().find_map(|l| l.strip_prefix("Request: ")).unwrap_or_default();
        Some(match workload::find(requests(), asked) {
            Some(r) => json!([{"tool": r.call.tool, "args": r.call.args}]).to_string(),
            None => "[]".to_owned(),
        })
    } else if system.starts_with("You pick the tools") {
        // The request is fenced, on a line of its own.
        let known = user.lines().find_map(|l| workload::find(requests(), l));
        Some(known.map_or_else(|| "none".to_owned(), |r| r.call.tool.clone()))
    } else {
        None
    }
}

/// The home part's configuration: `base` with [`MODEL`] on the scripted
/// server at `url`, and the home's MCP server — this binary, run with
/// [`SERVER_COMMAND`].
pub fn config(mut base: Config, url: &str) -> anyhow::Result<Config> {
    base.llm.provider = "ollama".into();
    base.llm.base_url = url.to_owned();
    base.llm.model = MODEL.into();
    base.llm.candidates = Vec::new();
    base.llm.planner_timeout_ms = 5_000;
    let exe = std::env::current_exe().context("finding the engram binary to run the home's MCP server")?;
    let server = McpServerSection {
        command: exe.to_string_lossy().into_owned(),
        args: vec![SERVER_COMMAND.to_owned()],
        ..McpServerSection::default()
    };
    base.mcp.servers.insert(SERVER_NAME.to_owned(), server);
    Ok(base)
}

/// Runs the home part on `data`/[`DIR`]: a runtime with the home's MCP
/// server and [`MODEL`] on the scripted server at `url`, through every
/// request of the workload.
pub fn drive(data: &Path, url: &str, base: Config) -> anyhow::Result<()> {
    let dir = data.join(DIR);
    engram::storage::data_dir::create_private_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let rt = Runtime::builder()
        .data_dir(&dir)
        .serve_followers(true)
        .config(config(base, url)?)
        .turn_timeout(super::TURN_TIMEOUT)
        .start()
        .context("starting the runtime with the home's MCP server")?;
    let result = say_all(&rt);
    rt.shutdown()?;
    result
}

/// The household says every request, session by session, and rates each
/// reply by whether its steps are the request's right call.
fn say_all(rt: &Runtime) -> anyhow::Result<()> {
    match rt.mcp_status().into_iter().find(|s| s.name == SERVER_NAME) {
        Some(s) if s.state == McpState::Ready => {}
        Some(s) => anyhow::bail!("the home's MCP server ({SERVER_COMMAND}) is not ready: {}", s.state),
        None => anyhow::bail!("the home's MCP server ({SERVER_COMMAND}) was not started"),
    }
    let requests = workload::requests()?;
    let bar = crate::output::progress(requests.len() as u64, "home");
    let mut open: Option<SessionId> = None;
    for r in &requests {
        let session = SessionId::new(&r.session);
        if open.as_ref() != Some(&session) {
            if let Some(done) = open.replace(session.clone()) {
                rt.end_session(&done)?;
            }
        }
        let reply = rt.handle_utterance(&session, &r.text).with_context(|| format!("{session}: {:?}", r.text))?;
        let good = reply.tools_ok && r.right(&reply.steps);
        let rating = if good { FeedbackRating::Positive } else { FeedbackRating::Negative };
        rt.feedback(&session, rating, None).with_context(|| format!("{session}: feedback"))?;
        bar.inc(1);
    }
    if let Some(done) = open {
        rt.end_session(&done)?;
    }
    bar.finish_and_clear();
    if !rt.settle(Duration::from_secs(10)) {
        tracing::warn!("demo home: actors still busy after 10 s; the report shows what is in the log");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripted_model_plans_known_requests_and_nothing_else() {
        let planner = "You plan which tools answer a request. …";
        let user =
            "Now: Monday.\n\nRecent conversation:\nuser: switch off the tv\n\nRequest: put milk on the shopping list";
        assert_eq!(answer(planner, user).unwrap(), r#"[{"args":{"item":"milk"},"tool":"HassShoppingListAddItem"}]"#);
        assert_eq!(answer(planner, "Request: open the pod bay doors").unwrap(), "[]");
        let router = "You pick the tools that can answer a request …";
        assert_eq!(answer(router, "Tools:\n- x: y\nRequest:\n<<<\nswitch off the tv\n>>>").unwrap(), "HassTurnOff");
        assert_eq!(answer(router, "Request:\nsing a song").unwrap(), "none");
        assert_eq!(answer("You write the diary entry …", "user: hi"), None);
    }
}
