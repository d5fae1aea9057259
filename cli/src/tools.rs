//! `engram tools`: the tool catalogue as the runtime would offer it.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use engram::actors::tools::mcp::{McpHub, McpState};
use engram::actors::tools::{BuiltinConfig, ToolRegistry};
use serde_json::json;

use crate::output;

/// List the tools the assistant can call: the built-ins, and every tool of
/// the MCP servers `[mcp.servers.NAME]` names (each is started, listed and
/// stopped again; the data dir is not opened, so this works beside a
/// running `engram run`). A host's own tools are registered in its code
/// and are not listed here. Exit 1 when a configured server did not start
/// (its reason is printed; the other tools are still listed).
#[derive(clap::Args)]
pub struct Args {
    /// Print {"tools":[{name,source,side_effect,description,parameters}],"servers":[{name,state,tools}]}
    #[arg(long)]
    json: bool,
}

pub fn run(data: &Path, args: Args) -> anyhow::Result<ExitCode> {
    let config = crate::load_config(data)?;
    config.mcp.check().map_err(anyhow::Error::msg)?;
    let registry = ToolRegistry::with_builtins(BuiltinConfig::from_section(&config.tools));
    let hub = McpHub::start(&config.mcp, |name| std::env::var(name).ok(), Arc::new(|| {}));
    hub.register_tools(&registry);
    let servers = hub.status();
    hub.shutdown();
    let tools = registry.listing();
    if args.json {
        let tools: Vec<_> = tools
            .iter()
            .map(|(t, source)| {
                json!({
                    "name": t.name(),
                    "source": source.to_string(),
                    "side_effect": t.side_effect().as_str(),
                    "description": t.description(),
                    "parameters": t.parameters(),
                })
            })
            .collect();
        let servers: Vec<_> =
            servers.iter().map(|s| json!({"name": s.name, "state": s.state.to_string(), "tools": s.tools})).collect();
        output::print_json(&json!({ "tools": tools, "servers": servers }))?;
    } else {
        let width = tools.iter().map(|(t, _)| t.name().chars().count()).max().unwrap_or(4).max(4);
        let swidth = tools.iter().map(|(_, s)| s.to_string().chars().count()).max().unwrap_or(6).max(6);
        output::print_line(&format!("{:width$}  {:swidth$}  {:7}  DESCRIPTION", "NAME", "SOURCE", "EFFECT"));
        for (t, source) in &tools {
            // A server's names and descriptions are its text, not ours:
            // shown, never acted on by the terminal.
            let description = t.description().lines().next().unwrap_or_default().to_owned();
            let line = format!(
                "{:width$}  {:swidth$}  {:7}  {}",
                t.name(),
                source.to_string(),
                t.side_effect().as_str(),
                description
            );
            output::print_line(&output::escape_controls(&line));
        }
    }
    let mut failed = false;
    for s in &servers {
        if let McpState::Failed(why) = &s.state {
            failed = true;
            eprintln!("engram tools: MCP server {} did not start: {}", s.name, output::escape_controls(why));
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
