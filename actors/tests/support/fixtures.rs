//! The home fixtures' tool listings (`tests/fixtures/home*/tools.json`),
//! read one way for every test that plans or routes against them.

/// The tools of `tests/fixtures/<home>/tools.json` — a bare array, or an
/// MCP `tools/list` result's `{"tools": [...]}` — as JSON objects.
pub fn tools(home: &str) -> Vec<serde_json::Value> {
    let path = format!("{}/../tests/fixtures/{home}/tools.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let tools: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    tools.as_array().cloned().unwrap_or_else(|| tools["tools"].as_array().expect("a list of tools").clone())
}

/// [`tools`] as the offline planner takes them: name, description, schema.
pub fn descriptions(home: &str) -> Vec<engram_learning::offline_planner::ToolDescription> {
    let described = |t: &serde_json::Value| {
        let (name, description) = (t["name"].as_str().unwrap(), t["description"].as_str().unwrap());
        (name.to_owned(), description.to_owned(), t["inputSchema"].clone())
    };
    tools(home).iter().map(described).collect()
}

/// [`tools`]' parameter schemas by tool name, as the fast path takes them.
pub fn schemas(home: &str) -> std::collections::HashMap<String, serde_json::Value> {
    tools(home).iter().map(|t| (t["name"].as_str().unwrap().to_owned(), t["inputSchema"].clone())).collect()
}
