//! Where each server stands, and the timing rules every part of the hub
//! shares (plain data: parsed and shown in every build).

use std::time::Duration;

/// The longest wait between two restarts of a failed server (rule 4).
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The first wait before restarting a failed server; each next one doubles
/// it (rule 4).
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// Variables of engram's environment a stdio server gets without being
/// named in `env` (rule 6): what programs need to run at all.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "TERM",
    "SHELL",
    "SYSTEMROOT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "TEMP",
    "TMP",
];

/// Where a server stands, for `engram tools` and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpState {
    /// Its first start is under way.
    Starting,
    /// Connected; its tools are listed.
    Ready,
    /// Not connected, and why (it is retried in the background unless its
    /// configuration cannot be met).
    Failed(String),
    /// A restart after a failure is under way (`attempt` counts from 1).
    Restarting {
        /// Which restart this is.
        attempt: u32,
    },
}

impl std::fmt::Display for McpState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpState::Starting => f.write_str("starting"),
            McpState::Ready => f.write_str("ready"),
            McpState::Failed(why) => write!(f, "failed: {why}"),
            McpState::Restarting { attempt } => write!(f, "restarting (attempt {attempt})"),
        }
    }
}

/// One server as `McpHub::status` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerStatus {
    /// Its name in `[mcp.servers]`.
    pub name: String,
    /// Where it stands.
    pub state: McpState,
    /// How many tools it offers (0 unless ready).
    pub tools: usize,
}
