//! The vocabulary the synthetic fingerprints are drawn from: intents, file
//! extensions and directories (most common first, for the Zipf law), the
//! 80 tool names and their side effects, and the models with their prices.

use engram::events::payloads::SideEffectClass;

/// Intent tags.
pub const INTENTS: [&str; 6] = ["commit", "refactor", "architecture", "debug", "doc", "test"];

/// File extensions, most common first.
pub const EXTENSIONS: [&str; 30] = [
    ".rs", ".py", ".ts", ".md", ".json", ".toml", ".js", ".tsx", ".go", ".yaml", ".sql", ".sh", ".c", ".h", ".cpp",
    ".java", ".kt", ".rb", ".css", ".html", ".txt", ".yml", ".proto", ".hpp", ".cs", ".php", ".swift", ".scss",
    ".lock", ".jsx",
];

/// Top-level directories, most common first.
pub const BUCKETS: [&str; 20] = [
    "src",
    "tests",
    "docs",
    "scripts",
    "config",
    "benches",
    "examples",
    "api",
    "cli",
    "core",
    "storage",
    "web",
    "migrations",
    "assets",
    "infra",
    "deploy",
    "tools",
    "build",
    "vendor",
    ".github",
];

/// Verbs of the tool names (`read_file`, `run_test`, …).
const TOOL_VERBS: [&str; 10] = ["read", "search", "list", "get", "edit", "write", "create", "update", "delete", "run"];
/// Objects of the tool names.
const TOOL_OBJECTS: [&str; 8] = ["file", "dir", "test", "branch", "doc", "url", "issue", "pr"];

/// The 80 tool names, most common first (verb-major).
pub fn tool_names() -> Vec<String> {
    let mut out = Vec::with_capacity(TOOL_VERBS.len() * TOOL_OBJECTS.len());
    for o in TOOL_OBJECTS {
        for v in TOOL_VERBS {
            out.push(format!("{v}_{o}"));
        }
    }
    out
}

/// What a tool may do to the world, from its name.
pub fn side_effects_of(tool: &str) -> Vec<SideEffectClass> {
    let (verb, object) = tool.split_once('_').unwrap_or((tool, ""));
    let mut out = vec![match verb {
        "read" | "search" | "list" | "get" => SideEffectClass::Read,
        "run" => SideEffectClass::Execute,
        _ => SideEffectClass::Write,
    }];
    if matches!(object, "url" | "issue" | "pr") {
        out.push(SideEffectClass::Network);
    }
    out
}

/// The models of the corpora, with a per-session cost in micro-dollars.
pub const MODELS: [(&str, i64); 8] = [
    ("claude-opus-4", 60_000),
    ("claude-sonnet-4", 12_000),
    ("claude-haiku-4", 2_500),
    ("gpt-4.1", 10_000),
    ("gpt-4.1-mini", 2_000),
    ("gemini-2.5-pro", 9_000),
    ("gemini-2.5-flash", 1_500),
    ("local:qwen2.5-coder-32b", 0),
];
