//! `list_dir` and `read_file`, confined to the configured roots.
//!
//! A path reaches these tools from a planner (an LLM that may have read a
//! hostile web page) or from a fast-path replay, so it is treated as
//! hostile: [`FileRoots::resolve`] refuses `..` components, absolute paths
//! outside every root, and paths whose real location (every symlink
//! followed) is outside every root; with no roots configured it refuses
//! everything. What the tools return is file content, so it is
//! [`untrusted`](super::ToolOutput::untrusted): fenced before an LLM sees it.
//!
//! Limitation: the check and the open are two steps, so a local process
//! that swaps a dir for a symlink between them could redirect a read. The
//! threat here is the content and the planner, not another local user
//! (the roots are the user's own dirs).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use engram_events::payloads::{SideEffectClass, ToolArgs};
use engram_learning::offline_planner::PathKind;
use serde_json::json;

use super::{args, Tool, ToolContext, ToolError, ToolOutput};

/// What `read_file` returns at most without `max_bytes`.
pub const DEFAULT_READ_MAX_BYTES: usize = 64 * 1024;

/// The largest `max_bytes` `read_file` accepts.
pub const MAX_READ_BYTES: usize = 1024 * 1024;

/// The most names `list_dir` returns; the rest are counted.
pub const MAX_LIST_ENTRIES: usize = 500;

/// The dirs file tools may touch, and how a path argument maps into them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileRoots {
    roots: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl FileRoots {
    /// Confines to `roots`; relative paths resolve against the first.
    pub fn new(roots: Vec<PathBuf>) -> Self {
        FileRoots { roots, home: None }
    }

    /// Expands `~` / `~/…` (as the fast path's extractor writes "home")
    /// to `home`; the result is still confined to the roots. Without a
    /// home, `~` paths are refused.
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// `[tools] file_roots` when none is configured: the file tools then
    /// refuse everything ([`super::Tool::unconfigured`]).
    pub fn unconfigured(&self) -> Option<String> {
        self.roots.is_empty().then(|| "`[tools] file_roots`".to_owned())
    }

    /// The configured roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The real path (symlinks resolved) `raw` names, if it is inside a
    /// root; `tool` names the caller in errors.
    pub fn resolve(&self, tool: &str, raw: &str) -> Result<PathBuf, ToolError> {
        let denied = |reason: &str| ToolError::Denied {
            tool: tool.to_owned(),
            path: PathBuf::from(raw),
            reason: reason.to_owned(),
        };
        let Some(first) = self.roots.first() else {
            return Err(denied(
                "no file roots are configured; add `[tools] file_roots = [\"/some/dir\"]` to engram.toml",
            ));
        };
        if raw.contains('\0') {
            return Err(ToolError::BadArgs {
                tool: tool.to_owned(),
                field: "path".to_owned(),
                message: "contains a NUL byte".to_owned(),
            });
        }
        let path = match raw.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => match &self.home {
                Some(home) => home.join(rest.trim_start_matches('/')),
                None => return Err(denied("`~` is used but there is no home dir")),
            },
            _ => PathBuf::from(raw),
        };
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(denied("`..` is not allowed in paths"));
        }
        let candidate = if path.is_absolute() { path } else { first.join(path) };
        let real_roots: Vec<PathBuf> = self
            .roots
            .iter()
            .filter_map(|r| match std::fs::canonicalize(r) {
                Ok(real) => Some(real),
                Err(e) => {
                    tracing::warn!(root = %r.display(), error = %e, "file root is not usable; skipped");
                    None
                }
            })
            .collect();
        // Lexically first: a path outside every root is refused without
        // touching the disk, so nobody learns whether it exists.
        let inside = |p: &Path| self.roots.iter().chain(&real_roots).any(|r| p.starts_with(r));
        if !inside(&candidate) {
            return Err(denied("outside the configured file roots"));
        }
        let real = std::fs::canonicalize(&candidate).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotFound { tool: tool.to_owned(), path: PathBuf::from(raw) },
            _ => ToolError::Io { tool: tool.to_owned(), path: PathBuf::from(raw), source: e },
        })?;
        if !real_roots.iter().any(|r| real.starts_with(r)) {
            return Err(denied("resolves (through a symlink) outside the configured file roots"));
        }
        Ok(real)
    }
}

