//! Tools: what the reply loop calls to act on the world, and the rules
//! that keep them safe.
//!
//! A [`Tool`] is a named function of JSON arguments with a one-line
//! description (what the offline planner compares requests with) and a JSON
//! schema (what an LLM planner is shown). The [`ToolRegistry`] holds the
//! built-ins and the host's tools, calls them by name and keeps each
//! session's undo stack.
//!
//! Built-ins, one concept per module:
//!
//! * [`clock`]: `get_now`, `get_date`.
//! * [`location`]: `get_location` (from `[tools] location`).
//! * [`undo`]: `undo` and the per-session [`UndoStack`].
//! * [`files`]: `list_dir`, `read_file`, confined to `[tools] file_roots`
//!   by [`FileRoots`].
//!
//! A host's own tool is usually one function of its arguments:
//! [`FnTool`] makes it one expression.
//!
//! Output that comes from outside (files, the web, a host's tool marked
//! so) is [`ToolOutput::untrusted`]: it must pass through
//! [`fence_untrusted`](engram_learning::fence::fence_untrusted) before any LLM sees it ([`ToolOutput::for_llm`]
//! does that), so that instructions planted in a file are read as data.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{SideEffectClass, ToolArgs};
use engram_events::SessionId;

pub mod args;
pub mod clock;
pub mod files;
pub mod function;
pub mod location;
pub mod mcp;
pub mod memory;
pub mod undo;

pub use clock::{GetDate, GetNow};
pub use files::{FileRoots, ListDir, ReadFile, DEFAULT_READ_MAX_BYTES};
pub use function::FnTool;
pub use location::GetLocation;
pub use undo::{Undo, UndoStack};

/// `[tools]`: what the built-in tools may know and touch.
///
/// `location` is a string rather than an option so that
/// `ENGRAM_TOOLS_LOCATION` can set it like any other scalar; empty means
/// "not configured" (`get_location` then says how to configure it).
/// `file_roots` are the only dirs `list_dir` / `read_file` may look into;
/// empty (the default) means the file tools refuse everything.
/// `ENGRAM_TOOLS_FILE_ROOTS` takes a JSON array or a `:`-separated list.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsSection {
    /// Where the user is, as they want it said ("Rome, Italy"); empty: unset.
    pub location: String,
    /// Dirs the file tools are confined to; relative paths in tool
    /// arguments resolve against the first.
    pub file_roots: Vec<PathBuf>,
}

/// A function the assistant can call.
///
/// Implementations must be cheap to share (`Send + Sync`, held in an
/// `Arc`) because every actor that runs tools calls the same instance.
pub trait Tool: Send + Sync {
    /// The name plans and fast-path pipelines refer to it by (`get_now`).
    fn name(&self) -> &str;
    /// One line saying what it does: what the offline planner compares
    /// requests with, so it should read like the requests it answers.
    fn description(&self) -> &str;
    /// A JSON schema object of the arguments, shown to LLM planners.
    fn parameters(&self) -> serde_json::Value;
    /// What calling it may do to the world (every built-in only reads).
    fn side_effect(&self) -> SideEffectClass;
    /// What it needs and the configuration lacks, when it cannot do
    /// anything as configured (`list_dir` without `[tools] file_roots`,
    /// `get_location` without `[tools] location`); `None` (the default)
    /// when it can run. The offline planner plans such a tool only when no
    /// tool that can run fits the request, so another source of the same
    /// ability (an MCP filesystem server) wins over it, and a request only
    /// it answers still gets its "configure this" reply.
    fn unconfigured(&self) -> Option<String> {
        None
    }
    /// Runs the tool. An `undo` in the output is pushed on the session's
    /// undo stack by [`ToolRegistry::call`].
    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// What a call knows about where and when it runs.
///
/// Clock tools read `now` rather than the system clock so that a turn,
/// a test or an import replay sees one consistent instant in the user's
/// own offset.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolContext {
    /// The session calling (undo stacks are per session).
    pub session: SessionId,
    /// The user's local time for this turn.
    pub now: DateTime<FixedOffset>,
    /// What earlier sessions taught about the user (the knowledge graph's
    /// USER facts), for `recall`.
    pub memory: Vec<String>,
    /// The diary entries and WORLD facts this turn's request recalled
    /// (dated lines; seed 002 #3), for `recall`.
    pub recollection: Vec<String>,
}

impl ToolContext {
    /// A context for `session` at `now`.
    pub fn new(session: SessionId, now: DateTime<FixedOffset>) -> Self {
        ToolContext { session, now, memory: Vec::new(), recollection: Vec::new() }
    }

    /// The same context knowing what the request recalled from the diary.
    pub fn with_recollection(mut self, lines: Vec<String>) -> Self {
        self.recollection = lines;
        self
    }

