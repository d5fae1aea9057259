use super::*;
use engram_events::payloads::SideEffectClass;
use std::sync::Arc;

fn parse(text: &str) -> Result<McpSection, toml::de::Error> {
    #[derive(serde::Deserialize)]
    struct File {
        mcp: McpSection,
    }
    toml::from_str::<File>(text).map(|f| f.mcp)
}

#[test]
fn parses_both_kinds_with_defaults() {
    let s = parse(
        r#"
        [mcp.servers.files]
        command = "npx"
        args = ["-y", "server-filesystem", "/tmp"]
        env = { API_KEY = "FILES_KEY" }
        cwd = "/tmp"

        [mcp.servers.search]
        url = "https://mcp.example.com/mcp"
        headers = { Authorization = "SEARCH_AUTH" }
        timeout_ms = 5000
        enabled = false
        "#,
    )
    .unwrap();
    assert_eq!(s.check(), Ok(()));
    let files = &s.servers["files"];
    assert_eq!(files.command, "npx");
    assert_eq!(files.args.len(), 3);
    assert_eq!(files.env["API_KEY"], "FILES_KEY");
    assert_eq!(files.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
    assert_eq!(files.timeout_ms, 30_000);
    assert_eq!(files.start_timeout_ms, 20_000);
    assert!(files.enabled);
    let search = &s.servers["search"];
    assert_eq!(search.url, "https://mcp.example.com/mcp");
    assert_eq!(search.timeout_ms, 5000);
    assert!(!search.enabled);
    // Round trip through TOML.
    let text = toml::to_string(&s).unwrap();
    let back: McpSection = toml::from_str(&text).unwrap();
    assert_eq!(back, s);
    assert_eq!(McpSection::default().check(), Ok(()));
}

#[test]
fn unknown_keys_are_refused() {
    let e = parse("[mcp.servers.x]\ncommand = \"a\"\ncomand = \"b\"\n").unwrap_err();
    assert!(e.to_string().contains("comand"), "{e}");
    assert!(parse("[mcp]\nserver = {}\n").is_err());
}

fn check(text: &str) -> String {
    parse(text).unwrap().check().unwrap_err()
}

#[test]
fn check_names_the_server_and_the_key() {
    let e = check("[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n");
    assert!(e.starts_with("[mcp.servers.a]:") && e.contains("both `command` and `url`"), "{e}");
    let e = check("[mcp.servers.b]\nargs = [\"x\"]\n");
    assert!(e.starts_with("[mcp.servers.b]:") && e.contains("`command`") && e.contains("`url`"), "{e}");
    let e = check("[mcp.servers.c]\nurl = \"http://h\"\nargs = [\"x\"]\n");
    assert!(e.contains("[mcp.servers.c]") && e.contains("`args`"), "{e}");
    let e = check("[mcp.servers.c]\nurl = \"http://h\"\nenv = { A = \"B\" }\n");
    assert!(e.contains("`env`"), "{e}");
    let e = check("[mcp.servers.d]\ncommand = \"x\"\nheaders = { A = \"B\" }\n");
    assert!(e.contains("[mcp.servers.d]") && e.contains("`headers`"), "{e}");
    let e = check("[mcp.servers.e]\nurl = \"ftp://h\"\n");
    assert!(e.contains("[mcp.servers.e]") && e.contains("`url`"), "{e}");
    let e = check("[mcp.servers.f]\ncommand = \"x\"\ntimeout_ms = 0\n");
    assert!(e.contains("[mcp.servers.f]") && e.contains("`timeout_ms`"), "{e}");
    let e = check("[mcp.servers.f]\ncommand = \"x\"\nstart_timeout_ms = 0\n");
    assert!(e.contains("`start_timeout_ms`"), "{e}");
    let e = check("[mcp.servers.g]\ncommand = \"x\"\nenv = { TOKEN = \"\" }\n");
    assert!(e.contains("[mcp.servers.g]") && e.contains("`env.TOKEN`"), "{e}");
    let e = check("[mcp.servers.g]\ncommand = \"x\"\nenv = { TOKEN = \"abc=def\" }\n");
    assert!(e.contains("`env.TOKEN`") && e.contains("name an environment variable"), "{e}");
    let e = check("[mcp.servers.\"\"]\ncommand = \"x\"\n");
    assert!(e.contains("non-empty name"), "{e}");
    let e = check("[mcp.servers.\"a b\"]\ncommand = \"x\"\n");
    assert!(e.contains("[mcp.servers.a b]"), "{e}");
}

#[test]
fn annotation_rule() {
    use SideEffectClass::*;
    assert_eq!(side_effect_from_hints(Some(true), None), Read);
    assert_eq!(side_effect_from_hints(Some(true), Some(true)), Read);
    assert_eq!(side_effect_from_hints(Some(false), Some(true)), Network);
    assert_eq!(side_effect_from_hints(None, Some(true)), Network);
    assert_eq!(side_effect_from_hints(None, None), Write);
    assert_eq!(side_effect_from_hints(Some(false), Some(false)), Write);
    assert_eq!(side_effect_from_hints(None, Some(false)), Write);
}

#[test]
fn tool_spec_from_the_server() {
    let t: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
        "name": "search",
        "description": format!("  Searches.\n\n{}  ", "x".repeat(600)),
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "annotations": {"openWorldHint": true}
    }))
    .unwrap();
    let spec = spec::McpToolSpec::from_rmcp(&t);
    assert_eq!(spec.name, "search");
    assert!(spec.description.starts_with("Searches.\n\n"));
    assert_eq!(spec.description.chars().count(), DESCRIPTION_MAX_CHARS + 1);
    assert!(spec.description.ends_with('…'));
    assert_eq!(spec.parameters["properties"]["q"]["type"], "string");
    assert_eq!(spec.side_effect, SideEffectClass::Network);
}

#[test]
fn results_render_as_text() {
    let r: rmcp::model::CallToolResult = serde_json::from_value(serde_json::json!({
        "content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi"}},
            {"type": "resource_link", "uri": "file:///b.txt", "name": "b"},
            {"type": "text", "text": "two"}
        ]
    }))
    .unwrap();
    assert_eq!(tool::render(&r), "one\n[image: image/png]\n[resource: file:///a.txt]\n[resource: file:///b.txt]\ntwo");
    let r: rmcp::model::CallToolResult =
        serde_json::from_value(serde_json::json!({"content": [], "structuredContent": {"n": 1}})).unwrap();
    assert_eq!(tool::render(&r), r#"{"n":1}"#);
}

#[test]
fn backoff_doubles_up_to_a_minute() {
    let secs: Vec<u64> = (1..=9).map(|a| server::backoff(a).as_secs()).collect();
    assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    assert_eq!(server::backoff(1000), BACKOFF_MAX);
}

#[test]
fn an_empty_section_starts_nothing() {
    let hub = McpHub::start(&McpSection::default(), |_| None, Arc::new(|| {}));
    assert!(hub.tools().is_empty());
    assert!(hub.status().is_empty());
    assert_eq!(hub.source_of("x"), None);
    hub.shutdown();
}