/// What a path a request names is on disk (`~/` from `$HOME`), for the
/// offline planner's choice between reading and listing it
/// ([`OfflinePlanner::with_paths`](engram_learning::offline_planner::OfflinePlanner::with_paths)):
/// "~/.config" is a directory by its form and may be a file. `None` when
/// nothing is there.
pub fn path_on_disk(path: &str) -> Option<PathKind> {
    let expanded = match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest))?,
        None => PathBuf::from(path),
    };
    let meta = std::fs::metadata(expanded).ok()?;
    Some(if meta.is_dir() { PathKind::Dir } else { PathKind::File })
}

fn io_error<'a>(tool: &'a str, raw: &'a str) -> impl Fn(std::io::Error) -> ToolError + 'a {
    move |source| ToolError::Io { tool: tool.to_owned(), path: PathBuf::from(raw), source }
}

fn wrong_kind(tool: &str, message: &str) -> ToolError {
    ToolError::BadArgs { tool: tool.to_owned(), field: "path".to_owned(), message: message.to_owned() }
}

/// `list_dir`: the names in a dir, sorted, dirs with a trailing `/`.
#[derive(Clone, Debug)]
pub struct ListDir {
    roots: FileRoots,
}

impl ListDir {
    /// A `list_dir` confined to `roots`.
    pub fn new(roots: FileRoots) -> Self {
        ListDir { roots }
    }
}

impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "list the files and folders in a directory"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "the directory (default: the first file root)" }
            },
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn unconfigured(&self) -> Option<String> {
        self.roots.unconfigured()
    }

    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        args::only(args, tool, &["path"])?;
        let raw = args::opt_str(args, tool, "path")?.filter(|p| !p.is_empty()).unwrap_or(".");
        let dir = self.roots.resolve(tool, raw)?;
        if !dir.is_dir() {
            return Err(wrong_kind(tool, "is not a directory (read_file reads files)"));
        }
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io_error(tool, raw))? {
            let entry = entry.map_err(io_error(tool, raw))?;
            // A symlink to a dir lists as a dir; following it is checked
            // again when it is used.
            let is_dir = std::fs::metadata(entry.path()).map(|m| m.is_dir()).unwrap_or(false);
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if is_dir {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        if names.is_empty() {
            return Ok(ToolOutput::untrusted("(empty directory)"));
        }
        let more = names.len().saturating_sub(MAX_LIST_ENTRIES);
        names.truncate(MAX_LIST_ENTRIES);
        let mut text = names.join("\n");
        if more > 0 {
            text.push_str(&format!("\n[list_dir: {more} more entries not shown]"));
        }
        Ok(ToolOutput::untrusted(text))
    }
}

/// `read_file`: a text file's content, at most `max_bytes` of it.
#[derive(Clone, Debug)]
pub struct ReadFile {
    roots: FileRoots,
}