    /// The same context knowing `memory` (the user's facts).
    pub fn with_memory(mut self, memory: Vec<String>) -> Self {
        self.memory = memory;
        self
    }
}

/// Reverts one tool call and says what it did. A closure rather than a
/// trait: a tool captures exactly the state it needs to put back, and the
/// action runs at most once (`FnOnce`), after which it is gone.
pub type UndoAction = Box<dyn FnOnce() -> Result<String, ToolError> + Send>;

/// A tool's result.
pub struct ToolOutput {
    /// The result as text.
    pub text: String,
    /// Content from outside the assistant (files, web pages): data an LLM
    /// must see only inside [`fence_untrusted`](engram_learning::fence::fence_untrusted)'s fence.
    pub untrusted: bool,
    /// How to revert the call, for tools with side effects.
    /// [`ToolRegistry::call`] moves it onto the session's undo stack (the
    /// output it returns has `None` here).
    pub undo: Option<UndoAction>,
}

impl ToolOutput {
    /// Trusted text with nothing to undo (clock, location).
    pub fn trusted(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), untrusted: false, undo: None }
    }

    /// Text from outside, to be fenced before an LLM sees it.
    pub fn untrusted(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), untrusted: true, undo: None }
    }

    /// This output with an undo action.
    pub fn with_undo(mut self, undo: UndoAction) -> Self {
        self.undo = Some(undo);
        self
    }

    /// The text as an LLM may see it: fenced as data from `source` (e.g.
    /// `read_file notes/todo.md`) when untrusted, as it is otherwise.
    pub fn for_llm(&self, source: &str) -> String {
        if self.untrusted {
            engram_learning::fence::fence_untrusted(source, &self.text)
        } else {
            self.text.clone()
        }
    }
}

impl std::fmt::Debug for ToolOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolOutput")
            .field("text", &self.text)
            .field("untrusted", &self.untrusted)
            .field("undo", &self.undo.as_ref().map(|_| "<action>"))
            .finish()
    }
}

/// Why a tool call failed. Every message names the tool so that it can be
/// shown to the user or handed back to a planner as it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// An argument is missing, of the wrong type or not allowed.
    #[error("{tool}: argument {field:?}: {message}")]
    BadArgs {
        /// The tool.
        tool: String,
        /// The argument.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A path outside what the tool may touch.
    #[error("{tool}: {path}: denied: {reason}", path = path.display())]
    Denied {
        /// The tool.
        tool: String,
        /// The path as asked for.
        path: PathBuf,
        /// Which rule refused it.
        reason: String,
    },
    /// A path inside the roots that does not exist.
    #[error("{tool}: {path}: not found", path = path.display())]
    NotFound {
        /// The tool.
        tool: String,
        /// The path as asked for.
        path: PathBuf,
    },
    /// A file the tool will not return (binary content).
    #[error("{tool}: {path}: {reason}", path = path.display())]
    Unreadable {
        /// The tool.
        tool: String,
        /// The path as asked for.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The tool needs a setting the configuration does not have.
    #[error("{tool}: not configured: {hint}")]
    NotConfigured {
        /// The tool.
        tool: String,
        /// What to set, and where.
        hint: String,
    },
    /// Reading or writing failed.
    #[error("{tool}: {path}: {source}", path = path.display())]
    Io {
        /// The tool.
        tool: String,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Anything else (a host tool's own failure, an undo that could not run).
    #[error("{0}")]
    Failed(String),
}

/// What the built-ins need from the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuiltinConfig {
    /// The user's location as they want it said; `None`: `get_location`
    /// answers with how to configure it.
    pub location: Option<String>,
    /// Dirs `list_dir` / `read_file` are confined to (empty: they refuse
    /// everything).
    pub file_roots: Vec<PathBuf>,
}

impl BuiltinConfig {
    /// From `[tools]`: an empty or blank `location` is "not configured".
    pub fn from_section(section: &ToolsSection) -> Self {
        let location = section.location.trim();
        BuiltinConfig {
            location: (!location.is_empty()).then(|| location.to_owned()),
            file_roots: section.file_roots.clone(),
        }
    }
}

/// Where a tool comes from: what `engram tools` lists, and what decides a
/// clash of names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ToolSource {
    /// One of engram's own ([`ToolRegistry::with_builtins`]).
    Builtin,
    /// Registered by the host in Rust ([`ToolRegistry::register`]).
    Host,
    /// Listed by the MCP server of this name (`[mcp.servers.NAME]`).
    Mcp(String),
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Builtin => f.write_str("builtin"),
            ToolSource::Host => f.write_str("host"),
            ToolSource::Mcp(server) => write!(f, "mcp:{server}"),
        }
    }
}

