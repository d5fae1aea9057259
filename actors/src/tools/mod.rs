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
#[cfg(feature = "mcp")]
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

/// The tools by name, and the undo stacks of the sessions that called them.
///
/// Registering a tool under a name that is already taken *replaces* the
/// old one: a host that knows better than a built-in (a GPS-backed
/// `get_location`, a richer `read_file`) overrides it without a separate
/// switch, and every plan or pipeline naming the tool follows. The
/// replacement is logged.
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    undo: UndoStack,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        ToolRegistry::new()
    }
}

impl ToolRegistry {
    /// A registry with no tools (and an empty undo stack).
    pub fn new() -> Self {
        ToolRegistry { tools: BTreeMap::new(), undo: UndoStack::default() }
    }

    /// A registry with every built-in: `get_now`, `get_date`,
    /// `get_location`, `recall`, `undo`, `list_dir`, `read_file`. `~` in file paths
    /// expands to `$HOME` (still confined to the roots).
    pub fn with_builtins(config: BuiltinConfig) -> Self {
        let mut r = ToolRegistry::new();
        let roots = FileRoots::new(config.file_roots).with_home(std::env::var_os("HOME").map(PathBuf::from));
        r.register(Arc::new(GetNow));
        r.register(Arc::new(GetDate));
        r.register(Arc::new(GetLocation::new(config.location)));
        r.register(Arc::new(memory::Recall));
        r.register(Arc::new(Undo::new(r.undo.clone())));
        r.register(Arc::new(ListDir::new(roots.clone())));
        r.register(Arc::new(ReadFile::new(roots)));
        r
    }

    /// Adds `tool`, replacing (and returning) a tool of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let name = tool.name().to_owned();
        let old = self.tools.insert(name.clone(), tool);
        if old.is_some() {
            tracing::info!(tool = %name, "a registered tool replaces the one of the same name");
        }
        old
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// Every tool's name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// `(name, description, parameters)` of every tool, sorted by name:
    /// what a planner is shown.
    pub fn specs(&self) -> Vec<(String, String, serde_json::Value)> {
        self.tools.values().map(|t| (t.name().to_owned(), t.description().to_owned(), t.parameters())).collect()
    }

    /// The undo stacks (shared with the `undo` built-in).
    pub fn undo_stack(&self) -> &UndoStack {
        &self.undo
    }

    /// Calls the tool `name`. An undo action in its output moves onto
    /// `ctx.session`'s undo stack; the returned output's `undo` is `None`.
    pub fn call(&self, name: &str, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.tools.get(name).ok_or_else(|| ToolError::UnknownTool(name.to_owned()))?;
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
    fn for_llm_fences_only_untrusted_text() {
        assert_eq!(ToolOutput::trusted("14:05").for_llm("get_now"), "14:05");
        let fenced = ToolOutput::untrusted("hello").for_llm("read_file a.txt");
        assert!(engram_learning::fence::is_fenced(&fenced) && fenced.contains("hello"), "{fenced}");
    }
}
