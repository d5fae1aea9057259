//! `docs/architecture.md` kept true (issue 42): a reviewer found it stale
//! in 11 places — a file moved, a method gone, an actor missing from the
//! flowchart — none of which any build noticed. This test reads the doc
//! as a newcomer would follow it:
//!
//! 1. every repository path it names in backticks (`actors/src/bus.rs`,
//!    `learning/src/reactors/`) exists;
//! 2. every Rust path it names in backticks (`ActorCheckpoints::advance`,
//!    `engram_events::derived`) ends in an item the workspace defines
//!    (a `fn`, type, trait, const, module or macro of that name);
//! 3. every role in `actors/src/roles/` is drawn in the actor flowchart.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("cli/ is in the workspace").to_path_buf()
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md")
}

/// The text of every inline code span (`…`) outside fenced blocks.
fn code_spans(doc: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let parts: Vec<&str> = line.split('`').collect();
        spans.extend(parts.iter().skip(1).step_by(2).map(|s| s.to_string()));
    }
    spans
}

/// The workspace's Rust sources (not `target/`, not hidden folders).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            sources(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Every name the workspace defines as an item, and every module (file)
/// name; and every capitalised word its sources use (enum variants, which
/// `Type::Variant` names).
fn defined_names() -> (HashSet<String>, HashSet<String>) {
    let mut files = Vec::new();
    sources(&root(), &mut files);
    let mut names = HashSet::new();
    let mut capitalised = HashSet::new();
    for file in files {
        if let Some(stem) = file.file_stem() {
            names.insert(stem.to_string_lossy().into_owned());
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in text.lines() {
            let words: Vec<&str> = line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!')).collect();
            capitalised.extend(words.iter().filter(|w| w.starts_with(char::is_uppercase)).map(|w| w.to_string()));
            for pair in words.windows(2) {
                if matches!(
                    pair[0],
                    "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "mod" | "macro_rules!"
                ) && !pair[1].is_empty()
                {
                    names.insert(pair[1].to_owned());
                }
                if pair[0] == "macro_rules!" {
                    names.insert(pair[1].to_owned());
                }
            }
            // `macro_rules! name {`
            if let Some(rest) = line.trim_start().strip_prefix("macro_rules!") {
                names.insert(rest.trim().trim_end_matches('{').trim().to_owned());
            }
        }
    }
    (names, capitalised)
}

fn is_repo_path(span: &str) -> bool {
    const TOP: [&str; 12] = [
        "actors/",
        "learning/",
        "local-state/",
        "storage/",
        "events/",
        "vector/",
        "cli/",
        "src/",
        "tests/",
        "benches/",
        "docs/",
        "scripts/",
    ];
    TOP.iter().any(|t| span.starts_with(t)) && !span.contains(' ') && !span.contains('<') && !span.contains('*')
}

#[test]
fn every_path_the_architecture_doc_names_exists() {
    let root = root();
    let missing: Vec<String> = code_spans(&doc())
        .into_iter()
        .filter(|s| is_repo_path(s))
        .map(|s| s.trim_end_matches([',', '.', ')']).to_owned())
        // `path/file.rs` (`Type`) and `dir/{a,b}.rs` forms: the first path.
        .map(|s| s.split(['(', '{']).next().unwrap_or_default().to_owned())
        .filter(|s| !root.join(s).exists())
        .collect();
    assert!(missing.is_empty(), "docs/architecture.md names paths that do not exist: {missing:?}");
}

#[test]
fn every_rust_item_the_architecture_doc_names_is_defined() {
    let (names, capitalised) = defined_names();
    let missing: Vec<String> = code_spans(&doc())
        .into_iter()
        .filter(|s| s.contains("::") && !s.contains(' ') && !s.contains('/'))
        .filter(|s| {
            // The last segment, without call parentheses or generics.
            let last = s.rsplit("::").next().unwrap_or_default();
            let last = last.split(['(', '<', '{', '!']).next().unwrap_or_default();
            // `Type::Variant`: a capitalised word the sources use.
            let variant = last.starts_with(char::is_uppercase) && capitalised.contains(last);
            !last.is_empty() && !names.contains(last) && !variant
        })
        .collect();
    assert!(missing.is_empty(), "docs/architecture.md names items the workspace does not define: {missing:?}");
}

#[test]
fn every_role_is_in_the_actor_flowchart() {
    let doc = doc();
    // The actors' chart (the crate graph is a mermaid block too).
    let chart = doc
        .split("```mermaid")
        .skip(1)
        .filter_map(|c| c.split("```").next())
        .find(|c| c.contains("subgraph rt"))
        .expect("the actor flowchart (`subgraph rt`)");
    let chart = chart.to_lowercase().replace(' ', "_");
    let roles = std::fs::read_dir(root().join("actors/src/roles")).expect("actors/src/roles");
    let mut missing = Vec::new();
    for role in roles.flatten() {
        let name = role.file_name().to_string_lossy().trim_end_matches(".rs").to_owned();
        if name == "mod" {
            continue;
        }
        if !chart.contains(&name) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "roles missing from the flowchart in docs/architecture.md: {missing:?}");
}
