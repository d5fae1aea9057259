//! The demo's host tools: small, real file tools over the demo's own files
//! dir, registered beside the built-ins the way a host would register its
//! own. Each does real work on real files, so a wrong argument is a failed
//! step in the log, never a made-up answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engram::actors::tools::{FileRoots, ListDir, ReadFile};
use engram::actors::{Tool, ToolContext, ToolError, ToolOutput};
use engram::events::payloads::{SideEffectClass, ToolArgs};
use serde_json::json;

/// The files the demo writes into its files dir: name, content. Sized so
/// that word counts and byte sizes differ from file to file.
pub const FILES: &[(&str, &str)] = &[
    ("notes.txt", "Buy coffee. Call Marta about the trip to Genoa. Finish the quarterly report by Friday.\n"),
    ("todo.txt", "fix the bike\nrenew the passport\nbook the dentist\nwater the plants\n"),
    ("shopping.txt", "milk eggs bread basil tomatoes olive oil parmesan\n"),
    ("journal.txt", "Long walk along the Po today. The river was high after the rain. Jazz in the evening.\n"),
    ("letter.txt", "Dear Anna, thank you for the book. I will bring it back next week. Ciao, Ada\n"),
    ("recipe.txt", "Pesto: basil, pine nuts, garlic, parmesan, pecorino, olive oil. Pound, do not blend.\n"),
    ("ideas.md", "# Ideas\n\n- a garden sensor\n- a jazz playlist per season\n"),
    ("readme.md", "# Demo files\n\nWritten by `engram demo`; the assistant's tools read them.\n"),
    ("report.md", "# Quarterly report\n\nSales grew in the north. Costs were flat. Next: the new shop in Turin.\n"),
    ("budget.csv", "month,spent\njanuary,812\nfebruary,774\nmarch,901\n"),
];

/// Writes [`FILES`] into `dir` (created if needed).
pub fn write_files(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in FILES {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// Every demo tool, confined to `dir`, where `~` also points: the demo's
/// "home" is its files dir, never the user's. `read_file` and `list_dir`
/// replace the built-ins of the same name for that reason.
pub fn all(dir: &Path) -> Vec<Arc<dyn Tool>> {
    let roots = FileRoots::new(vec![dir.to_owned()]).with_home(Some(dir.to_owned()));
    vec![
        Arc::new(ReadFile::new(roots.clone())),
        Arc::new(ListDir::new(roots.clone())),
        Arc::new(WordCount { roots: roots.clone() }),
        Arc::new(FileSize { roots: roots.clone() }),
        Arc::new(FindFiles { roots, dir: dir.to_owned() }),
    ]
}

fn path_arg<'a>(tool: &str, args: &'a ToolArgs) -> Result<&'a str, ToolError> {
    args.0.get("path").and_then(|v| v.as_str()).ok_or_else(|| ToolError::BadArgs {
        tool: tool.to_owned(),
        field: "path".to_owned(),
        message: "missing: name the file, e.g. ~/notes.txt".to_owned(),
    })
}

fn path_schema(what: &str) -> serde_json::Value {
    json!({"type": "object", "properties": {"path": {"type": "string", "description": what}}, "required": ["path"]})
}

fn io(tool: &str, path: &Path) -> impl Fn(std::io::Error) -> ToolError {
    let (tool, path) = (tool.to_owned(), path.to_owned());
    move |source| ToolError::Io { tool: tool.clone(), path: path.clone(), source }
}

/// `word_count {path}`: the words in a text file.
struct WordCount {
    roots: FileRoots,
}

impl Tool for WordCount {
    fn name(&self) -> &str {
        "word_count"
    }
    fn description(&self) -> &str {
        "count the words in a text file"
    }
    fn parameters(&self) -> serde_json::Value {
        path_schema("the text file")
    }
    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }
    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let raw = path_arg(self.name(), args)?;
        let path = self.roots.resolve(self.name(), raw)?;
        let text = std::fs::read_to_string(&path).map_err(io(self.name(), &path))?;
        Ok(ToolOutput::trusted(format!("{raw}: {} words", text.split_whitespace().count())))
    }
}

/// `file_size {path}`: a file's size in bytes.
struct FileSize {
    roots: FileRoots,
}

impl Tool for FileSize {
    fn name(&self) -> &str {
        "file_size"
    }
    fn description(&self) -> &str {
        "tell how big a file is, its size in bytes"
    }
    fn parameters(&self) -> serde_json::Value {
        path_schema("the file")
    }
    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }
    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let raw = path_arg(self.name(), args)?;
        let path = self.roots.resolve(self.name(), raw)?;
        let meta = std::fs::metadata(&path).map_err(io(self.name(), &path))?;
        Ok(ToolOutput::trusted(format!("{raw}: {} bytes", meta.len())))
    }
}

/// `find_files {ext}`: the files of one type (`*.md`) in the files dir.
struct FindFiles {
    roots: FileRoots,
    dir: PathBuf,
}

impl Tool for FindFiles {
    fn name(&self) -> &str {
        "find_files"
    }
    fn description(&self) -> &str {
        "find the files of a given type, like the markdown or text files"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"ext": {"type": "string", "description": "a pattern like *.md"}},
               "required": ["ext"]})
    }
    fn side_effect(&self) -> SideEffectClass {
        SideEffectClass::Read
    }
    fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let pattern = args.0.get("ext").and_then(|v| v.as_str()).ok_or_else(|| ToolError::BadArgs {
            tool: self.name().to_owned(),
            field: "ext".to_owned(),
            message: "missing: say which kind of files, e.g. markdown files".to_owned(),
        })?;
        let suffix = pattern.trim_start_matches('*');
        let dir = self.roots.resolve(self.name(), &self.dir.to_string_lossy())?;
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(io(self.name(), &dir))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(suffix))
            .collect();
        names.sort();
        Ok(ToolOutput::trusted(match names.len() {
            0 => format!("no {pattern} files"),
            n => format!("{n} {pattern} files: {}", names.join(", ")),
        }))
    }
}