impl ReadFile {
    /// A `read_file` confined to `roots`.
    pub fn new(roots: FileRoots) -> Self {
        ReadFile { roots }
    }
}

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "read a text file and show what it says"
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "the file, relative to the first file root or absolute" },
                "max_bytes": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_READ_BYTES,
                    "description": format!("return at most this many bytes (default {DEFAULT_READ_MAX_BYTES})")
                }
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }

    fn unconfigured(&self) -> Option<String> {
        self.roots.unconfigured()
    }

    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.name();
        args::only(args, tool, &["path", "max_bytes"])?;
        let raw = args::req_str(args, tool, "path")?;
        let max = match args::opt_int(args, tool, "max_bytes")? {
            None => DEFAULT_READ_MAX_BYTES,
            Some(n) if (1..=MAX_READ_BYTES as i64).contains(&n) => n as usize,
            Some(n) => {
                return Err(ToolError::BadArgs {
                    tool: tool.to_owned(),
                    field: "max_bytes".to_owned(),
                    message: format!("{n} is out of range (1 to {MAX_READ_BYTES})"),
                })
            }
        };
        let path = self.roots.resolve(tool, raw)?;
        let meta = std::fs::metadata(&path).map_err(io_error(tool, raw))?;
        if meta.is_dir() {
            return Err(wrong_kind(tool, "is a directory (list_dir lists directories)"));
        }
        if !meta.is_file() {
            // A FIFO or a device would block or never end.
            return Err(ToolError::Unreadable {
                tool: tool.to_owned(),
                path: PathBuf::from(raw),
                reason: "not a regular file".to_owned(),
            });
        }
        let mut buf = Vec::with_capacity(max.min(meta.len() as usize) + 1);
        std::fs::File::open(&path)
            .and_then(|f| f.take(max as u64 + 1).read_to_end(&mut buf))
            .map_err(io_error(tool, raw))?;
        let truncated = buf.len() > max;
        buf.truncate(max);
        if buf.contains(&0) {
            return Err(ToolError::Unreadable {
                tool: tool.to_owned(),
                path: PathBuf::from(raw),
                reason: "binary file (it contains NUL bytes); read_file returns text only".to_owned(),
            });
        }
        if truncated {
            // Don't end on half a character.
            if let Err(e) = std::str::from_utf8(&buf) {
                if e.error_len().is_none() {
                    buf.truncate(e.valid_up_to());
                }
            }
        }
        let mut text = String::from_utf8_lossy(&buf).into_owned();
        if truncated {
            text.push_str(&format!(
                "\n[read_file: truncated: showed the first {} of {} bytes; max_bytes (up to {MAX_READ_BYTES}) shows more]",
                buf.len(),
                meta.len()
            ));
        }
        Ok(ToolOutput::untrusted(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By form a dot-file reads as a directory and "photos.d" as a file;
    /// the disk says otherwise, and the planner asks it first.
    #[test]
    fn an_existing_path_is_what_the_file_system_says() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("photos.d")).unwrap();
        std::fs::write(dir.path().join(".bashrc"), "").unwrap();
        assert_eq!(path_on_disk(dir.path().join(".bashrc").to_str().unwrap()), Some(PathKind::File));
        assert_eq!(path_on_disk(dir.path().join("photos.d").to_str().unwrap()), Some(PathKind::Dir));
        assert_eq!(path_on_disk(dir.path().join("nothing.txt").to_str().unwrap()), None);
    }

    #[test]
    fn tilde_expands_to_home_and_stays_confined() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("notes")).unwrap();
        std::fs::write(home.join("notes/a.md"), "x").unwrap();
        let roots = FileRoots::new(vec![home.clone()]).with_home(Some(home.clone()));
        let real = std::fs::canonicalize(&home).unwrap();
        assert_eq!(roots.resolve("t", "~/notes/a.md").unwrap(), real.join("notes/a.md"));
        assert_eq!(roots.resolve("t", "~").unwrap(), real);
        assert_eq!(roots.resolve("t", "~/").unwrap(), real);
        // A home outside the roots is refused like any other path.
        let elsewhere = FileRoots::new(vec![home.join("notes")]).with_home(Some(home.clone()));
        assert!(matches!(elsewhere.resolve("t", "~/"), Err(ToolError::Denied { .. })));
        // No home: refused, not guessed.
        assert!(matches!(FileRoots::new(vec![home]).resolve("t", "~/x"), Err(ToolError::Denied { .. })));
    }

    #[test]
    fn a_missing_root_is_skipped_and_a_prefix_is_not_a_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("docs");
        let sibling = tmp.path().join("docs-private");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&sibling).unwrap();
        std::fs::write(sibling.join("s.txt"), "secret").unwrap();
        let roots = FileRoots::new(vec![tmp.path().join("gone"), root.clone()]);
        let e = roots.resolve("t", sibling.join("s.txt").to_str().unwrap()).unwrap_err();
        assert!(matches!(e, ToolError::Denied { .. }), "{e}");
        assert!(roots.resolve("t", root.to_str().unwrap()).is_ok());
    }
}
