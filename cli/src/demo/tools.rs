//! The demo's host tools: small, real file tools over the demo's own files
//! dir, registered beside the built-ins the way a host would register its
//! own. Each does real work on real files, so a wrong argument is a failed
//! step in the log, never a made-up answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engram::actors::tools::{FileRoots, FnTool, ListDir, ReadFile};
use engram::actors::{Tool, ToolError, ToolOutput};
use engram::events::payloads::ToolArgs;

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
        word_count(roots.clone()),
        file_size(roots.clone()),
        find_files(roots, dir.to_owned()),
    ]
}

fn path_arg<'a>(tool: &str, args: &'a ToolArgs) -> Result<&'a str, ToolError> {
    args.0.get("path").and_then(|v| v.as_str()).ok_or_else(|| ToolError::BadArgs {
        tool: tool.to_owned(),
        field: "path".to_owned(),
        message: "missing: name the file, e.g. ~/notes.txt".to_owned(),
    })
}

fn io(tool: &str, path: &Path) -> impl Fn(std::io::Error) -> ToolError {
    let (tool, path) = (tool.to_owned(), path.to_owned());
    move |source| ToolError::Io { tool: tool.clone(), path: path.clone(), source }
}

/// `word_count {path}`: the words in a text file.
fn word_count(roots: FileRoots) -> Arc<dyn Tool> {
    const NAME: &str = "word_count";
    let tool = FnTool::new(NAME, "count the words in a text file", move |args, _ctx| {
        let raw = path_arg(NAME, args)?;
        let path = roots.resolve(NAME, raw)?;
        let text = std::fs::read_to_string(&path).map_err(io(NAME, &path))?;
        Ok(ToolOutput::trusted(format!("{raw}: {} words", text.split_whitespace().count())))
    });
    Arc::new(tool.with_arg("path", "the text file"))
}

/// `file_size {path}`: a file's size in bytes.
fn file_size(roots: FileRoots) -> Arc<dyn Tool> {
    const NAME: &str = "file_size";
    let tool = FnTool::new(NAME, "tell how big a file is, its size in bytes", move |args, _ctx| {
        let raw = path_arg(NAME, args)?;
        let path = roots.resolve(NAME, raw)?;
        let meta = std::fs::metadata(&path).map_err(io(NAME, &path))?;
        Ok(ToolOutput::trusted(format!("{raw}: {} bytes", meta.len())))
    });
    Arc::new(tool.with_arg("path", "the file"))
}

/// `find_files {ext}`: the files of one type (`*.md`) in the files dir.
fn find_files(roots: FileRoots, dir: PathBuf) -> Arc<dyn Tool> {
    const NAME: &str = "find_files";
    let description = "find the files of a given type, like the markdown or text files";
    let tool = FnTool::new(NAME, description, move |args, _ctx| {
        let pattern = args.0.get("ext").and_then(|v| v.as_str()).ok_or_else(|| ToolError::BadArgs {
            tool: NAME.to_owned(),
            field: "ext".to_owned(),
            message: "missing: say which kind of files, e.g. markdown files".to_owned(),
        })?;
        let suffix = pattern.trim_start_matches('*');
        let dir = roots.resolve(NAME, &dir.to_string_lossy())?;
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(io(NAME, &dir))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(suffix))
            .collect();
        names.sort();
        Ok(ToolOutput::trusted(match names.len() {
            0 => format!("no {pattern} files"),
            n => format!("{n} {pattern} files: {}", names.join(", ")),
        }))
    });
    Arc::new(tool.with_arg("ext", "a pattern like *.md"))
}