/// The registry's map: each name's tool and where it comes from.
type Tools = BTreeMap<String, (Arc<dyn Tool>, ToolSource)>;

/// The tools by name, each with its source, and the undo stacks of the
/// sessions that called them.
///
/// Registering a tool under a name that is already taken *replaces* the
/// old one: a host that knows better than a built-in (a GPS-backed
/// `get_location`, a richer `read_file`) overrides it without a separate
/// switch, and every plan or pipeline naming the tool follows. The
/// replacement is logged.
///
/// A source's tools can be replaced while the runtime runs
/// ([`ToolRegistry::set_source`]: an MCP server listed new tools, died or
/// came back), so the map sits behind a lock; calls clone the tool out and
/// run without holding it. Names of different sources never replace each
/// other there: a built-in or host tool keeps its name, and an MCP tool
/// whose name is taken — by them or by a server earlier in name order — is
/// offered as `SERVER_NAME` (logged), so no server can shadow `read_file`.
pub struct ToolRegistry {
    tools: std::sync::RwLock<Tools>,
    undo: UndoStack,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        ToolRegistry::new()
    }
}

/// A tool under another name: an MCP tool whose own name was taken.
struct Renamed {
    name: String,
    tool: Arc<dyn Tool>,
}

impl Tool for Renamed {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> serde_json::Value {
        self.tool.parameters()
    }
    fn side_effect(&self) -> SideEffectClass {
        self.tool.side_effect()
    }
    fn unconfigured(&self) -> Option<String> {
        self.tool.unconfigured()
    }
    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.tool.call(args, ctx)
    }
}

impl ToolRegistry {
    /// A registry with no tools (and an empty undo stack).
    pub fn new() -> Self {
        ToolRegistry { tools: Default::default(), undo: UndoStack::default() }
    }

    /// A registry with every built-in: `get_now`, `get_date`,
    /// `get_location`, `recall`, `undo`, `list_dir`, `read_file`. `~` in file paths
    /// expands to `$HOME` (still confined to the roots).
    pub fn with_builtins(config: BuiltinConfig) -> Self {
        let r = ToolRegistry::new();
        let roots = FileRoots::new(config.file_roots).with_home(std::env::var_os("HOME").map(PathBuf::from));
        let builtins: [Arc<dyn Tool>; 7] = [
            Arc::new(GetNow),
            Arc::new(GetDate),
            Arc::new(GetLocation::new(config.location)),
            Arc::new(memory::Recall),
            Arc::new(Undo::new(r.undo.clone())),
            Arc::new(ListDir::new(roots.clone())),
            Arc::new(ReadFile::new(roots)),
        ];
        for tool in builtins {
            r.write().insert(tool.name().to_owned(), (tool, ToolSource::Builtin));
        }
        r
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tools> {
        self.tools.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tools> {
        self.tools.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the host's `tool`, replacing (and returning) a tool of the
    /// same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let name = tool.name().to_owned();
        let old = self.write().insert(name.clone(), (tool, ToolSource::Host));
        if old.is_some() {
            tracing::info!(tool = %name, "a registered tool replaces the one of the same name");
        }
        old.map(|(t, _)| t)
    }

    /// Replaces every tool of `source` with `tools` (none: the source is
    /// gone), renaming a tool whose name another source holds (see the
    /// type's docs). Returns the names now offered for `source`.
    pub fn set_source(&self, source: &ToolSource, tools: Vec<Arc<dyn Tool>>) -> Vec<String> {
        let mut map = self.write();
        map.retain(|_, (_, s)| s != source);
        let mut offered = Vec::new();
        for tool in tools {
            let mut name = tool.name().to_owned();
            if map.contains_key(&name) {
                let prefix = match source {
                    ToolSource::Mcp(server) => server.clone(),
                    other => other.to_string(),
                };
                let renamed = format!("{prefix}_{name}");
                tracing::warn!(tool = %name, source = %source, offered_as = %renamed, "a tool name is taken; offered under another");
                name = renamed;
            }
            if map.contains_key(&name) {
                tracing::warn!(tool = %name, source = %source, "a tool name is taken twice; the tool is left out");
                continue;
            }
            let tool: Arc<dyn Tool> = match name == tool.name() {
                true => tool,
                false => Arc::new(Renamed { name: name.clone(), tool }),
            };
            map.insert(name.clone(), (tool, source.clone()));
            offered.push(name);
        }
        offered
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.read().get(name).map(|(t, _)| t.clone())
    }

    /// Where the tool called `name` comes from.
    pub fn source(&self, name: &str) -> Option<ToolSource> {
        self.read().get(name).map(|(_, s)| s.clone())
    }

    /// Every tool's name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// `(name, description, parameters)` of every tool, sorted by name:
    /// what a planner is shown.
    pub fn specs(&self) -> Vec<(String, String, serde_json::Value)> {
        self.read().values().map(|(t, _)| (t.name().to_owned(), t.description().to_owned(), t.parameters())).collect()
    }

    /// The names of the tools that cannot do anything as configured
    /// ([`Tool::unconfigured`]), sorted: what the offline planner ranks
    /// below the tools that can run.
    pub fn unconfigured(&self) -> Vec<String> {
        self.read().iter().filter(|(_, (t, _))| t.unconfigured().is_some()).map(|(n, _)| n.clone()).collect()
    }

    /// Every tool with its source, sorted by name: what `engram tools`
    /// lists.
    pub fn listing(&self) -> Vec<(Arc<dyn Tool>, ToolSource)> {
        self.read().values().cloned().collect()
    }

    /// The undo stacks (shared with the `undo` built-in).
    pub fn undo_stack(&self) -> &UndoStack {
        &self.undo
    }

    /// Calls the tool `name`. An undo action in its output moves onto
    /// `ctx.session`'s undo stack; the returned output's `undo` is `None`.
    /// The registry's lock is not held while the tool runs.
    pub fn call(&self, name: &str, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.get(name).ok_or_else(|| ToolError::UnknownTool(name.to_owned()))?;
        let mut out = tool.call(args, ctx)?;
        if let Some(action) = out.undo.take() {
            self.undo.push(&ctx.session, name, action);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_section_treats_blank_location_as_unset() {
        let mut s = ToolsSection::default();
        assert_eq!(BuiltinConfig::from_section(&s), BuiltinConfig::default());
        s.location = "   ".into();
        assert_eq!(BuiltinConfig::from_section(&s).location, None);
        s.location = " Rome ".into();
        s.file_roots = vec![PathBuf::from("/r")];
        let c = BuiltinConfig::from_section(&s);
        assert_eq!(c.location.as_deref(), Some("Rome"));
        assert_eq!(c.file_roots, vec![PathBuf::from("/r")]);
    }

    #[test]
    fn a_source_never_shadows_another_and_is_replaced_whole() {
        let tool = |name: &str| -> Arc<dyn Tool> {
            Arc::new(FnTool::new(name, "a test tool", |_, _| Ok(ToolOutput::trusted("ok"))))
        };
        let r = ToolRegistry::with_builtins(BuiltinConfig::default());
        let notes = ToolSource::Mcp("notes".into());
        // `read_file` is a built-in's: the server's is offered under its name.
        let offered = r.set_source(&notes, vec![tool("read_file"), tool("add_note")]);
        assert_eq!(offered, ["notes_read_file", "add_note"]);
        assert_eq!(r.source("read_file"), Some(ToolSource::Builtin));
        assert_eq!(r.source("notes_read_file"), Some(notes.clone()));
        assert_eq!(r.get("notes_read_file").unwrap().name(), "notes_read_file");
        // A second server with the same tool: the first keeps the name.
        let other = ToolSource::Mcp("other".into());
        assert_eq!(r.set_source(&other, vec![tool("add_note")]), ["other_add_note"]);
        // The source's new list replaces the old one whole; none removes it.
        assert_eq!(r.set_source(&notes, vec![tool("list_notes")]), ["list_notes"]);
        assert!(r.get("add_note").is_none() && r.get("notes_read_file").is_none());
        r.set_source(&notes, Vec::new());
        assert!(r.get("list_notes").is_none());
        assert_eq!(r.source("other_add_note"), Some(other));
        assert_eq!(r.names().len(), 8, "the 7 built-ins and the other server's tool");
    }

    #[test]
    fn a_built_in_without_its_setting_is_unconfigured() {
        let r = ToolRegistry::with_builtins(BuiltinConfig::default());
        assert_eq!(r.unconfigured(), ["get_location", "list_dir", "read_file"]);
        let configured = BuiltinConfig { location: Some("Rome".into()), file_roots: vec![PathBuf::from("/tmp")] };
        assert!(ToolRegistry::with_builtins(configured).unconfigured().is_empty());
        // Under another name it still cannot run.
        let renamed = Renamed { name: "notes_read_file".into(), tool: r.get("read_file").unwrap() };
        assert_eq!(renamed.unconfigured().as_deref(), Some("`[tools] file_roots`"));
    }

    #[test]
    fn for_llm_fences_only_untrusted_text() {
        assert_eq!(ToolOutput::trusted("14:05").for_llm("get_now"), "14:05");
        let fenced = ToolOutput::untrusted("hello").for_llm("read_file a.txt");
        assert!(engram_learning::fence::is_fenced(&fenced) && fenced.contains("hello"), "{fenced}");
    }
}
